// quokka/base/offset_allocator.hpp — an O(1) range allocator over an abstract integer space (units, not bytes).
//
// A TLSF-style good-fit allocator after Sebastian Aaltonen's OffsetAllocator (MIT): 256 size-class bins shaped like an
// 8-bit float (5-bit exponent, 3-bit mantissa, ≤ 12.5 % rounding), a two-level bitmask to find a non-empty bin with two
// bit scans, and immediate merging of physical neighbours on free. Pure CPU logic: it manages offsets into memory it
// never touches (the meshlet data and metadata buffers). Fixes the reference's defects: the
// node pool grows (no maxAllocs − 2 limit), a request that fits a free region never reports "no space", the storage
// report is exact, and bad frees are reported instead of being undefined behaviour.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <quokka/base/result.hpp>

namespace quokka
{

/// Offset of a failed allocation.
constexpr uint32_t kNoSpace = 0xffffffffu;

/// One live range of an OffsetAllocator: its offset plus a generational id of the node that owns it, so a
/// stale or foreign handle is recognised by free() instead of corrupting the allocator.
struct Allocation
{
	uint32_t offset = kNoSpace; ///< first unit of the range; kNoSpace when the allocation failed
	uint32_t node = kNoSpace;   ///< node index inside the allocator
	uint32_t generation = 0;    ///< allocator-wide allocation serial when the range was handed out

	bool valid() const { return offset != kNoSpace; }
};

/// Free-space summary. Both figures are exact (the reference reported the floor of a bin as the largest region).
struct StorageReport
{
	uint64_t total_free = 0;   ///< units not allocated
	uint32_t largest_free = 0; ///< size of the largest contiguous free region
	uint32_t free_regions = 0; ///< number of free regions
	uint32_t live_allocations = 0;
};

/// One free region, for dumps and tests.
struct FreeRegion
{
	uint32_t offset = 0;
	uint32_t size = 0;
};

/// Size-class ("small float") helpers, public for tests and for sizing capacities.
/// Bin index whose class size is the smallest ≥ `size` (sizes 0–16 map exactly; then 8 bins per octave).
uint32_t sizeClassRoundUp(uint32_t size);
/// Bin index whose class size is the largest ≤ `size`.
uint32_t sizeClassRoundDown(uint32_t size);
/// Class size of bin `bin` (bin ≤ 239; bins 240+ would overflow 32 bits).
uint32_t sizeClassValue(uint32_t bin);

/// An allocator of ranges inside [0, size). Move-only; owned by one thread.
///
/// allocate() and free() are O(1): a constant number of bit scans and list operations, plus an amortised node-pool
/// growth. The one exception is the exact-fit fallback: when no bin whose class size is ≥ the request has a node, the
/// request's own (round-down) bin is scanned for a node that is nevertheless large enough. That scan only runs on the
/// way to a failure and is what makes `OffsetAllocator(n).allocate(n)` succeed for every n (the reference failed for
/// every n that is not a class size, e.g. 513 or 1000).
class OffsetAllocator
{
public:
	/// `size`: units managed, 1 … 2^32 − 1. `expected_allocations`: node-pool reservation (it grows beyond).
	explicit OffsetAllocator(uint32_t size, uint32_t expected_allocations = 1024);
	/// Prints a leak report to stderr when allocations are still live (a manager frees or resets first).
	~OffsetAllocator();
	/// Moves leave `other` empty (size 0, nothing live).
	OffsetAllocator(OffsetAllocator&& other) noexcept;
	OffsetAllocator& operator=(OffsetAllocator&& other) noexcept;
	OffsetAllocator(const OffsetAllocator&) = delete;
	OffsetAllocator& operator=(const OffsetAllocator&) = delete;

	/// Allocates `size` contiguous units. Returns an invalid Allocation (offset kNoSpace) when `size` is 0, larger than
	/// the allocator, or no free region of `size` units exists. Never fails while such a region exists.
	Allocation allocate(uint32_t size);
	/// Returns the range of `allocation`, merging it with free neighbours. Returns false — and counts a bad free,
	/// leaving the allocator unchanged — for an invalid, already freed, stale or foreign allocation.
	bool free(const Allocation& allocation);
	/// Size in units of a live allocation; 0 for a handle free() would reject.
	uint32_t allocationSize(const Allocation& allocation) const;
	/// Frees everything (live handles become stale).
	void reset();

