// withStackHeadroom: deep recursion continues on fresh segments; results, exceptions and the thread's own stack.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include <quokka/base/stack_guard.hpp>

namespace
{

/// Plain recursion through the guard: each level keeps a 256-byte frame alive across the nested call.
uint64_t depthSum(uint64_t n)
{
	if (n == 0)
		return 0;
	volatile char frame[256];
	frame[0] = char(n);
	uint64_t below = 0;
	quokka::withStackHeadroom([&] { below = depthSum(n - 1); });
	return below + n + uint64_t(frame[0] != char(n));
}

uint64_t throwAtTheBottom(uint64_t n)
{
	if (n == 0)
		throw std::runtime_error("bottom");
	volatile char frame[256];
	frame[0] = 1;
	uint64_t below = 0;
	quokka::withStackHeadroom([&] { below = throwAtTheBottom(n - 1); });
	return below + uint64_t(frame[0]);
}

} // namespace

TEST(StackGuard, RecursionFarDeeperThanTheThreadStackCompletes)
{
	// 200,000 levels of > 256 bytes each: > 50 MB of frames, several times the 8 MiB default stack.
	const auto before = quokka::stackSegmentStats();
	const uint64_t n = 200000;
	EXPECT_EQ(depthSum(n), n * (n + 1) / 2);
	const auto after = quokka::stackSegmentStats();
	EXPECT_GE(after.peak, 3u) << "the frames spanned several segments at once";
	EXPECT_GT(after.switches, before.switches);
	EXPECT_EQ(after.depth, 0u);
	EXPECT_LE(after.cached, 4u) << "at most four free segments are kept";
}

TEST(StackGuard, AnExceptionCrossesEverySegmentAndTheNextRunWorks)
{
	EXPECT_THROW(throwAtTheBottom(150000), std::runtime_error);
	EXPECT_EQ(quokka::stackSegmentStats().depth, 0u);
	EXPECT_EQ(depthSum(150000), uint64_t(150000) * 150001 / 2);
}

TEST(StackGuard, ShallowCallsRunInPlace)
{
	const auto before = quokka::stackSegmentStats();
	EXPECT_EQ(depthSum(100), 5050u);
	EXPECT_EQ(quokka::stackSegmentStats().switches, before.switches);
}
