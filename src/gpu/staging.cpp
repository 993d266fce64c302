// Staging ring: scattered writes → one vkCmdCopyBuffer (or one ScatterCopy dispatch) per destination per flush.
#include <quokka/base/range_overlay.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>
#include <quokka/gpu/staging.hpp>

#include <algorithm>
#include <cstring>
#include <functional>

namespace quokka::gpu
{

namespace
{
// Staging offsets are 16-byte aligned: keeps vkCmdCopyBuffer's source regions friendly to every driver's DMA path.
constexpr uint64_t kStagingAlign = 16;
// Free chunks kept beyond this are released (bounds idle host-visible memory to 8 × chunk_bytes).
constexpr size_t kMaxFreeChunks = 8;
// Chunks never grow past this (a larger single write still gets a chunk of its own size): a frame of gigabytes — a
// whole scene placed at once — then spans a few chunks instead of asking the driver for one of its size, and the
// ring does not keep gigabytes of host-visible memory afterwards.
constexpr uint64_t kMaxChunkBytes = 256ull << 20;
} // namespace

StagingRing::StagingRing(Device& device, uint64_t chunk_bytes)
    : device_(&device), chunk_bytes_(std::max<uint64_t>(chunk_bytes, 4096)), min_chunk_bytes_(chunk_bytes_),
      recycle_(std::make_shared<std::vector<BufferHandle>>())
{
}

StagingRing::~StagingRing() = default;

uint64_t StagingRing::stagingBytes() const
{
	uint64_t total = 0;
	for (const Chunk& c : active_)
		total += c.buffer->size();
	for (const BufferHandle& b : free_)
		total += b->size();
	for (const BufferHandle& b : *recycle_)
		total += b->size();
	return total;
}

Result<StagingRing::Chunk*> StagingRing::chunkFor(uint64_t size)
{
	if (!active_.empty())
	{
		Chunk& last = active_.back();
		const uint64_t at = (last.cursor + kStagingAlign - 1) & ~(kStagingAlign - 1);
		if (at + size <= last.buffer->size())
		{
			last.cursor = at;
			return &last;
		}
	}
	trimFree();
	// The smallest free chunk that holds the steady-state size and this write; else, for the frame's first chunk, the
	// largest free one that holds the write: after a frame far larger than this one (placing a scene) the chunk size
	// is still that frame's, and a small frame reuses a chunk it has instead of asking the driver for one of that size
	// (hundreds of MiB of host-visible memory: a stall of 100 ms on some drivers). A frame that overflows it makes a
	// chunk of the steady-state size, which the next frame of that volume uses alone.
	const uint64_t want = std::max(size, chunk_bytes_);
	size_t pick = free_.size();
	for (size_t i = 0; i < free_.size(); ++i) // (largest first)
		if (free_[i]->size() >= want)
			pick = i;
	if (pick == free_.size() && active_.empty() && !free_.empty() && free_.front()->size() >= size)
		pick = 0;
	Chunk chunk;
	if (pick < free_.size())
	{
		chunk.buffer = std::move(free_[pick]);
		free_.erase(free_.begin() + std::ptrdiff_t(pick));
	}
	else
	{
		// Within a frame the new chunks grow with what the frame staged so far (capped): a large frame asks the
		// driver for O(log) chunks, not one per chunk_bytes — each allocation is an ioctl, page clearing and a
		// page-attribute change with TLB shootdowns, which made up a third of placing 10^6 objects on the H200.
		uint64_t staged = 0;
		for (const Chunk& c : active_)
			staged += c.cursor;
		const uint64_t bytes = std::max({size, chunk_bytes_, std::min(staged, kMaxChunkBytes)});
		auto buffer = device_->createBuffer(
		    {bytes, BufferUsage::TransferSrc | BufferUsage::Storage, MemoryDomain::Upload, "quokka.staging"});
		if (!buffer.ok())
			return buffer.error();
		chunk.buffer = std::move(buffer.value());
	}
	active_.push_back(std::move(chunk));
	return &active_.back();
}

void StagingRing::trimFree()
{
	for (BufferHandle& b : *recycle_)
		free_.push_back(std::move(b));
	recycle_->clear();
	if (free_.empty())
		return;
	// Largest first. Chunks smaller than the steady-state size go once one of that size exists; chunks far larger
	// (kept from a frame of gigabytes, such as placing a scene) hold host-visible memory nobody needs. Kept in any
	// case: the smallest chunk that holds the steady-state size, or the largest chunk while none does — the small
	// frames after a large one reuse it (chunkFor) while the chunk size shrinks back.
	std::sort(free_.begin(), free_.end(),
	          [](const BufferHandle& a, const BufferHandle& b) { return a->size() > b->size(); });
	size_t smallest_fit = 0;
	for (size_t i = 0; i < free_.size(); ++i)
		if (free_[i]->size() >= chunk_bytes_)
			smallest_fit = i;
	std::vector<BufferHandle> kept;
	for (size_t i = 0; i < free_.size() && kept.size() < kMaxFreeChunks; ++i)
		if (i == smallest_fit || (free_[i]->size() >= chunk_bytes_ && free_[i]->size() <= 4 * chunk_bytes_))
			kept.push_back(std::move(free_[i]));
	free_ = std::move(kept);
}

void StagingRing::insertRegion(Destination& dst, uint64_t offset, Region region)
{
	if (dst.ordered)
	{
		auto& v = dst.ascending;
		if (v.empty() || v.back().first + v.back().second.size <= offset)
		{
			Region& last = v.empty() ? region : v.back().second;
			if (!v.empty() && v.back().first + last.size == offset && last.src == region.src &&
			    last.src_offset + last.size == region.src_offset)
				last.size += region.size; // contiguous in the destination and in the staging chunk
			else
				v.emplace_back(offset, region);
			return;
		}
		// Out of order: from now on the ordered map resolves overlaps.
		for (const auto& [o, r] : v)
			dst.regions.emplace_hint(dst.regions.end(), o, r);
		v.clear();
		dst.ordered = false;
	}
	// Overlap: the newer write wins; the parts of older regions outside it are kept.
	overlayRange(
	    dst.regions, offset, region, [](const Region& r) { return r.size; },
	    [](const Region& r, uint64_t skip, uint64_t size) {
		    return Region{size, r.src, r.src_offset + skip};
	    });
}

Result<void> StagingRing::write(const BufferHandle& dst, uint64_t dst_offset, const void* data, uint64_t size)
{
	QUOKKA_ASSERT(dst, "StagingRing::write to a null buffer");
	if (size == 0)
		return {};
	if (dst_offset + size > dst->size() || dst_offset + size < dst_offset)
		return makeError(ErrorCode::InvalidArgument, "staging write [" + std::to_string(dst_offset) + ", +" +
		                                                 std::to_string(size) + ") is outside '" + dst->name() + "' (" +
		                                                 std::to_string(dst->size()) + " bytes)");
	QUOKKA_ASSERT(hasFlag(dst->usage(), BufferUsage::TransferDst), "staging write into a buffer without TransferDst");
	auto chunk = chunkFor(size);
	if (!chunk.ok())
		return chunk.error();
	Chunk& c = *chunk.value();
	std::memcpy(c.buffer->mapped() + c.cursor, data, size);
	if (dst->id() != last_id_ || !last_)
	{
		last_ = &pending_[dst->id()]; // element references survive rehashing
		last_id_ = dst->id();
	}
	Destination& d = *last_;
	if (!d.buffer)
		d.buffer = dst;
	insertRegion(d, dst_offset, Region{size, c.buffer.get(), c.cursor});
	c.cursor += size;
	pending_bytes_ += size;
	return {};
}

bool StagingRing::planScatter(Group& g)
{
	if (scatter_failed_ || !hasFlag(g.dst->usage(), BufferUsage::Storage))
		return false;
	uint32_t count = 0;
	uint64_t lo = UINT64_MAX, hi = 0, dlo = UINT64_MAX, dhi = 0, bytes = 0;
	for (size_t i = g.begin; i < g.end; ++i)
		if (const VkBufferCopy& r = copies_[i].copy; ScatterCopy::scatterable(r))
		{
			++count;
			bytes += r.size;
			lo = std::min(lo, r.srcOffset);
			hi = std::max(hi, r.srcOffset + r.size);
			dlo = std::min(dlo, r.dstOffset);
			dhi = std::max(dhi, r.dstOffset + r.size);
		}
	if (count == 0 || count <= scatter_above_)
		return false;
	if (!scatter_)
	{
		auto made = ScatterCopy::create(*device_);
		if (!made.ok())
		{
			scatter_failed_ = true; // (a pipeline that cannot be built now will not be later)
			return false;
		}
		scatter_.emplace(std::move(made.value()));
	}
	const uint64_t align = scatter_->offsetAlignment();
	const uint64_t src_base = lo - lo % align, dst_base = dlo - dlo % align;
	const uint64_t src_range = (hi - src_base + 3) / 4 * 4, dst_range = (dhi - dst_base + 3) / 4 * 4;
	if (src_range > scatter_->maxRange() || dst_range > scatter_->maxRange())
		return false;
	// The table is staged like a write, at a binding-aligned offset.
	const uint64_t table_bytes = uint64_t(count) * sizeof(ScatterRegion);
	auto chunk = chunkFor(table_bytes + align);
	if (!chunk.ok())
		return false;
	Chunk& c = *chunk.value();
	const uint64_t table_at = (c.cursor + align - 1) / align * align;
	auto* table = reinterpret_cast<ScatterRegion*>(c.buffer->mapped() + table_at);
	c.cursor = table_at + table_bytes;
	// The copies left over (long or unaligned regions) move to the group's front, the scattered ones into the table.
	size_t kept = g.begin;
	uint32_t n = 0;
	for (size_t i = g.begin; i < g.end; ++i)
	{
		const VkBufferCopy& r = copies_[i].copy;
		if (ScatterCopy::scatterable(r))
			table[n++] = {uint32_t((r.srcOffset - src_base) / 4), uint32_t((r.dstOffset - dst_base) / 4),
			              uint32_t(r.size / 4), 0};
		else
			copies_[kept++] = copies_[i];
	}
	g.scatter = true;
	g.source = {copies_[g.begin].src, src_base, src_range};
	g.target = {g.dst, dst_base, dst_range};
	g.table = {c.buffer.get(), table_at, table_bytes};
	g.count = count;
	g.scattered_bytes = bytes;
	g.end = kept; // [begin, kept): still copied
	return true;
}

StagingFlushStats StagingRing::flush(CommandList& list, VkPipelineStageFlags2 dst_stages, VkAccessFlags2 dst_access)
{
	StagingFlushStats stats;
	if (pending_.empty())
		return stats;
	// Each destination's regions in destination order, adjacent ones (in both buffers) merged, then grouped by staging
	// chunk (destination order kept inside each): one vkCmdCopyBuffer or one scatter per group.
	copies_.clear();
	groups_.clear();
	for (auto& [id, d] : pending_)
	{
		const size_t first = copies_.size();
		auto add = [&](uint64_t offset, const Region& r)
		{
			if (copies_.size() > first)
			{
				Copy& last = copies_.back();
				if (last.src == r.src && last.copy.dstOffset + last.copy.size == offset &&
				    last.copy.srcOffset + last.copy.size == r.src_offset)
				{
					last.copy.size += r.size;
					return;
				}
			}
			copies_.push_back({r.src, VkBufferCopy{r.src_offset, offset, r.size}});
		};
		if (d.ordered)
			for (const auto& [offset, r] : d.ascending)
				add(offset, r);
		else
			for (const auto& [offset, r] : d.regions)
				add(offset, r);
		const auto begin = copies_.begin() + std::ptrdiff_t(first);
		if (!std::all_of(begin, copies_.end(), [&](const Copy& c) { return c.src == begin->src; }))
			std::stable_sort(begin, copies_.end(),
			                 [](const Copy& a, const Copy& b) { return std::less<const Buffer*>()(a.src, b.src); });
		for (size_t i = first; i < copies_.size();)
		{
			size_t j = i;
			while (j < copies_.size() && copies_[j].src == copies_[i].src)
				++j;
			groups_.push_back({d.buffer.get(), i, j});
			i = j;
		}
		list.keepAlive(d.buffer);
	}
	bool any_scatter = false;
	for (Group& g : groups_)
		any_scatter |= planScatter(g);
	// The tables are staged: now the chunks are complete.
	for (Chunk& c : active_)
		c.buffer->flush();
	// Prior GPU work may read or write the destinations: order the copies (and scatters) after it.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COPY_BIT | (any_scatter ? VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT : 0),
	                   VK_ACCESS_2_TRANSFER_WRITE_BIT | (any_scatter ? VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT : 0));
	bool any_copy = false;
	for (const Group& g : groups_)
	{
		if (g.end == g.begin)
			continue;
		regions_.clear();
		for (size_t k = g.begin; k < g.end; ++k)
		{
			regions_.push_back(copies_[k].copy);
			stats.bytes += copies_[k].copy.size;
		}
		vkCmdCopyBuffer(list.vk(), copies_[g.begin].src->vk(), g.dst->vk(), uint32_t(regions_.size()), regions_.data());
		any_copy = true;
		++stats.destinations;
		stats.regions += uint32_t(regions_.size());
	}
	if (any_scatter)
	{
		// The scatters bind whole ranges of their destinations, which the copies above may write too, and two scatters
		// of one destination (its writes spanned two chunks) bind overlapping ranges: order each after those writes.
		if (any_copy)
			list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
		const Buffer* previous = nullptr;
		for (const Group& g : groups_)
		{
			if (!g.scatter)
				continue;
			if (previous == g.dst)
				list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
				                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
			scatter_->record(list, g.source, g.target, g.table, g.count);
			previous = g.dst;
			++stats.scatters;
			stats.scattered += g.count;
			stats.bytes += g.scattered_bytes;
		}
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT | (any_scatter ? VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT : 0),
	                   VK_ACCESS_2_TRANSFER_WRITE_BIT | (any_scatter ? VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT : 0),
	                   dst_stages, dst_access);

