// heap_base.hpp — the heap's shared internal vocabulary (internal to quokka::heap): the names every heap file uses, the
// per-record block caches, the allocation header type ids and the forward declarations of the heap's types.
#pragma once

#include <cstddef>
#include <cstdint>

#include <quokka/adaptive/core.hpp>
#include <quokka/base/block_cache.hpp>
#include <quokka/scene/render_object.hpp>

#include "arena_staging.hpp"
#include "gpu_array.hpp"

namespace quokka::heap
{

using adaptive::AdaptiveObject;
using adaptive::aval;
using adaptive::Ref;
using adaptive::Token;
using detail::align16;
using detail::Chunk;
using detail::GpuArray;
using detail::HostPages;
using detail::stageAllocation;
using scene::RenderObjectPtr;
using scene::UniformValue;

namespace detail
{

/// The heap's per-object records (objects, pool entries, private sets) come from per-type block caches that keep up to
/// this many freed blocks per thread: a frame that removes 10^4 objects and one that adds 10^4 recycle each other's
/// records instead of sending most of them through the general allocator (BlockCache's default keeps 4,096): its bulk
/// frees, purged pages and page faults on reuse showed in the H200 profile of such frames.
constexpr size_t kCachedRecords = size_t(1) << 16;
template <size_t Size>
using RecordCache = BlockCache<Size, kCachedRecords>;

/// Allocation header type ids (low 16 bits; the shaders know the layout at compile time, the ids are for the
/// diagnostics).
enum TypeId : uint32_t
{
	kTypeUniform = 1,
	kTypeAttribute = 2,
	kTypeIndex = 3,
};

inline uint32_t primitiveVertices(VkPrimitiveTopology t)
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

} // namespace detail

using detail::kTypeAttribute;
using detail::kTypeIndex;
using detail::kTypeUniform;
using detail::primitiveVertices;
using detail::RecordCache;

struct Entry;
class HeapObject;
class Placement;
struct Bucket;
struct Slot;

} // namespace quokka::heap
