#include <gtest/gtest.h>

#include <quokka/adaptive/aval.hpp>
#include <quokka/scene/framebuffer_signature.hpp>
#include <quokka/scene/pipeline_state.hpp>
#include <quokka/scene/render_object.hpp>
#include <quokka/scene/render_tree.hpp>

#include <thread>

namespace quokka::scene::test
{

using adaptive::cval;

TEST(PipelineState, DefaultSnapshotHasTheDocumentedDefaults)
{
	PipelineState state;
	const PipelineStateValues v = state.snapshot({});
	EXPECT_EQ(v, PipelineStateValues{});
	EXPECT_EQ(v.topology, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
	EXPECT_TRUE(v.depth_test && v.depth_write);
	EXPECT_FALSE(v.blendFor("Colors").enabled);
}

/// A default state or object allocates no adaptive node: its constant leaves are one thread's shared defaults. Another
/// thread gets its own (nodes belong to the thread that made them), destroyed when that thread ends.
TEST(PipelineState, DefaultLeavesAreSharedPerThreadAndAllocateNoNodes)
{
	const RenderObject first; // makes this thread's defaults if no earlier test did
	const int64_t before = adaptive::liveObjectCount();
	{
		std::vector<RenderObject> objects(100);
		EXPECT_EQ(adaptive::liveObjectCount(), before) << "default objects made adaptive nodes";
		for (const RenderObject& o : objects)
		{
			EXPECT_TRUE(
			    o.state.topology == first.state.topology && o.state.cull_mode == first.state.cull_mode &&
			    o.state.front_face == first.state.front_face && o.state.depth_test == first.state.depth_test &&
			    o.state.depth_write == first.state.depth_write && o.state.depth_compare == first.state.depth_compare &&
			    o.state.depth_clamp == first.state.depth_clamp && o.state.depth_bias == first.state.depth_bias &&
			    o.state.stencil == first.state.stencil && o.state.default_blend == first.state.default_blend &&
			    o.state.alpha_to_coverage == first.state.alpha_to_coverage);
			EXPECT_TRUE(o.draw_call == first.draw_call && o.active == first.active);
		}
	}
	EXPECT_EQ(adaptive::liveObjectCount(), before);
	// The shared leaves still hold the documented defaults and are constants (read without edges).
	EXPECT_EQ(first.state.snapshot({}), PipelineStateValues{});
	EXPECT_TRUE(first.state.depth_write.isConstant() && first.active.isConstant());
	EXPECT_EQ(first.draw_call.force(), DrawCall{});
	EXPECT_TRUE(first.active.force());
	// Setting a leaf replaces the object's reference only: the shared default is untouched.
	{
		RenderObject other;
		other.state.depth_write = adaptive::constant(false);
		EXPECT_FALSE(other.state.depth_write.force());
		EXPECT_TRUE(RenderObject{}.state.depth_write.force());
	}

	const void* main_topology = first.state.topology.node().get();
	const void* thread_topology = nullptr;
	int64_t made_on_thread = 0;
	std::thread worker(
	    [&]
	    {
		    const int64_t at_start = adaptive::liveObjectCount();
		    const RenderObject a, b;
		    made_on_thread = adaptive::liveObjectCount() - at_start;
		    thread_topology = a.state.topology.node().get();
		    EXPECT_TRUE(a.state.topology == b.state.topology);
	    });
	worker.join();
	EXPECT_NE(thread_topology, main_topology) << "another thread shares this thread's nodes";
	EXPECT_EQ(made_on_thread, 13) << "11 pipeline-state leaves, draw_call and active, once per thread";
	EXPECT_EQ(adaptive::liveObjectCount(), before) << "the worker's defaults outlived it";
}

TEST(PipelineState, SnapshotsAreValueKeyedNotIdentityKeyed)
{
	PipelineState a, b;
	a.cull_mode = cval<VkCullModeFlags>(VK_CULL_MODE_BACK_BIT);
	b.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT)); // another aval, same value
	EXPECT_EQ(a.snapshot({}), b.snapshot({}));
	EXPECT_EQ(a.snapshot({}).hash(), b.snapshot({}).hash());
	b.blend["Colors"] = adaptive::constant(BlendState::alpha());
	EXPECT_NE(a.snapshot({}), b.snapshot({}));
	EXPECT_TRUE(b.snapshot({}).blendFor("Colors").enabled);
	EXPECT_FALSE(b.snapshot({}).blendFor("Other").enabled);
}

TEST(PipelineState, ASnapshotTakenInsideAComputationTracksEveryLeaf)
{
	cval<bool> depth_write(true);
	cval<StencilState> stencil(StencilState{});
	PipelineState state;
	state.depth_write = depth_write;
	state.stencil = stencil;
	int evaluations = 0;
	auto snap = adaptive::custom(
	    [&](adaptive::Token t)
	    {
		    ++evaluations;
		    return state.snapshot(t);
	    });
	EXPECT_TRUE(snap.force().depth_write);
	EXPECT_EQ(evaluations, 1);
	EXPECT_TRUE(snap.force().depth_write);
	EXPECT_EQ(evaluations, 1) << "up to date: no re-evaluation";
	depth_write.setValue(false);
	EXPECT_FALSE(snap.force().depth_write);
	StencilState s;
	s.enabled = true;
	s.reference = 7;
	stencil.setValue(s);
	EXPECT_EQ(snap.force().stencil.reference, 7u);
	EXPECT_EQ(evaluations, 3);
}

