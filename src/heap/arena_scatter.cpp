// ArenaScatter: a table of regions copied by one dispatch (kernel: shaders/heap/arena_scatter.comp).
#include <quokka/heap/arena_scatter.hpp>

#include "heap_shaders.hpp"
#include "storage_bindings.hpp"

#include <algorithm>

#include <quokka/base/assert.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>

namespace quokka::heap
{

static_assert(sizeof(ScatterRegion) == 16 && sizeof(detail::ArenaScatterPush) == 16,
              "the scatter's region and push constants are 4 tightly packed u32");

Result<ArenaScatter> ArenaScatter::create(gpu::Device& device)
{
	ArenaScatter scatter;
	QUOKKA_TRY_ASSIGN(pipeline, device.createComputePipeline(
	                                {.spirv = shaders::kArenaScatterComp.span(), .name = "heap.arena_scatter"}));
	// STYLE R9: the reflected push-constant block must be the struct of arena_scatter.glsl.h.
	QUOKKA_ASSERT(pipeline->pushConstantSize() == sizeof(detail::ArenaScatterPush),
	              "arena_scatter.comp push constants differ from ArenaScatterPush");
	VkPhysicalDeviceProperties properties;
	vkGetPhysicalDeviceProperties(device.physicalDevice(), &properties);
	scatter.alignment_ = std::max<uint64_t>(properties.limits.minStorageBufferOffsetAlignment, 4);
	scatter.max_range_ = properties.limits.maxStorageBufferRange;
	scatter.pipeline_ = std::move(pipeline);
	return scatter;
}

void ArenaScatter::record(gpu::CommandList& list, const StorageRange& source, const StorageRange& target,
                          const StorageRange& table, uint32_t count) const
{
	if (count == 0)
		return;
	for ([[maybe_unused]] const StorageRange* r : {&source, &target, &table})
		QUOKKA_ASSERT(r->buffer && r->offset % alignment_ == 0 && r->range % 4 == 0 && r->range > 0 &&
		                  r->range <= max_range_ && r->offset + r->range <= r->buffer->size(),
		              "ArenaScatter::record: a range is misaligned, empty, too long or outside its buffer");
	QUOKKA_ASSERT(uint64_t(count) * sizeof(ScatterRegion) <= table.range, "ArenaScatter::record: table too short");
	list.keepAlive(pipeline_);
	pipeline_->bind(list);
	detail::pushStorageBuffers(list, *pipeline_,
	                           {{source.buffer, source.offset, source.range},
	                            {target.buffer, target.offset, target.range},
	                            {table.buffer, table.offset, table.range}});
	const detail::ArenaScatterPush push{count, 0, 0, 0};
	pipeline_->pushConstants(list, &push, sizeof(push));
	// One row of workgroups, each looping over the table (shaders/heap/arena_scatter.comp).
	const uint32_t groups = std::min(count, list.device().info().max_compute_work_group_count[0]);
	vkCmdDispatch(list.vk(), groups, 1, 1);
}

} // namespace quokka::heap
