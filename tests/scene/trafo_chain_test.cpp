// TrafoChain as a specification: world = parent · local in double (math::Trafo3d's product), interned as a suffix
// trie (the same local under the same parent is the same chain), constant when every transform is, recomputed when
// any transform above changes, and recognisable from its world node.
#include <gtest/gtest.h>

#include <quokka/adaptive/aval.hpp>
#include <quokka/scene/trafo_chain.hpp>

namespace quokka::scene::test
{

using adaptive::cval;
using math::Trafo3d;
using math::V3d;

const Trafo3d& worldOf(const TrafoChain& c)
{
	return std::get<Trafo3d>(c.world().force());
}

TEST(TrafoChain, WorldIsTheProductOfTheChainInDouble)
{
	const cval<Trafo3d> site(Trafo3d::translation(V3d(1e7, -2e6, 5e6)));
	const cval<Trafo3d> storey(Trafo3d::rotation(V3d(0.0, 0.0, 1.0), 0.3) * Trafo3d::translation(V3d(0.0, 0.0, 3.5)));
	const cval<Trafo3d> element(Trafo3d::scale(V3d(2.0, 1.0, 0.5)));
	const TrafoChain a = TrafoChain::root(site);
	const TrafoChain b = a.child(storey);
	const TrafoChain c = b.child(element);
	EXPECT_EQ(a.depth(), 1u);
	EXPECT_EQ(c.depth(), 3u);
	EXPECT_TRUE(c.parent() == b);
	EXPECT_FALSE(a.parent());
	EXPECT_EQ(worldOf(a), site.value());
	const Trafo3d want = (site.value() * storey.value()) * element.value();
	EXPECT_EQ(worldOf(c), want) << "bit for bit: forward P·L, backward L⁻¹·P⁻¹";
	EXPECT_EQ(worldOf(c).backward, element.value().backward * (storey.value().backward * site.value().backward));
	// A change anywhere above recomputes what is below it.
	adaptive::transact([&] { site.setValue(Trafo3d::translation(V3d(0.0, 1.0, 0.0))); });
	EXPECT_EQ(worldOf(c), (site.value() * storey.value()) * element.value());
	adaptive::transact([&] { storey.setValue(Trafo3d::identity()); });
	EXPECT_EQ(worldOf(c), site.value() * element.value());
	EXPECT_EQ(worldOf(b), site.value());
}

TEST(TrafoChain, ChildrenAreInternedByTheirLocalNode)
{
	const cval<Trafo3d> root(Trafo3d::identity()), local(Trafo3d::scale(2.0));
	const TrafoChain r = TrafoChain::root(root);
	EXPECT_TRUE(r.child(local) == r.child(local)) << "one node below one parent for one local";
	EXPECT_TRUE(r.child(local).world() == r.child(local).world());
	const cval<Trafo3d> equal(Trafo3d::scale(2.0));
	EXPECT_FALSE(r.child(local) == r.child(equal)) << "interned by node, not by value";
	EXPECT_FALSE(r.child(local) == TrafoChain::root(root).child(local)) << "another root is another trie";
	// A chain nobody holds leaves its parent's table: asking again gives a fresh one that works.
	{
		const TrafoChain c = r.child(local);
		EXPECT_EQ(c.depth(), 2u);
	}
	const TrafoChain again = r.child(local);
	EXPECT_EQ(std::get<Trafo3d>(again.world().force()), Trafo3d::scale(2.0));
}

TEST(TrafoChain, ConstantTransformsMakeAConstantChain)
{
	const auto fixed = adaptive::constant(Trafo3d::translation(V3d(1.0, 2.0, 3.0)));
	const TrafoChain c = TrafoChain::root(fixed).child(adaptive::constant(Trafo3d::scale(3.0)));
	EXPECT_TRUE(c.world().isConstant());
	EXPECT_EQ(worldOf(c), Trafo3d::translation(V3d(1.0, 2.0, 3.0)) * Trafo3d::scale(3.0));
	const cval<Trafo3d> moving(Trafo3d::identity());
	EXPECT_FALSE(c.child(moving).world().isConstant());
	EXPECT_FALSE(TrafoChain::root(moving).child(fixed).world().isConstant());
}

TEST(TrafoChain, TheChainOfAWorldNode)
{
	const cval<Trafo3d> root(Trafo3d::identity()), local(Trafo3d::scale(2.0));
	const TrafoChain c = TrafoChain::root(root).child(local);
	const adaptive::aval<UniformValue> world = c.world();
	EXPECT_TRUE(TrafoChain::of(world.node().get()) == c);
	EXPECT_EQ(TrafoChain::of(world.node().get()).depth(), 2u);
	EXPECT_FALSE(TrafoChain::of(uniform(root).node().get())) << "another node is no chain";
	EXPECT_FALSE(TrafoChain::of(nullptr));
	EXPECT_EQ(std::get<Trafo3d>(c.localUniform().force()), Trafo3d::scale(2.0));
}

/// A chain 10,000 deep evaluates (deep chains continue on fresh stack segments) and a root move reaches its end.
TEST(TrafoChain, DeepChainsEvaluate)
{
	const cval<Trafo3d> root(Trafo3d::identity());
	std::vector<cval<Trafo3d>> locals;
	TrafoChain c = TrafoChain::root(root);
	for (int i = 0; i < 10000; ++i)
	{
		locals.emplace_back(Trafo3d::translation(V3d(0.0, 0.0, 1.0)));
		c = c.child(locals.back());
	}
	EXPECT_EQ(worldOf(c).forward[3][2], 10000.0);
	adaptive::transact([&] { root.setValue(Trafo3d::translation(V3d(5.0, 0.0, 0.0))); });
	EXPECT_EQ(worldOf(c).forward[3][0], 5.0);
}

} // namespace quokka::scene::test
