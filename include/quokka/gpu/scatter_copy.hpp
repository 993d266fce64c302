// quokka/gpu/scatter_copy.hpp — copies many small regions from one buffer into another with one compute dispatch.
//
// Scattered writes of a frame — the heap's objects returning to the holes of others, edited uniforms, records moved by
// removals — are one region each, and vkCmdCopyBuffer costs the driver CPU time per region (~0.25 µs on the H200
// host's NVIDIA driver: 22,000 regions took 4–7 ms to record, docs/benchmarks.md). The scatter reads a table of
// regions instead — 16 bytes written per region, one dispatch. Users: the heap's arena pages and StagingRing.
// Layouts: include/quokka/gpu/scatter_copy.glsl.h.
#pragma once

#include <cstdint>

#include <quokka/gpu/scatter_copy.glsl.h>

#include <quokka/base/result.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/pipeline.hpp>

namespace quokka::gpu
{
class CommandList;
class Device;

using ScatterRegion = detail::ScatterCopyRegion;

/// A buffer range bound as a storage buffer: `offset` a multiple of ScatterCopy::offsetAlignment(), `range` a
/// multiple of 4 and at most ScatterCopy::maxRange().
struct StorageRange
{
	const Buffer* buffer = nullptr;
	uint64_t offset = 0;
	uint64_t range = 0;
};

class ScatterCopy
{
public:
	/// Errors: as Device::createComputePipeline.
	static Result<ScatterCopy> create(Device& device);

	/// Regions longer than this stay with vkCmdCopyBuffer, which streams them (a region is one workgroup's loop here).
	static constexpr uint64_t kMaxRegionBytes = 64ull << 10;
	/// Whether `r` may go through the scatter: word-aligned on both sides and at most kMaxRegionBytes long.
	static bool scatterable(const VkBufferCopy& r)
	{
		return r.size <= kMaxRegionBytes && (r.srcOffset | r.dstOffset | r.size) % 4 == 0;
	}

	/// minStorageBufferOffsetAlignment (at least 4).
	uint64_t offsetAlignment() const { return alignment_; }
	/// maxStorageBufferRange.
	uint64_t maxRange() const { return max_range_; }

	/// Records one dispatch copying the `count` regions of `table` (ScatterRegion each, words counted from the starts
	/// of the bound ranges) from `source` to `target`. Regions must not overlap in the target (their order is not
	/// defined) and must lie inside the ranges. The caller records the barriers: the source and the table visible to
	/// compute-shader reads, the target's earlier accesses ordered before compute-shader writes, and the writes made
	/// visible to what reads them. Keeps its pipeline alive with the list; the buffers are the caller's.
	void record(CommandList& list, const StorageRange& source, const StorageRange& target, const StorageRange& table,
	            uint32_t count) const;

private:
	ScatterCopy() = default;

	PipelineHandle pipeline_;
	uint64_t alignment_ = 4;
	uint64_t max_range_ = 0;
};

} // namespace quokka::gpu
