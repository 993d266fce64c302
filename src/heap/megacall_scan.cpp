// MegacallScan: the megacall's exclusive scan of emit counts, its draw arguments and firstDrawInTile index (issue #5),
// and the probeBinarySearch diagnostics. Kernels: shaders/heap/megacall_{scan,scan_add,tiles}.comp.
//
// The reference system (wombat.rendering) scanned 512-record blocks and then one block of block sums, which
// capped a slot at 512 × 512 = 262,144 records. Here the block sums are scanned recursively, level by level, until
// one sum remains (4 levels cover any u32 record count), and the offsets are added back down level by level. All jobs
// of one record() call advance level by level together so that a frame's slots share each barrier.
#include <quokka/heap/megacall_scan.hpp>

#include "findings.hpp"

#include "heap_shaders.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <map>
#include <random>

#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/grow_buffer.hpp>
#include <quokka/gpu/shader.hpp>

namespace quokka::heap
{

// The record layout and the tile size are fx/megacall_record.glsl.h's, for the generated vertex shaders and these
// kernels alike; the scan's own layouts are megacall_scan.glsl.h's.
static_assert(QUOKKA_HEAP_SCAN_BLOCK == 2 * QUOKKA_HEAP_SCAN_GROUP_SIZE &&
                  (1u << QUOKKA_HEAP_SCAN_BLOCK_SHIFT) == QUOKKA_HEAP_SCAN_BLOCK,
              "a scan block is two elements per invocation, a power of two");
static_assert(sizeof(detail::MegacallScanPush) == 16 && sizeof(detail::MegacallAddPush) == 16 &&
                  sizeof(detail::MegacallTilesPush) == 16,
              "push constants are 4 tightly packed u32");

namespace
{

constexpr uint32_t kBlock = QUOKKA_HEAP_SCAN_BLOCK;
constexpr uint32_t kRecordWords = QUOKKA_HEAP_RECORD_WORDS;
constexpr uint64_t kRecordBytes = kRecordWords * 4;
constexpr uint64_t kArgsBytes = sizeof(VkDrawIndirectCommand);

// The block-sum levels of a scan over `record_count` records, packed one after another in the scratch buffer: level 0
// holds one sum per 512-record block, level k one per 512 sums of level k − 1, and the last level a single sum, the
// total. 1,000,000 records: 1,954 + 4 + 1 words.
struct Levels
{
	uint32_t count = 0; // 0 for an empty slot
	std::array<uint32_t, QUOKKA_HEAP_SCAN_MAX_LEVELS> size{};
	std::array<uint32_t, QUOKKA_HEAP_SCAN_MAX_LEVELS> offset{};
	uint32_t words = 0;
};

Levels scanLevels(uint32_t record_count)
{
	Levels levels;
	uint64_t below = record_count;
	while (below > 0 && (levels.count == 0 || below > 1))
	{
		QUOKKA_ASSERT(levels.count < QUOKKA_HEAP_SCAN_MAX_LEVELS, "scan levels exceed QUOKKA_HEAP_SCAN_MAX_LEVELS");
		const uint32_t size = uint32_t((below + kBlock - 1) / kBlock);
		levels.size[levels.count] = size;
		levels.offset[levels.count] = levels.words;
		levels.words += size;
		++levels.count;
		below = size;
	}
	return levels;
}

using Binding = gpu::StorageBinding;
using gpu::pushStorageBuffers;

// Compute writes of one level → the next level's reads and writes. Synchronization validation (layers 1.3.239) cannot
// check these: it records a read-write storage binding as a write only and does not report write-after-write between
// dispatches, so removing one passes it (tried); only the barrier before the tile kernel, whose inputs are readonly
// bindings, is checked by it. Lavapipe runs dispatches in order, so the tests' results cannot notice a missing one
// either: these are checked by review.
void levelBarrier(gpu::CommandList& list)
{
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
}

// The records a job binds: exactly its records, so that a larger buffer never exceeds maxStorageBufferRange. An empty
// slot's tile kernel reads no record, but the binding must still be a valid range.
Binding recordsBinding(const gpu::Buffer& records, uint32_t record_count, uint64_t offset = 0)
{
	return {&records, offset, std::min(records.size() - offset, std::max<uint64_t>(record_count, 1) * kRecordBytes)};
}
Binding recordsBinding(const ScanJob& job)
{
	return recordsBinding(*job.records, job.record_count, job.records_offset);
}

void checkJob([[maybe_unused]] const ScanJob& job)
{
	QUOKKA_ASSERT(job.buffers && job.buffers->buffer() && job.records && job.args && job.tiles,
	              "ScanJob: scratch, records, args and tiles are required");
	QUOKKA_ASSERT(job.records_offset % 256 == 0 && job.records_offset < job.records->size(),
	              "ScanJob: records_offset must be a multiple of 256 inside the records buffer");
	QUOKKA_ASSERT(job.records->size() >= job.records_offset + uint64_t(job.record_count) * kRecordBytes,
	              "ScanJob: records buffer smaller than records_offset + record_count × 20 bytes");
	QUOKKA_ASSERT(job.tile_capacity >= 1, "ScanJob: tile_capacity must be ≥ 1 (the sentinel)");
	QUOKKA_ASSERT(job.tiles->size() >= uint64_t(job.tile_capacity) * 4,
	              "ScanJob: tiles buffer smaller than tile_capacity words");
	QUOKKA_ASSERT(job.args_offset % 4 == 0 && job.args_offset + kArgsBytes <= job.args->size(),
	              "ScanJob: args_offset must be a multiple of 4 with 16 bytes behind it");
	QUOKKA_ASSERT(hasFlag(job.records->usage(), gpu::BufferUsage::Storage) &&
	                  hasFlag(job.args->usage(), gpu::BufferUsage::Storage) &&
	                  hasFlag(job.tiles->usage(), gpu::BufferUsage::Storage),
	              "ScanJob: records, args and tiles need Storage usage");
}

// Jobs of one record() call run without barriers between them inside a level, so they must not write the same memory.
[[maybe_unused]] bool jobsAreDisjoint(std::span<const ScanJob> jobs)
{
	for (size_t i = 0; i < jobs.size(); ++i)
		for (size_t j = i + 1; j < jobs.size(); ++j)
		{
			const ScanJob& a = jobs[i];
			const ScanJob& b = jobs[j];
			const uint64_t a_end = a.records_offset + uint64_t(std::max(a.record_count, 1u)) * kRecordBytes;
			const uint64_t b_end = b.records_offset + uint64_t(std::max(b.record_count, 1u)) * kRecordBytes;
			const bool records_overlap =
			    a.records->id() == b.records->id() && a.records_offset < b_end && b.records_offset < a_end;
			if (a.buffers == b.buffers || records_overlap || a.tiles->id() == b.tiles->id())
				return false;
			const uint64_t gap =
			    a.args_offset > b.args_offset ? a.args_offset - b.args_offset : b.args_offset - a.args_offset;
			if (a.args->id() == b.args->id() && gap < kArgsBytes)
				return false;
		}
	return true;
}

// Exclusive prefix of indexCount × instanceCount (words 3 and 4) with the total at [record count], summed in u64 so
// that an overflowing slot is reported rather than wrapped.
std::vector<uint64_t> emitPrefix(std::span<const uint32_t> records)
{
	const size_t n = records.size() / kRecordWords;
	std::vector<uint64_t> prefix(n + 1, 0);
	for (size_t r = 0; r < n; ++r)
	{
		const uint32_t* w = records.data() + r * kRecordWords;
		prefix[r + 1] = prefix[r] + uint64_t(w[QUOKKA_HEAP_RECORD_INDEX_COUNT]) * w[QUOKKA_HEAP_RECORD_INSTANCE_COUNT];
	}
	return prefix;
}

Result<std::vector<uint32_t>> readWords(gpu::Device& device, const gpu::Buffer& buffer, uint64_t bytes)
{
	std::vector<uint32_t> words(bytes / 4);
	if (words.empty())
		return words;
	QUOKKA_TRY_ASSIGN(data, device.readBuffer(buffer, 0, words.size() * 4));
	std::memcpy(words.data(), data.data(), words.size() * 4);
	return words;
}

// What probeSlot probes: the first and last emit of every non-empty record (every record boundary), then
// `random_emits` uniform samples — or every emit.
std::vector<uint32_t> probeEmits(std::span<const uint64_t> prefix, const ProbeDesc& desc)
{
	const uint32_t total = uint32_t(prefix.back());
	std::vector<uint32_t> emits;
	if (desc.all_emits)
	{
		emits.resize(total);
		for (uint32_t e = 0; e < total; ++e)
			emits[e] = e;
		return emits;
	}
	for (size_t r = 0; r + 1 < prefix.size(); ++r)
		if (prefix[r + 1] > prefix[r])
		{
			emits.push_back(uint32_t(prefix[r]));
			if (prefix[r + 1] - 1 > prefix[r])
				emits.push_back(uint32_t(prefix[r + 1] - 1));
		}
	std::mt19937 rng(desc.seed);
	std::uniform_int_distribution<uint32_t> pick(0, total - 1);
	for (uint32_t i = 0; i < desc.random_emits; ++i)
		emits.push_back(pick(rng));
	return emits;
}

// probeBinarySearch: the shared search text between a header and a main, compiled at run time so that the probe runs
// exactly the function the generated vertex shaders run. `e` plays gl_VertexIndex. The checks before the search
// guard only what a corrupt tile index would make it read out of bounds; on a correct scan they never fire.
constexpr const char* kProbeHead = R"(#version 460
layout(local_size_x = QUOKKA_HEAP_PROBE_GROUP_SIZE) in;

layout(set = 0, binding = 0, std430) readonly buffer QkRecords { uint qk_records[]; };
layout(set = 0, binding = 1, std430) readonly buffer QkTiles { uint qk_tiles[]; };
layout(set = 0, binding = 2, std430) readonly buffer Arena { uint arena[]; };
layout(set = 0, binding = 3, std430) readonly buffer Emits { uint emits[]; };
layout(set = 0, binding = 4, std430) writeonly buffer Results { uint results[]; };

layout(push_constant) uniform Push
{
	uint emit_count;
	uint record_count;
};

)";

constexpr const char* kProbeMain = R"(
void probe(uint i)
{
	uint e = emits[i];
	uint o = i * QUOKKA_HEAP_PROBE_WORDS;
	uint t = e >> QUOKKA_HEAP_TILE_SHIFT;
	if (t + 1u >= uint(qk_tiles.length()) || qk_tiles[t] >= record_count || qk_tiles[t + 1u] >= record_count)
	{
		for (uint k = 0u; k < QUOKKA_HEAP_PROBE_WORDS; ++k)
			results[o + k] = QUOKKA_HEAP_PROBE_INVALID;
		return;
	}
	uint r = qkFindRecord(e);
	uint base = r * QUOKKA_HEAP_RECORD_WORDS;
	uint first_emit = qk_records[base + QUOKKA_HEAP_RECORD_FIRST_EMIT];
	uint index_start = qk_records[base + QUOKKA_HEAP_RECORD_INDEX_START];
	uint index_count = qk_records[base + QUOKKA_HEAP_RECORD_INDEX_COUNT];
	uint local_emit = e - first_emit;
	uint inst_id = QUOKKA_HEAP_PROBE_INVALID;
	uint vid = QUOKKA_HEAP_PROBE_INVALID;
	if (index_count != 0u)
	{
		inst_id = local_emit / index_count;
		uint li = local_emit % index_count;
		uint arena_words = uint(arena.length());
		if (index_start == QUOKKA_HEAP_NON_INDEXED)
			vid = li;
		else if (li < arena_words && index_start < arena_words - li)
			vid = arena[index_start + li];
	}
	results[o + 0u] = r;
	results[o + 1u] = qk_records[base + QUOKKA_HEAP_RECORD_DRAW_IDX];
	results[o + 2u] = index_start;
	results[o + 3u] = index_count;
	results[o + 4u] = qk_records[base + QUOKKA_HEAP_RECORD_INSTANCE_COUNT];
	results[o + 5u] = local_emit;
	results[o + 6u] = inst_id;
	results[o + 7u] = vid;
}

void main()
{
	// A grid-stride loop over the emits, as quokkaGridNext() in include/quokka/gpu/dispatch.glsl.h (run-time sources have no
	// includes): dispatch1d() launches at most maxComputeWorkGroupCount[0] workgroups.
	uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
	for (uint i = gl_GlobalInvocationID.x; i < emit_count; i = i + stride < i ? emit_count : i + stride)
		probe(i);
}
)";

