// heap_lifecycle_test.cpp — object lifecycle: removing the newest objects, additions in a frame that removes an owner,
// teardown without leaks, one adaptive node per placed object, objects routed to the classic pass, validators clean
// through 10^4 random operations.
#include "../test_seed.hpp"
#include "heap_fixture.hpp"

namespace quokka::heap::test
{
namespace
{

TEST_F(HeapRenderTest, RemovingExactlyTheNewestObjectsInOneFrameShrinksEveryArrayCleanly)
{
	// Adds append records and headers at the ends of their arrays; removing exactly those objects in the next frame
	// shrinks the arrays back below ranges the add frame had marked dirty (bench update's add-then-undo pattern).
	const Effects fx;
	RandomScene s = randomScene(13, 60, fx);
	for (const Mode& m : modes(8192))
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		adaptive::cset<RenderObjectPtr> set(std::vector<RenderObjectPtr>(s.objects.begin(), s.objects.begin() + 40));
		const auto tree = RenderTree::ofObjects(set);
		auto classic = task(tree, classicOptions());
		auto heap = task(tree, m.options);
		for (int round = 0; round < 3; ++round)
		{
			for (bool adding : {true, false})
			{
				{
					adaptive::Transaction tx;
					for (size_t i = 40; i < 60; ++i)
						if (adding)
							set.add(s.objects[i]);
						else
							set.remove(s.objects[i]);
				}
				ASSERT_EQ(frame(*classic), "");
				const Rgba8Image reference = pixels();
				ASSERT_EQ(frame(*heap), "");
				ASSERT_EQ(differing(pixels(), reference), 0u) << m.name << ", round " << round << ", adding " << adding;
				auto findings = heap->heapScenes().front()->validateHeap();
				ASSERT_TRUE(findings.ok()) << findings.error().message;
				EXPECT_TRUE(findings->empty()) << m.name << ": " << findings->front();
			}
		}
		EXPECT_EQ(heap->stats().heap.objects, 40u) << m.name;
	}
}

/// A removal and an addition in one frame that read the same ModelTrafo: the removed object's own entries die with
/// it (their pool erasures are batched after the frame's removals), and the added object must not pick one of them
/// up — it gets entries of its own, the image matches classic, the validators stay clean and an edit re-packs once.
TEST_F(HeapRenderTest, AnObjectAddedInTheFrameThatRemovesTheOwnerOfItsTrafoGetsLiveEntries)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	cval<math::Trafo3d> trafo(math::Trafo3d::translation(math::V3d(-0.3, 0, 0.2)));
	const auto model = scene::uniform(trafo);
	const auto reference_model = scene::uniform(trafo);
	auto object = [&](float dx, const adaptive::aval<scene::UniformValue>& m)
	{
		RenderObject o =
		    litTriangle(lit, V3f(dx - 0.2f, -0.2f, 0), V3f(dx + 0.2f, -0.2f, 0), V3f(dx, 0.25f, 0), rgba(230, 190, 60));
		o.uniforms["ModelTrafo"] = m;
		return scene::makeRenderObject(std::move(o));
	};
	for (const Mode& mode : modes())
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		const RenderObjectPtr a = object(0.0f, model), b = object(0.5f, model);
		const RenderObjectPtr ref_b = object(0.5f, reference_model);
		adaptive::cset<RenderObjectPtr> set, reference_set;
		auto heap = task(RenderTree::ofObjects(set), mode.options);
		auto classic = task(RenderTree::ofObjects(reference_set), classicOptions());
		set.add(a);
		ASSERT_EQ(frame(*heap), "");
		adaptive::transact(
		    [&]
		    {
			    set.remove(a);
			    set.add(b);
		    });
		reference_set.add(ref_b);
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.removed, 1u);
		EXPECT_EQ(heap->stats().heap.added, 1u);
		expectValidHeap(*heap);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), reference), 0u);
		trafo.setValue(trafo.value() * math::Trafo3d::rotation(math::V3d(1, 0, 0), 0.3));
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.uniform_uploads, 2u) << "ModelTrafo and NormalMatrix, once each";
		expectValidHeap(*heap);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image turned = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), turned), 0u);
	}
}

