// heap_pixels_test.cpp — the heap against the classic path, pixel for pixel: seeded random scenes in every strategy,
// forced across chunks, incremental edits, UNORM8 colours, compaction, textures/blending/instancing/culling,
// per-instance and scalar uniforms, draw order by id, batched additions.
#include "heap_fixture.hpp"

#include <quokka/rules/rule.hpp>

namespace quokka::heap::test
{
namespace
{

TEST_F(HeapRenderTest, RandomScenesMatchClassicInEveryStrategy)
{
	const Effects fx;
	const std::optional<uint32_t> env_seed = quokka::test::envTestSeed();
	for (uint32_t seed : env_seed ? std::vector<uint32_t>{*env_seed} : std::vector<uint32_t>{1, 2, 3})
	{
		RandomScene s = randomScene(seed, 80, fx);
		const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
		const Rgba8Image reference = render(tree, classicOptions());
		ASSERT_GT(covered(reference), kSize * kSize / 4) << "seed " << seed << ": the scene must cover the image";
		for (const Mode& m : modes())
		{
			const Rgba8Image img = render(tree, m.options);
			EXPECT_EQ(differing(img, reference), 0u) << m.name << ", seed " << seed;
		}
	}
}

TEST_F(HeapRenderTest, TheDefaultOptionsDrawThroughTheHeapRouterWithTheClassicPixels)
{
	// RenderOptions{} is the hybrid router with the heap on: every object of a random scene in the heap, a draw per
	// bucket slot instead of one per object, nothing left to the classic pass, and the classic path's pixels. The heap
	// switch off routes them all to the classic pass, a draw each, with the same pixels.
	const Effects fx;
	RandomScene s = randomScene(5, 80, fx);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
	auto reference_task = task(tree, classicOptions());
	ASSERT_EQ(frame(*reference_task), "");
	const Rgba8Image reference = pixels();
	const uint32_t classic_draws = reference_task->stats().passes.draws;
	ASSERT_GT(covered(reference), kSize * kSize / 4);
	ASSERT_GT(classic_draws, 40u); // (a few objects share an instanced draw or cover nothing)
	const runtime::RenderOptions defaults;
	EXPECT_EQ(defaults.path, runtime::RenderPath::Heap);
	auto t = task(tree, defaults);
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(differing(pixels(), reference), 0u);
	const runtime::TaskStats& st = t->stats();
	EXPECT_EQ(st.heap.objects, 80u);
	EXPECT_EQ(st.routing[0], 80u);
	EXPECT_EQ(st.passes.draws, 0u);
	EXPECT_GT(st.heap.draw_calls, 0u);
	EXPECT_LE(st.heap.draw_calls, classic_draws / 4) << "a draw per bucket slot, not per object";
	runtime::RenderOptions off;
	off.heap_enabled = adaptive::constant(false);
	auto classic = task(tree, off);
	ASSERT_EQ(frame(*classic), "");
	EXPECT_EQ(differing(pixels(), reference), 0u);
	EXPECT_EQ(classic->stats().heap.objects, 0u);
	EXPECT_EQ(classic->stats().passes.draws, classic_draws);
}

TEST_F(HeapRenderTest, ScenesForcedAcrossSeveralChunksMatchClassic)
{
	const Effects fx;
	RandomScene s = randomScene(7, 120, fx);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
	const Rgba8Image reference = render(tree, classicOptions());
	for (const Mode& m : modes(2048))
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		auto t = task(tree, m.options);
		ASSERT_EQ(frame(*t), "") << m.name;
		EXPECT_EQ(differing(pixels(), reference), 0u) << m.name;
		const HeapStats& st = t->stats().heap;
		EXPECT_GT(st.chunks, 3u) << m.name << ": 2 KiB chunks must page";
		// Objects whose buffers no other object shares skip the chunks that certainly lack room for them.
		EXPECT_GT(st.chunks_skipped, 0u) << m.name;
		EXPECT_EQ(st.objects, 120u);
	}
}

TEST_F(HeapRenderTest, IncrementalEditsMatchAClassicRenderOfTheSameSet)
{
	const Effects fx;
	const uint32_t seed = quokka::test::testSeed(11);
	std::printf("random scene and edits seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
	RandomScene s = randomScene(seed, 60, fx);
	std::mt19937 rng(seed == 11 ? 5 : seed + 1);
	adaptive::cset<RenderObjectPtr> set(std::vector<RenderObjectPtr>(s.objects.begin(), s.objects.begin() + 40));
	const auto tree = RenderTree::ofObjects(set);
	for (const Mode& m : modes(4096))
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		auto classic = task(tree, classicOptions());
		auto heap = task(tree, m.options);
		for (int step = 0; step < 25; ++step)
		{
			{
				adaptive::Transaction tx;
				for (int op = 0; op < 4; ++op)
				{
					const size_t i = rng() % s.objects.size();
					switch (rng() % 5)
					{
					case 0:
						set.add(s.objects[i]);
						break;
					case 1:
						set.remove(s.objects[i]);
						break;
					case 2:
						s.actives[i].setValue(!s.actives[i].value());
						break;
					case 3:
						s.shared_colors[rng() % 3].setValue(rgba(int(rng() % 256), 0, int(rng() % 256)));
						break;
					default:
					{
						scene::DrawCall d = s.draws[i].value();
						d.instance_count = d.instance_count > 1 ? 1 : 2;
						if (!s.objects[i]->attributes.count("InstanceOffset"))
							d.instance_count = 1, d.count = d.count > 3 ? d.count - 3 : d.count;
						s.draws[i].setValue(d);
					}
					}
				}
			}
			ASSERT_EQ(frame(*classic), "");
			const Rgba8Image reference = pixels();
			ASSERT_EQ(frame(*heap), "");
			ASSERT_EQ(differing(pixels(), reference), 0u) << m.name << ", step " << step;
		}
	}
}

/// UNORM8 vertex colours anywhere between 0 and 255: the heap converts them at ingest on the CPU, the classic path in
/// the driver's vertex fetch, and the two must give the same floats — a grid of quads with random per-vertex colours,
/// interpolated across each quad, matches classic pixel for pixel. (With the exact quotient c / 255 instead of Mesa's
/// c × (1/255), 252 of the 2,304 pixels differed by 1–2 LSB.)
TEST_F(HeapRenderTest, IntermediateUnorm8VertexColoursMatchClassic)
{
	const Effects fx;
	std::mt19937 rng(5);
	std::vector<RenderObjectPtr> quads;
	constexpr int kCells = 12;
	for (int y = 0; y < kCells; ++y)
		for (int x = 0; x < kCells; ++x)
		{
			const float x0 = -1.0f + 2.0f * float(x) / kCells, y0 = -1.0f + 2.0f * float(y) / kCells;
			const float x1 = x0 + 2.0f / kCells, y1 = y0 + 2.0f / kCells;
			RenderObject o;
			o.effect = fx.colors;
			o.attributes["Positions"] = scene::BufferView::of(
			    std::vector<V3f>{V3f(x0, y0, 0.5f), V3f(x1, y0, 0.5f), V3f(x1, y1, 0.5f), V3f(x0, y1, 0.5f)},
			    VK_FORMAT_R32G32B32_SFLOAT);
			std::vector<uint8_t> colors;
			for (int v = 0; v < 4; ++v)
				for (int k = 0; k < 4; ++k)
					colors.push_back(k == 3 ? 255 : uint8_t(40 + rng() % 200));
			o.attributes["Colors"] = scene::BufferView::of(colors, VK_FORMAT_R8G8B8A8_UNORM);
			o.indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2, 0, 2, 3}, VK_FORMAT_R32_UINT);
			o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
			quads.push_back(scene::makeRenderObject(std::move(o)));
		}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(quads));
	const Rgba8Image reference = render(tree, classicOptions());
	ASSERT_EQ(covered(reference), kSize * kSize) << "the quads tile the image";
	for (const Mode& m : modes())
		EXPECT_EQ(differing(render(tree, m.options), reference), 0u) << m.name;
}

