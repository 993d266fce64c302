// quokka/atlas/texture_packing.hpp — rectangles packed into one page of an atlas, added and removed one at a time.
//
// MaxRects over BvhTree2d: the page's free space is kept as the set of maximal free rectangles (they overlap one
// another, never a placed entry). An entry goes where it fits best by its shorter leftover side (best short side
// fit; ties: the lower, then the left-most spot), at the free rectangle's lower-left corner; the free rectangles it
// overlaps are split around it and the ones another contains dropped. Removing an entry returns its rectangle to the
// free set, merged with free neighbours that share a whole edge with it; the set may then miss maximal rectangles
// (fragmented), so an entry that finds no place in a fragmented page rebuilds the complete set once and tries again.
// Hence an entry is refused only when no spot of the page can take it (tested against a brute-force search).
// Entries never move once placed (an atlas's texture coordinates stay valid); a page whose last entry left is whole
// again.
//
//   atlas::TexturePacking page(2048, 2048);
//   std::optional<atlas::Rect> at = page.tryAdd(texture_id, 256 + 2 * gutter, 128 + 2 * gutter);
//   if (!at) …                     // the page is full for it: another page, or a larger one
//   page.remove(texture_id);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include <quokka/atlas/bvh_tree2d.hpp>

namespace quokka::atlas
{

class TexturePacking
{
public:
	/// An empty page of `width` × `height` texels (both positive).
	TexturePacking(int32_t width, int32_t height);

	/// Places a `w` × `h` entry (both positive) under `id`, which must not be placed yet; nullopt when no spot of the
	/// page can take it.
	std::optional<Rect> tryAdd(uint64_t id, int32_t w, int32_t h);
	/// Removes the entry `id`; false when there is none.
	bool remove(uint64_t id);
	/// Where `id` was placed, if it is.
	std::optional<Rect> find(uint64_t id) const;
	/// Every entry: (id, rectangle), in no particular order.
	std::vector<std::pair<uint64_t, Rect>> entries() const;

	int32_t width() const { return width_; }
	int32_t height() const { return height_; }
	size_t count() const { return ids_.size(); }
	bool empty() const { return ids_.empty(); }
	/// The share of the page's texels entries cover, in [0, 1].
	double occupancy() const { return double(used_area_) / (double(width_) * double(height_)); }
	/// The free rectangles kept (maximal ones, and after removals pieces that may not be).
	size_t freeRectangles() const { return free_.size(); }
	/// Rebuilds the complete set of maximal free rectangles (tryAdd does when it must).
	void defragmentFreeSpace();
	/// Checks the invariants: entries inside the page and disjoint, free rectangles inside the page and disjoint from
	/// every entry, none inside another, the trees sound; one line per violation, none when the page is sound.
	std::vector<std::string> validate() const;

private:
	/// Adds `r` to the free set unless a free rectangle holds it, dropping the ones it holds.
	void addFree(const Rect& r);
	/// Splits every free rectangle `placed` overlaps into the (up to four) maximal pieces around it.
	void carve(const Rect& placed);
	/// Merges the free rectangle `r` with free rectangles sharing a whole edge with it, as long as one does.
	Rect mergeFree(Rect r);
	std::optional<Rect> bestSpot(int32_t w, int32_t h) const;

	int32_t width_, height_;
	BvhTree2d used_; ///< the entries (ids_ maps an id to its handle)
	BvhTree2d free_;
	absl::flat_hash_map<uint64_t, uint32_t> ids_; ///< id → handle in used_
	int64_t used_area_ = 0;
	bool fragmented_ = false; ///< removals since the free set was last complete
};

} // namespace quokka::atlas