	// A frame that needed several chunks needed several copies per destination; size the chunks so that the next
	// frame of this volume fits in one (the steady state is one vkCmdCopyBuffer per destination per frame). After
	// smaller frames the size halves per frame down to what they need, so the memory kept after a frame of gigabytes
	// goes back (trimFree) without a steady frame waiting for a new chunk.
	{
		uint64_t total = 0;
		for (const Chunk& c : active_)
			total += c.cursor;
		const uint64_t need = nextPowerOfTwo(std::max<uint64_t>(total, 1));
		chunk_bytes_ = active_.size() > 1
		                   ? std::max(chunk_bytes_, std::min(need, kMaxChunkBytes))
		                   : std::max({min_chunk_bytes_, chunk_bytes_ / 2, std::min(need, kMaxChunkBytes)});
	}
	// The chunks return to the ring once the list completed.
	auto recycle = recycle_;
	std::vector<BufferHandle> used;
	for (Chunk& c : active_)
		used.push_back(std::move(c.buffer));
	active_.clear();
	list.onRetire(
	    [recycle, used = std::move(used)]() mutable
	    {
		    for (BufferHandle& b : used)
			    recycle->push_back(std::move(b));
	    });
	pending_.clear();
	last_ = nullptr;
	last_id_ = 0;
	pending_bytes_ = 0;
	return stats;
}

} // namespace quokka::gpu
