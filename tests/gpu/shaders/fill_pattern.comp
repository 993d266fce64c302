#version 460
// Test kernel: out[i] = i * mul + add, for i < count. Exercises push constants, a storage buffer, dispatch1d.
#include "gpu/dispatch.glsl.h"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) writeonly buffer Out { uint values[]; } out_buf;
layout(push_constant) uniform Params { uint count; uint mul; uint add; } params;

void main()
{
	uint i = quokkaLinearInvocation();
	if (i >= params.count)
		return;
	out_buf.values[i] = i * params.mul + params.add;
}
