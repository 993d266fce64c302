// BlockCache (quokka/base/block_cache.hpp): freed blocks come back last-in first-out on their thread, at most `Cap`
// are kept, and a block freed on another thread joins that thread's list. Under AddressSanitizer the cache is
// bypassed (every block goes back to the allocator), which the tests check instead.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <quokka/base/block_cache.hpp>

namespace quokka
{
namespace
{

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

TEST(BlockCache, FreedBlocksComeBackLastInFirstOutUpToTheCap)
{
	using Cache = BlockCache<48, 4>; // (a size and cap no other user has: the lists are per instantiation)
	ASSERT_EQ(Cache::cached(), 0u);
	std::vector<void*> blocks;
	for (int i = 0; i < 6; ++i)
		blocks.push_back(Cache::allocate());
	for (void* p : blocks)
		Cache::release(p);
	if (!kCaching)
	{
		EXPECT_EQ(Cache::cached(), 0u);
		return;
	}
	EXPECT_EQ(Cache::cached(), 4u); // blocks 0–3 kept, 4 and 5 went back to the allocator
	EXPECT_EQ(Cache::allocate(), blocks[3]);
	EXPECT_EQ(Cache::allocate(), blocks[2]);
	EXPECT_EQ(Cache::cached(), 2u);
	void* b1 = Cache::allocate();
	void* b0 = Cache::allocate();
	EXPECT_EQ(b1, blocks[1]);
	EXPECT_EQ(b0, blocks[0]);
	EXPECT_EQ(Cache::cached(), 0u);
	void* fresh = Cache::allocate(); // empty list: from the allocator
	EXPECT_NE(fresh, nullptr);
	for (void* p : {blocks[3], blocks[2], b1, b0, fresh})
		Cache::release(p);
	EXPECT_EQ(Cache::cached(), 4u);
	while (Cache::cached() != 0)
		::operator delete(Cache::allocate(), 48);
}

TEST(BlockCache, ABlockFreedOnAnotherThreadJoinsThatThreadsList)
{
	using Cache = BlockCache<56, 8>;
	void* made_here = Cache::allocate();
	size_t cached_there = 0;
	void* reused_there = nullptr;
	std::thread other(
	    [&]
	    {
		    Cache::release(made_here);
		    cached_there = Cache::cached();
		    reused_there = Cache::allocate();
		    Cache::release(reused_there); // freed with the thread's list when it exits
	    });
	other.join();
	EXPECT_EQ(Cache::cached(), 0u); // this thread's list is untouched
	if (kCaching)
	{
		EXPECT_EQ(cached_there, 1u);
		EXPECT_EQ(reused_there, made_here);
	}
	else
		EXPECT_EQ(cached_there, 0u);
}

} // namespace
} // namespace quokka
