// The shared inputs layer on the CPU: index scans, the reading and checking of an object's inputs (attributes, index
// views, draw reach, pipeline-state leaves), and the standard derived uniforms — the one table of names, the plan of
// an effect's names, and the CPU values against the arithmetic they stand for.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <quokka/adaptive/core.hpp>
#include <quokka/fx/standard_uniforms.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>

namespace quokka::inputs::test
{
namespace
{

using scene::UniformValue;
using Trafo = math::Trafo3d;

// maxIndex decides how many vertices an indexed draw reads (both paths validate with it): each vectorised scan (SSE2,
// and SSE4.1 where the CPU has it) must agree with a plain loop for every length (every tail, one or two vectors
// unrolled), for values with the top bit set (the SSE2 scan compares biased values) and at unaligned addresses.
TEST(ObjectInputs, MaxIndexAgreesWithAScalarScanForEveryLengthAndOffset)
{
	std::mt19937 rng(5);
	std::vector<IndexScan> scans{IndexScan::Portable};
	if (indexScanSupported(IndexScan::Sse41))
		scans.push_back(IndexScan::Sse41);
	else
		std::printf("this CPU has no SSE4.1: only the portable index scan is tested\n");
	for (const IndexScan scan : scans)
		for (const bool u16 : {true, false})
			for (uint32_t count = 0; count <= 80; ++count)
				for (uint32_t shift = 0; shift < 4; ++shift)
					for (int round = 0; round < 8; ++round)
					{
						const uint32_t size = u16 ? 2 : 4;
						std::vector<std::byte> bytes(size_t(count + 2) * size + 4);
						uint32_t expected = 0;
						for (uint32_t k = 0; k < count; ++k)
						{
							// Half the rounds draw full-range values (top bit set), half small ones.
							uint32_t v = round % 2 ? uint32_t(rng()) : uint32_t(rng() % 1000);
							if (u16)
								v &= 0xffffu;
							expected = std::max(expected, v);
							std::memcpy(bytes.data() + shift + size_t(k) * size, &v, size);
						}
						EXPECT_EQ(maxIndexWith(scan, bytes.data() + shift, u16, count), expected)
						    << (scan == IndexScan::Sse41 ? "sse4.1 " : "portable ") << (u16 ? "u16" : "u32")
						    << " count " << count << " shift " << shift;
						if (scan == scans.back())
						{
							EXPECT_EQ(maxIndex(bytes.data() + shift, u16, count), expected);
						}
					}
	// The extremes: the top value inside a SIMD step with a smaller top-bit value in the scalar tail, and a lone value.
	const uint32_t top32[5] = {1, 2, 0xffffffffu, 3, 0x80000000u};
	EXPECT_EQ(maxIndex(reinterpret_cast<const std::byte*>(top32), false, 5), 0xffffffffu);
	const uint16_t top16[9] = {0x8000, 0xffff, 1, 2, 3, 4, 5, 6, 0x7fff};
	EXPECT_EQ(maxIndex(reinterpret_cast<const std::byte*>(top16), true, 9), 0xffffu);
	EXPECT_EQ(maxIndex(reinterpret_cast<const std::byte*>(top16), true, 1), 0x8000u);
}

// A UniformPlan resolves every name to the very node resolving by name gives (derived values are interned, so equal
// nodes mean equal values and shared work), for objects with all, some or none of the trafos, objects that define
// derived names themselves, and objects with many more uniforms than the plan (the lookup branch instead of the merge
// walk). With `pooled`, NormalMatrix and ModelTrafoInv the object lacks become a recipe over its ModelTrafo node.
TEST(ObjectInputs, UniformPlanResolvesEveryNameAsResolvingByNameDoes)
{
	const std::vector<std::string> names = {
	    "ModelTrafo",    "ViewTrafo",      "ProjTrafo",     "ViewProjTrafo",         "ModelViewTrafo",
	    "ModelTrafoInv", "ViewTrafoInv",   "ProjTrafoInv",  "ViewProjTrafoInv",      "ModelViewTrafoInv",
	    "NormalMatrix",  "CameraLocation", "LightLocation", "ModelViewProjTrafoInv", "ModelViewProjTrafo",
	    "ConstantColor"};
	const UniformPlan plan(names);
	ASSERT_EQ(plan.size(), names.size());
	const auto model = scene::uniform(Trafo::translation({1.0, 2.0, 3.0}));
	const auto view = scene::uniform(Trafo::rotation({0.0, 1.0, 0.0}, 0.25));
	const auto proj = scene::uniform(Trafo::scale({2.0, 3.0, 0.5}));
	std::vector<scene::RenderObject> objects(5);
	for (scene::RenderObject& o : objects)
		o.uniforms["ConstantColor"] = scene::uniform(math::V4f(1.0f));
	objects[0].uniforms["ModelTrafo"] = model;
	objects[0].uniforms["ViewTrafo"] = view;
	objects[0].uniforms["ProjTrafo"] = proj;
	objects[1].uniforms["ModelTrafo"] = model; // view and proj: identity
	objects[2].uniforms["ViewTrafo"] = view;   // no ModelTrafo
	objects[3] = objects[0];                   // defines derived names itself
	objects[3].uniforms["NormalMatrix"] = scene::uniform(math::V4f(7.0f));
	objects[3].uniforms["ModelViewProjTrafo"] = proj;
	objects[4] = objects[0]; // far more uniforms than the plan names
	for (int i = 0; i < 60; ++i)
		objects[4].uniforms["Extra" + std::to_string(i)] = scene::uniform(float(i));
	DerivedUniforms derived;
	for (size_t k = 0; k < objects.size(); ++k)
	{
		const scene::RenderObject& o = objects[k];
		std::vector<adaptive::aval<UniformValue>> out(names.size()), pooled_out(names.size());
		std::vector<DerivedRecipe> recipes(names.size(), DerivedRecipe::Inverse);
		ASSERT_TRUE(derived.resolve(o, plan, out).ok()) << k;
		ASSERT_TRUE(derived.resolve(o, plan, pooled_out, recipes).ok()) << k;
		auto model_node = derived.resolve(o, "ModelTrafo");
		ASSERT_TRUE(model_node.ok());
		for (size_t i = 0; i < names.size(); ++i)
		{
			auto by_name = derived.resolve(o, names[i]);
			ASSERT_TRUE(by_name.ok()) << k << " " << names[i];
			EXPECT_EQ(out[i].node().get(), by_name->node().get()) << "object " << k << ": " << names[i];
			const bool own = o.uniforms.count(names[i]) != 0;
			const DerivedRecipe expected = own                           ? DerivedRecipe::None
			                               : names[i] == "NormalMatrix"  ? DerivedRecipe::NormalMatrix
			                               : names[i] == "ModelTrafoInv" ? DerivedRecipe::Inverse
			                                                             : DerivedRecipe::None;
			EXPECT_EQ(recipes[i], expected) << "object " << k << ": " << names[i];
			EXPECT_EQ(pooled_out[i].node().get(),
			          (expected == DerivedRecipe::None ? *by_name : *model_node).node().get())
			    << "object " << k << ": " << names[i];
		}
	}
	// The values themselves, for the object with all three trafos: ModelViewProj = Proj · View · Model.
	std::vector<adaptive::aval<UniformValue>> out(names.size());
	ASSERT_TRUE(derived.resolve(objects[0], plan, out).ok());
	const math::M44d expected =
	    (Trafo::scale({2.0, 3.0, 0.5}) * Trafo::rotation({0.0, 1.0, 0.0}, 0.25) * Trafo::translation({1.0, 2.0, 3.0}))
	        .forward;
	// (Derived values are the rule's double result narrowed once, as the shaders read them.)
	const UniformValue mvp = out[14].force();
	ASSERT_TRUE(std::holds_alternative<math::M44f>(mvp));
	EXPECT_EQ(std::get<math::M44f>(mvp), math::toFloat(expected));
	// A name without a standard meaning that the object lacks is an error naming it; defining it resolves.
	const std::vector<std::string> custom = {"ModelTrafo", "Tint"};
	const UniformPlan custom_plan(custom);
	std::vector<adaptive::aval<UniformValue>> two(2);
	const Result<void> missing = derived.resolve(objects[0], custom_plan, two);
	ASSERT_FALSE(missing.ok());
	EXPECT_NE(missing.error().message.find("'Tint'"), std::string::npos) << missing.error().message;
	objects[1].uniforms["Tint"] = scene::uniform(0.5f);
	ASSERT_TRUE(derived.resolve(objects[1], custom_plan, two).ok());
	EXPECT_EQ(two[1].node().get(), objects[1].uniforms["Tint"].node().get());
}

// elementsIn counts whole elements only: the last one must fit entirely; nothing fits before the offset or for a
// format without a size.
TEST(ObjectInputs, ElementsInCountsWholeElementsFromTheOffset)
{
	EXPECT_EQ(elementsIn(48, 0, 12, 12), 4u);
	EXPECT_EQ(elementsIn(47, 0, 12, 12), 3u);
	EXPECT_EQ(elementsIn(48, 4, 12, 12), 3u);
	EXPECT_EQ(elementsIn(60, 0, 12, 16), 4u) << "the last element needs its 12 bytes, not a whole stride";
	EXPECT_EQ(elementsIn(59, 0, 12, 16), 3u);
	EXPECT_EQ(elementsIn(11, 0, 12, 12), 0u);
	EXPECT_EQ(elementsIn(12, 4, 12, 12), 0u);
	EXPECT_EQ(elementsIn(100, 0, 0, 12), 0u);
	scene::BufferView view;
	view.format = VK_FORMAT_R32G32B32_SFLOAT;
	view.offset = 8;
	EXPECT_EQ(viewElements(view, fx::V3f, 8 + 5 * 12), 5u);
	view.stride = 32;
	EXPECT_EQ(viewElements(view, fx::V3f, 8 + 4 * 32 + 12), 5u);
	view.format = VK_FORMAT_R32G32B32A32_SFLOAT;
	view.stride = 0;
	EXPECT_EQ(viewElements(view, fx::M44f, 8 + 2 * 64), 2u) << "a matrix reads one column per location";
}

scene::RenderObject indexedObject(const std::vector<uint16_t>& indices, uint32_t offset = 0)
{
	scene::RenderObject o;
	o.id = 7;
	scene::BufferView view;
	std::vector<uint16_t> padded(offset / 2, 0);
	padded.insert(padded.end(), indices.begin(), indices.end());
	view.buffer = adaptive::constant(scene::ArrayBuffer::of(padded));
	view.format = VK_FORMAT_R16_UINT;
	view.offset = offset;
	o.indices = view;
	return o;
}

// A draw's reach: first + count vertices when not indexed, the largest index read plus base vertex plus one when
// indexed (only the indices the draw reads count), first instance + instance count; nothing when it draws nothing.
TEST(ObjectInputs, DrawReachIsTheLargestIndexReadPlusBaseVertex)
{
	const scene::RenderObject o = indexedObject({0, 9, 2, 40, 3}, 4);
	const scene::ArrayBuffer bytes = o.indices->buffer.force();
	scene::DrawCall d{
	    .indexed = true, .count = 3, .instance_count = 2, .first = 0, .base_vertex = 0, .first_instance = 5};
	auto r = drawReach(o, d, &bytes);
	ASSERT_TRUE(r.ok()) << r.error().message;
	EXPECT_EQ(r->vertices, 10u);
	EXPECT_EQ(r->instances, 7u);
	d.first = 2; // indices 2, 40, 3
	d.base_vertex = -2;
	r = drawReach(o, d, &bytes);
	ASSERT_TRUE(r.ok()) << r.error().message;
	EXPECT_EQ(r->vertices, 39u);
	d.indexed = false;
	r = drawReach(o, d, &bytes);
	ASSERT_TRUE(r.ok());
	EXPECT_EQ(r->vertices, 5u);
	d.count = 0;
	r = drawReach(o, d, &bytes);
	ASSERT_TRUE(r.ok());
	EXPECT_EQ(r->vertices, 0u);
	EXPECT_EQ(r->instances, 0u);
}

TEST(ObjectInputs, DrawReachRefusesIndexedDrawsItCannotServe)
{
	const scene::RenderObject o = indexedObject({0, 1, 2, 3}, 2);
	const scene::ArrayBuffer bytes = o.indices->buffer.force();
	auto message = [&](const scene::RenderObject& obj, scene::DrawCall d, const scene::ArrayBuffer* b)
	{
		auto r = drawReach(obj, d, b);
		return r.ok() ? std::string("ok") : r.error().message;
	};
	scene::DrawCall d{.indexed = true, .count = 5};
	EXPECT_EQ(message(o, d, &bytes), "render object #7: the draw reads indices up to 5 of 4");
	d = {.indexed = true, .count = 2, .first = 2};
	EXPECT_EQ(message(o, d, &bytes), "ok");
	d.base_vertex = -4; // indices 2 and 3: the largest, 3, becomes -1
	EXPECT_EQ(message(o, d, &bytes), "render object #7: base vertex -4 makes indices negative");
	scene::RenderObject plain;
	plain.id = 8;
	EXPECT_EQ(message(plain, {.indexed = true, .count = 3}, nullptr),
	          "render object #8: the draw call is indexed but the object has no index buffer");
}

TEST(ObjectInputs, AttributeReachNamesTheAttributeAndBothCounts)
{
	scene::RenderObject o;
	o.id = 3;
	scene::BufferView per_vertex, per_instance;
	per_instance.per_instance = true;
	const DrawReach reach{6, 2};
	EXPECT_TRUE(checkAttributeReach(o, "Positions", per_vertex, 6, reach).ok());
	auto r = checkAttributeReach(o, "Positions", per_vertex, 5, reach);
	ASSERT_FALSE(r.ok());
	EXPECT_EQ(r.error().message,
	          "render object #3: attribute 'Positions' holds 5 elements but the draw reads 6 vertices");
	EXPECT_TRUE(checkAttributeReach(o, "Offsets", per_instance, 2, reach).ok());
	r = checkAttributeReach(o, "Offsets", per_instance, 1, reach);
	ASSERT_FALSE(r.ok());
	EXPECT_EQ(r.error().message,
	          "render object #3: attribute 'Offsets' holds 1 elements but the draw reads 2 instances");
	EXPECT_TRUE(checkAttributeReach(o, "Positions", per_vertex, 0, DrawReach{}).ok())
	    << "a draw of nothing reads nothing";
}

TEST(ObjectInputs, AttributeViewsAndIndexViewsAreCheckedWithTheObjectNamed)
{
	scene::RenderObject o;
	o.id = 11;
	scene::BufferView colors;
	colors.format = VK_FORMAT_R8G8B8A8_UNORM;
	o.attributes["Colors"] = colors;
	scene::BufferView ids;
	ids.format = VK_FORMAT_R32_UINT;
	o.attributes["Ids"] = ids;
	auto view = attributeView(o, {"Colors", fx::V4f, 0});
	ASSERT_TRUE(view.ok());
	EXPECT_EQ(*view, &o.attributes["Colors"]);
	auto missing = attributeView(o, {"Normals", fx::V3f, 1});
	ASSERT_FALSE(missing.ok());
	EXPECT_EQ(missing.error().message,
	          "render object #11: effect needs the vertex attribute 'Normals' (V3f), which the object does not have");
	auto wrong = attributeView(o, {"Ids", fx::V4f, 2});
	ASSERT_FALSE(wrong.ok());
	EXPECT_EQ(wrong.error().message, "render object #11: attribute 'Ids' has a format that cannot feed a V4f input");
	EXPECT_TRUE(checkIndexView(o).ok()) << "no index view: nothing to check";
	o = indexedObject({0, 1, 2}, 2);
	EXPECT_TRUE(checkIndexView(o).ok());
	o.indices->format = VK_FORMAT_R32_UINT; // offset 2 is not a multiple of 4
	EXPECT_EQ(checkIndexView(o).error().message,
	          "render object #7: the index offset must be a multiple of the index size");
	o.indices->format = VK_FORMAT_R8_UINT;
	EXPECT_EQ(checkIndexView(o).error().message, "render object #7: indices must be R16_UINT or R32_UINT");
}

// Every pipeline-state leaf is visited once, blends per attachment included (a renderer tracks them as inputs).
TEST(ObjectInputs, EveryPipelineStateLeafIsVisited)
{
	scene::PipelineState state;
	state.blend["Colors"] = adaptive::constant(scene::BlendState{});
	state.blend["Normals"] = adaptive::constant(scene::BlendState{});
	std::vector<const adaptive::AdaptiveObject*> seen;
	forEachStateLeaf(state, [&](const adaptive::AdaptiveObject* leaf) { seen.push_back(leaf); });
	EXPECT_EQ(seen.size(), 11u + 2u);
	EXPECT_TRUE(std::find(seen.begin(), seen.end(), state.topology.node().get()) != seen.end());
	EXPECT_TRUE(std::find(seen.begin(), seen.end(), state.blend["Normals"].node().get()) != seen.end());
}

// One table names the standard uniforms for the CPU derivation and the shader rewrite: every derived entry's GLSL
// reads only standard names it lists, those inputs exist in the table, and the CPU derivation knows every name.
TEST(StandardUniforms, OneTableServesTheCpuAndTheShaderDerivation)
{
	size_t inputs_only = 0;
	DerivedUniforms derived;
	scene::RenderObject o;
	o.uniforms["ModelTrafo"] = scene::uniform(Trafo::translation({1.0, 0.0, 0.0}));
	for (const fx::StandardUniform& u : fx::standardUniforms())
	{
		EXPECT_EQ(fx::standardUniform(u.name), &u);
		if (u.glsl.empty())
		{
			++inputs_only;
			continue;
		}
		for (std::string_view input : u.inputs)
			if (!input.empty())
			{
				EXPECT_NE(fx::standardUniform(input), nullptr) << u.name << " reads " << input;
				EXPECT_NE(u.glsl.find(input), std::string_view::npos) << u.name;
			}
		EXPECT_TRUE(derived.resolve(o, std::string(u.name)).ok()) << u.name;
	}
	EXPECT_EQ(inputs_only, 3u) << "ModelTrafo, ViewTrafo and ProjTrafo are the inputs";
	EXPECT_EQ(fx::standardUniform("Tint"), nullptr);
	EXPECT_FALSE(derived.resolve(o, "Tint").ok());
	// The CPU values agree with the table's meaning: ModelTrafoInv is the inverse, CameraLocation the eye.
	const auto inv = derived.resolve(o, "ModelTrafoInv")->force();
	EXPECT_EQ(std::get<math::M44f>(inv), math::toFloat(Trafo::translation({-1.0, 0.0, 0.0}).forward));
	o.uniforms["ViewTrafo"] = scene::uniform(Trafo::translation({0.0, 0.0, -5.0}));
	const auto eye = derived.resolve(o, "CameraLocation")->force();
	EXPECT_EQ(std::get<math::V3f>(eye), math::V3f(0.0f, 0.0f, 5.0f));
	EXPECT_EQ(derived.resolve(o, "LightLocation")->force(), eye) << "the light sits at the camera unless supplied";
}

} // namespace
} // namespace quokka::inputs::test
