// quokka/heap/chunk_allocator.hpp — the CPU side of one arena chunk: which byte ranges of its storage buffer are live.
//
// The heap renderer keeps every object's data in chunks (one GPU storage buffer each, capped at `max_bytes`). Each
// allocation is 16-byte aligned and starts with a 16-byte header {typeId, length, strideBytes, pad} that the caller
// writes; this allocator only hands out and takes back byte ranges: best fit from a coalesced free list, else a bump
// cursor, with the cursor pulled back over free space at the end, and a compaction planner that packs live blocks to
// the front and returns the copies plus an OLD→NEW remap. Pure CPU logic; it never touches the buffer (STYLE R7).
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
/// A flat u32 → u32 hash map for ChunkAllocator's offset indices: open addressing with linear probing and
/// backward-shift deletion (no tombstones, so probe runs stay short however many erases happen), load ≤ 1/2,
/// Fibonacci hashing. A lookup touches one or two cache lines where a std::map lookup chases ~14 scattered nodes.
class OffsetMap
{
public:
	/// Never a key: ChunkAllocator keys are unit offsets and ends, ≤ 2^28.
	static constexpr uint32_t kEmpty = 0xffffffffu;
	struct Slot
	{
		uint32_t key = kEmpty;
		uint32_t value = 0;
	};

	/// The slot holding `key`, or nullptr. Valid until the next insert(), insertDeferred() or erase().
	Slot* find(uint32_t key);
	const Slot* find(uint32_t key) const;
	/// Adds `key` (which must be absent and not kEmpty).
	void insert(uint32_t key, uint32_t value);
	/// insert(), deferred: the entry is found at once (in a short side list, skipped by a 64-bit filter for other
	/// keys) but written into the table only kLag deferred insertions later, by when the prefetch issued here has
	/// brought its line in — a block allocated in a large chunk then costs no stall on a random slot.
	void insertDeferred(uint32_t key, uint32_t value);
	/// Removes the entry in `slot` (a find() result).
	void erase(Slot* slot);
	/// Entries, the deferred ones included.
	uint32_t size() const { return size_; }
	/// Removes every entry and keeps the table.
	void clear();
	/// Hints the CPU to fetch the slot where a lookup of `key` starts and the line after it (the keys of one span
	/// share a home slot, so their run often crosses a line). For a batch of lookups that prefetches ahead.
	void prefetch(uint32_t key) const
	{
		if (slots_.empty())
			return;
		const Slot* const s = &slots_[home(key)];
		__builtin_prefetch(s);
		__builtin_prefetch(reinterpret_cast<const char*>(s) + 64); // (never faults, even past the end)
	}
	/// The table's slots, in table (not key) order; deferred entries are not among them (forEach() visits all).
	const std::vector<Slot>& slots() const { return slots_; }
	/// Calls fn(key, value) for every entry, deferred ones included.
	template <typename Fn>
	void forEach(Fn&& fn) const
	{
		for (const Slot& s : slots_)
			if (s.key != kEmpty)
				fn(s.key, s.value);
		for (uint32_t k = 0; k < pending_count_; ++k)
			fn(pending_[k].key, pending_[k].value);
	}
	/// Deferred insertions in flight (the heap allocates ~5 blocks per object).
	static constexpr uint32_t kLag = 16;

private:
	/// Keys of one 2^kGroupShift-unit (1 KiB) span share a home slot, so blocks that sit side by side in the chunk —
	/// an object's allocations are made together at the cursor — share a probe run and its cache line: placing or
	/// removing an object touches one or two lines of each table instead of one per block. A span holds at most 32
	/// blocks of the heap's ≥ 2 units (the object scenes put ~3 in one); linear probes along such a run are
	/// sequential reads, which stay cheaper than a random miss per block (bench/heap: `Objects` and `TinyObjects`).
	static constexpr uint32_t kGroupShift = 6;
	uint32_t home(uint32_t key) const { return uint32_t((key >> kGroupShift) * 0x9e3779b9u) >> shift_; }
	static uint64_t filterBit(uint32_t key) { return uint64_t(1) << (key & 63); }
	void grow();
	/// Writes an entry into the table (size_ already counts it), growing first at load 1/2 of the filed entries.
	void file(uint32_t key, uint32_t value);
	void refilter();

