// `quokka render --scene grid|city` / `--gltf FILE` and the frame loop the benchmarks share (scene_run.hpp):
// scene-graph scenes through the Runtime (either path), a camera framing the scene bounds and orbiting over --frames,
// per-frame CPU update/encode, GPU and frame timings, draw calls and pipeline binds.
#include "commands.hpp"
#include "render_common.hpp"
#include "scene_run.hpp"
#include "scenes.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <quokka/gpu/timing.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/runtime/runtime.hpp>

namespace quokka::app
{

namespace
{
constexpr double kPi = 3.14159265358979323846;

/// The framed camera of frame `frame` of `frames` (ViewSpec says how it orbits and fits).
void placeCamera(SceneGlobals& g, const math::Box3d& bounds, uint32_t frame, uint32_t frames, double aspect,
                 const ViewSpec& view)
{
	const math::V3d c = bounds.isEmpty() ? math::V3d(0.0) : bounds.center();
	const double r = std::max(0.5 * glm::length(bounds.size()), 1e-3);
	const double a = view.azimuth_deg * kPi / 180.0 + 2.0 * kPi * double(frame) / double(std::max(frames, 1u));
	const double e = view.elevation_deg * kPi / 180.0;
	const double fovy = 50.0 * kPi / 180.0;
	const math::V3d back(std::cos(e) * std::cos(a), std::sin(e), std::cos(e) * std::sin(a)); // centre → eye
	const math::V3d right = glm::normalize(glm::cross(math::V3d(0, 1, 0), back));
	const math::V3d up = glm::cross(back, right);
	const double ty = std::tan(0.5 * fovy) / 1.08, tx = aspect * std::tan(0.5 * fovy) / 1.08;
	// Perspective: a corner p (relative to c) at depth d − dot(p, back) needs d ≥ |x| / tan + dot(p, back) in each
	// direction. Orthographic: the corners' extent across the view, widened to the image's aspect.
	double d = 1e-3 * r, nearest = 0.0, farthest = 0.0, half_w = 1e-3 * r, half_h = 1e-3 * r;
	if (!bounds.isEmpty())
		for (int i = 0; i < 8; ++i)
		{
			const math::V3d p = math::V3d(i & 1 ? bounds.max.x : bounds.min.x, i & 2 ? bounds.max.y : bounds.min.y,
			                              i & 4 ? bounds.max.z : bounds.min.z) -
			                    c;
			const double z = glm::dot(p, back);
			d = std::max({d, std::abs(glm::dot(p, right)) / tx + z, std::abs(glm::dot(p, up)) / ty + z});
			nearest = std::max(nearest, z);
			farthest = std::min(farthest, z);
			half_w = std::max(half_w, 1.08 * std::abs(glm::dot(p, right)));
			half_h = std::max(half_h, 1.08 * std::abs(glm::dot(p, up)));
		}
	math::Trafo3d proj;
	if (view.ortho)
	{
		half_w = std::max(half_w, half_h * aspect);
		half_h = half_w / aspect;
		d = nearest + 0.1 * r;
		proj = math::orthographic(-half_w, half_w, -half_h, half_h, 0.05 * r, d - farthest + 0.05 * r);
	}
	else
	{
		d = std::max(d, nearest + 0.05 * r); // every corner in front of the camera
		proj = math::perspective(fovy, aspect, std::max(0.5 * (d - nearest), 0.01 * r), d + 2.0 * r);
	}
	const math::V3d eye = c + d * back;
	adaptive::transact(
	    [&]
	    {
		    g.view.setValue(math::lookAt(eye, c, math::V3d(0, 1, 0)));
		    g.proj.setValue(proj);
		    g.light_location.setValue(math::V3f(eye + math::V3d(0.0, r, 0.0)));
	    });
}

/// The glTF file's camera `camera`, for an image of `aspect`; the light sits at the camera.
void useFileCamera(SceneGlobals& g, const gltf::Camera& camera, double aspect)
{
	adaptive::transact(
	    [&]
	    {
		    g.view.setValue(camera.view);
		    g.proj.setValue(camera.projection(aspect));
		    g.light_location.setValue(math::V3f(camera.view.inverse().transformPos(math::V3d(0.0))));
	    });
}

/// Stutter figures (frameSpread) of a run's CPU time per frame (update + encode), the first frame — which places the
/// scene — left out.
nlohmann::ordered_json steadyCpu(const SceneRun& r)
{
	std::vector<double> steady;
	for (size_t i = 1; i < r.per_frame.size(); ++i)
		steady.push_back(r.per_frame[i].update_ms + r.per_frame[i].encode_ms);
	return frameSpread(std::move(steady));
}

/// One path's figures for `render --compare`: medians over the frames after the first (which places the scene).
struct PathFigures
{
	double first_update_ms = 0, update_ms = 0, encode_ms = 0, frame_ms = 0;
	uint32_t draws = 0, pipeline_binds = 0;

