// `quokka bench camera`: what a camera move costs. The unique-mesh scene (constant ModelTrafos) is placed, then R
// static frames and R camera frames (the view orbits by 0.5° per frame) are timed, per object count, per effect and
// per render path:
//   stock    — the stock trafo + constantColor + simpleLighting: the shader multiplies ViewProjTrafo by ModelTrafo, so
//              a camera move changes one shared value;
//   derived  — an effect reading ModelViewProjTrafo and ModelViewTrafo: each object's own derived values, which a
//              camera move changes for every object.
// Reported per row: the CPU update of a static and of a camera frame (µs), GPU time and frame time of each, the bytes a
// camera frame uploads (uniform values re-uploaded; heap: bytes staged too), the camera frame's time over the static
// frame's, and the GPU time of the heap's derive dispatches (timestamps around them, where the device's are trusted).
//
// `quokka bench chain`: what moving the root of a hierarchy costs. The same scene's objects hang below a D-deep
// transform chain (scene/trafo_chain.hpp: a root, D − 2 nodes, each object's own trafo as its leaf); the root turns
// 0.5° about the scene's centre per moving frame. Reported like bench camera, with the chain links the heap composes on
// the device and the GPU time of its chain and derive dispatches.
#include "bench_copy.hpp"
#include "commands.hpp"
#include "render_common.hpp"
#include "scene_run.hpp"
#include "scenes.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>

#include <nlohmann/json.hpp>

#include <quokka/fx/stock.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/runtime/runtime.hpp>
#include <quokka/scene/trafo_chain.hpp>

