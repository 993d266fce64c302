// Drawing meshlets by vertex pulling: the scene must render the same pixels before and after the manager compacts and
// grows, including a clone queued in the same frame as the rebuild.
#include "gpu_fixture.hpp"

#define GLM_FORCE_DEPTH_ZERO_TO_ONE
#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/type_ptr.hpp>

#include <cstring>

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

class MeshletRenderTest : public GpuTest
{
protected:
	static constexpr uint32_t kSize = 96;

	void SetUp() override
	{
		GpuTest::SetUp();
		auto color = device().createImage({kSize, kSize, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
		                                   gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferSrc, "c"});
		auto depth = device().createImage(
		    {kSize, kSize, VK_FORMAT_D32_SFLOAT, VK_SAMPLE_COUNT_1_BIT, gpu::ImageUsage::DepthAttachment, "d"});
		ASSERT_TRUE(color.ok() && depth.ok());
		color_ = color.value();
		depth_ = depth.value();
		auto renderer = MeshletRenderer::create(device());
		ASSERT_TRUE(renderer.ok()) << renderer.error().message;
		renderer_ = std::move(renderer.value());
	}
	void TearDown() override
	{
		renderer_.reset();
		color_.reset();
		depth_.reset();
		GpuTest::TearDown();
	}

	// One frame: update → draw → read back.
	gpu::Rgba8Image frame(MeshletManager& manager, std::span<const MeshletObject> objects)
	{
		EXPECT_TRUE(device().submitAndWait(record(manager, objects)).ok());
		auto pixels = gpu::readImageRgba8(device(), *color_);
		EXPECT_TRUE(pixels.ok());
		return pixels.ok() ? std::move(pixels.value()) : gpu::Rgba8Image{};
	}

	// Records update + draw into a fresh list (not submitted).
	gpu::CommandList record(MeshletManager& manager, std::span<const MeshletObject> objects)
	{
		auto list = device().beginCommands();
		EXPECT_TRUE(list.ok());
		EXPECT_TRUE(manager.update(list.value()).ok());
		gpu::RenderingDesc pass;
		pass.color = color_.get();
		pass.depth = depth_.get();
		const float background[4] = {0.1f, 0.1f, 0.1f, 1.0f};
		std::copy(background, background + 4, pass.clear_rgba);
		gpu::beginRendering(list.value(), pass);
		gpu::DynamicState{}.apply(list->vk());
		glm::mat4 proj = glm::perspective(glm::radians(50.0f), 1.0f, 0.1f, 50.0f);
		proj[1][1] *= -1.0f;
		const glm::mat4 view = glm::lookAt(glm::vec3(0, 3.5f, 6.0f), glm::vec3(0), glm::vec3(0, 1, 0));
		const glm::mat4 view_proj = proj * view;
		auto drawn = renderer_->draw(list.value(), manager, objects, glm::value_ptr(view_proj));
		EXPECT_TRUE(drawn.ok());
		gpu::endRendering(list.value());
		return std::move(list.value());
	}

	static MeshletObject object(BatchId batch, float x, float z, glm::vec3 color)
	{
		MeshletObject o;
		o.batch = batch;
		const glm::mat4 m = glm::translate(glm::mat4(1.0f), glm::vec3(x, 0, z));
		std::memcpy(o.model, glm::value_ptr(m), sizeof(o.model));
		o.color[0] = color.r;
		o.color[1] = color.g;
		o.color[2] = color.b;
		return o;
	}

	static uint32_t coloured(const gpu::Rgba8Image& image)
	{
		uint32_t n = 0;
		for (uint32_t y = 0; y < image.height; ++y)
			for (uint32_t x = 0; x < image.width; ++x)
				n += image.at(x, y) != std::array<uint8_t, 4>{26, 26, 26, 255};
		return n;
	}

	gpu::ImageHandle color_;
	gpu::ImageHandle depth_;
	std::unique_ptr<MeshletRenderer> renderer_;
};

