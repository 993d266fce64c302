// quokka/gpu/pipeline.hpp — compute and graphics pipelines whose layouts come from SPIR-V reflection.
//
// Descriptor set layouts and push-constant ranges are reflected from the stages with spirv-cross (never
// hand-kept tables). Set 0 is a push-descriptor set (VK_KHR_push_descriptor), written per draw/dispatch with
// pushBuffer()/pushDescriptors(); other sets are ordinary layouts for the modules above, except that a set holding an
// unsized array of combined image samplers at binding 0 gets the device's bindless layout (Device::bindlessLayout()).
// Graphics pipelines target dynamic rendering and take viewport, scissor, cull mode, front face, depth
// test/write/compare, depth bias and stencil as dynamic state (Vulkan 1.3), so flipping those needs no new pipeline.
// All pipelines go through the device's VkPipelineCache.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <quokka/gpu/vk.hpp>

namespace quokka::gpu
{

class Device;
class CommandList;
class Buffer;

/// One reflected descriptor binding (merged over stages).
struct DescriptorBinding
{
	uint32_t set = 0;
	uint32_t binding = 0;
	VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
	uint32_t count = 1;
	VkShaderStageFlags stages = 0;
	std::string name;
	/// An unsized array (`sampler2D t[]`): a bindless set (Device::bindlessLayout()); `count` is 1 then.
	bool runtime_array = false;
};

struct ComputePipelineDesc
{
	std::span<const uint32_t> spirv;
	const char* entry = "main";
	std::string name;
};

/// A graphics pipeline: either vertex + fragment, or (VK_EXT_mesh_shader) optional task + mesh + fragment. Mesh
/// pipelines have no vertex input or input assembly state (`vertex_*`, `topology`, `primitive_restart` are ignored).
struct GraphicsPipelineDesc
{
	std::span<const uint32_t> vertex;   ///< required unless `mesh` is set; must be empty when it is
	std::span<const uint32_t> fragment; ///< may be empty (depth-only)
	std::span<const uint32_t> task;     ///< optional task stage of a mesh pipeline
	std::span<const uint32_t> mesh;     ///< mesh stage; needs Device::features().mesh_shader
	std::vector<VkVertexInputBindingDescription> vertex_bindings;
	std::vector<VkVertexInputAttributeDescription> vertex_attributes;
	VkPrimitiveTopology topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
	bool primitive_restart = false;
	VkPolygonMode polygon_mode = VK_POLYGON_MODE_FILL;
	std::vector<VkFormat> color_formats;
	VkFormat depth_format = VK_FORMAT_UNDEFINED;
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
	bool alpha_to_coverage = false;
	bool depth_clamp = false;
	/// One per colour attachment; empty = opaque, all channels written.
	std::vector<VkPipelineColorBlendAttachmentState> blend;
	std::string name;
};

/// The dynamic state every graphics pipeline declares; apply() records all of it (defaults: no culling, CCW front,
/// depth test+write with LESS, no bias, no stencil).
struct DynamicState
{
	VkCullModeFlags cull_mode = VK_CULL_MODE_NONE;
	VkFrontFace front_face = VK_FRONT_FACE_COUNTER_CLOCKWISE;
	bool depth_test = true;
	bool depth_write = true;
	VkCompareOp depth_compare = VK_COMPARE_OP_LESS;
	bool depth_bias = false;
	float depth_bias_constant = 0.0f;
	float depth_bias_slope = 0.0f;
	bool stencil_test = false;
	VkStencilOp stencil_fail = VK_STENCIL_OP_KEEP;
	VkStencilOp stencil_pass = VK_STENCIL_OP_KEEP;
	VkStencilOp stencil_depth_fail = VK_STENCIL_OP_KEEP;
	VkCompareOp stencil_compare = VK_COMPARE_OP_ALWAYS;
	uint32_t stencil_reference = 0;
	uint32_t stencil_compare_mask = 0xff;
	uint32_t stencil_write_mask = 0xff;

	bool operator==(const DynamicState&) const = default;

	void apply(VkCommandBuffer cmd) const;
};

class Pipeline
{
public:
	~Pipeline();
	Pipeline(const Pipeline&) = delete;
	Pipeline& operator=(const Pipeline&) = delete;

