// End-to-end tests of the `quokka` CLI: exit codes, one-line errors, JSON output and the written PNG.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <quokka/gpu/image_io.hpp>

#include "cli_run.hpp"

namespace
{

TEST(CliInfo, JsonNamesTheDeviceAndItsLimits)
{
	const CliRun run = runCli("info --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_FALSE(j["device"].get<std::string>().empty());
	const std::string type = j["type"].get<std::string>();
	EXPECT_TRUE(type == "cpu" || type == "gpu");
	EXPECT_GE(j["limits"]["max_storage_buffer_range"].get<uint64_t>(), 128u << 20);
	EXPECT_TRUE(j["features"]["draw_indirect_count"].get<bool>());
	EXPECT_TRUE(j["features"].contains("mesh_shader"));
	EXPECT_TRUE(j["features"].contains("descriptor_indexing"));
	EXPECT_TRUE(j["features"].contains("shader_float64"));
	EXPECT_TRUE(j["features"].contains("timestamps"));
}

TEST(CliInfo, CpuDeviceIsLavapipeLike)
{
	const CliRun run = runCli("info --json --device cpu");
	if (run.exit_code != 0 && run.err.find("'cpu'") != std::string::npos)
		GTEST_SKIP() << "this machine has no CPU Vulkan device (lavapipe): " << run.err;
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["type"], "cpu");
	// Its device memory is host memory: all of it mappable.
	EXPECT_GT(j["device_local_bytes"].get<uint64_t>(), 0u);
	EXPECT_EQ(j["host_visible_device_local_bytes"], j["device_local_bytes"]);
}

TEST(CliRender, TriangleIsWrittenAsAPngWithTheBackgroundInTheCorners)
{
	const std::string png = tempPath("tri.png");
	const CliRun run =
	    runCli("render --scene triangle --width 96 --height 64 --frames 2 --validate --json --out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	EXPECT_EQ(j["validation"], true);
	EXPECT_EQ(j["frames"], 2);
	EXPECT_EQ(j["draw_calls"], 1);
	EXPECT_TRUE(j["timing_source"] == "wall" || j["timing_source"] == "gpu");
	EXPECT_GE(j["frame_ms"]["median"].get<double>(), 0.0);
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok()) << image.error().message;
	EXPECT_EQ(image->width, 96u);
	EXPECT_EQ(image->height, 64u);
	// Background (0.08, 0.09, 0.11) in UNORM8 at the corners; the triangle's centroid is a mix of all three corners.
	EXPECT_EQ(image->at(0, 0), (std::array<uint8_t, 4>{20, 23, 28, 255}));
	EXPECT_EQ(image->at(95, 0), (std::array<uint8_t, 4>{20, 23, 28, 255}));
	const auto centre = image->at(48, 40);
	EXPECT_GT(int(centre[0]) + centre[1] + centre[2], 200);
	std::filesystem::remove(png);
}

// The heap path draws the city pixel for pixel like the classic path (every strategy picks per slot; `auto` here), at
// the size the demo renders. Seeds 1 and 2 each had one pixel where two overlapping cars' coplanar faces met at
// exactly equal depth, won by whichever was drawn first — the scene now keeps props a few centimetres apart.
TEST(CliRender, TheCityIsTheSameImageOnTheHeapAndTheClassicPath)
{
	for (const char* seed : {"1", "2"})
	{
		std::array<quokka::gpu::Rgba8Image, 2> images;
		for (int p = 0; p < 2; ++p)
		{
			const std::string png = tempPath(std::string("city-") + seed + std::to_string(p) + ".png");
			const CliRun run = runCli(std::string("render --scene city --frames 1 --seed ") + seed + " --path " +
			                          (p == 0 ? "classic" : "heap") + " --out " + png);
			ASSERT_EQ(run.exit_code, 0) << run.err;
			auto image = quokka::gpu::readPng(png);
			ASSERT_TRUE(image.ok()) << image.error().message;
			images[size_t(p)] = std::move(image).value();
			std::filesystem::remove(png);
		}
		ASSERT_EQ(images[0].width, images[1].width);
		ASSERT_EQ(images[0].height, images[1].height);
		// (Textures sampled from the heap's atlas where the device has no bindless textures: within its mipmap bound;
		// bound and bindless textures are checked pixel for pixel by HeapPathDrawsTheCityLikeClassicInEveryStrategy
		// and TheCityDrawsThroughTheBindlessTableLikeClassic.)
		EXPECT_EQ(pixelsDifferingBy(images[0], images[1], kAtlasMipmapSteps), 0u) << "seed " << seed;
	}
}

TEST(CliRender, BackgroundPipelinesWriteTheCompleteImage)
{
	// A cold start (no caches) with background compiles: the first frames leave objects out, the image written is
	// complete — the same pixels as a foreground render — on both paths.
	for (const char* path : {"classic", "heap"})
	{
		std::array<quokka::gpu::Rgba8Image, 2> images;
		for (int b = 0; b < 2; ++b)
		{
			const std::string png = tempPath(std::string("bg-") + path + std::to_string(b) + ".png");
			const CliRun run =
			    runCli(std::string("render --scene city --objects 300 --frames 2 --width 160 --height 120 --path ") +
			           path + " --no-cache --json --out " + png + (b ? " --background-pipelines" : ""));
			ASSERT_EQ(run.exit_code, 0) << run.err;
			const auto j = nlohmann::json::parse(run.out);
			if (b)
			{
				EXPECT_TRUE(j["background_pipelines"].get<bool>());
				EXPECT_GT(j["per_frame"][0]["waiting_draws"].get<uint32_t>(), 0u) << "a cold first frame waits";
				EXPECT_EQ(j["per_frame"].back()["waiting_draws"].get<uint32_t>(), 0u);
				EXPECT_EQ(j["per_frame"].size(), 2u + j["completion_frames"].get<size_t>());
				EXPECT_GT(j["pipelines_ready_ms"].get<double>(), 0.0);
			}
			auto image = quokka::gpu::readPng(png);
			ASSERT_TRUE(image.ok()) << image.error().message;
			images[size_t(b)] = std::move(image).value();
			std::filesystem::remove(png);
		}
		EXPECT_EQ(images[0].pixels, images[1].pixels) << path;
	}
}

TEST(CliRender, TheDefaultPathDrawsThroughTheHeapAndTheHeapSwitchKeepsTheImage)
{
	// The default path is the hybrid router with the heap on: the city's 200 objects in a few draws, the classic
	// path's pixels (within the atlas's mipmap steps where the device has no bindless table). --heap on says the same
	// explicitly, --heap off draws every object through the router's classic pass: the routing counts say so, and the
	// PNG is the classic path's to the bit.
	std::array<quokka::gpu::Rgba8Image, 4> images;
	const char* modes[] = {"", "--heap on", "--heap off", "--path classic"};
	for (int m = 0; m < 4; ++m)
	{
		const std::string png = tempPath("heap-switch" + std::to_string(m) + ".png");
		const CliRun run = runCli(std::string("render --scene city --objects 200 --frames 1 --width 120 --height 90 ") +
		                          modes[m] + " --json --out " + png);
		ASSERT_EQ(run.exit_code, 0) << run.err;
		const auto j = nlohmann::json::parse(run.out);
		const bool heap_on = m < 2;
		EXPECT_EQ(j["path"], m < 3 ? "heap" : "classic") << modes[m];
		if (heap_on)
			EXPECT_LE(j["draw_calls"].get<uint64_t>(), 20u) << modes[m]; // (a draw per bucket slot, not per object)
		else
			EXPECT_EQ(j["draw_calls"].get<uint64_t>(), j["objects"].get<uint64_t>()) << modes[m];
		if (m < 3)
		{
			EXPECT_EQ(j["heap_enabled"].get<bool>(), heap_on);
			EXPECT_EQ(j["routing"]["heap"].get<uint64_t>(), heap_on ? 200u : 0u);
			EXPECT_EQ(j["routing"]["heap disabled"].get<uint64_t>(), heap_on ? 0u : 200u);
			EXPECT_EQ(j["heap"]["objects"].get<uint64_t>(), heap_on ? 200u : 0u);
			// Per-path timings: the path that drew spent encode time.
			const auto& f = j["per_frame"].back();
			EXPECT_GT(f[heap_on ? "heap_encode_ms" : "classic_encode_ms"].get<double>(), 0.0) << f.dump();
			EXPECT_GE(f["heap_update_ms"].get<double>(), 0.0) << f.dump();
			EXPECT_GE(f["classic_update_ms"].get<double>(), 0.0) << f.dump();
		}
		auto image = quokka::gpu::readPng(png);
		ASSERT_TRUE(image.ok()) << image.error().message;
		images[size_t(m)] = std::move(image).value();
		std::filesystem::remove(png);
	}
	EXPECT_EQ(images[0].pixels, images[1].pixels);
	EXPECT_EQ(pixelsDifferingBy(images[0], images[3], kAtlasMipmapSteps), 0u); // (the heap's atlas)
	EXPECT_EQ(images[2].pixels, images[3].pixels);
	const CliRun text = runCli("render --scene grid --objects 50 --frames 1 --width 64 --height 48 --heap on "
	                           "--explain-routing --out " +
	                           tempPath("explain.png"));
	ASSERT_EQ(text.exit_code, 0) << text.err;
	EXPECT_NE(text.out.find("routing: 50 objects drawn by the heap"), std::string::npos) << text.out;
	EXPECT_NE(text.out.find("input larger than a heap chunk"), std::string::npos) << text.out;
	EXPECT_NE(text.out.find(": 0 heap objects "), std::string::npos) << text.out; // (no textures in the grid)
	std::filesystem::remove(tempPath("explain.png"));
	const CliRun city = runCli("render --scene city --objects 200 --frames 1 --width 64 --height 48 --heap on "
	                           "--textures atlas --explain-routing --out " +
	                           tempPath("explain.png"));
	ASSERT_EQ(city.exit_code, 0) << city.err;
	EXPECT_NE(city.out.find(" heap objects sample the atlas (3 entries"), std::string::npos) << city.out;
	std::filesystem::remove(tempPath("explain.png"));
	expectOneLineError(runCli("render --scene city --path classic --textures bound --out /dev/null"), "--textures");
	expectOneLineError(runCli("render --scene city --heap off --path classic --out /dev/null"), "--path classic");
}

TEST(CliErrors, UnknownSceneIsOneLineAndNonZero)
{
	expectOneLineError(runCli("render --scene nope --out /dev/null"), "unknown scene 'nope'");
}

TEST(CliErrors, ImpossibleSizeIsOneLineAndNonZero)
{
	expectOneLineError(runCli("render --width 0"), "--width");
	expectOneLineError(runCli("render --height 100000"), "--height");
}

TEST(CliErrors, UnknownOptionAndCommandAreOneLineAndNonZero)
{
	expectOneLineError(runCli("render --frobnicate"), "frobnicate");
	expectOneLineError(runCli("paint"), "paint");
}

TEST(CliErrors, BadDeviceKindIsOneLineAndNonZero)
{
	expectOneLineError(runCli("info", "QUOKKA_DEVICE=quantum"), "quantum");
	expectOneLineError(runCli("info --device quantum"), "quantum");
}

TEST(CliErrors, NoVulkanDriverIsOneLineAndNonZero)
{
	// Point the loader at a driver manifest that does not exist: the loader finds no ICD.
	expectOneLineError(runCli("info", "VK_DRIVER_FILES=/nonexistent/icd.json VK_ICD_FILENAMES=/nonexistent/icd.json"),
	                   "no Vulkan driver");
}

TEST(CliErrors, AbsentDeviceKindFailsCleanlyWhenThereIsNoGpu)
{
	const CliRun cpu = runCli("info --json --device gpu");
	if (cpu.exit_code == 0)
		GTEST_SKIP() << "this machine has a Vulkan GPU";
	expectOneLineError(cpu, "'gpu'");
}

TEST(CliRender, UnwritableOutputIsOneLineAndNonZero)
{
	expectOneLineError(runCli("render --width 16 --height 16 --out /nonexistent-dir/x.png"), "/nonexistent-dir/x.png");
}

TEST(CliRender, MeshletSceneWritesAPngAndReportsTheManager)
{
	const std::string png = tempPath("meshlets.png");
	const CliRun run =
	    runCli("render --scene meshlets --width 96 --height 64 --frames 2 --validate --json --out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	EXPECT_EQ(j["draw_calls"], 1);
	// Auto: mesh shaders where the device has them, vertex pulling elsewhere (lavapipe).
	EXPECT_TRUE(j["meshlet_path"] == "vertex-pulling" || j["meshlet_path"] == "mesh-shader") << j["meshlet_path"];
	EXPECT_GT(j["meshlets"].get<uint64_t>(), 100u);
	EXPECT_GE(j["compactions"].get<uint64_t>(), 1u);
	EXPECT_LE(j["gpu_memory_usage_occupied"].get<uint64_t>(), j["gpu_memory_usage"].get<uint64_t>());
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok()) << image.error().message;
	uint32_t lit = 0;
	for (uint32_t y = 0; y < image->height; ++y)
		for (uint32_t x = 0; x < image->width; ++x)
			lit += image->at(x, y) != std::array<uint8_t, 4>{20, 23, 28, 255};
	EXPECT_GT(lit, 96u * 64u / 8);
	std::filesystem::remove(png);
}

TEST(CliBench, MeshletJsonHasEveryFigureWithItsSameRunRatio)
{
	const CliRun run = runCli("bench meshlet --json --mib 4 --ops 20000 --reps 1");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["bench"], "meshlet");
	EXPECT_GT(j["allocator"]["offset_allocator_pairs_per_s"].get<double>(), 0.0);
	EXPECT_GT(j["allocator"]["ratio_vs_naive"].get<double>(), 0.0);
	EXPECT_EQ(j["allocator"]["failed_allocations"], 0);
	// The clock reference: a plausible core clock (any CPU that runs CI is between 0.3 and 8 GHz), min ≤ median ≤
	// max, and cycles per pair consistent with it.
	const auto& a = j["allocator"];
	EXPECT_GT(a["core_clock_ghz"].get<double>(), 0.3);
	EXPECT_LT(a["core_clock_ghz"].get<double>(), 8.0);
	EXPECT_LE(a["core_clock_ghz_min"].get<double>(), a["core_clock_ghz"].get<double>());
	EXPECT_GE(a["core_clock_ghz_max"].get<double>(), a["core_clock_ghz"].get<double>());
	EXPECT_NEAR(a["offset_allocator_cycles_per_pair"].get<double>(),
	            a["core_clock_ghz"].get<double>() * 1e9 / a["offset_allocator_pairs_per_s"].get<double>(), 1e-6);
	EXPECT_GT(j["copy"]["gb_per_s"].get<double>(), 0.0);
	EXPECT_GT(j["compaction"]["bytes_moved"].get<uint64_t>(), 0u);
	EXPECT_GT(j["compaction"]["fraction_of_copy_bandwidth"].get<double>(), 0.0);
	EXPECT_GT(j["clone"]["fraction_of_copy_bandwidth"].get<double>(), 0.0);
	EXPECT_EQ(j["validation_errors"], 0);
}

