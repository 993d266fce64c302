// Background pipelines (inputs::Context::setBackgroundPipelines, Runtime::waitIdle) on both render paths: a frame whose
// pipelines are still being created returns without them — those draws wait, counted — and draws them from the first
// frame after they are ready, with the pixels of a foreground render; a creation that fails fails the frame; the
// validation layer stays quiet throughout.
#include "../gpu/gpu_fixture.hpp"
#include "../modes/rule_helpers.hpp"

#include <algorithm>
#include <vector>

#include <quokka/adaptive/aset.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/runtime/runtime.hpp>
#include <quokka/scene/trafo_chain.hpp>

namespace quokka::runtime::test
{
namespace
{

using math::V3f;
using math::V4f;

constexpr uint32_t kSize = 32;

/// A square [x0,x1]×[y0,y1] in clip space at depth z (identity trafos), CCW on screen, of `color`, blended when
/// `blend`.
scene::RenderObjectPtr square(float x0, float y0, float x1, float y1, float z, V4f color, bool blend)
{
	scene::RenderObject o;
	o.effect = fx::compose("flat", fx::stock::trafo(), fx::stock::constantColor()).value();
	std::vector<V3f> p = {{x0, y0, z}, {x1, y1, z}, {x1, y0, z}, {x0, y0, z}, {x0, y1, z}, {x1, y1, z}};
	o.attributes["Positions"] = {adaptive::constant(scene::ArrayBuffer::of(p)), VK_FORMAT_R32G32B32_SFLOAT};
	o.uniforms["ConstantColor"] = scene::uniform(color);
	o.draw_call = adaptive::constant(scene::DrawCall{false, 6});
	if (blend)
		o.state.default_blend = adaptive::constant(scene::BlendState::alpha());
	return scene::makeRenderObject(std::move(o));
}

class BackgroundPipelines : public gpu::test::GpuTest, public ::testing::WithParamInterface<RenderPath>
{
protected:
	struct Frame
	{
		gpu::Rgba8Image pixels;
		TaskStats stats;
	};
	/// Renders one frame of `objects` with `task` and reads it back.
	Frame frame(RenderTask& task, Framebuffer& fb)
	{
		auto cmd = device().beginCommands().value();
		const Result<void> ran = task.run(cmd, fb);
		EXPECT_TRUE(ran.ok()) << ran.error().message;
		EXPECT_TRUE(device().submitAndWait(std::move(cmd)).ok());
		return {gpu::readImageRgba8(device(), *fb.output()).value(), task.stats()};
	}
	/// Waits for the background work and renders until a frame leaves nothing out and nothing is pending; returns that
	/// frame. Work comes in a chain — an effect that became ready asks for its pipelines in the frame after, the heap's
	/// kernels for their records' pipelines — and on a loaded machine a frame whose placement passes its budget places
	/// part of the waiting objects and the rest in the next: a few rounds, more under load (bounded: a task that never
	/// settles returns its last frame, which the caller's checks then fail on).
	Frame settle(Runtime& rt, RenderTask& task, Framebuffer& fb)
	{
		for (int round = 0;; ++round)
		{
			EXPECT_TRUE(rt.waitIdle().ok());
			Frame f = frame(task, fb);
			if ((f.stats.waitingDraws() == 0 && f.stats.pipelines_pending == 0) || round == 15)
				return f;
		}
	}
	std::unique_ptr<RenderTask> compile(Runtime& rt, adaptive::cset<scene::RenderObjectPtr>& objects)
	{
		adaptive::clist<scene::Command> commands;
		commands.append(scene::clearCommand(V4f(0, 0, 0, 1)));
		commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
		RenderOptions options;
		options.path = GetParam();
		return rt.compile(signature_, commands, options);
	}
	/// The same objects rendered in the foreground by a fresh runtime: the reference pixels.
	gpu::Rgba8Image reference(const std::vector<scene::RenderObjectPtr>& list)
	{
		auto rt = Runtime::create(device()).value();
		adaptive::cset<scene::RenderObjectPtr> objects;
		for (const auto& o : list)
			objects.add(o);
		auto task = compile(*rt, objects);
		auto fb = createFramebuffer(device(), signature_, kSize, kSize).value();
		return frame(*task, fb).pixels;
	}
	static bool allClear(const gpu::Rgba8Image& img)
	{
		for (uint32_t y = 0; y < img.height; ++y)
			for (uint32_t x = 0; x < img.width; ++x)
				if (img.at(x, y) != std::array<uint8_t, 4>{0, 0, 0, 255})
					return false;
		return true;
	}
	scene::FramebufferSignature signature_;
};

TEST_P(BackgroundPipelines, AFrameDoesNotWaitForItsPipelinesAndDrawsThemOnceReady)
{
	auto rt = Runtime::create(device()).value();
	rt->setBackgroundPipelines(true);
	rt->context().holdPipelines(true); // (every creation waits: the frames below see them pending)
	const auto red = square(-0.8f, -0.8f, 0.2f, 0.2f, 0.5f, V4f(1, 0, 0, 1), false);
	const auto green = square(-0.2f, -0.2f, 0.8f, 0.8f, 0.4f, V4f(0, 1, 0, 0.5f), true);
	adaptive::cset<scene::RenderObjectPtr> objects;
	objects.add(red);
	objects.add(green);
	auto task = compile(*rt, objects);
	auto fb = createFramebuffer(device(), signature_, kSize, kSize).value();

	const Frame first = frame(*task, fb);
	EXPECT_GE(first.stats.pipelines_pending, 1u) << "the effect compiles in the background";
	EXPECT_GE(first.stats.waitingDraws(), 2u);
	EXPECT_TRUE(allClear(first.pixels)) << "nothing is drawn before its effect and pipeline exist";
	// Still held: the next frame waits too, and does not block.
	EXPECT_GE(frame(*task, fb).stats.waitingDraws(), 2u);

	rt->context().holdPipelines(false);
	const Frame second = settle(*rt, *task, fb);
	EXPECT_EQ(rt->context().pendingPipelines(), 0u);
	EXPECT_EQ(second.stats.pipelines_pending, 0u);
	EXPECT_EQ(second.stats.waitingDraws(), 0u);
	EXPECT_EQ(second.pixels.pixels, reference({red, green}).pixels);

	// A new state while creations are held again: the objects drawn so far stay, the new one waits.
	rt->context().holdPipelines(true);
	const auto blue = square(-0.9f, 0.3f, -0.3f, 0.9f, 0.3f, V4f(0, 0, 1, 1), false);
	scene::RenderObject coverage = *blue;
	coverage.state.depth_compare = adaptive::constant(VK_COMPARE_OP_ALWAYS); // (dynamic: same pipeline as red)
	coverage.state.alpha_to_coverage = adaptive::constant(true);             // (a new pipeline)
	const auto blue2 = scene::makeRenderObject(std::move(coverage));
	objects.add(blue2);
	const Frame third = frame(*task, fb);
	EXPECT_GE(third.stats.pipelines_pending, 1u);
	EXPECT_GE(third.stats.waitingDraws(), 1u);
	EXPECT_EQ(third.pixels.pixels, second.pixels.pixels) << "the new object waits; the others are drawn";
	rt->context().holdPipelines(false);
	const Frame fourth = settle(*rt, *task, fb);
	EXPECT_EQ(fourth.stats.waitingDraws(), 0u);
	EXPECT_EQ(fourth.pixels.pixels, reference({red, green, blue2}).pixels);
	EXPECT_NE(fourth.pixels.pixels, second.pixels.pixels);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

TEST_P(BackgroundPipelines, ForegroundFramesAreCompleteAndTurningItOffWaits)
{
	auto rt = Runtime::create(device()).value();
	rt->setBackgroundPipelines(true);
	const auto red = square(-0.8f, -0.8f, 0.2f, 0.2f, 0.5f, V4f(1, 0, 0, 1), false);
	adaptive::cset<scene::RenderObjectPtr> objects;
	objects.add(red);
	auto task = compile(*rt, objects);
	auto fb = createFramebuffer(device(), signature_, kSize, kSize).value();
	(void)frame(*task, fb);
	rt->setBackgroundPipelines(false); // (waits for the outstanding work; what is still missing is made at once)
	EXPECT_FALSE(rt->context().backgroundPipelines());
	EXPECT_EQ(rt->context().pendingPipelines(), 0u);
	const Frame next = frame(*task, fb);
	EXPECT_EQ(next.stats.waitingDraws(), 0u);
	EXPECT_EQ(next.pixels.pixels, reference({red}).pixels);
}

TEST_P(BackgroundPipelines, ObjectsWhoseEffectBecameReadyArePlacedOverFramesWithinTheBudget)
{
	// Sixty objects wait for one effect. On the heap a budget of (almost) nothing places one per frame; the classic
	// path prepares them within its 8 ms per frame (on a slow machine over a few frames). Either way every frame
	// makes progress and the last image equals a foreground render.
	const bool heap = GetParam() == RenderPath::Heap;
	auto rt = Runtime::create(device()).value();
	rt->setBackgroundPipelines(true);
	rt->context().holdPipelines(true);
	std::vector<scene::RenderObjectPtr> list;
	adaptive::cset<scene::RenderObjectPtr> objects;
	for (int i = 0; i < 60; ++i)
	{
		const float x = -0.95f + 0.03f * float(i);
		list.push_back(square(x, -0.5f, x + 0.02f, 0.5f, 0.5f, V4f(0.2f + 0.01f * float(i), 0.8f, 0.3f, 1), false));
		objects.add(list.back());
	}
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(V4f(0, 0, 0, 1)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
	RenderOptions options;
	options.path = GetParam();
	options.heap.tuning.placement_budget_ms = 1e-9; // (one placement per frame)
	auto task = rt->compile(signature_, commands, options);
	auto fb = createFramebuffer(device(), signature_, kSize, kSize).value();
	const auto waitingObjects = [&](const TaskStats& s) { return heap ? s.heap.waiting_objects : s.passes.waiting; };
	EXPECT_EQ(waitingObjects(frame(*task, fb).stats), 60u);
	ASSERT_TRUE(rt->waitIdle().ok());
	uint32_t waiting = 60, frames = 0;
	while (waiting > 0 && frames < 200)
	{
		const Frame f = frame(*task, fb);
		++frames;
		// (Classic: count the objects still unprepared — a prepared one may still wait for its pipeline.)
		const uint32_t now = heap ? f.stats.heap.waiting_objects : waiting - std::min(waiting, f.stats.passes.prepared);
		EXPECT_LT(now, waiting) << "frame " << frames << " made progress";
		waiting = now;
		(void)rt->waitIdle(); // (the pipelines the new objects ask for)
	}
	if (heap)
	{
		EXPECT_GT(frames, 5u) << "spread over frames";
	}
	const Frame last = settle(*rt, *task, fb);
	EXPECT_EQ(last.stats.waitingDraws(), 0u);
	EXPECT_EQ(last.pixels.pixels, reference(list).pixels);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

TEST_P(BackgroundPipelines, TheHeapsOwnKernelsCompileInTheBackgroundToo)
{
	// Objects whose values the heap derives on the device — one under a transform chain, one under a front-face rule
	// routed on the device — need the heap's own kernels (derive, chain, route), made per heap scene. With the effect
	// and pipelines already cached, a new task's frames do not compile those kernels either: its objects wait until
	// they are ready (the classic path, needing none, draws at once), then the image equals a foreground render; a
	// declared flip to a state whose route kernel is new leaves the group out until it is ready, the rest drawn.
	const bool heap = GetParam() == RenderPath::Heap;
	auto rt = Runtime::create(device()).value();
	rt->setBackgroundPipelines(true);
	adaptive::cval<math::Trafo3d> root(math::Trafo3d::translation(math::V3d(-0.4, 0.0, 0.0)));
	const scene::TrafoChain chain =
	    scene::TrafoChain::root(root).child(adaptive::constant(math::Trafo3d::translation(math::V3d(0.0, 0.3, 0.0))));
	scene::RenderObject a = *square(-0.3f, -0.3f, 0.3f, 0.3f, 0.5f, V4f(1, 0, 0, 1), false);
	a.uniforms["ModelTrafo"] = chain.world();
	// Mirrored (clockwise on screen), back faces culled: drawn only while the rule flips its declared front face.
	adaptive::cval<VkFrontFace> front(VK_FRONT_FACE_COUNTER_CLOCKWISE);
	adaptive::cval<math::Trafo3d> model(math::Trafo3d::scale(math::V3d(-1.0, 1.0, 1.0)) *
	                                    math::Trafo3d::translation(math::V3d(-0.4, -0.2, 0.0)));
	scene::RenderObject b = *square(-0.3f, -0.3f, 0.3f, 0.3f, 0.4f, V4f(0, 1, 0, 1), false);
	b.uniforms["ModelTrafo"] = scene::uniform(model);
	b.state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
	b.state.front_face = front;
	b.mode_rules.push_back({scene::ModeAxis::FrontFace, modes::test::flipWhenMirrored(), {}});
	const std::vector<scene::RenderObjectPtr> list = {scene::makeRenderObject(std::move(a)),
	                                                  scene::makeRenderObject(std::move(b))};
	adaptive::cset<scene::RenderObjectPtr> objects;
	for (const auto& o : list)
		objects.add(o);
	auto fb = createFramebuffer(device(), signature_, kSize, kSize).value();
	auto warm = compile(*rt, objects);
	const gpu::Rgba8Image expected = reference(list);
	EXPECT_EQ(settle(*rt, *warm, fb).pixels.pixels, expected.pixels);

	rt->context().holdPipelines(true);
	auto task = compile(*rt, objects);
	const Frame held = frame(*task, fb);
	if (heap)
	{
		EXPECT_EQ(held.stats.heap.waiting_objects, 2u) << "both wait for the derive kernel";
		EXPECT_GE(held.stats.pipelines_pending, 1u);
		EXPECT_EQ(held.stats.heap.derive_records, 0u);
		EXPECT_TRUE(allClear(held.pixels)) << "nothing drawn with values no kernel computed";
	}
	else
	{
		EXPECT_EQ(held.stats.waitingDraws(), 0u) << "the classic path needs no kernel";
		EXPECT_EQ(held.pixels.pixels, expected.pixels);
	}
	rt->context().holdPipelines(false);
	const Frame ready = settle(*rt, *task, fb);
	EXPECT_EQ(ready.stats.waitingDraws(), 0u);
	EXPECT_EQ(ready.pixels.pixels, expected.pixels);
	if (heap)
	{
		EXPECT_GT(ready.stats.heap.derive_records, 0u);
		EXPECT_GT(ready.stats.heap.chain_links, 0u);
	}

	// Declared clockwise: the rule's folded form is new, so is its route kernel — the group waits, the chained square
	// stays on screen; then the mirrored square is culled, as in a foreground render.
	rt->context().holdPipelines(true);
	front.setValue(VK_FRONT_FACE_CLOCKWISE);
	root.setValue(math::Trafo3d::translation(math::V3d(0.3, 0.0, 0.0)));
	const Frame flipped = frame(*task, fb);
	if (heap)
	{
		EXPECT_GE(flipped.stats.waitingDraws(), 1u) << "the re-specialised group waits for its kernel";
	}
	EXPECT_FALSE(allClear(flipped.pixels)) << "the chained square (its kernels ready) is drawn meanwhile";
	rt->context().holdPipelines(false);
	const Frame after = settle(*rt, *task, fb);
	EXPECT_EQ(after.stats.waitingDraws(), 0u);
	EXPECT_EQ(after.pixels.pixels, reference(list).pixels);
	EXPECT_NE(after.pixels.pixels, expected.pixels);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Paths, BackgroundPipelines, ::testing::Values(RenderPath::Classic, RenderPath::Heap),
                         [](const auto& p) { return std::string(pathName(p.param)); });

TEST_P(BackgroundPipelines, AnEffectThatFailsToCompileFailsTheFrame)
{
	auto rt = Runtime::create(device()).value();
	rt->setBackgroundPipelines(true);
	auto broken = fx::Stage::fragment("tint")
	                  .reads({{"Colors", fx::V4f}})
	                  .writes({{"Colors", fx::V4f}})
	                  .glsl("\tvec4 c = s.Colors;\n\tc.rgb *= not_declared;\n\ts.Colors = c;");
	scene::RenderObject o = *square(-0.5f, -0.5f, 0.5f, 0.5f, 0.5f, V4f(1, 0, 0, 1), false);
	o.effect = fx::compose("broken effect", fx::stock::trafo(), fx::stock::constantColor(), broken).value();
	adaptive::cset<scene::RenderObjectPtr> objects;
	objects.add(scene::makeRenderObject(std::move(o)));
	auto task = compile(*rt, objects);
	auto fb = createFramebuffer(device(), signature_, kSize, kSize).value();
	(void)rt->waitIdle(); // (nothing requested yet)
	Result<void> failed;
	for (int i = 0; i < 3 && failed.ok(); ++i)
	{
		auto cmd = device().beginCommands().value();
		failed = task->run(cmd, fb);
		EXPECT_TRUE(device().submitAndWait(std::move(cmd)).ok());
		if (failed.ok())
			(void)rt->waitIdle();
	}
	ASSERT_FALSE(failed.ok()) << "a failed compile is an error, never an object silently missing";
	EXPECT_EQ(failed.error().code, ErrorCode::ShaderCompile);
	EXPECT_NE(failed.error().message.find("not_declared"), std::string::npos) << failed.error().message;
}

class BackgroundPipelineErrors : public gpu::test::GpuTest
{
};

TEST_F(BackgroundPipelineErrors, AFailedCreationIsReportedNotDropped)
{
	auto rt = Runtime::create(device()).value();
	inputs::Context& context = rt->context();
	context.setBackgroundPipelines(true);
	inputs::PipelineRequest request;
	request.effect =
	    context.effects()
	        .compile(fx::compose("flat", fx::stock::trafo(), fx::stock::constantColor()).value(), fx::FragmentOutputs{})
	        .value();
	request.color_formats = {VK_FORMAT_R8G8B8A8_UNORM};
	request.blend.resize(2); // two blend states for one attachment: the creation fails
	const auto entry = context.pipeline(request);
	ASSERT_TRUE(entry.ok()) << "the failure comes from the worker, not the request";
	const Result<void> waited = context.waitPipelines();
	ASSERT_FALSE(waited.ok());
	EXPECT_NE(waited.error().message.find("blend states"), std::string::npos) << waited.error().message;
	EXPECT_FALSE(entry.value()->ready());
	EXPECT_FALSE(context.pipelineErrors().ok());
}

TEST_F(BackgroundPipelineErrors, ARenderersOwnJobRunsAtOnceOrOnAWorkerAndItsFailureIsReported)
{
	auto rt = Runtime::create(device()).value();
	inputs::Context& context = rt->context();
	int runs = 0;
	auto now = std::make_shared<inputs::BackgroundJob>();
	context.runJob(now,
	               [&]() -> Result<void>
	               {
		               ++runs;
		               return {};
	               });
	EXPECT_TRUE(now->ready()) << "foreground: finished on return";
	EXPECT_EQ(runs, 1);

	context.setBackgroundPipelines(true);
	context.holdPipelines(true);
	const uint64_t done = context.compilesDone();
	auto later = std::make_shared<inputs::BackgroundJob>();
	context.runJob(later, [] { return Result<void>(makeError(ErrorCode::ShaderCompile, "kernel: no luck")); });
	EXPECT_TRUE(later->pending());
	EXPECT_EQ(context.pendingPipelines(), 1u);
	EXPECT_TRUE(context.pipelineErrors().ok());
	const Result<void> waited = context.waitPipelines();
	ASSERT_FALSE(waited.ok());
	EXPECT_EQ(waited.error().message, "kernel: no luck");
	EXPECT_TRUE(later->failed());
	EXPECT_EQ(context.compilesDone(), done + 1);
	EXPECT_EQ(context.pendingPipelines(), 0u);
}

} // namespace
} // namespace quokka::runtime::test
