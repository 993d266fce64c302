// BindlessTable: a table of textures shaders index non-uniformly — entries written, drawn, released, reused.
// Skipped on devices without descriptor indexing (lavapipe before Mesa 23); scripts/test runs this suite again on a
// lavapipe that has it.
#include "gpu_fixture.hpp"

#include <array>
#include <span>

#include <quokka/gpu/bindless.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>

namespace quokka::gpu::test
{
namespace
{

constexpr uint32_t kPixels = 8;

class BindlessTest : public GpuTest
{
protected:
	void SetUp() override
	{
		GpuTest::SetUp();
		if (skipWithoutBindless(device()))
			GTEST_SKIP() << device().info().name << " has no descriptor indexing (bindless textures)";
	}

	/// A 1×1 texture of one colour.
	ImageHandle solid(std::array<uint8_t, 4> rgba)
	{
		auto image = device().createImage({1, 1, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
		                                   ImageUsage::Sampled | ImageUsage::TransferDst, "solid"});
		EXPECT_TRUE(image.ok());
		EXPECT_TRUE(uploadImage(device(), *image.value(), rgba.data(), 4).ok());
		return image.value();
	}

	/// A pipeline drawing a kPixels×1 row whose pixel x samples entry entries[x] of the table at set 1.
	PipelineHandle rowPipeline()
	{
		auto vert = device().shaderCompiler().compile({R"(#version 460
			void main()
			{
				vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
				gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
			})",
		                                               ShaderStage::Vertex, "row.vert"});
		auto frag = device().shaderCompiler().compile({R"(#version 460
			#extension GL_EXT_nonuniform_qualifier : require
			layout(set = 1, binding = 0) uniform sampler2D textures[];
			layout(push_constant) uniform Entries { uint entries[8]; };
			layout(location = 0) out vec4 color;
			void main() { color = texture(textures[nonuniformEXT(entries[int(gl_FragCoord.x)])], vec2(0.5)); })",
		                                               ShaderStage::Fragment, "row.frag"});
		EXPECT_TRUE(vert.ok()) << (vert.ok() ? "" : vert.error().message);
		EXPECT_TRUE(frag.ok()) << (frag.ok() ? "" : frag.error().message);
		if (!vert.ok() || !frag.ok())
			return nullptr;
		auto pipeline = device().createGraphicsPipeline({.vertex = *vert.value(),
		                                                 .fragment = *frag.value(),
		                                                 .color_formats = {VK_FORMAT_R8G8B8A8_UNORM},
		                                                 .name = "bindless row"});
		EXPECT_TRUE(pipeline.ok()) << (pipeline.ok() ? "" : pipeline.error().message);
		return pipeline.ok() ? pipeline.value() : nullptr;
	}

	Rgba8Image drawRow(const Pipeline& pipeline, const BindlessTable& table, std::array<uint32_t, kPixels> entries)
	{
		auto target = device().createImage({kPixels, 1, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
		                                    ImageUsage::ColorAttachment | ImageUsage::TransferSrc, "row"});
		auto list = device().beginCommands();
		EXPECT_TRUE(target.ok() && list.ok());
		if (!target.ok() || !list.ok())
			return {};
		RenderingDesc pass;
		pass.color = target.value().get();
		beginRendering(list.value(), pass);
		pipeline.bind(list.value());
		DynamicState{.depth_test = false, .depth_write = false}.apply(list->vk());
		table.bind(list.value(), pipeline, 1);
		pipeline.pushConstants(list.value(), entries.data(), sizeof(entries));
		vkCmdDraw(list->vk(), 3, 1, 0, 0);
		endRendering(list.value());
		EXPECT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		auto pixels = readImageRgba8(device(), *target.value());
		EXPECT_TRUE(pixels.ok());
		return pixels.ok() ? pixels.value() : Rgba8Image{};
	}
};

using Rgba = std::array<uint8_t, 4>;