/// reader left and can change), and no allocator reports a leak.
/// Closing a heap scene drops its objects, entries, blocks and buckets whole instead of removing each object: the
/// scene's nodes must still lose every edge to it (no adaptive node of the heap survives, the shared trafo has no
/// reader left and can change), and no allocator reports a leak.
TEST_F(HeapRenderTest, DestroyingAHeapTaskLeavesNoNodeNoEdgeAndNoLeakReport)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	cval<math::Trafo3d> shared_trafo(math::Trafo3d::translation(math::V3d(0, 0, 0.5)));
	const auto shared = scene::uniform(shared_trafo);
	std::vector<RenderObjectPtr> objects;
	std::vector<adaptive::aval<scene::UniformValue>> own;
	for (int i = 0; i < 40; ++i)
	{
		const float x = -0.9f + 0.045f * float(i);
		RenderObject o =
		    litTriangle(lit, V3f(x, -0.1f, 0), V3f(x + 0.04f, -0.1f, 0), V3f(x, 0.1f, 0), rgba(230, 190, 60));
		if (i % 2 == 0)
			o.uniforms["ModelTrafo"] = shared;
		else
		{
			own.push_back(scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.4)))));
			o.uniforms["ModelTrafo"] = own.back();
		}
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	for (const Mode& mode : modes(64 << 10)) // (small chunks: several chunks, buckets and pools)
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		const int64_t before = adaptive::liveObjectCount();
		auto heap = task(tree, mode.options);
		ASSERT_EQ(frame(*heap), "");
		ASSERT_EQ(heap->stats().heap.objects, 40u);
		EXPECT_GT(shared.node()->outputCount(), 0u);
		testing::internal::CaptureStderr();
		heap.reset();
		// Dropping the task retires its heap scene to the runtime; collect() tears it down (no budget: all of it).
		EXPECT_GE(runtime_->retired(), 40u);
		EXPECT_EQ(runtime_->collect(), 0u);
		EXPECT_EQ(runtime_->retired(), 0u);
		const std::string said = testing::internal::GetCapturedStderr();
		EXPECT_EQ(said, "");
		EXPECT_EQ(shared.node()->outputCount(), 0u);
		for (const auto& u : own)
			EXPECT_EQ(u.node()->outputCount(), 0u);
		EXPECT_LE(adaptive::liveObjectCount(), before) << "adaptive nodes of the heap outlived it";
		shared_trafo.setValue(math::Trafo3d::translation(math::V3d(0, 0, 0.6))); // (no reader left to tell)
	}
}

