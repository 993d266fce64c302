// arena_staging.hpp — how the heap's arena bytes are staged on the host (internal to quokka::heap): host-visible
// pages the frame's writes are produced in, and each chunk's write log, turned into copy regions at upload.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>
#include <quokka/heap/chunk_allocator.hpp>

namespace quokka::heap::detail
{

/// Rounds up to 16 bytes: arena blocks (a 16-byte allocation header and the data) are 16-byte aligned.
constexpr uint64_t align16(uint64_t x)
{
	return (x + 15) & ~uint64_t(15);
}

/// Host-visible pages that the frame's arena writes are produced in: update() converts and packs straight into them and
/// upload() records the copies from them into the chunks, so each byte is written once — not staged in host memory
/// and copied into the staging ring again (that second copy and the ring's region bookkeeping were most of upload(),
/// a tenth of an add frame on the H200). A frame's pages go to the command list that copies from them and come back
/// once it retired; a page is sized for the recent frames (one page per frame in the steady state).
class HostPages
{
public:
	static constexpr uint64_t kMinPageBytes = 4ull << 20;
	static constexpr uint64_t kMaxPageBytes = 256ull << 20;
	static constexpr size_t kKeptFree = 2;

	/// Pages come from `device` (set once, before the first reserve()).
	void bind(gpu::Device& device) { device_ = &device; }
	/// While on (a bulk frame: HeapTuning::bulk_placement_above), a page half full has the frame's next page
	/// (when it is kAheadAbove bytes or more and no free page holds it) made ahead on another thread — the driver's
	/// allocation (pinning host memory: ~0.1 s for 256 MiB on NVIDIA) and the first touch of its memory pages — while
	/// this one fills. A page made ahead and not needed becomes a free page.
	void setAhead(bool on) { ahead_on_ = on; }
	static constexpr uint64_t kAheadAbove = 16ull << 20;
	/// While on, a chunk's write goes straight into the chunk's mapped device memory where it can (Chunk::reserve):
	/// the frame's update sets it when the scene's buffers are MemoryDomain::DeviceMapped and no command list that may
	/// read them is in flight (HeapTuning::write_in_place).
	void setInPlace(bool on) { in_place_ = on; }
	bool inPlace() const { return in_place_; }
	/// Counts bytes a chunk wrote in place; takeInPlaceBytes() returns the frame's count and starts the next.
	void countInPlace(uint64_t bytes) { in_place_bytes_ += bytes; }
	uint64_t takeInPlaceBytes() { return std::exchange(in_place_bytes_, 0); }
	struct Page
	{
		gpu::BufferHandle buffer;
		uint64_t used = 0;
	};
	struct Span
	{
		uint32_t page; ///< index among this frame's pages
		uint32_t at;   ///< byte offset in the page
		std::byte* data;
	};
	/// Space for `size` bytes after the previous reservation, or at the start of a new page. Errors: OutOfMemory.
	Result<Span> reserve(uint64_t size)
	{
		if (pages_.empty() || pages_.back().buffer->size() - pages_.back().used < size)
			QUOKKA_TRY(openPage(size));
		Page& p = pages_.back();
		const Span span{uint32_t(pages_.size() - 1), uint32_t(p.used), p.buffer->mapped() + p.used};
		p.used += size;
		if (ahead_on_ && 2 * p.used >= p.buffer->size())
			makeAhead(); // (half full: this frame will likely need another page)
		return span;
	}
	const gpu::Buffer& buffer(uint32_t page) const { return *pages_[page].buffer; }
	/// True when this frame reserved nothing yet.
	bool empty() const { return pages_.empty(); }
	/// Hands this frame's pages to `list` (they come back once it retired) and starts the next frame.
	void retire(gpu::CommandList& list)
	{
		if (std::optional<gpu::BufferHandle> made = takeAhead(false)) // (a bulk frame's last, not needed)
			free_.push_back(std::move(*made));
		if (pages_.empty())
		{
			// A frame without arena writes: the page size halves too, and the pages retired lists gave back are trimmed
			// now rather than at the next write — an idle scene does not keep its placement's staging (gigabytes of
			// host-visible memory at 10^6 objects).
			page_bytes_ = std::max(kMinPageBytes, page_bytes_ / 2);
			trim();
			return;
		}
		uint64_t total = 0;
		std::vector<gpu::BufferHandle> used;
		for (Page& p : pages_)
		{
			total += p.used;
			p.buffer->flush();
			used.push_back(std::move(p.buffer));
		}
		pages_.clear();
		// The next frame's page fits this frame's writes (capped); after smaller frames it halves per frame, so frames
		// of alternating sizes keep their pages while the memory kept after a frame of gigabytes goes back soon.
		page_bytes_ = std::clamp(std::max(std::bit_ceil(total), page_bytes_ / 2), kMinPageBytes, kMaxPageBytes);
		list.onRetire(
		    [recycle = recycle_, used = std::move(used)]() mutable
		    {
			    for (gpu::BufferHandle& b : used)
				    recycle->push_back(std::move(b));
		    });
	}

