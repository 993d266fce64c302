// quokka/base/range_overlay.hpp — "the newer write wins" over a map of non-overlapping byte ranges.
//
// Staged uploads keep, per destination, the ranges written this frame and where their bytes wait. A range written
// again (a block written, freed and handed out again in one frame; a value re-packed twice) must not be copied twice
// in the wrong order: the newer write replaces the parts of older ones it covers, and what the older ones hold outside
// it is kept. The staging ring (gpu) and the heap's arena chunks (heap) both resolve their overlaps here.
#pragma once

#include <map>
#include <optional>
#include <utility>

namespace quokka
{

/// Lays `value`, the range [offset, offset + size_of(value)), over `live` — ranges keyed by their first byte, no two
/// overlapping — cutting away the parts of older ranges it covers and keeping theirs outside it (at most a front piece
/// of the first and a back piece of the last overlapped range). `slice(v, skip, size)` returns `v` restricted to the
/// `size` bytes that start `skip` bytes into it (its own offsets moved along). Returns whether `value` overlapped any
/// older range. O(log n + ranges overlapped); `live` stays free of overlaps.
template <class Key, class Value, class SizeOf, class Slice>
bool overlayRange(std::map<Key, Value>& live, Key offset, Value value, SizeOf size_of, Slice slice)
{
	const Key end = Key(offset + size_of(value));
	auto it = live.upper_bound(offset);
	if (it != live.begin())
		--it; // (the last range starting at or before `offset` may reach into it)
	std::optional<std::pair<Key, Value>> front, back;
	bool overlapped = false;
	while (it != live.end() && it->first < end)
	{
		const Key begin = it->first;
		const Key old_end = Key(begin + size_of(it->second));
		if (old_end <= offset)
		{
			++it;
			continue;
		}
		overlapped = true;
		if (begin < offset)
			front.emplace(begin, slice(it->second, Key(0), Key(offset - begin)));
		if (old_end > end)
			back.emplace(end, slice(it->second, Key(end - begin), Key(old_end - end)));
		it = live.erase(it);
	}
	if (front)
		live.emplace(std::move(*front));
	if (back)
		live.emplace(std::move(*back));
	live.emplace(offset, std::move(value));
	return overlapped;
}

} // namespace quokka
