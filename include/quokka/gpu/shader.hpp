// quokka/gpu/shader.hpp — SPIR-V blobs (static shaders embedded at build time) and the run-time GLSL compiler.
//
// Static GLSL under shaders/ is compiled by glslc at build time (cmake/QuokkaShaders.cmake) and embedded as SpirvBlob.
// Generated GLSL is compiled at run time with shaderc behind a content-hash cache: memory always, plus a disk
// directory when configured. A compile error is a ShaderCompile Error whose message quotes the offending lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <quokka/base/result.hpp>

namespace quokka::gpu
{

/// SPIR-V words embedded in the binary.
struct SpirvBlob
{
	const uint32_t* words = nullptr;
	size_t word_count = 0;
	const char* name = "";

	std::span<const uint32_t> span() const { return {words, word_count}; }
};

/// Shared, immutable SPIR-V produced by the run-time compiler.
using SpirvCode = std::shared_ptr<const std::vector<uint32_t>>;

enum class ShaderStage
{
	Vertex,
	Fragment,
	Compute,
	Task,
	Mesh,
};

const char* shaderStageName(ShaderStage stage);

/// One GLSL translation unit to compile.
struct ShaderSource
{
	std::string glsl; ///< full source including `#version`
	ShaderStage stage = ShaderStage::Compute;
	std::string name; ///< used in error messages ("name:LINE: …")
	std::vector<std::pair<std::string, std::string>> defines;
	bool optimize = true;
};

/// Cache statistics (monotonic).
struct ShaderCompilerStats
{
	uint64_t compiles = 0;
	uint64_t memory_hits = 0;
	uint64_t disk_hits = 0;
};

/// Run-time GLSL → SPIR-V (Vulkan 1.3 target) with a content-hash cache. Thread-safe.
class ShaderCompiler
{
public:
	/// `disk_dir`: directory for cached SPIR-V (created if missing); empty = memory cache only.
	explicit ShaderCompiler(std::string disk_dir = {});
	~ShaderCompiler();

	/// Compiles `source`, or returns the cached SPIR-V of an identical earlier request (same text, stage, defines,
	/// options). Errors: ShaderCompile with the compiler's messages, each followed by the quoted source line.
	Result<SpirvCode> compile(const ShaderSource& source);

	/// The 128-bit content hash (hex) used as the cache key for `source`.
	static std::string contentHash(const ShaderSource& source);

	ShaderCompilerStats stats() const;
	const std::string& diskDir() const { return disk_dir_; }

private:
	std::string disk_dir_;
	mutable std::mutex mutex_;
	std::unordered_map<std::string, SpirvCode> memory_;
	ShaderCompilerStats stats_;
};

} // namespace quokka::gpu
