// Run-time GLSL compilation (shaderc) behind a content-hash cache.
#include <quokka/gpu/shader.hpp>

#include <quokka/base/file_io.hpp>

#include <shaderc/shaderc.h>
#include <xxhash.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace quokka::gpu
{

const char* shaderStageName(ShaderStage stage)
{
	switch (stage)
	{
	case ShaderStage::Vertex:
		return "vertex";
	case ShaderStage::Fragment:
		return "fragment";
	case ShaderStage::Compute:
		return "compute";
	case ShaderStage::Task:
		return "task";
	case ShaderStage::Mesh:
		return "mesh";
	}
	return "unknown";
}

namespace
{
// Bump when the compile options below change, so disk caches from older builds are not reused.
constexpr uint32_t kCompilerTag = 1;

shaderc_shader_kind toShaderc(ShaderStage stage)
{
	switch (stage)
	{
	case ShaderStage::Vertex:
		return shaderc_glsl_vertex_shader;
	case ShaderStage::Fragment:
		return shaderc_glsl_fragment_shader;
	case ShaderStage::Compute:
		return shaderc_glsl_compute_shader;
	case ShaderStage::Task:
		return shaderc_glsl_task_shader;
	case ShaderStage::Mesh:
		return shaderc_glsl_mesh_shader;
	}
	return shaderc_glsl_compute_shader;
}

std::vector<std::string> splitLines(const std::string& text)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	return lines;
}

// shaderc reports "name:LINE: error: message"; quote each offending source line under its message.
std::string annotateErrors(const std::string& messages, const ShaderSource& source)
{
	const std::vector<std::string> src_lines = splitLines(source.glsl);
	std::string out;
	for (const std::string& line : splitLines(messages))
	{
		if (line.empty())
			continue;
		out += line + "\n";
		const std::string prefix = source.name + ":";
		if (line.compare(0, prefix.size(), prefix) != 0)
			continue;
		size_t pos = prefix.size();
		size_t end = pos;
		while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])))
			++end;
		if (end == pos)
			continue;
		const size_t number = std::stoul(line.substr(pos, end - pos));
		if (number >= 1 && number <= src_lines.size())
		{
			char gutter[32];
			std::snprintf(gutter, sizeof(gutter), "  %5zu | ", number);
			out += gutter + src_lines[number - 1] + "\n";
		}
	}
	if (!out.empty() && out.back() == '\n')
		out.pop_back();
	return out;
}

std::string hex(uint64_t hi, uint64_t lo)
{
	char buf[33];
	std::snprintf(buf, sizeof(buf), "%016llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
	return buf;
}
} // namespace

ShaderCompiler::ShaderCompiler(std::string disk_dir) : disk_dir_(std::move(disk_dir))
{
	if (!disk_dir_.empty())
	{
		std::error_code ec;
		std::filesystem::create_directories(disk_dir_, ec);
		if (ec)
		{
			std::fprintf(stderr, "quokka: shader cache directory '%s' unusable (%s); caching in memory only\n",
			             disk_dir_.c_str(), ec.message().c_str());
			disk_dir_.clear();
		}
	}
}

ShaderCompiler::~ShaderCompiler() = default;

std::string ShaderCompiler::contentHash(const ShaderSource& source)
{
	XXH3_state_t* state = XXH3_createState();
	XXH3_128bits_reset(state);
	auto feed = [&](const void* data, size_t size)
	{
		const uint64_t len = size;
		XXH3_128bits_update(state, &len, sizeof(len)); // length-prefixed: ("ab","c") ≠ ("a","bc")
		XXH3_128bits_update(state, data, size);
	};
	const uint32_t header[3] = {kCompilerTag, uint32_t(source.stage), source.optimize ? 1u : 0u};
	feed(header, sizeof(header));
	feed(source.glsl.data(), source.glsl.size());
	for (const auto& [key, value] : source.defines)
	{
		feed(key.data(), key.size());
		feed(value.data(), value.size());
	}
	XXH128_hash_t h = XXH3_128bits_digest(state);
	XXH3_freeState(state);
	return hex(h.high64, h.low64);
}