TEST_F(MeshletRenderTest, SceneRendersIdenticalPixelsBeforeAndAfterCompactionAndGrowth)
{
	MeshletManagerDesc desc;
	desc.initial_data_words = 40000;
	desc.initial_records = 256;
	auto made = MeshletManager::create(device(), desc);
	ASSERT_TRUE(made.ok());
	MeshletManager& manager = *made.value();

	auto torus = buildMeshletBatch(makeTorus(32, 16, 1.0f, 0.35f).view());
	auto sphere = buildMeshletBatch(makeSphere(16, 24, 0.8f).view());
	ASSERT_TRUE(torus.ok() && sphere.ok());
	// Fillers in between, removed later, so that the compaction moves the drawn batches.
	MeshletBatch filler;
	filler.data.assign(3000, 0xdeadbeefu);
	filler.records.resize(7);
	const BatchId f0 = manager.addBatch(filler).value();
	const BatchId t = manager.addBatch(torus.value()).value();
	const BatchId f1 = manager.addBatch(filler).value();
	const BatchId s = manager.addBatch(sphere.value()).value();
	const BatchId t2 = manager.cloneBatchAllocation(t).value();

	std::vector<MeshletObject> objects = {object(t, -1.6f, 0, {0.9f, 0.3f, 0.2f}),
	                                      object(s, 1.6f, 0, {0.2f, 0.6f, 0.9f}),
	                                      object(t2, 0, -2.0f, {0.3f, 0.8f, 0.3f})};
	const gpu::Rgba8Image before = frame(manager, objects);
	EXPECT_GT(coloured(before), kSize * kSize / 8);

	// Same frame: remove fillers, clone the sphere, compact, then grow — every drawn batch moves.
	const BatchPlacement t_before = manager.placement(t);
	ASSERT_TRUE(manager.removeBatch(f0));
	ASSERT_TRUE(manager.removeBatch(f1));
	const BatchId s2 = manager.cloneBatchAllocation(s).value();
	ASSERT_TRUE(manager.compact().ok());
	ASSERT_TRUE(manager.grow(50000, 100).ok());
	EXPECT_NE(manager.placement(t).data_offset, t_before.data_offset);
	EXPECT_NE(manager.placement(t).record_offset, t_before.record_offset);
	const gpu::Rgba8Image after = frame(manager, objects);
	ASSERT_EQ(after.pixels.size(), before.pixels.size());
	EXPECT_TRUE(after.pixels == before.pixels) << "pixels changed after compaction and growth";

	// The sphere's clone, queued before the rebuild, draws exactly like the sphere.
	objects[1].batch = s2;
	const gpu::Rgba8Image cloned = frame(manager, objects);
	EXPECT_TRUE(cloned.pixels == before.pixels) << "the clone draws differently from its source";
	EXPECT_TRUE(manager.validate().ok());
}

// Frames are submitted without waiting while batches are removed, re-added, cloned and compacted between them. With
// synchronization validation on (QUOKKA_VALIDATION=sync) any missing barrier between a frame's draws and a later
// frame's uploads, copies or patches into the same buffers fails the test; the final image must equal a fresh render
// of the final objects.
TEST_F(MeshletRenderTest, FramesInFlightSurviveRemovalsReuseAndCompaction)
{
	MeshletManagerDesc desc;
	desc.initial_data_words = 30000;
	desc.initial_records = 128;
	auto made = MeshletManager::create(device(), desc);
	ASSERT_TRUE(made.ok());
	MeshletManager& manager = *made.value();
	auto torus = buildMeshletBatch(makeTorus(24, 12, 1.0f, 0.35f).view());
	auto sphere = buildMeshletBatch(makeSphere(12, 16, 0.8f).view());
	ASSERT_TRUE(torus.ok() && sphere.ok());
	std::vector<MeshletObject> objects = {
	    object(manager.addBatch(torus.value()).value(), -1.6f, 0, {0.9f, 0.3f, 0.2f}),
	    object(manager.addBatch(sphere.value()).value(), 1.6f, 0, {0.2f, 0.6f, 0.9f})};
	for (int frame = 0; frame < 8; ++frame)
	{
		if (frame == 2 || frame == 5)
		{
			// Replace the sphere by a fresh copy of the same mesh (its old range retires while frames read it).
			ASSERT_TRUE(manager.removeBatch(objects[1].batch));
			objects[1].batch = manager.addBatch(sphere.value()).value();
		}
		if (frame == 3)
		{
			const BatchId copy = manager.cloneBatchAllocation(objects[0].batch).value();
			ASSERT_TRUE(manager.removeBatch(objects[0].batch));
			objects[0].batch = copy;
		}
		if (frame == 4)
		{
			ASSERT_TRUE(manager.compact().ok());
		}
		auto submitted = device().submit(record(manager, objects));
		ASSERT_TRUE(submitted.ok());
	}
	ASSERT_TRUE(device().waitIdle().ok());
	auto last = gpu::readImageRgba8(device(), *color_);
	ASSERT_TRUE(last.ok());
	EXPECT_GT(coloured(last.value()), kSize * kSize / 16);

	auto fresh = MeshletManager::create(device(), desc);
	ASSERT_TRUE(fresh.ok());
	std::vector<MeshletObject> again = objects;
	again[0].batch = fresh.value()->addBatch(torus.value()).value();
	again[1].batch = fresh.value()->addBatch(sphere.value()).value();
	const gpu::Rgba8Image expected = frame(*fresh.value(), again);
	EXPECT_TRUE(last.value().pixels == expected.pixels) << "frames in flight changed the image";
	EXPECT_TRUE(manager.validate().ok());
}

} // namespace
} // namespace quokka::meshlet
