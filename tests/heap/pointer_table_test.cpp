// detail::PointerTable: random inserts (direct and deferred), finds and erases against a std::unordered_map model, with
// colliding hashes and runs that wrap around the end of the table.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "heap/pointer_table.hpp"

namespace quokka::heap
{
namespace
{

struct Item
{
	uint32_t key = 0;
};

TEST(PointerTable, RandomInsertsFindsAndErasesMatchAModel)
{
	// Few distinct hashes for many keys: long runs, equal hashes told apart by the match, erases in the middle of runs.
	// Hashes near 2^64 − 1 home at the last slots, so their runs wrap to slot 0.
	std::mt19937 rng(7);
	std::vector<std::unique_ptr<Item>> items(4000);
	for (uint32_t k = 0; k < items.size(); ++k)
		items[k] = std::make_unique<Item>(Item{k});
	auto hashOf = [](uint32_t key) -> uint64_t
	{
		const uint64_t spread = uint64_t(key % 97) * 0x9e3779b97f4a7c15ull;
		return key % 5 == 0 ? ~uint64_t(0) - (key % 3) : spread;
	};
	detail::PointerTable<Item> table;
	std::unordered_map<uint32_t, Item*> model;
	for (int step = 0; step < 200000; ++step)
	{
		const uint32_t key = uint32_t(rng() % items.size());
		Item* item = items[key].get();
		const bool present = model.count(key) != 0;
		switch (rng() % 3)
		{
		case 0:
			if (!present)
			{
				// Half deferred: they are found, erased and filed among the rest in any order.
				if (rng() % 2)
					table.insertDeferred(item, hashOf(key));
				else
					table.insert(item, hashOf(key));
				model[key] = item;
			}
			if (step % 1000 == 0)
				table.flush();
			break;
		case 1:
			ASSERT_EQ(table.erase(item, hashOf(key)), present) << "step " << step;
			model.erase(key);
			break;
		default:
		{
			ASSERT_EQ(table.find(hashOf(key), [&](const Item& i) { return i.key == key; }), present ? item : nullptr)
			    << "step " << step;
		}
		}
		if (step % 5000 == 0)
		{
			ASSERT_EQ(table.check(), "") << "step " << step;
		}
	}
	ASSERT_EQ(table.size(), model.size());
	ASSERT_EQ(table.check(), "");
	size_t visited = 0;
	table.forEach(
	    [&](Item* i)
	    {
		    ++visited;
		    EXPECT_EQ(model.at(i->key), i);
	    });
	EXPECT_EQ(visited, model.size());
	for (const auto& [key, item] : model)
		ASSERT_TRUE(table.erase(item, hashOf(key)));
	EXPECT_TRUE(table.empty());
	EXPECT_EQ(table.check(), "");
	EXPECT_EQ(table.find(hashOf(1), [](const Item&) { return true; }), nullptr);
}

TEST(PointerTable, GrowsAtThreeQuartersAndAnErasedElementIsGone)
{
	detail::PointerTable<Item> table;
	EXPECT_EQ(table.capacity(), 0u);
	EXPECT_FALSE(table.erase(nullptr, 0)); // an empty table has nothing to erase
	std::vector<Item> items(13);
	for (uint32_t k = 0; k < 12; ++k)
	{
		items[k].key = k;
		table.insert(&items[k], uint64_t(k) << 60);
	}
	EXPECT_EQ(table.capacity(), 16u); // 12 of 16 is the most load 3/4 allows
	items[12].key = 12;
	table.insert(&items[12], 12ull << 60);
	EXPECT_EQ(table.capacity(), 32u);
	EXPECT_EQ(table.check(), "");
	EXPECT_TRUE(table.erase(&items[3], 3ull << 60));
	EXPECT_FALSE(table.erase(&items[3], 3ull << 60));
	EXPECT_EQ(table.find(3ull << 60, [](const Item&) { return true; }), nullptr);
	EXPECT_EQ(table.find(4ull << 60, [](const Item& i) { return i.key == 4; }), &items[4]);
	EXPECT_EQ(table.size(), 12u);
}

TEST(PointerTable, DeferredElementsAreFoundErasedAndFiledInOrder)
{
	detail::PointerTable<Item> table;
	constexpr size_t kLag = detail::PointerTable<Item>::kLag;
	std::vector<Item> items(kLag + 5);
	for (uint32_t k = 0; k < items.size(); ++k)
		items[k].key = k;
	auto hashOf = [](uint32_t k) { return uint64_t(k + 1) * 0x9e3779b97f4a7c15ull; };
	for (uint32_t k = 0; k < kLag; ++k)
		table.insertDeferred(&items[k], hashOf(k));
	EXPECT_EQ(table.pending(), kLag);
	EXPECT_EQ(table.capacity(), 0u); // nothing filed yet
	EXPECT_EQ(table.size(), kLag);
	EXPECT_EQ(table.check(), "");
	EXPECT_EQ(table.find(hashOf(3), [](const Item& i) { return i.key == 3; }), &items[3]);
	EXPECT_EQ(table.find(hashOf(3), [](const Item& i) { return i.key == 4; }), nullptr); // the match decides
	EXPECT_TRUE(table.erase(&items[3], hashOf(3)));
	EXPECT_EQ(table.find(hashOf(3), [](const Item&) { return true; }), nullptr);
	EXPECT_EQ(table.pending(), kLag - 1);
	// Two more: the ring fills, and the oldest (item 0) is filed.
	table.insertDeferred(&items[kLag], hashOf(kLag));
	table.insertDeferred(&items[kLag + 1], hashOf(kLag + 1));
	EXPECT_EQ(table.pending(), kLag);
	EXPECT_EQ(table.size(), kLag + 1);
	EXPECT_EQ(table.check(), "");
	size_t visited = 0;
	table.forEach([&](Item*) { ++visited; });
	EXPECT_EQ(visited, kLag + 1);
	EXPECT_EQ(table.find(hashOf(0), [](const Item& i) { return i.key == 0; }), &items[0]);
	table.flush();
	EXPECT_EQ(table.pending(), 0u);
	EXPECT_EQ(table.check(), "");
	for (uint32_t k = 0; k < kLag + 2; ++k)
	{
		EXPECT_EQ(table.find(hashOf(k), [&](const Item& i) { return i.key == k; }), k == 3 ? nullptr : &items[k]) << k;
	}
	table.clear();
	EXPECT_TRUE(table.empty());
	EXPECT_EQ(table.pending(), 0u);
}

} // namespace
} // namespace quokka::heap