	static PathFigures of(const SceneRun& r)
	{
		PathFigures f;
		std::vector<double> update, encode, frame;
		for (size_t i = r.per_frame.size() > 1 ? 1 : 0; i < r.per_frame.size(); ++i)
		{
			update.push_back(r.per_frame[i].update_ms);
			encode.push_back(r.per_frame[i].encode_ms);
			frame.push_back(r.per_frame[i].frame_ms);
		}
		f.first_update_ms = r.per_frame.front().update_ms;
		f.update_ms = median(update);
		f.encode_ms = median(encode);
		f.frame_ms = median(frame);
		f.draws = r.last.passes.draws + r.last.heap.draw_calls;
		f.pipeline_binds = r.last.passes.pipeline_binds + r.last.heap.pipeline_binds;
		return f;
	}
	nlohmann::ordered_json json() const
	{
		return {{"first_frame_update_ms", first_update_ms},
		        {"update_ms", update_ms},
		        {"encode_ms", encode_ms},
		        {"frame_ms", frame_ms},
		        {"draw_calls", draws},
		        {"pipeline_binds", pipeline_binds}};
	}
};

/// The side-by-side table of `render --compare`.
void printComparison(const PathFigures& classic, const PathFigures& heap, const char* timing, uint32_t frames)
{
	auto ratio = [](double a, double b) { return b > 0.0 ? a / b : 0.0; };
	std::printf("  side by side, the same %u frame(s) (medians after the first frame):\n", frames);
	std::printf("    %-34s %12s %12s %10s\n", "", "classic", "heap", "classic/heap");
	std::printf("    %-34s %12.3f %12.3f %9.1fx\n", "CPU update per frame, ms", classic.update_ms, heap.update_ms,
	            ratio(classic.update_ms, heap.update_ms));
	std::printf("    %-34s %12.3f %12.3f %9.1fx\n", "CPU encode per frame, ms", classic.encode_ms, heap.encode_ms,
	            ratio(classic.encode_ms, heap.encode_ms));
	std::printf("    %-34s %12.3f %12.3f %9.1fx\n", (std::string("frame time, ms (") + timing + ")").c_str(),
	            classic.frame_ms, heap.frame_ms, ratio(classic.frame_ms, heap.frame_ms));
	std::printf("    %-34s %12u %12u %9.1fx\n", "draw calls", classic.draws, heap.draws,
	            ratio(classic.draws, heap.draws));
	std::printf("    %-34s %12u %12u %9.1fx\n", "pipeline binds", classic.pipeline_binds, heap.pipeline_binds,
	            ratio(classic.pipeline_binds, heap.pipeline_binds));
	std::printf("    %-34s %12.1f %12.1f\n", "first frame's CPU update, ms", classic.first_update_ms,
	            heap.first_update_ms);
}

} // namespace

Result<void> checkSceneFits(const RenderOptions& o)
{
	// Host memory per object of the generated scenes, measured on lavapipe, where device memory is host memory too
	// (`/usr/bin/time -f %M quokka render --scene grid --objects 20000|60000 --samples 1 --width 64 --height 64`:
	// grid 21–22 KiB per object on either path, city ~5 KiB). On a GPU part of it lives in device memory, so the
	// estimate is an upper bound there.
	if (!o.gltf.empty() || (o.scene != "grid" && o.scene != "city"))
		return {};
	const uint64_t objects = o.objects ? o.objects : (o.scene == "grid" ? 1000 : 20000);
	const uint64_t per_object = o.scene == "grid" ? 22 * 1024 : 5 * 1024;
	const uint64_t need = objects * per_object + (256ull << 20); // + the device, compilers and caches
	const uint64_t available = availableHostBytes();
	if (available != 0 && need > available)
		return makeError(ErrorCode::OutOfMemory, "--objects " + std::to_string(objects) + ": the " + o.scene +
		                                             " scene needs about " + gib(need) + " of memory (" +
		                                             std::to_string(per_object / 1024) + " KiB per object), " +
		                                             gib(available) + " are available; use fewer objects");
	return {};
}

Result<GeneratedScene> loadScene(const RenderOptions& o, const SceneGlobals& g)
{
	if (!o.gltf.empty())
		return importGltf(o.gltf, g, o.gltf_any_path);
	if (o.scene == "grid")
		return makeGridScene(g, o.objects ? o.objects : 1000, o.seed);
	if (o.scene == "city")
		return makeCityScene(g, o.objects ? o.objects : 20000, o.seed);
	return makeError(ErrorCode::InvalidArgument,
	                 "unknown scene '" + o.scene + "' (available: triangle, grid, city, meshlets; or --gltf FILE)");
}

/// Renders `frames` frames of `scene` (orbiting unless `orbit` is false) into `fb`.
Result<ViewSpec> viewSpecOf(const RenderOptions& o)
{
	ViewSpec v;
	v.ortho = o.ortho;
	v.camera = o.camera;
	if (!o.view.empty())
	{
		double az = 0.0, el = 0.0;
		char tail = 0;
		if (std::sscanf(o.view.c_str(), "%lf,%lf%c", &az, &el, &tail) != 2 || !std::isfinite(az) || !std::isfinite(el))
			return makeError(ErrorCode::InvalidArgument,
			                 "--view '" + o.view + "': expected AZIMUTH,ELEVATION in degrees, e.g. 30,20");
		if (el < -89.0 || el > 89.0)
			return makeError(ErrorCode::InvalidArgument,
			                 "--view '" + o.view + "': the elevation must be within -89…89 degrees");
		v.azimuth_deg = az;
		v.elevation_deg = el;
	}
	return v;
}

Result<SceneRun> runFrames(gpu::Device& device, runtime::Runtime& rt, runtime::Framebuffer& fb,
                           const GeneratedScene& scene, SceneGlobals& g, uint32_t frames, bool orbit,
                           const runtime::RenderOptions& options, const ViewSpec& view, bool background)
{
	if (view.camera >= 0 && size_t(view.camera) >= scene.cameras.size())
		return makeError(ErrorCode::InvalidArgument,
		                 scene.cameras.empty() ? std::string("--camera: the scene has no cameras")
		                                       : "--camera " + std::to_string(view.camera) + ": the scene has " +
		                                             std::to_string(scene.cameras.size()) + " camera(s), 0…" +
		                                             std::to_string(scene.cameras.size() - 1));
	adaptive::cset<scene::RenderObjectPtr> objects;
	adaptive::transact(
	    [&]
	    {
		    for (const auto& o : scene.objects)
			    objects.add(o);
	    });
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0.06f, 0.07f, 0.09f, 1.0f)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
	rt.setBackgroundPipelines(background);
	auto task = rt.compile(fb.signature, commands, options);
	gpu::FrameTimer timer(device);
	SceneRun run;
	const auto start = std::chrono::steady_clock::now();
	bool ready = false;
	// Ready: the first frame that left nothing out with nothing pending (an effect that became ready asks for its
	// pipelines in the frame after, so nothing pending alone is not enough).
	const auto noteReady = [&]
	{
		if (!ready && rt.context().pendingPipelines() == 0 && run.last.waitingDraws() == 0)
		{
			ready = true;
			run.pipelines_ready_ms =
			    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
		}
	};
	run.frames.source = timer.source();
	const double aspect = double(fb.width) / double(fb.height);
	// One frame with the camera of frame `f`; `timed` frames are recorded in the series.
	const auto frame = [&](uint32_t f) -> Result<void>
	{
		if (view.camera >= 0)
			useFileCamera(g, scene.cameras[size_t(view.camera)], aspect);
		else
			placeCamera(g, scene.bounds, orbit ? f : 0, frames, aspect, view);
		const auto t0 = std::chrono::steady_clock::now();
		QUOKKA_TRY_ASSIGN(list, device.beginCommands());
		timer.begin(list);
		const gpu::DeviceMemoryStats memory_before = device.memoryStats();
		QUOKKA_TRY(task->run(list, fb));
		const gpu::DeviceMemoryStats memory_after = device.memoryStats();
		timer.end(list);
		QUOKKA_TRY(device.submitAndWait(std::move(list)));
		const double frame_ms =
		    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
		QUOKKA_TRY_ASSIGN(timing, timer.resolve());
		const runtime::TaskStats& s = task->stats();
		run.update_ms.push_back(s.update_ms);
		run.frames.encode_ms.push_back(s.encode_ms);
		run.gpu_ms.push_back(timing.ms);
		run.frames.frame_ms.push_back(frame_ms);
		run.per_frame.push_back({s.update_ms,
		                         s.encode_ms,
		                         timing.ms,
		                         frame_ms,
		                         s.passes.draws + s.heap.draw_calls,
		                         s.passes.pipeline_binds + s.heap.pipeline_binds,
		                         s.passes.prepared + s.heap.added,
		                         s.passes.uniform_uploads + s.heap.uniform_uploads,
		                         s.pipelines_pending,
		                         s.waitingDraws(),
		                         s.heap.update_ms + s.heap.upload_ms + s.heap.prepare_ms,
		                         s.heap.encode_ms,
		                         s.passes.update_ms,
		                         s.passes.encode_ms,
		                         s.heap.phases,
		                         s.heap.upload_ms,
		                         s.heap.prepare_ms,
		                         s.flush_ms,
		                         s.teardown_ms,
		                         s.heap.upload_bytes + s.staging.bytes,
		                         memory_after.buffers_created - memory_before.buffers_created,
		                         memory_after.buffer_bytes_created - memory_before.buffer_bytes_created});
		run.last = s;
		noteReady();
		return {};
	};
	for (uint32_t f = 0; f < frames; ++f)
	{
		progress(f == 0 ? std::string("first frame (") + std::to_string(scene.objects.size()) +
		                      (background ? " objects; pipelines the cache does not hold are made in the background)…"
		                                  : " objects; compiles shaders and pipelines the cache does not hold)…")
		                : "frame " + std::to_string(f + 1) + " of " + std::to_string(frames) + "…");
		QUOKKA_TRY(frame(f));
	}
	// Background pipelines: the image written is complete — while the last frame left draws out, wait for the
	// outstanding work and render it again (extra frames, counted in SceneRun::completion_frames; objects whose effect
	// became ready are placed over several frames by the heap's placement budget). Frames that make no progress
	// after a wait are an error, never an endless loop.
	for (uint32_t stalled = 0; background && run.last.waitingDraws() > 0;)
	{
		const uint32_t before = run.last.waitingDraws();
		progress("waiting for " + std::to_string(before) + " draws still being prepared…");
		QUOKKA_TRY(rt.waitIdle());
		QUOKKA_TRY(frame(frames - 1));
		++run.completion_frames;
		stalled = run.last.waitingDraws() < before ? 0 : stalled + 1;
		if (stalled == 4)
			return makeError(ErrorCode::Vulkan, std::to_string(run.last.waitingDraws()) +
			                                        " draws still wait after waiting for every compile");
	}
	clearProgress();
	run.prepared_first = run.per_frame.empty() ? 0 : run.per_frame.front().prepared;
	run.task = std::move(task);
	return run;
}

