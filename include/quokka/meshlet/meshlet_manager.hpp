// quokka/meshlet/meshlet_manager.hpp — GPU memory for batches of meshlets: a data buffer (4-byte words) and a
// metadata buffer (one 64-byte record per meshlet), each sub-allocated by its own OffsetAllocator.
//
// The C++/Vulkan form of meep-engine 3.13's GPUMeshletManager: batches are added,
// removed and cloned at any time; compaction and growth rebuild both buffers on the GPU; pending work (uploads,
// clones, moves) names batches, not addresses, and is resolved when update() records it, so a clone queued before a
// compaction or a growth lands at the batches' new addresses (the 3.13 fix). Offsets are valid the moment a call
// returns; the bytes behind them are valid once the command list passed to the next update() has executed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <quokka/base/offset_allocator.hpp>
#include <quokka/base/result.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/meshlet/meshlet_record.hpp>

namespace quokka::gpu
{
class CommandList;
class Pipeline;
class StagingRing;
} // namespace quokka::gpu

namespace quokka::meshlet
{

/// Generational id of a batch: a stale id (removed batch, other manager) is recognised, never misused.
struct BatchId
{
	uint32_t index = kNoSpace;
	uint32_t generation = 0;
	uint32_t owner = 0; ///< process-unique id of the manager that issued it

	bool valid() const { return index != kNoSpace; }
	bool operator==(const BatchId&) const = default;
};

/// Where a batch lives. Offsets are in units of the buffers: words for data, records for metadata.
struct BatchPlacement
{
	uint32_t data_offset = 0; ///< first payload word in dataBuffer()
	uint32_t data_words = 0;
	uint32_t record_offset = 0; ///< first record in metadataBuffer(): the batch's global meshlet id base
	uint32_t meshlet_count = 0;
};

/// One `changed` event: a batch whose data or record offset moved in a compaction or growth.
struct BatchMove
{
	BatchId id;
	BatchPlacement before;
	BatchPlacement after;
};

/// How update() records GPU→GPU copies.
enum class CopyPath
{
	Auto,     ///< Compute on GPUs, Transfer on CPU implementations (lavapipe: a copy command is a memcpy)
	Transfer, ///< vkCmdCopyBuffer, one region per run of neighbouring batches
	Compute,  ///< copy_regions.comp: every region in 16 KiB chunks, one dispatch per buffer pair
};

/// Creation parameters. Defaults are meep's (32 MiB of data words, 131,072 records, growth max(request, step, ×1.25)).
struct MeshletManagerDesc
{
	uint32_t initial_data_words = 8u << 20; ///< 8 Mi words = 32 MiB
	uint32_t initial_records = 128u << 10;  ///< 131,072 records × 64 B = 8 MiB
	uint32_t data_growth_step = 16u << 10;  ///< minimum growth: 16 Ki words = 64 KiB
	uint32_t record_growth_step = 256;      ///< minimum growth: 256 records = 16 KiB
	double growth_factor = 1.25;            ///< growth is at least ×1.25 of the current capacity
	std::string name = "meshlets";          ///< debug name prefix of the buffers
	CopyPath copy_path = CopyPath::Auto;    ///< how update() records GPU→GPU copies
};

/// Counters and sizes for telemetry, tests and the debug dump.
struct MeshletMemoryStats
{
	uint64_t data_capacity_bytes = 0;
	uint64_t record_capacity_bytes = 0;
	uint64_t data_used_bytes = 0;   ///< Σ batch data words × 4
	uint64_t record_used_bytes = 0; ///< Σ batch meshlets × 64
	StorageReport data;             ///< allocator report, data buffer (units: words)
	StorageReport records;          ///< allocator report, metadata buffer (units: records)
	uint32_t batches = 0;
	uint64_t meshlets = 0;
	uint32_t pending_uploads = 0;
	uint32_t pending_clones = 0;
	uint32_t pending_moves = 0;  ///< batches whose bytes still sit in a buffer replaced by a rebuild
	uint32_t retiring_frees = 0; ///< removed ranges waiting for the GPU before they are reusable
	uint64_t compactions = 0;
	uint64_t growths = 0;
	uint64_t layout_version = 0; ///< +1 per rebuild (buffer objects replaced)
};

/// What the last update() recorded.
struct MeshletUpdateStats
{
	uint64_t copied_bytes = 0;    ///< GPU→GPU copies (moves after a rebuild, clones)
	uint64_t uploaded_bytes = 0;  ///< staged from the CPU (new batches)
	uint32_t copy_regions = 0;    ///< copy regions after merging neighbours
	uint32_t copy_dispatches = 0; ///< compute copy dispatches (CopyPath::Compute), else 0
	uint32_t patches = 0;         ///< records re-addressed (by the compute copy or the patch dispatch)
};

namespace detail
{
/// One GPU→GPU copy of update(): bytes, and the delta added to the address word of every record it copies (0 for
/// payload data).
struct CopyRegion
{
	VkBufferCopy copy;
	uint32_t address_delta = 0;
};
} // namespace detail

/// The meshlet memory manager. Owned by one thread; destroy before its Device.
///
/// Lifecycle per frame: any number of addBatch / removeBatch / cloneBatchAllocation / compact / grow calls, then
/// update(list) on the frame's command list *before* recording work that reads the buffers, then submit. A rebuild
/// (compact, grow, or a failed allocation) replaces both buffer objects at once (layoutVersion() changes): re-read
/// dataBuffer()/metadataBuffer() after update(). Command lists that recorded the old buffers keep them alive
/// themselves (keepAlive), as the drawing helpers do.
///
/// Rule for removing a batch that a pending clone reads: allowed. The clone still receives the source's bytes; the
/// source's id is invalid at once, and its ranges return to the allocators only after the command list of the next
/// update() — the one recording the clone's copy — completed on the GPU. Removing a pending clone cancels its copy.
class MeshletManager
{
public:
	/// Creates both buffers and the copy/patch pipelines. Errors: InvalidArgument (zero or too large capacities for
	/// maxStorageBufferRange), OutOfMemory, ShaderCompile/Vulkan from pipeline creation.
	static Result<std::unique_ptr<MeshletManager>> create(gpu::Device& device, const MeshletManagerDesc& desc = {});
	~MeshletManager();
	MeshletManager(const MeshletManager&) = delete;
	MeshletManager& operator=(const MeshletManager&) = delete;

