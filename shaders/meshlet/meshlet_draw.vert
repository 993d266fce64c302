// Vertex pulling: one instance per meshlet (gl_InstanceIndex = record index, firstInstance = the batch's record
// offset), 3 × QUOKKA_MESHLET_MAX_TRIANGLES vertices per instance; corners past 3 × primitive_count collapse to one
// point, so their triangles have zero area and produce no fragments.
#version 460
#extension GL_GOOGLE_include_directive : require

#include "quokka/meshlet/meshlet_record.glsl.h"

layout(set = 0, binding = 0, std430) readonly buffer Records
{
	uint records[];
};

layout(set = 0, binding = 1, std430) readonly buffer Data
{
	uint data[];
};

struct Object
{
	mat4 model;
	vec4 color;
};

layout(set = 0, binding = 2, std430) readonly buffer Objects
{
	Object objects[];
};

layout(push_constant) uniform Push
{
	mat4 view_proj;
};

layout(location = 0) out vec3 out_normal;
layout(location = 1) flat out vec4 out_color;

vec3 decodeOctahedral(uint packed)
{
	vec2 f = unpackSnorm2x16(packed);
	vec3 n = vec3(f, 1.0 - abs(f.x) - abs(f.y));
	if (n.z < 0.0)
		n.xy = (1.0 - abs(n.yx)) * vec2(n.x >= 0.0 ? 1.0 : -1.0, n.y >= 0.0 ? 1.0 : -1.0);
	return normalize(n);
}

void main()
{
	uint base = uint(gl_InstanceIndex) * QUOKKA_MESHLET_RECORD_WORDS;
	uint address = records[base + QUOKKA_MESHLET_WORD_ADDRESS];
	uint triangles = records[base + QUOKKA_MESHLET_WORD_PRIMITIVES];
	uint vertices = records[base + QUOKKA_MESHLET_WORD_VERTICES];
	uint corner = uint(gl_VertexIndex);
	if (corner >= triangles * 3u)
	{
		gl_Position = vec4(0.0, 0.0, 0.0, 1.0);
		out_normal = vec3(0.0);
		out_color = vec4(0.0);
		return;
	}
	uint local = (data[address + corner / 4u] >> ((corner % 4u) * 8u)) & 0xffu;
	uint positions = address + (triangles * 3u + 3u) / 4u;
	uint p = positions + local * 3u;
	vec3 position = uintBitsToFloat(uvec3(data[p], data[p + 1u], data[p + 2u]));
	vec3 normal = decodeOctahedral(data[positions + vertices * 3u + local]);
	Object o = objects[gl_DrawID];
	gl_Position = view_proj * (o.model * vec4(position, 1.0));
	out_normal = mat3(o.model) * normal;
	out_color = o.color;
}
