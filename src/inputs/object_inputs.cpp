// Object inputs shared by the classic and heap paths: index scans, uniform packing, format checks, state conversion.
#include <quokka/fx/instancing.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

#include <absl/container/inlined_vector.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <smmintrin.h> // (SSE4.1 intrinsics; only the [[gnu::target("sse4.1")]] scan uses them)
#endif

namespace quokka::inputs
{

using adaptive::aval;
using scene::UniformValue;

std::string objectName(const scene::RenderObject& o)
{
	return "render object #" + std::to_string(o.id);
}

namespace
{
uint32_t maxIndexPortable(const std::byte* data, bool u16, uint32_t count)
{
	// Every placement scans its draw's indices (the scalar loop was ~3.5 instructions per index, 3 % of an add in
	// `bench update`). SSE2 has only signed maxima, so the values are biased by the sign bit: unsigned order becomes
	// signed order. 8 u16 or 4 u32 per step; the tail is scalar.
	uint32_t m = 0;
	uint32_t k = 0;
#if defined(__SSE2__)
	if (u16)
	{
		const __m128i bias = _mm_set1_epi16(int16_t(0x8000));
		__m128i acc = bias; // biased 0
		for (; k + 8 <= count; k += 8)
		{
			const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 2ull * k));
			acc = _mm_max_epi16(acc, _mm_xor_si128(x, bias));
		}
		alignas(16) uint16_t lanes[8];
		_mm_store_si128(reinterpret_cast<__m128i*>(lanes), _mm_xor_si128(acc, bias));
		for (uint16_t lane : lanes)
			m = std::max<uint32_t>(m, lane);
	}
	else
	{
		const __m128i bias = _mm_set1_epi32(int32_t(0x80000000u));
		__m128i acc = bias; // biased 0
		for (; k + 4 <= count; k += 4)
		{
			const __m128i x = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 4ull * k)), bias);
			const __m128i greater = _mm_cmpgt_epi32(x, acc);
			acc = _mm_or_si128(_mm_and_si128(greater, x), _mm_andnot_si128(greater, acc));
		}
		alignas(16) uint32_t lanes[4];
		_mm_store_si128(reinterpret_cast<__m128i*>(lanes), _mm_xor_si128(acc, bias));
		for (uint32_t lane : lanes)
			m = std::max(m, lane);
	}
#endif
	if (u16)
		for (; k < count; ++k)
		{
			uint16_t x;
			std::memcpy(&x, data + 2ull * k, 2);
			m = std::max<uint32_t>(m, x);
		}
	else
		for (; k < count; ++k)
		{
			uint32_t x;
			std::memcpy(&x, data + 4ull * k, 4);
			m = std::max(m, x);
		}
	return m;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QUOKKA_INDEX_SCAN_SSE41 1
// SSE4.1's unsigned maxima straight from memory, two accumulators of 4 u32 (8 u16) each: a 165-index mesh takes ~120
// instructions instead of ~600 with SSE2's biased signed compares. Deliberately not AVX2: on the H200 host (Intel)
// a 256-bit scan made whole add frames 30–40 % slower — even with vzeroupper — though it ran fewer instructions;
// 128-bit code in the legacy encoding leaves the core's vector state and clock alone.
template <bool kU16>
[[gnu::target("sse4.1")]] inline __m128i maxLanes(__m128i a, __m128i b)
{
	if constexpr (kU16)
		return _mm_max_epu16(a, b);
	else
		return _mm_max_epu32(a, b);
}

template <bool kU16>
[[gnu::target("sse4.1")]] uint32_t maxIndexSse41(const std::byte* data, uint32_t count)
{
	constexpr uint32_t per = kU16 ? 8 : 4; // elements per 16-byte vector
	__m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
	uint32_t k = 0;
	const auto* v = reinterpret_cast<const __m128i*>(data); // vector i starts at element i · per
	for (; k + 2 * per <= count; k += 2 * per)
	{
		a = maxLanes<kU16>(a, _mm_loadu_si128(v + k / per));
		b = maxLanes<kU16>(b, _mm_loadu_si128(v + k / per + 1));
	}
	if (k + per <= count)
	{
		a = maxLanes<kU16>(a, _mm_loadu_si128(v + k / per));
		k += per;
	}
	a = maxLanes<kU16>(a, b);
	alignas(16) uint32_t lanes[4];
	_mm_store_si128(reinterpret_cast<__m128i*>(lanes), a);
	uint32_t m = 0;
	for (uint32_t lane : lanes)
		m = std::max(m, kU16 ? std::max(lane & 0xffffu, lane >> 16) : lane);
	// The tail (< one vector) through the portable scan.
	return std::max(m, maxIndexPortable(data + (kU16 ? 2 : 4) * size_t(k), kU16, count - k));
}
#endif
} // namespace

bool indexScanSupported(IndexScan scan)
{
	if (scan == IndexScan::Portable)
		return true;
#if defined(QUOKKA_INDEX_SCAN_SSE41)
	static const bool sse41 = __builtin_cpu_supports("sse4.1");
	return sse41;
#else
	return false;
#endif
}

