// heap_sharing_test.cpp — pooling and sharing: one allocation and one upload for 10^4 objects on one value, the chunk
// choice for shared uniforms, buffer storage stored once, late second users, changed shared buffers, derived uniforms
// pooled and collected, an object's own trafo shared once a second object reads it.
#include "heap_fixture.hpp"

namespace quokka::heap::test
{
namespace
{

TEST_F(HeapRenderTest, TenThousandObjectsOnOneValueShareOneAllocationAndOneUpload)
{
	const Effects fx;
	cval<V4f> color(rgba(200, 10, 10));
	const auto shared = scene::uniform(color); // sharing is by aval identity: one node for every object
	const auto mesh = scene::BufferView::of(std::vector<V3f>{{-0.01f, -0.01f, 0}, {0.01f, -0.01f, 0}, {0, 0.01f, 0}},
	                                        VK_FORMAT_R32G32B32_SFLOAT);
	const auto normals = scene::BufferView::of(std::vector<V3f>(3, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> all;
	for (uint32_t i = 0; i < 10000; ++i)
	{
		RenderObject o;
		o.effect = fx.constant;
		o.attributes["Positions"] = mesh;
		o.attributes["Normals"] = normals;
		o.uniforms["ConstantColor"] = shared;
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(
		    math::V3d(-0.95 + 1.9 * double(i % 100) / 99.0, -0.95 + 1.9 * double(i / 100) / 99.0, 0.5)));
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		all.push_back(scene::makeRenderObject(std::move(o)));
	}
	set.unionWith(all);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::ofObjects(set), options);
	ASSERT_EQ(frame(*t), "");
	const HeapStats placed = t->stats().heap;
	EXPECT_EQ(placed.objects, 10000u);
	EXPECT_GE(placed.arena_capacity_bytes, placed.arena_bytes);
	EXPECT_GT(placed.arena_capacity_bytes, 0u);
	EXPECT_EQ(placed.buckets, 1u);
	EXPECT_EQ(placed.slots, 1u);
	EXPECT_EQ(pixels().at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{200, 10, 10, 255}));
	// The shared colour: one allocation (the trafos are private, the mesh shared): one upload per change.
	color.setValue(rgba(10, 200, 10));
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.uniform_uploads, 1u);
	EXPECT_EQ(t->stats().heap.refreshed, 0u);
	EXPECT_LT(t->stats().heap.upload_bytes, 1024u);
	EXPECT_EQ(pixels().at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{10, 200, 10, 255}));
	// Everything removed: no object, no bucket, an empty arena.
	set.clear();
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.objects, 0u);
	EXPECT_EQ(t->stats().heap.buckets, 0u);
	EXPECT_EQ(t->stats().heap.live_bytes, 0u);
	EXPECT_EQ(t->stats().heap.arena_bytes, 0u);
	EXPECT_EQ(t->stats().heap.arena_capacity_bytes, 0u) << "an emptied chunk gives its buffer back";
	EXPECT_EQ(t->stats().heap.removed, 10000u);
	// And takes a new one when objects come back.
	set.unionWith(all);
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.objects, 10000u);
	EXPECT_GT(t->stats().heap.arena_capacity_bytes, 0u);
	EXPECT_EQ(pixels().at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{10, 200, 10, 255}));
}

