#include "gpu_fixture.hpp"

#include "gpu_test_shaders.hpp"

#include <filesystem>
#include <span>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/timing.hpp>

namespace quokka::gpu::test
{

using ImageTest = GpuTest;

namespace
{
constexpr uint32_t kSize = 64; // square framebuffer: the test triangle's hypotenuse is the diagonal x + y = kSize

ImageHandle makeTarget(Device& device, VkFormat format, VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT)
{
	ImageUsage usage = ImageUsage::ColorAttachment | ImageUsage::TransferDst;
	if (samples == VK_SAMPLE_COUNT_1_BIT)
		usage = usage | ImageUsage::TransferSrc;
	auto image = device.createImage({kSize, kSize, format, samples, usage, "target"});
	EXPECT_TRUE(image.ok()) << (image.ok() ? "" : image.error().message);
	return image.ok() ? image.value() : nullptr;
}

struct SolidDraw
{
	float color[4];
	float depth = 0.0f;
};

// Draws the upper-left half triangle (NDC (-1,-1), (1,-1), (-1,1)) once per entry of `draws` over a black clear.
void drawHalfTriangles(Device& device, Image& target, Image* resolve, std::span<const SolidDraw> draws,
                       Image* depth = nullptr, DynamicState state = {.depth_test = false, .depth_write = false})
{
	auto pipeline = device.createGraphicsPipeline({
	    .vertex = kSolidVert.span(),
	    .fragment = kSolidFrag.span(),
	    .color_formats = {target.format()},
	    .depth_format = depth ? depth->format() : VK_FORMAT_UNDEFINED,
	    .samples = target.samples(),
	    .name = "solid",
	});
	ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
	EXPECT_EQ(pipeline.value()->pushConstantSize(), 20u);
	const float positions[6] = {-1, -1, 1, -1, -1, 1};
	auto vb = device.createBuffer(
	    {sizeof(positions), BufferUsage::Storage | BufferUsage::TransferDst, MemoryDomain::DeviceLocal, "positions"});
	ASSERT_TRUE(vb.ok());
	ASSERT_TRUE(device.uploadBuffer(*vb.value(), 0, positions, sizeof(positions)).ok());
	auto list = device.beginCommands();
	ASSERT_TRUE(list.ok());
	RenderingDesc pass;
	pass.color = &target;
	pass.resolve = resolve;
	pass.depth = depth;
	gpu::beginRendering(list.value(), pass);
	pipeline.value()->bind(list.value());
	state.apply(list->vk());
	pipeline.value()->pushBuffer(list.value(), 0, *vb.value());
	for (const SolidDraw& d : draws)
	{
		pipeline.value()->pushConstants(list.value(), &d, sizeof(SolidDraw));
		vkCmdDraw(list->vk(), 3, 1, 0, 0);
	}
	gpu::endRendering(list.value());
	ASSERT_TRUE(device.submitAndWait(std::move(list.value())).ok());
}

void drawHalfTriangle(Device& device, Image& target, Image* resolve, const float color[4])
{
	SolidDraw d{{color[0], color[1], color[2], color[3]}, 0.0f};
	drawHalfTriangles(device, target, resolve, std::span<const SolidDraw>(&d, 1));
}
} // namespace

TEST_F(ImageTest, ClearGivesTheExactColour)
{
	auto image = makeTarget(device(), VK_FORMAT_R8G8B8A8_UNORM);
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	const float rgba[4] = {0.2f, 0.4f, 0.6f, 1.0f};
	clearColorImage(list.value(), *image, rgba);
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	auto pixels = readImageRgba8(device(), *image);
	ASSERT_TRUE(pixels.ok()) << pixels.error().message;
	ASSERT_EQ(pixels->width, kSize);
	for (uint32_t y = 0; y < kSize; ++y)
		for (uint32_t x = 0; x < kSize; ++x)
			ASSERT_EQ(pixels->at(x, y), (std::array<uint8_t, 4>{51, 102, 153, 255})) << x << "," << y;
}

TEST_F(ImageTest, SrgbTargetEncodesLinearClearValues)
{
	auto image = makeTarget(device(), VK_FORMAT_R8G8B8A8_SRGB);
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	const float rgba[4] = {0.5f, 0.0f, 1.0f, 1.0f};
	clearColorImage(list.value(), *image, rgba);
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	auto pixels = readImageRgba8(device(), *image);
	ASSERT_TRUE(pixels.ok());
	const auto p = pixels->at(10, 10);
	EXPECT_NEAR(p[0], 188, 1); // sRGB(0.5) = 0.7354 → 187.5
	EXPECT_EQ(p[1], 0);
	EXPECT_EQ(p[2], 255);
	EXPECT_EQ(p[3], 255); // alpha is linear
}

TEST_F(ImageTest, TriangleHasExactPixelsInsideOutsideAndAtKnownPositions)
{
	auto image = makeTarget(device(), VK_FORMAT_R8G8B8A8_UNORM);
	// k/255 values convert to UNORM8 exactly on every implementation (0.5 gives 128 on lavapipe and 127 on NVIDIA:
	// the spec leaves float→unorm rounding to the implementation within 0.6 ULP).
	const float color[4] = {1.0f, 128.0f / 255.0f, 64.0f / 255.0f, 1.0f};
	drawHalfTriangle(device(), *image, nullptr, color);
	auto pixels = readImageRgba8(device(), *image);
	ASSERT_TRUE(pixels.ok());
	const std::array<uint8_t, 4> inside{255, 128, 64, 255}, outside{0, 0, 0, 255};
	// Pixel (x, y) has its centre at (x + ½, y + ½): inside iff x + y + 1 < kSize. Centres exactly on the hypotenuse
	// (x + y = kSize − 1) are decided by the tie-breaking rule, so they are not asserted.
	uint32_t checked = 0;
	for (uint32_t y = 0; y < kSize; ++y)
		for (uint32_t x = 0; x < kSize; ++x)
		{
			if (x + y + 1 == kSize)
				continue;
			ASSERT_EQ(pixels->at(x, y), x + y + 1 < kSize ? inside : outside) << x << "," << y;
			++checked;
		}
	EXPECT_EQ(checked, kSize * kSize - kSize);
	EXPECT_EQ(pixels->at(0, 0), inside);
	EXPECT_EQ(pixels->at(kSize - 2, 0), inside);
	EXPECT_EQ(pixels->at(0, kSize - 2), inside);
	EXPECT_EQ(pixels->at(kSize - 1, kSize - 1), outside);
	EXPECT_EQ(pixels->at(kSize / 2, kSize / 2), outside);
}

TEST_F(ImageTest, MsaaResolveAveragesEdgeSamplesAndKeepsInteriorsExact)
{
	auto msaa = makeTarget(device(), VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_4_BIT);
	auto resolved = makeTarget(device(), VK_FORMAT_R8G8B8A8_UNORM);
	const float white[4] = {1, 1, 1, 1};
	drawHalfTriangle(device(), *msaa, resolved.get(), white);
	auto pixels = readImageRgba8(device(), *resolved);
	ASSERT_TRUE(pixels.ok());
	uint32_t partial = 0;
	for (uint32_t y = 0; y < kSize; ++y)
		for (uint32_t x = 0; x < kSize; ++x)
		{
			const uint8_t r = pixels->at(x, y)[0];
			// Sample offsets lie strictly inside the pixel, so pixels two or more diagonals away from the
			// hypotenuse are fully covered or fully uncovered whatever the sample pattern.
			if (x + y + 3 <= kSize)
				ASSERT_EQ(r, 255) << x << "," << y;
			else if (x + y >= kSize + 1)
				ASSERT_EQ(r, 0) << x << "," << y;
			else if (x + y + 1 == kSize)
			{
				// Centre on the hypotenuse: the standard 4x pattern has 2 of 4 samples inside, 50 % grey.
				EXPECT_GT(r, 0) << x << "," << y;
				EXPECT_LT(r, 255) << x << "," << y;
				partial += (r > 96 && r < 160);
			}
		}
	EXPECT_EQ(partial, kSize) << "every diagonal pixel resolves to about half coverage";
	auto direct = readImageRgba8(device(), *msaa);
	ASSERT_FALSE(direct.ok());
	EXPECT_EQ(direct.error().code, ErrorCode::InvalidArgument);
}

TEST_F(ImageTest, DepthTestKeepsTheNearerTriangleWhateverTheDrawOrder)
{
	auto color = makeTarget(device(), VK_FORMAT_R8G8B8A8_UNORM);
	auto depth = device().createImage(
	    {kSize, kSize, VK_FORMAT_D32_SFLOAT, VK_SAMPLE_COUNT_1_BIT, ImageUsage::DepthAttachment, "depth"});
	ASSERT_TRUE(depth.ok()) << depth.error().message;
	EXPECT_TRUE(depth.value()->isDepth());
	const SolidDraw near_red{{1, 0, 0, 1}, 0.25f}, far_green{{0, 1, 0, 1}, 0.75f};
	const std::array<uint8_t, 4> red{255, 0, 0, 255};

	const SolidDraw near_first[] = {near_red, far_green};
	drawHalfTriangles(device(), *color, nullptr, near_first, depth.value().get(), DynamicState{});
	auto pixels = readImageRgba8(device(), *color);
	ASSERT_TRUE(pixels.ok());
	EXPECT_EQ(pixels->at(5, 5), red);

	const SolidDraw far_first[] = {far_green, near_red};
	drawHalfTriangles(device(), *color, nullptr, far_first, depth.value().get(), DynamicState{});
	pixels = readImageRgba8(device(), *color);
	ASSERT_TRUE(pixels.ok());
	EXPECT_EQ(pixels->at(5, 5), red);

	// Depth compare is dynamic state: with GREATER against the 1.0 clear nothing passes (same pipeline, no rebuild).
	drawHalfTriangles(device(), *color, nullptr, near_first, depth.value().get(),
	                  DynamicState{.depth_compare = VK_COMPARE_OP_GREATER});
	pixels = readImageRgba8(device(), *color);
	ASSERT_TRUE(pixels.ok());
	EXPECT_EQ(pixels->at(5, 5), (std::array<uint8_t, 4>{0, 0, 0, 255}));
}

TEST_F(ImageTest, PngRoundTripsPixelsExactly)
{
	Rgba8Image image{37, 23, {}};
	const auto bytes = randomBytes(37 * 23 * 4, 5);
	for (std::byte b : bytes)
		image.pixels.push_back(uint8_t(b));
	const auto path = std::filesystem::temp_directory_path() / ("quokka-png-" + std::to_string(::getpid()) + ".png");
	ASSERT_TRUE(writePng(path.string(), image).ok());
	auto back = readPng(path.string());
	ASSERT_TRUE(back.ok()) << back.error().message;
	EXPECT_EQ(back->width, 37u);
	EXPECT_EQ(back->height, 23u);
	EXPECT_EQ(back->pixels, image.pixels);
	std::filesystem::remove(path);

	auto missing = readPng("/nonexistent/quokka.png");
	ASSERT_FALSE(missing.ok());
	EXPECT_EQ(missing.error().code, ErrorCode::Io);
	EXPECT_FALSE(writePng("/nonexistent-dir/x.png", image).ok());
}

TEST_F(ImageTest, ImpossibleSizesAreRejected)
{
	auto zero = device().createImage({0, 16, VK_FORMAT_R8G8B8A8_UNORM});
	ASSERT_FALSE(zero.ok());
	EXPECT_EQ(zero.error().code, ErrorCode::InvalidArgument);
	auto huge = device().createImage({device().info().max_image_dimension_2d + 1, 16, VK_FORMAT_R8G8B8A8_UNORM});
	ASSERT_FALSE(huge.ok());
	EXPECT_EQ(huge.error().code, ErrorCode::InvalidArgument);
}

TEST_F(ImageTest, FrameTimerReportsItsSource)
{
	auto image = makeTarget(device(), VK_FORMAT_R8G8B8A8_UNORM);
	FrameTimer timer(device());
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	timer.begin(list.value());
	const float rgba[4] = {0, 0, 0, 1};
	clearColorImage(list.value(), *image, rgba);
	timer.end(list.value());
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	auto t = timer.resolve();
	ASSERT_TRUE(t.ok()) << t.error().message;
	EXPECT_GE(t->ms, 0.0);
	EXPECT_GT(t->wall_ms, 0.0);
	EXPECT_EQ(t->source, device().info().gpu_timestamps_reliable ? TimingSource::Gpu : TimingSource::Wall);
	EXPECT_EQ(t->ms, t->source == TimingSource::Gpu ? t->gpu_ms : t->wall_ms);
	if (device().features().timestamps)
	{
		EXPECT_GE(t->gpu_ms, 0.0);
	}
}

} // namespace quokka::gpu::test
