// cli_run.hpp — running the `quokka` executable from the CLI tests: captured stdout, stderr and exit code, and the
// checks of the CLI's error contract.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <quokka/gpu/image_io.hpp>

namespace
{

struct CliRun
{
	int exit_code = -1;
	std::string out;
	std::string err;
};

inline std::string tempPath(const std::string& name)
{
	return (std::filesystem::temp_directory_path() / ("quokka-cli-" + std::to_string(::getpid()) + "-" + name))
	    .string();
}

// Runs `env program args` through the shell, capturing stdout and stderr separately.
inline CliRun runProgram(const std::string& program, const std::string& args, const std::string& env = "")
{
	const std::string err_path = tempPath("stderr.txt");
	const std::string command = env + " " + program + " " + args + " 2>" + err_path;
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

// Runs `env QUOKKA_CLI args`.
inline CliRun runCli(const std::string& args, const std::string& env = "")
{
	return runProgram(QUOKKA_CLI_PATH, args, env);
}

// The CLI contract: a failure is one line "quokka: error: …" on stderr and a non-zero exit.
inline void expectOneLineError(const CliRun& run, const std::string& fragment)
{
	EXPECT_NE(run.exit_code, 0);
	ASSERT_FALSE(run.err.empty());
	EXPECT_EQ(run.err.rfind("quokka: error: ", 0), 0u) << run.err;
	EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "more than one line: " << run.err;
	EXPECT_NE(run.err.find(fragment), std::string::npos) << run.err;
}

/// Bad arguments or settings: one line, exit code 2 (docs/cli.md).
inline void expectUsageError(const CliRun& run, const std::string& fragment)
{
	expectOneLineError(run, fragment);
	EXPECT_EQ(run.exit_code, 2) << run.err;
}

/// The heap samples textures packed into its atlas with a software LOD; where a sampler has mipmaps, the device's own
/// LOD (lavapipe approximates log2) mixes the levels with slightly different weights. The heap's texture tests
/// measured at most 6 steps per channel on lavapipe; the city stays within 2.
constexpr int kAtlasMipmapSteps = 8;

/// Pixels of `a` and `b` (same size) whose largest channel difference exceeds `steps`.
inline size_t pixelsDifferingBy(const quokka::gpu::Rgba8Image& a, const quokka::gpu::Rgba8Image& b, int steps)
{
	size_t n = 0;
	for (size_t i = 0; i + 3 < a.pixels.size() && i + 3 < b.pixels.size(); i += 4)
	{
		int d = 0;
		for (size_t c = 0; c < 4; ++c)
			d = std::max(d, std::abs(int(a.pixels[i + c]) - int(b.pixels[i + c])));
		n += d > steps;
	}
	return n + (a.pixels.size() != b.pixels.size() ? 1 : 0);
}

} // namespace