	/// Dismantling the scene: drops one free page (or one that a retired list gave back). True while some remain.
	bool dropFreePage()
	{
		if (ahead_.valid())
			(void)takeAhead(true); // (waits for it; dropped)
		else if (!recycle_->empty())
			recycle_->pop_back();
		else if (!free_.empty())
			free_.pop_back();
		return !recycle_->empty() || !free_.empty();
	}
	/// Free pages (those that retired lists gave back included), for HeapScene::dismantleLeft.
	size_t freePages() const { return free_.size() + recycle_->size() + (ahead_.valid() ? 1 : 0); }

private:
	/// Takes the pages retired lists gave back; drops free pages far larger than the current page size (bounds the
	/// host-visible memory kept after a frame of gigabytes, such as placing a whole scene); of the rest keeps the
	/// kKeptFree − 1 largest (for the next large frame) and the smallest (for the small frames that follow a large one:
	/// a frame's pages grow from the smallest size, so after placing a scene the small frames reuse its first page
	/// instead of making one while the large pages are dropped — each a stall of a steady frame).
	void trim()
	{
		for (gpu::BufferHandle& b : *recycle_)
			free_.push_back(std::move(b));
		recycle_->clear();
		std::erase_if(free_, [&](const gpu::BufferHandle& b) { return b->size() > 4 * page_bytes_; });
		std::sort(free_.begin(), free_.end(),
		          [](const gpu::BufferHandle& a, const gpu::BufferHandle& b) { return a->size() > b->size(); });
		if (free_.size() > kKeptFree)
		{
			std::swap(free_[kKeptFree - 1], free_.back());
			free_.resize(kKeptFree);
		}
	}
	Result<void> openPage(uint64_t size)
	{
		trim();
		// The page made ahead: in a bulk frame waited for (the frame asked for it), else taken once made.
		if (std::optional<gpu::BufferHandle> made = takeAhead(ahead_on_))
		{
			if ((*made)->size() >= size)
			{
				pages_.push_back({std::move(*made), 0});
				return {};
			}
			free_.push_back(std::move(*made));
		}
		// The smallest free page that holds the request.
		for (size_t i = free_.size(); i-- > 0;)
			if (free_[i]->size() >= size)
			{
				pages_.push_back({std::move(free_[i]), 0});
				free_.erase(free_.begin() + std::ptrdiff_t(i));
				return {};
			}
		QUOKKA_TRY_ASSIGN(buffer, makePage(device_, nextPageBytes(size)));
		pages_.push_back({std::move(buffer), 0});
		return {};
	}
	/// The page made ahead, if made (`wait`: or once made). A page the driver refused is none: openPage() asks again
	/// and reports the error.
	std::optional<gpu::BufferHandle> takeAhead(bool wait)
	{
		if (!ahead_.valid() || (!wait && ahead_.wait_for(std::chrono::seconds(0)) != std::future_status::ready))
			return std::nullopt;
		Result<gpu::BufferHandle> made = ahead_.get();
		if (!made.ok())
			return std::nullopt;
		return std::move(made.value());
	}
	/// Within a frame new pages grow with what the frame wrote so far (capped): a large frame asks the driver for
	/// O(log) pages, not one per page size.
	uint64_t nextPageBytes(uint64_t size) const
	{
		uint64_t written = 0;
		for (const Page& p : pages_)
			written += p.used;
		return std::max({size, page_bytes_, std::min(std::bit_ceil(written), kMaxPageBytes)});
	}
	static Result<gpu::BufferHandle> makePage(gpu::Device* device, uint64_t bytes)
	{
		return device->createBuffer({bytes, gpu::BufferUsage::TransferSrc | gpu::BufferUsage::Storage,
		                             gpu::MemoryDomain::Upload, "heap staging page"});
	}
	/// In a bulk frame whose page is half full, the page the next openPage() will ask for (the frame's pages
	/// full by then), made on another thread and its memory touched there (a first touch faults each 4 KiB page in) —
	/// unless a free page already holds it (frames of a steady size make no page per frame).
	void makeAhead()
	{
		if (ahead_.valid())
			return;
		uint64_t written = 0;
		for (const Page& p : pages_)
			written += p.buffer->size();
		const uint64_t bytes = std::max(page_bytes_, std::min(std::bit_ceil(written), kMaxPageBytes));
		if (bytes < kAheadAbove ||
		    std::any_of(free_.begin(), free_.end(), [&](const gpu::BufferHandle& b) { return b->size() >= bytes; }))
			return;
		try
		{
			ahead_ = std::async(std::launch::async,
			                    [device = device_, bytes]() -> Result<gpu::BufferHandle>
			                    {
				                    QUOKKA_TRY_ASSIGN(page, makePage(device, bytes));
				                    volatile std::byte* memory = page->mapped();
				                    for (uint64_t at = 0; at < bytes; at += 4096)
					                    memory[at] = std::byte{0};
				                    return page;
			                    });
		}
		catch (const std::system_error&)
		{
			// (No thread to be had: the page is made when needed, as outside bulk frames.)
		}
	}

