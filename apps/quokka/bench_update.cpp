// `quokka bench update` (issue #5): what a change costs the heap renderer. The unique-mesh scene (scene_unique.cpp,
// ModelTrafo as a cval per object) is placed on the heap path; then, per k ∈ {1, 100, 10000} (capped at n/10) and per
// operation, R frames each change k objects — add k objects generated up front, remove k present ones, re-add k that
// an untimed frame just removed (hiding and showing again), or edit k ModelTrafos (the pooled uniform re-pack:
// ModelTrafo and the NormalMatrix derived from it) — and the frame's CPU update time and staged upload bytes are
// recorded. Every add and remove is undone by an untimed frame (added objects leave again, removed ones return as the
// newest records; a re-add is preceded by its untimed removal), so each figure is measured on a scene of n objects. The
// target (issue #5) is ≤ 2 µs per changed object on the H200 host, with bytes proportional to k, not to n.
#include "commands.hpp"
#include "render_common.hpp"
#include "scene_run.hpp"
#include "scenes.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <optional>

#include <nlohmann/json.hpp>

#include <quokka/base/work_queue.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/runtime/runtime.hpp>

#include "scene_mesh.hpp"

namespace quokka::app
{

namespace
{
constexpr uint32_t kWidth = kBenchWidth, kHeight = kBenchHeight;
constexpr uint32_t kChanges[] = {1, 100, 10000};

struct Sample
{
	double update_ms = 0, heap_update_ms = 0, heap_upload_ms = 0, frame_ms = 0;
	uint64_t upload_bytes = 0;
	uint64_t in_place_bytes = 0;       ///< of upload_bytes, written straight into mapped device memory
	uint64_t converted_off_thread = 0; ///< bytes of vertex and index data converted on the heap's workers
	heap::HeapUpdatePhases phases;     ///< heap_update_ms by step
	/// update_ms by part: the router, the heap's update, upload and prepare, the staging flush, the classic pass
	double route_ms = 0, heap_prepare_ms = 0, flush_ms = 0, classic_ms = 0;
};

/// What the heap holds in host memory: the process's malloc (hostAllocatedBytes) less the device's own memory where
/// the device allocates it on the host (a CPU device).
std::optional<int64_t> heapHostBytes(const gpu::Device& device)
{
	const std::optional<uint64_t> allocated = hostAllocatedBytes();
	if (!allocated)
		return std::nullopt;
	const gpu::DeviceMemoryStats m = device.memoryStats();
	return int64_t(*allocated) - (device.info().is_cpu ? int64_t(m.buffer_bytes + m.image_bytes) : 0);
}

/// RenderTask::hostMemory per object, by category, then their sum ("accounted").
nlohmann::ordered_json hostMemoryPerObjectJson(const runtime::RenderTask::HostMemory& m, uint32_t n)
{
	const heap::HeapHostMemory& h = m.heap;
	const std::pair<const char*, uint64_t> parts[] = {{"objects", h.objects},     {"private_sets", h.private_sets},
	                                                  {"pool", h.pool},           {"subscriptions", h.subscriptions},
	                                                  {"tables", h.tables},       {"draws", h.draws},
	                                                  {"allocator", h.allocator}, {"derive", h.derive},
	                                                  {"frame", h.frame},         {"router", m.routers},
	                                                  {"accounted", m.total()}};
	nlohmann::ordered_json j;
	for (const auto& [name, bytes] : parts)
		j[name] = double(bytes) / double(std::max(n, 1u));
	return j;
}

/// How a frame waits for the GPU. `block` sleeps in the driver (vkWaitSemaphores), as an application does; `spin` polls
/// the timeline, so the thread keeps its core — and the caches its data is in — through the GPU's work. Side by side
/// they show how much of a frame's CPU update is the cost of finding its code and data cold after the wait.
enum class Wait
{
	Block,
	Spin,
};

/// One frame: `change` inside a transaction, then the task records, submits and waits.
template <typename F>
Result<Sample> frame(gpu::Device& device, runtime::RenderTask& task, runtime::Framebuffer& fb, Wait wait, F&& change)
{
	adaptive::transact(change);
	const auto t0 = std::chrono::steady_clock::now();
	QUOKKA_TRY_ASSIGN(list, device.beginCommands());
	QUOKKA_TRY(task.run(list, fb));
	QUOKKA_TRY_ASSIGN(value, device.submit(std::move(list)));
	if (wait == Wait::Spin)
		while (device.completedValue() < value)
		{
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		}
	QUOKKA_TRY(device.wait(value));
	Sample s;
	s.frame_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	// The runtime's update_ms spans the heap's update() and upload() (and the classic pass, empty here); heap.update_ms
	// is update() alone, so the two are reported side by side, not summed.
	s.update_ms = task.stats().update_ms;
	s.heap_update_ms = task.stats().heap.update_ms;
	s.heap_upload_ms = task.stats().heap.upload_ms;
	s.phases = task.stats().heap.phases;
	s.upload_bytes = task.stats().heap.upload_bytes;
	s.in_place_bytes = task.stats().heap.in_place_bytes;
	s.converted_off_thread = task.stats().heap.converted_off_thread;
	s.route_ms = task.stats().route_ms;
	s.heap_prepare_ms = task.stats().heap.prepare_ms;
	s.flush_ms = task.stats().flush_ms;
	s.classic_ms = task.stats().passes.update_ms;
	return s;
}

/// A fixed camera framing `bounds` from 35° above the horizon (runFrames' first frame).
void frameCamera(SceneGlobals& g, const math::Box3d& bounds)
{
	const math::V3d c = bounds.center();
	const double r = std::max(0.5 * glm::length(bounds.size()), 1e-3);
	const double a = 0.6, e = 35.0 * std::numbers::pi / 180.0;
	const math::V3d eye = c + 1.9 * r * math::V3d(std::cos(e) * std::cos(a), std::sin(e), std::cos(e) * std::sin(a));
	adaptive::transact(
	    [&]
	    {
		    g.view.setValue(math::lookAt(eye, c, math::V3d(0, 1, 0)));
		    g.proj.setValue(math::perspective(50.0 * std::numbers::pi / 180.0, double(kWidth) / double(kHeight),
		                                      0.02 * r, 10.0 * r));
		    g.light_location.setValue(math::V3f(eye + math::V3d(0.0, r, 0.0)));
	    });
}

} // namespace

int runBenchUpdate(const BenchOptions& b)
{
	if (!b.path.empty() && b.path != "heap")
		return usage("bench update: --path '" + b.path + "' is not measured (the update benchmark runs on heap only)");
	if (b.draw == "all")
		return usage("bench update: --draw all is for bench draw (pick one of auto, indirect, megacall)");
	auto strategy = heap::parseStrategy(b.draw.empty() ? "auto" : b.draw);
	if (!strategy.ok())
		return usage("bench update: " + strategy.error().message);
	if (b.objects.size() > 1)
		return usage("bench update: takes one --objects count, got " + std::to_string(b.objects.size()));
	if (!b.objects.empty() && b.objects[0] < 10)
		return usage("bench update: --objects " + std::to_string(b.objects[0]) + " is below 10 (k is capped at n/10)");
	auto device = createBenchDevice(b);
	if (!device.ok())
		return fail(device.error());
	gpu::Device& dev = *device.value();
	const bool cpu = dev.info().is_cpu;
	const Wait wait = b.update_wait == "spin" ? Wait::Spin : Wait::Block;
	const uint32_t n = b.objects.empty() ? (cpu ? 20000 : 1000000) : b.objects[0];
	if (n < 10)
		return fail("bench update: --objects " + std::to_string(n) + " is below 10 (k is capped at n/10)");
	std::vector<uint32_t> ks;
	for (uint32_t k : b.update_k.empty() ? std::vector<uint32_t>(std::begin(kChanges), std::end(kChanges)) : b.update_k)
		if (ks.empty() || std::min(k, n / 10) != ks.back())
			ks.push_back(std::min(k, n / 10));
	std::vector<std::string> ops = b.update_ops;
	if (ops.empty())
		ops = {"add", "remove", "readd", "edit"};
	uint64_t pool = 0; // every timed add adds objects never placed before
	for (uint32_t k : ks)
		pool += uint64_t(k) * b.reps;
	if (pool > n)
		return fail("bench update: " + std::to_string(pool) + " objects to add (k × reps) exceed the scene's " +
		            std::to_string(n) + " (lower --reps or --k)");
	// The scene (with the objects to add) and one heap task over n of them.
	if (Result<void> fits = checkObjectsFit(dev, "bench update", n + pool, kUniqueSceneHostBytes + kHeapTaskHostBytes,
	                                        kHeapTaskDeviceBytes);
	    !fits.ok())
		return fail(fits.error());

	// Objects [0, n) are placed first; [n, n + pool) are added by the add frames (they continue the grid).
	SceneGlobals globals;
	UniqueMeshOptions u;
	u.editable = true;
	const auto t_gen = std::chrono::steady_clock::now();
	auto made = makeUniqueMeshScene(globals, n + uint32_t(pool), 1, u);
	if (!made.ok())
		return fail(made.error());
	const double generate_ms =
	    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_gen).count();
	const std::vector<scene::RenderObjectPtr>& all = made->scene.objects;
	frameCamera(globals, made->scene.bounds);

