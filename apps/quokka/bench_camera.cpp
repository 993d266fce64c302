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
#include "bench_copy.hpp"
#include "commands.hpp"
#include "render_common.hpp"
#include "scene_run.hpp"
#include "scenes.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>

#include <nlohmann/json.hpp>

#include <quokka/fx/stock.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/runtime/runtime.hpp>

namespace quokka::app
{

namespace
{

struct Figures
{
	double update_us = 0, encode_us = 0, gpu_ms = 0, frame_ms = 0;
	uint64_t upload_bytes = 0;    ///< heap path: bytes staged
	uint64_t uniform_uploads = 0; ///< uniform values (heap) or blocks (classic) re-uploaded
	/// GPU time of the heap's derive dispatches (timestamps around them); -1 where none ran or the device's
	/// timestamps are not trusted (lavapipe)
	double derive_ms = -1.0;
	uint64_t derive_bytes = 0; ///< what a derive dispatch over every record reads and writes (HeapStats)
};

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

/// Places `objects` with `options`, then times `reps` static and `reps` camera frames.
Result<Row> measure(gpu::Device& device, BenchSession& session, SceneGlobals& g, const GeneratedScene& scene,
                    const std::vector<scene::RenderObjectPtr>& objects, const runtime::RenderOptions& options,
                    uint32_t reps)
{
	adaptive::cset<scene::RenderObjectPtr> set;
	adaptive::transact([&] { set.unionWith(objects); });
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0.06f, 0.07f, 0.09f, 1.0f)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(set)});
	auto task = session.runtime->compile(session.framebuffer.signature, commands, options);
	gpu::FrameTimer timer(device), derive_timer(device);
	for (heap::HeapScene* h : task->heapScenes())
		h->setDeriveTimer(&derive_timer);
	double azimuth = 0.6;
	adaptive::transact([&] { placeCamera(g, scene.bounds, azimuth); });
	auto frame = [&](bool move) -> Result<Figures>
	{
		if (move)
		{
			azimuth += 0.5 * std::numbers::pi / 180.0;
			adaptive::transact([&] { placeCamera(g, scene.bounds, azimuth); });
		}
		const auto t0 = std::chrono::steady_clock::now();
		QUOKKA_TRY_ASSIGN(list, device.beginCommands());
		timer.begin(list);
		QUOKKA_TRY(task->run(list, session.framebuffer));
		timer.end(list);
		QUOKKA_TRY(device.submitAndWait(std::move(list)));
		Figures f;
		f.frame_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
		QUOKKA_TRY_ASSIGN(timing, timer.resolve());
		const runtime::TaskStats& s = task->stats();
		f.update_us = 1000.0 * s.update_ms;
		f.encode_us = 1000.0 * s.encode_ms;
		f.gpu_ms = timing.ms;
		f.upload_bytes = s.heap.upload_bytes;
		f.uniform_uploads = s.heap.uniform_uploads + s.passes.uniform_uploads;
		f.derive_bytes = s.heap.derive_bytes;
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
	auto series = [&](bool move) -> Result<Figures>
	{
		std::vector<double> update, encode, gpu, wall, derive;
		uint64_t bytes = 0, uploads = 0;
		for (uint32_t r = 0; r < reps; ++r)
		{
			QUOKKA_TRY_ASSIGN(f, frame(move));
			update.push_back(f.update_us);
			encode.push_back(f.encode_us);
			gpu.push_back(f.gpu_ms);
			wall.push_back(f.frame_ms);
			bytes = std::max(bytes, f.upload_bytes);
			uploads = std::max(uploads, f.uniform_uploads);
		}
		return Figures{median(update),
		               median(encode),
		               median(gpu),
		               median(wall),
		               bytes,
		               uploads,
		               derive.empty() ? -1.0 : median(derive),
		               task->stats().heap.derive_bytes};
	};
	QUOKKA_TRY_ASSIGN(still, series(false));
	QUOKKA_TRY_ASSIGN(moving, series(true));
	row.still = still;
	row.moving = moving;
	return row;
}

} // namespace

