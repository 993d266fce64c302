// quokka/heap/megacall_scan.hpp — the megacall's GPU exclusive scan, draw arguments and firstDrawInTile index, and the
// probeBinarySearch diagnostics that check them.
//
// A megacall slot draws all its records with one non-indexed vkCmdDrawIndirect; each vertex shader invocation finds
// the record it belongs to with qkFindRecord (quokka/fx/megacall_glsl.hpp). MegacallScan::record writes what that
// search needs: every record's firstEmit (a multi-level scan, no cap on the record count), the indirect arguments and
// the tile index. probeSlot runs the very same search text on the GPU and compares it with a CPU replay; checkScan
// validates the scan's outputs from host copies. Layouts and limits: include/quokka/heap/megacall_scan.glsl.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <quokka/heap/megacall_scan.glsl.h>

#include <quokka/base/result.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/pipeline.hpp>

namespace quokka::gpu
{
class CommandList;
}

namespace quokka::heap
{

/// Words per probed emit: {record, drawIdx, indexStart, indexCount, instanceCount, local, instId, vid}.
inline constexpr uint32_t kProbeWords = QUOKKA_HEAP_PROBE_WORDS;
/// A probe word that could not be computed without reading out of bounds (see ProbeResult).
inline constexpr uint32_t kProbeInvalid = QUOKKA_HEAP_PROBE_INVALID;

/// Tile-index entries needed for a slot emitting at most `emit_bound` vertices: ceil(emit_bound / 64) + 1 (the tiles
/// plus the sentinel). Use it for ScanJob::tile_capacity and to size the tiles buffer (4 bytes per entry).
uint32_t tileCapacityBound(uint64_t emit_bound);

/// Scratch of one slot's scan: the block sums of every level, in one device-local buffer (about 4 bytes per 512
/// records: 1,000,000 records need 1,959 words). Sized for a record capacity; MegacallScan::record grows it (to the
/// next power of two) when a scan needs more, never shrinks it. Move-only: two slots must not share scratch.
/// Owned by the device's thread; must be destroyed before the device (destruction is deferred as usual).
class ScanBuffers
{
public:
	/// Creates scratch for `record_capacity` records (0 is allowed and sized as 1). Errors: as Device::createBuffer.
	static Result<ScanBuffers> create(gpu::Device& device, uint32_t record_capacity,
	                                  std::string name = "megacall.scan");

	ScanBuffers(ScanBuffers&&) noexcept = default;
	ScanBuffers& operator=(ScanBuffers&&) noexcept = default;
	ScanBuffers(const ScanBuffers&) = delete;
	ScanBuffers& operator=(const ScanBuffers&) = delete;

	/// Grows the scratch to hold a scan of `record_count` records; no-op when it already does. A replaced buffer lives
	/// until every command list that recorded it completed. Errors: as Device::createBuffer.
	Result<void> reserve(uint32_t record_count);

	uint32_t recordCapacity() const { return record_capacity_; }
	const gpu::BufferHandle& buffer() const { return buffer_; }

private:
	ScanBuffers() = default;

