// HeapScene: arena chunks and pools, buckets and slots, the two draw strategies.
//
// [SECTION] chunks, GPU arrays and pooled inputs
// [SECTION] buckets and slots
// [SECTION] objects: placement, refresh, release
// [SECTION] the frame: update, upload, prepare, encode
#include <quokka/heap/heap_scene.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

#include <absl/cleanup/cleanup.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <quokka/base/assert.hpp>
#include <quokka/base/block_cache.hpp>
#include <quokka/base/clock.hpp>
#include <quokka/base/range_overlay.hpp>
#include <quokka/classic/object_inputs.hpp>
#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/gpu/scatter_copy.hpp>
#include <quokka/heap/chunk_allocator.hpp>
#include <quokka/heap/megacall_scan.hpp>
#include <quokka/heap/pointer_table.hpp>

namespace quokka::heap
{

using adaptive::AdaptiveObject;
using adaptive::aval;
using adaptive::Ref;
using adaptive::Token;
using scene::RenderObjectPtr;
using scene::UniformValue;

namespace
{

/// The heap's per-object records (objects, pool entries, private sets) come from per-type block caches that keep up to
/// this many freed blocks per thread: a frame that removes 10^4 objects and one that adds 10^4 recycle each other's
/// records instead of sending most of them through the general allocator (BlockCache's default keeps 4,096): its bulk
/// frees, purged pages and page faults on reuse showed in the H200 profile of such frames.
constexpr size_t kCachedRecords = size_t(1) << 16;
template <size_t Size>
using RecordCache = BlockCache<Size, kCachedRecords>;

/// validateHeap probes every emit of a megacall slot up to this many (32 bytes of probe results each: 32 MiB).
constexpr uint64_t kExhaustiveProbeEmits = 1u << 20;

constexpr uint64_t align16(uint64_t x)
{
	return (x + 15) & ~uint64_t(15);
}

/// Allocation header type ids (low 16 bits; the shaders know the layout at compile time, the ids are for the
/// diagnostics).
enum TypeId : uint32_t
{
	kTypeUniform = 1,
	kTypeAttribute = 2,
	kTypeIndex = 3,
};

uint32_t primitiveVertices(VkPrimitiveTopology t)
{
	switch (t)
	{
	case VK_PRIMITIVE_TOPOLOGY_POINT_LIST:
		return 1;
	case VK_PRIMITIVE_TOPOLOGY_LINE_LIST:
		return 2;
	default:
		return 3;
	}
}

/// Converts one vertex-buffer element (one column of `format`) into tight 32-bit components of the vector `type`
/// (missing components: 0, and 1 for w — Vulkan's vertex input rule), so the shader's loads depend on its own types
/// only.
bool convertColumn(const std::byte* src, VkFormat format, fx::Type type, uint32_t* out)
{
	const uint32_t n = type.rows * type.cols;
	uint32_t comps = 0;
	float f[4] = {0, 0, 0, 1};
	uint32_t u[4] = {0, 0, 0, 1};
	bool is_float = true;
	switch (format)
	{
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SFLOAT:
		comps = scene::formatSize(format) / 4;
		std::memcpy(f, src, 4 * comps);
		break;
	// Normalised integers: c × (1 / (2^b − 1)), a multiply by the rounded reciprocal, as Mesa's vertex fetch converts
	// (Vulkan allows this or the exact quotient). The exact quotient c / 255 differs from it for some c, and after
	// interpolation that moved ~10 % of the pixels of a vertex-coloured quad by 1–2 LSB against the classic path on
	// lavapipe (test: intermediate UNORM8 vertex colours match classic).
	case VK_FORMAT_R8_UNORM:
	case VK_FORMAT_R8G8_UNORM:
	case VK_FORMAT_R8G8B8A8_UNORM:
		comps = scene::formatSize(format);
		for (uint32_t c = 0; c < comps; ++c)
			f[c] = float(uint8_t(src[c])) * (1.0f / 255.0f);
		break;
	case VK_FORMAT_R16_UNORM:
	{
		uint16_t x;
		std::memcpy(&x, src, 2);
		comps = 1;
		f[0] = float(x) * (1.0f / 65535.0f);
		break;
	}
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32A32_SINT:
	case VK_FORMAT_R32_UINT:
	case VK_FORMAT_R32G32_UINT:
	case VK_FORMAT_R32G32B32_UINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		is_float = false;
		comps = scene::formatSize(format) / 4;
		std::memcpy(u, src, 4 * comps);
		break;
	case VK_FORMAT_R8_UINT:
	case VK_FORMAT_R8G8B8A8_UINT:
		is_float = false;
		comps = scene::formatSize(format);
		for (uint32_t c = 0; c < comps; ++c)
			u[c] = uint8_t(src[c]);
		break;
	case VK_FORMAT_R16_UINT:
	case VK_FORMAT_R16G16_UINT:
	case VK_FORMAT_R16G16B16A16_UINT:
	case VK_FORMAT_R16_SINT:
	{
		is_float = false;
		comps = scene::formatSize(format) / 2;
		for (uint32_t c = 0; c < comps; ++c)
		{
			uint16_t x;
			std::memcpy(&x, src + 2 * c, 2);
			u[c] = format == VK_FORMAT_R16_SINT ? uint32_t(int32_t(int16_t(x))) : x;
		}
		break;
	}
	default:
		return false;
	}
	for (uint32_t c = 0; c < n; ++c)
	{
		if (is_float)
			std::memcpy(&out[c], &f[std::min(c, 3u)], 4);
		else
			out[c] = u[std::min(c, 3u)];
	}
	return true;
}

/// Components of a 32-bit-per-component vertex format (R32…_SFLOAT/SINT/UINT), else 0.
uint32_t word32Components(VkFormat format)
{
	switch (format)
	{
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32_UINT:
		return 1;
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32_UINT:
		return 2;
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32_UINT:
		return 3;
	case VK_FORMAT_R32G32B32A32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		return 4;
	default:
		return 0;
	}
}

bool isFloatFormat(VkFormat format)
{
	return format == VK_FORMAT_R32_SFLOAT || format == VK_FORMAT_R32G32_SFLOAT ||
	       format == VK_FORMAT_R32G32B32_SFLOAT || format == VK_FORMAT_R32G32B32A32_SFLOAT;
}

/// The hot case of attribute ingest (a V3 position or normal feeding a vec4): `n` elements of `from` 32-bit words
/// each, `stride` bytes apart, into `to` words each — copied, truncated or filled as convertColumn does (0, and 1 in
/// the fourth component: 1.0f for float formats) — with the component counts as template constants.
template <uint32_t From, uint32_t To>
void widenWordsFixed(const std::byte* src, uint32_t stride, uint32_t n, uint32_t one, uint32_t* out)
{
	constexpr uint32_t kCopy = From < To ? From : To;
	uint32_t fill[4] = {0, 0, 0, one};
	for (uint32_t i = 0; i < n; ++i, src += stride, out += To)
	{
		std::memcpy(out, src, kCopy * 4);
		for (uint32_t c = kCopy; c < To; ++c)
			out[c] = fill[c];
	}
}

void widenWords(const std::byte* src, uint32_t stride, uint32_t n, uint32_t from, uint32_t to, bool is_float,
                uint32_t* out)
{
	const uint32_t one = is_float ? 0x3F800000u : 1u; // 1.0f or 1
	auto dispatch = [&]<uint32_t From>()
	{
		switch (to)
		{
		case 1:
			return widenWordsFixed<From, 1>(src, stride, n, one, out);
		case 2:
			return widenWordsFixed<From, 2>(src, stride, n, one, out);
		case 3:
			return widenWordsFixed<From, 3>(src, stride, n, one, out);
		default:
			return widenWordsFixed<From, 4>(src, stride, n, one, out);
		}
	};
	switch (from)
	{
	case 1:
		return dispatch.template operator()<1>();
	case 2:
		return dispatch.template operator()<2>();
	case 3:
		return dispatch.template operator()<3>();
	default:
		return dispatch.template operator()<4>();
	}
}

/// One element of a matrix (or vector) attribute: `type.cols` consecutive columns of `format`, as classic vertex input
/// reads them.
bool convertElement(const std::byte* src, VkFormat format, fx::Type type, uint32_t* out)
{
	const fx::Type column{type.scalar, type.rows, 1};
	for (uint32_t c = 0; c < type.cols; ++c)
		if (!convertColumn(src + uint64_t(c) * scene::formatSize(format), format, column, out + c * type.rows))
			return false;
	return true;
}

} // namespace

const char* strategyName(DrawStrategy s)
{
	switch (s)
	{
	case DrawStrategy::Auto:
		return "auto";
	case DrawStrategy::Indirect:
		return "indirect";
	case DrawStrategy::Megacall:
		return "megacall";
	}
	return "?";
}

Result<DrawStrategy> parseStrategy(const std::string& name)
{
	if (name == "auto")
		return DrawStrategy::Auto;
	if (name == "indirect")
		return DrawStrategy::Indirect;
	if (name == "megacall")
		return DrawStrategy::Megacall;
	return makeError(ErrorCode::InvalidArgument, "unknown draw strategy '" + name + "' (auto, indirect, megacall)");
}

bool heapEligible(const scene::RenderObject& object)
{
	if (!object.state.topology.node()->isConstant())
		return false;
	const VkPrimitiveTopology t = object.state.topology.force();
	return t == VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST || t == VK_PRIMITIVE_TOPOLOGY_LINE_LIST ||
	       t == VK_PRIMITIVE_TOPOLOGY_POINT_LIST;
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] chunks, GPU arrays and pooled inputs
// ---------------------------------------------------------------------------------------------------------------------

namespace
{

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
		return span;
	}
	const gpu::Buffer& buffer(uint32_t page) const { return *pages_[page].buffer; }
	/// True when this frame reserved nothing yet.
	bool empty() const { return pages_.empty(); }
	/// Hands this frame's pages to `list` (they come back once it retired) and starts the next frame.
	void retire(gpu::CommandList& list)
	{
		if (pages_.empty())
			return;
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

private:
	Result<void> openPage(uint64_t size)
	{
		for (gpu::BufferHandle& b : *recycle_)
			free_.push_back(std::move(b));
		recycle_->clear();
		// Free pages far larger than the current page size are dropped (bounds the host-visible memory kept after a
		// frame of gigabytes, such as placing a whole scene), and so are free pages beyond kKeptFree (the smallest).
		std::erase_if(free_, [&](const gpu::BufferHandle& b) { return b->size() > 4 * page_bytes_; });
		std::sort(free_.begin(), free_.end(),
		          [](const gpu::BufferHandle& a, const gpu::BufferHandle& b) { return a->size() > b->size(); });
		if (free_.size() > kKeptFree)
			free_.resize(kKeptFree);
		// The smallest free page that holds the request.
		for (size_t i = free_.size(); i-- > 0;)
			if (free_[i]->size() >= size)
			{
				pages_.push_back({std::move(free_[i]), 0});
				free_.erase(free_.begin() + std::ptrdiff_t(i));
				return {};
			}
		// Within a frame new pages grow with what the frame wrote so far (capped): a large frame asks the driver for
		// O(log) pages, not one per page size.
		uint64_t written = 0;
		for (const Page& p : pages_)
			written += p.used;
		const uint64_t bytes = std::max({size, page_bytes_, std::min(std::bit_ceil(written), kMaxPageBytes)});
		QUOKKA_TRY_ASSIGN(buffer,
		                  device_->createBuffer({bytes, gpu::BufferUsage::TransferSrc | gpu::BufferUsage::Storage,
		                                         gpu::MemoryDomain::Upload, "heap staging page"}));
		pages_.push_back({std::move(buffer), 0});
		return {};
	}

	gpu::Device* device_ = nullptr;
	uint64_t page_bytes_ = kMinPageBytes;
	std::vector<Page> pages_; ///< this frame's, in order
	std::vector<gpu::BufferHandle> free_;
	std::shared_ptr<std::vector<gpu::BufferHandle>> recycle_ =
	    std::make_shared<std::vector<gpu::BufferHandle>>(); ///< pages of retired lists
};

/// One arena chunk: its allocator, its GPU buffer (grown by doubling up to the chunk cap, the old content copied on
/// the GPU) and the writes staged for it this frame.
struct Chunk
{
	explicit Chunk(uint64_t max_bytes) : allocator(max_bytes) {}
	ChunkAllocator allocator;
	gpu::BufferHandle buffer;
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
	/// Space for a write of `size` bytes at `offset`, filled by the caller (before upload()).
	Result<std::byte*> reserve(HostPages& pages, uint32_t offset, uint32_t size)
	{
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
Result<std::byte*> stageAllocation(HostPages& pages, Chunk& chunk, uint32_t ref, uint32_t type_id, uint32_t length,
                                   uint32_t data_bytes)
{
	const uint64_t block = align16(16ull + data_bytes);
	QUOKKA_TRY_ASSIGN(out, chunk.reserve(pages, ref, uint32_t(block)));
	const uint32_t header[4] = {type_id, length, length ? data_bytes / length : 0, 0};
	std::memcpy(out, header, 16);
	std::memset(out + 16 + data_bytes, 0, size_t(block - 16 - data_bytes));
	return out + 16;
}

/// Sorts `w` by chunk offset, stably (arrival order among equal offsets): an LSD radix sort, one pass per byte in
/// which the offsets differ — a frame of 10^4 adds has ~10^4 writes in allocation (not address) order.
void sortByOffset(std::vector<Chunk::Write>& w)
{
	std::vector<Chunk::Write> tmp(w.size());
	for (uint32_t shift = 0; shift < 32; shift += 8)
	{
		std::array<uint32_t, 257> count{};
		for (const Chunk::Write& x : w)
			++count[((x.offset >> shift) & 0xff) + 1];
		if (std::any_of(count.begin() + 1, count.end(), [&](uint32_t c) { return c == w.size(); }))
			continue; // every offset has this byte in common
		for (size_t b = 1; b < count.size(); ++b)
			count[b] += count[b - 1];
		for (const Chunk::Write& x : w)
			tmp[count[(x.offset >> shift) & 0xff]++] = x;
		w.swap(tmp);
	}
}

std::vector<std::pair<uint32_t, std::vector<VkBufferCopy>>> Chunk::takeCopies(uint32_t& overlapping)
{
	std::vector<Write> w;
	w.swap(pending);
	auto disjointInOrder = [](const std::vector<Write>& v)
	{
		for (size_t i = 1; i < v.size(); ++i)
			if (v[i].offset < v[i - 1].offset + v[i - 1].size)
				return false;
		return true;
	};
	if (!disjointInOrder(w))
	{
		std::vector<Write> arrival = w;
		sortByOffset(w);
		if (!disjointInOrder(w))
		{
			// Overlaps (rare): applied in arrival order, each write trimming the parts of older ones it covers.
			std::map<uint32_t, Write> live;
			for (const Write& x : arrival)
				overlapping += overlayRange(
				    live, x.offset, x, [](const Write& r) { return r.size; },
				    [](const Write& r, uint32_t skip, uint32_t size) {
					    return Write{r.offset + skip, r.page, r.at + skip, size};
				    });
			w.clear();
			for (const auto& [offset, x] : live)
				w.push_back(x);
		}
	}
	std::vector<std::pair<uint32_t, std::vector<VkBufferCopy>>> groups; // by page (a frame has one or a few)
	for (const Write& x : w)
	{
		auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == x.page; });
		if (g == groups.end())
			g = groups.insert(groups.end(), {x.page, {}});
		std::vector<VkBufferCopy>& r = g->second;
		if (!r.empty() && r.back().srcOffset + r.back().size == x.at && r.back().dstOffset + r.back().size == x.offset)
			r.back().size += x.size;
		else
			r.push_back({x.at, x.offset, x.size});
	}
	return groups;
}

/// The value a view's buffer node holds already, or nullptr (none yet, or a view without a buffer node: a single
/// value). For prefetch hints only.
const scene::ArrayBuffer* cachedBuffer(const scene::BufferView& v)
{
	const auto* node = v.buffer.node().get();
	return node ? node->cachedValue() : nullptr;
}

/// Hints the CPU to fetch the first `lines` cache lines of the object at `p` (loops over scattered objects call it a
/// few visits ahead).
void prefetchLines(const void* p, int lines)
{
	for (int i = 0; i < lines; ++i)
		__builtin_prefetch(static_cast<const char*>(p) + 64 * i);
}

/// A GPU array with a full host shadow: edits mark dirty granules of 8 words, upload() stages them (runs of granules
/// less than 16 words apart as one region; the whole array after growth — no GPU copy needed since the shadow holds
/// everything). Granules, not one min..max span: 100 scattered edits in a 50,000-record slot upload ~100 small runs,
/// not the slot. The marks are a two-level bitmap (a bit per granule, a bit per non-zero bitmap word), so touch() is a
/// few bit operations and upload() visits what changed in address order without sorting: a sort of the frame's
/// touched ranges was a tenth of an add's CPU cost (callgrind, `bench update`).
struct GpuArray
{
	static constexpr size_t kGranuleShift = 3; ///< 8 words = 32 bytes
	static constexpr size_t kMergeGap = 2;     ///< runs at most 2 clean granules (16 words) apart form one region

	gpu::BufferUsage usage;
	std::string name;
	std::vector<uint32_t> words;
	gpu::BufferHandle buffer;
	std::vector<uint64_t> dirty;   ///< bit g: granule g (words [8g, 8g + 8)) changed since the last upload
	std::vector<uint64_t> summary; ///< bit i: dirty[i] != 0
	bool all_dirty = false;

