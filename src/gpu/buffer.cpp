#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/device.hpp>

#include "internal.hpp"

#include <atomic>
#include <cstring>

namespace quokka::gpu
{

namespace
{
std::atomic<uint64_t> g_next_object_id{1};

VkBufferUsageFlags toVk(BufferUsage usage)
{
	VkBufferUsageFlags flags = 0;
	if (hasFlag(usage, BufferUsage::Storage))
		flags |= VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
	if (hasFlag(usage, BufferUsage::Uniform))
		flags |= VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
	if (hasFlag(usage, BufferUsage::Index))
		flags |= VK_BUFFER_USAGE_INDEX_BUFFER_BIT;
	if (hasFlag(usage, BufferUsage::Vertex))
		flags |= VK_BUFFER_USAGE_VERTEX_BUFFER_BIT;
	if (hasFlag(usage, BufferUsage::Indirect))
		flags |= VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
	if (hasFlag(usage, BufferUsage::TransferSrc))
		flags |= VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
	if (hasFlag(usage, BufferUsage::TransferDst))
		flags |= VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	if (hasFlag(usage, BufferUsage::DeviceAddress))
		flags |= VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
	return flags;
}
} // namespace

uint64_t nextGpuObjectId()
{
	return g_next_object_id.fetch_add(1, std::memory_order_relaxed);
}

Result<BufferHandle> Device::createBuffer(const BufferDesc& desc)
{
	if (desc.size == 0)
		return makeError(ErrorCode::InvalidArgument, "buffer '" + desc.name + "' has size 0");
	if (hasFlag(desc.usage, BufferUsage::DeviceAddress) && !features_.buffer_device_address)
		return makeError(ErrorCode::MissingFeature, "buffer '" + desc.name + "' wants a device address but " +
		                                                info_.name + " lacks bufferDeviceAddress");

	std::shared_ptr<Buffer> buffer(new Buffer());
	buffer->device_ = this;
	buffer->size_ = desc.size;
	buffer->domain_ = desc.domain;
	buffer->usage_ = desc.usage;
	buffer->name_ = desc.name;
	buffer->id_ = nextGpuObjectId();

	VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
	info.size = desc.size;
	info.usage = toVk(desc.usage);
	info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	QUOKKA_VK_TRY(vkCreateBuffer(device_, &info, nullptr, &buffer->buffer_));

	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(device_, buffer->buffer_, &req);
	VkMemoryPropertyFlags required = 0, preferred = 0;
	switch (desc.domain)
	{
	case MemoryDomain::DeviceLocal:
		preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
		break;
	case MemoryDomain::Upload:
		required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
		break;
	case MemoryDomain::Readback:
		required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
		preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
		break;
	case MemoryDomain::DeviceMapped:
		required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
		           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
		break;
	}
	const uint32_t type = findMemoryType(req.memoryTypeBits, required, preferred);
	if (type == UINT32_MAX)
	{
		vkDestroyBuffer(device_, buffer->buffer_, nullptr);
		buffer->buffer_ = VK_NULL_HANDLE;
		return makeError(ErrorCode::OutOfMemory, "no memory type fits buffer '" + desc.name + "'");
	}
	VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
	flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
	VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
	alloc.allocationSize = req.size;
	alloc.memoryTypeIndex = type;
	if (hasFlag(desc.usage, BufferUsage::DeviceAddress))
		alloc.pNext = &flags;
	VkResult result = vkAllocateMemory(device_, &alloc, nullptr, &buffer->memory_);
	if (result != VK_SUCCESS)
	{
		vkDestroyBuffer(device_, buffer->buffer_, nullptr);
		buffer->buffer_ = VK_NULL_HANDLE;
		return makeError(ErrorCode::OutOfMemory, "cannot allocate " + std::to_string(req.size) + " bytes for buffer '" +
		                                             desc.name + "': " + vkResultName(result));
	}
	buffer->allocation_size_ = req.size;
	account(true, 1, int64_t(req.size));
	QUOKKA_VK_TRY(vkBindBufferMemory(device_, buffer->buffer_, buffer->memory_, 0));
	const VkMemoryPropertyFlags props = memory_props_.memoryTypes[type].propertyFlags;
	buffer->coherent_ = (props & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
	if (desc.domain != MemoryDomain::DeviceLocal)
	{
		void* ptr = nullptr;
		QUOKKA_VK_TRY(vkMapMemory(device_, buffer->memory_, 0, VK_WHOLE_SIZE, 0, &ptr));
		buffer->mapped_ = static_cast<std::byte*>(ptr);
	}
	if (hasFlag(desc.usage, BufferUsage::DeviceAddress))
	{
		VkBufferDeviceAddressInfo addr{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
		addr.buffer = buffer->buffer_;
		buffer->address_ = vkGetBufferDeviceAddress(device_, &addr);
	}
	setDebugName(VK_OBJECT_TYPE_BUFFER, uint64_t(buffer->buffer_), desc.name.c_str());
	return BufferHandle(std::move(buffer));
}

Buffer::~Buffer()
{
	if (!device_ || !buffer_)
		return;
	if (memory_)
		device_->account(true, -1, -int64_t(allocation_size_));
	VkDevice dev = device_->vk();
	VkBuffer buffer = buffer_;
	VkDeviceMemory memory = memory_;
	// Deferred: submissions made so far may still read or write this buffer. Freeing a large allocation takes
	// milliseconds (the driver returns its pages), and so does freeing host-visible memory of a few MiB on some
	// drivers (it unpins its pages — behind the large frees, which hold the driver's lock): off the thread that
	// dropped it.
	auto destroy = [dev, buffer, memory]
	{
		vkDestroyBuffer(dev, buffer, nullptr);
		if (memory)
			vkFreeMemory(dev, memory, nullptr);
	};
	constexpr uint64_t kOffThreadBytes = 16ull << 20, kOffThreadMappedBytes = 1ull << 20;
	if (allocation_size_ >= (mapped_ ? kOffThreadMappedBytes : kOffThreadBytes))
		device_->destroyOffThread(std::move(destroy));
	else
		device_->destroyLater(std::move(destroy));
}

void Buffer::flush(uint64_t offset, uint64_t size) const
{
	if (!mapped_ || coherent_)
		return;
	(void)offset; // whole allocation: always nonCoherentAtomSize-aligned, and host-visible buffers are small
	(void)size;
	VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
	range.memory = memory_;
	range.offset = 0;
	range.size = VK_WHOLE_SIZE;
	vkFlushMappedMemoryRanges(device_->vk(), 1, &range);
}

void Buffer::invalidate(uint64_t offset, uint64_t size) const
{
	if (!mapped_ || coherent_)
		return;
	(void)offset;
	(void)size;
	VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
	range.memory = memory_;
	range.offset = 0;
	range.size = VK_WHOLE_SIZE;
	vkInvalidateMappedMemoryRanges(device_->vk(), 1, &range);
}

Result<BufferHandle> createUploadBuffer(Device& device, const void* data, uint64_t size, BufferUsage usage,
                                        std::string name)
{
	auto buffer = device.createBuffer({size, usage, MemoryDomain::Upload, std::move(name)});
	if (!buffer.ok())
		return buffer.error();
	std::memcpy(buffer.value()->mapped(), data, size);
	buffer.value()->flush();
	return buffer;
}

void copyBuffer(VkCommandBuffer cmd, const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                uint64_t size)
{
	QUOKKA_ASSERT(src_offset + size <= src.size() && dst_offset + size <= dst.size(), "copyBuffer out of range");
	VkBufferCopy region{src_offset, dst_offset, size};
	vkCmdCopyBuffer(cmd, src.vk(), dst.vk(), 1, &region);
}

} // namespace quokka::gpu
