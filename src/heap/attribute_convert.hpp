// attribute_convert.hpp — vertex and index data as the heap stores it: tight 32-bit components of the type the
// effect's shader reads (internal to quokka::heap; the tests include it for golden bytes).
//
// The heap's vertex shaders load attributes from the arena by their own GLSL types, so every buffer is converted once,
// at upload, from its Vulkan vertex format: floats are copied, normalised integers become floats, integers become
// 32-bit integers, and missing components are 0 (1 in the fourth), as Vulkan's vertex input fills them. Indices become
// u32. Pure functions: no device, no state.
#pragma once

#include <cstddef>
#include <cstdint>

#include <quokka/fx/types.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::heap::detail
{

/// How a buffer is stored in the arena: `elements` tight elements of `components` 32-bit words (indices: one), read
/// from the source at the view's offset every `stride` bytes, each `element` bytes there.
struct ArenaLayout
{
	uint32_t element = 0, stride = 0, components = 0, elements = 0;
	uint64_t data_bytes = 0; ///< elements × components × 4
};

/// The layout of `data` read through `view` as the shader type `type` (`index`: an index buffer, R16_UINT or
/// R32_UINT, whatever `type` says). Elements are counted as far as whole elements fit in `data` after the offset; a
/// format without a known size gives none.
ArenaLayout arenaLayout(bool index, const scene::BufferView& view, fx::Type type, const scene::ArrayBuffer& data);

/// Converts `data` read through `view` (laid out as `layout`) into `out` (layout.data_bytes): tight 32-bit data of
/// `type`. Returns false for a vertex format this conversion does not know (nothing useful is written then).
bool convertToArena(bool index, const scene::BufferView& view, fx::Type type, const ArenaLayout& layout,
                    const scene::ArrayBuffer& data, uint32_t* out);

/// convertToArena() from `src`, the first element (the buffer's bytes at the view's offset), for a view of `format`.
bool convertFrom(bool index, VkFormat format, fx::Type type, const ArenaLayout& layout, const std::byte* src,
                 uint32_t* out);

/// Whether convertToArena() converts data of `format` as `type` laid out as `layout`: decided by the format, type and
/// layout alone (indices and empty buffers always), so a conversion can be checked here and run later elsewhere.
bool convertible(bool index, VkFormat format, fx::Type type, const ArenaLayout& layout);

/// One column of one element: `type.rows × type.cols` words from one value of `format`. Normalised integers use
/// c × (1 / (2^b − 1)) — a multiply by the rounded reciprocal, as Mesa's vertex fetch does (Vulkan allows this or the
/// exact quotient) — so heap and classic draws of the same UNORM colours match to the bit on lavapipe. Returns false
/// for an unknown format.
bool convertColumn(const std::byte* src, VkFormat format, fx::Type type, uint32_t* out);

/// Components of a 32-bit-per-component vertex format (R32…_SFLOAT/SINT/UINT), else 0.
uint32_t word32Components(VkFormat format);

} // namespace quokka::heap::detail
