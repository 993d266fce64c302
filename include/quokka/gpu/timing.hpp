// quokka/gpu/timing.hpp — frame timing: GPU timestamps where reliable, the wall clock otherwise, and it says which.
//
// FrameTimer writes a timestamp pair around recorded work. resolve() (after the submission completed) returns GPU
// milliseconds when the device's timestamps are trusted (real GPUs) and wall-clock milliseconds from end() to
// resolve() otherwise (lavapipe): the submission, its execution and the wait, not the CPU work of recording it — with
// `source` telling which one `ms` is.
#pragma once

#include <chrono>
#include <cstdint>

#include <quokka/gpu/vk.hpp>

namespace quokka::gpu
{

class Device;
class CommandList;

enum class TimingSource
{
	Gpu,  ///< VK timestamps × timestampPeriod
	Wall, ///< host steady clock from end() (recording done) to resolve(): submission + execution + wait
};

const char* timingSourceName(TimingSource source);

struct FrameTiming
{
	double ms = 0.0;
	TimingSource source = TimingSource::Wall;
	double gpu_ms = -1.0; ///< the raw timestamp difference even when not trusted; -1 when unavailable
	double wall_ms = 0.0;
};

class FrameTimer
{
public:
	explicit FrameTimer(Device& device);
	~FrameTimer();
	FrameTimer(const FrameTimer&) = delete;
	FrameTimer& operator=(const FrameTimer&) = delete;

	/// Resets the query pair and writes the first timestamp.
	void begin(CommandList& list);
	/// Writes the second timestamp; starts the wall clock (recording is done, the submission comes next).
	void end(CommandList& list);
	/// Reads the result; the submission holding begin()/end() must have completed.
	Result<FrameTiming> resolve();

	TimingSource source() const { return reliable_ ? TimingSource::Gpu : TimingSource::Wall; }

private:
	Device* device_;
	VkQueryPool pool_ = VK_NULL_HANDLE;
	bool reliable_ = false;
	bool recorded_ = false;
	std::chrono::steady_clock::time_point wall_start_; ///< end(), else begin()
};

} // namespace quokka::gpu