/// A dropped task's heap scene leaves the frame path: the drop is O(1) in its objects, and later frames of any task
/// tear the scene down a slice at a time (RenderOptions::teardown_budget_ms; a budget of 0 still frees a slice per
/// frame) until nothing is left — its objects' inputs lose their edges as it goes, nothing of it outlives the last
/// slice, and collect() finishes what is left at once.
TEST_F(HeapRenderTest, ADroppedTaskIsTornDownInSlicesByLaterFrames)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	constexpr int kObjects = 3000;
	std::vector<RenderObjectPtr> objects;
	std::vector<adaptive::aval<scene::UniformValue>> own;
	for (int i = 0; i < kObjects; ++i)
	{
		const float x = -0.9f + 1.8f * float(i % 60) / 60.0f, y = -0.9f + 1.8f * float(i / 60) / 50.0f;
		RenderObject o = litTriangle(lit, V3f(x, y, 0), V3f(x + 0.02f, y, 0), V3f(x, y + 0.03f, 0), rgba(200, 90, 40));
		own.push_back(scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.3)))));
		o.uniforms["ModelTrafo"] = own.back();
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	options.teardown_budget_ms = 0.0; // one slice per frame
	const int64_t before = adaptive::liveObjectCount();
	auto big = task(RenderTree::ofObjects(adaptive::asetOf(objects)), options);
	ASSERT_EQ(frame(*big), "");
	ASSERT_EQ(big->stats().heap.objects, uint32_t(kObjects));
	const Rgba8Image drawn = pixels();
	EXPECT_GT(covered(drawn), 0u);
	auto small = task(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{objects[0]})), options);
	ASSERT_EQ(frame(*small), "");
	EXPECT_EQ(small->stats().retired_left, 0u);
	EXPECT_EQ(small->stats().teardown_ms, 0.0); // nothing retired: no teardown work

	big.reset();
	size_t left = runtime_->retired();
	EXPECT_GE(left, size_t(kObjects)); // its objects, and their pooled entries and derived values
	EXPECT_GT(own.back().node()->outputCount(), 0u) << "retired, not torn down yet";
	int frames = 0;
	while (left != 0)
	{
		ASSERT_EQ(frame(*small), "");
		++frames;
		const size_t now = small->stats().retired_left;
		EXPECT_EQ(now, runtime_->retired());
		ASSERT_LT(now, left) << "every frame frees a slice";
		left = now;
		ASSERT_LT(frames, 1000);
	}
	// 3000 objects in a table of ≥ 4096 slots, 256 slots a slice: at least 16 frames for the objects alone.
	EXPECT_GE(frames, 16);
	EXPECT_GT(own[0].node()->outputCount(), 0u); // (the small task's one object)
	for (size_t i = 1; i < own.size(); ++i)
		ASSERT_EQ(own[i].node()->outputCount(), 0u) << i;
	EXPECT_EQ(frame(*small), "");
	EXPECT_EQ(small->stats().teardown_ms, 0.0);
	const Rgba8Image one = pixels();
	EXPECT_GT(covered(one), 0u);
	EXPECT_LT(covered(one), covered(drawn)) << "the small task draws its one object";

	// collect() without a budget tears a dropped task down at once; the runtime's destruction frees what is left.
	auto again = task(RenderTree::ofObjects(adaptive::asetOf(objects)), options);
	ASSERT_EQ(frame(*again), "");
	again.reset();
	EXPECT_GT(runtime_->retired(), 0u);
	EXPECT_EQ(runtime_->collect(), 0u);
	small.reset();
	EXPECT_EQ(runtime_->collect(), 0u);
	for (const auto& u : own)
		EXPECT_EQ(u.node()->outputCount(), 0u);
	EXPECT_LE(adaptive::liveObjectCount(), before) << "adaptive nodes of the heap outlived it";
	auto last = task(RenderTree::ofObjects(adaptive::asetOf(objects)), options);
	ASSERT_EQ(frame(*last), "");
	last.reset();
	EXPECT_GT(runtime_->retired(), 0u); // (left to the runtime's destruction in TearDown: checked by ASan builds)
}

/// A heap scene being dismantled refuses updates; each dismantle() call frees at least one slice, even with a deadline
/// that has passed, and dismantleLeft() counts down to 0.
TEST_F(HeapRenderTest, DismantleMakesProgressPerCallAndRefusesUpdates)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	heap::HeapScene s(runtime_->context(), signature_, heap::HeapOptions{});
	for (int i = 0; i < 700; ++i)
	{
		RenderObject o = litTriangle(lit, V3f(0, 0, 0), V3f(0.1f, 0, 0), V3f(0, 0.1f, 0), rgba(200, 90, 40));
		o.uniforms["ModelTrafo"] =
		    scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.001 * i))));
		s.add(scene::makeRenderObject(std::move(o)));
	}
	ASSERT_TRUE(s.update().ok());
	ASSERT_EQ(s.objectCount(), 700u);
	const HeapHostMemory placed = s.hostMemory();
	size_t left = s.dismantleLeft();
	EXPECT_GE(left, 700u);
	int calls = 0;
	const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
	while (!s.dismantle(past))
	{
		++calls;
		ASSERT_LT(s.dismantleLeft(), left);
		left = s.dismantleLeft();
		ASSERT_LT(calls, 1000);
	}
	EXPECT_GE(calls, 3); // ≥ 1024 table slots for 700 objects, 256 a call
	EXPECT_EQ(s.dismantleLeft(), 0u);
	EXPECT_EQ(s.objectCount(), 0u);
	// What the scene's destruction has left to free is O(buckets): the tables' storage, the derive's arrays and the
	// frame queues went to the reaper thread (at 10^7 objects they are hundreds of MiB, a long frame if freed there).
	const HeapHostMemory held = s.hostMemory();
	EXPECT_EQ(held.derive, 0u);
	EXPECT_EQ(held.objects + held.private_sets + held.pool + held.subscriptions, 0u);
	EXPECT_LT(held.tables * 20, placed.tables) << "only the buckets' maps: " << held.tables << " bytes";
	EXPECT_LT(held.total() * 20, placed.total()) << held.total() << " bytes left of " << placed.total();
	const Result<void> r = s.update();
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("dismantle"), std::string::npos) << r.error().message;
}

