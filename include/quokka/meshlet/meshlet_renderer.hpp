// quokka/meshlet/meshlet_renderer.hpp — draws batches of a MeshletManager by vertex pulling and indirect draws.
//
// The path every Vulkan 1.3 device has (lavapipe included): one vkCmdDrawIndirect with one command per object,
// {vertexCount = 3 × 128, instanceCount = meshlets, firstInstance = the batch's record offset}; the vertex shader
// reads the meshlet record by gl_InstanceIndex, the local index byte by gl_VertexIndex and the position/normal from
// the data buffer, and collapses corners past 3 × primitive_count into degenerate triangles. Objects (model matrix,
// colour) are indexed by gl_DrawID. A VK_EXT_mesh_shader path is not implemented (see docs/architecture.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

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

/// Attachment formats of the pass the renderer draws into.
struct MeshletRendererDesc
{
	VkFormat color_format = VK_FORMAT_R8G8B8A8_UNORM;
	VkFormat depth_format = VK_FORMAT_D32_SFLOAT;
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
};

/// Draw statistics of the last draw().
struct MeshletDrawStats
{
	uint32_t draw_calls = 0; ///< vkCmdDraw* calls
	uint32_t objects = 0;    ///< indirect commands
	uint64_t meshlets = 0;   ///< instances
	uint64_t triangles = 0;  ///< Σ primitive_count of the drawn meshlets
};

class MeshletRenderer
{
public:
	/// Builds the vertex-pulling pipeline. Errors: as Device::createGraphicsPipeline.
	static Result<std::unique_ptr<MeshletRenderer>> create(gpu::Device& device, const MeshletRendererDesc& desc = {});

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
};

} // namespace quokka::meshlet
