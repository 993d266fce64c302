// Lambert with one fixed directional light plus ambient; exact enough for pixel-identity tests (no time, no noise).
#version 460

layout(location = 0) in vec3 in_normal;
layout(location = 1) flat in vec4 in_color;
layout(location = 0) out vec4 out_color;

void main()
{
	vec3 light = normalize(vec3(0.4, 0.8, 0.45));
	float diffuse = max(dot(normalize(in_normal), light), 0.0);
	out_color = vec4(in_color.rgb * (0.25 + 0.75 * diffuse), 1.0);
}