TEST(CliErrors, UnknownBenchmarkIsOneLineAndNonZero)
{
	expectOneLineError(runCli("bench nope"), "unknown benchmark 'nope'");
}

TEST(CliHelp, HelpExitsZero)
{
	const CliRun run = runCli("--help");
	EXPECT_EQ(run.exit_code, 0);
	EXPECT_NE(run.out.find("render"), std::string::npos);
}

} // namespace

// ---- scene-graph scenes through the classic path (issue #4) -------------------------------------------------------

namespace
{
/// Pixels of `image` for which `pred(rgba)` holds.
template <typename Pred>
uint32_t countPixels(const quokka::gpu::Rgba8Image& image, Pred pred)
{
	uint32_t n = 0;
	for (uint32_t y = 0; y < image.height; ++y)
		for (uint32_t x = 0; x < image.width; ++x)
			n += pred(image.at(x, y)) ? 1u : 0u;
	return n;
}

/// Pixels that differ from the scene background (the top-left pixel).
uint32_t nonBackground(const quokka::gpu::Rgba8Image& image)
{
	const auto bg = image.at(0, 0);
	return countPixels(image, [&](const std::array<uint8_t, 4>& p) { return p != bg; });
}

/// Pixels where channel `c` dominates the other two.
uint32_t dominant(const quokka::gpu::Rgba8Image& image, int c)
{
	return countPixels(image, [&](const std::array<uint8_t, 4>& p)
	                   { return p[c] > 60 && p[c] > 2 * p[(c + 1) % 3] && p[c] > 2 * p[(c + 2) % 3]; });
}
} // namespace

