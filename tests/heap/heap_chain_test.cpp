// Transform chains on the heap, as a specification: objects whose ModelTrafo is a chain (scene/trafo_chain.hpp) up to
// 16 deep are composed on the device — moving a root re-packs one value and re-uploads no uniform, however many
// objects hang below it; the chain kernel runs once per level — with the pixels of the classic path (the CPU's
// products) through root, middle and leaf edits, additions and removals, for every draw strategy, fp64 and forced
// df32, and with the opt-out (every value on the CPU).
#include "heap_fixture.hpp"

#include <quokka/scene/trafo_chain.hpp>

namespace quokka::heap::test
{
namespace
{

using scene::TrafoChain;

/// A forest of chains: `trees` trees, each one chain as deep as `depth` with a side branch at every level, over cvals.
struct Forest
{
	std::vector<cval<math::Trafo3d>> locals; ///< every chain node's local transform (index = creation order)
	std::vector<TrafoChain> chains;          ///< the chain of each local
	std::vector<size_t> roots;               ///< indices of the roots

	size_t add(const TrafoChain& parent, const math::Trafo3d& t)
	{
		locals.emplace_back(t);
		chains.push_back(parent ? parent.child(locals.back()) : TrafoChain::root(locals.back()));
		return chains.size() - 1;
	}
};

/// A rotation about z by `angle` and a translation in xy: keeps every object at its own depth (z).
math::Trafo3d inPlane(double x, double y, double angle)
{
	return math::Trafo3d::translation(math::V3d(x, y, 0.0)) * math::Trafo3d::rotation(math::V3d(0.0, 0.0, 1.0), angle);
}

TEST_F(HeapRenderTest, TransformChainsAreComposedOnTheDeviceAndMatchClassic)
{
	const fx::Effect lit = Effects{}.lit; // ModelViewProjTrafo and NormalMatrix: both halves of the chains
	const cval<math::Trafo3d> camera(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
	const auto view = scene::uniform(camera);
	const auto proj = scene::uniform(math::Trafo3d::scale(math::V3d(1.0, 1.0, 0.5)));
	Forest forest;
	constexpr uint32_t kDepth = 16;
	std::vector<size_t> spine; // tree 0's chain, root first
	for (int tree = 0; tree < 3; ++tree)
	{
		size_t at = forest.add({}, inPlane(-0.6 + 0.6 * tree, -0.5, 0.05 * tree));
		forest.roots.push_back(at);
		if (tree == 0)
			spine.push_back(at);
		const uint32_t depth = tree == 0 ? kDepth : 4 + 3 * tree;
		for (uint32_t d = 1; d < depth; ++d)
		{
			forest.add(forest.chains[at], inPlane(0.03, 0.0, -0.15)); // a side branch (a leaf)
			at = forest.add(forest.chains[at], inPlane(0.01, 0.06, 0.04 * (tree + 1)));
			if (tree == 0)
				spine.push_back(at);
		}
	}
	// One object per chain node (a small lit triangle at its own depth), and six with a plain trafo.
	std::vector<RenderObjectPtr> objects;
	std::vector<cval<math::Trafo3d>> plain;
	auto make = [&](const adaptive::aval<scene::UniformValue>& model, int i)
	{
		const float z = 0.05f + 0.009f * float(i);
		RenderObject o = litTriangle(lit, V3f(-0.05f, -0.03f, z), V3f(0.06f, -0.03f, z), V3f(0.0f, 0.07f, z),
		                             rgba(60 + 2 * i, 220 - 2 * i, 100 + i));
		o.uniforms["ModelTrafo"] = model;
		o.uniforms["ViewTrafo"] = view;
		o.uniforms["ProjTrafo"] = proj;
		return scene::makeRenderObject(std::move(o));
	};
	for (size_t c = 0; c < forest.chains.size(); ++c)
		objects.push_back(make(forest.chains[c].world(), int(c)));
	for (int i = 0; i < 6; ++i)
	{
		plain.emplace_back(inPlane(-0.8 + 0.3 * i, 0.8, 0.0));
		objects.push_back(make(scene::uniform(plain.back()), int(forest.chains.size()) + i));
	}
	ASSERT_LT(objects.size(), 100u);
	// Links: every chain node below a root; levels: the deepest chain's depth − 1.
	const uint32_t links = uint32_t(forest.chains.size() - forest.roots.size());
	const size_t leaf = forest.chains.size() - 2; // tree 2's last side branch
	// Later objects on a new chain below the middle of the spine, two deep (added and removed in the frames below;
	// their links outgrow the computed slots the first frame sized, which recomputes every link).
	const size_t branch = forest.add(forest.chains[spine[8]], inPlane(-0.05, 0.02, 0.3));
	size_t twig = branch;
	for (int i = 0; i < 5; ++i)
		twig = forest.add(forest.chains[twig], inPlane(0.01, 0.0, 0.1));
	const RenderObjectPtr later = make(forest.chains[branch].world(), 90);
	const RenderObjectPtr later2 = make(forest.chains[twig].world(), 92);
	ASSERT_TRUE(2 * links <= 128 && 2 * (links - 1 + 6) > 128)
	    << "two computed slots per link: 128 after the first frame, more than that with the branch (and a leaf gone)";

	adaptive::cset<RenderObjectPtr> set;
	set.unionWith(objects);
	const auto tree = RenderTree::ofObjects(set);
	const std::vector<Mode> all = derivedModes();
	const std::vector<math::Trafo3d> initial = [&]
	{
		std::vector<math::Trafo3d> v;
		for (const auto& l : forest.locals)
			v.push_back(l.value());
		return v;
	}();
	std::vector<Rgba8Image> reference;
	for (const Mode& m : all)
	{
		SCOPED_TRACE(m.name);
		adaptive::transact(
		    [&]
		    {
			    for (size_t i = 0; i < initial.size(); ++i)
				    forest.locals[i].setValue(initial[i]);
			    plain[2].setValue(inPlane(-0.2, 0.8, 0.0));
			    camera.setValue(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
			    set.remove(later);
			    set.remove(later2);
		    });
		auto t = task(tree, m.options);
		const bool heap = m.options.path == runtime::RenderPath::Heap;
		const bool gpu = heap && m.options.heap.gpu_derived;
		const HeapStats* s = nullptr;
		std::vector<Rgba8Image> images;
		auto draw = [&]
		{
			EXPECT_EQ(frame(*t), "");
			images.push_back(pixels());
			s = &t->stats().heap;
		};
		draw();
		if (gpu)
		{
			EXPECT_EQ(s->chain_links, links);
			EXPECT_EQ(s->chain_levels, kDepth - 1);
		}
		// The root of the 16-deep tree moves and turns: one value re-packed, no uniform uploaded, one chain dispatch
		// per level.
		adaptive::transact([&] { forest.locals[spine[0]].setValue(inPlane(-0.55, -0.6, 0.12)); });
		draw();
		if (gpu)
		{
			EXPECT_EQ(s->constituent_uploads, 1u);
			EXPECT_EQ(s->uniform_uploads, 2u) << "the root's own object's ModelTrafo and NormalMatrix, read on the CPU";
			EXPECT_EQ(s->chain_dispatches, kDepth - 1);
			if (m.options.heap.max_chunk_bytes == kPagedChunkBytes)
			{
				EXPECT_GE(s->derive_dispatches, 2u) << "one per chunk holding records";
			}
			else
			{
				EXPECT_EQ(s->derive_dispatches, 1u);
			}
		}
		// A middle node of the spine and a leaf of tree 2.
		adaptive::transact(
		    [&]
		    {
			    forest.locals[spine[7]].setValue(inPlane(0.02, 0.05, -0.2));
			    forest.locals[leaf].setValue(inPlane(0.05, -0.02, 0.6));
		    });
		draw();
		if (gpu)
		{
			EXPECT_EQ(s->constituent_uploads, 2u);
			EXPECT_EQ(s->uniform_uploads, 0u);
		}
		// A static frame dispatches nothing.
		EXPECT_EQ(frame(*t), "");
		if (heap)
		{
			EXPECT_EQ(t->stats().heap.chain_dispatches + t->stats().heap.derive_dispatches, 0u);
		}
		// An object on a new chain added, two removed (a leaf's and a spine node's: its link stays, held by the chain
		// below it), a plain trafo edited and the root moved again, in one frame.
		adaptive::transact(
		    [&]
		    {
			    set.add(later);
			    set.add(later2);
			    set.remove(objects[1]);
			    set.remove(objects[spine[12]]);
			    plain[2].setValue(inPlane(-0.2, 0.7, 0.4));
			    forest.locals[spine[0]].setValue(inPlane(-0.5, -0.55, -0.1));
		    });
		draw();
		if (gpu)
		{
			EXPECT_EQ(s->chain_links, links + 6 - 1) << "the new branch's links; the removed leaf's left";
		}
		// The two back, the new ones gone again and the camera moved: every value reading a link is recomputed from
		// what the links hold.
		adaptive::transact(
		    [&]
		    {
			    camera.setValue(math::Trafo3d::rotation(math::V3d(0.0, 0.0, 1.0), 0.2) *
			                    math::Trafo3d::translation(math::V3d(0.05, 0.0, 0.5)));
			    set.add(objects[1]);
			    set.add(objects[spine[12]]);
			    set.remove(later);
			    set.remove(later2);
		    });
		draw();
		if (gpu)
		{
			EXPECT_EQ(s->chain_links, links);
		}
		if (reference.empty())
		{
			reference = images;
			for (const Rgba8Image& r : reference)
				EXPECT_GT(covered(r), 120u);
			EXPECT_GT(differing(reference[0], reference[1]), 0u) << "the root's move shows";
			EXPECT_GT(differing(reference[1], reference[2]), 0u);
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

} // namespace
} // namespace quokka::heap::test
