// prefetch.hpp — CPU-cache choreography for the heap's loops over scattered objects (internal to quokka::heap).
//
// The add, remove, repack and refresh loops touch objects, nodes and table slots at random addresses; each fetches what
// a later iteration reads a fixed number of iterations ahead (the distances were measured on the H200 host and are
// stated where they are used). These helpers keep that scaffolding short.
#pragma once

#include <cstddef>

#include <quokka/scene/render_object.hpp>

namespace quokka::heap::detail
{

/// The value a view's buffer node holds already, or nullptr (none yet, or a view without a buffer node: a single
/// value). For prefetch hints only.
inline const scene::ArrayBuffer* cachedBuffer(const scene::BufferView& v)
{
	const auto* node = v.buffer.node().get();
	return node ? node->cachedValue() : nullptr;
}

/// Hints the CPU to fetch the first `lines` cache lines of the object at `p` (loops over scattered objects call it a
/// few visits ahead).
inline void prefetchLines(const void* p, int lines)
{
	for (int i = 0; i < lines; ++i)
		__builtin_prefetch(static_cast<const char*>(p) + 64 * i);
}

/// One prefetch stage of a loop: before iteration i, `fetch(i + distance)` (while that index exists).
template <typename F>
struct Ahead
{
	size_t distance;
	F fetch;
};
template <typename F>
Ahead(size_t, F) -> Ahead<F>;

/// Calls `body(i)` for i in [0, n), each call preceded by every stage's fetch of its later index, in the order given —
/// so a loop over scattered objects reads as its algorithm plus one line per stage. (Everything inlines: the same
/// code as the hand-written loop.)
template <typename Body, typename... F>
inline void forEachAhead(size_t n, Body&& body, const Ahead<F>&... stages)
{
	for (size_t i = 0; i < n; ++i)
	{
		(
		    [&]
		    {
			    if (i + stages.distance < n)
				    stages.fetch(i + stages.distance);
		    }(),
		    ...);
		body(i);
	}
}

} // namespace quokka::heap::detail

namespace quokka::heap
{
using detail::Ahead;
using detail::cachedBuffer;
using detail::forEachAhead;
using detail::prefetchLines;
} // namespace quokka::heap