struct ProbePush
{
	uint32_t emit_count;
	uint32_t record_count;
};

#define QUOKKA_HEAP_DEFINE(name)                                                                                       \
	{                                                                                                                  \
#name, QUOKKA_FX_STRINGIFY(name)                                                                               \
	}

} // namespace

uint32_t tileCapacityBound(uint64_t emit_bound)
{
	const uint64_t tiles = (emit_bound + QUOKKA_HEAP_TILE_EMITS - 1) / QUOKKA_HEAP_TILE_EMITS + 1;
	return uint32_t(std::min<uint64_t>(tiles, UINT32_MAX));
}

// ---- ScanBuffers ----------------------------------------------------------------------------------------------------

Result<ScanBuffers> ScanBuffers::create(gpu::Device& device, uint32_t record_capacity, std::string name)
{
	ScanBuffers buffers;
	buffers.device_ = &device;
	buffers.name_ = std::move(name);
	QUOKKA_TRY(buffers.reserve(record_capacity));
	return buffers;
}

Result<void> ScanBuffers::reserve(uint32_t record_count)
{
	if (buffer_ && record_count <= record_capacity_)
		return {};
	// The first allocation takes the capacity asked for; growth rounds up to a power of two so that a slot growing a
	// record at a time reallocates O(log n) times. Scratch is ~1/511 of the records' size, so rounding costs little.
	const uint32_t capacity = buffer_ ? uint32_t(std::min<uint64_t>(gpu::nextPowerOfTwo(record_count), UINT32_MAX))
	                                  : std::max(record_count, 1u);
	const uint64_t bytes = uint64_t(scanLevels(capacity).words) * 4;
	QUOKKA_TRY_ASSIGN(buffer, device_->createBuffer({bytes, gpu::BufferUsage::Storage, gpu::MemoryDomain::DeviceLocal,
	                                                 name_ + ".block_sums"}));
	buffer_ = std::move(buffer);
	record_capacity_ = capacity;
	return {};
}

