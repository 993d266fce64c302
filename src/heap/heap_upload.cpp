// heap_upload.cpp — HeapScene::upload: how a frame's arena bytes, draw headers and slot records reach the GPU (chunk
// growth copies, compaction moves, page copies or the scatter kernel, barriers).
#include "heap_internal.hpp"

#include <chrono>

#include <absl/cleanup/cleanup.h>

#include <quokka/base/clock.hpp>
#include <quokka/gpu/scatter_copy.hpp>

namespace quokka::heap
{

Result<void> HeapScene::Impl::copyWrites(gpu::CommandList& list, uint32_t page, std::span<const VkBufferCopy> regions,
                                         const gpu::Buffer& target)
{
	// Long regions (merged runs of objects placed side by side) stay with the copy engine: ScatterCopy::scatterable.
	const gpu::Buffer& source = pages.buffer(page);
	size_t small = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (const VkBufferCopy& r : regions)
		if (gpu::ScatterCopy::scatterable(r))
		{
			++small;
			lo = std::min<uint64_t>(lo, r.srcOffset);
			hi = std::max<uint64_t>(hi, r.srcOffset + r.size);
		}
	if (small != 0 && small > options.scatter_above && !scatter)
	{
		QUOKKA_TRY_ASSIGN(made, gpu::ScatterCopy::create(context->device()));
		scatter.emplace(std::move(made));
	}
	const uint64_t align = scatter ? scatter->offsetAlignment() : 4;
	const uint64_t base = small != 0 ? lo - lo % align : 0;
	if (small == 0 || small <= options.scatter_above || hi - base > scatter->maxRange() ||
	    target.size() > scatter->maxRange())
	{
		vkCmdCopyBuffer(list.vk(), source.vk(), target.vk(), uint32_t(regions.size()), regions.data());
		return {};
	}
	// The table goes into the frame's pages too (uploaded with them), at a binding-aligned offset.
	const uint64_t table_bytes = small * sizeof(gpu::ScatterRegion);
	QUOKKA_TRY_ASSIGN(span, pages.reserve(table_bytes + align));
	const uint64_t table_at = (uint64_t(span.at) + align - 1) / align * align;
	auto* table = reinterpret_cast<gpu::ScatterRegion*>(span.data + (table_at - span.at));
	std::vector<VkBufferCopy> direct;
	size_t n = 0;
	for (const VkBufferCopy& r : regions)
		if (gpu::ScatterCopy::scatterable(r))
			table[n++] = {uint32_t((r.srcOffset - base) / 4), uint32_t(r.dstOffset / 4), uint32_t(r.size / 4), 0};
		else
			direct.push_back(r);
	scatter->record(list, {&source, base, (hi - base + 3) / 4 * 4}, {&target, 0, target.size()},
	                {&pages.buffer(span.page), table_at, table_bytes}, uint32_t(small));
	if (!direct.empty())
		vkCmdCopyBuffer(list.vk(), source.vk(), target.vk(), uint32_t(direct.size()), direct.data());
	stats->upload_bytes += table_bytes;
	++stats->scatters;
	return {};
}

Result<void> HeapScene::upload(gpu::CommandList& list)
{
	const auto t0 = std::chrono::steady_clock::now();
	auto timed = absl::MakeCleanup([&] { stats_.upload_ms = msSince(t0); });
	Impl& p = *impl_;
	gpu::Device& device = p.context->device();
	gpu::StagingRing& staging = p.context->staging();
	// Earlier frames read the arena: their reads complete before the copies recorded here (growth, compaction, this
	// frame's writes) — an execution dependency across the queue's submission order. Recorded once, before the first
	// such copy, so a frame without one records no barrier here. (Earlier frames' copies into the arena were made
	// visible to later transfers by the barrier after them, below.)
	bool war_recorded = false;
	auto beforeCopies = [&]
	{
		if (std::exchange(war_recorded, true))
			return;
		list.memoryBarrier(
		    VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
		        VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT |
		        VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		    VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT,
		    VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		    VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	};
	bool copied = false;
	// Sizing the chunks' buffers and recording compactions: only after their blocks changed (a frame without that —
	// nothing changed, or only uniform values — does not walk the chunks).
	const bool resize_chunks = p.upload_chunks;
	for (size_t i = 0; resize_chunks && i < p.chunks.size(); ++i)
	{
		Chunk& c = *p.chunks[i];
		if (c.allocator.cursor() == 0)
		{
			// Nothing allocated (everything in it was removed): its memory goes back to the device once the frames
			// that read it completed; a later allocation there starts a small buffer again.
			if (c.buffer)
			{
				list.keepAlive(c.buffer);
				c.buffer.reset();
			}
			continue;
		}
		const uint64_t need = std::max<uint64_t>(c.allocator.cursor(), 16);
		if (!c.buffer || c.buffer->size() < need)
		{
			uint64_t size = 64ull << 10;
			while (size < need)
				size *= 2;
			size = std::min(size, p.max_chunk_bytes);
			QUOKKA_TRY_ASSIGN(buffer,
			                  device.createBuffer({size,
			                                       gpu::BufferUsage::Storage | gpu::BufferUsage::Index |
			                                           gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst,
			                                       gpu::MemoryDomain::DeviceLocal, "heap chunk " + std::to_string(i)}));
			if (c.buffer)
			{
				// Growth keeps the content: copy it on the GPU (the arena has no host mirror).
				beforeCopies();
				gpu::copyBuffer(list.vk(), *c.buffer, 0, *buffer, 0, c.buffer->size());
				list.keepAlive(c.buffer);
				copied = true;
			}
			c.buffer = std::move(buffer);
		}
	}
	// (Later copies and scatter writes into the same chunks wait for the copies recorded so far.)
	auto afterTransfers = [&]
	{
		list.memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
		                   VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT |
		                       VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	};
	if (copied)
		afterTransfers();
	// Compaction: live runs move to the front. A run may overlap its own destination, so everything bounces through
	// one scratch buffer (chunk → scratch, then scratch → chunk), before this frame's writes land at the new places.
	for (size_t i = 0; resize_chunks && i < p.chunks.size(); ++i)
	{
		const std::unique_ptr<Chunk>& c = p.chunks[i];
		if (c->moves.empty())
			continue;
		uint64_t total = 0;
		std::vector<VkBufferCopy> out, back;
		for (const ChunkAllocator::Move& m : c->moves)
		{
			out.push_back({m.from, total, m.bytes});
			back.push_back({total, m.to, m.bytes});
			total += m.bytes;
		}
		QUOKKA_TRY_ASSIGN(scratch,
		                  device.createBuffer({total, gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst,
		                                       gpu::MemoryDomain::DeviceLocal, "heap compaction scratch"}));
		beforeCopies();
		vkCmdCopyBuffer(list.vk(), c->buffer->vk(), scratch->vk(), uint32_t(out.size()), out.data());
		list.memoryBarrier(
		    VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT,
		    VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT);
		vkCmdCopyBuffer(list.vk(), scratch->vk(), c->buffer->vk(), uint32_t(back.size()), back.data());
		afterTransfers();
		list.keepAlive(scratch);
		c->moves.clear();
	}
	if (resize_chunks)
	{
		p.upload_chunks = false;
		p.capacity_bytes = 0;
		for (const auto& c : p.chunks)
			if (c->buffer)
				p.capacity_bytes += c->buffer->size();
	}
	stats_.arena_capacity_bytes = p.capacity_bytes;
	bool written = false;
	for (size_t i = 0; !p.pages.empty() && i < p.chunks.size(); ++i)
	{
		const std::unique_ptr<Chunk>& c = p.chunks[i];
		if (c->pending.empty())
			continue;
		if (!c->buffer)
		{
			c->pending.clear(); // (everything written this frame was freed again: the chunk holds nothing)
			continue;
		}
		// The frame's writes, copied from the host pages they were produced in (regions of one chunk never overlap:
		// takeCopies resolved that).
		beforeCopies();
		for (const auto& [page, regions] : c->takeCopies(stats_.overlapping_writes))
		{
			QUOKKA_TRY(p.copyWrites(list, page, regions, *c->buffer));
			for (const VkBufferCopy& r : regions)
				stats_.upload_bytes += r.size;
			stats_.copy_regions += uint32_t(regions.size());
		}
		written = true;
	}
	if (written)
		list.memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
		                   VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
		                       VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT |
		                       VK_PIPELINE_STAGE_2_TRANSFER_BIT,
		                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT |
		                       VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT |
		                       VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	p.pages.retire(list);
	std::vector<Bucket*> headers;
	headers.swap(p.dirty_headers);
	for (size_t i = 0; i < headers.size(); ++i)
	{
		headers[i]->headers_queued = false;
		Result<uint64_t> h = headers[i]->headers.upload(device, staging);
		if (!h.ok())
		{
			for (size_t j = i; j < headers.size(); ++j) // (still to upload: listed again)
				p.markHeaders(headers[j]);
			return h.error();
		}
		stats_.upload_bytes += h.value();
	}
	for (Slot* s : p.dirty_slots)
	{
		if (s->active == DrawStrategy::Megacall)
		{
			QUOKKA_TRY_ASSIGN(m, s->mrecords.upload(device, staging));
			stats_.upload_bytes += m;
		}
		else
		{
			QUOKKA_TRY_ASSIGN(c, s->commands.upload(device, staging));
			QUOKKA_TRY_ASSIGN(n, s->count.upload(device, staging));
			stats_.upload_bytes += c + n;
		}
	}
	return {};
}

} // namespace quokka::heap
