// quokka/modes/partition.hpp — records partitioned by slot on the device: GPU routing's last step.
//
// Given one slot index per record (the state its rules give it, as a slot of its bucket) and the records themselves
// (`stride` words each: indirect draw commands, megacall records, …), the partition writes each slot's list of records
// without the CPU reading any of them. Two layouts:
// - **compact**: a histogram of the slots, an exclusive scan of it and a scatter — the records grouped by slot back to
//   back, slot s at records [offsets[s], offsets[s] + counts[s]); needs N records of room and one more dispatch;
// - **regions**: an atomic append into per-slot regions the caller placed ({base, capacity} per slot, in records), so
//   a draw of slot s reads its region at an offset the CPU knows (an indirect-count draw with maxDrawCount = the
//   capacity); counts[s] is how many records asked for slot s — those past the capacity are not written.
// A slot index ≥ the slot count (kNoSlot) drops the record. The order inside a slot is unspecified: compare as
// multisets (partitionCPU is the oracle, in input order). Workgroups rank their records per slot in shared memory and
// reserve each slot's share with one global atomic, so a few hot slots do not serialise the device's atomics (up to
// 1,024 slots; beyond, one global atomic per record). Kernels: shaders/modes/partition_{count,scan,scatter}.comp.
//
//   auto k = modes::PartitionKernel::create(device).value();
//   k.compact(list, {slot_of, records, counts, offsets, cursors, out}, n, stride, slots);
//   // barrier (compute → indirect/vertex), then draw slot s from out at offsets[s] …
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/modes/partition.glsl.h>

namespace quokka::modes
{

inline constexpr uint32_t kNoSlot = QUOKKA_PARTITION_NO_SLOT;
/// The most words a record may have.
inline constexpr uint32_t kMaxRecordWords = QUOKKA_PARTITION_MAX_STRIDE;

/// The buffers of one partition (u32 words each).
struct PartitionBuffers
{
	const gpu::Buffer* slot_of = nullptr; ///< one slot index per record
	const gpu::Buffer* records = nullptr; ///< stride words per record
	const gpu::Buffer* counts = nullptr;  ///< one per slot: written (records per slot)
	/// Compact: one per slot, written (each slot's first record in `out`). Regions: two per slot, read ({base,
	/// capacity} in records).
	const gpu::Buffer* offsets = nullptr;
	const gpu::Buffer* cursors = nullptr; ///< one per slot: scratch
	const gpu::Buffer* out = nullptr;     ///< the slots' records: N (compact) or up to the regions' end (regions)
};

class PartitionKernel
{
public:
	/// Errors: as pipeline creation.
	static Result<PartitionKernel> create(gpu::Device& device);

	/// Records the compact partition of `count` records of `stride` words (1…kMaxRecordWords) into `slots` slots
	/// (≥ 1): clears the counts, counts, scans and scatters, with compute → compute barriers between the steps. The
	/// caller orders the buffers' writes before (compute reads) and the outputs' reads after.
	void compact(gpu::CommandList& list, const PartitionBuffers& b, uint32_t count, uint32_t stride,
	             uint32_t slots) const;
	/// Records the regions partition: cursors from the regions' bases, then the append.
	void regions(gpu::CommandList& list, const PartitionBuffers& b, uint32_t count, uint32_t stride,
	             uint32_t slots) const;

private:
	/// The scan (compact: offsets and cursors from the counts; regions: cursors from the bases), then the scatter.
	void scanAndScatter(gpu::CommandList& list, const PartitionBuffers& b, const detail::PartitionPush& push) const;
	gpu::PipelineHandle count_, scan_, scatter_;
};

/// The oracle: slot s's records (their words, in input order), for every slot.
std::vector<std::vector<uint32_t>> partitionCPU(std::span<const uint32_t> slot_of, std::span<const uint32_t> records,
                                                uint32_t stride, uint32_t slots);

} // namespace quokka::modes