TEST(CliRender, GridSceneDrawsOneCallPerObjectAndReportsItsFrames)
{
	const std::string png = tempPath("grid.png");
	const CliRun run = runCli("render --scene grid --objects 200 --width 128 --height 96 --samples 1 --frames 3 "
	                          "--path classic --validate --json --out " +
	                          png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	EXPECT_EQ(j["path"], "classic");
	EXPECT_EQ(j["objects"], 200);
	EXPECT_EQ(j["draw_calls"], 200);
	EXPECT_EQ(j["pipeline_binds"], 1);
	EXPECT_EQ(j["prepared_first_frame"], 200);
	EXPECT_EQ(j["frames"], 3);
	EXPECT_GT(j["triangles"].get<uint64_t>(), 200u * 10u - 1u);
	// The camera orbits: every frame re-uploads every object's uniform block, and creates no pipeline.
	EXPECT_EQ(j["uniform_uploads_last_frame"], 200);
	EXPECT_EQ(j["pipelines"], 1);
	for (const char* key : {"cpu_update_ms", "cpu_encode_ms", "gpu_ms", "frame_ms"})
		EXPECT_GE(j[key]["median"].get<double>(), 0.0) << key;
	ASSERT_EQ(j["per_frame"].size(), 3u);
	EXPECT_EQ(j["per_frame"][0]["prepared"], 200);
	EXPECT_EQ(j["per_frame"][1]["prepared"], 0);
	EXPECT_EQ(j["per_frame"][2]["draw_calls"], 200);
	EXPECT_EQ(j["per_frame"][2]["uniform_uploads"], 200);
	// Stutter figures over the frames after the first: every frame counted once in the histogram, max ≥ median.
	const auto& spread = j["cpu_frame_ms"];
	ASSERT_EQ(spread["frames"], 2);
	int counted = 0;
	for (const auto& [bin, count] : spread["histogram"].items())
		counted += count.get<int>();
	EXPECT_EQ(counted, 2);
	EXPECT_GE(spread["max"].get<double>(), spread["median"].get<double>());
	EXPECT_GE(spread["max_over_median"].get<double>(), 1.0);
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok()) << image.error().message;
	EXPECT_GT(nonBackground(*image), 128u * 96u / 20);
	std::filesystem::remove(png);
}

