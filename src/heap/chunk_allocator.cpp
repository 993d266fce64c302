// ChunkAllocator: best-fit free list + bump cursor + cursor shrink + compaction planning, in 16-byte units.
// Prior art: wombat's AttributeArena and Freelist (notes/wombat-rendering.md §1.7.2): free blocks indexed by start and
// by end (O(1) merging) plus a size index for the best fit. There the size index is a sorted array of sizes with a set
// of offsets per size; here one ordered set of (size, offset) keys gives the best fit with the lowest offset among
// equal sizes in a single lower_bound, and the start/end/live indices are flat hash maps (detail::OffsetMap).
//
// Because the free list is always fully coalesced and never touches the cursor, the reference's cascading cursor
// shrink is a single step here: after merging with its free neighbours, a freed block that ends at the cursor has a
// live block (or offset 0) before it, so the cursor stops there.
#include <quokka/heap/chunk_allocator.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <iterator>
#include <utility>

#include <absl/container/inlined_vector.h>

namespace quokka::heap
{

namespace
{
constexpr uint32_t kUnitShift = ChunkAllocator::kUnitShift; // 16-byte units
static_assert((1u << kUnitShift) == ChunkAllocator::kAlign);

constexpr uint64_t sizeKey(uint32_t size, uint32_t offset)
{
	return uint64_t(size) << 32 | offset;
}

std::string bytesText(uint64_t units)
{
	return std::to_string(units << kUnitShift);
}

// (offset, size) pairs of a map's entries, sorted by offset: the address-order view that planning and checks need.
std::vector<std::pair<uint32_t, uint32_t>> sortedEntries(const detail::OffsetMap& map)
{
	std::vector<std::pair<uint32_t, uint32_t>> out;
	out.reserve(map.size());
	map.forEach([&](uint32_t key, uint32_t value) { out.emplace_back(key, value); });
	std::sort(out.begin(), out.end());
	return out;
}
} // namespace

// ---- detail::OffsetMap -------------------------------------------------------------------------------------------

namespace detail
{

OffsetMap::Slot* OffsetMap::find(uint32_t key)
{
	return const_cast<Slot*>(std::as_const(*this).find(key));
}

const OffsetMap::Slot* OffsetMap::find(uint32_t key) const
{
	if (filter_ & filterBit(key))
		for (uint32_t k = 0; k < pending_count_; ++k)
			if (pending_[k].key == key)
				return &pending_[k];
	if (size_ == pending_count_) // (nothing filed, maybe no slots)
		return nullptr;
	const uint32_t mask = uint32_t(slots_.size() - 1);
	for (uint32_t i = home(key);; i = (i + 1) & mask)
	{
		const Slot& slot = slots_[i];
		if (slot.key == key)
			return &slot;
		if (slot.key == kEmpty)
			return nullptr;
	}
}

void OffsetMap::insert(uint32_t key, uint32_t value)
{
	++size_;
	file(key, value);
}

void OffsetMap::file(uint32_t key, uint32_t value)
{
	// Load ≤ 1/2: linear probing's expected probe count stays below 2.5 for misses, 1.5 for hits.
	if ((size_ - pending_count_) * 2 > slots_.size())
		grow();
	const uint32_t mask = uint32_t(slots_.size() - 1);
	uint32_t i = home(key);
	while (slots_[i].key != kEmpty)
		i = (i + 1) & mask;
	slots_[i] = {key, value};
}

void OffsetMap::insertDeferred(uint32_t key, uint32_t value)
{
	prefetch(key);
	if (pending_count_ == kLag)
	{
		// The oldest goes into the table; its line was fetched kLag insertions ago.
		const Slot oldest = pending_[0];
		std::copy(pending_ + 1, pending_ + kLag, pending_);
		--pending_count_;
		file(oldest.key, oldest.value); // (size_ counts it: filed now, no longer deferred)
		refilter();
	}
	pending_[pending_count_++] = {key, value};
	filter_ |= filterBit(key);
	++size_;
}

void OffsetMap::refilter()
{
	filter_ = 0;
	for (uint32_t k = 0; k < pending_count_; ++k)
		filter_ |= filterBit(pending_[k].key);
}

void OffsetMap::erase(Slot* slot)
{
	if (const uintptr_t at = reinterpret_cast<uintptr_t>(slot);
	    at >= reinterpret_cast<uintptr_t>(pending_) && at < reinterpret_cast<uintptr_t>(pending_ + pending_count_))
	{
		std::copy(slot + 1, pending_ + pending_count_, slot);
		--pending_count_;
		--size_;
		refilter();
		return;
	}
	// Backward-shift deletion: pull later members of the probe run into the hole whenever the hole lies between
	// their home slot and where they sit, so no tombstone is left and every lookup still finds its key.
	const uint32_t mask = uint32_t(slots_.size() - 1);
	uint32_t hole = uint32_t(slot - slots_.data());
	for (uint32_t j = (hole + 1) & mask; slots_[j].key != kEmpty; j = (j + 1) & mask)
	{
		const uint32_t home_j = home(slots_[j].key);
		if (((j - home_j) & mask) >= ((j - hole) & mask))
		{
			slots_[hole] = slots_[j];
			hole = j;
		}
	}
	slots_[hole] = Slot{};
	--size_;
}

void OffsetMap::clear()
{
	std::fill(slots_.begin(), slots_.end(), Slot{});
	size_ = 0;
	pending_count_ = 0;
	filter_ = 0;
}

void OffsetMap::grow()
{
	std::vector<Slot> old = std::move(slots_);
	const size_t capacity = std::max<size_t>(16, old.size() * 2);
	slots_.assign(capacity, Slot{});
	shift_ = 32 - uint32_t(std::countr_zero(capacity));
	const uint32_t mask = uint32_t(capacity - 1);
	for (const Slot& slot : old)
		if (slot.key != kEmpty)
		{
			uint32_t i = home(slot.key);
			while (slots_[i].key != kEmpty)
				i = (i + 1) & mask;
			slots_[i] = slot;
		}
}

} // namespace detail

// ---- ChunkAllocator ----------------------------------------------------------------------------------------------

ChunkAllocator::ChunkAllocator(uint64_t max_bytes)
{
	QUOKKA_ASSERT(max_bytes % kAlign == 0, "ChunkAllocator: max_bytes must be a multiple of 16");
	QUOKKA_ASSERT(max_bytes <= kMaxCapacity, "ChunkAllocator: max_bytes must be at most 4 GiB (u32 byte refs)");
	capacity_ = uint32_t(std::min(max_bytes, kMaxCapacity) >> kUnitShift);
}

ChunkAllocator::~ChunkAllocator()
{
	if (live_.size() != 0)
		std::fprintf(stderr, "quokka: %s\n", leakReport().c_str());
}

ChunkAllocator::ChunkAllocator(ChunkAllocator&& other) noexcept
    : capacity_(std::exchange(other.capacity_, 0)), cursor_(std::exchange(other.cursor_, 0)),
      live_units_(std::exchange(other.live_units_, 0)), bad_frees_(std::exchange(other.bad_frees_, 0)),
      live_(std::move(other.live_)), free_start_(std::move(other.free_start_)), free_end_(std::move(other.free_end_)),
      free_by_size_(std::move(other.free_by_size_))
{
	// Moved-from containers are valid but unspecified (and OffsetMap's counter is copied): clear so `other` reports
	// nothing and validates.
	other.live_.clear();
	other.free_start_.clear();
	other.free_end_.clear();
	other.free_by_size_.clear();
}

ChunkAllocator& ChunkAllocator::operator=(ChunkAllocator&& other) noexcept
{
	if (this != &other)
	{
		if (live_.size() != 0)
			std::fprintf(stderr, "quokka: %s\n", leakReport().c_str());
		capacity_ = std::exchange(other.capacity_, 0);
		cursor_ = std::exchange(other.cursor_, 0);
		live_units_ = std::exchange(other.live_units_, 0);
		bad_frees_ = std::exchange(other.bad_frees_, 0);
		live_ = std::move(other.live_);
		free_start_ = std::move(other.free_start_);
		free_end_ = std::move(other.free_end_);
		free_by_size_ = std::move(other.free_by_size_);
		other.live_.clear();
		other.free_start_.clear();
		other.free_end_.clear();
		other.free_by_size_.clear();
	}
	return *this;
}

void ChunkAllocator::insertFree(uint32_t offset, uint32_t size)
{
	free_start_.insert(offset, size);
	free_end_.insert(offset + size, offset);
	free_by_size_.insert(sizeKey(size, offset));
}

void ChunkAllocator::eraseFree(detail::OffsetMap::Slot* start)
{
	const uint32_t offset = start->key;
	const uint32_t size = start->value;
	free_by_size_.erase(sizeKey(size, offset));
	free_end_.erase(free_end_.find(offset + size));
	free_start_.erase(start);
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
		free_start_.erase(free_start_.find(offset));
		if (size > units)
		{
			// The remainder sits between the new live block and whatever followed the free block — a live block,
			// since free blocks are coalesced and never touch the cursor — so it needs no merging. Its end is the
			// free block's end: only that entry's value changes.
			free_start_.insert(offset + units, size - units);
			free_end_.find(offset + size)->value = offset + units;
			free_by_size_.insert(sizeKey(size - units, offset + units));
		}
		else
			free_end_.erase(free_end_.find(offset + size));
	}
	else if (capacity_ - cursor_ >= units)
	{
		offset = cursor_;
		cursor_ += units;
	}
	else
		return std::nullopt;

