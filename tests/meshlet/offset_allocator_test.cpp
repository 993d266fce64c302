// OffsetAllocator: size classes, the reference's known defects as regressions, and a 10^6-operation randomized model
// test against a CPU interval model (it prints its seed and dumps the history on failure).
#include "../test_seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <quokka/base/offset_allocator.hpp>

namespace quokka::meshlet
{
namespace
{

using quokka::test::testSeed;

TEST(SizeClass, SmallSizesAreExactAndClassSizesRoundTrip)
{
	for (uint32_t s = 0; s <= 16; ++s)
	{
		EXPECT_EQ(sizeClassValue(sizeClassRoundUp(s)), s);
		EXPECT_EQ(sizeClassValue(sizeClassRoundDown(s)), s);
	}
	for (uint32_t bin = 0; bin < 240; ++bin)
	{
		const uint32_t value = sizeClassValue(bin);
		EXPECT_EQ(sizeClassRoundUp(value), bin);
		EXPECT_EQ(sizeClassRoundDown(value), bin);
	}
	EXPECT_EQ(sizeClassRoundUp(17), sizeClassRoundDown(17) + 1);
	EXPECT_EQ(sizeClassValue(sizeClassRoundUp(17)), 18u);
	EXPECT_EQ(sizeClassValue(sizeClassRoundDown(0xffffffffu)), 0xf0000000u);
}

TEST(SizeClass, ClassesBracketEverySizeWithinTwelvePointFivePercent)
{
	std::mt19937 rng(7);
	for (int i = 0; i < 100000; ++i)
	{
		const uint32_t s = rng() >> (rng() % 32);
		const uint32_t down = sizeClassValue(sizeClassRoundDown(s));
		EXPECT_LE(down, s);
		if (sizeClassRoundUp(s) < 240)
		{
			const uint32_t up = sizeClassValue(sizeClassRoundUp(s));
			EXPECT_GE(up, s);
			EXPECT_LE(double(up), double(s) * 1.125 + 1.0);
		}
	}
}

TEST(OffsetAllocator, WholeSizeAllocationSucceedsForSizesThatAreNotClassSizes)
{
	// The reference failed every one of these that is not a class size (513, 1000, 1025, 699050).
	for (uint32_t n : {1u, 7u, 17u, 513u, 576u, 1000u, 1024u, 1025u, 699050u, 123456789u, 0xfffffffeu})
	{
		SCOPED_TRACE(n);
		OffsetAllocator allocator(n);
		const Allocation a = allocator.allocate(n);
		ASSERT_TRUE(a.valid());
		EXPECT_EQ(a.offset, 0u);
		EXPECT_EQ(allocator.totalFree(), 0u);
		EXPECT_FALSE(allocator.allocate(1).valid());
		EXPECT_TRUE(allocator.validate().ok());
		EXPECT_TRUE(allocator.free(a));
		EXPECT_EQ(allocator.totalFree(), n);
	}
}

TEST(OffsetAllocator, RequestInTheRoundDownBinFindsItsRegionInsteadOfNoSpace)
{
	// Reference PR #11 repro: 256 + 68 units, allocate(255) leaves 69 (bin [64,72)); allocate(67) searched 72+ only.
	OffsetAllocator allocator(256 + 68);
	const Allocation a = allocator.allocate(255);
	ASSERT_TRUE(a.valid());
	const Allocation b = allocator.allocate(67);
	ASSERT_TRUE(b.valid());
	EXPECT_EQ(b.offset, 255u);
	EXPECT_EQ(allocator.storageReport().largest_free, 2u);
	EXPECT_TRUE(allocator.validate().ok());
	EXPECT_TRUE(allocator.free(a));
	EXPECT_TRUE(allocator.free(b));
}

TEST(OffsetAllocator, LiveAllocationCountIsNotCappedByTheNodeReservation)
{
	// The reference allowed only maxAllocs − 2 live allocations (its issue #3).
	OffsetAllocator allocator(1000, 2);
	std::vector<Allocation> all;
	for (uint32_t i = 0; i < 1000; ++i)
	{
		all.push_back(allocator.allocate(1));
		ASSERT_TRUE(all.back().valid()) << i;
		EXPECT_EQ(all.back().offset, i);
	}
	EXPECT_FALSE(allocator.allocate(1).valid());
	for (const Allocation& a : all)
		EXPECT_TRUE(allocator.free(a));
	EXPECT_TRUE(allocator.validate().ok());
	EXPECT_EQ(allocator.storageReport().largest_free, 1000u);
}

TEST(OffsetAllocator, AMovedAllocatorKeepsItsRangesAndTheSourceIsEmpty)
{
	OffsetAllocator source(1000, 2);
	std::vector<Allocation> all;
	for (uint32_t i = 0; i < 40; ++i) // beyond the reservation: the node pool has grown
		all.push_back(source.allocate(7));
	OffsetAllocator moved(std::move(source));
	EXPECT_TRUE(moved.validate().ok()) << moved.validate().error().message;
	EXPECT_TRUE(source.validate().ok());
	EXPECT_EQ(source.liveCount(), 0u);
	EXPECT_FALSE(source.free(all[0])); // the handles belong to `moved` now
	for (size_t i = 0; i < all.size(); i += 2)
		EXPECT_TRUE(moved.free(all[i]));
	OffsetAllocator assigned(10);
	assigned = std::move(moved);
	EXPECT_TRUE(assigned.validate().ok()) << assigned.validate().error().message;
	EXPECT_EQ(assigned.liveCount(), 20u);
	for (size_t i = 1; i < all.size(); i += 2)
		EXPECT_TRUE(assigned.free(all[i]));
	EXPECT_EQ(assigned.storageReport().largest_free, 1000u);
	EXPECT_TRUE(assigned.validate().ok());
}

TEST(OffsetAllocator, BadFreesAreReportedAndLeaveTheAllocatorIntact)
{
	OffsetAllocator allocator(4096);
	const Allocation a = allocator.allocate(100);
	const Allocation b = allocator.allocate(200);
	EXPECT_FALSE(allocator.free(Allocation{}));                         // a failed allocation
	EXPECT_FALSE(allocator.free({0, 12345, 0}));                        // a foreign node index
	EXPECT_FALSE(allocator.free({a.offset + 1, a.node, a.generation})); // wrong offset
	EXPECT_TRUE(allocator.free(a));
	EXPECT_FALSE(allocator.free(a));              // double free
	const Allocation c = allocator.allocate(100); // may reuse a's node
	EXPECT_FALSE(allocator.free(a));              // stale handle to a reused node
	EXPECT_EQ(allocator.badFreeCount(), 5u);
	EXPECT_EQ(allocator.liveCount(), 2u);
	EXPECT_TRUE(allocator.validate().ok());
	EXPECT_EQ(allocator.allocationSize(a), 0u);
	EXPECT_EQ(allocator.allocationSize(c), 100u);
	EXPECT_TRUE(allocator.free(b));
	EXPECT_TRUE(allocator.free(c));
	EXPECT_EQ(allocator.leakReport(), "");
}

TEST(OffsetAllocator, FreeMergesBothNeighboursAndReportsExactLargestRegion)
{
	OffsetAllocator allocator(1000);
	const Allocation a = allocator.allocate(100);
	const Allocation b = allocator.allocate(100);
	const Allocation c = allocator.allocate(100);
	const Allocation d = allocator.allocate(631); // leaves 69 free at the end
	EXPECT_EQ(allocator.storageReport().largest_free, 69u);
	EXPECT_TRUE(allocator.free(a));
	EXPECT_TRUE(allocator.free(c));
	EXPECT_EQ(allocator.storageReport().free_regions, 3u);
	EXPECT_EQ(allocator.storageReport().largest_free, 100u);
	EXPECT_TRUE(allocator.free(b)); // merges a, b, c
	const StorageReport report = allocator.storageReport();
	EXPECT_EQ(report.free_regions, 2u);
	EXPECT_EQ(report.largest_free, 300u);
	EXPECT_EQ(report.total_free, 369u);
	EXPECT_TRUE(allocator.validate().ok());
	const Allocation e = allocator.allocate(300);
	EXPECT_EQ(e.offset, 0u);
	EXPECT_TRUE(allocator.free(d));
	EXPECT_TRUE(allocator.free(e));
	EXPECT_EQ(allocator.freeRegions().size(), 1u);
}

TEST(OffsetAllocator, FreeIntoFreeNeighboursRetiresTheHandleAndKeepsTheOthers)
{
	// A freed range is absorbed by a free neighbour (the previous one first), so its own node goes to the pool: every
	// merge shape must leave the other handles live, the freed one stale, and the bins consistent.
	OffsetAllocator allocator(1 << 20);
	std::vector<Allocation> all;
	for (uint32_t i = 0; i < 64; ++i)
		all.push_back(allocator.allocate(1000 + 37 * i));
	auto freeAndCheck = [&](uint32_t i)
	{
		const uint32_t live = allocator.liveCount();
		EXPECT_TRUE(allocator.free(all[i])) << i;
		EXPECT_FALSE(allocator.free(all[i])) << i; // the handle is stale at once, whichever node survived
		EXPECT_EQ(allocator.allocationSize(all[i]), 0u) << i;
		EXPECT_EQ(allocator.liveCount(), live - 1) << i;
		const Result<void> valid = allocator.validate();
		EXPECT_TRUE(valid.ok()) << i << ": " << (valid.ok() ? "" : valid.error().message);
	};
	freeAndCheck(10); // no free neighbour
	freeAndCheck(11); // previous one free
	freeAndCheck(20); // none
	freeAndCheck(19); // next one free
	freeAndCheck(30);
	freeAndCheck(32);
	freeAndCheck(31); // both free
	freeAndCheck(63); // next is the trailing free region
	freeAndCheck(0);  // previous is the boundary
	for (uint32_t i = 0; i < 64; ++i)
	{
		const uint32_t size = allocator.allocationSize(all[i]);
		EXPECT_TRUE(size == 0 || size == 1000 + 37 * i) << i;
	}
	// Forged handles that name a free or pooled node are rejected whatever their generation field holds.
	for (uint32_t node = 0; node < 200; ++node)
		for (uint32_t generation : {0u, 1u, 2u, 0x7ffffffdu})
			EXPECT_FALSE(allocator.free({0, node, generation}));
	EXPECT_TRUE(allocator.validate().ok());
	// Refill and empty in a shuffled order: many free nodes share bins, so nodes leave bins from the middle.
	std::mt19937 rng(3);
	for (uint32_t i : {10u, 11u, 19u, 20u, 30u, 31u, 32u, 63u, 0u})
		all[i] = allocator.allocate(1 + rng() % 3000);
	std::shuffle(all.begin(), all.end(), rng);
	for (const Allocation& a : all)
	{
		EXPECT_TRUE(allocator.free(a));
		ASSERT_TRUE(allocator.validate().ok());
	}
	EXPECT_EQ(allocator.freeRegions().size(), 1u);
	EXPECT_EQ(allocator.storageReport().largest_free, 1u << 20);
}

TEST(OffsetAllocator, LeakReportNamesLiveAllocationsAndResetReclaimsThem)
{
	OffsetAllocator allocator(64);
	const Allocation a = allocator.allocate(10);
	EXPECT_NE(allocator.leakReport().find("1 live allocation"), std::string::npos);
	allocator.reset();
	EXPECT_EQ(allocator.leakReport(), "");
	EXPECT_FALSE(allocator.free(a)); // stale after reset
	EXPECT_EQ(allocator.allocate(64).offset, 0u);
	allocator.reset();
}

// ---- randomized model test --------------------------------------------------------------------------------------

// Free space as merged intervals plus a multiset of their sizes: O(log n) per operation.
struct IntervalModel
{
	std::map<uint32_t, uint32_t> free_ranges; // offset → size
	std::multiset<uint32_t> sizes;
	std::map<uint32_t, uint32_t> live; // offset → size

