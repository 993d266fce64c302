// cli_view_test.cpp — the `quokka render` camera options (--view, --ortho, --camera), glTF lines and points in the
// report, the default on-disk caches and --no-cache, and stderr staying clean when no terminal watches.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <quokka/gpu/image_io.hpp>

#include "cli_run.hpp"

namespace
{

const std::string kMarker = QUOKKA_SOURCE_DIR "/examples/data/marker.gltf";

/// Bounding box of the pixels that differ from the top-left one: {x0, y0, x1, y1}.
std::array<uint32_t, 4> drawnBox(const quokka::gpu::Rgba8Image& image)
{
	const auto bg = image.at(0, 0);
	std::array<uint32_t, 4> box{image.width, image.height, 0, 0};
	for (uint32_t y = 0; y < image.height; ++y)
		for (uint32_t x = 0; x < image.width; ++x)
			if (image.at(x, y) != bg)
				box = {std::min(box[0], x), std::min(box[1], y), std::max(box[2], x), std::max(box[3], y)};
	return box;
}

TEST(CliView, TheMarkerDrawsItsLinesAndPointsAndReportsThem)
{
	const std::string png = tempPath("marker.png");
	const CliRun run = runCli("render --gltf " + kMarker + " --width 64 --height 48 --samples 1 --json --out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	EXPECT_EQ(run.err, ""); // no terminal: no progress lines
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["objects"], 3);
	EXPECT_EQ(j["triangles"], 2);
	EXPECT_EQ(j["lines"], 4);
	EXPECT_EQ(j["points"], 4);
	const CliRun text = runCli("render --gltf " + kMarker + " --width 64 --height 48 --samples 1 --out " + png);
	ASSERT_EQ(text.exit_code, 0) << text.err;
	EXPECT_NE(text.out.find("4 lines, 4 points"), std::string::npos) << text.out;
	std::filesystem::remove(png);
}

TEST(CliView, ViewAndOrthoChangeTheImageAndAFrontalOrthoViewIsSymmetric)
{
	// The marker is a square in z = 0 facing +z: seen head-on (azimuth 90°, elevation 0) through an orthographic
	// camera it is an axis-aligned square centred in the image.
	const std::string png = tempPath("ortho.png");
	const CliRun run = runCli("render --gltf " + kMarker + " --view 90,0 --ortho --width 64 --height 64 --samples 1 " +
	                          "--out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok());
	const auto box = drawnBox(*image);
	ASSERT_LE(box[0], box[2]) << "nothing drawn";
	EXPECT_NEAR(double(box[0] + box[2]) / 2.0, 31.5, 1.0);
	EXPECT_NEAR(double(box[1] + box[3]) / 2.0, 31.5, 1.0);
	EXPECT_NEAR(double(box[2] - box[0]), double(box[3] - box[1]), 1.0); // square
	EXPECT_GT(box[2] - box[0], 40u);                                    // framed with a margin, not lost
	EXPECT_LT(box[2] - box[0], 63u);
	// The default view (34°, 35°, perspective) sees it obliquely: a different picture.
	const std::string other = tempPath("default.png");
	ASSERT_EQ(runCli("render --gltf " + kMarker + " --width 64 --height 64 --samples 1 --out " + other).exit_code, 0);
	auto oblique = quokka::gpu::readPng(other);
	ASSERT_TRUE(oblique.ok());
	EXPECT_NE(oblique->pixels, image->pixels);
	std::filesystem::remove(png);
	std::filesystem::remove(other);
}

TEST(CliView, TheFilesCameraIsUsedAndAMissingOneIsNamed)
{
	const std::string dir = tempPath("camera");
	std::filesystem::create_directories(dir);
	nlohmann::json doc = nlohmann::json::parse(std::ifstream(kMarker));
	// A camera 5 units in front of the marker with a narrow field of view.
	doc["cameras"] = {{{"type", "perspective"}, {"perspective", {{"yfov", 0.1}, {"znear", 0.5}}}}};
	doc["nodes"].push_back({{"camera", 0}, {"translation", {0.0, 0.0, 5.0}}});
	doc["scenes"][0]["nodes"].push_back(int(doc["nodes"].size()) - 1);
	std::ofstream(dir + "/cam.gltf") << doc.dump();
	const std::string png = dir + "/cam.png";
	const CliRun run = runCli("render --gltf " + dir +
	                          "/cam.gltf --camera 0 --width 64 --height 64 --samples 1 "
	                          "--out " +
	                          png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok());
	// yfov 0.1 rad at distance 5 shows 0.5 units of height: the 2-unit square covers the whole image, so no pixel has
	// the background colour of the framed render (where the corners are background).
	const CliRun framed =
	    runCli("render --gltf " + dir + "/cam.gltf --width 64 --height 64 --samples 1 --out " + dir + "/framed.png");
	ASSERT_EQ(framed.exit_code, 0) << framed.err;
	auto reference = quokka::gpu::readPng(dir + "/framed.png");
	ASSERT_TRUE(reference.ok());
	const auto bg = reference->at(0, 0);
	uint32_t background = 0;
	for (uint32_t y = 0; y < image->height; ++y)
		for (uint32_t x = 0; x < image->width; ++x)
			background += image->at(x, y) == bg;
	EXPECT_EQ(background, 0u);
	expectOneLineError(runCli("render --gltf " + dir + "/cam.gltf --camera 1 --width 16 --height 16 --out " + png),
	                   "1 camera(s)");
	expectOneLineError(runCli("render --gltf " + kMarker + " --camera 0 --width 16 --height 16 --out " + png),
	                   "no cameras");
	std::filesystem::remove_all(dir);
}

TEST(CliView, CameraOptionsThatMeanNothingAreUsageErrors)
{
	expectUsageError(runCli("render --view 10,20"), "--view");
	expectUsageError(runCli("render --scene grid --camera 0"), "--camera");
	expectUsageError(runCli("render --gltf " + kMarker + " --camera 0 --ortho"), "--camera");
	expectUsageError(runCli("render --scene grid --view abc"), "AZIMUTH,ELEVATION");
	expectUsageError(runCli("render --scene grid --view 10,95"), "-89");
	expectUsageError(runCli("render --scene grid --view 10,20,30"), "AZIMUTH,ELEVATION");
}

TEST(CliView, ShadersArePersistedInTheUsersCacheUnlessNoCacheIsGiven)
{
	const std::string cache = tempPath("xdg");
	std::filesystem::remove_all(cache);
	const std::string env = "env -u QUOKKA_CACHE_DIR XDG_CACHE_HOME=" + cache;
	const std::string args = "render --scene grid --objects 20 --width 16 --height 16 --samples 1 --out /dev/null";
	ASSERT_EQ(runCli(args + " --no-cache", env).exit_code, 0);
	EXPECT_FALSE(std::filesystem::exists(cache + "/quokka"));
	const CliRun run = runCli(args, env);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	ASSERT_TRUE(std::filesystem::is_directory(cache + "/quokka/shaders"));
	size_t shaders = 0;
	for (const auto& entry : std::filesystem::directory_iterator(cache + "/quokka/shaders"))
		shaders += entry.is_regular_file() && entry.path().filename().string().find(".tmp") == std::string::npos;
	EXPECT_GT(shaders, 0u);
	EXPECT_TRUE(std::filesystem::exists(cache + "/quokka/pipeline_cache.bin"));
	// A second run reads them back and gives the same result.
	EXPECT_EQ(runCli(args, env).exit_code, 0);
	std::filesystem::remove_all(cache);
}

} // namespace

namespace
{

TEST(CliMemory, AFramebufferBeyondTheDevicesMemoryIsRefusedUpFront)
{
	const CliRun info = runCli("info --json");
	ASSERT_EQ(info.exit_code, 0) << info.err;
	const uint64_t device_local = nlohmann::json::parse(info.out)["device_local_bytes"].get<uint64_t>();
	// 16384² at 8 samples: output, staging, colour and depth at 8 samples = 18 × 4 bytes per pixel ≈ 19.3 GB.
	if (device_local > 19'000'000'000ull)
		GTEST_SKIP() << "this device has " << device_local << " bytes";
	const CliRun run = runCli("render --width 16384 --height 16384 --samples 8 --out /dev/null");
	expectOneLineError(run, "framebuffer at 8 sample(s) needs");
	EXPECT_EQ(run.exit_code, 1);
	EXPECT_EQ(run.err.find("VK_ERROR"), std::string::npos) << run.err;
}

TEST(CliMemory, AGeneratedSceneBeyondTheHostsMemoryIsRefusedBeforeItIsBuilt)
{
	std::ifstream meminfo("/proc/meminfo");
	std::string key, unit;
	uint64_t kib = 0, available = 0;
	while (meminfo >> key >> kib >> unit)
		if (key == "MemAvailable:")
			available = kib * 1024;
	if (available == 0 || available > 200'000'000'000ull)
		GTEST_SKIP() << "MemAvailable " << available;
	const CliRun run = runCli("render --scene grid --objects 10000000 --width 16 --height 16 --out /dev/null");
	expectOneLineError(run, "--objects 10000000: the grid scene needs about");
	EXPECT_EQ(run.exit_code, 1);
}

} // namespace