TEST_F(HeapRenderTest, AChunkHoldingASharedUniformTakesItsNextUser)
{
	// Group-fit placement: an object reading a shared uniform goes to a chunk that already holds it (when it fits)
	// before the newest chunk — so the value stays one allocation and one upload per change. The placement index
	// lists the shared node when the second user asks for it, not when the first user made its entry.
	const Effects fx;
	cval<V4f> color(rgba(200, 10, 10));
	const auto shared = scene::uniform(color);
	const auto other = scene::uniform(rgba(10, 10, 200));
	auto object = [&](uint32_t i, const adaptive::aval<scene::UniformValue>& c)
	{
		std::vector<V3f> p;
		for (uint32_t t = 0; t < 5; ++t) // 15 vertices: five or so objects fill a 2 KiB chunk
			p.insert(p.end(), {V3f(-0.9f + 0.1f * float(i), -0.9f, 0.5f), V3f(-0.85f + 0.1f * float(i), -0.9f, 0.5f),
			                   V3f(-0.9f + 0.1f * float(i), -0.8f, 0.5f)});
		RenderObject o;
		o.effect = fx.constant;
		o.attributes["Positions"] = scene::BufferView::of(p, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] =
		    scene::BufferView::of(std::vector<V3f>(p.size(), V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = c;
		o.draw_call = adaptive::constant(scene::DrawCall{false, uint32_t(p.size())});
		return scene::makeRenderObject(std::move(o));
	};
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> fillers;
	const RenderObjectPtr first = object(0, shared); // the oldest id: placed first, in chunk 0
	for (uint32_t i = 1; i < 12; ++i)
		fillers.push_back(object(i, other));
	set.add(first);
	set.unionWith(fillers);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	options.heap.max_chunk_bytes = 2048;
	auto t = task(RenderTree::ofObjects(set), options);
	ASSERT_EQ(frame(*t), "");
	ASSERT_GE(t->stats().heap.chunks, 2u);
	// Room in chunk 0 (its first filler leaves), then a second user of the shared colour.
	set.remove(fillers[0]);
	const RenderObjectPtr second = object(20, shared);
	set.add(second);
	ASSERT_EQ(frame(*t), "");
	expectValidHeap(*t);
	color.setValue(rgba(10, 200, 10));
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.uniform_uploads, 1u) << "the second user went to another chunk";
	// The index lets the shared node go with its last entry.
	set.remove(first);
	set.remove(second);
	ASSERT_EQ(frame(*t), "");
	expectValidHeap(*t);
}

/// A buffer's storage is stored once per chunk however its users reach it — one view, or separate views (separate
/// avals) of one ArrayBuffer — and separate storage with equal bytes is stored twice. (The heap skips the pool lookup
/// for storage that only its aval holds: this pins that the skip never misses a holder.)
TEST_F(HeapRenderTest, BufferStorageIsStoredOnceWhateverViewsReachIt)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	const std::vector<V3f> corners{{-0.5f, -0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {-0.5f, 0.5f, 0.5f}};
	auto object = [&](const scene::BufferView& positions)
	{
		RenderObject o = litTriangle(lit, corners[0], corners[1], corners[2], rgba(200, 40, 40));
		o.attributes["Positions"] = positions;
		return scene::makeRenderObject(std::move(o));
	};
	auto liveBytes = [&](const scene::BufferView& first, const scene::BufferView& second)
	{
		auto t =
		    task(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{object(first), object(second)})),
		         modes()[1].options);
		EXPECT_EQ(frame(*t), "");
		EXPECT_EQ(t->stats().heap.objects, 2u);
		return t->stats().heap.live_bytes;
	};
	const scene::BufferView one = scene::BufferView::of(corners, VK_FORMAT_R32G32B32_SFLOAT);
	scene::BufferView other_aval = one; // another aval of the same storage
	other_aval.buffer = adaptive::constant(one.buffer.force());
	ASSERT_NE(other_aval.buffer.node(), one.buffer.node());
	const scene::BufferView copy = scene::BufferView::of(corners, VK_FORMAT_R32G32B32_SFLOAT); // equal bytes
	const uint64_t same_view = liveBytes(one, one);
	const uint64_t same_storage = liveBytes(one, other_aval);
	const uint64_t equal_bytes = liveBytes(one, copy);
	EXPECT_EQ(same_storage, same_view);
	// Equal bytes in other storage: one more allocation — the 16-byte header and three positions of 12 or 16 bytes
	// (the shader's type), rounded up to 16.
	ASSERT_GT(equal_bytes, same_view);
	const uint64_t positions = equal_bytes - same_view;
	EXPECT_GE(positions, 16u + 3u * 12u);
	EXPECT_LE(positions, 16u + 3u * 16u);
	// One view of storage that nothing else holds, read by both objects: one copy too (the first object's entry holds
	// the view's constant node, not the storage, so only the node's count tells the second object to look it up).
	const scene::BufferView sole = scene::BufferView::of(corners, VK_FORMAT_R32G32B32_SFLOAT);
	ASSERT_EQ(sole.buffer.force().bytes.use_count(), 1);
	EXPECT_EQ(liveBytes(sole, sole), same_view);
}