	/// add_batch: allocates `batch.data.size()` words and `batch.records.size()` records and queues their upload, the
	/// records' `address` rebased by the batch's data offset. On allocation failure it compacts (when anything was
	/// removed since the last rebuild) or grows, up to three attempts as meep-engine 3.13 does. Errors:
	/// InvalidArgument (an empty batch, or a record address outside the data), OutOfMemory (capacity beyond the device
	/// limit).
	Result<BatchId> addBatch(const MeshletBatch& batch);
	/// remove_batch: frees both ranges (deferred, see the class comment). False for an id this manager does not own
	/// (never issued, already removed, or from another manager).
	bool removeBatch(BatchId id);
	/// clone_batch_allocation: allocates a copy of `source` at once (offsets valid on return, may trigger a rebuild)
	/// and queues the GPU copy plus address patch for the next update(). Errors: InvalidArgument for a stale
	/// `source`, or as addBatch.
	Result<BatchId> cloneBatchAllocation(BatchId source);

	/// Records every pending operation into `list`: moves of batches out of buffers replaced by a rebuild and queued
	/// clones as buffer copies (same-buffer copies for clones), new batches through the staging ring, then ONE patch
	/// dispatch for every record whose address changed, the patch count as a push constant, then a barrier to all
	/// later commands. No-op when nothing is pending. Errors: OutOfMemory (staging, patch list).
	Result<void> update(gpu::CommandList& list);

	/// Defragments: rebuilds both buffers at their current capacity, live batches packed in insertion order.
	Result<void> compact();
	/// Grows: a side with a non-zero request grows to max(current + request, current + step, ⌈current × factor⌉);
	/// both buffers are rebuilt. No-op when both requests are 0. Errors: OutOfMemory beyond maxStorageBufferRange.
	Result<void> grow(uint32_t extra_data_words, uint32_t extra_records);

	/// True while `id` names a live batch of this manager.
	bool contains(BatchId id) const;
	/// Current placement of a live batch; all zero for an id contains() rejects.
	BatchPlacement placement(BatchId id) const;
	/// The batch's records as added (batch-local addresses; clones share their source's).
	std::span<const MeshletRecord> originalRecords(BatchId id) const;
	/// Live batches in insertion order (= compaction order).
	std::vector<BatchId> batches() const;

	const gpu::BufferHandle& dataBuffer() const { return data_buffer_; }
	const gpu::BufferHandle& metadataBuffer() const { return record_buffer_; }
	uint32_t dataCapacityWords() const { return data_allocator_.size(); }
	uint32_t recordCapacity() const { return record_allocator_.size(); }
	uint64_t layoutVersion() const { return stats_.layout_version; }
	/// Switches the copy path for later update() calls (benchmarks compare both in one run).
	void setCopyPath(CopyPath path) { desc_.copy_path = path; }
	/// The path update() uses now (Auto resolved).
	CopyPath copyPath() const;