// ---- MegacallScan ---------------------------------------------------------------------------------------------------

Result<MegacallScan> MegacallScan::create(gpu::Device& device, uint32_t max_groups)
{
	MegacallScan scan;
	scan.device_ = &device;
	scan.max_groups_ = max_groups;
	VkPhysicalDeviceProperties properties;
	vkGetPhysicalDeviceProperties(device.physicalDevice(), &properties);
	scan.storage_alignment_ = std::max<uint64_t>(properties.limits.minStorageBufferOffsetAlignment, 4);
	QUOKKA_TRY_ASSIGN(scan_pipeline, device.createComputePipeline(
	                                     {.spirv = shaders::kMegacallScanComp.span(), .name = "megacall.scan"}));
	QUOKKA_TRY_ASSIGN(add_pipeline, device.createComputePipeline(
	                                    {.spirv = shaders::kMegacallScanAddComp.span(), .name = "megacall.scan_add"}));
	QUOKKA_TRY_ASSIGN(tiles_pipeline, device.createComputePipeline(
	                                      {.spirv = shaders::kMegacallTilesComp.span(), .name = "megacall.tiles"}));
	// One layout definition: the reflected push-constant blocks must be the structs of megacall_scan.glsl.h.
	QUOKKA_ASSERT(scan_pipeline->pushConstantSize() == sizeof(detail::MegacallScanPush),
	              "megacall_scan.comp push constants differ from MegacallScanPush");
	QUOKKA_ASSERT(add_pipeline->pushConstantSize() == sizeof(detail::MegacallAddPush),
	              "megacall_scan_add.comp push constants differ from MegacallAddPush");
	QUOKKA_ASSERT(tiles_pipeline->pushConstantSize() == sizeof(detail::MegacallTilesPush),
	              "megacall_tiles.comp push constants differ from MegacallTilesPush");
	scan.scan_ = std::move(scan_pipeline);
	scan.add_ = std::move(add_pipeline);
	scan.tiles_ = std::move(tiles_pipeline);
	return scan;
}

