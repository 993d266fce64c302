// erase_some_test.cpp — eraseSome: a large map torn down in slices, each slice continuing where the last stopped.
#include <gtest/gtest.h>

#include <absl/container/flat_hash_map.h>

#include <memory>

#include <quokka/base/erase_some.hpp>

namespace quokka
{
namespace
{

TEST(EraseSome, ErasesAtMostCountPerCallUntilTheMapIsEmpty)
{
	// Values that count their destructions: every element is destroyed exactly once, a slice at a time.
	auto destroyed = std::make_shared<int>(0);
	struct Counted
	{
		std::shared_ptr<int> counter;
		~Counted()
		{
			if (counter)
				++*counter;
		}
		Counted(std::shared_ptr<int> c) : counter(std::move(c)) {}
		Counted(Counted&& o) noexcept : counter(std::move(o.counter)) {}
		Counted& operator=(Counted&&) = delete;
	};
	absl::flat_hash_map<int, Counted> map;
	for (int i = 0; i < 1000; ++i)
		map.emplace(i, Counted(destroyed));
	std::optional<absl::flat_hash_map<int, Counted>::iterator> cursor;
	int calls = 0;
	size_t before = map.size();
	while (eraseSome(map, cursor, 64))
	{
		++calls;
		EXPECT_EQ(map.size(), before - 64);
		EXPECT_EQ(size_t(*destroyed), 1000 - map.size());
		before = map.size();
	}
	EXPECT_EQ(calls, 15); // 15 full slices of 64, then the last 40
	EXPECT_TRUE(map.empty());
	EXPECT_EQ(*destroyed, 1000);
	EXPECT_FALSE(eraseSome(map, cursor, 64)); // (done: nothing more to erase)
}

TEST(EraseSome, AnEmptyMapIsDoneAtOnce)
{
	absl::flat_hash_map<int, int> map;
	std::optional<absl::flat_hash_map<int, int>::iterator> cursor;
	EXPECT_FALSE(eraseSome(map, cursor, 1));
}

} // namespace
} // namespace quokka
