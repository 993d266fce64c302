// heap_upload_test.cpp — upload shape: a block written twice in a frame keeps the later bytes, side-by-side objects
// upload as one copy region, spread removals go through the ring's scatter, a chunk's writes go in place until one is
// staged, changes go in place only while no list reads the scene, a bulk frame converts on worker threads and uploads
// the bytes the calling thread would.
#include "heap_fixture.hpp"

#include "heap/arena_staging.hpp"
#include "heap/heap_test_access.hpp"

namespace quokka::heap::test
{
namespace
{

/// A placement that fails after its inputs were staged (here: a draw reading more vertices than the object has) frees
/// its blocks again, and the next object of the frame is handed the same bytes: the frame then wrote them twice, and
/// the later write must win. (The failing frame reports the bad object and uploads nothing; its writes go up with the
/// next frame's.)
TEST_F(HeapRenderTest, BytesWrittenTwiceInOneFrameKeepTheLaterWrite)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto object = [&](float dx, V4f color, uint32_t count, const adaptive::aval<scene::UniformValue>& model)
	{
		RenderObject o = litTriangle(lit, V3f(dx - 0.2f, -0.2f, 0), V3f(dx + 0.2f, -0.2f, 0), V3f(dx, 0.25f, 0), color);
		o.uniforms["ModelTrafo"] = model;
		o.draw_call = adaptive::constant(scene::DrawCall{false, count});
		return scene::makeRenderObject(std::move(o));
	};
	auto model = [](double z) { return scene::uniform(math::Trafo3d::translation(math::V3d(0, 0, z))); };
	for (const Mode& mode : modes())
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		const RenderObjectPtr a = object(-0.5f, rgba(230, 190, 60), 3, model(0.3));
		const RenderObjectPtr bad = object(0.0f, rgba(20, 200, 90), 6, model(0.2)); // (3 vertices, the draw reads 6)
		const RenderObjectPtr b = object(0.5f, rgba(40, 90, 220), 3, model(0.4));
		adaptive::cset<RenderObjectPtr> set;
		auto heap = task(RenderTree::ofObjects(set), mode.options);
		set.add(a);
		ASSERT_EQ(frame(*heap), "");
		adaptive::transact(
		    [&]
		    {
			    set.add(bad);
			    set.add(b);
		    });
		EXPECT_NE(frame(*heap).find("holds 3 elements but the draw reads 6"), std::string::npos);
		ASSERT_EQ(frame(*heap), "");
		if (mode.options.heap.tuning.write_in_place)
		{
			EXPECT_GT(heap->stats().heap.in_place_bytes, 0u); // (both written in place: the later write is the last)
		}
		else
		{
			EXPECT_GT(heap->stats().heap.overlapping_writes, 0u)
			    << "the bad object's bytes were handed to the next one";
		}
		expectValidHeap(*heap);
		const Rgba8Image img = pixels();
		EXPECT_EQ(differing(img, render(RenderTree::ofObjects(adaptive::asetOf(std::vector{a, b})), classicOptions())),
		          0u);
	}
}

