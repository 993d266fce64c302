// cli_trust_test.cpp — no silent wrong results from the `quokka` CLI: a full device or an unwritable report is an
// error, a failed render leaves an earlier image alone, exit codes and conflicting options as documented, glTF runs
// labelled and kept inside the model's folder, the camera frames the whole scene, the JSON agrees with itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <quokka/gpu/image_io.hpp>

#include "cli_run.hpp"

// ---- trust: no silent wrong results, exit codes as documented (issue #36) -------------------------------------------

TEST(CliTrust, AFullDeviceIsAnErrorNotATruncatedImage)
{
	if (!std::filesystem::exists("/dev/full"))
		GTEST_SKIP() << "no /dev/full here";
	const CliRun run = runCli("render --width 64 --height 64 --out /dev/full");
	expectOneLineError(run, "No space left");
	EXPECT_EQ(run.exit_code, 1);
	EXPECT_EQ(run.out.find("wrote"), std::string::npos) << run.out;
	EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));
}

TEST(CliTrust, AReportThatCannotBeWrittenIsAnError)
{
	if (!std::filesystem::exists("/dev/full"))
		GTEST_SKIP() << "no /dev/full here";
	const CliRun run = runCli("info --json >/dev/full");
	expectOneLineError(run, "cannot write standard output");
	EXPECT_EQ(run.exit_code, 1);
}

TEST(CliTrust, AFailedRenderLeavesAnEarlierImageAsItWas)
{
	const std::string png = tempPath("kept.png");
	ASSERT_EQ(runCli("render --width 16 --height 16 --out " + png).exit_code, 0);
	const auto before = std::filesystem::file_size(png);
	// The same output, but the run fails (a bad setting) before anything is written.
	const CliRun run = runCli("render --width 16 --height 16 --out " + png, "QUOKKA_VALIDATION=banana");
	EXPECT_EQ(run.exit_code, 2);
	EXPECT_EQ(std::filesystem::file_size(png), before);
	auto image = quokka::gpu::readPng(png);
	EXPECT_TRUE(image.ok());
	std::filesystem::remove(png);
}

TEST(CliTrust, BadArgumentsAndSettingsExitWithTwo)
{
	expectUsageError(runCli("render --scene bogus --width 16 --height 16"), "unknown scene 'bogus'");
	expectUsageError(runCli("info --device bogus"), "bogus");
	expectUsageError(runCli("info", "QUOKKA_DEVICE=bogus"), "QUOKKA_DEVICE='bogus'");
	expectUsageError(runCli("info", "QUOKKA_VALIDATION=banana"), "QUOKKA_VALIDATION='banana'");
	expectUsageError(runCli("bench frob"), "unknown benchmark 'frob'");
	expectUsageError(runCli("bench update --objects 5"), "below 10");
	expectUsageError(runCli("bench update --path classic"), "heap only");
	expectUsageError(runCli("render --width abc"), "--width");
	expectUsageError(runCli("paint"), "paint");
	expectUsageError(runCli("bench meshlet --mib 65536 --reps 1 --ops 1000"), "--mib 65536");
}

TEST(CliTrust, ConflictingOrMeaninglessOptionsAreRejected)
{
	expectUsageError(runCli("render --scene grid --gltf model.gltf"), "--gltf");
	expectUsageError(runCli("render --objects 5 --width 16 --height 16"), "--objects");
	expectUsageError(runCli("render --gltf model.gltf --objects 5"), "--objects");
	expectUsageError(runCli("render --scene meshlets --path heap"), "--path");
	expectUsageError(runCli("render --out ''"), "--out");
	expectUsageError(runCli("render --out -"), "--out");
	expectUsageError(runCli("render --out picture.jpg"), "picture.jpg");
	expectUsageError(runCli("validate --scene grid --gltf model.gltf"), "--gltf");
}

TEST(CliTrust, VersionPrintsTheVersionAndExitsZero)
{
	const CliRun run = runCli("--version");
	EXPECT_EQ(run.exit_code, 0) << run.err;
	EXPECT_EQ(run.out, "quokka 0.1.0\n");
}

TEST(CliTrust, GltfRunsAreLabelledByTheirFile)
{
	// The report names the file, and the default output is named after it (not quokka-triangle.png).
	const std::string dir = tempPath("label");
	std::filesystem::create_directories(dir);
	const float positions[9] = {-1, 0, 0, 1, 0, 0, 0, 1.5f, 0};
	std::ofstream(dir + "/wing.bin", std::ios::binary)
	    .write(reinterpret_cast<const char*>(positions), sizeof(positions));
	std::ofstream(dir + "/wing.gltf") << R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],
	  "nodes":[{"mesh":0}],"meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],
	  "buffers":[{"byteLength":36,"uri":"wing.bin"}],"bufferViews":[{"buffer":0,"byteLength":36}],
	  "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[-1,0,0],"max":[1,1.5,0]}]})";
	const CliRun run = runCli("render --gltf wing.gltf --width 32 --height 32", "cd " + dir + " &&");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	EXPECT_NE(run.out.find("glTF wing.gltf"), std::string::npos) << run.out;
	EXPECT_EQ(run.out.find("scene triangle"), std::string::npos) << run.out;
	EXPECT_TRUE(std::filesystem::exists(dir + "/quokka-wing.png"));
	EXPECT_FALSE(std::filesystem::exists(dir + "/quokka-triangle.png"));
	const CliRun json =
	    runCli("render --gltf wing.gltf --width 32 --height 32 --json --out w.png", "cd " + dir + " &&");
	ASSERT_EQ(json.exit_code, 0) << json.err;
	const auto j = nlohmann::json::parse(json.out);
	EXPECT_EQ(j["scene"], "gltf");
	EXPECT_EQ(j["gltf"], "wing.gltf");
	std::filesystem::remove_all(dir);
}

