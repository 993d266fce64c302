// Staging ring: scattered writes → one vkCmdCopyBuffer per destination per flush.
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
    : device_(&device), chunk_bytes_(std::max<uint64_t>(chunk_bytes, 4096)),
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
	// Pick up chunks that retired lists handed back.
	for (BufferHandle& b : *recycle_)
		if (free_.size() < kMaxFreeChunks)
			free_.push_back(std::move(b));
	recycle_->clear();

	// Chunks from before a chunk-size increase are too small for the new steady state: drop them.
	std::erase_if(free_, [this](const BufferHandle& b) { return b->size() < chunk_bytes_; });
	Chunk chunk;
	if (size <= chunk_bytes_ && !free_.empty())
	{
		chunk.buffer = std::move(free_.back());
		free_.pop_back();
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
		auto buffer = device_->createBuffer({bytes, BufferUsage::TransferSrc, MemoryDomain::Upload, "quokka.staging"});
		if (!buffer.ok())
			return buffer.error();
		chunk.buffer = std::move(buffer.value());
	}
	active_.push_back(std::move(chunk));
	return &active_.back();
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

StagingFlushStats StagingRing::flush(CommandList& list, VkPipelineStageFlags2 dst_stages, VkAccessFlags2 dst_access)
{
	StagingFlushStats stats;
	if (pending_.empty())
		return stats;
	for (Chunk& c : active_)
		c.buffer->flush();
	// Prior GPU work may read or write the destinations: order the copies after it (write-after-read/write).
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT);
	for (auto& [id, d] : pending_)
	{
		// Regions in destination order, adjacent ones (in both buffers) merged.
		copies_.clear();
		auto add = [&](uint64_t offset, const Region& r)
		{
			if (!copies_.empty())
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
		// One copy command per (destination, staging chunk): group by chunk, keeping destination order inside each.
		const bool one_source =
		    std::all_of(copies_.begin(), copies_.end(), [&](const Copy& c) { return c.src == copies_.front().src; });
		if (!one_source)
			std::stable_sort(copies_.begin(), copies_.end(),
			                 [](const Copy& a, const Copy& b) { return std::less<const Buffer*>()(a.src, b.src); });
		for (size_t i = 0; i < copies_.size();)
		{
			size_t j = i;
			regions_.clear();
			for (; j < copies_.size() && copies_[j].src == copies_[i].src; ++j)
			{
				regions_.push_back(copies_[j].copy);
				stats.bytes += copies_[j].copy.size;
			}
			vkCmdCopyBuffer(list.vk(), copies_[i].src->vk(), d.buffer->vk(), uint32_t(regions_.size()),
			                regions_.data());
			++stats.destinations;
			stats.regions += uint32_t(regions_.size());
			i = j;
		}
		list.keepAlive(d.buffer);
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT, dst_stages, dst_access);

	// A frame that needed several chunks needed several copies per destination; size the chunks so that the next
	// frame of this volume fits in one (the steady state is one vkCmdCopyBuffer per destination per frame).
	if (active_.size() > 1)
	{
		uint64_t total = 0;
		for (const Chunk& c : active_)
			total += c.cursor;
		chunk_bytes_ = std::max(chunk_bytes_, std::min(nextPowerOfTwo(total), kMaxChunkBytes));
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
