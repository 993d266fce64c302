// quokka/meshlet/meshlet_record.hpp — the C++ view of one meshlet metadata record (64 B) and of a CPU batch.
//
// The layout is defined once, in include/quokka/meshlet/meshlet_record.glsl.h, which GLSL includes too; this
// header mirrors it as a struct and checks every offset at compile time. A MeshletBatch is what addBatch() uploads:
// records whose `address` is batch-local plus the payload words those addresses point into.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <quokka/meshlet/meshlet_record.glsl.h>

namespace quokka::meshlet
{

/// One meshlet's metadata, word for word as the GPU reads it.
struct MeshletRecord
{
	float bounds_min[3] = {0, 0, 0}; ///< object-space AABB
	float bounds_max[3] = {0, 0, 0};
	uint32_t address = 0;           ///< payload word offset: batch-local on the CPU, absolute on the GPU
	uint32_t primitive_count = 0;   ///< triangles, ≤ QUOKKA_MESHLET_MAX_TRIANGLES
	uint32_t vertex_count = 0;      ///< vertices, ≤ QUOKKA_MESHLET_MAX_VERTICES
	uint32_t flags = 0;             ///< QUOKKA_MESHLET_FLAG_*
	float sphere[4] = {0, 0, 0, 0}; ///< bounding sphere centre xyz, radius
	uint32_t cone = 0;              ///< snorm8 x4: normal-cone axis xyz, cutoff
	uint32_t reserved = 0;
};

constexpr uint32_t kRecordWords = QUOKKA_MESHLET_RECORD_WORDS;
constexpr uint32_t kRecordBytes = kRecordWords * 4;
static_assert(sizeof(MeshletRecord) == kRecordBytes, "record size differs from meshlet_record.glsl.h");
static_assert(alignof(MeshletRecord) == 4);
static_assert(offsetof(MeshletRecord, bounds_min) == QUOKKA_MESHLET_WORD_BOUNDS_MIN * 4);
static_assert(offsetof(MeshletRecord, bounds_max) == QUOKKA_MESHLET_WORD_BOUNDS_MAX * 4);
static_assert(offsetof(MeshletRecord, address) == QUOKKA_MESHLET_WORD_ADDRESS * 4);
static_assert(offsetof(MeshletRecord, primitive_count) == QUOKKA_MESHLET_WORD_PRIMITIVES * 4);
static_assert(offsetof(MeshletRecord, vertex_count) == QUOKKA_MESHLET_WORD_VERTICES * 4);
static_assert(offsetof(MeshletRecord, flags) == QUOKKA_MESHLET_WORD_FLAGS * 4);
static_assert(offsetof(MeshletRecord, sphere) == QUOKKA_MESHLET_WORD_SPHERE * 4);
static_assert(offsetof(MeshletRecord, cone) == QUOKKA_MESHLET_WORD_CONE * 4);
static_assert(offsetof(MeshletRecord, reserved) == QUOKKA_MESHLET_WORD_RESERVED * 4);

/// A batch of meshlets on the CPU: what MeshletManager::addBatch() uploads.
struct MeshletBatch
{
	std::vector<MeshletRecord> records; ///< one per meshlet; `address` relative to the start of `data`
	std::vector<uint32_t> data;         ///< payload words
};

} // namespace quokka::meshlet
