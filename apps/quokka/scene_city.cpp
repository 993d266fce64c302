// scene_city.cpp — the seeded `city` scene: a street grid of lit, textured and mirrored buildings, vertex-coloured
// street props and instanced rows of trees on a textured ground plane (y up, metres).
//
// Of N objects: 1 ground plane, N/100 tree rows (one instanced draw each, 8–64 trees with a per-instance
// InstanceTrafo), N/20 mirrored buildings, 15 % textured facades, 24 % props and the rest plain lit buildings (each
// kind at least one, so tiny N give a few more than N objects). Buildings stand on 12 m lots in blocks of 4 × 4 lots
// with 10 m streets between blocks; props and trees line the streets. Meshes are shared the way a real city shares
// them: a handful of unit building meshes scaled by their ModelTrafo, 3 facade meshes, 10 prop meshes and 2 tree
// meshes serve every object, and the 3 textures are shared too. Closed meshes are drawn with back-face culling;
// mirrored objects (negative determinant) flip their front face to clockwise so they still show their outsides.
// Index formats are mixed on purpose: u16 (boxes, L-shapes, bins, trees), u32 (cylinder towers, lamps), and
// non-indexed (cars, benches, the ground).
#include "scene_mesh.hpp"
#include "scenes.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include <quokka/fx/stock.hpp>

namespace quokka::app
{

namespace
{

using math::Trafo3d;
using math::V3d;
using math::V3f;
using math::V4f;
using mesh::box;
using mesh::IndexKind;
using mesh::Mesh;
using mesh::SharedMesh;

constexpr uint32_t kMaxObjects = 10'000'000;
constexpr double kLot = 12.0;                             // lot pitch; footprints are 6–10 m
constexpr uint32_t kLotsPerBlock = 4;                     // a block is 4 × 4 lots
constexpr double kStreet = 10.0;                          // street width between blocks
constexpr double kBlock = kLot * kLotsPerBlock + kStreet; // 58 m block pitch
constexpr double kHalfPi = std::numbers::pi / 2.0;

enum class Kind : uint8_t
{
	Building,
	Mirrored,
	Textured,
};

scene::TextureData texture(uint32_t size, auto&& pixel)
{
	auto rgba = std::make_shared<std::vector<uint8_t>>(size_t(size) * size * 4);
	for (uint32_t y = 0; y < size; ++y)
		for (uint32_t x = 0; x < size; ++x)
		{
			const std::array<uint8_t, 4> p = pixel(x, y);
			std::copy(p.begin(), p.end(), rgba->begin() + (size_t(y) * size + x) * 4);
		}
	return scene::TextureData{size, size, std::move(rgba), true};
}

// One window per 64 × 64 tile: a wall border around a glass pane with a sill.
scene::TextureData facade(std::array<uint8_t, 4> wall, std::array<uint8_t, 4> glass)
{
	return texture(64,
	               [&](uint32_t x, uint32_t y) -> std::array<uint8_t, 4>
	               {
		               const bool pane = x >= 12 && x < 52 && y >= 10 && y < 46;
		               const bool sill = x >= 10 && x < 54 && y >= 46 && y < 50;
		               if (sill)
			               return {uint8_t(wall[0] / 2), uint8_t(wall[1] / 2), uint8_t(wall[2] / 2), 255};
		               return pane ? glass : wall;
	               });
}

struct City
{
	const SceneGlobals& globals;
	mesh::Rng rng;
	std::map<std::string, adaptive::aval<scene::UniformValue>> shared_uniforms;
	fx::Effect lit, textured, colored, instanced;
	scene::PipelineState closed, mirrored, open;
	std::vector<SharedMesh> buildings; // box, setback, cylinder tower, L-shape (unit footprint, height 1)
	std::vector<SharedMesh> facades;   // low, mid, high textured boxes
	std::vector<SharedMesh> props;     // 6 cars, lamp, bench, bin, hydrant
	std::vector<SharedMesh> trees;     // conifer, broadleaf
	SharedMesh ground;
	adaptive::aval<scene::TextureData> checker, office, brick;
	uint32_t blocks = 1; // per side
	uint32_t props_made = 0;
	double origin = 0.0; // world x/z of the grid's corner
	GeneratedScene out;

	City(const SceneGlobals& g, uint64_t seed) : globals(g), rng(seed), shared_uniforms(g.uniforms()) {}

