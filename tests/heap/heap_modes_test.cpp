// Mode rules (scene::ModeRule) on every path, as a specification: the pipeline state an object's rules derive from its
// uniforms — its front face flipped where its model trafo mirrors, alpha blending where its opacity is below one —
// routes it on the heap (CPU routing) to the slot of that state with the pixels of the classic path, and a changed
// trafo or opacity re-routes it in the next frame.
#include "heap_fixture.hpp"

#include <quokka/rules/expr.hpp>

namespace quokka::heap::test
{
namespace
{

using namespace quokka::rules;
using scene::ModeAxis;

Rule ruleOf(const Expr& e)
{
	Result<Rule> r = Rule::make(e);
	EXPECT_TRUE(r.ok()) << r.error().message;
	return r.ok() ? *r : Rule{};
}

TEST_F(HeapRenderTest, ModeRulesRouteObjectsByTheStateTheirUniformsDeriveAndMatchClassic)
{
	const fx::Effect effect = Effects{}.constant;
	const Expr declared = leaf("declared", fx::U32);
	const Rule flip =
	    ruleOf(select(determinant(upper3x3(leaf("ModelTrafo", fx::M44f))) < lit(0.0), lit(1u) - declared, declared));
	const Rule translucent = ruleOf(select(leaf("Opacity", fx::F32) < lit(1.0), lit(1u), lit(0u)));
	// Six triangles in a row, culled where back-facing; every other one mirrored in x about its own centre.
	std::vector<cval<math::Trafo3d>> trafos;
	std::vector<cval<float>> opacity;
	std::vector<RenderObjectPtr> objects, plain;
	auto mirrored = [](int i, bool mirror)
	{
		return math::Trafo3d::translation(math::V3d(-0.75 + 0.3 * i, 0.0, 0.0)) *
		       math::Trafo3d::scale(math::V3d(mirror ? -1.0 : 1.0, 1.0, 1.0));
	};
	for (int i = 0; i < 6; ++i)
	{
		trafos.emplace_back(mirrored(i, i % 2 == 1));
		opacity.emplace_back(i == 4 ? 0.5f : 1.0f);
		const float z = 0.1f + 0.05f * float(i);
		RenderObject o = litTriangle(effect, V3f(-0.1f, -0.2f, z), V3f(0.1f, -0.2f, z), V3f(0.0f, 0.2f, z),
		                             rgba(200, 40 + 30 * i, 90, 128));
		o.uniforms["ModelTrafo"] = scene::uniform(trafos.back());
		o.uniforms["Opacity"] = scene::uniform(opacity.back());
		o.state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
		o.state.front_face = adaptive::constant(VK_FRONT_FACE_CLOCKWISE);
		RenderObject without = o; // (the same object without rules: the mirrored ones culled, nothing blended)
		o.mode_rules.push_back({ModeAxis::FrontFace, flip, {}});
		o.mode_rules.push_back({ModeAxis::Blend, translucent, {scene::BlendState{}, scene::BlendState::alpha()}});
		objects.push_back(scene::makeRenderObject(std::move(o)));
		plain.push_back(scene::makeRenderObject(std::move(without)));
	}
	adaptive::cset<RenderObjectPtr> set;
	set.unionWith(objects);
	const auto tree = RenderTree::ofObjects(set);
	adaptive::cset<RenderObjectPtr> plain_set;
	plain_set.unionWith(plain);
	const Rgba8Image culled = render(RenderTree::ofObjects(plain_set), {});
	for (const Mode& m : modes())
	{
		SCOPED_TRACE(m.name);
		adaptive::transact(
		    [&]
		    {
			    for (int i = 0; i < 6; ++i)
			    {
				    trafos[i].setValue(mirrored(i, i % 2 == 1));
				    opacity[i].setValue(i == 4 ? 0.5f : 1.0f);
			    }
		    });
		auto t = task(tree, m.options);
		ASSERT_EQ(frame(*t), "");
		const Rgba8Image all = pixels();
		EXPECT_GT(covered(all), covered(culled)) << "the mirrored triangles are drawn with their front face flipped";
		const bool heap = m.options.path == runtime::RenderPath::Heap;
		if (heap)
		{
			EXPECT_EQ(t->stats().heap.slots, 3u) << "clockwise, counter-clockwise, and the translucent one";
		}
		// The translucent triangle is blended over the background: its colour is not the opaque one.
		const Rgba8Image opaque = [&]
		{
			adaptive::transact([&] { opacity[4].setValue(1.0f); });
			EXPECT_EQ(frame(*t), "");
			return pixels();
		}();
		EXPECT_GT(differing(all, opaque), 0u) << "opacity 1 routes it back to the opaque slot in the next frame";
		// Mirroring an unmirrored triangle and unmirroring a mirrored one re-routes both in the next frame: every
		// triangle stays drawn.
		adaptive::transact(
		    [&]
		    {
			    trafos[0].setValue(mirrored(0, true));
			    trafos[1].setValue(mirrored(1, false));
			    opacity[4].setValue(0.5f);
		    });
		ASSERT_EQ(frame(*t), "");
		const Rgba8Image flipped = pixels();
		EXPECT_EQ(covered(flipped), covered(all));
		if (!heap)
			continue;
		// Against the classic path's pixels of the same state.
		auto classic = task(tree, {});
		ASSERT_EQ(frame(*classic), "");
		EXPECT_EQ(differing(flipped, pixels()), 0u);
	}
}

TEST_F(HeapRenderTest, TwoModeRulesOnOneAxisFailTheFrameWithOneLineOnEveryPath)
{
	RenderObject o = litTriangle(Effects{}.constant, V3f(-0.5f, -0.5f, 0.5f), V3f(0.5f, -0.5f, 0.5f),
	                             V3f(0.0f, 0.5f, 0.5f), rgba(200, 40, 40));
	const Rule cw = ruleOf(lit(1u));
	o.mode_rules.push_back({ModeAxis::FrontFace, cw, {}});
	o.mode_rules.push_back({ModeAxis::FrontFace, cw, {}});
	const RenderObjectPtr object = scene::makeRenderObject(std::move(o));
	adaptive::cset<RenderObjectPtr> set;
	set.add(object);
	for (const Mode& m : modes())
	{
		SCOPED_TRACE(m.name);
		auto t = task(RenderTree::ofObjects(set), m.options);
		const std::string error = frame(*t);
		EXPECT_NE(error.find("render object #" + std::to_string(object->id) +
		                     ": two mode rules for front_face (at most one per axis)"),
		          std::string::npos)
		    << error;
		EXPECT_EQ(error.find('\n'), std::string::npos);
	}
}

} // namespace
} // namespace quokka::heap::test
