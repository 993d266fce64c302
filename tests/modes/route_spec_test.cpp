// RouteSpec as a spec (CPU): `declared` is baked and folded, each axis's value set comes from constants and select
// branches (or the whole axis), slots are the mixed-radix product of the sets, state(slot) sets every routed axis, and
// slotOf() agrees with the CPU rules (ModeInputs::apply) on the state it gives.
#include <quokka/modes/route_spec.hpp>

#include <bit>
#include <random>

#include <gtest/gtest.h>

#include <quokka/modes/mode_rules.hpp>
#include <quokka/modes/partition.hpp>
#include <quokka/rules/expr.hpp>

#include "rule_helpers.hpp"

namespace quokka::modes
{
namespace
{

using namespace quokka::rules;
using scene::ModeAxis;
using scene::ModeRule;

using test::flipWhenMirrored;
using test::make;

std::vector<ModeRule> frontFaceAndBlend()
{
	return {{ModeAxis::FrontFace, flipWhenMirrored(), {}},
	        {ModeAxis::Blend,
	         make(select(leaf("Opacity", fx::F32) < lit(1.0), lit(1u), lit(0u))),
	         {scene::BlendState{}, scene::BlendState::alpha()}}};
}

/// A record's packed inputs for the two rules above.
std::vector<uint32_t> words(const math::M44d& model, float opacity)
{
	std::vector<uint32_t> w(17);
	RouteSpec::pack(Value::of(model), w.data());
	w[16] = std::bit_cast<uint32_t>(opacity);
	return w;
}

TEST(RouteSpecTest, BakesDeclaredAndSpansTheProductOfTheValueSets)
{
	scene::PipelineStateValues declared;
	declared.front_face = VK_FRONT_FACE_CLOCKWISE;
	const RouteSpec spec = RouteSpec::make(frontFaceAndBlend(), declared).value();
	ASSERT_EQ(spec.axes().size(), 2u);
	EXPECT_EQ(spec.axes()[0].rule.input("declared"), -1) << "declared is folded away";
	EXPECT_EQ(spec.axes()[0].values, (std::vector<uint32_t>{0, 1}));
	EXPECT_EQ(spec.axes()[1].values, (std::vector<uint32_t>{0, 1}));
	EXPECT_EQ(spec.slots(), 4u);
	EXPECT_EQ(spec.inputWords(), 17u);
	// Every slot is one combination: front face from digit 0, blend from digit 1.
	for (uint32_t s = 0; s < 4; ++s)
	{
		const scene::PipelineStateValues st = spec.state(s, declared);
		EXPECT_EQ(uint32_t(st.front_face), s % 2);
		EXPECT_EQ(st.default_blend, s / 2 ? scene::BlendState::alpha() : scene::BlendState{});
		EXPECT_EQ(st.cull_mode, declared.cull_mode) << "unrouted axes are the declared state's";
	}
	const math::M44d mirror = math::Trafo3d::scale(math::V3d(-1, 1, 1)).forward;
	EXPECT_EQ(spec.slotOf(words(math::M44d(1.0), 1.0f)), 1u) << "declared clockwise, opaque";
	EXPECT_EQ(spec.slotOf(words(mirror, 1.0f)), 0u) << "mirrored: flipped to counter-clockwise";
	EXPECT_EQ(spec.slotOf(words(mirror, 0.5f)), 2u);
	EXPECT_EQ(spec.slotOf(words(math::M44d(1.0), 0.25f)), 3u);
}

TEST(RouteSpecTest, ValueSetsFollowConstantsSelectsAndTheAxisDomain)
{
	const Expr opacity = leaf("Opacity", fx::F32);
	std::vector<ModeRule> rules = {
	    {ModeAxis::CullMode,
	     make(select(opacity < lit(0.5), lit(0u), select(opacity < lit(0.9), lit(2u), lit(9u)))),
	     {}},
	    {ModeAxis::DepthCompare, make(convert(floor(opacity * lit(8.0)), fx::Scalar::U32)), {}},
	    {ModeAxis::DepthWrite, make(lit(true)), {}}};
	const RouteSpec spec = RouteSpec::make(rules, {}).value();
	EXPECT_EQ(spec.axes()[0].values, (std::vector<uint32_t>{0, 2})) << "9 is no cull mode: never a slot";
	EXPECT_EQ(spec.axes()[1].values.size(), 8u) << "a computed value: every compare op";
	EXPECT_EQ(spec.axes()[2].values, (std::vector<uint32_t>{1}));
	EXPECT_EQ(spec.slots(), 16u);
	EXPECT_EQ(spec.inputWords(), 2u) << "one opacity per rule that reads it";
	const float o95 = 0.95f, o3 = 0.3f;
	EXPECT_EQ(spec.slotOf(std::vector<uint32_t>{std::bit_cast<uint32_t>(o95), std::bit_cast<uint32_t>(o95)}), kNoSlot)
	    << "cull mode 9";
	EXPECT_EQ(spec.slotOf(std::vector<uint32_t>{std::bit_cast<uint32_t>(o3), std::bit_cast<uint32_t>(o3)}),
	          0u + 2u * 2u)
	    << "cull 0 (digit 0), compare 2 (digit 2, radix 2)";
}

TEST(RouteSpecTest, TooManyCombinationsIsAnError)
{
	std::vector<ModeRule> rules;
	const Expr x = leaf("X", fx::U32);
	rules.push_back({ModeAxis::DepthCompare, make(x), {}});
	rules.push_back({ModeAxis::CullMode, make(x), {}});
	rules.push_back({ModeAxis::Topology, make(x), {}});
	rules.push_back({ModeAxis::FrontFace, make(x), {}});
	rules.push_back({ModeAxis::DepthTest, make(x > lit(0u)), {}});
	rules.push_back({ModeAxis::DepthWrite, make(x > lit(1u)), {}});
	rules.push_back({ModeAxis::AlphaToCoverage, make(x > lit(2u)), {}});
	EXPECT_EQ(RouteSpec::make(rules, {}).value().slots(), 8u * 4 * 3 * 2 * 2 * 2 * 2);
	rules.push_back({ModeAxis::Blend, make(x), std::vector<scene::BlendState>(5)});
	const auto r = RouteSpec::make(rules, {});
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("4096"), std::string::npos) << r.error().message;
}

TEST(RouteSpecTest, SlotOfAgreesWithTheCpuRulesOnRandomObjects)
{
	std::mt19937 rng(7);
	std::uniform_real_distribution<double> u(-1.0, 1.0);
	for (int i = 0; i < 200; ++i)
	{
		const math::Trafo3d model = math::Trafo3d::scale(math::V3d(u(rng) < 0 ? -1.0 : 1.0, 1.0 + u(rng) * 0.5, 1.0)) *
		                            math::Trafo3d::translation(math::V3d(u(rng), u(rng), u(rng)));
		const float opacity = float(u(rng) < 0 ? 0.5 : 1.0);
		scene::RenderObject o;
		o.uniforms["ModelTrafo"] = scene::uniform(adaptive::constant(model));
		o.uniforms["Opacity"] = scene::uniform(adaptive::constant(opacity));
		o.state.front_face = adaptive::constant(i % 2 ? VK_FRONT_FACE_CLOCKWISE : VK_FRONT_FACE_COUNTER_CLOCKWISE);
		o.mode_rules = frontFaceAndBlend();
		inputs::DerivedUniforms derived;
		ModeInputs in;
		ASSERT_TRUE(in.resolve(o, derived).ok());
		const scene::PipelineStateValues declared = o.state.snapshot(adaptive::Token{});
		scene::PipelineStateValues cpu = declared;
		ASSERT_TRUE(in.apply(o, adaptive::Token{}, cpu).ok());
		const RouteSpec spec = RouteSpec::make(o.mode_rules, declared).value();
		const uint32_t slot = spec.slotOf(words(model.forward, opacity));
		ASSERT_LT(slot, spec.slots());
		EXPECT_EQ(spec.state(slot, declared), cpu) << "object " << i;
	}
}

} // namespace
} // namespace quokka::modes