TEST_F(HeapRenderTest, PlacingAnObjectCreatesItsNodeAndOneForItsCameraRelativeTrafo)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto nodesPlacing = [&](int count) -> int64_t
	{
		std::vector<RenderObjectPtr> objects;
		for (int i = 0; i < count; ++i)
		{
			const float x = -0.9f + 0.045f * float(i);
			RenderObject o =
			    litTriangle(lit, V3f(x, -0.1f, 0), V3f(x + 0.04f, -0.1f, 0), V3f(x, 0.1f, 0), rgba(230, 190, 60));
			o.indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2}, VK_FORMAT_R32_UINT);
			o.uniforms["ModelTrafo"] =
			    scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.5))));
			o.draw_call = adaptive::constant(scene::DrawCall{true, 3});
			objects.push_back(scene::makeRenderObject(std::move(o)));
		}
		const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
		const int64_t before = adaptive::liveObjectCount();
		auto heap = task(tree, modes()[1].options);
		EXPECT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.objects, uint32_t(count));
		const int64_t made = adaptive::liveObjectCount() - before;
		heap.reset();
		EXPECT_EQ(runtime_->collect(), 0u); // (torn down now: the next count starts from nothing of it)
		return made;
	};
	const int64_t twenty = nodesPlacing(20), forty = nodesPlacing(40);
	// The HeapObject: its own ModelTrafo and the NormalMatrix derived from it are parts of its private block,
	// re-packed by the object itself (no pool entry, which would be an adaptive node each). And the camera-relative
	// ModelViewProjTrafo the stock trafo reads, computed on the GPU: the constituent that follows the ModelTrafo — one
	// more. Its derivation is interned without a node (no cached value on the host) and its entry, the record's owner,
	// is a plain record.
	EXPECT_EQ(forty - twenty, 20 * 2) << "nodes per placed object: " << double(forty - twenty) / 20.0;
}

/// Strip topologies are not heap-drawable: on the heap path the runtime's ObjectRouter sends them to the classic pass
/// and the rest to the heap — through adds and removes of both kinds — and a HeapScene given one fails with one line
/// instead of drawing it wrongly.
TEST_F(HeapRenderTest, ObjectsTheHeapCannotDrawGoToTheClassicPassThroughAddsAndRemoves)
{
	const Effects fx;
	RandomScene s = randomScene(23, 24, fx);
	std::vector<RenderObjectPtr> strips;
	for (size_t i = 0; i < 4; ++i)
	{
		RenderObject o = *s.objects[i];
		o.state.topology = adaptive::constant(VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP);
		strips.push_back(scene::makeRenderObject(std::move(o)));
	}
	std::vector<RenderObjectPtr> all(s.objects.begin() + 4, s.objects.end());
	all.insert(all.end(), strips.begin(), strips.end());
	adaptive::cset<RenderObjectPtr> set(all);
	const auto tree = RenderTree::ofObjects(set);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto classic = task(tree, classicOptions());
	auto heap = task(tree, options);
	for (int step = 0; step < 4; ++step)
	{
		if (step == 1)
		{
			adaptive::Transaction tx;
			set.remove(strips[0]);
			set.remove(strips[1]);
			set.remove(s.objects[5]);
		}
		if (step == 2)
		{
			adaptive::Transaction tx;
			set.add(strips[0]);
			set.add(s.objects[0]);
		}
		if (step == 3)
		{
			adaptive::Transaction tx;
			for (const RenderObjectPtr& x : strips)
				set.remove(x);
		}
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), reference), 0u) << "step " << step;
		EXPECT_GT(covered(reference), 0u);
	}
	// Every strip shows: the image with them differs from the image without them.
	{
		adaptive::Transaction tx;
		set.add(strips[2]);
	}
	ASSERT_EQ(frame(*heap), "");
	const Rgba8Image with_strip = pixels();
	{
		adaptive::Transaction tx;
		set.remove(strips[2]);
	}
	ASSERT_EQ(frame(*heap), "");
	EXPECT_GT(differing(with_strip, pixels()), 0u);

	// The router itself: strips go to its classic set, the rest to the heap, and leave with their set.
	adaptive::cset<RenderObjectPtr> mixed(std::vector<RenderObjectPtr>{s.objects[6], strips[3]});
	HeapScene routed(runtime_->context(), signature_);
	runtime::ObjectRouter router(mixed, routed);
	router.route();
	ASSERT_TRUE(routed.update().ok());
	EXPECT_EQ(routed.objectCount(), 1u);
	EXPECT_EQ(router.classicObjects().force().size(), 1u);
	EXPECT_TRUE(router.classicObjects().force().contains(strips[3]));
	{
		adaptive::Transaction tx;
		mixed.remove(strips[3]);
		mixed.remove(s.objects[6]);
		mixed.add(strips[2]);
	}
	router.route();
	ASSERT_TRUE(routed.update().ok());
	EXPECT_EQ(routed.objectCount(), 0u);
	EXPECT_EQ(router.classicObjects().force().size(), 1u);
	EXPECT_TRUE(router.classicObjects().force().contains(strips[2]));
	EXPECT_EQ(router.routedToHeap(), 1u);
	EXPECT_EQ(router.routedToClassic(), 2u);
	// A heap scene given a strip directly reports it, naming the object, in one line.
	HeapScene strict(runtime_->context(), signature_);
	strict.add(strips[3]);
	const auto r = strict.update();
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("render object #" + std::to_string(strips[3]->id)), std::string::npos)
	    << r.error().message;
	EXPECT_NE(r.error().message.find("topology"), std::string::npos) << r.error().message;
	EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
}