TEST(CliRender, SameSeedSamePixelsOtherSeedOtherPixels)
{
	const std::string a = tempPath("grid-a.png"), b = tempPath("grid-b.png"), c = tempPath("grid-c.png");
	const std::string args = "render --scene grid --objects 50 --width 64 --height 48 --samples 1 --out ";
	ASSERT_EQ(runCli(args + a + " --seed 7").exit_code, 0);
	ASSERT_EQ(runCli(args + b + " --seed 7").exit_code, 0);
	ASSERT_EQ(runCli(args + c + " --seed 8").exit_code, 0);
	auto ia = quokka::gpu::readPng(a), ib = quokka::gpu::readPng(b), ic = quokka::gpu::readPng(c);
	ASSERT_TRUE(ia.ok() && ib.ok() && ic.ok());
	EXPECT_EQ(ia->pixels, ib->pixels);
	EXPECT_NE(ia->pixels, ic->pixels);
	for (const auto& p : {a, b, c})
		std::filesystem::remove(p);
}

// --origin moves the scene and its camera 10^7 m out: drawn with the camera-relative ModelViewProjTrafo, the objects
// cover the pixels they cover at the origin, on both paths (the shading may differ a little: lighting still works
// in world space, in float). A malformed offset, or one for a scene without a framed camera, is a usage error.
TEST(CliRender, AnOriginTenThousandKilometresOutCoversThePixelsOfTheOrigin)
{
	const std::string args = "render --scene grid --objects 40 --width 96 --height 72 --samples 1 --out ";
	auto mask = [](const std::string& png)
	{
		auto image = quokka::gpu::readPng(png);
		EXPECT_TRUE(image.ok());
		std::vector<bool> covered;
		const auto corner = image->at(0, 0);
		for (uint32_t y = 0; y < image->height; ++y)
			for (uint32_t x = 0; x < image->width; ++x)
				covered.push_back(image->at(x, y) != corner);
		std::filesystem::remove(png);
		return covered;
	};
	for (const char* path : {"heap", "classic"})
	{
		const std::string near = tempPath("origin-0.png"), far = tempPath("origin-far.png");
		ASSERT_EQ(runCli(args + near + " --path " + path).exit_code, 0);
		const CliRun run = runCli(args + far + " --path " + path + " --origin 1e7,2e6,-3e6");
		ASSERT_EQ(run.exit_code, 0) << run.err;
		const std::vector<bool> a = mask(near), b = mask(far);
		ASSERT_EQ(a.size(), b.size());
		size_t covered = 0, differ = 0;
		for (size_t i = 0; i < a.size(); ++i)
		{
			covered += a[i];
			differ += a[i] != b[i];
		}
		EXPECT_GT(covered, a.size() / 50) << path;
		EXPECT_LE(differ, covered / 50) << path << ": " << differ << " of " << covered << " pixels differ in coverage";
		std::printf("%s: %zu of %zu covered pixels differ in coverage at 10^7 m\n", path, differ, covered);
	}
	expectUsageError(runCli("render --scene grid --origin 1e7,0"), "--origin");
	expectUsageError(runCli("render --scene grid --origin 1e7,0,nan"), "--origin");
	expectUsageError(runCli("render --scene triangle --origin 1,2,3"), "--origin");
}

