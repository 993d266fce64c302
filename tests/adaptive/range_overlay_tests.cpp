// overlayRange (quokka/base/range_overlay.hpp): the newer write wins over a map of non-overlapping ranges. Checked
// against a byte model — every byte remembers which write holds it and where in that write — after each of thousands
// of random writes, including the exact pieces kept of a range overwritten in its middle.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include <quokka/base/range_overlay.hpp>

namespace quokka
{
namespace
{

/// A staged write: `size` bytes that wait at `src` in write `id`'s source.
struct Piece
{
	uint32_t size;
	uint32_t id;
	uint32_t src;
	bool operator==(const Piece&) const = default;
};

uint32_t sizeOf(const Piece& p)
{
	return p.size;
}
Piece slice(const Piece& p, uint32_t skip, uint32_t size)
{
	return Piece{size, p.id, p.src + skip};
}

TEST(RangeOverlay, AWriteInsideAnOlderOneKeepsBothEnds)
{
	std::map<uint32_t, Piece> live;
	EXPECT_FALSE(overlayRange(live, 100u, Piece{50, 1, 1000}, sizeOf, slice));
	EXPECT_TRUE(overlayRange(live, 120u, Piece{10, 2, 0}, sizeOf, slice));
	const std::map<uint32_t, Piece> expected{
	    {100, Piece{20, 1, 1000}}, {120, Piece{10, 2, 0}}, {130, Piece{20, 1, 1030}}};
	EXPECT_EQ(live, expected);
}

TEST(RangeOverlay, AWriteOverSeveralOlderOnesReplacesWhatItCovers)
{
	std::map<uint32_t, Piece> live;
	EXPECT_FALSE(overlayRange(live, 0u, Piece{10, 1, 0}, sizeOf, slice));
	EXPECT_FALSE(overlayRange(live, 10u, Piece{10, 2, 0}, sizeOf, slice));
	EXPECT_FALSE(overlayRange(live, 30u, Piece{10, 3, 0}, sizeOf, slice));
	EXPECT_FALSE(overlayRange(live, 20u, Piece{5, 4, 0}, sizeOf, slice)); // touching is not overlapping
	EXPECT_TRUE(overlayRange(live, 5u, Piece{30, 5, 7}, sizeOf, slice));
	const std::map<uint32_t, Piece> expected{{0, Piece{5, 1, 0}}, {5, Piece{30, 5, 7}}, {35, Piece{5, 3, 5}}};
	EXPECT_EQ(live, expected);
}

TEST(RangeOverlay, RandomWritesMatchAByteModel)
{
	constexpr uint32_t kSpace = 512;
	struct Byte
	{
		uint32_t id = 0; ///< 0: never written
		uint32_t src = 0;
	};
	std::vector<Byte> model(kSpace);
	std::map<uint32_t, Piece> live;
	std::mt19937 rng(11);
	for (uint32_t id = 1; id <= 4000; ++id)
	{
		const uint32_t offset = rng() % kSpace;
		const uint32_t size = 1 + rng() % std::min<uint32_t>(kSpace - offset, id % 7 == 0 ? 200 : 24);
		const uint32_t src = rng() % 100000;
		bool covered = false;
		for (uint32_t b = offset; b < offset + size; ++b)
		{
			covered |= model[b].id != 0;
			model[b] = {id, src + (b - offset)};
		}
		ASSERT_EQ(overlayRange(live, offset, Piece{size, id, src}, sizeOf, slice), covered) << "write " << id;
		// The map tiles exactly the written bytes, without overlaps, each byte from the write that holds it.
		std::vector<Byte> seen(kSpace);
		uint32_t previous_end = 0;
		for (const auto& [at, p] : live)
		{
			ASSERT_GE(at, previous_end) << "ranges overlap after write " << id;
			ASSERT_GT(p.size, 0u);
			ASSERT_LE(at + p.size, kSpace);
			for (uint32_t b = 0; b < p.size; ++b)
				seen[at + b] = {p.id, p.src + b};
			previous_end = at + p.size;
		}
		for (uint32_t b = 0; b < kSpace; ++b)
		{
			ASSERT_EQ(seen[b].id, model[b].id) << "byte " << b << " after write " << id;
			ASSERT_EQ(seen[b].src, model[b].src) << "byte " << b << " after write " << id;
		}
	}
}

} // namespace
} // namespace quokka
