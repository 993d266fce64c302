// bulk_convert.hpp — the vertex and index conversions of a frame that places many objects, run on worker threads
// (internal to quokka::heap).
//
// Placing an object stages its buffers converted to the arena's layout (attribute_convert.hpp). That conversion is
// pure — source bytes in, the frame's staged bytes out — while everything around it (adaptive reads, pool lookups,
// allocation) belongs to the thread that owns the scene. In a bulk frame (HeapTuning::bulk_placement_above) the owner
// allocates and stages each block's header as before but queues the conversion of its data; queued conversions go to
// the workers in groups while the owner places the objects after them, and end() waits for the last group before
// anything reads the staging pages (upload). A conversion whose placement is rolled back (a full chunk) still runs:
// it writes its own staged span, which a later write of the same block overrides (Chunk::takeCopies) or which lands
// in free space — as the inline conversion did. (A bulk frame also has its staging pages made ahead on another thread:
// HostPages::setAhead.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <quokka/base/work_queue.hpp>

#include "attribute_convert.hpp"

namespace quokka::heap::detail
{

class BulkConvert
{
public:
	/// One conversion: `layout.data_bytes` bytes into `out` from `src`, a view of `format` read as `type`.
	struct Job
	{
		std::shared_ptr<const std::vector<std::byte>> keep; ///< the source's storage, alive until the job ran
		const std::byte* src;
		uint32_t* out;
		ArenaLayout layout;
		fx::Type type;
		VkFormat format;
		bool index;
	};
	/// Queued conversions go to a worker once they hold this many bytes (a group costs the workers a wake-up and the
	/// owner a lock: ~1 µs against ~50 µs of conversion).
	static constexpr uint64_t kGroupBytes = 256ull << 10;

	/// Starts a bulk frame with `threads` workers (at least one; the pool is made on first use and kept). While active,
	/// the heap queues its conversions here. False (and not active) when no worker thread could be started.
	bool begin(uint32_t threads);
	bool active() const { return active_; }
	/// Queues `job` (its conversion known to succeed: convertible()).
	void add(Job&& job)
	{
		bytes_ += job.layout.data_bytes;
		group_bytes_ += job.layout.data_bytes;
		pending_.push_back(std::move(job));
		if (group_bytes_ >= kGroupBytes)
			submit();
	}
	/// Hands the queued conversions to the workers, waits for all of them and ends the bulk frame.
	void end();
	/// Bytes converted on the workers since begin().
	uint64_t bytes() const { return bytes_; }

private:
	void submit();

	std::unique_ptr<base::WorkQueue> pool_;
	uint32_t workers_ = 0; ///< the pool's (0 before the first bulk frame)
	std::vector<Job> pending_;
	uint64_t bytes_ = 0, group_bytes_ = 0;
	bool active_ = false;
};

} // namespace quokka::heap::detail
