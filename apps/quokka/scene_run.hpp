// The frame loop shared by `render --scene`, `validate` and the draw/update benchmarks: scenes through the Runtime on
// either render path, an orbiting camera, per-frame CPU and GPU timings.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "render_common.hpp"
#include "scenes.hpp"

#include <quokka/gpu/timing.hpp>
#include <quokka/runtime/runtime.hpp>

namespace quokka::app
{

struct FrameRecord
{
	double update_ms, encode_ms, gpu_ms, frame_ms;
	uint32_t draws, pipeline_binds, prepared, uniform_uploads;
	uint32_t pipelines_pending = 0, waiting_draws = 0; ///< after the frame (background pipelines)
	/// Per path: the heap scenes' update (with upload and prepare) and encode, the classic passes' update and encode
	double heap_update_ms = 0, heap_encode_ms = 0, classic_update_ms = 0, classic_encode_ms = 0;
	/// The heap's update by step, its upload and prepare; the runtime's staging flush and the teardown of retired
	/// heap scenes (where a frame's time went: `render --json`'s per-frame `heap_phases_ms`)
	heap::HeapUpdatePhases heap_phases{};
	double heap_upload_ms = 0, heap_prepare_ms = 0, flush_ms = 0, teardown_ms = 0;
	uint64_t upload_bytes = 0; ///< the heap's bytes staged for the device plus the runtime's staging flush
	uint64_t buffers_created = 0, buffer_bytes_created = 0; ///< device buffers the frame's run() created
};

/// The heap's update steps with its upload (and prepare where given) as JSON, in milliseconds.
nlohmann::ordered_json heapPhasesJson(const heap::HeapUpdatePhases& phases, double upload_ms,
                                      std::optional<double> prepare_ms = std::nullopt);

struct SceneRun
{
	std::unique_ptr<runtime::RenderTask> task; ///< kept for diagnostics; destroy before the runtime
	std::vector<FrameRecord> per_frame;
	FrameSeries frames;
	std::vector<double> update_ms;
	std::vector<double> gpu_ms;
	runtime::TaskStats last;
	uint32_t prepared_first = 0;
	/// Background pipelines: wall time from the first frame's start to the end of the first frame that left no draw
	/// out with nothing pending.
	double pipelines_ready_ms = 0.0;
	uint32_t completion_frames = 0; ///< frames rendered after the last one because it left draws out
};

/// Where the camera looks from (render's --view, --ortho, --camera). The framed camera orbits the bounds' centre over
/// the frames starting at `azimuth_deg`, from `elevation_deg` above the horizon, and fits the bounds' eight corners
/// into the image with 8 % margin (perspective, 50° vertical field of view, or orthographic). `camera` ≥ 0 uses the
/// glTF file's camera of that index instead, for every frame.
struct ViewSpec
{
	double azimuth_deg = 0.6 * 180.0 / 3.14159265358979323846; ///< 0° looks from +x at the centre, 90° from +z
	double elevation_deg = 35.0;
	bool ortho = false;
	int camera = -1;
};
/// The ViewSpec of `o`'s --view/--ortho/--camera. Errors: InvalidArgument (a malformed --view, an elevation outside
/// −89…89°).
Result<ViewSpec> viewSpecOf(const RenderOptions& o);

/// The offset of `o`'s --origin (zero when not given). Errors: InvalidArgument for a malformed or non-finite
/// --origin.
Result<math::V3d> originOf(const RenderOptions& o);
/// Moves every object of `scene` (its ModelTrafo, the identity when absent, composed after the offset), its bounds and
/// its file cameras by `offset`.
void offsetScene(GeneratedScene& scene, const math::V3d& offset);

/// What `render --scene`/`--gltf` and `validate` set up before their frames: the device, the scene with its camera
/// globals, a runtime and a framebuffer of `o`'s size and samples. close() drops the GPU objects (before
/// validationExit reads the device's error count); the device goes last.
struct SceneSession
{
	std::unique_ptr<gpu::Device> device;
	SceneGlobals globals;
	GeneratedScene scene;
	std::unique_ptr<runtime::Runtime> runtime;
	std::optional<runtime::Framebuffer> framebuffer;

	void close()
	{
		framebuffer.reset();
		runtime.reset();
	}
};
/// Creates the device, loads the scene, creates the runtime and the framebuffer. Errors: as each step.
Result<SceneSession> openScene(const RenderOptions& o);

/// Refuses a generated scene that cannot fit in the host memory available now (an estimate per object). Errors:
/// OutOfMemory naming the estimate and what is available.
Result<void> checkSceneFits(const RenderOptions& o);
/// The built-in scene or glTF file `o` names.
Result<GeneratedScene> loadScene(const RenderOptions& o, const SceneGlobals& g);
/// Renders `frames` frames of `scene` (the camera orbiting unless `orbit` is false) into `fb` with `options`, seen as
/// `view` says; the task stays in SceneRun::task for diagnostics. With `background`, pipelines are created on worker
/// threads (frames do not wait; draws do) and, when the last frame left draws out, it is rendered again after
/// waiting for them (SceneRun::completion_frames), so the image written is complete. Errors: InvalidArgument for a
/// camera index the scene does not have; as the renderer.
Result<SceneRun> runFrames(gpu::Device& device, runtime::Runtime& rt, runtime::Framebuffer& fb,
                           const GeneratedScene& scene, SceneGlobals& g, uint32_t frames, bool orbit,
                           const runtime::RenderOptions& options, const ViewSpec& view = {}, bool background = false);
/// A single-colour-attachment sRGB signature with `samples`.
scene::FramebufferSignature signatureFor(uint32_t samples);
/// What a GPU benchmark draws with (`bench draw`, `bench update`): a runtime over `device` and a single-sample
/// kBenchWidth × kBenchHeight framebuffer. Errors: as Runtime::create and createFramebuffer.
struct BenchSession
{
	std::unique_ptr<runtime::Runtime> runtime;
	runtime::Framebuffer framebuffer;
	static Result<BenchSession> create(gpu::Device& device);
};
/// One frame of `task` recorded, submitted and waited for: its wall time (recording to completion) and its timing.
struct TimedFrame
{
	double wall_ms = 0;
	gpu::FrameTiming timing;
};
Result<TimedFrame> timedFrame(gpu::Device& device, gpu::FrameTimer& timer, runtime::RenderTask& task,
                              runtime::Framebuffer& fb);
/// The camera of a render's first frame with the default view (what `runFrames` uses without orbiting).
void placeStaticCamera(SceneGlobals& g, const math::Box3d& bounds, double aspect);
/// A task drawing `objects` (an unordered set, read at the first run) after a clear to the benchmarks' background,
/// for the session's framebuffer.
std::unique_ptr<runtime::RenderTask> benchTask(BenchSession& session,
                                               const std::vector<scene::RenderObjectPtr>& objects,
                                               const runtime::RenderOptions& options);
/// The runtime options of --path/--draw/--max-chunk-bytes. Errors: InvalidArgument for unknown names.
Result<runtime::RenderOptions> renderOptionsOf(const std::string& path, const std::string& draw,
                                               uint64_t max_chunk_bytes);
/// Every heap diagnostic over every heap scene of `task` (cmd_validate.cpp); empty when clean.
Result<std::vector<std::string>> heapFindings(runtime::RenderTask& task);

} // namespace quokka::app
