// Adaptive core benchmarks (issue #3). Results and targets: docs/benchmarks.md.
//
// Shapes: up-to-date reads, one change + three re-evaluations (with a heap-allocation counter), marking throughput on
// linear chains, diamonds and walls up to 10^6 nodes, fan-out 1 → N, an aset reader under 1–100 changes per
// transaction at 10^3 / 10^5 / 10^6 elements, pulling an unchanged reader, top-down re-evaluation of chains up to 10^6
// deep (fresh stack segments beyond ~10^5), and reduceByA under one changed cell.
// Every benchmark reports physical units: ns per iteration (Google Benchmark's time), plus items/s (= nodes marked
// per second, or changed elements per second) and `allocs` (heap allocations per iteration, counted by the global
// operator new below).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/aval.hpp>
#include <quokka/adaptive/reduce.hpp>
#include <quokka/base/stack_guard.hpp>

namespace
{
std::atomic<uint64_t> g_allocations{0};
} // namespace

// GCC 12 inlines the replacement operator delete into library code and then reports malloc/free pairs it cannot see
// through as mismatched (-Wmismatched-new-delete); the pairing below is correct (malloc in new, free in delete).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Counting allocator for the whole binary: the steady path of the core must not allocate (issue #3 target).
void* operator new(std::size_t n)
{
	g_allocations.fetch_add(1, std::memory_order_relaxed);
	if (void* p = std::malloc(n ? n : 1))
		return p;
	throw std::bad_alloc();
}
void operator delete(void* p) noexcept
{
	std::free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
	std::free(p);
}

using namespace quokka::adaptive;

namespace
{

/// Reports heap allocations per iteration of the timed loop.
struct AllocCounter
{
	uint64_t start = g_allocations.load();
	void report(benchmark::State& state) const
	{
		state.counters["allocs"] =
		    benchmark::Counter(double(g_allocations.load() - start), benchmark::Counter::kAvgIterations);
	}
};

int inc(int x)
{
	return x + 1;
}

// ---- reads ---------------------------------------------------------------------------------------------------------

void BM_UpToDateReadCVal(benchmark::State& state)
{
	cval<int> c(1);
	c.force();
	for (auto _ : state)
		benchmark::DoNotOptimize(c.force());
}
BENCHMARK(BM_UpToDateReadCVal);

void BM_UpToDateReadMapChain3(benchmark::State& state)
{
	cval<int> c(1);
	auto m = map(map(map(c, inc), inc), inc);
	m.force();
	AllocCounter a;
	for (auto _ : state)
		benchmark::DoNotOptimize(m.force());
	a.report(state);
}
BENCHMARK(BM_UpToDateReadMapChain3);

// ---- one change + three re-evaluations ----------------------------------------------------------------------------

void BM_TransactPlusThreeReevaluations(benchmark::State& state)
{
	cval<int> c(0);
	auto m = map(map(map(c, inc), inc), inc);
	m.force();
	int i = 0;
	for (int warm = 0; warm < 100; ++warm) // fill transaction buffers once
	{
		{
			Transaction t;
			c.setValue(++i);
		}
		m.force();
	}
	AllocCounter a;
	for (auto _ : state)
	{
		{
			Transaction t;
			c.setValue(++i);
		}
		benchmark::DoNotOptimize(m.force());
	}
	a.report(state);
}
BENCHMARK(BM_TransactPlusThreeReevaluations);

// ---- marking throughput -------------------------------------------------------------------------------------------

/// Marks `nodes` (all up to date) by changing `input`; re-evaluation (untimed) via `reeval`.
template <typename Reeval>
void markLoop(benchmark::State& state, cval<int>& input, int64_t nodes, Reeval reeval)
{
	int i = 0;
	AllocCounter a;
	for (auto _ : state)
	{
		{
			Transaction t;
			input.setValue(++i);
		}
		state.PauseTiming();
		reeval();
		state.ResumeTiming();
	}
	a.report(state);
	state.SetItemsProcessed(state.iterations() * nodes);
}

void BM_MarkLinearChain(benchmark::State& state)
{
	auto n = state.range(0);
	cval<int> c(0);
	std::vector<aval<int>> chain;
	chain.reserve(size_t(n));
	aval<int> x = c;
	for (int64_t k = 0; k < n; ++k)
	{
		x = map(x, inc);
		x.force(); // bottom-up: evaluation depth stays 1 (no 10^6-deep recursion)
		chain.push_back(x);
	}
	markLoop(state, c, n,
	         [&]
	         {
		         for (auto& node : chain)
			         node.force();
	         });
}
BENCHMARK(BM_MarkLinearChain)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMicrosecond);

