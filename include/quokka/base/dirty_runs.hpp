// quokka/base/dirty_runs.hpp — which granules of a host-shadowed array changed since the last upload, visited as runs.
//
// A renderer that keeps a full host shadow of a GPU array (the heap's draw headers and slot records, the classic
// path's uniform pages) marks the granules it edits and, once per frame, uploads runs of marked granules — runs less
// than MergeGap + 1 clean granules apart merged into one (the clean bytes in the gap are rewritten with the values they
// already have, which costs less than another copy region). The marks are a two-level bitmap — a bit per granule and
// a bit per non-zero bitmap word — so mark() is a few bit operations and takeRuns() visits what changed in address
// order without sorting, in time proportional to the marks, not the array.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace quokka
{

template <size_t MergeGap>
class DirtyRuns
{
public:
	/// Marks granule `g` (the array may grow: marks past the end extend the bitmap).
	void mark(size_t g)
	{
		if ((g >> 6) < dirty_.size()) // the common case: one granule of an array already marked at that size
		{
			dirty_[g >> 6] |= uint64_t(1) << (g & 63);
			summary_[g >> 12] |= uint64_t(1) << ((g >> 6) & 63);
			return;
		}
		markRange(g, g);
	}
	/// Marks granules [g0, g1] (inclusive).
	void markRange(size_t g0, size_t g1)
	{
		if ((g1 >> 6) >= dirty_.size())
		{
			dirty_.resize((g1 >> 6) + 1, 0);
			summary_.resize((dirty_.size() + 63) >> 6, 0);
		}
		for (size_t w = g0 >> 6; w <= g1 >> 6; ++w)
		{
			const size_t first = w == (g0 >> 6) ? (g0 & 63) : 0, last = w == (g1 >> 6) ? (g1 & 63) : 63;
			dirty_[w] |= (~uint64_t(0) >> (63 - last)) & (~uint64_t(0) << first);
			summary_[w >> 6] |= uint64_t(1) << (w & 63);
		}
	}
	/// Calls f(first granule, end granule) for each run of marked granules (merged across gaps of up to MergeGap clean
	/// granules), in address order, and clears the marks.
	template <typename F>
	void takeRuns(F&& f)
	{
		size_t lo = 0, hi = 0; // the open run [lo, hi) of granules; hi == 0: none
		for (size_t si = 0; si < summary_.size(); ++si)
			for (uint64_t sbits = std::exchange(summary_[si], 0); sbits; sbits &= sbits - 1)
			{
				const size_t w = (si << 6) + size_t(std::countr_zero(sbits));
				for (uint64_t bits = std::exchange(dirty_[w], 0); bits; bits &= bits - 1)
				{
					const size_t g = (w << 6) + size_t(std::countr_zero(bits));
					if (hi != 0 && g <= hi + MergeGap)
						hi = g + 1;
					else
					{
						if (hi != 0)
							f(lo, hi);
						lo = g;
						hi = g + 1;
					}
				}
			}
		if (hi != 0)
			f(lo, hi);
	}
	/// Drops every mark.
	void clear()
	{
		takeRuns([](size_t, size_t) {});
	}

	/// Host bytes of its bitmaps (memory accounting).
	size_t hostBytes() const { return (dirty_.capacity() + summary_.capacity()) * sizeof(uint64_t); }

private:
	std::vector<uint64_t> dirty_;   ///< bit g: granule g is marked
	std::vector<uint64_t> summary_; ///< bit i: dirty_[i] != 0
};

} // namespace quokka