TEST_F(HeapRenderTest, ObjectsPlacedSideBySideUploadAsOneCopyRegion)
{
	// Every block is staged whole (its padding to 16 bytes too), so blocks the bump cursor places side by side — each
	// object's private parts (36-byte positions and normals, its own trafos), and the objects one after another —
	// continue one write: a frame placing 300 objects into an empty heap records one copy region, not one per part.
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 300; ++i)
	{
		const float x = -0.9f + 1.8f * float(i % 20) / 19.0f, y = -0.9f + 1.8f * float(i / 20) / 14.0f;
		RenderObject o =
		    litTriangle(lit, V3f(x - 0.05f, y - 0.05f, 0), V3f(x + 0.05f, y - 0.05f, 0), V3f(x, y + 0.06f, 0),
		                rgba(40, 90, 220)); // (one pooled colour: the blocks below are private)
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0, 0, 0.001 * i)));
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	for (const Mode& mode : modes())
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		adaptive::cset<RenderObjectPtr> set;
		auto heap = task(RenderTree::ofObjects(set), mode.options);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& o : objects)
				    set.add(o);
		    });
		ASSERT_EQ(frame(*heap), "");
		const HeapStats& st = heap->stats().heap;
		EXPECT_EQ(st.added, 300u);
		EXPECT_EQ(st.chunks, 1u);
		EXPECT_EQ(st.copy_regions, 1u);
		EXPECT_EQ(st.scatters,
		          mode.options.heap.tuning.scatter_above == 0 ? 1u : 0u); // (one region: copied unless forced)
		EXPECT_GE(st.upload_bytes, st.arena_bytes); // (every block staged whole, plus the draw headers and records)
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), render(RenderTree::ofObjects(adaptive::asetOf(objects)), classicOptions())), 0u);
		// Every other object leaves and comes back: each returns to a hole of its size, one region per hole.
		for (bool adding : {false, true})
		{
			adaptive::transact(
			    [&]
			    {
				    for (size_t i = 0; i < objects.size(); i += 2)
					    adding ? set.add(objects[i]) : set.remove(objects[i]);
			    });
			ASSERT_EQ(frame(*heap), "");
		}
		// (Written in place, into the chunk's mapped memory: nothing to copy.)
		const bool in_place = mode.options.heap.tuning.write_in_place;
		EXPECT_EQ(heap->stats().heap.copy_regions, in_place ? 0u : 150u);
		EXPECT_EQ(heap->stats().heap.scatters, !in_place && mode.options.heap.tuning.scatter_above < 150 ? 1u : 0u);
		EXPECT_EQ(heap->stats().heap.in_place_bytes > 0, in_place);
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), render(RenderTree::ofObjects(adaptive::asetOf(objects)), classicOptions())), 0u);
	}
}

/// Removals move a slot's last records into the holes they leave, one record (and draw header) region each in the
/// context's staging ring: spread over a large slot they are many short regions, which the ring sends through its
/// scatter copy when HeapTuning::ring_scatter_above says so — and the image is the same either way.
TEST_F(HeapRenderTest, SpreadRemovalsStageTheirMovedRecordsThroughTheRingsScatterWhenAsked)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 2400; ++i)
	{
		// A 60 × 40 grid of small triangles that do not overlap (the image does not depend on draw order).
		const float x = -0.95f + 1.9f * float(i % 60) / 59.0f, y = -0.95f + 1.9f * float(i / 60) / 39.0f;
		objects.push_back(
		    scene::makeRenderObject(litTriangle(lit, V3f(x - 0.01f, y - 0.01f, 0), V3f(x + 0.01f, y - 0.01f, 0),
		                                        V3f(x, y + 0.015f, 0), rgba(i % 200, 120, 200))));
	}
	std::vector<RenderObjectPtr> kept;
	for (size_t i = 0; i < objects.size(); ++i)
		if (i % 8 != 3)
			kept.push_back(objects[i]);
	const uint32_t forced[] = {0u, UINT32_MAX};
	for (const uint32_t ring_above : forced)
	{
		SCOPED_TRACE("ring_scatter_above " + std::to_string(ring_above));
		runtime::RenderOptions o;
		o.path = runtime::RenderPath::Heap;
		o.heap.draw = DrawStrategy::Indirect;
		o.heap.tuning.ring_scatter_above = ring_above;
		o.heap.tuning.write_in_place = false; // (the moved records go through the ring)
		adaptive::cset<RenderObjectPtr> set;
		auto heap = task(RenderTree::ofObjects(set), o);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& obj : objects)
				    set.add(obj);
		    });
		ASSERT_EQ(frame(*heap), "");
		// Every eighth object leaves: 300 holes spread over the slot, each refilled from its end.
		adaptive::transact(
		    [&]
		    {
			    for (size_t i = 3; i < objects.size(); i += 8)
				    set.remove(objects[i]);
		    });
		ASSERT_EQ(frame(*heap), "");
		const gpu::StagingFlushStats& ring = heap->stats().staging;
		EXPECT_GT(ring.regions + ring.scattered, 200u);
		if (ring_above == 0)
		{
			EXPECT_GE(ring.scatters, 1u);
			EXPECT_GT(ring.scattered, 200u);
		}
		else
		{
			EXPECT_EQ(ring.scatters, 0u);
		}
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), render(RenderTree::ofObjects(adaptive::asetOf(kept)), classicOptions())), 0u);
	}
}