void BM_MarkDiamond(benchmark::State& state)
{
	// Binary fan-out of depth d, then pairwise map2 fan-in (FDA Transact.fs "Diamond").
	auto d = int(state.range(0));
	cval<int> c(0);
	std::vector<aval<int>> layer{c};
	int64_t nodes = 0;
	for (int k = 0; k < d; ++k)
	{
		std::vector<aval<int>> next;
		for (auto& n : layer)
		{
			next.push_back(map(n, inc));
			next.push_back(map(n, [](int v) { return v * 2; }));
		}
		nodes += int64_t(next.size());
		layer.swap(next);
	}
	while (layer.size() > 1)
	{
		std::vector<aval<int>> next;
		for (size_t k = 0; k + 1 < layer.size(); k += 2)
			next.push_back(map2(layer[k], layer[k + 1], [](int a, int b) { return a + b; }));
		nodes += int64_t(next.size());
		layer.swap(next);
	}
	aval<int> bottom = layer[0];
	bottom.force();
	state.counters["nodes"] = double(nodes);
	markLoop(state, c, nodes, [&] { bottom.force(); });
}
BENCHMARK(BM_MarkDiamond)->DenseRange(8, 18, 5)->Unit(benchmark::kMicrosecond);

void BM_MarkWall(benchmark::State& state)
{
	// One custom node reading N − 1 maps of one input (FDA Transact.fs "Wall").
	auto n = state.range(0);
	cval<int> c(0);
	std::vector<aval<int>> maps;
	for (int64_t k = 0; k + 1 < n; ++k)
		maps.push_back(map(c, [k](int v) { return v + int(k); }));
	auto wall = custom(
	    [maps](Token t)
	    {
		    int64_t s = 0;
		    for (auto& m : maps)
			    s += m.getValue(t);
		    return s;
	    });
	wall.force();
	markLoop(state, c, n, [&] { wall.force(); });
}
BENCHMARK(BM_MarkWall)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMicrosecond);

void BM_FanOutChangeAndReevaluate(benchmark::State& state)
{
	// One camera-like cval feeding N per-object values; each iteration changes it and re-reads all N.
	auto n = state.range(0);
	cval<int> c(0);
	std::vector<aval<int>> outs;
	for (int64_t k = 0; k < n; ++k)
	{
		outs.push_back(map(c, [k](int v) { return v * 3 + int(k); }));
		outs.back().force();
	}
	int i = 0;
	AllocCounter a;
	for (auto _ : state)
	{
		{
			Transaction t;
			c.setValue(++i);
		}
		for (auto& o : outs)
			benchmark::DoNotOptimize(o.force());
	}
	a.report(state);
	state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_FanOutChangeAndReevaluate)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMicrosecond);

// ---- collections ---------------------------------------------------------------------------------------------------

void BM_SetReaderChanges(benchmark::State& state)
{
	// cset of n elements → map → reader; each transaction removes k elements and adds k new ones.
	auto n = int(state.range(0));
	auto k = int(state.range(1));
	std::vector<int> init;
	for (int x = 0; x < n; ++x)
		init.push_back(x);
	cset<int> s(init);
	auto m = map(aset<int>(s), [](int x) { return x * 2; });
	auto r = m.getReader();
	r->pull();
	int next = n;
	int oldest = 0;
	for (auto _ : state)
	{
		{
			Transaction t;
			for (int j = 0; j < k; ++j)
			{
				s.remove(oldest++);
				s.add(next++);
			}
		}
		benchmark::DoNotOptimize(r->pull());
	}
	state.SetItemsProcessed(state.iterations() * 2 * k);
}
BENCHMARK(BM_SetReaderChanges)->ArgsProduct({{1000, 100000, 1000000}, {1, 10, 100}})->Unit(benchmark::kMicrosecond);

