// quokka/runtime/runtime.hpp — Runtime, RenderTask, framebuffers and renderTo: how applications drive the renderers.
//
// A Runtime owns the device-level caches (inputs::Context). compile(signature, commands) gives a RenderTask over an
// adaptive list of Commands; the concrete framebuffer is supplied at run(), so one task renders into any framebuffer
// of its signature. run() records one frame into a command list: every Render command's ScenePass pulls its changes,
// all uploads of the frame go out as one batch, then the commands are encoded in order — a Clear immediately followed
// by a Render becomes one pass with clearing load ops; a lone Clear is a pass with no draws. renderTo() renders a
// scene offscreen into an adaptive texture (an AdaptiveResource): allocated when a first GPU user acquires it,
// re-rendered within the frame that uses it only when its scene changed, freed on the last release.
// Owner thread only.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/resource.hpp>
#include <quokka/base/result.hpp>
#include <quokka/classic/scene_pass.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/inputs/context.hpp>
#include <quokka/runtime/object_router.hpp>
#include <quokka/scene/command.hpp>
#include <quokka/scene/framebuffer_signature.hpp>

namespace quokka::runtime
{

/// Images matching a FramebufferSignature: colour attachments in location order (multisampled when samples > 1, then
/// with single-sample resolve targets), and an optional depth attachment.
struct Framebuffer
{
	scene::FramebufferSignature signature;
	std::vector<gpu::ImageHandle> colors;
	std::vector<gpu::ImageHandle> resolves; ///< one per colour when multisampled, else empty
	gpu::ImageHandle depth;
	uint32_t width = 0;
	uint32_t height = 0;

	/// The single-sample image holding colour attachment `name` after a pass (the resolve target when multisampled);
	/// nullptr for an unknown name.
	gpu::ImageHandle output(const std::string& name = "Colors") const;
};

/// Creates the images of `signature` at width × height. Colour outputs get Sampled | TransferSrc | TransferDst usage.
/// Errors: InvalidArgument (zero or too large sizes, unsupported sample counts), OutOfMemory.
Result<Framebuffer> createFramebuffer(gpu::Device& device, const scene::FramebufferSignature& signature, uint32_t width,
                                      uint32_t height);

/// Which renderer draws the Render commands' objects.
enum class RenderPath : uint8_t
{
	Classic, ///< per-object draws (classic::ScenePass)
	/// The heap renderer (heap::HeapScene) for every eligible object, the classic path for the rest (ObjectRouter);
	/// the heap's objects are drawn first, order within a Render command is not kept.
	Heap,
};
const char* pathName(RenderPath path);
/// Parses "classic" | "heap".
Result<RenderPath> parsePath(const std::string& name);

struct RenderOptions
{
	/// The default, Heap, is the hybrid router: the heap draws every object it can in a few draws per bucket, the
	/// classic path the rest. Classic draws every object on its own (a reference, or for scenes of a few objects).
	RenderPath path = RenderPath::Heap;
	heap::HeapOptions heap; ///< path = Heap
	/// Path Heap: while false every object is drawn by the classic path (an A/B switch or a fallback: flipping it
	/// moves the objects in the next frame, the image unchanged). Ignored by path Classic.
	adaptive::aval<bool> heap_enabled = adaptive::constant(true);
	/// CPU time each run() may spend tearing down retired heap scenes (Runtime::collect): those of dropped tasks and
	/// of Render commands that left a task. Each run() makes some progress whatever the budget.
	double teardown_budget_ms = 2.0;

	/// Options of the classic path, everything else default.
	static RenderOptions classic()
	{
		RenderOptions o;
		o.path = RenderPath::Classic;
		return o;
	}
};

/// Counters of the last RenderTask::run(), summed over its Render commands.
struct TaskStats
{
	classic::PassStats passes;      ///< summed; update_ms/encode_ms are the sums of the passes'
	heap::HeapStats heap;           ///< the heap scenes' (path = Heap), counters summed
	gpu::StagingFlushStats staging; ///< the runtime context's staging flush in the task's upload()
	uint32_t render_passes = 0;
	uint32_t render_targets = 0; ///< renderTo targets re-rendered this frame
	double update_ms = 0.0;      ///< CPU: pulling changes and preparing (all passes + uploads)
	double flush_ms = 0.0;       ///< part of update_ms: the runtime context's staging flush
	double route_ms = 0.0;       ///< part of update_ms: the routers pulling the leaves' changes (path Heap)
	double targets_ms = 0.0;     ///< part of update_ms: renderTo targets (checked, re-rendered when due)
	double encode_ms = 0.0;      ///< CPU: recording
	/// Path Heap: objects per RouteReason after the frame's routing (index 0: drawn by the heap), and the objects
	/// moved between the heap and the classic path so far (ObjectRouter), summed over the Render commands.
	std::array<uint64_t, kRouteReasons> routing{};
	uint64_t migrations = 0;
	double teardown_ms = 0.0; ///< CPU: tearing down retired heap scenes (Runtime::collect; not part of update_ms)
	size_t retired_left = 0;  ///< what retired heap scenes still hold after the frame (Runtime::retired)
	/// Pipelines still being created in the background after the frame (inputs::Context::setBackgroundPipelines)
	uint32_t pipelines_pending = 0;
	/// Draws the frame left out because their effect or pipeline was not ready: classic objects, heap slots and heap
	/// objects waiting for their effect.
	uint32_t waitingDraws() const { return passes.waiting + heap.waiting_draws + heap.waiting_objects; }
};

class Runtime;
class RenderTarget;
namespace detail
{
struct RenderTargetState;
}

class RenderTask
{
public:
	~RenderTask();
	RenderTask(const RenderTask&) = delete;
	RenderTask& operator=(const RenderTask&) = delete;

