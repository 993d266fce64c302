// quokka/fx/megacall_glsl.hpp — the megacall's record layout and its vertex-side record search, as one GLSL text
// shared by the generated heap vertex shaders (fx) and the probeBinarySearch kernel, so the probe mirrors the
// shaders exactly.
#pragma once

#include <cstdint>

#include <quokka/fx/megacall_record.glsl.h>

namespace quokka::fx
{

/// A megacall record: {firstEmit, drawIdx, indexStart, indexCount, instanceCount}, 5 u32 words. firstEmit is the
/// exclusive prefix sum of indexCount × instanceCount (written by the GPU scan); indexStart is the u32 element offset
/// of the record's indices in its arena chunk, or kNonIndexed.
inline constexpr uint32_t kRecordWords = QUOKKA_HEAP_RECORD_WORDS;
inline constexpr uint32_t kNonIndexed = QUOKKA_HEAP_NON_INDEXED;
/// Emitted vertices per tile of the firstDrawInTile index (a power of two; the shift is kTileShift).
inline constexpr uint32_t kTileEmits = QUOKKA_HEAP_TILE_EMITS;
inline constexpr uint32_t kTileShift = QUOKKA_HEAP_TILE_SHIFT;
static_assert(kTileEmits == 1u << kTileShift);

#define QUOKKA_FX_STRINGIFY_(x) #x
#define QUOKKA_FX_STRINGIFY(x) QUOKKA_FX_STRINGIFY_(x)

/// GLSL: `uint qkFindRecord(uint e)` — the record emitting vertex `e`: the last record r in
/// [qk_tiles[e >> kTileShift], qk_tiles[(e >> kTileShift) + 1]] with firstEmit(r) <= e. The includer declares the
/// storage buffers `uint qk_records[]` and `uint qk_tiles[]`. tiles[t] is the last record with firstEmit <= t * 64 and
/// tiles[numTiles] = numRecords - 1 (the last *valid* record: an inclusive bound).
inline constexpr const char* kMegacallSearchGlsl = R"(uint qkFindRecord(uint e)
{
	uint t = e >> )" QUOKKA_FX_STRINGIFY(QUOKKA_HEAP_TILE_SHIFT) R"(u;
	uint lo = qk_tiles[t];
	uint hi = qk_tiles[t + 1u];
	while (lo < hi)
	{
		uint mid = (lo + hi + 1u) >> 1u;
		if (qk_records[mid * )" QUOKKA_FX_STRINGIFY(QUOKKA_HEAP_RECORD_WORDS) R"(u] <= e)
			lo = mid;
		else
			hi = mid - 1u;
	}
	return lo;
}
)";

} // namespace quokka::fx