TEST_F(HeapRenderTest, TheRouterMovesObjectsWhenHeapEnabledOrTheirBuffersChangeAndTheImageStays)
{
	// Twelve triangles at their own depths; every third has positions that switch between three vertices and the same
	// three padded past one heap chunk (4 KiB here): too large, it is drawn by the classic path instead of failing
	// the frame. heap_enabled and the buffers flip at random: every frame equals the classic path's image, the
	// counts per reason follow, and the heap holds exactly the objects routed to it.
	const fx::Effect effect = Effects{}.constant;
	std::vector<RenderObjectPtr> objects;
	std::vector<cval<scene::ArrayBuffer>> positions;
	std::vector<std::pair<scene::ArrayBuffer, scene::ArrayBuffer>> sizes; // (small, too large)
	for (int i = 0; i < 12; ++i)
	{
		const float x = -0.9f + 0.15f * float(i), z = 0.1f + 0.05f * float(i);
		RenderObject o = litTriangle(effect, V3f(x, -0.3f, z), V3f(x + 0.12f, -0.3f, z), V3f(x + 0.06f, 0.3f, z),
		                             rgba(30 + 18 * i, 220 - 15 * i, 60, 255));
		if (i % 3 == 0)
		{
			std::vector<V3f> p = {V3f(x, -0.3f, z), V3f(x + 0.12f, -0.3f, z), V3f(x + 0.06f, 0.3f, z)};
			const scene::ArrayBuffer small = scene::ArrayBuffer::of(p);
			p.resize(400, V3f(0.0f)); // (4,800 bytes; the draw call still reads three vertices)
			sizes.emplace_back(small, scene::ArrayBuffer::of(p));
			positions.emplace_back(small);
			o.attributes["Positions"].buffer = positions.back();
		}
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	adaptive::cset<RenderObjectPtr> set(objects);
	const auto tree = RenderTree::ofObjects(set);
	cval<bool> enabled(true);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	options.heap.max_chunk_bytes = 4096;
	options.heap_enabled = enabled;
	auto classic = task(tree, classicOptions());
	auto heap = task(tree, options);
	std::vector<bool> large(positions.size(), false);
	std::mt19937 rng(quokka::test::testSeed(40));
	for (int step = 0; step < 60; ++step)
	{
		SCOPED_TRACE("step " + std::to_string(step));
		adaptive::transact(
		    [&]
		    {
			    if (rng() % 3 == 0)
				    enabled.setValue(!enabled.getValue(adaptive::Token{}));
			    const size_t k = rng() % positions.size();
			    large[k] = !large[k];
			    positions[k].setValue(large[k] ? sizes[k].second : sizes[k].first);
		    });
		ASSERT_EQ(frame(*heap), "");
		const Rgba8Image got = pixels();
		ASSERT_EQ(frame(*classic), "");
		EXPECT_EQ(differing(got, pixels()), 0u);
		const uint64_t too_large = uint64_t(std::count(large.begin(), large.end(), true));
		const bool on = enabled.getValue(adaptive::Token{});
		const auto& routing = heap->stats().routing;
		EXPECT_EQ(routing[size_t(runtime::RouteReason::InputTooLarge)], too_large);
		EXPECT_EQ(routing[size_t(runtime::RouteReason::Heap)], on ? objects.size() - too_large : 0u);
		EXPECT_EQ(routing[size_t(runtime::RouteReason::HeapDisabled)], on ? 0u : objects.size() - too_large);
		EXPECT_EQ(heap->heapScenes()[0]->objectCount(), routing[0]);
		auto checks = heap->validate();
		ASSERT_TRUE(checks.ok()) << checks.error().message;
		EXPECT_TRUE(checks->empty()) << (checks->empty() ? "" : checks->front());
	}
	EXPECT_GT(heap->stats().migrations, 20u);
	// A thousand flips of the switch: nothing leaks (the heap's and the context's checks), the image stays.
	for (int flip = 0; flip < 1000; ++flip)
	{
		enabled.setValue(flip % 2 == 0);
		ASSERT_EQ(frame(*heap), "");
	}
	ASSERT_EQ(frame(*heap), "");
	const Rgba8Image last = pixels();
	ASSERT_EQ(frame(*classic), "");
	EXPECT_EQ(differing(last, pixels()), 0u);
	auto findings = heap->heapScenes()[0]->validateHeap();
	ASSERT_TRUE(findings.ok()) << findings.error().message;
	EXPECT_TRUE(findings->empty()) << (findings->empty() ? "" : findings->front());
	adaptive::transact([&] { set.clear(); });
	ASSERT_EQ(frame(*heap), "");
	EXPECT_EQ(heap->heapScenes()[0]->objectCount(), 0u);
	EXPECT_EQ(heap->stats().routing, (std::array<uint64_t, runtime::kRouteReasons>{}));
	EXPECT_EQ(heap->passes()[0]->objectCount(), 0u);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

/// RenderTask::setHeapEnabled replaces the switch after compilation: a constant false moves every object to the classic
/// pass in the next frame, a new changeable switch is followed from then on, and the image stays the classic one.
TEST_F(HeapRenderTest, SetHeapEnabledReplacesTheSwitchOfACompiledTask)
{
	const Effects fx;
	RandomScene s = randomScene(41, 10, fx);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto classic = task(tree, classicOptions());
	auto heap = task(tree, options);
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	const auto expect = [&](uint64_t on_heap, const char* what)
	{
		ASSERT_EQ(frame(*heap), "") << what;
		EXPECT_EQ(differing(pixels(), reference), 0u) << what;
		EXPECT_EQ(heap->stats().routing[size_t(runtime::RouteReason::Heap)], on_heap) << what;
		EXPECT_EQ(heap->stats().routing[size_t(runtime::RouteReason::HeapDisabled)], s.objects.size() - on_heap)
		    << what;
		EXPECT_EQ(heap->heapScenes()[0]->objectCount(), on_heap) << what;
	};
	expect(s.objects.size(), "compiled with the heap on");
	heap->setHeapEnabled(adaptive::constant(false));
	expect(0, "a constant false");
	cval<bool> on(false);
	heap->setHeapEnabled(on);
	expect(0, "a switch that is off");
	on.setValue(true);
	expect(s.objects.size(), "the switch flipped on");
	heap->setHeapEnabled(adaptive::constant(true));
	on.setValue(false); // (no longer read)
	expect(s.objects.size(), "the old switch flipped after its replacement");
	EXPECT_TRUE(heap->options().heap_enabled.getValue(adaptive::Token{})); // (tasks compiled later read it too)
}

/// HeapScene's membership calls: between two update()s the last call per object wins, adding a held object or
/// removing one not held changes nothing, and a scene built over a set refuses them.
TEST_F(HeapRenderTest, MembershipCallsBetweenUpdatesFollowTheLastCallPerObject)
{
	const Effects fx;
	RandomScene s = randomScene(31, 6, fx);
	HeapScene heap(runtime_->context(), signature_);
	auto held = [&] { return heap.objectCount(); };
	heap.add(s.objects[0]);
	heap.add(s.objects[1]);
	heap.add(s.objects[1]); // twice in one frame: once
	heap.add(s.objects[2]);
	heap.remove(s.objects[2]); // added, then removed: never placed
	heap.remove(s.objects[3]); // not held: nothing
	ASSERT_TRUE(heap.update().ok());
	EXPECT_EQ(held(), 2u);
	EXPECT_EQ(heap.stats().added, 2u);
	heap.add(s.objects[0]); // held already: nothing
	ASSERT_TRUE(heap.update().ok());
	EXPECT_EQ(held(), 2u);
	EXPECT_EQ(heap.stats().added, 0u);
	heap.remove(s.objects[0]);
	heap.add(s.objects[0]); // removed, then added: released and placed again
	heap.remove(s.objects[1]);
	heap.add(s.objects[4]);
	ASSERT_TRUE(heap.update().ok());
	EXPECT_EQ(held(), 2u);
	EXPECT_EQ(heap.stats().removed, 2u);
	EXPECT_EQ(heap.stats().added, 2u);
	auto findings = heap.validateHeap();
	ASSERT_TRUE(findings.ok());
	EXPECT_TRUE(findings->empty()) << findings->front();
	heap.remove(s.objects[0]);
	heap.remove(s.objects[4]);
	ASSERT_TRUE(heap.update().ok());
	EXPECT_EQ(held(), 0u);
	EXPECT_EQ(heap.stats().live_bytes, 0u) << "the last removal gives every block back";

	adaptive::cset<RenderObjectPtr> set(std::vector<RenderObjectPtr>{s.objects[5]});
	HeapScene over_set(runtime_->context(), signature_, set);
	over_set.add(s.objects[0]);
	const auto r = over_set.update();
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("built over a set"), std::string::npos) << r.error().message;
	ASSERT_TRUE(over_set.update().ok()) << "the refusal is reported once; the set still rules";
	EXPECT_EQ(over_set.objectCount(), 1u);
}

TEST_F(HeapRenderTest, ValidatorsStayCleanThroughTenThousandRandomOperations)
{
	const Effects fx;
	const uint32_t seed = quokka::test::testSeed(21);
	std::printf("random scene and operations seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
	RandomScene s = randomScene(seed, 300, fx);
	std::mt19937 rng(seed == 21 ? 9 : seed + 1);
	for (DrawStrategy d : {DrawStrategy::Megacall, DrawStrategy::Indirect})
	{
		adaptive::cset<RenderObjectPtr> set;
		runtime::RenderOptions options;
		options.path = runtime::RenderPath::Heap;
		options.heap.draw = d;
		options.heap.max_chunk_bytes = 8192;
		auto t = task(RenderTree::ofObjects(set), options);
		for (int step = 0; step < 50; ++step)
		{
			{
				adaptive::Transaction tx;
				for (int op = 0; op < 100; ++op)
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
						// A private trafo: its derived uniforms sit side by side and re-pack as one staged run.
						s.trafos[i].setValue(s.trafos[i].value() *
						                     math::Trafo3d::translation({0.001 * double(rng() % 9), 0.0, 0.0}));
						break;
					default:
						s.shared_colors[rng() % 3].setValue(rgba(int(rng() % 256), 0, 0));
					}
				}
			}
			ASSERT_EQ(frame(*t), "") << step;
			if (step % 10 == 9)
			{
				auto findings = t->heapScenes().front()->validateHeap();
				ASSERT_TRUE(findings.ok()) << findings.error().message;
				EXPECT_TRUE(findings->empty()) << strategyName(d) << " step " << step << ": " << findings->front();
			}
		}
		EXPECT_GT(t->stats().heap.chunks, 1u);
	}
}

} // namespace
} // namespace quokka::heap::test
