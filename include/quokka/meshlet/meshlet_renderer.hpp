// quokka/meshlet/meshlet_renderer.hpp — draws batches of a MeshletManager, by mesh shaders or by vertex pulling.
//
// Two paths read the same record and data buffers and shade with the same fragment shader:
// - mesh shaders (VK_EXT_mesh_shader): one vkCmdDrawMeshTasksEXT over every drawn meshlet, one workgroup per meshlet;
//   a per-draw list of (record, object) pairs maps workgroups to meshlets (meshlet_draw.mesh). No task shader.
// - vertex pulling, the path every Vulkan 1.3 device has (lavapipe included): one vkCmdDrawIndirect with one command
//   per object, {vertexCount = 3 × 128, instanceCount = meshlets, firstInstance = the batch's record offset}; the
//   vertex shader reads the meshlet record by gl_InstanceIndex, the local index byte by gl_VertexIndex and the
//   position/normal from the data buffer, and collapses corners past 3 × primitive_count into degenerate triangles.
//   Objects (model matrix, colour) are indexed by gl_DrawID.
// Both emit the same triangles in the same order, so they render identical pixels (tests/meshlet/meshlet_path_test).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <quokka/gpu/device.hpp>
#include <quokka/meshlet/meshlet_manager.hpp>

namespace quokka::meshlet
{

/// One drawn object: a batch, its model matrix and a colour.
struct MeshletObject
{
	BatchId batch;
	float model[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}; ///< column-major
	float color[4] = {1, 1, 1, 1};
};

/// Which draw path a MeshletRenderer uses.
enum class MeshletPath
{
	Auto,          ///< MeshShader where Device::features().mesh_shader, VertexPulling elsewhere
	VertexPulling, ///< one indirect draw, every device
	MeshShader,    ///< one mesh-task draw; creation fails with MissingFeature without VK_EXT_mesh_shader
};

/// "auto" | "vertex-pulling" | "mesh-shader" (the `meshlet_path` of the render JSON).
const char* meshletPathName(MeshletPath path);

/// Parses the CLI's "auto" | "vertex" | "mesh" (the long names of meshletPathName() are accepted too). Anything else
/// is an InvalidArgument error naming the choices.
Result<MeshletPath> parseMeshletPath(std::string_view text);

/// Attachment formats of the pass the renderer draws into, and the draw path.
struct MeshletRendererDesc
{
	VkFormat color_format = VK_FORMAT_R8G8B8A8_UNORM;
	VkFormat depth_format = VK_FORMAT_D32_SFLOAT;
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
	MeshletPath path = MeshletPath::Auto;
};

/// Draw statistics of the last draw().
struct MeshletDrawStats
{
	uint32_t draw_calls = 0;     ///< vkCmdDraw* calls (1 unless a mesh-shader draw exceeds 4,194,240 meshlets)
	uint32_t pipeline_binds = 0; ///< 1 when anything was drawn: one pipeline serves every object
	uint32_t objects = 0;        ///< drawn objects (indirect commands of the vertex-pulling path)
	uint64_t meshlets = 0;       ///< instances
	uint64_t triangles = 0;      ///< Σ primitive_count of the drawn meshlets
};

class MeshletRenderer
{
public:
	/// Builds the pipeline of the path `desc.path` resolves to. Errors: MissingFeature for MeshletPath::MeshShader on a
	/// device without VK_EXT_mesh_shader; otherwise as Device::createGraphicsPipeline.
	static Result<std::unique_ptr<MeshletRenderer>> create(gpu::Device& device, const MeshletRendererDesc& desc = {});

	/// The path in use: VertexPulling or MeshShader, never Auto.
	MeshletPath path() const { return path_; }

	/// Records the draws of `objects` into an active dynamic-rendering pass of `list`. Call after
	/// manager.update(list) (the bytes of every object's batch must be on the GPU in the current buffers). Objects
	/// whose batch is not live are skipped. `view_proj`: 16 floats, column-major, Vulkan clip space.
	/// Errors: OutOfMemory (per-draw object and command buffers).
	Result<MeshletDrawStats> draw(gpu::CommandList& list, const MeshletManager& manager,
	                              std::span<const MeshletObject> objects, const float* view_proj);

private:
	MeshletRenderer() = default;
	gpu::Device* device_ = nullptr;
	gpu::PipelineHandle pipeline_;
	MeshletPath path_ = MeshletPath::VertexPulling;
};

} // namespace quokka::meshlet