namespace quokka::app
{

namespace
{

struct Figures
{
	double update_us = 0, encode_us = 0, gpu_ms = 0, frame_ms = 0;
	/// Parts of update_us: the heap scenes' update(), upload() and prepare() (the chain, derive and scan dispatches'
	/// recording), and the runtime context's staging flush.
	double heap_update_us = 0, heap_upload_us = 0, heap_prepare_us = 0, flush_us = 0;
	uint64_t upload_bytes = 0;    ///< heap path: bytes staged
	uint64_t uniform_uploads = 0; ///< uniform values (heap) or blocks (classic) re-uploaded
	/// GPU time of the heap's derive dispatches (timestamps around them); -1 where none ran or the device's
	/// timestamps are not trusted (lavapipe)
	double derive_ms = -1.0;
	uint64_t derive_bytes = 0; ///< what a derive dispatch over every record reads and writes (HeapStats)
	uint32_t chain_links = 0, chain_levels = 0; ///< HeapStats
};

nlohmann::ordered_json figuresJson(const Figures& f)
{
	return nlohmann::ordered_json{
	    {"update_us", f.update_us},
	    {"heap_update_us", f.heap_update_us},
	    {"heap_upload_us", f.heap_upload_us},
	    {"heap_prepare_us", f.heap_prepare_us},
	    {"flush_us", f.flush_us},
	    {"encode_us", f.encode_us},
	    {"gpu_ms", f.gpu_ms},
	    {"frame_ms", f.frame_ms},
	    {"upload_bytes", f.upload_bytes},
	    {"uniform_uploads", f.uniform_uploads},
	    {"derive_gpu_ms", f.derive_ms >= 0.0 ? nlohmann::ordered_json(f.derive_ms) : nlohmann::ordered_json()}};
}

/// The derive (and chain) dispatches of a moving frame: GPU time, bytes, throughput against the copy bandwidth.
nlohmann::ordered_json deriveJson(const Figures& moving, double copy_gb_per_s)
{
	if (!(moving.derive_ms > 0.0))
		return nullptr;
	const double gbs = double(moving.derive_bytes) / (moving.derive_ms * 1e6);
	return {{"gpu_ms", moving.derive_ms},
	        {"bytes", moving.derive_bytes},
	        {"gb_per_s", gbs},
	        {"fraction_of_copy_bandwidth", copy_gb_per_s > 0.0 ? gbs / copy_gb_per_s : 0.0}};
}

/// The effect reading each object's ModelViewProjTrafo and ModelViewTrafo: a view-space normal lit by a headlight.
fx::Effect derivedEffect()
{
	auto vertex = std::make_shared<const fx::Stage>(
	    fx::Stage::vertex("bench.modelViewProj")
	        .reads({{"Positions", fx::V4f}, {"Normals", fx::V3f}})
	        .writes({{"Positions", fx::V4f}, {"Normals", fx::V3f}})
	        .uniforms({"ModelViewProjTrafo", "ModelViewTrafo"})
	        .glsl(
	            "\ts.Normals = mat3(ModelViewTrafo) * s.Normals;\n\ts.Positions = ModelViewProjTrafo * s.Positions;"));
	auto headlight = std::make_shared<const fx::Stage>(
	    fx::Stage::fragment("bench.headlight")
	        .reads({{"Normals", fx::V3f}, {"Colors", fx::V4f}})
	        .writes({{"Colors", fx::V4f}})
	        .glsl("\ts.Colors = vec4(s.Colors.rgb * (0.3 + 0.7 * abs(normalize(s.Normals).z)), s.Colors.a);"));
	auto effect = fx::composeEffect("bench.derived", {vertex, fx::stock::constantColor(), headlight});
	QUOKKA_ASSERT(effect.ok(), "bench camera: the derived effect composes");
	return effect.value();
}

/// The camera orbiting `bounds` from 35° above the horizon, at `azimuth` radians.
void placeCamera(SceneGlobals& g, const math::Box3d& bounds, double azimuth)
{
	const math::V3d c = bounds.center();
	const double r = std::max(0.5 * glm::length(bounds.size()), 1e-3);
	const double e = 35.0 * std::numbers::pi / 180.0;
	const math::V3d eye =
	    c + 1.9 * r * math::V3d(std::cos(e) * std::cos(azimuth), std::sin(e), std::cos(e) * std::sin(azimuth));
	g.view.setValue(math::lookAt(eye, c, math::V3d(0, 1, 0)));
	g.proj.setValue(math::perspective(50.0 * std::numbers::pi / 180.0, double(kBenchWidth) / double(kBenchHeight),
	                                  0.02 * r, 10.0 * r));
	g.light_location.setValue(math::V3f(eye + math::V3d(0.0, r, 0.0)));
}

struct Row
{
	uint32_t objects;
	std::string effect, path;
	double place_ms;
	Figures still, moving;
};

/// Places `objects` with `options`, then times `reps` static and `reps` moving frames: `move(step)` (called in a
/// transaction) sets what moves to its state at `step` (0 before the first frame, then one step per moving frame).
Result<Row> measure(gpu::Device& device, BenchSession& session, const std::vector<scene::RenderObjectPtr>& objects,
                    const runtime::RenderOptions& options, uint32_t reps, const std::function<void(int)>& move)
{
	auto task = benchTask(session, objects, options);
	gpu::FrameTimer timer(device), derive_timer(device);
	int step = 0;
	adaptive::transact([&] { move(step); });
	auto frame = [&](bool moving) -> Result<Figures>
	{
		if (moving)
			adaptive::transact([&] { move(++step); });
		// (The heap scenes exist from the first frame on: the derive dispatches of every later one are timed.)
		for (heap::HeapScene* h : task->heapScenes())
			h->setDeriveTimer(&derive_timer);
		QUOKKA_TRY_ASSIGN(timed, timedFrame(device, timer, *task, session.framebuffer));
		Figures f;
		f.frame_ms = timed.wall_ms;
		const gpu::FrameTiming& timing = timed.timing;
		const runtime::TaskStats& s = task->stats();
		f.update_us = 1000.0 * s.update_ms;
		f.heap_update_us = 1000.0 * s.heap.update_ms;
		f.heap_upload_us = 1000.0 * s.heap.upload_ms;
		f.heap_prepare_us = 1000.0 * s.heap.prepare_ms;
		f.flush_us = 1000.0 * s.flush_ms;
		f.encode_us = 1000.0 * s.encode_ms;
		f.gpu_ms = timing.ms;
		f.upload_bytes = s.heap.upload_bytes;
		f.uniform_uploads = s.heap.uniform_uploads + s.passes.uniform_uploads;
		f.derive_bytes = s.heap.derive_bytes;
		f.chain_links = s.heap.chain_links;
		f.chain_levels = s.heap.chain_levels;
		if (s.heap.derive_dispatches > 0 && derive_timer.source() == gpu::TimingSource::Gpu)
		{
			QUOKKA_TRY_ASSIGN(d, derive_timer.resolve());
			f.derive_ms = d.gpu_ms;
		}
		return f;
	};
	Row row{uint32_t(objects.size()), "", options.path == runtime::RenderPath::Heap ? "heap" : "classic", 0, {}, {}};
	QUOKKA_TRY_ASSIGN(place, frame(false));
	row.place_ms = place.update_us / 1000.0;
	QUOKKA_TRY(frame(false)); // the placement frame's deferred work stays out of the figures
	QUOKKA_TRY(frame(true));  // the first move builds what later moves reuse
	auto series = [&](bool moving) -> Result<Figures>
	{
		std::vector<double> update, encode, gpu, wall, derive, heap_update, heap_upload, heap_prepare, flush;
		uint64_t bytes = 0, uploads = 0;
		for (uint32_t r = 0; r < reps; ++r)
		{
			QUOKKA_TRY_ASSIGN(f, frame(moving));
			if (f.derive_ms >= 0.0)
				derive.push_back(f.derive_ms);
			update.push_back(f.update_us);
			heap_update.push_back(f.heap_update_us);
			heap_upload.push_back(f.heap_upload_us);
			heap_prepare.push_back(f.heap_prepare_us);
			flush.push_back(f.flush_us);
			encode.push_back(f.encode_us);
			gpu.push_back(f.gpu_ms);
			wall.push_back(f.frame_ms);
			bytes = std::max(bytes, f.upload_bytes);
			uploads = std::max(uploads, f.uniform_uploads);
		}
		Figures m;
		m.update_us = median(update);
		m.encode_us = median(encode);
		m.gpu_ms = median(gpu);
		m.frame_ms = median(wall);
		m.heap_update_us = median(heap_update);
		m.heap_upload_us = median(heap_upload);
		m.heap_prepare_us = median(heap_prepare);
		m.flush_us = median(flush);
		m.upload_bytes = bytes;
		m.uniform_uploads = uploads;
		m.derive_ms = derive.empty() ? -1.0 : median(derive);
		m.derive_bytes = task->stats().heap.derive_bytes;
		m.chain_links = task->stats().heap.chain_links;
		m.chain_levels = task->stats().heap.chain_levels;
		return m;
	};
	QUOKKA_TRY_ASSIGN(still, series(false));
	QUOKKA_TRY_ASSIGN(moving, series(true));
	row.still = still;
	row.moving = moving;
	return row;
}

/// The device's copy bandwidth in GB/s (the better of a transfer and a compute copy), against which the derive
/// kernel's throughput is reported; 0 where GPU timestamps are not trusted.
Result<double> deviceCopyBandwidth(gpu::Device& dev)
{
	if (!dev.info().gpu_timestamps_reliable)
		return 0.0;
	gpu::FrameTimer copy_timer(dev);
	const uint64_t bytes = std::min<uint64_t>(256ull << 20, dev.info().max_storage_buffer_range);
	QUOKKA_TRY_ASSIGN(transfer, copyBandwidth(dev, copy_timer, bytes, 3));
	QUOKKA_TRY_ASSIGN(compute, computeCopyBandwidth(dev, copy_timer, bytes, 3));
	return std::max(transfer, compute);
}

/// What bench camera and bench chain start with: the options checked, the device, the object counts, a session and
/// the device's copy bandwidth. Errors: InvalidArgument for a usage error (the message says which), else as the
/// device.
struct Start
{
	std::unique_ptr<gpu::Device> device;
	std::vector<uint32_t> counts;
	BenchSession session;
	double copy_gb_per_s = 0.0;

