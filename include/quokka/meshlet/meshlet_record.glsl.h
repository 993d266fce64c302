// One metadata record per meshlet, shared by C++ (include/quokka/meshlet/meshlet_record.hpp) and GLSL.
//
// A documented successor of meep's 40-byte MESHLET_METADATA_STRUCT: the same ten words
// first — AABB min/max, `address`, primitive and vertex counts, flags — then meshoptimizer's bounding sphere and
// normal cone, padding the record to 64 B = 16 words so that it is 16-byte aligned (vector loads, one record per
// cache-line quarter). Shaders read records as uint[] at `record * QUOKKA_MESHLET_RECORD_WORDS + word`.
//
// `address` is the word offset of the meshlet's payload in the data buffer: batch-local in a MeshletBatch on the CPU,
// absolute on the GPU (the manager adds the batch's data offset and re-patches it whenever the batch moves).
#ifndef QUOKKA_MESHLET_RECORD_GLSL_H
#define QUOKKA_MESHLET_RECORD_GLSL_H

#define QUOKKA_MESHLET_RECORD_WORDS 16
#define QUOKKA_MESHLET_WORD_BOUNDS_MIN 0 /* f32 x3 */
#define QUOKKA_MESHLET_WORD_BOUNDS_MAX 3 /* f32 x3 */
#define QUOKKA_MESHLET_WORD_ADDRESS 6    /* u32: payload word offset */
#define QUOKKA_MESHLET_WORD_PRIMITIVES 7 /* u32: triangles, <= QUOKKA_MESHLET_MAX_TRIANGLES */
#define QUOKKA_MESHLET_WORD_VERTICES 8   /* u32: vertices, <= QUOKKA_MESHLET_MAX_VERTICES */
#define QUOKKA_MESHLET_WORD_FLAGS 9      /* u32: attribute flags, see QUOKKA_MESHLET_FLAG_* */
#define QUOKKA_MESHLET_WORD_SPHERE 10    /* f32 x4: centre xyz, radius */
#define QUOKKA_MESHLET_WORD_CONE 14      /* snorm8 x4: cone axis xyz, cutoff (cos of half angle) */
#define QUOKKA_MESHLET_WORD_RESERVED 15

/* Builder limits: 128 vertices x 3 = 384 vertex-pulling invocations per meshlet; local indices fit in a u8. */
#define QUOKKA_MESHLET_MAX_VERTICES 128
#define QUOKKA_MESHLET_MAX_TRIANGLES 128

/* Payload at `address` (words), as written by buildMeshletBatch():
 *   local indices  (3T + 3) / 4 words, u8 per corner, little-endian within a word
 *   positions      3V words, f32 x, y, z (object space)
 *   normals        V words, octahedral snorm16 x2 (x in the low half) */
#define QUOKKA_MESHLET_FLAG_NONE 0u

#endif
