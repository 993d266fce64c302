// arena.hpp — the heap's arena (internal to quokka::heap): chunks of GPU memory, each a best-fit allocator over a
// lazily grown buffer, and the host pages where a frame's writes are produced. It opens chunks, allocates, stages and
// frees blocks and records what changed; it knows nothing of the entries, objects or buckets whose data the blocks hold
// (after a compaction the scene re-seats their references). upload() (heap_upload.cpp) records its GPU side: growth,
// compaction copies and the frame's writes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/inlined_vector.h>

#include <quokka/base/assert.hpp>
#include <quokka/base/result.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>

#include "heap_base.hpp"

namespace quokka::heap
{

struct Arena
{
	gpu::Device* device = nullptr;
	uint64_t max_chunk_bytes = 0; ///< a multiple of 16, at least 16
	/// Where the chunks' buffers (and the scene's GPU arrays) live: DeviceMapped when the scene writes in place
	/// (HeapTuning::write_in_place), else DeviceLocal.
	gpu::MemoryDomain domain = gpu::MemoryDomain::DeviceLocal;
	std::vector<std::unique_ptr<Chunk>> chunks;
	HostPages pages;         ///< where this frame's arena writes are produced
	bool chunk_full = false; ///< set by allocate() when a chunk had no room (other OutOfMemory errors are fatal)
	/// Blocks or chunks changed since the scene last summed its shape figures (HeapCore::shape).
	bool blocks_changed = true;
	/// A block was freed since compact() last looked: only frees make a chunk worth compacting, so a frame without
	/// one (an edit, an add into free space) skips the walk of the chunks.
	bool compaction_check = false;
	/// A chunk's blocks changed since upload() last sized the chunks' buffers (grown, given back, compacted): only
	/// then does it walk the chunks for that.
	bool upload_chunks = true;
	uint64_t capacity_bytes = 0; ///< the chunks' buffer sizes, as upload() last summed them

	/// A new, empty chunk (its GPU memory comes with upload()); returns its index.
	uint32_t openChunk();
	/// A block of 16 + `data_bytes` bytes in `chunk`. Errors: OutOfMemory with chunk_full set when the chunk has no
	/// room.
	Result<uint32_t> allocate(uint32_t chunk, uint32_t data_bytes);
	/// allocate() plus stageAllocation(): the block's ref and where its data go (the block is freed again when staging
	/// fails).
	Result<std::pair<uint32_t, std::byte*>> allocateStaged(uint32_t chunk, uint32_t type_id, uint32_t length,
	                                                       uint32_t data_bytes);
	/// Frees the block at `ref` of `chunk` (and notes that the chunk may now be worth compacting).
	void freeBlock(uint32_t chunk, uint32_t ref)
	{
		chunks[chunk]->allocator.free(ref);
		blocks_changed = upload_chunks = compaction_check = true;
	}
	/// The blocks one object's removal gives back, freed together when it is done (ChunkAllocator::freeMany: an
	/// object's inputs were allocated side by side, so their blocks merge among themselves before they reach the free
	/// indices). Group fit puts every input of a draw in one chunk, so a batch serves one chunk.
	struct FreeBatch
	{
		uint32_t chunk = ~0u;
		absl::InlinedVector<uint32_t, 12> refs;
	};
	void freeBatch(FreeBatch& batch);
	/// Frees the block at `ref` of `chunk` into `batch` when it serves that chunk (or none yet), else at once.
	void freeLater(FreeBatch* batch, uint32_t chunk, uint32_t ref)
	{
		if (batch && (batch->refs.empty() || batch->chunk == chunk))
		{
			batch->chunk = chunk;
			batch->refs.push_back(ref);
		}
		else
			freeBlock(chunk, ref);
	}
};

inline uint32_t Arena::openChunk()
{
	gpu::GrowBufferDesc desc;
	desc.min_capacity = std::min<uint64_t>(64ull << 10, max_chunk_bytes);
	desc.max_capacity = max_chunk_bytes;
	desc.usage = gpu::BufferUsage::Storage | gpu::BufferUsage::Index | gpu::BufferUsage::TransferSrc |
	             gpu::BufferUsage::TransferDst;
	desc.name = "heap chunk " + std::to_string(chunks.size());
	desc.lazy = true;
	desc.caller_barriers = true; // (upload() orders every chunk's growth copy with one pair of barriers)
	desc.domain = domain;
	auto storage = gpu::GrowBuffer::create(*device, desc);
	QUOKKA_ASSERT(storage.ok(), "a lazy GrowBuffer with 16 <= min <= max is made without error");
	chunks.push_back(std::make_unique<Chunk>(max_chunk_bytes, std::move(storage.value())));
	blocks_changed = upload_chunks = true;
	return uint32_t(chunks.size() - 1);
}

inline Result<uint32_t> Arena::allocate(uint32_t chunk, uint32_t data_bytes)
{
	const std::optional<uint32_t> at = chunks[chunk]->allocator.allocate(16ull + data_bytes);
	if (!at)
	{
		chunk_full = true;
		return makeError(ErrorCode::OutOfMemory, "arena chunk full");
	}
	blocks_changed = upload_chunks = true;
	return *at;
}

inline Result<std::pair<uint32_t, std::byte*>> Arena::allocateStaged(uint32_t chunk, uint32_t type_id, uint32_t length,
                                                                     uint32_t data_bytes)
{
	QUOKKA_TRY_ASSIGN(ref, allocate(chunk, data_bytes));
	Result<std::byte*> staged = stageAllocation(pages, *chunks[chunk], ref, type_id, length, data_bytes);
	if (!staged.ok())
	{
		freeBlock(chunk, ref);
		return staged.error();
	}
	return std::pair{ref, staged.value()};
}

} // namespace quokka::heap
