// scene_grid.cpp — the seeded `grid` scene: N unique random blobs on a square grid in the xz-plane (y up).
//
// Object i sits in row i / side, column i % side of a side × side grid (side = ⌈√N⌉) with a pitch of 3 units,
// centred on the origin. Each has its own mesh (a blob of 10–100 triangles, u32 indices, flat normals), its own
// ModelTrafo (translation · rotation about y · uniform scale 0.6–1) and its own ConstantColor; the effect is
// trafo + constantColor + simpleLighting with back-face culling (the blobs are closed). Everything derives from one
// std::mt19937_64 seeded with `seed`, so equal seeds give equal bytes.
#include "scene_mesh.hpp"
#include "scenes.hpp"

#include <cmath>
#include <numbers>

#include <quokka/fx/stock.hpp>

namespace quokka::app
{

namespace
{
constexpr uint32_t kMaxObjects = 10'000'000;
constexpr double kPitch = 3.0; // blobs reach at most 1 from their axis: 3 leaves a gap ≥ 1
} // namespace

Result<GeneratedScene> makeGridScene(const SceneGlobals& globals, uint32_t objects, uint64_t seed)
{
	if (objects == 0 || objects > kMaxObjects)
	{
		std::string message = "grid scene: object count ";
		message.append(std::to_string(objects)).append(" is outside 1…10,000,000");
		return makeError(ErrorCode::InvalidArgument, std::move(message));
	}
	auto effect = fx::compose("grid", fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting());
	if (!effect.ok())
		return effect.error();

	mesh::Rng rng(seed);
	const auto shared_uniforms = globals.uniforms();
	scene::PipelineState state;
	state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
	const uint32_t side = uint32_t(std::ceil(std::sqrt(double(objects))));
	const double origin = -0.5 * kPitch * double(side - 1);

	GeneratedScene out;
	out.objects.reserve(objects);
	for (uint32_t i = 0; i < objects; ++i)
	{
		// 5…50 ring vertices → 10…100 triangles.
		const mesh::Mesh m = mesh::blob(rng, rng.between(5, 50));
		auto shared = mesh::share(m, mesh::IndexKind::U32);
		if (!shared.ok())
			return shared.error();
		const double angle = double(rng.unit()) * 2.0 * std::numbers::pi;
		const double scale = double(rng.range(0.6f, 1.0f));
		const math::V4f color = mesh::hsv(rng.unit(), rng.range(0.4f, 0.9f), rng.range(0.6f, 1.0f));
		const math::Trafo3d model =
		    math::Trafo3d::translation({origin + kPitch * double(i % side), 0.0, origin + kPitch * double(i / side)}) *
		    math::Trafo3d::rotation({0.0, 1.0, 0.0}, angle) * math::Trafo3d::scale(scale);

		scene::RenderObject o;
		o.effect = effect.value();
		o.state = state;
		mesh::attach(shared.value(), o, false, false);
		o.uniforms = shared_uniforms;
		o.uniforms["ModelTrafo"] = scene::uniform(model);
		o.uniforms["ConstantColor"] = scene::uniform(color);
		out.objects.push_back(scene::makeRenderObject(std::move(o)));
		for (const math::V3f& p : m.positions)
			out.bounds.extend(model.transformPos(math::V3d(p)));
		out.triangles += m.triangleCount();
	}
	return out;
}

} // namespace quokka::app
