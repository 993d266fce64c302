#version 460
// Test triangle with exact, axis-aligned edges: positions in NDC come from a storage buffer (vertex pulling), depth
// from the push constants.
layout(set = 0, binding = 0, std430) readonly buffer Positions { vec2 p[]; } positions;
layout(push_constant) uniform Params { vec4 color; float depth; } params;

void main()
{
	gl_Position = vec4(positions.p[gl_VertexIndex], params.depth, 1.0);
}
