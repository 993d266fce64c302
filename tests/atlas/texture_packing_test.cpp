// TexturePacking as a spec, under random adds and removes: entries lie inside the page and never overlap, never
// move once placed, and an entry is refused only when no spot of the page could take it (brute force over every
// spot an entry can be slid to); removing everything makes the page whole again.
#include <quokka/atlas/texture_packing.hpp>

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace quokka::atlas
{
namespace
{

/// A spot for a w × h entry exists. Any free spot can be slid left and down until it touches the page's edge or an
/// entry, so the candidates are x ∈ {0} ∪ {entry right edges} and y ∈ {0} ∪ {entry top edges}.
bool someSpotFits(const TexturePacking& page, int32_t w, int32_t h)
{
	const auto entries = page.entries();
	std::vector<int32_t> xs{0}, ys{0};
	for (const auto& [id, r] : entries)
	{
		xs.push_back(r.right());
		ys.push_back(r.top());
	}
	for (int32_t x : xs)
		for (int32_t y : ys)
		{
			const Rect spot{x, y, w, h};
			if (spot.right() > page.width() || spot.top() > page.height())
				continue;
			bool clear = true;
			for (const auto& [id, r] : entries)
				if (r.overlaps(spot))
				{
					clear = false;
					break;
				}
			if (clear)
				return true;
		}
	return false;
}

void expectSound(const TexturePacking& page)
{
	const std::vector<std::string> problems = page.validate();
	ASSERT_TRUE(problems.empty()) << problems.size() << " problems, the first: " << problems.front();
}

TEST(TexturePackingTest, RandomAddsAndRemovesKeepEntriesDisjointInPlaceAndRefuseOnlyWhatCannotFit)
{
	for (uint32_t seed : {1u, 2u, 3u})
	{
		SCOPED_TRACE("seed " + std::to_string(seed));
		std::mt19937 rng(seed);
		TexturePacking page(256, 192);
		std::map<uint64_t, Rect> placed;
		uint64_t next = 0;
		int refused = 0;
		for (int step = 0; step < 1500; ++step)
		{
			if (placed.empty() || rng() % 5 < 3)
			{
				// Mostly small entries, some long thin ones, a few large.
				std::uniform_int_distribution<int32_t> small(1, 24), large(30, 120);
				const bool big = rng() % 10 == 0;
				const int32_t w = big ? large(rng) : small(rng),
				              h = rng() % 7 == 0 ? 2 : (big ? large(rng) : small(rng));
				const uint64_t id = next++;
				const std::optional<Rect> at = page.tryAdd(id, w, h);
				if (at)
				{
					EXPECT_EQ(at->w, w);
					EXPECT_EQ(at->h, h);
					placed[id] = *at;
				}
				else
				{
					++refused;
					ASSERT_FALSE(someSpotFits(page, w, h))
					    << w << "x" << h << " was refused though a spot fits (step " << step << ")";
				}
			}
			else
			{
				auto it = placed.begin();
				std::advance(it, rng() % placed.size());
				ASSERT_TRUE(page.remove(it->first));
				placed.erase(it);
			}
			ASSERT_EQ(page.count(), placed.size());
			if (step % 25 == 0)
			{
				expectSound(page);
				for (const auto& [id, r] : placed)
					ASSERT_EQ(page.find(id), r) << "entry " << id << " moved";
			}
		}
		EXPECT_GT(refused, 0) << "the page filled up at times (the refusal property was exercised)";
		EXPECT_GT(page.occupancy(), 0.5);
		for (const auto& [id, r] : placed)
			ASSERT_TRUE(page.remove(id));
		EXPECT_TRUE(page.empty());
		EXPECT_EQ(page.occupancy(), 0.0);
		EXPECT_EQ(page.freeRectangles(), 1u) << "whole again";
		EXPECT_EQ(page.tryAdd(9999, 256, 192), (Rect{0, 0, 256, 192}));
		expectSound(page);
	}
}

TEST(TexturePackingTest, EqualSquaresTileThePageExactly)
{
	TexturePacking page(128, 128);
	for (uint64_t i = 0; i < 64; ++i)
		ASSERT_TRUE(page.tryAdd(i, 16, 16)) << "square " << i;
	EXPECT_EQ(page.occupancy(), 1.0);
	EXPECT_FALSE(page.tryAdd(64, 1, 1)) << "full";
	// Freeing a 2 × 2 block of squares makes room for one 32 × 32 entry exactly there.
	const Rect a = *page.find(0);
	std::vector<uint64_t> block;
	for (const auto& [id, r] : page.entries())
		if (r.x >= a.x && r.x < a.x + 32 && r.y >= a.y && r.y < a.y + 32 && a.x + 32 <= 128 && a.y + 32 <= 128)
			block.push_back(id);
	ASSERT_EQ(block.size(), 4u);
	for (uint64_t id : block)
		page.remove(id);
	EXPECT_EQ(page.tryAdd(100, 32, 32), (Rect{a.x, a.y, 32, 32}));
	EXPECT_FALSE(page.tryAdd(101, 1, 1));
	expectSound(page);
}

TEST(TexturePackingTest, MisuseIsAnsweredPlainly)
{
	TexturePacking page(64, 64);
	EXPECT_FALSE(page.tryAdd(1, 65, 1)) << "wider than the page";
	EXPECT_FALSE(page.tryAdd(1, 1, 65));
	EXPECT_FALSE(page.remove(1)) << "never placed";
	EXPECT_FALSE(page.find(1));
	ASSERT_TRUE(page.tryAdd(1, 64, 64));
	EXPECT_TRUE(page.remove(1));
	EXPECT_FALSE(page.remove(1)) << "removed twice";
}

} // namespace
} // namespace quokka::atlas
