// The two meshlet draw paths: path selection and the mesh shader's reflected layout run everywhere; the pixel tests
// draw the same scene by vertex pulling and by mesh shaders and require identical pixels. Those skip on devices
// without VK_EXT_mesh_shader (lavapipe, CI); run them on a GPU with QUOKKA_VALIDATION=0 where the layer is absent.
//
// Why identical and not "close": both paths compute every clip-space position with the same GLSL expression from the
// same words, emit the same triangles with the same corner order, in the same primitive order (object, then meshlet,
// then triangle), and shade with the same fragment shader, so the rasteriser sees the same input.
#include "gpu_fixture.hpp"

#define GLM_FORCE_DEPTH_ZERO_TO_ONE
#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/type_ptr.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "meshlet_shaders.hpp"

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/meshlet/meshlet_builder.hpp>
#include <quokka/meshlet/meshlet_renderer.hpp>

namespace quokka::meshlet
{
namespace
{

using gpu::test::GpuTest;

constexpr uint32_t kSize = 128;

class MeshletPathTest : public GpuTest
{
protected:
	std::unique_ptr<MeshletRenderer> renderer(MeshletPath path, VkSampleCountFlagBits samples)
	{
		MeshletRendererDesc desc;
		desc.samples = samples;
		desc.path = path;
		auto created = MeshletRenderer::create(device(), desc);
		EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().message);
		if (!created.ok())
			return nullptr;
		EXPECT_EQ(created.value()->path(), path);
		return std::move(created.value());
	}

	// Renders one frame (update → draw → resolve) with `renderer` and reads the single-sample colour back.
	gpu::Rgba8Image render(MeshletRenderer& renderer, MeshletManager& manager, std::span<const MeshletObject> objects,
	                       VkSampleCountFlagBits samples, MeshletDrawStats& stats)
	{
		auto color = device().createImage({kSize, kSize, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
		                                   gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferSrc, "c"});
		auto depth =
		    device().createImage({kSize, kSize, VK_FORMAT_D32_SFLOAT, samples, gpu::ImageUsage::DepthAttachment, "d"});
		EXPECT_TRUE(color.ok() && depth.ok());
		if (!color.ok() || !depth.ok())
			return {};
		gpu::ImageHandle msaa;
		if (samples != VK_SAMPLE_COUNT_1_BIT)
		{
			auto m = device().createImage(
			    {kSize, kSize, VK_FORMAT_R8G8B8A8_UNORM, samples, gpu::ImageUsage::ColorAttachment, "m"});
			EXPECT_TRUE(m.ok());
			if (!m.ok())
				return {};
			msaa = std::move(m.value());
		}
		auto list = device().beginCommands();
		EXPECT_TRUE(list.ok());
		if (!list.ok())
			return {};
		EXPECT_TRUE(manager.update(list.value()).ok());
		gpu::RenderingDesc pass;
		pass.color = msaa ? msaa.get() : color.value().get();
		pass.resolve = msaa ? color.value().get() : nullptr;
		pass.depth = depth.value().get();
		const float background[4] = {0.1f, 0.1f, 0.1f, 1.0f};
		std::copy(background, background + 4, pass.clear_rgba);
		gpu::beginRendering(list.value(), pass);
		gpu::DynamicState{}.apply(list->vk());
		glm::mat4 proj = glm::perspective(glm::radians(50.0f), 1.0f, 0.1f, 50.0f);
		proj[1][1] *= -1.0f;
		const glm::mat4 view = glm::lookAt(glm::vec3(0, 3.5f, 6.0f), glm::vec3(0), glm::vec3(0, 1, 0));
		const glm::mat4 view_proj = proj * view;
		auto drawn = renderer.draw(list.value(), manager, objects, glm::value_ptr(view_proj));
		EXPECT_TRUE(drawn.ok()) << (drawn.ok() ? "" : drawn.error().message);
		if (drawn.ok())
			stats = drawn.value();
		gpu::endRendering(list.value());
		EXPECT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		auto pixels = gpu::readImageRgba8(device(), *color.value());
		EXPECT_TRUE(pixels.ok());
		return pixels.ok() ? std::move(pixels.value()) : gpu::Rgba8Image{};
	}

