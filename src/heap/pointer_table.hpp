// pointer_table.hpp — a flat hash set of pointers, each stored beside its 64-bit hash, that a caller can prefetch
// exactly (internal to quokka::heap).
//
// The heap's pool holds millions of entries (5 per object at 10^6 objects) and is probed by every add and removal at
// a random place. A Swiss table keeps its control bytes and its slots in two arrays, so a probe is two cache misses,
// and its prefetch can only name the first slot of a 16-slot group (256 bytes, four or five lines): the removal loop
// prefetched ahead and still stalled on the slot (perf, `bench update`). Here a probe starts at one 16-byte slot in
// one array — linear probing, load ≤ 3/4, so a run rarely leaves its line — and prefetch(hash) fetches exactly that
// line. The full hash beside the pointer settles almost every mismatch without touching the pointee.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <quokka/base/assert.hpp>

namespace quokka::heap::detail
{

/// A set of non-null `T*`, each filed under a caller-supplied 64-bit hash (the caller hashes what it looks up by, so
/// elements are found by key and erased by identity). Linear probing from the hash's high bits, backward-shift deletion
/// (no tombstones, so runs stay short however many erases happen), growth by doubling at load 3/4. Non-owning.
///
/// Deferred insertion: insertDeferred() prefetches the element's slot and files it kLag deferred insertions later (or
/// at flush()); until then it waits in a short side list that find(), extract() and forEach() also search. A caller
/// filing many elements at random places (the heap's adds) then overlaps the misses instead of stalling on each.
template <typename T>
class PointerTable
{
public:
	struct Slot
	{
		T* ptr = nullptr; ///< null: empty
		uint64_t hash = 0;
	};