scene::FramebufferSignature signatureFor(uint32_t samples)
{
	scene::FramebufferSignature sig;
	sig.colors = {{"Colors", VK_FORMAT_R8G8B8A8_SRGB}};
	sig.samples = VkSampleCountFlagBits(samples);
	return sig;
}

Result<BenchSession> BenchSession::create(gpu::Device& device)
{
	QUOKKA_TRY_ASSIGN(rt, runtime::Runtime::create(device));
	QUOKKA_TRY_ASSIGN(fb, runtime::createFramebuffer(device, signatureFor(1), kBenchWidth, kBenchHeight));
	return BenchSession{std::move(rt), std::move(fb)};
}

Result<TimedFrame> timedFrame(gpu::Device& device, gpu::FrameTimer& timer, runtime::RenderTask& task,
                              runtime::Framebuffer& fb)
{
	const auto t0 = std::chrono::steady_clock::now();
	QUOKKA_TRY_ASSIGN(list, device.beginCommands());
	timer.begin(list);
	QUOKKA_TRY(task.run(list, fb));
	timer.end(list);
	QUOKKA_TRY(device.submitAndWait(std::move(list)));
	TimedFrame f;
	f.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	QUOKKA_TRY_ASSIGN(timing, timer.resolve());
	f.timing = timing;
	return f;
}

