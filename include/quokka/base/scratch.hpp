// quokka/base/scratch.hpp — frame scratch vectors that give back what a burst left.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace quokka
{

/// For a vector a frame fills and empties (a queue of the frame's changes): once emptied, when its capacity is more
/// than four times the `used` elements the frame put in it and past `floor`, it keeps twice `used` (at least `floor`)
/// and gives the rest back. What a burst (placing 10^6 objects) grew goes back after the first quieter frame, while
/// frames of a steady size keep theirs (no allocation per frame: twice what a frame uses is never trimmed again).
/// `v` must be empty.
template <typename T>
void trimScratch(std::vector<T>& v, size_t used, size_t floor = 1024)
{
	if (v.empty() && v.capacity() > floor && v.capacity() > 4 * used)
	{
		std::vector<T> smaller;
		smaller.reserve(std::max(2 * used, floor));
		v.swap(smaller);
	}
}

} // namespace quokka
