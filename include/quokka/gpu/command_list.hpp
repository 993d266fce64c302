// quokka/gpu/command_list.hpp — a recording command buffer plus what must live until its submission completed.
//
// Obtained from Device::beginCommands(), consumed by Device::submit(). Move-only. Objects recorded into it are kept
// alive with keepAlive(); onRetire() callbacks run once the submission completed (staging memory recycling).
// Sync2 barrier helpers return filled structs; `barrier()` records them.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <quokka/gpu/vk.hpp>

namespace quokka::gpu
{

class Device;

/// A command buffer in the recording state.
class CommandList
{
public:
	CommandList() = default;
	CommandList(Device* device, VkCommandBuffer cmd) : device_(device), cmd_(cmd) {}
	CommandList(CommandList&& other) noexcept;
	CommandList& operator=(CommandList&& other) noexcept;
	CommandList(const CommandList&) = delete;
	CommandList& operator=(const CommandList&) = delete;
	~CommandList();

	VkCommandBuffer vk() const { return cmd_; }
	Device& device() const { return *device_; }
	bool valid() const { return cmd_ != VK_NULL_HANDLE; }

	/// Keeps `object` alive until this list's submission completed.
	void keepAlive(std::shared_ptr<const void> object) { keep_alive_.push_back(std::move(object)); }
	/// Runs `fn` once this list's submission completed (or when the list is dropped unsubmitted).
	void onRetire(std::function<void()> fn) { on_retire_.push_back(std::move(fn)); }

	/// Records one vkCmdPipelineBarrier2 with the given barriers.
	void barrier(const VkMemoryBarrier2* memory, uint32_t memory_count, const VkBufferMemoryBarrier2* buffers = nullptr,
	             uint32_t buffer_count = 0, const VkImageMemoryBarrier2* images = nullptr, uint32_t image_count = 0);
	/// A global memory barrier from (src stages, access) to (dst stages, access).
	void memoryBarrier(VkPipelineStageFlags2 src_stages, VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
	                   VkAccessFlags2 dst_access);

private:
	friend class Device;
	void releaseTo(std::vector<std::shared_ptr<const void>>& keep, std::vector<std::function<void()>>& retire);

	Device* device_ = nullptr;
	VkCommandBuffer cmd_ = VK_NULL_HANDLE;
	std::vector<std::shared_ptr<const void>> keep_alive_;
	std::vector<std::function<void()>> on_retire_;
};

/// A filled VkMemoryBarrier2.
VkMemoryBarrier2 memoryBarrier2(VkPipelineStageFlags2 src_stages, VkAccessFlags2 src_access,
                                VkPipelineStageFlags2 dst_stages, VkAccessFlags2 dst_access);

} // namespace quokka::gpu