TEST_F(HeapRenderTest, CompactionLeavesTheImageUnchanged)
{
	const Effects fx;
	RandomScene s = randomScene(13, 200, fx);
	adaptive::cset<RenderObjectPtr> set(s.objects);
	const auto tree = RenderTree::ofObjects(set);
	for (DrawStrategy d : {DrawStrategy::Indirect, DrawStrategy::Megacall})
	{
		runtime::RenderOptions options;
		options.path = runtime::RenderPath::Heap;
		options.heap.draw = d;
		options.heap.tuning.compaction_floor = 1024;
		auto heap = task(tree, options);
		auto classic = task(tree, classicOptions());
		ASSERT_EQ(frame(*heap), "");
		// Remove every other object from the front half: holes below live blocks, waste over the floor.
		{
			adaptive::Transaction tx;
			for (size_t i = 0; i < 160; ++i)
				if (i % 5 != 0)
					set.remove(s.objects[i]);
		}
		ASSERT_EQ(frame(*heap), "");
		const uint64_t before = heap->stats().heap.arena_bytes;
		ASSERT_EQ(frame(*heap), ""); // compacts at the start of this update
		EXPECT_EQ(heap->stats().heap.compactions, 1u) << strategyName(d);
		EXPECT_LT(heap->stats().heap.arena_bytes, before) << strategyName(d);
		EXPECT_EQ(heap->stats().heap.arena_bytes, heap->stats().heap.live_bytes);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), reference), 0u) << strategyName(d);
		auto findings = heap->heapScenes().front()->validateHeap();
		ASSERT_TRUE(findings.ok());
		EXPECT_TRUE(findings->empty()) << findings->front();
		// Put them back (reusing the compacted chunk) and compare again.
		set.unionWith(s.objects);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image full = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), full), 0u) << strategyName(d);
	}
}