	/// The first element filed under `hash` for which `match(const T&)` is true, or nullptr.
	template <typename Match>
	T* find(uint64_t hash, Match&& match) const
	{
		if (const size_t k = pendingIndexOf(hash, match); k != kNone)
			return pendingAt(k).ptr;
		const size_t i = indexOf(hash, match);
		return i == kNone ? nullptr : slots_[i].ptr;
	}
	/// Files `p` (non-null, not already in the table) under `hash`.
	void insert(T* p, uint64_t hash)
	{
		file(p, hash);
		++size_;
	}
	/// insert(), deferred: `p` is found at once, but its slot is written only kLag deferred insertions later (or by
	/// flush()), by when the prefetch issued here has brought the slot's line in.
	void insertDeferred(T* p, uint64_t hash)
	{
		prefetch(hash);
		if (pending_count_ == kLag)
			fileOldest();
		pendingAt(pending_count_++) = Slot{p, hash};
		addToFilter(hash);
		++size_;
	}
	/// Files every deferred element now.
	void flush()
	{
		while (pending_count_ != 0)
			fileOldest();
	}
	/// Elements inserted with insertDeferred() and not filed yet.
	size_t pending() const { return pending_count_; }
	/// Removes `p`, filed under `hash`. Returns false (and changes nothing) when it is not in the table.
	bool erase(const T* p, uint64_t hash)
	{
		return extract(hash, [&](const T& x) { return &x == p; }) != nullptr; // (compares addresses: reads no T)
	}
	/// Removes and returns the first element filed under `hash` for which `match(const T&)` is true, or nullptr.
	template <typename Match>
	T* extract(uint64_t hash, Match&& match)
	{
		if (const size_t k = pendingIndexOf(hash, match); k != kNone)
		{
			T* const found = pendingAt(k).ptr;
			dropPending(k);
			--size_;
			return found;
		}
		size_t i = indexOf(hash, match);
		if (i == kNone)
			return nullptr;
		T* const found = slots_[i].ptr;
		// Backward shift: pull each later element of the run into the hole when its home lies at or before it.
		for (size_t j = (i + 1) & mask();; j = (j + 1) & mask())
		{
			if (!slots_[j].ptr)
				break;
			const size_t k = home(slots_[j].hash);
			if (((i - k) & mask()) < ((j - k) & mask()))
			{
				slots_[i] = slots_[j];
				i = j;
			}
		}
		slots_[i] = Slot{};
		--size_;
		return found;
	}
	/// Hints the CPU to fetch the slot where a lookup or erasure under `hash` starts and the three after it: a run
	/// that starts in the last slots of a line goes on in the next one (at load 0.6, an unsuccessful probe reads ~4
	/// slots and an erasure reads to the end of its run).
	void prefetch(uint64_t hash) const
	{
		if (slots_.empty())
			return;
		const Slot* const s = &slots_[home(hash)];
		__builtin_prefetch(s);
		__builtin_prefetch(reinterpret_cast<const char*>(s) + 3 * sizeof(Slot)); // (never faults, even past the end)
	}
	size_t size() const { return size_; }
	bool empty() const { return size_ == 0; }
	size_t capacity() const { return slots_.size(); }
	/// Calls fn(T*) for every element, in table order.
	template <typename Fn>
	void forEach(Fn&& fn) const
	{
		for (const Slot& s : slots_)
			if (s.ptr)
				fn(s.ptr);
		for (size_t k = 0; k < pending_count_; ++k)
			fn(pendingAt(k).ptr);
	}
	/// Empties the table and frees its slots (the elements are the caller's).
	/// Dismantling: removes the elements of up to `count` slots from `cursor` on — and, once `cursor` reaches the end,
	/// the deferred ones — handing each to `fn(T*)`, and advances `cursor`. True while elements remain. No backward
	/// shift, so after the first call the table serves only further drains, size() and clear() (a caller tearing down
	/// what the table indexes, in slices: `fn` may run any code that does not look at the table).
	template <typename Fn>
	bool drain(size_t& cursor, size_t count, Fn&& fn)
	{
		const size_t end = std::min(slots_.size(), cursor + count);
		for (; cursor < end; ++cursor)
			if (T* p = std::exchange(slots_[cursor].ptr, nullptr))
			{
				--size_;
				fn(p);
			}
		if (cursor == slots_.size() && pending_count_ != 0)
		{
			std::array<T*, kLag> waiting{};
			const size_t n = pending_count_;
			for (size_t k = 0; k < n; ++k)
				waiting[k] = pendingAt(k).ptr;
			pending_count_ = 0;
			pending_head_ = 0;
			size_ -= n;
			for (size_t k = 0; k < n; ++k)
				fn(waiting[k]);
		}
		return size_ != 0;
	}
	/// An emptied table's slot array, moved out (for freeing elsewhere: at 10^7 elements it is 256 MiB); the table is
	/// empty and without storage after it.
	std::shared_ptr<void> releaseStorage()
	{
		QUOKKA_ASSERT(size_ == 0, "only an emptied table's storage is released");
		auto storage = std::make_shared<std::vector<Slot>>(std::move(slots_));
		clear();
		return storage;
	}
	void clear()
	{
		slots_.clear();
		slots_.shrink_to_fit();
		size_ = 0;
		shift_ = 64;
		pending_count_ = 0;
		pending_head_ = 0;
		filter_ = 0;
		std::fill(std::begin(filter_counts_), std::end(filter_counts_), uint8_t(0));
	}
	/// "" when every invariant holds, else the first violation: the size matches the occupied slots, the load is at
	/// most 3/4, and every element is reached from its home slot without crossing an empty one. O(capacity).
	std::string check() const
	{
		size_t occupied = 0;
		for (size_t j = 0; j < slots_.size(); ++j)
		{
			if (!slots_[j].ptr)
				continue;
			++occupied;
			for (size_t i = home(slots_[j].hash); i != j; i = (i + 1) & mask())
				if (!slots_[i].ptr)
					return "slot " + std::to_string(j) + " is cut off from its home slot " +
					       std::to_string(home(slots_[j].hash)) + " by the empty slot " + std::to_string(i);
		}
		if (occupied + pending_count_ != size_)
			return "size " + std::to_string(size_) + " but " + std::to_string(occupied) + " occupied slots and " +
			       std::to_string(pending_count_) + " deferred";
		if (occupied * 4 > slots_.size() * 3)
			return "load above 3/4";
		uint64_t filter = 0;
		uint8_t counts[64] = {};
		for (size_t k = 0; k < pending_count_; ++k)
		{
			filter |= filterBit(pendingAt(k).hash);
			++counts[filterIndex(pendingAt(k).hash)];
		}
		if (filter != filter_ || !std::equal(std::begin(counts), std::end(counts), std::begin(filter_counts_)))
			return "the filter does not match the deferred elements";
		return {};
	}

	/// Deferred insertions in flight: enough to cover a memory latency at the heap's rate of ~5 insertions per add.
	/// Host bytes of its slot array (memory accounting).
	size_t hostBytes() const { return slots_.capacity() * sizeof(Slot); }

