// attribute_convert_test.cpp — golden words of the heap's attribute and index conversion (src/heap/
// attribute_convert.hpp): float copies with Vulkan's fill rule, truncation, normalised integers by the rounded
// reciprocal (the rule that keeps heap and classic pixels identical on lavapipe), integer widening and sign extension,
// matrix columns, strides and offsets, u16 indices, and the element count of a short buffer; convertible() agrees with
// the conversion's success.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "heap/attribute_convert.hpp"

namespace
{

using namespace quokka;
using namespace quokka::heap::detail;

template <typename T>
scene::ArrayBuffer bytesOf(const std::vector<T>& values)
{
	return scene::ArrayBuffer::of(values);
}

/// Converts `data` read as `format` (stride 0 = tight) into words of `type`.
std::vector<uint32_t> convert(const scene::ArrayBuffer& data, VkFormat format, fx::Type type, uint32_t stride = 0,
                              uint32_t offset = 0, bool index = false)
{
	scene::BufferView view;
	view.format = format;
	view.stride = stride;
	view.offset = offset;
	const ArenaLayout layout = arenaLayout(index, view, type, data);
	std::vector<uint32_t> out(layout.data_bytes / 4, 0xDEADBEEFu);
	EXPECT_TRUE(convertible(index, format, type, layout)); // (what a bulk frame checks before queueing it)
	EXPECT_TRUE(convertToArena(index, view, type, layout, data, out.data()));
	return out;
}

uint32_t bits(float f)
{
	return std::bit_cast<uint32_t>(f);
}

TEST(AttributeConvert, Vec3FloatsFeedAVec4WithWOne)
{
	const auto out = convert(bytesOf(std::vector<float>{1, 2, 3, 4, 5, 6}), VK_FORMAT_R32G32B32_SFLOAT, fx::V4f);
	EXPECT_EQ(out,
	          (std::vector<uint32_t>{bits(1), bits(2), bits(3), bits(1.0f), bits(4), bits(5), bits(6), bits(1.0f)}));
}

TEST(AttributeConvert, Vec4FloatsFeedAVec2Truncated)
{
	const auto out = convert(bytesOf(std::vector<float>{1, 2, 3, 4}), VK_FORMAT_R32G32B32A32_SFLOAT, fx::V2f);
	EXPECT_EQ(out, (std::vector<uint32_t>{bits(1), bits(2)}));
}

TEST(AttributeConvert, TightDataAtTheShadersSizeIsCopiedWhole)
{
	const auto out = convert(bytesOf(std::vector<float>{1, 2, 3, 4, 5, 6}), VK_FORMAT_R32G32B32_SFLOAT, fx::V3f);
	EXPECT_EQ(out, (std::vector<uint32_t>{bits(1), bits(2), bits(3), bits(4), bits(5), bits(6)}));
}

TEST(AttributeConvert, StrideAndOffsetSelectInterleavedElements)
{
	// Interleaved [position xyz, normal xyz] × 2: the normals start at byte 12, 24 bytes apart.
	const auto out = convert(bytesOf(std::vector<float>{0, 0, 0, 7, 8, 9, 1, 1, 1, 10, 11, 12}),
	                         VK_FORMAT_R32G32B32_SFLOAT, fx::V3f, 24, 12);
	EXPECT_EQ(out, (std::vector<uint32_t>{bits(7), bits(8), bits(9), bits(10), bits(11), bits(12)}));
}

TEST(AttributeConvert, Unorm8UsesTheRoundedReciprocalForEveryValue)
{
	std::vector<uint8_t> all(256 * 4);
	for (uint32_t c = 0; c < 256; ++c)
		all[c * 4] = all[c * 4 + 1] = all[c * 4 + 2] = all[c * 4 + 3] = uint8_t(c);
	const auto out = convert(scene::ArrayBuffer::of(all), VK_FORMAT_R8G8B8A8_UNORM, fx::V4f);
	ASSERT_EQ(out.size(), 256u * 4u);
	uint32_t differs_from_quotient = 0;
	for (uint32_t c = 0; c < 256; ++c)
	{
		const float product = float(c) * (1.0f / 255.0f);
		EXPECT_EQ(out[c * 4], bits(product)) << c;
		differs_from_quotient += bits(product) != bits(float(c) / 255.0f);
	}
	EXPECT_GT(differs_from_quotient, 0u) << "the rule would not matter";
	EXPECT_EQ(out[255 * 4], bits(1.0f));
	EXPECT_EQ(out[0], bits(0.0f));
}

TEST(AttributeConvert, Unorm16AndMissingComponentsFollowTheVertexInputFill)
{
	const auto out = convert(bytesOf(std::vector<uint16_t>{0, 65535}), VK_FORMAT_R16_UNORM, fx::V4f);
	EXPECT_EQ(out,
	          (std::vector<uint32_t>{bits(0), bits(0), bits(0), bits(1.0f), bits(1.0f), bits(0), bits(0), bits(1.0f)}));
}

TEST(AttributeConvert, IntegersWidenAndSignExtend)
{
	EXPECT_EQ(convert(bytesOf(std::vector<int16_t>{-2, 300}), VK_FORMAT_R16_SINT, fx::I32),
	          (std::vector<uint32_t>{0xFFFFFFFEu, 300u}));
	EXPECT_EQ(convert(bytesOf(std::vector<uint8_t>{1, 2, 3, 255}), VK_FORMAT_R8G8B8A8_UINT, fx::V4u),
	          (std::vector<uint32_t>{1, 2, 3, 255}));
	// A uvec4 from a scalar: the missing components are 0 and 1 (integer one, not 1.0f).
	EXPECT_EQ(convert(bytesOf(std::vector<uint32_t>{9}), VK_FORMAT_R32_UINT, fx::V4u),
	          (std::vector<uint32_t>{9, 0, 0, 1}));
}

TEST(AttributeConvert, MatrixAttributesReadOneColumnPerFormatValue)
{
	std::vector<float> columns(16);
	for (int i = 0; i < 16; ++i)
		columns[size_t(i)] = float(i);
	const auto out = convert(bytesOf(columns), VK_FORMAT_R32G32B32A32_SFLOAT, fx::M44f);
	ASSERT_EQ(out.size(), 16u);
	for (uint32_t i = 0; i < 16; ++i)
		EXPECT_EQ(out[i], bits(float(i))) << i;
}

TEST(AttributeConvert, U16IndicesWidenAndU32IndicesCopy)
{
	EXPECT_EQ(convert(bytesOf(std::vector<uint16_t>{0, 1, 65535}), VK_FORMAT_R16_UINT, fx::U32, 0, 0, true),
	          (std::vector<uint32_t>{0, 1, 65535}));
	EXPECT_EQ(convert(bytesOf(std::vector<uint32_t>{7, 70000}), VK_FORMAT_R32_UINT, fx::U32, 0, 0, true),
	          (std::vector<uint32_t>{7, 70000}));
}

TEST(AttributeConvert, TheLayoutCountsOnlyWholeElementsAfterTheOffset)
{
	scene::BufferView view;
	view.format = VK_FORMAT_R32G32B32_SFLOAT;
	view.stride = 16;
	view.offset = 4;
	// 44 bytes: elements at 4, 20 and 36 need 12 bytes each; the one at 36 ends at 48 > 44, so two fit.
	const ArenaLayout l = arenaLayout(false, view, fx::V4f, scene::ArrayBuffer::of(std::vector<uint32_t>(11)));
	EXPECT_EQ(l.elements, 2u);
	EXPECT_EQ(l.element, 12u);
	EXPECT_EQ(l.components, 4u);
	EXPECT_EQ(l.data_bytes, 32u);
	view.offset = 40;
	EXPECT_EQ(arenaLayout(false, view, fx::V4f, scene::ArrayBuffer::of(std::vector<uint32_t>(11))).elements, 0u);
}

TEST(AttributeConvert, AnUnknownFormatIsRefused)
{
	scene::BufferView view;
	view.format = VK_FORMAT_R64_SFLOAT;
	const auto data = bytesOf(std::vector<double>{1.0, 2.0});
	EXPECT_EQ(arenaLayout(false, view, fx::V4f, data).elements, 0u); // no known size: nothing read
	ArenaLayout layout{8, 8, 4, 2, 32};                              // as if it had one
	std::vector<uint32_t> out(8);
	EXPECT_FALSE(convertToArena(false, view, fx::M22f, layout, data, out.data()));
	EXPECT_FALSE(convertible(false, view.format, fx::M22f, layout));       // (known before converting: not queued)
	EXPECT_TRUE(convertible(false, view.format, fx::M22f, ArenaLayout{})); // (no elements: nothing to convert)
	uint32_t words[4];
	EXPECT_FALSE(convertColumn(data.data(), VK_FORMAT_R64_SFLOAT, fx::V4f, words));
	EXPECT_EQ(word32Components(VK_FORMAT_R64_SFLOAT), 0u);
	EXPECT_EQ(word32Components(VK_FORMAT_R32G32_SINT), 2u);
}

} // namespace