	void touch(size_t lo, size_t hi)
	{
		if (all_dirty || lo >= hi)
			return;
		const size_t g0 = lo >> kGranuleShift, g1 = (hi - 1) >> kGranuleShift;
		if (g0 == g1 && (g0 >> 6) < dirty.size()) // the common case: a few words of one record
		{
			dirty[g0 >> 6] |= uint64_t(1) << (g0 & 63);
			summary[g0 >> 12] |= uint64_t(1) << ((g0 >> 6) & 63);
			return;
		}
		touchRange(g0, g1);
	}
	void touchRange(size_t g0, size_t g1)
	{
		if ((g1 >> 6) >= dirty.size())
		{
			dirty.resize((g1 >> 6) + 1, 0);
			summary.resize((dirty.size() + 63) >> 6, 0);
		}
		for (size_t w = g0 >> 6; w <= g1 >> 6; ++w)
		{
			const size_t first = w == (g0 >> 6) ? (g0 & 63) : 0, last = w == (g1 >> 6) ? (g1 & 63) : 63;
			dirty[w] |= (~uint64_t(0) >> (63 - last)) & (~uint64_t(0) << first);
			summary[w >> 6] |= uint64_t(1) << (w & 63);
		}
	}
	void touchAll() { all_dirty = true; }
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
	/// Calls f(first granule, end granule) for each run of dirty granules (merged across small gaps), in address order,
	/// and clears the marks.
	template <typename F>
	void takeRuns(F&& f)
	{
		size_t lo = 0, hi = 0; // the open run [lo, hi) of granules; hi == 0: none
		for (size_t si = 0; si < summary.size(); ++si)
			for (uint64_t sbits = std::exchange(summary[si], 0); sbits; sbits &= sbits - 1)
			{
				const size_t w = (si << 6) + size_t(std::countr_zero(sbits));
				for (uint64_t bits = std::exchange(dirty[w], 0); bits; bits &= bits - 1)
				{
					const size_t g = (w << 6) + size_t(std::countr_zero(bits));
					if (hi != 0 && g <= hi + kMergeGap)
						hi = g + 1;
					else
					{
						if (hi != 0)
							f(lo, hi);
						lo = g;
						hi = g + 1;
					}
				}
			}
		if (hi != 0)
			f(lo, hi);
	}
	Result<uint64_t> upload(gpu::Device& device, gpu::StagingRing& staging)
	{
		const uint64_t need = std::max<uint64_t>(16, words.size() * 4);
		if (!buffer || buffer->size() < need)
		{
			uint64_t size = 256;
			while (size < need)
				size *= 2;
			QUOKKA_TRY_ASSIGN(b, device.createBuffer({size, usage | gpu::BufferUsage::TransferDst,
			                                          gpu::MemoryDomain::DeviceLocal, name}));
			buffer = std::move(b);
			all_dirty = true;
		}
		uint64_t bytes = 0;
		Result<void> written;
		auto write = [&](size_t lo, size_t hi)
		{
			hi = std::min(hi, words.size()); // the shadow may have shrunk since the touch
			if (lo >= hi || !written.ok())
				return;
			written = staging.write(buffer, lo * 4, words.data() + lo, (hi - lo) * 4);
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

} // namespace

struct Entry;
class HeapObject;
struct Bucket;
struct Slot;

/// What makes two inputs the same pool entry: the kind, the chunk, the source's identity (a uniform's node; a
/// buffer's current storage) and, for buffers, how it is read. Constant uniforms are keyed by value in their own map
/// (ConstantKey): this key stays 32 bytes, so a lookup in the 5-entries-per-object pool touches one slot.
struct PoolKey
{
	const void* node = nullptr;
	uint32_t chunk = 0;
	uint32_t format = 0, offset = 0, stride = 0;
	fx::Type type;
	uint8_t kind = 0;
	bool operator==(const PoolKey&) const = default;

	/// The key of a non-constant uniform (kind 0 = Entry::kUniform).
	static PoolKey uniform(const void* node, uint32_t chunk)
	{
		PoolKey k;
		k.chunk = chunk;
		k.node = node;
		return k;
	}
};

/// PoolKey's hash: the fields packed into three words and folded by two 64×64→128-bit multiplies (the wyhash mix).
/// absl's generic combine of the nine fields one by one was a tenth of a placement's pool cost (callgrind).
struct PoolKeyHash
{
	__extension__ typedef unsigned __int128 U128;
	static uint64_t mix(uint64_t a, uint64_t b)
	{
		const U128 r = static_cast<U128>(a) * b;
		return uint64_t(r) ^ uint64_t(r >> 64);
	}
	size_t operator()(const PoolKey& k) const
	{
		const uint64_t small = uint64_t(uint8_t(k.type.scalar)) | uint64_t(k.type.rows) << 8 |
		                       uint64_t(k.type.cols) << 16 | uint64_t(k.kind) << 24 | uint64_t(k.chunk) << 32;
		const uint64_t view = uint64_t(k.offset) | uint64_t(k.stride) << 32;
		return mix(reinterpret_cast<uintptr_t>(k.node) ^ 0xa0761d6478bd642full, small ^ 0xe7037ed1a0b428dbull) ^
		       mix(view ^ 0x8ebc6af09c88c6e3ull, uint64_t(k.format) ^ 0x589965cc75374cc3ull);
	}
};

/// A constant uniform's pool key: equal constants share one allocation per chunk.
struct ConstantKey
{
	uint32_t chunk = 0;
	fx::Type type;
	std::array<uint32_t, 16> value{}; ///< the packed value (zero past its size)
	bool operator==(const ConstantKey&) const = default;
	template <typename H>
	friend H AbslHashValue(H h, const ConstantKey& k)
	{
		return H::combine(std::move(h), k.chunk, uint8_t(k.type.scalar), k.type.rows, k.type.cols, k.value);
	}
};

/// A pooled input in one chunk: a uniform value, a converted vertex attribute or widened indices — the part every kind
/// shares (what the allocation holds, where, and how many objects use it). Buffer entries (BufferEntry) are plain
/// records: they are read once, and the objects using a buffer re-place themselves when it changes. Uniform entries
/// (UniformEntry) are adaptive objects: they read their aval themselves (one re-pack per change, however many objects
/// share the value). Three of an object's five or so entries are buffers, so keeping the adaptive machinery (its
/// ~100-byte node, construction and teardown) out of them is a third less memory to touch per add and removal.
struct Entry
{
	enum Kind : uint8_t
	{
		kUniform,
		kAttribute,
		kIndex,
	};
	Kind kind;
	/// A part of an object's PrivateSet (owned by that object: never pooled, never shared, no reference count to
	/// drop); false for the pool's entries.
	bool priv = false;
	uint32_t chunk;
	uint32_t ref = 0;      ///< byte offset of the allocation header in the chunk
	uint32_t elements = 0; ///< attribute elements / indices / 1
	uint32_t data_bytes = 0;
	uint32_t refcount = 0;
	fx::Type type;
	PoolKey key; ///< the pool key (for erasure); node null for a constant uniform

	Entry(Kind k, uint32_t c) : kind(k), chunk(c) {}
	Entry(const Entry&) = delete;
	Entry& operator=(const Entry&) = delete;

protected:
	~Entry() = default; // (destroyed as its concrete type: dropPooled, Ref<UniformEntry>)
};
static_assert(Entry::kUniform == 0, "PoolKey::uniform assumes kind 0");

/// A vertex attribute or index buffer converted into one chunk.
struct BufferEntry final : Entry
{
	BufferEntry(Kind k, uint32_t c) : Entry(k, c) {}
	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;

	/// Keep the keyed storage alive, so its address (the key) is not reused while the entry exists: the constant node
	/// holding it — a plain count — or, for a buffer that may change, the value read (a locked count). See
	/// storageUnheld().
	Ref<AdaptiveObject> node;
	scene::ArrayBuffer buffer;
};

/// What only one object reads, side by side in one arena block that the object owns: its unshared buffers — storage
/// that no other view can reach (storageUnheld, and a node that only the view holds), such as a mesh made for this one
/// object — and its own uniforms (a node nothing else reads: its fresh ModelTrafo and what derives from it). One
/// allocation and one free per object instead of one per input, and no pool entry to file, find or erase (each a miss
/// in a table of millions at 10^6 objects). Each part
/// keeps its own 16-byte allocation header, so headers, shaders and validators read a part as they read a pooled
/// allocation. Storage that a second object reaches only later (a view copied into a new object) gets a pooled copy
/// then, which that object and every later one share; the first object keeps its private copy until it is re-placed —
/// at most one extra copy per storage and chunk.
struct PrivateSet final
{
	/// At most this many buffers and uniforms per object; more unshared ones are pooled as before.
	static constexpr size_t kBufferParts = 4;
	static constexpr size_t kUniformParts = 2;
	static constexpr size_t kParts = kBufferParts + kUniformParts;
	struct Part final : Entry
	{
		Part() : Entry(kAttribute, 0) { priv = true; }
	};
	uint32_t chunk = 0;
	uint32_t block = 0; ///< the block's offset: its first part's allocation header
	uint32_t bytes = 0; ///< the block's size: its parts' (16-byte header + data, rounded up to 16) in order
	uint32_t count = 0;
	uint32_t first_uniform = 0; ///< parts [first_uniform, count) are uniforms (key: node and recipe), buffers before
	std::array<Part, kParts> parts;
	std::array<aval<UniformValue>, kUniformParts> uniforms; ///< the uniform parts' values, in part order

	/// Appends a part of `data_bytes` at `ref` (its allocation header) and returns it.
	Part& append(Entry::Kind kind, uint32_t ref, fx::Type type, uint32_t elements, uint32_t data_bytes)
	{
		Part& e = parts[count++];
		e.kind = kind;
		e.chunk = chunk;
		e.ref = ref;
		e.type = type;
		e.elements = elements;
		e.data_bytes = data_bytes;
		e.refcount = 1;
		return e;
	}

	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;
};

/// True when no pool entry can hold `data`, the value of `view`: an entry holds the storage itself or the constant
/// node holding it (BufferEntry), so storage counted once, and if in a constant node then in one counted once (by
/// the view), is read through this view alone — no other object's entry can have it.
bool storageUnheld(const scene::BufferView& view, const scene::ArrayBuffer& data)
{
	if (data.bytes.use_count() != 1)
		return false;
	const AdaptiveObject* node = view.buffer.node().get();
	return !node->isConstant() || node->refCount() == 1;
}

/// A uniform value (or a recipe applied to one) in one chunk, re-packed when its aval changes.
struct UniformEntry final : AdaptiveObject, Entry
{
	UniformEntry(HeapScene::Impl& s, uint32_t c) : AdaptiveObject(kWantsInputChanged), Entry(kUniform, c), scene(&s) {}
	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;

	HeapScene::Impl* scene;
	aval<UniformValue> uniform; ///< with a non-constant source
	/// The value is this recipe applied to `uniform` (NormalMatrix from a ModelTrafo node) — pooled by (input node,
	/// recipe) instead of an adaptive node per object; None for a plain value.
	classic::DerivedRecipe recipe = classic::DerivedRecipe::None;
	std::unique_ptr<ConstantKey> constant; ///< a constant uniform's key (for erasure)
	bool queued = false;

	/// May be listed in the placement index (HeapScene::Impl::uniform_chunks): plain values of a non-constant node in
	/// the first 64 chunks (a recipe entry's node is the object's ModelTrafo, whose own entry sits in the same chunk
	/// when the effect reads it).
	bool placementIndexed() const { return key.node && chunk < 64 && recipe == classic::DerivedRecipe::None; }
	/// Its chunk's bit is in the placement index: the index lists a node from the first placement that asks for it
	/// (not when its first entry is made), so an object's own uniforms, which no other placement asks for, never
	/// enter that table of millions of keys.
	bool indexed = false;

	void inputChanged(AdaptiveObject*) override;
	/// Re-reads the uniform value and stages it. Errors: the value changed its type.
	Result<void> repack();

	using AdaptiveObject::beginEvaluation;
	using AdaptiveObject::endEvaluation;
};

/// The uniform entry behind `e`, or null for a buffer entry.
inline UniformEntry* asUniform(Entry* e)
{
	return e->kind == Entry::kUniform ? static_cast<UniformEntry*>(e) : nullptr;
}
inline const UniformEntry* asUniform(const Entry* e)
{
	return e->kind == Entry::kUniform ? static_cast<const UniformEntry*>(e) : nullptr;
}

/// Drops the pool's hold on an entry it holds: deletes a buffer entry, or releases the pool's reference to a uniform
/// entry (a queued re-pack may hold another).
void dropPooled(Entry* e) noexcept
{
	if (UniformEntry* u = asUniform(e))
		u->release();
	else
		delete static_cast<BufferEntry*>(e);
}

/// The pool: the non-constant entries, found by the key they hold and erased by identity (both hashed by the key),
/// each slot the entry's pointer beside its key's hash (detail::PointerTable: one slot per probe, prefetched exactly).
/// It owns its entries: a buffer entry is deleted when erased, a uniform entry loses the pool's reference.
class Pool
{
public:
	Pool() = default;
	Pool(const Pool&) = delete;
	Pool& operator=(const Pool&) = delete;
	~Pool() { table_.forEach(dropPooled); }

	Entry* find(const PoolKey& key) const
	{
		return table_.find(PoolKeyHash{}(key), [&](const Entry& e) { return e.key == key; });
	}
	/// Takes a new buffer entry. (Filed a few insertions later — its slot is a miss in a table of millions, and an add
	/// inserts ~5 entries — but found at once: PointerTable::insertDeferred.)
	void insert(std::unique_ptr<BufferEntry> e)
	{
		const uint64_t hash = PoolKeyHash{}(e->key);
		table_.insertDeferred(e.release(), hash);
	}
	/// Takes a reference to a new uniform entry (filed as above).
	void insert(const Ref<UniformEntry>& e)
	{
		table_.insertDeferred(e.get(), PoolKeyHash{}(e->key));
		e->addRef();
	}
	/// Files the deferred insertions.
	void flush() { table_.flush(); }
	/// Removes and drops `e` (which may destroy it).
	void erase(Entry* e) { erase(e, PoolKeyHash{}(e->key)); }
	/// erase() for a caller that hashed `e`'s key already (hashOf).
	void erase(Entry* e, uint64_t hash)
	{
		if (table_.erase(e, hash))
			dropPooled(e);
	}
	static uint64_t hashOf(const PoolKey& key) { return PoolKeyHash{}(key); }
	void prefetch(const PoolKey& key) const { table_.prefetch(PoolKeyHash{}(key)); }
	void prefetch(uint64_t hash) const { table_.prefetch(hash); }
	template <typename F>
	void forEach(F&& f) const
	{
		table_.forEach([&](Entry* e) { f(*e); });
	}
	std::string check() const { return table_.check(); }

private:
	detail::PointerTable<Entry> table_;
};

/// One pipeline state inside a bucket: its records and, per strategy, its GPU arrays.
struct Slot
{
	Bucket* bucket = nullptr;
	const classic::PipelineEntry* indirect_pipeline = nullptr;
	const classic::PipelineEntry* megacall_pipeline = nullptr;
	classic::PipelineRequest request; ///< (indirect variant) kept to create the megacall pipeline lazily
	gpu::DynamicState dyn;
	bool indexed = true;
	uint32_t prim = 3; ///< vertices per primitive
	std::vector<HeapObject*> records;
	uint64_t emit_sum = 0;
	DrawStrategy active = DrawStrategy::Indirect;
	// indirect: VkDrawIndexedIndirectCommand (5 words) or VkDrawIndirectCommand (4 words) per record; count word.
	GpuArray commands{gpu::BufferUsage::Indirect | gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
	                  "heap commands"};
	GpuArray count{gpu::BufferUsage::Indirect | gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
	               "heap count"};
	// megacall: 5-word records, scan scratch, arguments, tile index.
	GpuArray mrecords{gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc, "heap megacall records"};
	std::optional<ScanBuffers> scan;
	gpu::BufferHandle args;
	gpu::BufferHandle tiles;
	bool scan_dirty = true;
	bool queued = false;

	uint32_t commandWords() const { return indexed ? 5u : 4u; }
};

/// What makes two objects share a bucket: the heap effect's compile key, the chunk and the (texture, sampler) pairs.
struct BucketKey
{
	fx::Hash128 effect;
	uint32_t chunk = 0;
	std::vector<const void*> textures; ///< texture, sampler, texture, sampler, …
	bool operator==(const BucketKey&) const = default;
};

struct BucketKeyHash
{
	size_t operator()(const BucketKey& k) const
	{
		uint64_t h = k.effect.lo ^ (k.effect.hi * 0x9E3779B97F4A7C15ull) ^ (uint64_t(k.chunk) << 17);
		for (const void* t : k.textures)
			h = (h ^ uint64_t(uintptr_t(t))) * 0xff51afd7ed558ccdull;
		return size_t(h ^ (h >> 31));
	}
};

/// (effect, chunk, textures): one draw-header heap and its slots.
struct Bucket
{
	uint32_t chunk = 0;
	fx::Effect effect;
	fx::CompiledEffectPtr indirect_effect;
	fx::CompiledEffectPtr megacall_effect;
	uint32_t header_words = 0;
	GpuArray headers{gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc, "heap draw headers"};
	std::vector<uint32_t> free_headers;
	uint32_t header_count = 0;
	bool headers_queued = false; ///< listed in HeapScene::Impl::dirty_headers
	std::vector<Ref<classic::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	std::vector<uint32_t> texture_bindings;
	std::vector<std::unique_ptr<Slot>> slots;
	/// Pipeline-state values already resolved to a slot (skips building a PipelineRequest per object).
	struct Known
	{
		scene::PipelineStateValues state;
		bool indexed;
		Slot* slot;
	};
	std::vector<Known> known;
	uint32_t objects = 0;
	uint64_t serial = 0;
};

/// The placed objects by their render object. Its hash is the render object's address times an odd constant — a
/// bijection, so equal hashes are the same object and a lookup never reads a HeapObject to compare. Holds a reference
/// to each.
class ObjectTable
{
public:
	ObjectTable() = default;
	ObjectTable(const ObjectTable&) = delete;
	ObjectTable& operator=(const ObjectTable&) = delete;
	~ObjectTable() { clear(); }

	static uint64_t hash(const scene::RenderObject* o)
	{
		return reinterpret_cast<uintptr_t>(o) * 0x9e3779b97f4a7c15ull;
	}
	/// Files `h`, placed for `o` (not in the table yet), and takes a reference.
	void insert(const scene::RenderObject* o, const Ref<HeapObject>& h);
	/// Removes the object filed for `o` and returns the table's reference to it (null when there is none).
	Ref<HeapObject> take(const scene::RenderObject* o);
	void prefetch(const scene::RenderObject* o) const { table_.prefetch(hash(o)); }
	size_t size() const { return table_.size(); }
	template <typename F>
	void forEach(F&& f) const
	{
		table_.forEach(f);
	}
	/// Drops every reference.
	void clear();
	/// Files the deferred insertions.
	void flush() { table_.flush(); }
	std::string check() const { return table_.check(); }

private:
	detail::PointerTable<HeapObject> table_;
};

struct HeapScene::Impl
{
	classic::Context* context;
	scene::FramebufferSignature signature;
	fx::FragmentOutputs outputs;
	HeapOptions options;
	HeapStats* stats;
	uint64_t max_chunk_bytes = 0;
	adaptive::SetReader<RenderObjectPtr> reader;
	adaptive::cset<RenderObjectPtr> skipped; ///< HeapOptions::skip_ineligible: the objects left to another pass
	classic::DerivedUniforms derived;
	std::optional<MegacallScan> scanner;
	std::optional<gpu::ScatterCopy>
	    scatter; ///< made by the first upload() with enough regions (HeapOptions::scatter_above)

	std::vector<std::unique_ptr<Chunk>> chunks;
	// Flat (open-addressing) maps for the per-object tables: a node-based map costs ~3 cache misses per lookup at 10^6
	// objects (bucket slot, the node before, the node), which made pool lookups ~2/3 of an add's time.
	Pool pool;                                                     ///< non-constant inputs, by PoolKey
	absl::flat_hash_map<ConstantKey, Ref<UniformEntry>> constants; ///< constant uniform value → entry
	/// Calls f(Entry&) for every pool entry, constants included.
	template <typename F>
	void forEachEntry(F&& f) const
	{
		pool.forEach(f);
		for (const auto& kv : constants)
			f(*kv.second);
	}
	std::unordered_map<BucketKey, std::unique_ptr<Bucket>, BucketKeyHash> buckets;
	std::vector<Bucket*> bucket_order; ///< by creation (deterministic draw order)
	uint64_t next_bucket_serial = 0;
	ObjectTable objects;
	/// Non-constant uniform node → chunks holding an entry for it (bit c; chunks ≥ 64 are looked up in the pool). A
	/// node is listed from the first placement that looks for it until its last entry goes; every entry of a listed
	/// node is UniformEntry::indexed, and no entry of an unlisted one.
	absl::flat_hash_map<const void*, uint64_t> uniform_chunks;
	/// The placement index's mask for `node` (a node some entry reads), listing it first when it is not listed.
	uint64_t heldChunks(const void* node);
	std::vector<Ref<HeapObject>> dirty_objects;
	std::vector<Ref<UniformEntry>> dirty_entries;
	std::vector<Slot*> dirty_slots;
	size_t removed_since_collect = 0; ///< derived uniforms are collected when this passes half the live objects

	/// The entry of `value` (with `recipe` applied) in `chunk`: shared, or allocated and staged. `unheld`: the caller
	/// knows no entry reads the value's node (see HeapObject::place), so the pool is not searched.
	Result<Entry*> acquireUniform(const aval<UniformValue>& value, classic::DerivedRecipe recipe, uint32_t chunk,
	                              fx::Type expected, const scene::RenderObject& object, const std::string& name,
	                              bool unheld);
	/// The pool key of a non-constant uniform: `node` read through `recipe` in `chunk`.
	static PoolKey uniformKey(const void* node, classic::DerivedRecipe recipe, uint32_t chunk)
	{
		PoolKey key = PoolKey::uniform(node, chunk);
		key.format = uint32_t(recipe); // (unused by uniform keys otherwise: 0 for a plain value)
		return key;
	}
	/// The pool key of `view` read as `type` in `chunk` (reads the buffer's current value without subscribing).
	static PoolKey bufferKey(Entry::Kind kind, const scene::BufferView& view, fx::Type type, uint32_t chunk)
	{
		PoolKey key;
		key.kind = kind;
		key.chunk = chunk;
		key.node = view.buffer.getValue(Token{}).bytes.get();
		key.format = uint32_t(view.format);
		key.offset = view.offset;
		key.stride = view.stride;
		key.type = type;
		return key;
	}
	/// How a buffer is stored in the arena: `elements` tight elements of `components` 32-bit words (indices: one),
	/// read from `data` at the view's offset every `stride` bytes, each `element` bytes there.
	struct BufferLayout
	{
		uint32_t element = 0, stride = 0, components = 0, elements = 0;
		uint64_t data_bytes = 0;
	};
	static BufferLayout bufferLayout(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
	                                 const scene::ArrayBuffer& data)
	{
		BufferLayout l;
		const bool index = kind == Entry::kIndex;
		const uint32_t isize = view.format == VK_FORMAT_R16_UINT ? 2 : 4;
		l.element = index ? isize : scene::formatSize(view.format) * type.cols;
		l.stride = index ? isize : view.stride ? view.stride : l.element;
		l.components = index ? 1 : type.rows * type.cols;
		l.elements = data.size() >= uint64_t(view.offset) + l.element
		                 ? uint32_t((data.size() - view.offset - l.element) / l.stride + 1)
		                 : 0;
		l.data_bytes = uint64_t(l.elements) * l.components * 4;
		return l;
	}
	Result<Entry*> acquireBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type, uint32_t chunk,
	                             const scene::RenderObject& object, const std::string& name);
	/// Converts `data` read through `view` (laid out as `layout`) into `out`: tight 32-bit data of the shader's type.
	/// Errors: a format the heap cannot convert to `type`.
	static Result<void> convertBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
	                                  const BufferLayout& layout, const scene::ArrayBuffer& data, uint32_t* out,
	                                  const scene::RenderObject& object, const std::string& name);
	/// The error of a uniform value whose type is not the effect's.
	static Error uniformMismatch(const scene::RenderObject& object, const std::string& name, fx::Type expected,
	                             fx::Type got)
	{
		return makeError(ErrorCode::InvalidArgument, classic::objectName(object) + ": uniform '" + name + "' is " +
		                                                 fx::typeName(expected) + " in the effect but the value is " +
		                                                 fx::typeName(got));
	}
	/// A pooled entry of `node` is being made: objects holding a private part of `node` are queued for re-placement,
	/// where they find that entry (or make one) instead — a value read by several objects is stored and uploaded once.
	void promotePrivate(AdaptiveObject* node);
	/// Stages a re-packed uniform at `ref` of `chunk`: with its allocation header when the frame's previous write ends
	/// where the allocation starts (one copy region instead of two: an object's uniforms sit side by side).
	Result<void> stageUniform(uint32_t chunk, uint32_t ref, const classic::PackedValue& p, uint32_t bytes);
	/// Records the copies of one page's `regions` into `target`: the short ones through the arena scatter when there
	/// are more than HeapOptions::scatter_above of them, everything else with vkCmdCopyBuffer (upload()).
	Result<void> copyWrites(gpu::CommandList& list, uint32_t page, std::span<const VkBufferCopy> regions,
	                        const gpu::Buffer& target);
	/// The error of a buffer larger than a chunk.
	Error bufferTooLarge(const scene::RenderObject& object, const std::string& name, uint64_t bytes) const
	{
		return makeError(ErrorCode::InvalidArgument, classic::objectName(object) + ": " + name + " needs " +
		                                                 std::to_string(bytes) +
		                                                 " bytes, more than one arena chunk holds");
	}
	/// The blocks one object's removal gives back, freed together when it is done (ChunkAllocator::freeMany: an
	/// object's inputs were allocated side by side, so their blocks merge among themselves before they reach the free
	/// indices). Group fit puts every input of a draw in one chunk, so a batch serves one chunk.
	struct FreeBatch
	{
		uint32_t chunk = ~0u;
		absl::InlinedVector<uint32_t, 12> refs;
	};
	/// Drops one reference to `e`; the last one frees its block — at once, or into `batch` when given.
	void releaseEntry(Entry* e, FreeBatch* batch = nullptr);
	/// Frees the block at `ref` of `chunk` into `batch` when it serves that chunk (or none yet), else at once.
	void freeLater(FreeBatch* batch, uint32_t chunk, uint32_t ref)
	{
		if (batch && (batch->refs.empty() || batch->chunk == chunk))
		{
			batch->chunk = chunk;
			batch->refs.push_back(ref);
		}
		else
			freeBlock(chunk, ref);
	}
	/// While set (the removal loop of update()), releaseEntry() leaves the pool erasures to eraseDoomed(): each one
	/// probes a random slot of a table of millions, and inside a removal that miss stalled the loop although its slot
	/// was prefetched removals ahead (perf on the H200: half of releaseEntry's time on that one load). Done together
	/// in a tight loop that prefetches ahead, the misses overlap. An entry waiting here has no holder (refcount 0) and
	/// its block is free, so it must be gone before anything searches the pool: update() erases right after the loop.
	bool defer_pool_erase = false;
	struct Doomed
	{
		Entry* entry;
		uint64_t hash; ///< of its key, taken while the entry was warm
	};
	std::vector<Doomed> doomed_entries;
	void eraseDoomed();
	/// Set by ~HeapScene: objects leave without giving anything back one by one (their slots, blocks and pool entries
	/// all go with the scene), which makes closing a scene of 10^6 objects a fraction of 10^6 removals.
	bool closing = false;
	void freeBatch(FreeBatch& batch);
	Result<uint32_t> allocate(uint32_t chunk, uint32_t data_bytes);
	/// allocate() plus stageAllocation(): the block's ref and where its data go (the block is freed again when staging
	/// fails).
	Result<std::pair<uint32_t, std::byte*>> allocateStaged(uint32_t chunk, uint32_t type_id, uint32_t length,
	                                                       uint32_t data_bytes);
	bool chunk_full = false; ///< set by allocate() when a chunk had no room (other OutOfMemory errors are fatal)
	HostPages pages;         ///< where this frame's arena writes are produced
	uint32_t openChunk();
	/// The bucket of `o` drawn with `source` (Context::objectEffect of `o`, compiled as `effect`) in `chunk`.
	Result<Bucket*> bucketFor(const scene::RenderObject& o, const fx::Effect& source,
	                          const fx::CompiledEffectPtr& effect, uint32_t chunk);
	Result<Slot*> slotFor(Bucket& b, const scene::PipelineStateValues& state, bool indexed);
	Result<Slot*> createSlot(Bucket& b, const scene::PipelineStateValues& state, bool indexed);
	/// The heap-indirect compile of `effect` (cached by effect id: no hashing of the request per object).
	/// An effect compiled for the heap, with its uniforms planned (DerivedUniforms resolves objects against the plan).
	struct HeapEffect
	{
		fx::CompiledEffectPtr compiled;
		classic::UniformPlan uniforms;
	};
	Result<const HeapEffect*> heapEffect(const fx::Effect& effect);
	std::map<fx::Hash128, HeapEffect> heap_effects;
	/// Buckets whose draw headers changed this frame: upload() stages only theirs, so a frame's fixed cost does not
	/// visit every bucket's header array.
	std::vector<Bucket*> dirty_headers;
	void markHeaders(Bucket* b)
	{
		if (!std::exchange(b->headers_queued, true))
			dirty_headers.push_back(b);
	}
	void markSlot(Slot* s)
	{
		s->scan_dirty = true;
		if (!s->queued)
		{
			s->queued = true;
			dirty_slots.push_back(s);
		}
	}
	/// Drops empty slots and buckets (after the update, so nothing refers to them).
	void sweep();
	bool sweep_pending = false; ///< a slot or bucket became empty since the last sweep
	/// A block was freed since compact() last looked: only frees make a chunk worth compacting, so a frame without
	/// one (an edit, an add into free space) skips the walk of the chunks.
	bool compaction_check = false;
	/// The chunks' blocks or the slots (their number or strategies) changed since the shape figures were summed:
	/// update() re-sums them only then, so a frame's fixed cost does not walk every chunk and slot.
	bool shape_changed = true;
	/// A chunk's blocks changed since upload() last sized the chunks' buffers (grown, given back, compacted): only
	/// then does it walk the chunks for that.
	bool upload_chunks = true;
	uint64_t capacity_bytes = 0; ///< the chunks' buffer sizes, as upload() last summed them
	/// The shape part of HeapStats: slots, their strategies, chunks and their bytes.
	struct Shape
	{
		uint32_t slots = 0, indirect_slots = 0, megacall_slots = 0, chunks = 0;
		uint64_t arena_bytes = 0, live_bytes = 0;
		bool operator==(const Shape&) const = default;
	};
	Shape shape; ///< as last summed
	/// Sums the shape figures over the chunks and slots (O(chunks + slots)).
	Shape sumShape() const;
	/// Frees the block at `ref` of `chunk` (and notes that the chunk may now be worth compacting).
	void freeBlock(uint32_t chunk, uint32_t ref)
	{
		chunks[chunk]->allocator.free(ref);
		shape_changed = upload_chunks = compaction_check = true;
	}
	/// Compacts chunks whose waste passed the floor: plans the moves, re-seats every reference (pool entries, draw
	/// headers, index starts in commands and records); upload() records the copies.
	void compact();
	void chooseStrategy(Slot& s);
};

void* BufferEntry::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(BufferEntry), "BufferEntry is final");
	return RecordCache<sizeof(BufferEntry)>::allocate();
}