void placeStaticCamera(SceneGlobals& g, const math::Box3d& bounds, double aspect)
{
	placeCamera(g, bounds, 0, 1, aspect, ViewSpec{});
}

std::unique_ptr<runtime::RenderTask> benchTask(BenchSession& session,
                                               const std::vector<scene::RenderObjectPtr>& objects,
                                               const runtime::RenderOptions& options)
{
	// Scenes of tasks dropped earlier are torn down now, not a slice at a time inside the frames measured next.
	session.runtime->collect();
	adaptive::cset<scene::RenderObjectPtr> set;
	adaptive::transact([&] { set.unionWith(objects); });
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0.06f, 0.07f, 0.09f, 1.0f)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(set)});
	return session.runtime->compile(session.framebuffer.signature, commands, options);
}

Result<math::V3d> originOf(const RenderOptions& o)
{
	math::V3d v(0.0);
	if (o.origin.empty())
		return v;
	char tail = 0;
	if (std::sscanf(o.origin.c_str(), "%lf,%lf,%lf%c", &v.x, &v.y, &v.z, &tail) != 3 || !std::isfinite(v.x) ||
	    !std::isfinite(v.y) || !std::isfinite(v.z))
		return makeError(ErrorCode::InvalidArgument,
		                 "--origin '" + o.origin + "': expected X,Y,Z in metres, e.g. 1e7,0,0");
	return v;
}