	gpu::Device* device_ = nullptr;
	gpu::BufferHandle buffer_;
	uint32_t record_capacity_ = 0;
	std::string name_;
};

/// One slot's scan: what MegacallScan::record reads and writes. Every buffer needs Storage usage; the caller keeps
/// them alive until the command list completed (record() keeps only the scratch and its pipelines alive).
struct ScanJob
{
	/// The slot's scratch; not shared with another job of the same record() call.
	ScanBuffers* buffers = nullptr;
	/// At least record_count × 5 u32 words: {firstEmit, drawIdx, indexStart, indexCount, instanceCount} per record.
	/// Words 1..4 are read (written by the CPU before record(); any transfer or compute write earlier in the queue is
	/// made visible by record()'s first barrier), word 0 is written.
	const gpu::Buffer* records = nullptr;
	/// Records to scan, any number ≥ 0 (the scan has no record cap). The sum of indexCount × instanceCount must fit
	/// in u32.
	uint32_t record_count = 0;
	/// Tile-index entries to compute, ≥ 1: the CPU's upper bound on numTiles + 1 (tileCapacityBound of an emit bound).
	/// When the real numTiles + 1 exceeds it, the draw is shortened to (tile_capacity − 1) × 64 vertices so that no
	/// vertex shader reads past the index; checkScan reports that as an args mismatch.
	uint32_t tile_capacity = 1;
	/// Receives the VkDrawIndirectCommand {vertexCount = totalEmit, instanceCount = 1, firstVertex = 0,
	/// firstInstance = 0} at args_offset (a multiple of 4; 16 bytes). Jobs may share one args buffer at different
	/// offsets.
	const gpu::Buffer* args = nullptr;
	uint64_t args_offset = 0;
	/// At least tile_capacity u32 words. Receives firstDrawInTile: tiles[t] = the last record r with
	/// firstEmit(r) ≤ t × 64 for t < numTiles = ceil(totalEmit / 64), and tiles[numTiles] = record_count − 1 (the last
	/// valid record). Entries past numTiles keep their contents.
	const gpu::Buffer* tiles = nullptr;
	/// Where the job's records start in `records`, in bytes: a multiple of 256 (every device's storage-buffer offset
	/// alignment allows it). Jobs may share a records buffer at disjoint ranges.
	uint64_t records_offset = 0;
};

/// One probed emit: the record qkFindRecord returned, that record's words 1..4, and what the vertex shader derives:
/// local = e − firstEmit, instId = local / indexCount, vid = local % indexCount for non-indexed records, else
/// arena[indexStart + local % indexCount]. Words the GPU probe could not compute without reading out of bounds are
/// kProbeInvalid: all eight when a tile entry it would search is not below record_count; instId and vid when the
/// record's indexCount is 0; vid when the index lies past the arena. A correct scan never produces any of those.
struct ProbeResult
{
	uint32_t record = 0;
	uint32_t draw_idx = 0;
	uint32_t index_start = 0;
	uint32_t index_count = 0;
	uint32_t instance_count = 0;
	uint32_t local = 0;
	uint32_t inst_id = 0;
	uint32_t vid = 0;

	bool operator==(const ProbeResult&) const = default;
};
static_assert(sizeof(ProbeResult) == kProbeWords * 4, "ProbeResult must match QUOKKA_HEAP_PROBE_WORDS");

/// A probed emit where the GPU search and the CPU replay disagree.
struct ProbeMismatch
{
	uint32_t emit = 0;
	ProbeResult expected; ///< CPU replay
	ProbeResult got;      ///< GPU probe
};

/// What probeSlot found.
struct ProbeReport
{
	uint64_t total_emit = 0;               ///< Σ indexCount × instanceCount of the records (CPU)
	uint32_t probed = 0;                   ///< emits probed
	uint32_t mismatch_count = 0;           ///< all mismatches
	std::vector<ProbeMismatch> mismatches; ///< the first kMaxReportedMismatches, in probe order
	static constexpr uint32_t kMaxReportedMismatches = 64;
	/// checkTriangleCoherence (all_emits with primitive_vertices > 1): primitives checked, primitives whose emits the
	/// GPU search did not map to one record, one instance and consecutive vertices of one primitive, and the first
	/// emit of the first such primitive.
	uint64_t primitives_checked = 0;
	uint64_t incoherent_primitives = 0;
	uint32_t first_incoherent_emit = 0;
};

/// Which slot probeSlot checks and how many emits. All buffers need Storage usage; records and arena, which are read
/// back, TransferSrc too.
struct ProbeDesc
{
	const gpu::Buffer* records = nullptr; ///< the scanned records (≥ record_count × 20 bytes)
	uint32_t record_count = 0;
	const gpu::Buffer* tiles = nullptr; ///< the scanned tile index
	/// The u32 index arena that indexStart points into; read back whole for the replay (its size is the cost).
	const gpu::Buffer* arena = nullptr;
	/// Emits probed in addition to the first and last emit of every non-empty record: this many, drawn uniformly with
	/// `seed`. Ignored with all_emits.
	uint32_t random_emits = 4096;
	uint32_t seed = 1;
	/// Probe every emit instead (32 bytes of results per emit: 1 M emits = 32 MiB).
	bool all_emits = false;
	/// With all_emits: vertices per primitive (3 for triangle lists) for checkTriangleCoherence; 0 or 1 skips it.
	uint32_t primitive_vertices = 0;
};

/// checkTriangleCoherence over the GPU results of every emit of a slot (`got[e]` for emit e): emits
/// [p·k, (p+1)·k) of primitive p (k = primitive_vertices) must come from one record and one instance, at consecutive
/// local emits starting on a primitive boundary of that instance — what the rasteriser needs to assemble whole
/// primitives of one draw. Fills the report's coherence fields.
void checkTriangleCoherence(std::span<const ProbeResult> got, uint32_t primitive_vertices, ProbeReport& report);

/// The per-device scan kernels. Create once per device and record any number of slots with it; destroy before the
/// device. Owned by the device's thread.
class MegacallScan
{
public:
	/// Builds the three scan pipelines (embedded SPIR-V); the probe pipeline is compiled on first use. `max_groups`:
	/// at most this many workgroups per dispatch (0: the device's maxComputeWorkGroupCount[0]); the kernels loop over
	/// what the workgroups do not cover, and tests pass small values to run those loops. Errors: as
	/// Device::createComputePipeline.
	static Result<MegacallScan> create(gpu::Device& device, uint32_t max_groups = 0);

