// gltf_import.cpp — glTF 2.0 import (.gltf and .glb, parsed by tinygltf) into scene::RenderObjects, and
// SceneGlobals::uniforms(), shared by every scene source of the CLI.
//
// The importer walks the default scene (or scene 0; all root nodes when the file has no scene), composes node
// transforms root → leaf into each object's ModelTrafo, and turns every TRIANGLES primitive into one render object:
// positions, normals (flat ones computed when the file has none, as the glTF spec requires), TEXCOORD_n of the base
// colour texture, indices (u8 widened to u16), baseColorFactor as ConstantColor and the base colour texture decoded
// to RGBA8. Every accessor, buffer view and index is bounds-checked: bad input gives an error, never a crash.
// tinygltf's implementation (and a private, static copy of stb_image for it) is compiled in this file only.
#include "scenes.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>

#include <quokka/fx/stock.hpp>

#include <nlohmann/json.hpp>

#include <glm/gtc/quaternion.hpp>

// stb_image is static here so that it neither clashes with nor depends on the PNG-only copy in quokka::gpu; tinygltf
// decodes PNG and JPEG images with it. The headers are system includes, so their warnings stay out of -Werror.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#define TINYGLTF_IMPLEMENTATION
#define TINYGLTF_NO_INCLUDE_STB_IMAGE
#define TINYGLTF_NO_STB_IMAGE_WRITE
#include <tiny_gltf.h>

