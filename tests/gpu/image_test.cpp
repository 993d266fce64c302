#include "gpu_fixture.hpp"

#include <chrono>
#include <thread>

#include "gpu_test_shaders.hpp"

#include <filesystem>
#include <span>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>
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

TEST_F(ImageTest, TransferOnlyImagesHaveNoViewAndStillCopy)
{
	ImageDesc d;
	d.width = 8;
	d.height = 8;
	d.usage = ImageUsage::TransferDst | ImageUsage::TransferSrc;
	auto image = device().createImage(d);
	ASSERT_TRUE(image.ok()) << image.error().message;
	EXPECT_EQ(image.value()->view(), VkImageView(VK_NULL_HANDLE));
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	const float rgba[4] = {77.0f / 255.0f, 77.0f / 255.0f, 77.0f / 255.0f, 77.0f / 255.0f};
	clearColorImage(*list, *image.value(), rgba);
	ASSERT_TRUE(device().submitAndWait(std::move(*list)).ok());
	auto back = readImageRgba8(device(), *image.value());
	ASSERT_TRUE(back.ok()) << back.error().message;
	EXPECT_EQ(back->pixels, std::vector<uint8_t>(8 * 8 * 4, 77));
}

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

/// Times one clear of a fresh target with `timer`, with `recording` of host time spent between begin() and end().
Result<FrameTiming> timeOneClear(Device& device, FrameTimer& timer, std::chrono::milliseconds recording = {})
{
	auto image = makeTarget(device, VK_FORMAT_R8G8B8A8_UNORM);
	QUOKKA_TRY_ASSIGN(list, device.beginCommands());
	timer.begin(list);
	const float rgba[4] = {0, 0, 0, 1};
	clearColorImage(list, *image, rgba);
	std::this_thread::sleep_for(recording);
	timer.end(list);
	QUOKKA_TRY(device.submitAndWait(std::move(list)));
	return timer.resolve();
}

TEST_F(ImageTest, FrameTimerWallTimeLeavesOutTheCpuWorkOfRecording)
{
	// 300 ms of "recording" (a sleep between begin and end) must not show in the wall time, which starts at end().
	FrameTimer timer(device());
	auto t = timeOneClear(device(), timer, std::chrono::milliseconds(300));
	ASSERT_TRUE(t.ok()) << t.error().message;
	EXPECT_LT(t->wall_ms, 250.0);
}