	live_.insertDeferred(offset, units);
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
	detail::OffsetMap::Slot* live = offset % kAlign == 0 ? live_.find(offset >> kUnitShift) : nullptr;
	if (!live)
	{
		++bad_frees_;
		return makeError(ErrorCode::InvalidArgument, "ChunkAllocator: free of byte offset " + std::to_string(offset) +
		                                                 ", which is not the start of a live block (double free?)");
	}
	const uint32_t start = live->key;
	const uint32_t size = live->value;
	live_.erase(live);
	live_units_ -= size;
	releaseRange(start, size);
	return {};
}

void ChunkAllocator::freeMany(std::span<uint32_t> offsets)
{
	const Result<void> freed = freeManyChecked(offsets);
	QUOKKA_ASSERT(freed.ok(), "ChunkAllocator::freeMany: double free, or not the start of a live block");
	(void)freed;
}

Result<void> ChunkAllocator::freeManyChecked(std::span<uint32_t> offsets)
{
	std::sort(offsets.begin(), offsets.end());
	// Each block leaves the live index as it is checked (one probe); a bad offset puts the ones already taken back.
	absl::InlinedVector<uint32_t, 16> sizes(offsets.size());
	for (size_t i = 0; i < offsets.size(); ++i)
	{
		const uint32_t offset = offsets[i];
		detail::OffsetMap::Slot* live = offset % kAlign == 0 ? live_.find(offset >> kUnitShift) : nullptr;
		if (!live) // (also a repeated offset: its first copy has left the index)
		{
			for (size_t j = 0; j < i; ++j)
				live_.insert(offsets[j] >> kUnitShift, sizes[j]);
			++bad_frees_;
			return makeError(ErrorCode::InvalidArgument,
			                 "ChunkAllocator: free of byte offset " + std::to_string(offset) +
			                     ", which is not the start of a live block (or is given twice); nothing was freed");
		}
		sizes[i] = live->value;
		live_.erase(live);
	}
	// Runs of adjacent blocks become one range each before they reach the free indices.
	for (size_t i = 0; i < offsets.size();)
	{
		const uint32_t start = offsets[i] >> kUnitShift;
		uint32_t size = 0;
		do
			size += sizes[i++];
		while (i < offsets.size() && offsets[i] >> kUnitShift == start + size);
		live_units_ -= size;
		releaseRange(start, size);
	}
	return {};
}

