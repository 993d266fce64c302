// scene_mesh.hpp — what the built-in generators (grid, city) share: deterministic random numbers, procedural meshes
// (box, cylinder, cone, random blob, ground quad) with normals, and their conversion into shared scene buffers.
//
// Conventions of every mesh: y up, counter-clockwise front faces seen from outside, closed unless noted, normals of
// unit length. Randomness comes from std::mt19937_64 (its output sequence is fixed by the standard) through our own
// integer → float mapping, never std::uniform_*_distribution (whose results differ between standard libraries).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include <quokka/adaptive/aval.hpp>
#include <quokka/base/result.hpp>
#include <quokka/math/math.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::app::mesh
{

/// Seeded random numbers, identical on every platform and standard library.
class Rng
{
public:
	explicit Rng(uint64_t seed) : engine_(seed) {}

	uint64_t next() { return engine_(); }
	/// Uniform in [0, 1): the top 24 bits of one draw, exactly representable as a float.
	float unit() { return float(engine_() >> 40) * 0x1p-24f; }
	/// Uniform in [lo, hi).
	float range(float lo, float hi) { return lo + (hi - lo) * unit(); }
	/// Uniform integer in [lo, hi] (inclusive) by a 32×32 → 64-bit multiply-shift (bias below 2^-32 · range).
	uint32_t between(uint32_t lo, uint32_t hi)
	{
		return lo + uint32_t(((engine_() >> 32) * (uint64_t(hi - lo) + 1)) >> 32);
	}
	bool chance(float p) { return unit() < p; }

private:
	std::mt19937_64 engine_;
};

/// A host-side triangle mesh. `colors` and `uvs` are empty or have one entry per vertex; `indices` empty means a
/// non-indexed triangle list.
struct Mesh
{
	std::vector<math::V3f> positions;
	std::vector<math::V3f> normals;
	std::vector<math::V4f> colors;
	std::vector<math::V2f> uvs;
	std::vector<uint32_t> indices;

	uint32_t vertexCount() const { return uint32_t(positions.size()); }
	uint32_t triangleCount() const { return uint32_t((indices.empty() ? positions.size() : indices.size()) / 3); }
	math::Box3d bounds() const;
	/// Appends `other` (both indexed, or both not; colours and uvs present in both or in neither).
	Mesh& append(const Mesh& other);
	/// Sets every vertex colour to `color`.
	Mesh& paint(const math::V4f& color);
	/// The same triangles as a non-indexed list.
	Mesh unindexed() const;
};

/// An axis-aligned box from `lo` to `hi`: 24 vertices (flat faces), 12 triangles. Side faces get uvs (0…u_repeat
/// horizontally, 0…v_repeat upwards, v = 0 at the top edge as images are stored top row first); top and bottom faces
/// get the constant uv (0.02, 0.02): one texel near the top-left corner (a facade texture's wall colour).
Mesh box(const math::V3f& lo, const math::V3f& hi, float u_repeat = 1.0f, float v_repeat = 1.0f);
/// A closed cylinder about the y axis: `segments` ≥ 3 smooth side quads plus two flat caps.
Mesh cylinder(uint32_t segments, float radius, float y0, float y1);
/// A closed cone about the y axis from a base at y0 to the apex at y1 (above or below; flat-shaded sides).
Mesh cone(uint32_t segments, float radius, float y0, float y1);
/// A random closed blob of exactly 2 · `ring` triangles (ring ≥ 5): a star-shaped bipyramid whose ring vertices have
/// jittered angles, radii and heights, with flat normals (6 · ring vertices); fits in [-1, 1] × [-1, 1.2] × [-1, 1].
Mesh blob(Rng& rng, uint32_t ring);
/// An open quad in the xz-plane at height y, facing +y, non-indexed (6 vertices), uvs 0…uv_repeat.
Mesh groundQuad(float half_size, float y, float uv_repeat);

enum class IndexKind : uint8_t
{
	None, ///< non-indexed draw (the mesh is expanded if it has indices)
	U16,
	U32,
};

/// A mesh as shared scene buffers: objects that draw the same mesh hold the same avals (and so the same
/// ArrayBuffer storage), which is what the renderer's upload and batching caches key on.
struct SharedMesh
{
	scene::BufferView positions;             ///< R32G32B32_SFLOAT
	scene::BufferView normals;               ///< R32G32B32_SFLOAT
	std::optional<scene::BufferView> colors; ///< R32G32B32A32_SFLOAT
	std::optional<scene::BufferView> uvs;    ///< R32G32_SFLOAT
	std::optional<scene::BufferView> indices;
	scene::DrawCall draw;                      ///< one instance
	adaptive::aval<scene::DrawCall> draw_call; ///< constant(draw), shared by single-instance users
	math::Box3d bounds;                        ///< object space
	uint32_t triangles = 0;                    ///< per instance
};

/// Builds the buffers of `mesh` with the given index kind. Errors: InvalidArgument when U16 is asked for more than
/// 65,536 vertices.
Result<SharedMesh> share(const Mesh& mesh, IndexKind kind);

/// Sets the mesh's attributes (Positions, Normals, plus Colors / DiffuseColorCoordinates when asked and present),
/// indices and draw call on `object`.
void attach(const SharedMesh& mesh, scene::RenderObject& object, bool colors, bool uvs);

/// Fully saturated-ish colour from a hue in [0, 1) (value and saturation given), alpha 1.
math::V4f hsv(float hue, float saturation, float value);

} // namespace quokka::app::mesh
