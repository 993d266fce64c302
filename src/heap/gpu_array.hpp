// gpu_array.hpp — a GPU array with a full host shadow and dirty-granule uploads (internal to quokka::heap): the
// heap's draw headers, slot records and counts live in these.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <quokka/base/dirty_runs.hpp>
#include <quokka/base/result.hpp>
#include <quokka/base/scratch.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>
#include <quokka/gpu/staging.hpp>

namespace quokka::heap::detail
{

/// How a frame's writes reach the heap's GPU arrays: the memory their buffers are made in (DeviceMapped where the
/// scene writes in place: HeapTuning::write_in_place) and whether the host may write into them now — no command list
/// that may read them is in flight — instead of staging a copy. Counts the bytes written in place.
struct WritePath
{
	gpu::MemoryDomain domain = gpu::MemoryDomain::DeviceLocal;
	bool in_place = false;
	uint64_t in_place_bytes = 0;
	uint64_t staged_bytes = 0; ///< written through the staging ring (copied by the device into the buffers)

	/// `bytes` at `offset` of `buffer`: into its mapped memory when `now` allows it (the caller's rule: `in_place`, or
	/// a buffer made this frame, which no list reads yet) and the buffer is mapped, else staged in `staging` (copied
	/// when the ring is flushed).
	Result<void> write(gpu::StagingRing& staging, const gpu::BufferHandle& buffer, uint64_t offset, const void* data,
	                   uint64_t bytes, bool now)
	{
		if (now && buffer->mapped())
		{
			std::memcpy(buffer->mapped() + offset, data, bytes);
			in_place_bytes += bytes;
			return {};
		}
		staged_bytes += bytes;
		return staging.write(buffer, offset, data, bytes);
	}
};

/// A GPU array with a full host shadow: edits mark dirty granules of 8 words (DirtyRuns), upload() stages them (runs
/// of granules less than 16 words apart as one region; the whole array after growth — no GPU copy needed since the
/// shadow holds everything). Granules, not one min..max span: 100 scattered edits in a 50,000-record slot upload ~100
/// small runs, not the slot; and no sort of the frame's touched ranges (which was a tenth of an add's CPU cost).
struct GpuArray
{
	static constexpr size_t kGranuleShift = 3; ///< 8 words = 32 bytes

	gpu::BufferUsage usage;
	std::string name;
	std::vector<uint32_t> words;
	gpu::BufferHandle buffer;
	DirtyRuns<2> dirty; ///< granules changed since the last upload; runs at most 2 clean granules apart merge
	bool all_dirty = false;

	void touch(size_t lo, size_t hi)
	{
		if (all_dirty || lo >= hi)
			return;
		const size_t g0 = lo >> kGranuleShift, g1 = (hi - 1) >> kGranuleShift;
		if (g0 == g1) // the common case: a few words of one record
			dirty.mark(g0);
		else
			dirty.markRange(g0, g1);
	}
	void touchAll() { all_dirty = true; }
	/// Host bytes of the shadow and its dirty marks (memory accounting).
	size_t hostBytes() const { return words.capacity() * sizeof(uint32_t) + dirty.hostBytes(); }
	/// Grows or shrinks the shadow; grown words are uploaded even when they are 0 (the GPU copy may hold stale data
	/// of a record that lived there before).
	void resize(size_t n)
	{
		if (n > words.size())
			touch(words.size(), n);
		words.resize(n, 0);
	}
	void set(size_t i, uint32_t v)
	{
		if (words[i] != v)
		{
			words[i] = v;
			touch(i, i + 1);
		}
	}
	/// Sets words [i, i + n) and marks the span from the first to the last changed word once (a record or a header
	/// is written as a whole: one mark instead of one per word).
	void set(size_t i, const uint32_t* v, size_t n)
	{
		size_t lo = n, hi = 0;
		for (size_t k = 0; k < n; ++k)
			if (words[i + k] != v[k])
			{
				words[i + k] = v[k];
				lo = std::min(lo, k);
				hi = k + 1;
			}
		if (lo < hi)
			touch(i + lo, i + hi);
	}
	/// Calls f(first granule, end granule) for each run of dirty granules, in address order, and clears the marks.
	template <typename F>
	void takeRuns(F&& f)
	{
		dirty.takeRuns(f);
	}
	/// Writes the dirty granules (the whole shadow after growth) by `path`. Returns the bytes written.
	Result<uint64_t> upload(gpu::Device& device, gpu::StagingRing& staging, WritePath& path)
	{
		const uint64_t need = std::max<uint64_t>(16, words.size() * 4);
		bool fresh = false;
		if (!buffer || buffer->size() < need)
		{
			// (No GPU copy on growth: the shadow holds everything and is uploaded whole.)
			const uint64_t size = gpu::nextPowerOfTwo(std::max<uint64_t>(256, need));
			QUOKKA_TRY_ASSIGN(b, device.createBuffer({size, usage | gpu::BufferUsage::TransferDst, path.domain, name}));
			buffer = std::move(b);
			all_dirty = fresh = true;
		}
		uint64_t bytes = 0;
		Result<void> written;
		auto write = [&](size_t lo, size_t hi)
		{
			hi = std::min(hi, words.size()); // the shadow may have shrunk since the touch
			if (lo >= hi || !written.ok())
				return;
			written = path.write(staging, buffer, lo * 4, words.data() + lo, (hi - lo) * 4, path.in_place || fresh);
			bytes += (hi - lo) * 4;
		};
		if (all_dirty)
		{
			takeRuns([](size_t, size_t) {});
			write(0, words.size());
		}
		else
			takeRuns([&](size_t lo, size_t hi) { write(lo << kGranuleShift, hi << kGranuleShift); });
		all_dirty = false;
		QUOKKA_TRY(written);
		return bytes;
	}
};

/// A GPU array the host writes without keeping a copy of it: a frame's writes are logged and staged by upload(), and
/// nothing mirrors the device's contents on the host (the GPU derive's constituent slots: a full host copy would cost
/// the array's size in host memory for good). When the array outgrows its buffer, grow() makes a new one and copies
/// the old one into it on the device, before the frame's staged writes land.
struct GpuWriteLog
{
	gpu::BufferUsage usage;
	std::string name;
	size_t words = 0; ///< the array's length (what the buffer must hold)
	gpu::BufferHandle buffer;
	struct Run
	{
		uint32_t offset; ///< in words
		uint32_t at;     ///< in `data`
		uint32_t count;
	};
	std::vector<Run> runs;      ///< this frame's writes, in order (a later one wins where they overlap)
	std::vector<uint32_t> data; ///< their words
	bool grown = false;         ///< grow() recorded a copy this frame: the writes are staged, to land after it

