// BvhTree2d as a spec: queries find exactly the rectangles a brute-force scan finds (positive-area overlap), through
// random inserts and removes; handles survive rebuilds; the tree stays sound and logarithmic whatever the order.
#include <quokka/atlas/bvh_tree2d.hpp>

#include <algorithm>
#include <bit>
#include <map>
#include <random>

#include <gtest/gtest.h>

namespace quokka::atlas
{
namespace
{

Rect randomRect(std::mt19937& rng, int32_t span)
{
	std::uniform_int_distribution<int32_t> pos(0, span - 1), size(1, 40);
	return {pos(rng), pos(rng), size(rng), size(rng)};
}

std::vector<uint32_t> found(const BvhTree2d& tree, const Rect& area)
{
	std::vector<uint32_t> out;
	tree.query(area,
	           [&](uint32_t h)
	           {
		           out.push_back(h);
		           return true;
	           });
	std::sort(out.begin(), out.end());
	return out;
}

TEST(RectTest, OverlapNeedsAreaContainmentAndUnion)
{
	const Rect a{0, 0, 4, 4};
	EXPECT_TRUE(a.overlaps({3, 3, 4, 4}));
	EXPECT_FALSE(a.overlaps({4, 0, 4, 4})) << "touching is not overlapping";
	EXPECT_FALSE(a.overlaps({0, 4, 4, 4}));
	EXPECT_TRUE(a.contains({1, 1, 3, 3}));
	EXPECT_FALSE(a.contains({1, 1, 4, 3}));
	EXPECT_EQ(a.united({6, -2, 1, 1}), (Rect{0, -2, 7, 6}));
	EXPECT_EQ(Rect{}.united(a), a);
	EXPECT_EQ(a.halfPerimeter(), 8);
}

TEST(BvhTree2dTest, QueriesMatchBruteForceThroughRandomInsertsAndRemoves)
{
	std::mt19937 rng(7);
	BvhTree2d tree;
	std::map<uint32_t, std::pair<Rect, uint32_t>> live; // handle → (rect, value)
	for (int step = 0; step < 4000; ++step)
	{
		if (live.empty() || rng() % 3 != 0)
		{
			const Rect r = randomRect(rng, 512);
			const uint32_t value = uint32_t(step);
			const uint32_t h = tree.insert(r, value);
			ASSERT_FALSE(live.contains(h)) << "a live handle was handed out again";
			live[h] = {r, value};
		}
		else
		{
			auto it = live.begin();
			std::advance(it, rng() % live.size());
			tree.remove(it->first);
			live.erase(it);
		}
		if (step % 97 == 0)
			tree.rebuild();
		ASSERT_EQ(tree.size(), live.size());
		if (step % 50 != 0)
			continue;
		const std::vector<std::string> problems = tree.validate();
		ASSERT_TRUE(problems.empty()) << problems.front();
		for (int q = 0; q < 20; ++q)
		{
			const Rect area = randomRect(rng, 512);
			std::vector<uint32_t> expected;
			for (const auto& [h, rv] : live)
				if (rv.first.overlaps(area))
					expected.push_back(h);
			ASSERT_EQ(found(tree, area), expected) << "query " << area.describe() << " at step " << step;
			EXPECT_EQ(tree.overlapsAny(area), !expected.empty());
		}
		for (const auto& [h, rv] : live)
		{
			ASSERT_EQ(tree.rect(h), rv.first);
			ASSERT_EQ(tree.value(h), rv.second);
		}
	}
}

TEST(BvhTree2dTest, StaysLogarithmicForSortedInsertions)
{
	// Left to right along a row — the order that makes a naive tree a list.
	BvhTree2d tree;
	for (int32_t i = 0; i < 20000; ++i)
		tree.insert({i * 4, 0, 3, 3}, uint32_t(i));
	const uint32_t bound = 2 * uint32_t(std::bit_width(tree.size())) + 9;
	EXPECT_LE(tree.height(), bound);
	EXPECT_TRUE(tree.validate().empty());
	EXPECT_EQ(found(tree, {400, 1, 8, 1}).size(), 2u);
	tree.rebuild();
	EXPECT_LE(tree.height(), uint32_t(std::bit_width(tree.size())) * 2 + 4);
	EXPECT_EQ(found(tree, {400, 1, 8, 1}).size(), 2u);
	// Identical rectangles: no split separates them; the build halves them instead.
	BvhTree2d same;
	for (uint32_t i = 0; i < 1000; ++i)
		same.insert({5, 5, 2, 2}, i);
	same.rebuild();
	EXPECT_LE(same.height(), 12u);
	EXPECT_EQ(found(same, {6, 6, 1, 1}).size(), 1000u);
}

TEST(BvhTree2dTest, AQueryStopsWhenTheVisitorSaysSoAndRemovingEverythingEmptiesIt)
{
	BvhTree2d tree;
	std::vector<uint32_t> handles;
	for (int32_t i = 0; i < 64; ++i)
		handles.push_back(tree.insert({i, i, 10, 10}, 0));
	int visits = 0;
	tree.query({0, 0, 100, 100},
	           [&](uint32_t)
	           {
		           ++visits;
		           return visits < 3;
	           });
	EXPECT_EQ(visits, 3);
	for (uint32_t h : handles)
		tree.remove(h);
	EXPECT_TRUE(tree.empty());
	EXPECT_EQ(tree.height(), 0u);
	EXPECT_FALSE(tree.overlapsAny({0, 0, 100, 100}));
	EXPECT_TRUE(tree.validate().empty());
}

} // namespace
} // namespace quokka::atlas
