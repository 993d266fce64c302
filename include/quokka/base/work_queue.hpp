// quokka/base/work_queue.hpp — a small pool of worker threads running jobs in submission order.
//
// What the renderers move off the frame path (pipeline creation) runs here. Jobs must not touch state owned by the
// submitting thread except through what they were given (results are handed back through the job's own
// synchronisation). The destructor drops jobs not started yet and waits for the running ones; hold() parks the
// workers before their next job (tests use it to observe frames while compiles are outstanding).
//
//   base::WorkQueue q(2);
//   q.submit([&] { expensive(); });
//   q.waitIdle(); // every submitted job has run
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace quokka::base
{

class WorkQueue
{
public:
	/// `threads` workers (at least one). Throws std::system_error when a thread cannot be started (those started are
	/// stopped first).
	explicit WorkQueue(uint32_t threads);
	~WorkQueue();
	WorkQueue(const WorkQueue&) = delete;
	WorkQueue& operator=(const WorkQueue&) = delete;

	void submit(std::function<void()> job);
	/// Blocks until no job is queued or running. Must not be called while held (it would wait forever): asserts.
	void waitIdle();
	/// While held, workers start no new job (running ones finish).
	void hold(bool held);
	/// Jobs queued or running.
	uint32_t outstanding() const;
	/// The number of workers a queue for background compiles uses on this host: one less than the hardware threads
	/// (the owner thread keeps one), at least one, at most `cap`.
	static uint32_t defaultThreads(uint32_t cap = 8);

private:
	void work();
	void stop(); ///< drops queued jobs, waits for running ones, joins the workers
	mutable std::mutex mutex_;
	std::condition_variable wake_; ///< workers: a job arrived, the hold ended, or stop
	std::condition_variable idle_; ///< waitIdle(): the last outstanding job finished
	std::deque<std::function<void()>> jobs_;
	uint32_t running_ = 0;
	bool held_ = false;
	bool stop_ = false;
	std::vector<std::thread> threads_;
};

} // namespace quokka::base
