// Mode rules on the CPU as a spec: a rule's value lands on its axis, `declared` is the object's own value, inputs
// resolve like derived uniforms (own, standard derived), and every misuse is a one-line error naming the object and
// the axis.
#include <quokka/modes/mode_rules.hpp>

#include <gtest/gtest.h>

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

struct Applied
{
	Result<void> result;
	scene::PipelineStateValues state;
};

Applied apply(const scene::RenderObject& o)
{
	inputs::DerivedUniforms derived;
	ModeInputs in;
	Applied a{in.resolve(o, derived), o.state.snapshot(adaptive::Token{})};
	if (a.result.ok())
		a.result = in.apply(o, adaptive::Token{}, a.state);
	return a;
}

std::string message(const Result<void>& r)
{
	return r.ok() ? "" : r.error().message;
}

TEST(ModeRulesTest, RulesSetTheirAxesFromUniformsAndTheDeclaredValue)
{
	adaptive::cval<math::Trafo3d> model(math::Trafo3d::scale(math::V3d(-1.0, 1.0, 1.0)));
	adaptive::cval<float> opacity(0.5f);
	scene::RenderObject o;
	o.uniforms["ModelTrafo"] = scene::uniform(model);
	o.uniforms["Opacity"] = scene::uniform(opacity);
	o.state.front_face = adaptive::constant(VK_FRONT_FACE_CLOCKWISE);
	o.mode_rules.push_back({ModeAxis::FrontFace, flipWhenMirrored(), {}});
	o.mode_rules.push_back({ModeAxis::Blend,
	                        make(select(leaf("Opacity", fx::F32) < lit(1.0), lit(1u), lit(0u))),
	                        {scene::BlendState{}, scene::BlendState::alpha()}});
	o.mode_rules.push_back({ModeAxis::DepthWrite, make(leaf("Opacity", fx::F32) >= lit(1.0)), {}});
	o.mode_rules.push_back(
	    {ModeAxis::CullMode, make(select(leaf("Opacity", fx::F32) < lit(1.0), lit(0u), lit(2u))), {}});
	Applied a = apply(o);
	ASSERT_EQ(message(a.result), "");
	EXPECT_EQ(a.state.front_face, VK_FRONT_FACE_COUNTER_CLOCKWISE) << "mirrored: the declared clockwise flipped";
	EXPECT_EQ(a.state.default_blend, scene::BlendState::alpha());
	EXPECT_FALSE(a.state.depth_write);
	EXPECT_EQ(a.state.cull_mode, VK_CULL_MODE_NONE);
	// Not mirrored, opaque: the declared value stays, the first blend state, depth written, back faces culled.
	model.setValue(math::Trafo3d::translation(math::V3d(3.0, 0.0, 0.0)));
	opacity.setValue(1.0f);
	a = apply(o);
	ASSERT_EQ(message(a.result), "");
	EXPECT_EQ(a.state.front_face, VK_FRONT_FACE_CLOCKWISE);
	EXPECT_EQ(a.state.default_blend, scene::BlendState{});
	EXPECT_TRUE(a.state.depth_write);
	EXPECT_EQ(a.state.cull_mode, VK_CULL_MODE_BACK_BIT);
}

TEST(ModeRulesTest, RulesReadStandardDerivedUniforms)
{
	// The camera looks down −z from +5: an object in front of it has ModelViewTrafo's z below 0.
	adaptive::cval<math::Trafo3d> model(math::Trafo3d::translation(math::V3d(0.0, 0.0, 1.0)));
	scene::RenderObject o;
	o.uniforms["ModelTrafo"] = scene::uniform(model);
	o.uniforms["ViewTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0.0, 0.0, -5.0)));
	const Expr z = swizzle(transformPos(leaf("ModelViewTrafo", fx::M44f), lit(math::V3d(0.0, 0.0, 0.0))), "z");
	o.mode_rules.push_back({ModeAxis::DepthTest, make(z < lit(-4.5)), {}});
	Applied a = apply(o);
	ASSERT_EQ(message(a.result), "");
	EXPECT_FALSE(a.state.depth_test) << "z = −4";
	model.setValue(math::Trafo3d::translation(math::V3d(0.0, 0.0, -1.0)));
	a = apply(o);
	ASSERT_EQ(message(a.result), "");
	EXPECT_TRUE(a.state.depth_test) << "z = −6";
}

TEST(ModeRulesTest, MisusesAreOneLineErrorsNamingTheObjectAndTheAxis)
{
	auto object = [](std::vector<ModeRule> rules)
	{
		scene::RenderObject o;
		o.uniforms["Opacity"] = scene::uniform(0.5f);
		o.mode_rules = std::move(rules);
		return o;
	};
	const Rule cw = make(lit(1u));
	{
		const scene::RenderObject o = object({{ModeAxis::FrontFace, cw, {}}, {ModeAxis::FrontFace, cw, {}}});
		EXPECT_EQ(message(apply(o).result),
		          "render object #" + std::to_string(o.id) + ": two mode rules for front_face (at most one per axis)");
	}
	const std::string prefix = "render object #";
	auto expectError = [&](std::vector<ModeRule> rules, const std::string& what)
	{
		const scene::RenderObject o = object(std::move(rules));
		EXPECT_EQ(message(apply(o).result), prefix + std::to_string(o.id) + ": the mode rule for " + what);
	};
	expectError({{ModeAxis::DepthWrite, cw, {}}}, "depth_write gives uint (the axis takes bool)");
	expectError({{ModeAxis::CullMode, make(lit(1.5)), {}}}, "cull_mode gives float (the axis takes uint)");
	expectError({{ModeAxis::Blend, cw, {}}}, "blend has no blend states to select");
	expectError({{ModeAxis::Blend, make(leaf("declared", fx::U32)), {scene::BlendState{}}}},
	            "blend reads 'declared' (a blend rule selects among its states)");
	expectError({{ModeAxis::DepthTest, make(negate(leaf("declared", fx::Bool))), {}},
	             {ModeAxis::CullMode, make(leaf("declared", fx::I32) + lit(int32_t(1))), {}}},
	            "cull_mode reads 'declared' as int (it is uint)");
	expectError({{ModeAxis::Topology, make(convert(leaf("Missing", fx::F32), fx::Scalar::U32)), {}}},
	            "topology reads 'Missing', a uniform the object neither has nor derives");
	expectError({{ModeAxis::DepthWrite, make(length(leaf("Opacity", fx::V3f)) > lit(0.5)), {}}},
	            "depth_write reads 'Opacity' as " + fx::typeName(fx::V3f) + " but its value is not");
	expectError({{ModeAxis::CullMode, make(lit(7u)), {}}}, "cull_mode gives 7 (not a value of the axis)");
	expectError({{ModeAxis::Blend, make(lit(2u)), {scene::BlendState{}, scene::BlendState::alpha()}}},
	            "blend gives 2 (not a value of the axis)");
}

} // namespace
} // namespace quokka::modes