Result<void> MegacallScan::record(gpu::CommandList& list, std::span<const ScanJob> jobs) const
{
	if (jobs.empty())
		return {};
	std::vector<Levels> levels;
	levels.reserve(jobs.size());
	uint32_t max_levels = 0;
	for (const ScanJob& job : jobs)
	{
		checkJob(job);
		QUOKKA_TRY(job.buffers->reserve(job.record_count));
		levels.push_back(scanLevels(job.record_count));
		max_levels = std::max(max_levels, levels.back().count);
		list.keepAlive(job.buffers->buffer());
	}
	QUOKKA_ASSERT(jobsAreDisjoint(jobs), "ScanJobs of one record() share scratch, records, tiles or args words");
	list.keepAlive(scan_);
	list.keepAlive(add_);
	list.keepAlive(tiles_);

	// The records' words 1..4 were written by transfers or kernels earlier in the queue, and the outputs of the last
	// scan may still be read by draws (write-after-read: an execution dependency suffices for those).
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT |
	                       VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT,
	                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);

	// Up: pass 0 scans the records into level 0; pass k scans level k − 1 in place into level k.
	for (uint32_t pass = 0; pass < max_levels; ++pass)
	{
		scan_->bind(list);
		for (size_t j = 0; j < jobs.size(); ++j)
		{
			const Levels& l = levels[j];
			if (pass >= l.count)
				continue;
			const detail::MegacallScanPush push{
			    pass == 0 ? jobs[j].record_count : l.size[pass - 1],
			    pass == 0 ? QUOKKA_HEAP_SCAN_RECORDS : QUOKKA_HEAP_SCAN_SUMS,
			    pass == 0 ? 0 : l.offset[pass - 1],
			    l.offset[pass],
			};
			pushStorageBuffers(list, *scan_, {recordsBinding(jobs[j]), {jobs[j].buffers->buffer().get()}});
			scan_->pushConstants(list, &push, sizeof(push));
			gpu::dispatch1d(list, *scan_, uint64_t((push.count + kBlock - 1) / kBlock) * QUOKKA_HEAP_SCAN_GROUP_SIZE,
			                max_groups_);
		}
		levelBarrier(list);
	}

	// Down: level k, once scanned, holds the offset of each block of the level below it (for level 0, of the records'
	// blocks). The top level holds the total, not offsets, and the level under it fits one block, so it is final
	// already: a job with L levels adds level L − 2 into level L − 3, and so on down to level 0 into the records.
	for (int32_t down = int32_t(max_levels) - 2; down >= 0; --down)
	{
		const uint32_t level = uint32_t(down);
		add_->bind(list);
		for (size_t j = 0; j < jobs.size(); ++j)
		{
			const Levels& l = levels[j];
			if (level + 2 > l.count)
				continue;
			const detail::MegacallAddPush push{
			    level == 0 ? jobs[j].record_count : l.size[level - 1],
			    level == 0 ? QUOKKA_HEAP_SCAN_RECORDS : QUOKKA_HEAP_SCAN_SUMS,
			    level == 0 ? 0 : l.offset[level - 1],
			    l.offset[level],
			};
			pushStorageBuffers(list, *add_, {recordsBinding(jobs[j]), {jobs[j].buffers->buffer().get()}});
			add_->pushConstants(list, &push, sizeof(push));
			gpu::dispatch1d(list, *add_, push.count, max_groups_);
		}
		levelBarrier(list);
	}

	// Args and tile index. Several slots may keep their args in one buffer: bind each job's 16 bytes (from the
	// aligned-down offset) so that neither the device nor synchronization validation sees the jobs' writes overlap.
	tiles_->bind(list);
	for (size_t j = 0; j < jobs.size(); ++j)
	{
		const ScanJob& job = jobs[j];
		const uint64_t args_base = job.args_offset / storage_alignment_ * storage_alignment_;
		const detail::MegacallTilesPush push{
		    job.record_count,
		    job.tile_capacity,
		    levels[j].count > 0 ? levels[j].offset[levels[j].count - 1] : 0,
		    uint32_t((job.args_offset - args_base) / 4),
		};
		pushStorageBuffers(list, *tiles_,
		                   {recordsBinding(job),
		                    {job.buffers->buffer().get()},
		                    {job.args, args_base, job.args_offset - args_base + kArgsBytes},
		                    {job.tiles, 0, uint64_t(job.tile_capacity) * 4}});
		tiles_->pushConstants(list, &push, sizeof(push));
		gpu::dispatch1d(list, *tiles_, job.tile_capacity, max_groups_);
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT,
	                   VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
	return {};
}

