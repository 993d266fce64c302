// What every `quokka render` scene shares: the device, the render targets, the PNG output, the frame statistics
// and the common part of the report (text and --json).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/timing.hpp>

#include "commands.hpp"

#include <optional>

namespace quokka::heap
{
struct HeapOptions;
}

namespace quokka::app
{

/// How steady a series of per-frame CPU times is (the stutter figures): frames, median, p90, p99, max,
/// max_over_median, and a histogram of the frames by their ratio to the median — "below_1.25x", "1.25x_2x", "2x_4x",
/// "4x_8x", "8x_and_above" (counts). Empty series: frames 0 and zeros.
nlohmann::ordered_json frameSpread(std::vector<double> ms);

/// Estimated memory of the benchmarks' unique-mesh scene and of one task drawing it, per object (measured at 10^5 and
/// 10^6 objects: docs/benchmarks.md § load and scale). Host: the scene's meshes, objects and avals; a heap task's
/// objects, entries and tables, and its placement's staging; a classic task's prepared objects. Device: a heap
/// task's arena; a classic task's vertex and uniform buffers.
constexpr uint64_t kUniqueSceneHostBytes = 1600;
constexpr uint64_t kHeapTaskHostBytes = 3500 + 2000, kHeapTaskDeviceBytes = 2000;
constexpr uint64_t kClassicTaskHostBytes = 3000, kClassicTaskDeviceBytes = 2500;

/// A one-line OutOfMemory error when `objects` objects would need more host memory than is available
/// (availableHostBytes) or more device memory than the device's budget — `host_per_object` and `device_per_object`
/// bytes each (on a CPU device both are host memory) plus 256 MiB for the device, compilers and caches — naming
/// `what` (the benchmark); otherwise nothing. Unknown availability passes.
Result<void> checkObjectsFit(const gpu::Device& device, const std::string& what, uint64_t objects,
                             uint64_t host_per_object, uint64_t device_per_object);

/// "1.5 GiB".
std::string gib(uint64_t bytes);

/// MemAvailable of /proc/meminfo in bytes: what can still be allocated without swapping; 0 when unknown.
uint64_t availableHostBytes();

/// Bytes the process's malloc holds for the application now (jemalloc's `stats.allocated`), or nullopt where the
/// CLI runs on another malloc (sanitizer builds). On a CPU device this includes the device's memory (lavapipe
/// allocates it on the host): subtract gpu::Device::memoryStats() to get the host's own share.
std::optional<uint64_t> hostAllocatedBytes();

/// Median of `values` (the upper one for even counts); 0 for none.
double median(std::vector<double> values);

/// Thread CPU time in seconds: per-core figures must not count time the scheduler gave to other processes (a shared
/// 2-core CI machine is often loaded 2-3x).
double threadSeconds();

/// The core's clock as this thread sees it, in GHz: a chain of dependent 64-bit multiplies, 3 cycles each on every
/// x86-64 core since Sandy Bridge and Zen (and on the common Arm cores), so no rename trick can shorten it (a chain of
/// `add reg, imm` can be: Golden Cove folds those). ~18 M cycles (6–9 ms). Hosts that change clock between processes
/// (the H200 host runs its cores at ~1.6 to ~3 GHz as other guests load it) make times alone incomparable across
/// runs; cycles are not.
double clockGHz();

/// The background every scene clears to (linear RGBA).
inline constexpr float kBackground[4] = {0.08f, 0.09f, 0.11f, 1.0f};

/// A device chosen by `o.device` whose limits and free device memory admit the requested framebuffer (its size, samples
/// and depth). Errors: InvalidArgument (beyond maxImageDimension2D), OutOfMemory (not enough device memory left).
Result<std::unique_ptr<gpu::Device>> createRenderDevice(const RenderOptions& o);

/// The framebuffer the GPU benchmarks draw into (`bench draw`, `bench update`).
inline constexpr uint32_t kBenchWidth = 1280, kBenchHeight = 720;
/// The device `b.device` chooses, admitting a single-sample kBenchWidth × kBenchHeight framebuffer.
Result<std::unique_ptr<gpu::Device>> createBenchDevice(const BenchOptions& b);
/// `b`'s --objects counts, else the default for the device: 10^4, 10^5 and 10^6 on a GPU, 10^3 and 10^4 on a CPU.
std::vector<uint32_t> benchObjectCounts(const BenchOptions& b, const gpu::Device& device);
/// The bench flags every heap variant takes: `--max-chunk-bytes` and `--write-in-place`.
void applyHeapFlags(const BenchOptions& b, heap::HeapOptions& heap);

/// The targets of a render: single-sample RGBA8 colour (read back at the end), a multisampled colour target when
/// o.samples > 1 (resolved into `color`), and optionally a D32 depth target at o.samples.
struct RenderTargets
{
	gpu::ImageHandle color;
	gpu::ImageHandle msaa;
	gpu::ImageHandle depth;

	/// A pass over these targets that clears colour to kBackground and depth to 1.
	gpu::RenderingDesc pass() const;
};
Result<RenderTargets> createRenderTargets(gpu::Device& device, const RenderOptions& o, bool with_depth);

/// Per-frame timings of a run, in the timer's source.
struct FrameSeries
{
	std::vector<double> frame_ms;
	std::vector<double> encode_ms;
	gpu::TimingSource source = gpu::TimingSource::Wall;
};

/// Reads `targets.color` back and writes it to o.out (default quokka-<scene>.png); returns the path written.
Result<std::string> writeRenderOutput(gpu::Device& device, const RenderTargets& targets, const RenderOptions& o);

/// The keys every render reports first: scene, width, height, samples, frames, device, device_type, timing_source,
/// frame_ms {median, min, max}, cpu_encode_ms {median}.
nlohmann::ordered_json renderJson(const RenderOptions& o, const gpu::Device& device, const FrameSeries& frames);
/// Adds validation, validation_errors and out to `j` and prints it as the one JSON object on stdout.
void printRenderJson(nlohmann::ordered_json& j, const gpu::Device& device, const std::string& out);
/// The first two text lines: what was rendered where, and the frame timings.
void printRenderHeader(const RenderOptions& o, const gpu::Device& device, const FrameSeries& frames);
/// 0 when the run produced no validation error, else the one-line failure naming the first one.
int validationExit(const gpu::Device& device);

} // namespace quokka::app
