// The seeded scene generators of the CLI (grid, city): determinism per seed, object and triangle counts, world
// bounds that contain every drawn vertex, indices in range, mesh sharing and the city's mix of effects, instancing,
// mirrored trafos and textures. CPU only: the scenes are read through their avals, nothing is rendered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <set>
#include <variant>

#include <quokka/fx/stock.hpp>

#include "scenes.hpp"

namespace quokka::app::test
{

using scene::RenderObject;

const std::vector<std::byte>& bytesOf(const scene::BufferView& v)
{
	static const std::vector<std::byte> kEmpty;
	const scene::ArrayBuffer& b = v.buffer.force();
	return b.bytes ? *b.bytes : kEmpty;
}

uint32_t strideOf(const scene::BufferView& v)
{
	return v.stride ? v.stride : scene::formatSize(v.format);
}

uint32_t vertexCount(const RenderObject& o)
{
	const scene::BufferView& p = o.attributes.at("Positions");
	return uint32_t((bytesOf(p).size() - p.offset) / strideOf(p));
}

math::V3d position(const RenderObject& o, uint32_t i)
{
	const scene::BufferView& p = o.attributes.at("Positions");
	float xyz[3];
	std::memcpy(xyz, bytesOf(p).data() + p.offset + size_t(i) * strideOf(p), sizeof(xyz));
	return {xyz[0], xyz[1], xyz[2]};
}

std::vector<uint32_t> indicesOf(const RenderObject& o)
{
	std::vector<uint32_t> out;
	if (!o.indices)
		return out;
	const auto& b = bytesOf(*o.indices);
	if (o.indices->format == VK_FORMAT_R16_UINT)
	{
		for (size_t i = 0; i + 2 <= b.size(); i += 2)
		{
			uint16_t v;
			std::memcpy(&v, b.data() + i, 2);
			out.push_back(v);
		}
	}
	else
	{
		for (size_t i = 0; i + 4 <= b.size(); i += 4)
		{
			uint32_t v;
			std::memcpy(&v, b.data() + i, 4);
			out.push_back(v);
		}
	}
	return out;
}

math::Trafo3d modelOf(const RenderObject& o)
{
	return std::get<math::Trafo3d>(o.uniforms.at("ModelTrafo").force());
}

std::vector<math::M44d> instancesOf(const RenderObject& o)
{
	auto it = o.attributes.find("InstanceTrafo");
	if (it == o.attributes.end())
		return {math::M44d(1.0)};
	std::vector<math::M44d> out;
	const auto& b = bytesOf(it->second);
	for (size_t at = it->second.offset; at + sizeof(math::M44f) <= b.size(); at += strideOf(it->second))
	{
		math::M44f m;
		std::memcpy(&m, b.data() + at, sizeof(m));
		out.push_back(math::M44d(m));
	}
	return out;
}

// Everything a generated scene consists of, as bytes: buffers, draw calls, uniforms (by name), textures, effect ids
// and pipeline states. Equal seeds must give equal fingerprints.
std::vector<std::vector<std::byte>> fingerprint(const GeneratedScene& s)
{
	std::vector<std::vector<std::byte>> out;
	auto raw = [&](const void* p, size_t n)
	{
		const auto* b = static_cast<const std::byte*>(p);
		out.emplace_back(b, b + n);
	};
	for (const scene::RenderObjectPtr& o : s.objects)
	{
		raw(&o->effect.id(), sizeof(fx::Hash128));
		for (const auto& [name, view] : o->attributes)
		{
			raw(name.data(), name.size());
			out.push_back(bytesOf(view));
			const uint32_t layout[4] = {uint32_t(view.format), view.offset, view.stride, view.per_instance};
			raw(layout, sizeof(layout));
		}
		if (o->indices)
			out.push_back(bytesOf(*o->indices));
		const scene::DrawCall d = o->draw_call.force(); // field by field: the struct has padding
		const uint32_t draw[6] = {d.indexed,       d.count, d.instance_count, d.first, uint32_t(d.base_vertex),
		                          d.first_instance};
		raw(draw, sizeof(draw));
		for (const auto& [name, value] : o->uniforms)
		{
			raw(name.data(), name.size());
			std::visit([&](const auto& v) { raw(&v, sizeof(v)); }, value.force());
		}
		for (const auto& [name, tex] : o->textures)
		{
			raw(name.data(), name.size());
			const scene::TextureData& t = tex.force();
			out.emplace_back(reinterpret_cast<const std::byte*>(t.rgba8->data()),
			                 reinterpret_cast<const std::byte*>(t.rgba8->data() + t.rgba8->size()));
		}
		const uint32_t state[2] = {uint32_t(o->state.cull_mode.force()), uint32_t(o->state.front_face.force())};
		raw(state, sizeof(state));
	}
	raw(&s.bounds, sizeof(s.bounds));
	raw(&s.triangles, sizeof(s.triangles));
	return out;
}

// Checks indices against vertex counts, counts triangles, and that the bounds hold every drawn vertex (every
// instance). Returns the total number of triangles drawn.
uint64_t checkGeometry(const GeneratedScene& s)
{
	uint64_t triangles = 0;
	const math::V3d extent = s.bounds.size();
	const double eps = 1e-6 * std::max({extent.x, extent.y, extent.z, 1.0});
	for (const scene::RenderObjectPtr& o : s.objects)
	{
		const uint32_t vertices = vertexCount(*o);
		const scene::DrawCall draw = o->draw_call.force();
		EXPECT_EQ(draw.count % 3, 0u);
		EXPECT_GE(draw.instance_count, 1u);
		triangles += uint64_t(draw.count / 3) * draw.instance_count;
		EXPECT_EQ(draw.indexed, o->indices.has_value());
		if (draw.indexed)
		{
			const std::vector<uint32_t> idx = indicesOf(*o);
			EXPECT_LE(uint64_t(draw.first) + draw.count, idx.size()) << "object " << o->id;
			for (uint32_t i : idx)
			{
				if (int64_t(i) + draw.base_vertex >= int64_t(vertices))
				{
					ADD_FAILURE() << "object " << o->id << ": index " << i << " ≥ " << vertices << " vertices";
					break;
				}
			}
		}
		else
		{
			EXPECT_LE(uint64_t(draw.first) + draw.count, vertices) << "object " << o->id;
		}
		for (const auto& [name, view] : o->attributes)
		{
			if (!view.per_instance)
			{
				EXPECT_GE(bytesOf(view).size(), size_t(vertices) * strideOf(view)) << name;
			}
		}
		const math::Trafo3d model = modelOf(*o);
		for (const math::M44d& instance : instancesOf(*o))
		{
			const math::M44d m = model.forward * instance;
			for (uint32_t v = 0; v < vertices; ++v)
			{
				const math::V3d p(m * math::V4d(position(*o, v), 1.0));
				const bool inside = p.x >= s.bounds.min.x - eps && p.y >= s.bounds.min.y - eps &&
				                    p.z >= s.bounds.min.z - eps && p.x <= s.bounds.max.x + eps &&
				                    p.y <= s.bounds.max.y + eps && p.z <= s.bounds.max.z + eps;
				if (!inside)
				{
					ADD_FAILURE() << "object " << o->id << " vertex " << v << " (" << p.x << ", " << p.y << ", " << p.z
					              << ") lies outside the bounds";
					return triangles;
				}
			}
		}
	}
	return triangles;
}

// Counter-clockwise front faces: every triangle's winding normal agrees with its vertex normals (checked once per
// distinct mesh).
void checkWinding(const GeneratedScene& s)
{
	std::set<const void*> seen;
	for (const scene::RenderObjectPtr& o : s.objects)
	{
		const scene::BufferView& p = o->attributes.at("Positions");
		if (!seen.insert(p.buffer.force().bytes.get()).second)
			continue;
		const scene::BufferView& n = o->attributes.at("Normals");
		auto normal = [&](uint32_t i)
		{
			float xyz[3];
			std::memcpy(xyz, bytesOf(n).data() + n.offset + size_t(i) * strideOf(n), sizeof(xyz));
			return math::V3d(xyz[0], xyz[1], xyz[2]);
		};
		std::vector<uint32_t> idx = indicesOf(*o);
		if (idx.empty())
		{
			for (uint32_t i = 0; i < vertexCount(*o); ++i)
				idx.push_back(i);
		}
		for (size_t t = 0; t + 3 <= idx.size(); t += 3)
		{
			const math::V3d a = position(*o, idx[t]), b = position(*o, idx[t + 1]), c = position(*o, idx[t + 2]);
			const math::V3d face = glm::cross(b - a, c - a);
			const math::V3d smooth = normal(idx[t]) + normal(idx[t + 1]) + normal(idx[t + 2]);
			if (glm::dot(face, smooth) <= 0.0)
			{
				ADD_FAILURE() << "object " << o->id << " triangle " << t / 3 << " is wound against its normals";
				break;
			}
		}
	}
}

TEST(GridScene, IsDeterministicPerSeed)
{
	SceneGlobals g1, g2;
	auto a = makeGridScene(g1, 300, 42);
	auto b = makeGridScene(g2, 300, 42);
	auto c = makeGridScene(g1, 300, 43);
	ASSERT_TRUE(a.ok() && b.ok() && c.ok());
	EXPECT_TRUE(fingerprint(a.value()) == fingerprint(b.value()));
	EXPECT_FALSE(fingerprint(a.value()) == fingerprint(c.value()));
}

TEST(GridScene, HasNUniqueMeshesOf10To100Triangles)
{
	SceneGlobals globals;
	constexpr uint32_t kN = 500;
	auto scene = makeGridScene(globals, kN, 7);
	ASSERT_TRUE(scene.ok()) << scene.error().message;
	const GeneratedScene& s = scene.value();
	ASSERT_EQ(s.objects.size(), kN);
	std::set<const void*> storages;
	std::set<uint32_t> triangle_counts;
	for (const scene::RenderObjectPtr& o : s.objects)
	{
		const scene::DrawCall draw = o->draw_call.force();
		EXPECT_GE(draw.count / 3, 10u);
		EXPECT_LE(draw.count / 3, 100u);
		triangle_counts.insert(draw.count / 3);
		storages.insert(o->attributes.at("Positions").buffer.force().bytes.get());
		EXPECT_TRUE(o->attributes.count("Normals"));
		EXPECT_TRUE(std::holds_alternative<math::V4f>(o->uniforms.at("ConstantColor").force()));
		EXPECT_TRUE(o->uniforms.count("ViewTrafo") && o->uniforms.count("ProjTrafo") &&
		            o->uniforms.count("LightLocation"));
	}
	EXPECT_EQ(storages.size(), size_t(kN)) << "every object has its own mesh";
	EXPECT_GT(triangle_counts.size(), 20u) << "triangle counts vary";
	EXPECT_EQ(checkGeometry(s), s.triangles);
	checkWinding(s);
}

TEST(GridScene, SingleObjectAndInvalidCounts)
{
	SceneGlobals globals;
	auto one = makeGridScene(globals, 1, 0);
	ASSERT_TRUE(one.ok());
	EXPECT_EQ(one->objects.size(), 1u);
	EXPECT_EQ(checkGeometry(one.value()), one->triangles);
	for (uint32_t bad : {0u, 10'000'001u})
	{
		auto grid = makeGridScene(globals, bad, 1);
		auto city = makeCityScene(globals, bad, 1);
		ASSERT_FALSE(grid.ok());
		ASSERT_FALSE(city.ok());
		for (const Error& e : {grid.error(), city.error()})
		{
			EXPECT_EQ(e.code, ErrorCode::InvalidArgument);
			EXPECT_FALSE(e.message.empty());
			EXPECT_EQ(e.message.find('\n'), std::string::npos);
		}
	}
}

TEST(CityScene, IsDeterministicPerSeed)
{
	SceneGlobals g1, g2;
	auto a = makeCityScene(g1, 1500, 42);
	auto b = makeCityScene(g2, 1500, 42);
	auto c = makeCityScene(g1, 1500, 43);
	ASSERT_TRUE(a.ok() && b.ok() && c.ok());
	EXPECT_TRUE(fingerprint(a.value()) == fingerprint(b.value()));
	EXPECT_FALSE(fingerprint(a.value()) == fingerprint(c.value()));
}

TEST(CityScene, MixesEffectsInstancingMirroringTexturesAndSharedMeshes)
{
	SceneGlobals globals;
	constexpr uint32_t kN = 2000;
	auto scene = makeCityScene(globals, kN, 3);
	ASSERT_TRUE(scene.ok()) << scene.error().message;
	const GeneratedScene& s = scene.value();
	EXPECT_EQ(s.objects.size(), size_t(kN));
	std::set<fx::Hash128> effects;
	std::set<const void*> position_storages;
	size_t instanced = 0, mirrored = 0, textured = 0, u16 = 0, u32 = 0, non_indexed = 0, unculled = 0;
	for (const scene::RenderObjectPtr& o : s.objects)
	{
		effects.insert(o->effect.id());
		position_storages.insert(o->attributes.at("Positions").buffer.force().bytes.get());
		const scene::DrawCall draw = o->draw_call.force();
		if (draw.instance_count > 1)
		{
			++instanced;
			ASSERT_TRUE(o->attributes.count("InstanceTrafo"));
			const scene::BufferView& v = o->attributes.at("InstanceTrafo");
			EXPECT_TRUE(v.per_instance);
			EXPECT_EQ(v.format, VK_FORMAT_R32G32B32A32_SFLOAT);
			EXPECT_EQ(strideOf(v), 64u);
			EXPECT_EQ(bytesOf(v).size(), size_t(64) * draw.instance_count);
		}
		const double det = modelOf(*o).det3();
		const VkFrontFace front = o->state.front_face.force();
		if (det < 0.0)
		{
			++mirrored;
			EXPECT_EQ(front, VK_FRONT_FACE_CLOCKWISE) << "object " << o->id;
		}
		else
		{
			EXPECT_EQ(front, VK_FRONT_FACE_COUNTER_CLOCKWISE) << "object " << o->id;
		}
		if (!o->textures.empty())
		{
			++textured;
			EXPECT_TRUE(o->textures.count("DiffuseColorTexture"));
			ASSERT_TRUE(o->attributes.count("DiffuseColorCoordinates"));
			EXPECT_EQ(o->attributes.at("DiffuseColorCoordinates").format, VK_FORMAT_R32G32_SFLOAT);
			const scene::TextureData& t = o->textures.at("DiffuseColorTexture").force();
			EXPECT_EQ(t.rgba8->size(), size_t(t.width) * t.height * 4);
		}
		if (!o->indices)
			++non_indexed;
		else if (o->indices->format == VK_FORMAT_R16_UINT)
			++u16;
		else
			++u32;
		if (o->state.cull_mode.force() == VK_CULL_MODE_NONE)
			++unculled;
	}
	EXPECT_GE(effects.size(), 4u);
	EXPECT_GE(instanced, kN / 100);
	EXPECT_GE(mirrored, kN / 20);
	EXPECT_GE(textured, kN / 10);
	EXPECT_GT(u16, 0u);
	EXPECT_GT(u32, 0u);
	EXPECT_GT(non_indexed, 0u);
	EXPECT_EQ(unculled, 1u) << "only the open ground plane is drawn without back-face culling";
	// Everything stands on the ground: the scene's xz extent is the ground's (the ground is object 0, untransformed).
	math::Box3d ground;
	for (uint32_t v = 0; v < vertexCount(*s.objects.front()); ++v)
		ground.extend(position(*s.objects.front(), v));
	EXPECT_EQ(s.objects.front()->state.cull_mode.force(), VkCullModeFlags(VK_CULL_MODE_NONE));
	EXPECT_GE(s.bounds.min.x, ground.min.x);
	EXPECT_GE(s.bounds.min.z, ground.min.z);
	EXPECT_LE(s.bounds.max.x, ground.max.x);
	EXPECT_LE(s.bounds.max.z, ground.max.z);
	EXPECT_EQ(s.bounds.min.y, 0.0) << "nothing below the ground";
	EXPECT_LT(position_storages.size(), size_t(kN / 50)) << "buildings, props and trees share meshes";
	EXPECT_EQ(checkGeometry(s), s.triangles);
	EXPECT_GT(s.triangles, uint64_t(kN) * 12);
	checkWinding(s);
}

TEST(CityScene, ComposesTwentyThousandObjectsAsDocumented)
{
	SceneGlobals globals;
	auto scene = makeCityScene(globals, 20'000, 1);
	ASSERT_TRUE(scene.ok()) << scene.error().message;
	const GeneratedScene& s = scene.value();
	EXPECT_EQ(s.objects.size(), 20'000u);
	// By kind: plain lit buildings, mirrored lit buildings, textured facades + the ground, props, tree rows.
	size_t lit = 0, mirrored = 0, textured = 0, colored = 0, instanced = 0;
	uint64_t trees = 0;
	for (const scene::RenderObjectPtr& o : s.objects)
	{
		const scene::DrawCall draw = o->draw_call.force();
		if (o->attributes.count("InstanceTrafo"))
		{
			++instanced;
			trees += draw.instance_count;
		}
		else if (!o->textures.empty())
			++textured;
		else if (o->attributes.count("Colors"))
			++colored;
		else if (modelOf(*o).det3() < 0.0)
			++mirrored;
		else
			++lit;
	}
	EXPECT_EQ(lit, 10'999u);
	EXPECT_EQ(mirrored, 1'000u);
	EXPECT_EQ(textured, 3'001u);
	EXPECT_EQ(colored, 4'800u);
	EXPECT_EQ(instanced, 200u);
	EXPECT_GE(trees, 200u * 8);
	EXPECT_LE(trees, 200u * 64);
	std::cout << "city 20k: " << s.triangles << " triangles, " << trees << " trees, bounds " << s.bounds.size().x
	          << " x " << s.bounds.size().y << " x " << s.bounds.size().z << " m\n";
}

TEST(CityScene, TinyCountsStillHaveEveryKind)
{
	SceneGlobals globals;
	for (uint32_t n : {1u, 2u, 7u, 100u})
	{
		auto scene = makeCityScene(globals, n, n);
		ASSERT_TRUE(scene.ok()) << scene.error().message;
		EXPECT_GE(scene->objects.size(), size_t(n));
		EXPECT_LE(scene->objects.size(), size_t(std::max(n, 5u)));
		EXPECT_EQ(checkGeometry(scene.value()), scene->triangles);
	}
}

} // namespace quokka::app::test
