// quokka/scene/render_object.hpp — one drawable: an effect, its pipeline state, attributes, uniforms, textures and
// draw call, all adaptive.
//
// Buffers are host data (ArrayBuffer: shared immutable bytes) behind avals; the renderer uploads them on change and
// reuses the GPU buffer when the size fits. A BufferView interprets a buffer as one vertex attribute (format, offset,
// stride, per-vertex or per-instance). Uniforms map a name (as the effect declares it) to an aval of UniformValue;
// only names the compiled effect actually uses are read. A per-instance view named like a uniform the effect reads
// supplies that uniform per instance (element first_instance + i for instance i, in the uniform's type: M44f as four
// R32G32B32A32_SFLOAT columns, V4f as R32G32B32A32_SFLOAT or R8G8B8A8_UNORM, …); it shadows the uniform of that name
// and the standard trafos derived from it (ModelViewProjTrafo, NormalMatrix, …) are then derived per instance on the
// GPU (fx/instancing.hpp). RenderObjects are shared immutable descriptions
// (RenderObjectPtr), compared and ordered by identity. Owner thread only (adaptive values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <vulkan/vulkan.h>

#include <quokka/adaptive/aval.hpp>
#include <quokka/fx/effect.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/math/math.hpp>
#include <quokka/rules/rule.hpp>
#include <quokka/scene/pipeline_state.hpp>

namespace quokka::scene
{

/// Immutable host bytes shared between objects and frames. Equality is identity of the storage (cheap; a new array
/// with equal bytes counts as a change, which re-uploads once).
struct ArrayBuffer
{
	std::shared_ptr<const std::vector<std::byte>> bytes;

	uint64_t size() const { return bytes ? bytes->size() : 0; }
	const std::byte* data() const { return bytes ? bytes->data() : nullptr; }
	bool operator==(const ArrayBuffer& o) const { return bytes == o.bytes; }

	/// Copies `values` into a new buffer.
	template <typename T>
	static ArrayBuffer of(const std::vector<T>& values)
	{
		auto v = std::make_shared<std::vector<std::byte>>(values.size() * sizeof(T));
		if (!values.empty())
			std::memcpy(v->data(), values.data(), v->size());
		return ArrayBuffer{std::move(v)};
	}
};

/// One vertex attribute (or the index buffer) as a view of an adaptive buffer.
struct BufferView
{
	adaptive::aval<ArrayBuffer> buffer;
	/// Element format: R32(G32(B32(A32)))_SFLOAT/SINT/UINT, R8G8B8A8_UNORM/UINT, R16_UINT/R32_UINT (indices), …
	VkFormat format = VK_FORMAT_R32G32B32_SFLOAT;
	uint32_t offset = 0; ///< bytes to the first element
	uint32_t stride = 0; ///< bytes between elements; 0 = tightly packed (the format's size)
	bool per_instance = false;

	/// A view of a constant buffer holding a copy of `values`.
	template <typename T>
	static BufferView of(const std::vector<T>& values, VkFormat format, bool per_instance = false)
	{
		BufferView v;
		v.buffer = adaptive::constant(ArrayBuffer::of(values));
		v.format = format;
		v.per_instance = per_instance;
		return v;
	}
};

/// Bytes of one element of `format` (0 for formats the scene model does not use).
uint32_t formatSize(VkFormat format);

/// What to draw. Indexed draws read `count` indices from the object's index view.
struct DrawCall
{
	bool indexed = false;
	uint32_t count = 0; ///< vertices or indices
	uint32_t instance_count = 1;
	uint32_t first = 0;      ///< first vertex or first index
	int32_t base_vertex = 0; ///< indexed only
	uint32_t first_instance = 0;

	bool operator==(const DrawCall&) const = default;
};

/// A uniform value. Trafo3d binds its forward matrix (narrowed to float) to mat4 uniforms.
using UniformValue =
    std::variant<float, int32_t, uint32_t, math::V2f, math::V3f, math::V4f, math::M33f, math::M44f, math::Trafo3d>;

/// Wraps any aval whose type converts to UniformValue.
template <typename T>
adaptive::aval<UniformValue> uniform(const adaptive::aval<T>& value)
{
	return adaptive::map(value, [](const T& v) { return UniformValue(v); });
}
template <typename T>
adaptive::aval<UniformValue> uniform(const adaptive::cval<T>& value)
{
	return uniform(static_cast<const adaptive::aval<T>&>(value));
}
template <typename T>
adaptive::aval<UniformValue> uniform(const T& constant_value)
{
	return adaptive::constant(UniformValue(constant_value));
}

enum class Filter : uint8_t
{
	Nearest,
	Linear,
};
enum class AddressMode : uint8_t
{
	Repeat,
	ClampToEdge,
	MirroredRepeat,
};

struct SamplerState
{
	Filter filter = Filter::Linear;
	AddressMode address = AddressMode::Repeat;
	bool mipmaps = true;
	bool operator==(const SamplerState&) const = default;
};

/// A 2D texture: host RGBA8 pixels (rows top to bottom), or an image already on the GPU (`image`, e.g. the output of
/// runtime::renderTo; sampled as it is, in SHADER_READ_ONLY_OPTIMAL). Equality is identity of the storage.
struct TextureData
{
	uint32_t width = 0;
	uint32_t height = 0;
	std::shared_ptr<const std::vector<uint8_t>> rgba8;
	bool srgb = true;
	gpu::ImageHandle image;
	bool operator==(const TextureData& o) const
	{
		return width == o.width && height == o.height && rgba8 == o.rgba8 && srgb == o.srgb && image == o.image;
	}
};

namespace detail
{
/// This thread's shared default `draw_call` and `active` constants (see PipelineState::PipelineState()).
struct DefaultObjectLeaves
{
	adaptive::aval<DrawCall> draw_call;
	adaptive::aval<bool> active;

	static const DefaultObjectLeaves& ofThisThread();
};
} // namespace detail

struct RenderObject
{
	fx::Effect effect;
	PipelineState state;
	std::map<std::string, BufferView> attributes; ///< by attribute name (Positions, Normals, Colors, …)
	std::optional<BufferView> indices;            ///< R16_UINT or R32_UINT
	std::map<std::string, adaptive::aval<UniformValue>> uniforms;
	/// Uniforms derived by a rule (rules/rule.hpp) over the object's other uniforms, the standard ones (ModelViewTrafo,
	/// CameraLocation, …) and its other derived ones, evaluated in double precision; a name is either here or in
	/// `uniforms`, never both. E.g. a billboard: derived["BillboardTrafo"] = Rule::make(…).value().
	std::map<std::string, rules::Rule> derived;
	/// Pipeline state derived from uniforms, one rule per axis at most (pipeline_state.hpp: ModeRule); applied over
	/// `state` on every path.
	std::vector<ModeRule> mode_rules;
	std::map<std::string, adaptive::aval<TextureData>> textures;
	std::map<std::string, SamplerState> samplers; ///< by texture name; default SamplerState when absent
	/// Default: everything the indices or the positions hold, one instance (DrawCall{}).
	adaptive::aval<DrawCall> draw_call = detail::DefaultObjectLeaves::ofThisThread().draw_call;
	adaptive::aval<bool> active = detail::DefaultObjectLeaves::ofThisThread().active;
	/// Monotonic id for stable ordering and cache keys; assigned at creation.
	uint64_t id = 0;
};

using RenderObjectPtr = std::shared_ptr<const RenderObject>;

/// Finalises `object` (assigns its id) and shares it.
RenderObjectPtr makeRenderObject(RenderObject object);

} // namespace quokka::scene
