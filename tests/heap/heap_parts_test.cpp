// heap_parts_test.cpp — the heap's CPU-side parts on their own (internal headers in src/heap): the shadowed GPU
// array's dirty granules and merged runs, and a chunk's write log turned into copy regions (sorting, merging,
// overlaps where the later write wins). No device: what the tests drive never reaches the GPU.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "heap/arena_staging.hpp"
#include "heap/gpu_array.hpp"

namespace
{

using namespace quokka::heap::detail;
using Runs = std::vector<std::pair<size_t, size_t>>;

Runs runsOf(GpuArray& a)
{
	Runs r;
	a.takeRuns([&](size_t lo, size_t hi) { r.emplace_back(lo, hi); });
	return r;
}

GpuArray arrayOf(size_t words)
{
	GpuArray a;
	a.resize(words);
	runsOf(a); // the initial growth is dirty: start clean
	return a;
}

TEST(GpuArray, AChangedWordMarksItsGranuleOnceAndAnEqualValueMarksNothing)
{
	GpuArray a = arrayOf(1024);
	a.set(100, 7u); // granule 12 (words 96…103)
	a.set(101, 0u); // unchanged: no mark
	EXPECT_EQ(runsOf(a), (Runs{{12, 13}}));
	EXPECT_EQ(runsOf(a), Runs{}) << "takeRuns clears the marks";
	EXPECT_EQ(a.words[100], 7u);
}

TEST(GpuArray, RunsMergeAcrossAtMostTwoCleanGranulesInAddressOrder)
{
	GpuArray a = arrayOf(4096);
	a.set(8 * 40, 1u); // written out of address order
	a.set(8 * 3, 1u);
	a.set(8 * 0, 1u);
	a.set(8 * 7, 1u);
	// 0 and 3 are 2 clean granules apart: one run; 7 is 3 apart from 3: a new run; 40 far away.
	EXPECT_EQ(runsOf(a), (Runs{{0, 4}, {7, 8}, {40, 41}}));
}

TEST(GpuArray, ARecordWriteMarksTheSpanOfItsChangedWordsAcrossBitmapWords)
{
	GpuArray a = arrayOf(8 * 200);
	std::vector<uint32_t> record(8 * 70, 5u); // granules 60…129: crosses the 64-granule bitmap words
	a.set(8 * 60, record.data(), record.size());
	EXPECT_EQ(runsOf(a), (Runs{{60, 130}}));
	record[8 * 10] = 6u; // one word of granule 70 changes
	a.set(8 * 60, record.data(), record.size());
	EXPECT_EQ(runsOf(a), (Runs{{70, 71}}));
}

TEST(GpuArray, GrownWordsAreDirtyEvenWhenZero)
{
	GpuArray a = arrayOf(16);
	a.resize(40); // words 16…39: granules 2…4
	EXPECT_EQ(runsOf(a), (Runs{{2, 5}}));
	EXPECT_EQ(a.words[39], 0u);
}

TEST(ChunkCopies, DisjointWritesBecomeSortedRegionsAndTouchingOnesMerge)
{
	Chunk c(1 << 20);
	// Page 0: [64, 96) staged at 0, [0, 32) at 32, [32, 64) at 64 — arrival order is not address order.
	c.pending = {{64, 0, 0, 32}, {0, 0, 32, 32}, {32, 0, 64, 32}};
	uint32_t overlapping = 0;
	const auto groups = c.takeCopies(overlapping);
	ASSERT_EQ(groups.size(), 1u);
	EXPECT_EQ(groups[0].first, 0u);
	const auto& r = groups[0].second;
	// [0, 32) from 32 and [32, 64) from 64 continue each other at both ends: one region. [64, 96) comes from 0.
	ASSERT_EQ(r.size(), 2u);
	EXPECT_EQ((std::vector<VkDeviceSize>{r[0].srcOffset, r[0].dstOffset, r[0].size}),
	          (std::vector<VkDeviceSize>{32, 0, 64}));
	EXPECT_EQ((std::vector<VkDeviceSize>{r[1].srcOffset, r[1].dstOffset, r[1].size}),
	          (std::vector<VkDeviceSize>{0, 64, 32}));
	EXPECT_EQ(overlapping, 0u);
	EXPECT_TRUE(c.pending.empty());
}

TEST(ChunkCopies, AnOverlappingLaterWriteWinsWhereItCovers)
{
	Chunk c(1 << 20);
	// A block written at [0, 48), freed and handed out again in the same frame as [16, 32): the later bytes win there.
	c.pending = {{0, 0, 0, 48}, {16, 1, 0, 16}};
	uint32_t overlapping = 0;
	const auto groups = c.takeCopies(overlapping);
	EXPECT_EQ(overlapping, 1u);
	ASSERT_EQ(groups.size(), 2u); // two pages
	std::vector<std::vector<VkDeviceSize>> regions;
	for (const auto& [page, copies] : groups)
		for (const VkBufferCopy& r : copies)
			regions.push_back({page, r.srcOffset, r.dstOffset, r.size});
	EXPECT_EQ(regions, (std::vector<std::vector<VkDeviceSize>>{{0, 0, 0, 16}, {0, 32, 32, 16}, {1, 0, 16, 16}}));
}

TEST(ChunkCopies, SortByOffsetIsStableForEqualOffsets)
{
	std::vector<Chunk::Write> w = {{0x30201, 0, 1, 4}, {0x10203, 0, 2, 4}, {0x30201, 0, 3, 4}, {5, 0, 4, 4}};
	sortByOffset(w);
	std::vector<uint32_t> at;
	for (const Chunk::Write& x : w)
		at.push_back(x.at);
	EXPECT_EQ(at, (std::vector<uint32_t>{4, 2, 1, 3}));
	EXPECT_EQ(align16(17), 32u);
	EXPECT_EQ(align16(32), 32u);
}

} // namespace
