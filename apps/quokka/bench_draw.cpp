// `quokka bench draw` (issues #4, #5): frame cost of the unique-mesh scene (scene_unique.cpp) on the classic path,
// on the heap path with each draw strategy, and of the baked floor — every object pre-transformed into one mesh drawn
// with one draw, the least work any renderer of that scene can do. Per object count every variant's task is made and
// warmed up (one frame), then R rounds run one static frame of each variant in turn — each round starting one variant
// later — so that a change of the GPU's state (clocks, caches, other tenants) reaches every variant alike instead of
// biasing whichever ran after it. Reported per variant: medians of the CPU update, CPU encode, GPU and frame times,
// the GPU time's spread (min, max), draw calls, and GPU time over the floor's and over the fastest variant's. Then
// the crossover study behind HeapTuning::megacall_below, measured the same way: heap GPU time of indirect vs megacall
// at 4, 12, 32 and 100 triangles per object.
#include "commands.hpp"
#include "render_common.hpp"
#include "scene_run.hpp"
#include "scenes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <variant>

#include <nlohmann/json.hpp>

#include <quokka/fx/stock.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/runtime/runtime.hpp>

namespace quokka::app
{

namespace
{
/// The classic path records one draw per object: 10^6 objects take seconds per frame of CPU encode, and the point of
/// the larger sizes is the heap against its floor.
constexpr uint32_t kClassicMaxObjects = 100'000;
constexpr uint32_t kWidth = kBenchWidth, kHeight = kBenchHeight;
constexpr uint32_t kCrossoverTriangles[] = {4, 12, 32, 100};

struct Variant
{
	std::string name; ///< classic, heap-<strategy>, baked
	std::string path; ///< classic, heap, baked
	std::string draw; ///< per-object, the heap strategy, single
	runtime::RenderOptions options;
};

/// Medians of one variant's frames after the first.
struct Figures
{
	double update_ms = 0, encode_ms = 0, gpu_ms = 0, frame_ms = 0;
	double gpu_min_ms = 0, gpu_max_ms = 0; ///< the spread of the GPU times the median was taken over
	nlohmann::ordered_json cpu_frames;     ///< frameSpread of the CPU time (update + encode) per counted frame
	uint32_t draw_calls = 0;
	heap::HeapStats heap; ///< the last frame's (heap rows)
};

/// A scene to draw with some options: one variant of an interleaved measurement.
struct Contender
{
	const GeneratedScene* scene;
	runtime::RenderOptions options;
};

/// Every contender's task warmed up by one frame, then `reps` rounds of one frame each, the round's first contender
/// rotating; the figures in contender order. All draw with the static camera over `bounds` (the globals are shared).
Result<std::vector<Figures>> measureInterleaved(gpu::Device& device, BenchSession& session, SceneGlobals& g,
                                                const math::Box3d& bounds, const std::vector<Contender>& contenders,
                                                uint32_t reps)
{
	struct Live
	{
		std::unique_ptr<runtime::RenderTask> task;
		std::vector<double> update, encode, gpu, wall;
		runtime::TaskStats last;
	};
	runtime::Framebuffer& fb = session.framebuffer;
	placeStaticCamera(g, bounds, double(fb.width) / double(fb.height));
	gpu::FrameTimer timer(device);
	std::vector<Live> live(contenders.size());
	const auto frame = [&](Live& l, bool counted) -> Result<void>
	{
		QUOKKA_TRY_ASSIGN(timed, timedFrame(device, timer, *l.task, fb));
		l.last = l.task->stats();
		if (!counted)
			return {};
		l.update.push_back(l.last.update_ms);
		l.encode.push_back(l.last.encode_ms);
		l.gpu.push_back(timed.timing.ms);
		l.wall.push_back(timed.wall_ms);
		return {};
	};
	for (size_t i = 0; i < contenders.size(); ++i)
	{
		live[i].task = benchTask(session, contenders[i].scene->objects, contenders[i].options);
		QUOKKA_TRY(frame(live[i], false)); // (compiles, creates pipelines and uploads everything)
	}
	for (uint32_t r = 0; r < reps; ++r)
		for (size_t k = 0; k < live.size(); ++k)
			QUOKKA_TRY(frame(live[(r + k) % live.size()], true));
	std::vector<Figures> out;
	for (Live& l : live)
	{
		Figures f;
		if (!l.gpu.empty())
		{
			f.update_ms = median(l.update);
			f.encode_ms = median(l.encode);
			f.gpu_ms = median(l.gpu);
			f.frame_ms = median(l.wall);
			f.gpu_min_ms = *std::min_element(l.gpu.begin(), l.gpu.end());
			f.gpu_max_ms = *std::max_element(l.gpu.begin(), l.gpu.end());
		}
		std::vector<double> cpu(l.update.size());
		for (size_t k = 0; k < cpu.size(); ++k)
			cpu[k] = l.update[k] + l.encode[k];
		f.cpu_frames = frameSpread(std::move(cpu));
		f.draw_calls = l.last.passes.draws + l.last.heap.draw_calls;
		f.heap = l.last.heap;
		out.push_back(f);
	}
	return out;
}

/// Reads a constant tightly packed attribute of the unique-mesh layout.
template <typename T>
const T* elementsOf(const scene::BufferView& view, VkFormat format, size_t& count)
{
	const scene::ArrayBuffer& b = view.buffer.force();
	if (view.format != format || view.offset != 0 || (view.stride != 0 && view.stride != sizeof(T)) || !b.bytes)
		return nullptr;
	count = size_t(b.size() / sizeof(T));
	return reinterpret_cast<const T*>(b.data());
}

/// The floor: every object's triangles pre-transformed into one mesh (positions by ModelTrafo, normals by its normal
/// matrix, both in double, then narrowed to float) with its ConstantColor as a vertex colour; effect trafo (identity
/// ModelTrafo) + vertexColors + simpleLighting, so the pixels equal the scene's up to float rounding. Reads the
/// objects through their avals, so it bakes whatever makeUniqueMeshScene made.
Result<GeneratedScene> bake(const GeneratedScene& scene, const SceneGlobals& g)
{
	auto bad = [](const std::string& what)
	{ return makeError(ErrorCode::InvalidArgument, "bench draw: cannot bake the scene: " + what); };
	struct Source
	{
		const math::V3f* positions;
		const math::V3f* normals;
		const uint32_t* indices;
		size_t vertices, index_count;
		math::Trafo3d model;
		math::V4f color;
	};
	std::vector<Source> sources;
	sources.reserve(scene.objects.size());
	uint64_t vertices = 0, indices = 0;
	for (const scene::RenderObjectPtr& o : scene.objects)
	{
		Source s{};
		size_t normals = 0;
		auto p = o->attributes.find("Positions"), n = o->attributes.find("Normals");
		if (p == o->attributes.end() || n == o->attributes.end() || !o->indices)
			return bad("an object lacks positions, normals or indices");
		s.positions = elementsOf<math::V3f>(p->second, VK_FORMAT_R32G32B32_SFLOAT, s.vertices);
		s.normals = elementsOf<math::V3f>(n->second, VK_FORMAT_R32G32B32_SFLOAT, normals);
		s.indices = elementsOf<uint32_t>(*o->indices, VK_FORMAT_R32_UINT, s.index_count);
		const scene::DrawCall draw = o->draw_call.force();
		if (!s.positions || !s.normals || !s.indices || normals != s.vertices || draw.first != 0 ||
		    draw.base_vertex != 0 || draw.instance_count != 1 || draw.count > s.index_count)
			return bad("an object's buffers are not tight float3 / u32 arrays drawn from the start");
		s.index_count = draw.count;
		const scene::UniformValue model = o->uniforms.at("ModelTrafo").force();
		const scene::UniformValue color = o->uniforms.at("ConstantColor").force();
		if (!std::holds_alternative<math::Trafo3d>(model) || !std::holds_alternative<math::V4f>(color))
			return bad("ModelTrafo or ConstantColor has an unexpected type");
		s.model = std::get<math::Trafo3d>(model);
		s.color = std::get<math::V4f>(color);
		vertices += s.vertices;
		indices += s.index_count;
		sources.push_back(s);
	}
	if (vertices > UINT32_MAX || indices > UINT32_MAX)
		return bad("more than 2^32 vertices or indices");

	// Written straight into the shared byte arrays: at 10^6 objects they hold ~1.8 GB, a second copy would double it.
	auto bytes = [](uint64_t size) { return std::make_shared<std::vector<std::byte>>(size); };
	auto positions = bytes(vertices * sizeof(math::V3f)), normals = bytes(vertices * sizeof(math::V3f));
	auto colors = bytes(vertices * sizeof(math::V4f));
	auto index_bytes = bytes(indices * sizeof(uint32_t));
	auto* out_p = reinterpret_cast<math::V3f*>(positions->data());
	auto* out_n = reinterpret_cast<math::V3f*>(normals->data());
	auto* out_c = reinterpret_cast<math::V4f*>(colors->data());
	auto* out_i = reinterpret_cast<uint32_t*>(index_bytes->data());
	uint32_t base = 0;
	for (const Source& s : sources)
	{
		const math::M33d normal_matrix = s.model.normalMatrix();
		for (size_t v = 0; v < s.vertices; ++v)
		{
			*out_p++ = math::V3f(s.model.transformPos(math::V3d(s.positions[v])));
			*out_n++ = math::V3f(normal_matrix * math::V3d(s.normals[v]));
			*out_c++ = s.color;
		}
		for (size_t i = 0; i < s.index_count; ++i)
			*out_i++ = base + s.indices[i];
		base += uint32_t(s.vertices);
	}

	auto effect = fx::compose("baked", fx::stock::trafo(), fx::stock::vertexColors(), fx::stock::simpleLighting());
	if (!effect.ok())
		return effect.error();
	auto view = [](std::shared_ptr<std::vector<std::byte>> data, VkFormat format)
	{
		scene::BufferView v;
		v.buffer = adaptive::constant(scene::ArrayBuffer{std::move(data)});
		v.format = format;
		return v;
	};
	scene::RenderObject o;
	o.effect = effect.value();
	o.state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
	o.attributes.emplace("Positions", view(positions, VK_FORMAT_R32G32B32_SFLOAT));
	o.attributes.emplace("Normals", view(normals, VK_FORMAT_R32G32B32_SFLOAT));
	o.attributes.emplace("Colors", view(colors, VK_FORMAT_R32G32B32A32_SFLOAT));
	o.indices = view(index_bytes, VK_FORMAT_R32_UINT);
	o.draw_call = adaptive::constant(scene::DrawCall{true, uint32_t(indices)});
	o.uniforms = g.uniforms();
	o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::identity());
	GeneratedScene out;
	out.objects.push_back(scene::makeRenderObject(std::move(o)));
	out.bounds = scene.bounds;
	out.triangles = indices / 3;
	return out;
}

/// The variants --path and --draw select, in report order; the baked floor is always measured (the ratios need it).
std::vector<Variant> variantsOf(const BenchOptions& b)
{
	std::vector<Variant> out;
	if (b.path.empty() || b.path == "classic")
		out.push_back({"classic", "classic", "per-object", runtime::RenderOptions::classic()});
	if (b.path.empty() || b.path == "heap")
	{
		const std::vector<heap::DrawStrategy> strategies =
		    b.draw.empty() || b.draw == "all"
		        ? std::vector<heap::DrawStrategy>{heap::DrawStrategy::Indirect, heap::DrawStrategy::Megacall,
		                                          heap::DrawStrategy::Auto}
		        : std::vector<heap::DrawStrategy>{heap::parseStrategy(b.draw).value()};
		for (heap::DrawStrategy s : strategies)
		{
			Variant v{std::string("heap-") + heap::strategyName(s), "heap", heap::strategyName(s), {}};
			v.options.path = runtime::RenderPath::Heap;
			v.options.heap.draw = s;
			applyHeapFlags(b, v.options.heap);
			out.push_back(std::move(v));
		}
	}
	out.push_back({"baked", "baked", "single", runtime::RenderOptions::classic()});
	return out;
}

nlohmann::ordered_json ratio(double x, double floor)
{
	return floor > 0.0 ? nlohmann::ordered_json(x / floor) : nlohmann::ordered_json();
}

} // namespace