void BufferEntry::operator delete(void* p) noexcept
{
	RecordCache<sizeof(BufferEntry)>::release(p);
}

void* PrivateSet::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(PrivateSet), "PrivateSet is final");
	return RecordCache<sizeof(PrivateSet)>::allocate();
}

void PrivateSet::operator delete(void* p) noexcept
{
	RecordCache<sizeof(PrivateSet)>::release(p);
}

void* UniformEntry::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(UniformEntry), "UniformEntry is final");
	return RecordCache<sizeof(UniformEntry)>::allocate();
}

void UniformEntry::operator delete(void* p) noexcept
{
	RecordCache<sizeof(UniformEntry)>::release(p);
}

void UniformEntry::inputChanged(AdaptiveObject*)
{
	if (!queued)
	{
		queued = true;
		scene->dirty_entries.emplace_back(this);
	}
}

Result<void> UniformEntry::repack()
{
	queued = false;
	if (refcount == 0)
		return {};
	beginEvaluation();
	classic::PackedValue p;
	try
	{
		p = classic::packDerived(recipe, uniform.getValue(Token{this}));
	}
	catch (const std::exception& e)
	{
		endEvaluation(false);
		return makeError(ErrorCode::InvalidArgument, std::string("a uniform input threw: ") + e.what());
	}
	endEvaluation(true);
	if (p.type != type)
		return makeError(ErrorCode::InvalidArgument, "a shared uniform value changed its type from " +
		                                                 fx::typeName(type) + " to " + fx::typeName(p.type));
	QUOKKA_TRY(scene->stageUniform(chunk, ref, p, data_bytes));
	++scene->stats->uniform_uploads;
	return {};
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] objects: placement, refresh, release
// ---------------------------------------------------------------------------------------------------------------------

/// One object in the heap. Reads its draw call, active flag, pipeline-state leaves and buffers (uniform values are
/// read by their pool entries); inputChanged() tells it which changed.
class HeapObject final : public classic::ObjectNode
{
public:
	HeapObject(HeapScene::Impl& s, RenderObjectPtr o) : scene_(&s), object_(std::move(o)) {}
	~HeapObject() override { unplace(); }
	static void* operator new([[maybe_unused]] size_t bytes)
	{
		QUOKKA_ASSERT(bytes == sizeof(HeapObject), "HeapObject is final");
		return RecordCache<sizeof(HeapObject)>::allocate();
	}
	static void operator delete(void* p) noexcept { RecordCache<sizeof(HeapObject)>::release(p); }

	/// Compiles, reads and validates the inputs, then places the object (chunk, entries, bucket, header, slot, record):
	/// read(), acquire() and attach() in a row; on failure the object is left out until an input changes.
	Result<void> place();
	/// What placement carries from one phase to the next. HeapScene::update() places a frame's additions phase by
	/// phase over batches of objects: one object's whole path is larger than the L1 instruction cache, so placed one
	/// at a time every object fetched it again (callgrind: ~300 simulated I-cache misses per placement), while each
	/// phase's code stays cached across a batch. The phases run in object order and depend only on earlier objects'
	/// earlier phases, so a batch places exactly as one-at-a-time placement does.
	struct Plan
	{
		const fx::Effect* source = nullptr;
		const HeapScene::Impl::HeapEffect* planned = nullptr;
		absl::InlinedVector<aval<UniformValue>, 8> uniforms;
		absl::InlinedVector<classic::DerivedRecipe, 8> recipes;
	};
	/// Phase 1: compiles the effect and reads the inputs (subscribing to the changeable ones).
	Result<void> read(Plan& plan);
	/// Phase 2: chooses the chunk and acquires the entries there (group fit), and the bucket; validates the draw.
	Result<void> acquire(Plan& plan);
	/// Phase 3: the draw header, the slot and the record.
	Result<void> attach();
	/// Applies the changed inputs.
	Result<void> refresh();
	/// Leaves the heap (entries released, header freed, record removed).
	void unplace();
	void detach()
	{
		dead = true;
		unplace();
		for (const Input& in : inputs_)
			removeInput(in.node);
		inputs_.clear();
	}