TEST_F(HeapRenderTest, TexturesBlendingInterleavingBaseVertexInstanceTrafosAndCullFlipsMatchClassic)
{
	const Effects fx;
	std::vector<RenderObjectPtr> objects;
	// 1. A textured quad (nearest 2×2 texture), indexed.
	{
		auto texels = std::make_shared<std::vector<uint8_t>>(
		    std::vector<uint8_t>{255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255});
		RenderObject o;
		o.effect = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::diffuseTexture()});
		const Quad q = quad(-1, -1, 0, 0, 0.5f);
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["DiffuseColorCoordinates"] =
		    scene::BufferView::of(std::vector<math::V2f>{{0, 0}, {1, 0}, {1, 1}, {0, 1}}, VK_FORMAT_R32G32_SFLOAT);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(V4f(1.0f));
		o.textures["DiffuseColorTexture"] = adaptive::constant(scene::TextureData{2, 2, texels, false, nullptr});
		o.samplers["DiffuseColorTexture"] =
		    scene::SamplerState{scene::Filter::Nearest, scene::AddressMode::ClampToEdge, false};
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	// 2. Interleaved positions + normals in one buffer, drawn through indices with a base vertex (the first 4
	//    vertices of the buffer are decoys far away).
	{
		std::vector<float> interleaved;
		const Quad decoy = quad(5, 5, 6, 6, 0.5f), q = quad(0.1f, -1, 1, -0.1f, 0.4f);
		for (const auto* qq : {&decoy, &q})
			for (const V3f& p : qq->positions)
				for (float x : {p.x, p.y, p.z, 0.0f, 0.0f, -1.0f})
					interleaved.push_back(x);
		const auto buffer = adaptive::constant(ArrayBuffer::of(interleaved));
		RenderObject o;
		o.effect = fx.constant;
		o.attributes["Positions"] = scene::BufferView{buffer, VK_FORMAT_R32G32B32_SFLOAT, 0, 24};
		o.attributes["Normals"] = scene::BufferView{buffer, VK_FORMAT_R32G32B32_SFLOAT, 12, 24};
		o.indices =
		    scene::BufferView::of(std::vector<uint16_t>(q.indices.begin(), q.indices.end()), VK_FORMAT_R16_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(20, 220, 90));
		scene::DrawCall d{true, 6};
		d.base_vertex = 4;
		o.draw_call = adaptive::constant(d);
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	// 3. Instance trafos (a per-instance M44f attribute): three small quads.
	{
		RenderObject o;
		o.effect = effectOf({fx::stock::instanceTrafo(), fx::stock::trafo(), fx::stock::constantColor()});
		const Quad q = quad(-0.1f, -0.1f, 0.1f, 0.1f, 0.3f);
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		std::vector<math::M44f> trafos;
		for (int i = 0; i < 3; ++i)
		{
			math::M44f m(1.0f);
			m[3] = math::V4f(-0.8f + 0.3f * float(i), 0.6f, 0.0f, 1.0f);
			trafos.push_back(m);
		}
		o.attributes["InstanceTrafo"] = scene::BufferView::of(trafos, VK_FORMAT_R32G32B32A32_SFLOAT, true);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(250, 200, 0));
		scene::DrawCall d{true, 6};
		d.instance_count = 3;
		o.draw_call = adaptive::constant(d);
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	// 4. A blended quad over the others, and 5. a quad whose cull mode flips (CW as given: culled by BACK).
	cval<VkCullModeFlags> cull{VkCullModeFlags(VK_CULL_MODE_NONE)};
	{
		RenderObject o;
		o.effect = fx.constant;
		const Quad q = quad(-0.6f, -0.6f, 0.6f, 0.6f, 0.1f);
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(0, 0, 255, 102));
		o.state.default_blend = adaptive::constant(scene::BlendState::alpha());
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(o)));
		RenderObject c;
		c.effect = fx.constant;
		const Quad cq = quad(0.2f, 0.2f, 0.9f, 0.9f, 0.2f);
		c.attributes["Positions"] = scene::BufferView::of(cq.positions, VK_FORMAT_R32G32B32_SFLOAT);
		c.attributes["Normals"] = o.attributes["Normals"];
		c.indices = scene::BufferView::of(cq.indices, VK_FORMAT_R32_UINT);
		c.uniforms["ConstantColor"] = scene::uniform(rgba(255, 0, 255));
		c.state.cull_mode = cull;
		c.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(c)));
	}
	// Opaque first, the blended quad last, in both paths (the heap draws in bucket order; an ordered list keeps the
	// classic order): the opaque parts do not overlap, so only the blend's order matters.
	for (VkSampleCountFlagBits samples : {VK_SAMPLE_COUNT_1_BIT, VK_SAMPLE_COUNT_4_BIT})
	{
		signature_.samples = samples;
		auto fb = runtime::createFramebuffer(device(), signature_, kSize, kSize);
		ASSERT_TRUE(fb.ok());
		*fb_ = std::move(fb).value();
		const auto opaque = RenderTree::ofObjects(
		    adaptive::asetOf(std::vector<RenderObjectPtr>{objects[0], objects[1], objects[2], objects[4]}));
		adaptive::clist<scene::Command> cmds;
		cmds.append(scene::clearCommand(rgba(3, 5, 7)));
		cmds.append(scene::RenderCommand{opaque});
		cmds.append(scene::RenderCommand{RenderTree::leafOf(objects[3])});
		auto classic = runtime_->compile(signature_, cmds, classicOptions());
		for (DrawStrategy d : {DrawStrategy::Indirect, DrawStrategy::Megacall})
		{
			runtime::RenderOptions options;
			options.path = runtime::RenderPath::Heap;
			options.heap.draw = d;
			auto heap = runtime_->compile(signature_, cmds, options);
			for (VkCullModeFlags c : {VkCullModeFlags(VK_CULL_MODE_NONE), VkCullModeFlags(VK_CULL_MODE_BACK_BIT),
			                          VkCullModeFlags(VK_CULL_MODE_FRONT_BIT)})
			{
				cull.setValue(c);
				ASSERT_EQ(frame(*classic), "");
				const Rgba8Image reference = pixels();
				ASSERT_GT(covered(reference), kSize * kSize / 3);
				ASSERT_EQ(frame(*heap), "");
				EXPECT_EQ(differing(pixels(), reference), 0u)
				    << strategyName(d) << " samples " << samples << " cull " << c;
			}
			EXPECT_EQ(heap->stats().heap.objects, 5u); // summed over both Render commands' heap scenes
		}
	}
}

