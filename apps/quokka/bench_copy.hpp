// bench_copy.hpp — timing recorded GPU work and the device's copy bandwidth, the reference the benchmarks measure
// GPU movers against (bench meshlet's compaction and clones, bench camera's derive kernel).
#pragma once

#include <cstdint>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/timing.hpp>

#include "render_common.hpp"

namespace quokka::app
{

/// Records `record` into a fresh list between FrameTimer marks, submits, waits and returns milliseconds.
template <typename Fn>
Result<double> timed(gpu::Device& device, gpu::FrameTimer& timer, Fn&& record)
{
	auto list = device.beginCommands();
	if (!list.ok())
		return list.error();
	timer.begin(list.value());
	QUOKKA_TRY(record(list.value()));
	timer.end(list.value());
	QUOKKA_TRY(device.submitAndWait(std::move(list.value())));
	auto t = timer.resolve();
	if (!t.ok())
		return t.error();
	device.completedValue();
	return t->ms;
}

/// GB/s of `bytes` moved by `record`, median of `reps` timed runs after one warm-up run.
template <typename Record>
Result<double> medianRate(gpu::Device& device, gpu::FrameTimer& timer, uint64_t bytes, uint32_t reps, Record&& record)
{
	std::vector<double> gbs;
	for (uint32_t rep = 0; rep < reps + 1; ++rep)
	{
		auto ms = timed(device, timer, record);
		if (!ms.ok())
			return ms.error();
		if (rep > 0)
			gbs.push_back(double(bytes) / (ms.value() * 1e6));
	}
	return median(gbs);
}

/// Bytes per second of one vkCmdCopyBuffer of `bytes` between two device-local buffers (median; first run warms up).
Result<double> copyBandwidth(gpu::Device& device, gpu::FrameTimer& timer, uint64_t bytes, uint32_t reps);
/// Bytes per second of a grid-stride compute copy (uvec4 per invocation and iteration) of `bytes` between two
/// device-local buffers: the memory-bound reference a compute-based mover is measured against.
Result<double> computeCopyBandwidth(gpu::Device& device, gpu::FrameTimer& timer, uint64_t bytes, uint32_t reps);

} // namespace quokka::app