namespace quokka::app
{

std::map<std::string, adaptive::aval<scene::UniformValue>> SceneGlobals::uniforms() const
{
	// Cast to the aval base: scene::uniform(const T&) would otherwise take the cval itself as a constant.
	return {
	    {"ViewTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(view))},
	    {"ProjTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(proj))},
	    {"LightLocation", scene::uniform(static_cast<const adaptive::aval<math::V3f>&>(light_location))},
	};
}

namespace
{

/// Concatenates strings and integers into a message (append, not operator+: GCC 12 -Wrestrict misfires on it).
void appendPart(std::string& out, const std::string& s)
{
	out.append(s);
}
void appendPart(std::string& out, const char* s)
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

/// Replaces line breaks (tinygltf's messages may hold several lines) by "; " and trims the ends.
std::string oneLine(const std::string& text)
{
	std::string out;
	bool pending_separator = false;
	for (char c : text)
	{
		if (c == '\n' || c == '\r')
		{
			pending_separator = !out.empty();
			continue;
		}
		if (pending_separator)
		{
			out.append("; ");
			pending_separator = false;
		}
		out.push_back(c);
	}
	while (!out.empty() && (out.back() == ' ' || out.back() == ';' || out.back() == '\t'))
		out.pop_back();
	return out;
}

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

/// Converted vertex and index data of one primitive, shared by every node that instances its mesh.
struct PrimitiveData
{
	std::map<std::string, scene::BufferView> attributes;
	std::optional<scene::BufferView> indices;
	scene::DrawCall draw_call;
	math::Box3d local_bounds;
	uint64_t triangles = 0;
	int material = -1;
	bool textured = false; ///< the material's base colour texture applies (its TEXCOORD set exists)
};

float readComponent(const uint8_t* p, int component_type, bool normalized)
{
	switch (component_type)
	{
	case TINYGLTF_COMPONENT_TYPE_FLOAT:
	{
		float f;
		std::memcpy(&f, p, 4);
		return f;
	}
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
		return normalized ? float(*p) / 255.0f : float(*p);
	case TINYGLTF_COMPONENT_TYPE_BYTE:
	{
		const float v = float(int8_t(*p));
		return normalized ? std::max(v / 127.0f, -1.0f) : v;
	}
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
	{
		uint16_t v;
		std::memcpy(&v, p, 2);
		return normalized ? float(v) / 65535.0f : float(v);
	}
	case TINYGLTF_COMPONENT_TYPE_SHORT:
	{
		int16_t v;
		std::memcpy(&v, p, 2);
		return normalized ? std::max(float(v) / 32767.0f, -1.0f) : float(v);
	}
	default:
		return 0.0f;
	}
}

const char* componentTypeName(int component_type)
{
	switch (component_type)
	{
	case TINYGLTF_COMPONENT_TYPE_BYTE:
		return "BYTE";
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
		return "UNSIGNED_BYTE";
	case TINYGLTF_COMPONENT_TYPE_SHORT:
		return "SHORT";
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
		return "UNSIGNED_SHORT";
	case TINYGLTF_COMPONENT_TYPE_INT:
		return "INT";
	case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
		return "UNSIGNED_INT";
	case TINYGLTF_COMPONENT_TYPE_FLOAT:
		return "FLOAT";
	case TINYGLTF_COMPONENT_TYPE_DOUBLE:
		return "DOUBLE";
	default:
		return "unknown";
	}
}

/// Walks one glTF model and builds the objects. Every failure is an Error whose message names the file.
class Importer
{
public:
	Importer(const std::string& path, const tinygltf::Model& model, const SceneGlobals& globals)
	    : path_(path), model_(model), globals_(globals)
	{
	}

	Result<GeneratedScene> run()
	{
		// glTF 2.x only: a 1.0 file parses into nothing drawable, a 3.0 one may mean anything.
		const std::string& version = model_.asset.version;
		if (version.empty())
			return fail(ErrorCode::InvalidArgument, "has no asset.version (glTF 2.0 requires it)");
		if (version.rfind("2.", 0) != 0)
			return fail(ErrorCode::Unsupported, cat("glTF version '", version, "' is not supported (2.x only)"));
		if (!model_.asset.minVersion.empty() && model_.asset.minVersion.rfind("2.0", 0) != 0)
			return fail(ErrorCode::Unsupported,
			            cat("needs glTF ", model_.asset.minVersion, " or later (2.0 is supported)"));
		if (!model_.extensionsRequired.empty())
			return fail(ErrorCode::Unsupported, cat("requires the extension ", model_.extensionsRequired.front()));

		auto plain = fx::compose("gltf", fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting());
		QUOKKA_TRY(plain);
		auto textured = fx::compose("gltf textured", fx::stock::trafo(), fx::stock::constantColor(),
		                            fx::stock::diffuseTexture(), fx::stock::simpleLighting());
		QUOKKA_TRY(textured);
		plain_ = std::move(plain).value();
		textured_ = std::move(textured).value();
		global_uniforms_ = globals_.uniforms();

		std::vector<int> roots;
		if (!model_.scenes.empty())
		{
			int s = model_.defaultScene >= 0 ? model_.defaultScene : 0;
			if (size_t(s) >= model_.scenes.size())
				return fail(ErrorCode::InvalidArgument, cat("the default scene ", s, " does not exist"));
			roots = model_.scenes[size_t(s)].nodes;
		}
		else if (model_.defaultScene >= 0)
			return fail(ErrorCode::InvalidArgument,
			            cat("the default scene ", model_.defaultScene, " does not exist (the file has no scenes)"));
		else
		{
			// No scene: every node that is nobody's child is a root.
			std::vector<bool> is_child(model_.nodes.size(), false);
			for (const tinygltf::Node& n : model_.nodes)
				for (int c : n.children)
					if (c >= 0 && size_t(c) < is_child.size())
						is_child[size_t(c)] = true;
			for (size_t i = 0; i < model_.nodes.size(); ++i)
				if (!is_child[i])
					roots.push_back(int(i));
		}

		// Depth-first with an explicit stack (deep hierarchies must not overflow the call stack). A node reached twice
		// is a cycle or a shared child, both invalid glTF.
		std::vector<bool> visited(model_.nodes.size(), false);
		std::vector<std::pair<int, math::Trafo3d>> stack;
		for (auto it = roots.rbegin(); it != roots.rend(); ++it)
			stack.emplace_back(*it, math::Trafo3d::identity());
		while (!stack.empty())
		{
			auto [index, parent] = stack.back();
			stack.pop_back();
			if (index < 0 || size_t(index) >= model_.nodes.size())
				return fail(ErrorCode::InvalidArgument, cat("node ", index, " does not exist"));
			if (visited[size_t(index)])
				return fail(ErrorCode::InvalidArgument,
				            cat("node ", index, " is reached twice (a cycle or a shared child)"));
			visited[size_t(index)] = true;
			const tinygltf::Node& node = model_.nodes[size_t(index)];
			auto local = nodeTrafo(node, index);
			QUOKKA_TRY(local);
			const math::Trafo3d world = parent * local.value();
			if (node.mesh >= 0)
				QUOKKA_TRY(addMesh(node.mesh, world));
			for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
				stack.emplace_back(*it, world);
		}
		if (out_.objects.empty())
			return fail(ErrorCode::InvalidArgument, "has nothing to draw (no mesh primitive in the scene it shows)");
		return std::move(out_);
	}

private:
	Error fail(ErrorCode code, std::string problem) const
	{
		return makeError(code, cat("glTF '", path_, "': ", oneLine(problem)));
	}

	Result<math::Trafo3d> nodeTrafo(const tinygltf::Node& node, int index) const
	{
		const std::string what = cat("node ", index);
		for (const std::vector<double>* v : {&node.matrix, &node.translation, &node.rotation, &node.scale})
			for (double x : *v)
				if (!std::isfinite(x))
					return fail(ErrorCode::InvalidArgument, cat(what, " has a non-finite transform"));
		if (!node.matrix.empty())
		{
			if (node.matrix.size() != 16)
				return fail(ErrorCode::InvalidArgument, cat(what, ": matrix needs 16 numbers"));
			math::M44d m;
			for (int c = 0; c < 4; ++c)
				for (int r = 0; r < 4; ++r)
					m[c][r] = node.matrix[size_t(c * 4 + r)]; // column-major, like glm
			return math::Trafo3d::fromMatrix(m);
		}
		if ((!node.translation.empty() && node.translation.size() != 3) ||
		    (!node.rotation.empty() && node.rotation.size() != 4) || (!node.scale.empty() && node.scale.size() != 3))
			return fail(ErrorCode::InvalidArgument,
			            cat(what, ": translation/rotation/scale have the wrong number of elements"));
		math::Trafo3d t = math::Trafo3d::identity();
		if (!node.translation.empty())
			t = math::Trafo3d::translation({node.translation[0], node.translation[1], node.translation[2]});
		if (!node.rotation.empty())
		{
			glm::dquat q(node.rotation[3], node.rotation[0], node.rotation[1], node.rotation[2]); // w, x, y, z
			const double len = glm::length(q);
			if (len > 0.0 && std::isfinite(len))
			{
				const math::M44d r = glm::mat4_cast(q / len);
				t = t * math::Trafo3d{r, glm::transpose(r)};
			}
		}
		if (!node.scale.empty())
		{
			// Trafo3d::scale asserts non-zero factors; a zero scale (a hidden node) gets a zero backward factor.
			math::Trafo3d s;
			for (int i = 0; i < 3; ++i)
			{
				const double f = node.scale[size_t(i)];
				s.forward[i][i] = f;
				s.backward[i][i] = f != 0.0 ? 1.0 / f : 0.0;
			}
			t = t * s;
		}
		return t;
	}

	/// Checks accessor `index` (range, sparse, buffer view and buffer bounds, element type) and returns its view.
	Result<AccessorView> viewAccessor(int index, const char* role) const
	{
		const std::string what = cat(role, " accessor ", index);
		if (index < 0 || size_t(index) >= model_.accessors.size())
			return fail(ErrorCode::InvalidArgument, cat(what, " does not exist"));
		const tinygltf::Accessor& a = model_.accessors[size_t(index)];
		if (a.sparse.isSparse)
			return fail(ErrorCode::Unsupported, cat(what, " is sparse"));
		if (a.bufferView < 0)
			return fail(ErrorCode::Unsupported, cat(what, " has no bufferView"));
		if (size_t(a.bufferView) >= model_.bufferViews.size())
			return fail(ErrorCode::InvalidArgument, cat(what, ": its bufferView does not exist"));
		const tinygltf::BufferView& bv = model_.bufferViews[size_t(a.bufferView)];
		if (bv.buffer < 0 || size_t(bv.buffer) >= model_.buffers.size())
			return fail(ErrorCode::InvalidArgument, cat(what, ": its buffer does not exist"));
		const tinygltf::Buffer& buffer = model_.buffers[size_t(bv.buffer)];
		if (bv.byteOffset > buffer.data.size() || bv.byteLength > buffer.data.size() - bv.byteOffset)
			return fail(ErrorCode::InvalidArgument,
			            cat(what, ": its bufferView lies outside its buffer (", buffer.data.size(), " bytes)"));
		const int component_size = tinygltf::GetComponentSizeInBytes(uint32_t(a.componentType));
		const int components = tinygltf::GetNumComponentsInType(uint32_t(a.type));
		if (component_size <= 0 || components <= 0)
			return fail(ErrorCode::InvalidArgument, cat(what, " has an invalid component type or type"));
		const size_t element = size_t(component_size) * size_t(components);
		const size_t stride = bv.byteStride != 0 ? bv.byteStride : element;
		if (stride < element)
			return fail(ErrorCode::InvalidArgument, cat(what, ": byteStride ", stride, " is smaller than an element"));
		AccessorView v;
		v.count = a.count;
		v.stride = stride;
		v.component_type = a.componentType;
		v.components = components;
		v.normalized = a.normalized;
		if (a.count > 0)
		{
			// offset + (count − 1)·stride + element ≤ byteLength, without overflow.
			const size_t length = bv.byteLength;
			if (a.byteOffset > length || element > length - a.byteOffset ||
			    (a.count - 1) > (length - a.byteOffset - element) / stride)
				return fail(ErrorCode::InvalidArgument,
				            cat(what, ": ", a.count, " elements do not fit in its bufferView (", length, " bytes)"));
			v.data = buffer.data.data() + bv.byteOffset + a.byteOffset;
		}
		return v;
	}

	/// Reads a float vector attribute of `components` components; `allowed` says which component types are valid.
	Result<std::vector<float>> readFloats(int index, const char* role, int components, bool allow_normalized_ints,
	                                      size_t expected_count) const
	{
		auto view = viewAccessor(index, role);
		QUOKKA_TRY(view);
		const AccessorView& v = view.value();
		const bool is_float = v.component_type == TINYGLTF_COMPONENT_TYPE_FLOAT;
		const bool is_norm_int = allow_normalized_ints && v.normalized &&
		                         (v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE ||
		                          v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT);
		if (v.components != components || !(is_float || is_norm_int))
			return fail(ErrorCode::Unsupported,
			            cat(role, " accessor ", index, " has ", v.components, " components of ",
			                componentTypeName(v.component_type), v.normalized ? " (normalized)" : "", "; expected ",
			                components, " FLOAT"));
		if (expected_count != std::numeric_limits<size_t>::max() && v.count != expected_count)
			return fail(ErrorCode::InvalidArgument,
			            cat(role, " accessor ", index, " has ", v.count, " elements, POSITION has ", expected_count));
		const size_t component_size = size_t(tinygltf::GetComponentSizeInBytes(uint32_t(v.component_type)));
		std::vector<float> out(v.count * size_t(components));
		for (size_t i = 0; i < v.count; ++i)
		{
			const uint8_t* e = v.data + i * v.stride;
			for (int c = 0; c < components; ++c)
				out[i * size_t(components) + size_t(c)] =
				    readComponent(e + size_t(c) * component_size, v.component_type, v.normalized);
		}
		return out;
	}

	/// Reads the indices (u8/u16/u32), checks each against `vertex_count`, and returns them as u32.
	Result<std::vector<uint32_t>> readIndices(int index, size_t vertex_count, int& component_type) const
	{
		auto view = viewAccessor(index, "indices");
		QUOKKA_TRY(view);
		const AccessorView& v = view.value();
		component_type = v.component_type;
		if (v.components != 1 || (v.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE &&
		                          v.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT &&
		                          v.component_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT))
			return fail(ErrorCode::InvalidArgument,
			            cat("indices accessor ", index, " must be a SCALAR of unsigned byte, short or int"));
		std::vector<uint32_t> out(v.count);
		for (size_t i = 0; i < v.count; ++i)
		{
			const uint8_t* e = v.data + i * v.stride;
			uint32_t value = 0;
			if (v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE)
				value = *e;
			else if (v.component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT)
			{
				uint16_t s;
				std::memcpy(&s, e, 2);
				value = s;
			}
			else
				std::memcpy(&value, e, 4);
			if (value >= vertex_count)
				return fail(ErrorCode::InvalidArgument,
				            cat("indices accessor ", index, ": index ", value, " at position ", i, " is out of range (",
				                vertex_count, " vertices)"));
			out[i] = value;
		}
		return out;
	}

	/// The TEXCOORD set the material's base colour texture reads, or -1 when the material has no usable texture.
	int baseColorTexCoord(int material) const
	{
		if (material < 0 || size_t(material) >= model_.materials.size())
			return -1;
		const tinygltf::TextureInfo& info = model_.materials[size_t(material)].pbrMetallicRoughness.baseColorTexture;
		if (info.index < 0)
			return -1;
		return std::max(info.texCoord, 0);
	}

	Result<PrimitiveData> convertPrimitive(const tinygltf::Primitive& p, const std::string& what) const
	{
		if (p.mode != TINYGLTF_MODE_TRIANGLES && p.mode != -1)
			return fail(ErrorCode::Unsupported, cat(what, ": mode ", p.mode, " (only TRIANGLES is supported)"));
		if (p.material >= 0 && size_t(p.material) >= model_.materials.size())
			return fail(ErrorCode::InvalidArgument, cat(what, ": material ", p.material, " does not exist"));
		auto pos_it = p.attributes.find("POSITION");
		if (pos_it == p.attributes.end())
			return fail(ErrorCode::InvalidArgument, cat(what, " has no POSITION attribute"));
		auto positions = readFloats(pos_it->second, "POSITION", 3, false, std::numeric_limits<size_t>::max());
		QUOKKA_TRY(positions);
		const size_t vertex_count = positions.value().size() / 3;
		if (vertex_count > std::numeric_limits<uint32_t>::max())
			return fail(ErrorCode::Unsupported, cat(what, " has more than 2^32 vertices"));

		std::vector<float> normals;
		if (auto it = p.attributes.find("NORMAL"); it != p.attributes.end())
		{
			auto n = readFloats(it->second, "NORMAL", 3, false, vertex_count);
			QUOKKA_TRY(n);
			normals = std::move(n).value();
		}

		PrimitiveData out;
		out.material = p.material;
		std::vector<float> uvs;
		if (const int set = baseColorTexCoord(p.material); set >= 0)
		{
			if (auto it = p.attributes.find(cat("TEXCOORD_", set)); it != p.attributes.end())
			{
				auto t = readFloats(it->second, "TEXCOORD", 2, true, vertex_count);
				QUOKKA_TRY(t);
				uvs = std::move(t).value();
				out.textured = true;
			}
		}

		std::vector<uint32_t> indices;
		int index_type = 0;
		const bool indexed = p.indices >= 0;
		if (indexed)
		{
			auto i = readIndices(p.indices, vertex_count, index_type);
			QUOKKA_TRY(i);
			indices = std::move(i).value();
		}
		const size_t corner_count = indexed ? indices.size() : vertex_count;
		if (corner_count % 3 != 0)
			return fail(ErrorCode::InvalidArgument, cat(what, ": ", corner_count, indexed ? " indices" : " vertices",
			                                            " are not a multiple of 3 (TRIANGLES)"));
		if (corner_count > std::numeric_limits<uint32_t>::max())
			return fail(ErrorCode::Unsupported, cat(what, " has more than 2^32 indices"));
		out.triangles = corner_count / 3;

		std::vector<float>& pos = positions.value();
		for (size_t v = 0; v < vertex_count; ++v)
		{
			const math::V3d point(pos[v * 3], pos[v * 3 + 1], pos[v * 3 + 2]);
			if (!std::isfinite(point.x) || !std::isfinite(point.y) || !std::isfinite(point.z))
				return fail(ErrorCode::InvalidArgument, cat(what, ": POSITION ", v, " is not finite"));
			out.local_bounds.extend(point);
		}

		if (normals.empty())
		{
			// The spec: without normals, clients compute flat normals. Flat shading needs one vertex per corner, so the
			// primitive is un-indexed first.
			if (indexed)
			{
				std::vector<float> flat_pos(corner_count * 3), flat_uv(uvs.empty() ? 0 : corner_count * 2);
				for (size_t c = 0; c < corner_count; ++c)
				{
					const size_t v = indices[c];
					std::copy_n(&pos[v * 3], 3, &flat_pos[c * 3]);
					if (!uvs.empty())
						std::copy_n(&uvs[v * 2], 2, &flat_uv[c * 2]);
				}
				pos = std::move(flat_pos);
				uvs = std::move(flat_uv);
				indices.clear();
			}
			normals.resize(corner_count * 3);
			for (size_t t = 0; t < corner_count / 3; ++t)
			{
				const math::V3f a(pos[t * 9 + 0], pos[t * 9 + 1], pos[t * 9 + 2]);
				const math::V3f b(pos[t * 9 + 3], pos[t * 9 + 4], pos[t * 9 + 5]);
				const math::V3f c(pos[t * 9 + 6], pos[t * 9 + 7], pos[t * 9 + 8]);
				math::V3f n = glm::cross(b - a, c - a);
				const float len = glm::length(n);
				n = len > 0.0f && std::isfinite(len) ? n / len : math::V3f(0.0f, 0.0f, 1.0f);
				for (size_t k = 0; k < 3; ++k)
					std::copy_n(&n[0], 3, &normals[(t * 3 + k) * 3]);
			}
		}

		out.attributes["Positions"] = scene::BufferView::of(pos, VK_FORMAT_R32G32B32_SFLOAT);
		out.attributes["Normals"] = scene::BufferView::of(normals, VK_FORMAT_R32G32B32_SFLOAT);
		if (out.textured)
			out.attributes["DiffuseColorCoordinates"] = scene::BufferView::of(uvs, VK_FORMAT_R32G32_SFLOAT);

		if (!indices.empty())
		{
			if (index_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT)
				out.indices = scene::BufferView::of(indices, VK_FORMAT_R32_UINT);
			else
				out.indices =
				    scene::BufferView::of(std::vector<uint16_t>(indices.begin(), indices.end()), VK_FORMAT_R16_UINT);
			out.draw_call.indexed = true;
		}
		out.draw_call.count = uint32_t(corner_count);
		return out;
	}

	Result<adaptive::aval<scene::TextureData>> texture(int image_index) const
	{
		if (auto it = textures_.find(image_index); it != textures_.end())
			return it->second;
		const std::string what = cat("image ", image_index);
		if (image_index < 0 || size_t(image_index) >= model_.images.size())
			return fail(ErrorCode::InvalidArgument, cat(what, " does not exist"));
		const tinygltf::Image& image = model_.images[size_t(image_index)];
		if (image.image.empty() || image.width <= 0 || image.height <= 0)
			return fail(ErrorCode::InvalidArgument, cat(what, " ('", image.uri.size() > 64 ? "data" : image.uri,
			                                            "') could not be loaded or decoded"));
		const int components = image.component;
		const int bytes = image.bits / 8;
		const size_t pixels = size_t(image.width) * size_t(image.height);
		if (components < 1 || components > 4 || (bytes != 1 && bytes != 2) ||
		    image.image.size() != pixels * size_t(components) * size_t(bytes))
			return fail(ErrorCode::Unsupported, cat(what, ": ", components, " channels of ", image.bits, " bits"));
		auto rgba = std::make_shared<std::vector<uint8_t>>(pixels * 4);
		for (size_t i = 0; i < pixels; ++i)
		{
			uint8_t c[4] = {0, 0, 0, 255};
			for (int k = 0; k < components; ++k)
			{
				// 16-bit channels are little-endian in tinygltf's buffer; keep the high byte.
				const size_t at = (i * size_t(components) + size_t(k)) * size_t(bytes);
				c[k] = bytes == 1 ? image.image[at] : image.image[at + 1];
			}
			if (components == 1 || components == 2) // grey (+ alpha)
			{
				c[3] = components == 2 ? c[1] : 255;
				c[1] = c[2] = c[0];
			}
			std::copy_n(c, 4, &(*rgba)[i * 4]);
		}
		scene::TextureData data;
		data.width = uint32_t(image.width);
		data.height = uint32_t(image.height);
		data.rgba8 = std::move(rgba);
		data.srgb = true;
		auto value = adaptive::constant(std::move(data));
		textures_.emplace(image_index, value);
		return value;
	}

	static scene::SamplerState samplerState(const tinygltf::Sampler& s)
	{
		scene::SamplerState out;
		out.filter = s.magFilter == TINYGLTF_TEXTURE_FILTER_NEAREST ? scene::Filter::Nearest : scene::Filter::Linear;
		out.address = s.wrapS == TINYGLTF_TEXTURE_WRAP_CLAMP_TO_EDGE     ? scene::AddressMode::ClampToEdge
		              : s.wrapS == TINYGLTF_TEXTURE_WRAP_MIRRORED_REPEAT ? scene::AddressMode::MirroredRepeat
		                                                                 : scene::AddressMode::Repeat;
		out.mipmaps =
		    !(s.minFilter == TINYGLTF_TEXTURE_FILTER_NEAREST || s.minFilter == TINYGLTF_TEXTURE_FILTER_LINEAR);
		return out;
	}

	Result<void> addMesh(int mesh_index, const math::Trafo3d& world)
	{
		if (size_t(mesh_index) >= model_.meshes.size())
			return fail(ErrorCode::InvalidArgument, cat("mesh ", mesh_index, " does not exist"));
		auto cached = meshes_.find(mesh_index);
		if (cached == meshes_.end())
		{
			std::vector<PrimitiveData> prims;
			const tinygltf::Mesh& mesh = model_.meshes[size_t(mesh_index)];
			for (size_t i = 0; i < mesh.primitives.size(); ++i)
			{
				auto prim = convertPrimitive(mesh.primitives[i], cat("mesh ", mesh_index, " primitive ", i));
				QUOKKA_TRY(prim);
				prims.push_back(std::move(prim).value());
			}
			cached = meshes_.emplace(mesh_index, std::move(prims)).first;
		}

		for (const PrimitiveData& prim : cached->second)
		{
			if (prim.triangles == 0)
				continue;
			scene::RenderObject o;
			o.attributes = prim.attributes;
			o.indices = prim.indices;
			o.draw_call = adaptive::constant(prim.draw_call);
			o.uniforms = global_uniforms_;
			o.uniforms["ModelTrafo"] = scene::uniform(world);

			math::V4f color(1.0f);
			if (prim.material >= 0)
			{
				const tinygltf::Material& m = model_.materials[size_t(prim.material)];
				const std::vector<double>& f = m.pbrMetallicRoughness.baseColorFactor;
				if (f.size() == 4)
					color = math::V4f(float(f[0]), float(f[1]), float(f[2]), float(f[3]));
			}
			o.uniforms["ConstantColor"] = scene::uniform(color);

			o.effect = plain_;
			if (prim.textured)
			{
				const tinygltf::Material& m = model_.materials[size_t(prim.material)];
				const int tex = m.pbrMetallicRoughness.baseColorTexture.index;
				if (size_t(tex) >= model_.textures.size())
					return fail(ErrorCode::InvalidArgument, cat("texture ", tex, " does not exist"));
				const tinygltf::Texture& t = model_.textures[size_t(tex)];
				if (t.source >= 0) // no source: only an extension's image we do not decode; draw untextured
				{
					auto data = texture(t.source);
					QUOKKA_TRY(data);
					o.textures["DiffuseColorTexture"] = data.value();
					if (t.sampler >= 0 && size_t(t.sampler) < model_.samplers.size())
						o.samplers["DiffuseColorTexture"] = samplerState(model_.samplers[size_t(t.sampler)]);
					o.effect = textured_;
				}
				else
					o.attributes.erase("DiffuseColorCoordinates");
			}

			out_.bounds.extend(prim.local_bounds.transformed(world));
			out_.triangles += prim.triangles;
			out_.objects.push_back(scene::makeRenderObject(std::move(o)));
		}
		return {};
	}

	const std::string& path_;
	const tinygltf::Model& model_;
	const SceneGlobals& globals_;
	fx::Effect plain_, textured_;
	std::map<std::string, adaptive::aval<scene::UniformValue>> global_uniforms_;
	std::map<int, std::vector<PrimitiveData>> meshes_;
	mutable std::map<int, adaptive::aval<scene::TextureData>> textures_;
	GeneratedScene out_;
};

/// The asset.version a glTF document declares, read before tinygltf (which cannot parse glTF 1.0 and would report
/// whatever 1.0 construct it trips over first); nullopt when the JSON does not say.
std::optional<std::string> declaredVersion(const unsigned char* json, size_t size)
{
	const nlohmann::json doc = nlohmann::json::parse(json, json + size, nullptr, /*allow_exceptions*/ false);
	if (doc.is_discarded() || !doc.is_object())
		return std::nullopt;
	const auto asset = doc.find("asset");
	if (asset == doc.end() || !asset->is_object())
		return std::nullopt;
	const auto version = asset->find("version");
	if (version == asset->end() || !version->is_string())
		return std::nullopt;
	return version->get<std::string>();
}

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

Result<GeneratedScene> importGltfImpl(const std::string& path, const SceneGlobals& globals,
                                      const GltfImportOptions& options)
{
	auto fail = [&](ErrorCode code, const std::string& problem)
	{ return makeError(code, cat("glTF '", path, "': ", oneLine(problem))); };

	std::error_code ec;
	if (std::filesystem::is_directory(path, ec))
		return fail(ErrorCode::Io, "is a directory");
	std::ifstream file(path, std::ios::binary);
	if (!file)
		return fail(ErrorCode::Io, cat("cannot open: ", std::strerror(errno)));
	std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
	if (file.bad())
		return fail(ErrorCode::Io, "read error");
	if (bytes.size() >= std::numeric_limits<unsigned int>::max())
		return fail(ErrorCode::Unsupported, "files of 4 GiB or more are not supported");

	const bool binary = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0;
	if (binary && bytes.size() >= 8)
	{
		const uint32_t container = uint32_t(bytes[4]) | uint32_t(bytes[5]) << 8 | uint32_t(bytes[6]) << 16 |
		                           uint32_t(bytes[7]) << 24; // GLB header: container version
		if (container != 2)
			return fail(ErrorCode::Unsupported, cat("glTF-Binary version ", container, " is not supported (2 only)"));
	}
	if (binary && bytes.size() >= 12)
	{
		const uint32_t declared = uint32_t(bytes[8]) | uint32_t(bytes[9]) << 8 | uint32_t(bytes[10]) << 16 |
		                          uint32_t(bytes[11]) << 24; // GLB header: total length, little-endian
		if (declared > bytes.size())
			return fail(ErrorCode::InvalidArgument,
			            cat("truncated .glb: its header says ", declared, " bytes, the file has ", bytes.size()));
	}

	{
		// The JSON: the whole file, or a .glb's first chunk (length at byte 12, type at 16, data from 20).
		const unsigned char* json = bytes.data();
		size_t json_size = bytes.size();
		if (binary)
		{
			json_size = bytes.size() >= 20 ? size_t(uint32_t(bytes[12]) | uint32_t(bytes[13]) << 8 |
			                                        uint32_t(bytes[14]) << 16 | uint32_t(bytes[15]) << 24)
			                               : 0;
			json = bytes.data() + std::min<size_t>(20, bytes.size());
			json_size = std::min(json_size, bytes.size() - std::min<size_t>(20, bytes.size()));
		}
		if (auto version = declaredVersion(json, json_size); version && version->rfind("2.", 0) != 0)
			return fail(ErrorCode::Unsupported, cat("glTF version '", *version, "' is not supported (2.x only)"));
	}

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
		return fail(ErrorCode::Io, cat("cannot resolve its folder: ", ec.message()));
	loader.SetFsCallbacks(tinygltf::FsCallbacks{&FileAccess::exists, &FileAccess::expand, &FileAccess::read,
	                                            &FileAccess::write, &access});
	const bool loaded =
	    binary ? loader.LoadBinaryFromMemory(&model, &err, &warn, bytes.data(), unsigned(bytes.size()), base_dir)
	           : loader.LoadASCIIFromString(&model, &err, &warn, reinterpret_cast<const char*>(bytes.data()),
	                                        unsigned(bytes.size()), base_dir);
	if (!loaded)
	{
		std::string problem = oneLine(err.empty() ? warn : err);
		if (problem.empty())
			problem = "tinygltf could not parse it";
		if (!access.refused.empty())
			return fail(ErrorCode::InvalidArgument,
			            cat("refusing to read '", access.refused,
			                "': it is outside the model's folder (--gltf-any-path allows any path)"));
		// A buffer file the document references but that cannot be read is an Io error, not bad input.
		if (problem.find("File not found") != std::string::npos)
			return fail(ErrorCode::Io, problem);
		return fail(ErrorCode::InvalidArgument, cat(binary ? "malformed .glb: " : "malformed glTF: ", problem));
	}
	Importer importer(path, model, globals);
	return importer.run();
}

} // namespace

Result<GeneratedScene> importGltf(const std::string& path, const SceneGlobals& globals,
                                  const GltfImportOptions& options)
{
	// tinygltf and the standard library may throw (bad_alloc, json type errors); nothing escapes (STYLE R5).
	try
	{
		return importGltfImpl(path, globals, options);
	}
	catch (const std::bad_alloc&)
	{
		return makeError(ErrorCode::OutOfMemory, cat("glTF '", path, "': out of memory"));
	}
	catch (const std::exception& e)
	{
		return makeError(ErrorCode::InvalidArgument, cat("glTF '", path, "': ", oneLine(e.what())));
	}
}

} // namespace quokka::app