/// Per-instance uniforms draw what separate objects with those values as uniforms draw: three lit instances whose
/// ModelTrafo (NormalMatrix derived from it per instance) and ConstantColor (UNORM8, read by the fragment stage) come
/// from per-instance views starting at first_instance 1, against three objects with the same values as uniforms
/// (derived on the CPU in double precision: lighting may differ by one step), in classic and every heap strategy
/// (those pixel for pixel).
TEST_F(HeapRenderTest, PerInstanceUniformsDrawLikeSeparateObjectsInEveryPath)
{
	const Effects fx;
	const Quad q = quad(-0.25f, -0.25f, 0.25f, 0.25f, 0.0f);
	const auto positions = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
	const auto normals =
	    scene::BufferView::of(std::vector<V3f>(4, glm::normalize(V3f(0.4f, 0.3f, -1.0f))), VK_FORMAT_R32G32B32_SFLOAT);
	const auto indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
	const std::vector<math::Trafo3d> trafos = {
	    math::Trafo3d::translation(math::V3d(-0.5, -0.4, 0.3)) * math::Trafo3d::scale(math::V3d(1.5, 0.8, 1.0)),
	    math::Trafo3d::translation(math::V3d(0.45, -0.3, 0.5)) * math::Trafo3d::rotation(math::V3d(0, 0, 1), 0.5),
	    math::Trafo3d::translation(math::V3d(0.0, 0.5, 0.7)) * math::Trafo3d::scale(math::V3d(0.7, 1.6, 1.0))};
	const std::vector<std::array<uint8_t, 4>> colors = {{250, 40, 40, 255}, {40, 250, 60, 255}, {60, 80, 250, 255}};

	std::vector<math::M44f> trafo_data = {math::M44f(0.0f)}; // element 0 is skipped by first_instance = 1
	std::vector<uint8_t> color_data = {0, 0, 0, 0};
	for (size_t i = 0; i < trafos.size(); ++i)
	{
		trafo_data.push_back(math::M44f(trafos[i].forward));
		color_data.insert(color_data.end(), colors[i].begin(), colors[i].end());
	}
	RenderObject inst;
	inst.effect = fx.lit;
	inst.attributes["Positions"] = positions;
	inst.attributes["Normals"] = normals;
	inst.attributes["ModelTrafo"] = scene::BufferView::of(trafo_data, VK_FORMAT_R32G32B32A32_SFLOAT, true);
	inst.attributes["ConstantColor"] = scene::BufferView::of(color_data, VK_FORMAT_R8G8B8A8_UNORM, true);
	inst.uniforms["ConstantColor"] = scene::uniform(V4f(1.0f)); // shadowed by the per-instance view
	inst.indices = indices;
	scene::DrawCall d{true, 6};
	d.instance_count = 3;
	d.first_instance = 1;
	inst.draw_call = adaptive::constant(d);
	const auto instanced = RenderTree::leafOf(scene::makeRenderObject(std::move(inst)));

	std::vector<RenderObjectPtr> separate;
	for (size_t i = 0; i < trafos.size(); ++i)
	{
		RenderObject o;
		o.effect = fx.lit;
		o.attributes["Positions"] = positions;
		o.attributes["Normals"] = normals;
		o.indices = indices;
		o.uniforms["ModelTrafo"] = scene::uniform(trafos[i]);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(colors[i][0], colors[i][1], colors[i][2]));
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		separate.push_back(scene::makeRenderObject(std::move(o)));
	}
	const Rgba8Image reference = render(RenderTree::ofObjects(adaptive::asetOf(separate)), classicOptions());
	ASSERT_GT(covered(reference), kSize * kSize / 5);
	const Rgba8Image classic = render(instanced, classicOptions());
	size_t far = 0;
	for (uint32_t y = 0; y < kSize; ++y)
		for (uint32_t x = 0; x < kSize; ++x)
			for (int k = 0; k < 4; ++k)
				far += std::abs(int(classic.at(x, y)[k]) - int(reference.at(x, y)[k])) > 1;
	EXPECT_EQ(far, 0u) << "instanced differs from separate objects by more than one step";
	EXPECT_EQ(covered(classic), covered(reference));
	for (const Mode& m : modes())
		EXPECT_EQ(differing(render(instanced, m.options), classic), 0u) << m.name;
}

