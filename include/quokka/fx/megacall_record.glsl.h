// The megacall record layout and the tile size of its search index, defined once for C++ (quokka/fx/megacall_glsl.hpp,
// the heap) and GLSL (the scan kernels shaders/heap/megacall_*.comp, and the search text the generated heap vertex
// shaders include).
#ifndef QUOKKA_FX_MEGACALL_RECORD_GLSL_H
#define QUOKKA_FX_MEGACALL_RECORD_GLSL_H

/* A record is 5 u32 words; the CPU writes words 1..4, the scan writes word 0. emit = indexCount x instanceCount. */
#define QUOKKA_HEAP_RECORD_WORDS 5
#define QUOKKA_HEAP_RECORD_FIRST_EMIT 0
#define QUOKKA_HEAP_RECORD_DRAW_IDX 1
#define QUOKKA_HEAP_RECORD_INDEX_START 2 /* u32 element offset in the index arena, or QUOKKA_HEAP_NON_INDEXED */
#define QUOKKA_HEAP_RECORD_INDEX_COUNT 3
#define QUOKKA_HEAP_RECORD_INSTANCE_COUNT 4
#define QUOKKA_HEAP_NON_INDEXED 0xFFFFFFFFu

/* firstDrawInTile: one entry per 64 emitted vertices, plus the sentinel. */
#define QUOKKA_HEAP_TILE_EMITS 64
#define QUOKKA_HEAP_TILE_SHIFT 6

#endif