void BM_ObjectSetAddRemove(benchmark::State& state)
{
	// The heap renderer's shape (bench update): a cset of n shared_ptr objects at scattered addresses → choose (the
	// render tree's flattening) → a delta reader; each iteration adds k objects never seen before in one transaction,
	// pulls, removes them in another, pulls. Items = elements added or removed.
	struct Object
	{
		int id;
		char payload[200];
	};
	using Ptr = std::shared_ptr<const Object>;
	const auto n = int(state.range(0));
	const auto k = int(state.range(1));
	std::vector<Ptr> all;
	for (int i = 0; i < n + 64 * k; ++i)
		all.push_back(std::make_shared<const Object>(Object{i, {}}));
	std::mt19937 rng(5);
	std::shuffle(all.begin(), all.end(), rng); // allocation order ≠ address order ≠ insertion order
	cset<Ptr> s;
	transact(
	    [&]
	    {
		    for (int i = 0; i < n; ++i)
			    s.add(all[size_t(i)]);
	    });
	auto chosen = choose(aset<Ptr>(s), [](const Ptr& p) { return p->id >= 0 ? std::optional<Ptr>(p) : std::nullopt; });
	auto r = chosen.getDeltaReader();
	r->pull();
	size_t next = size_t(n);
	for (auto _ : state)
	{
		if (next + size_t(k) > all.size())
			next = size_t(n);
		transact(
		    [&]
		    {
			    for (int j = 0; j < k; ++j)
				    s.add(all[next + size_t(j)]);
		    });
		benchmark::DoNotOptimize(r->pull());
		transact(
		    [&]
		    {
			    for (int j = 0; j < k; ++j)
				    s.remove(all[next + size_t(j)]);
		    });
		benchmark::DoNotOptimize(r->pull());
		next += size_t(k);
	}
	state.SetItemsProcessed(state.iterations() * 2 * k);
}
BENCHMARK(BM_ObjectSetAddRemove)->ArgsProduct({{100000, 1000000}, {100, 10000}})->Unit(benchmark::kMicrosecond);

void BM_PullUnchangedReader(benchmark::State& state)
{
	cset<int> s;
	for (int x = 0; x < 100000; ++x)
		s.add(x);
	auto r = map(aset<int>(s), [](int x) { return x; }).getReader();
	r->pull();
	AllocCounter a;
	for (auto _ : state)
		benchmark::DoNotOptimize(r->pull());
	a.report(state);
}
BENCHMARK(BM_PullUnchangedReader);

void BM_ListReaderAppendRemove(benchmark::State& state)
{
	// clist of n elements → map → reader; each transaction appends one and removes the first (FDA CollectionUpdate).
	auto n = int(state.range(0));
	std::vector<int> init(size_t(n), 1);
	clist<int> l(init);
	auto r = map(alist<int>(l), [](int x) { return x + 1; }).getReader();
	r->pull();
	for (auto _ : state)
	{
		{
			Transaction t;
			l.append(2);
			l.removeAt(0);
		}
		benchmark::DoNotOptimize(r->pull());
	}
}
BENCHMARK(BM_ListReaderAppendRemove)->RangeMultiplier(100)->Range(1000, 100000)->Unit(benchmark::kMicrosecond);

// ---- deep evaluation -----------------------------------------------------------------------------------------------

void BM_ChainTopDownReevaluate(benchmark::State& state)
{
	// A change at the bottom of an n-deep map chain, then one read of the top: every level re-evaluates inside its
	// consumer's evaluation (n nested evaluations; beyond ~10^5 they continue on fresh stack segments).
	auto n = state.range(0);
	cval<int> c(0);
	aval<int> x = c;
	for (int64_t k = 0; k < n; ++k)
		x = map(x, inc);
	x.force();
	int i = 0;
	const uint64_t switches = quokka::stackSegmentStats().switches;
	for (auto _ : state)
	{
		c.setValue(++i);
		benchmark::DoNotOptimize(x.force());
	}
	state.SetItemsProcessed(state.iterations() * n);
	state.counters["segments"] =
	    benchmark::Counter(double(quokka::stackSegmentStats().switches - switches), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_ChainTopDownReevaluate)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMicrosecond);

// ---- reduceByA -----------------------------------------------------------------------------------------------------

void BM_ReduceByAOneCellChange(benchmark::State& state)
{
	// n elements, each with its own cell, summed by reduceByA; one cell changes per transaction: the cost follows the
	// change (one sub + one add), not n.
	auto n = int(state.range(0));
	std::vector<cval<int>> cells;
	cells.reserve(size_t(n));
	cset<int> ids;
	for (int k = 0; k < n; ++k)
	{
		cells.emplace_back(k);
		ids.add(k);
	}
	auto total = reduceByA(
	    aset<int>(ids), [&](int k) { return aval<int>(cells[size_t(k)]); },
	    Reduction<int, int>{0, [](int s, int v) { return s + v; },
	                        [](int s, int v) { return std::optional<int>(s - v); }});
	total.force();
	int i = 0;
	for (auto _ : state)
	{
		cells[size_t(i % n)].setValue(i);
		++i;
		benchmark::DoNotOptimize(total.force());
	}
}
BENCHMARK(BM_ReduceByAOneCellChange)->RangeMultiplier(100)->Range(1000, 100000)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
