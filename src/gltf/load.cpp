// load.cpp — importFile(): reads the file, checks the container and the document, and parses it with tinygltf
// through file callbacks that confine every read to what ImportOptions allows. tinygltf's implementation (and a
// private, static copy of stb_image that decodes PNG and JPEG for it) is compiled in this file only.
#include "internal.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

// stb_image is static here so that it neither clashes with nor depends on the PNG-only copy in quokka::gpu. The
// headers are system includes, so their warnings stay out of -Werror.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#define TINYGLTF_IMPLEMENTATION
#include <tiny_gltf.h>

namespace quokka::gltf
{
namespace
{
using detail::cat;
using detail::fileError;

/// tinygltf's file access, confined to the model's folder unless the options allow any path. tinygltf looks a URI up
/// as `folder/uri` and then `./uri` (relative to the working directory): every candidate and every read is checked.
struct FileAccess
{
	std::filesystem::path root; ///< the model's folder, canonical
	std::string base;           ///< the folder as given to tinygltf, which joins it and a URI with '/'
	bool any_path = false;
	std::string refused; ///< the first path refused, for the error message

	bool allowed(const std::string& p) const
	{
		if (any_path)
			return true;
		std::error_code ec;
		const std::filesystem::path real = std::filesystem::weakly_canonical(p, ec);
		const std::filesystem::path rel = ec ? std::filesystem::path() : real.lexically_relative(root);
		return !rel.empty() && rel.is_relative() && *rel.begin() != "..";
	}
	void refuse(const std::string& p)
	{
		if (refused.empty())
			refused = p;
	}
	static bool exists(const std::string& p, void* self)
	{
		auto* access = static_cast<FileAccess*>(self);
		if (!tinygltf::FileExists(p, nullptr))
			return false;
		if (access->allowed(p))
			return true;
		access->refuse(p); // there, but outside: named in the error if nothing else is found
		return false;
	}
	/// No `~` or variable expansion. tinygltf joins the folder (or ".") and the URI with '/', so an absolute URI
	/// arrives as "folder//abs" or ".//abs": it is turned back into "/abs", which the policy then judges.
	static std::string expand(const std::string& p, void* self)
	{
		const std::string& base = static_cast<FileAccess*>(self)->base;
		for (const std::string& prefix : {base, std::string(".")})
			if (!prefix.empty() && p.size() > prefix.size() + 1 && p.compare(0, prefix.size(), prefix) == 0 &&
			    p[prefix.size()] == '/' && p[prefix.size() + 1] == '/')
				return p.substr(prefix.size() + 1);
		return p;
	}
	static bool read(std::vector<unsigned char>* out, std::string* err, const std::string& p, void* self)
	{
		if (!static_cast<FileAccess*>(self)->allowed(p))
		{
			static_cast<FileAccess*>(self)->refuse(p);
			if (err)
				*err += "'" + p + "' is outside the model's folder";
			return false;
		}
		return tinygltf::ReadWholeFile(out, err, p, nullptr);
	}
	static bool write(std::string* err, const std::string&, const std::vector<unsigned char>&, void*)
	{
		if (err)
			*err += "the importer writes no files";
		return false;
	}
};

uint32_t readU32(const std::vector<unsigned char>& bytes, size_t at)
{
	return uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 | uint32_t(bytes[at + 2]) << 16 |
	       uint32_t(bytes[at + 3]) << 24; // little-endian
}

Result<Scene> importFileImpl(const std::string& path, const ImportOptions& options)
{
	std::error_code ec;
	if (std::filesystem::is_directory(path, ec))
		return fileError(ErrorCode::Io, path, "is a directory");
	std::ifstream file(path, std::ios::binary);
	if (!file)
		return fileError(ErrorCode::Io, path, cat("cannot open: ", std::strerror(errno)));
	std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
	if (file.bad())
		return fileError(ErrorCode::Io, path, "read error");
	if (bytes.size() >= std::numeric_limits<unsigned int>::max())
		return fileError(ErrorCode::Unsupported, path, "files of 4 GiB or more are not supported");

	// A .glb: 12-byte header (magic, container version, total length), then chunks (length, type, data); the first is
	// the JSON.
	const bool binary = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0;
	const unsigned char* json = bytes.data();
	size_t json_size = bytes.size();
	if (binary)
	{
		if (bytes.size() < 20)
			return fileError(ErrorCode::InvalidArgument, path, "truncated .glb: shorter than its header");
		if (const uint32_t container = readU32(bytes, 4); container != 2)
			return fileError(ErrorCode::Unsupported, path,
			                 cat("glTF-Binary version ", container, " is not supported (2 only)"));
		if (const uint32_t declared = readU32(bytes, 8); declared > bytes.size())
			return fileError(ErrorCode::InvalidArgument, path,
			                 cat("truncated .glb: its header says ", declared, " bytes, the file has ", bytes.size()));
		if (readU32(bytes, 16) != 0x4E4F534Au) // "JSON"
			return fileError(ErrorCode::InvalidArgument, path, "malformed .glb: its first chunk is not JSON");
		json = bytes.data() + 20;
		json_size = std::min<size_t>(readU32(bytes, 12), bytes.size() - 20);
	}
	QUOKKA_TRY(detail::checkDocument(path, json, json_size));

	tinygltf::TinyGLTF loader;
	tinygltf::Model model;
	std::string err, warn;
	const std::string base_dir = std::filesystem::path(path).parent_path().string();
	FileAccess access;
	access.any_path = options.any_path;
	access.base = base_dir;
	access.root = std::filesystem::weakly_canonical(
	    base_dir.empty() ? std::filesystem::path(".") : std::filesystem::path(base_dir), ec);
	if (ec)
		return fileError(ErrorCode::Io, path, cat("cannot resolve its folder: ", ec.message()));
	loader.SetFsCallbacks(tinygltf::FsCallbacks{&FileAccess::exists, &FileAccess::expand, &FileAccess::read,
	                                            &FileAccess::write, &access});
	const bool loaded =
	    binary ? loader.LoadBinaryFromMemory(&model, &err, &warn, bytes.data(), unsigned(bytes.size()), base_dir)
	           : loader.LoadASCIIFromString(&model, &err, &warn, reinterpret_cast<const char*>(bytes.data()),
	                                        unsigned(bytes.size()), base_dir);
	if (!loaded)
	{
		std::string problem = err.empty() ? warn : err;
		if (problem.empty())
			problem = "tinygltf could not parse it";
		if (!access.refused.empty())
			return fileError(ErrorCode::InvalidArgument, path,
			                 cat("refusing to read '", access.refused,
			                     "': it is outside the model's folder (ImportOptions::any_path allows any path)"));
		// A buffer file the document references but that cannot be read is an Io error, not bad input.
		if (problem.find("File not found") != std::string::npos)
			return fileError(ErrorCode::Io, path, problem);
		return fileError(ErrorCode::InvalidArgument, path,
		                 cat(binary ? "malformed .glb: " : "malformed glTF: ", detail::oneLine(problem, 160)));
	}
	return detail::convertModel(path, model, options);
}

} // namespace

Result<Scene> importFile(const std::string& path, const ImportOptions& options)
{
	// tinygltf and the standard library may throw (bad_alloc, json type errors); nothing escapes.
	try
	{
		return importFileImpl(path, options);
	}
	catch (const std::bad_alloc&)
	{
		return fileError(ErrorCode::OutOfMemory, path, "out of memory");
	}
	catch (const std::exception& e)
	{
		return fileError(ErrorCode::InvalidArgument, path, e.what());
	}
}

} // namespace quokka::gltf