	const scene::RenderObject& object() const { return *object_; }
	void inputChanged(AdaptiveObject* input) override
	{
		dirty_inputs_.push_back(input);
		if (!queued && !dead)
		{
			queued = true;
			scene_->dirty_objects.emplace_back(this);
		}
	}

	// Placement (read by the slot/bucket writers and the diagnostics).
	Bucket* bucket = nullptr;
	Slot* slot = nullptr;
	uint32_t header = 0;
	uint32_t record = 0;
	absl::InlinedVector<Entry*, 8>
	    entries; ///< uniforms then attributes (header order); inline: no allocation per object
	Entry* indices = nullptr;
	std::unique_ptr<PrivateSet> owned; ///< what only it reads (parts listed in `entries` / `indices`), or null
	scene::DrawCall draw;
	bool active = true;
	bool queued = false;
	bool dead = false;
	bool placed = false;
	bool replace = false; ///< re-place at the next refresh (a private uniform part's value gained another reader)

	/// True when this object holds a private uniform part of `node` (PrivateSet).
	bool holdsPrivate(const AdaptiveObject* node) const
	{
		if (owned)
			for (const aval<UniformValue>& u : owned->uniforms)
				if (u.node().get() == node)
					return true;
		return false;
	}
	/// Queues this object for re-placement (HeapScene::Impl::promotePrivate): it then finds the value's pooled entry.
	void requestReplace()
	{
		replace = true;
		if (!queued && !dead)
		{
			queued = true;
			scene_->dirty_objects.emplace_back(this);
		}
	}
	const HeapScene::Impl* scene() const { return scene_; }

	/// Vertices emitted per instance (whole primitives) and instances, 0 when hidden.
	uint32_t count() const
	{
		if (!active || !slot)
			return 0;
		return draw.count - draw.count % slot->prim;
	}
	uint32_t instances() const { return active ? draw.instance_count : 0; }
	uint64_t emits() const { return uint64_t(count()) * instances(); }
	/// Removal of many scattered objects: detach() visits the object, its entry and input arrays, the entries, the
	/// input nodes and the entries' pool slots — one cache miss per level. The removal loop calls this for objects
	/// ahead of the one it detaches, deeper levels for nearer objects, so each level is in cache when needed.
	enum class PrefetchStage
	{
		kObject,  ///< this object
		kArrays,  ///< the entry and input arrays (this object must be in cache)
		kEntries, ///< the entries and the input nodes (the arrays must be)
		kPool,    ///< the allocator bits and placement-index slots of entries this removal frees (the entries must be)
		kSlot,    ///< the record's place in the slot arrays, and the slot's last object (which the swap-pop moves)
		kLast,    ///< that last object's index entry (its record names the index start; the object must be in cache)
	};
	void prefetch(PrefetchStage stage) const;
	/// Writes this object's command and megacall record into its slot's shadows.
	void writeRecord();
	/// Re-writes header and record after its inputs moved (compaction).
	void rewrite()
	{
		writeHeader();
		writeRecord();
	}

private:
	enum Role : uint8_t
	{
		kState,
		kDraw,
		kActive,
		kBuffer,
		kUniform, ///< the value of a private uniform part (PrivateSet)
	};
	struct Input
	{
		AdaptiveObject* node;
		Role role;
	};
	/// Runs `body`, turning an exception an input throws into an error (as evaluate() does, without an evaluation).
	template <typename F>
	Result<void> guarded(F&& body)
	{
		try
		{
			return body();
		}
		catch (const std::exception& e)
		{
			return fail(std::string("an input threw: ") + e.what());
		}
	}
	Error fail(const std::string& what) const
	{
		return makeError(ErrorCode::InvalidArgument, classic::objectName(*object_) + ": " + what);
	}
	void track(AdaptiveObject* node, Role role)
	{
		if (node && !node->isConstant())
		{
			trackInput(node);
			inputs_.push_back({node, role});
		}
	}
	Result<void> validateDraw();
	Result<void> readState();
	/// Inputs changed since the last refresh (inline: an edit marks one or two, so an edited object allocates nothing).
	using DirtyInputs = absl::InlinedVector<AdaptiveObject*, 2>;
	/// Re-packs and stages the private uniform parts whose node is in `dirty`. Errors: a value changed its type.
	Result<void> repackPrivate(const DirtyInputs& dirty);
	void writeHeader();
	void attachToSlot(Slot* s);
	void detachFromSlot();

	HeapScene::Impl* scene_;
	RenderObjectPtr object_;
	/// The non-constant inputs it subscribed to (inline: the common object — its own trafo and one more — allocates
	/// nothing; a growing std::vector made two allocations per add and two frees per removal).
	absl::InlinedVector<Input, 2> inputs_;
	DirtyInputs dirty_inputs_;
	scene::PipelineStateValues state_;
	absl::InlinedVector<const scene::BufferView*, 4> views_; ///< attributes in header order
};

void ObjectTable::insert(const scene::RenderObject* o, const Ref<HeapObject>& h)
{
	table_.insertDeferred(h.get(), hash(o));
	h->addRef();
}

Ref<HeapObject> ObjectTable::take(const scene::RenderObject* o)
{
	// (Any element filed under the hash is the object: the hash is a bijection.)
	HeapObject* h = table_.extract(hash(o), [](const HeapObject&) { return true; });
	return Ref<HeapObject>::adopt(h); // (the table's reference, or null; h stays untouched, a removal prefetches it)
}

void ObjectTable::clear()
{
	detail::PointerTable<HeapObject> old;
	std::swap(old, table_); // (a release may run code that looks at the table)
	old.forEach([](HeapObject* h) { h->release(); });
}

Result<void> HeapObject::validateDraw()
{
	if (!active || draw.count == 0 || draw.instance_count == 0)
		return {};
	uint64_t vertices = uint64_t(draw.first) + draw.count;
	if (draw.indexed)
	{
		if (!indices)
			return fail("the draw call is indexed but the object has no index buffer");
		if (uint64_t(draw.first) + draw.count > indices->elements)
			return fail("the draw reads indices up to " + std::to_string(uint64_t(draw.first) + draw.count) + " of " +
			            std::to_string(indices->elements));
		// The largest index decides how many vertices the draw reads (only when the draw or the buffer changed).
		const scene::BufferView& v = *object_->indices;
		const scene::ArrayBuffer& data = v.buffer.getValue(Token{this});
		const bool u16 = v.format == VK_FORMAT_R16_UINT;
		const std::byte* base = data.data() + v.offset + uint64_t(draw.first) * (u16 ? 2 : 4);
		const uint32_t max_index = classic::maxIndex(base, u16, draw.count);
		const int64_t last = int64_t(max_index) + draw.base_vertex;
		if (last < 0)
			return fail("base vertex " + std::to_string(draw.base_vertex) + " makes indices negative");
		vertices = uint64_t(last) + 1;
	}
	const uint64_t instances = uint64_t(draw.first_instance) + draw.instance_count;
	const size_t uniforms = bucket ? entries.size() - views_.size() : 0;
	for (size_t i = 0; i < views_.size(); ++i)
	{
		const Entry* e = entries[uniforms + i];
		const uint64_t n = views_[i]->per_instance ? instances : vertices;
		if (n > e->elements)
			return fail("attribute '" + (bucket ? bucket->indirect_effect->iface.attributes[i].name : std::string()) +
			            "' holds " + std::to_string(e->elements) + " elements but the draw reads " + std::to_string(n) +
			            (views_[i]->per_instance ? " instances" : " vertices"));
	}
	return {};
}

Result<void> HeapObject::readState()
{
	state_ = object_->state.snapshot(Token{this});
	return {};
}

void HeapObject::writeHeader()
{
	GpuArray& h = bucket->headers;
	const uint32_t base = header * bucket->header_words;
	const size_t uniforms = entries.size() - views_.size();
	absl::InlinedVector<uint32_t, 16> words(entries.size() + 2);
	for (size_t i = 0; i < entries.size(); ++i)
	{
		uint32_t ref = entries[i]->ref;
		if (i >= uniforms && views_[i - uniforms]->per_instance)
			ref |= fx::kHeapPerInstanceBit;
		words[i] = ref;
	}
	const int32_t vertex_base = draw.indexed ? draw.base_vertex : int32_t(draw.first);
	words[entries.size()] = uint32_t(vertex_base);
	words[entries.size() + 1] = draw.first_instance;
	h.set(base, words.data(), words.size());
	scene_->markHeaders(bucket);
}

void HeapObject::writeRecord()
{
	Slot& s = *slot;
	const uint32_t n = count(), inst = instances();
	const uint32_t cw = s.commandWords();
	const size_t c = size_t(record) * cw;
	const size_t m = size_t(record) * fx::kRecordWords;
	if (s.indexed)
	{
		const uint32_t first_index = (indices ? (indices->ref + 16) / 4 : 0) + draw.first;
		const uint32_t command[5] = {n, inst, first_index, uint32_t(draw.base_vertex), header};
		s.commands.set(c, command, 5);
		const uint32_t mrecord[4] = {header, first_index, n, inst};
		s.mrecords.set(m + 1, mrecord, 4);
	}
	else
	{
		const uint32_t command[4] = {n, inst, draw.first, header};
		s.commands.set(c, command, 4);
		const uint32_t mrecord[4] = {header, fx::kNonIndexed, n, inst};
		s.mrecords.set(m + 1, mrecord, 4);
	}
}

void HeapObject::attachToSlot(Slot* s)
{
	slot = s;
	record = uint32_t(s->records.size());
	s->records.push_back(this);
	s->commands.resize(s->records.size() * s->commandWords());
	s->mrecords.resize(s->records.size() * fx::kRecordWords);
	s->count.set(0, uint32_t(s->records.size()));
	s->emit_sum += emits();
	writeRecord();
	scene_->markSlot(s);
}

void HeapObject::detachFromSlot()
{
	Slot* s = slot;
	if (!s)
		return;
	s->emit_sum -= emits();
	// Swap-pop: the last record fills the hole.
	HeapObject* last = s->records.back();
	s->records[record] = last;
	s->records.pop_back();
	if (last != this)
	{
		last->record = record;
		last->writeRecord();
	}
	s->commands.resize(s->records.size() * s->commandWords());
	s->mrecords.resize(s->records.size() * fx::kRecordWords);
	s->count.set(0, uint32_t(s->records.size()));
	slot = nullptr;
	scene_->markSlot(s);
	if (s->records.empty())
		scene_->sweep_pending = true;
}

Result<void> HeapObject::place()
{
	Plan plan;
	Result<void> r = read(plan);
	if (r.ok())
		r = acquire(plan);
	if (r.ok())
		r = attach();
	if (!r.ok())
		unplace(); // left out until an input changes (its edges are kept)
	return r;
}

Result<void> HeapObject::read(Plan& plan)
{
	const scene::RenderObject& o = *object_;
	if (!heapEligible(o))
		return fail("its topology (strips, fans, or one that is not a constant) cannot be drawn by the heap: draw it "
		            "on the classic path, or set HeapOptions::skip_ineligible and give it to a classic pass");
	QUOKKA_TRY_ASSIGN(source, scene_->context->objectEffect(o));
	QUOKKA_TRY_ASSIGN(planned, scene_->heapEffect(*source));
	plan.source = source;
	plan.planned = planned;
	const fx::EffectInterface& iface = planned->compiled->iface;
	inputs_.clear();
	views_.clear();
	return evaluate(
	    *object_,
	    [&]() -> Result<void>
	    {
		    // Read everything first (shader-driven: only what the compiled effect uses), then place.
		    // Values derived from the object's ModelTrafo alone are pooled by (input, recipe): no adaptive node per
		    // object, and nothing left in the derived table when the object goes.
		    // (Inline storage: an add otherwise spent a dozen allocations growing these few-element arrays.)
		    plan.uniforms.assign(iface.uniforms.size(), aval<UniformValue>());
		    plan.recipes.assign(iface.uniforms.size(), classic::DerivedRecipe{});
		    views_.reserve(iface.attributes.size());
		    QUOKKA_TRY(scene_->derived.resolve(o, planned->uniforms, plan.uniforms, plan.recipes));
		    for (const fx::InterfaceVariable& a : iface.attributes)
		    {
			    auto it = o.attributes.find(a.name);
			    if (it == o.attributes.end())
				    return fail("effect needs the vertex attribute '" + a.name + "' (" + fx::typeName(a.type) +
				                "), which the object does not have");
			    if (scene::formatSize(it->second.format) == 0 || !classic::formatFeeds(it->second.format, a.type))
				    return fail("attribute '" + a.name + "' has a format that cannot feed a " + fx::typeName(a.type) +
				                " input");
			    views_.push_back(&it->second);
			    track(it->second.buffer.node().get(), kBuffer);
		    }
		    if (o.indices)
		    {
			    if (o.indices->format != VK_FORMAT_R16_UINT && o.indices->format != VK_FORMAT_R32_UINT)
				    return fail("indices must be R16_UINT or R32_UINT");
			    if (o.indices->offset % (o.indices->format == VK_FORMAT_R16_UINT ? 2 : 4) != 0)
				    return fail("the index offset must be a multiple of the index size");
			    track(o.indices->buffer.node().get(), kBuffer);
		    }
		    const scene::PipelineState& st = o.state;
		    auto trackState = [&](const auto&... leaves) { (track(leaves.node().get(), kState), ...); };
		    trackState(st.topology, st.cull_mode, st.front_face, st.depth_test, st.depth_write, st.depth_compare,
		               st.depth_clamp, st.depth_bias, st.stencil, st.default_blend, st.alpha_to_coverage);
		    for (const auto& [name, b] : st.blend)
			    trackState(b);
		    QUOKKA_TRY(readState());
		    track(o.draw_call.node().get(), kDraw);
		    draw = o.draw_call.getValue(Token{this});
		    track(o.active.node().get(), kActive);
		    active = o.active.getValue(Token{this});
		    return {};
	    });
}