void offsetScene(GeneratedScene& scene, const math::V3d& offset)
{
	const math::Trafo3d shift = math::Trafo3d::translation(offset);
	const auto shifted = scene::uniform(shift);
	for (scene::RenderObjectPtr& object : scene.objects)
	{
		scene::RenderObject o = *object;
		auto it = o.uniforms.find("ModelTrafo");
		if (it == o.uniforms.end())
			o.uniforms["ModelTrafo"] = shifted;
		else
			it->second = adaptive::map(it->second, [shift](const scene::UniformValue& m)
			                           { return scene::UniformValue(shift * inputs::trafoOf(m)); });
		object = scene::makeRenderObject(std::move(o));
	}
	scene.bounds = scene.bounds.transformed(shift);
	for (gltf::Camera& c : scene.cameras)
		c.view = c.view * shift.inverse();
}

Result<SceneSession> openScene(const RenderOptions& o)
{
	SceneSession s;
	QUOKKA_TRY(checkSceneFits(o));
	progress("creating the device…");
	QUOKKA_TRY_ASSIGN(device, createRenderDevice(o));
	s.device = std::move(device);
	progress(o.gltf.empty() ? "generating the " + o.scene + " scene…" : "importing " + o.gltf + "…");
	QUOKKA_TRY_ASSIGN(origin, originOf(o));
	QUOKKA_TRY_ASSIGN(scene, loadScene(o, s.globals));
	s.scene = std::move(scene);
	if (origin != math::V3d(0.0))
		offsetScene(s.scene, origin);
	QUOKKA_TRY_ASSIGN(rt, runtime::Runtime::create(*s.device));
	s.runtime = std::move(rt);
	QUOKKA_TRY_ASSIGN(fb, runtime::createFramebuffer(*s.device, signatureFor(o.samples), o.width, o.height));
	s.framebuffer.emplace(std::move(fb));
	return s;
}

