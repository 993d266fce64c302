// scene_mesh.cpp — procedural meshes for the built-in scenes and their conversion into shared scene buffers.
#include "scene_mesh.hpp"

#include <cmath>
#include <numbers>
#include <string>

namespace quokka::app::mesh
{

using math::V2f;
using math::V3f;
using math::V4f;

namespace
{

constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;
// Roofs and floors of boxes sample one texel near the texture's top-left corner (a facade's wall colour), instead of
// stretching a window over the roof.
constexpr V2f kCapUv{0.02f, 0.02f};

// Ring point at angle a about the y axis. z = −sin so that increasing angles run clockwise seen from above, which
// makes (ring_i, ring_i+1, up) counter-clockwise seen from outside.
V3f ring(float radius, float angle, float y)
{
	return V3f(radius * std::cos(angle), y, -radius * std::sin(angle));
}

V3f faceNormal(const V3f& a, const V3f& b, const V3f& c)
{
	return glm::normalize(glm::cross(b - a, c - a));
}

// Appends one flat-shaded triangle (3 new vertices) to an indexed mesh.
void flatTriangle(Mesh& m, const V3f& a, const V3f& b, const V3f& c)
{
	const V3f n = faceNormal(a, b, c);
	const uint32_t base = m.vertexCount();
	for (const V3f& p : {a, b, c})
	{
		m.positions.push_back(p);
		m.normals.push_back(n);
	}
	m.indices.insert(m.indices.end(), {base, base + 1, base + 2});
}

} // namespace

math::Box3d Mesh::bounds() const
{
	math::Box3d b;
	for (const V3f& p : positions)
		b.extend(math::V3d(p));
	return b;
}

Mesh& Mesh::append(const Mesh& other)
{
	QUOKKA_ASSERT(indices.empty() == other.indices.empty() || positions.empty(), "mixing indexed and non-indexed");
	QUOKKA_ASSERT(colors.empty() == other.colors.empty() || positions.empty(), "colours in one mesh only");
	QUOKKA_ASSERT(uvs.empty() == other.uvs.empty() || positions.empty(), "uvs in one mesh only");
	const uint32_t base = vertexCount();
	positions.insert(positions.end(), other.positions.begin(), other.positions.end());
	normals.insert(normals.end(), other.normals.begin(), other.normals.end());
	colors.insert(colors.end(), other.colors.begin(), other.colors.end());
	uvs.insert(uvs.end(), other.uvs.begin(), other.uvs.end());
	for (uint32_t i : other.indices)
		indices.push_back(base + i);
	return *this;
}

Mesh& Mesh::paint(const V4f& color)
{
	colors.assign(positions.size(), color);
	return *this;
}

Mesh Mesh::unindexed() const
{
	if (indices.empty())
		return *this;
	Mesh m;
	for (uint32_t i : indices)
	{
		m.positions.push_back(positions[i]);
		m.normals.push_back(normals[i]);
		if (!colors.empty())
			m.colors.push_back(colors[i]);
		if (!uvs.empty())
			m.uvs.push_back(uvs[i]);
	}
	return m;
}

Mesh box(const V3f& lo, const V3f& hi, float u_repeat, float v_repeat)
{
	const V3f s = hi - lo;
	struct Face
	{
		V3f origin, a, b; // a × b points outwards; a runs horizontally, b upwards (or across, on top/bottom)
		bool side;
	};
	const Face faces[6] = {
	    {{hi.x, lo.y, hi.z}, {0, 0, -s.z}, {0, s.y, 0}, true},  // +x
	    {{lo.x, lo.y, lo.z}, {0, 0, s.z}, {0, s.y, 0}, true},   // −x
	    {{lo.x, lo.y, hi.z}, {s.x, 0, 0}, {0, s.y, 0}, true},   // +z
	    {{hi.x, lo.y, lo.z}, {-s.x, 0, 0}, {0, s.y, 0}, true},  // −z
	    {{lo.x, hi.y, hi.z}, {s.x, 0, 0}, {0, 0, -s.z}, false}, // +y
	    {{lo.x, lo.y, lo.z}, {s.x, 0, 0}, {0, 0, s.z}, false},  // −y
	};
	Mesh m;
	for (const Face& f : faces)
	{
		const V3f n = glm::normalize(glm::cross(f.a, f.b));
		const uint32_t base = m.vertexCount();
		const V3f corners[4] = {f.origin, f.origin + f.a, f.origin + f.a + f.b, f.origin + f.b};
		const float ur = u_repeat, vr = v_repeat;
		const V2f side_uv[4] = {{0, vr}, {ur, vr}, {ur, 0}, {0, 0}};
		const V2f cap_uv[4] = {kCapUv, kCapUv, kCapUv, kCapUv};
		const V2f* uv = f.side ? side_uv : cap_uv;
		for (int c = 0; c < 4; ++c)
		{
			m.positions.push_back(corners[c]);
			m.normals.push_back(n);
			m.uvs.push_back(uv[c]);
		}
		m.indices.insert(m.indices.end(), {base, base + 1, base + 2, base, base + 2, base + 3});
	}
	return m;
}

Mesh cylinder(uint32_t segments, float radius, float y0, float y1)
{
	QUOKKA_ASSERT(segments >= 3, "cylinder needs 3 segments");
	Mesh m;
	// Side: two smooth rings.
	for (uint32_t i = 0; i < segments; ++i)
	{
		const float a = kTwoPi * float(i) / float(segments);
		const V3f n = ring(1.0f, a, 0.0f);
		m.positions.push_back(ring(radius, a, y0));
		m.normals.push_back(n);
		m.positions.push_back(ring(radius, a, y1));
		m.normals.push_back(n);
	}
	for (uint32_t i = 0; i < segments; ++i)
	{
		const uint32_t j = (i + 1) % segments;
		const uint32_t b0 = 2 * i, t0 = 2 * i + 1, b1 = 2 * j, t1 = 2 * j + 1;
		m.indices.insert(m.indices.end(), {b0, b1, t1, b0, t1, t0});
	}
	// Caps: a centre and a flat ring each.
	for (int cap = 0; cap < 2; ++cap)
	{
		const float y = cap ? y1 : y0;
		const V3f n(0.0f, cap ? 1.0f : -1.0f, 0.0f);
		const uint32_t centre = m.vertexCount();
		m.positions.push_back(V3f(0.0f, y, 0.0f));
		m.normals.push_back(n);
		for (uint32_t i = 0; i < segments; ++i)
		{
			m.positions.push_back(ring(radius, kTwoPi * float(i) / float(segments), y));
			m.normals.push_back(n);
		}
		for (uint32_t i = 0; i < segments; ++i)
		{
			const uint32_t p0 = centre + 1 + i, p1 = centre + 1 + (i + 1) % segments;
			if (cap)
				m.indices.insert(m.indices.end(), {centre, p0, p1});
			else
				m.indices.insert(m.indices.end(), {centre, p1, p0});
		}
	}
	return m;
}

Mesh cone(uint32_t segments, float radius, float y0, float y1)
{
	QUOKKA_ASSERT(segments >= 3, "cone needs 3 segments");
	Mesh m;
	const V3f apex(0.0f, y1, 0.0f), centre(0.0f, y0, 0.0f);
	for (uint32_t i = 0; i < segments; ++i)
	{
		const V3f p0 = ring(radius, kTwoPi * float(i) / float(segments), y0);
		const V3f p1 = ring(radius, kTwoPi * float(i + 1) / float(segments), y0);
		if (y1 > y0)
		{
			flatTriangle(m, p0, p1, apex);
			flatTriangle(m, centre, p1, p0);
		}
		else // apex below the base: the mirror image, so the winding flips to stay counter-clockwise outside
		{
			flatTriangle(m, p1, p0, apex);
			flatTriangle(m, centre, p0, p1);
		}
	}
	return m;
}

Mesh blob(Rng& rng, uint32_t ring_vertices)
{
	QUOKKA_ASSERT(ring_vertices >= 5, "blob needs 5 ring vertices");
	const uint32_t k = ring_vertices;
	std::vector<V3f> ring_points;
	for (uint32_t i = 0; i < k; ++i)
	{
		// Jitter stays within ±0.4 of a step, so angles remain increasing and the ring never folds over.
		const float a = kTwoPi * (float(i) + rng.range(-0.4f, 0.4f)) / float(k);
		ring_points.push_back(ring(rng.range(0.5f, 1.0f), a, rng.range(-0.2f, 0.2f)));
	}
	// The apexes stay on the y axis: every triangle then faces away from the axis, since consecutive ring angles
	// differ by 0.2–1.8 steps (< 180° for k ≥ 5), so no triangle can fold over (an apex off the axis could lie on
	// the outer side of a nearly radial ring edge and flip the triangle).
	const V3f top(0.0f, rng.range(0.6f, 1.2f), 0.0f), bottom(0.0f, rng.range(-1.0f, -0.6f), 0.0f);
	// Flat normals: smooth (averaged) ones disagree with the winding of the skinny triangles that nearly radial
	// ring edges make.
	Mesh m;
	for (uint32_t i = 0; i < k; ++i)
	{
		const V3f& p = ring_points[i];
		const V3f& q = ring_points[(i + 1) % k];
		flatTriangle(m, p, q, top);
		flatTriangle(m, q, p, bottom);
	}
	return m;
}

Mesh groundQuad(float half_size, float y, float uv_repeat)
{
	const float h = half_size, r = uv_repeat;
	Mesh m;
	const V3f p[4] = {{-h, y, h}, {h, y, h}, {h, y, -h}, {-h, y, -h}};
	const V2f uv[4] = {{0, r}, {r, r}, {r, 0}, {0, 0}};
	for (int i : {0, 1, 2, 0, 2, 3})
	{
		m.positions.push_back(p[i]);
		m.normals.push_back(V3f(0.0f, 1.0f, 0.0f));
		m.uvs.push_back(uv[i]);
	}
	return m;
}

Result<SharedMesh> share(const Mesh& input, IndexKind kind)
{
	const Mesh expanded = kind == IndexKind::None ? input.unindexed() : Mesh{};
	const Mesh& m = kind == IndexKind::None ? expanded : input;
	QUOKKA_ASSERT(kind == IndexKind::None || !m.indices.empty(), "indexed share of a non-indexed mesh");
	if (kind == IndexKind::U16 && m.vertexCount() > 65536)
	{
		std::string message = "mesh of ";
		message.append(std::to_string(m.vertexCount())).append(" vertices cannot use 16-bit indices");
		return makeError(ErrorCode::InvalidArgument, std::move(message));
	}
	SharedMesh s;
	s.positions = scene::BufferView::of(m.positions, VK_FORMAT_R32G32B32_SFLOAT);
	s.normals = scene::BufferView::of(m.normals, VK_FORMAT_R32G32B32_SFLOAT);
	if (!m.colors.empty())
		s.colors = scene::BufferView::of(m.colors, VK_FORMAT_R32G32B32A32_SFLOAT);
	if (!m.uvs.empty())
		s.uvs = scene::BufferView::of(m.uvs, VK_FORMAT_R32G32_SFLOAT);
	if (kind == IndexKind::U16)
	{
		std::vector<uint16_t> narrow(m.indices.begin(), m.indices.end());
		s.indices = scene::BufferView::of(narrow, VK_FORMAT_R16_UINT);
	}
	else if (kind == IndexKind::U32)
		s.indices = scene::BufferView::of(m.indices, VK_FORMAT_R32_UINT);
	s.draw.indexed = kind != IndexKind::None;
	s.draw.count = kind == IndexKind::None ? m.vertexCount() : uint32_t(m.indices.size());
	s.draw_call = adaptive::constant(s.draw);
	s.bounds = m.bounds();
	s.triangles = m.triangleCount();
	return s;
}

void attach(const SharedMesh& mesh, scene::RenderObject& object, bool colors, bool uvs)
{
	object.attributes["Positions"] = mesh.positions;
	object.attributes["Normals"] = mesh.normals;
	if (colors && mesh.colors)
		object.attributes["Colors"] = *mesh.colors;
	if (uvs && mesh.uvs)
		object.attributes["DiffuseColorCoordinates"] = *mesh.uvs;
	object.indices = mesh.indices;
	object.draw_call = mesh.draw_call;
}

V4f hsv(float hue, float saturation, float value)
{
	const float h = (hue - std::floor(hue)) * 6.0f;
	const int sector = int(h) % 6;
	const float f = h - float(int(h));
	const float p = value * (1.0f - saturation), q = value * (1.0f - saturation * f),
	            t = value * (1.0f - saturation * (1.0f - f));
	switch (sector)
	{
	case 0:
		return {value, t, p, 1.0f};
	case 1:
		return {q, value, p, 1.0f};
	case 2:
		return {p, value, t, 1.0f};
	case 3:
		return {p, q, value, 1.0f};
	case 4:
		return {t, p, value, 1.0f};
	default:
		return {value, p, q, 1.0f};
	}
}

} // namespace quokka::app::mesh
