// `quokka render --scene meshlets` (issue #6): a grid of tori and spheres built into meshlets with meshoptimizer,
// held by a MeshletManager and drawn with one mesh-task draw (VK_EXT_mesh_shader) or one indirect vertex-pulling
// draw (`--meshlet-path`; auto = mesh shaders where the device has them). Every object draws its own clone of its
// mesh's batch (as skinned instances would), and halfway through the frames the manager removes the source batches,
// compacts and grows in the same frame as a new clone: the written PNG shows the scene after those moves.
#include "commands.hpp"
#include "render_common.hpp"

#ifndef GLM_FORCE_DEPTH_ZERO_TO_ONE // also set by quokka::math for everything linking it
#define GLM_FORCE_DEPTH_ZERO_TO_ONE
#endif
#include <glm/gtc/matrix_transform.hpp>
#include <glm/gtc/type_ptr.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/meshlet/meshlet_builder.hpp>
#include <quokka/meshlet/meshlet_renderer.hpp>

namespace quokka::app
{

namespace
{
constexpr int kColumns = 5;
constexpr int kRows = 4;

meshlet::MeshletObject placeObject(meshlet::BatchId batch, int column, int row)
{
	meshlet::MeshletObject o;
	o.batch = batch;
	glm::mat4 m =
	    glm::translate(glm::mat4(1.0f), glm::vec3(2.6f * (float(column) - 2.0f), 0.0f, 2.6f * (float(row) - 1.5f)));
	m = glm::rotate(m, 0.35f * float(column + row), glm::vec3(1, 0, 0));
	std::memcpy(o.model, glm::value_ptr(m), sizeof(o.model));
	const float hue = float(column * kRows + row) / float(kColumns * kRows);
	o.color[0] = 0.35f + 0.6f * hue;
	o.color[1] = 0.85f - 0.5f * hue;
	o.color[2] = 0.3f + 0.4f * float(row) / float(kRows);
	return o;
}
// Builds a torus and a sphere into batches and gives every grid object its own clone of one of them.
Result<void> populate(meshlet::MeshletManager& manager, meshlet::BatchId (&sources)[2],
                      std::vector<meshlet::MeshletObject>& objects)
{
	auto torus = meshlet::buildMeshletBatch(meshlet::makeTorus(64, 24, 0.9f, 0.32f).view());
	if (!torus.ok())
		return torus.error();
	auto sphere = meshlet::buildMeshletBatch(meshlet::makeSphere(24, 40, 0.95f).view());
	if (!sphere.ok())
		return sphere.error();
	auto torus_id = manager.addBatch(torus.value());
	if (!torus_id.ok())
		return torus_id.error();
	auto sphere_id = manager.addBatch(sphere.value());
	if (!sphere_id.ok())
		return sphere_id.error();
	sources[0] = torus_id.value();
	sources[1] = sphere_id.value();
	for (int column = 0; column < kColumns; ++column)
		for (int row = 0; row < kRows; ++row)
		{
			auto clone = manager.cloneBatchAllocation(sources[(column + row) % 2]);
			if (!clone.ok())
				return clone.error();
			objects.push_back(placeObject(clone.value(), column, row));
		}
	return {};
}

// Maintenance in the middle of the run: drop the sources, re-clone one object, compact and grow, all before the
// frame's update().
Result<void> maintain(meshlet::MeshletManager& manager, const meshlet::BatchId (&sources)[2],
                      std::vector<meshlet::MeshletObject>& objects)
{
	manager.removeBatch(sources[0]);
	manager.removeBatch(sources[1]);
	auto clone = manager.cloneBatchAllocation(objects[0].batch);
	if (!clone.ok())
		return clone.error();
	manager.removeBatch(objects[0].batch);
	objects[0].batch = clone.value();
	QUOKKA_TRY(manager.compact());
	return manager.grow(1024, 16);
}
struct RunStats
{
	const FrameSeries& frames;
	const meshlet::MeshletDrawStats& draw_stats;
	uint32_t batches_moved;
	meshlet::MeshletPath path;
};

void report(const RenderOptions& o, gpu::Device& device, const meshlet::MeshletManager& manager, const RunStats& run,
            const std::string& out)
{
	const meshlet::MeshletDrawStats& draw_stats = run.draw_stats;
	const meshlet::MeshletMemoryStats stats = manager.stats();
	if (o.json)
	{
		nlohmann::ordered_json j = renderJson(o, device, run.frames);
		j["meshlet_path"] = meshlet::meshletPathName(run.path);
		j["draw_calls"] = draw_stats.draw_calls;
		j["pipeline_binds"] = draw_stats.pipeline_binds;
		j["objects"] = draw_stats.objects;
		j["meshlets"] = draw_stats.meshlets;
		j["triangles"] = draw_stats.triangles;
		j["batches"] = stats.batches;
		j["gpu_memory_usage"] = manager.gpuMemoryUsage();
		j["gpu_memory_usage_occupied"] = manager.gpuMemoryUsageOccupied();
		j["compactions"] = stats.compactions;
		j["growths"] = stats.growths;
		j["batches_moved"] = run.batches_moved;
		printRenderJson(j, device, out);
		return;
	}
	printRenderHeader(o, device, run.frames);
	std::printf("  %u objects, %llu meshlets, %llu triangles in %u draw call(s) (%s)\n", draw_stats.objects,
	            (unsigned long long)draw_stats.meshlets, (unsigned long long)draw_stats.triangles,
	            draw_stats.draw_calls, meshlet::meshletPathName(run.path));
	std::printf("  manager %u batches, %.1f of %.1f KiB, %llu compaction(s), %llu growth(s)\n", stats.batches,
	            double(manager.gpuMemoryUsageOccupied()) / 1024, double(manager.gpuMemoryUsage()) / 1024,
	            (unsigned long long)stats.compactions, (unsigned long long)stats.growths);
	std::printf("  wrote %s\n", out.c_str());
}

} // namespace

int runRenderMeshlets(const RenderOptions& o)
{
	auto created = createRenderDevice(o);
	if (!created.ok())
		return fail(created.error());
	gpu::Device& device = *created.value();
	const VkSampleCountFlagBits samples = VkSampleCountFlagBits(o.samples);
	auto targets = createRenderTargets(device, o, /*with_depth*/ true);
	if (!targets.ok())
		return fail(targets.error());

	// Small initial capacities so that the scene exercises growth on its own.
	meshlet::MeshletManagerDesc mdesc;
	mdesc.initial_data_words = 64u << 10;
	mdesc.initial_records = 256;
	mdesc.name = "scene.meshlets";
	auto made = meshlet::MeshletManager::create(device, mdesc);
	if (!made.ok())
		return fail(made.error());
	meshlet::MeshletManager& manager = *made.value();
	auto path = meshlet::parseMeshletPath(o.meshlet_path);
	if (!path.ok())
		return fail(path.error());
	auto renderer = meshlet::MeshletRenderer::create(device, {.samples = samples, .path = path.value()});
	if (!renderer.ok())
		return fail(renderer.error());

	meshlet::BatchId sources[2];
	std::vector<meshlet::MeshletObject> objects;
	if (auto r = populate(manager, sources, objects); !r.ok())
		return fail(r.error());

	glm::mat4 proj = glm::perspective(glm::radians(45.0f), float(o.width) / float(o.height), 0.1f, 100.0f);
	proj[1][1] *= -1.0f;
	const glm::mat4 view_proj = proj * glm::lookAt(glm::vec3(0, 9.0f, 11.0f), glm::vec3(0), glm::vec3(0, 1, 0));

	gpu::FrameTimer timer(device);
	FrameSeries frames;
	frames.source = timer.source();
	meshlet::MeshletDrawStats draw_stats;
	uint32_t batches_moved = 0;
	manager.setChangedListener([&](const meshlet::BatchMove&) { ++batches_moved; });
	for (uint32_t frame = 0; frame < o.frames; ++frame)
	{
		if (frame == o.frames / 2)
			if (auto r = maintain(manager, sources, objects); !r.ok())
				return fail(r.error());
		const auto t0 = std::chrono::steady_clock::now();
		auto list = device.beginCommands();
		if (!list.ok())
			return fail(list.error());
		timer.begin(list.value());
		if (auto r = manager.update(list.value()); !r.ok())
			return fail(r.error());
		gpu::beginRendering(list.value(), targets->pass());
		gpu::DynamicState{}.apply(list->vk());
		auto drawn = renderer.value()->draw(list.value(), manager, objects, glm::value_ptr(view_proj));
		if (!drawn.ok())
			return fail(drawn.error());
		draw_stats = drawn.value();
		gpu::endRendering(list.value());
		timer.end(list.value());
		frames.encode_ms.push_back(
		    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
		if (auto r = device.submitAndWait(std::move(list.value())); !r.ok())
			return fail(r.error());
		auto timing = timer.resolve();
		if (!timing.ok())
			return fail(timing.error());
		frames.frame_ms.push_back(timing->ms);
	}

	auto out = writeRenderOutput(device, targets.value(), o);
	if (!out.ok())
		return fail(out.error());
	report(o, device, manager, {frames, draw_stats, batches_moved, renderer.value()->path()}, out.value());
	return validationExit(device);
}

} // namespace quokka::app
