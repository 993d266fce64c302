#version 460
// Test kernel: out[i] += i * mul + add, for i < count, over a zeroed buffer — an element visited twice shows as twice
// the value. Exercises push constants, a storage buffer, dispatch1d and its grid-stride loop.
#include "quokka/gpu/dispatch.glsl.h"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Out { uint values[]; } out_buf;
layout(push_constant) uniform Params { uint count; uint mul; uint add; } params;

void main()
{
	for (uint i = gl_GlobalInvocationID.x; i < params.count; i = quokkaGridNext(i, params.count))
		out_buf.values[i] += i * params.mul + params.add;
}
