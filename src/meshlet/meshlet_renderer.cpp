// Meshlet draws: per-draw object, indirect-command (vertex pulling) or work-item (mesh shaders) buffers in host-visible
// memory (rewritten every draw, kept alive by the command list); one vkCmdDrawIndirect or one vkCmdDrawMeshTasksEXT.
#include <quokka/meshlet/meshlet_renderer.hpp>

#include "meshlet_shaders.hpp"

#include <algorithm>
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

// One mesh-shader workgroup's meshlet: `uvec2 items[]` of meshlet_draw.mesh.
struct GpuItem
{
	uint32_t record;
	uint32_t object;
};
static_assert(sizeof(GpuItem) == 8, "std430 uvec2");

// Push constants of meshlet_draw.mesh.
struct MeshPush
{
	float view_proj[16];
	uint32_t item_begin;
	uint32_t item_end;
};
static_assert(sizeof(MeshPush) == 72, "mat4 + 2 × uint");

constexpr uint32_t kVerticesPerMeshlet = QUOKKA_MESHLET_MAX_TRIANGLES * 3; // 384
// Mesh workgroup counts every VK_EXT_mesh_shader device accepts: 65,535 per dimension and 2^22 in all. A draw covers
// at most kMeshGroupRows rows of kMeshGroupsPerRow groups (4,194,240 ≤ 2^22); more meshlets take more draws.
constexpr uint32_t kMeshGroupsPerRow = 65535;
constexpr uint32_t kMeshGroupRows = 64;
} // namespace

const char* meshletPathName(MeshletPath path)
{
	switch (path)
	{
	case MeshletPath::Auto:
		return "auto";
	case MeshletPath::VertexPulling:
		return "vertex-pulling";
	case MeshletPath::MeshShader:
		return "mesh-shader";
	}
	return "?";
}

Result<MeshletPath> parseMeshletPath(std::string_view text)
{
	if (text == "auto")
		return MeshletPath::Auto;
	if (text == "vertex" || text == "vertex-pulling")
		return MeshletPath::VertexPulling;
	if (text == "mesh" || text == "mesh-shader")
		return MeshletPath::MeshShader;
	return makeError(ErrorCode::InvalidArgument,
	                 "unknown meshlet path '" + std::string(text) + "' (expected auto, vertex or mesh)");
}

Result<std::unique_ptr<MeshletRenderer>> MeshletRenderer::create(gpu::Device& device, const MeshletRendererDesc& desc)
{
	std::unique_ptr<MeshletRenderer> renderer(new MeshletRenderer());
	renderer->device_ = &device;
	const bool has_mesh = device.features().mesh_shader;
	if (desc.path == MeshletPath::MeshShader && !has_mesh)
		return makeError(ErrorCode::MissingFeature, "the mesh-shader meshlet path needs VK_EXT_mesh_shader, which " +
		                                                device.info().name + " lacks");
	renderer->path_ =
	    desc.path == MeshletPath::Auto ? (has_mesh ? MeshletPath::MeshShader : MeshletPath::VertexPulling) : desc.path;
	gpu::GraphicsPipelineDesc pipeline_desc{
	    .fragment = shaders::kMeshletDrawFrag.span(),
	    .color_formats = {desc.color_format},
	    .depth_format = desc.depth_format,
	    .samples = desc.samples,
	};
	if (renderer->path_ == MeshletPath::MeshShader)
	{
		pipeline_desc.mesh = shaders::kMeshletDrawMesh.span();
		pipeline_desc.name = "meshlet.draw.mesh";
	}
	else
	{
		pipeline_desc.vertex = shaders::kMeshletDrawVert.span();
		pipeline_desc.name = "meshlet.draw";
	}
	auto pipeline = device.createGraphicsPipeline(pipeline_desc);
	if (!pipeline.ok())
		return pipeline.error();
	renderer->pipeline_ = std::move(pipeline.value());
	return renderer;
}

