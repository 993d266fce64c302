#include "render_common.hpp"

#include <quokka/heap/heap_scene.hpp>

#ifdef QUOKKA_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>

#include <quokka/gpu/image_io.hpp>

namespace quokka::app
{

std::string gib(uint64_t bytes)
{
	char text[32];
	std::snprintf(text, sizeof(text), "%.1f GiB", double(bytes) / double(1ull << 30));
	return text;
}

uint64_t availableHostBytes()
{
	std::ifstream meminfo("/proc/meminfo");
	std::string key;
	uint64_t kib = 0;
	std::string unit;
	while (meminfo >> key >> kib >> unit)
		if (key == "MemAvailable:")
			return kib * 1024;
	return 0;
}

nlohmann::ordered_json frameSpread(std::vector<double> ms)
{
	std::sort(ms.begin(), ms.end());
	auto at = [&](double q) { return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, size_t(q * double(ms.size())))]; };
	const double med = at(0.5), top = ms.empty() ? 0.0 : ms.back();
	uint32_t bins[5] = {};
	for (double v : ms)
	{
		const double r = med > 0.0 ? v / med : 1.0;
		bins[r < 1.25 ? 0 : r < 2.0 ? 1 : r < 4.0 ? 2 : r < 8.0 ? 3 : 4]++;
	}
	nlohmann::ordered_json j;
	j["frames"] = ms.size();
	j["median"] = med;
	j["p90"] = at(0.9);
	j["p99"] = at(0.99);
	j["max"] = top;
	j["max_over_median"] = med > 0.0 ? top / med : 0.0;
	j["histogram"] = {{"below_1.25x", bins[0]},
	                  {"1.25x_2x", bins[1]},
	                  {"2x_4x", bins[2]},
	                  {"4x_8x", bins[3]},
	                  {"8x_and_above", bins[4]}};
	return j;
}

Result<void> checkObjectsFit(const gpu::Device& device, const std::string& what, uint64_t objects,
                             uint64_t host_per_object, uint64_t device_per_object)
{
	const bool cpu = device.info().is_cpu;
	const uint64_t host = objects * (host_per_object + (cpu ? device_per_object : 0)) + (256ull << 20);
	const uint64_t available = availableHostBytes();
	auto perObject = [](uint64_t bytes) { return std::to_string((bytes + 512) / 1024) + " KiB per object"; };
	if (available != 0 && host > available)
		return makeError(ErrorCode::OutOfMemory, what + ": " + std::to_string(objects) + " objects need about " +
		                                             gib(host) + " of host memory (" +
		                                             perObject(host_per_object + (cpu ? device_per_object : 0)) +
		                                             "), " + gib(available) + " are available; use fewer objects");
	if (!cpu)
	{
		const gpu::MemoryBudget budget = device.memoryBudget();
		const uint64_t need = objects * device_per_object;
		if (budget.available_bytes != 0 && need > budget.available_bytes)
			return makeError(ErrorCode::OutOfMemory,
			                 what + ": " + std::to_string(objects) + " objects need about " + gib(need) +
			                     " of device memory (" + perObject(device_per_object) + "), " +
			                     gib(budget.available_bytes) + " are available; use fewer objects");
	}
	return {};
}

std::optional<uint64_t> hostAllocatedBytes()
{
#ifdef QUOKKA_JEMALLOC
	// jemalloc refreshes its statistics when the epoch is written.
	uint64_t epoch = 1;
	size_t size = sizeof epoch;
	if (mallctl("epoch", &epoch, &size, &epoch, size) != 0)
		return std::nullopt;
	size_t allocated = 0;
	size = sizeof allocated;
	if (mallctl("stats.allocated", &allocated, &size, nullptr, 0) != 0)
		return std::nullopt;
	return uint64_t(allocated);
#else
	return std::nullopt;
#endif
}

double median(std::vector<double> values)
{
	std::sort(values.begin(), values.end());
	return values.empty() ? 0.0 : values[values.size() / 2];
}