Result<void> HeapObject::acquire(Plan& plan)
{
	const scene::RenderObject& o = *object_;
	const fx::CompiledEffectPtr& effect = plan.planned->compiled;
	const fx::EffectInterface& iface = effect->iface;
	const auto& uniforms = plan.uniforms;
	const auto& recipes = plan.recipes;
	return evaluate(
	    *object_,
	    [&]() -> Result<void>
	    {
		    // A uniform node that no entry reads — an entry subscribes to its node, so one without outputs, such as
		    // the object's own fresh ModelTrafo — has no entry in any chunk, for any recipe: its acquisitions skip the
		    // pool search (an unsuccessful probe at a random place of a table of millions). Decided before the first
		    // acquisition subscribes; a second use of one (node, recipe) by this object searches, and finds the first.
		    absl::InlinedVector<bool, 8> unheld(uniforms.size());
		    for (size_t i = 0; i < uniforms.size(); ++i)
		    {
			    const AdaptiveObject* node = uniforms[i].node().get();
			    unheld[i] = !node->isConstant() && node->outputCount() == 0;
			    for (size_t j = 0; j < i && unheld[i]; ++j)
				    unheld[i] = !(uniforms[j].node().get() == node && recipes[j] == recipes[i]);
		    }
		    // Group-fit placement: a chunk already holding one of the inputs, else the newest, else a new one; the
		    // first where every input fits (allocations are rolled back when one does not).
		    absl::InlinedVector<uint32_t, 8> candidates;
		    auto consider = [&](uint32_t c)
		    {
			    if (std::find(candidates.begin(), candidates.end(), c) == candidates.end())
				    candidates.push_back(c);
		    };
		    if (scene_->chunks.size() > 1)
		    {
			    // Ascending chunk order, as a scan of every chunk for every input would give: one lookup per input.
			    // Only a node some entry reads can be held: an entry subscribes to its node, so a node without
			    // outputs (an object's own fresh ModelTrafo) needs no lookup in these tables of millions of keys.
			    auto mayBeHeld = [](const aval<UniformValue>& u)
			    { return !u.node()->isConstant() && u.node()->outputCount() != 0; };
			    uint64_t held = 0;
			    for (const aval<UniformValue>& u : uniforms)
				    if (mayBeHeld(u))
					    held |= scene_->heldChunks(u.node().get());
			    for (uint32_t c = 0; c < 64 && c < scene_->chunks.size(); ++c)
				    if (held & (uint64_t(1) << c))
					    consider(c);
			    for (uint32_t c = 64; c < scene_->chunks.size(); ++c)
				    for (const aval<UniformValue>& u : uniforms)
					    if (mayBeHeld(u) && scene_->pool.find(PoolKey::uniform(u.node().get(), c)))
					    {
						    consider(c);
						    break;
					    }
		    }
		    if (!scene_->chunks.empty())
			    consider(uint32_t(scene_->chunks.size() - 1));
		    // Buffers that no pool entry holds — their storage is referenced by its aval alone, and every entry keeps
		    // a reference — are looked up nowhere; those whose node only this view holds are this object's own: the
		    // first PrivateSet::kBufferParts of them go side by side into one block (no pool entries), others are
		    // pooled. A chunk where that certainly fails (the private block or the largest pooled one does not fit, or
		    // their sum exceeds the chunk's free and unused bytes) is skipped in O(1): no pool lookups (cache misses in
		    // a table of millions of entries) and no allocation attempts. Exactly the attempts that would fail are
		    // skipped, so placement is unchanged.
		    struct Part
		    {
			    Entry::Kind kind;
			    const scene::BufferView* view;
			    fx::Type type;
			    const std::string* name;
			    HeapScene::Impl::BufferLayout layout;
			    const scene::ArrayBuffer* data;
		    };
		    absl::InlinedVector<Part, PrivateSet::kBufferParts> parts;
		    uint64_t private_bytes = 0, fresh_sum = 0, fresh_max = 0;
		    enum Held : uint8_t
		    {
			    kHeld,    ///< some entry may hold it: looked up in the pool
			    kFresh,   ///< unheld, pooled (past the private parts): no lookup
			    kPrivate, ///< unheld, a part of the private block
		    };
		    auto classify = [&](Entry::Kind kind, const scene::BufferView& v, fx::Type type,
		                        const std::string& name) -> Result<Held>
		    {
			    const scene::ArrayBuffer& data = v.buffer.getValue(Token{});
			    if (!storageUnheld(v, data))
				    return kHeld;
			    const HeapScene::Impl::BufferLayout layout = HeapScene::Impl::bufferLayout(kind, v, type, data);
			    if (16 + layout.data_bytes > scene_->max_chunk_bytes)
				    return scene_->bufferTooLarge(o, name, 16 + layout.data_bytes);
			    const uint64_t bytes = align16(16 + layout.data_bytes);
			    // Private only when this view is the one way to the storage: its node held by this view alone (a
			    // changeable buffer's node is held by its cval too, and is often read by many objects).
			    if (parts.size() < PrivateSet::kBufferParts && v.buffer.node()->refCount() == 1)
			    {
				    parts.push_back({kind, &v, type, &name, layout, &data});
				    private_bytes += bytes;
				    return kPrivate;
			    }
			    fresh_sum += bytes;
			    fresh_max = std::max(fresh_max, bytes);
			    return kFresh;
		    };
		    // (Which buffers are unheld also spares their pool slots' prefetches below: acquireBuffer never probes for
		    // them, and each is a DRAM miss in a table of millions that only took a line fill buffer.)
		    static const std::string kIndicesName = "indices";
		    Held index_held = kHeld;
		    if (o.indices)
		    {
			    QUOKKA_TRY_ASSIGN(h, classify(Entry::kIndex, *o.indices, fx::U32, kIndicesName));
			    index_held = h;
		    }
		    absl::InlinedVector<Held, 8> view_held(views_.size(), kHeld);
		    for (size_t i = 0; i < views_.size(); ++i)
		    {
			    QUOKKA_TRY_ASSIGN(
			        h, classify(Entry::kAttribute, *views_[i], iface.attributes[i].type, iface.attributes[i].name));
			    view_held[i] = h;
		    }
		    // The object's own uniforms — a node nothing reads yet (its fresh ModelTrafo, what derives from it) — join
		    // the private block too, up to PrivateSet::kUniformParts: no pool entry, no entry object, and the object
		    // itself subscribes to the node (re-packing the parts in refresh()). Read and packed once, before the
		    // chunk attempts. Should another reader appear later, its pooled entry has this object re-placed
		    // (HeapScene::Impl::promotePrivate), so a shared value is stored and uploaded once.
		    absl::InlinedVector<bool, 8> uniform_private(uniforms.size(), false);
		    absl::InlinedVector<classic::PackedValue, PrivateSet::kUniformParts> packed_private;
		    for (size_t i = 0; i < uniforms.size() && packed_private.size() < PrivateSet::kUniformParts; ++i)
		    {
			    if (!unheld[i])
				    continue;
			    classic::PackedValue packed;
			    try
			    {
				    packed = classic::packDerived(recipes[i], uniforms[i].getValue(Token{this}));
			    }
			    catch (const std::exception& ex)
			    {
				    return fail("uniform '" + iface.uniforms[i].name + "' threw: " + ex.what());
			    }
			    if (packed.type != iface.uniforms[i].type)
				    return scene_->uniformMismatch(o, iface.uniforms[i].name, iface.uniforms[i].type, packed.type);
			    track(uniforms[i].node().get(), kUniform);
			    uniform_private[i] = true;
			    packed_private.push_back(packed);
			    private_bytes += align16(16ull + packed.type.packedBytes());
		    }
		    auto tooLarge = [&] {
			    return fail("its inputs do not fit in one arena chunk of " + std::to_string(scene_->max_chunk_bytes) +
			                " bytes");
		    };
		    if (private_bytes > scene_->max_chunk_bytes)
			    return tooLarge();
		    fresh_sum += private_bytes;
		    fresh_max = std::max(fresh_max, private_bytes);
		    const bool first_fresh = o.indices ? index_held != kHeld : !views_.empty() && view_held[0] != kHeld;
		    auto certainlyFull = [&](uint32_t c)
		    {
			    const ChunkAllocator& a = scene_->chunks[c]->allocator;
			    return fresh_max != 0 && (!a.fits(fresh_max) || a.capacity() - a.cursor() + a.freeBytes() < fresh_sum);
		    };
		    if (candidates.size() > 1 && !first_fresh)
		    {
			    // Each attempt starts with a pool lookup of the first buffer (below) — scattered slots of a large
			    // table; fetching them for every candidate at once overlaps the misses of full chunks' attempts.
			    if (o.indices)
				    for (uint32_t c : candidates)
					    scene_->pool.prefetch(HeapScene::Impl::bufferKey(Entry::kIndex, *o.indices, fx::U32, c));
			    else if (!views_.empty())
				    for (uint32_t c : candidates)
					    scene_->pool.prefetch(
					        HeapScene::Impl::bufferKey(Entry::kAttribute, *views_[0], iface.attributes[0].type, c));
		    }
		    for (size_t attempt = 0;; ++attempt)
		    {
			    uint32_t chunk;
			    if (attempt < candidates.size())
			    {
				    chunk = candidates[attempt];
				    if (certainlyFull(chunk))
				    {
					    ++scene_->stats->chunks_skipped;
					    continue;
				    }
			    }
			    else if (attempt == candidates.size())
				    chunk = scene_->openChunk();
			    else
				    return tooLarge();
			    // Each acquisition below probes the pool (a random slot of a table of millions, so a miss each) after
			    // the previous one's copying: fetched together here, the misses overlap instead of queueing.
			    if (o.indices && index_held == kHeld)
				    scene_->pool.prefetch(HeapScene::Impl::bufferKey(Entry::kIndex, *o.indices, fx::U32, chunk));
			    for (size_t i = 0; i < views_.size(); ++i)
				    if (view_held[i] == kHeld)
					    scene_->pool.prefetch(
					        HeapScene::Impl::bufferKey(Entry::kAttribute, *views_[i], iface.attributes[i].type, chunk));
			    for (size_t i = 0; i < uniforms.size(); ++i)
				    if (!uniforms[i].node()->isConstant() && !unheld[i])
					    scene_->pool.prefetch(HeapScene::Impl::uniformKey(uniforms[i].node().get(), recipes[i], chunk));
			    // Entries in header order (uniforms, then attributes), buffers first: they are the large allocations,
			    // so a chunk without room fails at its first one instead of after acquiring (and then releasing) every
			    // uniform — with 8 full chunks before the newest, that was most of an add. The private block first of
			    // all: one allocation for the object's own buffers.
			    absl::InlinedVector<Entry*, 8> got(uniforms.size() + views_.size(), nullptr);
			    Entry* idx = nullptr;
			    std::unique_ptr<PrivateSet> own;
			    scene_->chunk_full = false;
			    Result<void> acquired = [&]() -> Result<void>
			    {
				    if (private_bytes != 0)
				    {
					    QUOKKA_TRY_ASSIGN(block, scene_->allocate(chunk, uint32_t(private_bytes - 16)));
					    own = std::make_unique<PrivateSet>();
					    own->chunk = chunk;
					    own->block = block;
					    own->bytes = uint32_t(private_bytes);
					    Chunk& c = *scene_->chunks[chunk];
					    uint32_t at = block;
					    for (const Part& part : parts)
					    {
						    const uint32_t n = part.layout.elements, bytes = uint32_t(part.layout.data_bytes);
						    QUOKKA_TRY_ASSIGN(out,
						                      stageAllocation(scene_->pages, c, at,
						                                      part.kind == Entry::kIndex ? kTypeIndex : kTypeAttribute,
						                                      n, bytes));
						    QUOKKA_TRY(HeapScene::Impl::convertBuffer(part.kind, *part.view, part.type, part.layout,
						                                              *part.data, reinterpret_cast<uint32_t*>(out), o,
						                                              *part.name));
						    own->append(part.kind, at, part.type, n, bytes);
						    at += uint32_t(align16(16ull + bytes));
					    }
					    own->first_uniform = own->count;
					    size_t next_uniform = 0;
					    for (size_t i = 0; i < uniforms.size(); ++i)
					    {
						    if (!uniform_private[i])
							    continue;
						    const classic::PackedValue& packed = packed_private[next_uniform];
						    const uint32_t bytes = packed.type.packedBytes();
						    QUOKKA_TRY_ASSIGN(out, stageAllocation(scene_->pages, c, at, kTypeUniform, 1, bytes));
						    std::memcpy(out, packed.f, bytes);
						    PrivateSet::Part& e = own->append(Entry::kUniform, at, packed.type, 1, bytes);
						    e.key = HeapScene::Impl::uniformKey(uniforms[i].node().get(), recipes[i], chunk);
						    own->uniforms[next_uniform++] = uniforms[i];
						    got[i] = &e;
						    at += uint32_t(align16(16ull + bytes));
					    }
				    }
				    size_t next_part = 0;
				    if (o.indices)
				    {
					    if (index_held == kPrivate)
						    idx = &own->parts[next_part++];
					    else
					    {
						    QUOKKA_TRY_ASSIGN(
						        e, scene_->acquireBuffer(Entry::kIndex, *o.indices, fx::U32, chunk, o, kIndicesName));
						    idx = e;
					    }
				    }
				    for (size_t i = 0; i < views_.size(); ++i)
				    {
					    if (view_held[i] == kPrivate)
					    {
						    got[uniforms.size() + i] = &own->parts[next_part++];
						    continue;
					    }
					    QUOKKA_TRY_ASSIGN(e,
					                      scene_->acquireBuffer(Entry::kAttribute, *views_[i], iface.attributes[i].type,
					                                            chunk, o, iface.attributes[i].name));
					    got[uniforms.size() + i] = e;
				    }
				    for (size_t i = 0; i < uniforms.size(); ++i)
				    {
					    if (uniform_private[i])
						    continue;
					    QUOKKA_TRY_ASSIGN(e,
					                      scene_->acquireUniform(uniforms[i], recipes[i], chunk, iface.uniforms[i].type,
					                                             o, iface.uniforms[i].name, unheld[i]));
					    got[i] = e;
				    }
				    return {};
			    }();
			    if (!acquired.ok())
			    {
				    for (Entry* e : got)
					    if (e && !e->priv)
						    scene_->releaseEntry(e);
				    if (idx && !idx->priv)
					    scene_->releaseEntry(idx);
				    if (own) // (its staged bytes land in a free block: harmless)
					    scene_->freeBlock(chunk, own->block);
				    if (acquired.error().code != ErrorCode::OutOfMemory || !scene_->chunk_full)
					    return acquired; // (not a full chunk: host memory for the staging pages, say)
				    continue;
			    }
			    entries = std::move(got);
			    indices = idx;
			    owned = std::move(own);
			    QUOKKA_TRY_ASSIGN(b, scene_->bucketFor(o, *plan.source, effect, chunk));
			    bucket = b;
			    ++bucket->objects;
			    break;
		    }
		    // Checked here, not when attaching: an object that fails gives its blocks back before the batch's later
		    // objects acquire theirs.
		    return validateDraw();
	    });
}

Result<void> HeapObject::attach()
{
	return guarded(
	    [&]() -> Result<void>
	    {
		    if (bucket->free_headers.empty())
		    {
			    header = bucket->header_count++;
			    bucket->headers.resize(size_t(bucket->header_count) * bucket->header_words);
			    scene_->markHeaders(bucket);
		    }
		    else
		    {
			    header = bucket->free_headers.back();
			    bucket->free_headers.pop_back();
		    }
		    placed = true;
		    writeHeader();
		    QUOKKA_TRY_ASSIGN(s, scene_->slotFor(*bucket, state_, draw.indexed));
		    attachToSlot(s);
		    dirty_inputs_.clear();
		    ++scene_->stats->added;
		    return {};
	    });
}

void HeapObject::prefetch(PrefetchStage stage) const
{
	switch (stage)
	{
	case PrefetchStage::kObject:
		prefetchLines(this, int((sizeof(HeapObject) + 63) / 64));
		break;
	case PrefetchStage::kArrays:
		__builtin_prefetch(entries.data());
		__builtin_prefetch(inputs_.data());
		break;
	case PrefetchStage::kEntries:
		for (const Entry* e : entries)
			if (!e->priv)
				prefetchLines(e, 3);
		if (indices && !indices->priv)
			prefetchLines(indices, 3);
		if (owned)
			prefetchLines(owned.get(), 1); // (the block's place; its parts are not read by a removal)
		for (const Input& in : inputs_)
			__builtin_prefetch(in.node);
		break;
	case PrefetchStage::kPool:
	{
		auto pool = [&](const Entry* e)
		{
			if (e->priv || e->refcount != 1)
				return;
			// (Its pool slot is erased after the removals: HeapScene::Impl::eraseDoomed fetches it then.)
			if (const UniformEntry* u = asUniform(e); u && u->indexed)
				scene_->uniform_chunks.prefetch(e->key.node);
			scene_->chunks[e->chunk]->allocator.prefetchFree(e->ref, 16ull + e->data_bytes);
		};
		for (const Entry* e : entries)
			pool(e);
		if (indices)
			pool(indices);
		if (owned)
			scene_->chunks[owned->chunk]->allocator.prefetchFree(owned->block, owned->bytes);
		break;
	}
	case PrefetchStage::kSlot:
		if (slot && record < slot->records.size())
		{
			__builtin_prefetch(&slot->records[record]);
			__builtin_prefetch(slot->commands.words.data() + size_t(record) * slot->commandWords());
			__builtin_prefetch(slot->mrecords.words.data() + size_t(record) * fx::kRecordWords);
			prefetchLines(slot->records.back(), 2);
		}
		break;
	case PrefetchStage::kLast:
		if (slot && !slot->records.empty())
			if (const Entry* last_indices = slot->records.back()->indices)
				__builtin_prefetch(last_indices);
		break;
	}
}

void HeapObject::unplace()
{
	if (scene_->closing)
	{
		// The scene goes, and its slots, blocks and entries with it: nothing to give back one by one.
		slot = nullptr;
		entries.clear();
		indices = nullptr;
		owned.reset();
		bucket = nullptr;
		placed = false;
		return;
	}
	detachFromSlot();
	HeapScene::Impl::FreeBatch freed;
	for (Entry* e : entries)
		if (!e->priv)
			scene_->releaseEntry(e, &freed);
	entries.clear();
	if (indices && !indices->priv)
		scene_->releaseEntry(indices, &freed);
	indices = nullptr;
	if (owned)
	{
		// The subscriptions of its private uniform parts go with them (a re-placement that shares a pooled entry
		// instead must not be told of the value's changes).
		for (const aval<UniformValue>& u : owned->uniforms)
			if (AdaptiveObject* node = u.node().get())
			{
				removeInput(node);
				inputs_.erase(std::remove_if(inputs_.begin(), inputs_.end(),
				                             [&](const Input& in) { return in.node == node && in.role == kUniform; }),
				              inputs_.end());
			}
		scene_->freeLater(&freed, owned->chunk, owned->block);
		owned.reset();
	}
	scene_->freeBatch(freed);
	if (bucket)
	{
		if (placed)
			bucket->free_headers.push_back(header);
		if (--bucket->objects == 0)
			scene_->sweep_pending = true;
	}
	bucket = nullptr;
	placed = false;
}

Result<void> HeapObject::repackPrivate(const DirtyInputs& dirty)
{
	if (!owned)
		return {};
	for (uint32_t i = owned->first_uniform; i < owned->count; ++i)
	{
		const aval<UniformValue>& u = owned->uniforms[i - owned->first_uniform];
		if (std::find(dirty.begin(), dirty.end(), u.node().get()) == dirty.end())
			continue;
		PrivateSet::Part& part = owned->parts[i];
		const classic::PackedValue p =
		    classic::packDerived(classic::DerivedRecipe(part.key.format), u.getValue(Token{this}));
		if (p.type != part.type)
			return fail("uniform value changed its type from " + fx::typeName(part.type) + " to " +
			            fx::typeName(p.type));
		QUOKKA_TRY(scene_->stageUniform(part.chunk, part.ref, p, part.data_bytes));
		++scene_->stats->uniform_uploads;
	}
	return {};
}

