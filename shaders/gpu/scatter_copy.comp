// The scatter copy: copies many small regions (a frame's scattered writes, staged in a host-visible buffer) into a
// buffer with one dispatch, where vkCmdCopyBuffer would cost the driver CPU time per region. Workgroup g copies regions g,
// g + groups, … (one row of at most maxComputeWorkGroupCount[0] groups: no fold into y), its invocations the words.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/gpu/scatter_copy.glsl.h"

layout(local_size_x = QUOKKA_GPU_SCATTER_GROUP_SIZE) in;

layout(set = 0, binding = 0, std430) readonly buffer Source
{
	uint source[];
};

layout(set = 0, binding = 1, std430) writeonly buffer Target
{
	uint target[];
};

layout(set = 0, binding = 2, std430) readonly buffer Regions
{
	ScatterCopyRegion regions[];
};

layout(push_constant) uniform Push
{
	ScatterCopyPush pc;
};

void main()
{
	for (uint r = gl_WorkGroupID.x; r < pc.count; r += gl_NumWorkGroups.x)
	{
		ScatterCopyRegion g = regions[r];
		for (uint w = gl_LocalInvocationID.x; w < g.words; w += QUOKKA_GPU_SCATTER_GROUP_SIZE)
			target[g.dst + w] = source[g.src + w];
	}
}
