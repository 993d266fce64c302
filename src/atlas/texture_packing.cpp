// texture_packing.cpp — MaxRects over BvhTree2d (texture_packing.hpp): placement, carving, merging, invariants.
#include <quokka/atlas/texture_packing.hpp>

#include <quokka/base/assert.hpp>

#include <algorithm>
#include <tuple>

namespace quokka::atlas
{

TexturePacking::TexturePacking(int32_t width, int32_t height) : width_(width), height_(height)
{
	QUOKKA_ASSERT(width > 0 && height > 0, "a texture packing needs a positive size");
	free_.insert({0, 0, width, height}, 0);
}

std::optional<Rect> TexturePacking::find(uint64_t id) const
{
	if (auto it = ids_.find(id); it != ids_.end())
		return used_.rect(it->second);
	return std::nullopt;
}

std::vector<std::pair<uint64_t, Rect>> TexturePacking::entries() const
{
	std::vector<std::pair<uint64_t, Rect>> out;
	out.reserve(ids_.size());
	for (const auto& [id, handle] : ids_)
		out.emplace_back(id, used_.rect(handle));
	return out;
}

std::optional<Rect> TexturePacking::bestSpot(int32_t w, int32_t h) const
{
	// Best short side fit over every free rectangle that can hold it (a page holds a few hundred at most).
	std::optional<Rect> best;
	std::tuple<int32_t, int32_t, int32_t, int32_t> best_key{};
	for (uint32_t handle : free_.handles())
	{
		const Rect& f = free_.rect(handle);
		if (f.w < w || f.h < h)
			continue;
		const int32_t dw = f.w - w, dh = f.h - h;
		const std::tuple key{std::min(dw, dh), std::max(dw, dh), f.y, f.x};
		if (!best || key < best_key)
		{
			best = Rect{f.x, f.y, w, h};
			best_key = key;
		}
	}
	return best;
}

std::optional<Rect> TexturePacking::tryAdd(uint64_t id, int32_t w, int32_t h)
{
	QUOKKA_ASSERT(w > 0 && h > 0, "a texture packing entry needs a positive size");
	QUOKKA_ASSERT(!ids_.contains(id), "the entry is placed already");
	if (w > width_ || h > height_ || int64_t(w) * h > int64_t(width_) * height_ - used_area_)
		return std::nullopt;
	std::optional<Rect> spot = bestSpot(w, h);
	if (!spot && fragmented_)
	{
		defragmentFreeSpace();
		spot = bestSpot(w, h);
	}
	if (!spot)
		return std::nullopt;
	carve(*spot);
	ids_.emplace(id, used_.insert(*spot, 0));
	used_area_ += spot->area();
	return spot;
}

bool TexturePacking::remove(uint64_t id)
{
	auto it = ids_.find(id);
	if (it == ids_.end())
		return false;
	const Rect r = used_.rect(it->second);
	used_.remove(it->second);
	ids_.erase(it);
	used_area_ -= r.area();
	if (ids_.empty())
	{
		// Whole again: one free rectangle, complete.
		free_ = BvhTree2d{};
		free_.insert({0, 0, width_, height_}, 0);
		fragmented_ = false;
		return true;
	}
	addFree(mergeFree(r));
	fragmented_ = true;
	return true;
}

void TexturePacking::addFree(const Rect& r)
{
	bool held = false;
	std::vector<uint32_t> inside;
	free_.query(r,
	            [&](uint32_t handle)
	            {
		            const Rect& f = free_.rect(handle);
		            if (f.contains(r))
		            {
			            held = true;
			            return false;
		            }
		            if (r.contains(f))
			            inside.push_back(handle);
		            return true;
	            });
	if (held)
		return;
	for (uint32_t handle : inside)
		free_.remove(handle);
	free_.insert(r, 0);
}

Rect TexturePacking::mergeFree(Rect r)
{
	// A free rectangle sharing a whole edge with `r` (same span, touching) is taken into it — repeatedly, since the
	// grown rectangle may share an edge with another.
	for (bool grew = true; grew;)
	{
		grew = false;
		const Rect around{r.x - 1, r.y - 1, r.w + 2, r.h + 2};
		uint32_t merge = BvhTree2d::kNone;
		Rect merged;
		free_.query(around,
		            [&](uint32_t handle)
		            {
			            const Rect& f = free_.rect(handle);
			            const bool side = f.y == r.y && f.h == r.h && (f.right() == r.x || r.right() == f.x);
			            const bool above = f.x == r.x && f.w == r.w && (f.top() == r.y || r.top() == f.y);
			            if (!side && !above)
				            return true;
			            merge = handle;
			            merged = f.united(r);
			            return false;
		            });
		if (merge != BvhTree2d::kNone)
		{
			free_.remove(merge);
			r = merged;
			grew = true;
		}
	}
	return r;
}

void TexturePacking::carve(const Rect& placed)
{
	std::vector<uint32_t> hit;
	free_.query(placed,
	            [&](uint32_t handle)
	            {
		            hit.push_back(handle);
		            return true;
	            });
	std::vector<Rect> pieces;
	for (uint32_t handle : hit)
	{
		const Rect f = free_.rect(handle);
		free_.remove(handle);
		if (placed.x > f.x)
			pieces.push_back({f.x, f.y, placed.x - f.x, f.h});
		if (placed.right() < f.right())
			pieces.push_back({placed.right(), f.y, f.right() - placed.right(), f.h});
		if (placed.y > f.y)
			pieces.push_back({f.x, f.y, f.w, placed.y - f.y});
		if (placed.top() < f.top())
			pieces.push_back({f.x, placed.top(), f.w, f.top() - placed.top()});
	}
	// Largest first, so that a piece another holds is found held (not inserted, then dropped).
	std::sort(pieces.begin(), pieces.end(),
	          [](const Rect& a, const Rect& b) { return std::tie(b.w, b.h, a.x, a.y) < std::tie(a.w, a.h, b.x, b.y); });
	for (const Rect& p : pieces)
		addFree(p);
}

void TexturePacking::defragmentFreeSpace()
{
	free_ = BvhTree2d{};
	free_.insert({0, 0, width_, height_}, 0);
	std::vector<Rect> placed;
	placed.reserve(ids_.size());
	for (const auto& [id, handle] : ids_)
		placed.push_back(used_.rect(handle));
	std::sort(placed.begin(), placed.end(),
	          [](const Rect& a, const Rect& b) { return std::tie(a.y, a.x) < std::tie(b.y, b.x); });
	for (const Rect& r : placed)
		carve(r);
	free_.rebuild();
	fragmented_ = false;
}

std::vector<std::string> TexturePacking::validate() const
{
	std::vector<std::string> out;
	const Rect page{0, 0, width_, height_};
	int64_t area = 0;
	for (const auto& [id, handle] : ids_)
	{
		const Rect& r = used_.rect(handle);
		area += r.area();
		if (r.empty() || !page.contains(r))
			out.push_back("entry " + std::to_string(id) + " " + r.describe() + " is not inside the page");
		used_.query(r,
		            [&](uint32_t other)
		            {
			            if (other != handle)
				            out.push_back("entry " + std::to_string(id) + " " + r.describe() + " overlaps " +
				                          used_.rect(other).describe());
			            return true;
		            });
	}
	if (area != used_area_)
		out.push_back("the entries cover " + std::to_string(area) + " texels, counted " + std::to_string(used_area_));
	if (used_.size() != ids_.size())
		out.push_back(std::to_string(used_.size()) + " placed rectangles for " + std::to_string(ids_.size()) + " ids");
	for (uint32_t handle : free_.handles())
	{
		const Rect& f = free_.rect(handle);
		if (f.empty() || !page.contains(f))
			out.push_back("free " + f.describe() + " is not inside the page");
		if (used_.overlapsAny(f))
			out.push_back("free " + f.describe() + " overlaps an entry");
		free_.query(f,
		            [&](uint32_t other)
		            {
			            if (other != handle && free_.rect(other).contains(f))
				            out.push_back("free " + f.describe() + " lies inside free " + free_.rect(other).describe());
			            return true;
		            });
	}
	for (const std::vector<std::string>& tree : {used_.validate(), free_.validate()})
		out.insert(out.end(), tree.begin(), tree.end());
	return out;
}

} // namespace quokka::atlas
