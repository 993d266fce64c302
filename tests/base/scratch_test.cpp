// scratch_test.cpp — trimScratch: a frame scratch vector gives back what a burst left, and keeps a steady frame's.
#include <gtest/gtest.h>

#include <vector>

#include <quokka/base/scratch.hpp>

namespace
{

TEST(TrimScratch, ABurstsCapacityHalvesPerQuietFrameDownToTheFloor)
{
	std::vector<int> v;
	v.reserve(1 << 20); // a burst: 10^6 changes in one frame
	std::vector<size_t> capacities;
	for (int frame = 0; frame < 12; ++frame)
	{
		v.assign(10, 0); // quiet frames: 10 changes each
		v.clear();
		quokka::trimScratch(v, 10, 1024);
		capacities.push_back(v.capacity());
	}
	EXPECT_EQ(capacities.front(), size_t(1) << 19);
	EXPECT_EQ(capacities[9], 1024u) << "2^20 halves to the floor in ten frames";
	EXPECT_EQ(capacities.back(), 1024u) << "never below the floor";
}

TEST(TrimScratch, SteadyFramesKeepTheirCapacityAndAFullVectorIsLeftAlone)
{
	std::vector<int> v;
	v.reserve(40000);
	const size_t kept = v.capacity();
	for (int frame = 0; frame < 5; ++frame)
	{
		v.assign(10000, 0); // every frame uses a quarter or more of it: no reallocation from one frame to the next
		v.clear();
		quokka::trimScratch(v, 10000, 1024);
		EXPECT_EQ(v.capacity(), kept);
	}
	v.assign(10, 0);
	quokka::trimScratch(v, 0, 1024);
	EXPECT_EQ(v.size(), 10u) << "only an emptied vector is trimmed";
	EXPECT_EQ(v.capacity(), kept);
}

} // namespace