/// Chunk::reserve, the rule for the chunks' writes: with the frame writing in place (HostPages::setInPlace) a write
/// goes into the chunk's mapped device memory while the chunk's buffer holds the range and nothing was staged for the
/// chunk in the frame — no staged write, no compaction move; after the first staged write every later write of the
/// chunk is staged too (it must land after it). A device-local chunk, or a frame not in place, stages everything.
TEST_F(HeapRenderTest, AChunkWritesInPlaceUntilOneOfItsWritesIsStaged)
{
	if (device().info().host_visible_device_local_bytes == 0)
		GTEST_SKIP() << "no mappable device-local memory";
	auto chunkOf = [&](gpu::MemoryDomain domain)
	{
		gpu::GrowBufferDesc desc;
		desc.min_capacity = 4096;
		desc.max_capacity = 1 << 16;
		desc.domain = domain;
		auto storage = gpu::GrowBuffer::create(device(), desc);
		EXPECT_TRUE(storage.ok());
		return std::make_unique<detail::Chunk>(1 << 16, std::move(storage).value());
	};
	detail::HostPages pages;
	pages.bind(device());
	pages.setInPlace(true);
	auto mapped = chunkOf(gpu::MemoryDomain::DeviceMapped);
	std::byte* memory = mapped->buffer()->mapped();
	ASSERT_NE(memory, nullptr);
	auto in = [&](std::byte* p) { return p >= memory && p < memory + mapped->buffer()->size(); };

	auto a = mapped->reserve(pages, 64, 48);
	ASSERT_TRUE(a.ok());
	EXPECT_EQ(*a, memory + 64);
	auto b = mapped->reserve(pages, 4096 - 32, 32); // (the last bytes the buffer holds)
	ASSERT_TRUE(b.ok());
	EXPECT_EQ(*b, memory + 4096 - 32);
	EXPECT_TRUE(mapped->pending.empty());
	EXPECT_EQ(pages.takeInPlaceBytes(), 80u);
	auto beyond = mapped->reserve(pages, 4096 - 16, 32); // (past the buffer: staged, copied after growth)
	ASSERT_TRUE(beyond.ok());
	EXPECT_FALSE(in(*beyond));
	auto after = mapped->reserve(pages, 256, 16); // (held by the buffer, but after a staged write: staged)
	ASSERT_TRUE(after.ok());
	EXPECT_FALSE(in(*after));
	EXPECT_EQ(mapped->pending.size(), 2u);
	EXPECT_EQ(pages.takeInPlaceBytes(), 0u);

	auto moving = chunkOf(gpu::MemoryDomain::DeviceMapped);
	moving->moves.push_back({512, 0, 64}); // (a compaction move lands after the host's writes)
	auto moved = moving->reserve(pages, 0, 16);
	ASSERT_TRUE(moved.ok());
	EXPECT_NE(*moved, moving->buffer()->mapped());
	EXPECT_EQ(moving->pending.size(), 1u);

	auto plain = chunkOf(gpu::MemoryDomain::DeviceLocal);
	auto local = plain->reserve(pages, 0, 16);
	ASSERT_TRUE(local.ok());
	EXPECT_EQ(plain->pending.size(), 1u);

	pages.setInPlace(false);
	auto fresh = chunkOf(gpu::MemoryDomain::DeviceMapped);
	auto staged = fresh->reserve(pages, 0, 16);
	ASSERT_TRUE(staged.ok());
	EXPECT_NE(*staged, fresh->buffer()->mapped());
	EXPECT_EQ(fresh->pending.size(), 1u);
	EXPECT_EQ(pages.takeInPlaceBytes(), 0u);
}

