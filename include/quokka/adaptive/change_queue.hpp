// quokka/adaptive/change_queue.hpp — the one thread-safe entry point of an adaptive graph.
//
// A graph belongs to one owner thread (core.hpp). Other threads never touch its objects: they submit closures that
// perform changes (cval writes, cset adds, …) and the owner applies them, in submission order and inside one
// Transaction, at a point it chooses (typically the start of a frame). Closures run on the owner thread, so they may
// use any graph object captured by value; capturing a handle copies a non-atomic refcount, so build the closure's
// captures on the owner thread or capture plain data only.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace quokka::adaptive
{

/// Multi-producer, single-consumer queue of pending changes.
class ChangeQueue
{
public:
	/// Queues `change` for the owner thread. Any thread; never blocks for long (one mutex, no graph work).
	void submit(std::function<void()> change);
	/// Runs every queued change in submission order inside one Transaction (their marks commit together) and returns
	/// how many ran. Owner thread only. Changes submitted while apply() runs wait for the next call. If a change
	/// throws, the transaction still commits, the exception propagates and the rest of that batch is dropped.
	size_t apply();
	/// Number of queued changes (a snapshot; any thread).
	size_t pending() const;

private:
	mutable std::mutex mutex_;
	std::vector<std::function<void()>> queue_;
};

} // namespace quokka::adaptive
