// quokka/fx/atlas_glsl.hpp — GLSL that samples a texture packed into an atlas page as the hardware samples it alone.
//
// kAtlasSampleGlsl defines, for a `sampler2DArray` over a family's pages (a linear, clamp-to-edge sampler of the
// pages' one level) and an entry packed by atlas::packEntry() — (layer, x | y << 16, width | height << 16, levels |
// gutter << 8 | address << 16 | linear << 18 | mipmaps << 19):
//
//   vec4 quokkaAtlasSampleLevel(sampler2DArray pages, uvec4 entry, vec2 uv, int level)
//   vec4 quokkaAtlasSampleLod(sampler2DArray pages, uvec4 entry, vec2 uv, float lod)
//
// and kAtlasSampleFragmentGlsl, for fragment shaders, the LOD from the coordinate's screen derivatives:
//
//   float quokkaAtlasLodOf(uvec4 entry, vec2 uv)
//   vec4 quokkaAtlasSample(sampler2DArray pages, uvec4 entry, vec2 uv)
//
// The sampler's address mode is applied in software — the coordinate wrapped into the level (clamp, repeat,
// mirrored repeat) — and the bilinear filter by the hardware over the level's texels and its gutter, which holds
// what the address mode reads beyond the edge; nearest filtering fetches the wrapped texel; with mipmaps, the two
// levels around the LOD are mixed (VK_SAMPLER_MIPMAP_MODE_LINEAR), the LOD clamped to the entry's chain. The heap's
// atlas effect variants (PathVariant::HeapIndirectAtlas, HeapMegacallAtlas) sample through these functions.
#pragma once

namespace quokka::fx
{

inline constexpr const char* kAtlasSampleGlsl = R"glsl(
ivec2 quokkaAtlasLevel(uvec4 e, int l, out ivec2 size)
{
	const int x = int(e.y & 0xffffu), y = int(e.y >> 16), w = int(e.z & 0xffffu), h = int(e.z >> 16);
	const int g = int((e.w >> 8) & 0xffu);
	size = max(ivec2(w >> l, h >> l), ivec2(1));
	if (l == 0)
		return ivec2(x + g, y + g);
	int oy = g;
	for (int k = 1; k < l; ++k)
		oy += max(h >> k, 1) + 2 * g;
	return ivec2(x + w + 3 * g, y + oy);
}

// (GLSL leaves % of a negative operand undefined.)
int quokkaAtlasFloorMod(int i, int n)
{
	return i >= 0 ? i % n : n - 1 - (-(i + 1)) % n;
}

int quokkaAtlasWrapTexel(int i, int n, uint address)
{
	if (address == 0u)
		return clamp(i, 0, n - 1);
	if (address == 1u)
		return quokkaAtlasFloorMod(i, n);
	const int m = quokkaAtlasFloorMod(i, 2 * n);
	return m < n ? m : 2 * n - 1 - m;
}

float quokkaAtlasWrap(float t, float n, uint address)
{
	if (address == 0u)
		return clamp(t, 0.0, n);
	if (address == 1u)
		return t - n * floor(t / n);
	const float m = t - 2.0 * n * floor(t / (2.0 * n));
	return m < n ? m : 2.0 * n - m;
}

// Where a sample of level l at uv lies in the page, in texels: the wrapped coordinate for the hardware's bilinear
// filter, or, for nearest filtering, the centre of the wrapped texel (a linear filter there reads that texel alone),
// so both filters fetch with one textureLod.
vec2 quokkaAtlasTap(uvec4 e, vec2 uv, int l)
{
	ivec2 size;
	const ivec2 o = quokkaAtlasLevel(e, l, size);
	const uint address = (e.w >> 16) & 3u;
	const vec2 t = uv * vec2(size);
	if (((e.w >> 18) & 1u) == 0u)
	{
		const ivec2 i = ivec2(floor(t));
		return vec2(o) + vec2(float(quokkaAtlasWrapTexel(i.x, size.x, address)),
		                      float(quokkaAtlasWrapTexel(i.y, size.y, address))) + 0.5;
	}
	return vec2(o) + vec2(quokkaAtlasWrap(t.x, float(size.x), address), quokkaAtlasWrap(t.y, float(size.y), address));
}

// The fetches of a LOD: level l0 at `a`, and level l0 + 1 at `b` mixed in with weight `f` (0: `b` is `a`); page
// coordinates normalised by `page` (the pages' size), the layer in z.
struct QuokkaAtlasTaps
{
	vec3 a, b;
	float f;
};

QuokkaAtlasTaps quokkaAtlasTaps(uvec4 e, vec2 uv, float lod, vec2 page)
{
	const int levels = int(e.w & 0xffu);
	int l0 = 0;
	float f = 0.0;
	if (((e.w >> 19) & 1u) != 0u && levels > 1 && lod > 0.0)
	{
		const float l = min(lod, float(levels - 1));
		l0 = int(floor(l));
		f = l - float(l0);
	}
	QuokkaAtlasTaps t;
	t.a = vec3(quokkaAtlasTap(e, uv, l0) / page, float(e.x));
	t.b = f > 0.0 ? vec3(quokkaAtlasTap(e, uv, min(l0 + 1, levels - 1)) / page, float(e.x)) : t.a;
	t.f = f;
	return t;
}

vec4 quokkaAtlasSampleLevel(sampler2DArray pages, uvec4 e, vec2 uv, int l)
{
	return textureLod(pages, vec3(quokkaAtlasTap(e, uv, l) / vec2(textureSize(pages, 0).xy), float(e.x)), 0.0);
}

vec4 quokkaAtlasSampleLod(sampler2DArray pages, uvec4 e, vec2 uv, float lod)
{
	const QuokkaAtlasTaps t = quokkaAtlasTaps(e, uv, lod, vec2(textureSize(pages, 0).xy));
	const vec4 a = textureLod(pages, t.a, 0.0);
	return t.f == 0.0 ? a : mix(a, textureLod(pages, t.b, 0.0), t.f);
}
)glsl";

/// Fragment shaders only (after kAtlasSampleGlsl): the LOD from the coordinate's screen derivatives.
inline constexpr const char* kAtlasSampleFragmentGlsl = R"glsl(
float quokkaAtlasLodOf(uvec4 e, vec2 uv)
{
	const vec2 size = vec2(float(e.z & 0xffffu), float(e.z >> 16));
	const vec2 dx = dFdx(uv) * size, dy = dFdy(uv) * size;
	return 0.5 * log2(max(dot(dx, dx), dot(dy, dy)));
}

vec4 quokkaAtlasSample(sampler2DArray pages, uvec4 e, vec2 uv)
{
	return quokkaAtlasSampleLod(pages, e, uv, quokkaAtlasLodOf(e, uv));
}
)glsl";

} // namespace quokka::fx
