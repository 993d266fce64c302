// PartitionKernel (partition.hpp): the three partition kernels recorded in order, and the CPU oracle.
#include <quokka/modes/partition.hpp>

#include "modes_shaders.hpp"

#include <quokka/base/assert.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>

namespace quokka::modes
{

static_assert(sizeof(detail::PartitionPush) == 16, "the partition's push constants are 4 tightly packed u32");

namespace
{

void computeToCompute(gpu::CommandList& list)
{
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
}

/// Workgroups for a grid-stride kernel over `count` records: enough to fill the device, never more than the records.
uint32_t groupsFor(gpu::CommandList& list, uint32_t count)
{
	const uint64_t wanted = (uint64_t(count) + QUOKKA_PARTITION_GROUP - 1) / QUOKKA_PARTITION_GROUP;
	const uint64_t cap = std::min<uint64_t>(list.device().info().max_compute_work_group_count[0], 4096);
	return uint32_t(std::max<uint64_t>(1, std::min(wanted, cap)));
}

} // namespace

Result<PartitionKernel> PartitionKernel::create(gpu::Device& device)
{
	PartitionKernel k;
	QUOKKA_TRY_ASSIGN(count, device.createComputePipeline(
	                             {.spirv = shaders::kPartitionCountComp.span(), .name = "modes.partition_count"}));
	QUOKKA_TRY_ASSIGN(scan, device.createComputePipeline(
	                            {.spirv = shaders::kPartitionScanComp.span(), .name = "modes.partition_scan"}));
	QUOKKA_TRY_ASSIGN(scatter, device.createComputePipeline({.spirv = shaders::kPartitionScatterComp.span(),
	                                                         .name = "modes.partition_scatter"}));
	for ([[maybe_unused]] const gpu::PipelineHandle* p : {&count, &scan, &scatter})
		QUOKKA_ASSERT((*p)->pushConstantSize() == sizeof(detail::PartitionPush),
		              "a partition kernel's push constants differ from PartitionPush");
	k.count_ = std::move(count);
	k.scan_ = std::move(scan);
	k.scatter_ = std::move(scatter);
	return k;
}

void PartitionKernel::compact(gpu::CommandList& list, const PartitionBuffers& b, uint32_t count, uint32_t stride,
                              uint32_t slots) const
{
	QUOKKA_ASSERT(stride >= 1 && stride <= kMaxRecordWords && slots >= 1, "PartitionKernel: bad stride or slots");
	const detail::PartitionPush push{count, stride, slots, 0};
	list.keepAlive(count_);
	vkCmdFillBuffer(list.vk(), b.counts->vk(), 0, uint64_t(slots) * 4, 0);
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	if (count > 0)
	{
		count_->bind(list);
		gpu::pushStorageBuffers(list, *count_, {{b.slot_of}, {b.counts}});
		count_->pushConstants(list, &push, sizeof(push));
		vkCmdDispatch(list.vk(), groupsFor(list, count), 1, 1);
		computeToCompute(list);
	}
	scanAndScatter(list, b, push);
}

void PartitionKernel::regions(gpu::CommandList& list, const PartitionBuffers& b, uint32_t count, uint32_t stride,
                              uint32_t slots) const
{
	QUOKKA_ASSERT(stride >= 1 && stride <= kMaxRecordWords && slots >= 1, "PartitionKernel: bad stride or slots");
	scanAndScatter(list, b, detail::PartitionPush{count, stride, slots, 1});
}

void PartitionKernel::scanAndScatter(gpu::CommandList& list, const PartitionBuffers& b,
                                     const detail::PartitionPush& push) const
{
	list.keepAlive(scan_);
	list.keepAlive(scatter_);
	scan_->bind(list);
	gpu::pushStorageBuffers(list, *scan_, {{b.counts}, {b.offsets}, {b.cursors}});
	scan_->pushConstants(list, &push, sizeof(push));
	vkCmdDispatch(list.vk(), 1, 1, 1);
	computeToCompute(list);
	if (push.count == 0)
		return;
	scatter_->bind(list);
	gpu::pushStorageBuffers(list, *scatter_, {{b.slot_of}, {b.records}, {b.cursors}, {b.out}, {b.counts}, {b.offsets}});
	scatter_->pushConstants(list, &push, sizeof(push));
	vkCmdDispatch(list.vk(), groupsFor(list, push.count), 1, 1);
}

std::vector<std::vector<uint32_t>> partitionCPU(std::span<const uint32_t> slot_of, std::span<const uint32_t> records,
                                                uint32_t stride, uint32_t slots)
{
	std::vector<std::vector<uint32_t>> out(slots);
	for (size_t i = 0; i < slot_of.size(); ++i)
		if (slot_of[i] < slots)
			out[slot_of[i]].insert(out[slot_of[i]].end(), records.begin() + i * stride,
			                       records.begin() + (i + 1) * stride);
	return out;
}

} // namespace quokka::modes
