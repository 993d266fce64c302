// heap_test_access.hpp — hooks for the heap's tests into what HeapScene's public API hides on purpose (internal to
// quokka::heap; HeapScene befriends this struct).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/heap/heap_scene.hpp>

namespace quokka::heap::detail
{

struct HeapTestAccess
{
	/// Overwrites one word of the first bucket's uploaded draw header on the GPU (and nowhere else), so that tests can
	/// check validateHeap() reports it. Errors: InvalidArgument (no uploaded bucket, a word outside its headers).
	static Result<void> corruptDrawHeader(HeapScene& scene, uint32_t word, uint32_t value);
	/// Each arena chunk's bytes as uploaded, up to its allocator's cursor (GPU read-back; after the frames completed).
	static Result<std::vector<std::vector<std::byte>>> arenaBytes(HeapScene& scene);
};

} // namespace quokka::heap::detail
