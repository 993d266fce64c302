#version 460
// The demo triangle: positions and colours from vertex attributes.
layout(location = 0) in vec2 in_position;
layout(location = 1) in vec3 in_color;
layout(location = 0) out vec3 v_color;

void main()
{
	v_color = in_color;
	gl_Position = vec4(in_position, 0.0, 1.0);
}
