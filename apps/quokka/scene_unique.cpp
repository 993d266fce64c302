// scene_unique.cpp — the unique-mesh scene of the heap benchmarks (issue #5): N objects, no two sharing a buffer.
//
// Object i sits in row i / side, column i % side of a side × side grid (side = ⌈√N⌉) with a pitch of 3 units, centred
// on the origin. Its mesh is a jittered bipyramid: `ring` vertices around the y axis plus two apexes on it, 2 · ring
// triangles (a tetrahedron at 4), indexed u32 with shared vertices and radial normals — r + 2 vertices instead of the
// grid scene's 6 · r flat-shaded ones, because 10^6 objects of 3 · 55 flat vertices would need ~8 GiB of host memory
// and these need ~1.5 GiB. ModelTrafo is translation · rotation about y · uniform scale 0.6–1; the colour is one of
// 16 shared constant avals (a scene rarely has a colour per object, and the heap pools equal values anyway).
// Everything derives from one std::mt19937_64 seeded with `seed`, so equal seeds give equal bytes.
#include "scene_mesh.hpp"
#include "scenes.hpp"

#include <array>
#include <cmath>
#include <numbers>

#include <quokka/fx/stock.hpp>

namespace quokka::app
{

namespace
{
constexpr uint32_t kMaxObjects = 200'000'000; // (bench update adds objects beyond its 10^8)
constexpr double kPitch = 3.0;                // meshes reach at most 1.2 from their axis: 3 leaves a gap ≥ 0.6
constexpr uint32_t kMaxTriangles = 100;
constexpr uint32_t kPaletteSize = 16;

/// One object's geometry: shared vertices, radial normals, u32 indices, counter-clockwise seen from outside.
struct Blob
{
	std::vector<math::V3f> positions;
	std::vector<math::V3f> normals;
	std::vector<uint32_t> indices;
};

/// Appends triangle (a, b, c), flipped when it would face the origin: every face of a polyhedron that is star-shaped
/// about the origin (bipyramids with their apexes on the axis, tetrahedra around it) then faces outwards.
void addFace(Blob& m, uint32_t a, uint32_t b, uint32_t c)
{
	const math::V3f& pa = m.positions[a];
	const math::V3f n = glm::cross(m.positions[b] - pa, m.positions[c] - pa);
	if (glm::dot(n, pa + m.positions[b] + m.positions[c]) < 0.0f)
		std::swap(b, c);
	m.indices.insert(m.indices.end(), {a, b, c});
}

/// A random closed mesh of exactly `triangles` (even, ≥ 4) triangles inside [-1, 1] × [-1, 1.2] × [-1, 1].
void makeBlob(mesh::Rng& rng, uint32_t triangles, Blob& m)
{
	m.positions.clear();
	m.normals.clear();
	m.indices.clear();
	if (triangles == 4)
	{
		// A regular tetrahedron's corners, each pushed in or out by up to 20 %.
		for (const math::V3f c : {math::V3f(1, 1, 1), math::V3f(1, -1, -1), math::V3f(-1, 1, -1), math::V3f(-1, -1, 1)})
			m.positions.push_back(c * (0.577f * rng.range(0.8f, 1.0f)));
		addFace(m, 0, 1, 2);
		addFace(m, 0, 3, 1);
		addFace(m, 0, 2, 3);
		addFace(m, 1, 3, 2);
	}
	else
	{
		// Ring angles jitter by ±0.4 of a step (±0.1 below 5 ring points), so they stay increasing and consecutive
		// ring points are less than 180° apart (1.8 · 72° at 5 points, 1.2 · 120° at 3): the bipyramid stays
		// star-shaped about the origin (see addFace).
		const uint32_t ring = triangles / 2;
		const float step = 2.0f * std::numbers::pi_v<float> / float(ring);
		const float jitter = ring >= 5 ? 0.4f : 0.1f;
		for (uint32_t i = 0; i < ring; ++i)
		{
			const float a = step * (float(i) + rng.range(-jitter, jitter));
			const float r = rng.range(0.5f, 1.0f);
			m.positions.push_back({r * std::cos(a), rng.range(-0.2f, 0.2f), r * std::sin(a)});
		}
		m.positions.push_back({0.0f, rng.range(0.6f, 1.2f), 0.0f});
		m.positions.push_back({0.0f, rng.range(-1.0f, -0.6f), 0.0f});
		for (uint32_t i = 0; i < ring; ++i)
		{
			const uint32_t j = (i + 1) % ring;
			addFace(m, i, j, ring);
			addFace(m, j, i, ring + 1);
		}
	}
	for (const math::V3f& p : m.positions)
		m.normals.push_back(glm::normalize(p));
}
} // namespace

Result<UniqueMeshScene> makeUniqueMeshScene(const SceneGlobals& globals, uint32_t objects, uint64_t seed,
                                            const UniqueMeshOptions& options)
{
	if (objects == 0 || objects > kMaxObjects)
		return makeError(ErrorCode::InvalidArgument,
		                 "unique-mesh scene: object count " + std::to_string(objects) + " is outside 1…200,000,000");
	if (options.triangles != 0 &&
	    (options.triangles < 4 || options.triangles > kMaxTriangles || options.triangles % 2 != 0))
		return makeError(ErrorCode::InvalidArgument, "unique-mesh scene: " + std::to_string(options.triangles) +
		                                                 " triangles per object is not an even count in 4…100");
	auto effect = fx::compose("unique", fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting());
	if (!effect.ok())
		return effect.error();

	mesh::Rng rng(seed);
	const auto shared_uniforms = globals.uniforms();
	scene::PipelineState state;
	state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
	std::array<adaptive::aval<scene::UniformValue>, kPaletteSize> palette;
	for (uint32_t c = 0; c < kPaletteSize; ++c)
		palette[c] = scene::uniform(mesh::hsv(float(c) / float(kPaletteSize), 0.65f, 0.9f));
	// One draw-call aval per triangle count: objects with equal counts draw the same (constant) call.
	std::array<adaptive::aval<scene::DrawCall>, kMaxTriangles + 1> draws;
	const uint32_t side = uint32_t(std::ceil(std::sqrt(double(objects))));
	const double origin = -0.5 * kPitch * double(side - 1);

	UniqueMeshScene out;
	out.scene.objects.reserve(objects);
	if (options.editable)
		out.trafos.reserve(objects);
	Blob m; // reused: its vectors keep their capacity across objects
	for (uint32_t i = 0; i < objects; ++i)
	{
		const uint32_t triangles = options.triangles ? options.triangles : 2 * rng.between(5, 50);
		makeBlob(rng, triangles, m);
		const double angle = double(rng.unit()) * 2.0 * std::numbers::pi;
		const double scale = double(rng.range(0.6f, 1.0f));
		const uint32_t color = rng.between(0, kPaletteSize - 1);
		const math::Trafo3d model =
		    math::Trafo3d::translation({origin + kPitch * double(i % side), 0.0, origin + kPitch * double(i / side)}) *
		    math::Trafo3d::rotation({0.0, 1.0, 0.0}, angle) * math::Trafo3d::scale(scale);

		if (!draws[triangles])
			draws[triangles] = adaptive::constant(scene::DrawCall{true, 3 * triangles});
		scene::RenderObject o;
		o.effect = effect.value();
		o.state = state;
		o.attributes.emplace("Positions", scene::BufferView::of(m.positions, VK_FORMAT_R32G32B32_SFLOAT));
		o.attributes.emplace("Normals", scene::BufferView::of(m.normals, VK_FORMAT_R32G32B32_SFLOAT));
		o.indices = scene::BufferView::of(m.indices, VK_FORMAT_R32_UINT);
		o.draw_call = draws[triangles];
		o.uniforms = shared_uniforms;
		if (options.editable)
		{
			out.trafos.emplace_back(model);
			o.uniforms["ModelTrafo"] = scene::uniform(out.trafos.back());
		}
		else
			o.uniforms["ModelTrafo"] = scene::uniform(model);
		o.uniforms["ConstantColor"] = palette[color];
		out.scene.objects.push_back(scene::makeRenderObject(std::move(o)));
		// The mesh fits in a radius-1.2 cylinder about its axis: scale it rather than transform every vertex.
		const math::V3d centre = model.transformPos(math::V3d(0.0));
		out.scene.bounds.extend(centre - 1.2 * scale);
		out.scene.bounds.extend(centre + 1.2 * scale);
		out.scene.triangles += triangles;
	}
	return out;
}

} // namespace quokka::app
