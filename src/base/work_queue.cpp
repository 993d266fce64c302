// WorkQueue (work_queue.hpp): a mutex, two condition variables and a deque.
#include <quokka/base/work_queue.hpp>

#include <algorithm>

#include <quokka/base/assert.hpp>

namespace quokka::base
{

WorkQueue::WorkQueue(uint32_t threads)
{
	threads_.reserve(std::max(threads, 1u));
	try
	{
		for (uint32_t i = 0; i < std::max(threads, 1u); ++i)
			threads_.emplace_back([this] { work(); });
	}
	catch (...)
	{
		stop(); // (the threads started so far; no destructor runs after a throwing constructor)
		throw;
	}
}

WorkQueue::~WorkQueue()
{
	stop();
}

void WorkQueue::stop()
{
	{
		std::lock_guard lock(mutex_);
		stop_ = true;
		jobs_.clear();
	}
	wake_.notify_all();
	for (std::thread& t : threads_)
		t.join();
}

void WorkQueue::submit(std::function<void()> job)
{
	{
		std::lock_guard lock(mutex_);
		jobs_.push_back(std::move(job));
	}
	wake_.notify_one();
}

void WorkQueue::waitIdle()
{
	std::unique_lock lock(mutex_);
	QUOKKA_ASSERT(!held_ || jobs_.empty(), "WorkQueue::waitIdle() on a held queue with queued jobs never returns");
	idle_.wait(lock, [&] { return jobs_.empty() && running_ == 0; });
}

void WorkQueue::hold(bool held)
{
	{
		std::lock_guard lock(mutex_);
		held_ = held;
	}
	wake_.notify_all();
}

uint32_t WorkQueue::outstanding() const
{
	std::lock_guard lock(mutex_);
	return uint32_t(jobs_.size()) + running_;
}

uint32_t WorkQueue::defaultThreads(uint32_t cap)
{
	const uint32_t hw = std::thread::hardware_concurrency();
	return std::clamp(hw > 1 ? hw - 1 : 1u, 1u, std::max(cap, 1u));
}

void WorkQueue::work()
{
	std::unique_lock lock(mutex_);
	for (;;)
	{
		wake_.wait(lock, [&] { return stop_ || (!held_ && !jobs_.empty()); });
		if (stop_)
			return;
		std::function<void()> job = std::move(jobs_.front());
		jobs_.pop_front();
		++running_;
		lock.unlock();
		job();
		job = nullptr; // (its captures go before the job counts as done)
		lock.lock();
		if (--running_ == 0 && jobs_.empty())
			idle_.notify_all();
	}
}

} // namespace quokka::base
