#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>

#include <algorithm>

namespace quokka::gpu
{

uint64_t nextPowerOfTwo(uint64_t value)
{
	uint64_t p = 1;
	while (p < value)
		p <<= 1;
	return p;
}

Result<GrowBuffer> GrowBuffer::create(Device& device, const GrowBufferDesc& desc)
{
	GrowBuffer g;
	g.device_ = &device;
	g.desc_ = desc;
	g.max_capacity_ = desc.max_capacity ? desc.max_capacity : device.info().max_storage_buffer_range;
	if (desc.min_capacity == 0 || desc.min_capacity > g.max_capacity_)
		return makeError(ErrorCode::InvalidArgument,
		                 "GrowBuffer '" + desc.name + "': minimum capacity " + std::to_string(desc.min_capacity) +
		                     " is 0 or above the maximum " + std::to_string(g.max_capacity_));
	if (desc.lazy)
		return g;
	auto buffer =
	    device.createBuffer({std::min(nextPowerOfTwo(desc.min_capacity), g.max_capacity_),
	                         desc.usage | BufferUsage::TransferSrc | BufferUsage::TransferDst, desc.domain, desc.name});
	if (!buffer.ok())
		return buffer.error();
	g.buffer_ = std::move(buffer.value());
	return g;
}

Result<bool> GrowBuffer::ensure(uint64_t bytes, CommandList& list)
{
	if (bytes <= capacity())
	{
		used_ = std::max(used_, bytes);
		return false;
	}
	if (bytes > max_capacity_)
		return makeError(ErrorCode::OutOfMemory, "GrowBuffer '" + desc_.name + "' needs " + std::to_string(bytes) +
		                                             " bytes but its maximum is " + std::to_string(max_capacity_));
	const uint64_t new_capacity =
	    std::min(max_capacity_, std::max({nextPowerOfTwo(bytes), capacity() * 2, nextPowerOfTwo(desc_.min_capacity)}));
	auto grown = device_->createBuffer(
	    {new_capacity, desc_.usage | BufferUsage::TransferSrc | BufferUsage::TransferDst, desc_.domain, desc_.name});
	if (!grown.ok())
		return grown.error();
	BufferHandle old = buffer_;
	if (old && used_ > 0)
	{
		if (!desc_.caller_barriers)
			list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
		copyBuffer(list.vk(), *old, 0, *grown.value(), 0, used_);
		if (!desc_.caller_barriers)
			list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
			                   VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
	}
	if (old)
		list.keepAlive(old); // the copy reads it
	buffer_ = std::move(grown.value());
	used_ = bytes;
	++grow_count_;
	// Copy the list: a listener may add or remove listeners.
	auto listeners = listeners_;
	for (auto& [id, fn] : listeners)
		fn(old, buffer_);
	return true;
}

void GrowBuffer::setUsed(uint64_t bytes)
{
	QUOKKA_ASSERT(bytes <= capacity(), "GrowBuffer::setUsed beyond capacity");
	used_ = bytes;
}

void GrowBuffer::release(CommandList& list)
{
	if (buffer_)
		list.keepAlive(buffer_); // destroyed once the list completed
	buffer_.reset();
	used_ = 0;
}

uint32_t GrowBuffer::addListener(ResizeListener listener)
{
	listeners_.emplace_back(next_listener_, std::move(listener));
	return next_listener_++;
}

void GrowBuffer::removeListener(uint32_t id)
{
	std::erase_if(listeners_, [id](const auto& entry) { return entry.first == id; });
}

} // namespace quokka::gpu