/// Scalar uniforms and attributes (float, uint) are loaded from the arena as classic binds them.
TEST_F(HeapRenderTest, ScalarUniformsAndAttributesMatchClassic)
{
	const Effects fx;
	ASSERT_TRUE(fx::UniformScope::declare("TestGreen", fx::F32).ok());
	ASSERT_TRUE(fx::UniformScope::declare("TestBlue", fx::U32).ok());
	const fx::Effect effect = effectOf(
	    {fx::stock::trafo(),
	     std::make_shared<const fx::Stage>(fx::Stage::vertex("test.scalars")
	                                           .reads({{"Red", fx::F32}, {"Alpha", fx::U32}})
	                                           .writes({{"Colors", fx::V4f}})
	                                           .uniforms({"TestGreen", "TestBlue"})
	                                           .glsl("s.Colors = vec4(s.Red, TestGreen, float(TestBlue) / 255.0, "
	                                                 "float(s.Alpha) / 255.0);")),
	     fx::stock::vertexColors()});
	const Quad q = quad(-0.5f, -0.5f, 0.5f, 0.5f, 0.5f);
	RenderObject o;
	o.effect = effect;
	o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Red"] = scene::BufferView::of(std::vector<float>(4, 0.6f), VK_FORMAT_R32_SFLOAT);
	o.attributes["Alpha"] = scene::BufferView::of(std::vector<uint32_t>(4, 255u), VK_FORMAT_R32_UINT);
	o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
	o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0.0)));
	o.uniforms["TestGreen"] = scene::uniform(0.2f);
	o.uniforms["TestBlue"] = scene::uniform(uint32_t(90));
	o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
	const auto tree = RenderTree::leafOf(scene::makeRenderObject(std::move(o)));
	const Rgba8Image reference = render(tree, classicOptions());
	EXPECT_EQ(reference.at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{153, 51, 90, 255}));
	for (const Mode& m : modes())
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		EXPECT_EQ(differing(render(tree, m.options), reference), 0u) << m.name;
	}
}

/// What placing an object costs in adaptive nodes: the heap object itself and one pool entry per uniform it owns
/// (its ModelTrafo and the NormalMatrix pooled by that ModelTrafo); its vertex buffers' entries are plain records, not
/// nodes, and a constant colour equal across objects is one shared entry. Counted as the difference between a scene of
/// 40 and one of 20 objects, each placed by a fresh heap task, so fixed per-task nodes cancel.
/// Objects added in one frame are placed — and so drawn — in id order, not in the order of their addresses (which the
/// set's delta is sorted by): of two coplanar triangles covering the same pixels, the one made later is drawn on top
/// (LESS_OR_EQUAL depth) on every path, even when it sits at a lower address than the earlier one.
TEST_F(HeapRenderTest, ObjectsAddedInOneFrameAreDrawnInIdOrderWhateverTheirAddresses)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto make = [&](uint32_t k)
	{
		// A colour of its own per object (k < 800 never repeats one).
		const V4f color = rgba(uint8_t(40 + (k * 67) % 200), uint8_t(200 - (k * 29) % 160), 120);
		RenderObject o =
		    litTriangle(lit, V3f(-0.8f, -0.8f, 0.0f), V3f(0.8f, -0.8f, 0.0f), V3f(-0.8f, 0.8f, 0.0f), color);
		o.uniforms["ModelTrafo"] = scene::uniform(adaptive::constant(math::Trafo3d::translation(math::V3d(0, 0, 0.5))));
		return scene::makeRenderObject(std::move(o));
	};
	// A later object at a lower address than an earlier one, whatever the allocator does: the objects kept alive
	// either already have an address below an earlier one's, or their addresses only grew — and then the objects made
	// after half of a batch is freed reuse that lower memory. (Looking for it in one made-free-made sequence failed
	// once in a while: the result depended on what earlier tests had left in malloc's caches.)
	std::vector<RenderObjectPtr> made;
	RenderObjectPtr first, later;
	uint32_t serial = 0;
	for (uint32_t round = 0; round < 30 && !later; ++round)
	{
		std::vector<RenderObjectPtr> batch;
		for (int i = 0; i < 16; ++i)
			batch.push_back(make(serial++));
		batch.erase(batch.begin(), batch.begin() + 8);
		for (int i = 0; i < 8; ++i)
			batch.push_back(make(serial++));
		made.insert(made.end(), batch.begin(), batch.end());
		for (size_t i = 0; i < made.size() && !later; ++i)
			for (size_t j = 0; j < made.size() && !later; ++j)
				if (made[i]->id < made[j]->id && std::less<>()(made[j].get(), made[i].get()))
				{
					first = made[i];
					later = made[j];
				}
	}
