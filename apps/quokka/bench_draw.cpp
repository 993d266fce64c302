// `quokka bench draw` (issues #4, #5): frame cost of the unique-mesh scene (scene_unique.cpp) on the classic path,
// on the heap path with each draw strategy, and of the baked floor — every object pre-transformed into one mesh drawn
// with one draw, the least work any renderer of that scene can do. Per object count and variant: medians of the CPU
// update, CPU encode, GPU and frame times of R static frames (the first, preparing frame dropped), draw calls, and
// GPU time over the floor's, measured in the same run. Then the crossover study behind
// HeapTuning::megacall_below: heap GPU time of indirect vs megacall at 4, 12, 32 and 100 triangles per object.
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
	uint32_t draw_calls = 0;
	heap::HeapStats heap; ///< the last frame's (heap rows)
};

double medianAfterFirst(std::vector<double> v)
{
	if (v.size() > 1)
		v.erase(v.begin()); // the first frame compiles, creates pipelines and uploads everything
	return median(std::move(v));
}

Result<Figures> measure(gpu::Device& device, runtime::Runtime& rt, runtime::Framebuffer& fb,
                        const GeneratedScene& scene, SceneGlobals& g, uint32_t reps,
                        const runtime::RenderOptions& options)
{
	QUOKKA_TRY_ASSIGN(run, runFrames(device, rt, fb, scene, g, reps + 1, false, options));
	Figures f;
	f.update_ms = medianAfterFirst(run.update_ms);
	f.encode_ms = medianAfterFirst(run.frames.encode_ms);
	f.gpu_ms = medianAfterFirst(run.gpu_ms);
	f.frame_ms = medianAfterFirst(run.frames.frame_ms);
	f.draw_calls = run.last.passes.draws + run.last.heap.draw_calls;
	f.heap = run.last.heap;
	return f;
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
		out.push_back({"classic", "classic", "per-object", {}});
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
			v.options.heap.max_chunk_bytes = b.max_chunk_bytes;
			out.push_back(std::move(v));
		}
	}
	out.push_back({"baked", "baked", "single", {}});
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
	const char* timing = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	if (!b.json)
		std::printf("quokka bench draw on %s (%s timing), unique-mesh scene (10-100 triangles per object, seed 1), "
		            "%ux%u, %u static frames per figure (median, first frame dropped)\n",
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
		runtime::Runtime& rt = *session->runtime;
		runtime::Framebuffer& fb = session->framebuffer;
		if (!b.json)
			std::printf("\n  %u objects, %llu triangles\n  %-14s %10s %10s %10s %10s %8s %10s\n", n,
			            (unsigned long long)scene.triangles, "variant", "update ms", "encode ms", "GPU ms", "frame ms",
			            "draws", "GPU/baked");
		std::vector<std::pair<const Variant*, Figures>> measured;
		for (const Variant& v : variants)
		{
			if (v.path == "classic" && n > kClassicMaxObjects)
			{
				skipped.push_back(
				    {{"name", v.name}, {"objects", n}, {"reason", "the classic path is skipped above 100000 objects"}});
				continue;
			}
			auto f = measure(dev, rt, fb, v.path == "baked" ? baked.value() : scene, globals, b.reps, v.options);
			if (!f.ok())
				return fail(f.error());
			measured.emplace_back(&v, f.value());
		}
		const double floor = measured.back().second.gpu_ms; // baked is always last
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
			row["frame_ms"] = f.frame_ms;
			row["draw_calls"] = f.draw_calls;
			row["gpu_vs_baked"] = ratio(f.gpu_ms, floor);
			if (v->path == "heap")
				row["heap"] = {{"slots", f.heap.slots},
				               {"indirect_slots", f.heap.indirect_slots},
				               {"megacall_slots", f.heap.megacall_slots},
				               {"chunks", f.heap.chunks},
				               {"arena_bytes", f.heap.arena_bytes}};
			if (!b.json)
				std::printf("  %-14s %10.3f %10.3f %10.3f %10.3f %8u %10.2f\n", v->name.c_str(), f.update_ms,
				            f.encode_ms, f.gpu_ms, f.frame_ms, f.draw_calls, floor > 0.0 ? f.gpu_ms / floor : 0.0);
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
		runtime::Runtime& rt = *session->runtime;
		runtime::Framebuffer& fb = session->framebuffer;
		for (uint32_t triangles : kCrossoverTriangles)
		{
			SceneGlobals globals;
			UniqueMeshOptions u;
			u.triangles = triangles;
			auto made = makeUniqueMeshScene(globals, n, 2, u);
			if (!made.ok())
				return fail(made.error());
			double ms[2] = {};
			std::string picked;
			for (int i = 0; i < 3; ++i)
			{
				runtime::RenderOptions options;
				options.path = runtime::RenderPath::Heap;
				options.heap.draw = i == 0   ? heap::DrawStrategy::Indirect
				                    : i == 1 ? heap::DrawStrategy::Megacall
				                             : heap::DrawStrategy::Auto;
				options.heap.max_chunk_bytes = b.max_chunk_bytes;
				// Auto only for what it picks: one frame suffices (the strategy is chosen in the first update).
				auto f = measure(dev, rt, fb, made->scene, globals, i < 2 ? b.reps : 0, options);
				if (!f.ok())
					return fail(f.error());
				if (i < 2)
					ms[i] = f->gpu_ms;
				else
					picked = f->heap.megacall_slots == 0   ? "indirect"
					         : f->heap.indirect_slots == 0 ? "megacall"
					                                       : "mixed";
			}
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
