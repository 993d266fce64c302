// Copies word ranges between two storage buffers (or within one: bind it twice) in ONE dispatch: the CPU splits every
// region into chunks of at most QUOKKA_MESHLET_COPY_CHUNK_WORDS words and each workgroup copies one chunk. A GPU
// alternative to vkCmdCopyBuffer with many regions, whose per-region cost dominates when a compaction moves
// thousands of batches (MeshletManager picks it on GPUs; `quokka bench meshlet` measures both). Regions of one
// dispatch must not overlap each other's destinations or read a range another region writes.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "meshlet/copy_regions.glsl.h"

layout(local_size_x = QUOKKA_MESHLET_COPY_GROUP_SIZE) in;

layout(set = 0, binding = 0, std430) readonly buffer Source
{
	uint src[];
};

layout(set = 0, binding = 1, std430) writeonly buffer Destination
{
	uint dst[];
};

layout(set = 0, binding = 2, std430) readonly buffer Chunks
{
	uvec4 chunks[]; // (source word, destination word, word count, unused)
};

layout(push_constant) uniform Push
{
	uint chunk_count;
};

void main()
{
	uint chunk = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
	if (chunk >= chunk_count)
		return;
	uvec4 c = chunks[chunk];
	for (uint i = gl_LocalInvocationID.x; i < c.z; i += QUOKKA_MESHLET_COPY_GROUP_SIZE)
		dst[c.y + i] = src[c.x + i];
}