	VkPipeline vk() const { return pipeline_; }
	VkPipelineLayout layout() const { return layout_; }
	VkPipelineBindPoint bindPoint() const { return bind_point_; }
	const std::vector<DescriptorBinding>& bindings() const { return bindings_; }
	/// Layout of set `set` (VK_NULL_HANDLE when the shaders use none).
	VkDescriptorSetLayout setLayout(uint32_t set) const
	{
		return set < set_layouts_.size() ? set_layouts_[set] : VK_NULL_HANDLE;
	}
	uint32_t pushConstantSize() const { return push_constant_size_; }
	VkShaderStageFlags pushConstantStages() const { return push_constant_stages_; }
	/// Compute local size (x, y, z) reflected from the shader; {0,0,0} for graphics.
	const uint32_t* localSize() const { return local_size_; }
	const std::string& name() const { return name_; }

	void bind(CommandList& list) const;
	/// Records push constants (size ≤ pushConstantSize()).
	void pushConstants(CommandList& list, const void* data, uint32_t size, uint32_t offset = 0) const;
	/// Writes one buffer binding of set 0 through push descriptors (storage or uniform by reflection).
	void pushBuffer(CommandList& list, uint32_t binding, const Buffer& buffer, uint64_t offset = 0,
	                uint64_t range = VK_WHOLE_SIZE) const;
	/// Writes several set-0 bindings at once (dstSet is ignored).
	void pushDescriptors(CommandList& list, std::span<const VkWriteDescriptorSet> writes) const;

private:
	friend class Device;
	Pipeline() = default;

	Device* device_ = nullptr;
	VkPipeline pipeline_ = VK_NULL_HANDLE;
	VkPipelineLayout layout_ = VK_NULL_HANDLE;
	std::vector<VkDescriptorSetLayout> set_layouts_;
	VkPipelineBindPoint bind_point_ = VK_PIPELINE_BIND_POINT_COMPUTE;
	std::vector<DescriptorBinding> bindings_;
	uint32_t push_constant_size_ = 0;
	VkShaderStageFlags push_constant_stages_ = 0;
	uint32_t local_size_[3] = {0, 0, 0};
	std::string name_;
};

using PipelineHandle = std::shared_ptr<Pipeline>;

/// Reflection of one SPIR-V stage (exposed for tests and the fx module).
struct ShaderReflection
{
	std::vector<DescriptorBinding> bindings;
	uint32_t push_constant_size = 0;
	uint32_t local_size[3] = {0, 0, 0};
};

/// Reflects `spirv` as stage `stage`. Errors: InvalidArgument when spirv-cross cannot parse it.
Result<ShaderReflection> reflectSpirv(std::span<const uint32_t> spirv, VkShaderStageFlagBits stage);

/// One storage-buffer binding of set 0 for pushStorageBuffers, in binding order.
struct StorageBinding
{
	const Buffer* buffer;
	uint64_t offset = 0;
	uint64_t range = VK_WHOLE_SIZE;
};

/// Writes a compute kernel's storage-buffer bindings 0, 1, … of set 0 with one push-descriptor call (at most 8;
/// Pipeline::pushBuffer records one call per binding).
void pushStorageBuffers(CommandList& list, const Pipeline& pipeline, std::initializer_list<StorageBinding> bindings);
/// The same for bindings first, first + 1, … only: push descriptors update incrementally, so the others keep what an
/// earlier push with the same layout wrote (a kernel dispatched over several buffers pushes what stays once).
void pushStorageBuffers(CommandList& list, const Pipeline& pipeline, uint32_t first,
                        std::initializer_list<StorageBinding> bindings);

/// Records a dispatch for `count_x` invocations along x: ceil(count_x / local size) workgroups in one row, at most
/// maxComputeWorkGroupCount[0] of them (65,535 on lavapipe) and at most `max_groups` when that is not 0. Kernels visit
/// their elements with a grid-stride loop (include/quokka/gpu/dispatch.glsl.h), so fewer workgroups than elements need
/// is never wrong. Returns the number of workgroups launched (0 for an empty dispatch, which records nothing).
uint32_t dispatch1d(CommandList& list, const Pipeline& pipeline, uint64_t count_x, uint32_t max_groups = 0);

} // namespace quokka::gpu
