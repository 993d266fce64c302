// The CLI's commands. Each returns the process exit code; errors are printed as one line on stderr.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <quokka/base/result.hpp>
#include <quokka/gpu/device.hpp>

namespace quokka::app
{

/// Options every GPU command shares: --device, --validate, --no-cache.
struct DeviceOptions
{
	std::string device = "";
	bool validate = false;
	bool no_cache = false;

	void addTo(CLI::App& cmd);
	/// The environment's DeviceDesc with the command-line overrides applied. The shader and pipeline caches live in
	/// QUOKKA_CACHE_DIR, else defaultCacheDir(); --no-cache keeps them in memory only.
	Result<gpu::DeviceDesc> desc() const;
};

/// $XDG_CACHE_HOME/quokka, else $HOME/.cache/quokka (the XDG base directory rule); empty when neither is set to an
/// absolute path.
std::string defaultCacheDir();

/// Progress on stderr for work that takes a while (scene generation, shader and pipeline compiles, frames): one status
/// line, overwritten in place and erased when the next output comes. Shown only when enabled — stderr is a terminal
/// and neither --quiet nor --json was given (main decides).
void enableProgress(bool enabled);
void progress(const std::string& status);
/// Erases the status line (before other output).
void clearProgress();

/// Prints "quokka: error: <message>" on stderr and returns 1 (a run-time failure).
int fail(const Error& error);
int fail(const std::string& message);
/// Prints "quokka: error: <message> (see quokka --help)" on stderr and returns 2 (bad arguments or settings).
int usage(const std::string& message);

struct InfoOptions
{
	DeviceOptions device;
	bool json = false;
};
int runInfo(const InfoOptions& options);

struct RenderOptions
{
	DeviceOptions device;
	std::string scene = "triangle";
	uint32_t width = 1280;
	uint32_t height = 720;
	uint32_t frames = 1;
	uint32_t samples = 4;
	std::string out = "";
	bool json = false;
	std::string meshlet_path = "auto"; ///< `--scene meshlets`: auto | vertex | mesh
	std::string gltf;                  ///< `--gltf FILE`: import instead of a built-in scene
	bool gltf_any_path = false;        ///< `--gltf-any-path`: the file's URIs may leave its folder
	uint32_t objects = 0;              ///< generated scenes; 0 = the scene's default
	uint64_t seed = 1;
	std::string path = "heap";         ///< heap (the hybrid router: the default) | classic
	std::string draw = "auto";         ///< heap draw strategy: auto | indirect | megacall
	uint64_t max_chunk_bytes = 0;      ///< heap arena chunk cap; 0 = the device's default
	uint32_t convert_threads = 4;      ///< `--convert-threads` (HeapTuning::convert_threads)
	bool write_in_place = true;        ///< `--write-in-place on|off` (HeapTuning::write_in_place)
	std::string view;                  ///< `--view AZ,EL`: the camera's direction in degrees (empty: 34°, 35°)
	bool ortho = false;                ///< `--ortho`: orthographic projection
	int camera = -1;                   ///< `--camera N`: the glTF file's camera N; -1 = a camera framing the scene
	bool quiet = false;                ///< `--quiet`: no progress on stderr
	bool background_pipelines = false; ///< `--background-pipelines`: frames do not wait for pipeline creation
	std::string heap_switch;           ///< `--heap on|off`: the heap path's heap_enabled
	std::string textures = "auto";     ///< `--textures auto|bindless|atlas|bound` (HeapOptions::textures)
	bool explain_routing = false;      ///< `--explain-routing`: objects per routing reason (heap path)
	/// `--compare`: the same frames rendered first on the classic path, then on the heap path; a side-by-side summary
	bool compare = false;
	std::string origin; ///< `--origin X,Y,Z`: the scene (and its camera) moved by this offset in metres

	/// What is rendered, for reports and the default output name: the scene, or the glTF file's name without folder
	/// and extension.
	std::string label() const;
};
int runRender(const RenderOptions& options);
/// `quokka validate`: renders a scene on the heap path and runs every heap diagnostic (cmd_validate.cpp).
int runValidate(const RenderOptions& options);

struct BenchOptions
{
	DeviceOptions device;
	std::string name;
	bool json = false;
	uint64_t ops = 2000000;        ///< allocator alloc+free pairs per run
	uint32_t reps = 5;             ///< runs per figure (the median is reported)
	uint64_t mib = 0;              ///< GPU working set in MiB; 0 = 512 on a GPU, 64 on a CPU device
	std::vector<uint32_t> objects; ///< draw: object counts; update: the scene's size; empty = the device's default
	std::string path;              ///< draw: restricts to classic | heap; empty = both (update: heap only)
	std::string draw;              ///< auto | indirect | megacall | all; empty = draw: all, update: auto
	uint64_t max_chunk_bytes = 0;  ///< heap arena chunk cap; 0 = the device's default
	uint32_t convert_threads = 4;  ///< update: `--convert-threads` (HeapTuning::convert_threads)
	bool write_in_place = true;    ///< `--write-in-place on|off` (HeapTuning::write_in_place)
	std::vector<std::string> update_ops; ///< update: operations to measure (add, remove, edit); empty = all
	std::vector<uint32_t> update_k;      ///< update: changes per frame; empty = 1, 100, 10000
	std::string update_wait = "block";   ///< update: how a frame waits for the GPU (block | spin)
	uint32_t depth = 16;                 ///< chain: depth of the hierarchy the objects hang below
	std::vector<uint32_t> textures;      ///< textures: distinct texture counts; empty = the device's default
	uint32_t texture_size = 0;           ///< textures: texels per side; 0 = 256 on a GPU, 64 on a CPU device
};
int runBench(const BenchOptions& options);
int runBenchMeshlet(const BenchOptions& options);

/// `render --scene grid|city` and `--gltf` (scene_render.cpp).
int runRenderScene(const RenderOptions& options);
/// `bench draw`: classic, heap strategies and the baked floor on the unique-mesh scene (bench_draw.cpp).
int runBenchDraw(const BenchOptions& options);
/// `bench update`: heap CPU time and upload bytes per added, removed or edited object (bench_update.cpp).
int runBenchUpdate(const BenchOptions& options);
/// `bench camera`: CPU update, GPU and frame time of static and camera frames per effect and path (bench_camera.cpp).
int runBenchCamera(const BenchOptions& options);
/// `bench chain`: CPU update, GPU and frame time of static and root-move frames below a deep hierarchy
/// (bench_camera.cpp).
int runBenchChain(const BenchOptions& options);
/// `bench textures`: draws, GPU time and placement of textured objects through the atlas, bound textures and the
/// classic path, and the atlas's upload throughput (bench_textures.cpp).
int runBenchTextures(const BenchOptions& options);
/// `bench modes`: the partition of records by slot on the device, both layouts (bench_modes.cpp).
int runBenchModes(const BenchOptions& options);
/// `render --scene meshlets` (scene_meshlets.cpp).
int runRenderMeshlets(const RenderOptions& options);

} // namespace quokka::app
