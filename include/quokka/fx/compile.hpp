// quokka/fx/compile.hpp — from an Effect and the framebuffer's outputs to SPIR-V plus the interface the runtime binds.
//
// Fragment-first two-phase compile: the fragment shader is generated with the framebuffer's
// colour outputs, optimised, and reflected for its *active* inputs (the varyings V); the vertex shader is then
// generated to produce exactly V — a varying no vertex stage writes becomes an implicit vertex attribute passed
// through — and reflected for its active attributes. An analysis compile puts every uniform in its own block, so the
// active uniforms are exactly those some optimised stage still reads; the final shaders carry one std140 block with
// only those. Varyings, attributes, uniforms and textures nothing uses are therefore pruned. Results are cached by
// (effect id, outputs, path, generator version). Errors name the effect, the stage and the stage-relative line.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <quokka/fx/effect.hpp>
#include <quokka/gpu/shader.hpp>

namespace quokka::fx
{

/// Which prelude/main() variant to generate. The user's stage bodies are the same in every variant.
enum class PathVariant : uint8_t
{
	Classic, ///< vertex attributes + one std140 uniform block + combined image samplers
	/// Heap path, one indirect command per draw: the draw index is gl_BaseInstance (firstInstance = draw header index),
	/// the vertex is gl_VertexIndex. Attributes and uniforms are pulled from the arena chunk (set 0, binding 0) through
	/// the draw header (binding 1); textures at bindings kHeapTextureBinding + i.
	HeapIndirect,
	/// Heap path, one non-indexed draw per slot: each vertex finds its record (binding 2, 5 words each) through the
	/// tile index (binding 3) with qkFindRecord (megacall_glsl.hpp) and reads its index from the arena.
	HeapMegacall,
	/// The heap variants with textures packed into an atlas (atlas::AtlasPool) instead of bound one per draw: every
	/// active texture (2D only) is read through its entry — 4 u32 words per texture appended to the draw header, in
	/// EffectInterface::textures order (TextureBinding::binding = the entry's first header word) — and sampled from
	/// the pages of its family: the RGBA8 UNORM pages at kHeapAtlasBinding, the sRGB pages at kHeapAtlasBinding + 1
	/// (sampler2DArray, a linear clamp-to-edge sampler). The stage bodies call texture(), textureLod(), textureGrad(),
	/// textureSize() and texelFetch() on the texture as before; the LOD is computed in software (atlas_glsl.hpp).
	/// Objects whose textures differ share a draw. A body that uses a texture otherwise (passes it to a function of
	/// its own) fails to compile in this variant.
	HeapIndirectAtlas,
	HeapMegacallAtlas,
	/// The heap variants with bindless textures (gpu::BindlessTable, DeviceFeatures::descriptor_indexing): every active
	/// texture (2D only) is an entry of the table bound at set kHeapBindlessSet (`sampler2D qk_bindless[]`), its index
	/// one u32 appended to the draw header in EffectInterface::textures order (TextureBinding::binding = that header
	/// word). The stage bodies use the texture as a sampler2D — every texture function, hardware sampling — through a
	/// macro that indexes the table non-uniformly. Objects whose textures differ share a draw.
	HeapIndirectBindless,
	HeapMegacallBindless,
};
inline constexpr bool isMegacallVariant(PathVariant p)
{
	return p == PathVariant::HeapMegacall || p == PathVariant::HeapMegacallAtlas ||
	       p == PathVariant::HeapMegacallBindless;
}
inline constexpr bool isAtlasVariant(PathVariant p)
{
	return p == PathVariant::HeapIndirectAtlas || p == PathVariant::HeapMegacallAtlas;
}
inline constexpr bool isBindlessVariant(PathVariant p)
{
	return p == PathVariant::HeapIndirectBindless || p == PathVariant::HeapMegacallBindless;
}
/// The megacall variant drawing what `indirect` (a heap indirect variant) draws.
inline constexpr PathVariant megacallVariantOf(PathVariant indirect)
{
	return isAtlasVariant(indirect)      ? PathVariant::HeapMegacallAtlas
	       : isBindlessVariant(indirect) ? PathVariant::HeapMegacallBindless
	                                     : PathVariant::HeapMegacall;
}
/// Draw-header words per texture: an atlas entry (4), a bindless index (1), none for bound textures.
inline constexpr uint32_t textureHeaderWords(PathVariant p)
{
	return isAtlasVariant(p) ? 4 : isBindlessVariant(p) ? 1 : 0;
}

/// Heap variants: the draw header of one draw is `header_words` u32: one arena ref (byte offset of the allocation
/// header; data at ref + 16) per active uniform in EffectInterface::uniforms order (UniformMember::offset = the
/// header word), then one per active attribute (InterfaceVariable::location = the header word; bit 0 of the ref set =
/// per-instance), then the vertex base (int: base vertex of indexed draws, first vertex of non-indexed ones; read by
/// the megacall only) and the first instance (added to the instance index of per-instance attributes); atlas variants
/// append each texture's entry (4 words), bindless variants each texture's table index (1 word).
inline constexpr uint32_t kHeapTextureBinding = 4;
inline constexpr uint32_t kHeapAtlasBinding = 4;
/// The set of the bindless variants' texture table (set 0 is the heap's push-descriptor set).
inline constexpr uint32_t kHeapBindlessSet = 1;
/// The family bit of an atlas entry's first word (the rest is the page layer): set for the sRGB pages.
inline constexpr uint32_t kHeapAtlasSrgbBit = 0x80000000u;
inline constexpr uint32_t kHeapPerInstanceBit = 1;

/// The fragment outputs a framebuffer consumes: State field names in location order.
struct FragmentOutputs
{
	std::vector<std::string> colors = {"Colors"};
	bool operator==(const FragmentOutputs&) const = default;
};

struct InterfaceVariable
{
	std::string name;
	Type type;
	uint32_t location = 0;
};

struct UniformMember
{
	std::string name;
	Type type;
	uint32_t offset = 0;        ///< bytes into the block (std140, from reflection)
	uint32_t matrix_stride = 0; ///< bytes between matrix columns (0 for non-matrices)
};

struct TextureBinding
{
	std::string name;
	TexKind kind = TexKind::Sampler2D;
	uint32_t binding = 0;
};

/// What a compiled effect reads and writes: everything the classic runtime needs to bind it.
struct EffectInterface
{
	std::vector<InterfaceVariable> attributes; ///< active vertex inputs
	std::vector<InterfaceVariable> varyings;   ///< vertex → fragment, active in the fragment shader
	std::vector<InterfaceVariable> outputs;    ///< fragment outputs (location = attachment index)
	std::vector<UniformMember> uniforms;       ///< members of the uniform block (set 0, binding 0); may be empty
	uint32_t uniform_block_size = 0;           ///< bytes; 0 when no uniform is active
	std::vector<TextureBinding> textures;      ///< active combined image samplers (set 0, bindings ≥ 1)
	uint32_t header_words = 0;                 ///< heap variants: u32 words of one draw header (see PathVariant)