/// A frame writes its changes in place — straight into the mapped device memory of the chunks, draw arrays and derive
/// arrays (HeapTuning::write_in_place) — only while no command list that may read the scene is in flight. A frame
/// recorded and not yet submitted when the next changes come keeps its image of the scene before them: the next frame
/// stages its writes instead. Once every list retired, the frame after writes in place again and copies nothing.
TEST_F(HeapRenderTest, ChangesGoInPlaceOnlyWhileNoListReadsTheScene)
{
	const Effects fx;
	for (uint64_t chunk_bytes : {uint64_t(0), uint64_t(16) << 10})
	{
		SCOPED_TRACE(chunk_bytes ? "paged" : "one chunk");
		ASSERT_TRUE(device().waitIdle().ok());
		runtime_->collect();
		RandomScene s = randomScene(11, 80, fx, 8);
		const std::vector<RenderObjectPtr> first(s.objects.begin(), s.objects.begin() + 70);
		adaptive::cset<RenderObjectPtr> set;
		for (const RenderObjectPtr& o : first)
			set.add(o);
		runtime::RenderOptions options;
		options.path = runtime::RenderPath::Heap;
		options.heap.max_chunk_bytes = chunk_bytes;
		ASSERT_TRUE(options.heap.tuning.write_in_place); // (the default)
		auto heap = task(RenderTree::ofObjects(set), options);
		ASSERT_EQ(frame(*heap), ""); // (placement: the chunks' buffers are made by it, so everything is staged)
		auto move = [&](size_t from, size_t step, double dx)
		{
			adaptive::transact(
			    [&]
			    {
				    for (size_t i = from; i < first.size(); i += step)
					    s.trafos[i].setValue(s.trafos[i].value() * math::Trafo3d::translation({dx, 0.02, 0.0}));
			    });
		};
		std::vector<RenderObjectPtr> present = first;
		auto reference = [&] { return render(RenderTree::ofObjects(adaptive::asetOf(present)), classicOptions()); };

		// Nothing in flight: an edit of trafos (pooled uniforms, their GPU-derived products' constituents) goes in
		// place, every byte of it — no copy region, no staging ring region.
		move(0, 7, 0.1);
		ASSERT_EQ(frame(*heap), "");
		const HeapStats& edited = heap->stats().heap;
		EXPECT_GT(edited.in_place_bytes, 0u);
		EXPECT_EQ(edited.in_place_bytes, edited.upload_bytes);
		EXPECT_EQ(edited.copy_regions, 0u);
		EXPECT_EQ(heap->stats().staging.regions + heap->stats().staging.scattered, 0u);
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), reference()), 0u);

		// Adds, removals and edits in one frame: in place where the chunks' buffers hold them, the image classic's.
		adaptive::transact(
		    [&]
		    {
			    for (size_t i = 0; i < 10; ++i)
				    set.remove(first[3 + 6 * i]);
			    for (size_t i = first.size(); i < s.objects.size(); ++i)
				    set.add(s.objects[i]);
		    });
		present.clear();
		for (size_t i = 0; i < s.objects.size(); ++i)
			if (i >= first.size() || i < 3 || (i - 3) % 6 != 0 || i > 57)
				present.push_back(s.objects[i]);
		move(1, 5, -0.05);
		ASSERT_EQ(frame(*heap), "");
		EXPECT_GT(heap->stats().heap.in_place_bytes, 0u);
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), reference()), 0u);

		// Frame A recorded, not submitted; the next changes: frame B must not write what A will read.
		const Rgba8Image before = reference();
		auto a = device().beginCommands();
		ASSERT_TRUE(a.ok());
		ASSERT_TRUE(heap->run(*a, *fb_).ok());
		move(2, 3, 0.08);
		// (A shared colour too: a pooled value the draws read as it is — the trafos reach them through the derive
		// kernel, which frame B runs.)
		adaptive::transact([&] { s.shared_colors[0].setValue(rgba(250, 20, 200)); });
		auto fb_b = runtime::createFramebuffer(device(), signature_, kSize, kSize);
		ASSERT_TRUE(fb_b.ok());
		auto b = device().beginCommands();
		ASSERT_TRUE(b.ok());
		ASSERT_TRUE(heap->run(*b, *fb_b).ok());
		const HeapStats& staged = heap->stats().heap;
		EXPECT_EQ(staged.in_place_bytes, 0u);
		EXPECT_GT(staged.upload_bytes, 0u);
		ASSERT_TRUE(device().submit(std::move(*a)).ok());
		ASSERT_TRUE(device().submitAndWait(std::move(*b)).ok());
		EXPECT_EQ(differing(pixels(), before), 0u) << "frame A drew what frame B wrote";
		auto img_b = gpu::readImageRgba8(device(), *fb_b->output());
		ASSERT_TRUE(img_b.ok());
		EXPECT_EQ(differing(*img_b, reference()), 0u);

		// Both retired: in place again.
		move(0, 4, -0.03);
		ASSERT_EQ(frame(*heap), "");
		EXPECT_GT(heap->stats().heap.in_place_bytes, 0u);
		EXPECT_EQ(heap->stats().heap.copy_regions, 0u);
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), reference()), 0u);
	}
}