nlohmann::ordered_json heapPhasesJson(const heap::HeapUpdatePhases& phases, double upload_ms,
                                      std::optional<double> prepare_ms)
{
	nlohmann::ordered_json j = {
	    {"pull", phases.pull_ms},       {"remove", phases.remove_ms}, {"read", phases.read_ms},
	    {"acquire", phases.acquire_ms}, {"attach", phases.attach_ms}, {"convert_wait", phases.convert_wait_ms},
	    {"refresh", phases.refresh_ms}, {"finish", phases.finish_ms}, {"upload", upload_ms}};
	if (prepare_ms)
		j["prepare"] = *prepare_ms;
	j["refresh_parts"] = {
	    {"repack", phases.repack_ms}, {"derive", phases.derive_refresh_ms}, {"objects", phases.objects_refresh_ms}};
	j["upload_parts"] = {{"chunks", phases.upload_chunks_ms},
	                     {"writes", phases.upload_writes_ms},
	                     {"derive", phases.upload_derive_ms},
	                     {"atlas", phases.upload_atlas_ms},
	                     {"draws", phases.upload_draws_ms}};
	return j;
}

Result<runtime::RenderOptions> renderOptionsOf(const std::string& path, const std::string& draw,
                                               uint64_t max_chunk_bytes)
{
	runtime::RenderOptions r;
	QUOKKA_TRY_ASSIGN(p, runtime::parsePath(path));
	QUOKKA_TRY_ASSIGN(d, heap::parseStrategy(draw));
	r.path = p;
	r.heap.draw = d;
	r.heap.max_chunk_bytes = max_chunk_bytes;
	return r;
}