Result<void> HeapObject::refresh()
{
	queued = false;
	if (dead)
		return {};
	DirtyInputs dirty;
	dirty.swap(dirty_inputs_);
	if (!placed || !slot || std::exchange(replace, false))
	{
		unplace();
		return place();
	}
	// The common edit — only the values of private uniform parts changed (the object's own ModelTrafo): re-packed,
	// nothing else looked at.
	if (owned && std::all_of(dirty.begin(), dirty.end(), [&](const AdaptiveObject* n) { return holdsPrivate(n); }))
		return evaluate(*object_, [&]() -> Result<void> { return repackPrivate(dirty); });
	std::sort(dirty.begin(), dirty.end());
	dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
	bool state = false, draw_changed = false, rebuild = false, uniform = false;
	for (const Input& in : inputs_)
		if (std::binary_search(dirty.begin(), dirty.end(), in.node))
		{
			state = state || in.role == kState;
			draw_changed = draw_changed || in.role == kDraw || in.role == kActive;
			rebuild = rebuild || in.role == kBuffer;
			uniform = uniform || in.role == kUniform;
		}
	if (rebuild)
	{
		++scene_->stats->rebuilt;
		unplace();
		return place();
	}
	++scene_->stats->refreshed;
	return evaluate(*object_,
	                [&]() -> Result<void>
	                {
		                if (uniform)
			                QUOKKA_TRY(repackPrivate(dirty));
		                if (draw_changed)
		                {
			                const uint64_t before = emits();
			                draw = object_->draw_call.getValue(Token{this});
			                active = object_->active.getValue(Token{this});
			                QUOKKA_TRY(validateDraw());
			                if (draw.indexed != slot->indexed)
				                state = true; // another slot
			                else
			                {
				                slot->emit_sum = slot->emit_sum - before + emits();
				                writeHeader();
				                writeRecord();
				                scene_->markSlot(slot);
			                }
		                }
		                if (state)
		                {
			                QUOKKA_TRY(readState());
			                writeHeader();
			                QUOKKA_TRY_ASSIGN(s, scene_->slotFor(*bucket, state_, draw.indexed));
			                if (s != slot)
			                {
				                detachFromSlot();
				                attachToSlot(s);
			                }
		                }
		                return {};
	                });
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] pools, buckets and slots
// ---------------------------------------------------------------------------------------------------------------------

uint32_t HeapScene::Impl::openChunk()
{
	chunks.push_back(std::make_unique<Chunk>(max_chunk_bytes));
	shape_changed = upload_chunks = true;
	return uint32_t(chunks.size() - 1);
}

Result<uint32_t> HeapScene::Impl::allocate(uint32_t chunk, uint32_t data_bytes)
{
	const std::optional<uint32_t> at = chunks[chunk]->allocator.allocate(16ull + data_bytes);
	if (!at)
	{
		chunk_full = true;
		return makeError(ErrorCode::OutOfMemory, "arena chunk full");
	}
	shape_changed = upload_chunks = true;
	return *at;
}

Result<std::pair<uint32_t, std::byte*>> HeapScene::Impl::allocateStaged(uint32_t chunk, uint32_t type_id,
                                                                        uint32_t length, uint32_t data_bytes)
{
	QUOKKA_TRY_ASSIGN(ref, allocate(chunk, data_bytes));
	Result<std::byte*> staged = stageAllocation(pages, *chunks[chunk], ref, type_id, length, data_bytes);
	if (!staged.ok())
	{
		freeBlock(chunk, ref);
		return staged.error();
	}
	return std::pair{ref, staged.value()};
}

Result<Entry*> HeapScene::Impl::acquireUniform(const aval<UniformValue>& value, classic::DerivedRecipe recipe,
                                               uint32_t chunk, fx::Type expected, const scene::RenderObject& object,
                                               const std::string& name, bool unheld)
{
	auto mismatch = [&](fx::Type got) { return uniformMismatch(object, name, expected, got); };
	const bool constant = value.node()->isConstant();
	classic::PackedValue packed{};
	const PoolKey key = uniformKey(constant ? nullptr : value.node().get(), recipe, chunk);
	ConstantKey constant_key;
	auto shared = [&](Entry* e) -> Result<Entry*>
	{
		if (e->type != expected)
			return mismatch(e->type);
		++e->refcount;
		return e;
	};
	if (constant)
	{
		// Equal constants share one allocation: the key is the value itself.
		packed = classic::packDerived(recipe, value.force());
		constant_key.chunk = chunk;
		constant_key.type = packed.type;
		std::memcpy(constant_key.value.data(), packed.f, packed.type.packedBytes());
		if (auto it = constants.find(constant_key); it != constants.end())
			return shared(it->second.get());
	}
	if (!constant && !unheld)
	{
		if (Entry* e = pool.find(key))
			return shared(e);
		if (value.node()->outputCount() != 0)
			promotePrivate(value.node().get());
	}
	Ref<UniformEntry> e = adaptive::makeRef<UniformEntry>(*this, chunk);
	if (!constant)
	{
		e->uniform = value;
		e->recipe = recipe;
		e->beginEvaluation();
		try
		{
			packed = classic::packDerived(recipe, value.getValue(Token{e.get()}));
		}
		catch (const std::exception& ex)
		{
			e->endEvaluation(false);
			return makeError(ErrorCode::InvalidArgument,
			                 classic::objectName(object) + ": uniform '" + name + "' threw: " + ex.what());
		}
		e->endEvaluation(true);
	}
	if (packed.type != expected)
		return mismatch(packed.type);
	e->type = packed.type;
	e->elements = 1;
	e->data_bytes = packed.type.packedBytes();
	QUOKKA_TRY_ASSIGN(staged, allocateStaged(chunk, kTypeUniform, 1, e->data_bytes));
	const auto [ref, out] = staged;
	std::memcpy(out, packed.f, e->data_bytes);
	e->ref = ref;
	e->refcount = 1;
	e->key = key;
	Entry* raw = e.get();
	if (constant)
	{
		e->constant = std::make_unique<ConstantKey>(constant_key);
		constants.emplace(constant_key, std::move(e));
		return raw;
	}
	if (e->placementIndexed() && !unheld) // (a node no entry read is not listed)
		if (auto it = uniform_chunks.find(key.node); it != uniform_chunks.end())
		{
			it->second |= uint64_t(1) << chunk;
			e->indexed = true;
		}
	pool.insert(e);
	return raw;
}

Result<Entry*> HeapScene::Impl::acquireBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
                                              uint32_t chunk, const scene::RenderObject& object,
                                              const std::string& name)
{
	// Read without subscribing: the objects using this buffer track it and re-place themselves on a change. The key
	// is the value's storage (ArrayBuffer equality is storage identity), held by the entry so the address is not
	// reused: after a change the first user to re-place creates the new entry and the others share it, while the old
	// one dies with its last user — no user can pick up the old bytes.
	const scene::ArrayBuffer& data = view.buffer.getValue(Token{}); // (a reference: no reference-count traffic)
	const PoolKey key = bufferKey(kind, view, type, chunk);
	// No lookup (a probe that fails at a random place of a table of millions) for a buffer no entry can hold — the
	// common case of an add.
	if (!storageUnheld(view, data))
		if (Entry* e = pool.find(key))
		{
			++e->refcount;
			return e;
		}
	const BufferLayout layout = bufferLayout(kind, view, type, data);
	const uint32_t n = layout.elements;
	const uint64_t data_bytes = layout.data_bytes;
	if (data_bytes + 16 > max_chunk_bytes)
		return bufferTooLarge(object, name, data_bytes + 16);
	// Convert straight into the staged bytes.
	QUOKKA_TRY_ASSIGN(
	    staged, allocateStaged(chunk, kind == Entry::kIndex ? kTypeIndex : kTypeAttribute, n, uint32_t(data_bytes)));
	const uint32_t ref = staged.first;
	if (Result<void> r =
	        convertBuffer(kind, view, type, layout, data, reinterpret_cast<uint32_t*>(staged.second), object, name);
	    !r.ok())
	{
		freeBlock(chunk, ref); // (the staged bytes land in a free block: harmless)
		return r.error();
	}
	auto e = std::make_unique<BufferEntry>(kind, chunk);
	if (view.buffer.node()->isConstant())
		e->node = Ref<AdaptiveObject>(view.buffer.node().get());
	else
		e->buffer = data;
	e->type = type;
	e->elements = n;
	e->data_bytes = uint32_t(data_bytes);
	e->ref = ref;
	e->refcount = 1;
	e->key = key;
	Entry* raw = e.get();
	pool.insert(std::move(e));
	return raw;
}

Result<void> HeapScene::Impl::convertBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
                                            const BufferLayout& layout, const scene::ArrayBuffer& data, uint32_t* out,
                                            const scene::RenderObject& object, const std::string& name)
{
	const bool index = kind == Entry::kIndex;
	const uint32_t isize = view.format == VK_FORMAT_R16_UINT ? 2 : 4;
	const uint32_t element = layout.element, stride = layout.stride, comps = layout.components, n = layout.elements;
	const std::byte* src = data.data() + view.offset;
	// 32-bit components: copied whole when already tight at the shader's size, else widened/truncated per element.
	const uint32_t words32 = index ? 0 : word32Components(view.format);
	const bool tight_copy = (index && isize == 4) || (words32 != 0 && stride == element && element == comps * 4);
	if (tight_copy)
		std::memcpy(out, src, layout.data_bytes);
	else if (type.cols == 1 && words32 != 0)
		widenWords(src, stride, n, words32, type.rows, isFloatFormat(view.format), out);
	else if (index)
		for (uint32_t i = 0; i < n; ++i)
		{
			uint16_t x;
			std::memcpy(&x, src + 2ull * i, 2);
			out[i] = x;
		}
	else
		for (uint32_t i = 0; i < n; ++i)
			if (!convertElement(src + uint64_t(i) * stride, view.format, type, out + size_t(i) * comps))
				return makeError(ErrorCode::InvalidArgument, classic::objectName(object) + ": attribute '" + name +
				                                                 "' has a format the heap cannot convert to " +
				                                                 fx::typeName(type));
	return {};
}

Result<void> HeapScene::Impl::stageUniform(uint32_t chunk, uint32_t ref, const classic::PackedValue& p, uint32_t bytes)
{
	Chunk& c = *chunks[chunk];
	if (c.pendingEndsAt(ref))
	{
		// The previous re-pack ends where this allocation starts (an object's uniforms sit side by side): staging the
		// unchanged header too makes both one copy region. Drivers pay per region (on the H200, vkCmdCopyBuffer's
		// regions were ~15 % of a frame of 10^4 edits), so 16 more bytes are cheaper than a second region.
		QUOKKA_TRY_ASSIGN(out, stageAllocation(pages, c, ref, kTypeUniform, 1, bytes));
		std::memcpy(out, p.f, bytes);
		return {};
	}
	return c.write(pages, ref + 16, p.f, bytes);
}

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

void HeapScene::Impl::promotePrivate(AdaptiveObject* node)
{
	node->forEachOutput(
	    [&](AdaptiveObject* consumer)
	    {
		    if (auto* h = dynamic_cast<HeapObject*>(consumer); h && h->scene() == this && h->holdsPrivate(node))
			    h->requestReplace();
	    });
}

void HeapScene::Impl::freeBatch(FreeBatch& batch)
{
	if (!batch.refs.empty())
	{
		chunks[batch.chunk]->allocator.freeMany(batch.refs);
		shape_changed = upload_chunks = compaction_check = true;
	}
	batch.refs.clear();
}

uint64_t HeapScene::Impl::heldChunks(const void* node)
{
	if (auto it = uniform_chunks.find(node); it != uniform_chunks.end())
		return it->second;
	// First asked: one pool lookup per chunk, then listed (and its entries marked) until its last entry goes.
	uint64_t mask = 0;
	for (uint32_t c = 0; c < 64 && c < chunks.size(); ++c)
		if (Entry* e = pool.find(PoolKey::uniform(node, c)))
		{
			UniformEntry* u = asUniform(e);
			QUOKKA_ASSERT(u && u->placementIndexed() && !u->indexed, "an unlisted node's entry is marked listed");
			u->indexed = true;
			mask |= uint64_t(1) << c;
		}
	if (mask != 0)
		uniform_chunks.emplace(node, mask);
	return mask;
}

void HeapScene::Impl::releaseEntry(Entry* e, FreeBatch* batch)
{
	QUOKKA_ASSERT(e->refcount > 0, "pool entry released more often than acquired");
	if (--e->refcount > 0)
		return;
	QUOKKA_ASSERT(!e->priv, "a private part released as a pool entry");
	freeLater(batch, e->chunk, e->ref);
	const UniformEntry* u = asUniform(e);
	if (u && u->indexed)
		if (auto it = uniform_chunks.find(e->key.node);
		    it != uniform_chunks.end() && !(it->second &= ~(uint64_t(1) << e->chunk)))
			uniform_chunks.erase(it);
	// Erasing may destroy e (unless queued for a re-pack, which then skips it).
	if (u && u->constant)
		constants.erase(*u->constant);
	else if (defer_pool_erase)
		doomed_entries.push_back({e, Pool::hashOf(e->key)});
	else
		pool.erase(e);
}

void HeapScene::Impl::eraseDoomed()
{
	// Each erasure reads the entry's home slot, the entry and, for a uniform entry, the node its destruction
	// unsubscribes from. By the time this loop runs the frame's removals have moved on through megabytes of other
	// objects, so the entries are cold again: the slot (from the hash kept at removal) and the entry are fetched
	// 2 × kAhead erasures ahead, the node — found through the entry — kAhead ahead.
	constexpr size_t kAhead = 8;
	const size_t n = doomed_entries.size();
	auto far = [&](const Doomed& d)
	{
		pool.prefetch(d.hash);
		prefetchLines(d.entry, 2);
	};
	auto near = [&](const Doomed& d)
	{
		if (const UniformEntry* u = asUniform(d.entry); u && u->uniform.node())
			__builtin_prefetch(u->uniform.node().get());
	};
	for (size_t i = 0; i < std::min(n, 2 * kAhead); ++i)
		far(doomed_entries[i]);
	for (size_t i = 0; i < std::min(n, kAhead); ++i)
		near(doomed_entries[i]);
	for (size_t i = 0; i < n; ++i)
	{
		if (i + 2 * kAhead < n)
			far(doomed_entries[i + 2 * kAhead]);
		if (i + kAhead < n)
			near(doomed_entries[i + kAhead]);
		pool.erase(doomed_entries[i].entry, doomed_entries[i].hash);
	}
	doomed_entries.clear();
}

Result<const HeapScene::Impl::HeapEffect*> HeapScene::Impl::heapEffect(const fx::Effect& effect)
{
	if (auto it = heap_effects.find(effect.id()); it != heap_effects.end())
		return &it->second;
	QUOKKA_TRY_ASSIGN(compiled, context->effects().compile(effect, outputs, fx::PathVariant::HeapIndirect));
	std::vector<std::string> names;
	for (const fx::UniformMember& m : compiled->iface.uniforms)
		names.push_back(m.name);
	classic::UniformPlan plan(names);
	return &heap_effects.emplace(effect.id(), HeapEffect{std::move(compiled), std::move(plan)}).first->second;
}

Result<Bucket*> HeapScene::Impl::bucketFor(const scene::RenderObject& o, const fx::Effect& source,
                                           const fx::CompiledEffectPtr& effect, uint32_t chunk)
{
	BucketKey key{effect->key, chunk, {}};
	std::vector<Ref<classic::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	for (const fx::TextureBinding& t : effect->iface.textures)
	{
		auto it = o.textures.find(t.name);
		if (it == o.textures.end())
			return makeError(ErrorCode::InvalidArgument, classic::objectName(o) + ": effect samples the texture '" +
			                                                 t.name + "', which the object does not have");
		textures.push_back(context->texture(it->second));
		auto sit = o.samplers.find(t.name);
		QUOKKA_TRY_ASSIGN(sampler, context->sampler(sit == o.samplers.end() ? scene::SamplerState{} : sit->second));
		key.textures.push_back(textures.back().get());
		key.textures.push_back(sampler.get());
		samplers.push_back(std::move(sampler));
	}
	auto it = buckets.find(key);
	if (it != buckets.end())
		return it->second.get();
	auto b = std::make_unique<Bucket>();
	sweep_pending = true; // dropped again if placement fails before it is used
	b->chunk = chunk;
	b->effect = source;
	b->indirect_effect = effect;
	b->header_words = effect->iface.header_words;
	b->textures = std::move(textures);
	b->samplers = std::move(samplers);
	for (const fx::TextureBinding& t : effect->iface.textures)
		b->texture_bindings.push_back(t.binding);
	b->serial = next_bucket_serial++;
	Bucket* raw = b.get();
	buckets.emplace(std::move(key), std::move(b));
	bucket_order.push_back(raw);
	return raw;
}

Result<Slot*> HeapScene::Impl::slotFor(Bucket& b, const scene::PipelineStateValues& state, bool indexed)
{
	for (const Bucket::Known& k : b.known)
		if (k.indexed == indexed && k.state == state)
			return k.slot;
	QUOKKA_TRY_ASSIGN(slot, createSlot(b, state, indexed));
	b.known.push_back({state, indexed, slot});
	return slot;
}

Result<Slot*> HeapScene::Impl::createSlot(Bucket& b, const scene::PipelineStateValues& state, bool indexed)
{
	classic::PipelineRequest req;
	req.effect = b.indirect_effect;
	req.topology = state.topology;
	for (const scene::ColorAttachment& c : signature.colors)
	{
		req.color_formats.push_back(c.format);
		req.blend.push_back(classic::toVk(state.blendFor(c.name)));
	}
	req.depth_format = signature.depth_format;
	req.samples = signature.samples;
	req.alpha_to_coverage = state.alpha_to_coverage;
	req.depth_clamp = state.depth_clamp;
	QUOKKA_TRY_ASSIGN(entry, context->pipeline(req));
	const gpu::DynamicState dyn = classic::dynamicState(state, signature.hasDepth());
	for (const auto& s : b.slots)
		if (s->indirect_pipeline == entry && s->dyn == dyn && s->indexed == indexed)
			return s.get();
	auto s = std::make_unique<Slot>();
	sweep_pending = true; // dropped again if placement fails before it is used
	s->bucket = &b;
	s->indirect_pipeline = entry;
	s->request = std::move(req);
	s->dyn = dyn;
	s->indexed = indexed;
	s->prim = primitiveVertices(state.topology);
	s->count.words = {0};
	s->active = options.draw == DrawStrategy::Megacall ? DrawStrategy::Megacall : DrawStrategy::Indirect;
	b.slots.push_back(std::move(s));
	shape_changed = true;
	return b.slots.back().get();
}

