// arena_staging.cpp — allocation staging and the chunk write log's copy regions (arena_staging.hpp).
#include "arena_staging.hpp"

#include <array>
#include <map>

#include <quokka/base/range_overlay.hpp>

namespace quokka::heap::detail
{

/// Sorts `w` by chunk offset, stably (arrival order among equal offsets): an LSD radix sort, one pass per byte in
/// which the offsets differ — a frame of 10^4 adds has ~10^4 writes in allocation (not address) order.
void sortByOffset(std::vector<Chunk::Write>& w)
{
	std::vector<Chunk::Write> tmp(w.size());
	for (uint32_t shift = 0; shift < 32; shift += 8)
	{
		std::array<uint32_t, 257> count{};
		for (const Chunk::Write& x : w)
			++count[((x.offset >> shift) & 0xff) + 1];
		if (std::any_of(count.begin() + 1, count.end(), [&](uint32_t c) { return c == w.size(); }))
			continue; // every offset has this byte in common
		for (size_t b = 1; b < count.size(); ++b)
			count[b] += count[b - 1];
		for (const Chunk::Write& x : w)
			tmp[count[(x.offset >> shift) & 0xff]++] = x;
		w.swap(tmp);
	}
}

std::vector<std::pair<uint32_t, std::vector<VkBufferCopy>>> Chunk::takeCopies(uint32_t& overlapping)
{
	std::vector<Write> w;
	w.swap(pending);
	auto disjointInOrder = [](const std::vector<Write>& v)
	{
		for (size_t i = 1; i < v.size(); ++i)
			if (v[i].offset < v[i - 1].offset + v[i - 1].size)
				return false;
		return true;
	};
	if (!disjointInOrder(w))
	{
		std::vector<Write> arrival = w;
		sortByOffset(w);
		if (!disjointInOrder(w))
		{
			// Overlaps (rare): applied in arrival order, each write trimming the parts of older ones it covers.
			std::map<uint32_t, Write> live;
			for (const Write& x : arrival)
				overlapping += overlayRange(
				    live, x.offset, x, [](const Write& r) { return r.size; },
				    [](const Write& r, uint32_t skip, uint32_t size) {
					    return Write{r.offset + skip, r.page, r.at + skip, size};
				    });
			w.clear();
			for (const auto& [offset, x] : live)
				w.push_back(x);
		}
	}
	std::vector<std::pair<uint32_t, std::vector<VkBufferCopy>>> groups; // by page (a frame has one or a few)
	for (const Write& x : w)
	{
		auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == x.page; });
		if (g == groups.end())
			g = groups.insert(groups.end(), {x.page, {}});
		std::vector<VkBufferCopy>& r = g->second;
		if (!r.empty() && r.back().srcOffset + r.back().size == x.at && r.back().dstOffset + r.back().size == x.offset)
			r.back().size += x.size;
		else
			r.push_back({x.at, x.offset, x.size});
	}
	return groups;
}

} // namespace quokka::heap::detail
