// ScatterCopy: a table of regions copied by one dispatch (kernel: shaders/gpu/scatter_copy.comp).
#include <quokka/gpu/scatter_copy.hpp>

#include "gpu_shaders.hpp"

#include <algorithm>

#include <quokka/base/assert.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>

namespace quokka::gpu
{

static_assert(sizeof(ScatterRegion) == 16 && sizeof(detail::ScatterCopyPush) == 16,
              "the scatter's region and push constants are 4 tightly packed u32");

Result<ScatterCopy> ScatterCopy::create(Device& device)
{
	ScatterCopy scatter;
	QUOKKA_TRY_ASSIGN(pipeline, device.createComputePipeline(
	                                {.spirv = shaders::kScatterCopyComp.span(), .name = "gpu.scatter_copy"}));
	// The reflected push-constant block must be the struct of scatter_copy.glsl.h (one definition for C++ and GLSL).
	QUOKKA_ASSERT(pipeline->pushConstantSize() == sizeof(detail::ScatterCopyPush),
	              "scatter_copy.comp push constants differ from ScatterCopyPush");
	VkPhysicalDeviceProperties properties;
	vkGetPhysicalDeviceProperties(device.physicalDevice(), &properties);
	scatter.alignment_ = std::max<uint64_t>(properties.limits.minStorageBufferOffsetAlignment, 4);
	scatter.max_range_ = properties.limits.maxStorageBufferRange;
	scatter.pipeline_ = std::move(pipeline);
	return scatter;
}

void ScatterCopy::record(CommandList& list, const StorageRange& source, const StorageRange& target,
                         const StorageRange& table, uint32_t count) const
{
	if (count == 0)
		return;
	for ([[maybe_unused]] const StorageRange* r : {&source, &target, &table})
		QUOKKA_ASSERT(r->buffer && r->offset % alignment_ == 0 && r->range % 4 == 0 && r->range > 0 &&
		                  r->range <= max_range_ && r->offset + r->range <= r->buffer->size(),
		              "ScatterCopy::record: a range is misaligned, empty, too long or outside its buffer");
	QUOKKA_ASSERT(uint64_t(count) * sizeof(ScatterRegion) <= table.range, "ScatterCopy::record: table too short");
	list.keepAlive(pipeline_);
	pipeline_->bind(list);
	pushStorageBuffers(list, *pipeline_,
	                   {{source.buffer, source.offset, source.range},
	                    {target.buffer, target.offset, target.range},
	                    {table.buffer, table.offset, table.range}});
	const detail::ScatterCopyPush push{count, 0, 0, 0};
	pipeline_->pushConstants(list, &push, sizeof(push));
	// One row of workgroups, each looping over the table (shaders/gpu/scatter_copy.comp).
	const uint32_t groups = std::min(count, list.device().info().max_compute_work_group_count[0]);
	vkCmdDispatch(list.vk(), groups, 1, 1);
}

} // namespace quokka::gpu