int runBenchDraw(const BenchOptions& b)
{
	if (!b.path.empty() && b.path != "classic" && b.path != "heap")
		return usage("bench draw: unknown --path '" + b.path + "' (available: classic, heap)");
	if (!b.draw.empty() && b.draw != "all" && !heap::parseStrategy(b.draw).ok())
		return usage("bench draw: unknown --draw '" + b.draw + "' (available: all, auto, indirect, megacall)");
	auto device = createBenchDevice(b);
	if (!device.ok())
		return fail(device.error());
	gpu::Device& dev = *device.value();
	const bool cpu = dev.info().is_cpu;
	const std::vector<uint32_t> counts = benchObjectCounts(b, dev);
	const std::vector<Variant> variants = variantsOf(b);
	// Every variant's task is alive while the variants are measured (interleaved); the baked variant copies the scene.
	uint64_t host_per_object = 2 * kUniqueSceneHostBytes, device_per_object = 0;
	for (const Variant& v : variants)
	{
		const bool classic = v.path != "heap";
		host_per_object += classic ? kClassicTaskHostBytes : kHeapTaskHostBytes;
		device_per_object += classic ? kClassicTaskDeviceBytes : kHeapTaskDeviceBytes;
	}
	for (uint32_t n : counts)
		if (Result<void> fits = checkObjectsFit(dev, "bench draw", n, host_per_object, device_per_object); !fits.ok())
			return fail(fits.error());
	const char* timing = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	if (!b.json)
		std::printf("quokka bench draw on %s (%s timing), unique-mesh scene (10-100 triangles per object, seed 1), "
		            "%ux%u, %u rounds of one static frame per variant, interleaved (median; a warm-up frame each)\n",
		            dev.info().name.c_str(), timing, kWidth, kHeight, b.reps);

	nlohmann::ordered_json results = nlohmann::ordered_json::array();
	nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
	for (uint32_t n : counts)
	{
		SceneGlobals globals;
		auto made = makeUniqueMeshScene(globals, n, 1);
		if (!made.ok())
			return fail(made.error());
		const GeneratedScene& scene = made->scene;
		auto baked = bake(scene, globals);
		if (!baked.ok())
			return fail(baked.error());
		auto session = BenchSession::create(dev);
		if (!session.ok())
			return fail(session.error());
		if (!b.json)
			std::printf("\n  %u objects, %llu triangles\n  %-14s %10s %10s %10s %17s %10s %8s %10s %9s\n", n,
			            (unsigned long long)scene.triangles, "variant", "update ms", "encode ms", "GPU ms",
			            "GPU min..max", "frame ms", "draws", "GPU/baked", "GPU/best");
		std::vector<const Variant*> chosen;
		std::vector<Contender> contenders;
		for (const Variant& v : variants)
		{
			if (v.path == "classic" && n > kClassicMaxObjects)
			{
				skipped.push_back(
				    {{"name", v.name}, {"objects", n}, {"reason", "the classic path is skipped above 100000 objects"}});
				continue;
			}
			chosen.push_back(&v);
			contenders.push_back({v.path == "baked" ? &baked.value() : &scene, v.options});
		}
		auto figures = measureInterleaved(dev, *session, globals, scene.bounds, contenders, b.reps);
		if (!figures.ok())
			return fail(figures.error());
		std::vector<std::pair<const Variant*, Figures>> measured;
		for (size_t i = 0; i < chosen.size(); ++i)
			measured.emplace_back(chosen[i], (*figures)[i]);
		const double floor = measured.back().second.gpu_ms; // baked is always last
		const auto best =
		    std::min_element(measured.begin(), measured.end(),
		                     [](const auto& x, const auto& y) { return x.second.gpu_ms < y.second.gpu_ms; });
		const double fastest = best->second.gpu_ms;
		for (const auto& [v, f] : measured)
		{
			nlohmann::ordered_json row;
			row["name"] = v->name;
			row["path"] = v->path;
			row["draw"] = v->draw;
			row["objects"] = n;
			row["cpu_update_ms"] = f.update_ms;
			row["cpu_encode_ms"] = f.encode_ms;
			row["gpu_ms"] = f.gpu_ms;
			row["gpu_min_ms"] = f.gpu_min_ms;
			row["gpu_max_ms"] = f.gpu_max_ms;
			row["frame_ms"] = f.frame_ms;
			row["cpu_frame_ms"] = f.cpu_frames;
			row["draw_calls"] = f.draw_calls;
			row["gpu_vs_baked"] = ratio(f.gpu_ms, floor);
			row["gpu_vs_best"] = ratio(f.gpu_ms, fastest);
			row["best"] = best->first->name;
			if (v->path == "heap")
				row["heap"] = {{"slots", f.heap.slots},
				               {"indirect_slots", f.heap.indirect_slots},
				               {"megacall_slots", f.heap.megacall_slots},
				               {"chunks", f.heap.chunks},
				               {"arena_bytes", f.heap.arena_bytes}};
			if (!b.json)
				std::printf("  %-14s %10.3f %10.3f %10.3f %8.3f..%-8.3f %10.3f %8u %10.2f %9.2f\n", v->name.c_str(),
				            f.update_ms, f.encode_ms, f.gpu_ms, f.gpu_min_ms, f.gpu_max_ms, f.frame_ms, f.draw_calls,
				            floor > 0.0 ? f.gpu_ms / floor : 0.0, fastest > 0.0 ? f.gpu_ms / fastest : 0.0);
			results.push_back(std::move(row));
		}
		if (!b.json && n > kClassicMaxObjects && (b.path.empty() || b.path == "classic"))
			std::printf("  classic skipped: %u objects is above %u (one draw per object)\n", n, kClassicMaxObjects);
	}

	// Crossover: indirect vs megacall on the heap at fixed triangle counts (what HeapTuning::megacall_below, in
	// emitted vertices = 3 × triangles, is chosen from). The object count follows a smaller --objects.
	nlohmann::ordered_json crossover = nlohmann::ordered_json::array();
	const bool heap_included = b.path.empty() || b.path == "heap";
	if (heap_included && (b.draw.empty() || b.draw == "all" || b.draw == "auto"))
	{
		uint32_t n = cpu ? 5000 : 100000;
		if (!b.objects.empty())
			n = std::min(n, *std::max_element(b.objects.begin(), b.objects.end()));
		if (!b.json)
			std::printf("\n  crossover, heap at %u objects: GPU ms per frame (megacall_below = %u emitted vertices)\n"
			            "  %10s %10s %12s %12s %10s %10s\n",
			            n, heap::HeapTuning{}.megacall_below, "triangles", "vertices", "indirect", "megacall",
			            "mega/ind", "auto");
		auto session = BenchSession::create(dev);
		if (!session.ok())
			return fail(session.error());
		for (uint32_t triangles : kCrossoverTriangles)
		{
			SceneGlobals globals;
			UniqueMeshOptions u;
			u.triangles = triangles;
			auto made = makeUniqueMeshScene(globals, n, 2, u);
			if (!made.ok())
				return fail(made.error());
			// Indirect and megacall interleaved; auto only for what it picks (in its warm-up frame's update).
			std::vector<Contender> contenders;
			for (heap::DrawStrategy d :
			     {heap::DrawStrategy::Indirect, heap::DrawStrategy::Megacall, heap::DrawStrategy::Auto})
			{
				runtime::RenderOptions options;
				options.path = runtime::RenderPath::Heap;
				options.heap.draw = d;
				applyHeapFlags(b, options.heap);
				contenders.push_back({&made->scene, options});
			}
			auto f = measureInterleaved(dev, *session, globals, made->scene.bounds, contenders, b.reps);
			if (!f.ok())
				return fail(f.error());
			const double ms[2] = {(*f)[0].gpu_ms, (*f)[1].gpu_ms};
			const heap::HeapStats& a = (*f)[2].heap;
			const std::string picked = a.megacall_slots == 0   ? "indirect"
			                           : a.indirect_slots == 0 ? "megacall"
			                                                   : "mixed";
			crossover.push_back({{"triangles", triangles},
			                     {"vertices_per_record", 3 * triangles},
			                     {"indirect_gpu_ms", ms[0]},
			                     {"megacall_gpu_ms", ms[1]},
			                     {"megacall_vs_indirect", ratio(ms[1], ms[0])},
			                     {"auto_picks", picked}});
			if (!b.json)
				std::printf("  %10u %10u %12.3f %12.3f %10.2f %10s\n", triangles, 3 * triangles, ms[0], ms[1],
				            ms[0] > 0.0 ? ms[1] / ms[0] : 0.0, picked.c_str());
		}
	}

	if (b.json)
	{
		nlohmann::ordered_json j;
		j["device"] = dev.info().name;
		j["device_type"] = cpu ? "cpu" : "gpu";
		j["timing_source"] = timing;
		j["bench"] = "draw";
		j["reps"] = b.reps;
		j["results"] = std::move(results);
		j["skipped"] = std::move(skipped);
		j["crossover"] = std::move(crossover);
		std::printf("%s\n", j.dump(2).c_str());
	}
	return validationExit(dev);
}

} // namespace quokka::app
