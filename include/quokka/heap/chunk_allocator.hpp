// quokka/heap/chunk_allocator.hpp — the CPU side of one arena chunk: which byte ranges of its storage buffer are live.
//
// The heap renderer keeps every object's data in chunks (one GPU storage buffer each, capped at `max_bytes`). Each
// allocation is 16-byte aligned and starts with a 16-byte header {typeId, length, strideBytes, pad} that the caller
// writes; this allocator only hands out and takes back byte ranges: best fit from a coalesced free list, else a bump
// cursor, with the cursor pulled back over free space at the end, and a compaction planner that packs live blocks to
// the front and returns the copies plus an OLD→NEW remap. Pure CPU logic; it never touches the buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <absl/container/btree_set.h>

#include <quokka/base/result.hpp>

namespace quokka::heap
{

namespace detail
{
/// A set of unit offsets as a bitmap with summary levels — bit w of level k + 1 is set while word w of level k is not
/// zero — so the next or previous member of any offset is found in a few word scans whatever the gap. ChunkAllocator
/// keeps its block starts here: a block's size is the distance to the next start, and its left neighbour is the
/// previous one, so freeing a block reads one or two lines of a bitmap (1/128 of the chunk's size) where hash indices
/// of starts and ends took a random probe each. Grows with the largest member; O(1) test, set and reset.
class BlockBits
{
public:
	static constexpr uint32_t kNone = 0xffffffffu;

	BlockBits() : levels_(1) {}
	bool test(uint32_t u) const
	{
		const size_t w = u >> 6;
		return w < levels_[0].size() && (levels_[0][w] >> (u & 63)) & 1u;
	}
	void set(uint32_t u);
	void reset(uint32_t u);
	/// The smallest member greater than `u`, or kNone.
	uint32_t next(uint32_t u) const;
	/// The largest member smaller than `u`, or kNone.
	uint32_t prev(uint32_t u) const;
	/// Removes every member (keeps the memory).
	void clear();
	/// Hints the CPU to fetch the word holding `u`.
	void prefetch(uint32_t u) const
	{
		if (size_t(u >> 6) < levels_[0].size())
			__builtin_prefetch(&levels_[0][u >> 6]);
	}
	/// The bottom level: bit u of word u / 64 (for walks and checks).
	const std::vector<uint64_t>& words() const { return levels_[0]; }
	/// Host bytes of its levels (memory accounting).
	size_t hostBytes() const;
	/// "" when every summary bit matches its word, else the first mismatch.
	std::string check() const;

private:
	void grow(size_t words);
	std::vector<std::vector<uint64_t>> levels_; ///< levels_[0]: the members; the top level has one word at most
};
} // namespace detail

/// The byte ranges of one arena chunk: best-fit free list + bump cursor + cursor shrink + compaction planning.
///
/// Units are 16 bytes internally, so every offset handed out and every block size is a multiple of 16. The bump region
/// [0, cursor()) is what the GPU buffer must hold; blocks freed at its end give their bytes back to the cursor, so
/// freeing everything returns cursor() to 0.
///
/// Cost: free(), blockBytes() and the bookkeeping of allocate() are O(1): the blocks below the cursor tile it, so a
/// bitmap of their starts (detail::BlockBits) plus one of which starts are live give every block's size (the next
/// start) and both neighbours (the previous start, the end) — the bits of an object's blocks share a cache line. The
/// best-fit search and the size index updates are O(log n) in a B-tree (absl::btree_set) of (size, offset) keys;
/// fits() is O(1). freeMany() of n blocks sorts them (O(n log n), n small) and updates the free list once per run of
/// adjacent ones. planCompaction(), freeBlocks() and validate() walk the bitmap, O(cursor / 64 + n log n). Memory: two
/// bits per 16-byte unit up to the highest cursor (1/64 of the bytes used). The bitmaps replaced flat hash maps of
/// live starts and free starts and ends (a random probe per lookup, 8–16 bytes per block), which had replaced std::map
/// indices; the B-tree replaced a std::set (bench/heap/chunk_allocator_bench.cpp).
///
/// Limits: capacity ≤ 4 GiB (kMaxCapacity), because the renderer stores references as u32 byte offsets; an offset is
/// then at most 4 GiB − 16 and fits. Byte totals (cursor, capacity, live/free bytes) are u64 so 4 GiB itself is exact.
///
/// Threading: owned by one thread (the one that updates its HeapScene). Move-only: the destructor reports leaks.
class ChunkAllocator
{
public:
	/// Every offset and block size is a multiple of this (vec4 alignment of the storage-buffer views).
	static constexpr uint32_t kAlign = 16;
	/// log2(kAlign): the internal maps count 16-byte units.
	static constexpr uint32_t kUnitShift = 4;
	/// Largest capacity: 2^32 bytes = 2^28 units, so every byte offset (≤ 2^32 − 16) fits the u32 references.
	static constexpr uint64_t kMaxCapacity = uint64_t(1) << 32;

