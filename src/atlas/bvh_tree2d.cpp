// bvh_tree2d.cpp — the rectangle BVH (bvh_tree2d.hpp): SAH insertion, refits, binned SAH rebuilds, invariants.
#include <quokka/atlas/bvh_tree2d.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <limits>

namespace quokka::atlas
{

Rect Rect::united(const Rect& o) const
{
	if (empty())
		return o;
	if (o.empty())
		return *this;
	const int32_t x0 = std::min(x, o.x), y0 = std::min(y, o.y);
	return {x0, y0, std::max(right(), o.right()) - x0, std::max(top(), o.top()) - y0};
}

std::string Rect::describe() const
{
	char text[64];
	std::snprintf(text, sizeof text, "[%d,%d %dx%d]", x, y, w, h);
	return text;
}

uint32_t BvhTree2d::newNode()
{
	if (!free_nodes_.empty())
	{
		const uint32_t n = free_nodes_.back();
		free_nodes_.pop_back();
		nodes_[n] = Node{};
		return n;
	}
	nodes_.emplace_back();
	return uint32_t(nodes_.size() - 1);
}

void BvhTree2d::freeNode(uint32_t n)
{
	nodes_[n].item = kNone;
	free_nodes_.push_back(n);
}

uint32_t BvhTree2d::insert(const Rect& rect, uint32_t value)
{
	uint32_t handle;
	if (!free_items_.empty())
	{
		handle = free_items_.back();
		free_items_.pop_back();
	}
	else
	{
		handle = uint32_t(items_.size());
		items_.emplace_back();
	}
	const uint32_t leaf = newNode();
	nodes_[leaf].box = rect;
	nodes_[leaf].item = handle;
	items_[handle] = {rect, value, leaf};
	++size_;
	insertLeaf(leaf);
	// Insertion order can degrade the tree to a list (rectangles added left to right): rebuilt once it is far from
	// balanced, which costs O(n log n) at most every O(n) insertions.
	uint32_t depth = 0;
	for (uint32_t n = leaf; nodes_[n].parent != kNone; n = nodes_[n].parent)
		++depth;
	height_bound_ = std::max(height_bound_, depth + 1);
	if (height_bound_ > 2 * uint32_t(std::bit_width(size_)) + 8)
		rebuild();
	return handle;
}

void BvhTree2d::insertLeaf(uint32_t leaf)
{
	if (root_ == kNone)
	{
		root_ = leaf;
		nodes_[leaf].parent = kNone;
		return;
	}
	// Descend towards the sibling whose union with the new box costs least: the growth of every box on the way
	// (inherited) plus the union's perimeter there.
	const Rect box = nodes_[leaf].box;
	uint32_t at = root_;
	while (nodes_[at].item == kNone)
	{
		const Node& n = nodes_[at];
		const int64_t here = n.box.united(box).halfPerimeter();
		const int64_t inherit = here - n.box.halfPerimeter();
		const int64_t stop = here; // (a new parent of this node and the leaf)
		int64_t cost[2];
		for (int c = 0; c < 2; ++c)
		{
			const Rect& cb = nodes_[n.child[c]].box;
			const int64_t grown = cb.united(box).halfPerimeter();
			cost[c] = inherit + (nodes_[n.child[c]].item != kNone ? grown : grown - cb.halfPerimeter());
		}
		if (stop <= cost[0] && stop <= cost[1])
			break;
		at = n.child[cost[1] < cost[0] ? 1 : 0];
	}
	const uint32_t parent = newNode();
	const uint32_t old_parent = nodes_[at].parent;
	nodes_[parent].parent = old_parent;
	nodes_[parent].box = nodes_[at].box.united(box);
	nodes_[parent].child[0] = at;
	nodes_[parent].child[1] = leaf;
	nodes_[at].parent = parent;
	nodes_[leaf].parent = parent;
	if (old_parent == kNone)
		root_ = parent;
	else
		nodes_[old_parent].child[nodes_[old_parent].child[0] == at ? 0 : 1] = parent;
	refit(old_parent);
}

void BvhTree2d::refit(uint32_t from)
{
	for (uint32_t n = from; n != kNone; n = nodes_[n].parent)
	{
		Node& node = nodes_[n];
		const Rect box = nodes_[node.child[0]].box.united(nodes_[node.child[1]].box);
		node.box = box;
	}
}

void BvhTree2d::remove(uint32_t handle)
{
	const uint32_t leaf = items_[handle].node;
	items_[handle].node = kNone;
	free_items_.push_back(handle);
	--size_;
	const uint32_t parent = nodes_[leaf].parent;
	freeNode(leaf);
	if (parent == kNone)
	{
		root_ = kNone;
		height_bound_ = 0;
		return;
	}
	// The sibling takes the parent's place.
	const uint32_t sibling = nodes_[parent].child[nodes_[parent].child[0] == leaf ? 1 : 0];
	const uint32_t grand = nodes_[parent].parent;
	nodes_[sibling].parent = grand;
	if (grand == kNone)
		root_ = sibling;
	else
		nodes_[grand].child[nodes_[grand].child[0] == parent ? 0 : 1] = sibling;
	freeNode(parent);
	refit(grand);
}

std::vector<uint32_t> BvhTree2d::handles() const
{
	std::vector<uint32_t> out;
	out.reserve(size_);
	for (uint32_t h = 0; h < items_.size(); ++h)
		if (items_[h].node != kNone)
			out.push_back(h);
	return out;
}

void BvhTree2d::rebuild()
{
	std::vector<uint32_t> leaves = handles();
	nodes_.clear();
	free_nodes_.clear();
	root_ = kNone;
	height_bound_ = 0;
	if (leaves.empty())
		return;
	nodes_.reserve(2 * leaves.size());
	root_ = build(leaves.data(), leaves.data() + leaves.size(), kNone, uint32_t(std::bit_width(leaves.size())) + 4);
	height_bound_ = height();
}

/// Top down: the node of items [first, last) split where the binned SAH cost — each side's box perimeter times its
/// count — is lowest, over 16 bins of box centres along either axis; a split no bin separates, and every split below
/// `depth_left` levels, halves the items at the median of the wider axis (so the height stays O(log n)).
uint32_t BvhTree2d::build(uint32_t* first, uint32_t* last, uint32_t parent, uint32_t depth_left)
{
	const uint32_t n = newNode();
	nodes_[n].parent = parent;
	if (last - first == 1)
	{
		nodes_[n].box = items_[*first].rect;
		nodes_[n].item = *first;
		items_[*first].node = n;
		return n;
	}
	Rect centres;
	bool any = false;
	for (uint32_t* i = first; i != last; ++i)
	{
		const Rect& r = items_[*i].rect;
		const Rect c{2 * r.x + r.w, 2 * r.y + r.h, 1, 1}; // (doubled centres: integers)
		centres = any ? centres.united(c) : c;
		any = true;
	}
	constexpr int kBins = 16;
	int best_axis = -1, best_split = 0;
	int64_t best_cost = std::numeric_limits<int64_t>::max();
	for (int axis = 0; axis < 2 && depth_left > 0; ++axis)
	{
		const int64_t lo = axis == 0 ? centres.x : centres.y;
		const int64_t extent = (axis == 0 ? centres.w : centres.h) - 1;
		if (extent <= 0)
			continue;
		std::array<Rect, kBins> boxes{};
		std::array<int64_t, kBins> counts{};
		auto binOf = [&](const Rect& r)
		{
			const int64_t c = axis == 0 ? 2 * int64_t(r.x) + r.w : 2 * int64_t(r.y) + r.h;
			return int(std::min<int64_t>(kBins - 1, (c - lo) * kBins / (extent + 1)));
		};
		for (uint32_t* i = first; i != last; ++i)
		{
			const Rect& r = items_[*i].rect;
			const int b = binOf(r);
			boxes[b] = boxes[b].united(r);
			++counts[b];
		}
		std::array<int64_t, kBins> right_cost{};
		Rect acc;
		int64_t count = 0;
		for (int b = kBins - 1; b > 0; --b)
		{
			acc = acc.united(boxes[b]);
			count += counts[b];
			right_cost[b] = count ? acc.halfPerimeter() * count : 0;
		}
		acc = Rect{};
		count = 0;
		for (int b = 0; b < kBins - 1; ++b)
		{
			acc = acc.united(boxes[b]);
			count += counts[b];
			if (count == 0 || count == last - first)
				continue;
			const int64_t cost = acc.halfPerimeter() * count + right_cost[b + 1];
			if (cost < best_cost)
			{
				best_cost = cost;
				best_axis = axis;
				best_split = b;
			}
		}
	}
	uint32_t* mid;
	if (best_axis < 0)
	{
		mid = first + (last - first) / 2;
		const bool by_x = centres.w >= centres.h;
		std::nth_element(first, mid, last,
		                 [&](uint32_t a, uint32_t b)
		                 {
			                 const Rect& ra = items_[a].rect;
			                 const Rect& rb = items_[b].rect;
			                 return by_x ? 2 * int64_t(ra.x) + ra.w < 2 * int64_t(rb.x) + rb.w
			                             : 2 * int64_t(ra.y) + ra.h < 2 * int64_t(rb.y) + rb.h;
		                 });
	}
	else
	{
		const int axis = best_axis;
		const int64_t lo = axis == 0 ? centres.x : centres.y;
		const int64_t extent = (axis == 0 ? centres.w : centres.h) - 1;
		mid = std::partition(first, last,
		                     [&](uint32_t h)
		                     {
			                     const Rect& r = items_[h].rect;
			                     const int64_t c = axis == 0 ? 2 * int64_t(r.x) + r.w : 2 * int64_t(r.y) + r.h;
			                     return std::min<int64_t>(kBins - 1, (c - lo) * kBins / (extent + 1)) <= best_split;
		                     });
	}
	const uint32_t below = depth_left > 0 ? depth_left - 1 : 0;
	const uint32_t a = build(first, mid, n, below);
	const uint32_t b = build(mid, last, n, below);
	nodes_[n].child[0] = a;
	nodes_[n].child[1] = b;
	nodes_[n].box = nodes_[a].box.united(nodes_[b].box);
	return n;
}

uint32_t BvhTree2d::heightOf(uint32_t n) const
{
	if (n == kNone)
		return 0;
	if (nodes_[n].item != kNone)
		return 1;
	return 1 + std::max(heightOf(nodes_[n].child[0]), heightOf(nodes_[n].child[1]));
}

uint32_t BvhTree2d::height() const
{
	return heightOf(root_);
}

std::vector<std::string> BvhTree2d::validate() const
{
	std::vector<std::string> out;
	size_t leaves = 0;
	std::vector<uint32_t> stack;
	if (root_ != kNone)
	{
		if (nodes_[root_].parent != kNone)
			out.push_back("the root has a parent");
		stack.push_back(root_);
	}
	while (!stack.empty())
	{
		const uint32_t i = stack.back();
		stack.pop_back();
		const Node& n = nodes_[i];
		if (n.item != kNone)
		{
			++leaves;
			if (n.item >= items_.size() || items_[n.item].node != i)
				out.push_back("leaf " + std::to_string(i) + " and its item disagree");
			else if (n.box != items_[n.item].rect)
				out.push_back("leaf " + std::to_string(i) + " box " + n.box.describe() + " is not its rectangle");
			continue;
		}
		for (uint32_t c : n.child)
		{
			if (c == kNone || c >= nodes_.size() || nodes_[c].parent != i)
			{
				out.push_back("node " + std::to_string(i) + " and its child disagree");
				continue;
			}
			stack.push_back(c);
		}
		if (n.child[0] != kNone && n.child[1] != kNone &&
		    n.box != nodes_[n.child[0]].box.united(nodes_[n.child[1]].box))
			out.push_back("node " + std::to_string(i) + " box " + n.box.describe() + " is not its children's union");
	}
	if (leaves != size_)
		out.push_back(std::to_string(leaves) + " leaves for " + std::to_string(size_) + " rectangles");
	size_t live = 0;
	for (const Item& it : items_)
		live += it.node != kNone;
	if (live != size_)
		out.push_back(std::to_string(live) + " live handles for " + std::to_string(size_) + " rectangles");
	return out;
}

} // namespace quokka::atlas