	void write(size_t i, const uint32_t* v, size_t n)
	{
		if (!runs.empty() && runs.back().offset + runs.back().count == i &&
		    runs.back().at + runs.back().count == data.size())
			runs.back().count += uint32_t(n);
		else
			runs.push_back({uint32_t(i), uint32_t(data.size()), uint32_t(n)});
		data.insert(data.end(), v, v + n);
	}
	/// Whether the buffer cannot hold `words` words (none yet, or too small): then grow() before upload().
	bool needsGrowth() const { return !buffer || buffer->size() < std::max<uint64_t>(16, words * 4); }
	/// A new buffer for `words` (rounded up to a power of two), the old one's contents copied into it in `list`, then a
	/// barrier: the frame's staged writes (flushed into `list` later) land after the copy, the kernels read after both.
	Result<void> grow(gpu::Device& device, gpu::CommandList& list, gpu::MemoryDomain domain)
	{
		const uint64_t size = gpu::nextPowerOfTwo(std::max<uint64_t>(256, words * 4));
		QUOKKA_TRY_ASSIGN(
		    b, device.createBuffer(
		           {size, usage | gpu::BufferUsage::TransferDst | gpu::BufferUsage::TransferSrc, domain, name}));
		if (buffer)
		{
			const VkBufferCopy region{0, 0, buffer->size()};
			vkCmdCopyBuffer(list.vk(), buffer->vk(), b->vk(), 1, &region);
			list.memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_TRANSFER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
			                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
			list.keepAlive(std::move(buffer)); // (read by the copy: released once the list completed)
			grown = true;
		}
		buffer = std::move(b);
		return {};
	}
	/// Writes the logged writes by `path` — staged after a growth copy this frame, which would overwrite writes made in
	/// place (the buffer must hold the array: needsGrowth() false) — and empties the log. Returns the bytes written.
	Result<uint64_t> upload(gpu::StagingRing& staging, WritePath& path)
	{
		uint64_t bytes = 0;
		const bool in_place = path.in_place && !std::exchange(grown, false);
		for (const Run& r : runs)
		{
			QUOKKA_TRY(path.write(staging, buffer, uint64_t(r.offset) * 4, data.data() + r.at, uint64_t(r.count) * 4,
			                      in_place));
			bytes += uint64_t(r.count) * 4;
		}
		const size_t used = data.size(), used_runs = runs.size();
		runs.clear();
		data.clear();
		trimScratch(data, used, 4096);
		trimScratch(runs, used_runs, 256);
		return bytes;
	}
	/// A frame that wrote nothing: the log gives back what a larger frame grew (trimScratch).
	void trim()
	{
		trimScratch(data, 0, 4096);
		trimScratch(runs, 0, 256);
	}
	/// Host bytes of the log's capacity (memory accounting).
	size_t hostBytes() const { return runs.capacity() * sizeof(Run) + data.capacity() * sizeof(uint32_t); }
};

} // namespace quokka::heap::detail