	auto session = BenchSession::create(dev);
	if (!session.ok())
		return fail(session.error());
	runtime::Runtime& rt = *session->runtime;
	runtime::Framebuffer& fb = session->framebuffer;
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	options.heap.draw = strategy.value();
	applyHeapFlags(b, options.heap);
	options.heap.tuning.convert_threads = b.convert_threads;
	adaptive::cset<scene::RenderObjectPtr> objects;
	adaptive::transact(
	    [&]
	    {
		    for (uint32_t i = 0; i < n; ++i)
			    objects.add(all[i]);
	    });
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0.06f, 0.07f, 0.09f, 1.0f)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
	const std::optional<int64_t> host_before = heapHostBytes(dev);
	auto task = rt.compile(fb.signature, commands, options);

	const char* draw_name = heap::strategyName(strategy.value());
	if (!b.json)
		std::printf("quokka bench update on %s, heap path (--draw %s), unique-mesh scene of %u objects (generated in "
		            "%.0f ms), %u frames per figure (median), GPU waits: %s\n",
		            dev.info().name.c_str(), draw_name, n, generate_ms, b.reps, b.update_wait.c_str());
	// Every frame of the run: the same task, framebuffer and way of waiting.
	auto step = [&](auto&& change) { return frame(dev, *task, fb, wait, change); };
	auto place = step([] {});
	if (!place.ok())
		return fail(place.error());
	// Host memory of the compiled task with its n objects placed, beyond the scene's own (made before): what the
	// renderer keeps per object. Staging pages the placement frame filled are counted (they are reused, not freed).
	const std::optional<int64_t> host_after = heapHostBytes(dev);
	const bool host_known = host_before && host_after;
	const double host_per_object = host_known ? double(*host_after - *host_before) / double(n) : 0.0;
	// What the task says it holds, by category (RenderTask::hostMemory): the measured figure less this is the
	// allocator's rounding to its size classes and what the categories leave out.
	const nlohmann::ordered_json host_held = hostMemoryPerObjectJson(task->hostMemory(), n);
	// One idle frame: the placement frame's deferred work (strategy choice, scans) must not land in the first figure.
	auto first_idle = step([] {});
	if (!first_idle.ok())
		return fail(first_idle.error());
	// Then R idle frames: what a frame costs when nothing changed (the medians below; bytes are the maximum).
	Sample idle;
	{
		std::vector<double> ms;
		for (uint32_t r = 0; r < b.reps; ++r)
		{
			auto s = step([] {});
			if (!s.ok())
				return fail(s.error());
			ms.push_back(s->update_ms);
			idle.upload_bytes = std::max(idle.upload_bytes, s->upload_bytes);
		}
		idle.update_ms = median(std::move(ms));
	}
	// The same after the idle frames: what the task keeps once the placement's frame queues and logs went back.
	const std::optional<int64_t> host_idle = heapHostBytes(dev);
	const double host_idle_per_object = host_known && host_idle ? double(*host_idle - *host_before) / double(n) : 0.0;
	const nlohmann::ordered_json host_held_idle = hostMemoryPerObjectJson(task->hostMemory(), n);
	const heap::HeapUpdatePhases& ph = place->phases;
	if (!b.json)
	{
		std::printf("  placement: %.1f ms CPU update (%.2f us/object), %.1f MiB staged; idle frames: %.3f ms CPU "
		            "update, %llu bytes\n",
		            place->update_ms, place->update_ms * 1000.0 / double(n),
		            double(place->upload_bytes) / double(1 << 20), idle.update_ms,
		            (unsigned long long)idle.upload_bytes);
		std::printf("    by step, ms: pull %.1f, remove %.1f, read %.1f, acquire %.1f, attach %.1f, convert wait %.1f, "
		            "refresh %.1f, finish %.1f; upload %.1f; %.1f MiB converted on %u worker threads\n",
		            ph.pull_ms, ph.remove_ms, ph.read_ms, ph.acquire_ms, ph.attach_ms, ph.convert_wait_ms,
		            ph.refresh_ms, ph.finish_ms, place->heap_upload_ms,
		            double(place->converted_off_thread) / double(1 << 20),
		            place->converted_off_thread ? base::WorkQueue::defaultThreads(b.convert_threads) : 0u);
		if (host_known)
			std::printf(
			    "    host memory: %.0f bytes per placed object beyond the scene's own after placement, %.0f after "
			    "the idle frames (the allocator's count)\n",
			    host_per_object, host_idle_per_object);
		auto held = [](const char* when, const nlohmann::ordered_json& categories)
		{
			std::printf("    held by the task %s, bytes per object:", when);
			for (const auto& [name, bytes] : categories.items())
				std::printf(" %s %.0f%s", name.c_str(), bytes.get<double>(), name == "accounted" ? "" : ",");
			std::printf("\n");
		};
		held("after placement", host_held);
		held("after the idle frames", host_held_idle);
		std::printf("\n  %-7s %6s %12s %14s %12s %10s %14s %14s %10s\n", "op", "k", "update ms", "us/object", "heap ms",
		            "upload ms", "upload bytes", "bytes/object", "kcyc/obj");
	}

	mesh::Rng rng(7);
	std::vector<uint32_t> order(n);
	for (uint32_t i = 0; i < n; ++i)
		order[i] = i;
	// k distinct random objects of [0, n): a partial Fisher–Yates shuffle, O(k) per draw.
	auto pick = [&](uint32_t k)
	{
		for (uint32_t i = 0; i < k; ++i)
			std::swap(order[i], order[i + rng.between(0, n - 1 - i)]);
		return std::vector<uint32_t>(order.begin(), order.begin() + k);
	};

	nlohmann::ordered_json results = nlohmann::ordered_json::array();
	std::vector<std::string> k1_parts; // one-object frames' CPU update by part, µs (the text report)
	const auto fixed = [](double us)
	{
		char text[32];
		std::snprintf(text, sizeof text, "%.1f", us);
		return std::string(text);
	};
	std::vector<double> clocks; // the core's clock after each row (clockGHz: this host's clock changes between runs)
	size_t next_add = n;
	for (uint32_t k : ks)
		for (const std::string& op : ops)
		{
			std::vector<Sample> samples;
			for (uint32_t r = 0; r < b.reps; ++r)
			{
				const std::string& what = op;
				std::vector<scene::RenderObjectPtr> changed;
				Result<Sample> s = Sample{};
				if (what == "add")
				{
					changed.assign(all.begin() + next_add, all.begin() + next_add + k);
					next_add += k;
					s = step(
					    [&]
					    {
						    for (const auto& x : changed)
							    objects.add(x);
					    });
				}
				else if (what == "remove" || what == "readd")
				{
					for (uint32_t i : pick(k))
						changed.push_back(all[i]);
					auto removeAll = [&]
					{
						for (const auto& x : changed)
							objects.remove(x);
					};
					if (what == "remove")
						s = step(removeAll);
					else
					{
						// Untimed: the k objects leave, then the timed frame brings the same objects back.
						auto hide = step(removeAll);
						if (!hide.ok())
							return fail(hide.error());
						s = step(
						    [&]
						    {
							    for (const auto& x : changed)
								    objects.add(x);
						    });
					}
				}
				else
				{
					const std::vector<uint32_t> which = pick(k);
					// A quarter turn about the object's own axis: a new value for ModelTrafo and NormalMatrix.
					const math::Trafo3d turn = math::Trafo3d::rotation({0.0, 1.0, 0.0}, 0.5 * std::numbers::pi);
					s = step(
					    [&]
					    {
						    for (uint32_t i : which)
							    made->trafos[i].setValue(made->trafos[i].value() * turn);
					    });
				}
				if (!s.ok())
					return fail(s.error());
				samples.push_back(s.value());
				if (what == "add" || what == "remove")
				{
					// Undo, untimed: added objects leave (the scene stays at n; every add places objects never placed
					// before) and removed ones return (removes always pick among the first n).
					auto undo = step(
					    [&]
					    {
						    for (const auto& x : changed)
							    if (what == "add")
								    objects.remove(x);
							    else
								    objects.add(x);
					    });
					if (!undo.ok())
						return fail(undo.error());
				}
			}
			auto med = [&](auto field)
			{
				std::vector<double> v;
				for (const Sample& s : samples)
					v.push_back(double(field(s)));
				return median(std::move(v));
			};
			const double update_ms = med([](const Sample& s) { return s.update_ms; });
			const double heap_ms = med([](const Sample& s) { return s.heap_update_ms; });
			const double upload_ms = med([](const Sample& s) { return s.heap_upload_ms; });
			const double bytes = med([](const Sample& s) { return s.upload_bytes; });
			nlohmann::ordered_json row;
			row["op"] = op;
			row["k"] = k;
			row["cpu_update_ms"] = update_ms;
			row["us_per_object"] = update_ms * 1000.0 / double(k);
			row["heap_update_ms"] = heap_ms;
			row["heap_upload_ms"] = upload_ms;
			row["upload_bytes"] = uint64_t(bytes);
			row["in_place_bytes"] = uint64_t(med([](const Sample& s) { return s.in_place_bytes; }));
			row["bytes_per_object"] = bytes / double(k);
			row["frame_ms"] = med([](const Sample& s) { return s.frame_ms; });
			// Where a frame's CPU update goes (medians of each part; "other": the rest of the runtime's frame)
			const double route = med([](const Sample& s) { return s.route_ms; });
			const double prepare = med([](const Sample& s) { return s.heap_prepare_ms; });
			const double flush = med([](const Sample& s) { return s.flush_ms; });
			const double classic = med([](const Sample& s) { return s.classic_ms; });
			row["parts_ms"] = {
			    {"route", route},
			    {"heap_update", heap_ms},
			    {"heap_upload", upload_ms},
			    {"flush", flush},
			    {"heap_prepare", prepare},
			    {"classic", classic},
			    {"other", std::max(0.0, update_ms - route - heap_ms - upload_ms - flush - prepare - classic)}};
			if (k == 1)
				k1_parts.push_back(
				    op + ": route " + fixed(route * 1000.0) + ", heap update " + fixed(heap_ms * 1000.0) + ", upload " +
				    fixed(upload_ms * 1000.0) + ", flush " + fixed(flush * 1000.0) + ", prepare " +
				    fixed(prepare * 1000.0) + ", classic " + fixed(classic * 1000.0) + ", other " +
				    fixed(row["parts_ms"]["other"].get<double>() * 1000.0) + "; bytes in place " +
				    std::to_string(row["in_place_bytes"].get<uint64_t>()) + " of " + std::to_string(uint64_t(bytes)));
			clocks.push_back(clockGHz());
			const double kcycles = update_ms * 1000.0 / double(k) * clocks.back(); // (µs × GHz = 10^3 cycles)
			row["core_clock_ghz"] = clocks.back();
			row["kcycles_per_object"] = kcycles;
			if (!b.json)
				std::printf("  %-7s %6u %12.3f %14.2f %12.3f %10.3f %14llu %14.1f %10.2f\n", op.c_str(), k, update_ms,
				            update_ms * 1000.0 / double(k), heap_ms, upload_ms, (unsigned long long)bytes,
				            bytes / double(k), kcycles);
			results.push_back(std::move(row));
		}

	// Closing the scene: dropping the task retires its heap scene to the runtime (the frame-path part), which tears it
	// down in slices of RenderOptions::teardown_budget_ms, one per later frame (Runtime::collect, as RenderTask::run
	// calls it): their number, the longest and the sum.
	auto since = [](std::chrono::steady_clock::time_point t)
	{ return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count(); };
	const auto closing = std::chrono::steady_clock::now();
	task.reset();
	const double teardown_ms = since(closing);
	runtime::Runtime::CollectTimes longest; // (the longest slice's parts)
	uint32_t collect_slices = 0;
	double collect_max_ms = 0.0, collect_ms = 0.0;
	for (size_t left = rt.retired(); left != 0 || collect_slices == 0; ++collect_slices)
	{
		const auto slice = std::chrono::steady_clock::now();
		left = rt.collect(options.teardown_budget_ms);
		const double ms = since(slice);
		if (ms > collect_max_ms)
			longest = rt.lastCollect();
		collect_max_ms = std::max(collect_max_ms, ms);
		collect_ms += ms;
	}
	const double clock = median(clocks);
	const double clock_min = clocks.empty() ? 0.0 : *std::min_element(clocks.begin(), clocks.end());
	const double clock_max = clocks.empty() ? 0.0 : *std::max_element(clocks.begin(), clocks.end());
	if (!b.json && !k1_parts.empty())
	{
		std::printf(
		    "\n  one-object frames' CPU update by part, us (medians; other: the rest of the runtime's frame):\n");
		for (const std::string& line : k1_parts)
			std::printf("    %s\n", line.c_str());
	}
	if (!b.json)
		std::printf("\n  core clock %.2f GHz (%.2f-%.2f after the rows; kcyc/obj = us/object x the row's clock)\n"
		            "  teardown: %.3f ms CPU to drop the task (its scene of %u objects retired), then %u slices of "
		            "at most %.2f ms (budget %.1f) freeing it, %.1f ms in all\n",
		            clock, clock_min, clock_max, teardown_ms, n, collect_slices, collect_max_ms,
		            options.teardown_budget_ms, collect_ms);
	if (!b.json)
		std::printf("    the longest slice, ms: router slices %.2f, router destroyed %.2f, scene slices %.2f, scene "
		            "destroyed %.2f\n",
		            longest.routers_ms, longest.router_destroy_ms, longest.scenes_ms, longest.scene_destroy_ms);
	if (b.json)
	{
		nlohmann::ordered_json j;
		j["bench"] = "update";
		j["device"] = dev.info().name;
		j["device_type"] = cpu ? "cpu" : "gpu";
		j["draw"] = draw_name;
		j["objects"] = n;
		j["reps"] = b.reps;
		j["wait"] = b.update_wait;
		j["generate_ms"] = generate_ms;
		j["placement"] = {{"cpu_update_ms", place->update_ms},
		                  {"us_per_object", place->update_ms * 1000.0 / double(n)},
		                  {"upload_bytes", place->upload_bytes},
		                  {"converted_off_thread_bytes", place->converted_off_thread},
		                  {"phases_ms", heapPhasesJson(ph, place->heap_upload_ms)},
		                  {"host_bytes_per_object",
		                   host_known ? nlohmann::ordered_json(host_per_object) : nlohmann::ordered_json(nullptr)},
		                  {"host_held_per_object", host_held}};
		j["idle"] = {{"cpu_update_ms", idle.update_ms},
		             {"upload_bytes", idle.upload_bytes},
		             {"host_bytes_per_object", host_known && host_idle ? nlohmann::ordered_json(host_idle_per_object)
		                                                               : nlohmann::ordered_json(nullptr)},
		             {"host_held_per_object", host_held_idle}};
		j["results"] = std::move(results);
		j["core_clock_ghz"] = clock;
		j["core_clock_ghz_min"] = clock_min;
		j["core_clock_ghz_max"] = clock_max;
		j["teardown_ms"] = teardown_ms;
		j["teardown_slices"] = collect_slices;
		j["teardown_slice_max_ms"] = collect_max_ms;
		j["teardown_collect_ms"] = collect_ms;
		j["teardown_budget_ms"] = options.teardown_budget_ms;
		j["teardown_slice_max_parts_ms"] = {{"router_slices", longest.routers_ms},
		                                    {"router_destroyed", longest.router_destroy_ms},
		                                    {"scene_slices", longest.scenes_ms},
		                                    {"scene_destroyed", longest.scene_destroy_ms}};
		std::printf("%s\n", j.dump(2).c_str());
	}
	return validationExit(dev);
}

} // namespace quokka::app