Result<MeshletDrawStats> MeshletRenderer::draw(gpu::CommandList& list, const MeshletManager& manager,
                                               std::span<const MeshletObject> objects, const float* view_proj)
{
	const bool mesh = path_ == MeshletPath::MeshShader;
	MeshletDrawStats stats;
	std::vector<GpuObject> gpu_objects;
	std::vector<VkDrawIndirectCommand> commands; // vertex pulling
	std::vector<GpuItem> items;                  // mesh shaders
	for (const MeshletObject& object : objects)
	{
		if (!manager.contains(object.batch))
			continue;
		const BatchPlacement p = manager.placement(object.batch);
		GpuObject o;
		std::memcpy(o.model, object.model, sizeof(o.model));
		std::memcpy(o.color, object.color, sizeof(o.color));
		if (mesh)
			for (uint32_t k = 0; k < p.meshlet_count; ++k)
				items.push_back({p.record_offset + k, uint32_t(gpu_objects.size())});
		else
			commands.push_back({kVerticesPerMeshlet, p.meshlet_count, 0, p.record_offset});
		gpu_objects.push_back(o);
		stats.meshlets += p.meshlet_count;
		for (const MeshletRecord& r : manager.originalRecords(object.batch))
			stats.triangles += r.primitive_count;
	}
	stats.objects = uint32_t(gpu_objects.size());
	if (gpu_objects.empty() || stats.meshlets == 0)
		return stats;
	auto object_buffer = device_->createBuffer({gpu_objects.size() * sizeof(GpuObject), gpu::BufferUsage::Storage,
	                                            gpu::MemoryDomain::Upload, "meshlet.objects"});
	if (!object_buffer.ok())
		return object_buffer.error();
	std::memcpy(object_buffer.value()->mapped(), gpu_objects.data(), gpu_objects.size() * sizeof(GpuObject));
	object_buffer.value()->flush();

	pipeline_->bind(list);
	stats.pipeline_binds = 1;
	pipeline_->pushBuffer(list, 0, *manager.metadataBuffer());
	pipeline_->pushBuffer(list, 1, *manager.dataBuffer());
	pipeline_->pushBuffer(list, 2, *object_buffer.value());
	if (mesh)
	{
		auto item_buffer = device_->createBuffer(
		    {items.size() * sizeof(GpuItem), gpu::BufferUsage::Storage, gpu::MemoryDomain::Upload, "meshlet.items"});
		if (!item_buffer.ok())
			return item_buffer.error();
		std::memcpy(item_buffer.value()->mapped(), items.data(), items.size() * sizeof(GpuItem));
		item_buffer.value()->flush();
		pipeline_->pushBuffer(list, 3, *item_buffer.value());
		const uint32_t count = uint32_t(items.size());
		for (uint32_t begin = 0; begin < count;)
		{
			const uint32_t n = std::min(count - begin, kMeshGroupsPerRow * kMeshGroupRows);
			MeshPush push{};
			std::memcpy(push.view_proj, view_proj, sizeof(push.view_proj));
			push.item_begin = begin;
			push.item_end = begin + n;
			pipeline_->pushConstants(list, &push, sizeof(push));
			const uint32_t x = std::min(n, kMeshGroupsPerRow);
			device_->cmdDrawMeshTasks(list.vk(), x, (n + x - 1) / x, 1);
			++stats.draw_calls;
			begin += n;
		}
		list.keepAlive(item_buffer.value());
	}
	else
	{
		auto command_buffer =
		    device_->createBuffer({commands.size() * sizeof(VkDrawIndirectCommand), gpu::BufferUsage::Indirect,
		                           gpu::MemoryDomain::Upload, "meshlet.commands"});
		if (!command_buffer.ok())
			return command_buffer.error();
		std::memcpy(command_buffer.value()->mapped(), commands.data(), commands.size() * sizeof(VkDrawIndirectCommand));
		command_buffer.value()->flush();
		pipeline_->pushConstants(list, view_proj, 64);
		vkCmdDrawIndirect(list.vk(), command_buffer.value()->vk(), 0, uint32_t(commands.size()),
		                  sizeof(VkDrawIndirectCommand));
		list.keepAlive(command_buffer.value());
		stats.draw_calls = 1;
	}
	list.keepAlive(object_buffer.value());
	list.keepAlive(manager.metadataBuffer());
	list.keepAlive(manager.dataBuffer());
	return stats;
}

} // namespace quokka::meshlet
