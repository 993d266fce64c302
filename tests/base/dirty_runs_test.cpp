// DirtyRuns: marked granules come back as runs in address order, merged across gaps of at most MergeGap clean
// granules, and the marks are gone afterwards; marks past the end grow the bitmap, across bitmap and summary words.
#include <quokka/base/dirty_runs.hpp>

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

namespace quokka
{
namespace
{

using Runs = std::vector<std::pair<size_t, size_t>>;

template <size_t Gap>
Runs take(DirtyRuns<Gap>& d)
{
	Runs r;
	d.takeRuns([&](size_t lo, size_t hi) { r.emplace_back(lo, hi); });
	return r;
}

TEST(DirtyRuns, RunsMergeAcrossGapsOfAtMostTheMergeGap)
{
	DirtyRuns<2> d;
	for (size_t g : {5, 6, 9, 13, 200, 64, 4095, 4096})
		d.mark(g);
	d.markRange(100, 130);
	// 5..6 and 9 merge (two clean granules between); 13 stands alone (three clean); 64; 100..130 and nothing near;
	// 200; 4095 and 4096 across a summary word.
	EXPECT_EQ(take(d), (Runs{{5, 10}, {13, 14}, {64, 65}, {100, 131}, {200, 201}, {4095, 4097}}));
	EXPECT_EQ(take(d), Runs{}) << "takeRuns clears the marks";

	DirtyRuns<0> exact;
	exact.mark(1);
	exact.mark(2);
	exact.mark(4);
	EXPECT_EQ(take(exact), (Runs{{1, 3}, {4, 5}}));
	exact.mark(70000); // far past the end: the bitmap grows
	exact.clear();
	EXPECT_EQ(take(exact), Runs{});
}

// Random marks against a set: every marked granule is inside exactly one run, runs are ordered and separated by more
// than the gap, and nothing unmarked lies in a run except inside a gap of at most MergeGap.
TEST(DirtyRuns, RandomMarksAgreeWithASet)
{
	std::mt19937 rng(3);
	DirtyRuns<3> d;
	for (int round = 0; round < 50; ++round)
	{
		std::set<size_t> marked;
		const size_t span = round % 2 ? 300 : 300000;
		for (int i = 0; i < 200; ++i)
		{
			const size_t g = rng() % span;
			if (i % 7 == 0)
			{
				const size_t n = rng() % 150;
				d.markRange(g, g + n);
				for (size_t k = g; k <= g + n; ++k)
					marked.insert(k);
			}
			else
			{
				d.mark(g);
				marked.insert(g);
			}
		}
		const Runs runs = take(d);
		size_t covered_marks = 0, last_end = 0;
		for (size_t i = 0; i < runs.size(); ++i)
		{
			const auto [lo, hi] = runs[i];
			ASSERT_LT(lo, hi);
			if (i > 0)
			{
				ASSERT_GT(lo, last_end + 3) << "runs this close would have merged";
			}
			ASSERT_TRUE(marked.count(lo) && marked.count(hi - 1)) << "a run starts and ends on a mark";
			size_t gap = 0;
			for (size_t g = lo; g < hi; ++g)
				if (marked.count(g))
				{
					++covered_marks;
					gap = 0;
				}
				else
					ASSERT_LE(++gap, 3u);
			last_end = hi;
		}
		EXPECT_EQ(covered_marks, marked.size());
	}
}

} // namespace
} // namespace quokka