TEST_F(HeapRenderTest, StorageThatOnlyLaterGainsASecondObjectIsCopiedOnceForAllLaterUsers)
{
	// An object whose buffers nothing else holds places them in its private block (no pool entry). A view of that
	// storage copied into an object of a later frame finds no pooled copy: it makes one, which every later user shares,
	// while the first object keeps its own — at most one extra copy. Each object leaves with exactly its own bytes.
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto object = [&](std::optional<scene::BufferView> positions, double dx, V4f color)
	{
		RenderObject o = litTriangle(lit, V3f(-0.25f, -0.25f, 0), V3f(0.25f, -0.25f, 0), V3f(0, 0.3f, 0), color);
		if (positions)
			o.attributes["Positions"] = *positions; // (else the triangle's own storage)
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(dx, 0.1 * dx, 0.3)));
		return scene::makeRenderObject(std::move(o));
	};
	const RenderObjectPtr a = object(std::nullopt, -0.6, rgba(230, 60, 40));
	ASSERT_EQ(a->attributes.at("Positions").buffer.force().bytes.use_count(), 1);
	adaptive::cset<RenderObjectPtr> set, reference_set;
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto heap = task(RenderTree::ofObjects(set), options);
	auto classic = task(RenderTree::ofObjects(reference_set), classicOptions());
	auto step = [&](const char* name)
	{
		if (::testing::Test::HasFatalFailure())
			return uint64_t(0);
		EXPECT_EQ(frame(*classic), "") << name;
		const Rgba8Image reference = pixels();
		EXPECT_EQ(frame(*heap), "") << name;
		EXPECT_EQ(differing(pixels(), reference), 0u) << name;
		expectValidHeap(*heap);
		return heap->stats().heap.live_bytes;
	};
	// The classic reference draws objects of their own storage (its caches must not count as holders).
	const RenderObjectPtr ref_a = object(std::nullopt, -0.6, rgba(230, 60, 40));
	set.add(a);
	reference_set.add(ref_a);
	const uint64_t only_a = step("a alone");
	const RenderObjectPtr b = object(a->attributes.at("Positions"), 0.0, rgba(40, 200, 90));
	set.add(b);
	reference_set.add(object(std::nullopt, 0.0, rgba(40, 200, 90)));
	const uint64_t with_b = step("b reads a's positions");
	const RenderObjectPtr c = object(a->attributes.at("Positions"), 0.6, rgba(60, 90, 230));
	set.add(c);
	reference_set.add(object(std::nullopt, 0.6, rgba(60, 90, 230)));
	const uint64_t with_c = step("c reads them too");
	// b copied the positions (three vec4 and the 16-byte header); c shares b's copy, so it adds that much less.
	const uint64_t positions = (with_b - only_a) - (with_c - with_b);
	EXPECT_EQ(positions, 16u + 3u * 16u);
	set.remove(a);
	reference_set.remove(ref_a);
	const uint64_t without_a = step("a left");
	EXPECT_EQ(with_c - without_a, with_b - only_a) << "a leaves with its own bytes, as many as b brought";
	set.remove(b);
	set.remove(c);
	ASSERT_EQ(frame(*heap), "");
	EXPECT_EQ(heap->stats().heap.live_bytes, 0u);
	expectValidHeap(*heap);
}

