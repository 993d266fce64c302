// Staging ring: scattered writes → one vkCmdCopyBuffer per destination per flush.
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>
#include <quokka/gpu/staging.hpp>

#include <algorithm>
#include <cstring>

namespace quokka::gpu
{

namespace
{
// Staging offsets are 16-byte aligned: keeps vkCmdCopyBuffer's source regions friendly to every driver's DMA path.
constexpr uint64_t kStagingAlign = 16;
// Free chunks kept beyond this are released (bounds idle host-visible memory to 8 × chunk_bytes).
constexpr size_t kMaxFreeChunks = 8;
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
		auto buffer = device_->createBuffer(
		    {std::max(size, chunk_bytes_), BufferUsage::TransferSrc, MemoryDomain::Upload, "quokka.staging"});
		if (!buffer.ok())
			return buffer.error();
		chunk.buffer = std::move(buffer.value());
	}
	active_.push_back(std::move(chunk));
	return &active_.back();
}

void StagingRing::insertRegion(Destination& dst, uint64_t offset, Region region)
{
	const uint64_t end = offset + region.size;
	auto& map = dst.regions;
	// Writes in ascending order (a placement frame, sorted runs): append without searching.
	if (map.empty() || map.rbegin()->first + map.rbegin()->second.size <= offset)
	{
		map.emplace_hint(map.end(), offset, region);
		return;
	}
	// First region that may overlap: the one starting at or before `offset`.
	auto it = map.upper_bound(offset);
	if (it != map.begin())
		--it;
	std::vector<std::pair<uint64_t, Region>> keep; // trimmed pieces of older regions
	while (it != map.end() && it->first < end)
	{
		const uint64_t r_begin = it->first;
		const uint64_t r_end = r_begin + it->second.size;
		if (r_end <= offset)
		{
			++it;
			continue;
		}
		// Overlap: the newer write wins. Keep the parts of the old region outside [offset, end).
		if (r_begin < offset)
			keep.push_back({r_begin, Region{offset - r_begin, it->second.src, it->second.src_offset}});
		if (r_end > end)
			keep.push_back({end, Region{r_end - end, it->second.src, it->second.src_offset + (end - r_begin)}});
		it = map.erase(it);
	}
	for (auto& [o, r] : keep)
		map.emplace(o, r);
	map.emplace(offset, region);
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
	Destination& d = pending_[dst->id()];
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
	std::vector<VkBufferCopy> copies;
	for (auto& [id, d] : pending_)
	{
		// One copy command per destination needs one source buffer; group regions by staging chunk.
		std::unordered_map<const Buffer*, std::vector<VkBufferCopy>> by_src;
		for (auto it = d.regions.begin(); it != d.regions.end(); ++it)
		{
			auto& v = by_src[it->second.src];
			const VkBufferCopy next{it->second.src_offset, it->first, it->second.size};
			if (!v.empty() && v.back().dstOffset + v.back().size == next.dstOffset &&
			    v.back().srcOffset + v.back().size == next.srcOffset)
				v.back().size += next.size; // adjacent in both: merge
			else
				v.push_back(next);
		}
		for (auto& [src, regions] : by_src)
		{
			vkCmdCopyBuffer(list.vk(), src->vk(), d.buffer->vk(), uint32_t(regions.size()), regions.data());
			++stats.destinations;
			stats.regions += uint32_t(regions.size());
			for (const VkBufferCopy& r : regions)
				stats.bytes += r.size;
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
		chunk_bytes_ = std::max(chunk_bytes_, nextPowerOfTwo(total));
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
	pending_bytes_ = 0;
	return stats;
}

} // namespace quokka::gpu
