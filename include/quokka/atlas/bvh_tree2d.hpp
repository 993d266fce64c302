// quokka/atlas/bvh_tree2d.hpp — a bounding volume hierarchy over integer rectangles: which of them overlap a query.
//
// The texture packer keeps its placed and its free rectangles in these trees: placing an entry splits only the free
// rectangles it overlaps, and removing one merges the free space around it, each found in O(log n) instead of a walk
// over every rectangle of a page.
//
//   atlas::BvhTree2d tree;
//   const uint32_t a = tree.insert({0, 0, 16, 16}, 7);     // a handle; 7 is the caller's value
//   tree.query({8, 8, 4, 4}, [&](uint32_t h) { … tree.value(h) … return true; });  // false stops the walk
//   tree.remove(a);
//
// Shape: one rectangle per leaf; an insertion descends to the sibling whose union grows the tree's perimeter least
// (the surface area heuristic in two dimensions) and refits the boxes above it; rebuild() builds the whole tree top
// down, splitting each node where the binned SAH cost is lowest. Insertions rebuild the tree by themselves when its
// height exceeds 2·log2(n) + 8, so queries stay logarithmic under any insertion order. Handles stay valid until
// removed (rebuilds keep them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace quokka::atlas
{

/// An axis-aligned rectangle of texels: [x, x + w) × [y, y + h).
struct Rect
{
	int32_t x = 0, y = 0, w = 0, h = 0;

	int32_t right() const { return x + w; }
	int32_t top() const { return y + h; }
	int64_t area() const { return int64_t(w) * h; }
	bool empty() const { return w <= 0 || h <= 0; }
	/// Half the perimeter: the two-dimensional surface-area heuristic's cost of a box.
	int64_t halfPerimeter() const { return int64_t(w) + h; }
	bool contains(const Rect& o) const { return o.x >= x && o.y >= y && o.right() <= right() && o.top() <= top(); }
	/// They share a region of positive area (rectangles that only touch do not overlap).
	bool overlaps(const Rect& o) const { return o.x < right() && x < o.right() && o.y < top() && y < o.top(); }
	/// The smallest rectangle holding both (an empty one holds nothing).
	Rect united(const Rect& o) const;
	bool operator==(const Rect&) const = default;
	std::string describe() const;
};

class BvhTree2d
{
public:
	static constexpr uint32_t kNone = UINT32_MAX;

	/// Adds `rect` (not empty) carrying `value`; returns its handle.
	uint32_t insert(const Rect& rect, uint32_t value);
	/// Removes the rectangle of `handle` (a handle insert() returned and not removed since).
	void remove(uint32_t handle);
	const Rect& rect(uint32_t handle) const { return items_[handle].rect; }
	uint32_t value(uint32_t handle) const { return items_[handle].value; }
	size_t size() const { return size_; }
	bool empty() const { return size_ == 0; }
	/// Calls `visit(handle)` for every rectangle overlapping `area` (positive-area overlap), in no particular order,
	/// until it returns false. The tree must not be changed during the walk.
	template <typename Visit>
	void query(const Rect& area, Visit&& visit) const
	{
		if (root_ == kNone)
			return;
		uint32_t stack[256]; // (2 per level: the height stays below 100 for any size)
		uint32_t top = 0;
		stack[top++] = root_;
		while (top > 0)
		{
			const Node& n = nodes_[stack[--top]];
			if (!n.box.overlaps(area))
				continue;
			if (n.item != kNone)
			{
				if (!visit(n.item))
					return;
				continue;
			}
			stack[top++] = n.child[0];
			stack[top++] = n.child[1];
		}
	}
	/// Some rectangle overlaps `area`.
	bool overlapsAny(const Rect& area) const
	{
		bool found = false;
		query(area,
		      [&](uint32_t)
		      {
			      found = true;
			      return false;
		      });
		return found;
	}
	/// Every handle held (in no particular order).
	std::vector<uint32_t> handles() const;
	/// Builds the tree again top down with binned SAH splits (handles are kept).
	void rebuild();
	/// Levels from the root to the deepest leaf (0 when empty).
	uint32_t height() const;
	/// Checks the invariants (each box is the union of its children's, parents and children agree, every live handle
	/// is in exactly one leaf); one line per violation, none when the tree is sound.
	std::vector<std::string> validate() const;

private:
	struct Node
	{
		Rect box;
		uint32_t parent = kNone;
		uint32_t child[2] = {kNone, kNone};
		uint32_t item = kNone; ///< a leaf's handle; kNone for an inner node
	};
	struct Item
	{
		Rect rect;
		uint32_t value = 0;
		uint32_t node = kNone; ///< its leaf; kNone while free
	};
	uint32_t newNode();
	void freeNode(uint32_t n);
	void insertLeaf(uint32_t leaf);
	void refit(uint32_t from);
	uint32_t build(uint32_t* first, uint32_t* last, uint32_t parent, uint32_t depth_left);
	uint32_t heightOf(uint32_t n) const;

	std::vector<Node> nodes_;
	std::vector<uint32_t> free_nodes_;
	std::vector<Item> items_;
	std::vector<uint32_t> free_items_;
	uint32_t root_ = kNone;
	size_t size_ = 0;
	/// An upper bound of the height, raised by insertions and reset by rebuild() (the automatic rebuild's trigger).
	uint32_t height_bound_ = 0;
};

} // namespace quokka::atlas
