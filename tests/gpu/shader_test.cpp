#include "gpu_fixture.hpp"

#include "gpu_test_shaders.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>

namespace quokka::gpu::test
{

using ShaderTest = GpuTest;

namespace
{
struct FillParams
{
	uint32_t count, mul, add;
};

// Runs `pipeline` (binding 0 = output, push constants = FillParams) over `count` elements, with at most
// `max_groups` workgroups when that is not 0, and reads them back.
std::vector<uint32_t> runFill(Device& device, const Pipeline& pipeline, FillParams params, uint32_t max_groups = 0)
{
	auto out = device.createBuffer({uint64_t(params.count) * 4,
	                                BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                                MemoryDomain::DeviceLocal, "fill.out"});
	EXPECT_TRUE(out.ok());
	auto list = device.beginCommands();
	EXPECT_TRUE(list.ok());
	// Zeroed first: the kernels add to what is there (fill_pattern.comp), so an element visited twice is caught.
	vkCmdFillBuffer(list.value().vk(), out.value()->vk(), 0, VK_WHOLE_SIZE, 0);
	list.value().memoryBarrier(VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
	                           VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                           VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	pipeline.bind(list.value());
	pipeline.pushBuffer(list.value(), 0, *out.value());
	pipeline.pushConstants(list.value(), &params, sizeof(params));
	const uint32_t launched = dispatch1d(list.value(), pipeline, params.count, max_groups);
	const uint64_t groups = (uint64_t(params.count) + pipeline.localSize()[0] - 1) / pipeline.localSize()[0];
	EXPECT_EQ(launched, std::min<uint64_t>({groups, device.info().max_compute_work_group_count[0],
	                                        max_groups ? max_groups : UINT32_MAX}));
	EXPECT_TRUE(device.submitAndWait(std::move(list.value())).ok());
	auto bytes = device.readBuffer(*out.value(), 0, out.value()->size());
	EXPECT_TRUE(bytes.ok());
	std::vector<uint32_t> values(params.count);
	std::memcpy(values.data(), bytes.value().data(), bytes.value().size());
	return values;
}

const char* kRuntimeKernel = R"(#version 460
layout(local_size_x = 128) in;
layout(set = 0, binding = 0, std430) writeonly buffer Out { uint values[]; } out_buf;
layout(push_constant) uniform Params { uint count; uint mul; uint add; } params;
void main()
{
	uint i = gl_GlobalInvocationID.x;
	if (i < params.count)
		out_buf.values[i] = i * i + params.add;
}
)";
} // namespace

TEST_F(ShaderTest, BuildTimeComputeShaderFillsAPatternAcrossTheGroupCountLimit)
{
	auto pipeline = device().createComputePipeline({.spirv = kFillPatternComp.span(), .name = "fill_pattern"});
	ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
	EXPECT_EQ(pipeline.value()->localSize()[0], 64u);
	EXPECT_EQ(pipeline.value()->pushConstantSize(), 12u);
	// More groups than maxComputeWorkGroupCount[0] on lavapipe (65,535 × 64): the kernel's grid-stride loop covers
	// the rest. (Folding them into a second row of workgroups left 126,465 of these elements unwritten on lavapipe.)
	const uint32_t count = 65535u * 64u + 3000u * 64u + 17u;
	const auto values = runFill(device(), *pipeline.value(), {count, 3, 11});
	ASSERT_EQ(values.size(), count);
	for (uint32_t i = 0; i < count; ++i)
		ASSERT_EQ(values[i], i * 3 + 11) << "at " << i;
}

TEST_F(ShaderTest, FewerWorkgroupsThanElementsNeedStillCoverEveryElementOnce)
{
	auto pipeline = device().createComputePipeline({.spirv = kFillPatternComp.span(), .name = "fill_pattern"});
	ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
	for (const uint32_t max_groups : {1u, 7u, 1000u})
	{
		// 10,001 elements: 157 groups of 64 needed; 1 and 7 loop, 1000 is more than needed (157 launched).
		const uint32_t count = 10001;
		const auto values = runFill(device(), *pipeline.value(), {count, 5, 2}, max_groups);
		for (uint32_t i = 0; i < count; ++i)
			ASSERT_EQ(values[i], i * 5 + 2) << "at " << i << " with at most " << max_groups << " workgroups";
	}
	// Nothing to do records nothing.
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	EXPECT_EQ(dispatch1d(list.value(), *pipeline.value(), 0), 0u);
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
}

TEST_F(ShaderTest, RunTimeCompiledComputeShaderProducesExpectedValues)
{
	auto code = device().shaderCompiler().compile({kRuntimeKernel, ShaderStage::Compute, "square.comp"});
	ASSERT_TRUE(code.ok()) << code.error().message;
	auto pipeline = device().createComputePipeline({.spirv = *code.value(), .name = "square"});
	ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
	EXPECT_EQ(pipeline.value()->localSize()[0], 128u);
	const auto values = runFill(device(), *pipeline.value(), {1000, 0, 7});
	for (uint32_t i = 0; i < 1000; ++i)
		ASSERT_EQ(values[i], i * i + 7);
}

TEST_F(ShaderTest, BrokenShaderYieldsAReadableErrorQuotingTheLine)
{
	const std::string source = "#version 460\n"
	                           "layout(local_size_x = 1) in;\n"
	                           "void main()\n"
	                           "{\n"
	                           "\tfloat x = undefined_thing * 2.0;\n"
	                           "}\n";
	auto code = device().shaderCompiler().compile({source, ShaderStage::Compute, "broken.comp"});
	ASSERT_FALSE(code.ok());
	EXPECT_EQ(code.error().code, ErrorCode::ShaderCompile);
	const std::string& m = code.error().message;
	EXPECT_NE(m.find("broken.comp:5"), std::string::npos) << m;
	EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
	EXPECT_NE(m.find("    5 | \tfloat x = undefined_thing * 2.0;"), std::string::npos) << m;
}

TEST_F(ShaderTest, CompileCacheHitsInMemoryAndOnDisk)
{
	const auto dir = std::filesystem::temp_directory_path() / ("quokka-shaders-" + std::to_string(::getpid()));
	std::filesystem::remove_all(dir);
	ShaderSource src{kRuntimeKernel, ShaderStage::Compute, "cached.comp"};
	SpirvCode first;
	{
		ShaderCompiler compiler(dir.string());
		auto a = compiler.compile(src);
		auto b = compiler.compile(src);
		ASSERT_TRUE(a.ok() && b.ok());
		EXPECT_EQ(a.value().get(), b.value().get()); // the same shared SPIR-V
		EXPECT_EQ(compiler.stats().compiles, 1u);
		EXPECT_EQ(compiler.stats().memory_hits, 1u);
		first = a.value();
		// A define changes the key.
		src.defines.push_back({"EXTRA", "1"});
		auto c = compiler.compile(src);
		ASSERT_TRUE(c.ok());
		EXPECT_EQ(compiler.stats().compiles, 2u);
		src.defines.clear();
	}
	ShaderCompiler fresh(dir.string());
	auto again = fresh.compile(src);
	ASSERT_TRUE(again.ok());
	EXPECT_EQ(fresh.stats().disk_hits, 1u);
	EXPECT_EQ(fresh.stats().compiles, 0u);
	EXPECT_EQ(*again.value(), *first);
	EXPECT_NE(ShaderCompiler::contentHash(src),
	          ShaderCompiler::contentHash({kRuntimeKernel, ShaderStage::Vertex, "cached.comp"}));
	std::filesystem::remove_all(dir);
}

TEST_F(ShaderTest, ReflectionReportsBindingsPushConstantsAndLocalSize)
{
	auto r = reflectSpirv(kFillPatternComp.span(), VK_SHADER_STAGE_COMPUTE_BIT);
	ASSERT_TRUE(r.ok()) << r.error().message;
	ASSERT_EQ(r->bindings.size(), 1u);
	EXPECT_EQ(r->bindings[0].set, 0u);
	EXPECT_EQ(r->bindings[0].binding, 0u);
	EXPECT_EQ(r->bindings[0].type, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
	EXPECT_EQ(r->push_constant_size, 12u);
	EXPECT_EQ(r->local_size[0], 64u);
	const uint32_t garbage[4] = {1, 2, 3, 4};
	auto bad = reflectSpirv(garbage, VK_SHADER_STAGE_COMPUTE_BIT);
	ASSERT_FALSE(bad.ok());
	EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);
}

} // namespace quokka::gpu::test