TEST(CliRender, CitySceneMixesEffectsAndSortsByPipeline)
{
	const std::string png = tempPath("city.png");
	const CliRun run = runCli("render --scene city --objects 400 --width 160 --height 120 --frames 2 --path classic "
	                          "--validate --json --out " +
	                          png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	const uint64_t objects = j["objects"].get<uint64_t>();
	EXPECT_GE(objects, 400u);
	EXPECT_EQ(j["draw_calls"].get<uint64_t>(), objects);
	// Several effects (lit, vertex-coloured, textured, instanced), each bound once per frame after sorting.
	EXPECT_GE(j["pipelines"].get<uint64_t>(), 4u);
	EXPECT_EQ(j["pipeline_binds"].get<uint64_t>(), j["pipelines"].get<uint64_t>());
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok()) << image.error().message;
	EXPECT_GT(nonBackground(*image), 160u * 120u / 10);
	std::filesystem::remove(png);
}

TEST(CliRender, HeapPathDrawsTheCityLikeClassicInEveryStrategy)
{
	// Every strategy samples the city's textures from the atlas (within its mipmap bound of the classic path's
	// hardware sampling); with --textures bound the heap binds them and the image is the classic one pixel for pixel.
	const std::string base = "render --scene city --objects 200 --width 128 --height 96 --samples 1 --frames 2 ";
	const std::string classic_png = tempPath("city-classic.png");
	ASSERT_EQ(runCli(base + "--path classic --out " + classic_png).exit_code, 0);
	auto classic = quokka::gpu::readPng(classic_png);
	ASSERT_TRUE(classic.ok());
	for (const char* draw :
	     {"indirect --textures atlas", "megacall --textures atlas", "auto --textures atlas", "auto --textures bound"})
	{
		const bool atlas = std::string(draw).find("bound") == std::string::npos;
		const std::string png =
		    tempPath(std::string("city-heap-") + std::string(draw).substr(0, 4) + (atlas ? "" : "-bound") + ".png");
		const CliRun run = runCli(base + "--path heap --validate --json --draw " + draw + " --out " + png);
		ASSERT_EQ(run.exit_code, 0) << run.err;
		const auto j = nlohmann::json::parse(run.out);
		EXPECT_EQ(j["path"], "heap");
		EXPECT_EQ(j["validation_errors"], 0);
		EXPECT_EQ(j["heap_findings"].size(), 0u);
		EXPECT_EQ(j["heap"]["objects"], j["objects"]);
		// O(buckets × slots) draws instead of one per object.
		EXPECT_EQ(j["draw_calls"].get<uint64_t>(), j["heap"]["slots"].get<uint64_t>()) << draw;
		EXPECT_LT(j["draw_calls"].get<uint64_t>(), 20u) << draw;
		auto image = quokka::gpu::readPng(png);
		ASSERT_TRUE(image.ok());
		ASSERT_EQ(image->width, classic->width);
		if (atlas)
		{
			EXPECT_EQ(pixelsDifferingBy(*image, *classic, kAtlasMipmapSteps), 0u) << draw;
			EXPECT_GT(j["heap"]["atlas_objects"].get<uint64_t>(), 0u) << draw;
			EXPECT_EQ(j["heap"]["atlas_refused"].get<uint64_t>(), 0u) << draw;
		}
		else
		{
			EXPECT_EQ(image->pixels, classic->pixels) << draw;
			EXPECT_EQ(j["heap"]["atlas_objects"].get<uint64_t>(), 0u);
		}
		std::filesystem::remove(png);
	}
	std::filesystem::remove(classic_png);
}

