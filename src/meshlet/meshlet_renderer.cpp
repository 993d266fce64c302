// Vertex-pulling meshlet draws: per-draw object and indirect-command buffers in host-visible memory (rewritten every
// draw, kept alive by the command list), one vkCmdDrawIndirect.
#include <quokka/meshlet/meshlet_renderer.hpp>

#include "meshlet_shaders.hpp"

#include <cstring>
#include <vector>

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/pipeline.hpp>

namespace quokka::meshlet
{

namespace
{
struct GpuObject
{
	float model[16];
	float color[4];
};
static_assert(sizeof(GpuObject) == 80, "std430 Object: mat4 + vec4");

constexpr uint32_t kVerticesPerMeshlet = QUOKKA_MESHLET_MAX_TRIANGLES * 3; // 384
} // namespace

Result<std::unique_ptr<MeshletRenderer>> MeshletRenderer::create(gpu::Device& device, const MeshletRendererDesc& desc)
{
	std::unique_ptr<MeshletRenderer> renderer(new MeshletRenderer());
	renderer->device_ = &device;
	auto pipeline = device.createGraphicsPipeline({
	    .vertex = shaders::kMeshletDrawVert.span(),
	    .fragment = shaders::kMeshletDrawFrag.span(),
	    .color_formats = {desc.color_format},
	    .depth_format = desc.depth_format,
	    .samples = desc.samples,
	    .name = "meshlet.draw",
	});
	if (!pipeline.ok())
		return pipeline.error();
	renderer->pipeline_ = std::move(pipeline.value());
	return renderer;
}

Result<MeshletDrawStats> MeshletRenderer::draw(gpu::CommandList& list, const MeshletManager& manager,
                                               std::span<const MeshletObject> objects, const float* view_proj)
{
	MeshletDrawStats stats;
	std::vector<GpuObject> gpu_objects;
	std::vector<VkDrawIndirectCommand> commands;
	for (const MeshletObject& object : objects)
	{
		if (!manager.contains(object.batch))
			continue;
		const BatchPlacement p = manager.placement(object.batch);
		GpuObject o;
		std::memcpy(o.model, object.model, sizeof(o.model));
		std::memcpy(o.color, object.color, sizeof(o.color));
		gpu_objects.push_back(o);
		commands.push_back({kVerticesPerMeshlet, p.meshlet_count, 0, p.record_offset});
		stats.meshlets += p.meshlet_count;
		for (const MeshletRecord& r : manager.originalRecords(object.batch))
			stats.triangles += r.primitive_count;
	}
	stats.objects = uint32_t(commands.size());
	if (commands.empty())
		return stats;
	auto object_buffer = device_->createBuffer({gpu_objects.size() * sizeof(GpuObject), gpu::BufferUsage::Storage,
	                                            gpu::MemoryDomain::Upload, "meshlet.objects"});
	if (!object_buffer.ok())
		return object_buffer.error();
	auto command_buffer =
	    device_->createBuffer({commands.size() * sizeof(VkDrawIndirectCommand), gpu::BufferUsage::Indirect,
	                           gpu::MemoryDomain::Upload, "meshlet.commands"});
	if (!command_buffer.ok())
		return command_buffer.error();
	std::memcpy(object_buffer.value()->mapped(), gpu_objects.data(), gpu_objects.size() * sizeof(GpuObject));
	std::memcpy(command_buffer.value()->mapped(), commands.data(), commands.size() * sizeof(VkDrawIndirectCommand));
	object_buffer.value()->flush();
	command_buffer.value()->flush();

	pipeline_->bind(list);
	pipeline_->pushBuffer(list, 0, *manager.metadataBuffer());
	pipeline_->pushBuffer(list, 1, *manager.dataBuffer());
	pipeline_->pushBuffer(list, 2, *object_buffer.value());
	pipeline_->pushConstants(list, view_proj, 64);
	vkCmdDrawIndirect(list.vk(), command_buffer.value()->vk(), 0, uint32_t(commands.size()),
	                  sizeof(VkDrawIndirectCommand));
	list.keepAlive(object_buffer.value());
	list.keepAlive(command_buffer.value());
	list.keepAlive(manager.metadataBuffer());
	list.keepAlive(manager.dataBuffer());
	stats.draw_calls = 1;
	return stats;
}

} // namespace quokka::meshlet