void HeapScene::Impl::chooseStrategy(Slot& s)
{
	if (options.draw != DrawStrategy::Auto || s.records.empty())
		return;
	// Mean vertices emitted per record, with a ±25 % band so a slot hovering at the crossover does not flip every
	// frame (a flip re-uploads the slot's whole array).
	const double mean = double(s.emit_sum) / double(s.records.size());
	const double t = options.megacall_below;
	DrawStrategy want = s.active;
	if (s.active == DrawStrategy::Indirect && mean < t * 0.75)
		want = DrawStrategy::Megacall;
	else if (s.active == DrawStrategy::Megacall && mean > t * 1.25)
		want = DrawStrategy::Indirect;
	if (want == s.active)
		return;
	s.active = want;
	shape_changed = true;
	(want == DrawStrategy::Megacall ? s.mrecords : s.commands).touchAll();
	s.count.touchAll();
	s.scan_dirty = true;
}

void HeapScene::Impl::compact()
{
	if (!std::exchange(compaction_check, false))
		return;
	for (uint32_t c = 0; c < chunks.size(); ++c)
	{
		Chunk& chunk = *chunks[c];
		if (!chunk.allocator.shouldCompact(options.compaction_floor))
			continue;
		if (!chunk.buffer || !chunk.moves.empty())
		{
			compaction_check = true; // (not yet: looked at again next frame)
			continue;
		}
		std::vector<ChunkAllocator::Move> moves = chunk.allocator.planCompaction();
		if (moves.empty())
			continue;
		shape_changed = upload_chunks = true;
		forEachEntry(
		    [&](Entry& e)
		    {
			    if (e.chunk == c)
				    e.ref = ChunkAllocator::remap(moves, e.ref);
		    });
		for (Bucket* b : bucket_order)
		{
			if (b->chunk != c)
				continue;
			for (const auto& s : b->slots)
			{
				for (HeapObject* h : s->records)
				{
					if (h->owned)
					{
						// (A placed object's private block is in its bucket's chunk, and only placed objects own one.)
						h->owned->block = ChunkAllocator::remap(moves, h->owned->block);
						for (uint32_t i = 0; i < h->owned->count; ++i)
							h->owned->parts[i].ref = ChunkAllocator::remap(moves, h->owned->parts[i].ref);
					}
					h->rewrite();
				}
				markSlot(s.get());
			}
		}
		chunk.moves = std::move(moves);
		++stats->compactions;
	}
}

HeapScene::Impl::Shape HeapScene::Impl::sumShape() const
{
	Shape s;
	for (const Bucket* b : bucket_order)
		for (const auto& slot : b->slots)
		{
			++s.slots;
			++(slot->active == DrawStrategy::Megacall ? s.megacall_slots : s.indirect_slots);
		}
	s.chunks = uint32_t(chunks.size());
	for (const auto& c : chunks)
	{
		s.arena_bytes += c->allocator.cursor();
		s.live_bytes += c->allocator.liveBytes();
	}
	return s;
}

void HeapScene::Impl::sweep()
{
	// Only a frame that emptied a slot or a bucket has anything to drop: other frames skip the O(buckets) walk.
	if (!std::exchange(sweep_pending, false))
		return;
	shape_changed = true;
	std::erase_if(dirty_slots, [](const Slot* s) { return s->records.empty(); });
	for (Bucket* b : bucket_order)
	{
		std::erase_if(b->known, [](const Bucket::Known& k) { return k.slot->records.empty(); });
		std::erase_if(b->slots, [](const std::unique_ptr<Slot>& s) { return s->records.empty(); });
	}
	std::erase_if(dirty_headers, [](const Bucket* b) { return b->objects == 0; });
	std::erase_if(bucket_order, [](const Bucket* b) { return b->objects == 0; });
	std::erase_if(buckets, [](const auto& kv) { return kv.second->objects == 0; });
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] the frame: update, upload, prepare, encode
// ---------------------------------------------------------------------------------------------------------------------

HeapScene::HeapScene(classic::Context& context, scene::FramebufferSignature signature,
                     adaptive::aset<RenderObjectPtr> objects, HeapOptions options)
    : impl_(std::make_unique<Impl>()), options_(options)
{
	Impl& p = *impl_;
	p.context = &context;
	p.signature = std::move(signature);
	p.outputs.colors = p.signature.colorNames();
	p.options = options;
	p.stats = &stats_;
	// The draw headers and records the heap stages through the context's ring.
	context.staging().setScatterAbove(options.ring_scatter_above);
	const uint64_t range = context.device().info().max_storage_buffer_range;
	p.max_chunk_bytes = options.max_chunk_bytes ? options.max_chunk_bytes : std::min<uint64_t>(range, 256ull << 20);
	p.max_chunk_bytes = std::min<uint64_t>(p.max_chunk_bytes, range) & ~uint64_t(15);
	p.reader = objects.getDeltaReader();
	p.pages.bind(context.device());
}

HeapScene::~HeapScene()
{
	// The objects leave their input nodes (which outlive the scene) and give nothing else back: the pool, the chunks
	// and the buckets are dropped whole below (Impl's members), each entry once, however many objects shared it.
	impl_->closing = true;
	impl_->objects.forEach([](HeapObject* h) { h->detach(); });
	impl_->objects.clear();
	for (const auto& c : impl_->chunks)
		c->allocator.reset(); // (dropped with the scene: no leak to report)
	impl_->dirty_objects.clear();
	impl_->dirty_entries.clear();
}

size_t HeapScene::objectCount() const
{
	return impl_->objects.size();
}

adaptive::aset<RenderObjectPtr> HeapScene::skipped() const
{
	return impl_->skipped;
}

Result<void> HeapScene::update()
{
	const auto t0 = std::chrono::steady_clock::now();
	Impl& p = *impl_;
	const HeapStats keep = stats_;
	stats_ = HeapStats{};
	stats_.compactions = keep.compactions;
	p.compact();
	auto changes = p.reader->getChanges(Token{});
	// Removals first, so their blocks are reused by this frame's additions.
	std::vector<const RenderObjectPtr*> adding;
	std::vector<const RenderObjectPtr*> removed;
	for (const auto& [object, count] : changes)
		if (count < 0)
			removed.push_back(&object); // (one never placed is not found below)
		else
			adding.push_back(&object);
	std::vector<const RenderObjectPtr*> skip_added, skip_removed;
	// Additions in object-id order: placement, and therefore the draw order, never depends on addresses. The objects
	// are cold, so each is read once — its id beside the pointer, a few objects ahead — and the sort compares ids.
	std::vector<std::pair<uint64_t, const RenderObjectPtr*>> added;
	added.reserve(adding.size());
	for (size_t i = 0; i < adding.size(); ++i)
	{
		constexpr size_t kAhead = 8;
		if (i + kAhead < adding.size())
			__builtin_prefetch(adding[i + kAhead]->get());
		const scene::RenderObject& object = **adding[i];
		if (!p.options.skip_ineligible || heapEligible(object))
			added.emplace_back(object.id, adding[i]);
		else
			skip_added.push_back(adding[i]);
	}
	std::sort(added.begin(), added.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
	auto updateSkipped = [&]
	{
		if (skip_added.empty() && skip_removed.empty())
			return;
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr* o : skip_removed)
				    p.skipped.remove(*o);
			    for (const RenderObjectPtr* o : skip_added)
				    p.skipped.add(*o);
		    });
	};
	{
		// Scattered objects: the lookups, then the detaches, prefetch ahead (HeapObject::prefetch).
		constexpr size_t kAhead = 4;
		std::vector<Ref<HeapObject>> doomed;
		doomed.reserve(removed.size());
		for (size_t i = 0; i < removed.size(); ++i)
		{
			if (i + 2 * kAhead < removed.size())
				p.objects.prefetch(removed[i + 2 * kAhead]->get());
			Ref<HeapObject> h = p.objects.take(removed[i]->get());
			if (!h)
			{
				if (p.options.skip_ineligible)
					skip_removed.push_back(removed[i]); // (skipped when it came)
				continue;
			}
			doomed.push_back(std::move(h));
		}
		using Stage = HeapObject::PrefetchStage;
		p.defer_pool_erase = true;
		for (size_t i = 0; i < doomed.size(); ++i)
		{
			// (The lookups above never read the objects: the table compares hashes only.)
			if (i + 4 * kAhead < doomed.size())
				doomed[i + 4 * kAhead]->prefetch(Stage::kObject);
			if (i + 3 * kAhead < doomed.size())
				doomed[i + 3 * kAhead]->prefetch(Stage::kArrays);
			if (i + 2 * kAhead < doomed.size())
				doomed[i + 2 * kAhead]->prefetch(Stage::kEntries);
			if (i + kAhead < doomed.size())
				doomed[i + kAhead]->prefetch(Stage::kPool);
			// (The slot's last object changes with every swap-pop: looked at only one and two removals ahead.)
			if (i + 2 < doomed.size())
				doomed[i + 2]->prefetch(Stage::kSlot);
			if (i + 1 < doomed.size())
				doomed[i + 1]->prefetch(Stage::kLast);
			doomed[i]->detach();
			doomed[i] = Ref<HeapObject>();
		}
		p.defer_pool_erase = false;
		p.eraseDoomed();
		stats_.removed += uint32_t(doomed.size());
	}
	updateSkipped();
	// Derived uniforms of removed objects: collected in O(size) once the removals since the last collection reach half
	// the live objects (amortised O(1) per removal; ScenePass::update explains the threshold).
	p.removed_since_collect += stats_.removed;
	if (p.removed_since_collect > 64 && p.removed_since_collect * 2 > p.objects.size())
	{
		p.derived.collect();
		p.removed_since_collect = 0;
	}
	Result<void> result;
	// Placement phase by phase over batches (HeapObject::Plan says why). An object that fails a phase is left out
	// (until an input changes: its edges are kept) and dropped from the batch's later phases; the first error is kept.
	auto settle = [&](Ref<HeapObject>& h, Result<void> r)
	{
		if (r.ok())
			return;
		h->unplace();
		if (result.ok())
			result = std::move(r);
		h = Ref<HeapObject>();
	};
	constexpr size_t kBatch = 32;
	std::vector<Ref<HeapObject>> batch;
	batch.reserve(std::min(kBatch, added.size()));
	std::vector<HeapObject::Plan> plans(std::min(kBatch, added.size())); // (none in a frame without additions)
	for (size_t first = 0; first < added.size(); first += kBatch)
	{
		const size_t last = std::min(added.size(), first + kBatch);
		batch.clear();
		for (size_t i = first; i < last; ++i)
		{
			// Reading an object touches the object, the nodes of its attribute and uniform maps and the input nodes
			// they hold — scattered lines, each a miss in a large scene, most of them known only once the one before
			// is read. Fetched in stages ahead, each stage reading only what the one before fetched: the object and
			// its table slot (eight objects ahead), its maps' first nodes and its index node (four), every map
			// node's input node (two).
			constexpr size_t kAhead = 2;
			if (i + 4 * kAhead < added.size())
			{
				const scene::RenderObject* ahead = added[i + 4 * kAhead].second->get();
				p.objects.prefetch(ahead);
				prefetchLines(ahead, int(sizeof(scene::RenderObject) / 64) + 1);
			}
			if (i + 2 * kAhead < added.size())
			{
				const scene::RenderObject& ahead = **added[i + 2 * kAhead].second;
				if (!ahead.attributes.empty())
					__builtin_prefetch(&*ahead.attributes.begin());
				if (!ahead.uniforms.empty())
					__builtin_prefetch(&*ahead.uniforms.begin());
				if (ahead.indices)
					__builtin_prefetch(ahead.indices->buffer.node().get());
			}
			if (i + kAhead < added.size())
			{
				const scene::RenderObject& ahead = **added[i + kAhead].second;
				for (const auto& [name, view] : ahead.attributes)
					__builtin_prefetch(view.buffer.node().get());
				for (const auto& [name, value] : ahead.uniforms)
					__builtin_prefetch(value.node().get());
			}
			const RenderObjectPtr& object = *added[i].second;
			Ref<HeapObject> h = adaptive::makeRef<HeapObject>(p, object);
			p.objects.insert(object.get(), h);
			settle(h, h->read(plans[i - first]));
			batch.push_back(std::move(h));
		}
		// Acquiring copies the buffers: their storage is read first through its reference count (the control block
		// beside the byte vector: one line) and then copied — the control block one object ahead, the data's first
		// lines just before (the hardware streams the rest).
		auto views = [](const scene::RenderObject& o, auto&& fn)
		{
			for (const auto& [name, view] : o.attributes)
				fn(view);
			if (o.indices)
				fn(*o.indices);
		};
		for (size_t j = 0; j < batch.size(); ++j)
		{
			if (j + 1 < batch.size() && batch[j + 1])
				views(batch[j + 1]->object(),
				      [](const scene::BufferView& v)
				      {
					      if (const scene::ArrayBuffer* b = cachedBuffer(v))
					      {
						      // (make_shared puts the counts 16 bytes before the vector, maybe in the line before)
						      __builtin_prefetch(reinterpret_cast<const char*>(b->bytes.get()) - 16);
						      __builtin_prefetch(b->bytes.get());
					      }
				      });
			if (!batch[j])
				continue;
			views(batch[j]->object(),
			      [](const scene::BufferView& v)
			      {
				      if (const scene::ArrayBuffer* b = cachedBuffer(v); b && v.offset < b->size())
					      prefetchLines(b->data() + v.offset,
					                    int(std::min<uint64_t>(b->size() - v.offset, 256) + 63) / 64);
			      });
			settle(batch[j], batch[j]->acquire(plans[j]));
		}
		for (size_t j = 0; j < batch.size(); ++j)
		{
			plans[j] = HeapObject::Plan{}; // (drops the uniform values it holds)
			if (batch[j])
				settle(batch[j], batch[j]->attach());
		}
	}
	p.objects.flush();
	p.pool.flush();
	// Changed shared values: one re-pack each, in arena address order — the staging ring then appends each write
	// instead of searching its ordered region map, and neighbouring allocations merge into one copy region.
	std::vector<Ref<UniformEntry>> entries;
	entries.swap(p.dirty_entries);
	// The entries are scattered objects (10^4 random edits in a 10^6-object scene touch 10^4 cold entries and their
	// uniform nodes), so both loops prefetch ahead: each visit is then one cache hit instead of a miss per level.
	constexpr size_t kAhead = 8;
	std::vector<std::pair<uint64_t, UniformEntry*>> by_address;
	by_address.reserve(entries.size());
	for (size_t i = 0; i < entries.size(); ++i)
	{
		if (i + kAhead < entries.size())
			prefetchLines(entries[i + kAhead].get(), 4);
		const UniformEntry* e = entries[i].get();
		by_address.emplace_back(uint64_t(e->chunk) << 32 | e->ref, entries[i].get());
	}
	std::sort(by_address.begin(), by_address.end());
	for (size_t i = 0; i < by_address.size(); ++i)
	{
		if (i + 2 * kAhead < by_address.size())
			prefetchLines(by_address[i + 2 * kAhead].second, 4);
		if (i + kAhead < by_address.size())
			if (const auto& node = by_address[i + kAhead].second->uniform.node())
				prefetchLines(node.get(), 4);
		Result<void> r = by_address[i].second->repack();
		if (!r.ok() && result.ok())
			result = r;
	}
	// (Re-placements may queue more: objects whose private uniform part a new pooled entry now holds.)
	// In object-id order (re-placements, and so the draw order, never depend on addresses): each id read once, a few
	// objects ahead, then the pairs sorted — comparing through the scattered objects cost misses per comparison.
	for (std::vector<Ref<HeapObject>> dirty; !p.dirty_objects.empty();)
	{
		dirty.clear();
		dirty.swap(p.dirty_objects);
		std::vector<std::pair<uint64_t, HeapObject*>> order(dirty.size());
		for (size_t i = 0; i < dirty.size(); ++i)
		{
			constexpr size_t kIdAhead = 8;
			if (i + 2 * kIdAhead < dirty.size())
				__builtin_prefetch(dirty[i + 2 * kIdAhead].get());
			if (i + kIdAhead < dirty.size())
				__builtin_prefetch(&dirty[i + kIdAhead]->object());
			order[i] = {dirty[i]->object().id, dirty[i].get()};
		}
		std::sort(order.begin(), order.end());
		for (const auto& [id, h] : order)
		{
			Result<void> r = h->refresh();
			if (!r.ok() && result.ok())
				result = r;
		}
	}
	p.sweep();
	for (Slot* s : p.dirty_slots)
		p.chooseStrategy(*s);

	stats_.objects = uint32_t(p.objects.size());
	stats_.derived_uniforms = uint32_t(p.derived.size());
	stats_.buckets = uint32_t(p.bucket_order.size());
	if (std::exchange(p.shape_changed, false))
		p.shape = p.sumShape();
	QUOKKA_ASSERT(p.sumShape() == p.shape, "heap shape figures changed without shape_changed");
	stats_.slots = p.shape.slots;
	stats_.megacall_slots = p.shape.megacall_slots;
	stats_.indirect_slots = p.shape.indirect_slots;
	stats_.chunks = p.shape.chunks;
	stats_.arena_bytes = p.shape.arena_bytes;
	stats_.live_bytes = p.shape.live_bytes;
	stats_.update_ms = msSince(t0);
	return result;
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

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] diagnostics
// ---------------------------------------------------------------------------------------------------------------------

