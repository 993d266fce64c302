// Private to quokka_heap: writes a compute kernel's storage-buffer bindings of set 0 with one push-descriptor call
// (Pipeline::pushBuffer would record one per binding). Used by the megacall scan and the arena scatter.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include <quokka/base/assert.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/pipeline.hpp>

namespace quokka::heap::detail
{

/// One storage-buffer binding of set 0, in binding order.
struct Binding
{
	const gpu::Buffer* buffer;
	uint64_t offset = 0;
	uint64_t range = VK_WHOLE_SIZE;
};

inline void pushStorageBuffers(gpu::CommandList& list, const gpu::Pipeline& pipeline,
                               std::initializer_list<Binding> bindings)
{
	std::array<VkDescriptorBufferInfo, 8> infos{};
	std::array<VkWriteDescriptorSet, 8> writes{};
	QUOKKA_ASSERT(bindings.size() <= infos.size(), "pushStorageBuffers: too many bindings");
	uint32_t count = 0;
	for (const Binding& binding : bindings)
	{
		infos[count] = {binding.buffer->vk(), binding.offset, binding.range};
		VkWriteDescriptorSet& write = writes[count];
		write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
		write.dstBinding = count;
		write.descriptorCount = 1;
		write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
		write.pBufferInfo = &infos[count];
		++count;
	}
	pipeline.pushDescriptors(list, {writes.data(), count});
}

} // namespace quokka::heap::detail
