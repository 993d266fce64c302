// Shared fixture of the gpu tests: one validated Device per test binary (creating one costs ~0.1–0.3 s on lavapipe).
// Every test fails if it caused a validation error, and if it left GPU objects alive.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <quokka/gpu/device.hpp>

namespace quokka::gpu::test
{

/// The environment's DeviceDesc (QUOKKA_DEVICE) with validation on unless QUOKKA_VALIDATION=0 says otherwise
/// (machines without the layer, such as the H200 host, run the suite that way).
inline DeviceDesc testDeviceDesc()
{
	DeviceDesc desc = DeviceDesc::fromEnvironment();
	const char* v = std::getenv("QUOKKA_VALIDATION");
	desc.validation = !(v && std::string(v) == "0");
	desc.print_validation = false; // errors are still printed; warnings would drown the test log
	return desc;
}

/// True when the tests of bindless textures must skip on `device` (no descriptor indexing). scripts/test's second run
/// sets QUOKKA_REQUIRE_BINDLESS=1: there a device without it fails the test instead, so that a driver which lost the
/// feature cannot pass by skipping. Use as `if (skipWithoutBindless(device())) GTEST_SKIP() << ...;`.
inline bool skipWithoutBindless(const Device& device)
{
	if (device.features().descriptor_indexing)
		return false;
	const char* required = std::getenv("QUOKKA_REQUIRE_BINDLESS");
	EXPECT_FALSE(required && std::string(required) == "1") << device.info().name << " lacks bindless textures";
	return true;
}

class GpuTest : public ::testing::Test
{
public:
	static void SetUpTestSuite()
	{
		if (!device_)
		{
			auto created = Device::create(testDeviceDesc());
			ASSERT_TRUE(created.ok()) << created.error().message;
			device_ = std::move(created.value());
		}
	}
	static void TearDownTestSuite() { device_.reset(); }

protected:
	void SetUp() override
	{
		ASSERT_TRUE(device_);
		device_->clearValidationMessages();
		baseline_ = device_->memoryStats();
	}
	void TearDown() override
	{
		ASSERT_TRUE(device_->waitIdle().ok());
		const auto messages = device_->validationMessages();
		EXPECT_EQ(device_->validationErrorCount(), 0u) << (messages.empty() ? "" : messages.front());
		const DeviceMemoryStats now = device_->memoryStats();
		EXPECT_EQ(now.live_buffers, baseline_.live_buffers) << "test leaked buffers";
		EXPECT_EQ(now.live_images, baseline_.live_images) << "test leaked images";
	}

	Device& device() { return *device_; }

	static std::vector<std::byte> randomBytes(size_t n, uint32_t seed)
	{
		std::mt19937 rng(seed);
		std::vector<std::byte> v(n);
		for (auto& b : v)
			b = std::byte(rng() & 0xff);
		return v;
	}

	inline static std::unique_ptr<Device> device_;
	DeviceMemoryStats baseline_;
};

} // namespace quokka::gpu::test