TEST_F(HeapRenderTest, ASharedVertexBufferThatChangesIsReadAgainByEveryUser)
{
	// Three objects share one position buffer (a cval); it changes twice — to other triangles of the same size, then
	// to a longer buffer — and every frame must match a classic render of the same objects (no user keeps the old
	// bytes), with the arena holding one copy of the buffer.
	const Effects fx;
	auto triangles = [](float size, uint32_t count)
	{
		std::vector<V3f> p;
		for (uint32_t t = 0; t < count; ++t)
		{
			const float x = -0.9f + 0.6f * float(t);
			p.insert(p.end(), {V3f(x, -size, 0), V3f(x + size, -size, 0), V3f(x, size, 0)});
		}
		return ArrayBuffer::of(p);
	};
	cval<ArrayBuffer> positions(triangles(0.2f, 1));
	std::vector<cval<scene::DrawCall>> draws;
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 3; ++i)
	{
		RenderObject o;
		o.effect = fx.constant;
		scene::BufferView view;
		view.buffer = positions;
		view.format = VK_FORMAT_R32G32B32_SFLOAT;
		o.attributes["Positions"] = view;
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(9, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(60 * (i + 1), 40, 200 - 50 * i));
		o.uniforms["ModelTrafo"] =
		    scene::uniform(math::Trafo3d::translation(math::V3d(0.0, -0.6 + 0.6 * i, 0.2 + 0.1 * i)));
		draws.emplace_back(scene::DrawCall{false, 3});
		o.draw_call = draws.back();
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	for (const Mode& m : modes())
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		adaptive::transact(
		    [&]
		    {
			    positions.setValue(triangles(0.2f, 1));
			    for (auto& d : draws)
				    d.setValue(scene::DrawCall{false, 3});
		    });
		auto t = task(tree, m.options);
		auto classic = task(tree, classicOptions());
		auto both = [&](const char* step)
		{
			ASSERT_EQ(frame(*classic), "") << step;
			const Rgba8Image want = pixels();
			ASSERT_EQ(frame(*t), "") << m.name << ", " << step;
			EXPECT_GT(covered(want), 0u) << step;
			EXPECT_EQ(differing(pixels(), want), 0u) << m.name << ", " << step;
		};
		both("first frame");
		adaptive::transact([&] { positions.setValue(triangles(0.35f, 1)); });
		both("same size, other triangles");
		const uint64_t live = t->stats().heap.live_bytes;
		adaptive::transact(
		    [&]
		    {
			    positions.setValue(triangles(0.25f, 3));
			    for (auto& d : draws)
				    d.setValue(scene::DrawCall{false, 9});
		    });
		both("three triangles");
		// One copy of the buffer, grown by 6 vertices × 16 bytes (stored as V4).
		EXPECT_EQ(t->stats().heap.live_bytes, live + 6 * 16) << m.name;
		auto findings = t->heapScenes().front()->validateHeap();
		ASSERT_TRUE(findings.ok()) << findings.error().message;
		EXPECT_TRUE(findings->empty()) << m.name << ": " << (findings->empty() ? "" : findings->front());
	}
}

TEST_F(HeapRenderTest, DerivedUniformsOfRemovedObjectsAreCollectedUnderChurn)
{
	// Each object's own ModelTrafo interns its own ModelViewProjTrafo (a value of two inputs, which the heap does not
	// pool by recipe); ten rounds replace all 100 objects. Without collection ~10× the first frame's count would pile
	// up.
	const fx::Effect lit = modelViewProjEffect();
	auto make = [&](int i)
	{
		RenderObject o;
		o.effect = lit;
		const float x = -0.9f + 0.018f * float(i % 100);
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(x, -0.5f, 0), V3f(x + 0.1f, -0.5f, 0), V3f(x, 0.5f, 0)}, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(200, 40, 40));
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		return scene::makeRenderObject(std::move(o));
	};
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> live;
	for (int i = 0; i < 100; ++i)
		live.push_back(make(i));
	set.unionWith(live);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::ofObjects(set), options);
	ASSERT_EQ(frame(*t), "");
	const uint32_t first = t->stats().heap.derived_uniforms;
	EXPECT_GE(first, 100u);
	uint32_t most = 0;
	for (int round = 1; round <= 10; ++round)
	{
		std::vector<RenderObjectPtr> next;
		for (int i = 0; i < 100; ++i)
			next.push_back(make(round * 100 + i));
		adaptive::transact(
		    [&]
		    {
			    for (const auto& o : live)
				    set.remove(o);
			    set.unionWith(next);
		    });
		live = std::move(next);
		ASSERT_EQ(frame(*t), "") << "round " << round;
		EXPECT_EQ(t->stats().heap.removed, 100u);
		most = std::max(most, t->stats().heap.derived_uniforms);
	}
	EXPECT_LE(most, 3 * first) << "derived uniforms of removed objects must not pile up";
	EXPECT_GT(covered(pixels()), 0u);
}