	// Draws `objects` through both paths and requires the same pixels and statistics.
	void expectIdenticalPaths(MeshletManager& manager, std::span<const MeshletObject> objects,
	                          VkSampleCountFlagBits samples, const char* label)
	{
		auto vertex = renderer(MeshletPath::VertexPulling, samples);
		auto mesh = renderer(MeshletPath::MeshShader, samples);
		ASSERT_TRUE(vertex && mesh);
		MeshletDrawStats vertex_stats, mesh_stats;
		const gpu::Rgba8Image expected = render(*vertex, manager, objects, samples, vertex_stats);
		const gpu::Rgba8Image actual = render(*mesh, manager, objects, samples, mesh_stats);
		ASSERT_EQ(expected.pixels.size(), size_t(kSize) * kSize * 4);
		ASSERT_EQ(actual.pixels.size(), expected.pixels.size());
		EXPECT_GT(coloured(expected), kSize * kSize / 16) << "the scene draws too little to compare";
		EXPECT_EQ(mesh_stats.objects, vertex_stats.objects);
		EXPECT_EQ(mesh_stats.meshlets, vertex_stats.meshlets);
		EXPECT_EQ(mesh_stats.triangles, vertex_stats.triangles);
		EXPECT_EQ(mesh_stats.draw_calls, 1u);
		const std::string difference = describeDifference(expected, actual);
		if (!difference.empty())
		{
			const std::string stem = ::testing::TempDir() + "meshlet_path_" + label;
			(void)gpu::writePng(stem + "_vertex.png", expected);
			(void)gpu::writePng(stem + "_mesh.png", actual);
			ADD_FAILURE() << "mesh shaders draw different pixels from vertex pulling: " << difference << " (images in "
			              << stem << "_{vertex,mesh}.png)";
		}
	}

	static std::string describeDifference(const gpu::Rgba8Image& a, const gpu::Rgba8Image& b)
	{
		uint32_t differing = 0, max_delta = 0, first_x = 0, first_y = 0;
		for (uint32_t y = 0; y < a.height; ++y)
			for (uint32_t x = 0; x < a.width; ++x)
			{
				const auto pa = a.at(x, y), pb = b.at(x, y);
				if (pa == pb)
					continue;
				if (differing++ == 0)
					first_x = x, first_y = y;
				for (int c = 0; c < 4; ++c)
					max_delta = std::max(max_delta, uint32_t(std::abs(int(pa[c]) - int(pb[c]))));
			}
		if (differing == 0)
			return "";
		std::ostringstream s;
		s << differing << " of " << a.width * a.height << " pixels differ, by up to " << max_delta
		  << " per channel; first at (" << first_x << ", " << first_y << ")";
		return s.str();
	}

	static uint32_t coloured(const gpu::Rgba8Image& image)
	{
		uint32_t n = 0;
		for (uint32_t y = 0; y < image.height; ++y)
			for (uint32_t x = 0; x < image.width; ++x)
				n += image.at(x, y) != std::array<uint8_t, 4>{26, 26, 26, 255};
		return n;
	}

	static MeshletObject object(BatchId batch, glm::mat4 model, glm::vec3 color)
	{
		MeshletObject o;
		o.batch = batch;
		std::memcpy(o.model, glm::value_ptr(model), sizeof(o.model));
		o.color[0] = color.r;
		o.color[1] = color.g;
		o.color[2] = color.b;
		return o;
	}

