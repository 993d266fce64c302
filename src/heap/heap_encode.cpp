// heap_encode.cpp — HeapScene::prepare (the megacall scans, their pipelines and buffers) and HeapScene::encode (per
// bucket and slot: pipeline, push descriptors, dynamic state, the indirect or megacall draw).
#include <quokka/gpu/grow_buffer.hpp>

#include "heap_internal.hpp"

#include <quokka/fx/megacall_glsl.hpp>

#include <algorithm>
#include <chrono>

#include <absl/cleanup/cleanup.h>

#include <quokka/base/clock.hpp>
#include <quokka/gpu/scatter_copy.hpp>

namespace quokka::heap
{

void HeapScene::setDeriveTimer(gpu::FrameTimer* timer)
{
	impl_->gpuDerive().timer = timer;
}

Result<void> HeapScene::prepare(gpu::CommandList& list)
{
	detail::HeapCore& p = *impl_;
	gpu::Device& device = p.context->device();
	const auto t0 = std::chrono::steady_clock::now();
	auto timed = absl::MakeCleanup([&] { stats_.prepare_ms = msSince(t0); });
	p.holdUntilRetired(list);
	// Whatever the device wrote into the scene's mapped buffers in this list (upload's copies, this step's kernels) is
	// made available to the host before the host writes those buffers in place in a later frame: by the barrier after
	// the derive dispatch (GpuDerive::dispatch), else by a barrier to the host stage at the end (later draws do not
	// wait for it).
	const uint32_t routed_before = stats_.routed_groups;
	auto host_barrier = absl::MakeCleanup(
	    [&]
	    {
		    if (p.domain == gpu::MemoryDomain::DeviceMapped && stats_.routed_groups > routed_before)
			    p.host_barrier_due = true;
		    if (std::exchange(p.host_barrier_due, false))
			    list.memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
			                       VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
			                       VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_WRITE_BIT);
	    });
	if (p.bindless)
	{
		// (After Context::upload: the textures placed this frame have their images.)
		QUOKKA_TRY_ASSIGN(waited, p.bindless->sync());
		stats_.bindless_waits = waited ? 1 : 0;
	}
	if (p.gpu_derive)
		QUOKKA_TRY(p.gpu_derive->dispatch(list, stats_));
	std::vector<ScanJob> jobs;
	std::vector<Slot*> routed;
	std::vector<Slot*> later; // (their megacall effect compiles in the background: looked at again next frame)
	auto requeue = absl::MakeCleanup(
	    [&]
	    {
		    for (Slot* s : later)
			    p.markSlot(s);
	    });
	for (Slot* s : p.dirty_slots)
	{
		s->queued = false;
		if (s->route)
		{
			if (!s->records.empty())
				routed.push_back(s);
			continue; // (a route group's scans are recorded with its routing)
		}
		if (s->strategy != DrawStrategy::Megacall)
			continue;
		if (!s->megacall_pipeline)
		{
			if (!s->bucket->megacall_effect)
			{
				QUOKKA_TRY_ASSIGN(
				    effect, p.context->compiledEffect(s->bucket->effect, p.outputs, s->bucket->megacallVariant()));
				if (!effect)
				{
					later.push_back(s);
					continue;
				}
				s->bucket->megacall_effect = effect;
			}
			inputs::PipelineRequest req = s->request;
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
			const uint64_t size = gpu::nextPowerOfTwo(std::max<uint64_t>(256, uint64_t(tiles) * 4));
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
	if (!routed.empty())
		QUOKKA_TRY(detail::recordRouting(p, list, routed, stats_, later));
	return {};
}

namespace
{

/// One HeapScene::encode(): per bucket and slot, the pipeline (bound when it changes), the push descriptors (arena,
/// headers, and for megacall the records and tiles; the bucket's textures), the dynamic state (set when it changes)
/// and one indirect draw.
class Encoder
{
public:
	Encoder(detail::HeapCore& p, HeapStats& stats, gpu::CommandList& list) : p_(p), stats_(stats), list_(list) {}

	void run()
	{
		for (Bucket* b : p_.bucket_order)
		{
			const Chunk& chunk = *p_.chunks[b->chunk];
			if (!chunk.buffer() || !b->headers.buffer)
				continue;
			list_.keepAlive(chunk.buffer());
			list_.keepAlive(b->headers.buffer);
			for (const auto& sp : b->slots)
				encodeSlot(chunk, *b, *sp);
		}
	}

private:
	void encodeSlot(const Chunk& chunk, const Bucket& b, const Slot& s)
	{
		if (s.records.empty() || s.emit_sum == 0)
			return;
		if (s.route)
		{
			encodeRouted(chunk, b, s);
			return;
		}
		const bool mega = s.strategy == DrawStrategy::Megacall;
		const inputs::PipelineEntry* entry = mega ? s.megacall_pipeline : s.indirect_pipeline;
		if (mega && !entry)
		{
			++stats_.waiting_draws; // (its megacall effect compiles in the background)
			return;
		}
		if (!entry || (mega && (!s.args || !s.tiles || !s.mrecords.buffer)) || (!mega && !s.commands.buffer))
			return;
		if (!entry->ready())
		{
			++stats_.waiting_draws; // (created in the background: drawn from the first frame after it is ready)
			return;
		}
		const gpu::Pipeline& pipeline = *entry->pipeline;
		bind(pipeline);
		if (mega)
		{
			list_.keepAlive(s.mrecords.buffer);
			list_.keepAlive(s.tiles);
			list_.keepAlive(s.args);
			const VkDescriptorBufferInfo records[2] = {{s.mrecords.buffer->vk(), 0, VK_WHOLE_SIZE},
			                                           {s.tiles->vk(), 0, VK_WHOLE_SIZE}};
			pushDescriptors(pipeline, chunk, b, records);
		}
		else
			pushDescriptors(pipeline, chunk, b, nullptr);
		setDynamic(s.dyn);
		draw(chunk, s, mega);
		++stats_.draw_calls;
	}

	/// Binds `pipeline` unless it is bound.
	void bind(const gpu::Pipeline& pipeline)
	{
		if (&pipeline == bound_)
			return;
		pipeline.bind(list_);
		bound_ = &pipeline;
		++stats_.pipeline_binds;
	}
	/// Sets `dyn` unless it is set (the slots' dynamic states live as long as the encoder).
	void setDynamic(const gpu::DynamicState& dyn)
	{
		if (dyn_ && *dyn_ == dyn)
			return;
		dyn.apply(list_.vk());
		dyn_ = &dyn;
	}

	/// A route group: one draw per spec slot over its region of the partition's output — an indirect-count draw of
	/// its commands, or the megacall over its records (the scan's arguments).
	void encodeRouted(const Chunk& chunk, const Bucket& b, const Slot& s)
	{
		const RouteGroup& g = *s.route;
		const bool mega = s.strategy == DrawStrategy::Megacall;
		if (!g.routed)
		{
			stats_.waiting_draws += uint32_t(g.draws.size()); // (its route kernel compiles in the background)
			return;
		}
		if (!g.out || g.capacity == 0 || g.stride != (mega ? fx::kRecordWords : s.commandWords()))
			return;
		list_.keepAlive(g.out);
		list_.keepAlive(g.counts);
		const uint32_t cw = s.commandWords();
		for (uint32_t k = 0; k < g.draws.size(); ++k)
		{
			const RouteGroup::Draw& d = g.draws[k];
			const inputs::PipelineEntry* entry = mega ? d.megacall : d.pipeline;
			if (!entry || !entry->ready() || (mega && (!g.args || k >= g.tiles.size() || !g.tiles[k])))
			{
				++stats_.waiting_draws;
				continue;
			}
			const gpu::Pipeline& pipeline = *entry->pipeline;
			bind(pipeline);
			setDynamic(d.dyn);
			if (mega)
			{
				list_.keepAlive(g.tiles[k]);
				list_.keepAlive(g.args);
				const uint64_t bytes = uint64_t(g.capacity) * fx::kRecordWords * 4;
				const VkDescriptorBufferInfo records[2] = {{g.out->vk(), k * bytes, bytes},
				                                           {g.tiles[k]->vk(), 0, VK_WHOLE_SIZE}};
				pushDescriptors(pipeline, chunk, b, records);
				vkCmdDrawIndirect(list_.vk(), g.args->vk(), VkDeviceSize(k) * 16, 1, 16);
				++stats_.draw_calls;
				continue;
			}
			pushDescriptors(pipeline, chunk, b, nullptr);
			const VkDeviceSize at = VkDeviceSize(k) * g.capacity * cw * 4;
			if (s.indexed)
			{
				if (index_buffer_ != chunk.buffer()->vk())
				{
					vkCmdBindIndexBuffer(list_.vk(), chunk.buffer()->vk(), 0, VK_INDEX_TYPE_UINT32);
					index_buffer_ = chunk.buffer()->vk();
				}
				vkCmdDrawIndexedIndirectCount(list_.vk(), g.out->vk(), at, g.counts->vk(), VkDeviceSize(k) * 4,
				                              g.capacity, 20);
			}
			else
				vkCmdDrawIndirectCount(list_.vk(), g.out->vk(), at, g.counts->vk(), VkDeviceSize(k) * 4, g.capacity,
				                       16);
			++stats_.draw_calls;
		}
	}

	/// The arena, the bucket's headers, with `mega` the megacall records and tile index (bindings 2 and 3; the caller
	/// keeps them alive), and the bucket's textures.
	void pushDescriptors(const gpu::Pipeline& pipeline, const Chunk& chunk, const Bucket& b,
	                     const VkDescriptorBufferInfo* mega)
	{
		writes_.clear();
		images_.clear();
		infos_[0] = {chunk.buffer()->vk(), 0, VK_WHOLE_SIZE};
		infos_[1] = {b.headers.buffer->vk(), 0, VK_WHOLE_SIZE};
		uint32_t n_buffers = 2;
		if (mega)
		{
			infos_[2] = mega[0];
			infos_[3] = mega[1];
			n_buffers = 4;
		}
		for (uint32_t i = 0; i < n_buffers; ++i)
		{
			VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
			w.dstBinding = i;
			w.descriptorCount = 1;
			w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
			w.pBufferInfo = &infos_[i];
			writes_.push_back(w);
		}
		images_.reserve(std::max<size_t>(b.textures.size(), 2)); // (writes_ points into images_: no reallocation)
		if (b.atlas)
		{
			// The pages of both families (a family without pages yet shows the other's: no entry reads it).
			const gpu::ImageHandle& unorm = p_.atlas_pool->page(atlas::Family::Unorm);
			const gpu::ImageHandle& srgb = p_.atlas_pool->page(atlas::Family::Srgb);
			const gpu::ImageHandle* pages[2] = {unorm ? &unorm : &srgb, srgb ? &srgb : &unorm};
			for (uint32_t i = 0; i < 2; ++i)
			{
				// (A stage that only asks for sizes reads no page: the optimiser removed the binding.)
				const auto& layout = pipeline.bindings();
				if (std::none_of(layout.begin(), layout.end(),
				                 [&](const gpu::DescriptorBinding& d)
				                 { return d.set == 0 && d.binding == fx::kHeapAtlasBinding + i; }))
					continue;
				QUOKKA_ASSERT(*pages[i], "an atlas bucket is drawn before the atlas has pages");
				list_.keepAlive(*pages[i]);
				images_.push_back(
				    {p_.atlas_sampler->vk(), (*pages[i])->view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL});
				VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
				w.dstBinding = fx::kHeapAtlasBinding + i;
				w.descriptorCount = 1;
				w.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
				w.pImageInfo = &images_.back();
				writes_.push_back(w);
			}
		}
		for (size_t i = 0; i < b.textures.size(); ++i)
		{
			if (!b.textures[i]->image())
				continue;
			images_.push_back(
			    {b.samplers[i]->vk(), b.textures[i]->image()->view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL});
			VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
			w.dstBinding = b.texture_bindings[i];
			w.descriptorCount = 1;
			w.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
			w.pImageInfo = &images_.back();
			writes_.push_back(w);
		}
		pipeline.pushDescriptors(list_, writes_);
		// (Bound after set 0: pushing a set-0 layout of another pipeline's may disturb the sets above it.)
		if (b.bindless && pipeline.setLayout(fx::kHeapBindlessSet))
			p_.bindless->table().bind(list_, pipeline, fx::kHeapBindlessSet);
	}

	void draw(const Chunk& chunk, const Slot& s, bool mega)
	{
		VkCommandBuffer cmd = list_.vk();
		if (mega)
		{
			vkCmdDrawIndirect(cmd, s.args->vk(), 0, 1, 16);
			return;
		}
		list_.keepAlive(s.commands.buffer);
		list_.keepAlive(s.draw_count.buffer);
		const uint32_t n = uint32_t(s.records.size());
		if (!s.indexed)
		{
			vkCmdDrawIndirectCount(cmd, s.commands.buffer->vk(), 0, s.draw_count.buffer->vk(), 0, n, 16);
			return;
		}
		if (index_buffer_ != chunk.buffer()->vk())
		{
			vkCmdBindIndexBuffer(cmd, chunk.buffer()->vk(), 0, VK_INDEX_TYPE_UINT32);
			index_buffer_ = chunk.buffer()->vk();
		}
		vkCmdDrawIndexedIndirectCount(cmd, s.commands.buffer->vk(), 0, s.draw_count.buffer->vk(), 0, n, 20);
	}

	detail::HeapCore& p_;
	HeapStats& stats_;
	gpu::CommandList& list_;
	const gpu::Pipeline* bound_ = nullptr;
	const gpu::DynamicState* dyn_ = nullptr;
	VkBuffer index_buffer_ = VK_NULL_HANDLE;
	std::vector<VkWriteDescriptorSet> writes_;
	std::vector<VkDescriptorBufferInfo> infos_ = std::vector<VkDescriptorBufferInfo>(4);
	std::vector<VkDescriptorImageInfo> images_;
};

} // namespace

void HeapScene::encode(gpu::CommandList& list)
{
	const auto t0 = std::chrono::steady_clock::now();
	impl_->holdUntilRetired(list);
	Encoder encoder(*impl_, stats_, list);
	encoder.run();
	stats_.encode_ms = msSince(t0);
}

} // namespace quokka::heap
