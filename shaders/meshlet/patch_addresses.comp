// Adds a delta to the `address` word of listed meshlet records: one invocation per (record, delta) pair. Used by
// MeshletManager::update() after copying records (clones, moves after a rebuild). Deltas wrap in u32, so a move to a
// lower offset is an addition of its two's complement, as in the seed.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/gpu/dispatch.glsl.h"
#include "quokka/meshlet/meshlet_record.glsl.h"

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) buffer Records
{
	uint records[];
};

layout(set = 0, binding = 1, std430) readonly buffer Patches
{
	uvec2 patches[]; // (record index, address delta)
};

layout(push_constant) uniform Push
{
	uint patch_count;
};

void main()
{
	for (uint i = gl_GlobalInvocationID.x; i < patch_count; i = quokkaGridNext(i, patch_count))
	{
		uvec2 p = patches[i];
		records[p.x * QUOKKA_MESHLET_RECORD_WORDS + QUOKKA_MESHLET_WORD_ADDRESS] += p.y;
	}
}
