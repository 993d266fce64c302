// ChangeQueue: mutex-protected vector, swapped out by the owner thread (the lock is held only for the swap).
#include <quokka/adaptive/change_queue.hpp>

#include <quokka/adaptive/core.hpp>

namespace quokka::adaptive
{

void ChangeQueue::submit(std::function<void()> change)
{
	std::lock_guard<std::mutex> lock(mutex_);
	queue_.push_back(std::move(change));
}

size_t ChangeQueue::apply()
{
	std::vector<std::function<void()>> run;
	{
		std::lock_guard<std::mutex> lock(mutex_);
		run.swap(queue_);
	}
	if (run.empty())
		return 0;
	// One transaction for the batch; it commits even if a change throws (the exception then propagates and the
	// changes queued after the throwing one are dropped).
	Transaction tx;
	for (auto& f : run)
		f();
	return run.size();
}

size_t ChangeQueue::pending() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return queue_.size();
}

} // namespace quokka::adaptive