uint32_t maxIndexWith(IndexScan scan, const std::byte* data, bool u16, uint32_t count)
{
#if defined(QUOKKA_INDEX_SCAN_SSE41)
	if (scan == IndexScan::Sse41)
	{
		QUOKKA_ASSERT(indexScanSupported(IndexScan::Sse41), "maxIndexWith: this CPU has no SSE4.1");
		return u16 ? maxIndexSse41<true>(data, count) : maxIndexSse41<false>(data, count);
	}
#else
	QUOKKA_ASSERT(scan == IndexScan::Portable, "maxIndexWith: SSE4.1 scan on a build without it");
#endif
	return maxIndexPortable(data, u16, count);
}

uint32_t maxIndex(const std::byte* data, bool u16, uint32_t count)
{
	return maxIndexWith(indexScanSupported(IndexScan::Sse41) ? IndexScan::Sse41 : IndexScan::Portable, data, u16,
	                    count);
}

PackedValue packUniform(const UniformValue& value)
{
	PackedValue p{};
	std::visit(
	    [&](const auto& v)
	    {
		    using T = std::decay_t<decltype(v)>;
		    if constexpr (std::is_same_v<T, float>)
		    {
			    p.type = fx::F32;
			    std::memcpy(p.f, &v, 4);
		    }
		    else if constexpr (std::is_same_v<T, int32_t>)
		    {
			    p.type = fx::I32;
			    std::memcpy(p.f, &v, 4);
		    }
		    else if constexpr (std::is_same_v<T, uint32_t>)
		    {
			    p.type = fx::U32;
			    std::memcpy(p.f, &v, 4);
		    }
		    else if constexpr (std::is_same_v<T, math::V2f>)
		    {
			    p.type = fx::V2f;
			    std::memcpy(p.f, &v, 8);
		    }
		    else if constexpr (std::is_same_v<T, math::V3f>)
		    {
			    p.type = fx::V3f;
			    std::memcpy(p.f, &v, 12);
		    }
		    else if constexpr (std::is_same_v<T, math::V4f>)
		    {
			    p.type = fx::V4f;
			    std::memcpy(p.f, &v, 16);
		    }
		    else if constexpr (std::is_same_v<T, math::M33f>)
		    {
			    p.type = fx::M33f;
			    std::memcpy(p.f, &v, 36);
		    }
		    else if constexpr (std::is_same_v<T, math::M44f>)
		    {
			    p.type = fx::M44f;
			    std::memcpy(p.f, &v, 64);
		    }
		    else
		    {
			    static_assert(std::is_same_v<T, math::Trafo3d>);
			    p.type = fx::M44f;
			    const math::M44f m = math::toFloat(v.forward);
			    std::memcpy(p.f, &m, 64);
		    }
	    },
	    value);
	return p;
}

namespace
{
uint32_t componentClass(VkFormat format)
{
	// 0 = float-like (SFLOAT/UNORM/SNORM), 1 = signed int, 2 = unsigned int, 3 = unknown
	switch (format)
	{
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SFLOAT:
	case VK_FORMAT_R8_UNORM:
	case VK_FORMAT_R8G8_UNORM:
	case VK_FORMAT_R8G8B8A8_UNORM:
	case VK_FORMAT_R16_UNORM:
		return 0;
	case VK_FORMAT_R16_SINT:
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32A32_SINT:
		return 1;
	case VK_FORMAT_R8_UINT:
	case VK_FORMAT_R8G8B8A8_UINT:
	case VK_FORMAT_R16_UINT:
	case VK_FORMAT_R16G16_UINT:
	case VK_FORMAT_R16G16B16A16_UINT:
	case VK_FORMAT_R32_UINT:
	case VK_FORMAT_R32G32_UINT:
	case VK_FORMAT_R32G32B32_UINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		return 2;
	default:
		return 3;
	}
}

uint32_t typeClass(fx::Type t)
{
	switch (t.scalar)
	{
	case fx::Scalar::F32:
		return 0;
	case fx::Scalar::I32:
		return 1;
	default:
		return 2;
	}
}

} // namespace

bool formatFeeds(VkFormat format, fx::Type type)
{
	return componentClass(format) == typeClass(type);
}

Result<const scene::BufferView*> attributeView(const scene::RenderObject& object,
                                               const fx::InterfaceVariable& attribute)
{
	auto it = object.attributes.find(attribute.name);
	if (it == object.attributes.end())
		return makeError(ErrorCode::InvalidArgument, objectName(object) + ": effect needs the vertex attribute '" +
		                                                 attribute.name + "' (" + fx::typeName(attribute.type) +
		                                                 "), which the object does not have");
	if (scene::formatSize(it->second.format) == 0 || !formatFeeds(it->second.format, attribute.type))
		return makeError(ErrorCode::InvalidArgument, objectName(object) + ": attribute '" + attribute.name +
		                                                 "' has a format that cannot feed a " +
		                                                 fx::typeName(attribute.type) + " input");
	return &it->second;
}

