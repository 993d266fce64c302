#include "gpu_fixture.hpp"

#include "gpu_test_shaders.hpp"

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

// Runs `pipeline` (binding 0 = output, push constants = FillParams) over `count` elements and reads them back.
std::vector<uint32_t> runFill(Device& device, const Pipeline& pipeline, FillParams params)
{
	auto out = device.createBuffer({uint64_t(params.count) * 4, BufferUsage::Storage | BufferUsage::TransferSrc,
	                                MemoryDomain::DeviceLocal, "fill.out"});
	EXPECT_TRUE(out.ok());
	auto list = device.beginCommands();
	EXPECT_TRUE(list.ok());
	pipeline.bind(list.value());
	pipeline.pushBuffer(list.value(), 0, *out.value());
	pipeline.pushConstants(list.value(), &params, sizeof(params));
	dispatch1d(list.value(), pipeline, params.count);
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
	// More groups than maxComputeWorkGroupCount[0] on lavapipe (65,535 × 64): dispatch1d folds them into y.
	const uint32_t count = 65535u * 64u + 1000u;
	const auto values = runFill(device(), *pipeline.value(), {count, 3, 11});
	ASSERT_EQ(values.size(), count);
	for (uint32_t i = 0; i < count; ++i)
		ASSERT_EQ(values[i], i * 3 + 11) << "at " << i;
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
