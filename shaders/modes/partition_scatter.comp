// Partition, step 3: each record to its slot's list. A workgroup takes QUOKKA_PARTITION_GROUP records per step, ranks
// them per slot in shared memory and reserves each slot's share with one global atomic (per slot and step), so the
// global atomics do not serialise on a few hot slots. Compact mode: a slot's list starts at its offset (all fit).
// Regions mode: a slot appends into its region; records past the region's capacity are not written, and the slot's
// count is how many asked (a draw reads at most the capacity: min(count, capacity) records).
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/modes/partition.glsl.h"

layout(local_size_x = QUOKKA_PARTITION_GROUP) in;

layout(set = 0, binding = 0, std430) readonly buffer SlotOf { uint slot_of[]; };
layout(set = 0, binding = 1, std430) readonly buffer Records { uint records[]; };
layout(set = 0, binding = 2, std430) buffer Cursors { uint cursors[]; };
layout(set = 0, binding = 3, std430) writeonly buffer Out { uint out_records[]; };
layout(set = 0, binding = 4, std430) buffer Counts { uint counts[]; };
layout(set = 0, binding = 5, std430) readonly buffer Regions { uint regions[]; }; /* regions mode: {base, capacity} */

layout(push_constant) uniform Push { PartitionPush pc; };

shared uint tile_counts[QUOKKA_PARTITION_SHARED_SLOTS];
shared uint tile_base[QUOKKA_PARTITION_SHARED_SLOTS];

void copyRecord(uint from, uint to, uint s)
{
	if (pc.mode == 1u && to >= regions[2u * s] + regions[2u * s + 1u])
		return; /* past the region: counted, not written */
	for (uint w = 0u; w < pc.stride; ++w)
		out_records[to * pc.stride + w] = records[from * pc.stride + w];
}

void main()
{
	const uint t = gl_LocalInvocationID.x;
	const bool shared_ranks = pc.slots <= QUOKKA_PARTITION_SHARED_SLOTS;
	if (!shared_ranks)
	{
		/* Many slots: one global atomic per record. */
		const uint step = gl_NumWorkGroups.x * QUOKKA_PARTITION_GROUP;
		for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += step)
		{
			const uint s = slot_of[i];
			if (s < pc.slots)
			{
				if (pc.mode == 1u)
					atomicAdd(counts[s], 1u);
				copyRecord(i, atomicAdd(cursors[s], 1u), s);
			}
			if (i + step < i)
				break;
		}
		return;
	}
	for (uint s = t; s < pc.slots; s += QUOKKA_PARTITION_GROUP)
		tile_counts[s] = 0u;
	barrier();
	const uint tiles = (pc.count + QUOKKA_PARTITION_GROUP - 1u) / QUOKKA_PARTITION_GROUP;
	/* (Every invocation of a workgroup runs the same number of steps: the barriers are uniform.) */
	for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x)
	{
		const uint i = tile * QUOKKA_PARTITION_GROUP + t;
		const uint s = i < pc.count ? slot_of[i] : QUOKKA_PARTITION_NO_SLOT;
		const bool mine = s < pc.slots;
		const uint rank = mine ? atomicAdd(tile_counts[s], 1u) : 0u;
		barrier();
		if (mine && rank == 0u)
		{
			const uint n = tile_counts[s];
			tile_base[s] = atomicAdd(cursors[s], n);
			if (pc.mode == 1u)
				atomicAdd(counts[s], n);
		}
		barrier();
		if (mine)
			copyRecord(i, tile_base[s] + rank, s);
		barrier();
		if (mine && rank == 0u)
			tile_counts[s] = 0u;
		barrier();
	}
}