namespace
{
Result<std::vector<uint32_t>> readWords(gpu::Device& device, const gpu::Buffer& buffer, uint64_t words)
{
	std::vector<uint32_t> out(words, 0);
	if (words == 0)
		return out;
	QUOKKA_TRY_ASSIGN(bytes, device.readBuffer(buffer, 0, words * 4));
	std::memcpy(out.data(), bytes.data(), words * 4);
	return out;
}

/// Collects findings, at most `limit` lines per kind plus a count of the rest.
struct Findings
{
	std::vector<std::string> lines;
	std::map<std::string, uint32_t> per_kind;
	void add(const std::string& kind, const std::string& what)
	{
		if (++per_kind[kind] <= 8)
			lines.push_back(kind + ": " + what);
	}
	std::vector<std::string> done()
	{
		for (const auto& [kind, n] : per_kind)
			if (n > 8)
				lines.push_back(kind + ": … and " + std::to_string(n - 8) + " more");
		return std::move(lines);
	}
};
} // namespace

Result<std::vector<std::string>> HeapScene::validateHeap()
{
	Impl& p = *impl_;
	gpu::Device& device = p.context->device();
	QUOKKA_TRY(device.waitIdle());
	Findings f;
	// --- CPU: allocators, pools, objects, slots.
	for (size_t c = 0; c < p.chunks.size(); ++c)
		if (auto v = p.chunks[c]->allocator.validate(); !v.ok())
			f.add("allocator", "chunk " + std::to_string(c) + ": " + v.error().message);
	if (const std::string table = p.pool.check(); !table.empty())
		f.add("pool", "the pool table: " + table);
	if (const std::string table = p.objects.check(); !table.empty())
		f.add("object", "the object table: " + table);
	std::unordered_map<const Entry*, uint32_t> uses;
	std::vector<const HeapObject*> placed_objects;
	p.objects.forEach(
	    [&](const HeapObject* h)
	    {
		    if (h->placed)
			    placed_objects.push_back(h);
		    else if (h->owned)
			    f.add("object", classic::objectName(h->object()) + " is not placed but owns a private block");
	    });
	for (const HeapObject* h : placed_objects)
	{
		const std::string name = classic::objectName(h->object());
		for (const Entry* e : h->entries)
			++uses[e];
		if (h->indices)
			++uses[h->indices];
		if (!h->bucket || !h->slot)
		{
			f.add("object", name + " is placed but has no bucket or slot");
			continue;
		}
		const Bucket& b = *h->bucket;
		if (h->owned)
		{
			// The private block: its parts tile it in order, each used once by this object, in its bucket's chunk.
			const PrivateSet& own = *h->owned;
			if (own.chunk != b.chunk)
				f.add("object", name + ": its private block lives in chunk " + std::to_string(own.chunk) +
				                    ", its bucket in " + std::to_string(b.chunk));
			else if (p.chunks[own.chunk]->allocator.blockBytes(own.block) != own.bytes)
				f.add("pool", name + ": its private block at offset " + std::to_string(own.block) + " is " +
				                  std::to_string(p.chunks[own.chunk]->allocator.blockBytes(own.block)) +
				                  " bytes, its parts need " + std::to_string(own.bytes));
			uint64_t at = own.block;
			for (uint32_t i = 0; i < own.count; ++i)
			{
				const PrivateSet::Part& part = own.parts[i];
				if (part.ref != at || part.chunk != own.chunk || !part.priv || part.refcount != 1)
					f.add("pool", name + ": private part " + std::to_string(i) + " at offset " +
					                  std::to_string(part.ref) + " does not follow the block's layout (expected " +
					                  std::to_string(at) + ")");
				at += align16(16ull + part.data_bytes);
				const size_t n = std::count(h->entries.begin(), h->entries.end(), &part) + (h->indices == &part);
				if (n != 1)
					f.add("pool",
					      name + ": private part " + std::to_string(i) + " is used " + std::to_string(n) + " times");
			}
			for (uint32_t i = own.first_uniform; i < own.count; ++i)
			{
				const PrivateSet::Part& part = own.parts[i];
				if (part.kind != Entry::kUniform || part.key.node != own.uniforms[i - own.first_uniform].node().get())
					f.add("pool", name + ": private part " + std::to_string(i) + " is not the uniform it names");
				else if (p.pool.find(part.key))
					f.add("pool", name + ": private uniform part " + std::to_string(i) +
					                  " beside a pooled entry of the same value (it should have been re-placed)");
			}
			if (at != uint64_t(own.block) + own.bytes)
				f.add("pool", name + ": its private parts cover " + std::to_string(at - own.block) + " of " +
				                  std::to_string(own.bytes) + " block bytes");
		}
		for (const Entry* e : h->entries)
			if (e->priv && (!h->owned || e < &h->owned->parts[0] || e >= &h->owned->parts[0] + h->owned->count))
				f.add("object", name + ": a private input that is not one of its own parts");
		for (const Entry* e : h->entries)
			if (e->chunk != b.chunk)
				f.add("object", name + ": an input lives in chunk " + std::to_string(e->chunk) + ", its bucket in " +
				                    std::to_string(b.chunk));
		const size_t base = size_t(h->header) * b.header_words;
		for (size_t i = 0; i < h->entries.size(); ++i)
			if ((b.headers.words[base + i] & ~15u) != h->entries[i]->ref)
				f.add("header", name + ": word " + std::to_string(i) + " is " +
				                    std::to_string(b.headers.words[base + i]) + ", its input is at " +
				                    std::to_string(h->entries[i]->ref));
		if (h->record >= h->slot->records.size() || h->slot->records[h->record] != h)
			f.add("record", name + ": its record " + std::to_string(h->record) + " does not point back at it");
	}
	p.forEachEntry(
	    [&](const Entry& entry)
	    {
		    const Entry* e = &entry;
		    const uint32_t n = uses.count(e) ? uses[e] : 0;
		    if (n != e->refcount)
			    f.add("pool", "an entry at chunk " + std::to_string(e->chunk) + " offset " + std::to_string(e->ref) +
			                      " has refcount " + std::to_string(e->refcount) + " but " + std::to_string(n) +
			                      " users");
		    const uint64_t block = p.chunks[e->chunk]->allocator.blockBytes(e->ref);
		    if (block != align16(16ull + e->data_bytes))
			    f.add("pool", "the allocation at chunk " + std::to_string(e->chunk) + " offset " +
			                      std::to_string(e->ref) + " is " + std::to_string(block) + " bytes, its entry needs " +
			                      std::to_string(align16(16ull + e->data_bytes)));
	    });
	// The placement index: a listed node's mask has bit c ⇔ chunk c holds an entry for the node, and exactly the
	// entries of listed nodes are marked.
	absl::flat_hash_map<const void*, uint64_t> held;
	p.pool.forEach(
	    [&](const Entry& e)
	    {
		    const UniformEntry* u = asUniform(&e);
		    if (!u || !u->placementIndexed())
			    return;
		    if (u->indexed != p.uniform_chunks.contains(e.key.node))
			    f.add("pool", std::string("the uniform entry at chunk ") + std::to_string(e.chunk) + " offset " +
			                      std::to_string(e.ref) +
			                      (u->indexed ? " is marked listed but its node is not"
			                                  : " is not marked listed but its node is"));
		    if (u->indexed)
			    held[e.key.node] |= uint64_t(1) << e.chunk;
	    });
	if (held != p.uniform_chunks)
		f.add("pool", "the uniform placement index lists " + std::to_string(p.uniform_chunks.size()) +
		                  " nodes, the pool holds " + std::to_string(held.size()) + " (or their chunks differ)");
	for (const Bucket* b : p.bucket_order)
		for (const auto& sp : b->slots)
		{
			const Slot& s = *sp;
			uint64_t emits = 0;
			for (const HeapObject* h : s.records)
				emits += h->emits();
			if (emits != s.emit_sum)
				f.add("slot", "bucket " + std::to_string(b->serial) + ": emit sum " + std::to_string(s.emit_sum) +
				                  " but its records emit " + std::to_string(emits));
		}
	// --- GPU: allocation headers, draw headers, commands and records as uploaded; the megacall scans and search.
	std::vector<std::vector<uint32_t>> arenas(p.chunks.size());
	for (size_t c = 0; c < p.chunks.size(); ++c)
	{
		const Chunk& chunk = *p.chunks[c];
		if (!chunk.buffer || chunk.allocator.cursor() == 0)
			continue;
		QUOKKA_TRY_ASSIGN(words, readWords(device, *chunk.buffer, chunk.allocator.cursor() / 4));
		arenas[c] = std::move(words);
		const std::vector<uint32_t>& arena = arenas[c];
		auto checkAllocation = [&](const Entry& entry)
		{
			const Entry* e = &entry;
			if (e->chunk != c)
				return;
			const uint32_t w = e->ref / 4;
			const uint32_t want_type = e->kind == Entry::kUniform ? kTypeUniform
			                           : e->kind == Entry::kIndex ? kTypeIndex
			                                                      : kTypeAttribute;
			if (arena[w] != want_type || arena[w + 1] != e->elements ||
			    arena[w + 2] != (e->elements ? e->data_bytes / e->elements : 0))
				f.add("arena", "chunk " + std::to_string(c) + " offset " + std::to_string(e->ref) +
				                   ": allocation header {" + std::to_string(arena[w]) + ", " +
				                   std::to_string(arena[w + 1]) + ", " + std::to_string(arena[w + 2]) + "} differs");
			if (e->kind != Entry::kIndex && e->type.scalar == fx::Scalar::F32)
				for (uint32_t k = 0; k < e->data_bytes / 4; ++k)
				{
					float v;
					std::memcpy(&v, &arena[w + 4 + k], 4);
					if (!std::isfinite(v))
					{
						f.add("arena", "chunk " + std::to_string(c) + " offset " + std::to_string(e->ref) +
						                   ": a non-finite float at element word " + std::to_string(k));
						break;
					}
				}
		};
		p.forEachEntry(checkAllocation);
		for (const HeapObject* h : placed_objects)
			if (h->owned)
				for (uint32_t i = 0; i < h->owned->count; ++i)
					checkAllocation(h->owned->parts[i]);
		// simulateDraws: replay every draw's vertex fetches from the uploaded indices — each index range inside its
		// allocation, every attribute element a vertex or instance reads inside the attribute's allocation.
		for (const Bucket* b : p.bucket_order)
		{
			if (b->chunk != c)
				continue;
			for (const auto& sp : b->slots)
				for (const HeapObject* h : sp->records)
				{
					if (!h->count() || !h->instances())
						continue;
					const std::string name = classic::objectName(h->object());
					int64_t max_vertex = int64_t(h->draw.first) + h->count() - 1;
					if (h->draw.indexed)
					{
						if (!h->indices)
							continue;
						const uint64_t first = (h->indices->ref + 16) / 4 + uint64_t(h->draw.first);
						if (first + h->count() > (uint64_t(h->indices->ref) + 16 + h->indices->data_bytes) / 4)
						{
							f.add("simulate", name + ": indices past its index allocation");
							continue;
						}
						uint32_t m = 0;
						for (uint32_t i = 0; i < h->count(); ++i)
							m = std::max(m, arena[first + i]);
						max_vertex = int64_t(m) + h->draw.base_vertex;
					}
					const uint64_t max_instance = uint64_t(h->draw.first_instance) + h->instances() - 1;
					const uint32_t hdr = h->header * b->header_words;
					for (size_t i = 0; i < h->entries.size(); ++i)
					{
						const Entry* e = h->entries[i];
						if (e->kind != Entry::kAttribute)
							continue;
						const bool per_instance = (b->headers.words[hdr + i] & fx::kHeapPerInstanceBit) != 0;
						const uint64_t need = per_instance ? max_instance : uint64_t(std::max<int64_t>(max_vertex, 0));
						if (max_vertex < 0 || need >= e->elements)
							f.add("simulate", name + ": reads element " + std::to_string(need) +
							                      " of an attribute of " + std::to_string(e->elements));
					}
				}
		}
	}
	for (const Bucket* b : p.bucket_order)
	{
		if (!b->headers.buffer)
			continue;
		QUOKKA_TRY_ASSIGN(gpu_headers, readWords(device, *b->headers.buffer, b->headers.words.size()));
		std::vector<bool> live(b->header_count, true);
		for (uint32_t free_header : b->free_headers)
			live[free_header] = false;
		for (uint32_t hdr = 0; hdr < b->header_count; ++hdr)
			for (uint32_t k = 0; live[hdr] && k < b->header_words; ++k)
			{
				const size_t w = size_t(hdr) * b->header_words + k;
				if (gpu_headers[w] != b->headers.words[w])
				{
					f.add("header", "bucket " + std::to_string(b->serial) + " header " + std::to_string(hdr) +
					                    " word " + std::to_string(k) + " is " + std::to_string(gpu_headers[w]) +
					                    " on the GPU, " + std::to_string(b->headers.words[w]) + " expected");
					break;
				}
			}
		for (const auto& sp : b->slots)
		{
			const Slot& s = *sp;
			const std::string where = "bucket " + std::to_string(b->serial) + " slot";
			if (s.active == DrawStrategy::Indirect)
			{
				if (!s.commands.buffer || !s.count.buffer)
					continue;
				QUOKKA_TRY_ASSIGN(cmds, readWords(device, *s.commands.buffer, s.commands.words.size()));
				QUOKKA_TRY_ASSIGN(count, readWords(device, *s.count.buffer, 1));
				if (cmds != s.commands.words)
					f.add("commands", where + ": the indirect commands on the GPU differ from the slot's");
				if (count[0] != s.records.size())
					f.add("commands", where + ": draw count " + std::to_string(count[0]) + ", " +
					                      std::to_string(s.records.size()) + " records");
				continue;
			}
			if (!s.mrecords.buffer || !s.tiles || !s.args || !p.scanner)
				continue;
			QUOKKA_TRY_ASSIGN(recs, readWords(device, *s.mrecords.buffer, s.mrecords.words.size()));
			for (size_t r = 0; r < s.records.size(); ++r)
				for (uint32_t k = 1; k < fx::kRecordWords; ++k)
					if (recs[r * fx::kRecordWords + k] != s.mrecords.words[r * fx::kRecordWords + k])
					{
						f.add("records", where + " record " + std::to_string(r) + " word " + std::to_string(k) +
						                     " differs on the GPU");
						break;
					}
			const uint32_t tiles = tileCapacityBound(s.emit_sum);
			QUOKKA_TRY_ASSIGN(tile_words, readWords(device, *s.tiles, std::min<uint64_t>(tiles, s.tiles->size() / 4)));
			QUOKKA_TRY_ASSIGN(args, readWords(device, *s.args, 4));
			for (const std::string& line : checkScan(recs, tile_words, args))
				f.add("scan", where + ": " + line);
			if (s.emit_sum == 0)
				continue;
			ProbeDesc probe;
			probe.records = s.mrecords.buffer.get();
			probe.record_count = uint32_t(s.records.size());
			probe.tiles = s.tiles.get();
			probe.arena = p.chunks[b->chunk]->buffer.get();
			// Every emit (and so every primitive's coherence) up to 2^20 emits per slot; past that the record
			// boundaries and 2,048 random emits, with coherence checked per record below.
			probe.all_emits = s.emit_sum <= kExhaustiveProbeEmits;
			probe.primitive_vertices = s.prim;
			probe.random_emits = 2048;
			probe.seed = uint32_t(b->serial + 1);
			QUOKKA_TRY_ASSIGN(report, p.scanner->probeSlot(probe));
			if (report.mismatch_count)
				f.add("probe", where + ": probeBinarySearch found " + std::to_string(report.mismatch_count) + " of " +
				                   std::to_string(report.probed) +
				                   " emits where the GPU search and the CPU "
				                   "replay disagree (first: emit " +
				                   std::to_string(report.mismatches.front().emit) + ")");
			if (report.incoherent_primitives)
				f.add("triangles", where + ": " + std::to_string(report.incoherent_primitives) + " of " +
				                       std::to_string(report.primitives_checked) +
				                       " primitives do not come from one record, one instance and consecutive "
				                       "vertices (first at emit " +
				                       std::to_string(report.first_incoherent_emit) + ")");
			// Triangle coherence: the emits of one primitive come from one record and one instance.
			for (size_t r = 0; r < s.records.size(); ++r)
			{
				const uint32_t n = recs[r * fx::kRecordWords + 3];
				if (n % s.prim != 0)
					f.add("triangles", where + " record " + std::to_string(r) + ": " + std::to_string(n) +
					                       " vertices per instance, not whole primitives of " + std::to_string(s.prim));
			}
		}
	}
	return f.done();
}

Result<void> HeapScene::corruptHeaderForTest(uint32_t word, uint32_t value)
{
	Impl& p = *impl_;
	if (p.bucket_order.empty() || !p.bucket_order.front()->headers.buffer)
		return makeError(ErrorCode::InvalidArgument, "corruptHeaderForTest: no uploaded bucket");
	const gpu::BufferHandle& buffer = p.bucket_order.front()->headers.buffer;
	if (uint64_t(word) * 4 + 4 > buffer->size())
		return makeError(ErrorCode::InvalidArgument, "corruptHeaderForTest: word outside the header buffer");
	return p.context->device().uploadBuffer(*buffer, uint64_t(word) * 4, &value, 4);
}

} // namespace quokka::heap
