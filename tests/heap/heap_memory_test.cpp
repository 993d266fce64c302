// heap_memory_test.cpp — HeapScene::hostMemory(): what a heap scene holds in host memory, by category, grows by the
// same bytes for every object of the same shape and goes back when the objects leave.
#include "heap_fixture.hpp"

namespace quokka::heap::test
{
namespace
{

using Memory = runtime::RenderTask::HostMemory;

/// The per-object categories of `m` (what placing one more object of a shape adds).
std::vector<uint64_t> perObject(const Memory& m)
{
	return {m.heap.objects, m.heap.private_sets, m.heap.pool, m.heap.subscriptions};
}

/// Lit triangles with their own ModelTrafo (a private part, and the camera-relative ModelViewProjTrafo derived from it
/// per object) and indices, all of one colour: every object has the same shape.
std::vector<RenderObjectPtr> litObjects(const fx::Effect& lit, int count, int first)
{
	std::vector<RenderObjectPtr> out;
	for (int i = first; i < first + count; ++i)
	{
		// (A 12 × 10 grid of triangles that do not overlap: the heap does not keep the draw order.)
		const float x = -0.9f + 0.15f * float(i % 12), y = -0.9f + 0.15f * float(i / 12);
		RenderObject o = litTriangle(lit, V3f(x, y, 0), V3f(x + 0.1f, y, 0), V3f(x, y + 0.1f, 0), rgba(230, 190, 60));
		o.indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2}, VK_FORMAT_R32_UINT);
		o.uniforms["ModelTrafo"] =
		    scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.5))));
		o.draw_call = adaptive::constant(scene::DrawCall{true, 3});
		out.push_back(scene::makeRenderObject(std::move(o)));
	}
	return out;
}

TEST_F(HeapRenderTest, HostMemoryGrowsByTheSameBytesPerObjectAndGoesBackWhenTheyLeave)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	adaptive::cset<RenderObjectPtr> set;
	auto heap = task(RenderTree::ofObjects(set), modes()[1].options);
	ASSERT_EQ(frame(*heap), "");
	const Memory empty = heap->hostMemory();
	EXPECT_EQ(perObject(empty), (std::vector<uint64_t>{0, 0, 0, 0})) << "an empty scene holds no object's memory";

	std::vector<Memory> after; // after 40, 80 and 120 objects
	std::vector<RenderObjectPtr> all;
	for (int step = 0; step < 3; ++step)
	{
		const std::vector<RenderObjectPtr> more = litObjects(lit, 40, step * 40);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& o : more)
				    set.add(o);
		    });
		all.insert(all.end(), more.begin(), more.end());
		ASSERT_EQ(frame(*heap), "");
		ASSERT_EQ(heap->stats().heap.objects, uint32_t(all.size()));
		after.push_back(heap->hostMemory());
	}
	// Each object: its record, its private block's description (own trafo, buffers), its pooled ModelViewProjTrafo
	// entry and the edges from the inputs it and that entry read — the same bytes for every object of a shape. (The
	// pool also holds the constants every object shares: a fixed part.)
	for (size_t c = 0; c < 4; ++c)
	{
		SCOPED_TRACE("category " + std::to_string(c));
		const uint64_t step = perObject(after[1])[c] - perObject(after[0])[c];
		EXPECT_GT(step, 0u);
		EXPECT_EQ(step % 40, 0u);
		EXPECT_EQ(perObject(after[2])[c] - perObject(after[1])[c], step);
		if (c != 2)
		{
			EXPECT_EQ(perObject(after[0])[c], step) << "nothing shared";
		}
	}
	EXPECT_GE(after[0].heap.objects / 40, 200u) << "an object's record";
	// The camera-relative trafo derived on the device: an interned node and a record per object.
	EXPECT_GT(after[2].heap.derive, after[0].heap.derive);
	EXPECT_GT(after[2].heap.draws, empty.heap.draws) << "commands and slot lists grow with the objects";
	EXPECT_GT(after[2].heap.tables, 0u);
	EXPECT_GT(after[2].heap.allocator, 0u);
	EXPECT_GT(after[2].routers, empty.routers) << "the router's table of routed objects";
	EXPECT_EQ(after[2].total(), after[2].heap.objects + after[2].heap.private_sets + after[2].heap.pool +
	                                after[2].heap.subscriptions + after[2].heap.tables + after[2].heap.draws +
	                                after[2].heap.allocator + after[2].heap.derive + after[2].heap.frame +
	                                after[2].routers);
	// The device derived every object's camera-relative trafo right, though the constituents' buffer grew twice (by a
	// copy on the device: no host copy of it is kept).
	const Rgba8Image heap_image = pixels();
	EXPECT_GT(covered(heap_image), 100u);
	EXPECT_EQ(differing(heap_image, render(RenderTree::ofObjects(adaptive::asetOf(all)), classicOptions())), 0u);
	// A task's figure is its heap scenes' summed.
	EXPECT_EQ(heap->heapScenes().size(), 1u);
	EXPECT_EQ(heap->heapScenes()[0]->hostMemory().total(), after[2].heap.total());

	adaptive::transact(
	    [&]
	    {
		    for (const RenderObjectPtr& o : all)
			    set.remove(o);
	    });
	ASSERT_EQ(frame(*heap), "");
	ASSERT_EQ(frame(*heap), ""); // (derived nodes are collected after the removals)
	const Memory gone = heap->hostMemory();
	EXPECT_EQ(perObject(gone), (std::vector<uint64_t>{0, 0, 0, 0})) << "the objects' memory went with them";
	EXPECT_LT(gone.heap.derive, after[2].heap.derive) << "their derived nodes and constituents went too";
}

} // namespace
} // namespace quokka::heap::test
