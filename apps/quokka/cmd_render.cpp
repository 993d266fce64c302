// `quokka render`: renders a built-in scene offscreen, times the frames and writes the last one as a PNG.
// This file draws `triangle` (raw gpu calls, vertex colours, MSAA resolve); scene-graph scenes (grid, city, glTF) go
// through the Runtime in scene_render.cpp, `meshlets` through scene_meshlets.cpp.
#include "commands.hpp"
#include "render_common.hpp"

#include "app_shaders.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/staging.hpp>
#include <quokka/gpu/timing.hpp>

namespace quokka::app
{

namespace
{
struct Vertex
{
	float x, y;
	float r, g, b;
};

// A triangle whose corners are red, green and blue, filling most of the frame.
constexpr Vertex kTriangle[3] = {
    {0.0f, -0.8f, 1.0f, 0.0f, 0.0f},
    {0.8f, 0.8f, 0.0f, 1.0f, 0.0f},
    {-0.8f, 0.8f, 0.0f, 0.0f, 1.0f},
};

struct TriangleStats
{
	FrameSeries frames;
	uint32_t draw_calls = 0;
	uint32_t pipeline_binds = 0;
};

Result<TriangleStats> renderTriangle(gpu::Device& device, const RenderOptions& o, const RenderTargets& targets)
{
	auto pipeline = device.createGraphicsPipeline({
	    .vertex = app_shaders::kTriangleVert.span(),
	    .fragment = app_shaders::kTriangleFrag.span(),
	    .vertex_bindings = {{0, sizeof(Vertex), VK_VERTEX_INPUT_RATE_VERTEX}},
	    .vertex_attributes = {{0, 0, VK_FORMAT_R32G32_SFLOAT, 0}, {1, 0, VK_FORMAT_R32G32B32_SFLOAT, 8}},
	    .color_formats = {targets.color->format()},
	    .samples = VkSampleCountFlagBits(o.samples),
	    .name = "triangle",
	});
	if (!pipeline.ok())
		return pipeline.error();
	auto vertices = device.createBuffer({sizeof(kTriangle), gpu::BufferUsage::Vertex | gpu::BufferUsage::TransferDst,
	                                     gpu::MemoryDomain::DeviceLocal, "triangle.vertices"});
	if (!vertices.ok())
		return vertices.error();
	gpu::StagingRing staging(device);
	QUOKKA_TRY(staging.write(vertices.value(), 0, kTriangle, sizeof(kTriangle)));

	TriangleStats stats;
	gpu::FrameTimer timer(device);
	stats.frames.source = timer.source();
	for (uint32_t frame = 0; frame < o.frames; ++frame)
	{
		const auto t0 = std::chrono::steady_clock::now();
		auto list = device.beginCommands();
		if (!list.ok())
			return list.error();
		gpu::CommandList& cmd = list.value();
		timer.begin(cmd);
		staging.flush(cmd, VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT, VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT);
		gpu::beginRendering(cmd, targets.pass());
		pipeline.value()->bind(cmd);
		gpu::DynamicState{.depth_test = false, .depth_write = false}.apply(cmd.vk());
		VkDeviceSize offset = 0;
		VkBuffer vb = vertices.value()->vk();
		vkCmdBindVertexBuffers(cmd.vk(), 0, 1, &vb, &offset);
		vkCmdDraw(cmd.vk(), 3, 1, 0, 0);
		gpu::endRendering(cmd);
		timer.end(cmd);
		stats.draw_calls = 1;
		stats.pipeline_binds = 1;
		stats.frames.encode_ms.push_back(
		    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
		QUOKKA_TRY(device.submitAndWait(std::move(cmd)));
		auto timing = timer.resolve();
		if (!timing.ok())
			return timing.error();
		stats.frames.frame_ms.push_back(timing->ms);
	}
	return stats;
}
} // namespace

int runRender(const RenderOptions& o)
{
	if (!o.gltf.empty() || o.scene == "grid" || o.scene == "city")
		return runRenderScene(o);
	if (o.scene == "meshlets")
		return runRenderMeshlets(o);
	if (o.scene != "triangle")
		return usage("unknown scene '" + o.scene + "' (available: triangle, grid, city, meshlets; or --gltf FILE)");
	auto device = createRenderDevice(o);
	if (!device.ok())
		return fail(device.error());
	auto targets = createRenderTargets(*device.value(), o, /*with_depth*/ false);
	if (!targets.ok())
		return fail(targets.error());
	auto stats = renderTriangle(*device.value(), o, targets.value());
	if (!stats.ok())
		return fail(stats.error());
	auto out = writeRenderOutput(*device.value(), targets.value(), o);
	if (!out.ok())
		return fail(out.error());

	const TriangleStats& s = stats.value();
	if (o.json)
	{
		nlohmann::ordered_json j = renderJson(o, *device.value(), s.frames);
		j["draw_calls"] = s.draw_calls;
		j["pipeline_binds"] = s.pipeline_binds;
		printRenderJson(j, *device.value(), out.value());
	}
	else
	{
		printRenderHeader(o, *device.value(), s.frames);
		std::printf("  draw calls %u, pipeline binds %u per frame\n", s.draw_calls, s.pipeline_binds);
		std::printf("  wrote %s\n", out.value().c_str());
	}
	return validationExit(*device.value());
}

} // namespace quokka::app