	static constexpr size_t kLag = 16;
	static_assert((kLag & (kLag - 1)) == 0, "the side list is a ring indexed by masking");

private:
	static constexpr size_t kNone = ~size_t(0);
	size_t mask() const { return slots_.size() - 1; }
	/// One of 64 bits per hash (bits the home slot does not use), so a lookup skips the side list unless an element
	/// there might match.
	static unsigned filterIndex(uint64_t hash) { return unsigned(hash >> 24) & 63u; }
	static uint64_t filterBit(uint64_t hash) { return uint64_t(1) << filterIndex(hash); }
	/// The filter counts the deferred elements per bit, so one leaving clears its bit in O(1) when it was the last.
	void addToFilter(uint64_t hash)
	{
		++filter_counts_[filterIndex(hash)];
		filter_ |= filterBit(hash);
	}
	void removeFromFilter(uint64_t hash)
	{
		if (--filter_counts_[filterIndex(hash)] == 0)
			filter_ &= ~filterBit(hash);
	}
	/// The side list is a ring: position k (0 = oldest) of the deferred elements.
	Slot& pendingAt(size_t k) { return pending_[(pending_head_ + k) & (kLag - 1)]; }
	const Slot& pendingAt(size_t k) const { return pending_[(pending_head_ + k) & (kLag - 1)]; }
	/// Takes the deferred element at `k` out of the side list, keeping the order of the rest (the oldest leaves in
	/// O(1); a younger one — an element erased within kLag insertions of its own — shifts the ones after it).
	void dropPending(size_t k)
	{
		removeFromFilter(pendingAt(k).hash);
		if (k == 0)
			pending_head_ = (pending_head_ + 1) & (kLag - 1);
		else
			for (size_t j = k; j + 1 < pending_count_; ++j)
				pendingAt(j) = pendingAt(j + 1);
		--pending_count_;
	}
	/// Position in the side list (0 = oldest) of the first deferred element filed under `hash` that `match` accepts.
	template <typename Match>
	size_t pendingIndexOf(uint64_t hash, Match& match) const
	{
		if ((filter_ & filterBit(hash)) == 0)
			return kNone;
		for (size_t k = 0; k < pending_count_; ++k)
		{
			const Slot& s = pendingAt(k);
			if (s.hash == hash && match(static_cast<const T&>(*s.ptr)))
				return k;
		}
		return kNone;
	}
	/// Writes the oldest deferred element into the table.
	void fileOldest()
	{
		file(pendingAt(0).ptr, pendingAt(0).hash); // (still counted as deferred, so the growth test counts it once)
		dropPending(0);
	}
	/// Writes `p` into the table (size_ already counts it), growing first at load 3/4 of the filed elements.
	void file(T* p, uint64_t hash)
	{
		if ((size_ - pending_count_ + 1) * 4 > slots_.size() * 3)
			grow();
		place(p, hash);
	}
	/// The slot of the first element filed under `hash` that `match` accepts, or kNone.
	template <typename Match>
	size_t indexOf(uint64_t hash, Match& match) const
	{
		if (size_ == pending_count_) // (nothing filed, maybe no slots)
			return kNone;
		for (size_t i = home(hash);; i = (i + 1) & mask())
		{
			const Slot& s = slots_[i];
			if (!s.ptr)
				return kNone;
			if (s.hash == hash && match(static_cast<const T&>(*s.ptr)))
				return i;
		}
	}
	size_t home(uint64_t hash) const { return size_t(hash >> shift_); }
	void place(T* p, uint64_t hash)
	{
		size_t i = home(hash);
		while (slots_[i].ptr)
			i = (i + 1) & mask();
		slots_[i] = Slot{p, hash};
	}
	void grow()
	{
		std::vector<Slot> old;
		old.swap(slots_);
		const size_t capacity = old.empty() ? 16 : old.size() * 2;
		slots_.assign(capacity, Slot{});
		shift_ = 64 - unsigned(__builtin_ctzll(capacity));
		for (const Slot& s : old)
			if (s.ptr)
				place(s.ptr, s.hash);
	}

	std::vector<Slot> slots_; ///< a power of two (≥ 16), or empty
	size_t size_ = 0;         ///< filed and deferred elements
	unsigned shift_ = 64;     ///< 64 − log2(capacity): the hash's top bits pick the home slot
	Slot pending_[kLag];      ///< the deferred elements: a ring from pending_head_, oldest first
	size_t pending_count_ = 0;
	size_t pending_head_ = 0;
	uint64_t filter_ = 0;            ///< filterBit() of every deferred element
	uint8_t filter_counts_[64] = {}; ///< deferred elements per filter bit (≤ kLag)
};

} // namespace quokka::heap::detail
