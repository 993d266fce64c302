// The megacall scan's way back down: adds each 512-element block's scanned offset (the level above) to the block's
// elements, turning block-local prefixes into global ones. Target: word 0 (firstEmit) of the records, or a level of
// block sums. One invocation per element (a grid-stride loop).
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/gpu/dispatch.glsl.h"
#include "quokka/heap/megacall_scan.glsl.h"

layout(local_size_x = QUOKKA_HEAP_ADD_GROUP_SIZE) in;

layout(set = 0, binding = 0, std430) buffer Records
{
	uint records[];
};

layout(set = 0, binding = 1, std430) buffer Sums
{
	uint sums[];
};

layout(push_constant) uniform Push
{
	MegacallAddPush pc;
};

void main()
{
	for (uint i = gl_GlobalInvocationID.x; i < pc.count; i = quokkaGridNext(i, pc.count))
	{
		uint offset = sums[pc.offsets_offset + (i >> QUOKKA_HEAP_SCAN_BLOCK_SHIFT)];
		if (pc.target == QUOKKA_HEAP_SCAN_RECORDS)
			records[i * QUOKKA_HEAP_RECORD_WORDS + QUOKKA_HEAP_RECORD_FIRST_EMIT] += offset;
		else
			sums[pc.target_offset + i] += offset;
	}
}