Result<const gpu::Pipeline*> MegacallScan::probePipeline()
{
	if (probe_)
		return probe_.get();
	gpu::ShaderSource source;
	source.glsl = std::string(kProbeHead) + fx::kMegacallSearchGlsl + kProbeMain;
	source.stage = gpu::ShaderStage::Compute;
	source.name = "megacall_probe.comp";
	source.defines = {
	    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_RECORD_WORDS),       QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_RECORD_FIRST_EMIT),
	    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_RECORD_DRAW_IDX),    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_RECORD_INDEX_START),
	    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_RECORD_INDEX_COUNT), QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_RECORD_INSTANCE_COUNT),
	    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_NON_INDEXED),        QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_TILE_SHIFT),
	    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_PROBE_WORDS),        QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_PROBE_GROUP_SIZE),
	    QUOKKA_HEAP_DEFINE(QUOKKA_HEAP_PROBE_INVALID),
	};
	QUOKKA_TRY_ASSIGN(spirv, device_->shaderCompiler().compile(source));
	QUOKKA_TRY_ASSIGN(pipeline, device_->createComputePipeline({.spirv = *spirv, .name = "megacall.probe"}));
	QUOKKA_ASSERT(pipeline->pushConstantSize() == sizeof(ProbePush), "probe push constants differ from ProbePush");
	probe_ = std::move(pipeline);
	return probe_.get();
}