	gpu::Device* device_ = nullptr;
	uint64_t page_bytes_ = kMinPageBytes;
	std::vector<Page> pages_; ///< this frame's, in order
	std::vector<gpu::BufferHandle> free_;
	std::shared_ptr<std::vector<gpu::BufferHandle>> recycle_ =
	    std::make_shared<std::vector<gpu::BufferHandle>>(); ///< pages of retired lists
	bool ahead_on_ = false;
	bool in_place_ = false;
	uint64_t in_place_bytes_ = 0;
	std::future<Result<gpu::BufferHandle>> ahead_; ///< the next page, being made on another thread (makeAhead)
};

/// One arena chunk: its allocator, its GPU buffer (grown by doubling up to the chunk cap, the old content copied on
/// the GPU) and the writes staged for it this frame.
struct Chunk
{
	explicit Chunk(uint64_t max_bytes, gpu::GrowBuffer storage_ = {})
	    : allocator(max_bytes), storage(std::move(storage_))
	{
	}
	ChunkAllocator allocator;
	/// The chunk's GPU memory: lazy (none until upload() sizes it to the allocator's cursor), doubling from 64 KiB up
	/// to the chunk size with a GPU copy of the old content, released when the chunk empties.
	gpu::GrowBuffer storage;
	const gpu::BufferHandle& buffer() const { return storage.buffer(); }
	/// This frame's writes, in arrival order: runs of consecutive bytes in a host page (HostPages); a write that
	/// continues the previous one at both ends extends it, so a frame placing many objects by the bump cursor stages a
	/// few large runs instead of one write per allocation.
	struct Write
	{
		uint32_t offset; ///< in the chunk
		uint32_t page;
		uint32_t at; ///< in the page
		uint32_t size;
	};
	std::vector<Write> pending;
	std::vector<ChunkAllocator::Move> moves; ///< compaction copies to record before this frame's writes

	Result<void> write(HostPages& pages, uint32_t offset, const void* data, uint32_t size)
	{
		QUOKKA_TRY_ASSIGN(out, reserve(pages, offset, size));
		std::memcpy(out, data, size);
		return {};
	}
	/// True when this frame's last staged write ends at `offset` (a write starting there extends it).
	bool pendingEndsAt(uint32_t offset) const
	{
		return !pending.empty() && pending.back().offset + pending.back().size == offset;
	}
	/// Space for a write of `size` bytes at `offset`, filled by the caller (before upload()); the caller only writes
	/// it (it may be device memory). In place — the chunk's mapped memory itself — when the frame writes in place
	/// (HostPages::inPlace), the chunk's buffer holds the range, and nothing is staged for the chunk yet this frame: no
	/// staged write or compaction move, copied after the host's writes, may land on it later in the frame. Otherwise
	/// in the frame's pages, copied by upload().
	Result<std::byte*> reserve(HostPages& pages, uint32_t offset, uint32_t size)
	{
		if (pages.inPlace() && pending.empty() && moves.empty())
			if (const gpu::BufferHandle& b = storage.buffer(); b && b->mapped() && uint64_t(offset) + size <= b->size())
			{
				pages.countInPlace(size);
				return b->mapped() + offset;
			}
		QUOKKA_TRY_ASSIGN(span, pages.reserve(size));
		Write* last = pending.empty() ? nullptr : &pending.back();
		if (last && last->page == span.page && last->at + last->size == span.at && last->offset + last->size == offset)
			last->size += size;
		else
			pending.push_back({offset, span.page, span.at, size});
		return span.data;
	}
	/// This frame's writes as copy regions grouped by page, each group in chunk-offset order and with overlaps resolved
	/// (a later write wins where two overlap: a block written, freed and handed out again in one frame; `overlapping`
	/// counts the writes that overlapped an earlier one). Clears them.
	std::vector<std::pair<uint32_t, std::vector<VkBufferCopy>>> takeCopies(uint32_t& overlapping);
};

/// Stages an allocation's header and returns where its `data_bytes` of data go (filled by the caller at once). The
/// whole block is staged, its padding to 16 bytes zeroed: blocks placed side by side (an object's private parts, the
/// objects of a frame placed by the bump cursor) then continue one write, so the frame records one copy region per
/// run of them instead of one per allocation.
inline Result<std::byte*> stageAllocation(HostPages& pages, Chunk& chunk, uint32_t ref, uint32_t type_id,
                                          uint32_t length, uint32_t data_bytes)
{
	const uint64_t block = align16(16ull + data_bytes);
	QUOKKA_TRY_ASSIGN(out, chunk.reserve(pages, ref, uint32_t(block)));
	const uint32_t header[4] = {type_id, length, length ? data_bytes / length : 0, 0};
	std::memcpy(out, header, 16);
	std::memset(out + 16 + data_bytes, 0, size_t(block - 16 - data_bytes));
	return out + 16;
}

/// Sorts `w` by chunk offset, stably (arrival order among equal offsets); exposed for tests.
void sortByOffset(std::vector<Chunk::Write>& w);

} // namespace quokka::heap::detail