/// A frame placing many objects converts their vertex and index data on the heap's worker threads and has its staging
/// pages made ahead (HeapTuning::bulk_placement_above): the arena holds the same bytes, byte for byte, as when the
/// calling thread converts everything, and the image is classic's — in one chunk, and paged into small chunks where
/// placements fail on full chunks and roll back after their conversions were queued.
TEST_F(HeapRenderTest, ABulkFrameConvertsOnWorkerThreadsAndUploadsWhatTheCallingThreadWould)
{
	const Effects fx;
	// Meshes of up to 40 triangles: positions, normals, UNORM8 colours, u16/u32 indices and per-instance attributes
	// of hundreds of bytes each, so most conversions are queued (small ones are converted at once).
	RandomScene s = randomScene(7, 300, fx, 40);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
	const Rgba8Image reference = render(tree, classicOptions());
	ASSERT_GT(covered(reference), kSize * kSize / 4);
	for (uint64_t chunk_bytes : {uint64_t(0), uint64_t(16) << 10})
		for (const Mode& mode : modes(chunk_bytes))
		{
			if (mode.options.path != runtime::RenderPath::Heap)
				continue;
			SCOPED_TRACE(std::string(mode.name) + (chunk_bytes ? ", paged" : ""));
			std::vector<std::vector<std::byte>> arena[2];
			for (bool bulk : {false, true})
			{
				// (The tasks before are torn down first: a node another task still reads is placed differently.)
				ASSERT_TRUE(device().waitIdle().ok());
				runtime_->collect();
				runtime::RenderOptions options = mode.options;
				options.heap.tuning.bulk_placement_above = bulk ? 1 : UINT32_MAX;
				options.heap.tuning.convert_threads = 2;
				auto t = task(tree, options);
				ASSERT_EQ(frame(*t), "");
				const HeapStats& st = t->stats().heap;
				EXPECT_EQ(st.added, 300u);
				if (bulk)
				{
					EXPECT_GT(st.converted_off_thread, st.arena_bytes / 4) << "most buffers converted on the workers";
					EXPECT_LT(st.converted_off_thread, st.upload_bytes);
				}
				else
				{
					EXPECT_EQ(st.converted_off_thread, 0u);
				}
				if (chunk_bytes)
				{
					EXPECT_GT(st.chunks, 4u);
				}
				expectValidHeap(*t);
				EXPECT_EQ(differing(pixels(), reference), 0u);
				auto bytes = detail::HeapTestAccess::arenaBytes(*t->heapScenes().front());
				ASSERT_TRUE(bytes.ok()) << bytes.error().message;
				arena[bulk] = std::move(bytes.value());
			}
			ASSERT_EQ(arena[0].size(), arena[1].size());
			for (size_t c = 0; c < arena[0].size(); ++c)
				EXPECT_TRUE(arena[0][c] == arena[1][c]) << "chunk " << c << " differs";
		}
}

} // namespace
} // namespace quokka::heap::test