	static Result<Start> of(const BenchOptions& b, const std::string& name)
	{
		if (!b.path.empty() && b.path != "heap" && b.path != "classic")
			return makeError(ErrorCode::InvalidArgument,
			                 "bench " + name + ": --path '" + b.path + "' is not a path (classic, heap)");
		QUOKKA_TRY_ASSIGN(device, createBenchDevice(b));
		std::vector<uint32_t> counts = benchObjectCounts(b, *device);
		for (uint32_t n : counts)
			if (n < 1 || n > 10'000'000)
				return makeError(ErrorCode::InvalidArgument,
				                 "bench " + name + ": --objects " + std::to_string(n) + " is outside 1…10,000,000");
		QUOKKA_TRY_ASSIGN(session, BenchSession::create(*device));
		QUOKKA_TRY_ASSIGN(copy, deviceCopyBandwidth(*device));
		return Start{std::move(device), std::move(counts), std::move(session), copy};
	}
};

/// The run's JSON object on stdout: the benchmark, the device, the timing source, the settings and the rows.
void printJson(const char* name, const gpu::Device& dev, const BenchOptions& b, double copy_gb_per_s,
               nlohmann::ordered_json rows)
{
	nlohmann::ordered_json j;
	j["benchmark"] = name;
	j["device"] = dev.info().name;
	j["timing_source"] = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	j["reps"] = b.reps;
	if (std::string(name) == "chain")
		j["depth"] = b.depth;
	j["copy_gb_per_s"] = copy_gb_per_s > 0.0 ? nlohmann::ordered_json(copy_gb_per_s) : nlohmann::ordered_json();
	j["rows"] = std::move(rows);
	std::printf("%s\n", j.dump(2).c_str());
}

} // namespace

int runBenchCamera(const BenchOptions& b)
{
	auto started = Start::of(b, "camera");
	if (!started.ok())
		return started.error().code == ErrorCode::InvalidArgument ? usage(started.error().message)
		                                                          : fail(started.error());
	auto& [device, counts, session, copy_gb_per_s] = *started;
	gpu::Device& dev = *device;
	const char* timing = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	const fx::Effect derived = derivedEffect();
	if (!b.json)
		std::printf("quokka bench camera on %s (%s timing), unique-mesh scene, %u static and %u camera frames per row "
		            "(median; the camera orbits 0.5 degrees per frame)\n\n  %9s %-8s %-8s %10s %12s %12s %10s %10s "
		            "%11s %11s %14s %8s %10s\n",
		            dev.info().name.c_str(), timing, b.reps, b.reps, "objects", "effect", "path", "place ms",
		            "static us", "camera us", "static gpu", "camera gpu", "static wall", "camera wall",
		            "camera uploads", "ratio", "derive ms");
	nlohmann::ordered_json rows = nlohmann::ordered_json::array();
	for (uint32_t n : counts)
	{
		SceneGlobals globals;
		auto made = makeUniqueMeshScene(globals, n, 1);
		if (!made.ok())
			return fail(made.error());
		const GeneratedScene& scene = made->scene;
		std::vector<scene::RenderObjectPtr> reading;
		reading.reserve(scene.objects.size());
		for (const scene::RenderObjectPtr& o : scene.objects)
		{
			scene::RenderObject copy = *o;
			copy.effect = derived;
			reading.push_back(scene::makeRenderObject(std::move(copy)));
		}
		for (const char* effect : {"stock", "derived"})
			for (const char* path : {"heap", "classic"})
			{
				if (!b.path.empty() && b.path != path)
					continue;
				if (b.path.empty() && std::string(path) == "classic" && n > 100000)
					continue; // (the classic path's first frame at 10^6 takes minutes; ask for it with --path)
				runtime::RenderOptions options = runtime::RenderOptions::classic();
				if (std::string(path) == "heap")
				{
					options.path = runtime::RenderPath::Heap;
					applyHeapFlags(b, options.heap);
				}
				auto row = measure(
				    dev, session, std::string(effect) == "stock" ? scene.objects : reading, options, b.reps,
				    [&](int step) { placeCamera(globals, scene.bounds, 0.6 + step * 0.5 * std::numbers::pi / 180.0); });
				if (!row.ok())
					return fail(row.error());
				row->effect = effect;
				const double ratio = row->still.frame_ms > 0 ? row->moving.frame_ms / row->still.frame_ms : 0.0;
				if (!b.json)
				{
					const std::string derive =
					    row->moving.derive_ms >= 0.0 ? std::to_string(row->moving.derive_ms) : std::string("-");
					std::printf("  %9u %-8s %-8s %10.1f %12.1f %12.1f %10.3f %10.3f %11.3f %11.3f %14llu %8.2f %10s\n",
					            n, effect, path, row->place_ms, row->still.update_us, row->moving.update_us,
					            row->still.gpu_ms, row->moving.gpu_ms, row->still.frame_ms, row->moving.frame_ms,
					            (unsigned long long)row->moving.uniform_uploads, ratio, derive.c_str());
				}
				rows.push_back({{"objects", n},
				                {"effect", effect},
				                {"path", path},
				                {"place_ms", row->place_ms},
				                {"static", figuresJson(row->still)},
				                {"camera", figuresJson(row->moving)},
				                {"camera_vs_static_frame", ratio},
				                {"derive_on_camera_frame", deriveJson(row->moving, copy_gb_per_s)}});
			}
	}
	if (b.json)
		printJson("camera", dev, b, copy_gb_per_s, std::move(rows));
	return 0;
}

int runBenchChain(const BenchOptions& b)
{
	if (b.depth < 2 || b.depth > 64)
		return usage("bench chain: --depth " + std::to_string(b.depth) + " is outside 2…64");
	auto started = Start::of(b, "chain");
	if (!started.ok())
		return started.error().code == ErrorCode::InvalidArgument ? usage(started.error().message)
		                                                          : fail(started.error());
	auto& [device, counts, session, copy_gb_per_s] = *started;
	gpu::Device& dev = *device;
	const char* timing = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	if (!b.json)
		std::printf("quokka bench chain on %s (%s timing), unique-mesh scene below a %u-deep hierarchy (its root turns "
		            "0.5 degrees per frame), %u static and %u root-move frames per row (median)\n\n  %9s %-8s %10s "
		            "%12s %12s %10s %10s %9s %9s %10s\n",
		            dev.info().name.c_str(), timing, b.depth, b.reps, b.reps, "objects", "path", "place ms",
		            "static us", "move us", "static gpu", "move gpu", "uploads", "links", "derive ms");
	nlohmann::ordered_json rows = nlohmann::ordered_json::array();
	for (uint32_t n : counts)
	{
		SceneGlobals globals;
		auto made = makeUniqueMeshScene(globals, n, 1);
		if (!made.ok())
			return fail(made.error());
		const GeneratedScene& scene = made->scene;
		// The hierarchy: a root, depth − 2 nodes below it, and each object's own trafo as its leaf.
		const adaptive::cval<math::Trafo3d> root(math::Trafo3d::identity());
		std::vector<adaptive::cval<math::Trafo3d>> spine;
		scene::TrafoChain chain = scene::TrafoChain::root(root);
		for (uint32_t d = 2; d < b.depth; ++d)
			chain = chain.child(spine.emplace_back(math::Trafo3d::identity()));
		std::vector<scene::RenderObjectPtr> objects;
		objects.reserve(scene.objects.size());
		for (const scene::RenderObjectPtr& o : scene.objects)
		{
			scene::RenderObject copy = *o;
			const math::Trafo3d own = inputs::trafoOf(o->uniforms.at("ModelTrafo").force());
			copy.uniforms["ModelTrafo"] = chain.child(adaptive::constant(own)).world();
			objects.push_back(scene::makeRenderObject(std::move(copy)));
		}
		const math::V3d c = scene.bounds.center();
		adaptive::transact([&] { placeCamera(globals, scene.bounds, 0.6); });
		for (const char* path : {"heap", "classic"})
		{
			if (!b.path.empty() && b.path != path)
				continue;
			if (b.path.empty() && std::string(path) == "classic" && n > 100000)
				continue; // (as bench camera)
			runtime::RenderOptions options = runtime::RenderOptions::classic();
			if (std::string(path) == "heap")
			{
				options.path = runtime::RenderPath::Heap;
				applyHeapFlags(b, options.heap);
			}
			auto row = measure(
			    dev, session, objects, options, b.reps,
			    [&](int step)
			    {
				    root.setValue(math::Trafo3d::translation(c) *
				                  math::Trafo3d::rotation(math::V3d(0, 1, 0), step * 0.5 * std::numbers::pi / 180.0) *
				                  math::Trafo3d::translation(-c));
			    });
			if (!row.ok())
				return fail(row.error());
			if (!b.json)
			{
				const std::string derive =
				    row->moving.derive_ms >= 0.0 ? std::to_string(row->moving.derive_ms) : std::string("-");
				std::printf("  %9u %-8s %10.1f %12.1f %12.1f %10.3f %10.3f %9llu %9u %10s\n", n, path, row->place_ms,
				            row->still.update_us, row->moving.update_us, row->still.gpu_ms, row->moving.gpu_ms,
				            (unsigned long long)row->moving.uniform_uploads, row->moving.chain_links, derive.c_str());
			}
			rows.push_back({{"objects", n},
			                {"depth", b.depth},
			                {"path", path},
			                {"place_ms", row->place_ms},
			                {"chain_links", row->moving.chain_links},
			                {"chain_levels", row->moving.chain_levels},
			                {"static", figuresJson(row->still)},
			                {"root_move", figuresJson(row->moving)},
			                {"derive_on_root_move", deriveJson(row->moving, copy_gb_per_s)}});
		}
	}
	if (b.json)
		printJson("chain", dev, b, copy_gb_per_s, std::move(rows));
	return 0;
}

} // namespace quokka::app