int runRenderScene(const RenderOptions& o)
{
	auto session = openScene(o);
	if (!session.ok())
		return fail(session.error());
	gpu::Device& dev = *session->device;
	const bool heap_path = o.path == "heap" || !o.heap_switch.empty() || o.compare;
	auto options = renderOptionsOf(heap_path ? "heap" : o.path, o.draw, o.max_chunk_bytes);
	if (!options.ok())
		return fail(options.error());
	options->heap_enabled = adaptive::constant(o.heap_switch != "off");
	options->heap.tuning.convert_threads = o.convert_threads;
	options->heap.tuning.write_in_place = o.write_in_place;
	auto textures = heap::parseTextures(o.textures);
	if (!textures.ok())
		return fail(textures.error());
	options->heap.textures = textures.value();
	auto view = viewSpecOf(o);
	if (!view.ok())
		return fail(view.error());
	// --compare: the same frames on the classic path first (its task dropped before the heap's is made).
	std::optional<PathFigures> classic_figures;
	if (o.compare)
	{
		runtime::RenderOptions classic = options.value();
		classic.path = runtime::RenderPath::Classic;
		auto first = runFrames(dev, *session->runtime, *session->framebuffer, session->scene, session->globals,
		                       o.frames, true, classic, view.value(), o.background_pipelines);
		if (!first.ok())
			return fail(first.error());
		classic_figures = PathFigures::of(first.value());
		first->task.reset();
		session->runtime->collect(); // (its retired scenes go before the heap's frames are timed)
	}
	auto run = runFrames(dev, *session->runtime, *session->framebuffer, session->scene, session->globals, o.frames,
	                     true, options.value(), view.value(), o.background_pipelines);
	if (!run.ok())
		return fail(run.error());
	// --validate on the heap path also runs the heap's diagnostics over every chunk and slot.
	std::vector<std::string> findings;
	if (o.device.validate && options->path == runtime::RenderPath::Heap)
	{
		auto f = heapFindings(*run->task);
		if (!f.ok())
			return fail(f.error());
		findings = std::move(f).value();
	}
	RenderTargets targets;
	targets.color = session->framebuffer->output();
	auto out = writeRenderOutput(dev, targets, o);
	if (!out.ok())
		return fail(out.error());
	const SceneRun& r = run.value();
	const classic::PassStats& p = r.last.passes;
	if (o.json)
	{
		nlohmann::ordered_json j = renderJson(o, dev, r.frames);
		if (!o.gltf.empty())
			j["gltf"] = o.gltf;
		j["path"] = heap_path ? "heap" : o.path;
		if (options->path == runtime::RenderPath::Heap)
		{
			const heap::HeapStats& h = r.last.heap;
			j["heap_enabled"] = o.heap_switch != "off";
			nlohmann::ordered_json routing;
			for (size_t k = 0; k < runtime::kRouteReasons; ++k)
				routing[runtime::routeReasonName(runtime::RouteReason(k))] = r.last.routing[k];
			j["routing"] = routing;
			j["draw"] = o.draw;
			j["heap"] = {{"objects", h.objects},
			             {"buckets", h.buckets},
			             {"slots", h.slots},
			             {"indirect_slots", h.indirect_slots},
			             {"megacall_slots", h.megacall_slots},
			             {"chunks", h.chunks},
			             {"arena_bytes", h.arena_bytes},
			             {"atlas_objects", h.atlas_objects},
			             {"atlas_refused", h.atlas_refused},
			             {"atlas_entries", h.atlas_entries},
			             {"atlas_bytes", h.atlas_bytes},
			             {"textures", heap::texturesName(h.texture_path)},
			             {"bindless_objects", h.bindless_objects},
			             {"bindless_refused", h.bindless_refused},
			             {"bindless_entries", h.bindless_entries},
			             {"live_bytes", h.live_bytes},
			             {"arena_capacity_bytes", h.arena_capacity_bytes},
			             {"draw_calls", h.draw_calls}};
			if (o.device.validate)
				j["heap_findings"] = findings;
		}
		j["objects"] = session->scene.objects.size();
		j["triangles"] = session->scene.triangles;
		j["lines"] = session->scene.lines;
		j["points"] = session->scene.points;
		j["cpu_update_ms"] = {{"median", median(r.update_ms)}, {"first", r.update_ms.front()}};
		j["gpu_ms"] = {{"median", median(r.gpu_ms)}};
		j["draw_calls"] = p.draws + r.last.heap.draw_calls;
		j["pipeline_binds"] = p.pipeline_binds + r.last.heap.pipeline_binds;
		j["descriptor_pushes"] = p.descriptor_pushes;
		j["vertex_binds"] = p.vertex_binds;
		j["prepared_first_frame"] = r.prepared_first;
		// The same counts as per_frame (on the heap path: objects added and uniforms uploaded by the heap).
		j["uniform_uploads_last_frame"] = r.per_frame.empty() ? 0 : r.per_frame.back().uniform_uploads;
		j["pipelines"] = session->runtime->context().stats().pipelines_created;
		if (o.background_pipelines)
		{
			j["background_pipelines"] = true;
			j["pipelines_ready_ms"] = r.pipelines_ready_ms;
			j["completion_frames"] = r.completion_frames;
		}
		nlohmann::ordered_json frames = nlohmann::ordered_json::array();
		for (const FrameRecord& f : r.per_frame)
			frames.push_back({{"cpu_update_ms", f.update_ms},
			                  {"cpu_encode_ms", f.encode_ms},
			                  {"gpu_ms", f.gpu_ms},
			                  {"frame_ms", f.frame_ms},
			                  {"draw_calls", f.draws},
			                  {"pipeline_binds", f.pipeline_binds},
			                  {"prepared", f.prepared},
			                  {"uniform_uploads", f.uniform_uploads},
			                  {"pipelines_pending", f.pipelines_pending},
			                  {"waiting_draws", f.waiting_draws},
			                  {"heap_update_ms", f.heap_update_ms},
			                  {"heap_encode_ms", f.heap_encode_ms},
			                  {"classic_update_ms", f.classic_update_ms},
			                  {"classic_encode_ms", f.classic_encode_ms},
			                  {"heap_phases_ms", heapPhasesJson(f.heap_phases, f.heap_upload_ms, f.heap_prepare_ms)},
			                  {"flush_ms", f.flush_ms},
			                  {"upload_bytes", f.upload_bytes},
			                  {"buffers_created", f.buffers_created},
			                  {"buffer_bytes_created", f.buffer_bytes_created},
			                  {"teardown_ms", f.teardown_ms}});
		j["per_frame"] = frames;
		j["cpu_frame_ms"] = steadyCpu(r);
		if (classic_figures)
			j["compare"] = {{"classic", classic_figures->json()}, {"heap", PathFigures::of(r).json()}};
		printRenderJson(j, dev, out.value());
	}
	else
	{
		printRenderHeader(o, dev, r.frames);
		if (session->scene.lines + session->scene.points > 0)
			std::printf("  %llu lines, %llu points\n", (unsigned long long)session->scene.lines,
			            (unsigned long long)session->scene.points);
		std::printf(
		    "  %zu objects, %llu triangles: %u draw calls, %u pipeline binds, %llu pipelines; CPU update %.2f ms "
		    "(first frame %.1f ms), encode %.2f ms; GPU %.2f ms (%s)\n",
		    session->scene.objects.size(), (unsigned long long)session->scene.triangles,
		    p.draws + r.last.heap.draw_calls, p.pipeline_binds + r.last.heap.pipeline_binds,
		    (unsigned long long)session->runtime->context().stats().pipelines_created, median(r.update_ms),
		    r.update_ms.front(), median(r.frames.encode_ms), median(r.gpu_ms), gpu::timingSourceName(r.frames.source));
		if (const nlohmann::ordered_json spread = steadyCpu(r); spread["frames"].get<size_t>() >= 2)
			std::printf("  steady frames (%zu): CPU median %.3f ms, p99 %.3f ms, max %.3f ms (%.1fx the median)\n",
			            spread["frames"].get<size_t>(), spread["median"].get<double>(), spread["p99"].get<double>(),
			            spread["max"].get<double>(), spread["max_over_median"].get<double>());
		if (o.background_pipelines)
			std::printf("  background pipelines: all ready %.1f ms after the first frame began; %u draws waited in "
			            "the first frame; %u completion frame(s)\n",
			            r.pipelines_ready_ms, r.per_frame.front().waiting_draws, r.completion_frames);
		if (options->path == runtime::RenderPath::Heap)
		{
			const heap::HeapStats& h = r.last.heap;
			std::printf("  heap (%s): %u objects in %u buckets, %u slots (%u indirect, %u megacall), %u chunks, %.1f "
			            "MiB arena; %u indirect draws\n",
			            o.draw.c_str(), h.objects, h.buckets, h.slots, h.indirect_slots, h.megacall_slots, h.chunks,
			            double(h.arena_bytes) / double(1 << 20), h.draw_calls);
			if (o.device.validate)
				std::printf("  heap diagnostics: %zu findings\n", findings.size());
			if (o.explain_routing)
				for (size_t k = 0; k < runtime::kRouteReasons; ++k)
					std::printf("  routing: %llu objects %s %s\n", (unsigned long long)r.last.routing[k],
					            k == 0 ? "drawn by the" : "on the classic path:",
					            runtime::routeReasonName(runtime::RouteReason(k)));
			if (o.explain_routing && h.texture_path == heap::HeapTextures::Bindless)
				std::printf("  textures (bindless): %u heap objects index the table (%u entries), %u bind theirs "
				            "because the table was full or their effect has no bindless variant\n",
				            h.bindless_objects, h.bindless_entries, h.bindless_refused);
			else if (o.explain_routing)
				std::printf("  textures (%s): %u heap objects sample the atlas (%u entries, %.1f MiB), %u bind theirs "
				            "because the atlas refused them\n",
				            heap::texturesName(h.texture_path), h.atlas_objects, h.atlas_entries,
				            double(h.atlas_bytes) / double(1 << 20), h.atlas_refused);
		}
		if (classic_figures)
			printComparison(*classic_figures, PathFigures::of(r), gpu::timingSourceName(r.frames.source), o.frames);
		std::printf("  wrote %s\n", out.value().c_str());
	}
	for (const std::string& f : findings)
		std::fprintf(stderr, "quokka: heap: %s\n", f.c_str());
	run->task.reset();
	if (!findings.empty())
		return 1;
	session->close();
	return validationExit(dev);
}

} // namespace quokka::app