	std::vector<Slot> slots_; ///< a power of two, or empty
	uint32_t size_ = 0;       ///< filed and deferred entries
	uint32_t shift_ = 32;     ///< 32 − log2(slots_.size())
	/// The deferred entries, oldest first (at most kLag; filed from the front), and filterBit() of each key.
	Slot pending_[kLag];
	uint32_t pending_count_ = 0;
	uint64_t filter_ = 0;
};
} // namespace detail

/// The byte ranges of one arena chunk: best-fit free list + bump cursor + cursor shrink + compaction planning.
///
/// Units are 16 bytes internally, so every offset handed out and every block size is a multiple of 16. The bump region
/// [0, cursor()) is what the GPU buffer must hold; blocks freed at its end give their bytes back to the cursor, so
/// freeing everything returns cursor() to 0.
///
/// Cost: free(), blockBytes() and the bookkeeping of allocate() are O(1) expected, in flat hash maps (live blocks by
/// start; free blocks by start and by end, which is all that merging with neighbours needs); the best-fit search and
/// the size index updates are O(log n) in a B-tree (absl::btree_set) of (size, offset) keys; fits() is O(1).
/// freeMany() of n blocks sorts them (O(n log n), n small) and updates the free indices once per run of adjacent ones.
/// planCompaction(), freeBlocks() and validate() sort, O(n log n). The flat maps made a free+allocate pair 2–4× faster
/// than std::map indices (bench/heap/chunk_allocator_bench.cpp); the B-tree replaced a std::set (a node allocation and
/// ~log2(n) scattered nodes per update).
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
		live_.prefetch(start);
		free_end_.prefetch(start);
		free_start_.prefetch(start + uint32_t((bytes + kAlign - 1) >> kUnitShift));
	}
	/// Forgets every block: cursor 0, nothing live, no leak report. For an owner that drops or recycles the chunk.
	void reset();

	uint64_t capacity() const { return uint64_t(capacity_) * kAlign; }
	/// High-water mark of the bump region: the bytes the GPU buffer must hold.
	uint64_t cursor() const { return uint64_t(cursor_) * kAlign; }
	uint64_t liveBytes() const { return uint64_t(live_units_) * kAlign; }
	/// Bytes in the free list, below the cursor: cursor() − liveBytes(). The bytes above the cursor are not counted.
	uint64_t freeBytes() const { return uint64_t(cursor_ - live_units_) * kAlign; }
	uint32_t liveCount() const { return live_.size(); }
	uint32_t freeBlockCount() const { return free_start_.size(); }
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

private:
	// 16-byte units: 2^28 of them cover kMaxCapacity, so u32 holds every offset, size and total below.
	uint32_t capacity_ = 0;
	uint32_t cursor_ = 0;
	uint32_t live_units_ = 0;
	uint64_t bad_frees_ = 0;
	detail::OffsetMap live_;       ///< unit offset → unit size of each live block
	detail::OffsetMap free_start_; ///< unit offset → unit size of each free block (right-neighbour merges)
	detail::OffsetMap free_end_;   ///< unit end → unit offset of each free block (left-neighbour merges)
	/// (size << 32 | offset) of each free block (best-fit search). A B-tree: a heap of 10^6 objects frees and
	/// re-files blocks at every removal, where a red-black tree's node allocation and ~log2(n) scattered nodes per
	/// operation were most of a removal's cost (perf).
	absl::btree_set<uint64_t> free_by_size_;

	void insertFree(uint32_t offset, uint32_t size);
	/// Returns the unit range [start, start + size), no longer live, to the free list: merged with its free
	/// neighbours, or given back to the cursor when the merged block ends there.
	void releaseRange(uint32_t start, uint32_t size);
	void eraseFree(detail::OffsetMap::Slot* start);
};

} // namespace quokka::heap
