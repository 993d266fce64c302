// primitives.cpp — one glTF mesh primitive → vertex attributes, indices and a draw call in list topology.
#include "internal.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace quokka::gltf::detail
{
namespace
{

/// glTF primitive modes.
enum Mode : int
{
	kPoints = 0,
	kLines = 1,
	kLineLoop = 2,
	kLineStrip = 3,
	kTriangles = 4,
	kTriangleStrip = 5,
	kTriangleFan = 6,
};

/// Strips, fans and loops as lists over the same vertices (windings as the glTF specification defines them).
std::vector<uint32_t> expandToList(int mode, const std::vector<uint32_t>& c)
{
	std::vector<uint32_t> out;
	const size_t n = c.size();
	if (mode == kTriangleStrip && n >= 3)
		for (size_t i = 0; i + 2 < n; ++i)
		{
			if (i % 2 == 0)
				out.insert(out.end(), {c[i], c[i + 1], c[i + 2]});
			else
				out.insert(out.end(), {c[i + 1], c[i], c[i + 2]});
		}
	else if (mode == kTriangleFan && n >= 3)
		for (size_t i = 1; i + 1 < n; ++i)
			out.insert(out.end(), {c[0], c[i], c[i + 1]});
	else if ((mode == kLineStrip || mode == kLineLoop) && n >= 2)
	{
		for (size_t i = 0; i + 1 < n; ++i)
			out.insert(out.end(), {c[i], c[i + 1]});
		if (mode == kLineLoop && n >= 3)
			out.insert(out.end(), {c[n - 1], c[0]});
	}
	return out;
}

/// The per-vertex values of `values` (`components` each) at every corner: the un-indexed form of an attribute.
std::vector<float> gather(const std::vector<float>& values, size_t components, const std::vector<uint32_t>& corners)
{
	std::vector<float> out(corners.size() * components);
	for (size_t c = 0; c < corners.size(); ++c)
		std::copy_n(&values[size_t(corners[c]) * components], components, &out[c * components]);
	return out;
}

/// Flat normals of a non-indexed triangle list.
std::vector<float> flatNormals(const std::vector<float>& pos)
{
	std::vector<float> normals(pos.size());
	for (size_t t = 0; t < pos.size() / 9; ++t)
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
	return normals;
}

/// Reads the TEXCOORD set `ref` names and applies its transform; empty when the primitive lacks the set.
Result<std::vector<float>> readCoordinates(const AccessorReader& reader, const tinygltf::Primitive& p,
                                           const TextureRef& ref, size_t vertex_count)
{
	if (ref.texture < 0)
		return std::vector<float>{};
	auto it = p.attributes.find(cat("TEXCOORD_", ref.tex_coord));
	if (it == p.attributes.end())
		return std::vector<float>{};
	int components = 0;
	auto uv = reader.floats(it->second, "TEXCOORD", 2, 2, true, vertex_count, components);
	QUOKKA_TRY(uv);
	std::vector<float>& v = uv.value();
	if (ref.transform != math::M33f(1.0f))
		for (size_t i = 0; i < v.size(); i += 2)
		{
			const math::V3f t = ref.transform * math::V3f(v[i], v[i + 1], 1.0f);
			v[i] = t.x;
			v[i + 1] = t.y;
		}
	return uv;
}

} // namespace

Result<PrimitiveData> convertPrimitive(const AccessorReader& reader, const tinygltf::Model& model,
                                       const tinygltf::Primitive& p, const std::string& what)
{
	const int mode = p.mode == -1 ? kTriangles : p.mode;
	if (mode < kPoints || mode > kTriangleFan)
		return reader.fail(ErrorCode::InvalidArgument, cat(what, ": mode ", mode, " is not a glTF primitive mode"));
	PrimitiveData out;
	out.topology = mode == kPoints ? Topology::Points : mode <= kLineStrip ? Topology::Lines : Topology::Triangles;
	if (p.material >= 0 && size_t(p.material) >= model.materials.size())
		return reader.fail(ErrorCode::InvalidArgument, cat(what, ": material ", p.material, " does not exist"));
	out.material = p.material;
	auto pos_it = p.attributes.find("POSITION");
	if (pos_it == p.attributes.end())
		return reader.fail(ErrorCode::InvalidArgument, cat(what, " has no POSITION attribute"));
	int components = 0;
	auto positions = reader.floats(pos_it->second, "POSITION", 3, 3, false, kAnyCount, components);
	QUOKKA_TRY(positions);
	std::vector<float>& pos = positions.value();
	const size_t vertex_count = pos.size() / 3;
	if (vertex_count > std::numeric_limits<uint32_t>::max())
		return reader.fail(ErrorCode::Unsupported, cat(what, " has more than 2^32 vertices"));
	for (size_t v = 0; v < vertex_count; ++v)
	{
		const math::V3d point(pos[v * 3], pos[v * 3 + 1], pos[v * 3 + 2]);
		if (!std::isfinite(point.x) || !std::isfinite(point.y) || !std::isfinite(point.z))
			return reader.fail(ErrorCode::InvalidArgument, cat(what, ": POSITION ", v, " is not finite"));
		out.local_bounds.extend(point);
	}

	// Corners: the indices, or (for strips, fans and loops, expanded here) 0…n−1.
	std::vector<uint32_t> corners;
	int index_type = 0;
	bool indexed = p.indices >= 0;
	if (indexed)
	{
		auto i = reader.indices(p.indices, vertex_count, index_type);
		QUOKKA_TRY(i);
		corners = std::move(i).value();
	}
	if (mode != kPoints && mode != kLines && mode != kTriangles)
	{
		if (!indexed)
		{
			corners.resize(vertex_count);
			std::iota(corners.begin(), corners.end(), 0u);
			index_type =
			    vertex_count <= 65536 ? TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT : TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT;
			indexed = true;
		}
		corners = expandToList(mode, corners);
	}
	const size_t per_element = out.topology == Topology::Triangles ? 3 : out.topology == Topology::Lines ? 2 : 1;
	const size_t corner_count = indexed ? corners.size() : vertex_count;
	if ((mode == kTriangles || mode == kLines) && corner_count % per_element != 0)
		return reader.fail(ErrorCode::InvalidArgument,
		                   cat(what, ": ", corner_count, indexed ? " indices" : " vertices", " are not a multiple of ",
		                       per_element, mode == kTriangles ? " (TRIANGLES)" : " (LINES)"));
	if (corner_count > std::numeric_limits<uint32_t>::max())
		return reader.fail(ErrorCode::Unsupported, cat(what, " has more than 2^32 indices"));
	out.elements = corner_count / per_element;

	std::vector<float> normals, colors;
	if (auto it = p.attributes.find("NORMAL"); it != p.attributes.end() && out.topology == Topology::Triangles)
	{
		auto n = reader.floats(it->second, "NORMAL", 3, 3, false, vertex_count, components);
		QUOKKA_TRY(n);
		normals = std::move(n).value();
	}
	if (auto it = p.attributes.find("COLOR_0"); it != p.attributes.end())
	{
		auto c = reader.floats(it->second, "COLOR_0", 3, 4, true, vertex_count, components);
		QUOKKA_TRY(c);
		colors = std::move(c).value();
		if (components == 3) // RGB → RGBA, alpha 1
		{
			std::vector<float> rgba(vertex_count * 4, 1.0f);
			for (size_t v = 0; v < vertex_count; ++v)
				std::copy_n(&colors[v * 3], 3, &rgba[v * 4]);
			colors = std::move(rgba);
		}
		out.vertex_colors = true;
	}
	auto base_uv = readCoordinates(reader, p, materialTexture(model, p.material, 0), vertex_count);
	QUOKKA_TRY(base_uv);
	auto emissive_uv = readCoordinates(reader, p, materialTexture(model, p.material, 1), vertex_count);
	QUOKKA_TRY(emissive_uv);
	out.base_textured = !base_uv.value().empty();
	out.emissive_textured = !emissive_uv.value().empty();

	if (out.topology == Topology::Triangles && normals.empty())
	{
		// The specification: without normals, clients compute flat normals. Flat shading needs one vertex per corner,
		// so the primitive is un-indexed first.
		if (indexed)
		{
			pos = gather(pos, 3, corners);
			if (!colors.empty())
				colors = gather(colors, 4, corners);
			if (out.base_textured)
				base_uv.value() = gather(base_uv.value(), 2, corners);
			if (out.emissive_textured)
				emissive_uv.value() = gather(emissive_uv.value(), 2, corners);
			corners.clear();
			indexed = false;
		}
		normals = flatNormals(pos);
	}

	out.attributes["Positions"] = scene::BufferView::of(pos, VK_FORMAT_R32G32B32_SFLOAT);
	if (!normals.empty())
		out.attributes["Normals"] = scene::BufferView::of(normals, VK_FORMAT_R32G32B32_SFLOAT);
	if (out.vertex_colors)
		out.attributes["Colors"] = scene::BufferView::of(colors, VK_FORMAT_R32G32B32A32_SFLOAT);
	if (out.base_textured)
		out.attributes["DiffuseColorCoordinates"] = scene::BufferView::of(base_uv.value(), VK_FORMAT_R32G32_SFLOAT);
	if (out.emissive_textured)
		out.attributes["EmissiveCoordinates"] = scene::BufferView::of(emissive_uv.value(), VK_FORMAT_R32G32_SFLOAT);
	if (indexed)
	{
		const bool wide = index_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT;
		if (wide)
			out.indices = scene::BufferView::of(corners, VK_FORMAT_R32_UINT);
		else
			out.indices =
			    scene::BufferView::of(std::vector<uint16_t>(corners.begin(), corners.end()), VK_FORMAT_R16_UINT);
		out.draw_call.indexed = true;
	}
	out.draw_call.count = uint32_t(corner_count);
	return out;
}

} // namespace quokka::gltf::detail
