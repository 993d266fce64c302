// internal.hpp — what the glTF importer's files share: tinygltf's types, message helpers, the accessor reader, the
// document checks and the model → scene conversion. Private to src/gltf.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <quokka/fx/effect.hpp>
#include <quokka/gltf/gltf.hpp>

// tinygltf decodes images with a private, static copy of stb_image compiled in load.cpp only.
#define TINYGLTF_NO_INCLUDE_STB_IMAGE
#define TINYGLTF_NO_STB_IMAGE_WRITE
#include <tiny_gltf.h>

namespace quokka::gltf::detail
{

/// Concatenates strings and integers into a message (append, not operator+: GCC 12 -Wrestrict misfires on it).
inline void appendPart(std::string& out, const std::string& s)
{
	out.append(s);
}
inline void appendPart(std::string& out, const char* s)
{
	out.append(s);
}
template <typename T>
requires std::is_integral_v<T>
void appendPart(std::string& out, T value)
{
	out.append(std::to_string(value));
}
template <typename... Parts>
std::string cat(const Parts&... parts)
{
	std::string out;
	(appendPart(out, parts), ...);
	return out;
}

/// Replaces line breaks by "; ", drops control bytes and trims the ends; at most `limit` characters (a parser's
/// message may quote the file, which may be anything).
std::string oneLine(const std::string& text, size_t limit = 300);

/// "glTF 'path': problem" as an Error.
Error fileError(ErrorCode code, const std::string& path, const std::string& problem);

/// Checks the document's JSON before tinygltf reads it: versions, required extensions, and the type of every field the
/// importer relies on (tinygltf silently drops mistyped ones). `json` is the whole .gltf or a .glb's JSON chunk.
Result<void> checkDocument(const std::string& path, const unsigned char* json, size_t size);

/// A checked view of one accessor's elements inside its buffer.
struct AccessorView
{
	const uint8_t* data = nullptr; ///< first element
	size_t count = 0;
	size_t stride = 0;
	int component_type = 0;
	int components = 0;
	bool normalized = false;
};

inline constexpr size_t kAnyCount = std::numeric_limits<size_t>::max();

/// Reads accessors of one model with every bound checked; failures name the file.
class AccessorReader
{
public:
	AccessorReader(const std::string& path, const tinygltf::Model& model) : path_(path), model_(model) {}

	Error fail(ErrorCode code, const std::string& problem) const { return fileError(code, path_, problem); }
	/// Checks accessor `index` (range, sparse, buffer view and buffer bounds, element type) and returns its view.
	Result<AccessorView> view(int index, const char* role) const;
	/// Reads a float attribute of `min_components`…`max_components` components (FLOAT, or normalised unsigned
	/// byte/short when `normalized_ints`), `expected_count` elements unless kAnyCount; `components` receives the count.
	Result<std::vector<float>> floats(int index, const char* role, int min_components, int max_components,
	                                  bool normalized_ints, size_t expected_count, int& components) const;
	/// Reads indices (u8/u16/u32) as u32, each checked against `vertex_count`; `component_type` receives their type.
	Result<std::vector<uint32_t>> indices(int index, size_t vertex_count, int& component_type) const;

private:
	const std::string& path_;
	const tinygltf::Model& model_;
};

/// Converts a parsed model into the scene.
Result<Scene> convertModel(const std::string& path, const tinygltf::Model& model, const ImportOptions& options);

} // namespace quokka::gltf::detail

namespace quokka::gltf::detail
{

enum class Topology : uint8_t
{
	Triangles,
	Lines,
	Points,
};

/// A texture a material samples: the glTF texture, the TEXCOORD set and the KHR_texture_transform as uv' = M · (u, v,
/// 1).
struct TextureRef
{
	int texture = -1; ///< -1: none
	int tex_coord = 0;
	math::M33f transform{1.0f};
};

/// The material's base colour (which = 0) or emissive (which = 1) texture, resolved (-1 when the material has none).
TextureRef materialTexture(const tinygltf::Model& model, int material, int which);

/// Converted vertex and index data of one primitive, shared by every node that instances its mesh.
struct PrimitiveData
{
	std::map<std::string, scene::BufferView> attributes;
	std::optional<scene::BufferView> indices;
	scene::DrawCall draw_call;
	math::Box3d local_bounds;
	Topology topology = Topology::Triangles;
	uint64_t elements = 0; ///< triangles, lines or points
	int material = -1;
	bool vertex_colors = false;
	bool base_textured = false;     ///< DiffuseColorCoordinates present (the base colour texture's set exists)
	bool emissive_textured = false; ///< EmissiveCoordinates present
};

/// Converts one primitive: attributes, list topology (strips, fans and loops expanded), flat normals for triangles
/// without NORMAL, texture coordinates with the material's texture transforms applied.
Result<PrimitiveData> convertPrimitive(const AccessorReader& reader, const tinygltf::Model& model,
                                       const tinygltf::Primitive& primitive, const std::string& what);

/// Effects, textures and pipeline state of materials, cached per import.
class Materials
{
public:
	Materials(const std::string& path, const tinygltf::Model& model, const ImportOptions& options)
	    : path_(path), model_(model), options_(options)
	{
	}
	/// Sets the object's effect, material uniforms, textures, samplers and pipeline state for `primitive`.
	Result<void> apply(const PrimitiveData& primitive, scene::RenderObject& object);

private:
	Error fail(ErrorCode code, const std::string& problem) const { return fileError(code, path_, problem); }
	Result<fx::Effect> effect(const PrimitiveData& primitive, int alpha_mode, bool emissive);
	Result<adaptive::aval<scene::TextureData>> image(int image_index);
	Result<void> bindTexture(int texture, const char* name, scene::RenderObject& object);

	const std::string& path_;
	const tinygltf::Model& model_;
	const ImportOptions& options_;
	std::map<uint32_t, fx::Effect> effects_;
	std::map<int, adaptive::aval<scene::TextureData>> images_;
};

} // namespace quokka::gltf::detail