TEST(FramebufferSignature, LocationsNamesAndEquality)
{
	FramebufferSignature sig;
	sig.colors = {{"Colors", VK_FORMAT_R8G8B8A8_SRGB}, {"Normals", VK_FORMAT_R16G16B16A16_SFLOAT}};
	EXPECT_EQ(sig.location("Normals"), 1);
	EXPECT_EQ(sig.location("Depth"), -1);
	EXPECT_EQ(sig.colorNames(), (std::vector<std::string>{"Colors", "Normals"}));
	FramebufferSignature other = sig;
	EXPECT_EQ(sig, other);
	EXPECT_EQ(sig.hash(), other.hash());
	other.samples = VK_SAMPLE_COUNT_4_BIT;
	EXPECT_NE(sig, other);
	EXPECT_TRUE(sig.hasDepth());
}

TEST(RenderObject, FormatSizesAndUniformConversions)
{
	EXPECT_EQ(formatSize(VK_FORMAT_R32G32B32_SFLOAT), 12u);
	EXPECT_EQ(formatSize(VK_FORMAT_R16_UINT), 2u);
	EXPECT_EQ(formatSize(VK_FORMAT_R8G8B8A8_UNORM), 4u);
	EXPECT_EQ(formatSize(VK_FORMAT_UNDEFINED), 0u);
	cval<math::V4f> color(math::V4f(1, 0, 0, 1));
	auto u = uniform(adaptive::aval<math::V4f>(color));
	EXPECT_EQ(std::get<math::V4f>(u.force()), math::V4f(1, 0, 0, 1));
	color.setValue(math::V4f(0, 1, 0, 1));
	EXPECT_EQ(std::get<math::V4f>(u.force()), math::V4f(0, 1, 0, 1));
	EXPECT_EQ(std::get<float>(uniform(2.5f).force()), 2.5f);
	const auto a = ArrayBuffer::of(std::vector<float>{1, 2, 3});
	EXPECT_EQ(a.size(), 12u);
	EXPECT_FALSE(a == ArrayBuffer::of(std::vector<float>{1, 2, 3})) << "identity, not content";
}

TEST(RenderTree, FlattenOrdersOrderedPartsAndSortsUnorderedOnes)
{
	auto o1 = makeRenderObject({});
	auto o2 = makeRenderObject({});
	auto o3 = makeRenderObject({});
	EXPECT_LT(o1->id, o2->id);
	auto tree = RenderTree::ordered({RenderTree::leafOf(o3),
	                                 RenderTree::unordered({RenderTree::leafOf(o2), RenderTree::leafOf(o1)}),
	                                 RenderTree::empty()});
	EXPECT_EQ(flatten(tree), (std::vector<RenderObjectPtr>{o3, o1, o2}));
}

TEST(RenderTree, AdaptiveTreesFollowTheirSetsListsAndValues)
{
	auto o1 = makeRenderObject({});
	auto o2 = makeRenderObject({});
	auto o3 = makeRenderObject({});
	adaptive::cset<RenderObjectPtr> objects{o2};
	adaptive::clist<RenderTreePtr> list{RenderTree::leafOf(o3)};
	cval<RenderTreePtr> switcher(RenderTree::ofObjects(objects));
	auto tree = RenderTree::ordered({RenderTree::ofAval(switcher), RenderTree::ofList(list)});
	EXPECT_EQ(flatten(tree), (std::vector<RenderObjectPtr>{o2, o3}));
	objects.add(o1);
	EXPECT_EQ(flatten(tree), (std::vector<RenderObjectPtr>{o1, o2, o3}));
	list.append(RenderTree::leafOf(o1));
	EXPECT_EQ(flatten(tree), (std::vector<RenderObjectPtr>{o1, o2, o3, o1}));
	objects.remove(o2);
	switcher.setValue(RenderTree::empty());
	EXPECT_EQ(flatten(tree), (std::vector<RenderObjectPtr>{o3, o1}));
}

} // namespace quokka::scene::test

#include <quokka/scene/command.hpp>

namespace quokka::scene::test
{

TEST(Command, ClearHelperFillsColourAndDepth)
{
	const Command c = clearCommand(math::V4f(0.1f, 0.2f, 0.3f, 1.0f));
	ASSERT_TRUE(std::holds_alternative<ClearCommand>(c));
	const ClearCommand& clear = std::get<ClearCommand>(c);
	EXPECT_EQ(clear.colors.at("Colors").force(), math::V4f(0.1f, 0.2f, 0.3f, 1.0f));
	ASSERT_TRUE(clear.depth.has_value());
	EXPECT_EQ(clear.depth->force(), 1.0f);
	EXPECT_FALSE(clear.stencil.has_value());
}

} // namespace quokka::scene::test