Result<SpirvCode> ShaderCompiler::compile(const ShaderSource& source)
{
	const std::string key = contentHash(source);
	{
		std::lock_guard lock(mutex_);
		if (auto it = memory_.find(key); it != memory_.end())
		{
			++stats_.memory_hits;
			return it->second;
		}
	}
	const std::filesystem::path disk_path =
	    disk_dir_.empty() ? std::filesystem::path() : std::filesystem::path(disk_dir_) / (key + ".spv");
	if (!disk_dir_.empty())
	{
		std::ifstream in(disk_path, std::ios::binary);
		if (in)
		{
			std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
			if (bytes.size() >= 20 && bytes.size() % 4 == 0)
			{
				auto words = std::make_shared<std::vector<uint32_t>>(bytes.size() / 4);
				std::memcpy(words->data(), bytes.data(), bytes.size());
				if ((*words)[0] == 0x07230203u) // SPIR-V magic; anything else is a torn or foreign file
				{
					std::lock_guard lock(mutex_);
					++stats_.disk_hits;
					auto [it, inserted] = memory_.emplace(key, std::move(words));
					return it->second;
				}
			}
		}
	}

	// shaderc objects are per call: the compiler handle is cheap and this keeps compile() lock-free while compiling.
	shaderc_compiler_t compiler = shaderc_compiler_initialize();
	shaderc_compile_options_t options = shaderc_compile_options_initialize();
	shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_3);
	shaderc_compile_options_set_target_spirv(options, shaderc_spirv_version_1_6);
	shaderc_compile_options_set_optimization_level(options, source.optimize ? shaderc_optimization_level_performance
	                                                                        : shaderc_optimization_level_zero);
	for (const auto& [name, value] : source.defines)
		shaderc_compile_options_add_macro_definition(options, name.data(), name.size(), value.data(), value.size());
	const std::string name = source.name.empty() ? std::string("shader") : source.name;
	shaderc_compilation_result_t result = shaderc_compile_into_spv(
	    compiler, source.glsl.data(), source.glsl.size(), toShaderc(source.stage), name.c_str(), "main", options);

	Result<SpirvCode> out = makeError(ErrorCode::ShaderCompile, "");
	if (shaderc_result_get_compilation_status(result) != shaderc_compilation_status_success)
	{
		ShaderSource named = source;
		named.name = name;
		out = makeError(ErrorCode::ShaderCompile, std::string("cannot compile ") + shaderStageName(source.stage) +
		                                              " shader '" + name + "':\n" +
		                                              annotateErrors(shaderc_result_get_error_message(result), named));
	}
	else
	{
		const size_t bytes = shaderc_result_get_length(result);
		auto words = std::make_shared<std::vector<uint32_t>>(bytes / 4);
		std::memcpy(words->data(), shaderc_result_get_bytes(result), bytes);
		if (!disk_dir_.empty())
		{
			// Complete or absent (a temporary file per process, then a rename), so neither a concurrent reader nor a
			// concurrent writer of the same key ever sees a torn file. The cache is best effort: a failed write only
			// costs the next run a compile.
			(void)writeFileAtomically(disk_path.string(),
			                          std::span(reinterpret_cast<const uint8_t*>(words->data()), bytes));
		}
		std::lock_guard lock(mutex_);
		++stats_.compiles;
		auto [it, inserted] = memory_.emplace(key, std::move(words));
		out = it->second;
	}
	shaderc_result_release(result);
	shaderc_compile_options_release(options);
	shaderc_compiler_release(compiler);
	return out;
}

ShaderCompilerStats ShaderCompiler::stats() const
{
	std::lock_guard lock(mutex_);
	return stats_;
}

} // namespace quokka::gpu
