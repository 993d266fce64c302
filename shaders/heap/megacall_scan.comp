// One level of the megacall's exclusive scan: each workgroup scans one 512-element block in shared memory and writes
// the block's sum one level up. Level 0 reads the emit counts indexCount x instanceCount of the records and writes the
// block-local prefix into word 0 (firstEmit); higher levels scan a level of block sums in place. megacall_scan_add.comp
// then adds the scanned block sums back down (MegacallScan::record drives the levels).
// The in-block scan is Blelloch's work-efficient up-sweep/down-sweep (Blelloch 1990, "Prefix sums and their
// applications"; GPU form: Harris, Sengupta and Owens, GPU Gems 3 ch. 39), as in the reference scanTile kernel.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/heap/megacall_scan.glsl.h"

layout(local_size_x = QUOKKA_HEAP_SCAN_GROUP_SIZE) in;

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
	MegacallScanPush pc;
};

shared uint s_data[QUOKKA_HEAP_SCAN_BLOCK];

uint loadElement(uint i)
{
	if (i >= pc.count)
		return 0u;
	if (pc.source == QUOKKA_HEAP_SCAN_RECORDS)
	{
		uint base = i * QUOKKA_HEAP_RECORD_WORDS;
		return records[base + QUOKKA_HEAP_RECORD_INDEX_COUNT] * records[base + QUOKKA_HEAP_RECORD_INSTANCE_COUNT];
	}
	return sums[pc.in_offset + i];
}

void storeElement(uint i, uint value)
{
	if (i >= pc.count)
		return;
	if (pc.source == QUOKKA_HEAP_SCAN_RECORDS)
		records[i * QUOKKA_HEAP_RECORD_WORDS + QUOKKA_HEAP_RECORD_FIRST_EMIT] = value;
	else
		sums[pc.in_offset + i] = value;
}

// Scans block `block` of the level (every invocation of the workgroup calls it: it has barriers).
void scanBlock(uint block)
{
	uint lid = gl_LocalInvocationID.x;
	uint first = block << QUOKKA_HEAP_SCAN_BLOCK_SHIFT;
	s_data[lid] = loadElement(first + lid);
	s_data[lid + QUOKKA_HEAP_SCAN_GROUP_SIZE] = loadElement(first + lid + QUOKKA_HEAP_SCAN_GROUP_SIZE);

	// Up-sweep: build partial sums in place; s_data[511] ends up holding the block's sum.
	uint stride = 1u;
	for (uint threads = QUOKKA_HEAP_SCAN_GROUP_SIZE; threads > 0u; threads >>= 1u)
	{
		barrier();
		if (lid < threads)
		{
			uint a = stride * (2u * lid + 1u) - 1u;
			uint b = stride * (2u * lid + 2u) - 1u;
			s_data[b] += s_data[a];
		}
		stride <<= 1u;
	}
	barrier();
	uint block_sum = s_data[QUOKKA_HEAP_SCAN_BLOCK - 1u];
	barrier(); // every invocation read the sum before invocation 0 clears it
	if (lid == 0u)
		s_data[QUOKKA_HEAP_SCAN_BLOCK - 1u] = 0u;

	// Down-sweep: turns the partial sums into the exclusive prefix.
	for (uint threads = 1u; threads < QUOKKA_HEAP_SCAN_BLOCK; threads <<= 1u)
	{
		stride >>= 1u;
		barrier();
		if (lid < threads)
		{
			uint a = stride * (2u * lid + 1u) - 1u;
			uint b = stride * (2u * lid + 2u) - 1u;
			uint left = s_data[a];
			s_data[a] = s_data[b];
			s_data[b] += left;
		}
	}
	barrier();
	storeElement(first + lid, s_data[lid]);
	storeElement(first + lid + QUOKKA_HEAP_SCAN_GROUP_SIZE, s_data[lid + QUOKKA_HEAP_SCAN_GROUP_SIZE]);
	if (lid == 0u)
		sums[pc.out_offset + block] = block_sum;
}

void main()
{
	// Workgroup g scans blocks g, g + gl_NumWorkGroups.x, … (dispatch1d launches at most maxComputeWorkGroupCount[0]
	// workgroups; gpu/dispatch.glsl.h). The loop bound is uniform over the workgroup, so its barriers are allowed.
	uint block_count = (pc.count + QUOKKA_HEAP_SCAN_BLOCK - 1u) >> QUOKKA_HEAP_SCAN_BLOCK_SHIFT;
	for (uint block = gl_WorkGroupID.x; block < block_count; block += gl_NumWorkGroups.x)
	{
		scanBlock(block);
		barrier(); // the next block's loads must not overwrite s_data while it is still read
	}
}
