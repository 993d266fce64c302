// ChunkAllocator: best-fit free list + bump cursor + cursor shrink + compaction planning, in 16-byte units.
// Prior art: wombat.rendering's AttributeArena and Freelist: free blocks indexed by start and
// by end (O(1) merging) plus a size index for the best fit. There the size index is a sorted array of sizes with a set
// of offsets per size; here one ordered set of (size, offset) keys gives the best fit with the lowest offset among
// equal sizes in a single lower_bound. Starts and ends need no index of their own: the blocks tile [0, cursor), so a
// bitmap of block starts with summary levels (detail::BlockBits) answers "where does this block end" and "where does
// its left neighbour start", and a second bitmap says which starts are live.
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

} // namespace

// ---- detail::BlockBits ------------------------------------------------------------------------------------------

namespace detail
{

void BlockBits::grow(size_t words)
{
	// Powers of two: a chunk filling up grows its bitmap O(log) times.
	size_t size = std::max<size_t>(levels_[0].size(), 16);
	while (size < words)
		size *= 2;
	levels_[0].resize(size, 0);
	// Each summary level covers the one below (its bit w: word w below is not zero), up to a level of one word;
	// rebuilt whole, since growth may add levels (rare: the bitmap doubles).
	levels_.resize(1);
	for (size_t k = 0; levels_[k].size() > 1; ++k)
	{
		std::vector<uint64_t> above((levels_[k].size() + 63) / 64, 0);
		for (size_t w = 0; w < levels_[k].size(); ++w)
			if (levels_[k][w] != 0)
				above[w >> 6] |= uint64_t(1) << (w & 63);
		levels_.push_back(std::move(above));
	}
}

void BlockBits::set(uint32_t u)
{
	if (size_t(u >> 6) >= levels_[0].size())
		grow(size_t(u >> 6) + 1);
	for (std::vector<uint64_t>& level : levels_)
	{
		uint64_t& word = level[u >> 6];
		const bool was_empty = word == 0;
		word |= uint64_t(1) << (u & 63);
		if (!was_empty)
			return;
		u >>= 6;
	}
}

void BlockBits::reset(uint32_t u)
{
	if (size_t(u >> 6) >= levels_[0].size())
		return;
	for (std::vector<uint64_t>& level : levels_)
	{
		uint64_t& word = level[u >> 6];
		word &= ~(uint64_t(1) << (u & 63));
		if (word != 0)
			return;
		u >>= 6;
	}
}

uint32_t BlockBits::next(uint32_t u) const
{
	// Climb until a word has a member after the position, then descend through the lowest members.
	uint64_t x = uint64_t(u) + 1; // the first candidate at level k
	size_t k = 0;
	for (;; ++k)
	{
		if (k == levels_.size())
			return kNone;
		const std::vector<uint64_t>& level = levels_[k];
		const size_t w = size_t(x >> 6);
		if (w >= level.size())
			return kNone;
		const uint64_t bits = level[w] & (~uint64_t(0) << (x & 63));
		if (bits != 0)
		{
			x = (uint64_t(w) << 6) | uint64_t(std::countr_zero(bits));
			break;
		}
		x = uint64_t(w) + 1; // the words after w, at the level above
	}
	for (; k > 0; --k)
		x = (x << 6) | uint64_t(std::countr_zero(levels_[k - 1][size_t(x)]));
	return uint32_t(x);
}

uint32_t BlockBits::prev(uint32_t u) const
{
	if (u == 0)
		return kNone;
	uint64_t x = uint64_t(u) - 1; // the last candidate at level k
	size_t k = 0;
	for (;; ++k)
	{
		if (k == levels_.size())
			return kNone;
		const std::vector<uint64_t>& level = levels_[k];
		if (level.empty())
			return kNone;
		size_t w = size_t(x >> 6);
		uint64_t bits;
		if (w >= level.size())
		{
			w = level.size() - 1;
			bits = level[w];
		}
		else
			bits = level[w] & (~uint64_t(0) >> (63 - (x & 63)));
		if (bits != 0)
		{
			x = (uint64_t(w) << 6) | uint64_t(63 - std::countl_zero(bits));
			break;
		}
		if (w == 0)
			return kNone;
		x = uint64_t(w) - 1; // the words before w, at the level above
	}
	for (; k > 0; --k)
		x = (x << 6) | uint64_t(63 - std::countl_zero(levels_[k - 1][size_t(x)]));
	return uint32_t(x);
}

void BlockBits::clear()
{
	for (std::vector<uint64_t>& level : levels_)
		std::fill(level.begin(), level.end(), 0);
}

size_t BlockBits::hostBytes() const
{
	size_t bytes = levels_.capacity() * sizeof(levels_[0]);
	for (const std::vector<uint64_t>& level : levels_)
		bytes += level.capacity() * sizeof(uint64_t);
	return bytes;
}

std::string BlockBits::check() const
{
	for (size_t k = 0; k + 1 < levels_.size(); ++k)
	{
		if (levels_[k + 1].size() != (levels_[k].size() + 63) / 64)
			return "summary level " + std::to_string(k + 1) + " has the wrong size";
		for (size_t w = 0; w < levels_[k].size(); ++w)
			if (((levels_[k + 1][w >> 6] >> (w & 63)) & 1u) != (levels_[k][w] != 0))
				return "summary bit of word " + std::to_string(w) + " at level " + std::to_string(k) + " is wrong";
	}
	if (levels_.back().size() > 1)
		return "the top level has more than one word";
	return {};
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
	if (live_count_ != 0)
		std::fprintf(stderr, "quokka: %s\n", leakReport().c_str());
}

ChunkAllocator::ChunkAllocator(ChunkAllocator&& other) noexcept
{
	*this = std::move(other);
}

ChunkAllocator& ChunkAllocator::operator=(ChunkAllocator&& other) noexcept
{
	if (this != &other)
	{
		if (live_count_ != 0)
			std::fprintf(stderr, "quokka: %s\n", leakReport().c_str());
		capacity_ = std::exchange(other.capacity_, 0);
		cursor_ = std::exchange(other.cursor_, 0);
		live_units_ = std::exchange(other.live_units_, 0);
		bad_frees_ = std::exchange(other.bad_frees_, 0);
		live_count_ = std::exchange(other.live_count_, 0);
		starts_ = std::exchange(other.starts_, detail::BlockBits{});
		live_ = std::exchange(other.live_, {});
		free_by_size_ = std::exchange(other.free_by_size_, {});
	}
	return *this;
}

void ChunkAllocator::setLive(uint32_t unit, bool live)
{
	const size_t w = unit >> 6;
	if (w >= live_.size())
		live_.resize(std::max(starts_.words().size(), w + 1), 0);
	const uint64_t bit = uint64_t(1) << (unit & 63);
	live_[w] = live ? live_[w] | bit : live_[w] & ~bit;
}

uint32_t ChunkAllocator::liveStart(uint32_t offset) const
{
	const uint32_t unit = offset >> kUnitShift;
	return offset % kAlign == 0 && unit < cursor_ && isLive(unit) ? unit : detail::BlockBits::kNone;
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
		if (size > units)
		{
			// The remainder sits between the new live block and whatever followed the free block — a live block,
			// since free blocks are coalesced and never touch the cursor — so it needs no merging.
			starts_.set(offset + units);
			free_by_size_.insert(sizeKey(size - units, offset + units));
		}
	}
	else if (capacity_ - cursor_ >= units)
	{
		offset = cursor_;
		cursor_ += units;
		starts_.set(offset);
	}
	else
		return std::nullopt;

