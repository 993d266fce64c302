// Copies word ranges between two storage buffers (or within one: bind it twice) in ONE dispatch: the CPU splits every
// region into chunks of at most QUOKKA_MESHLET_COPY_CHUNK_WORDS words and each workgroup copies every n-th chunk.
// Record chunks also patch the records' address words (the copy and the patch in one pass). A GPU alternative to
// vkCmdCopyBuffer with many regions, whose per-region cost dominates when a compaction moves
// thousands of batches (MeshletManager picks it on GPUs; `quokka bench meshlet` measures both). Regions of one
// dispatch must not overlap each other's destinations or read a range another region writes.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/meshlet/copy_regions.glsl.h"
#include "quokka/meshlet/meshlet_record.glsl.h"

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
	uvec4 chunks[]; // (source word, destination word, word count, address delta: records only, else 0)
};

layout(push_constant) uniform Push
{
	uint chunk_count;
};

void copyChunk(uint chunk)
{
	uvec4 c = chunks[chunk];
	// All loads first, then all stores: 16 independent loads in flight per invocation keep enough bytes moving to
	// stream (one dependent load/store pair per iteration would cap a GPU at a fraction of its bandwidth).
	const uint kPerInvocation = QUOKKA_MESHLET_COPY_CHUNK_WORDS / QUOKKA_MESHLET_COPY_GROUP_SIZE;
	uint values[kPerInvocation];
	for (uint k = 0; k < kPerInvocation; ++k)
	{
		uint i = gl_LocalInvocationID.x + k * QUOKKA_MESHLET_COPY_GROUP_SIZE;
		values[k] = i < c.z ? src[c.x + i] : 0u;
	}
	// Record chunks add the batch's address delta to each record's address word as they copy (records start at word 0
	// of their buffer, so the word's index in its record is its buffer index modulo the record size); payload chunks
	// have delta 0 — the same instructions, no branch on the kind.
	for (uint k = 0; k < kPerInvocation; ++k)
	{
		uint i = gl_LocalInvocationID.x + k * QUOKKA_MESHLET_COPY_GROUP_SIZE;
		uint word = c.y + i;
		if (i < c.z)
			dst[word] = values[k] + (word % QUOKKA_MESHLET_RECORD_WORDS == QUOKKA_MESHLET_WORD_ADDRESS ? c.w : 0u);
	}
}

void main()
{
	// Workgroup g copies chunks g, g + gl_NumWorkGroups.x, … (one row of at most maxComputeWorkGroupCount[0]
	// workgroups; see gpu/dispatch.glsl.h for why not two).
	for (uint chunk = gl_WorkGroupID.x; chunk < chunk_count; chunk += gl_NumWorkGroups.x)
		copyChunk(chunk);
}