	static glm::mat4 at(float x, float z, float scale = 1.0f, float angle = 0.0f)
	{
		glm::mat4 m = glm::translate(glm::mat4(1.0f), glm::vec3(x, 0, z));
		m = glm::rotate(m, angle, glm::vec3(1, 0, 0));
		return glm::scale(m, glm::vec3(scale));
	}
};

TEST(MeshletPathNames, ParseAcceptsTheCliAndJsonNamesAndRejectsOthers)
{
	EXPECT_EQ(parseMeshletPath("auto").value(), MeshletPath::Auto);
	EXPECT_EQ(parseMeshletPath("vertex").value(), MeshletPath::VertexPulling);
	EXPECT_EQ(parseMeshletPath("mesh").value(), MeshletPath::MeshShader);
	for (MeshletPath path : {MeshletPath::Auto, MeshletPath::VertexPulling, MeshletPath::MeshShader})
		EXPECT_EQ(parseMeshletPath(meshletPathName(path)).value(), path);
	auto bad = parseMeshletPath("task");
	ASSERT_FALSE(bad.ok());
	EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(bad.error().message.find("auto, vertex or mesh"), std::string::npos);
}

// Runs everywhere: spirv-cross must parse the mesh stage and see the vertex stage's bindings plus the work items.
TEST(MeshletPathReflection, MeshStageUsesTheVertexStageBindingsPlusWorkItems)
{
	auto mesh = gpu::reflectSpirv(shaders::kMeshletDrawMesh.span(), VK_SHADER_STAGE_MESH_BIT_EXT);
	ASSERT_TRUE(mesh.ok()) << mesh.error().message;
	auto vertex = gpu::reflectSpirv(shaders::kMeshletDrawVert.span(), VK_SHADER_STAGE_VERTEX_BIT);
	ASSERT_TRUE(vertex.ok()) << vertex.error().message;
	ASSERT_EQ(mesh->bindings.size(), 4u);
	for (const gpu::DescriptorBinding& b : mesh->bindings)
	{
		EXPECT_EQ(b.set, 0u);
		EXPECT_EQ(b.type, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER) << b.name;
		EXPECT_LT(b.binding, 4u) << b.name;
	}
	EXPECT_EQ(vertex->bindings.size(), 3u);
	EXPECT_EQ(vertex->push_constant_size, 64u);
	EXPECT_EQ(mesh->push_constant_size, 72u); // view_proj + item range
}

TEST_F(MeshletPathTest, AutoPicksMeshShadersExactlyWhenTheDeviceHasThem)
{
	auto automatic = MeshletRenderer::create(device());
	ASSERT_TRUE(automatic.ok()) << automatic.error().message;
	EXPECT_EQ(automatic.value()->path(),
	          device().features().mesh_shader ? MeshletPath::MeshShader : MeshletPath::VertexPulling);
	auto forced = MeshletRenderer::create(device(), {.path = MeshletPath::VertexPulling});
	ASSERT_TRUE(forced.ok()) << forced.error().message;
	EXPECT_EQ(forced.value()->path(), MeshletPath::VertexPulling);
	auto mesh = MeshletRenderer::create(device(), {.path = MeshletPath::MeshShader});
	if (device().features().mesh_shader)
	{
		ASSERT_TRUE(mesh.ok()) << mesh.error().message;
		EXPECT_EQ(mesh.value()->path(), MeshletPath::MeshShader);
	}
	else
	{
		ASSERT_FALSE(mesh.ok());
		EXPECT_EQ(mesh.error().code, ErrorCode::MissingFeature);
	}
}

// The render-test scene (a torus, a sphere, a clone of the torus, plus a rotated, scaled torus cutting through the
// sphere), with and without MSAA.
TEST_F(MeshletPathTest, MeshShadersDrawTheSamePixelsAsVertexPulling)
{
	if (!device().features().mesh_shader)
		GTEST_SKIP() << device().info().name << " has no VK_EXT_mesh_shader";
	MeshletManagerDesc desc;
	desc.initial_data_words = 60000;
	desc.initial_records = 256;
	auto made = MeshletManager::create(device(), desc);
	ASSERT_TRUE(made.ok());
	MeshletManager& manager = *made.value();
	auto torus = buildMeshletBatch(makeTorus(32, 16, 1.0f, 0.35f).view());
	auto sphere = buildMeshletBatch(makeSphere(16, 24, 0.8f).view());
	ASSERT_TRUE(torus.ok() && sphere.ok());
	const BatchId t = manager.addBatch(torus.value()).value();
	const BatchId s = manager.addBatch(sphere.value()).value();
	const BatchId t2 = manager.cloneBatchAllocation(t).value();
	const std::vector<MeshletObject> objects = {
	    object(t, at(-1.6f, 0), {0.9f, 0.3f, 0.2f}), object(s, at(1.6f, 0), {0.2f, 0.6f, 0.9f}),
	    object(t2, at(0, -2.0f), {0.3f, 0.8f, 0.3f}), object(t, at(1.6f, 0, 0.9f, 1.1f), {0.9f, 0.8f, 0.2f})};
	expectIdenticalPaths(manager, objects, VK_SAMPLE_COUNT_1_BIT, "1x");
	if (device().info().framebuffer_color_sample_counts & VK_SAMPLE_COUNT_4_BIT)
		expectIdenticalPaths(manager, objects, VK_SAMPLE_COUNT_4_BIT, "4x");
}

// More meshlets than one row of mesh workgroups (65,535): the draw folds them into a second row, and every meshlet
// of every object must still be drawn exactly once.
TEST_F(MeshletPathTest, MeshShadersDrawTheSamePixelsPastOneRowOfWorkgroups)
{
	if (!device().features().mesh_shader)
		GTEST_SKIP() << device().info().name << " has no VK_EXT_mesh_shader";
	auto sphere = buildMeshletBatch(makeSphere(32, 48, 1.0f).view());
	ASSERT_TRUE(sphere.ok());
	const uint32_t per_object = uint32_t(sphere.value().records.size());
	const uint32_t side = 1 + uint32_t(std::sqrt(double(70000 / per_object + 1)));
	MeshletManagerDesc desc;
	desc.initial_data_words = uint32_t(sphere.value().data.size()) + 1024;
	desc.initial_records = per_object + 16;
	auto made = MeshletManager::create(device(), desc);
	ASSERT_TRUE(made.ok());
	MeshletManager& manager = *made.value();
	const BatchId s = manager.addBatch(sphere.value()).value();
	std::vector<MeshletObject> objects;
	const float spacing = 7.0f / float(side);
	for (uint32_t row = 0; row < side; ++row)
		for (uint32_t column = 0; column < side; ++column)
		{
			const float u = float(column) / float(side), v = float(row) / float(side);
			objects.push_back(object(
			    s, at(-3.5f + spacing * (float(column) + 0.5f), -3.5f + spacing * (float(row) + 0.5f), 0.45f * spacing),
			    {0.2f + 0.7f * u, 0.3f + 0.6f * v, 0.9f - 0.6f * u}));
		}
	ASSERT_GT(uint64_t(objects.size()) * per_object, 65535u);
	expectIdenticalPaths(manager, objects, VK_SAMPLE_COUNT_1_BIT, "rows");
}

} // namespace
} // namespace quokka::meshlet