	setLive(offset, true);
	++live_count_;
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
	const uint32_t start = liveStart(offset);
	if (start == detail::BlockBits::kNone)
	{
		++bad_frees_;
		return makeError(ErrorCode::InvalidArgument, "ChunkAllocator: free of byte offset " + std::to_string(offset) +
		                                                 ", which is not the start of a live block (double free?)");
	}
	const uint32_t size = blockEnd(start) - start;
	setLive(start, false);
	--live_count_;
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
	// All checked before anything changes; sorted, a repeated offset sits next to its first copy.
	absl::InlinedVector<uint32_t, 16> sizes(offsets.size());
	for (size_t i = 0; i < offsets.size(); ++i)
	{
		const uint32_t start = liveStart(offsets[i]);
		if (start == detail::BlockBits::kNone || (i > 0 && offsets[i] == offsets[i - 1]))
		{
			++bad_frees_;
			return makeError(ErrorCode::InvalidArgument,
			                 "ChunkAllocator: free of byte offset " + std::to_string(offsets[i]) +
			                     ", which is not the start of a live block (or is given twice); nothing was freed");
		}
		sizes[i] = blockEnd(start) - start;
	}
	// Runs of adjacent blocks become one range each before they reach the free list.
	for (size_t i = 0; i < offsets.size();)
	{
		const uint32_t start = offsets[i] >> kUnitShift;
		uint32_t size = 0;
		do
		{
			const uint32_t unit = offsets[i] >> kUnitShift;
			setLive(unit, false);
			if (unit != start)
				starts_.reset(unit);
			--live_count_;
			size += sizes[i++];
		} while (i < offsets.size() && offsets[i] >> kUnitShift == start + size);
		live_units_ -= size;
		releaseRange(start, size);
	}
	return {};
}

void ChunkAllocator::releaseRange(uint32_t start, uint32_t size)
{
	// The previous start is the left neighbour (the blocks tile the chunk); the block starting at the end is the
	// right one, unless the range ends at the cursor.
	if (start > 0)
		if (const uint32_t left = starts_.prev(start); !isLive(left))
		{
			free_by_size_.erase(sizeKey(start - left, left));
			starts_.reset(start);
			size += start - left;
			start = left;
		}
	if (const uint32_t end = start + size; end < cursor_ && !isLive(end))
	{
		const uint32_t right = blockEnd(end) - end;
		free_by_size_.erase(sizeKey(right, end));
		starts_.reset(end);
		size += right;
	}
	// Cursor shrink. The merged block has a live block or offset 0 on its left (the list is coalesced), so this one
	// step is the whole cascade.
	if (start + size == cursor_)
	{
		starts_.reset(start);
		cursor_ = start;
	}
	else
		free_by_size_.insert(sizeKey(size, start));
}

