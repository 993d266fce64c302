// scratch_test.cpp — trimScratch: a frame scratch vector gives back what a burst left, and keeps a steady frame's.
#include <gtest/gtest.h>

#include <vector>

#include <quokka/base/scratch.hpp>

namespace
{

TEST(TrimScratch, ABurstsCapacityGoesBackAfterTheFirstQuieterFrame)
{
	std::vector<int> v;
	v.reserve(1 << 20); // a burst: 10^6 changes in one frame
	v.assign(10, 0);    // a quiet frame: 10 changes
	v.clear();
	quokka::trimScratch(v, 10, 1024);
	EXPECT_EQ(v.capacity(), 1024u) << "down to the floor at once";
	v.reserve(1 << 20);
	v.assign(100000, 0); // a quieter frame, but not a quiet one
	v.clear();
	quokka::trimScratch(v, 100000, 1024);
	EXPECT_EQ(v.capacity(), 200000u) << "twice what the frame used";
	v.assign(100000, 0); // the same again: no allocation, no trim
	v.clear();
	quokka::trimScratch(v, 100000, 1024);
	EXPECT_EQ(v.capacity(), 200000u);
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
