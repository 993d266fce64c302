// `quokka render`: renders a built-in scene offscreen, times the frames and writes the last one as a PNG.
// At this stage the only scene is `triangle` (vertex colours, MSAA resolve); the scene-graph scenes arrive with the
// classic path (issue #4).
#include "commands.hpp"

#include "app_shaders.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
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

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0.0 : v[v.size() / 2];
}

struct FrameStats
{
	std::vector<double> frame_ms;
	std::vector<double> encode_ms;
	gpu::TimingSource source = gpu::TimingSource::Wall;
	uint32_t draw_calls = 0;
	uint32_t pipeline_binds = 0;
};

Result<FrameStats> renderTriangle(gpu::Device& device, const RenderOptions& o, gpu::Image& color, gpu::Image* msaa)
{
	auto pipeline = device.createGraphicsPipeline({
	    .vertex = app_shaders::kTriangleVert.span(),
	    .fragment = app_shaders::kTriangleFrag.span(),
	    .vertex_bindings = {{0, sizeof(Vertex), VK_VERTEX_INPUT_RATE_VERTEX}},
	    .vertex_attributes = {{0, 0, VK_FORMAT_R32G32_SFLOAT, 0}, {1, 0, VK_FORMAT_R32G32B32_SFLOAT, 8}},
	    .color_formats = {color.format()},
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

	FrameStats stats;
	gpu::FrameTimer timer(device);
	stats.source = timer.source();
	for (uint32_t frame = 0; frame < o.frames; ++frame)
	{
		const auto t0 = std::chrono::steady_clock::now();
		auto list = device.beginCommands();
		if (!list.ok())
			return list.error();
		gpu::CommandList& cmd = list.value();
		timer.begin(cmd);
		staging.flush(cmd, VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT, VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT);
		gpu::RenderingDesc pass;
		pass.color = msaa ? msaa : &color;
		pass.resolve = msaa ? &color : nullptr;
		const float background[4] = {0.08f, 0.09f, 0.11f, 1.0f};
		std::copy(background, background + 4, pass.clear_rgba);
		gpu::beginRendering(cmd, pass);
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
		stats.encode_ms.push_back(
		    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
		QUOKKA_TRY(device.submitAndWait(std::move(cmd)));
		auto timing = timer.resolve();
		if (!timing.ok())
			return timing.error();
		stats.frame_ms.push_back(timing->ms);
	}
	return stats;
}
} // namespace

int runRender(const RenderOptions& o)
{
	if (o.scene == "meshlets")
		return runRenderMeshlets(o);
	if (o.scene != "triangle")
		return fail("unknown scene '" + o.scene + "' (available: triangle, meshlets)");
	auto desc = o.device.desc();
	if (!desc.ok())
		return fail(desc.error());
	auto created = gpu::Device::create(desc.value());
	if (!created.ok())
		return fail(created.error());
	gpu::Device& device = *created.value();
	if (o.width > device.info().max_image_dimension_2d || o.height > device.info().max_image_dimension_2d)
		return fail("framebuffer " + std::to_string(o.width) + "x" + std::to_string(o.height) +
		            " exceeds the device limit " + std::to_string(device.info().max_image_dimension_2d));

	const VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
	auto color = device.createImage({o.width, o.height, format, VK_SAMPLE_COUNT_1_BIT,
	                                 gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferSrc, "render.color"});
	if (!color.ok())
		return fail(color.error());
	gpu::ImageHandle msaa;
	if (o.samples > 1)
	{
		auto m = device.createImage({o.width, o.height, format, VkSampleCountFlagBits(o.samples),
		                             gpu::ImageUsage::ColorAttachment, "render.msaa"});
		if (!m.ok())
			return fail(m.error());
		msaa = std::move(m.value());
	}

	auto stats = renderTriangle(device, o, *color.value(), msaa.get());
	if (!stats.ok())
		return fail(stats.error());
	const std::string out = o.out.empty() ? std::string("quokka-") + o.scene + ".png" : o.out;
	auto pixels = gpu::readImageRgba8(device, *color.value());
	if (!pixels.ok())
		return fail(pixels.error());
	if (auto written = gpu::writePng(out, pixels.value()); !written.ok())
		return fail(written.error());
	const uint32_t validation_errors = device.validationErrorCount();

	const FrameStats& s = stats.value();
	const auto [min_it, max_it] = std::minmax_element(s.frame_ms.begin(), s.frame_ms.end());
	if (o.json)
	{
		nlohmann::ordered_json j;
		j["scene"] = o.scene;
		j["width"] = o.width;
		j["height"] = o.height;
		j["samples"] = o.samples;
		j["frames"] = o.frames;
		j["device"] = device.info().name;
		j["device_type"] = device.info().is_cpu ? "cpu" : "gpu";
		j["timing_source"] = gpu::timingSourceName(s.source);
		j["frame_ms"] = {{"median", median(s.frame_ms)}, {"min", *min_it}, {"max", *max_it}};
		j["cpu_encode_ms"] = {{"median", median(s.encode_ms)}};
		j["draw_calls"] = s.draw_calls;
		j["pipeline_binds"] = s.pipeline_binds;
		j["validation"] = device.validationEnabled();
		j["validation_errors"] = validation_errors;
		j["out"] = out;
		std::printf("%s\n", j.dump(2).c_str());
	}
	else
	{
		std::printf("quokka render: scene %s, %ux%u, %ux MSAA, %u frame(s) on %s (%s)\n", o.scene.c_str(), o.width,
		            o.height, o.samples, o.frames, device.info().name.c_str(), device.info().type.c_str());
		std::printf("  frame ms (%s clock): median %.3f, min %.3f, max %.3f; CPU encode median %.3f ms\n",
		            gpu::timingSourceName(s.source), median(s.frame_ms), *min_it, *max_it, median(s.encode_ms));
		std::printf("  draw calls %u, pipeline binds %u per frame\n", s.draw_calls, s.pipeline_binds);
		std::printf("  wrote %s\n", out.c_str());
	}
	if (validation_errors > 0)
		return fail(std::to_string(validation_errors) +
		            " Vulkan validation error(s); first: " + device.validationMessages().front());
	return 0;
}

} // namespace quokka::app
