// quokka/gpu/staging.hpp — a staging ring that batches many scattered buffer writes into one copy per destination.
//
// write() copies the bytes into host-visible staging memory at once; flush() records, per destination buffer, one
// vkCmdCopyBuffer whose regions are the pending writes sorted by destination offset — overlapping writes resolved so
// that the later write wins, adjacent ones merged — followed by one barrier. A destination with many short regions
// (scatterAbove()) and Storage usage gets them through one ScatterCopy dispatch instead, whose table is staged with
// the writes: vkCmdCopyBuffer costs the driver CPU time per region. Staging chunks are recycled when the
// list they were flushed into completed. A frame whose writes overflow one chunk costs one copy per (destination,
// chunk) and grows the chunk size to fit the next such frame in one. Owned by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/scatter_copy.hpp>

namespace quokka::gpu
{

class CommandList;

/// Counters of the last flush() (for tests and the frame summary).
struct StagingFlushStats
{
	uint32_t destinations = 0; ///< vkCmdCopyBuffer calls recorded
	uint32_t regions = 0;      ///< VkBufferCopy regions after merging
	uint64_t bytes = 0;        ///< bytes copied (by either path; the scatter's tables not counted)
	uint32_t scatters = 0;     ///< ScatterCopy dispatches recorded
	uint32_t scattered = 0;    ///< regions copied by them
};

class StagingRing
{
public:
	/// `chunk_bytes`: size of each host-visible staging chunk (a larger single write gets its own chunk).
	explicit StagingRing(Device& device, uint64_t chunk_bytes = 4ull << 20);
	~StagingRing();
	StagingRing(const StagingRing&) = delete;
	StagingRing& operator=(const StagingRing&) = delete;

	/// Queues a write of `size` bytes at `dst_offset` of `dst` (which needs TransferDst usage). The bytes are copied
	/// now; `data` may be reused on return. Errors: InvalidArgument (range outside dst), OutOfMemory.
	Result<void> write(const BufferHandle& dst, uint64_t dst_offset, const void* data, uint64_t size);
	template <typename T>
	Result<void> write(const BufferHandle& dst, uint64_t dst_offset, std::span<const T> values)
	{
		return write(dst, dst_offset, values.data(), values.size_bytes());
	}

	/// Records every pending write into `list` and a barrier making them visible to (dst_stages, dst_access).
	/// Returns what was recorded. No-op (and no barrier) when nothing is pending.
	StagingFlushStats flush(CommandList& list, VkPipelineStageFlags2 dst_stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	                        VkAccessFlags2 dst_access = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);

	uint64_t pendingBytes() const { return pending_bytes_; }
	/// A destination's writes from one staging chunk go through the scatter when more than this many of them are at
	/// most 64 KiB long and word-aligned, and the destination has Storage usage (the longer ones are copied). Default
	/// 256 (a dispatch costs about as much driver time as ~100 copy regions); 0 scatters every such group, UINT32_MAX
	/// none (tests compare both).
	uint32_t scatterAbove() const { return scatter_above_; }
	void setScatterAbove(uint32_t regions) { scatter_above_ = regions; }
	/// Current chunk size (grows when a frame overflowed a chunk; halves per frame after smaller ones, down to what
	/// they need and never below the size given at construction).
	uint64_t chunkBytes() const { return chunk_bytes_; }
	/// Host-visible bytes held (in use + free chunks).
	uint64_t stagingBytes() const;

private:
	struct Chunk
	{
		BufferHandle buffer;
		uint64_t cursor = 0;
	};
	struct Region
	{
		uint64_t size;
		const Buffer* src;
		uint64_t src_offset;
	};
	/// A destination's pending regions, non-overlapping. Writes that arrive in ascending destination order (placement
	/// frames, the heap's address-ordered re-packs) append to `ascending`, merging with the previous region when both
	/// ends are contiguous; the first write that does not moves them into `regions`, which resolves overlaps.
	struct Destination
	{
		BufferHandle buffer;
		std::vector<std::pair<uint64_t, Region>> ascending;
		std::map<uint64_t, Region> regions; // dst offset → region, used once the order broke
		bool ordered = true;
	};
	/// One region of a flush: its staging chunk and copy.
	struct Copy
	{
		const Buffer* src;
		VkBufferCopy copy;
	};
	/// The regions of one (destination, staging chunk) pair: copies_[begin, end).
	struct Group
	{
		const Buffer* dst;
		size_t begin, end;
		bool scatter = false; // else one vkCmdCopyBuffer
		StorageRange source, target, table;
		uint32_t count = 0;           // table entries
		uint64_t scattered_bytes = 0; // their bytes
	};

	Result<Chunk*> chunkFor(uint64_t size);
	/// Takes the chunks retired lists gave back and bounds the free ones (see staging.cpp).
	void trimFree();
	/// Decides whether `g` goes through the scatter and, if so, stages its table. False: copy it.
	bool planScatter(Group& g);
	static void insertRegion(Destination& dst, uint64_t offset, Region region);

	Device* device_;
	uint64_t chunk_bytes_;
	uint64_t min_chunk_bytes_;       ///< the size asked for at construction: chunk_bytes_ never shrinks below it
	std::vector<Chunk> active_;      // chunks written since the last flush
	std::vector<BufferHandle> free_; // recycled chunks of chunk_bytes_
	std::unordered_map<uint64_t, Destination> pending_; // by Buffer::id()
	uint64_t last_id_ = 0;                              // the destination of the previous write (0: none)
	Destination* last_ = nullptr;
	std::vector<Copy> copies_;          // flush() scratch, kept for its capacity
	std::vector<VkBufferCopy> regions_; // flush() scratch: one vkCmdCopyBuffer's regions
	std::vector<Group> groups_;         // flush() scratch
	uint32_t scatter_above_ = 256;
	std::optional<ScatterCopy> scatter_; // made by the first flush that scatters
	bool scatter_failed_ = false;        // its pipeline could not be made: copies only
	uint64_t pending_bytes_ = 0;
	std::shared_ptr<std::vector<BufferHandle>> recycle_; // chunks returned by retired lists
};

} // namespace quokka::gpu
