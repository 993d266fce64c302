// heap_upload.cpp — HeapScene::upload: how a frame's arena bytes, draw headers and slot records reach the GPU (chunk
// growth copies, compaction moves, page copies or the scatter kernel, barriers).
#include "heap_internal.hpp"

#include <chrono>

#include <absl/cleanup/cleanup.h>

#include <quokka/base/clock.hpp>
#include <quokka/gpu/scatter_copy.hpp>

namespace quokka::heap
{

Result<void> detail::HeapCore::copyWrites(gpu::CommandList& list, uint32_t page, std::span<const VkBufferCopy> regions,
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
	if (small != 0 && small > options.tuning.scatter_above && !scatter)
	{
		QUOKKA_TRY_ASSIGN(made, gpu::ScatterCopy::create(context->device()));
		scatter.emplace(std::move(made));
	}
	const uint64_t align = scatter ? scatter->offsetAlignment() : 4;
	const uint64_t base = small != 0 ? lo - lo % align : 0;
	if (small == 0 || small <= options.tuning.scatter_above || hi - base > scatter->maxRange() ||
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

namespace
{

/// One HeapScene::upload(): the chunks' growth and compaction copies, the frame's writes, then the draw headers and
/// slot records. Each step is recorded only when the frame needs it.
class Upload
{
public:
	Upload(detail::HeapCore& p, HeapStats& stats, gpu::CommandList& list)
	    : p_(p), stats_(stats), list_(list), device_(p.context->device())
	{
	}

	Result<void> run()
	{
		HeapUpdatePhases& t = stats_.phases;
		// Copies into the scene's mapped buffers (the chunks', or the arrays' writes staged through the ring), however
		// the step ends: the host may write those buffers in place in a later frame, after the device's writes
		// (prepare()'s barrier).
		auto device_wrote = absl::MakeCleanup(
		    [&]
		    {
			    if (p_.domain == gpu::MemoryDomain::DeviceMapped && (war_recorded_ || path_.staged_bytes > 0))
				    p_.host_barrier_due = true;
		    });
		auto lap = [&, at = std::chrono::steady_clock::now()](double& step) mutable
		{
			const auto now = std::chrono::steady_clock::now();
			step += std::chrono::duration<double, std::milli>(now - at).count();
			at = now;
		};
		// Sizing the chunks' buffers and recording compactions: only after their blocks changed (a frame without that —
		// nothing changed, or only uniform values — does not walk the chunks).
		if (p_.upload_chunks)
		{
			QUOKKA_TRY(resizeChunks());
			QUOKKA_TRY(compactChunks());
			p_.upload_chunks = false;
			p_.capacity_bytes = 0;
			for (const auto& c : p_.chunks)
				p_.capacity_bytes += c->storage.capacity();
		}
		stats_.arena_capacity_bytes = p_.capacity_bytes;
		lap(t.upload_chunks_ms);
		QUOKKA_TRY(copyFrameWrites());
		p_.pages.retire(list_);
		// What update() wrote in place is counted with the bytes staged.
		const uint64_t chunks_in_place = p_.pages.takeInPlaceBytes();
		stats_.upload_bytes += chunks_in_place;
		stats_.in_place_bytes += chunks_in_place;
		lap(t.upload_writes_ms);
		if (p_.gpu_derive)
			QUOKKA_TRY(p_.gpu_derive->upload(device_, p_.context->staging(), list_, stats_, path_));
		lap(t.upload_derive_ms);
		if (p_.atlas_pool)
		{
			// New entries built into their pages (growth copied first), before the draws that sample them.
			QUOKKA_TRY(p_.atlas_pool->upload(list_));
			stats_.atlas_uploads = uint32_t(p_.atlas_pool->uploadCount() - p_.atlas_uploads_seen);
			p_.atlas_uploads_seen = p_.atlas_pool->uploadCount();
			stats_.atlas_entries = p_.atlas_pool->entryCount();
			stats_.atlas_bytes = p_.atlas_pool->deviceBytes();
		}
		lap(t.upload_atlas_ms);
		Result<void> drawn = uploadDrawArrays();
		lap(t.upload_draws_ms);
		stats_.in_place_bytes += path_.in_place_bytes;
		return drawn;
	}

private:
	/// Earlier frames read the arena: their reads complete before the copies recorded here (growth, compaction, this
	/// frame's writes) — an execution dependency across the queue's submission order. Recorded once, before the first
	/// such copy, so a frame without one records no barrier here. (Earlier frames' copies into the arena were made
	/// visible to later transfers by the barrier after them, in copyFrameWrites.)
	void beforeCopies()
	{
		if (std::exchange(war_recorded_, true))
			return;
		list_.memoryBarrier(
		    VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
		        VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT |
		        VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		    VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT,
		    VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		    VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	}
	/// Later copies and scatter writes into the same chunks wait for the copies recorded so far.
	void afterTransfers()
	{
		list_.memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
		                    VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                    VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT |
		                        VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	}

	/// Every chunk's buffer at least as large as its allocator's cursor (doubling from 64 KiB, capped at the chunk
	/// size; growth copies the old content on the GPU); an emptied chunk gives its buffer back.
	Result<void> resizeChunks()
	{
		bool copied = false;
		for (const std::unique_ptr<Chunk>& chunk : p_.chunks)
		{
			gpu::GrowBuffer& g = chunk->storage;
			if (chunk->allocator.cursor() == 0)
			{
				// Nothing allocated (everything in it was removed): its memory goes back to the device once the
				// frames that read it completed; a later allocation there starts a small buffer again.
				g.release(list_);
				continue;
			}
			const uint64_t need = std::max<uint64_t>(chunk->allocator.cursor(), 16);
			if (g.capacity() >= need)
				continue;
			// Growth keeps the content, the whole old buffer (the arena has no host mirror): a GPU copy, ordered
			// by this frame's barriers.
			const bool copies = g.capacity() != 0;
			if (copies)
			{
				beforeCopies();
				g.setUsed(g.capacity());
			}
			QUOKKA_TRY(g.ensure(need, list_));
			copied = copied || copies;
		}
		if (copied)
			afterTransfers();
		return {};
	}

	/// Compaction: live runs move to the front. A run may overlap its own destination, so everything bounces through
	/// one scratch buffer (chunk → scratch, then scratch → chunk), before this frame's writes land at the new places.
	Result<void> compactChunks()
	{
		for (const std::unique_ptr<Chunk>& c : p_.chunks)
		{
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
			QUOKKA_TRY_ASSIGN(
			    scratch, device_.createBuffer({total, gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst,
			                                   gpu::MemoryDomain::DeviceLocal, "heap compaction scratch"}));
			beforeCopies();
			vkCmdCopyBuffer(list_.vk(), c->buffer()->vk(), scratch->vk(), uint32_t(out.size()), out.data());
			list_.memoryBarrier(
			    VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT,
			    VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_TRANSFER_READ_BIT);
			vkCmdCopyBuffer(list_.vk(), scratch->vk(), c->buffer()->vk(), uint32_t(back.size()), back.data());
			afterTransfers();
			list_.keepAlive(scratch);
			c->moves.clear();
		}
		return {};
	}

	/// The frame's writes, copied from the host pages they were produced in (regions of one chunk never overlap:
	/// takeCopies resolved that), then made visible to the draws, scans and later transfers.
	Result<void> copyFrameWrites()
	{
		bool written = false;
		for (size_t i = 0; !p_.pages.empty() && i < p_.chunks.size(); ++i)
		{
			const std::unique_ptr<Chunk>& c = p_.chunks[i];
			if (c->pending.empty())
				continue;
			if (!c->buffer())
			{
				c->pending.clear(); // (everything written this frame was freed again: the chunk holds nothing)
				continue;
			}
			beforeCopies();
			for (const auto& [page, regions] : c->takeCopies(stats_.overlapping_writes))
			{
				QUOKKA_TRY(p_.copyWrites(list_, page, regions, *c->buffer()));
				for (const VkBufferCopy& r : regions)
					stats_.upload_bytes += r.size;
				stats_.copy_regions += uint32_t(regions.size());
			}
			written = true;
		}
		if (written)
			list_.memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
			                    VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
			                    VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
			                        VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT |
			                        VK_PIPELINE_STAGE_2_TRANSFER_BIT,
			                    VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT |
			                        VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT |
			                        VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
		return {};
	}

	/// The changed draw headers of each bucket and the changed records (megacall) or commands and count (indirect) of
	/// each slot, through the staging ring. A failed header upload lists the rest again for the next frame.
	Result<void> uploadDrawArrays()
	{
		gpu::StagingRing& staging = p_.context->staging();
		std::vector<Bucket*> headers;
		headers.swap(p_.dirty_headers);
		for (size_t i = 0; i < headers.size(); ++i)
		{
			headers[i]->headers_queued = false;
			Result<uint64_t> h = headers[i]->headers.upload(device_, staging, path_);
			if (!h.ok())
			{
				for (size_t j = i; j < headers.size(); ++j) // (still to upload: listed again)
					p_.markHeaders(headers[j]);
				return h.error();
			}
			stats_.upload_bytes += h.value();
		}
		for (Slot* s : p_.dirty_slots)
		{
			if (s->strategy == DrawStrategy::Megacall)
			{
				QUOKKA_TRY_ASSIGN(m, s->mrecords.upload(device_, staging, path_));
				stats_.upload_bytes += m;
			}
			else
			{
				QUOKKA_TRY_ASSIGN(c, s->commands.upload(device_, staging, path_));
				QUOKKA_TRY_ASSIGN(n, s->draw_count.upload(device_, staging, path_));
				stats_.upload_bytes += c + n;
			}
			if (s->route)
			{
				QUOKKA_TRY_ASSIGN(i, s->route->inputs.upload(device_, staging, path_));
				stats_.upload_bytes += i;
			}
		}
		return {};
	}

	detail::HeapCore& p_;
	HeapStats& stats_;
	gpu::CommandList& list_;
	gpu::Device& device_;
	bool war_recorded_ = false;
	/// How the frame's array writes go: in place when no list in flight reads the scene (HeapTuning::write_in_place).
	detail::WritePath path_{p_.domain, p_.writesInPlace()};
};

} // namespace

Result<void> HeapScene::upload(gpu::CommandList& list)
{
	const auto t0 = std::chrono::steady_clock::now();
	auto timed = absl::MakeCleanup([&] { stats_.upload_ms = msSince(t0); });
	Upload upload(*impl_, stats_, list); // (decides whether the frame writes in place: before the list is held)
	impl_->frame_alone = impl_->lists_in_flight->load(std::memory_order_acquire) == 0;
	impl_->holdUntilRetired(list);
	return upload.run();
}

} // namespace quokka::heap
