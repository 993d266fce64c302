// quokka/atlas/atlas_sample.hpp — sampling an atlas entry in a shader as the hardware samples the texture alone.
//
// kAtlasSampleGlsl defines, for a `sampler2DArray` over a family's pages (a linear, clamp-to-edge sampler of the
// pages' one level) and an entry packed by packEntry():
//
//   vec4 quokkaAtlasSampleLevel(sampler2DArray pages, uvec4 entry, vec2 uv, int level)
//   vec4 quokkaAtlasSampleLod(sampler2DArray pages, uvec4 entry, vec2 uv, float lod)
//
// and kAtlasSampleFragmentGlsl, for fragment shaders, the LOD from the coordinate's screen derivatives:
//
//   vec4 quokkaAtlasSample(sampler2DArray pages, uvec4 entry, vec2 uv)
//
// The sampler's address mode is applied in software — the coordinate wrapped into the level (clamp, repeat,
// mirrored repeat) — and the bilinear filter by the hardware over the level's texels and its gutter, which holds
// what the address mode reads beyond the edge; nearest filtering fetches the wrapped texel; with mipmaps, the two
// levels around the LOD are mixed (VK_SAMPLER_MIPMAP_MODE_LINEAR), the LOD clamped to the entry's chain. Measured
// against hardware sampling of the same texels (AtlasSampleTest): see docs/architecture.md § atlas.
#pragma once

#include <array>
#include <cstdint>

#include <quokka/atlas/atlas_pool.hpp>
#include <quokka/fx/atlas_glsl.hpp>

namespace quokka::atlas
{

/// The entry as the GLSL reads it: (layer, x | y << 16, width | height << 16, levels | gutter << 8 | address << 16
/// | linear << 18 | mipmaps << 19). Page coordinates and sizes must be below 65,536 (pages are).
inline std::array<uint32_t, 4> packEntry(const Placement& p, const scene::SamplerState& sampler)
{
	const uint32_t address = sampler.address == scene::AddressMode::ClampToEdge ? 0u
	                         : sampler.address == scene::AddressMode::Repeat    ? 1u
	                                                                            : 2u;
	return {p.layer, uint32_t(p.rect.x) | uint32_t(p.rect.y) << 16, p.width | p.height << 16,
	        p.levels | p.gutter << 8 | address << 16 | uint32_t(sampler.filter == scene::Filter::Linear) << 18 |
	            uint32_t(sampler.mipmaps && p.levels > 1) << 19};
}

inline constexpr const char* kAtlasSampleGlsl = fx::kAtlasSampleGlsl;
/// Fragment shaders only (after kAtlasSampleGlsl): the LOD from the coordinate's screen derivatives.
inline constexpr const char* kAtlasSampleFragmentGlsl = fx::kAtlasSampleFragmentGlsl;

} // namespace quokka::atlas