	MegacallScan(MegacallScan&&) noexcept = default;
	MegacallScan& operator=(MegacallScan&&) noexcept = default;
	MegacallScan(const MegacallScan&) = delete;
	MegacallScan& operator=(const MegacallScan&) = delete;

	/// Records the scans of `jobs` into `list`, level by level across all jobs, so a frame's slots share one barrier
	/// per level (about 5 in all) instead of paying 5 each. Per job: firstEmit into word 0 of every record (block
	/// scans of 512, block sums scanned recursively until one block remains, offsets added back down), then the args
	/// and the tile index. Barriers: first, earlier transfer/compute writes and draw reads → compute; between levels,
	/// compute → compute; last, compute writes → DRAW_INDIRECT (indirect-command read) + VERTEX_SHADER (storage read).
	/// Grows scratch (ScanBuffers::reserve) as needed. Preconditions (asserted): every ScanJob field as documented,
	/// no two jobs share scratch, records or tiles. Errors: OutOfMemory from growing scratch.
	Result<void> record(gpu::CommandList& list, std::span<const ScanJob> jobs) const;
	/// One job.
	Result<void> record(gpu::CommandList& list, const ScanJob& job) const { return record(list, {&job, 1}); }

	/// probeBinarySearch: runs qkFindRecord — the vertex shaders' own text, compiled at run time — for a set of emits
	/// (desc), compares each answer with replayProbe over host copies of the records and the arena, and returns the
	/// mismatches. Submits and waits (diagnostics, not per frame); reads back the records and the whole arena. An
	/// empty slot, or one emitting nothing, probes nothing. Errors: ShaderCompile, OutOfMemory, readback failures,
	/// InvalidArgument when the slot's total emit does not fit in u32.
	Result<ProbeReport> probeSlot(const ProbeDesc& desc);

private:
	MegacallScan() = default;
	Result<const gpu::Pipeline*> probePipeline();
	Result<std::vector<ProbeResult>> runProbe(const ProbeDesc& desc, std::span<const uint32_t> emits);

	gpu::Device* device_ = nullptr;
	uint64_t storage_alignment_ = 4; ///< minStorageBufferOffsetAlignment
	uint32_t max_groups_ = 0;        ///< dispatch1d's cap (0: the device's limit)
	gpu::PipelineHandle scan_;
	gpu::PipelineHandle add_;
	gpu::PipelineHandle tiles_;
	gpu::PipelineHandle probe_;
};

/// The CPU side of probeBinarySearch: computes, for each emit, the ProbeResult the GPU probe must return — by another
/// method: the record is found with std::upper_bound on a prefix the CPU sums from indexCount × instanceCount (words 3
/// and 4), ignoring the GPU's firstEmit and tile index, so that comparing the two checks scan, tiles and search
/// together.
/// `records`: the slot's records, 5 words each (word 0 is not read). `arena`: the index arena indexStart points into.
/// `emits`: each < the slot's total emit (else its result is all kProbeInvalid). `out`: emits.size() results.
void replayProbe(std::span<const uint32_t> records, std::span<const uint32_t> arena, std::span<const uint32_t> emits,
                 std::span<ProbeResult> out);

/// Validates a scan from host copies; returns one line per finding (empty = correct), at most 8 per kind plus a count
/// of the rest. Checks every firstEmit against the CPU prefix of indexCount × instanceCount, args ==
/// {totalEmit, 1, 0, 0}, tiles[t] against a CPU search for every t < numTiles, and the sentinel tiles[numTiles] ==
/// recordCount − 1 (an empty slot: args {0, 1, 0, 0} and tiles[0] == 0).
/// `records`: record_count × 5 words. `tiles`: the tile index, at least numTiles + 1 words (fewer is a finding).
/// `args`: the 4 words of the VkDrawIndirectCommand.
std::vector<std::string> checkScan(std::span<const uint32_t> records, std::span<const uint32_t> tiles,
                                   std::span<const uint32_t> args);

} // namespace quokka::heap