	/// Records one frame of the commands into `list`, rendering into `framebuffer` (whose signature must equal the
	/// task's). Errors: InvalidArgument (signature or size mismatch, a bad object), OutOfMemory.
	Result<void> run(gpu::CommandList& list, Framebuffer& framebuffer);
	const TaskStats& stats() const { return stats_; }
	const scene::FramebufferSignature& signature() const { return signature_; }
	/// The ScenePasses of the Render commands in command order (tests, diagnostics).
	std::vector<const classic::ScenePass*> passes() const;
	/// The heap scenes of the Render commands in command order (path = Heap).
	std::vector<heap::HeapScene*> heapScenes() const;
	/// Path Heap: host memory its heap scenes hold, by category, summed (heap::HeapScene::hostMemory), and its routers'
	/// (ObjectRouter::hostBytes) in `routers`. O(objects): for benchmarks and diagnostics.
	struct HostMemory
	{
		heap::HeapHostMemory heap;
		uint64_t routers = 0;
		uint64_t total() const { return heap.total() + routers; }
	};
	HostMemory hostMemory() const;
	/// Diagnostics over the whole task, after a frame: every heap scene's validateHeap() and every router's checks,
	/// each finding prefixed with its Render command ("render command N: …"); none when everything is sound.
	/// Errors: as validateHeap (a read-back failing).
	Result<std::vector<std::string>> validate();
	const RenderOptions& options() const { return options_; }
	/// Path Heap: replaces the task's heap switch (RenderOptions::heap_enabled) — for every Render command's router
	/// and those made later. The next run() reads it; when its value differs from the one in force, every object the
	/// heap can draw moves between the heap and the classic pass in that frame (the same pixels).
	void setHeapEnabled(adaptive::aval<bool> enabled);

private:
	friend class Runtime;
	friend struct detail::RenderTargetState;
	RenderTask(Runtime& runtime, scene::FramebufferSignature signature, adaptive::alist<scene::Command> commands,
	           RenderOptions options);
	/// Pulls the command list and updates every pass; true when anything changed (renderTo skips unchanged frames).
	Result<bool> update();
	/// Heap growth and staged writes, the context's uploads, then the heap's compute preparation.
	Result<void> upload(gpu::CommandList& list);
	Result<void> encode(gpu::CommandList& list, Framebuffer& framebuffer);

	struct Entry
	{
		scene::Command command;
		std::unique_ptr<classic::ScenePass> pass; ///< Render commands (path Heap: the objects the heap cannot draw)
		std::unique_ptr<heap::HeapScene> heap;    ///< Render commands, path Heap
		std::unique_ptr<ObjectRouter> router;     ///< path Heap: the one reader of the leaves, heap or classic
	};
	/// Hands an entry's router and heap scene to the runtime (Runtime::retire).
	void retire(Entry& e);
	Runtime* runtime_;
	RenderOptions options_;
	scene::FramebufferSignature signature_;
	adaptive::ListReader<scene::Command> reader_;
	std::map<adaptive::Index, Entry> entries_;
	TaskStats stats_;
};

/// An offscreen scene: its framebuffer is an AdaptiveResource and texture(name) an adaptive texture over it. The
/// textures keep the scene alive on their own: a target may be dropped while its textures are in use
/// (`runtime.renderTo(…)->texture()` is fine). The Runtime must outlive both.
class RenderTarget
{
public:
	~RenderTarget();
	/// The adaptive texture of colour attachment `name`: usable as a RenderObject texture. Acquired by the GPU users
	/// that sample it; the framebuffer exists only while one does.
	adaptive::aval<scene::TextureData> texture(const std::string& name = "Colors");
	/// True while the framebuffer is allocated.
	bool allocated() const;
	/// Times the inner scene was rendered.
	uint64_t renders() const;

private:
	friend class Runtime;
	RenderTarget(Runtime& runtime, scene::FramebufferSignature signature, adaptive::alist<scene::Command> commands,
	             adaptive::aval<math::V2i> size);