// Where the device has bindless textures (scripts/test runs this on bookworm-backports' lavapipe): the city's textured
// objects index the heap's table — one draw for objects differing in their textures — with the classic path's pixels
// exactly; `auto` picks it. Elsewhere --textures bindless is a one-line error naming what the device lacks.
TEST(CliRender, TheCityDrawsThroughTheBindlessTableLikeClassic)
{
	const std::string base = "render --scene city --objects 200 --width 128 --height 96 --samples 1 --frames 2 ";
	const std::string png = tempPath("city-bindless.png"), classic_png = tempPath("city-bindless-classic.png");
	const CliRun run = runCli(base + "--path heap --textures bindless --validate --json --out " + png);
	if (run.exit_code != 0 && run.err.find("descriptor indexing") != std::string::npos)
	{
		expectOneLineError(run, "descriptor indexing");
		const char* required = std::getenv("QUOKKA_REQUIRE_BINDLESS");
		ASSERT_FALSE(required && std::string(required) == "1") << run.err;
		GTEST_SKIP() << "no bindless textures on this device";
	}
	ASSERT_EQ(run.exit_code, 0) << run.err;
	ASSERT_EQ(runCli(base + "--path classic --out " + classic_png).exit_code, 0);
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	EXPECT_EQ(j["heap_findings"].size(), 0u);
	EXPECT_EQ(j["heap"]["textures"], "bindless");
	EXPECT_GT(j["heap"]["bindless_objects"].get<uint64_t>(), 0u);
	EXPECT_EQ(j["heap"]["bindless_refused"].get<uint64_t>(), 0u);
	EXPECT_EQ(j["heap"]["atlas_objects"].get<uint64_t>(), 0u);
	auto image = quokka::gpu::readPng(png);
	auto classic = quokka::gpu::readPng(classic_png);
	ASSERT_TRUE(image.ok() && classic.ok());
	EXPECT_EQ(image->pixels, classic->pixels);
	const CliRun automatic = runCli(base + "--path heap --json --out " + png);
	ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
	EXPECT_EQ(nlohmann::json::parse(automatic.out)["heap"]["textures"], "bindless");
	std::filesystem::remove(png);
	std::filesystem::remove(classic_png);
}

