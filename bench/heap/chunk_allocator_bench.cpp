// ChunkAllocator micro-benchmark (issue #5): random free+allocate pairs over a fixed live population, with the
// OffsetAllocator (base, O(1) good fit) on the same stream in the same run as the ratio's baseline.
// Two shapes: `Mixed` — 10,000 live blocks of 1…65,536 bytes in a 4 GiB chunk (the `bench meshlet` stream in 16-byte
// units); `Uniforms` — 100,000 live blocks of 32…128 bytes (a header plus a mat4 or a few vec4s) in a 256 MiB chunk.
// Each iteration frees a random live block and allocates the next size of a 2^20-entry (≈ 10^6) pre-drawn stream.
// Two more shapes follow the heap's objects: 300,000 objects of five blocks placed together (indices, two attributes,
// a ModelTrafo and a NormalMatrix: ~3.4 KiB on average, ~1 GiB in all, in a 2 GiB chunk; `Objects`) or of five 2-unit
// blocks (`TinyObjects`, the worst case for the live tables' span-grouped homes); each iteration removes a random
// object's blocks and places a new object.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include <quokka/base/offset_allocator.hpp>
#include <quokka/heap/chunk_allocator.hpp>

namespace
{

constexpr size_t kStream = 1u << 20;

struct Shape
{
	uint32_t live;
	uint64_t capacity_bytes;
	uint32_t min_bytes, max_bytes;
};
constexpr Shape kMixed{10000, uint64_t(1) << 32, 1, 65536};
constexpr Shape kUniforms{100000, uint64_t(256) << 20, 32, 128};

struct Stream
{
	std::vector<uint32_t> victims, sizes;
};

Stream makeStream(const Shape& shape)
{
	std::mt19937 rng(42);
	Stream out;
	out.victims.resize(kStream);
	out.sizes.resize(kStream);
	for (size_t i = 0; i < kStream; ++i)
	{
		out.victims[i] = rng() % shape.live;
		out.sizes[i] = shape.min_bytes + rng() % (shape.max_bytes - shape.min_bytes + 1);
	}
	return out;
}

template <const Shape& S>
void BM_ChunkAllocatorFreeAllocatePair(benchmark::State& state)
{
	static const Stream s = makeStream(S);
	quokka::heap::ChunkAllocator allocator(S.capacity_bytes);
	std::vector<uint32_t> live(S.live);
	for (uint32_t i = 0; i < S.live; ++i)
		live[i] = *allocator.allocate(s.sizes[i]);
	size_t i = 0;
	uint64_t failures = 0;
	for (auto _ : state)
	{
		uint32_t& slot = live[s.victims[i]];
		allocator.free(slot);
		const std::optional<uint32_t> offset = allocator.allocate(s.sizes[i]);
		failures += !offset;
		slot = offset.value_or(0);
		i = (i + 1) & (kStream - 1);
	}
	state.SetItemsProcessed(int64_t(state.iterations()));
	state.counters["failures"] = double(failures);
	state.counters["cursor_MiB"] = double(allocator.cursor()) / double(1 << 20);
	state.counters["free_blocks"] = double(allocator.freeBlockCount());
	allocator.reset();
}

template <const Shape& S>
void BM_OffsetAllocatorFreeAllocatePair(benchmark::State& state)
{
	static const Stream s = makeStream(S);
	auto units = [](uint32_t bytes) { return (bytes + 15) / 16; };
	quokka::OffsetAllocator allocator(uint32_t(S.capacity_bytes / 16), S.live);
	std::vector<quokka::Allocation> live(S.live);
	for (uint32_t i = 0; i < S.live; ++i)
		live[i] = allocator.allocate(units(s.sizes[i]));
	size_t i = 0;
	uint64_t failures = 0;
	for (auto _ : state)
	{
		quokka::Allocation& slot = live[s.victims[i]];
		allocator.free(slot);
		slot = allocator.allocate(units(s.sizes[i]));
		failures += !slot.valid();
		i = (i + 1) & (kStream - 1);
	}
	state.SetItemsProcessed(int64_t(state.iterations()));
	state.counters["failures"] = double(failures);
	allocator.reset();
}

template <bool Tiny>
void BM_ChunkAllocatorObjects(benchmark::State& state)
{
	constexpr uint32_t kObjects = 300000;
	std::mt19937 rng(7);
	auto sizes = [&]
	{
		if (Tiny)
			return std::array<uint32_t, 5>{20, 20, 32, 20, 20};
		return std::array<uint32_t, 5>{uint32_t(16 + 4 * (100 + rng() % 500)), uint32_t(16 + 12 * (40 + rng() % 80)),
		                               uint32_t(16 + 12 * (40 + rng() % 80)), 16 + 64, 16 + 48};
	};
	// Twice the live bytes: a chunk that fills up fails allocations, and what a failed one left behind must not be
	// freed (an offset of 0 stored for it once freed another object's block, corrupting every figure after it).
	quokka::heap::ChunkAllocator allocator(uint64_t(2) << 30);
	constexpr uint32_t kFailed = 0xffffffffu;
	std::vector<std::array<uint32_t, 5>> objects(kObjects);
	uint64_t failures = 0;
	auto place = [&](std::array<uint32_t, 5>& blocks)
	{
		for (uint32_t j = 0; const uint32_t bytes : sizes())
		{
			const std::optional<uint32_t> offset = allocator.allocate(bytes);
			failures += !offset;
			blocks[j++] = offset.value_or(kFailed);
		}
	};
	for (auto& blocks : objects)
		place(blocks);
	for (auto _ : state)
	{
		std::array<uint32_t, 5>& blocks = objects[rng() % kObjects];
		for (const uint32_t offset : blocks)
			if (offset != kFailed)
				allocator.free(offset);
		place(blocks);
	}
	state.counters["live_MiB"] = double(allocator.liveBytes()) / double(1 << 20);
	state.counters["cursor_MiB"] = double(allocator.cursor()) / double(1 << 20);
	state.SetItemsProcessed(int64_t(state.iterations()));
	state.counters["failures"] = double(failures);
	allocator.reset();
}

BENCHMARK(BM_ChunkAllocatorObjects<false>)->Name("ChunkAllocator/Objects");
BENCHMARK(BM_ChunkAllocatorObjects<true>)->Name("ChunkAllocator/TinyObjects");
BENCHMARK(BM_ChunkAllocatorFreeAllocatePair<kMixed>)->Name("ChunkAllocator/Mixed");
BENCHMARK(BM_OffsetAllocatorFreeAllocatePair<kMixed>)->Name("OffsetAllocator/Mixed");
BENCHMARK(BM_ChunkAllocatorFreeAllocatePair<kUniforms>)->Name("ChunkAllocator/Uniforms");
BENCHMARK(BM_OffsetAllocatorFreeAllocatePair<kUniforms>)->Name("OffsetAllocator/Uniforms");

} // namespace

BENCHMARK_MAIN();
