// OffsetAllocator micro-benchmark (issue #6): the `quokka bench meshlet` allocator stream — 10,000 live allocations in
// a 2^30-unit space, each pair frees a random live allocation and allocates a random size 1…65,536 — as a Google
// Benchmark, so the allocator can be profiled (perf, callgrind) without a device. A program, never a test.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include <quokka/base/offset_allocator.hpp>

namespace
{

constexpr uint32_t kLive = 10000;
constexpr uint32_t kSpace = 1u << 30;
constexpr size_t kStream = 1u << 20;

struct Stream
{
	std::vector<uint32_t> victims, sizes;
};

const Stream& stream()
{
	static const Stream s = []
	{
		std::mt19937 rng(42);
		Stream out;
		out.victims.resize(kStream);
		out.sizes.resize(kStream);
		for (size_t i = 0; i < kStream; ++i)
		{
			out.victims[i] = rng() % kLive;
			out.sizes[i] = 1 + rng() % 65536;
		}
		return out;
	}();
	return s;
}

void BM_OffsetAllocatorFreeAllocatePair(benchmark::State& state)
{
	const Stream& s = stream();
	quokka::OffsetAllocator allocator(kSpace, kLive);
	std::vector<quokka::Allocation> live(kLive);
	for (uint32_t i = 0; i < kLive; ++i)
		live[i] = allocator.allocate(s.sizes[i]);
	size_t i = 0;
	uint64_t failures = 0;
	for (auto _ : state)
	{
		quokka::Allocation& slot = live[s.victims[i]];
		allocator.free(slot);
		slot = allocator.allocate(s.sizes[i]);
		failures += !slot.valid();
		i = (i + 1) & (kStream - 1);
	}
	state.SetItemsProcessed(int64_t(state.iterations()));
	state.counters["failures"] = double(failures);
	for (quokka::Allocation& a : live)
		allocator.free(a);
}
BENCHMARK(BM_OffsetAllocatorFreeAllocatePair);

} // namespace

BENCHMARK_MAIN();
