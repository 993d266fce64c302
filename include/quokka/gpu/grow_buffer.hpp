// quokka/gpu/grow_buffer.hpp — a device buffer that grows by powers of two and keeps its live prefix.
//
// For device tables whose size follows the scene and whose content must survive growth: the heap's arena chunks are
// GrowBuffers. Capacity is max(min_capacity, next power of two ≥ the request, twice the old capacity), capped by
// max_capacity (a clear OutOfMemory error beyond it). On growth the first `used()` bytes are copied GPU-side into the
// new buffer in the caller's command list, listeners are told (old, new) so they can rebind, and the old buffer is
// destroyed once that list completed. A lazy buffer has no memory until its first ensure(); release() gives the memory
// back (a table that emptied).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <quokka/gpu/buffer.hpp>

namespace quokka::gpu
{

class CommandList;

struct GrowBufferDesc
{
	uint64_t min_capacity = 64 * 1024; ///< bytes, > 0; rounded up to a power of two
	uint64_t max_capacity = 0;         ///< bytes; 0 = the device's maxStorageBufferRange
	BufferUsage usage = BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst;
	std::string name = "GrowBuffer";
	/// No buffer until the first ensure() (capacity() 0 until then): for tables that may stay empty.
	bool lazy = false;
	/// ensure() records its growth copy without barriers: the caller orders it — after earlier work on the old buffer,
	/// before later use of the new one — e.g. with one pair of barriers for several buffers grown in one list.
	bool caller_barriers = false;
	/// Where its buffers live: DeviceLocal, or DeviceMapped for a table the host also writes in place.
	MemoryDomain domain = MemoryDomain::DeviceLocal;
};

/// A growable device-local buffer. Owned by one thread.
class GrowBuffer
{
public:
	/// Called after growth with the old and the new buffer (the old one stays valid until the list completes; null at
	/// the first growth of a lazy or released buffer).
	using ResizeListener = std::function<void(const BufferHandle& old_buffer, const BufferHandle& new_buffer)>;

	/// Creates the buffer at min_capacity rounded up to a power of two (at most max_capacity), or none when lazy.
	/// Errors: InvalidArgument (min 0 or above max), OutOfMemory.
	static Result<GrowBuffer> create(Device& device, const GrowBufferDesc& desc);

	/// Makes the first `bytes` addressable. Grows when bytes > capacity(): copies the first used() bytes in `list`
	/// (with a transfer barrier before and after), fires listeners, returns true. used() becomes max(used(), bytes).
	/// Errors: OutOfMemory naming the buffer, the request and the maximum.
	Result<bool> ensure(uint64_t bytes, CommandList& list);
	/// Declares how many leading bytes are live (copied on growth); ≤ capacity().
	void setUsed(uint64_t bytes);
	/// Gives the buffer back once the work recorded in `list` completed; capacity() and used() become 0 and the next
	/// ensure() makes a new buffer.
	void release(CommandList& list);

	const BufferHandle& buffer() const { return buffer_; }
	uint64_t capacity() const { return buffer_ ? buffer_->size() : 0; }
	uint64_t used() const { return used_; }
	uint64_t maxCapacity() const { return max_capacity_; }
	uint32_t growCount() const { return grow_count_; }

	/// Registers a listener; returns an id for removeListener().
	uint32_t addListener(ResizeListener listener);
	void removeListener(uint32_t id);

private:
	Device* device_ = nullptr;
	GrowBufferDesc desc_;
	BufferHandle buffer_;
	uint64_t used_ = 0;
	uint64_t max_capacity_ = 0;
	uint32_t grow_count_ = 0;
	uint32_t next_listener_ = 1;
	std::vector<std::pair<uint32_t, ResizeListener>> listeners_;
};

/// Smallest power of two ≥ max(value, 1).
uint64_t nextPowerOfTwo(uint64_t value);

} // namespace quokka::gpu
