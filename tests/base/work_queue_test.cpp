// WorkQueue: every submitted job runs once, waitIdle() waits for all of them, hold() parks the workers, and a queue
// destroyed with jobs outstanding drops the ones not started.
#include <quokka/base/work_queue.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace
{

using quokka::base::WorkQueue;

TEST(WorkQueue, RunsEveryJobOnceAndWaitIdleWaitsForAll)
{
	WorkQueue q(3);
	std::atomic<int> sum{0};
	for (int i = 1; i <= 1000; ++i)
		q.submit([&sum, i] { sum += i; });
	q.waitIdle();
	EXPECT_EQ(sum.load(), 500500);
	EXPECT_EQ(q.outstanding(), 0u);
}

TEST(WorkQueue, HeldWorkersStartNothingUntilReleased)
{
	WorkQueue q(2);
	q.hold(true);
	std::atomic<int> ran{0};
	for (int i = 0; i < 5; ++i)
		q.submit([&] { ++ran; });
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	EXPECT_EQ(ran.load(), 0);
	EXPECT_EQ(q.outstanding(), 5u);
	q.hold(false);
	q.waitIdle();
	EXPECT_EQ(ran.load(), 5);
}

TEST(WorkQueue, DestructionDropsJobsNotStarted)
{
	std::atomic<int> ran{0};
	{
		WorkQueue q(1);
		q.hold(true);
		for (int i = 0; i < 4; ++i)
			q.submit([&] { ++ran; });
	}
	EXPECT_EQ(ran.load(), 0);
}

TEST(WorkQueue, DefaultThreadsStayWithinTheCap)
{
	EXPECT_GE(WorkQueue::defaultThreads(4), 1u);
	EXPECT_LE(WorkQueue::defaultThreads(4), 4u);
	EXPECT_EQ(WorkQueue::defaultThreads(0), 1u);
}

} // namespace