	uint32_t size() const { return size_; }
	uint32_t liveCount() const { return live_count_; }
	uint64_t totalFree() const { return total_free_; }
	/// Number of rejected free() calls since construction.
	uint64_t badFreeCount() const { return bad_frees_; }
	/// Totals plus the exact largest free region: O(1) except for a walk of the largest non-empty bin.
	StorageReport storageReport() const;
	/// Every free region in offset order (O(nodes)).
	std::vector<FreeRegion> freeRegions() const;
	/// "" when nothing is live, else one line naming the count and units still allocated.
	std::string leakReport() const;

	/// Checks every invariant (neighbour links tile [0, size) exactly, no two adjacent free nodes, each free node in
	/// the bin of its rounded-down size, bitmasks match the bin lists, counters match). O(nodes). Tests and debug
	/// builds call it; the error names the first violation.
	Result<void> validate() const;

private:
	static constexpr uint32_t kNone = 0xffffffffu;
	static constexpr uint32_t kBinCount = 256;
	/// nodes_[0, 256) are the bins' list heads (circular doubly linked lists, so unlinking never branches on "am I
	/// the head"); nodes_[256] is the boundary: the neighbour before the first and after the last region, never free,
	/// so merging never branches on "is there a neighbour". Ranges live in nodes_[kFirstNode, …).
	static constexpr uint32_t kBoundary = kBinCount;
	/// nodes_[257] is the scratch node free() merges with when a neighbour is not free (size 0; its bin links point at
	/// itself and nodes_[258], so unlinking it rewrites only those two), which makes the merges branch-free.
	static constexpr uint32_t kScratch = kBinCount + 1;
	static constexpr uint32_t kScratchLink = kBinCount + 2;
	static constexpr uint32_t kFirstNode = kBinCount + 3;

	/// Links are *refs*: a node's byte offset in nodes_ (index × sizeof(Node)), so following one is a single
	/// base + offset address — no index scaling on the hot paths. A node's bin_prev doubles as its state: a ref while
	/// the node is free (filed in a bin list), else one of these tags (refs stay below them: growPool() caps the node
	/// count). A live node's bin_next holds its generation.
	static constexpr uint32_t kTagBoundary = 0xfffffffcu;
	static constexpr uint32_t kTagPooled = 0xfffffffdu;
	static constexpr uint32_t kTagUsed = 0xfffffffeu;

	// 24 B: the bench's working set (~15 k nodes) then stays within a 512 KiB L2, which 32-B nodes overflowed.
	struct Node
	{
		uint32_t offset = 0;
		uint32_t size = 0;
		uint32_t bin_prev = kTagPooled; ///< free: ref of the previous in the bin list; else the state tag
		uint32_t bin_next = kNone;      ///< free: ref of the next in the bin list; used: generation
		uint32_t phys_prev = kNone;     ///< ref
		uint32_t phys_next = kNone;     ///< ref
	};
	static constexpr uint32_t kNodeBytes = uint32_t(sizeof(Node));
	static constexpr uint32_t ref(uint32_t index) { return index * kNodeBytes; }
	static Node& at(Node* nodes, uint32_t ref)
	{
		return *reinterpret_cast<Node*>(reinterpret_cast<char*>(nodes) + ref);
	}
	const Node& node(uint32_t ref) const
	{
		return *reinterpret_cast<const Node*>(reinterpret_cast<const char*>(nodes_.data()) + ref);
	}

	void growPool();
	void insertFree(Node* nodes, uint32_t node_ref, uint32_t bin);
	void removeFree(Node* nodes, uint32_t node_ref);
	uint32_t findFreeBin(uint32_t min_bin) const;
	uint32_t findExactFit(uint32_t size) const;
	bool handleLive(const Allocation& allocation) const;

	uint32_t size_ = 0;
	uint32_t live_count_ = 0;
	uint64_t total_free_ = 0;
	uint64_t bad_frees_ = 0;
	uint32_t pooled_ = 0;     ///< nodes in the pool: refs in pool_[0, pooled_), the top last
	uint32_t node_count_ = 0; ///< nodes_.size(), for the handle check
	uint32_t generation_ = 0; ///< generation of the latest allocation (one counter for all nodes)
	/// Two-level bitmask of non-empty bins: bit b of used_bins_[b / 64], and bit w of used_words_ when
	/// used_bins_[w] != 0.
	uint32_t used_words_ = 0;
	uint64_t used_bins_[kBinCount / 64] = {};
	std::vector<Node> nodes_;
	/// The node pool as a stack of refs (nodes_.size() + 2 entries, so free() may write two past the top).
	std::vector<uint32_t> pool_;
};

} // namespace quokka
