// Partition, step 1 (compact mode): how many records each slot gets. Workgroups count their records in shared memory
// (up to QUOKKA_PARTITION_SHARED_SLOTS slots) and add each non-zero count to the slot's global count once.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/modes/partition.glsl.h"

layout(local_size_x = QUOKKA_PARTITION_GROUP) in;

layout(set = 0, binding = 0, std430) readonly buffer SlotOf { uint slot_of[]; };
layout(set = 0, binding = 1, std430) buffer Counts { uint counts[]; };

layout(push_constant) uniform Push { PartitionPush pc; };

shared uint local_counts[QUOKKA_PARTITION_SHARED_SLOTS];

void main()
{
	const bool shared_counts = pc.slots <= QUOKKA_PARTITION_SHARED_SLOTS;
	if (shared_counts)
	{
		for (uint s = gl_LocalInvocationID.x; s < pc.slots; s += QUOKKA_PARTITION_GROUP)
			local_counts[s] = 0u;
		barrier();
	}
	const uint step = gl_NumWorkGroups.x * QUOKKA_PARTITION_GROUP;
	for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += step)
	{
		const uint s = slot_of[i];
		if (s >= pc.slots)
			continue;
		if (shared_counts)
			atomicAdd(local_counts[s], 1u);
		else
			atomicAdd(counts[s], 1u);
		if (i + step < i)
			break; /* (wrapped) */
	}
	if (shared_counts)
	{
		barrier();
		for (uint s = gl_LocalInvocationID.x; s < pc.slots; s += QUOKKA_PARTITION_GROUP)
			if (local_counts[s] != 0u)
				atomicAdd(counts[s], local_counts[s]);
	}
}