	/// One copy of a compaction plan: `bytes` bytes from `from` to `to`, always `to < from` (blocks move towards 0).
	/// A Move may overlap its own destination (a run moved by less than its length), so a GPU copy must bounce through
	/// scratch or be split into pieces of at most `from − to` bytes copied in increasing order; Moves of one plan must
	/// be applied in the order returned (a later Move's destination may overlap an earlier Move's source).
	struct Move
	{
		uint32_t from = 0;  ///< old byte offset of the run's first block
		uint32_t to = 0;    ///< new byte offset of the run's first block
		uint32_t bytes = 0; ///< run length in bytes (a multiple of 16)
	};

	/// A byte range, for freeBlocks() dumps and tests.
	struct Block
	{
		uint32_t offset = 0;
		uint64_t bytes = 0;
	};

	/// `max_bytes`: capacity in bytes, a multiple of 16 in [0, kMaxCapacity] (anything else asserts; without asserts it
	/// is rounded down to 16 and clamped). The buffer itself is sized by the caller from cursor(), not from this.
	explicit ChunkAllocator(uint64_t max_bytes);
	/// Prints leakReport() to stderr when blocks are still live; an owner dropping a whole chunk calls reset() first.
	~ChunkAllocator();
	/// Moves leave `other` empty (capacity 0, nothing live), so only one of the two can report leaks.
	ChunkAllocator(ChunkAllocator&& other) noexcept;
	ChunkAllocator& operator=(ChunkAllocator&& other) noexcept;
	ChunkAllocator(const ChunkAllocator&) = delete;
	ChunkAllocator& operator=(const ChunkAllocator&) = delete;

	/// Allocates a block of ALIGN16(bytes) bytes (a request of 0 takes 16, so every live block has its own offset) and
	/// returns its byte offset. Best fit: the smallest free block that holds it, the lowest offset among equal sizes
	/// (so placement is deterministic), with the rest split back into the free list; else the bump cursor; nullopt when
	/// neither has room — the caller then tries another chunk. A free block is preferred to the cursor even when it
	/// is larger than the request, because bytes below the cursor are already paid for in the GPU buffer.
	/// `bytes`: any value; more than capacity() simply fails.
	std::optional<uint32_t> allocate(uint64_t bytes);
	/// True when allocate(bytes) would succeed now, without allocating. Since allocating never merges or shrinks,
	/// fits(Σ ALIGN16(part)) also guarantees that every part then allocates, in any order. (The heap renderer's group
	/// fit does not ask it: which of a draw's inputs need room depends on what the chunk already shares, so it tries,
	/// largest allocations first, and rolls back.)
	bool fits(uint64_t bytes) const;
	/// Frees the live block starting at byte offset `offset`, merging it with free neighbours and giving it back to
	/// the cursor when it ends there. A double free or an offset that is not a live block's start is a programmer
	/// error: QUOKKA_ASSERT; with asserts compiled out the call is counted in badFreeCount() and changes nothing.
	void free(uint32_t offset);
	/// free() that reports a bad offset as an InvalidArgument error instead of asserting (and counts it in
	/// badFreeCount()); the allocator is unchanged on error. For tests and for callers that validate foreign input.
	Result<void> freeChecked(uint32_t offset);
	/// Frees several live blocks at once, as free() of each would in any order — the coalesced free list is a
	/// function of the live blocks alone, so the result is the same — but blocks that sit side by side are first
	/// merged among themselves: a run of n adjacent blocks (an object's inputs, allocated together) updates the free
	/// indices once instead of n times. `offsets` is sorted in place. All or nothing: an offset that is not a live
	/// block's start, or one given twice, frees nothing, is counted in badFreeCount() and asserts (freeManyChecked()
	/// returns it as an InvalidArgument error instead).
	void freeMany(std::span<uint32_t> offsets);
	Result<void> freeManyChecked(std::span<uint32_t> offsets);
	/// Size in bytes of the live block starting at `offset`; 0 when no live block starts there.
	uint64_t blockBytes(uint32_t offset) const;
	/// Prefetches what free(offset) of a `bytes`-byte block looks up first (its live entry, the neighbours' free
	/// entries), for callers freeing many scattered blocks in a row. Changes nothing.
	void prefetchFree(uint32_t offset, uint64_t bytes) const
	{
		const uint32_t start = offset >> kUnitShift;
		starts_.prefetch(start);
		starts_.prefetch(start + uint32_t((bytes + kAlign - 1) >> kUnitShift));
		if (size_t(start >> 6) < live_.size())
			__builtin_prefetch(&live_[start >> 6]);
	}
	/// Forgets every block: cursor 0, nothing live, no leak report. For an owner that drops or recycles the chunk.
	void reset();