TEST_F(BindlessTest, AnUnsizedSamplerArrayGetsTheDevicesBindlessLayoutAndDrawsItsEntriesNonUniformly)
{
	PipelineHandle pipeline = rowPipeline();
	ASSERT_TRUE(pipeline);
	EXPECT_EQ(pipeline->setLayout(1), device().bindlessLayout());
	auto table = BindlessTable::create(device(), 16, "test table");
	ASSERT_TRUE(table.ok()) << table.error().message;
	auto sampler = device().createSampler({VK_FILTER_NEAREST, VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE, "nearest"});
	ASSERT_TRUE(sampler.ok());
	const std::array<Rgba, 4> colours = {Rgba{255, 0, 0, 255}, Rgba{0, 255, 0, 255}, Rgba{0, 0, 255, 255},
	                                     Rgba{10, 20, 30, 255}};
	std::vector<ImageHandle> images;
	std::vector<uint32_t> entries;
	for (const Rgba& c : colours)
	{
		images.push_back(solid(c));
		const std::optional<uint32_t> e = table.value()->allocate();
		ASSERT_TRUE(e.has_value());
		table.value()->write(*e, *sampler.value(), *images.back());
		entries.push_back(*e);
	}
	EXPECT_EQ(table.value()->used(), 4u);
	// Every pixel its own entry, in an order that is not the allocation's.
	const std::array<uint32_t, kPixels> order = {3, 0, 2, 1, 1, 2, 0, 3};
	std::array<uint32_t, kPixels> row{};
	for (uint32_t x = 0; x < kPixels; ++x)
		row[x] = entries[order[x]];
	const Rgba8Image got = drawRow(*pipeline, *table.value(), row);
	ASSERT_EQ(got.pixels.size(), size_t(kPixels * 4));
	for (uint32_t x = 0; x < kPixels; ++x)
		EXPECT_EQ(got.at(x, 0), colours[order[x]]) << "pixel " << x;
	EXPECT_TRUE(table.value()->validate().empty());
}

TEST_F(BindlessTest, ReleasedEntriesAreReusedOnceTheirFramesRetiredAndAFullTableSaysSo)
{
	PipelineHandle pipeline = rowPipeline();
	ASSERT_TRUE(pipeline);
	auto table = BindlessTable::create(device(), 3, "small table");
	ASSERT_TRUE(table.ok()) << table.error().message;
	BindlessTable& t = *table.value();
	auto sampler = device().createSampler({VK_FILTER_NEAREST, VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE, "nearest"});
	ASSERT_TRUE(sampler.ok());
	const ImageHandle red = solid({255, 0, 0, 255}), green = solid({0, 255, 0, 255}), blue = solid({0, 0, 255, 255});
	const uint32_t a = *t.allocate(), b = *t.allocate(), c = *t.allocate();
	EXPECT_FALSE(t.allocate().has_value()) << "a full table hands out nothing";
	t.write(a, *sampler.value(), *red);
	t.write(b, *sampler.value(), *green);
	t.write(c, *sampler.value(), *green);
	Rgba8Image got = drawRow(*pipeline, t, {a, b, c, a, b, c, a, b});
	EXPECT_EQ(got.at(0, 0), (Rgba{255, 0, 0, 255}));
	EXPECT_EQ(got.at(2, 0), (Rgba{0, 255, 0, 255}));

	// Released: retiring until the submissions before the release completed (here they have: the draw waited).
	t.release(b);
	EXPECT_EQ(t.retiring(), 1u);
	EXPECT_TRUE(t.validate().empty());
	const std::optional<uint32_t> again = t.allocate();
	ASSERT_TRUE(again.has_value());
	EXPECT_EQ(*again, b);
	EXPECT_EQ(t.retiring(), 0u);
	t.write(*again, *sampler.value(), *blue); // rewritten after a frame that used the set
	got = drawRow(*pipeline, t, {a, b, c, a, b, c, a, b});
	EXPECT_EQ(got.at(1, 0), (Rgba{0, 0, 255, 255}));
	EXPECT_EQ(got.at(4, 0), (Rgba{0, 0, 255, 255}));
	EXPECT_EQ(got.at(2, 0), (Rgba{0, 255, 0, 255}));
	EXPECT_EQ(t.used(), 3u);
	EXPECT_TRUE(t.validate().empty());
}

TEST_F(BindlessTest, BadCapacitiesAndBadBindlessDeclarationsAreClearErrors)
{
	EXPECT_EQ(BindlessTable::create(device(), 0, "empty").error().code, ErrorCode::InvalidArgument);
	EXPECT_EQ(BindlessTable::create(device(), device().info().max_bindless_textures + 1, "huge").error().code,
	          ErrorCode::InvalidArgument);
	// An unsized array in set 0 (the push-descriptor set) is not a bindless set.
	auto comp = device().shaderCompiler().compile({R"(#version 460
		#extension GL_EXT_nonuniform_qualifier : require
		layout(local_size_x = 1) in;
		layout(set = 0, binding = 1) uniform sampler2D textures[];
		layout(set = 0, binding = 0) buffer Out { vec4 o[]; };
		void main() { o[0] = textureLod(textures[nonuniformEXT(gl_GlobalInvocationID.x)], vec2(0.5), 0.0); })",
	                                               ShaderStage::Compute, "bad.comp"});
	ASSERT_TRUE(comp.ok()) << comp.error().message;
	auto pipeline = device().createComputePipeline({.spirv = *comp.value(), .name = "bad bindless"});
	ASSERT_FALSE(pipeline.ok());
	EXPECT_EQ(pipeline.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(pipeline.error().message.find("set 0, binding 1"), std::string::npos) << pipeline.error().message;
}

} // namespace
} // namespace quokka::gpu::test