double threadSeconds()
{
	timespec t{};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double clockGHz()
{
	constexpr uint64_t kMultiplies = 6'000'000;
	constexpr double kCyclesPerMultiply = 3.0;
	volatile uint64_t seed = 0x9E3779B97F4A7C15ull;
	uint64_t x = seed;
	const uint64_t m = seed | 1u;
	const double t0 = threadSeconds();
	for (uint64_t i = 0; i < kMultiplies; ++i)
	{
		x *= m;
		asm volatile("" : "+r"(x)); // one multiply per step: no reassociation into x * (m * m)
	}
	const double seconds = threadSeconds() - t0;
	seed = x; // keeps the chain
	return double(kMultiplies) * kCyclesPerMultiply / seconds * 1e-9;
}

Result<std::unique_ptr<gpu::Device>> createRenderDevice(const RenderOptions& o)
{
	auto desc = o.device.desc();
	if (!desc.ok())
		return desc.error();
	auto created = gpu::Device::create(desc.value());
	if (!created.ok())
		return created.error();
	const uint32_t limit = created.value()->info().max_image_dimension_2d;
	if (o.width > limit || o.height > limit)
		return makeError(ErrorCode::InvalidArgument, "framebuffer " + std::to_string(o.width) + "x" +
		                                                 std::to_string(o.height) + " exceeds the device limit " +
		                                                 std::to_string(limit));
	// The render targets at most: the single-sample RGBA8 output, the multisampled colour target, a D32 depth target
	// at the sample count, and the host copy the PNG is read back through — 4 bytes per pixel and sample each.
	const uint64_t pixels = uint64_t(o.width) * o.height;
	const uint64_t need = pixels * 4 * (2 + (o.samples > 1 ? o.samples : 0) + o.samples);
	const gpu::MemoryBudget budget = created.value()->memoryBudget();
	if (need > budget.available_bytes)
		return makeError(ErrorCode::OutOfMemory,
		                 "a " + std::to_string(o.width) + "x" + std::to_string(o.height) + " framebuffer at " +
		                     std::to_string(o.samples) + " sample(s) needs " + gib(need) + " of device memory, " +
		                     gib(budget.available_bytes) + " are available (" +
		                     (budget.from_driver ? "the driver's budget" : "the device-local heaps") +
		                     "); use a smaller size or fewer --samples");
	return std::move(created.value());
}

Result<std::unique_ptr<gpu::Device>> createBenchDevice(const BenchOptions& b)
{
	RenderOptions o;
	o.device = b.device;
	o.width = kBenchWidth;
	o.height = kBenchHeight;
	o.samples = 1;
	return createRenderDevice(o);
}

gpu::RenderingDesc RenderTargets::pass() const
{
	gpu::RenderingDesc pass;
	pass.color = msaa ? msaa.get() : color.get();
	pass.resolve = msaa ? color.get() : nullptr;
	pass.depth = depth.get();
	std::copy(kBackground, kBackground + 4, pass.clear_rgba);
	return pass;
}

Result<RenderTargets> createRenderTargets(gpu::Device& device, const RenderOptions& o, bool with_depth)
{
	const VkSampleCountFlagBits samples = VkSampleCountFlagBits(o.samples);
	RenderTargets t;
	auto color = device.createImage({o.width, o.height, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
	                                 gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferSrc, "render.color"});
	if (!color.ok())
		return color.error();
	t.color = std::move(color.value());
	if (o.samples > 1)
	{
		auto msaa = device.createImage(
		    {o.width, o.height, VK_FORMAT_R8G8B8A8_UNORM, samples, gpu::ImageUsage::ColorAttachment, "render.msaa"});
		if (!msaa.ok())
			return msaa.error();
		t.msaa = std::move(msaa.value());
	}
	if (with_depth)
	{
		auto depth = device.createImage(
		    {o.width, o.height, VK_FORMAT_D32_SFLOAT, samples, gpu::ImageUsage::DepthAttachment, "render.depth"});
		if (!depth.ok())
			return depth.error();
		t.depth = std::move(depth.value());
	}
	return t;
}

std::string RenderOptions::label() const
{
	if (gltf.empty())
		return scene;
	const size_t slash = gltf.find_last_of("/\\");
	std::string name = slash == std::string::npos ? gltf : gltf.substr(slash + 1);
	if (const size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0)
		name.resize(dot);
	return name.empty() ? std::string("gltf") : name;
}

Result<std::string> writeRenderOutput(gpu::Device& device, const RenderTargets& targets, const RenderOptions& o)
{
	const std::string out = o.out.empty() ? "quokka-" + o.label() + ".png" : o.out;
	auto pixels = gpu::readImageRgba8(device, *targets.color);
	if (!pixels.ok())
		return pixels.error();
	QUOKKA_TRY(gpu::writePng(out, pixels.value()));
	return out;
}

nlohmann::ordered_json renderJson(const RenderOptions& o, const gpu::Device& device, const FrameSeries& frames)
{
	nlohmann::ordered_json j;
	j["scene"] = o.gltf.empty() ? o.scene : "gltf";
	if (!o.gltf.empty())
		j["gltf"] = o.gltf;
	j["width"] = o.width;
	j["height"] = o.height;
	j["samples"] = o.samples;
	j["frames"] = o.frames;
	j["device"] = device.info().name;
	j["device_type"] = device.info().is_cpu ? "cpu" : "gpu";
	j["timing_source"] = gpu::timingSourceName(frames.source);
	const auto [min_it, max_it] = std::minmax_element(frames.frame_ms.begin(), frames.frame_ms.end());
	j["frame_ms"] = {{"median", median(frames.frame_ms)},
	                 {"min", frames.frame_ms.empty() ? 0.0 : *min_it},
	                 {"max", frames.frame_ms.empty() ? 0.0 : *max_it}};
	j["cpu_encode_ms"] = {{"median", median(frames.encode_ms)}};
	return j;
}

void printRenderJson(nlohmann::ordered_json& j, const gpu::Device& device, const std::string& out)
{
	j["validation"] = device.validationEnabled();
	j["validation_errors"] = device.validationErrorCount();
	j["out"] = out;
	std::printf("%s\n", j.dump(2).c_str());
}

void printRenderHeader(const RenderOptions& o, const gpu::Device& device, const FrameSeries& frames)
{
	const auto [min_it, max_it] = std::minmax_element(frames.frame_ms.begin(), frames.frame_ms.end());
	const std::string what = o.gltf.empty() ? "scene " + o.scene : "glTF " + o.gltf;
	std::printf("quokka render: %s, %ux%u, %ux MSAA, %u frame(s) on %s (%s)\n", what.c_str(), o.width, o.height,
	            o.samples, o.frames, device.info().name.c_str(), device.info().type.c_str());
	if (!frames.frame_ms.empty())
		std::printf("  frame ms (%s clock): median %.3f, min %.3f, max %.3f; CPU encode median %.3f ms\n",
		            gpu::timingSourceName(frames.source), median(frames.frame_ms), *min_it, *max_it,
		            median(frames.encode_ms));
}

int validationExit(const gpu::Device& device)
{
	const uint32_t errors = device.validationErrorCount();
	if (errors == 0)
		return 0;
	return fail(std::to_string(errors) + " Vulkan validation error(s); first: " + device.validationMessages().front());
}

void applyHeapFlags(const BenchOptions& b, heap::HeapOptions& heap)
{
	heap.max_chunk_bytes = b.max_chunk_bytes;
	heap.tuning.write_in_place = b.write_in_place;
}

std::vector<uint32_t> benchObjectCounts(const BenchOptions& b, const gpu::Device& device)
{
	if (!b.objects.empty())
		return b.objects;
	return device.info().is_cpu ? std::vector<uint32_t>{1000, 10000} : std::vector<uint32_t>{10000, 100000, 1000000};
}

} // namespace quokka::app