Result<void> checkIndexView(const scene::RenderObject& object)
{
	if (!object.indices)
		return {};
	const VkFormat format = object.indices->format;
	if (format != VK_FORMAT_R16_UINT && format != VK_FORMAT_R32_UINT)
		return makeError(ErrorCode::InvalidArgument, objectName(object) + ": indices must be R16_UINT or R32_UINT");
	if (object.indices->offset % (format == VK_FORMAT_R16_UINT ? 2 : 4) != 0)
		return makeError(ErrorCode::InvalidArgument,
		                 objectName(object) + ": the index offset must be a multiple of the index size");
	return {};
}

uint64_t elementsIn(uint64_t bytes, uint64_t offset, uint32_t element, uint32_t stride)
{
	if (element == 0 || stride == 0 || bytes < offset + element)
		return 0;
	return (bytes - offset - element) / stride + 1;
}

uint64_t viewElements(const scene::BufferView& view, fx::Type type, uint64_t bytes)
{
	const uint32_t element = scene::formatSize(view.format) * type.cols;
	return elementsIn(bytes, view.offset, element, view.stride ? view.stride : element);
}

Result<DrawReach> drawReach(const scene::RenderObject& object, const scene::DrawCall& draw,
                            const scene::ArrayBuffer* indices)
{
	if (draw.count == 0 || draw.instance_count == 0)
		return DrawReach{};
	DrawReach reach{uint64_t(draw.first) + draw.count, uint64_t(draw.first_instance) + draw.instance_count};
	if (!draw.indexed)
		return reach;
	auto fail = [&](const std::string& what)
	{ return makeError(ErrorCode::InvalidArgument, objectName(object) + ": " + what); };
	if (!object.indices || !indices)
		return fail("the draw call is indexed but the object has no index buffer");
	const scene::BufferView& view = *object.indices;
	const bool u16 = view.format == VK_FORMAT_R16_UINT;
	const uint32_t size = u16 ? 2 : 4;
	const uint64_t held = elementsIn(indices->size(), view.offset, size, size);
	if (reach.vertices > held)
		return fail("the draw reads indices up to " + std::to_string(reach.vertices) + " of " + std::to_string(held));
	// The largest index decides how many vertices the draw reads.
	const std::byte* first = indices->data() + view.offset + uint64_t(draw.first) * size;
	const int64_t last = int64_t(maxIndex(first, u16, draw.count)) + draw.base_vertex;
	if (last < 0)
		return fail("base vertex " + std::to_string(draw.base_vertex) + " makes indices negative");
	reach.vertices = uint64_t(last) + 1;
	return reach;
}

Result<void> checkAttributeReach(const scene::RenderObject& object, std::string_view name,
                                 const scene::BufferView& view, uint64_t elements, const DrawReach& reach)
{
	const uint64_t n = view.per_instance ? reach.instances : reach.vertices;
	if (n <= elements)
		return {};
	return makeError(ErrorCode::InvalidArgument, objectName(object) + ": attribute '" + std::string(name) + "' holds " +
	                                                 std::to_string(elements) + " elements but the draw reads " +
	                                                 std::to_string(n) +
	                                                 (view.per_instance ? " instances" : " vertices"));
}

VkPipelineColorBlendAttachmentState toVk(const scene::BlendState& b)
{
	VkPipelineColorBlendAttachmentState s{};
	s.blendEnable = b.enabled;
	s.srcColorBlendFactor = b.src_color;
	s.dstColorBlendFactor = b.dst_color;
	s.colorBlendOp = b.color_op;
	s.srcAlphaBlendFactor = b.src_alpha;
	s.dstAlphaBlendFactor = b.dst_alpha;
	s.alphaBlendOp = b.alpha_op;
	s.colorWriteMask = b.write_mask;
	return s;
}

gpu::DynamicState dynamicState(const scene::PipelineStateValues& v, bool has_depth)
{
	gpu::DynamicState d;
	d.cull_mode = v.cull_mode;
	d.front_face = v.front_face;
	d.depth_test = has_depth && v.depth_test;
	d.depth_write = has_depth && v.depth_write;
	d.depth_compare = v.depth_compare;
	d.depth_bias = v.depth_bias.enabled;
	d.depth_bias_constant = v.depth_bias.constant;
	d.depth_bias_slope = v.depth_bias.slope;
	d.stencil_test = v.stencil.enabled;
	d.stencil_fail = v.stencil.fail;
	d.stencil_pass = v.stencil.pass;
	d.stencil_depth_fail = v.stencil.depth_fail;
	d.stencil_compare = v.stencil.compare;
	d.stencil_reference = v.stencil.reference;
	d.stencil_compare_mask = v.stencil.compare_mask;
	d.stencil_write_mask = v.stencil.write_mask;
	return d;
}

std::vector<std::string> perInstanceUniforms(const scene::RenderObject& object)
{
	std::vector<std::string> names;
	for (const auto& [name, view] : object.attributes)
		if (view.per_instance && fx::readsUniform(object.effect, name))
			names.push_back(name);
	return names;
}

} // namespace quokka::inputs
