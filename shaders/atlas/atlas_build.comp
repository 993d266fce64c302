// Atlas entries, one mip level of many entries per dispatch: every texel of the level's padded rectangle (its
// gutter included) in the entry's work-buffer image. A texel of the gutter takes the value of the inner texel the
// sampler's address mode maps it to (clamp, repeat, mirrored repeat), computed the same way as that texel, so the
// hardware's bilinear filter at a level's edge reads what wrapping would. Level 0 copies the texture; level l
// averages 2×2 texels of level l − 1 (the last row or column repeated where that level is odd), in linear space for
// sRGB colour (alpha is linear). The CPU oracle is atlas::referenceLevels (atlas_pool.hpp).
#version 460

layout(local_size_x = 256) in;

struct AtlasJob
{
	uint src_offset; // words: the source level's texel (0, 0) — the texture (level 0) or the work buffer
	uint src_row;    // words per source row
	uint src_w, src_h;
	uint dst_offset; // words: this level's padded texel (0, 0) (the gutter's corner) in the work buffer
	uint dst_row;    // words per row of the entry's image
	uint w, h;       // this level's size
	uint gutter;
	uint address; // 0 clamp to edge, 1 repeat, 2 mirrored repeat
	uint flags;   // bit 0: sRGB colour; bit 1: level 0 (a copy)
	uint pad;
};

layout(set = 0, binding = 0, std430) readonly buffer Jobs { AtlasJob jobs[]; };
layout(set = 0, binding = 1, std430) readonly buffer Source { uint source[]; };
layout(set = 0, binding = 2, std430) buffer Work { uint work[]; };

// i mod n in [0, n) (GLSL leaves % of a negative operand undefined: NVIDIA and lavapipe differ).
int floorMod(int i, int n)
{
	return i >= 0 ? i % n : n - 1 - (-(i + 1)) % n;
}

int wrapped(int i, int n, uint address)
{
	if (address == 0u)
		return clamp(i, 0, n - 1);
	if (address == 1u)
		return floorMod(i, n);
	const int m = floorMod(i, 2 * n);
	return m < n ? m : 2 * n - 1 - m;
}

float toLinear(float c)
{
	return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

float toSrgb(float c)
{
	return c <= 0.0031308 ? c * 12.92 : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

uvec4 unpack(uint v)
{
	return uvec4(v & 0xffu, (v >> 8) & 0xffu, (v >> 16) & 0xffu, v >> 24);
}

void main()
{
	const AtlasJob job = jobs[gl_WorkGroupID.y];
	const uint pw = job.w + 2u * job.gutter, ph = job.h + 2u * job.gutter;
	const uint t = gl_GlobalInvocationID.x;
	if (t >= pw * ph)
		return;
	const int px = int(t % pw), py = int(t / pw);
	const int x = wrapped(px - int(job.gutter), int(job.w), job.address);
	const int y = wrapped(py - int(job.gutter), int(job.h), job.address);
	uint value;
	if ((job.flags & 2u) != 0u)
		value = source[job.src_offset + uint(y) * job.src_row + uint(x)];
	else
	{
		const uint x0 = 2u * uint(x), x1 = min(x0 + 1u, job.src_w - 1u);
		const uint y0 = 2u * uint(y), y1 = min(y0 + 1u, job.src_h - 1u);
		const uvec4 a = unpack(work[job.src_offset + y0 * job.src_row + x0]);
		const uvec4 b = unpack(work[job.src_offset + y0 * job.src_row + x1]);
		const uvec4 c = unpack(work[job.src_offset + y1 * job.src_row + x0]);
		const uvec4 d = unpack(work[job.src_offset + y1 * job.src_row + x1]);
		uvec4 r = (a + b + c + d + 2u) >> 2u;
		if ((job.flags & 1u) != 0u)
			for (int k = 0; k < 3; ++k)
			{
				const float l = (toLinear(float(a[k]) / 255.0) + toLinear(float(b[k]) / 255.0) +
				                 toLinear(float(c[k]) / 255.0) + toLinear(float(d[k]) / 255.0)) *
				                0.25;
				r[k] = uint(clamp(floor(toSrgb(l) * 255.0 + 0.5), 0.0, 255.0));
			}
		value = r.x | (r.y << 8) | (r.z << 16) | (r.w << 24);
	}
	work[job.dst_offset + uint(py) * job.dst_row + uint(px)] = value;
}
