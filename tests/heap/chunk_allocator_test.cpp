// ChunkAllocator: exact offsets for hand-made layouts (bump, best fit, ties, split, coalescing, cursor shrink),
// compaction plans applied to simulated buffer contents, and a 10^5-operation randomized differential test against a
// unit-map model that re-derives every decision from scratch (it prints its seed and dumps the history on failure).
#include "../test_seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <quokka/base/assert.hpp>
#include <quokka/heap/chunk_allocator.hpp>

namespace quokka::heap
{
namespace
{

using Move = ChunkAllocator::Move;

constexpr uint64_t kGiB = uint64_t(1) << 30;

using quokka::test::testSeed;

std::string validText(const ChunkAllocator& allocator)
{
	const Result<void> valid = allocator.validate();
	return valid.ok() ? "" : valid.error().message;
}

#define EXPECT_VALID(allocator) EXPECT_EQ(validText(allocator), "")

uint32_t alloc(ChunkAllocator& allocator, uint64_t bytes)
{
	const std::optional<uint32_t> offset = allocator.allocate(bytes);
	EXPECT_TRUE(offset.has_value()) << bytes;
	return offset.value_or(0xffffffffu);
}

std::vector<std::pair<uint32_t, uint64_t>> freeList(const ChunkAllocator& allocator)
{
	std::vector<std::pair<uint32_t, uint64_t>> out;
	for (const ChunkAllocator::Block& block : allocator.freeBlocks())
		out.emplace_back(block.offset, block.bytes);
	return out;
}

using FreeList = std::vector<std::pair<uint32_t, uint64_t>>;

// ---- bump, best fit, split -------------------------------------------------------------------------------------

TEST(ChunkAllocator, BumpsFromZeroInSixteenByteBlocks)
{
	ChunkAllocator allocator(1024);
	EXPECT_EQ(alloc(allocator, 16), 0u);
	EXPECT_EQ(alloc(allocator, 1), 16u);   // rounds up to 16
	EXPECT_EQ(alloc(allocator, 17), 32u);  // rounds up to 32
	EXPECT_EQ(alloc(allocator, 0), 64u);   // 0 still takes a block, so offsets stay distinct
	EXPECT_EQ(alloc(allocator, 100), 80u); // 16-B header + 84 B → 112
	EXPECT_EQ(allocator.blockBytes(32), 32u);
	EXPECT_EQ(allocator.blockBytes(64), 16u);
	EXPECT_EQ(allocator.blockBytes(80), 112u);
	EXPECT_EQ(allocator.blockBytes(48), 0u); // inside a block, not its start
	EXPECT_EQ(allocator.cursor(), 192u);
	EXPECT_EQ(allocator.liveBytes(), 192u);
	EXPECT_EQ(allocator.freeBytes(), 0u);
	EXPECT_EQ(allocator.liveCount(), 5u);
	EXPECT_EQ(allocator.capacity(), 1024u);
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, BestFitTakesTheSmallestHoleThatHoldsTheRequest)
{
	ChunkAllocator allocator(4096);
	// Holes of 64, 32, 48 and 16 bytes, each followed by a live 16-B separator.
	const uint32_t h64 = alloc(allocator, 64);
	alloc(allocator, 16);
	const uint32_t h32 = alloc(allocator, 32);
	alloc(allocator, 16);
	const uint32_t h48 = alloc(allocator, 48);
	alloc(allocator, 16);
	const uint32_t h16 = alloc(allocator, 16);
	alloc(allocator, 16);
	for (uint32_t hole : {h64, h32, h48, h16})
		allocator.free(hole);
	EXPECT_EQ(freeList(allocator), (FreeList{{0, 64}, {80, 32}, {128, 48}, {192, 16}}));
	const uint64_t cursor = allocator.cursor();

	EXPECT_EQ(alloc(allocator, 40), h48); // 48 is the smallest ≥ 40 (not the first, 64, nor the largest)
	EXPECT_EQ(alloc(allocator, 20), h32); // 32 ≥ 32
	EXPECT_EQ(alloc(allocator, 1), h16);  // exact fit
	EXPECT_EQ(alloc(allocator, 64), h64);
	EXPECT_EQ(allocator.freeBlockCount(), 0u);
	EXPECT_EQ(allocator.cursor(), cursor); // all from the free list, none from the cursor
	EXPECT_EQ(alloc(allocator, 16), cursor);
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, EqualHolesGoToTheLowestOffsetWhateverTheFreeOrder)
{
	ChunkAllocator allocator(4096);
	std::vector<uint32_t> blocks;
	for (int i = 0; i < 8; ++i)
		blocks.push_back(alloc(allocator, 32));
	// Free the 32-B blocks 5, 1 and 3 (in that order): three equal holes; 7 is last and goes back to the cursor.
	allocator.free(blocks[5]);
	allocator.free(blocks[1]);
	allocator.free(blocks[3]);
	allocator.free(blocks[7]);
	EXPECT_EQ(allocator.cursor(), 7u * 32);
	EXPECT_EQ(alloc(allocator, 32), blocks[1]);
	EXPECT_EQ(alloc(allocator, 17), blocks[3]);
	EXPECT_EQ(alloc(allocator, 32), blocks[5]);
	EXPECT_EQ(alloc(allocator, 32), blocks[7]); // from the cursor again
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, SplitKeepsTheRemainderAfterTheNewBlock)
{
	ChunkAllocator allocator(4096);
	const uint32_t a = alloc(allocator, 128);
	const uint32_t b = alloc(allocator, 16);
	allocator.free(a);
	EXPECT_EQ(freeList(allocator), (FreeList{{0, 128}}));
	EXPECT_EQ(alloc(allocator, 48), 0u);
	EXPECT_EQ(freeList(allocator), (FreeList{{48, 80}}));
	EXPECT_EQ(alloc(allocator, 16), 48u);
	EXPECT_EQ(freeList(allocator), (FreeList{{64, 64}}));
	EXPECT_EQ(allocator.freeBytes(), 64u);
	EXPECT_EQ(allocator.cursor(), 144u);
	EXPECT_VALID(allocator);
	allocator.free(b); // b ends at the cursor: cursor falls back to 64, swallowing the 64-B hole before b
	EXPECT_EQ(allocator.cursor(), 64u);
	EXPECT_EQ(allocator.freeBlockCount(), 0u);
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, FreeListIsPreferredToTheCursorEvenWhenLarger)
{
	// Bytes below the cursor are already in the GPU buffer; bumping would grow it.
	ChunkAllocator allocator(4096);
	const uint32_t big = alloc(allocator, 1024);
	alloc(allocator, 16);
	allocator.free(big);
	EXPECT_EQ(alloc(allocator, 16), 0u);
	EXPECT_EQ(allocator.cursor(), 1040u);
	allocator.reset();
}

// ---- coalescing and cursor shrink ------------------------------------------------------------------------------

TEST(ChunkAllocator, FreeMergesWithTheLeftTheRightAndBothNeighbours)
{
	ChunkAllocator allocator(4096);
	std::vector<uint32_t> b;
	for (int i = 0; i < 8; ++i)
		b.push_back(alloc(allocator, 16 * (i + 1))); // 16, 32, …, 128 at 0, 16, 48, 96, 160, 240, 336, 448
	allocator.free(b[1]);
	allocator.free(b[2]); // merges left into [16, 96)
	EXPECT_EQ(freeList(allocator), (FreeList{{16, 80}}));
	EXPECT_VALID(allocator);
	allocator.free(b[5]);
	allocator.free(b[4]); // merges right into [160, 336)
	EXPECT_EQ(freeList(allocator), (FreeList{{16, 80}, {160, 176}}));
	EXPECT_VALID(allocator);
	allocator.free(b[3]); // merges both: [16, 336)
	EXPECT_EQ(freeList(allocator), (FreeList{{16, 320}}));
	EXPECT_EQ(allocator.freeBytes(), 320u);
	EXPECT_EQ(allocator.liveBytes(), 16u + 112 + 128);
	EXPECT_EQ(allocator.cursor(), 576u);
	EXPECT_VALID(allocator);
	allocator.free(b[0]); // merges right, down to offset 0
	EXPECT_EQ(freeList(allocator), (FreeList{{0, 336}}));
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, FreeingTheLastBlockShrinksTheCursorOverFreeSpaceBeforeIt)
{
	ChunkAllocator allocator(4096);
	const uint32_t a = alloc(allocator, 16);
	const uint32_t b = alloc(allocator, 32);
	const uint32_t c = alloc(allocator, 48);
	const uint32_t d = alloc(allocator, 64);
	allocator.free(c);
	allocator.free(b);
	EXPECT_EQ(freeList(allocator), (FreeList{{16, 80}}));
	allocator.free(d); // d, then the merged b+c hole, go back: cursor stops at a's end
	EXPECT_EQ(allocator.cursor(), 16u);
	EXPECT_EQ(allocator.freeBlockCount(), 0u);
	EXPECT_VALID(allocator);
	allocator.free(a);
	EXPECT_EQ(allocator.cursor(), 0u);
	EXPECT_EQ(allocator.liveCount(), 0u);
	EXPECT_VALID(allocator);
}

TEST(ChunkAllocator, FreeingEverythingInAnyOrderReturnsTheCursorToZero)
{
	std::mt19937 rng(testSeed(5));
	for (int round = 0; round < 50; ++round)
	{
		ChunkAllocator allocator(1 << 16);
		std::vector<uint32_t> blocks;
		for (int i = 0; i < 64; ++i)
			blocks.push_back(alloc(allocator, 1 + rng() % 200));
		std::shuffle(blocks.begin(), blocks.end(), rng);
		for (uint32_t offset : blocks)
		{
			allocator.free(offset);
			ASSERT_EQ(validText(allocator), "") << "round " << round;
		}
		EXPECT_EQ(allocator.cursor(), 0u);
		EXPECT_EQ(allocator.freeBlockCount(), 0u);
		EXPECT_EQ(allocator.freeBytes(), 0u);
	}
}

// ---- capacity, fits ------------------------------------------------------------------------------------------

TEST(ChunkAllocator, ExhaustedCapacityReturnsNulloptAndChangesNothing)
{
	ChunkAllocator allocator(256);
	EXPECT_FALSE(allocator.allocate(257).has_value());
	EXPECT_FALSE(allocator.allocate(UINT64_MAX).has_value()); // no overflow in the rounding
	EXPECT_FALSE(allocator.fits(UINT64_MAX));
	EXPECT_EQ(alloc(allocator, 200), 0u); // 208 B
	EXPECT_TRUE(allocator.fits(48));
	EXPECT_FALSE(allocator.fits(49));
	EXPECT_FALSE(allocator.allocate(49).has_value());
	EXPECT_EQ(alloc(allocator, 48), 208u);
	EXPECT_FALSE(allocator.fits(0)); // even an empty request takes 16 B
	EXPECT_FALSE(allocator.allocate(1).has_value());
	EXPECT_EQ(allocator.cursor(), 256u);
	EXPECT_EQ(allocator.liveCount(), 2u);
	EXPECT_VALID(allocator);
	allocator.free(0);
	EXPECT_TRUE(allocator.fits(208)); // from the hole
	EXPECT_FALSE(allocator.fits(209));
	allocator.reset();
	EXPECT_EQ(alloc(allocator, 256), 0u);
	allocator.reset();
}

TEST(ChunkAllocator, FitsAgreesWithAllocateForEverySize)
{
	// Holes of 48 and 96 below the cursor and 160 bytes left above it.
	ChunkAllocator allocator(512);
	const uint32_t h48 = alloc(allocator, 48);
	alloc(allocator, 16);
	const uint32_t h96 = alloc(allocator, 96);
	alloc(allocator, 192);
	allocator.free(h48);
	allocator.free(h96);
	ASSERT_EQ(allocator.cursor(), 352u);
	for (uint64_t bytes = 0; bytes <= 600; ++bytes)
	{
		const bool fits = allocator.fits(bytes);
		const std::optional<uint32_t> offset = allocator.allocate(bytes);
		EXPECT_EQ(fits, offset.has_value()) << bytes;
		EXPECT_EQ(fits, bytes <= 160) << bytes;
		if (offset)
			allocator.free(*offset);
		ASSERT_EQ(validText(allocator), "") << bytes;
	}
	EXPECT_EQ(allocator.cursor(), 352u);
	allocator.reset();
}

TEST(ChunkAllocator, FourGiBChunkUsesTheWholeU32OffsetRange)
{
	ChunkAllocator allocator(4 * kGiB);
	EXPECT_EQ(allocator.capacity(), 4 * kGiB);
	EXPECT_EQ(alloc(allocator, 16), 0u);
	EXPECT_EQ(alloc(allocator, 4 * kGiB - 32), 16u);
	EXPECT_EQ(alloc(allocator, 16), 0xfffffff0u);
	EXPECT_EQ(allocator.cursor(), 4 * kGiB);
	EXPECT_FALSE(allocator.fits(1));
	EXPECT_VALID(allocator);
	allocator.free(0);
	const std::vector<Move> moves = allocator.planCompaction();
	ASSERT_EQ(moves.size(), 1u);
	EXPECT_EQ(moves[0].from, 16u);
	EXPECT_EQ(moves[0].to, 0u);
	EXPECT_EQ(moves[0].bytes, 0xfffffff0u);
	EXPECT_EQ(ChunkAllocator::remap(moves, 0xfffffff0u), 0xffffffe0u);
	EXPECT_EQ(ChunkAllocator::remap(moves, 0xfffffffcu), 0xffffffecu); // inside the last block
	EXPECT_EQ(allocator.cursor(), 4 * kGiB - 16);
	EXPECT_VALID(allocator);
	allocator.free(0xffffffe0u);
	allocator.free(0);
	EXPECT_EQ(allocator.cursor(), 0u);
}

// ---- bad frees -----------------------------------------------------------------------------------------------

TEST(ChunkAllocator, CheckedFreeReportsDoubleAndForeignFreesAndChangesNothing)
{
	ChunkAllocator allocator(4096);
	const uint32_t a = alloc(allocator, 64);
	const uint32_t b = alloc(allocator, 64);
	alloc(allocator, 16);
	EXPECT_TRUE(allocator.freeChecked(a).ok());
	const Result<void> twice = allocator.freeChecked(a);
	ASSERT_FALSE(twice.ok());
	EXPECT_EQ(twice.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(twice.error().message.find("double free"), std::string::npos);
	EXPECT_FALSE(allocator.freeChecked(b + 16).ok()); // inside a live block
	EXPECT_FALSE(allocator.freeChecked(b + 1).ok());  // misaligned
	EXPECT_FALSE(allocator.freeChecked(4000).ok());   // beyond the cursor
	EXPECT_EQ(allocator.badFreeCount(), 4u);
	EXPECT_EQ(allocator.liveCount(), 2u);
	EXPECT_EQ(freeList(allocator), (FreeList{{0, 64}}));
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, FreeManyMergesAdjacentBlocksAndEndsWhereFreeingEachWould)
{
	// Blocks [a b c] [d] e [f g] at offsets 0..: free {g, a, c, b, f} in one call (unsorted); then the same frees one
	// by one on a twin. Both must hold the same free list, cursor and counts, and place the next requests alike.
	const uint64_t sizes[] = {32, 48, 16, 64, 16, 80, 32};
	ChunkAllocator many(4096), each(4096);
	std::vector<uint32_t> at;
	for (uint64_t bytes : sizes)
	{
		at.push_back(alloc(many, bytes));
		EXPECT_EQ(alloc(each, bytes), at.back());
	}
	alloc(many, 16); // a live block after g, so the run f g stays below the cursor
	alloc(each, 16);
	std::vector<uint32_t> batch = {at[6], at[0], at[2], at[1], at[5]};
	ASSERT_TRUE(many.freeManyChecked(batch).ok());
	for (uint32_t offset : {at[6], at[0], at[2], at[1], at[5]})
		each.free(offset);
	EXPECT_EQ(freeList(many), (FreeList{{0, 96}, {176, 112}}));
	EXPECT_EQ(freeList(many), freeList(each));
	EXPECT_EQ(many.cursor(), each.cursor());
	EXPECT_EQ(many.liveBytes(), 96u);
	EXPECT_EQ(many.liveCount(), 3u);
	EXPECT_VALID(many);
	// Freeing d and e merges everything below the last block; freeing that too returns the cursor to 0.
	std::vector<uint32_t> rest = {at[4], at[3]};
	many.freeMany(rest);
	EXPECT_EQ(freeList(many), (FreeList{{0, 288}}));
	std::vector<uint32_t> last = {288};
	many.freeMany(last);
	EXPECT_EQ(many.cursor(), 0u);
	EXPECT_EQ(many.liveCount(), 0u);
	EXPECT_TRUE(freeList(many).empty());
	EXPECT_VALID(many);
	std::vector<uint32_t> none;
	EXPECT_TRUE(many.freeManyChecked(none).ok());
	each.reset();
}

TEST(ChunkAllocator, FreeManyWithABadOrRepeatedOffsetFreesNothing)
{
	ChunkAllocator allocator(4096);
	const uint32_t a = alloc(allocator, 64);
	const uint32_t b = alloc(allocator, 64);
	alloc(allocator, 16);
	for (std::vector<uint32_t> batch : {std::vector<uint32_t>{a, b, a}, std::vector<uint32_t>{b, a + 16},
	                                    std::vector<uint32_t>{a, 4000}, std::vector<uint32_t>{b + 1}})
	{
		const Result<void> freed = allocator.freeManyChecked(batch);
		ASSERT_FALSE(freed.ok());
		EXPECT_EQ(freed.error().code, ErrorCode::InvalidArgument);
		EXPECT_NE(freed.error().message.find("nothing was freed"), std::string::npos);
	}
	EXPECT_EQ(allocator.badFreeCount(), 4u);
	EXPECT_EQ(allocator.liveCount(), 3u);
	EXPECT_TRUE(freeList(allocator).empty());
	EXPECT_EQ(allocator.cursor(), 144u);
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocator, FreeManyAgreesWithFreeingEachOverRandomBatches)
{
	// Twins driven by the same allocations; one frees random batches (of up to 40 blocks, often adjacent: the most
	// recent allocations), the other frees the same blocks one by one. Every step must leave identical state.
	const uint32_t seed = testSeed(20261201);
	std::printf("seed %u (QUOKKA_TEST_SEED)\n", seed);
	std::mt19937 rng(seed);
	ChunkAllocator many(1u << 20), each(1u << 20);
	std::vector<uint32_t> live;
	for (int step = 0; step < 4000; ++step)
	{
		if (live.empty() || rng() % 3 != 0)
		{
			const uint64_t bytes = 16 * (1 + rng() % 24);
			const std::optional<uint32_t> m = many.allocate(bytes), e = each.allocate(bytes);
			ASSERT_EQ(m, e) << "step " << step;
			if (m)
				live.push_back(*m);
			continue;
		}
		const size_t n = std::min<size_t>(live.size(), 1 + rng() % 40);
		std::vector<uint32_t> batch;
		if (rng() % 2)
			batch.assign(live.end() - ptrdiff_t(n), live.end()), live.resize(live.size() - n);
		else
			for (size_t i = 0; i < n; ++i)
			{
				const size_t j = rng() % live.size();
				batch.push_back(live[j]);
				live[j] = live.back();
				live.pop_back();
			}
		for (uint32_t offset : batch)
			each.free(offset);
		ASSERT_TRUE(many.freeManyChecked(batch).ok()) << "step " << step;
		ASSERT_EQ(freeList(many), freeList(each)) << "step " << step;
		ASSERT_EQ(many.cursor(), each.cursor()) << "step " << step;
		ASSERT_EQ(many.liveCount(), each.liveCount()) << "step " << step;
		ASSERT_EQ(validText(many), "") << "step " << step;
	}
	many.freeMany(live);
	EXPECT_EQ(many.cursor(), 0u);
	EXPECT_EQ(many.liveCount(), 0u);
	each.reset();
}

[[noreturn]] void throwingHandler(const char*, const char* message, const char*, int)
{
	throw std::runtime_error(message);
}

TEST(ChunkAllocator, DoubleFreeAssertsInTestBuilds)
{
#if defined(QUOKKA_ENABLE_ASSERTS) && QUOKKA_ENABLE_ASSERTS
	ChunkAllocator allocator(4096);
	const uint32_t a = alloc(allocator, 64);
	alloc(allocator, 16);
	allocator.free(a);
	const AssertHandler previous = setAssertHandler(throwingHandler);
	EXPECT_THROW(allocator.free(a), std::runtime_error);
	setAssertHandler(previous);
	EXPECT_EQ(allocator.badFreeCount(), 1u);
	EXPECT_VALID(allocator);
	allocator.reset();
#else
	GTEST_SKIP() << "asserts compiled out";
#endif
}

TEST(ChunkAllocator, LeakReportNamesLiveBlocksAndMovesLeaveTheSourceEmpty)
{
	ChunkAllocator allocator(4096);
	alloc(allocator, 100);
	EXPECT_NE(allocator.leakReport().find("1 live block(s), 112 bytes"), std::string::npos);
	ChunkAllocator moved(std::move(allocator));
	EXPECT_EQ(allocator.leakReport(), ""); // NOLINT(bugprone-use-after-move): moved-from state is specified
	EXPECT_EQ(allocator.capacity(), 0u);
	EXPECT_VALID(allocator);
	EXPECT_EQ(moved.liveCount(), 1u);
	ChunkAllocator assigned(16);
	assigned = std::move(moved);
	EXPECT_EQ(assigned.blockBytes(0), 112u);
	EXPECT_EQ(assigned.capacity(), 4096u);
	assigned.reset();
	EXPECT_EQ(assigned.leakReport(), "");
}

// ---- compaction ----------------------------------------------------------------------------------------------

// Applies `moves` to `memory` the two ways the header allows a GPU to: (1) each Move cut into pieces of at most
// from − to bytes, copied in increasing order (every piece's source and destination are disjoint: memcpy, not
// memmove); (2) every source copied to scratch first, then every destination written from scratch. Both must agree.
std::vector<uint8_t> applyMoves(const std::vector<uint8_t>& memory, std::span<const Move> moves)
{
	std::vector<uint8_t> pieces = memory;
	for (const Move& move : moves)
	{
		EXPECT_LT(move.to, move.from);
		const uint32_t piece = move.from - move.to;
		for (uint64_t done = 0; done < move.bytes; done += piece)
		{
			const uint64_t n = std::min<uint64_t>(piece, move.bytes - done);
			std::memcpy(pieces.data() + move.to + done, pieces.data() + move.from + done, n);
		}
	}
	std::vector<uint8_t> bounced = memory;
	std::vector<uint8_t> scratch;
	for (const Move& move : moves)
		scratch.insert(scratch.end(), memory.begin() + move.from, memory.begin() + move.from + move.bytes);
	size_t at = 0;
	for (const Move& move : moves)
	{
		std::memcpy(bounced.data() + move.to, scratch.data() + at, move.bytes);
		at += move.bytes;
	}
	EXPECT_TRUE(pieces == bounced);
	return pieces;
}

// Fills each live block of a byte array with bytes derived from its index, so a misplaced copy shows.
struct Filled
{
	std::vector<uint8_t> memory;
	std::vector<std::pair<uint32_t, uint32_t>> blocks; // old offset, bytes
};

Filled fill(const ChunkAllocator& allocator, const std::vector<uint32_t>& live)
{
	Filled out;
	out.memory.assign(allocator.cursor(), 0xee);
	for (size_t i = 0; i < live.size(); ++i)
	{
		const uint32_t bytes = uint32_t(allocator.blockBytes(live[i]));
		out.blocks.emplace_back(live[i], bytes);
		for (uint32_t k = 0; k < bytes; ++k)
			out.memory[live[i] + k] = uint8_t(i * 31 + k * 7 + 1);
	}
	return out;
}

// Remaps every block of `before` and checks that the allocator holds a block of the same size there whose bytes in
// `after` equal the original bytes.
void expectContentPreserved(const ChunkAllocator& allocator, const Filled& before, const std::vector<uint8_t>& after,
                            std::span<const Move> moves)
{
	for (const auto& [old_offset, bytes] : before.blocks)
	{
		const uint32_t now = ChunkAllocator::remap(moves, old_offset);
		EXPECT_EQ(allocator.blockBytes(now), bytes) << old_offset;
		if (bytes > 16) // a ref to the data after the 16-B header moves with its block
		{
			EXPECT_EQ(ChunkAllocator::remap(moves, old_offset + 16), now + 16) << old_offset;
		}
		ASSERT_LE(uint64_t(now) + bytes, after.size());
		EXPECT_EQ(std::memcmp(after.data() + now, before.memory.data() + old_offset, bytes), 0) << old_offset;
	}
}

TEST(ChunkAllocatorCompaction, PlanMergesRunsSkipsPackedBlocksAndRemapsEveryBlock)
{
	// Units of 16 B: A[0,1) B[1,3) hole[3,6) C[6,7) D[7,9) hole[9,10) E[10,14) hole[14,16) F[16,17) G[17,18).
	ChunkAllocator allocator(4096);
	const uint32_t a = alloc(allocator, 16);
	const uint32_t b = alloc(allocator, 32);
	const uint32_t h1 = alloc(allocator, 48);
	const uint32_t c = alloc(allocator, 16);
	const uint32_t d = alloc(allocator, 32);
	const uint32_t h2 = alloc(allocator, 16);
	const uint32_t e = alloc(allocator, 64);
	const uint32_t h3 = alloc(allocator, 32);
	const uint32_t f = alloc(allocator, 16);
	const uint32_t g = alloc(allocator, 16);
	for (uint32_t hole : {h1, h2, h3})
		allocator.free(hole);
	ASSERT_EQ(allocator.cursor(), 288u);
	const Filled before = fill(allocator, {a, b, c, d, e, f, g});

	const std::vector<Move> moves = allocator.planCompaction();
	ASSERT_EQ(moves.size(), 3u);
	// C+D move as one run; A and B stay; F+G is one run.
	EXPECT_EQ(moves[0].from, 96u);
	EXPECT_EQ(moves[0].to, 48u);
	EXPECT_EQ(moves[0].bytes, 48u);
	EXPECT_EQ(moves[1].from, 160u);
	EXPECT_EQ(moves[1].to, 96u);
	EXPECT_EQ(moves[1].bytes, 64u);
	EXPECT_EQ(moves[2].from, 256u);
	EXPECT_EQ(moves[2].to, 160u);
	EXPECT_EQ(moves[2].bytes, 32u);
	EXPECT_EQ(allocator.cursor(), 192u);
	EXPECT_EQ(allocator.liveBytes(), 192u);
	EXPECT_EQ(allocator.freeBlockCount(), 0u);
	EXPECT_EQ(allocator.liveCount(), 7u);
	EXPECT_VALID(allocator);

	EXPECT_EQ(ChunkAllocator::remap(moves, a), a); // not moved
	EXPECT_EQ(ChunkAllocator::remap(moves, b + 16), b + 16);
	EXPECT_EQ(ChunkAllocator::remap(moves, d), 64u);
	EXPECT_EQ(ChunkAllocator::remap(moves, g), 176u);
	EXPECT_EQ(ChunkAllocator::remap(moves, 1000), 1000u); // past every run
	EXPECT_EQ(ChunkAllocator::remap(moves, h1), h1);      // in a hole: no run holds it
	EXPECT_EQ(ChunkAllocator::remap(moves, h3), h3);      // the first byte after a run is not in it
	EXPECT_EQ(ChunkAllocator::remap(moves, 288), 288u);   // nor is the old cursor
	const std::vector<uint8_t> after = applyMoves(before.memory, moves);
	expectContentPreserved(allocator, before, after, moves);

	// The new layout allocates from the cursor again and frees cleanly.
	EXPECT_EQ(alloc(allocator, 16), 192u);
	for (uint32_t offset : {0u, 16u, 48u, 64u, 96u, 160u, 176u, 192u})
		allocator.free(offset);
	EXPECT_EQ(allocator.cursor(), 0u);
}

TEST(ChunkAllocatorCompaction, PackedChunkNeedsNoMove)
{
	ChunkAllocator allocator(4096);
	for (int i = 0; i < 5; ++i)
		alloc(allocator, 48);
	const uint32_t last = alloc(allocator, 16);
	allocator.free(last); // back to the cursor, not a hole
	EXPECT_TRUE(allocator.planCompaction().empty());
	EXPECT_EQ(allocator.cursor(), 240u);
	EXPECT_EQ(ChunkAllocator::remap({}, 48), 48u);
	EXPECT_VALID(allocator);
	allocator.reset();
	EXPECT_TRUE(allocator.planCompaction().empty()); // and an empty chunk
}

TEST(ChunkAllocatorCompaction, RunMovedByLessThanItsLengthOverlapsItsDestination)
{
	// One 16-B hole before a 320-B run: the run moves by 16, so it overlaps its destination in all but 16 bytes.
	ChunkAllocator allocator(4096);
	const uint32_t hole = alloc(allocator, 16);
	std::vector<uint32_t> live;
	for (int i = 0; i < 10; ++i)
		live.push_back(alloc(allocator, 32));
	allocator.free(hole);
	const Filled before = fill(allocator, live);
	const std::vector<Move> moves = allocator.planCompaction();
	ASSERT_EQ(moves.size(), 1u);
	EXPECT_EQ(moves[0].from, 16u);
	EXPECT_EQ(moves[0].to, 0u);
	EXPECT_EQ(moves[0].bytes, 320u);
	expectContentPreserved(allocator, before, applyMoves(before.memory, moves), moves);
	EXPECT_VALID(allocator);
	allocator.reset();
}

TEST(ChunkAllocatorCompaction, ShouldCompactNeedsTheFloorAndMoreThanHalfWaste)
{
	ChunkAllocator allocator(1 << 20);
	const uint32_t a = alloc(allocator, 4096);
	alloc(allocator, 4096);
	const uint32_t c = alloc(allocator, 4096);
	alloc(allocator, 16);
	EXPECT_FALSE(allocator.shouldCompact(0)); // nothing free
	allocator.free(a);
	// 4096 free of 12304: a third is waste.
	EXPECT_FALSE(allocator.shouldCompact(0));
	allocator.free(c);
	// 8192 free, 4112 live: more than half is waste.
	EXPECT_TRUE(allocator.shouldCompact(8192));
	EXPECT_FALSE(allocator.shouldCompact(8193)); // below the floor
	(void)allocator.planCompaction();
	EXPECT_FALSE(allocator.shouldCompact(0));
	EXPECT_EQ(allocator.cursor(), 4112u);
	allocator.reset();
	EXPECT_FALSE(allocator.shouldCompact(0)); // empty: 0 × 2 < 0 is false
}

// ---- detail::BlockBits ------------------------------------------------------------------------------------------

TEST(BlockBits, NextAndPrevMatchAStdSetAcrossLevelsAndGrowth)
{
	// Dense members, then sparse ones far apart (gaps that span whole summary words), growth past every level, and
	// resets that empty words and summary words again.
	std::mt19937 rng(testSeed(11));
	detail::BlockBits bits;
	std::set<uint32_t> model;
	auto expectNext = [&](uint32_t u)
	{
		auto it = model.upper_bound(u);
		return it == model.end() ? detail::BlockBits::kNone : *it;
	};
	auto expectPrev = [&](uint32_t u)
	{
		auto it = model.lower_bound(u);
		return it == model.begin() ? detail::BlockBits::kNone : *std::prev(it);
	};
	for (int op = 0; op < 200000; ++op)
	{
		const uint32_t range = op < 50000 ? 4096 : op < 120000 ? (1u << 20) : (1u << 28);
		const uint32_t u = rng() % range;
		switch (rng() % 4)
		{
		case 0:
			bits.set(u);
			model.insert(u);
			break;
		case 1:
			bits.reset(u);
			model.erase(u);
			break;
		default:
			ASSERT_EQ(bits.test(u), model.count(u) == 1) << "op " << op;
			ASSERT_EQ(bits.next(u), expectNext(u)) << "op " << op << " next(" << u << ")";
			ASSERT_EQ(bits.prev(u), expectPrev(u)) << "op " << op << " prev(" << u << ")";
		}
		if (op % 20000 == 0)
		{
			ASSERT_EQ(bits.check(), "") << "op " << op;
		}
	}
	ASSERT_EQ(bits.check(), "");
	// Every member, walked with next() from the smallest.
	std::vector<uint32_t> walked;
	if (!model.empty())
		for (uint32_t u = *model.begin(); u != detail::BlockBits::kNone; u = bits.next(u))
			walked.push_back(u);
	EXPECT_EQ(walked, std::vector<uint32_t>(model.begin(), model.end()));
	EXPECT_EQ(bits.next(~0u - 1), detail::BlockBits::kNone);
	EXPECT_EQ(bits.prev(0), detail::BlockBits::kNone);
	bits.clear();
	EXPECT_EQ(bits.check(), "");
	EXPECT_EQ(bits.next(0), detail::BlockBits::kNone);
	EXPECT_EQ(bits.prev(1u << 28), detail::BlockBits::kNone);
}

TEST(BlockBits, FindsNeighboursAcrossLongGaps)
{
	detail::BlockBits bits;
	bits.set(3);
	bits.set(200000000); // ~2^27.6: four levels of 64
	EXPECT_EQ(bits.next(3), 200000000u);
	EXPECT_EQ(bits.prev(200000000), 3u);
	EXPECT_EQ(bits.next(0), 3u);
	EXPECT_EQ(bits.prev(4), 3u);
	EXPECT_EQ(bits.prev(3), detail::BlockBits::kNone);
	EXPECT_EQ(bits.next(200000000), detail::BlockBits::kNone);
	EXPECT_EQ(bits.check(), "");
	bits.reset(200000000);
	EXPECT_EQ(bits.next(3), detail::BlockBits::kNone);
	EXPECT_EQ(bits.check(), "");
}

// ---- randomized differential test ----------------------------------------------------------------------------

// The oracle: one owner id per 16-B unit (−1 = free) and a cursor. Every decision is re-derived by scanning the map
// — the holes are the maximal free runs below the cursor — so it shares no data structure with the allocator.
struct UnitModel
{
	uint32_t capacity = 0; // units
	uint32_t cursor = 0;
	std::vector<int32_t> owner;

	explicit UnitModel(uint32_t units) : capacity(units), owner(units, -1) {}

	std::vector<std::pair<uint32_t, uint32_t>> holes() const
	{
		std::vector<std::pair<uint32_t, uint32_t>> out;
		for (uint32_t u = 0; u < cursor;)
		{
			if (owner[u] >= 0)
			{
				++u;
				continue;
			}
			uint32_t end = u;
			while (end < cursor && owner[end] < 0)
				++end;
			out.emplace_back(u, end - u);
			u = end;
		}
		return out;
	}
	// Best fit, lowest offset among equal sizes, else the cursor; nullopt when neither has room.
	std::optional<uint32_t> place(uint32_t units) const
	{
		std::optional<std::pair<uint32_t, uint32_t>> best;
		for (const auto& hole : holes())
			if (hole.second >= units && (!best || hole.second < best->second))
				best = hole;
		if (best)
			return best->first;
		if (capacity - cursor >= units)
			return cursor;
		return std::nullopt;
	}
	void take(uint32_t offset, uint32_t units, int32_t id)
	{
		for (uint32_t u = offset; u < offset + units; ++u)
			owner[u] = id;
		cursor = std::max(cursor, offset + units);
	}
	void give(uint32_t offset, uint32_t units)
	{
		for (uint32_t u = offset; u < offset + units; ++u)
			owner[u] = -1;
		while (cursor > 0 && owner[cursor - 1] < 0)
			--cursor;
	}
};

struct LiveBlock
{
	uint32_t offset = 0; // bytes
	uint32_t units = 0;
	int32_t id = 0;
};

TEST(ChunkAllocatorModel, HundredThousandRandomOperationsMatchAUnitMap)
{
	const uint32_t seed = testSeed(20261130);
	std::printf("ChunkAllocatorModel seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
	std::mt19937 rng(seed);
	constexpr uint32_t kUnits = 1024; // 16 KiB: small enough to run out of room often
	constexpr int kOps = 100000;
	ChunkAllocator allocator(uint64_t(kUnits) * 16);
	UnitModel model(kUnits);
	std::vector<LiveBlock> live;
	std::vector<uint32_t> stale; // offsets freed earlier, for double frees
	std::vector<std::string> history;
	history.reserve(kOps);
	int32_t next_id = 0;
	uint64_t expected_bad = 0;
	uint64_t failures = 0, compactions = 0, moved_runs = 0, group_fits = 0;

	auto dump = [&](const std::string& why)
	{
		const std::string path =
		    (std::filesystem::temp_directory_path() / ("chunk_allocator_history_" + std::to_string(seed) + ".txt"))
		        .string();
		std::ofstream out(path);
		for (const std::string& line : history)
			out << line << '\n';
		ADD_FAILURE() << why << " (seed " << seed << ", op " << history.size() << "; full history in " << path
		              << ", last op: " << (history.empty() ? "" : history.back()) << ")";
	};
	auto reject = [&](const std::string& why)
	{
		dump(why);
		return false;
	};
	// Allocates `bytes` in both; false on any disagreement (already reported).
	auto allocateBoth = [&](uint64_t bytes, bool must_succeed) -> bool
	{
		const uint32_t units = std::max(uint32_t((bytes + 15) / 16), 1u);
		history.push_back("alloc " + std::to_string(bytes));
		const std::optional<uint32_t> expected = model.place(units);
		if (allocator.fits(bytes) != expected.has_value())
			return reject("fits() says " + std::to_string(allocator.fits(bytes)) + ", the model disagrees");
		const std::optional<uint32_t> got = allocator.allocate(bytes);
		if (got.has_value() != expected.has_value())
			return reject(got ? "allocated while the model has no room" : "no room while the model has some");
		if (!got)
		{
			++failures;
			if (must_succeed)
				return reject("a part of a group that fits() accepted failed");
			return true;
		}
		history.back() += " -> " + std::to_string(*got);
		if (*got != *expected * 16)
			return reject("offset " + std::to_string(*got) + " but best fit is " + std::to_string(*expected * 16));
		for (uint32_t u = *expected; u < *expected + units; ++u)
			if (model.owner[u] >= 0)
				return reject("block overlaps live block " + std::to_string(model.owner[u]));
		model.take(*expected, units, next_id);
		live.push_back({*got, units, next_id++});
		return true;
	};

	for (int op = 0; op < kOps; ++op)
	{
		// Phases of 5000 operations lean towards allocating (fill up, hit the capacity) or freeing (drain).
		const uint32_t alloc_percent = (op / 5000) % 2 == 0 ? 62 : 38;
		const uint32_t roll = rng() % 1000;
		if (roll < 5 && !stale.empty())
		{
			const uint32_t offset = stale[rng() % stale.size()];
			if (std::any_of(live.begin(), live.end(), [&](const LiveBlock& b) { return b.offset == offset; }))
				continue; // reused since: not a double free
			history.push_back("double free " + std::to_string(offset));
			++expected_bad;
			if (allocator.freeChecked(offset).ok())
				return dump("a double free was accepted");
		}
		else if (roll < 8)
		{
			// A whole draw: if fits() accepts the sum of its parts, every part must allocate, in any order.
			std::vector<uint64_t> parts(1 + rng() % 4);
			uint64_t total = 0;
			for (uint64_t& part : parts)
			{
				part = 16 + rng() % 200;
				total += (part + 15) / 16 * 16;
			}
			history.push_back("group-fit " + std::to_string(total));
			if (allocator.fits(total))
			{
				++group_fits;
				for (uint64_t part : parts)
					if (!allocateBoth(part, true))
						return;
			}
		}
		else if (roll < 9)
		{
			// Compaction: the moves, applied to the owner map as memory, must put every block where remap() says.
			history.push_back("compact");
			std::vector<int32_t> memory(model.owner.begin(), model.owner.begin() + model.cursor);
			const std::vector<Move> moves = allocator.planCompaction();
			++compactions;
			moved_runs += moves.size();
			for (const Move& move : moves)
			{
				if (move.to >= move.from || move.from % 16 || move.to % 16 || move.bytes % 16 || move.bytes == 0)
					return dump("malformed move");
				std::memmove(memory.data() + move.to / 16, memory.data() + move.from / 16, move.bytes / 16 * 4);
			}
			for (size_t i = 1; i < moves.size(); ++i)
				if (moves[i].to < moves[i - 1].to + moves[i - 1].bytes ||
				    moves[i].from == moves[i - 1].from + moves[i - 1].bytes)
					return dump("moves unsorted, overlapping, or a run split in two");
			std::sort(live.begin(), live.end(),
			          [](const LiveBlock& x, const LiveBlock& y) { return x.offset < y.offset; });
			UnitModel packed(kUnits);
			uint32_t to = 0;
			for (LiveBlock& block : live)
			{
				const uint32_t now = ChunkAllocator::remap(moves, block.offset);
				if (now != to * 16)
					return dump("block " + std::to_string(block.id) + " remapped to " + std::to_string(now) +
					            ", packing puts it at " + std::to_string(to * 16));
				if (allocator.blockBytes(now) != uint64_t(block.units) * 16)
					return dump("no block of the right size at the remapped offset");
				for (uint32_t u = 0; u < block.units; ++u)
					if (memory[to + u] != block.id)
						return dump("block " + std::to_string(block.id) + "'s content was not copied to " +
						            std::to_string(now));
				packed.take(to, block.units, block.id);
				block.offset = now;
				to += block.units;
			}
			model = packed;
			stale.clear(); // old offsets mean nothing after a compaction
		}
		else if (live.empty() || roll < 9 + alloc_percent * 10)
		{
			// Sizes: mostly small; sometimes large; sometimes exactly the largest hole or the room above the cursor.
			const uint32_t kind = rng() % 20;
			uint64_t bytes = kind < 14 ? rng() % 129 : kind < 18 ? rng() % 2049 : 0;
			if (kind == 18)
			{
				const auto holes = model.holes();
				for (const auto& hole : holes)
					bytes = std::max<uint64_t>(bytes, hole.second * 16);
			}
			if (kind == 19)
				bytes = uint64_t(model.capacity - model.cursor) * 16 + (rng() % 2) * 16; // exact, or one unit over
			if (!allocateBoth(bytes, false))
				return;
		}
		else
		{
			const size_t i = rng() % live.size();
			const LiveBlock block = live[i];
			live[i] = live.back();
			live.pop_back();
			history.push_back("free " + std::to_string(block.offset));
			if (!allocator.freeChecked(block.offset).ok())
				return dump("a live block was rejected");
			model.give(block.offset / 16, block.units);
			if (stale.size() < 64)
				stale.push_back(block.offset);
			else
				stale[rng() % stale.size()] = block.offset;
		}

		const uint64_t live_units = std::accumulate(live.begin(), live.end(), uint64_t(0),
		                                            [](uint64_t sum, const LiveBlock& b) { return sum + b.units; });
		if (allocator.cursor() != uint64_t(model.cursor) * 16 || allocator.liveBytes() != live_units * 16 ||
		    allocator.liveCount() != live.size() || allocator.freeBytes() != allocator.cursor() - live_units * 16)
			return dump("stats disagree: cursor " + std::to_string(allocator.cursor()) + " vs " +
			            std::to_string(model.cursor * 16));
		if (op % 64 == 0 || op == kOps - 1)
		{
			if (const Result<void> valid = allocator.validate(); !valid.ok())
				return dump(valid.error().message);
			FreeList expected;
			for (const auto& [offset, units] : model.holes())
				expected.emplace_back(offset * 16, uint64_t(units) * 16);
			if (freeList(allocator) != expected)
				return dump("free list differs from the model's holes");
		}
	}
	EXPECT_EQ(allocator.badFreeCount(), expected_bad);
	std::printf("  %llu failed allocations, %llu group fits, %llu compactions (%llu runs moved), %zu live at the end\n",
	            (unsigned long long)failures, (unsigned long long)group_fits, (unsigned long long)compactions,
	            (unsigned long long)moved_runs, live.size());
	// Every branch ran: the test would prove little if capacity were never reached or compaction never moved.
	EXPECT_GT(failures, 100u);
	EXPECT_GT(group_fits, 100u);
	EXPECT_GT(moved_runs, 10u);
	EXPECT_GT(expected_bad, 100u);
	for (const LiveBlock& block : live)
		ASSERT_TRUE(allocator.freeChecked(block.offset).ok());
	EXPECT_EQ(allocator.cursor(), 0u);
	EXPECT_EQ(allocator.freeBlockCount(), 0u);
	EXPECT_VALID(allocator);
}

} // namespace
} // namespace quokka::heap