void ChunkAllocator::releaseRange(uint32_t start, uint32_t size)
{
	// A free block ending at `start` is the left neighbour; one starting at the end is the right neighbour.
	if (const detail::OffsetMap::Slot* left_end = free_end_.find(start))
	{
		const uint32_t left = left_end->value;
		detail::OffsetMap::Slot* left_start = free_start_.find(left);
		size += left_start->value;
		start = left;
		eraseFree(left_start);
	}
	if (detail::OffsetMap::Slot* right = free_start_.find(start + size))
	{
		size += right->value;
		eraseFree(right);
	}
	// Cursor shrink. The merged block has a live block or offset 0 on its left (the list is coalesced), so this one
	// step is the whole cascade.
	if (start + size == cursor_)
		cursor_ = start;
	else
		insertFree(start, size);
}

uint64_t ChunkAllocator::blockBytes(uint32_t offset) const
{
	if (offset % kAlign != 0)
		return 0;
	const detail::OffsetMap::Slot* live = live_.find(offset >> kUnitShift);
	return live ? uint64_t(live->value) << kUnitShift : 0;
}

void ChunkAllocator::reset()
{
	cursor_ = 0;
	live_units_ = 0;
	live_.clear();
	free_start_.clear();
	free_end_.clear();
	free_by_size_.clear();
}