#if defined(__SANITIZE_ADDRESS__)
	if (!later)
		GTEST_SKIP() << "ASan's allocator quarantines freed memory: addresses only grew among " << made.size();
#endif
	ASSERT_TRUE(later) << "no later object at a lower address among " << made.size();
	ASSERT_LT(first->id, later->id);
	for (const Mode& m : modes())
	{
		const Rgba8Image both =
		    render(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{first, later})), m.options);
		const Rgba8Image on_top =
		    render(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{later})), m.options);
		const Rgba8Image under =
		    render(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{first})), m.options);
		ASSERT_GT(covered(on_top), kSize * kSize / 4) << m.name;
		ASSERT_GT(differing(on_top, under), kSize * kSize / 4) << m.name << ": the two colours must differ";
		EXPECT_EQ(differing(both, on_top), 0u) << m.name << ": the later object is not drawn last";
	}
}

/// A frame's additions are placed phase by phase over batches of objects (read, acquire, attach): the arena, the
/// chunks, the buckets and the pixels must come out exactly as when the same objects arrive one per frame — across
/// several chunks, over more than one batch, and with objects whose draw fails in the middle of a batch (their blocks
/// are given back before the batch's later objects acquire theirs, as one at a time).
TEST_F(HeapRenderTest, AdditionsPlacedInOneFrameMatchAdditionsOneFrameAtATime)
{
	const Effects fx;
	std::mt19937 rng(quokka::test::testSeed(5));
	RandomScene s;
	for (int i = 0; i < 3; ++i)
		s.shared_colors.emplace_back(rgba(int(rng() % 256), int(rng() % 256), int(rng() % 256)));
	std::vector<size_t> bad;
	for (uint32_t i = 0; i < 90; ++i)
	{
		s.objects.push_back(randomObject(rng, fx, s, i));
		if (i == 20 || i == 45 || i == 77)
		{
			// The draw reads more than the object holds: it fails when placed.
			scene::DrawCall d = s.draws.back().value();
			d.count = 3000;
			s.draws.back().setValue(d);
			bad.push_back(i);
		}
	}
	for (const Mode& m : modes(4096))
	{
		if (m.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(m.name);
		adaptive::cset<RenderObjectPtr> together, apart;
		auto a = task(RenderTree::ofObjects(together), m.options);
		auto b = task(RenderTree::ofObjects(apart), m.options);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& o : s.objects)
				    together.add(o);
		    });
		EXPECT_NE(frame(*a).find("but the draw reads 3000"), std::string::npos);
		ASSERT_EQ(frame(*a), "");
		const Rgba8Image once = pixels();
		size_t failed = 0;
		for (const RenderObjectPtr& o : s.objects) // (in creation order, which is id order)
		{
			apart.add(o);
			failed += !frame(*b).empty();
		}
		EXPECT_EQ(failed, bad.size());
		ASSERT_EQ(frame(*b), "");
		EXPECT_EQ(differing(once, pixels()), 0u);
		EXPECT_GT(covered(once), 0u);
		const HeapStats& x = a->stats().heap;
		const HeapStats& y = b->stats().heap;
		EXPECT_GT(x.chunks, 2u);
		EXPECT_EQ(x.objects, y.objects);
		EXPECT_EQ(x.chunks, y.chunks);
		EXPECT_EQ(x.arena_bytes, y.arena_bytes);
		EXPECT_EQ(x.live_bytes, y.live_bytes);
		EXPECT_EQ(x.buckets, y.buckets);
		EXPECT_EQ(x.slots, y.slots);
		expectValidHeap(*a);
		expectValidHeap(*b);
	}
}