	/// Sets the `changed` listener, called once per batch whose data or record offset moved in a rebuild (meep fired
	/// on data moves only; record moves change global meshlet ids, so they are reported too). Called after the
	/// rebuild completed on the CPU, so the listener may query placements; it must not add, remove or clone.
	void setChangedListener(std::function<void(const BatchMove&)> listener) { changed_ = std::move(listener); }

	/// gpu_memory_usage: capacity of both buffers in bytes.
	uint64_t gpuMemoryUsage() const;
	/// gpu_memory_usage_occupied: bytes held by live batches in both buffers (meep counted data only).
	uint64_t gpuMemoryUsageOccupied() const;
	MeshletMemoryStats stats() const;
	const MeshletUpdateStats& lastUpdate() const { return last_update_; }
	/// The debug dump: one JSON object with capacities, allocator reports, every batch {id, state, placement,
	/// clone-of}, free regions of both allocators and pending operations.
	std::string debugDump() const;
	/// CPU invariants: both allocators validate, every live batch owns allocations of its sizes, pending clones
	/// name live or retiring sources. Tests call it after every operation.
	Result<void> validate() const;

private:
	enum class SlotState : uint8_t
	{
		Free,
		Live,
		Retiring, ///< removed while a pending clone still reads it
	};
	enum class Content : uint8_t
	{
		Upload, ///< bytes still on the CPU (pending_data)
		Clone,  ///< bytes to be copied from `origin`
		Gpu,    ///< bytes at `location` (possibly in a buffer replaced by a rebuild: a pending move)
	};
	struct Location
	{
		gpu::BufferHandle data;
		gpu::BufferHandle records;
		uint32_t data_offset = 0; ///< the records there hold addresses relative to this offset
		uint32_t record_offset = 0;
	};
	struct Slot
	{
		uint32_t generation = 0;
		SlotState state = SlotState::Free;
		Content content = Content::Upload;
		uint32_t origin = kNoSpace; ///< slot read by a pending clone
		uint32_t readers = 0;       ///< pending clones reading this slot
		uint64_t sequence = 0;      ///< insertion order
		Allocation data;
		Allocation records;
		uint32_t data_words = 0;
		uint32_t meshlet_count = 0;
		std::shared_ptr<const std::vector<MeshletRecord>> originals;
		std::shared_ptr<const std::vector<uint32_t>> pending_data;
		Location location;
	};
	struct PendingFree
	{
		Allocation data;
		Allocation records;
		uint64_t epoch = 0;
	};

	MeshletManager(gpu::Device& device, const MeshletManagerDesc& desc);
	Result<void> init();
	struct UpdateWork;
	Result<void> gatherWork(UpdateWork& work);
	Result<void> recordWork(gpu::CommandList& list, UpdateWork& work);
	Result<void> recordComputeCopy(gpu::CommandList& list, const gpu::Buffer& src, const gpu::Buffer& dst,
	                               std::span<const detail::CopyRegion> regions);
	Result<gpu::BufferHandle> createStorage(uint64_t bytes, const char* what);
	Result<void> allocatePair(uint32_t data_words, uint32_t records, Allocation& data, Allocation& record);
	void drainRetired();
	Result<void> rebuild(uint32_t data_words, uint32_t records, bool growth);
	uint32_t acquireSlot();
	void releaseSlot(uint32_t index);
	void dropReader(uint32_t origin);
	const Slot* live(BatchId id) const;
	BatchId idOf(uint32_t index) const { return {index, slots_[index].generation, owner_}; }
	BatchPlacement placementOf(const Slot& slot) const;
	/// The slot indices of the live batches in insertion order (sequence).
	std::vector<uint32_t> liveInInsertionOrder() const;

	gpu::Device* device_;
	MeshletManagerDesc desc_;
	uint32_t owner_;
	OffsetAllocator data_allocator_;
	OffsetAllocator record_allocator_;
	gpu::BufferHandle data_buffer_;
	gpu::BufferHandle record_buffer_;
	gpu::PipelineHandle patch_pipeline_;
	gpu::PipelineHandle copy_pipeline_;
	std::unique_ptr<gpu::StagingRing> staging_;
	std::vector<Slot> slots_;
	std::vector<uint32_t> free_slots_;
	uint64_t next_sequence_ = 0;
	uint32_t live_count_ = 0;
	uint32_t released_since_rebuild_ = 0;
	uint64_t epoch_ = 0; ///< +1 per rebuild: frees of an older epoch belong to a discarded allocator
	std::vector<PendingFree> frees_;
	std::shared_ptr<std::vector<PendingFree>> retired_; ///< filled by command-list retirement callbacks
	uint32_t retiring_ = 0;
	std::function<void(const BatchMove&)> changed_;
	MeshletMemoryStats stats_;
	MeshletUpdateStats last_update_;
};

} // namespace quokka::meshlet