	Result<void> makeEffects();
	Result<void> makeMeshes();
	void add(const SharedMesh& m, const fx::Effect& effect, const scene::PipelineState& state, const Trafo3d& model,
	         const V4f* color, bool colors, const adaptive::aval<scene::TextureData>* tex);
	void structure(Kind kind, double x, double z);
	void prop();
	void treeRow();
	/// Street length: the streets span the whole grid of blocks.
	double streetLength() const { return double(blocks) * kBlock; }
	/// A random place on a street for something `extent` metres long (≤ streetLength()): x along the street, z across
	/// it (`side_offset` to the left or right of the centre line), y up.
	Trafo3d streetFrame(double side_offset, double extent);
};

Result<void> City::makeEffects()
{
	using namespace fx::stock;
	auto a = fx::compose("city lit", trafo(), constantColor(), simpleLighting());
	auto b = fx::compose("city textured", trafo(), constantColor(), diffuseTexture(), simpleLighting());
	auto c = fx::compose("city vertex colours", trafo(), vertexColors(), simpleLighting());
	auto d = fx::compose("city instanced", instanceTrafo(), trafo(), vertexColors(), simpleLighting());
	for (const auto* r : {&a, &b, &c, &d})
		if (!r->ok())
			return r->error();
	lit = a.value();
	textured = b.value();
	colored = c.value();
	instanced = d.value();
	closed.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
	mirrored = closed;
	mirrored.front_face = adaptive::constant(VK_FRONT_FACE_CLOCKWISE);
	return {};
}

Result<void> City::makeMeshes()
{
	const auto keep = [](Result<SharedMesh> r, std::vector<SharedMesh>& into) -> Result<void>
	{
		if (!r.ok())
			return r.error();
		into.push_back(std::move(r.value()));
		return {};
	};
	// Unit buildings: footprint [-½, ½]², height 1, scaled per object. The L-shape is chiral (its wing is lower and
	// shorter than its main arm), so a mirrored one differs from every rotation of the original.
	Mesh setback = box({-0.5f, 0, -0.5f}, {0.5f, 0.7f, 0.5f});
	setback.append(box({-0.3f, 0.7f, -0.3f}, {0.3f, 1, 0.3f}));
	Mesh l_shape = box({-0.5f, 0, -0.5f}, {0.5f, 1, -0.1f});
	l_shape.append(box({-0.5f, 0, -0.1f}, {-0.1f, 0.6f, 0.5f}));
	QUOKKA_TRY(keep(mesh::share(box({-0.5f, 0, -0.5f}, {0.5f, 1, 0.5f}), IndexKind::U16), buildings));
	QUOKKA_TRY(keep(mesh::share(setback, IndexKind::U16), buildings));
	QUOKKA_TRY(keep(mesh::share(mesh::cylinder(16, 0.5f, 0, 1), IndexKind::U32), buildings));
	QUOKKA_TRY(keep(mesh::share(l_shape, IndexKind::U16), buildings));
	// Facades: unit footprint at their final height (so the window grid keeps its proportions): 3 windows across,
	// one storey per 3.5 m.
	for (float storeys : {3.0f, 8.0f, 20.0f})
		QUOKKA_TRY(keep(
		    mesh::share(box({-0.5f, 0, -0.5f}, {0.5f, storeys * 3.5f, 0.5f}, 3.0f, storeys), IndexKind::U16), facades));
	// Props, vertex-coloured: cars (body + cabin) in 6 paints, non-indexed.
	for (uint32_t i = 0; i < 6; ++i)
	{
		Mesh car = box({-2.1f, 0.3f, -0.9f}, {2.1f, 1.0f, 0.9f}).paint(mesh::hsv(float(i) / 6.0f, 0.8f, 0.85f));
		car.append(box({-1.1f, 1.0f, -0.8f}, {1.0f, 1.5f, 0.8f}).paint({0.15f, 0.2f, 0.25f, 1.0f}));
		car.uvs.clear();
		QUOKKA_TRY(keep(mesh::share(car, IndexKind::None), props));
	}
	Mesh lamp = mesh::cylinder(8, 0.08f, 0, 5).paint({0.3f, 0.3f, 0.32f, 1});
	Mesh head = box({-0.3f, 5, -0.2f}, {0.3f, 5.25f, 0.2f}).paint({1.0f, 0.95f, 0.7f, 1});
	head.uvs.clear();
	QUOKKA_TRY(keep(mesh::share(lamp.append(head), IndexKind::U32), props));
	Mesh bench = box({-0.9f, 0.4f, -0.25f}, {0.9f, 0.5f, 0.25f});
	bench.append(box({-0.8f, 0, -0.2f}, {-0.7f, 0.4f, 0.2f})).append(box({0.7f, 0, -0.2f}, {0.8f, 0.4f, 0.2f}));
	bench.uvs.clear();
	QUOKKA_TRY(keep(mesh::share(bench.paint({0.45f, 0.3f, 0.15f, 1}), IndexKind::None), props));
	QUOKKA_TRY(
	    keep(mesh::share(mesh::cylinder(8, 0.3f, 0, 0.9f).paint({0.1f, 0.35f, 0.15f, 1}), IndexKind::U16), props));
	Mesh hydrant = mesh::cylinder(6, 0.15f, 0, 0.6f);
	hydrant.append(mesh::cone(6, 0.18f, 0.6f, 0.8f));
	QUOKKA_TRY(keep(mesh::share(hydrant.paint({0.8f, 0.1f, 0.1f, 1}), IndexKind::U16), props));
	// Trees: a trunk and a crown, u16.
	Mesh conifer = mesh::cylinder(6, 0.15f, 0, 1.5f).paint({0.4f, 0.26f, 0.13f, 1});
	conifer.append(mesh::cone(10, 1.4f, 1.2f, 6.0f).paint({0.1f, 0.4f, 0.15f, 1}));
	Mesh broadleaf = mesh::cylinder(6, 0.2f, 0, 2.5f).paint({0.4f, 0.26f, 0.13f, 1});
	broadleaf.append(mesh::cone(10, 1.8f, 2.0f, 4.5f).paint({0.25f, 0.55f, 0.2f, 1}));
	broadleaf.append(mesh::cone(10, 1.8f, 2.0f, 1.2f).paint({0.25f, 0.55f, 0.2f, 1}));
	QUOKKA_TRY(keep(mesh::share(conifer, IndexKind::U16), trees));
	QUOKKA_TRY(keep(mesh::share(broadleaf, IndexKind::U16), trees));
	// Textures: a ground checker of 2 m asphalt cells (one 64 px repeat per 4 m) and two facades.
	checker = adaptive::constant(texture(64,
	                                     [](uint32_t x, uint32_t y) -> std::array<uint8_t, 4>
	                                     {
		                                     const uint8_t v = ((x / 32) ^ (y / 32)) & 1 ? 96 : 112;
		                                     return {v, v, uint8_t(v + 4), 255};
	                                     }));
	office = adaptive::constant(facade({200, 200, 195, 255}, {70, 110, 150, 255}));
	brick = adaptive::constant(facade({150, 70, 50, 255}, {40, 45, 55, 255}));
	return {};
}

void City::add(const SharedMesh& m, const fx::Effect& effect, const scene::PipelineState& state, const Trafo3d& model,
               const V4f* color, bool colors, const adaptive::aval<scene::TextureData>* tex)
{
	scene::RenderObject o;
	o.effect = effect;
	o.state = state;
	mesh::attach(m, o, colors, tex != nullptr);
	o.uniforms = shared_uniforms;
	o.uniforms["ModelTrafo"] = scene::uniform(model);
	if (color)
		o.uniforms["ConstantColor"] = scene::uniform(*color);
	if (tex)
		o.textures["DiffuseColorTexture"] = *tex;
	out.objects.push_back(scene::makeRenderObject(std::move(o)));
	out.bounds.extend(m.bounds.transformed(model));
	out.triangles += m.triangles;
}

void City::structure(Kind kind, double x, double z)
{
	const double w = double(rng.range(6.0f, 10.0f)), d = double(rng.range(6.0f, 10.0f));
	const double turn = kHalfPi * double(rng.between(0, 3));
	const Trafo3d place = Trafo3d::translation({x, 0.0, z}) * Trafo3d::rotation({0, 1, 0}, turn);
	if (kind == Kind::Textured)
	{
		const uint32_t variant = rng.between(0, 2);
		const V4f tint(rng.range(0.85f, 1.0f), rng.range(0.85f, 1.0f), rng.range(0.85f, 1.0f), 1.0f);
		add(facades[variant], textured, closed, place * Trafo3d::scale(V3d(w, 1.0, d)), &tint, false,
		    rng.chance(0.5f) ? &office : &brick);
		return;
	}
	// Lit buildings: 55 % boxes, 20 % setbacks, 10 % cylinder towers, 15 % L-shapes; mirrored ones are L-shapes
	// (75 %) or setbacks mirrored in x.
	const float pick = rng.unit();
	const uint32_t variant = kind == Kind::Mirrored ? (pick < 0.75f ? 3u : 1u)
	                         : pick < 0.55f         ? 0u
	                         : pick < 0.75f         ? 1u
	                         : pick < 0.85f         ? 2u
	                                                : 3u;
	const double h = rng.chance(0.1f) ? double(rng.range(40.0f, 120.0f)) : double(rng.range(8.0f, 40.0f));
	const V4f color = mesh::hsv(rng.range(0.05f, 0.15f), rng.range(0.05f, 0.3f), rng.range(0.5f, 0.9f));
	const double sx = kind == Kind::Mirrored ? -w : w;
	add(buildings[variant], lit, kind == Kind::Mirrored ? mirrored : closed, place * Trafo3d::scale(V3d(sx, h, d)),
	    &color, false, nullptr);
}

Trafo3d City::streetFrame(double side_offset, double extent)
{
	// Street centre lines run at origin + b·kBlock − kStreet/2 for b = 0…blocks, in x or in z; along them from the
	// first to the last crossing.
	const double line = origin + double(rng.between(0, blocks)) * kBlock - 0.5 * kStreet;
	const double start = origin - 0.5 * kStreet + double(rng.unit()) * std::max(streetLength() - extent, 0.0);
	const bool along_z = rng.chance(0.5f);
	const double side = rng.chance(0.5f) ? side_offset : -side_offset;
	// Local frame: x along the street, z across it (side of the street), y up.
	if (along_z)
		return Trafo3d::translation({line + side, 0.0, start}) * Trafo3d::rotation({0, 1, 0}, -kHalfPi);
	return Trafo3d::translation({start, 0.0, line + side});
}

void City::prop()
{
	const float pick = rng.unit();
	// 40 % cars (on the road), 25 % lamps, 15 % benches, 10 % bins, 10 % hydrants (on the sidewalk).
	const uint32_t variant = pick < 0.4f    ? rng.between(0, 5)
	                         : pick < 0.65f ? 6u
	                         : pick < 0.8f  ? 7u
	                         : pick < 0.9f  ? 8u
	                                        : 9u;
	const Trafo3d frame = streetFrame(variant < 6 ? 2.5 : 4.2, 5.0);
	const Trafo3d facing = Trafo3d::rotation({0, 1, 0}, rng.chance(0.5f) ? 0.0 : std::numbers::pi);
	// Props are placed independently, so two may overlap; identical meshes would then have coplanar faces, and which
	// one shows where their depths are exactly equal would depend on the draw order — which the classic and heap
	// paths are free to choose differently for an unordered set (1–2 pixels of the 20,000-object city differed).
	// Each prop is lifted and shifted across the street by a few centimetres of its own, so overlapping props meet at
	// depths that differ by more than the depth buffer resolves at the city's distances.
	const uint32_t k = props_made++;
	const Trafo3d apart = Trafo3d::translation({0.0, 0.02 * double(k % 16), 0.02 * double((k / 16) % 16)});
	add(props[variant], colored, closed, frame * apart * facing, nullptr, true, nullptr);
}

void City::treeRow()
{
	// 8–64 trees 7 m apart, at most as many as fit on a street (8 on the 58 m streets of a one-block city).
	constexpr double kSpacing = 7.0;
	const uint32_t fit = std::max(2u, uint32_t(streetLength() / kSpacing));
	const uint32_t count = std::min(rng.between(8, 64), fit);
	const Trafo3d frame = streetFrame(4.6, kSpacing * double(count - 1));
	const SharedMesh& tree = trees[rng.between(0, 1)];
	std::vector<math::M44f> instances;
	instances.reserve(count);
	for (uint32_t i = 0; i < count; ++i)
	{
		// Rotation about y and uniform scale only: stock::instanceTrafo transforms normals by the upper 3×3.
		const Trafo3d t = Trafo3d::translation({kSpacing * double(i) + double(rng.range(-1.0f, 1.0f)), 0.0, 0.0}) *
		                  Trafo3d::rotation({0, 1, 0}, double(rng.unit()) * 2.0 * std::numbers::pi) *
		                  Trafo3d::scale(double(rng.range(0.8f, 1.4f)));
		instances.push_back(math::toFloat(t.forward));
		out.bounds.extend(tree.bounds.transformed(frame * t));
	}
	scene::RenderObject o;
	o.effect = instanced;
	o.state = closed;
	mesh::attach(tree, o, true, false);
	scene::BufferView per_instance;
	per_instance.buffer = adaptive::constant(scene::ArrayBuffer::of(instances));
	per_instance.format = VK_FORMAT_R32G32B32A32_SFLOAT; // one column; the M44f attribute takes 4 locations
	per_instance.stride = sizeof(math::M44f);
	per_instance.per_instance = true;
	o.attributes["InstanceTrafo"] = per_instance;
	scene::DrawCall draw = tree.draw;
	draw.instance_count = count;
	o.draw_call = adaptive::constant(draw);
	o.uniforms = shared_uniforms;
	o.uniforms["ModelTrafo"] = scene::uniform(frame);
	out.objects.push_back(scene::makeRenderObject(std::move(o)));
	out.triangles += uint64_t(tree.triangles) * count;
}

} // namespace

Result<GeneratedScene> makeCityScene(const SceneGlobals& globals, uint32_t objects, uint64_t seed)
{
	if (objects == 0 || objects > kMaxObjects)
	{
		std::string message = "city scene: object count ";
		message.append(std::to_string(objects)).append(" is outside 1…10,000,000");
		return makeError(ErrorCode::InvalidArgument, std::move(message));
	}
	City city(globals, seed);
	QUOKKA_TRY(city.makeEffects());
	QUOKKA_TRY(city.makeMeshes());

	const uint64_t n = objects;
	const uint64_t trees = std::max<uint64_t>(1, n / 100), mirrored = std::max<uint64_t>(1, n / 20),
	               textured = std::max<uint64_t>(1, n * 3 / 20), props = std::max<uint64_t>(1, n * 6 / 25);
	const uint64_t fixed = 1 + trees + mirrored + textured + props;
	const uint64_t plain = n > fixed ? n - fixed : 0;

	// Lots for every structure, kinds shuffled (Fisher–Yates on our own integer draws) so that kinds mix in blocks.
	std::vector<Kind> kinds(plain, Kind::Building);
	kinds.insert(kinds.end(), mirrored, Kind::Mirrored);
	kinds.insert(kinds.end(), textured, Kind::Textured);
	for (size_t i = kinds.size() - 1; i > 0; --i)
		std::swap(kinds[i], kinds[city.rng.between(0, uint32_t(i))]);
	const uint32_t side = uint32_t(std::ceil(std::sqrt(double(kinds.size()))));
	city.blocks = (side + kLotsPerBlock - 1) / kLotsPerBlock;
	city.origin = -0.5 * double(city.blocks) * kBlock;
	city.out.objects.reserve(fixed + plain);

	// The ground: one open quad reaching 20 m past the outer streets, textured, not culled, non-indexed.
	const double half = -city.origin + 20.0;
	auto ground = mesh::share(mesh::groundQuad(float(half), 0.0f, float(half / 2.0)), IndexKind::None);
	if (!ground.ok())
		return ground.error();
	const V4f ground_tint(0.8f, 0.8f, 0.8f, 1.0f);
	city.add(ground.value(), city.textured, city.open, Trafo3d::identity(), &ground_tint, false, &city.checker);

	for (size_t k = 0; k < kinds.size(); ++k)
	{
		const uint32_t i = uint32_t(k % side), j = uint32_t(k / side);
		const auto at = [&](uint32_t lot)
		{ return city.origin + double(lot / kLotsPerBlock) * kBlock + (double(lot % kLotsPerBlock) + 0.5) * kLot; };
		city.structure(kinds[k], at(i), at(j));
	}
	for (uint64_t p = 0; p < props; ++p)
		city.prop();
	for (uint64_t t = 0; t < trees; ++t)
		city.treeRow();
	return std::move(city.out);
}

} // namespace quokka::app