TEST_F(ImageTest, FrameTimerReportsItsSource)
{
	FrameTimer timer(device());
	auto t = timeOneClear(device(), timer);
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

namespace
{
constexpr ImageUsage kTextureUsage = ImageUsage::Sampled | ImageUsage::TransferDst | ImageUsage::TransferSrc;

// The 2:1 box filter a linear blit of an even-sized level is: each output texel averages a 2×2 block (rounded).
Rgba8Image boxDownsample(const Rgba8Image& in)
{
	Rgba8Image out{in.width / 2, in.height / 2, {}};
	for (uint32_t y = 0; y < out.height; ++y)
		for (uint32_t x = 0; x < out.width; ++x)
			for (uint32_t c = 0; c < 4; ++c)
			{
				const uint32_t sum = in.at(2 * x, 2 * y)[c] + in.at(2 * x + 1, 2 * y)[c] + in.at(2 * x, 2 * y + 1)[c] +
				                     in.at(2 * x + 1, 2 * y + 1)[c];
				out.pixels.push_back(uint8_t((sum + 2) / 4));
			}
	return out;
}

// Every channel of `got` within ±1 of `want` (blit filtering rounds as the implementation likes).
void expectNear(const Rgba8Image& got, const Rgba8Image& want, uint32_t level)
{
	ASSERT_EQ(got.width, want.width) << "level " << level;
	ASSERT_EQ(got.height, want.height) << "level " << level;
	for (size_t i = 0; i < want.pixels.size(); ++i)
		EXPECT_NEAR(int(got.pixels[i]), int(want.pixels[i]), 1)
		    << "level " << level << " texel " << i / 4 << " channel " << i % 4;
}

// 4×4 texels with different values in every channel, so that a wrong block or channel shows.
Rgba8Image knownTexels4x4()
{
	Rgba8Image texels{4, 4, {}};
	for (uint32_t y = 0; y < 4; ++y)
		for (uint32_t x = 0; x < 4; ++x)
			texels.pixels.insert(texels.pixels.end(), {uint8_t(x * 80 + y * 3), uint8_t(y * 70 + x * 5),
			                                           uint8_t((x ^ y) * 60 + 7), uint8_t(255 - x * y * 10)});
	return texels;
}
} // namespace

TEST_F(ImageTest, MipChainLevelsAreBoxAveragesOfTheLevelAbove)
{
	auto image =
	    device().createImage({4, 4, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, kTextureUsage, "mipped", 0});
	ASSERT_TRUE(image.ok()) << image.error().message;
	ASSERT_EQ(image.value()->mipLevels(), 3u);
	const Rgba8Image level0 = knownTexels4x4();
	ASSERT_TRUE(uploadImage(device(), *image.value(), level0.pixels.data(), level0.pixels.size()).ok());
	EXPECT_EQ(image.value()->layout(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);

	auto got0 = readImageRgba8(device(), *image.value(), 0);
	ASSERT_TRUE(got0.ok()) << got0.error().message;
	EXPECT_EQ(got0->pixels, level0.pixels) << "level 0 holds the texels unchanged";
	const Rgba8Image level1 = boxDownsample(level0);
	auto got1 = readImageRgba8(device(), *image.value(), 1);
	ASSERT_TRUE(got1.ok()) << got1.error().message;
	expectNear(got1.value(), level1, 1);
	// Level 2 is blitted from the stored level 1, so it is the box average of what the GPU wrote there.
	auto got2 = readImageRgba8(device(), *image.value(), 2);
	ASSERT_TRUE(got2.ok()) << got2.error().message;
	expectNear(got2.value(), boxDownsample(got1.value()), 2);
	expectNear(got2.value(), boxDownsample(level1), 2);

	auto beyond = readImageRgba8(device(), *image.value(), 3);
	ASSERT_FALSE(beyond.ok());
	EXPECT_EQ(beyond.error().code, ErrorCode::InvalidArgument);
}

TEST_F(ImageTest, MipLevelsZeroMeansTheFullChainAndOddSidesRoundDown)
{
	EXPECT_EQ(fullMipChain(300, 20), 9u);
	EXPECT_EQ(fullMipChain(1, 1), 1u);
	EXPECT_EQ(fullMipChain(4, 4), 3u);
	EXPECT_EQ(fullMipChain(256, 255), 9u);
	auto image =
	    device().createImage({300, 20, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, kTextureUsage, "odd", 0});
	ASSERT_TRUE(image.ok()) << image.error().message;
	Image& odd = *image.value();
	ASSERT_EQ(odd.mipLevels(), 9u);
	EXPECT_EQ(odd.mipExtent(3).width, 37u);
	EXPECT_EQ(odd.mipExtent(3).height, 2u);
	EXPECT_EQ(odd.mipExtent(5).height, 1u) << "a side stops at 1";
	EXPECT_EQ(odd.mipExtent(8).width, 1u);

	// One colour everywhere: every level, odd-sized blits included, keeps it.
	const std::array<uint8_t, 4> colour{200, 100, 50, 255};
	std::vector<uint8_t> texels;
	for (uint32_t i = 0; i < 300 * 20; ++i)
		texels.insert(texels.end(), colour.begin(), colour.end());
	ASSERT_TRUE(uploadImage(device(), odd, texels.data(), texels.size()).ok());
	for (uint32_t level = 0; level < odd.mipLevels(); ++level)
	{
		auto got = readImageRgba8(device(), odd, level);
		ASSERT_TRUE(got.ok()) << got.error().message;
		ASSERT_EQ(got->width, odd.mipExtent(level).width);
		ASSERT_EQ(got->height, odd.mipExtent(level).height);
		for (uint32_t y = 0; y < got->height; ++y)
			for (uint32_t x = 0; x < got->width; ++x)
				for (int c = 0; c < 4; ++c)
					ASSERT_NEAR(int(got->at(x, y)[c]), int(colour[c]), 1) << "level " << level << " " << x << "," << y;
	}
}

TEST_F(ImageTest, ImpossibleMipChainsAreRejected)
{
	auto too_many =
	    device().createImage({4, 4, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, kTextureUsage, "too many", 4});
	ASSERT_FALSE(too_many.ok());
	EXPECT_EQ(too_many.error().code, ErrorCode::InvalidArgument);
	auto msaa = device().createImage(
	    {16, 16, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_4_BIT, ImageUsage::ColorAttachment, "msaa mips", 2});
	ASSERT_FALSE(msaa.ok());
	EXPECT_EQ(msaa.error().code, ErrorCode::InvalidArgument);
	auto msaa_full = device().createImage(
	    {16, 16, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_4_BIT, ImageUsage::ColorAttachment, "msaa full chain", 0});
	ASSERT_FALSE(msaa_full.ok());
	EXPECT_EQ(msaa_full.error().code, ErrorCode::InvalidArgument);

	// Building levels by blits reads the image: without TransferSrc the upload is refused, not a validation error.
	auto no_src = device().createImage({4, 4, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
	                                    ImageUsage::Sampled | ImageUsage::TransferDst, "no src", 0});
	ASSERT_TRUE(no_src.ok()) << no_src.error().message;
	const Rgba8Image texels = knownTexels4x4();
	auto refused = uploadImage(device(), *no_src.value(), texels.pixels.data(), texels.pixels.size());
	ASSERT_FALSE(refused.ok());
	EXPECT_EQ(refused.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(refused.error().message.find("TransferSrc"), std::string::npos) << refused.error().message;
}

TEST_F(ImageTest, RecordImageUploadInAListGivesWhatUploadImageGives)
{
	const Rgba8Image texels = knownTexels4x4();
	auto waited = device().createImage({4, 4, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, kTextureUsage, "a", 0});
	auto recorded =
	    device().createImage({4, 4, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, kTextureUsage, "b", 0});
	ASSERT_TRUE(waited.ok() && recorded.ok());
	ASSERT_TRUE(uploadImage(device(), *waited.value(), texels.pixels.data(), texels.pixels.size()).ok());

	// Clear first in the same list: the upload must be ordered after it and overwrite every level.
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	const float red[4] = {1, 0, 0, 1};
	clearColorImage(list.value(), *recorded.value(), red);
	const uint64_t buffers_before = device().memoryStats().live_buffers;
	std::vector<uint8_t> copy = texels.pixels;
	ASSERT_TRUE(recordImageUpload(list.value(), *recorded.value(), copy.data(), copy.size()).ok());
	copy.assign(copy.size(), 0); // texels are copied at record time
	EXPECT_EQ(device().memoryStats().live_buffers, buffers_before + 1) << "the staging buffer lives in the list";
	EXPECT_EQ(recorded.value()->layout(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
	EXPECT_FALSE(recordImageUpload(list.value(), *recorded.value(), copy.data(), 12).ok()) << "size mismatch";
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());

	for (uint32_t level = 0; level < 3; ++level)
	{
		auto a = readImageRgba8(device(), *waited.value(), level);
		auto b = readImageRgba8(device(), *recorded.value(), level);
		ASSERT_TRUE(a.ok() && b.ok());
		EXPECT_EQ(a->pixels, b->pixels) << "level " << level;
	}
	// The fixture's TearDown checks that the staging buffer was released once the submission completed.
}

// A 64×64 checkerboard drawn into 4×4 pixels (16 texels per pixel, LOD 4). Nearest filtering of level 0 picks one
// texel, black or white; a mipmapped sampler reads level 4, which the blits made uniformly grey.
TEST_F(ImageTest, MipmappedSamplerMinifiesACheckerboardToGrey)
{
	constexpr uint32_t kTex = 64, kTarget = 4;
	auto texture = device().createImage(
	    {kTex, kTex, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT, kTextureUsage, "checkerboard", 0});
	ASSERT_TRUE(texture.ok()) << texture.error().message;
	std::vector<uint8_t> texels;
	for (uint32_t y = 0; y < kTex; ++y)
		for (uint32_t x = 0; x < kTex; ++x)
		{
			const uint8_t v = (x + y) % 2 ? 255 : 0;
			texels.insert(texels.end(), {v, v, v, 255});
		}
	ASSERT_TRUE(uploadImage(device(), *texture.value(), texels.data(), texels.size()).ok());

	auto vert = device().shaderCompiler().compile({R"(#version 460
		void main() // one triangle covering the viewport
		{
			vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
			gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
		})",
	                                               ShaderStage::Vertex, "fullscreen.vert"});
	auto frag = device().shaderCompiler().compile({R"(#version 460
		layout(binding = 0) uniform sampler2D tex;
		layout(location = 0) out vec4 color;
		void main() { color = texture(tex, gl_FragCoord.xy / 4.0); })",
	                                               ShaderStage::Fragment, "minify.frag"});
	ASSERT_TRUE(vert.ok()) << vert.error().message;
	ASSERT_TRUE(frag.ok()) << frag.error().message;
	auto pipeline = device().createGraphicsPipeline({.vertex = *vert.value(),
	                                                 .fragment = *frag.value(),
	                                                 .color_formats = {VK_FORMAT_R8G8B8A8_UNORM},
	                                                 .name = "minify"});
	ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;

	auto draw = [&](bool mipmaps) -> Rgba8Image
	{
		auto sampler = device().createSampler(
		    {VK_FILTER_NEAREST, VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE, "minify", mipmaps, mipmaps ? 4.0f : 1.0f});
		EXPECT_TRUE(sampler.ok());
		auto target = device().createImage({kTarget, kTarget, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
		                                    ImageUsage::ColorAttachment | ImageUsage::TransferSrc, "minified"});
		EXPECT_TRUE(target.ok());
		if (!sampler.ok() || !target.ok())
			return {};
		auto list = device().beginCommands();
		EXPECT_TRUE(list.ok());
		RenderingDesc pass;
		pass.color = target.value().get();
		beginRendering(list.value(), pass);
		pipeline.value()->bind(list.value());
		DynamicState{.depth_test = false, .depth_write = false}.apply(list->vk());
		VkDescriptorImageInfo image_info{sampler.value()->vk(), texture.value()->view(),
		                                 VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
		VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
		write.dstBinding = 0;
		write.descriptorCount = 1;
		write.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
		write.pImageInfo = &image_info;
		pipeline.value()->pushDescriptors(list.value(), std::span(&write, 1));
		vkCmdDraw(list->vk(), 3, 1, 0, 0);
		endRendering(list.value());
		list->keepAlive(sampler.value());
		EXPECT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		auto pixels = readImageRgba8(device(), *target.value());
		EXPECT_TRUE(pixels.ok());
		return pixels.ok() ? pixels.value() : Rgba8Image{};
	};

	const Rgba8Image sharp = draw(false), smooth = draw(true);
	ASSERT_EQ(sharp.pixels.size(), size_t(kTarget * kTarget * 4));
	ASSERT_EQ(smooth.pixels.size(), size_t(kTarget * kTarget * 4));
	for (uint32_t y = 0; y < kTarget; ++y)
		for (uint32_t x = 0; x < kTarget; ++x)
		{
			const uint8_t level0 = sharp.at(x, y)[0];
			EXPECT_TRUE(level0 == 0 || level0 == 255) << x << "," << y << ": " << int(level0);
			EXPECT_NEAR(int(smooth.at(x, y)[0]), 128, 2) << x << "," << y;
		}
}

} // namespace quokka::gpu::test
