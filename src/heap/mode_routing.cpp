// mode_routing.cpp — GPU routing of pipeline state (buckets.hpp, RouteGroup): each changed group's route kernel and
// partition, recorded in prepare() after the frame's uploads, before the draws that read their output.
#include "heap_internal.hpp"

#include <quokka/fx/megacall_glsl.hpp>

#include <bit>
#include <cstring>

namespace quokka::heap::detail
{

namespace
{

/// Words of one record the carrier partitions: its indirect commands, or its megacall records.
uint32_t strideOf(const Slot& carrier)
{
	return carrier.strategy == DrawStrategy::Megacall ? fx::kRecordWords : carrier.commandWords();
}

/// The group's buffers for at least the carrier's records: regions of a power of two records (at least 64), one per
/// spec slot; re-made when the records outgrow them, the strategy changed the record size or the spec its slots.
Result<void> ensureBuffers(gpu::Device& device, Slot& carrier)
{
	RouteGroup& g = *carrier.route;
	const uint32_t n = uint32_t(carrier.records.size());
	if (g.capacity >= n && g.out && g.stride == strideOf(carrier))
		return {};
	const uint32_t cap = std::max<uint32_t>(64, std::bit_ceil(n));
	const uint64_t slots = g.spec.slots();
	const auto storage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc;
	const auto indirect = storage | gpu::BufferUsage::Indirect;
	QUOKKA_TRY_ASSIGN(
	    slot_of, device.createBuffer({uint64_t(cap) * 4, storage, gpu::MemoryDomain::DeviceLocal, "heap route slots"}));
	QUOKKA_TRY_ASSIGN(counts, device.createBuffer({std::max<uint64_t>(16, slots * 4), indirect,
	                                               gpu::MemoryDomain::DeviceLocal, "heap route counts"}));
	QUOKKA_TRY_ASSIGN(cursors, device.createBuffer({std::max<uint64_t>(16, slots * 4), storage,
	                                                gpu::MemoryDomain::DeviceLocal, "heap route cursors"}));
	QUOKKA_TRY_ASSIGN(
	    out, device.createBuffer({slots * cap * strideOf(carrier) * 4, indirect | gpu::BufferUsage::TransferDst,
	                              gpu::MemoryDomain::DeviceLocal, "heap routed commands"}));
	QUOKKA_TRY_ASSIGN(regions, device.createBuffer({std::max<uint64_t>(16, slots * 8), gpu::BufferUsage::Storage,
	                                                gpu::MemoryDomain::Upload, "heap route regions"}));
	std::vector<uint32_t> words(size_t(slots) * 2);
	for (uint64_t k = 0; k < slots; ++k)
	{
		words[2 * k] = uint32_t(k * cap);
		words[2 * k + 1] = cap;
	}
	std::memcpy(regions->mapped(), words.data(), words.size() * 4);
	regions->flush();
	g.slot_of = std::move(slot_of);
	g.counts = std::move(counts);
	g.cursors = std::move(cursors);
	g.out = std::move(out);
	g.regions = std::move(regions);
	g.capacity = cap;
	g.stride = strideOf(carrier);
	g.routed = false;
	g.scans.clear(); // (sized for the old capacity; made again for the megacall)
	g.tiles.clear();
	if (!g.bad)
	{
		QUOKKA_TRY_ASSIGN(bad, device.createBuffer(
		                           {16, gpu::BufferUsage::Storage, gpu::MemoryDomain::Readback, "heap route report"}));
		const uint32_t none[4] = {modes::kNoSlot, modes::kNoSlot, modes::kNoSlot, modes::kNoSlot};
		std::memcpy(bad->mapped(), none, sizeof none);
		bad->flush();
		g.bad = std::move(bad);
	}
	return {};
}

/// A megacall carrier's per-draw pipelines (from its bucket's megacall effect: false while that compiles in the
/// background), scan scratch, tile indices and arguments. Errors: as pipeline and buffer creation.
Result<bool> prepareMegacall(HeapCore& p, Slot& carrier)
{
	RouteGroup& g = *carrier.route;
	Bucket& b = *carrier.bucket;
	if (!b.megacall_effect)
	{
		QUOKKA_TRY_ASSIGN(effect, p.context->compiledEffect(b.effect, p.outputs, b.megacallVariant()));
		if (!effect)
			return false;
		b.megacall_effect = effect;
	}
	gpu::Device& device = p.context->device();
	const uint32_t tiles = tileCapacityBound(carrier.emit_sum);
	g.scans.resize(g.draws.size());
	g.tiles.resize(g.draws.size());
	for (size_t k = 0; k < g.draws.size(); ++k)
	{
		RouteGroup::Draw& d = g.draws[k];
		if (!d.megacall)
		{
			inputs::PipelineRequest req = d.request;
			req.effect = b.megacall_effect;
			QUOKKA_TRY_ASSIGN(entry, p.context->pipeline(req));
			d.megacall = entry;
		}
		if (!g.scans[k])
		{
			QUOKKA_TRY_ASSIGN(scan, ScanBuffers::create(device, g.capacity, "heap route scan"));
			g.scans[k].emplace(std::move(scan));
		}
		if (!g.tiles[k] || g.tiles[k]->size() < uint64_t(tiles) * 4)
		{
			const uint64_t size = gpu::nextPowerOfTwo(std::max<uint64_t>(256, uint64_t(tiles) * 4));
			QUOKKA_TRY_ASSIGN(t, device.createBuffer({size, gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
			                                          gpu::MemoryDomain::DeviceLocal, "heap route tiles"}));
			g.tiles[k] = std::move(t);
		}
	}
	if (!g.args || g.args->size() < g.draws.size() * 16)
	{
		QUOKKA_TRY_ASSIGN(a, device.createBuffer({std::max<uint64_t>(16, g.draws.size() * 16),
		                                          gpu::BufferUsage::Indirect | gpu::BufferUsage::Storage |
		                                              gpu::BufferUsage::TransferSrc,
		                                          gpu::MemoryDomain::DeviceLocal, "heap route args"}));
		g.args = std::move(a);
	}
	return true;
}

} // namespace

Result<void> recordRouting(HeapCore& p, gpu::CommandList& list, std::span<Slot* const> carriers, HeapStats& stats,
                           std::vector<Slot*>& later)
{
	gpu::Device& device = p.context->device();
	if (!p.partition)
	{
		QUOKKA_TRY_ASSIGN(k, modes::PartitionKernel::create(device));
		p.partition.emplace(std::move(k));
	}
	std::vector<Slot*> routed, mega;
	for (Slot* s : carriers)
	{
		if (!s->route->kernel->ready())
		{
			s->route->routed =
			    false; // (compiling in the background, or failed: Context::pipelineErrors fails the frame)
			later.push_back(s);
			continue;
		}
		QUOKKA_TRY(ensureBuffers(device, *s));
		if (s->strategy == DrawStrategy::Megacall)
		{
			QUOKKA_TRY_ASSIGN(ready, prepareMegacall(p, *s));
			if (!ready)
			{
				later.push_back(s);
				continue;
			}
			mega.push_back(s);
		}
		routed.push_back(s);
	}
	if (routed.empty())
		return {};
	// Earlier frames' draws may still read the outputs rewritten here (write-after-read: an execution dependency
	// suffices); megacall regions are cleared first, so the records past a region's count emit nothing.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT |
	                       VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_NONE, VK_PIPELINE_STAGE_2_CLEAR_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_NONE);
	for (Slot* s : mega)
	{
		list.keepAlive(s->route->out);
		vkCmdFillBuffer(list.vk(), s->route->out->vk(), 0, VK_WHOLE_SIZE, 0);
	}
	// The carriers' commands and packed inputs were staged by this frame's uploads (transfers), the clears above.
	list.memoryBarrier(
	    VK_PIPELINE_STAGE_2_COPY_BIT | VK_PIPELINE_STAGE_2_CLEAR_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	    VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	    VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	for (Slot* s : routed)
	{
		RouteGroup& g = *s->route;
		const gpu::Buffer& inputs = g.inputs.buffer ? *g.inputs.buffer : *g.slot_of; // (none read: no inputs)
		if (g.inputs.buffer)
			list.keepAlive(g.inputs.buffer);
		list.keepAlive(g.slot_of);
		list.keepAlive(g.bad);
		g.kernel->kernel->dispatch(list, inputs, *g.slot_of, *g.bad, uint32_t(s->records.size()));
		// (The list is submitted next: its timeline value follows the last one submitted.)
		g.bad_after = device.lastSubmittedValue() + 1;
		if (std::find(p.route_checks.begin(), p.route_checks.end(), s) == p.route_checks.end())
			p.route_checks.push_back(s);
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	for (Slot* s : routed)
	{
		RouteGroup& g = *s->route;
		const bool is_mega = s->strategy == DrawStrategy::Megacall;
		const gpu::BufferHandle& records = is_mega ? s->mrecords.buffer : s->commands.buffer;
		for (const gpu::BufferHandle* b :
		     std::initializer_list<const gpu::BufferHandle*>{&g.counts, &g.cursors, &g.out, &g.regions, &records})
			list.keepAlive(*b);
		const modes::PartitionBuffers buffers{g.slot_of.get(), records.get(),   g.counts.get(),
		                                      g.regions.get(), g.cursors.get(), g.out.get()};
		p.partition->regions(list, buffers, uint32_t(s->records.size()), g.stride, g.spec.slots());
		g.routed = true;
		++stats.routed_groups;
	}
	// The megacall draws: each region scanned as its own job (the scan's first barrier orders it after the partition,
	// its last one before the draws).
	std::vector<ScanJob> jobs;
	for (Slot* s : mega)
	{
		RouteGroup& g = *s->route;
		for (size_t k = 0; k < g.draws.size(); ++k)
		{
			ScanJob job;
			job.buffers = &*g.scans[k];
			job.records = g.out.get();
			job.records_offset = uint64_t(k) * g.capacity * fx::kRecordWords * 4;
			job.record_count = g.capacity;
			job.tile_capacity = tileCapacityBound(s->emit_sum);
			job.args = g.args.get();
			job.args_offset = uint64_t(k) * 16;
			job.tiles = g.tiles[k].get();
			jobs.push_back(job);
		}
	}
	if (!jobs.empty())
	{
		if (!p.scanner)
		{
			QUOKKA_TRY_ASSIGN(scanner, MegacallScan::create(device));
			p.scanner.emplace(std::move(scanner));
		}
		QUOKKA_TRY(p.scanner->record(list, jobs));
		stats.scans += uint32_t(jobs.size());
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT |
	                       VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_HOST_BIT,
	                   VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT |
	                       VK_ACCESS_2_HOST_READ_BIT);
	return {};
}

Result<void> checkRouting(HeapCore& p)
{
	if (p.route_checks.empty())
		return {};
	const uint64_t completed = p.context->device().completedValue();
	Result<void> result;
	std::erase_if(p.route_checks,
	              [&](Slot* s)
	              {
		              RouteGroup& g = *s->route;
		              if (completed < g.bad_after)
			              return false; // (its frame is still running: read later)
		              g.bad->invalidate();
		              uint32_t first = 0;
		              std::memcpy(&first, g.bad->mapped(), 4);
		              if (first == modes::kNoSlot)
			              return true;
		              const uint32_t none = modes::kNoSlot;
		              std::memcpy(g.bad->mapped(), &none, 4);
		              g.bad->flush();
		              if (!result.ok())
			              return true;
		              // The flagged record's object when it is still there, else whichever object of the group the
		              // CPU finds wrong (records move); none when the value was changed since.
		              if (first < s->records.size())
			              result = s->records[first]->applyRulesOnCpu();
		              for (size_t i = 0; result.ok() && i < s->records.size(); ++i)
			              result = s->records[i]->applyRulesOnCpu();
		              return true;
	              });
	return result;
}

} // namespace quokka::heap::detail