Result<std::vector<ProbeResult>> MegacallScan::runProbe(const ProbeDesc& desc, std::span<const uint32_t> emits)
{
	QUOKKA_TRY_ASSIGN(pipeline, probePipeline());
	QUOKKA_TRY_ASSIGN(emit_buffer, gpu::createUploadBuffer(*device_, emits.data(), emits.size_bytes(),
	                                                       gpu::BufferUsage::Storage, "megacall.probe.emits"));
	const uint64_t result_bytes = uint64_t(emits.size()) * sizeof(ProbeResult);
	QUOKKA_TRY_ASSIGN(results, device_->createBuffer({result_bytes, gpu::BufferUsage::Storage,
	                                                  gpu::MemoryDomain::Readback, "megacall.probe.results"}));
	QUOKKA_TRY_ASSIGN(list, device_->beginCommands());
	// The scan that wrote the records and tiles ran in an earlier submission.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
	pipeline->bind(list);
	pushStorageBuffers(list, *pipeline,
	                   {recordsBinding(*desc.records, desc.record_count),
	                    {desc.tiles},
	                    {desc.arena},
	                    {emit_buffer.get()},
	                    {results.get()}});
	const ProbePush push{uint32_t(emits.size()), desc.record_count};
	pipeline->pushConstants(list, &push, sizeof(push));
	gpu::dispatch1d(list, *pipeline, emits.size(), max_groups_);
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
	list.keepAlive(emit_buffer);
	list.keepAlive(results);
	list.keepAlive(probe_);
	QUOKKA_TRY(device_->submitAndWait(std::move(list)));
	results->invalidate();
	std::vector<ProbeResult> got(emits.size());
	std::memcpy(got.data(), results->mapped(), result_bytes);
	return got;
}

