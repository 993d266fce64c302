// heap_encode.cpp — HeapScene::prepare (the megacall scans, their pipelines and buffers) and HeapScene::encode (per
// bucket and slot: pipeline, push descriptors, dynamic state, the indirect or megacall draw).
#include "heap_internal.hpp"

#include <chrono>

#include <absl/cleanup/cleanup.h>

#include <quokka/base/clock.hpp>
#include <quokka/gpu/scatter_copy.hpp>

namespace quokka::heap
{

Result<void> HeapScene::prepare(gpu::CommandList& list)
{
	Impl& p = *impl_;
	gpu::Device& device = p.context->device();
	std::vector<ScanJob> jobs;
	for (Slot* s : p.dirty_slots)
	{
		s->queued = false;
		if (s->active != DrawStrategy::Megacall)
			continue;
		if (!s->megacall_pipeline)
		{
			if (!s->bucket->megacall_effect)
			{
				QUOKKA_TRY_ASSIGN(
				    effect, p.context->effects().compile(s->bucket->effect, p.outputs, fx::PathVariant::HeapMegacall));
				s->bucket->megacall_effect = effect;
			}
			classic::PipelineRequest req = s->request;
			req.effect = s->bucket->megacall_effect;
			QUOKKA_TRY_ASSIGN(entry, p.context->pipeline(req));
			s->megacall_pipeline = entry;
		}
		if (!s->scan_dirty)
			continue;
		s->scan_dirty = false;
		if (!p.scanner)
		{
			QUOKKA_TRY_ASSIGN(scanner, MegacallScan::create(device));
			p.scanner.emplace(std::move(scanner));
		}
		const uint32_t n = uint32_t(s->records.size());
		if (!s->scan)
		{
			QUOKKA_TRY_ASSIGN(scan, ScanBuffers::create(device, n));
			s->scan.emplace(std::move(scan));
		}
		const uint32_t tiles = tileCapacityBound(s->emit_sum);
		if (!s->tiles || s->tiles->size() < uint64_t(tiles) * 4)
		{
			uint64_t size = 256;
			while (size < uint64_t(tiles) * 4)
				size *= 2;
			QUOKKA_TRY_ASSIGN(t, device.createBuffer({size, gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
			                                          gpu::MemoryDomain::DeviceLocal, "heap megacall tiles"}));
			s->tiles = std::move(t);
		}
		if (!s->args)
		{
			QUOKKA_TRY_ASSIGN(
			    a, device.createBuffer(
			           {16, gpu::BufferUsage::Indirect | gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
			            gpu::MemoryDomain::DeviceLocal, "heap megacall args"}));
			s->args = std::move(a);
		}
		ScanJob job;
		job.buffers = &*s->scan;
		job.records = s->mrecords.buffer.get();
		job.record_count = n;
		job.tile_capacity = tiles;
		job.args = s->args.get();
		job.tiles = s->tiles.get();
		jobs.push_back(job);
	}
	p.dirty_slots.clear();
	if (!jobs.empty())
	{
		QUOKKA_TRY(p.scanner->record(list, jobs));
		stats_.scans = uint32_t(jobs.size());
	}
	return {};
}

void HeapScene::encode(gpu::CommandList& list)
{
	const auto t0 = std::chrono::steady_clock::now();
	Impl& p = *impl_;
	VkCommandBuffer cmd = list.vk();
	const gpu::Pipeline* bound = nullptr;
	const gpu::DynamicState* dyn = nullptr;
	VkBuffer index_buffer = VK_NULL_HANDLE;
	std::vector<VkWriteDescriptorSet> writes;
	std::vector<VkDescriptorBufferInfo> infos(4);
	std::vector<VkDescriptorImageInfo> images;
	for (Bucket* b : p.bucket_order)
	{
		const Chunk& chunk = *p.chunks[b->chunk];
		if (!chunk.buffer || !b->headers.buffer)
			continue;
		list.keepAlive(chunk.buffer);
		list.keepAlive(b->headers.buffer);
		for (const auto& sp : b->slots)
		{
			const Slot& s = *sp;
			if (s.records.empty() || s.emit_sum == 0)
				continue;
			const bool mega = s.active == DrawStrategy::Megacall;
			const classic::PipelineEntry* entry = mega ? s.megacall_pipeline : s.indirect_pipeline;
			if (!entry || (mega && (!s.args || !s.tiles || !s.mrecords.buffer)) || (!mega && !s.commands.buffer))
				continue;
			const gpu::Pipeline& pipeline = *entry->pipeline;
			if (&pipeline != bound)
			{
				pipeline.bind(list);
				bound = &pipeline;
				++stats_.pipeline_binds;
			}
			writes.clear();
			images.clear();
			infos[0] = {chunk.buffer->vk(), 0, VK_WHOLE_SIZE};
			infos[1] = {b->headers.buffer->vk(), 0, VK_WHOLE_SIZE};
			uint32_t n_buffers = 2;
			if (mega)
			{
				infos[2] = {s.mrecords.buffer->vk(), 0, VK_WHOLE_SIZE};
				infos[3] = {s.tiles->vk(), 0, VK_WHOLE_SIZE};
				n_buffers = 4;
				list.keepAlive(s.mrecords.buffer);
				list.keepAlive(s.tiles);
				list.keepAlive(s.args);
			}
			for (uint32_t i = 0; i < n_buffers; ++i)
			{
				VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
				w.dstBinding = i;
				w.descriptorCount = 1;
				w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
				w.pBufferInfo = &infos[i];
				writes.push_back(w);
			}
			images.reserve(b->textures.size());
			for (size_t i = 0; i < b->textures.size(); ++i)
			{
				if (!b->textures[i]->image())
					continue;
				images.push_back(
				    {b->samplers[i]->vk(), b->textures[i]->image()->view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL});
				VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
				w.dstBinding = b->texture_bindings[i];
				w.descriptorCount = 1;
				w.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
				w.pImageInfo = &images.back();
				writes.push_back(w);
			}
			pipeline.pushDescriptors(list, writes);
			if (!dyn || !(*dyn == s.dyn))
			{
				s.dyn.apply(cmd);
				dyn = &s.dyn;
			}
			if (mega)
				vkCmdDrawIndirect(cmd, s.args->vk(), 0, 1, 16);
			else
			{
				list.keepAlive(s.commands.buffer);
				list.keepAlive(s.count.buffer);
				const uint32_t n = uint32_t(s.records.size());
				if (s.indexed)
				{
					if (index_buffer != chunk.buffer->vk())
					{
						vkCmdBindIndexBuffer(cmd, chunk.buffer->vk(), 0, VK_INDEX_TYPE_UINT32);
						index_buffer = chunk.buffer->vk();
					}
					vkCmdDrawIndexedIndirectCount(cmd, s.commands.buffer->vk(), 0, s.count.buffer->vk(), 0, n, 20);
				}
				else
					vkCmdDrawIndirectCount(cmd, s.commands.buffer->vk(), 0, s.count.buffer->vk(), 0, n, 16);
			}
			++stats_.draw_calls;
		}
	}
	stats_.encode_ms = msSince(t0);
}

} // namespace quokka::heap
