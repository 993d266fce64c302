// quokka/base/erase_some.hpp — dismantling a large hash map a slice at a time.
#pragma once

#include <cstddef>
#include <optional>

namespace quokka
{

/// Erases up to `count` elements of `map`, continuing from `cursor` (set to begin() on the first call), and returns
/// whether elements remain past it. For a map being torn down in slices between which nothing is inserted: an absl
/// flat hash map's erase(iterator) leaves the other iterators valid, and continuing from the cursor does not rescan
/// the emptied front — calling begin() each time would make the teardown quadratic in the table's capacity.
template <typename Map>
bool eraseSome(Map& map, std::optional<typename Map::iterator>& cursor, size_t count)
{
	if (!cursor)
		cursor = map.begin();
	auto& it = *cursor;
	for (; count != 0 && it != map.end(); --count)
		map.erase(it++);
	return it != map.end();
}

} // namespace quokka
