// MeshletManager: batches of meshlets in two sub-allocated GPU buffers. Behaviour follows meep-engine 3.13's
// GPUMeshletManager. In the Vulkan form, pending operations name slots and are resolved when update() records them,
// rebuilds copy GPU→GPU and patch addresses on the GPU instead of re-uploading metadata from the CPU, and freed ranges
// are reused only once the GPU is done with them.
#include <quokka/meshlet/meshlet_manager.hpp>

#include "meshlet_shaders.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include <quokka/meshlet/copy_regions.glsl.h>

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/staging.hpp>

namespace quokka::meshlet
{

namespace
{
// Patch shader push constants: the patch count (the 3.13 change: a push constant instead of a transient uniform).
struct PatchPush
{
	uint32_t patch_count;
};

uint32_t nextOwner()
{
	static std::atomic<uint32_t> counter{0};
	return ++counter;
}

using detail::CopyRegion;

struct CopyGroup
{
	gpu::BufferHandle src;
	gpu::BufferHandle dst;
	std::vector<CopyRegion> regions;
};

// Sorts by source offset and merges regions that continue each other in both buffers with the same address delta (a
// growth moves everything as one region; a compaction as one region per run of batches that did not move relative to
// each other).
uint32_t mergeRegions(std::vector<CopyRegion>& regions)
{
	std::sort(regions.begin(), regions.end(),
	          [](const CopyRegion& a, const CopyRegion& b) { return a.copy.srcOffset < b.copy.srcOffset; });
	size_t out = 0;
	for (size_t i = 0; i < regions.size(); ++i)
	{
		if (out > 0)
		{
			VkBufferCopy& last = regions[out - 1].copy;
			if (last.srcOffset + last.size == regions[i].copy.srcOffset &&
			    last.dstOffset + last.size == regions[i].copy.dstOffset &&
			    regions[out - 1].address_delta == regions[i].address_delta)
			{
				last.size += regions[i].copy.size;
				continue;
			}
		}
		regions[out++] = regions[i];
	}
	regions.resize(out);
	return uint32_t(out);
}
} // namespace

MeshletManager::MeshletManager(gpu::Device& device, const MeshletManagerDesc& desc)
    : device_(&device), desc_(desc), owner_(nextOwner()), data_allocator_(std::max(desc.initial_data_words, 1u)),
      record_allocator_(std::max(desc.initial_records, 1u)), retired_(std::make_shared<std::vector<PendingFree>>())
{
}

Result<std::unique_ptr<MeshletManager>> MeshletManager::create(gpu::Device& device, const MeshletManagerDesc& desc)
{
	if (desc.initial_data_words == 0 || desc.initial_records == 0)
		return makeError(ErrorCode::InvalidArgument, "meshlet manager capacities must be non-zero");
	if (!(desc.growth_factor >= 1.0))
		return makeError(ErrorCode::InvalidArgument, "meshlet manager growth factor must be ≥ 1");
	std::unique_ptr<MeshletManager> manager(new MeshletManager(device, desc));
	QUOKKA_TRY(manager->init());
	return manager;
}

Result<void> MeshletManager::init()
{
	auto data = createStorage(uint64_t(desc_.initial_data_words) * 4, "data");
	if (!data.ok())
		return data.error();
	auto records = createStorage(uint64_t(desc_.initial_records) * kRecordBytes, "records");
	if (!records.ok())
		return records.error();
	data_buffer_ = std::move(data.value());
	record_buffer_ = std::move(records.value());
	auto pipeline = device_->createComputePipeline(
	    {.spirv = shaders::kPatchAddressesComp.span(), .name = desc_.name + ".patch_addresses"});
	if (!pipeline.ok())
		return pipeline.error();
	patch_pipeline_ = std::move(pipeline.value());
	auto copy = device_->createComputePipeline(
	    {.spirv = shaders::kCopyRegionsComp.span(), .name = desc_.name + ".copy_regions"});
	if (!copy.ok())
		return copy.error();
	copy_pipeline_ = std::move(copy.value());
	staging_ = std::make_unique<gpu::StagingRing>(*device_, 1ull << 20);
	return {};
}

MeshletManager::~MeshletManager()
{
	// Batches still live are the owner's business (a scene tears down by dropping the manager); the allocators'
	// leak reports are meant for allocators used on their own.
	data_allocator_.reset();
	record_allocator_.reset();
}

Result<gpu::BufferHandle> MeshletManager::createStorage(uint64_t bytes, const char* what)
{
	if (bytes > device_->info().max_storage_buffer_range)
		return makeError(ErrorCode::OutOfMemory, "meshlet " + std::string(what) + " buffer of " +
		                                             std::to_string(bytes) + " bytes exceeds maxStorageBufferRange " +
		                                             std::to_string(device_->info().max_storage_buffer_range));
	return device_->createBuffer(
	    {bytes, gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst,
	     gpu::MemoryDomain::DeviceLocal, desc_.name + "." + what});
}

// ---- slots ----------------------------------------------------------------------------------------------------------

uint32_t MeshletManager::acquireSlot()
{
	if (free_slots_.empty())
	{
		slots_.emplace_back();
		return uint32_t(slots_.size() - 1);
	}
	const uint32_t index = free_slots_.back();
	free_slots_.pop_back();
	return index;
}

void MeshletManager::releaseSlot(uint32_t index)
{
	Slot& slot = slots_[index];
	const uint32_t generation = slot.generation + 1;
	slot = Slot{};
	slot.generation = generation;
	free_slots_.push_back(index);
}

void MeshletManager::dropReader(uint32_t origin)
{
	Slot& source = slots_[origin];
	QUOKKA_ASSERT(source.readers > 0, "clone origin without readers");
	if (--source.readers == 0 && source.state == SlotState::Retiring)
		releaseSlot(origin);
}

const MeshletManager::Slot* MeshletManager::live(BatchId id) const
{
	if (id.owner != owner_ || id.index >= slots_.size())
		return nullptr;
	const Slot& slot = slots_[id.index];
	return slot.state == SlotState::Live && slot.generation == id.generation ? &slot : nullptr;
}

bool MeshletManager::contains(BatchId id) const
{
	return live(id) != nullptr;
}

BatchPlacement MeshletManager::placementOf(const Slot& slot) const
{
	return {slot.data.offset, slot.data_words, slot.records.offset, slot.meshlet_count};
}

BatchPlacement MeshletManager::placement(BatchId id) const
{
	const Slot* slot = live(id);
	return slot ? placementOf(*slot) : BatchPlacement{};
}

std::span<const MeshletRecord> MeshletManager::originalRecords(BatchId id) const
{
	const Slot* slot = live(id);
	return slot ? std::span<const MeshletRecord>(*slot->originals) : std::span<const MeshletRecord>{};
}

std::vector<uint32_t> MeshletManager::liveInInsertionOrder() const
{
	std::vector<uint32_t> order;
	for (uint32_t i = 0; i < slots_.size(); ++i)
		if (slots_[i].state == SlotState::Live)
			order.push_back(i);
	std::sort(order.begin(), order.end(),
	          [&](uint32_t a, uint32_t b) { return slots_[a].sequence < slots_[b].sequence; });
	return order;
}

std::vector<BatchId> MeshletManager::batches() const
{
	const std::vector<uint32_t> order = liveInInsertionOrder();
	std::vector<BatchId> ids;
	ids.reserve(order.size());
	for (uint32_t i : order)
		ids.push_back(idOf(i));
	return ids;
}

// ---- allocation -----------------------------------------------------------------------------------------------------

void MeshletManager::drainRetired()
{
	for (const PendingFree& f : *retired_)
	{
		--retiring_;
		if (f.epoch != epoch_)
			continue; // the allocator it came from was replaced by a rebuild
		const bool data_ok = data_allocator_.free(f.data);
		const bool records_ok = record_allocator_.free(f.records);
		QUOKKA_ASSERT(data_ok && records_ok, "a retired meshlet range was not live in its allocator");
		(void)data_ok;
		(void)records_ok;
	}
	retired_->clear();
}

Result<void> MeshletManager::allocatePair(uint32_t data_words, uint32_t records, Allocation& data, Allocation& record)
{
	drainRetired();
	// Up to three attempts, as meep-engine 3.13 makes: compact when something was released since the last rebuild, else
	// grow the side(s) that failed. With this allocator a growth always makes room (no bin-rounding trap).
	for (int attempt = 0; attempt < 3; ++attempt)
	{
		data = data_allocator_.allocate(data_words);
		record = record_allocator_.allocate(records);
		if (data.valid() && record.valid())
			return {};
		const bool data_failed = !data.valid();
		const bool record_failed = !record.valid();
		if (data.valid())
			data_allocator_.free(data);
		if (record.valid())
			record_allocator_.free(record);
		data = record = Allocation{};
		if (attempt == 2)
			break;
		if (released_since_rebuild_ > 0)
			QUOKKA_TRY(compact());
		else
			QUOKKA_TRY(grow(data_failed ? data_words : 0, record_failed ? records : 0));
	}
	return makeError(ErrorCode::OutOfMemory, "failed to allocate GPU memory for a meshlet batch of " +
	                                             std::to_string(data_words) + " words and " + std::to_string(records) +
	                                             " records");
}

Result<BatchId> MeshletManager::addBatch(const MeshletBatch& batch)
{
	if (batch.records.empty() || batch.data.empty())
		return makeError(ErrorCode::InvalidArgument, "a meshlet batch needs at least one record and one data word");
	if (batch.data.size() >= kNoSpace || batch.records.size() >= kNoSpace)
		return makeError(ErrorCode::InvalidArgument, "meshlet batch too large");
	for (const MeshletRecord& r : batch.records)
		if (r.address >= batch.data.size())
			return makeError(ErrorCode::InvalidArgument, "meshlet record address " + std::to_string(r.address) +
			                                                 " outside the batch's " +
			                                                 std::to_string(batch.data.size()) + " data words");
	const uint32_t words = uint32_t(batch.data.size());
	const uint32_t count = uint32_t(batch.records.size());
	Allocation data, record;
	QUOKKA_TRY(allocatePair(words, count, data, record));
	const uint32_t index = acquireSlot();
	Slot& slot = slots_[index];
	slot.state = SlotState::Live;
	slot.content = Content::Upload;
	slot.sequence = next_sequence_++;
	slot.data = data;
	slot.records = record;
	slot.data_words = words;
	slot.meshlet_count = count;
	slot.originals = std::make_shared<const std::vector<MeshletRecord>>(batch.records);
	slot.pending_data = std::make_shared<const std::vector<uint32_t>>(batch.data);
	++live_count_;
	return idOf(index);
}

bool MeshletManager::removeBatch(BatchId id)
{
	if (!live(id))
		return false;
	Slot& slot = slots_[id.index];
	if (slot.content == Content::Clone)
		dropReader(slot.origin); // cancels the queued copy
	frees_.push_back({slot.data, slot.records, epoch_});
	++released_since_rebuild_;
	--live_count_;
	if (slot.readers > 0)
	{
		// A pending clone still reads this batch's bytes: keep the slot (and its location) until update() recorded
		// the copy. The id is dead from now on.
		slot.state = SlotState::Retiring;
		++slot.generation;
		slot.pending_data.reset();
	}
	else
		releaseSlot(id.index);
	return true;
}

Result<BatchId> MeshletManager::cloneBatchAllocation(BatchId source)
{
	if (!live(source))
		return makeError(ErrorCode::InvalidArgument, "clone of a meshlet batch this manager does not own");
	const uint32_t words = slots_[source.index].data_words;
	const uint32_t count = slots_[source.index].meshlet_count;
	Allocation data, record;
	QUOKKA_TRY(allocatePair(words, count, data, record)); // may rebuild: the source keeps its slot
	const uint32_t index = acquireSlot();                 // may reallocate slots_: no references across it
	Slot& src = slots_[source.index];
	Slot& slot = slots_[index];
	slot.state = SlotState::Live;
	slot.sequence = next_sequence_++;
	slot.data = data;
	slot.records = record;
	slot.data_words = words;
	slot.meshlet_count = count;
	slot.originals = src.originals; // shared batch-local records, as meep does
	if (src.content == Content::Upload)
	{
		slot.content = Content::Upload; // the source's bytes are still on the CPU: upload them twice
		slot.pending_data = src.pending_data;
	}
	else
	{
		// A clone of a pending clone copies from that clone's origin: its bytes will be the same, and copies recorded
		// by one update() must not read ranges that the same update() writes.
		slot.content = Content::Clone;
		slot.origin = src.content == Content::Clone ? src.origin : source.index;
		++slots_[slot.origin].readers;
	}
	++live_count_;
	return idOf(index);
}

// ---- rebuild: compact and grow
// ---------------------------------------------------------------------------------------

Result<void> MeshletManager::compact()
{
	return rebuild(data_allocator_.size(), record_allocator_.size(), false);
}

Result<void> MeshletManager::grow(uint32_t extra_data_words, uint32_t extra_records)
{
	if (extra_data_words == 0 && extra_records == 0)
		return {};
	const uint64_t max_data = std::min<uint64_t>(device_->info().max_storage_buffer_range / 4, kNoSpace - 1);
	const uint64_t max_records =
	    std::min<uint64_t>(device_->info().max_storage_buffer_range / kRecordBytes, kNoSpace - 1);
	auto next = [&](uint64_t current, uint64_t extra, uint64_t step, uint64_t limit) -> Result<uint32_t>
	{
		if (extra == 0)
			return uint32_t(current);
		if (current + extra > limit)
			return makeError(ErrorCode::OutOfMemory, "meshlet buffer growth to " + std::to_string(current + extra) +
			                                             " units exceeds the device limit of " + std::to_string(limit));
		const uint64_t scaled = uint64_t(std::ceil(double(current) * desc_.growth_factor));
		return uint32_t(std::min(std::max({current + extra, current + step, scaled}), limit));
	};
	auto data = next(data_allocator_.size(), extra_data_words, desc_.data_growth_step, max_data);
	if (!data.ok())
		return data.error();
	auto records = next(record_allocator_.size(), extra_records, desc_.record_growth_step, max_records);
	if (!records.ok())
		return records.error();
	return rebuild(data.value(), records.value(), true);
}

Result<void> MeshletManager::rebuild(uint32_t data_words, uint32_t records, bool growth)
{
	// Allocate every live batch in insertion order in fresh allocators: a fresh allocator hands out ranges front to
	// back, so the result is packed and a pure growth reproduces every offset.
	const std::vector<uint32_t> order = liveInInsertionOrder();
	OffsetAllocator new_data(data_words, uint32_t(order.size()) + 1);
	OffsetAllocator new_records(records, uint32_t(order.size()) + 1);
	std::vector<std::pair<Allocation, Allocation>> placed;
	placed.reserve(order.size());
	for (uint32_t i : order)
	{
		const Allocation d = new_data.allocate(slots_[i].data_words);
		const Allocation r = new_records.allocate(slots_[i].meshlet_count);
		if (!d.valid() || !r.valid())
		{
			new_data.reset();
			new_records.reset();
			return makeError(ErrorCode::InvalidArgument, "meshlet rebuild capacity below the live batches' size");
		}
		placed.emplace_back(d, r);
	}
	auto data_buffer = createStorage(uint64_t(data_words) * 4, "data");
	if (!data_buffer.ok())
	{
		new_data.reset();
		new_records.reset();
		return data_buffer.error();
	}
	auto record_buffer = createStorage(uint64_t(records) * kRecordBytes, "records");
	if (!record_buffer.ok())
	{
		new_data.reset();
		new_records.reset();
		return record_buffer.error();
	}

	// Commit. Batches whose bytes are on the GPU keep their `location` in the old buffers: update() moves them.
	// Retiring slots (sources of pending clones) are not carried over; their location keeps the old buffers alive.
	std::vector<BatchMove> moves;
	for (size_t k = 0; k < order.size(); ++k)
	{
		Slot& slot = slots_[order[k]];
		const BatchPlacement before = placementOf(slot);
		slot.data = placed[k].first;
		slot.records = placed[k].second;
		const BatchPlacement after = placementOf(slot);
		if (before.data_offset != after.data_offset || before.record_offset != after.record_offset)
			moves.push_back({idOf(order[k]), before, after});
	}
	for (Slot& slot : slots_)
		if (slot.state == SlotState::Retiring)
			slot.data = slot.records = Allocation{};
	data_allocator_.reset();
	record_allocator_.reset();
	data_allocator_ = std::move(new_data);
	record_allocator_ = std::move(new_records);
	data_buffer_ = std::move(data_buffer.value());
	record_buffer_ = std::move(record_buffer.value());
	++epoch_;
	frees_.clear(); // ranges of the discarded allocators
	released_since_rebuild_ = 0;
	++stats_.layout_version;
	++(growth ? stats_.growths : stats_.compactions);
	if (changed_)
		for (const BatchMove& move : moves)
			changed_(move);
	return {};
}

CopyPath MeshletManager::copyPath() const
{
	if (desc_.copy_path != CopyPath::Auto)
		return desc_.copy_path;
	return device_->info().is_cpu ? CopyPath::Transfer : CopyPath::Compute;
}

Result<void> MeshletManager::recordComputeCopy(gpu::CommandList& list, const gpu::Buffer& src, const gpu::Buffer& dst,
                                               std::span<const detail::CopyRegion> regions)
{
	std::vector<uint32_t> chunks; // (src word, dst word, words, address delta)
	for (const CopyRegion& cr : regions)
	{
		const VkBufferCopy& r = cr.copy;
		for (uint64_t done = 0; done < r.size; done += uint64_t(QUOKKA_MESHLET_COPY_CHUNK_WORDS) * 4)
		{
			const uint64_t bytes = std::min<uint64_t>(r.size - done, uint64_t(QUOKKA_MESHLET_COPY_CHUNK_WORDS) * 4);
			chunks.insert(chunks.end(), {uint32_t((r.srcOffset + done) / 4), uint32_t((r.dstOffset + done) / 4),
			                             uint32_t(bytes / 4), cr.address_delta});
		}
	}
	const uint32_t count = uint32_t(chunks.size() / 4);
	auto buffer = gpu::createUploadBuffer(*device_, chunks.data(), uint64_t(chunks.size()) * 4,
	                                      gpu::BufferUsage::Storage, desc_.name + ".copy_chunks");
	if (!buffer.ok())
		return buffer.error();
	copy_pipeline_->bind(list);
	copy_pipeline_->pushBuffer(list, 0, src);
	copy_pipeline_->pushBuffer(list, 1, dst);
	copy_pipeline_->pushBuffer(list, 2, *buffer.value());
	const PatchPush push{count}; // same layout: one u32 count
	copy_pipeline_->pushConstants(list, &push, sizeof(push));
	// One workgroup per chunk up to 65,535 (and maxComputeWorkGroupCount[0]); beyond, each workgroup loops.
	const uint32_t max_x = std::max(1u, std::min(device_->info().max_compute_work_group_count[0], 65535u));
	vkCmdDispatch(list.vk(), std::min(count, max_x), 1, 1);
	list.keepAlive(buffer.value());
	++last_update_.copy_dispatches;
	return {};
}

// ---- update ---------------------------------------------------------------------------------------------------------

// What one update() records: copy regions per (source, destination) buffer pair and the address patches.
struct MeshletManager::UpdateWork
{
	std::map<std::pair<uint64_t, uint64_t>, CopyGroup> groups; // by (src id, dst id)
	std::vector<uint32_t> patches;                             // (record index, address delta) pairs
};

Result<void> MeshletManager::update(gpu::CommandList& list)
{
	drainRetired();
	last_update_ = {};
	UpdateWork work;
	QUOKKA_TRY(gatherWork(work));
	QUOKKA_TRY(recordWork(list, work));
	if (!frees_.empty())
	{
		// Removed ranges become reusable once this list (recorded after every use the caller made of them, and
		// holding the copies of any clone that reads them) completed.
		retiring_ += uint32_t(frees_.size());
		list.onRetire([retired = retired_, frees = std::move(frees_)]
		              { retired->insert(retired->end(), frees.begin(), frees.end()); });
		frees_.clear();
	}
	return {};
}

Result<void> MeshletManager::gatherWork(UpdateWork& work)
{
	auto& groups = work.groups;
	auto& patches = work.patches;
	auto copy = [&](const gpu::BufferHandle& src, uint64_t src_offset, const gpu::BufferHandle& dst,
	                uint64_t dst_offset, uint64_t bytes, uint32_t address_delta)
	{
		CopyGroup& group = groups[{src->id(), dst->id()}];
		group.src = src;
		group.dst = dst;
		group.regions.push_back({{src_offset, dst_offset, bytes}, address_delta});
		last_update_.copied_bytes += bytes;
	};
	// Copies the bytes at `from` into the slot's current ranges; the records there hold addresses relative to
	// from.data_offset, so the patch adds (new data offset − from.data_offset), wrapping in u32 as meep-engine 3.13
	// does.
	auto relocate = [&](const Slot& slot, const Location& from)
	{
		const uint32_t delta = slot.data.offset - from.data_offset;
		copy(from.data, uint64_t(from.data_offset) * 4, data_buffer_, uint64_t(slot.data.offset) * 4,
		     uint64_t(slot.data_words) * 4, 0);
		copy(from.records, uint64_t(from.record_offset) * kRecordBytes, record_buffer_,
		     uint64_t(slot.records.offset) * kRecordBytes, uint64_t(slot.meshlet_count) * kRecordBytes, delta);
		if (delta != 0)
			for (uint32_t k = 0; k < slot.meshlet_count; ++k)
			{
				patches.push_back(slot.records.offset + k);
				patches.push_back(delta);
			}
	};
	const Location here_template{data_buffer_, record_buffer_, 0, 0};
	auto here = [&](const Slot& slot)
	{
		Location l = here_template;
		l.data_offset = slot.data.offset;
		l.record_offset = slot.records.offset;
		return l;
	};

	// Pass 1: clones, reading their origins' current bytes (before pass 2 moves any origin).
	for (uint32_t i = 0; i < slots_.size(); ++i)
	{
		Slot& slot = slots_[i];
		if (slot.state != SlotState::Live || slot.content != Content::Clone)
			continue;
		const Slot& origin = slots_[slot.origin];
		QUOKKA_ASSERT(origin.content == Content::Gpu, "clone origin without GPU bytes");
		relocate(slot, origin.location);
		slot.content = Content::Gpu;
		slot.location = here(slot);
		const uint32_t origin_index = slot.origin;
		slot.origin = kNoSpace;
		dropReader(origin_index); // may release a retiring origin: `slot` stays valid (no reallocation)
	}
	// Pass 2: uploads of new batches and moves out of buffers replaced by a rebuild.
	std::vector<MeshletRecord> rebased;
	for (Slot& slot : slots_)
	{
		if (slot.state != SlotState::Live)
			continue;
		if (slot.content == Content::Upload)
		{
			QUOKKA_TRY(staging_->write(data_buffer_, uint64_t(slot.data.offset) * 4, slot.pending_data->data(),
			                           uint64_t(slot.data_words) * 4));
			rebased.assign(slot.originals->begin(), slot.originals->end());
			for (MeshletRecord& r : rebased)
				r.address += slot.data.offset;
			QUOKKA_TRY(staging_->write(record_buffer_, uint64_t(slot.records.offset) * kRecordBytes, rebased.data(),
			                           uint64_t(slot.meshlet_count) * kRecordBytes));
			last_update_.uploaded_bytes += uint64_t(slot.data_words) * 4 + uint64_t(slot.meshlet_count) * kRecordBytes;
			slot.pending_data.reset();
			slot.content = Content::Gpu;
			slot.location = here(slot);
		}
		else if (slot.content == Content::Gpu && slot.location.data != data_buffer_)
		{
			relocate(slot, slot.location);
			slot.location = here(slot);
		}
	}

	return {};
}

Result<void> MeshletManager::recordWork(gpu::CommandList& list, UpdateWork& work)
{
	auto& groups = work.groups;
	auto& patches = work.patches;
	if (groups.empty() && staging_->pendingBytes() == 0 && patches.empty())
		return {};
	// Earlier submissions may still write (clones, uploads, patches) or read (draws) what these copies touch.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COPY_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT |
	                       VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	const bool compute = copyPath() == CopyPath::Compute;
	for (auto& [key, group] : groups)
	{
		last_update_.copy_regions += mergeRegions(group.regions);
		if (compute)
			QUOKKA_TRY(recordComputeCopy(list, *group.src, *group.dst, group.regions));
		else
		{
			std::vector<VkBufferCopy> copies;
			copies.reserve(group.regions.size());
			for (const CopyRegion& r : group.regions)
				copies.push_back(r.copy);
			vkCmdCopyBuffer(list.vk(), group.src->vk(), group.dst->vk(), uint32_t(copies.size()), copies.data());
		}
		list.keepAlive(group.src);
		list.keepAlive(group.dst);
	}
	last_update_.patches = uint32_t(patches.size() / 2);
	// The compute copy adds each record's address delta as it copies (one dispatch, no patch pass); the transfer path
	// copies first, then patches.
	const bool patch = !compute && !patches.empty();
	if (patch || staging_->pendingBytes() > 0)
	{
		staging_->flush(list, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
		list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
		                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	}
	if (patch)
	{
		const uint32_t count = uint32_t(patches.size() / 2);
		auto buffer = gpu::createUploadBuffer(*device_, patches.data(), uint64_t(patches.size()) * 4,
		                                      gpu::BufferUsage::Storage, desc_.name + ".patches");
		if (!buffer.ok())
			return buffer.error();
		patch_pipeline_->bind(list);
		patch_pipeline_->pushBuffer(list, 0, *record_buffer_);
		patch_pipeline_->pushBuffer(list, 1, *buffer.value());
		const PatchPush push{count};
		patch_pipeline_->pushConstants(list, &push, sizeof(push));
		gpu::dispatch1d(list, *patch_pipeline_, count);
		list.keepAlive(buffer.value());
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	                   VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
	list.keepAlive(data_buffer_);
	list.keepAlive(record_buffer_);
	return {};
}

// ---- statistics, dump, validation -----------------------------------------------------------------------------------

uint64_t MeshletManager::gpuMemoryUsage() const
{
	return data_buffer_->size() + record_buffer_->size();
}

uint64_t MeshletManager::gpuMemoryUsageOccupied() const
{
	uint64_t bytes = 0;
	for (const Slot& slot : slots_)
		if (slot.state == SlotState::Live)
			bytes += uint64_t(slot.data_words) * 4 + uint64_t(slot.meshlet_count) * kRecordBytes;
	return bytes;
}

MeshletMemoryStats MeshletManager::stats() const
{
	MeshletMemoryStats s = stats_;
	s.data_capacity_bytes = data_buffer_->size();
	s.record_capacity_bytes = record_buffer_->size();
	s.data = data_allocator_.storageReport();
	s.records = record_allocator_.storageReport();
	for (const Slot& slot : slots_)
	{
		if (slot.state != SlotState::Live)
			continue;
		++s.batches;
		s.meshlets += slot.meshlet_count;
		s.data_used_bytes += uint64_t(slot.data_words) * 4;
		s.record_used_bytes += uint64_t(slot.meshlet_count) * kRecordBytes;
		s.pending_uploads += slot.content == Content::Upload;
		s.pending_clones += slot.content == Content::Clone;
		s.pending_moves += slot.content == Content::Gpu && slot.location.data != data_buffer_;
	}
	s.retiring_frees = retiring_ + uint32_t(frees_.size());
	return s;
}

std::string MeshletManager::debugDump() const
{
	const MeshletMemoryStats s = stats();
	nlohmann::ordered_json j;
	auto report = [](const StorageReport& r)
	{
		return nlohmann::ordered_json{{"total_free", r.total_free},
		                              {"largest_free", r.largest_free},
		                              {"free_regions", r.free_regions},
		                              {"live_allocations", r.live_allocations}};
	};
	j["name"] = desc_.name;
	j["layout_version"] = s.layout_version;
	j["data"] = {
	    {"capacity_words", data_allocator_.size()}, {"used_bytes", s.data_used_bytes}, {"allocator", report(s.data)}};
	j["records"] = {
	    {"capacity", record_allocator_.size()}, {"used_bytes", s.record_used_bytes}, {"allocator", report(s.records)}};
	j["counters"] = {{"batches", s.batches},
	                 {"meshlets", s.meshlets},
	                 {"pending_uploads", s.pending_uploads},
	                 {"pending_clones", s.pending_clones},
	                 {"pending_moves", s.pending_moves},
	                 {"retiring_frees", s.retiring_frees},
	                 {"released_since_rebuild", released_since_rebuild_},
	                 {"compactions", s.compactions},
	                 {"growths", s.growths}};
	nlohmann::ordered_json batches = nlohmann::ordered_json::array();
	for (BatchId id : this->batches())
	{
		const Slot& slot = slots_[id.index];
		const char* state = slot.content == Content::Upload      ? "uploading"
		                    : slot.content == Content::Clone     ? "cloning"
		                    : slot.location.data != data_buffer_ ? "moving"
		                                                         : "resident";
		nlohmann::ordered_json b = {{"id", {id.index, id.generation}},
		                            {"state", state},
		                            {"sequence", slot.sequence},
		                            {"data", {slot.data.offset, slot.data_words}},
		                            {"records", {slot.records.offset, slot.meshlet_count}}};
		if (slot.content == Content::Clone)
			b["clone_of_slot"] = slot.origin;
		batches.push_back(std::move(b));
	}
	j["batches"] = std::move(batches);
	auto regions = [](const std::vector<FreeRegion>& list)
	{
		nlohmann::ordered_json a = nlohmann::ordered_json::array();
		for (const FreeRegion& r : list)
			a.push_back({r.offset, r.size});
		return a;
	};
	j["free_regions"] = {{"data", regions(data_allocator_.freeRegions())},
	                     {"records", regions(record_allocator_.freeRegions())}};
	return j.dump(1);
}

Result<void> MeshletManager::validate() const
{
	QUOKKA_TRY(data_allocator_.validate());
	QUOKKA_TRY(record_allocator_.validate());
	auto fail = [](const std::string& what)
	{ return makeError(ErrorCode::InvalidArgument, "MeshletManager: " + what); };
	std::vector<uint32_t> readers(slots_.size(), 0);
	uint32_t live = 0;
	for (uint32_t i = 0; i < slots_.size(); ++i)
	{
		const Slot& slot = slots_[i];
		if (slot.state != SlotState::Live)
			continue;
		++live;
		if (data_allocator_.allocationSize(slot.data) != slot.data_words ||
		    record_allocator_.allocationSize(slot.records) != slot.meshlet_count)
			return fail("batch slot " + std::to_string(i) + " does not own allocations of its sizes");
		if (slot.content == Content::Clone)
		{
			if (slot.origin >= slots_.size() || slots_[slot.origin].state == SlotState::Free ||
			    slots_[slot.origin].content != Content::Gpu)
				return fail("pending clone in slot " + std::to_string(i) + " reads a slot without GPU bytes");
			++readers[slot.origin];
		}
		if (slot.content == Content::Upload && !slot.pending_data)
			return fail("uploading batch without CPU bytes");
	}
	for (uint32_t i = 0; i < slots_.size(); ++i)
		if (readers[i] != slots_[i].readers)
			return fail("reader count of slot " + std::to_string(i) + " is off");
	if (live != live_count_)
		return fail("live count is off");
	return {};
}

} // namespace quokka::meshlet