// render --compare: the same frames on the classic path, then the heap path, in one run — the JSON's `compare` holds
// both paths' figures (the heap's draw calls a few against one per object), the text a side-by-side table; the image
// written is the heap path's.
TEST(CliRender, CompareRendersBothPathsSideBySideInOneRun)
{
	const std::string base = "render --scene city --objects 300 --width 96 --height 64 --samples 1 --frames 3 ";
	const std::string png = tempPath("compare.png");
	const CliRun run = runCli(base + "--compare --json --out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["path"], "heap");
	const auto& c = j["compare"];
	ASSERT_TRUE(c.contains("classic") && c.contains("heap")) << j.dump();
	EXPECT_EQ(c["classic"]["draw_calls"].get<uint64_t>(), j["objects"].get<uint64_t>());
	EXPECT_LT(c["heap"]["draw_calls"].get<uint64_t>(), 20u);
	EXPECT_EQ(c["heap"]["draw_calls"], j["draw_calls"]);
	for (const char* path : {"classic", "heap"})
		for (const char* key : {"update_ms", "encode_ms", "frame_ms", "first_frame_update_ms"})
			EXPECT_GE(c[path][key].get<double>(), 0.0) << path << " " << key;
	const CliRun text = runCli(base + "--compare --out " + png);
	ASSERT_EQ(text.exit_code, 0) << text.err;
	EXPECT_NE(text.out.find("side by side, the same 3 frame(s)"), std::string::npos) << text.out;
	EXPECT_NE(text.out.find("draw calls"), std::string::npos) << text.out;
	std::filesystem::remove(png);
	expectOneLineError(runCli("render --scene city --compare --path classic --out /dev/null"), "--compare");
	expectOneLineError(runCli("render --scene triangle --compare --out /dev/null"), "--compare");
}

// scripts/plot turns the JSON of bench draw, update and camera into PNG charts (python3-matplotlib, which scripts/test
// has bootstrap install); an input that is not such JSON is a one-line error, exit 1, with nothing written.
TEST(CliPlot, BenchJsonBecomesPngCharts)
{
	const std::string dir = tempPath("plots");
	std::filesystem::remove_all(dir);
	const std::map<std::string, std::string> benches = {
	    {"draw", "bench draw --objects 50 200 --reps 1 --json"},
	    {"update", "bench update --objects 300 --k 1 10 --reps 1 --json"},
	    {"camera", "bench camera --objects 200 --reps 1 --json"}};
	std::string inputs;
	for (const auto& [name, args] : benches)
	{
		const CliRun run = runCli(args);
		ASSERT_EQ(run.exit_code, 0) << args << ": " << run.err;
		const std::string path = tempPath(name + ".json");
		std::ofstream(path) << run.out;
		inputs += " " + path;
	}
	const std::string plot = QUOKKA_SOURCE_DIR "/scripts/plot";
	const CliRun run = runProgram(plot, "--out " + dir + inputs);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	for (const char* png : {"draw_encode.png", "draw_gpu.png", "update.png", "camera.png"})
	{
		const std::string path = dir + "/" + png;
		ASSERT_TRUE(std::filesystem::exists(path)) << path;
		EXPECT_GT(std::filesystem::file_size(path), 10000u) << path;
		EXPECT_NE(run.out.find(path), std::string::npos) << run.out;
		auto image = quokka::gpu::readPng(path);
		ASSERT_TRUE(image.ok()) << image.error().message;
		EXPECT_GT(image->width, 400u);
	}
	std::filesystem::remove_all(dir);
	const std::string bad = tempPath("not-a-bench.json");
	std::ofstream(bad) << R"({"benchmark": "something else"})";
	const CliRun refused = runProgram(plot, "--out " + dir + " " + bad);
	EXPECT_EQ(refused.exit_code, 1);
	EXPECT_EQ(refused.err.rfind("plot: error: ", 0), 0u) << refused.err;
	EXPECT_FALSE(std::filesystem::exists(dir));
	for (const auto& [name, args] : benches)
		std::filesystem::remove(tempPath(name + ".json"));
	std::filesystem::remove(bad);
}

TEST(CliValidate, CleanHeapReportsNoFindingsAndPagedChunksToo)
{
	const CliRun run = runCli("validate --scene grid --objects 300 --max-chunk-bytes 65536 --draw megacall --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["objects"], 300);
	EXPECT_GT(j["chunks"].get<uint64_t>(), 1u);
	EXPECT_EQ(j["findings"].size(), 0u);
	expectOneLineError(runCli("validate --draw sideways"), "sideways");
	expectOneLineError(runCli("render --scene grid --path heap --max-chunk-bytes 12"), "max-chunk-bytes");
}

TEST(CliRender, GltfTriangleRendersInItsBaseColour)
{
	// A .gltf with an external .bin: one red, double-sided triangle; the camera frames its bounds.
	const std::string dir = tempPath("gltf");
	std::filesystem::create_directories(dir);
	const float positions[9] = {-1, 0, 0, 1, 0, 0, 0, 1.5f, 0};
	std::ofstream(dir + "/tri.bin", std::ios::binary)
	    .write(reinterpret_cast<const char*>(positions), sizeof(positions));
	std::ofstream(dir + "/tri.gltf") << R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],
	  "nodes":[{"mesh":0}],"meshes":[{"primitives":[{"attributes":{"POSITION":0},"material":0}]}],
	  "materials":[{"doubleSided":true,"pbrMetallicRoughness":{"baseColorFactor":[1,0,0,1]}}],
	  "buffers":[{"byteLength":36,"uri":"tri.bin"}],"bufferViews":[{"buffer":0,"byteLength":36}],
	  "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[-1,0,0],"max":[1,1.5,0]}]})";
	const std::string png = dir + "/out.png";
	const CliRun run =
	    runCli("render --gltf " + dir + "/tri.gltf --width 96 --height 96 --validate --json --out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	EXPECT_EQ(j["objects"], 1);
	EXPECT_EQ(j["triangles"], 1);
	EXPECT_EQ(j["draw_calls"], 1);
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok()) << image.error().message;
	// Red-dominant pixels, and plenty of them: the triangle fills a good part of the framed view.
	const uint32_t red = dominant(*image, 0);
	EXPECT_GT(red, 96u * 96u / 20) << "red pixels: " << red;
	std::filesystem::remove_all(dir);
}

TEST(CliRender, GlbWrittenByTheTestRendersItsTexturelessQuadInTheBaseColour)
{
	// A .glb (JSON chunk + BIN chunk): an indexed quad of two triangles, green, in a node translated and scaled.
	const float positions[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
	const uint16_t indices[6] = {0, 1, 2, 0, 2, 3};
	std::string bin(reinterpret_cast<const char*>(positions), sizeof(positions));
	bin.append(reinterpret_cast<const char*>(indices), sizeof(indices));
	std::string json = R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],
	  "nodes":[{"mesh":0,"translation":[5,0,0],"scale":[2,2,2]}],
	  "meshes":[{"primitives":[{"attributes":{"POSITION":0},"indices":1,"material":0}]}],
	  "materials":[{"doubleSided":true,"pbrMetallicRoughness":{"baseColorFactor":[0,1,0,1]}}],
	  "buffers":[{"byteLength":60}],
	  "bufferViews":[{"buffer":0,"byteLength":48},{"buffer":0,"byteOffset":48,"byteLength":12}],
	  "accessors":[{"bufferView":0,"componentType":5126,"count":4,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},
	               {"bufferView":1,"componentType":5123,"count":6,"type":"SCALAR"}]})";
	while (json.size() % 4)
		json.push_back(' ');
	while (bin.size() % 4)
		bin.push_back('\0');
	const std::string glb = tempPath("quad.glb");
	{
		std::ofstream out(glb, std::ios::binary);
		auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
		u32(0x46546C67u);
		u32(2u);
		u32(uint32_t(12 + 8 + json.size() + 8 + bin.size()));
		u32(uint32_t(json.size()));
		u32(0x4E4F534Au);
		out << json;
		u32(uint32_t(bin.size()));
		u32(0x004E4942u);
		out << bin;
	}
	const std::string png = tempPath("quad.png");
	const CliRun run = runCli("render --gltf " + glb + " --width 96 --height 96 --validate --json --out " + png);
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["validation_errors"], 0);
	EXPECT_EQ(j["objects"], 1);
	EXPECT_EQ(j["triangles"], 2);
	auto image = quokka::gpu::readPng(png);
	ASSERT_TRUE(image.ok()) << image.error().message;
	const uint32_t green = dominant(*image, 1);
	// The camera frames the bounds, so the quad covers a good part of the view.
	EXPECT_GT(green, 96u * 96u / 10) << "green pixels: " << green;
	std::filesystem::remove(glb);
	std::filesystem::remove(png);
}

TEST(CliErrors, MissingOrTruncatedGltfIsOneLineAndNonZero)
{
	expectOneLineError(runCli("render --gltf /nonexistent/model.glb --width 16 --height 16"), "/nonexistent/model.glb");
	// A truncated .glb: a valid 12-byte header announcing more bytes than the file has.
	const std::string glb = tempPath("cut.glb");
	{
		std::ofstream out(glb, std::ios::binary);
		const uint32_t header[5] = {0x46546C67u, 2u, 4096u, 512u, 0x4E4F534Au};
		out.write(reinterpret_cast<const char*>(header), sizeof(header));
		out << R"({"asset":{"vers)";
	}
	expectOneLineError(runCli("render --gltf " + glb + " --width 16 --height 16"), "cut.glb");
	std::filesystem::remove(glb);
}

TEST(CliErrors, UnknownSceneListsTheScenes)
{
	expectOneLineError(runCli("render --scene nope --width 16 --height 16"), "grid, city");
}