TEST(CliTrust, GltfBuffersOutsideTheModelsFolderAreRefusedUnlessAllowed)
{
	const std::string dir = tempPath("confined");
	std::filesystem::create_directories(dir + "/model");
	const float positions[9] = {-1, 0, 0, 1, 0, 0, 0, 1.5f, 0};
	std::ofstream(dir + "/secret.bin", std::ios::binary)
	    .write(reinterpret_cast<const char*>(positions), sizeof(positions));
	std::ofstream(dir + "/model/up.gltf") << R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],
	  "nodes":[{"mesh":0}],"meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],
	  "buffers":[{"byteLength":36,"uri":"../secret.bin"}],"bufferViews":[{"buffer":0,"byteLength":36}],
	  "accessors":[{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[-1,0,0],"max":[1,1.5,0]}]})";
	const std::string args = "render --gltf " + dir + "/model/up.gltf --width 16 --height 16 --out " + dir + "/o.png";
	const CliRun refused = runCli(args);
	expectOneLineError(refused, "outside the model's folder");
	EXPECT_EQ(refused.exit_code, 1);
	EXPECT_FALSE(std::filesystem::exists(dir + "/o.png"));
	const CliRun allowed = runCli(args + " --gltf-any-path");
	EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
	EXPECT_TRUE(std::filesystem::exists(dir + "/o.png"));
	std::filesystem::remove_all(dir);
}

TEST(CliTrust, TheCameraFramesTheWholeSceneForTallAndWideImages)
{
	// Nothing may touch the image border, whatever the aspect ratio: the outermost rows and columns are background.
	for (const auto& [w, h] : std::vector<std::pair<int, int>>{{60, 160}, {200, 40}, {96, 96}})
	{
		const std::string png = tempPath("framed.png");
		const CliRun run = runCli("render --scene grid --objects 100 --samples 1 --width " + std::to_string(w) +
		                          " --height " + std::to_string(h) + " --out " + png);
		ASSERT_EQ(run.exit_code, 0) << run.err;
		auto image = quokka::gpu::readPng(png);
		ASSERT_TRUE(image.ok()) << image.error().message;
		const auto bg = image->at(0, 0);
		uint32_t border = 0;
		for (uint32_t x = 0; x < image->width; ++x)
			border += (image->at(x, 0) != bg) + (image->at(x, image->height - 1) != bg);
		for (uint32_t y = 0; y < image->height; ++y)
			border += (image->at(0, y) != bg) + (image->at(image->width - 1, y) != bg);
		EXPECT_EQ(border, 0u) << w << "x" << h << ": the scene touches the border";
		// And it is framed, not lost in the middle: it spans most of the image's limiting dimension.
		uint32_t x0 = image->width, x1 = 0, y0 = image->height, y1 = 0;
		for (uint32_t y = 0; y < image->height; ++y)
			for (uint32_t x = 0; x < image->width; ++x)
				if (image->at(x, y) != bg)
				{
					x0 = std::min(x0, x), x1 = std::max(x1, x);
					y0 = std::min(y0, y), y1 = std::max(y1, y);
				}
		ASSERT_LE(x0, x1) << w << "x" << h << ": nothing drawn";
		const double span = std::max(double(x1 - x0 + 1) / w, double(y1 - y0 + 1) / h);
		EXPECT_GT(span, 0.6) << w << "x" << h << ": the scene spans only " << span << " of the image";
		std::filesystem::remove(png);
	}
}

TEST(CliTrust, RenderJsonAgreesWithItselfOnBothPaths)
{
	for (const char* path : {"classic", "heap"})
	{
		const CliRun run = runCli(std::string("render --scene grid --objects 60 --width 48 --height 32 --samples 1 ") +
		                          "--frames 2 --json --out /dev/null --path " + path);
		ASSERT_EQ(run.exit_code, 0) << run.err;
		const auto j = nlohmann::json::parse(run.out);
		ASSERT_EQ(j["per_frame"].size(), 2u);
		EXPECT_EQ(j["prepared_first_frame"], j["per_frame"][0]["prepared"]) << path;
		EXPECT_GE(j["prepared_first_frame"].get<int>(), 60) << path;
		EXPECT_EQ(j["uniform_uploads_last_frame"], j["per_frame"][1]["uniform_uploads"]) << path;
		EXPECT_GT(j["uniform_uploads_last_frame"].get<int>(), 0) << path << ": the orbiting camera re-uploads";
		EXPECT_EQ(j["draw_calls"], j["per_frame"][1]["draw_calls"]) << path;
	}
}