/// Objects without trafos of their own share the derived ones (one identity stands for every absent trafo), in both
/// paths: 100 lit objects intern one NormalMatrix, one ViewProjTrafo and one LightLocation, not one of each per object.
TEST_F(HeapRenderTest, ObjectsWithoutTrafosShareTheirDerivedUniforms)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 100; ++i)
	{
		const float x = -0.9f + 0.018f * float(i);
		objects.push_back(scene::makeRenderObject(
		    litTriangle(lit, V3f(x, -0.5f, 0.5f), V3f(x + 0.1f, -0.5f, 0.5f), V3f(x, 0.5f, 0.5f), rgba(200, 40, 40))));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	runtime::RenderOptions heap;
	heap.path = runtime::RenderPath::Heap;
	auto classic = task(tree, classicOptions());
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	EXPECT_GT(covered(reference), 0u);
	EXPECT_LE(classic->stats().passes.derived_uniforms, 3u);
	auto t = task(tree, heap);
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(differing(pixels(), reference), 0u);
	EXPECT_LE(t->stats().heap.derived_uniforms, 3u);
}

/// On the heap a NormalMatrix derived from an object's own ModelTrafo is pooled by (ModelTrafo, recipe, chunk) — no
/// derived node per object — and follows its ModelTrafo's edits: 40 lit objects whose rotations change match classic
/// (which derives through nodes, with the same arithmetic) before and after; the heap interns no NormalMatrix node
/// (only each object's ModelViewProjTrafo, which the GPU computes, and the shared LightLocation).
TEST_F(HeapRenderTest, NormalMatricesArePooledByTheirModelTrafoAndFollowItsEdits)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	std::vector<cval<math::Trafo3d>> trafos;
	trafos.reserve(40);
	for (int i = 0; i < 40; ++i)
	{
		RenderObject o;
		o.effect = lit;
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(-0.1f, -0.1f, 0), V3f(0.1f, -0.1f, 0), V3f(0, 0.12f, 0)}, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] =
		    scene::BufferView::of(std::vector<V3f>(3, glm::normalize(V3f(0.5f, 0.2f, -1))), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(230, 190, 60));
		trafos.emplace_back(
		    math::Trafo3d::translation(math::V3d(-0.8 + 0.27 * (i % 7), -0.8 + 0.3 * (i / 7), 0.1 + 0.02 * i)) *
		    math::Trafo3d::rotation(math::V3d(0, 1, 0), 0.1 * i));
		o.uniforms["ModelTrafo"] = scene::uniform(trafos.back());
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto classic = task(tree, classicOptions());
	for (const Mode& m : modes())
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		auto heap = task(tree, m.options);
		for (int round = 0; round < 3; ++round)
		{
			if (round > 0)
				adaptive::transact(
				    [&]
				    {
					    for (size_t i = size_t(round); i < trafos.size(); i += 3)
						    trafos[i].setValue(trafos[i].value() * math::Trafo3d::rotation(math::V3d(1, 0, 0), 0.4));
				    });
			ASSERT_EQ(frame(*classic), "");
			const Rgba8Image reference = pixels();
			ASSERT_GT(covered(reference), 100u);
			ASSERT_EQ(frame(*heap), "");
			EXPECT_EQ(differing(pixels(), reference), 0u) << m.name << " round " << round;
			// Each object's ModelViewProjTrafo (GPU-derived: one record each); LightLocation is a constant here (the
			// objects have no ViewTrafo).
			EXPECT_LE(heap->stats().heap.derived_uniforms, 40u + 2u) << m.name;
			EXPECT_EQ(heap->stats().heap.derive_records, 40u) << m.name;
			auto findings = heap->heapScenes().front()->validateHeap();
			ASSERT_TRUE(findings.ok()) << findings.error().message;
			EXPECT_TRUE(findings->empty()) << m.name << ": " << (findings->empty() ? "" : findings->front());
		}
		// The last frame's edits (objects 2, 5, …, 38) re-packed 2 entries each: the ModelTrafo and its NormalMatrix.
		EXPECT_EQ(heap->stats().heap.uniform_uploads, 2u * 13u) << m.name;
	}
}

