#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>

namespace quokka::gpu
{

CommandList::CommandList(CommandList&& other) noexcept
    : device_(other.device_), cmd_(other.cmd_), keep_alive_(std::move(other.keep_alive_)),
      on_retire_(std::move(other.on_retire_))
{
	other.device_ = nullptr;
	other.cmd_ = VK_NULL_HANDLE;
}

CommandList& CommandList::operator=(CommandList&& other) noexcept
{
	if (this != &other)
	{
		this->~CommandList();
		new (this) CommandList(std::move(other));
	}
	return *this;
}

CommandList::~CommandList()
{
	if (!cmd_ || !device_)
		return;
	// Dropped without submit: nothing reached the GPU, so the list can be recycled and its retirements run now.
	vkEndCommandBuffer(cmd_);
	vkResetCommandBuffer(cmd_, 0);
	std::vector<std::shared_ptr<const void>> keep;
	std::vector<std::function<void()>> retire;
	releaseTo(keep, retire);
	keep.clear();
	for (auto& fn : retire)
		fn();
	device_->recycleUnsubmitted(cmd_);
	cmd_ = VK_NULL_HANDLE;
}

void CommandList::releaseTo(std::vector<std::shared_ptr<const void>>& keep, std::vector<std::function<void()>>& retire)
{
	keep = std::move(keep_alive_);
	retire = std::move(on_retire_);
	keep_alive_.clear();
	on_retire_.clear();
}

void CommandList::barrier(const VkMemoryBarrier2* memory, uint32_t memory_count, const VkBufferMemoryBarrier2* buffers,
                          uint32_t buffer_count, const VkImageMemoryBarrier2* images, uint32_t image_count)
{
	VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
	dep.memoryBarrierCount = memory_count;
	dep.pMemoryBarriers = memory;
	dep.bufferMemoryBarrierCount = buffer_count;
	dep.pBufferMemoryBarriers = buffers;
	dep.imageMemoryBarrierCount = image_count;
	dep.pImageMemoryBarriers = images;
	vkCmdPipelineBarrier2(cmd_, &dep);
}

void CommandList::memoryBarrier(VkPipelineStageFlags2 src_stages, VkAccessFlags2 src_access,
                                VkPipelineStageFlags2 dst_stages, VkAccessFlags2 dst_access)
{
	VkMemoryBarrier2 b = memoryBarrier2(src_stages, src_access, dst_stages, dst_access);
	barrier(&b, 1);
}

VkMemoryBarrier2 memoryBarrier2(VkPipelineStageFlags2 src_stages, VkAccessFlags2 src_access,
                                VkPipelineStageFlags2 dst_stages, VkAccessFlags2 dst_access)
{
	VkMemoryBarrier2 b{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
	b.srcStageMask = src_stages;
	b.srcAccessMask = src_access;
	b.dstStageMask = dst_stages;
	b.dstAccessMask = dst_access;
	return b;
}

} // namespace quokka::gpu
