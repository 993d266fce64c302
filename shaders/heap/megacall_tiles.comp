// The megacall's draw arguments and firstDrawInTile index, from the scanned records: tile entries t in
// [0, tile_capacity), visited by a grid-stride loop. With numTiles = ceil(totalEmit / 64), entry t < numTiles is the
// last record whose firstEmit is <= t * 64 (a binary search over all records) and entry numTiles is the sentinel
// recordCount - 1, the last valid record (qkFindRecord treats both bounds as inclusive). Invocation 0 writes the
// VkDrawIndirectCommand {totalEmit, 1, 0, 0}. Entries past numTiles are not written.
//
// If the caller's tile_capacity is too small for the total, the draw is shortened to the tiles that fit rather than
// letting vertex shaders read past the index: a visible loss of geometry, which checkScan reports, instead of reads out
// of bounds. An empty slot (record_count 0) draws 0 vertices and gets tiles[0] = 0.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/gpu/dispatch.glsl.h"
#include "quokka/heap/megacall_scan.glsl.h"

layout(local_size_x = QUOKKA_HEAP_TILE_GROUP_SIZE) in;

layout(set = 0, binding = 0, std430) readonly buffer Records
{
	uint records[];
};

layout(set = 0, binding = 1, std430) readonly buffer Sums
{
	uint sums[];
};

layout(set = 0, binding = 2, std430) writeonly buffer Args
{
	uint args[];
};

layout(set = 0, binding = 3, std430) writeonly buffer Tiles
{
	uint tiles[];
};

layout(push_constant) uniform Push
{
	MegacallTilesPush pc;
};

// Entry t of the tile index (t <= drawn_tiles).
void writeTile(uint t, uint n, uint drawn_tiles)
{
	if (t == drawn_tiles)
	{
		tiles[t] = max(n, 1u) - 1u;
		return;
	}
	// firstEmit is non-decreasing (zero-emit records repeat their successor's value), so the last record with
	// firstEmit <= e is the one emitting e; record 0 always qualifies (firstEmit 0).
	uint e = t << QUOKKA_HEAP_TILE_SHIFT;
	uint lo = 0u;
	uint hi = n - 1u;
	while (lo < hi)
	{
		uint mid = (lo + hi + 1u) >> 1u;
		if (records[mid * QUOKKA_HEAP_RECORD_WORDS + QUOKKA_HEAP_RECORD_FIRST_EMIT] <= e)
			lo = mid;
		else
			hi = mid - 1u;
	}
	tiles[t] = lo;
}

void main()
{
	if (pc.tile_capacity == 0u)
		return;
	uint n = pc.record_count;
	uint total = n == 0u ? 0u : sums[pc.total_word];
	// ceil(total / 64) without the overflow of (total + 63) near 2^32.
	uint tile_count = (total >> QUOKKA_HEAP_TILE_SHIFT) + ((total & (QUOKKA_HEAP_TILE_EMITS - 1u)) != 0u ? 1u : 0u);
	uint drawn_tiles = min(tile_count, pc.tile_capacity - 1u);
	if (gl_GlobalInvocationID.x == 0u)
	{
		args[pc.args_word + 0u] = drawn_tiles == tile_count ? total : drawn_tiles << QUOKKA_HEAP_TILE_SHIFT;
		args[pc.args_word + 1u] = 1u;
		args[pc.args_word + 2u] = 0u;
		args[pc.args_word + 3u] = 0u;
	}
	// Entries past drawn_tiles are not written (a grid-stride loop over [0, drawn_tiles]).
	for (uint t = gl_GlobalInvocationID.x; t <= drawn_tiles; t = quokkaGridNext(t, drawn_tiles + 1u))
		writeTile(t, n, drawn_tiles);
}