int runBenchCamera(const BenchOptions& b)
{
	if (!b.path.empty() && b.path != "heap" && b.path != "classic")
		return usage("bench camera: --path '" + b.path + "' is not a path (classic, heap)");
	auto device = createBenchDevice(b);
	if (!device.ok())
		return fail(device.error());
	gpu::Device& dev = *device.value();
	const std::vector<uint32_t> counts = benchObjectCounts(b, dev);
	for (uint32_t n : counts)
		if (n < 1 || n > 10'000'000)
			return usage("bench camera: --objects " + std::to_string(n) + " is outside 1…10,000,000");
	auto session = BenchSession::create(dev);
	if (!session.ok())
		return fail(session.error());
	const fx::Effect derived = derivedEffect();
	const char* timing = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	// The derive kernel's throughput is reported against the device's copy bandwidth (GPU timestamps only).
	double copy_gb_per_s = 0.0;
	if (dev.info().gpu_timestamps_reliable)
	{
		gpu::FrameTimer copy_timer(dev);
		const uint64_t bytes = std::min<uint64_t>(256ull << 20, dev.info().max_storage_buffer_range);
		auto transfer = copyBandwidth(dev, copy_timer, bytes, 3);
		auto compute = computeCopyBandwidth(dev, copy_timer, bytes, 3);
		if (!transfer.ok() || !compute.ok())
			return fail(transfer.ok() ? compute.error() : transfer.error());
		copy_gb_per_s = std::max(transfer.value(), compute.value());
	}
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
				runtime::RenderOptions options;
				if (std::string(path) == "heap")
				{
					options.path = runtime::RenderPath::Heap;
					options.heap.max_chunk_bytes = b.max_chunk_bytes;
				}
				auto row = measure(dev, *session, globals, scene,
				                   std::string(effect) == "stock" ? scene.objects : reading, options, b.reps);
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
				auto figures = [](const Figures& f)
				{
					return nlohmann::ordered_json{{"update_us", f.update_us},
					                              {"encode_us", f.encode_us},
					                              {"gpu_ms", f.gpu_ms},
					                              {"frame_ms", f.frame_ms},
					                              {"upload_bytes", f.upload_bytes},
					                              {"uniform_uploads", f.uniform_uploads},
					                              {"derive_gpu_ms", f.derive_ms >= 0.0
					                                                    ? nlohmann::ordered_json(f.derive_ms)
					                                                    : nlohmann::ordered_json()}};
				};
				nlohmann::ordered_json derive = nullptr;
				if (row->moving.derive_ms > 0.0)
				{
					const double gbs = double(row->moving.derive_bytes) / (row->moving.derive_ms * 1e6);
					derive = {{"gpu_ms", row->moving.derive_ms},
					          {"bytes", row->moving.derive_bytes},
					          {"gb_per_s", gbs},
					          {"fraction_of_copy_bandwidth", copy_gb_per_s > 0.0 ? gbs / copy_gb_per_s : 0.0}};
				}
				rows.push_back({{"objects", n},
				                {"effect", effect},
				                {"path", path},
				                {"place_ms", row->place_ms},
				                {"static", figures(row->still)},
				                {"camera", figures(row->moving)},
				                {"camera_vs_static_frame", ratio},
				                {"derive_on_camera_frame", derive}});
			}
	}
	if (b.json)
	{
		nlohmann::ordered_json j;
		j["benchmark"] = "camera";
		j["device"] = dev.info().name;
		j["timing_source"] = timing;
		j["reps"] = b.reps;
		j["copy_gb_per_s"] = copy_gb_per_s > 0.0 ? nlohmann::ordered_json(copy_gb_per_s) : nlohmann::ordered_json();
		j["rows"] = rows;
		std::printf("%s\n", j.dump(2).c_str());
	}
	return 0;
}

} // namespace quokka::app
