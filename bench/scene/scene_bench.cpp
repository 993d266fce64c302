// Scene-model benchmarks: the cost of the render objects an application builds, before any renderer sees them.
//
// BM_DefaultRenderObjects/N builds N render objects that set only what every object must (positions, indices, one
// ModelTrafo cval) and leave the pipeline state, draw call and `active` flag at their defaults — what a CAD or GIS
// loader does for each of its parts — and keeps them alive, as a scene does. Reported per object: ns (Google
// Benchmark's time / N), `nodes` (adaptive nodes alive per object) and `bytes` (heap bytes per object, glibc's
// mallinfo2 before and after). Results: docs/benchmarks.md § scene.
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cstdint>
#include <vector>

#include <quokka/adaptive/aval.hpp>
#include <quokka/scene/render_object.hpp>

namespace
{

using namespace quokka;

void BM_DefaultRenderObjects(benchmark::State& state)
{
	const auto n = size_t(state.range(0));
	// One mesh for all (the buffers are not what is measured): each object still holds its own views of it.
	const scene::BufferView positions =
	    scene::BufferView::of(std::vector<float>{0, 0, 0, 1, 0, 0, 0, 1, 0}, VK_FORMAT_R32G32B32_SFLOAT);
	const scene::BufferView indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2}, VK_FORMAT_R32_UINT);
	double nodes = 0, bytes = 0;
	for (auto _ : state)
	{
		const int64_t nodes0 = adaptive::liveObjectCount();
		const size_t bytes0 = mallinfo2().uordblks;
		std::vector<scene::RenderObjectPtr> objects;
		objects.reserve(n);
		for (size_t i = 0; i < n; ++i)
		{
			scene::RenderObject o;
			o.attributes["Positions"] = positions;
			o.indices = indices;
			o.uniforms["ModelTrafo"] = scene::uniform(
			    adaptive::cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(double(i), 0.0, 0.0))));
			objects.push_back(scene::makeRenderObject(std::move(o)));
		}
		nodes = double(adaptive::liveObjectCount() - nodes0) / double(n);
		bytes = double(mallinfo2().uordblks - bytes0) / double(n);
		benchmark::DoNotOptimize(objects.data());
		state.PauseTiming();
		objects.clear();
		state.ResumeTiming();
	}
	state.SetItemsProcessed(int64_t(state.iterations() * n));
	state.counters["nodes"] = nodes;
	state.counters["bytes"] = bytes;
}
BENCHMARK(BM_DefaultRenderObjects)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
