// `quokka bench modes`, the declared-flip rows: N objects under a front-face mode rule over one shared declared front
// face (an application's toggle), flipped every frame; CPU and GPU time of the flip frames against static frames,
// with GPU routing (the route group re-specialised: O(groups)) and CPU routing (every object re-evaluated).
#include "bench_flip.hpp"

#include <chrono>
#include <random>

#include <quokka/adaptive/aset.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/rules/expr.hpp>

#include "render_common.hpp"

namespace quokka::app
{

Result<FlipRow> measureDeclaredFlip(gpu::Device& device, BenchSession& session, uint32_t n, bool gpu_routing,
                                    uint32_t reps)
{
	using namespace quokka::rules;
	QUOKKA_TRY_ASSIGN(effect, fx::compose("flat", fx::stock::trafo(), fx::stock::constantColor()));
	QUOKKA_TRY_ASSIGN(flip, Rule::make(select(determinant(upper3x3(leaf("ModelTrafo", fx::M44f))) < lit(0.0),
	                                          lit(1u) - leaf("declared", fx::U32), leaf("declared", fx::U32))));
	const scene::BufferView positions{
	    adaptive::constant(scene::ArrayBuffer::of(std::vector<math::V3f>{{-1, -1, 0}, {1, -1, 0}, {0, 1, 0}})),
	    VK_FORMAT_R32G32B32_SFLOAT};
	const adaptive::cval<VkFrontFace> declared(VK_FRONT_FACE_COUNTER_CLOCKWISE);
	std::mt19937 rng(n);
	std::uniform_real_distribution<double> u(-0.95, 0.95);
	std::vector<scene::RenderObjectPtr> objects;
	objects.reserve(n);
	for (uint32_t i = 0; i < n; ++i)
	{
		scene::RenderObject o;
		o.effect = effect;
		o.attributes["Positions"] = positions;
		const double s = 0.004;
		o.uniforms["ModelTrafo"] =
		    scene::uniform(adaptive::constant(math::Trafo3d::scale(math::V3d(i % 3 == 0 ? -s : s, s, 1.0)) *
		                                      math::Trafo3d::translation(math::V3d(u(rng), u(rng), 0.5))));
		o.uniforms["ConstantColor"] = scene::uniform(adaptive::constant(math::V4f(0.9f, 0.5f, 0.2f, 1.0f)));
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		o.state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
		o.state.front_face = declared;
		o.mode_rules.push_back({scene::ModeAxis::FrontFace, flip, {}});
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	adaptive::cset<scene::RenderObjectPtr> set;
	adaptive::transact([&] { set.unionWith(objects); });
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0, 0, 0, 1)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(set)});
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	options.heap.draw = heap::DrawStrategy::Indirect;
	options.heap.gpu_routing = gpu_routing;
	auto task = session.runtime->compile(session.framebuffer.signature, commands, options);
	gpu::FrameTimer timer(device);
	FlipRow row{n, gpu_routing ? "gpu" : "cpu"};
	struct Sample
	{
		double update_us, gpu_ms, heap_update_us, heap_upload_us, heap_prepare_us;
		uint32_t refreshed, respecialised;
	};
	bool clockwise = false;
	auto frame = [&](bool flip_it) -> Result<Sample>
	{
		if (flip_it)
		{
			clockwise = !clockwise;
			declared.setValue(clockwise ? VK_FRONT_FACE_CLOCKWISE : VK_FRONT_FACE_COUNTER_CLOCKWISE);
		}
		QUOKKA_TRY_ASSIGN(list, device.beginCommands());
		timer.begin(list);
		QUOKKA_TRY(task->run(list, session.framebuffer));
		timer.end(list);
		QUOKKA_TRY(device.submitAndWait(std::move(list)));
		QUOKKA_TRY_ASSIGN(timing, timer.resolve());
		const runtime::TaskStats& s = task->stats();
		return Sample{
		    1000.0 * s.update_ms,       timing.ms,        1000.0 * s.heap.update_ms, 1000.0 * s.heap.upload_ms,
		    1000.0 * s.heap.prepare_ms, s.heap.refreshed, s.heap.respecialised};
	};
	QUOKKA_TRY_ASSIGN(place, frame(false));
	row.place_ms = place.update_us / 1000.0;
	QUOKKA_TRY(frame(true)); // (the first flip makes the other state's pipelines and kernel)
	QUOKKA_TRY(frame(false));
	std::vector<double> still_us, flip_us, still_gpu, flip_gpu, flip_update, flip_upload, flip_prepare;
	for (uint32_t r = 0; r < reps; ++r)
	{
		QUOKKA_TRY_ASSIGN(a, frame(false));
		still_us.push_back(a.update_us);
		still_gpu.push_back(a.gpu_ms);
		QUOKKA_TRY_ASSIGN(b, frame(true));
		flip_us.push_back(b.update_us);
		flip_gpu.push_back(b.gpu_ms);
		flip_update.push_back(b.heap_update_us);
		flip_upload.push_back(b.heap_upload_us);
		flip_prepare.push_back(b.heap_prepare_us);
		row.refreshed = b.refreshed;
		row.respecialised = b.respecialised;
	}
	row.static_us = median(still_us);
	row.flip_us = median(flip_us);
	row.static_gpu_ms = median(still_gpu);
	row.flip_gpu_ms = median(flip_gpu);
	row.flip_heap_update_us = median(flip_update);
	row.flip_heap_upload_us = median(flip_upload);
	row.flip_heap_prepare_us = median(flip_prepare);
	return row;
}

} // namespace quokka::app
