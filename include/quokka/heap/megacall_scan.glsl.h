// The megacall scan's layouts and limits, shared by C++ (quokka/heap/megacall_scan.hpp, src/heap/megacall_scan.cpp)
// and the scan kernels shaders/heap/megacall_*.comp: one definition for both languages. The record layout and the
// tile size come from quokka/fx/megacall_record.glsl.h, which the generated vertex shaders use too.
#ifndef QUOKKA_HEAP_MEGACALL_SCAN_GLSL_H
#define QUOKKA_HEAP_MEGACALL_SCAN_GLSL_H

#include "quokka/fx/megacall_record.glsl.h" /* the record layout and the tile size */

/* Scan blocks: 256 invocations x 2 elements = 512 elements per workgroup (2 KiB of shared memory). Each level has
 * ceil(count / 512) block sums, so a u32 record count (< 2^32) needs at most 4 levels: 2^23, 2^14, 32, 1 sums. */
#define QUOKKA_HEAP_SCAN_GROUP_SIZE 256
#define QUOKKA_HEAP_SCAN_BLOCK 512
#define QUOKKA_HEAP_SCAN_BLOCK_SHIFT 9
#define QUOKKA_HEAP_SCAN_MAX_LEVELS 4
/* One invocation per element (megacall_scan_add.comp) or per tile entry (megacall_tiles.comp). */
#define QUOKKA_HEAP_ADD_GROUP_SIZE 256
#define QUOKKA_HEAP_TILE_GROUP_SIZE 64

/* MegacallScanPush::source and MegacallAddPush::target: the records (word 0 of each) or a level of block sums. */
#define QUOKKA_HEAP_SCAN_RECORDS 0u
#define QUOKKA_HEAP_SCAN_SUMS 1u

/* probeBinarySearch output, per probed emit e:
 * {record, drawIdx, indexStart, indexCount, instanceCount, local = e - firstEmit, instId = local / indexCount, vid}.
 * A word the probe could not compute without reading out of bounds (a corrupt tile entry, indexCount 0, an index past
 * the arena) is QUOKKA_HEAP_PROBE_INVALID. */
#define QUOKKA_HEAP_PROBE_WORDS 8
#define QUOKKA_HEAP_PROBE_GROUP_SIZE 64
#define QUOKKA_HEAP_PROBE_INVALID 0xFFFFFFFFu

#ifdef __cplusplus
#include <cstdint>
namespace quokka::heap::detail
{
using uint = uint32_t;
#endif

/* Push constants of megacall_scan.comp: scans `count` elements of `source` in 512-element blocks, in place; block b's
 * sum goes to sums[out_offset + b]. in_offset is the level's first word in sums (unused for records). */
struct MegacallScanPush
{
	uint count;
	uint source;
	uint in_offset;
	uint out_offset;
};

/* Push constants of megacall_scan_add.comp: adds sums[offsets_offset + (i >> 9)] to element i < count of `target`. */
struct MegacallAddPush
{
	uint count;
	uint target;
	uint target_offset;
	uint offsets_offset;
};

/* Push constants of megacall_tiles.comp. total_word: the word of sums holding the total emit count (the top level's
 * single sum); args_word: the first word of the VkDrawIndirectCommand in the bound args range. */
struct MegacallTilesPush
{
	uint record_count;
	uint tile_capacity;
	uint total_word;
	uint args_word;
};

#ifdef __cplusplus
} // namespace quokka::heap::detail
#endif

#endif
