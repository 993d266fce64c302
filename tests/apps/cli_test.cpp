// End-to-end tests of the `quokka` CLI: exit codes, one-line errors, JSON output and the written PNG.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <quokka/gpu/image_io.hpp>

namespace
{

struct CliRun
{
	int exit_code = -1;
	std::string out;
	std::string err;
};

std::string tempPath(const std::string& name)
{
	return (std::filesystem::temp_directory_path() / ("quokka-cli-" + std::to_string(::getpid()) + "-" + name))
	    .string();
}

// Runs `env QUOKKA_CLI args` through the shell, capturing stdout and stderr separately.
CliRun runCli(const std::string& args, const std::string& env = "")
{
	const std::string err_path = tempPath("stderr.txt");
	const std::string command = env + " " QUOKKA_CLI_PATH " " + args + " 2>" + err_path;
	CliRun run;
	FILE* pipe = popen(command.c_str(), "r");
	if (!pipe)
		return run;
	std::array<char, 4096> buf;
	size_t n;
	while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0)
		run.out.append(buf.data(), n);
	const int status = pclose(pipe);
	run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	std::ifstream in(err_path);
	std::stringstream ss;
	ss << in.rdbuf();
	run.err = ss.str();
	std::filesystem::remove(err_path);
	return run;
}

// The CLI contract: a failure is one line "quokka: error: …" on stderr and a non-zero exit.
void expectOneLineError(const CliRun& run, const std::string& fragment)
{
	EXPECT_NE(run.exit_code, 0);
	ASSERT_FALSE(run.err.empty());
	EXPECT_EQ(run.err.rfind("quokka: error: ", 0), 0u) << run.err;
	EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "more than one line: " << run.err;
	EXPECT_NE(run.err.find(fragment), std::string::npos) << run.err;
}

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
	ASSERT_EQ(run.exit_code, 0) << run.err;
	EXPECT_EQ(nlohmann::json::parse(run.out)["type"], "cpu");
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
	expectOneLineError(runCli("render --width 16 --height 16 --out /nonexistent-dir/x.png"), "cannot write PNG");
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
	const CliRun run = runCli("bench meshlet --json --device cpu --mib 4 --ops 20000 --reps 1");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["benchmark"], "meshlet");
	EXPECT_GT(j["allocator"]["offset_allocator_pairs_per_s"].get<double>(), 0.0);
	EXPECT_GT(j["allocator"]["ratio_vs_naive"].get<double>(), 0.0);
	EXPECT_EQ(j["allocator"]["failed_allocations"], 0);
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