/// Values derived from each object's ModelTrafo and the camera (ModelViewProjTrafo) are computed on the device: a
/// camera move re-packs one constituent (the view) and re-uploads no uniform, an edit re-packs one, an added object is
/// drawn in its first frame — with the pixels of the classic path, from fp64 constituents and forced df32 ones alike,
/// and with the opt-out (every value on the CPU).
TEST_F(HeapRenderTest, ValuesReadingTheCameraAreDerivedOnTheGpuAndMatchClassic)
{
	const fx::Effect effect = modelViewProjEffect();
	const cval<math::Trafo3d> view(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
	const auto view_value = scene::uniform(view); // (one node for every object, as a scene's camera is)
	const auto proj = scene::uniform(math::Trafo3d::scale(math::V3d(1.0, 1.0, 0.5)));
	std::vector<cval<math::Trafo3d>> trafos;
	trafos.reserve(61);
	// (Each at its own depth: the image does not depend on the draw order, which the heap does not keep.)
	auto placed = [](int i)
	{
		return math::Trafo3d::translation(math::V3d(-0.9 + 0.03 * (i % 60), -0.4 + 0.1 * (i % 7), 0.1 + 0.005 * i)) *
		       math::Trafo3d::rotation(math::V3d(0.0, 0.0, 1.0), 0.1 * i);
	};
	auto make = [&](int i)
	{
		trafos.emplace_back(placed(i));
		RenderObject o;
		o.effect = effect;
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(0, 0, 0), V3f(0.12f, 0, 0), V3f(0, 0.2f, 0)}, VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ModelTrafo"] = scene::uniform(trafos.back());
		o.uniforms["ViewTrafo"] = view_value;
		o.uniforms["ProjTrafo"] = proj;
		o.uniforms["ConstantColor"] = scene::uniform(rgba(40 + 3 * i, 200 - 2 * i, 90));
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		return scene::makeRenderObject(std::move(o));
	};
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 60; ++i)
		objects.push_back(make(i));
	const RenderObjectPtr later = make(60);
	set.unionWith(objects);
	const auto tree = RenderTree::ofObjects(set);
	const std::vector<Mode> all = derivedModes();
	std::vector<Rgba8Image> reference;
	for (const Mode& m : all)
	{
		SCOPED_TRACE(m.name);
		adaptive::transact(
		    [&]
		    {
			    view.setValue(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
			    trafos[3].setValue(math::Trafo3d::translation(math::V3d(-0.8, -0.4, 0.1)));
			    trafos[5].setValue(placed(5));
			    set.remove(later);
			    set.add(objects[10]);
			    set.add(objects[40]);
		    });
		auto t = task(tree, m.options);
		const bool heap = m.options.path == runtime::RenderPath::Heap;
		const bool gpu = heap && m.options.heap.gpu_derived;
		std::vector<Rgba8Image> images;
		ASSERT_EQ(frame(*t), "");
		images.push_back(pixels());
		if (gpu)
		{
			EXPECT_EQ(t->stats().heap.derive_records, 60u);
		}
		// A camera move: one constituent, no uniform re-upload on the GPU path; every object's value on the CPU path.
		adaptive::transact(
		    [&]
		    {
			    view.setValue(math::Trafo3d::rotation(math::V3d(0.0, 0.0, 1.0), 0.3) *
			                  math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
		    });
		ASSERT_EQ(frame(*t), "");
		images.push_back(pixels());
		if (gpu)
		{
			EXPECT_EQ(t->stats().heap.constituent_uploads, 1u);
			EXPECT_EQ(t->stats().heap.uniform_uploads, 0u);
			if (m.options.heap.max_chunk_bytes == kPagedChunkBytes)
			{
				EXPECT_GE(t->stats().heap.derive_dispatches, 2u) << "one per chunk holding records";
			}
			else
			{
				EXPECT_EQ(t->stats().heap.derive_dispatches, 1u);
			}
		}
		else if (heap)
		{
			EXPECT_EQ(t->stats().heap.uniform_uploads, 60u);
			EXPECT_EQ(t->stats().heap.derive_records, 0u);
		}
		// A static frame dispatches nothing.
		ASSERT_EQ(frame(*t), "");
		if (heap)
		{
			EXPECT_EQ(t->stats().heap.derive_dispatches, 0u);
		}
		// An edit of one object's trafo: the kernel runs over that object's chunk only (the paged mode's records fill
		// several chunks).
		adaptive::transact([&] { trafos[5].setValue(math::Trafo3d::translation(math::V3d(0.2, -0.5, 0.1))); });
		ASSERT_EQ(frame(*t), "");
		images.push_back(pixels());
		if (gpu)
		{
			EXPECT_EQ(t->stats().heap.constituent_uploads, 1u);
			EXPECT_EQ(t->stats().heap.derive_dispatches, 1u) << "the edited object's chunk";
		}
		// An edit of one object's trafo, an object added and two removed: drawn in the frame they happen (the removed
		// objects' records leave, the added one's takes a place among them).
		adaptive::transact(
		    [&]
		    {
			    trafos[3].setValue(math::Trafo3d::translation(math::V3d(0.3, 0.3, 0.1)));
			    set.add(later);
			    set.remove(objects[10]);
			    set.remove(objects[40]);
		    });
		ASSERT_EQ(frame(*t), "");
		images.push_back(pixels());
		if (gpu)
		{
			EXPECT_EQ(t->stats().heap.constituent_uploads, 2u) << "the edited trafo and the added object's";
			EXPECT_EQ(t->stats().heap.derive_records, 59u);
		}
		// The two back again with a camera move, in one frame.
		adaptive::transact(
		    [&]
		    {
			    set.add(objects[10]);
			    set.add(objects[40]);
			    view.setValue(math::Trafo3d::translation(math::V3d(0.05, 0.0, 0.5)));
		    });
		ASSERT_EQ(frame(*t), "");
		images.push_back(pixels());
		if (gpu)
		{
			EXPECT_EQ(t->stats().heap.derive_records, 61u);
		}
		if (reference.empty())
		{
			reference = images;
			for (const Rgba8Image& r : reference)
				EXPECT_GT(covered(r), 300u);
			EXPECT_GT(differing(reference[0], reference[1]), 0u);
			continue;
		}
		for (size_t i = 0; i < images.size(); ++i)
			EXPECT_EQ(differing(images[i], reference[i]), 0u) << "frame " << i;
		if (heap)
		{
			expectValidHeap(*t);
		}
	}
}

/// A user's derived uniform: a billboard matrix by a rule over the standard ViewProjTrafo, the view and a per-object
/// anchor (RenderObject::derived). Every path draws it alike, it follows the camera (turned 60° about y, the quads
/// still face it: the same area as before, where a plain quad would shrink to half its width), and a rule that reads
/// itself through another is an error naming the cycle.
TEST_F(HeapRenderTest, AUserRuleDerivesABillboardAlikeOnEveryPath)
{
	ASSERT_TRUE(fx::UniformScope::declare("TestBillboardTrafo", fx::M44f).ok());
	ASSERT_TRUE(fx::UniformScope::declare("TestAnchor", fx::V3f).ok());
	const fx::Effect effect =
	    effectOf({std::make_shared<const fx::Stage>(fx::Stage::vertex("test.billboard")
	                                                    .reads({{"Positions", fx::V4f}})
	                                                    .writes({{"Positions", fx::V4f}})
	                                                    .uniforms({"TestBillboardTrafo"})
	                                                    .glsl("s.Positions = TestBillboardTrafo * s.Positions;")),
	              fx::stock::constantColor()});
	using namespace rules;
	const Expr translate = vec(vec(1.0, 0.0, 0.0, 0.0), vec(0.0, 1.0, 0.0, 0.0), vec(0.0, 0.0, 1.0, 0.0),
	                           vec(leaf("TestAnchor"), lit(1.0)));
	const Rule billboard =
	    Rule::make(leaf("ViewProjTrafo") * translate * resize(upper3x3(inv(leaf("ViewTrafo"))), 4, 4)).value();
	const cval<math::Trafo3d> view(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 4; ++i)
	{
		const Quad q = quad(-0.15f, -0.15f, 0.15f, 0.15f, 0.0f);
		RenderObject o;
		o.effect = effect;
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ViewTrafo"] = scene::uniform(view);
		o.uniforms["TestAnchor"] = scene::uniform(V3f(i % 2 ? 0.4f : -0.4f, i / 2 ? 0.4f : -0.4f, 0.0f));
		o.uniforms["ConstantColor"] = scene::uniform(rgba(60 * i, 200, 90));
		o.derived["TestBillboardTrafo"] = billboard;
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto turn = [&](double degrees)
	{
		adaptive::transact(
		    [&]
		    {
			    view.setValue(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)) *
			                  math::Trafo3d::rotation(math::V3d(0.0, 1.0, 0.0), degrees * 3.14159265358979 / 180.0));
		    });
	};
	std::optional<Rgba8Image> front, turned;
	for (const Mode& m : modes())
	{
		turn(0.0);
		auto t = task(tree, m.options);
		ASSERT_EQ(frame(*t), "") << m.name;
		const Rgba8Image a = pixels();
		turn(60.0);
		ASSERT_EQ(frame(*t), "") << m.name;
		const Rgba8Image b = pixels();
		if (!front)
		{
			front = a;
			turned = b;
			EXPECT_GT(covered(a), 100u);
			EXPECT_NEAR(double(covered(b)), double(covered(a)), 0.05 * double(covered(a)));
			EXPECT_GT(differing(a, b), 0u) << "the anchors move with the camera";
			continue;
		}
		EXPECT_EQ(differing(a, *front), 0u) << m.name;
		EXPECT_EQ(differing(b, *turned), 0u) << m.name;
	}
	// Rules that read each other in a circle: an error on every path, naming the object and the cycle.
	RenderObject looped = *objects[0];
	looped.derived["TestBillboardTrafo"] = Rule::make(leaf("ModelTrafo") * leaf("TestLoop", fx::M44f)).value();
	looped.derived["TestLoop"] = Rule::make(leaf("TestBillboardTrafo") * lit(2.0)).value();
	const auto bad = RenderTree::leafOf(scene::makeRenderObject(std::move(looped)));
	for (const Mode& m : modes())
	{
		auto t = task(bad, m.options);
		const std::string error = frame(*t);
		EXPECT_NE(error.find("derived uniforms form a cycle: TestBillboardTrafo -> TestLoop -> TestBillboardTrafo"),
		          std::string::npos)
		    << m.name << ": " << error;
	}
}

} // namespace
} // namespace quokka::heap::test