	explicit IntervalModel(uint32_t size)
	{
		free_ranges[0] = size;
		sizes.insert(size);
	}
	uint32_t largest() const { return sizes.empty() ? 0 : *sizes.rbegin(); }
	void eraseFree(std::map<uint32_t, uint32_t>::iterator it)
	{
		sizes.erase(sizes.find(it->second));
		free_ranges.erase(it);
	}
	void addFree(uint32_t offset, uint32_t size)
	{
		free_ranges[offset] = size;
		sizes.insert(size);
	}
	// Takes [offset, offset+size) out of the free set; false when it is not entirely free (an overlap).
	bool take(uint32_t offset, uint32_t size)
	{
		auto it = free_ranges.upper_bound(offset);
		if (it == free_ranges.begin())
			return false;
		--it;
		const uint32_t start = it->first;
		const uint64_t end = uint64_t(start) + it->second;
		if (uint64_t(offset) + size > end)
			return false;
		eraseFree(it);
		if (offset > start)
			addFree(start, offset - start);
		if (uint64_t(offset) + size < end)
			addFree(offset + size, uint32_t(end - offset - size));
		live[offset] = size;
		return true;
	}
	void give(uint32_t offset)
	{
		uint32_t size = live.at(offset);
		live.erase(offset);
		uint32_t start = offset;
		auto next = free_ranges.find(offset + size);
		if (next != free_ranges.end())
		{
			size += next->second;
			eraseFree(next);
		}
		auto it = free_ranges.lower_bound(offset);
		if (it != free_ranges.begin())
		{
			--it;
			if (it->first + it->second == offset)
			{
				start = it->first;
				size += it->second;
				eraseFree(it);
			}
		}
		addFree(start, size);
	}
};

TEST(OffsetAllocatorModel, MillionRandomOperationsMatchAnIntervalModel)
{
	const uint32_t seed = testSeed(20261129);
	std::printf("OffsetAllocatorModel seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
	std::mt19937 rng(seed);
	constexpr uint32_t kCapacity = 1u << 22;
	constexpr int kOps = 1000000;
	OffsetAllocator allocator(kCapacity, 64);
	IntervalModel model(kCapacity);
	std::vector<Allocation> live;
	std::vector<Allocation> stale;
	std::vector<std::string> history;
	history.reserve(kOps);
	uint64_t expected_bad = 0;

	auto dump = [&](const std::string& why)
	{
		const std::string path =
		    (std::filesystem::temp_directory_path() / ("offset_allocator_history_" + std::to_string(seed) + ".txt"))
		        .string();
		std::ofstream out(path);
		for (const std::string& line : history)
			out << line << '\n';
		ADD_FAILURE() << why << " (seed " << seed << ", op " << history.size() << "; full history in " << path
		              << ", last op: " << (history.empty() ? "" : history.back()) << ")";
	};

	for (int op = 0; op < kOps; ++op)
	{
		const uint32_t roll = rng() % 100;
		// Live count drifts around a few thousand: allocate more when few are live.
		const bool do_alloc = live.empty() || (roll < 52 && live.size() < 6000) || live.size() < 50;
		if (roll == 99 && !stale.empty())
		{
			const Allocation bad = stale[rng() % stale.size()];
			history.push_back("badfree " + std::to_string(bad.offset));
			++expected_bad;
			if (allocator.free(bad))
				return dump("a stale handle was accepted");
		}
		else if (do_alloc)
		{
			// Sizes: mostly small, sometimes large, sometimes exactly the largest free region.
			const uint32_t kind = rng() % 16;
			uint32_t size = kind < 10 ? 1 + rng() % 64 : kind < 15 ? 1 + rng() % 8192 : model.largest();
			if (size == 0)
				size = 1;
			history.push_back("alloc " + std::to_string(size));
			const Allocation a = allocator.allocate(size);
			if (!a.valid())
			{
				if (model.largest() >= size)
					return dump("no space reported while a region of " + std::to_string(model.largest()) +
					            " units is free");
				continue;
			}
			history.back() += " -> " + std::to_string(a.offset);
			if (!model.take(a.offset, size))
				return dump("allocation overlaps a live range or leaves the space");
			live.push_back(a);
		}
		else
		{
			const size_t i = rng() % live.size();
			const Allocation a = live[i];
			live[i] = live.back();
			live.pop_back();
			history.push_back("free " + std::to_string(a.offset));
			if (!allocator.free(a))
				return dump("a live allocation was rejected");
			model.give(a.offset);
			if (stale.size() < 64)
				stale.push_back(a);
			else
				stale[rng() % stale.size()] = a;
		}
		if (op % 4096 == 0 || op == kOps - 1)
		{
			const StorageReport report = allocator.storageReport();
			if (report.total_free != uint64_t(kCapacity) -
			                             [&]
			                             {
				                             uint64_t used = 0;
				                             for (auto& [o, s] : model.live)
					                             used += s;
				                             return used;
			                             }())
				return dump("total free disagrees with the model");
			if (report.largest_free != model.largest())
				return dump("largest free region " + std::to_string(report.largest_free) + " but the model has " +
				            std::to_string(model.largest()));
			if (auto valid = allocator.validate(); !valid.ok())
				return dump(valid.error().message);
		}
	}
	EXPECT_EQ(allocator.badFreeCount(), expected_bad);
	for (const Allocation& a : live)
		ASSERT_TRUE(allocator.free(a));
	ASSERT_TRUE(allocator.validate().ok());
	EXPECT_EQ(allocator.totalFree(), kCapacity);
	const Allocation all = allocator.allocate(kCapacity); // every unit reusable after freeing everything
	ASSERT_TRUE(all.valid());
	EXPECT_EQ(all.offset, 0u);
	EXPECT_TRUE(allocator.free(all));
}

} // namespace
} // namespace quokka::meshlet
