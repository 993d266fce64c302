// quokka/gpu/buffer.hpp — GPU buffers: a Desc with intent enums, a move-only Buffer owned through BufferHandle.
//
// Memory domains say what the CPU does with the buffer: DeviceLocal (GPU only; filled through staging),
// Upload (host-visible, written by the CPU, read by the GPU), Readback (host-visible and cached, written by the
// GPU) and DeviceMapped (device-local memory the CPU writes directly: resizable BAR, unified memory). Host-visible
// buffers stay mapped for their whole life. Destruction is deferred until the GPU is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <quokka/gpu/vk.hpp>

namespace quokka::gpu
{

class Device;

/// Where a buffer lives, by what the CPU does with it.
enum class MemoryDomain
{
	DeviceLocal,
	Upload,
	Readback,
	/// Device-local and host-visible, coherent memory (the whole VRAM with resizable BAR, all memory on unified-memory
	/// devices and lavapipe; DeviceInfo::host_visible_device_local_bytes says how much): the GPU reads it at device
	/// speed and the host writes it in place, without a staged copy. The host only writes it (on discrete GPUs the
	/// mapping is write-combined: reads are uncached). Errors where the device has no such memory type.
	DeviceMapped,
};

/// What the GPU does with a buffer. Combine with `|`.
enum class BufferUsage : uint32_t
{
	None = 0,
	Storage = 1u << 0,
	Uniform = 1u << 1,
	Index = 1u << 2,
	Vertex = 1u << 3,
	Indirect = 1u << 4,
	TransferSrc = 1u << 5,
	TransferDst = 1u << 6,
	DeviceAddress = 1u << 7, ///< needs DeviceFeatures::buffer_device_address
};
constexpr BufferUsage operator|(BufferUsage a, BufferUsage b)
{
	return BufferUsage(uint32_t(a) | uint32_t(b));
}
constexpr bool hasFlag(BufferUsage set, BufferUsage flag)
{
	return (uint32_t(set) & uint32_t(flag)) != 0;
}

/// Everything needed to create a buffer.
struct BufferDesc
{
	uint64_t size = 0; ///< bytes, > 0
	BufferUsage usage = BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst;
	MemoryDomain domain = MemoryDomain::DeviceLocal;
	std::string name; ///< debug name (validation messages, dumps)
};

/// A VkBuffer with its own memory. Created by Device::createBuffer; shared through BufferHandle.
class Buffer
{
public:
	~Buffer();
	Buffer(const Buffer&) = delete;
	Buffer& operator=(const Buffer&) = delete;

	VkBuffer vk() const { return buffer_; }
	uint64_t size() const { return size_; }
	MemoryDomain domain() const { return domain_; }
	BufferUsage usage() const { return usage_; }
	const std::string& name() const { return name_; }
	/// Monotonic id, unique for the life of the process (cache keys).
	uint64_t id() const { return id_; }
	/// Persistently mapped pointer for Upload, Readback and DeviceMapped buffers; nullptr for DeviceLocal ones.
	std::byte* mapped() const { return mapped_; }
	/// Device address when created with BufferUsage::DeviceAddress, else 0.
	VkDeviceAddress address() const { return address_; }
	/// Makes CPU writes visible to the device (no-op on coherent memory) / device writes visible to the CPU.
	void flush(uint64_t offset = 0, uint64_t size = VK_WHOLE_SIZE) const;
	void invalidate(uint64_t offset = 0, uint64_t size = VK_WHOLE_SIZE) const;

private:
	friend class Device;
	Buffer() = default;

	Device* device_ = nullptr;
	VkBuffer buffer_ = VK_NULL_HANDLE;
	VkDeviceMemory memory_ = VK_NULL_HANDLE;
	uint64_t size_ = 0;
	uint64_t allocation_size_ = 0;
	MemoryDomain domain_ = MemoryDomain::DeviceLocal;
	BufferUsage usage_ = BufferUsage::None;
	std::byte* mapped_ = nullptr;
	bool coherent_ = true;
	VkDeviceAddress address_ = 0;
	uint64_t id_ = 0;
	std::string name_;
};

using BufferHandle = std::shared_ptr<Buffer>;

/// Creates a host-visible (Upload) buffer holding a copy of `size` bytes of `data`: for small per-frame tables a
/// kernel reads straight from host memory (work lists, patch lists). Errors as Device::createBuffer.
Result<BufferHandle> createUploadBuffer(Device& device, const void* data, uint64_t size, BufferUsage usage,
                                        std::string name);

/// Records a copy of `size` bytes between two buffers (one region).
void copyBuffer(VkCommandBuffer cmd, const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                uint64_t size);

} // namespace quokka::gpu
