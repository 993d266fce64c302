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
	{
		std::lock_guard<std::mutex> lock(mutex_);
		draining_.swap(queue_);
	}
	size_t n = draining_.size();
	if (n > 0)
	{
		Transaction tx;
		for (auto& f : draining_)
			f();
	}
	draining_.clear();
	return n;
}

size_t ChangeQueue::pending() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return queue_.size();
}

} // namespace quokka::adaptive