	const UniformMember* uniform(const std::string& name) const;
	const InterfaceVariable* attribute(const std::string& name) const;
};

struct CompiledEffect
{
	Hash128 key;
	PathVariant path = PathVariant::Classic;
	gpu::SpirvCode vertex;
	gpu::SpirvCode fragment;
	EffectInterface iface;
	std::string vertex_glsl; ///< the final generated sources, for diagnostics
	std::string fragment_glsl;
};

using CompiledEffectPtr = std::shared_ptr<const CompiledEffect>;

/// Compiles effects with a cache. Thread-safe (compiles of different keys may run concurrently).
class EffectCompiler
{
public:
	explicit EffectCompiler(gpu::ShaderCompiler& shaders) : shaders_(&shaders) {}

	/// Generates, compiles and reflects `effect` for `outputs`. Errors: ShaderCompile ("effect 'E', stage 'S' line N:
	/// message" + the quoted line), InvalidArgument (an output no stage writes and no stage can pass through, …).
	Result<CompiledEffectPtr> compile(const Effect& effect, const FragmentOutputs& outputs,
	                                  PathVariant path = PathVariant::Classic);

	/// Cache key of a compile request.
	static Hash128 cacheKey(const Effect& effect, const FragmentOutputs& outputs, PathVariant path);
	/// The compiled effect of `key` (cacheKey) when it is in the cache, else null; counts no hit.
	CompiledEffectPtr cached(const Hash128& key) const;

	uint64_t cacheHits() const;
	uint64_t compiles() const;

private:
	gpu::ShaderCompiler* shaders_;
	mutable std::mutex mutex_;
	std::map<Hash128, CompiledEffectPtr> cache_;
	uint64_t hits_ = 0, compiles_ = 0;
};

} // namespace quokka::fx
