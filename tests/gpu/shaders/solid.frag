#version 460
layout(push_constant) uniform Params { vec4 color; float depth; } params;
layout(location = 0) out vec4 out_color;

void main()
{
	out_color = params.color;
}