/// An object's own ModelTrafo (a node nothing else reads when it is placed, so the heap skips the pool search for it)
/// must still be found by a second object reading the same node later: the trafo stays one ModelTrafo and one
/// NormalMatrix allocation (one upload each per edit) whichever object came first, and either object may leave first.
TEST_F(HeapRenderTest, AnObjectsOwnTrafoIsSharedWhenASecondObjectReadsIt)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	cval<math::Trafo3d> trafo(math::Trafo3d::translation(math::V3d(-0.3, 0, 0.2)));
	// Sharing is by aval identity. The classic reference reads its own aval of the same cval: were it to read the heap
	// objects' aval, that node would have a reader before the heap's first entry and the skip would never be taken.
	const auto shared = scene::uniform(trafo);
	const auto reference_trafo = scene::uniform(trafo);
	auto object = [&](float dx, const adaptive::aval<scene::UniformValue>& model)
	{
		RenderObject o;
		o.effect = lit;
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(dx - 0.2f, -0.2f, 0), V3f(dx + 0.2f, -0.2f, 0), V3f(dx, 0.25f, 0)},
		    VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] =
		    scene::BufferView::of(std::vector<V3f>(3, glm::normalize(V3f(0.5f, 0.2f, -1))), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(230, 190, 60));
		o.uniforms["ModelTrafo"] = model;
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		return scene::makeRenderObject(std::move(o));
	};
	const RenderObjectPtr a = object(0.0f, shared);
	const RenderObjectPtr b = object(0.6f, shared);
	const RenderObjectPtr ref_a = object(0.0f, reference_trafo);
	const RenderObjectPtr ref_b = object(0.6f, reference_trafo);
	adaptive::cset<RenderObjectPtr> set, reference_set;
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto heap = task(RenderTree::ofObjects(set), options);
	auto classic = task(RenderTree::ofObjects(reference_set), classicOptions());
	auto add = [&](const RenderObjectPtr& o, const RenderObjectPtr& ref)
	{
		set.add(o);
		reference_set.add(ref);
	};
	auto remove = [&](const RenderObjectPtr& o, const RenderObjectPtr& ref)
	{
		set.remove(o);
		reference_set.remove(ref);
	};
	auto matchesClassic = [&](const char* step)
	{
		ASSERT_EQ(frame(*classic), "") << step;
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "") << step;
		EXPECT_EQ(differing(pixels(), reference), 0u) << step;
		expectValidHeap(*heap);
	};
	auto turn = [&]
	{
		trafo.setValue(trafo.value() * math::Trafo3d::rotation(math::V3d(1, 0, 0), 0.3));
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.uniform_uploads, 2u) << "ModelTrafo and NormalMatrix, once each";
	};
	// The first reader alone (its pool search skipped), then a second reader in a later frame.
	add(a, ref_a);
	matchesClassic("a alone");
	add(b, ref_b);
	matchesClassic("a and b");
	turn();
	matchesClassic("a and b, turned");
	// The first leaves first, then the second; then both come back in one frame.
	remove(a, ref_a);
	matchesClassic("b alone");
	turn();
	remove(b, ref_b);
	ASSERT_EQ(frame(*heap), "");
	EXPECT_EQ(heap->stats().heap.live_bytes, 0u);
	expectValidHeap(*heap);
	add(a, ref_a);
	add(b, ref_b);
	matchesClassic("both again");
	turn();
	matchesClassic("both again, turned");
}

} // namespace
} // namespace quokka::heap::test