std::vector<ChunkAllocator::Block> ChunkAllocator::freeBlocks() const
{
	std::vector<Block> blocks;
	for (const auto& [offset, size] : sortedEntries(free_start_))
		blocks.push_back({offset << kUnitShift, uint64_t(size) << kUnitShift});
	return blocks;
}

std::string ChunkAllocator::leakReport() const
{
	if (live_.size() == 0)
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
	const std::vector<std::pair<uint32_t, uint32_t>> blocks = sortedEntries(live_);
	live_.clear();
	uint32_t to = 0;
	// Blocks before the first hole stay; every block after it moves, by a delta that only grows at each hole, so a
	// run of blocks without a hole between them is one Move.
	for (const auto& [from, size] : blocks)
	{
		if (from != to)
		{
			Move* last = moves.empty() ? nullptr : &moves.back();
			if (last && uint64_t(last->from) + last->bytes == uint64_t(from) << kUnitShift)
				last->bytes += size << kUnitShift;
			else
				moves.push_back({from << kUnitShift, to << kUnitShift, size << kUnitShift});
		}
		live_.insert(to, size);
		to += size;
	}
	free_start_.clear();
	free_end_.clear();
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
	if (free_by_size_.size() != free_start_.size() || free_end_.size() != free_start_.size())
		return fail("free list indices disagree: " + std::to_string(free_start_.size()) + " by start, " +
		            std::to_string(free_end_.size()) + " by end, " + std::to_string(free_by_size_.size()) + " by size");
	const std::vector<std::pair<uint32_t, uint32_t>> free_blocks = sortedEntries(free_start_);
	for (const auto& [offset, size] : free_blocks)
	{
		const detail::OffsetMap::Slot* end = free_end_.find(offset + size);
		if (!end || end->value != offset || !free_by_size_.contains(sizeKey(size, offset)))
			return fail("free block at " + bytesText(offset) + " is missing from the end or size index");
	}
	const std::vector<std::pair<uint32_t, uint32_t>> live_blocks = sortedEntries(live_);

	// Walk live and free blocks together in address order: each must start where the previous one ended.
	auto live_it = live_blocks.begin();
	auto free_it = free_blocks.begin();
	uint64_t position = 0;
	uint64_t live_sum = 0;
	bool previous_free = false;
	while (live_it != live_blocks.end() || free_it != free_blocks.end())
	{
		const bool is_free =
		    live_it == live_blocks.end() || (free_it != free_blocks.end() && free_it->first < live_it->first);
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