	uint64_t capacity() const { return uint64_t(capacity_) * kAlign; }
	/// High-water mark of the bump region: the bytes the GPU buffer must hold.
	uint64_t cursor() const { return uint64_t(cursor_) * kAlign; }
	uint64_t liveBytes() const { return uint64_t(live_units_) * kAlign; }
	/// Bytes in the free list, below the cursor: cursor() − liveBytes(). The bytes above the cursor are not counted.
	uint64_t freeBytes() const { return uint64_t(cursor_ - live_units_) * kAlign; }
	uint32_t liveCount() const { return live_count_; }
	uint32_t freeBlockCount() const { return uint32_t(free_by_size_.size()); }
	/// Number of rejected frees (freeChecked() errors, and free() calls that asserted or were ignored).
	uint64_t badFreeCount() const { return bad_frees_; }
	/// Every free block in offset order (O(n log n), a sort), for dumps and tests.
	std::vector<Block> freeBlocks() const;
	/// "" when nothing is live, else one line naming the live count and bytes.
	std::string leakReport() const;

	/// Compaction policy, the reference's (wombat AttributeArena.compact): compact when at least `waste_floor` bytes
	/// are free below the cursor *and* more than half of the cursor is waste (liveBytes() × 2 < cursor()). The floor
	/// keeps small chunks from compacting over a few holes (the reference's default is 4 MiB); the ratio bounds the
	/// copy cost: the bytes moved are at most liveBytes() < freeBytes(), so each byte copied reclaims a byte.
	bool shouldCompact(uint64_t waste_floor) const;
	/// Packs all live blocks to the front in address order and returns the copies that do it, in increasing `to`
	/// (and `from`) order: blocks already in place produce no Move and contiguous runs of moved blocks form one Move
	/// each (maximal runs). The allocator is updated at once: live blocks are keyed by their new offsets, the free
	/// list is empty and cursor() == liveBytes(). The caller then copies the runs (see Move for the overlap rule) and
	/// rewrites every reference with remap(). Cost: O(live · log live), a sort of the live blocks.
	std::vector<Move> planCompaction();
	/// New byte offset of `old_offset` under `moves` (a planCompaction() result): an offset inside a moved run moves by
	/// that run's delta (so refs to a block's start or to its data at +16 both work); any other offset maps to itself.
	/// O(log moves), by binary search on `from`.
	static uint32_t remap(std::span<const Move> moves, uint32_t old_offset);

	/// Checks every invariant: free blocks non-empty, fully coalesced and not touching the cursor; live and free
	/// blocks, sorted by offset, tile [0, cursor) exactly (no overlap, no gap, so live + free == cursor); the start,
	/// end and size indices of the free list agree; counters match; cursor ≤ capacity ≤ kMaxCapacity. Alignment holds
	/// by construction (unit arithmetic). O(n log n). Tests and debug builds of the renderer call it; the error names
	/// the first violation.
	Result<void> validate() const;
	/// Host bytes of its state: the block-start and live bitmaps and the free-block index (the B-tree estimated at 1.5
	/// × its keys: its nodes are about two-thirds full). Memory accounting.
	size_t hostBytes() const;

private:
	// 16-byte units: 2^28 of them cover kMaxCapacity, so u32 holds every offset, size and total below.
	uint32_t capacity_ = 0;
	uint32_t cursor_ = 0;
	uint32_t live_units_ = 0;
	uint64_t bad_frees_ = 0;
	uint32_t live_count_ = 0;
	/// The start of every block, live or free, below the cursor (none at or above it): a block ends where the next
	/// one starts, or at the cursor.
	detail::BlockBits starts_;
	std::vector<uint64_t> live_; ///< bit u: the block starting at unit u is live
	/// (size << 32 | offset) of each free block (best-fit search). A B-tree: a heap of 10^6 objects frees and
	/// re-files blocks at every removal, where a red-black tree's node allocation and ~log2(n) scattered nodes per
	/// operation were most of a removal's cost (perf).
	absl::btree_set<uint64_t> free_by_size_;

	bool isLive(uint32_t unit) const
	{
		const size_t w = unit >> 6;
		return w < live_.size() && (live_[w] >> (unit & 63)) & 1u;
	}
	void setLive(uint32_t unit, bool live);
	/// End (unit) of the block starting at `unit`.
	uint32_t blockEnd(uint32_t unit) const
	{
		const uint32_t next = starts_.next(unit);
		return next == detail::BlockBits::kNone ? cursor_ : next;
	}
	/// The unit of a live block's start at byte offset `offset`, or kNone.
	uint32_t liveStart(uint32_t offset) const;
	/// Returns the unit range [start, start + size) — a block's start bit set, no start inside, no longer live — to
	/// the free list: merged with its free neighbours, or given back to the cursor when the merged block ends there.
	void releaseRange(uint32_t start, uint32_t size);
};

} // namespace quokka::heap