	/// The inner task, its framebuffer and counters: shared with the framebuffer resource's callbacks, which the
	/// textures hold.
	std::shared_ptr<detail::RenderTargetState> state_;
	adaptive::AdaptiveResource<std::shared_ptr<Framebuffer>> resource_;
	std::map<std::string, adaptive::aval<scene::TextureData>> textures_;
};

class Runtime
{
public:
	static Result<std::unique_ptr<Runtime>> create(gpu::Device& device);
	~Runtime();
	Runtime(const Runtime&) = delete;
	Runtime& operator=(const Runtime&) = delete;

	gpu::Device& device() { return context_->device(); }
	inputs::Context& context() { return *context_; }
	/// Background pipelines (see inputs::Context::setBackgroundPipelines): frames never block on a pipeline compile;
	/// a draw whose pipeline is not ready yet is left out of the frame (TaskStats::waitingDraws) and drawn from the
	/// first frame after it is.
	void setBackgroundPipelines(bool on) { context_->setBackgroundPipelines(on); }
	/// Blocks until every pipeline requested so far exists (for a screenshot or a test: the next frame is complete).
	/// Errors: the first background creation that failed.
	Result<void> waitIdle() { return context_->waitPipelines(); }

	/// A task over `commands` for framebuffers of `signature`.
	std::unique_ptr<RenderTask> compile(const scene::FramebufferSignature& signature,
	                                    adaptive::alist<scene::Command> commands, RenderOptions options = {});
	/// An offscreen scene of `size` pixels (re-allocated when the size changes).
	std::shared_ptr<RenderTarget> renderTo(const scene::FramebufferSignature& signature,
	                                       adaptive::alist<scene::Command> commands, adaptive::aval<math::V2i> size);

	/// Teardown off the frame path. A dropped task's heap scenes, and the heap scene of a Render command that left its
	/// task, are retired to the runtime with their routers instead of destroyed on the spot — destroying 10^6 objects
	/// takes a second — and torn down in slices (ObjectRouter::dismantle, then heap::HeapScene::dismantle): every
	/// RenderTask::run() spends up to its RenderOptions::teardown_budget_ms on them, and collect() spends up to
	/// `budget_ms` (by default: until nothing is left — an application that stops rendering calls it). Returns what is
	/// left (retired()). The runtime's destruction frees whatever is left. (Classic passes are destroyed with their
	/// task, at once.)
	size_t collect(double budget_ms = std::numeric_limits<double>::infinity());
	/// What retired heap scenes still hold (heap::HeapScene::dismantleLeft), plus one per scene: 0 once all are gone.
	size_t retired() const;
	/// Where the last collect() spent its time (ms): the routers' dismantle slices, destroying a dismantled router,
	/// the heap scenes' dismantle slices, destroying a dismantled scene. Benchmarks: which part makes a long slice.
	struct CollectTimes
	{
		double routers_ms = 0.0, router_destroy_ms = 0.0, scenes_ms = 0.0, scene_destroy_ms = 0.0;
	};
	const CollectTimes& lastCollect() const { return last_collect_; }

private:
	friend class RenderTask;
	friend class RenderTarget;
	friend struct detail::RenderTargetState;
	explicit Runtime(std::unique_ptr<inputs::Context> context) : context_(std::move(context)) {}
	/// Renders every allocated target whose scene changed, before the frame's own passes.
	Result<uint32_t> renderTargets(gpu::CommandList& list);

	/// Hands the router and heap scene of a Render command that left its task to collect() (RenderTask's destructor
	/// and update()).
	void retire(std::unique_ptr<ObjectRouter> router, std::unique_ptr<heap::HeapScene> scene);

	std::unique_ptr<inputs::Context> context_;
	std::set<detail::RenderTargetState*> live_targets_; ///< targets whose framebuffer is allocated
	/// What collect() tears down, the oldest first: a router (forgotten first: it points at the scene) and its heap
	/// scene; destroyed before the context they use.
	struct Retired
	{
		std::unique_ptr<ObjectRouter> router;
		std::unique_ptr<heap::HeapScene> heap;
	};
	std::deque<Retired> retired_;
	CollectTimes last_collect_;
};

} // namespace quokka::runtime
