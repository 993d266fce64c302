// ChunkAllocator: best-fit free list + bump cursor + cursor shrink + compaction planning, in 16-byte units.
// Prior art: wombat's AttributeArena and Freelist (notes/wombat-rendering.md §1.7.2), whose free list keeps sizes in a
// sorted array plus start/end maps; here one ordered set of (size, offset) keys gives the best fit with the lowest
// offset among equal sizes in one lower_bound, and the offset map finds both neighbours with one lower_bound.
//
// Because the free list is always fully coalesced and never touches the cursor, the reference's cascading cursor
// shrink is a single step here: after merging with its free neighbours, a freed block that ends at the cursor has a
// live block (or offset 0) before it, so the cursor stops there.
#include <quokka/heap/chunk_allocator.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

namespace quokka::heap
{

namespace
{
constexpr uint32_t kUnitShift = 4; // 16-byte units
static_assert((1u << kUnitShift) == ChunkAllocator::kAlign);

constexpr uint64_t sizeKey(uint32_t size, uint32_t offset)
{
	return uint64_t(size) << 32 | offset;
}

std::string bytesText(uint64_t units)
{
	return std::to_string(units << kUnitShift);
}
} // namespace

ChunkAllocator::ChunkAllocator(uint64_t max_bytes)
{
	QUOKKA_ASSERT(max_bytes % kAlign == 0, "ChunkAllocator: max_bytes must be a multiple of 16");
	QUOKKA_ASSERT(max_bytes <= kMaxCapacity, "ChunkAllocator: max_bytes must be at most 4 GiB (u32 byte refs)");
	capacity_ = uint32_t(std::min(max_bytes, kMaxCapacity) >> kUnitShift);
}

ChunkAllocator::~ChunkAllocator()
{
	if (!live_.empty())
		std::fprintf(stderr, "quokka: %s\n", leakReport().c_str());
}

ChunkAllocator::ChunkAllocator(ChunkAllocator&& other) noexcept
    : capacity_(std::exchange(other.capacity_, 0)), cursor_(std::exchange(other.cursor_, 0)),
      live_units_(std::exchange(other.live_units_, 0)), bad_frees_(std::exchange(other.bad_frees_, 0)),
      live_(std::move(other.live_)), free_by_offset_(std::move(other.free_by_offset_)),
      free_by_size_(std::move(other.free_by_size_))
{
	// A moved-from std::map is valid but unspecified; clear so `other` reports nothing and validates.
	other.live_.clear();
	other.free_by_offset_.clear();
	other.free_by_size_.clear();
}

ChunkAllocator& ChunkAllocator::operator=(ChunkAllocator&& other) noexcept
{
	if (this != &other)
	{
		if (!live_.empty())
			std::fprintf(stderr, "quokka: %s\n", leakReport().c_str());
		capacity_ = std::exchange(other.capacity_, 0);
		cursor_ = std::exchange(other.cursor_, 0);
		live_units_ = std::exchange(other.live_units_, 0);
		bad_frees_ = std::exchange(other.bad_frees_, 0);
		live_ = std::move(other.live_);
		free_by_offset_ = std::move(other.free_by_offset_);
		free_by_size_ = std::move(other.free_by_size_);
		other.live_.clear();
		other.free_by_offset_.clear();
		other.free_by_size_.clear();
	}
	return *this;
}

void ChunkAllocator::insertFree(uint32_t offset, uint32_t size)
{
	free_by_offset_.emplace(offset, size);
	free_by_size_.insert(sizeKey(size, offset));
}

void ChunkAllocator::eraseFree(std::map<uint32_t, uint32_t>::iterator it)
{
	free_by_size_.erase(sizeKey(it->second, it->first));
	free_by_offset_.erase(it);
}

std::optional<uint32_t> ChunkAllocator::allocate(uint64_t bytes)
{
	// Compared in bytes first so the rounding below cannot overflow for huge requests.
	if (bytes > capacity())
		return std::nullopt;
	const uint32_t units = std::max(uint32_t((bytes + kAlign - 1) >> kUnitShift), 1u);

	uint32_t offset = 0;
	auto best = free_by_size_.lower_bound(sizeKey(units, 0));
	if (best != free_by_size_.end())
	{
		const uint32_t size = uint32_t(*best >> 32);
		offset = uint32_t(*best);
		free_by_size_.erase(best);
		auto node = free_by_offset_.extract(offset);
		// The remainder sits between the new live block and whatever followed the free block — a live block, since
		// free blocks are coalesced and never touch the cursor — so it needs no merging. It reuses the map node.
		if (size > units)
		{
			node.key() = offset + units;
			node.mapped() = size - units;
			free_by_offset_.insert(std::move(node));
			free_by_size_.insert(sizeKey(size - units, offset + units));
		}
	}
	else if (capacity_ - cursor_ >= units)
	{
		offset = cursor_;
		cursor_ += units;
	}
	else
		return std::nullopt;

	live_.emplace(offset, units);
	live_units_ += units;
	return offset << kUnitShift;
}

bool ChunkAllocator::fits(uint64_t bytes) const
{
	if (bytes > capacity())
		return false;
	const uint32_t units = std::max(uint32_t((bytes + kAlign - 1) >> kUnitShift), 1u);
	const uint32_t largest_free = free_by_size_.empty() ? 0 : uint32_t(*free_by_size_.rbegin() >> 32);
	return largest_free >= units || capacity_ - cursor_ >= units;
}

void ChunkAllocator::free(uint32_t offset)
{
	const Result<void> freed = freeChecked(offset);
	QUOKKA_ASSERT(freed.ok(), "ChunkAllocator::free: double free, or not the start of a live block");
	(void)freed;
}

Result<void> ChunkAllocator::freeChecked(uint32_t offset)
{
	auto live = offset % kAlign == 0 ? live_.find(offset >> kUnitShift) : live_.end();
	if (live == live_.end())
	{
		++bad_frees_;
		return makeError(ErrorCode::InvalidArgument, "ChunkAllocator: free of byte offset " + std::to_string(offset) +
		                                                 ", which is not the start of a live block (double free?)");
	}
	uint32_t start = live->first;
	uint32_t size = live->second;
	live_.erase(live);
	live_units_ -= size;

	// One search finds both neighbours: the first free block after `start` and the one before it.
	auto next = free_by_offset_.lower_bound(start);
	if (next != free_by_offset_.begin())
	{
		auto prev = std::prev(next);
		if (prev->first + prev->second == start)
		{
			start = prev->first;
			size += prev->second;
			eraseFree(prev);
		}
	}
	if (next != free_by_offset_.end() && next->first == start + size)
	{
		size += next->second;
		eraseFree(next);
	}
	// Cursor shrink. The merged block has a live block or offset 0 on its left (the list is coalesced), so this one
	// step is the whole cascade.
	if (start + size == cursor_)
		cursor_ = start;
	else
		insertFree(start, size);
	return {};
}

uint64_t ChunkAllocator::blockBytes(uint32_t offset) const
{
	if (offset % kAlign != 0)
		return 0;
	auto it = live_.find(offset >> kUnitShift);
	return it == live_.end() ? 0 : uint64_t(it->second) << kUnitShift;
}

void ChunkAllocator::reset()
{
	cursor_ = 0;
	live_units_ = 0;
	live_.clear();
	free_by_offset_.clear();
	free_by_size_.clear();
}

std::vector<ChunkAllocator::Block> ChunkAllocator::freeBlocks() const
{
	std::vector<Block> blocks;
	blocks.reserve(free_by_offset_.size());
	for (const auto& [offset, size] : free_by_offset_)
		blocks.push_back({offset << kUnitShift, uint64_t(size) << kUnitShift});
	return blocks;
}

std::string ChunkAllocator::leakReport() const
{
	if (live_.empty())
		return "";
	return "ChunkAllocator leak: " + std::to_string(live_.size()) + " live block(s), " + bytesText(live_units_) +
	       " bytes, still allocated at destruction";
}

bool ChunkAllocator::shouldCompact(uint64_t waste_floor) const
{
	return freeBytes() >= waste_floor && liveBytes() * 2 < cursor();
}

std::vector<ChunkAllocator::Move> ChunkAllocator::planCompaction()
{
	std::vector<Move> moves;
	std::map<uint32_t, uint32_t> packed;
	uint32_t to = 0;
	// Blocks before the first hole stay; every block after it moves, by a delta that only grows at each hole, so a
	// run of blocks without a hole between them is one Move.
	for (auto it = live_.begin(); it != live_.end();)
	{
		auto node = live_.extract(it++);
		const uint32_t from = node.key();
		const uint32_t size = node.mapped();
		if (from != to)
		{
			Move* last = moves.empty() ? nullptr : &moves.back();
			if (last && uint64_t(last->from) + last->bytes == uint64_t(from) << kUnitShift)
				last->bytes += size << kUnitShift;
			else
				moves.push_back({from << kUnitShift, to << kUnitShift, size << kUnitShift});
		}
		node.key() = to;
		packed.insert(packed.end(), std::move(node)); // keys arrive in increasing order: amortised O(1)
		to += size;
	}
	live_ = std::move(packed);
	free_by_offset_.clear();
	free_by_size_.clear();
	cursor_ = to;
	return moves;
}

uint32_t ChunkAllocator::remap(std::span<const Move> moves, uint32_t old_offset)
{
	// The last run starting at or before old_offset is the only one that can contain it.
	auto after = std::upper_bound(moves.begin(), moves.end(), old_offset,
	                              [](uint32_t offset, const Move& move) { return offset < move.from; });
	if (after == moves.begin())
		return old_offset;
	const Move& run = *std::prev(after);
	if (uint64_t(old_offset) >= uint64_t(run.from) + run.bytes)
		return old_offset;
	return old_offset - run.from + run.to;
}

Result<void> ChunkAllocator::validate() const
{
	auto fail = [](std::string message) { return makeError(ErrorCode::InvalidArgument, "ChunkAllocator: " + message); };
	if (uint64_t(capacity_) << kUnitShift > kMaxCapacity)
		return fail("capacity " + bytesText(capacity_) + " exceeds 4 GiB");
	if (cursor_ > capacity_)
		return fail("cursor " + bytesText(cursor_) + " beyond capacity " + bytesText(capacity_));
	if (free_by_size_.size() != free_by_offset_.size())
		return fail("size index holds " + std::to_string(free_by_size_.size()) + " blocks, free list " +
		            std::to_string(free_by_offset_.size()));
	for (uint64_t key : free_by_size_)
	{
		auto it = free_by_offset_.find(uint32_t(key));
		if (it == free_by_offset_.end() || it->second != uint32_t(key >> 32))
			return fail("size index entry at " + bytesText(uint32_t(key)) + " does not match the free list");
	}

	// Walk live and free blocks together in address order: each must start where the previous one ended.
	auto live_it = live_.begin();
	auto free_it = free_by_offset_.begin();
	uint64_t position = 0;
	uint64_t live_sum = 0;
	bool previous_free = false;
	while (live_it != live_.end() || free_it != free_by_offset_.end())
	{
		const bool is_free =
		    live_it == live_.end() || (free_it != free_by_offset_.end() && free_it->first < live_it->first);
		const auto [offset, size] = is_free ? *free_it++ : *live_it++;
		const std::string kind = is_free ? "free" : "live";
		if (size == 0)
			return fail("empty " + kind + " block at " + bytesText(offset));
		if (offset < position)
			return fail(kind + " block at " + bytesText(offset) + " overlaps the block ending at " +
			            bytesText(position));
		if (offset > position)
			return fail("bytes [" + bytesText(position) + ", " + bytesText(offset) + ") are neither live nor free");
		if (is_free && previous_free)
			return fail("free block at " + bytesText(offset) + " is not merged with the free block before it");
		previous_free = is_free;
		position += size;
		if (!is_free)
			live_sum += size;
	}
	if (previous_free)
		return fail("the last free block ends at the cursor " + bytesText(cursor_) + " (not given back)");
	if (position != cursor_)
		return fail("blocks end at " + bytesText(position) + " but the cursor is at " + bytesText(cursor_));
	if (live_sum != live_units_)
		return fail("live blocks hold " + bytesText(live_sum) + " bytes, counter says " + bytesText(live_units_));
	return {};
}

} // namespace quokka::heap