uint64_t ChunkAllocator::blockBytes(uint32_t offset) const
{
	const uint32_t start = liveStart(offset);
	return start == detail::BlockBits::kNone ? 0 : uint64_t(blockEnd(start) - start) << kUnitShift;
}

void ChunkAllocator::reset()
{
	cursor_ = 0;
	live_units_ = 0;
	live_count_ = 0;
	starts_.clear();
	std::fill(live_.begin(), live_.end(), 0);
	free_by_size_.clear();
}

std::vector<ChunkAllocator::Block> ChunkAllocator::freeBlocks() const
{
	std::vector<Block> blocks;
	blocks.reserve(free_by_size_.size());
	for (const uint64_t key : free_by_size_)
		blocks.push_back({uint32_t(key) << kUnitShift, (key >> 32) << kUnitShift});
	std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.offset < b.offset; });
	return blocks;
}

std::string ChunkAllocator::leakReport() const
{
	if (live_count_ == 0)
		return "";
	return "ChunkAllocator leak: " + std::to_string(live_count_) + " live block(s), " + bytesText(live_units_) +
	       " bytes, still allocated at destruction";
}

bool ChunkAllocator::shouldCompact(uint64_t waste_floor) const
{
	return freeBytes() >= waste_floor && liveBytes() * 2 < cursor();
}

std::vector<ChunkAllocator::Move> ChunkAllocator::planCompaction()
{
	std::vector<Move> moves;
	std::vector<std::pair<uint32_t, uint32_t>> blocks; // live (start, size), in address order
	blocks.reserve(live_count_);
	if (cursor_ > 0)
		for (uint32_t start = 0; start != detail::BlockBits::kNone; start = starts_.next(start))
			if (isLive(start))
				blocks.emplace_back(start, blockEnd(start) - start);
	starts_.clear();
	std::fill(live_.begin(), live_.end(), 0);
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
		starts_.set(to);
		setLive(to, true);
		to += size;
	}
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
	if (const std::string bits = starts_.check(); !bits.empty())
		return fail("block starts: " + bits);
	// Every live bit marks a block start, and nothing is marked at or above the cursor.
	const std::vector<uint64_t>& starts = starts_.words();
	for (size_t w = 0; w < std::max(starts.size(), live_.size()); ++w)
	{
		const uint64_t s = w < starts.size() ? starts[w] : 0;
		const uint64_t l = w < live_.size() ? live_[w] : 0;
		if ((l & ~s) != 0)
			return fail("a live mark at " + bytesText(uint32_t(w * 64 + uint32_t(std::countr_zero(l & ~s)))) +
			            " is not a block start");
		const uint64_t first = uint64_t(w) * 64;
		const uint64_t beyond = first >= cursor_        ? ~uint64_t(0)
		                        : cursor_ - first >= 64 ? 0
		                                                : ~uint64_t(0) << (cursor_ - first);
		if ((s & beyond) != 0)
			return fail("a block starts at " + bytesText(uint32_t(first + uint64_t(std::countr_zero(s & beyond)))) +
			            ", at or beyond the cursor " + bytesText(cursor_));
	}
	if (cursor_ > 0 && !starts_.test(0))
		return fail("no block starts at offset 0");
	// Walk the blocks in address order: sizes, coalescing, the size index and the counters.
	uint64_t live_sum = 0, free_blocks = 0;
	uint32_t live_blocks = 0;
	bool previous_free = false;
	if (cursor_ > 0)
		for (uint32_t start = 0; start != detail::BlockBits::kNone; start = starts_.next(start))
		{
			const uint32_t size = blockEnd(start) - start;
			const bool is_free = !isLive(start);
			if (is_free)
			{
				if (previous_free)
					return fail("free block at " + bytesText(start) + " is not merged with the free block before it");
				if (!free_by_size_.contains(sizeKey(size, start)))
					return fail("free block at " + bytesText(start) + " of " + bytesText(size) +
					            " bytes is missing from the size index");
				++free_blocks;
			}
			else
			{
				live_sum += size;
				++live_blocks;
			}
			previous_free = is_free;
		}
	if (previous_free)
		return fail("the last free block ends at the cursor " + bytesText(cursor_) + " (not given back)");
	if (free_blocks != free_by_size_.size())
		return fail("the size index holds " + std::to_string(free_by_size_.size()) + " free blocks, the chunk " +
		            std::to_string(free_blocks));
	if (live_blocks != live_count_)
		return fail(std::to_string(live_blocks) + " live blocks, counter says " + std::to_string(live_count_));
	if (live_sum != live_units_)
		return fail("live blocks hold " + bytesText(live_sum) + " bytes, counter says " + bytesText(live_units_));
	return {};
}

size_t ChunkAllocator::hostBytes() const
{
	return starts_.hostBytes() + live_.capacity() * sizeof(uint64_t) + free_by_size_.size() * sizeof(uint64_t) * 3 / 2;
}

} // namespace quokka::heap