Result<ProbeReport> MegacallScan::probeSlot(const ProbeDesc& desc)
{
	QUOKKA_ASSERT(desc.records && desc.tiles && desc.arena, "ProbeDesc: records, tiles and arena are required");
	QUOKKA_ASSERT(desc.records->size() >= uint64_t(desc.record_count) * kRecordBytes,
	              "ProbeDesc: records buffer smaller than record_count × 20 bytes");
	ProbeReport report;
	if (desc.record_count == 0)
		return report;
	QUOKKA_TRY_ASSIGN(records, readWords(*device_, *desc.records, uint64_t(desc.record_count) * kRecordBytes));
	const std::vector<uint64_t> prefix = emitPrefix(records);
	report.total_emit = prefix.back();
	if (report.total_emit > UINT32_MAX)
		return makeError(ErrorCode::InvalidArgument, "megacall probe: the slot emits " +
		                                                 std::to_string(report.total_emit) +
		                                                 " vertices, more than a u32 draw can count");
	if (report.total_emit == 0)
		return report;
	QUOKKA_TRY_ASSIGN(arena, readWords(*device_, *desc.arena, desc.arena->size()));
	const std::vector<uint32_t> emits = probeEmits(prefix, desc);
	QUOKKA_TRY_ASSIGN(got, runProbe(desc, emits));
	std::vector<ProbeResult> expected(emits.size());
	replayProbe(records, arena, emits, expected);
	report.probed = uint32_t(emits.size());
	for (size_t i = 0; i < emits.size(); ++i)
	{
		if (got[i] == expected[i])
			continue;
		if (report.mismatch_count++ < ProbeReport::kMaxReportedMismatches)
			report.mismatches.push_back({emits[i], expected[i], got[i]});
	}
	if (desc.all_emits && desc.primitive_vertices > 1)
		checkTriangleCoherence(got, desc.primitive_vertices, report);
	return report;
}

void checkTriangleCoherence(std::span<const ProbeResult> got, uint32_t k, ProbeReport& report)
{
	report.primitives_checked = 0;
	report.incoherent_primitives = 0;
	if (k < 2)
		return;
	for (size_t first = 0; first < got.size(); first += k)
	{
		++report.primitives_checked;
		const ProbeResult& a = got[first];
		// The primitive starts on a primitive boundary of its instance: local − instId·indexCount ≡ 0 (mod k).
		bool ok = first + k <= got.size() && a.index_count != 0 && a.inst_id != kProbeInvalid &&
		          (a.local - a.inst_id * a.index_count) % k == 0;
		for (uint32_t j = 1; ok && j < k; ++j)
		{
			const ProbeResult& b = got[first + j];
			ok = b.record == a.record && b.inst_id == a.inst_id && b.local == a.local + j;
		}
		if (!ok && report.incoherent_primitives++ == 0)
			report.first_incoherent_emit = uint32_t(first);
	}
}

// ---- CPU references -------------------------------------------------------------------------------------------------

void replayProbe(std::span<const uint32_t> records, std::span<const uint32_t> arena, std::span<const uint32_t> emits,
                 std::span<ProbeResult> out)
{
	QUOKKA_ASSERT(records.size() % kRecordWords == 0, "replayProbe: records are 5 words each");
	QUOKKA_ASSERT(out.size() == emits.size(), "replayProbe: one result per emit");
	const std::vector<uint64_t> prefix = emitPrefix(records);
	constexpr ProbeResult kInvalid{kProbeInvalid, kProbeInvalid, kProbeInvalid, kProbeInvalid,
	                               kProbeInvalid, kProbeInvalid, kProbeInvalid, kProbeInvalid};
	for (size_t i = 0; i < emits.size(); ++i)
	{
		const uint64_t e = emits[i];
		if (e >= prefix.back())
		{
			out[i] = kInvalid;
			continue;
		}
		// The record whose emit range [prefix[r], prefix[r + 1]) holds e: the last prefix ≤ e. Zero-emit records
		// share their prefix with the next record, so upper_bound skips past them.
		const size_t r = size_t(std::upper_bound(prefix.begin(), prefix.end(), e) - prefix.begin()) - 1;
		const uint32_t* w = records.data() + r * kRecordWords;
		ProbeResult& result = out[i];
		result.record = uint32_t(r);
		result.draw_idx = w[QUOKKA_HEAP_RECORD_DRAW_IDX];
		result.index_start = w[QUOKKA_HEAP_RECORD_INDEX_START];
		result.index_count = w[QUOKKA_HEAP_RECORD_INDEX_COUNT];
		result.instance_count = w[QUOKKA_HEAP_RECORD_INSTANCE_COUNT];
		const uint64_t local = e - prefix[r];
		const uint64_t li = local % result.index_count;
		result.local = uint32_t(local);
		result.inst_id = uint32_t(local / result.index_count);
		if (result.index_start == QUOKKA_HEAP_NON_INDEXED)
			result.vid = uint32_t(li);
		else
			result.vid = result.index_start + li < arena.size() ? arena[result.index_start + li] : kProbeInvalid;
	}
}

