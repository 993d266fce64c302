// attribute_convert.cpp — vertex formats → the heap's tight 32-bit components (attribute_convert.hpp).
#include "attribute_convert.hpp"

#include <algorithm>
#include <cstring>

namespace quokka::heap::detail
{
namespace
{

bool isFloatFormat(VkFormat format)
{
	return format == VK_FORMAT_R32_SFLOAT || format == VK_FORMAT_R32G32_SFLOAT ||
	       format == VK_FORMAT_R32G32B32_SFLOAT || format == VK_FORMAT_R32G32B32A32_SFLOAT;
}

/// The hot case of attribute ingest (a V3 position or normal feeding a vec4): `n` elements of `from` 32-bit words
/// each, `stride` bytes apart, into `to` words each — copied, truncated or filled as convertColumn does (0, and 1 in
/// the fourth component: 1.0f for float formats) — with the component counts as template constants.
template <uint32_t From, uint32_t To>
void widenWordsFixed(const std::byte* src, uint32_t stride, uint32_t n, uint32_t one, uint32_t* out)
{
	constexpr uint32_t kCopy = From < To ? From : To;
	uint32_t fill[4] = {0, 0, 0, one};
	for (uint32_t i = 0; i < n; ++i, src += stride, out += To)
	{
		std::memcpy(out, src, kCopy * 4);
		for (uint32_t c = kCopy; c < To; ++c)
			out[c] = fill[c];
	}
}

void widenWords(const std::byte* src, uint32_t stride, uint32_t n, uint32_t from, uint32_t to, bool is_float,
                uint32_t* out)
{
	const uint32_t one = is_float ? 0x3F800000u : 1u; // 1.0f or 1
	auto dispatch = [&]<uint32_t From>()
	{
		switch (to)
		{
		case 1:
			return widenWordsFixed<From, 1>(src, stride, n, one, out);
		case 2:
			return widenWordsFixed<From, 2>(src, stride, n, one, out);
		case 3:
			return widenWordsFixed<From, 3>(src, stride, n, one, out);
		default:
			return widenWordsFixed<From, 4>(src, stride, n, one, out);
		}
	};
	switch (from)
	{
	case 1:
		return dispatch.template operator()<1>();
	case 2:
		return dispatch.template operator()<2>();
	case 3:
		return dispatch.template operator()<3>();
	default:
		return dispatch.template operator()<4>();
	}
}

/// One element of a matrix (or vector) attribute: `type.cols` consecutive columns of `format`, as classic vertex input
/// reads them.
bool convertElement(const std::byte* src, VkFormat format, fx::Type type, uint32_t* out)
{
	const fx::Type column{type.scalar, type.rows, 1};
	for (uint32_t c = 0; c < type.cols; ++c)
		if (!convertColumn(src + uint64_t(c) * scene::formatSize(format), format, column, out + c * type.rows))
			return false;
	return true;
}

} // namespace

/// Converts one vertex-buffer element (one column of `format`) into tight 32-bit components of the vector `type`
/// (missing components: 0, and 1 for w — Vulkan's vertex input rule), so the shader's loads depend on its own types
/// only.
bool convertColumn(const std::byte* src, VkFormat format, fx::Type type, uint32_t* out)
{
	const uint32_t n = type.rows * type.cols;
	uint32_t comps = 0;
	float f[4] = {0, 0, 0, 1};
	uint32_t u[4] = {0, 0, 0, 1};
	bool is_float = true;
	switch (format)
	{
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SFLOAT:
		comps = scene::formatSize(format) / 4;
		std::memcpy(f, src, 4 * comps);
		break;
	// Normalised integers: c × (1 / (2^b − 1)), a multiply by the rounded reciprocal, as Mesa's vertex fetch converts
	// (Vulkan allows this or the exact quotient). The exact quotient c / 255 differs from it for some c, and after
	// interpolation that moved ~10 % of the pixels of a vertex-coloured quad by 1–2 LSB against the classic path on
	// lavapipe (test: intermediate UNORM8 vertex colours match classic).
	case VK_FORMAT_R8_UNORM:
	case VK_FORMAT_R8G8_UNORM:
	case VK_FORMAT_R8G8B8A8_UNORM:
		comps = scene::formatSize(format);
		for (uint32_t c = 0; c < comps; ++c)
			f[c] = float(uint8_t(src[c])) * (1.0f / 255.0f);
		break;
	case VK_FORMAT_R16_UNORM:
	{
		uint16_t x;
		std::memcpy(&x, src, 2);
		comps = 1;
		f[0] = float(x) * (1.0f / 65535.0f);
		break;
	}
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32A32_SINT:
	case VK_FORMAT_R32_UINT:
	case VK_FORMAT_R32G32_UINT:
	case VK_FORMAT_R32G32B32_UINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		is_float = false;
		comps = scene::formatSize(format) / 4;
		std::memcpy(u, src, 4 * comps);
		break;
	case VK_FORMAT_R8_UINT:
	case VK_FORMAT_R8G8B8A8_UINT:
		is_float = false;
		comps = scene::formatSize(format);
		for (uint32_t c = 0; c < comps; ++c)
			u[c] = uint8_t(src[c]);
		break;
	case VK_FORMAT_R16_UINT:
	case VK_FORMAT_R16G16_UINT:
	case VK_FORMAT_R16G16B16A16_UINT:
	case VK_FORMAT_R16_SINT:
	{
		is_float = false;
		comps = scene::formatSize(format) / 2;
		for (uint32_t c = 0; c < comps; ++c)
		{
			uint16_t x;
			std::memcpy(&x, src + 2 * c, 2);
			u[c] = format == VK_FORMAT_R16_SINT ? uint32_t(int32_t(int16_t(x))) : x;
		}
		break;
	}
	default:
		return false;
	}
	for (uint32_t c = 0; c < n; ++c)
	{
		if (is_float)
			std::memcpy(&out[c], &f[std::min(c, 3u)], 4);
		else
			out[c] = u[std::min(c, 3u)];
	}
	return true;
}

/// Components of a 32-bit-per-component vertex format (R32…_SFLOAT/SINT/UINT), else 0.
uint32_t word32Components(VkFormat format)
{
	switch (format)
	{
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32_UINT:
		return 1;
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32_UINT:
		return 2;
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32_UINT:
		return 3;
	case VK_FORMAT_R32G32B32A32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		return 4;
	default:
		return 0;
	}
}

ArenaLayout arenaLayout(bool index, const scene::BufferView& view, fx::Type type, const scene::ArrayBuffer& data)
{
	ArenaLayout l;
	const uint32_t isize = view.format == VK_FORMAT_R16_UINT ? 2 : 4;
	l.element = index ? isize : scene::formatSize(view.format) * type.cols;
	l.stride = index ? isize : view.stride ? view.stride : l.element;
	l.components = index ? 1 : type.rows * type.cols;
	l.elements = l.element != 0 && l.stride != 0 && data.size() >= uint64_t(view.offset) + l.element
	                 ? uint32_t((data.size() - view.offset - l.element) / l.stride + 1)
	                 : 0; // an unknown format has no size: nothing to read
	l.data_bytes = uint64_t(l.elements) * l.components * 4;
	return l;
}

bool convertToArena(bool index, const scene::BufferView& view, fx::Type type, const ArenaLayout& layout,
                    const scene::ArrayBuffer& data, uint32_t* out)
{
	return convertFrom(index, view.format, type, layout, data.data() + view.offset, out);
}

namespace
{
/// How convertFrom() goes about it: a copy of the whole buffer, 32-bit words widened or truncated per element, 16-bit
/// indices widened, or a conversion per element (the only one that can meet a format it does not know).
enum class Conversion
{
	Copy,
	Widen,
	Index16,
	PerElement,
};
Conversion conversionOf(bool index, VkFormat format, fx::Type type, const ArenaLayout& layout)
{
	const uint32_t isize = format == VK_FORMAT_R16_UINT ? 2 : 4;
	// 32-bit components: copied whole when already tight at the shader's size, else widened/truncated per element.
	const uint32_t words32 = index ? 0 : word32Components(format);
	if ((index && isize == 4) ||
	    (words32 != 0 && layout.stride == layout.element && layout.element == layout.components * 4))
		return Conversion::Copy;
	if (type.cols == 1 && words32 != 0)
		return Conversion::Widen;
	return index ? Conversion::Index16 : Conversion::PerElement;
}
} // namespace

bool convertible(bool index, VkFormat format, fx::Type type, const ArenaLayout& layout)
{
	if (layout.elements == 0 || conversionOf(index, format, type, layout) != Conversion::PerElement)
		return true;
	// The per-element conversion fails by the format and type alone, whatever the bytes: try it on one zero element.
	const uint64_t element = uint64_t(scene::formatSize(format)) * type.cols;
	if (element > 256 || uint64_t(type.rows) * type.cols > 64)
		return false;
	alignas(16) const std::byte zeros[256]{};
	uint32_t scratch[64];
	return convertElement(zeros, format, type, scratch);
}

bool convertFrom(bool index, VkFormat format, fx::Type type, const ArenaLayout& layout, const std::byte* src,
                 uint32_t* out)
{
	const uint32_t stride = layout.stride, comps = layout.components, n = layout.elements;
	switch (conversionOf(index, format, type, layout))
	{
	case Conversion::Copy:
		std::memcpy(out, src, layout.data_bytes);
		return true;
	case Conversion::Widen:
		widenWords(src, stride, n, word32Components(format), type.rows, isFloatFormat(format), out);
		return true;
	case Conversion::Index16:
		for (uint32_t i = 0; i < n; ++i)
		{
			uint16_t x;
			std::memcpy(&x, src + 2ull * i, 2);
			out[i] = x;
		}
		return true;
	case Conversion::PerElement:
		for (uint32_t i = 0; i < n; ++i)
			if (!convertElement(src + uint64_t(i) * stride, format, type, out + size_t(i) * comps))
				return false;
		return true;
	}
	return false;
}

} // namespace quokka::heap::detail
