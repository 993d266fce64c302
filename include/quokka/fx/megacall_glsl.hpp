// quokka/fx/megacall_glsl.hpp — the megacall's record layout and its vertex-side record search, as one GLSL text
// shared by the generated heap vertex shaders (fx) and the probeBinarySearch kernel, so the probe mirrors the
// shaders exactly.
#pragma once

#include <cstdint>

namespace quokka::fx
{

/// A megacall record: {firstEmit, drawIdx, indexStart, indexCount, instanceCount}, 5 u32 words. firstEmit is the
/// exclusive prefix sum of indexCount × instanceCount (written by the GPU scan); indexStart is the u32 element offset
/// of the record's indices in its arena chunk, or kNonIndexed.
inline constexpr uint32_t kRecordWords = 5;
inline constexpr uint32_t kNonIndexed = 0xFFFFFFFFu;
/// Emitted vertices per tile of the firstDrawInTile index (a power of two; the shift is kTileShift).
inline constexpr uint32_t kTileEmits = 64;
inline constexpr uint32_t kTileShift = 6;

/// GLSL: `uint qkFindRecord(uint e)` — the record emitting vertex `e`: the last record r in
/// [qk_tiles[e >> 6], qk_tiles[(e >> 6) + 1]] with firstEmit(r) <= e. The includer declares the storage buffers
/// `uint qk_records[]` and `uint qk_tiles[]`. tiles[t] is the last record with firstEmit <= t * 64 and
/// tiles[numTiles] = numRecords - 1 (the last *valid* record: an inclusive bound).
inline constexpr const char* kMegacallSearchGlsl = R"(uint qkFindRecord(uint e)
{
	uint t = e >> 6u;
	uint lo = qk_tiles[t];
	uint hi = qk_tiles[t + 1u];
	while (lo < hi)
	{
		uint mid = (lo + hi + 1u) >> 1u;
		if (qk_records[mid * 5u] <= e)
			lo = mid;
		else
			hi = mid - 1u;
	}
	return lo;
}
)";

} // namespace quokka::fx
