// Partition, step 2: where each slot's records go. Compact mode: offsets = the exclusive scan of counts (one
// workgroup, the slots in chunks of QUOKKA_PARTITION_GROUP with a running carry) and each slot's cursor its offset.
// Regions mode: each slot's cursor is its region's base and its count 0.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/modes/partition.glsl.h"

layout(local_size_x = QUOKKA_PARTITION_GROUP) in;

layout(set = 0, binding = 0, std430) buffer Counts { uint counts[]; };
layout(set = 0, binding = 1, std430) buffer Offsets { uint offsets[]; };  /* compact: written; regions: 2 words per slot {base, capacity}, read */
layout(set = 0, binding = 2, std430) buffer Cursors { uint cursors[]; };

layout(push_constant) uniform Push { PartitionPush pc; };

shared uint scratch[QUOKKA_PARTITION_GROUP];
shared uint carry;

void main()
{
	const uint t = gl_LocalInvocationID.x;
	if (pc.mode == 1u)
	{
		for (uint s = t; s < pc.slots; s += QUOKKA_PARTITION_GROUP)
		{
			cursors[s] = offsets[2u * s];
			counts[s] = 0u;
		}
		return;
	}
	if (t == 0u)
		carry = 0u;
	barrier();
	for (uint base = 0u; base < pc.slots; base += QUOKKA_PARTITION_GROUP)
	{
		const uint s = base + t;
		const uint c = s < pc.slots ? counts[s] : 0u;
		scratch[t] = c;
		barrier();
		/* Hillis–Steele inclusive scan over the chunk. */
		for (uint d = 1u; d < QUOKKA_PARTITION_GROUP; d <<= 1u)
		{
			const uint add = t >= d ? scratch[t - d] : 0u;
			barrier();
			scratch[t] += add;
			barrier();
		}
		const uint exclusive = carry + scratch[t] - c;
		if (s < pc.slots)
		{
			offsets[s] = exclusive;
			cursors[s] = exclusive;
		}
		barrier();
		if (t == QUOKKA_PARTITION_GROUP - 1u)
			carry += scratch[t];
		barrier();
	}
}