std::vector<std::string> checkScan(std::span<const uint32_t> records, std::span<const uint32_t> tiles,
                                   std::span<const uint32_t> args)
{
	detail::Findings findings;
	if (records.size() % kRecordWords != 0)
		findings.addLine("records", "records: " + std::to_string(records.size()) + " words, not a multiple of 5");
	const size_t n = records.size() / kRecordWords;
	const std::vector<uint64_t> prefix = emitPrefix(records);
	const uint64_t total = prefix.back();
	if (total > UINT32_MAX)
		findings.addLine("total", "total emit " + std::to_string(total) + " exceeds u32");

	for (size_t r = 0; r < n; ++r)
		if (records[r * kRecordWords + QUOKKA_HEAP_RECORD_FIRST_EMIT] != uint32_t(prefix[r]))
			findings.addLine("firstEmit", "record " + std::to_string(r) + ": firstEmit " +
			                                  std::to_string(records[r * kRecordWords]) + ", expected " +
			                                  std::to_string(prefix[r]));

	const uint32_t want_args[4] = {uint32_t(total), 1, 0, 0};
	if (args.size() < 4)
		findings.addLine("args", "args: " + std::to_string(args.size()) + " words, expected 4");
	else if (!std::equal(want_args, want_args + 4, args.begin()))
		findings.addLine("args", "args: {" + std::to_string(args[0]) + ", " + std::to_string(args[1]) + ", " +
		                             std::to_string(args[2]) + ", " + std::to_string(args[3]) + "}, expected {" +
		                             std::to_string(total) + ", 1, 0, 0}");

	const uint64_t tile_count = (total + QUOKKA_HEAP_TILE_EMITS - 1) / QUOKKA_HEAP_TILE_EMITS;
	if (tiles.size() < tile_count + 1)
		findings.addLine("tiles", "tiles: " + std::to_string(tiles.size()) +
		                              " entries, numTiles + 1 = " + std::to_string(tile_count + 1) + " needed");
	for (uint64_t t = 0; t < std::min<uint64_t>(tile_count, tiles.size()); ++t)
	{
		// The last record whose prefix is ≤ t × 64 (t × 64 < total, so the search never lands past the records).
		const uint64_t e = t * QUOKKA_HEAP_TILE_EMITS;
		const size_t want = size_t(std::upper_bound(prefix.begin(), prefix.begin() + n, e) - prefix.begin()) - 1;
		if (tiles[t] != want)
			findings.addLine("tile", "tiles[" + std::to_string(t) + "]: " + std::to_string(tiles[t]) + ", expected " +
			                             std::to_string(want));
	}
	const uint32_t sentinel = n == 0 ? 0 : uint32_t(n - 1);
	if (tile_count < tiles.size() && tiles[tile_count] != sentinel)
		findings.addLine("sentinel", "tiles[numTiles = " + std::to_string(tile_count) + "] (sentinel): " +
		                                 std::to_string(tiles[tile_count]) + ", expected " + std::to_string(sentinel));
	return findings.finish();
}

} // namespace quokka::heap
