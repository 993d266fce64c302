// heap_errors_test.cpp — errors and diagnostics: bad objects and bad per-instance uniforms fail with one line naming
// them; the validator reports a corrupted draw header.
#include "heap/heap_test_access.hpp"
#include "heap_fixture.hpp"

#include <quokka/scene/trafo_chain.hpp>

namespace quokka::heap::test
{
namespace
{

TEST_F(HeapRenderTest, BadObjectsFailWithOneLineNamingThem)
{
	const Effects fx;
	RenderObject o;
	o.effect = fx.colors; // needs Colors, which the object lacks
	o.attributes["Positions"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0)), VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Normals"] = o.attributes["Positions"];
	o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
	const auto bad = scene::makeRenderObject(std::move(o));
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::leafOf(bad), options);
	const std::string error = frame(*t);
	EXPECT_NE(error.find("render object #" + std::to_string(bad->id)), std::string::npos) << error;
	EXPECT_NE(error.find("Colors"), std::string::npos) << error;
	EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

/// Bad per-instance uniforms fail with one line naming the object and the uniform, in both paths: fewer values than
/// the draw's instances, and a bool uniform (no vertex attribute can carry it).
TEST_F(HeapRenderTest, BadPerInstanceUniformsFailWithOneLineNamingThem)
{
	const Effects fx;
	ASSERT_TRUE(fx::UniformScope::declare("TestInstanceFlag", fx::Bool).ok());
	const fx::Effect flagged =
	    effectOf({fx::stock::trafo(),
	              std::make_shared<const fx::Stage>(fx::Stage::fragment("test.flag")
	                                                    .writes({{"Colors", fx::V4f}})
	                                                    .uniforms({"TestInstanceFlag"})
	                                                    .glsl("s.Colors = vec4(TestInstanceFlag ? 1.0 : 0.0);"))});
	auto object = [&](const fx::Effect& effect, const std::string& per_instance, uint32_t values)
	{
		RenderObject o;
		o.effect = effect;
		o.attributes["Positions"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0)), VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = o.attributes["Positions"];
		o.attributes[per_instance] =
		    scene::BufferView::of(std::vector<V4f>(values, V4f(1.0f)), VK_FORMAT_R32G32B32A32_SFLOAT, true);
		scene::DrawCall d{false, 3};
		d.instance_count = 3;
		o.draw_call = adaptive::constant(d);
		return scene::makeRenderObject(std::move(o));
	};
	const auto short_colors = object(fx.constant, "ConstantColor", 2);
	const auto bool_flag = object(flagged, "TestInstanceFlag", 3);
	for (const Mode& m : modes())
	{
		for (const auto& [bad, words] :
		     {std::pair{short_colors, std::vector<std::string>{"ConstantColor", "3 instances"}},
		      std::pair{bool_flag, std::vector<std::string>{"TestInstanceFlag", "bool"}}})
		{
			auto t = task(RenderTree::leafOf(bad), m.options);
			const std::string error = frame(*t);
			EXPECT_NE(error.find("render object #" + std::to_string(bad->id)), std::string::npos) << m.name << error;
			for (const std::string& w : words)
				EXPECT_NE(error.find(w), std::string::npos) << m.name << ": " << error;
			EXPECT_EQ(error.find('\n'), std::string::npos) << error;
		}
	}
}

/// A transform chain bound to a uniform the effect reads as another type fails with one line naming the object and the
/// uniform, on every path (the heap would compose it on the device; the classic path reads it on the CPU).
TEST_F(HeapRenderTest, AChainReadAsAnotherTypeFailsWithOneLineNamingIt)
{
	const Effects fx;
	ASSERT_TRUE(fx::UniformScope::declare("TestChainColor", fx::V4f).ok());
	const fx::Effect tinted =
	    effectOf({fx::stock::trafo(), std::make_shared<const fx::Stage>(fx::Stage::fragment("test.chainColor")
	                                                                        .writes({{"Colors", fx::V4f}})
	                                                                        .uniforms({"TestChainColor"})
	                                                                        .glsl("s.Colors = TestChainColor;"))});
	const cval<math::Trafo3d> root(math::Trafo3d::identity()), local(math::Trafo3d::scale(0.5));
	const scene::TrafoChain chain = scene::TrafoChain::root(root).child(local);
	RenderObject o;
	o.effect = tinted;
	o.attributes["Positions"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0)), VK_FORMAT_R32G32B32_SFLOAT);
	o.uniforms["ModelTrafo"] = chain.world();
	o.uniforms["TestChainColor"] = chain.world();
	o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
	// The same through a rule: TestChainColor derived from a vector the chain is bound to.
	RenderObject r = o;
	r.uniforms.erase("TestChainColor");
	r.uniforms["TestChainVector"] = chain.world();
	r.derived["TestChainColor"] = rules::Rule::make(rules::leaf("TestChainVector", fx::V4f) * rules::lit(0.5)).value();
	for (const auto& bad : {scene::makeRenderObject(std::move(o)), scene::makeRenderObject(std::move(r))})
		for (const Mode& m : modes())
		{
			auto t = task(RenderTree::leafOf(bad), m.options);
			const std::string error = frame(*t);
			EXPECT_NE(error.find("render object #" + std::to_string(bad->id)), std::string::npos) << m.name << error;
			EXPECT_NE(error.find("TestChainColor"), std::string::npos) << m.name << ": " << error;
			EXPECT_EQ(error.find('\n'), std::string::npos) << error;
		}
}

TEST_F(HeapRenderTest, ValidatorReportsACorruptedDrawHeader)
{
	const Effects fx;
	RandomScene s = randomScene(4, 20, fx);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::ofObjects(adaptive::asetOf(s.objects)), options);
	ASSERT_EQ(frame(*t), "");
	HeapScene& heap = *t->heapScenes().front();
	auto clean = heap.validateHeap();
	ASSERT_TRUE(clean.ok());
	EXPECT_TRUE(clean->empty()) << clean->front();
	ASSERT_TRUE(detail::HeapTestAccess::corruptDrawHeader(heap, 0, 0x7FFFFFF0u).ok());
	auto corrupt = heap.validateHeap();
	ASSERT_TRUE(corrupt.ok());
	ASSERT_FALSE(corrupt->empty());
	EXPECT_NE(corrupt->front().find("header"), std::string::npos) << corrupt->front();
}

} // namespace
} // namespace quokka::heap::test
