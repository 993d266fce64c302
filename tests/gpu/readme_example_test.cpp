// The README's 20-line API example, verbatim between the markers, so the README cannot drift from the API.
#include "gpu_fixture.hpp"

#include <cstring>
#include <fstream>
#include <sstream>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>

namespace
{
using namespace quokka::gpu;

int readmeExample(std::vector<std::byte>& result)
{
	// clang-format off
	// --- README begin
	auto device = Device::create(DeviceDesc::fromEnvironment()).value();   // QUOKKA_DEVICE=auto|gpu|cpu
	auto spirv = device->shaderCompiler().compile({R"(#version 460
    layout(local_size_x = 64) in;
    layout(binding = 0) buffer Out { uint v[]; };
    void main() { v[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x * 2u; })",
	    ShaderStage::Compute, "double.comp"}).value();                       // cached by content hash
	auto pipeline = device->createComputePipeline({.spirv = *spirv}).value(); // layout reflected from SPIR-V
	auto out = device->createBuffer({1024 * 4}).value();                      // device-local storage buffer
	auto cmd = device->beginCommands().value();
	pipeline->bind(cmd);
	pipeline->pushBuffer(cmd, 0, *out);                                       // push descriptors, set 0
	dispatch1d(cmd, *pipeline, 1024);
	if (!device->submitAndWait(std::move(cmd))) return 1;                      // timeline semaphore
	auto bytes = device->readBuffer(*out, 0, out->size()).value();           // v[i] == 2 i
	// --- README end
	// clang-format on
	result = bytes;
	return device->validationErrorCount() == 0 ? 0 : 2;
}
} // namespace

namespace
{
// Lines of `text` from the line after the one containing `begin` to the line before `end`, whitespace-collapsed.
std::vector<std::string> block(const std::string& path, const std::string& begin, const std::string& end)
{
	std::ifstream in(path);
	std::vector<std::string> lines;
	bool inside = false;
	for (std::string line; std::getline(in, line);)
	{
		if (inside && line.find(end) != std::string::npos)
			break;
		if (inside)
		{
			std::istringstream words(line);
			std::string word, collapsed;
			while (words >> word)
				collapsed += (collapsed.empty() ? "" : " ") + word;
			if (!collapsed.empty())
				lines.push_back(collapsed);
		}
		if (!inside && line.find(begin) != std::string::npos)
			inside = true;
	}
	return lines;
}
} // namespace

TEST(ReadmeExample, MatchesTheReadme)
{
	const auto readme = block(QUOKKA_SOURCE_DIR "/README.md", "using namespace quokka::gpu;", "```");
	const auto here =
	    block(QUOKKA_SOURCE_DIR "/tests/gpu/readme_example_test.cpp", "--- README begin", "--- README end");
	ASSERT_FALSE(readme.empty());
	EXPECT_EQ(readme, here);
}

TEST(ReadmeExample, ComputesDoubles)
{
	std::vector<std::byte> bytes;
	ASSERT_EQ(readmeExample(bytes), 0);
	ASSERT_EQ(bytes.size(), 4096u);
	std::vector<uint32_t> v(1024);
	std::memcpy(v.data(), bytes.data(), bytes.size());
	for (uint32_t i = 0; i < 1024; ++i)
		ASSERT_EQ(v[i], 2 * i);
}
