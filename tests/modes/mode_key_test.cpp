// The mode key as a spec: exact (decode gives the state back), equal realised states collide, different ones never
// do, the pipeline and dynamic parts kept apart, compact, and refusals with one line.
#include <quokka/modes/mode_key.hpp>

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace quokka::modes
{
namespace
{

using scene::BlendState;
using scene::PipelineStateValues;

/// A random enum value: mostly core values, sometimes one past the field's core range (an extension's value).
template <typename E>
E pick(std::mt19937& rng, uint32_t core, uint32_t extension)
{
	return E(rng() % 8 == 0 ? extension : rng() % core);
}

BlendState randomBlend(std::mt19937& rng)
{
	BlendState b;
	b.enabled = rng() % 2;
	b.src_color = pick<VkBlendFactor>(rng, 19, 100);
	b.dst_color = pick<VkBlendFactor>(rng, 19, 31);
	b.color_op = pick<VkBlendOp>(rng, 5, 1000148001); // VK_BLEND_OP_SRC_EXT (advanced blending)
	b.src_alpha = pick<VkBlendFactor>(rng, 19, 40);
	b.dst_alpha = pick<VkBlendFactor>(rng, 19, 19);
	b.alpha_op = pick<VkBlendOp>(rng, 5, 1000148045);
	b.write_mask = VkColorComponentFlags(rng() % 16);
	return b;
}

float randomReal(std::mt19937& rng)
{
	switch (rng() % 4)
	{
	case 0:
		return 0.0f;
	case 1:
		return -0.0f;
	default:
		return std::uniform_real_distribution<float>(-1e6f, 1e6f)(rng);
	}
}

uint32_t randomWord(std::mt19937& rng)
{
	switch (rng() % 3)
	{
	case 0:
		return rng() % 256;
	case 1:
		return 0xffu;
	default:
		return uint32_t(rng());
	}
}

std::vector<std::string> attachmentNames(size_t n)
{
	std::vector<std::string> names;
	for (size_t i = 0; i < n; ++i)
		names.push_back("Color" + std::to_string(i));
	return names;
}

PipelineStateValues randomState(std::mt19937& rng, const std::vector<std::string>& names)
{
	PipelineStateValues v;
	v.topology = pick<VkPrimitiveTopology>(rng, 11, 15);
	v.cull_mode = VkCullModeFlags(rng() % 4);
	v.front_face = pick<VkFrontFace>(rng, 2, 3);
	v.depth_test = rng() % 2;
	v.depth_write = rng() % 2;
	v.depth_compare = pick<VkCompareOp>(rng, 8, 15);
	v.depth_clamp = rng() % 2;
	v.depth_bias = {bool(rng() % 2), randomReal(rng), randomReal(rng), randomReal(rng)};
	v.stencil.enabled = rng() % 2;
	v.stencil.fail = pick<VkStencilOp>(rng, 8, 15);
	v.stencil.pass = pick<VkStencilOp>(rng, 8, 16);
	v.stencil.depth_fail = VkStencilOp(rng() % 8);
	v.stencil.compare = VkCompareOp(rng() % 8);
	v.stencil.reference = randomWord(rng);
	v.stencil.compare_mask = randomWord(rng);
	v.stencil.write_mask = randomWord(rng);
	v.alpha_to_coverage = rng() % 2;
	if (rng() % 2)
		v.default_blend = randomBlend(rng);
	// Some attachments named (one of them equal to the default), one name the framebuffer lacks.
	for (const std::string& name : names)
		if (rng() % 3 == 0)
			v.blend[name] = rng() % 4 == 0 ? v.default_blend : randomBlend(rng);
	if (rng() % 4 == 0)
		v.blend["NotAnAttachment"] = randomBlend(rng);
	return v;
}

ModeKey key(const PipelineStateValues& v, const std::vector<std::string>& names)
{
	Result<ModeKey> k = ModeKey::encode(v, names);
	EXPECT_TRUE(k.ok()) << k.error().message;
	return k.ok() ? *k : ModeKey{};
}

TEST(ModeKeyTest, RandomStatesOfEveryAttachmentCountRoundTripExactly)
{
	std::mt19937 rng(38);
	for (size_t n : {0, 1, 2, 3, 4, 8, 17})
	{
		const std::vector<std::string> names = attachmentNames(n);
		for (int round = 0; round < 300; ++round)
		{
			const PipelineStateValues v = randomState(rng, names);
			const ModeKey k = key(v, names);
			EXPECT_EQ(k.attachments(), n);
			Result<PipelineStateValues> back = k.decode(names);
			ASSERT_TRUE(back.ok()) << back.error().message;
			ASSERT_EQ(*back, ModeKey::canonical(v, names)) << "attachments " << n << ", round " << round;
			EXPECT_EQ(key(*back, names), k) << "a decoded state encodes to its key";
		}
	}
}

TEST(ModeKeyTest, EqualRealisedStatesCollideAndDifferentOnesNeverDo)
{
	std::mt19937 rng(39);
	const std::vector<std::string> names = attachmentNames(2);
	// Equal: an attachment given the default blend explicitly, a blend for an attachment the framebuffer lacks, −0.
	PipelineStateValues a;
	a.default_blend = BlendState::alpha();
	PipelineStateValues b = a;
	b.blend["Color1"] = BlendState::alpha();
	b.blend["Elsewhere"] = BlendState{};
	b.depth_bias.slope = -0.0f;
	EXPECT_EQ(key(a, names), key(b, names));
	EXPECT_EQ(key(a, names).hash(), key(b, names).hash());
	// Random pairs, many of them near each other (one field changed): keys equal exactly when the states are.
	std::vector<PipelineStateValues> states;
	for (int i = 0; i < 400; ++i)
		states.push_back(randomState(rng, names));
	for (int i = 0; i < 400; ++i)
	{
		PipelineStateValues v = states[rng() % states.size()];
		switch (rng() % 6)
		{
		case 0:
			v.stencil.write_mask ^= 1u << (rng() % 32);
			break;
		case 1:
			v.blend[names[rng() % 2]].write_mask ^= 1u << (rng() % 4);
			break;
		case 2:
			v.depth_bias.clamp = std::nextafter(v.depth_bias.clamp, 1e30f);
			break;
		case 3:
			v.topology = VkPrimitiveTopology((v.topology + 1) % 11);
			break;
		case 4:
			v.stencil.reference += 256;
			break;
		default:
			break; // (an unchanged copy)
		}
		states.push_back(v);
	}
	size_t equal = 0;
	for (size_t i = 0; i < states.size(); ++i)
		for (size_t j = i + 1; j < states.size(); j += 7)
		{
			const bool same = ModeKey::canonical(states[i], names) == ModeKey::canonical(states[j], names);
			equal += same;
			ASSERT_EQ(key(states[i], names) == key(states[j], names), same) << i << " and " << j;
		}
	EXPECT_GT(equal, 0u) << "the pairs include equal states";
}

TEST(ModeKeyTest, DynamicStateIsKeptApartFromThePipelinePart)
{
	const std::vector<std::string> names = attachmentNames(1);
	PipelineStateValues base;
	const ModeKey k = key(base, names);
	// Every dynamic field changes the dynamic part only: one pipeline serves both slots.
	std::vector<PipelineStateValues> dynamic(9, base);
	dynamic[0].cull_mode = VK_CULL_MODE_BACK_BIT;
	dynamic[1].front_face = VK_FRONT_FACE_CLOCKWISE;
	dynamic[2].depth_test = false;
	dynamic[3].depth_write = false;
	dynamic[4].depth_compare = VK_COMPARE_OP_GREATER;
	dynamic[5].depth_bias = {true, 1.5f, 0.25f, 0.0f};
	dynamic[6].stencil.enabled = true;
	dynamic[7].stencil.reference = 7;
	dynamic[8].stencil.pass = VK_STENCIL_OP_INCREMENT_AND_WRAP;
	for (const PipelineStateValues& v : dynamic)
	{
		const ModeKey d = key(v, names);
		EXPECT_EQ(d.pipeline(), k.pipeline());
		EXPECT_NE(d.dynamic(), k.dynamic());
	}
	// Every pipeline field changes the pipeline part only.
	std::vector<PipelineStateValues> baked(4, base);
	baked[0].topology = VK_PRIMITIVE_TOPOLOGY_LINE_LIST;
	baked[1].depth_clamp = true;
	baked[2].alpha_to_coverage = true;
	baked[3].blend["Color0"] = BlendState::alpha();
	for (const PipelineStateValues& v : baked)
	{
		const ModeKey p = key(v, names);
		EXPECT_NE(p.pipeline(), k.pipeline());
		EXPECT_EQ(p.dynamic(), k.dynamic());
	}
}

TEST(ModeKeyTest, TypicalKeysTakeAWordPerPart)
{
	PipelineStateValues v;
	v.cull_mode = VK_CULL_MODE_BACK_BIT;
	v.stencil = {true, VK_STENCIL_OP_KEEP, VK_STENCIL_OP_REPLACE, VK_STENCIL_OP_KEEP, VK_COMPARE_OP_ALWAYS, 1, 0xff,
	             0xff};
	v.default_blend = BlendState::alpha();
	const ModeKey one = key(v, attachmentNames(1));
	EXPECT_EQ(one.pipeline().size(), 1u);
	EXPECT_EQ(one.dynamic().size(), 1u);
	EXPECT_EQ(one.pipelineBits(), 8u + 4 + 2 + 32);
	// Four attachments: 8 + 4 + 2 + 4 × 32 bits.
	EXPECT_EQ(key(v, attachmentNames(4)).pipeline().size(), 3u);
	// An advanced blend op takes its escape code and 32 bits; a large reference its 32 bits.
	v.default_blend.color_op = VK_BLEND_OP_MULTIPLY_EXT;
	v.stencil.reference = 1000;
	const ModeKey wide = key(v, attachmentNames(1));
	EXPECT_EQ(wide.pipelineBits(), one.pipelineBits() + 32);
	EXPECT_EQ(wide.dynamicBits(), one.dynamicBits() + 24);
}

TEST(ModeKeyTest, RefusalsSayWhatIsWrongInOneLine)
{
	const std::vector<std::string> many = attachmentNames(256);
	Result<ModeKey> k = ModeKey::encode(PipelineStateValues{}, many);
	ASSERT_FALSE(k.ok());
	EXPECT_EQ(k.error().message, "mode key: 256 colour attachments (at most 255)");
	const ModeKey two = key(PipelineStateValues{}, attachmentNames(2));
	Result<PipelineStateValues> wrong = two.decode(attachmentNames(3));
	ASSERT_FALSE(wrong.ok());
	EXPECT_EQ(wrong.error().message, "mode key: encoded for 2 colour attachments, decoded for 3");
	Result<PipelineStateValues> empty = ModeKey{}.decode({});
	ASSERT_FALSE(empty.ok());
	EXPECT_EQ(empty.error().message, "mode key: the words are not a key's (truncated or altered)");
}

} // namespace
} // namespace quokka::modes
