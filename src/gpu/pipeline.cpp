// Pipelines with reflected layouts (spirv-cross C API), push descriptors for set 0, and the dispatch helper.
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/pipeline.hpp>

#include "internal.hpp"

#include <spirv_cross_c.h>

#include <algorithm>
#include <array>
#include <map>

namespace quokka::gpu
{

// ---------------------------------------------------------------------------------------------------------------------
// Reflection
// ---------------------------------------------------------------------------------------------------------------------

Result<ShaderReflection> reflectSpirv(std::span<const uint32_t> spirv, VkShaderStageFlagBits stage)
{
	spvc_context context = nullptr;
	if (spvc_context_create(&context) != SPVC_SUCCESS)
		return makeError(ErrorCode::OutOfMemory, "spirv-cross: cannot create a context");
	struct ContextGuard
	{
		spvc_context c;
		~ContextGuard() { spvc_context_destroy(c); }
	} guard{context};

	spvc_parsed_ir ir = nullptr;
	if (spirv.empty() || spvc_context_parse_spirv(context, spirv.data(), spirv.size(), &ir) != SPVC_SUCCESS)
		return makeError(ErrorCode::InvalidArgument, std::string("spirv-cross cannot parse the SPIR-V: ") +
		                                                 spvc_context_get_last_error_string(context));
	spvc_compiler compiler = nullptr;
	if (spvc_context_create_compiler(context, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) !=
	    SPVC_SUCCESS)
		return makeError(ErrorCode::InvalidArgument, "spirv-cross cannot create a reflection compiler");
	spvc_resources resources = nullptr;
	spvc_compiler_create_shader_resources(compiler, &resources);

	ShaderReflection out;
	struct Kind
	{
		spvc_resource_type spvc;
		VkDescriptorType vk;
	};
	const Kind kinds[] = {
	    {SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER},
	    {SPVC_RESOURCE_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER},
	    {SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER},
	    {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE},
	    {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, VK_DESCRIPTOR_TYPE_SAMPLER},
	    {SPVC_RESOURCE_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE},
	};
	for (const Kind& kind : kinds)
	{
		const spvc_reflected_resource* list = nullptr;
		size_t count = 0;
		spvc_resources_get_resource_list_for_type(resources, kind.spvc, &list, &count);
		for (size_t i = 0; i < count; ++i)
		{
			DescriptorBinding b;
			b.set = spvc_compiler_get_decoration(compiler, list[i].id, SpvDecorationDescriptorSet);
			b.binding = spvc_compiler_get_decoration(compiler, list[i].id, SpvDecorationBinding);
			b.type = kind.vk;
			b.stages = VkShaderStageFlags(stage);
			b.name = list[i].name ? list[i].name : "";
			spvc_type type = spvc_compiler_get_type_handle(compiler, list[i].type_id);
			b.count = 1;
			for (unsigned d = 0; d < spvc_type_get_num_array_dimensions(type); ++d)
			{
				const unsigned n = spvc_type_get_array_dimension(type, d);
				b.count *= n ? n : 1;
				b.runtime_array = b.runtime_array || n == 0;
			}
			out.bindings.push_back(b);
		}
	}
	{
		const spvc_reflected_resource* list = nullptr;
		size_t count = 0;
		spvc_resources_get_resource_list_for_type(resources, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &list, &count);
		for (size_t i = 0; i < count; ++i)
		{
			size_t size = 0;
			spvc_type type = spvc_compiler_get_type_handle(compiler, list[i].base_type_id);
			spvc_compiler_get_declared_struct_size(compiler, type, &size);
			out.push_constant_size = std::max(out.push_constant_size, uint32_t(size));
		}
	}
	if (stage == VK_SHADER_STAGE_COMPUTE_BIT)
	{
		for (unsigned i = 0; i < 3; ++i)
		{
			out.local_size[i] =
			    spvc_compiler_get_execution_mode_argument_by_index(compiler, SpvExecutionModeLocalSize, i);
			// With LocalSizeId (shaderc targeting 1.3) the sizes are spec constants; read their default values.
			spvc_specialization_constant wg[3];
			spvc_constant_id wg_id =
			    spvc_compiler_get_work_group_size_specialization_constants(compiler, &wg[0], &wg[1], &wg[2]);
			(void)wg_id;
			if (out.local_size[i] == 0 && wg[i].id != 0)
			{
				spvc_constant c = spvc_compiler_get_constant_handle(compiler, wg[i].id);
				out.local_size[i] = spvc_constant_get_scalar_u32(c, 0, 0);
			}
			if (out.local_size[i] == 0)
				out.local_size[i] = 1;
		}
	}
	return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Layout creation
// ---------------------------------------------------------------------------------------------------------------------

namespace
{
struct StageCode
{
	std::span<const uint32_t> spirv;
	VkShaderStageFlagBits stage;
};

// Reflects every stage, merges bindings, and creates set layouts (set 0 = push descriptors) and the pipeline layout.
Result<void> buildLayout(Device& device, Pipeline& pipeline, std::span<const StageCode> stages,
                         std::vector<DescriptorBinding>& bindings, std::vector<VkDescriptorSetLayout>& set_layouts,
                         VkPipelineLayout& layout, uint32_t& push_size, VkShaderStageFlags& push_stages,
                         uint32_t local_size[3])
{
	(void)pipeline;
	std::map<std::pair<uint32_t, uint32_t>, DescriptorBinding> merged;
	for (const StageCode& sc : stages)
	{
		auto r = reflectSpirv(sc.spirv, sc.stage);
		if (!r.ok())
			return r.error();
		for (const DescriptorBinding& b : r->bindings)
		{
			auto [it, inserted] = merged.emplace(std::make_pair(b.set, b.binding), b);
			if (!inserted)
			{
				if (it->second.type != b.type)
					return makeError(ErrorCode::InvalidArgument,
					                 "set " + std::to_string(b.set) + " binding " + std::to_string(b.binding) +
					                     " has different descriptor types in different stages");
				it->second.stages |= b.stages;
				it->second.count = std::max(it->second.count, b.count);
				it->second.runtime_array = it->second.runtime_array || b.runtime_array;
			}
		}
		if (r->push_constant_size)
		{
			push_size = std::max(push_size, r->push_constant_size);
			push_stages |= sc.stage;
		}
		if (sc.stage == VK_SHADER_STAGE_COMPUTE_BIT)
			std::copy(r->local_size, r->local_size + 3, local_size);
	}
	uint32_t max_set = 0;
	for (const auto& [key, b] : merged)
	{
		bindings.push_back(b);
		max_set = std::max(max_set, b.set + 1);
	}
	if (push_size > device.info().max_push_constants_size)
		return makeError(ErrorCode::InvalidArgument, "push constants of " + std::to_string(push_size) +
		                                                 " bytes exceed the device limit of " +
		                                                 std::to_string(device.info().max_push_constants_size));

	set_layouts.assign(max_set, VK_NULL_HANDLE);
	for (uint32_t set = 0; set < max_set; ++set)
	{
		const auto in_set = [&](const DescriptorBinding& b) { return b.set == set; };
		if (auto rt = std::find_if(bindings.begin(), bindings.end(),
		                           [&](const DescriptorBinding& b) { return in_set(b) && b.runtime_array; });
		    rt != bindings.end())
		{
			// A bindless set: the device's one layout, so that every bindless table binds to this pipeline.
			if (set == 0 || rt->binding != 0 || rt->type != VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER ||
			    std::count_if(bindings.begin(), bindings.end(), in_set) != 1)
				return makeError(ErrorCode::InvalidArgument,
				                 "the unsized array" + (rt->name.empty() ? "" : " '" + rt->name + "'") + " at set " +
				                     std::to_string(set) + ", binding " + std::to_string(rt->binding) +
				                     " is not a bindless set: an array of combined image samplers alone at binding "
				                     "0 of a set other than 0");
			if (!device.bindlessLayout())
				return makeError(ErrorCode::MissingFeature,
				                 "the unsized array at set " + std::to_string(set) +
				                     " needs bindless textures (descriptor indexing), which " + device.info().name +
				                     " lacks");
			set_layouts[set] = device.bindlessLayout();
			continue;
		}
		std::vector<VkDescriptorSetLayoutBinding> vk_bindings;
		for (const DescriptorBinding& b : bindings)
			if (b.set == set)
				vk_bindings.push_back({b.binding, b.type, b.count, b.stages, nullptr});
		VkDescriptorSetLayoutCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
		if (set == 0)
			info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
		info.bindingCount = uint32_t(vk_bindings.size());
		info.pBindings = vk_bindings.data();
		QUOKKA_VK_TRY(vkCreateDescriptorSetLayout(device.vk(), &info, nullptr, &set_layouts[set]));
	}
	VkPushConstantRange range{push_stages, 0, push_size};
	VkPipelineLayoutCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
	info.setLayoutCount = uint32_t(set_layouts.size());
	info.pSetLayouts = set_layouts.data();
	info.pushConstantRangeCount = push_size ? 1 : 0;
	info.pPushConstantRanges = &range;
	QUOKKA_VK_TRY(vkCreatePipelineLayout(device.vk(), &info, nullptr, &layout));
	return {};
}

Result<VkShaderModule> createModule(Device& device, std::span<const uint32_t> spirv)
{
	VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
	info.codeSize = spirv.size_bytes();
	info.pCode = spirv.data();
	VkShaderModule module = VK_NULL_HANDLE;
	QUOKKA_VK_TRY(vkCreateShaderModule(device.vk(), &info, nullptr, &module));
	return module;
}
} // namespace

Result<PipelineHandle> Device::createComputePipeline(const ComputePipelineDesc& desc)
{
	std::shared_ptr<Pipeline> pipeline(new Pipeline());
	pipeline->device_ = this;
	pipeline->name_ = desc.name;
	pipeline->bind_point_ = VK_PIPELINE_BIND_POINT_COMPUTE;
	const StageCode stages[] = {{desc.spirv, VK_SHADER_STAGE_COMPUTE_BIT}};
	QUOKKA_TRY(buildLayout(*this, *pipeline, stages, pipeline->bindings_, pipeline->set_layouts_, pipeline->layout_,
	                       pipeline->push_constant_size_, pipeline->push_constant_stages_, pipeline->local_size_));
	auto module = createModule(*this, desc.spirv);
	if (!module.ok())
		return module.error();
	VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
	info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
	info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
	info.stage.module = module.value();
	info.stage.pName = desc.entry;
	info.layout = pipeline->layout_;
	VkResult result = vkCreateComputePipelines(device_, pipeline_cache_, 1, &info, nullptr, &pipeline->pipeline_);
	vkDestroyShaderModule(device_, module.value(), nullptr);
	QUOKKA_VK_TRY(result);
	setDebugName(VK_OBJECT_TYPE_PIPELINE, uint64_t(pipeline->pipeline_), desc.name.c_str());
	return PipelineHandle(std::move(pipeline));
}

Result<PipelineHandle> Device::createGraphicsPipeline(const GraphicsPipelineDesc& desc)
{
	const bool mesh = !desc.mesh.empty();
	if (!mesh && desc.vertex.empty())
		return makeError(ErrorCode::InvalidArgument, "graphics pipeline '" + desc.name + "' has no vertex shader");
	if (mesh && !desc.vertex.empty())
		return makeError(ErrorCode::InvalidArgument,
		                 "graphics pipeline '" + desc.name + "' has both a vertex and a mesh shader");
	if (!mesh && !desc.task.empty())
		return makeError(ErrorCode::InvalidArgument,
		                 "graphics pipeline '" + desc.name + "' has a task shader but no mesh shader");
	if (mesh && !features_.mesh_shader)
	{
		const std::string what = "graphics pipeline '" + desc.name + "' needs VK_EXT_mesh_shader";
		return makeError(ErrorCode::MissingFeature, what + ", which " + info_.name + " lacks");
	}
	std::shared_ptr<Pipeline> pipeline(new Pipeline());
	pipeline->device_ = this;
	pipeline->name_ = desc.name;
	pipeline->bind_point_ = VK_PIPELINE_BIND_POINT_GRAPHICS;
	std::vector<StageCode> stages;
	if (!desc.task.empty())
		stages.push_back({desc.task, VK_SHADER_STAGE_TASK_BIT_EXT});
	if (mesh)
		stages.push_back({desc.mesh, VK_SHADER_STAGE_MESH_BIT_EXT});
	else
		stages.push_back({desc.vertex, VK_SHADER_STAGE_VERTEX_BIT});
	if (!desc.fragment.empty())
		stages.push_back({desc.fragment, VK_SHADER_STAGE_FRAGMENT_BIT});
	QUOKKA_TRY(buildLayout(*this, *pipeline, stages, pipeline->bindings_, pipeline->set_layouts_, pipeline->layout_,
	                       pipeline->push_constant_size_, pipeline->push_constant_stages_, pipeline->local_size_));

	std::vector<VkShaderModule> modules;
	std::vector<VkPipelineShaderStageCreateInfo> stage_infos;
	for (const StageCode& sc : stages)
	{
		auto module = createModule(*this, sc.spirv);
		if (!module.ok())
		{
			for (VkShaderModule m : modules)
				vkDestroyShaderModule(device_, m, nullptr);
			return module.error();
		}
		modules.push_back(module.value());
		VkPipelineShaderStageCreateInfo si{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
		si.stage = sc.stage;
		si.module = module.value();
		si.pName = "main";
		stage_infos.push_back(si);
	}

	VkPipelineVertexInputStateCreateInfo vertex_input{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
	vertex_input.vertexBindingDescriptionCount = uint32_t(desc.vertex_bindings.size());
	vertex_input.pVertexBindingDescriptions = desc.vertex_bindings.data();
	vertex_input.vertexAttributeDescriptionCount = uint32_t(desc.vertex_attributes.size());
	vertex_input.pVertexAttributeDescriptions = desc.vertex_attributes.data();
	VkPipelineInputAssemblyStateCreateInfo assembly{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
	assembly.topology = desc.topology;
	assembly.primitiveRestartEnable = desc.primitive_restart;
	VkPipelineViewportStateCreateInfo viewport{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
	viewport.viewportCount = 1;
	viewport.scissorCount = 1;
	VkPipelineRasterizationStateCreateInfo raster{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
	raster.depthClampEnable = desc.depth_clamp;
	raster.polygonMode = desc.polygon_mode;
	raster.lineWidth = 1.0f;
	VkPipelineMultisampleStateCreateInfo multisample{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
	multisample.rasterizationSamples = desc.samples;
	multisample.alphaToCoverageEnable = desc.alpha_to_coverage;
	VkPipelineDepthStencilStateCreateInfo depth{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
	depth.minDepthBounds = 0.0f;
	depth.maxDepthBounds = 1.0f;

	std::vector<VkPipelineColorBlendAttachmentState> blend = desc.blend;
	if (blend.empty())
	{
		VkPipelineColorBlendAttachmentState opaque{};
		opaque.colorWriteMask =
		    VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
		blend.assign(desc.color_formats.size(), opaque);
	}
	if (blend.size() != desc.color_formats.size())
	{
		for (VkShaderModule m : modules)
			vkDestroyShaderModule(device_, m, nullptr);
		return makeError(ErrorCode::InvalidArgument,
		                 "graphics pipeline '" + desc.name + "': " + std::to_string(blend.size()) +
		                     " blend states for " + std::to_string(desc.color_formats.size()) + " colour attachments");
	}
	VkPipelineColorBlendStateCreateInfo color_blend{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
	color_blend.attachmentCount = uint32_t(blend.size());
	color_blend.pAttachments = blend.data();

	const VkDynamicState dynamic[] = {
	    VK_DYNAMIC_STATE_VIEWPORT,           VK_DYNAMIC_STATE_SCISSOR,
	    VK_DYNAMIC_STATE_CULL_MODE,          VK_DYNAMIC_STATE_FRONT_FACE,
	    VK_DYNAMIC_STATE_DEPTH_TEST_ENABLE,  VK_DYNAMIC_STATE_DEPTH_WRITE_ENABLE,
	    VK_DYNAMIC_STATE_DEPTH_COMPARE_OP,   VK_DYNAMIC_STATE_DEPTH_BIAS_ENABLE,
	    VK_DYNAMIC_STATE_DEPTH_BIAS,         VK_DYNAMIC_STATE_STENCIL_TEST_ENABLE,
	    VK_DYNAMIC_STATE_STENCIL_OP,         VK_DYNAMIC_STATE_STENCIL_COMPARE_MASK,
	    VK_DYNAMIC_STATE_STENCIL_WRITE_MASK, VK_DYNAMIC_STATE_STENCIL_REFERENCE,
	};
	VkPipelineDynamicStateCreateInfo dynamic_info{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
	dynamic_info.dynamicStateCount = uint32_t(std::size(dynamic));
	dynamic_info.pDynamicStates = dynamic;

	VkPipelineRenderingCreateInfo rendering{VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO};
	rendering.colorAttachmentCount = uint32_t(desc.color_formats.size());
	rendering.pColorAttachmentFormats = desc.color_formats.data();
	rendering.depthAttachmentFormat = desc.depth_format;

	VkGraphicsPipelineCreateInfo info{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
	info.pNext = &rendering;
	info.stageCount = uint32_t(stage_infos.size());
	info.pStages = stage_infos.data();
	info.pVertexInputState = mesh ? nullptr : &vertex_input;
	info.pInputAssemblyState = mesh ? nullptr : &assembly;
	info.pViewportState = &viewport;
	info.pRasterizationState = &raster;
	info.pMultisampleState = &multisample;
	info.pDepthStencilState = &depth;
	info.pColorBlendState = &color_blend;
	info.pDynamicState = &dynamic_info;
	info.layout = pipeline->layout_;
	VkResult result = vkCreateGraphicsPipelines(device_, pipeline_cache_, 1, &info, nullptr, &pipeline->pipeline_);
	for (VkShaderModule m : modules)
		vkDestroyShaderModule(device_, m, nullptr);
	QUOKKA_VK_TRY(result);
	setDebugName(VK_OBJECT_TYPE_PIPELINE, uint64_t(pipeline->pipeline_), desc.name.c_str());
	return PipelineHandle(std::move(pipeline));
}

Pipeline::~Pipeline()
{
	if (!device_)
		return;
	VkDevice dev = device_->vk();
	VkPipeline pipeline = pipeline_;
	VkPipelineLayout layout = layout_;
	std::vector<VkDescriptorSetLayout> sets = set_layouts_;
	VkDescriptorSetLayout shared = device_->bindlessLayout(); // (the device's, not the pipeline's)
	device_->destroyLater(
	    [dev, pipeline, layout, sets, shared]
	    {
		    if (pipeline)
			    vkDestroyPipeline(dev, pipeline, nullptr);
		    if (layout)
			    vkDestroyPipelineLayout(dev, layout, nullptr);
		    for (VkDescriptorSetLayout s : sets)
			    if (s && s != shared)
				    vkDestroyDescriptorSetLayout(dev, s, nullptr);
	    });
}

// ---------------------------------------------------------------------------------------------------------------------
// Recording helpers
// ---------------------------------------------------------------------------------------------------------------------

void Pipeline::bind(CommandList& list) const
{
	vkCmdBindPipeline(list.vk(), bind_point_, pipeline_);
}

void Pipeline::pushConstants(CommandList& list, const void* data, uint32_t size, uint32_t offset) const
{
	QUOKKA_ASSERT(offset + size <= push_constant_size_, "push constants larger than the reflected block");
	vkCmdPushConstants(list.vk(), layout_, push_constant_stages_, offset, size, data);
}

void Pipeline::pushBuffer(CommandList& list, uint32_t binding, const Buffer& buffer, uint64_t offset,
                          uint64_t range) const
{
	auto it = std::find_if(bindings_.begin(), bindings_.end(),
	                       [&](const DescriptorBinding& b) { return b.set == 0 && b.binding == binding; });
	QUOKKA_ASSERT(it != bindings_.end(), "pushBuffer: the shaders declare no such set-0 binding");
	QUOKKA_ASSERT(it->type == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER || it->type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
	              "pushBuffer: binding is not a buffer");
	VkDescriptorBufferInfo info{buffer.vk(), offset, range};
	VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
	write.dstBinding = binding;
	write.descriptorCount = 1;
	write.descriptorType = it->type;
	write.pBufferInfo = &info;
	device_->cmdPushDescriptorSet(list.vk(), bind_point_, layout_, 0, 1, &write);
}

void Pipeline::pushDescriptors(CommandList& list, std::span<const VkWriteDescriptorSet> writes) const
{
	device_->cmdPushDescriptorSet(list.vk(), bind_point_, layout_, 0, uint32_t(writes.size()), writes.data());
}

void DynamicState::apply(VkCommandBuffer cmd) const
{
	vkCmdSetCullMode(cmd, cull_mode);
	vkCmdSetFrontFace(cmd, front_face);
	vkCmdSetDepthTestEnable(cmd, depth_test);
	vkCmdSetDepthWriteEnable(cmd, depth_write);
	vkCmdSetDepthCompareOp(cmd, depth_compare);
	vkCmdSetDepthBiasEnable(cmd, depth_bias);
	vkCmdSetDepthBias(cmd, depth_bias_constant, 0.0f, depth_bias_slope);
	vkCmdSetStencilTestEnable(cmd, stencil_test);
	vkCmdSetStencilOp(cmd, VK_STENCIL_FACE_FRONT_AND_BACK, stencil_fail, stencil_pass, stencil_depth_fail,
	                  stencil_compare);
	vkCmdSetStencilCompareMask(cmd, VK_STENCIL_FACE_FRONT_AND_BACK, stencil_compare_mask);
	vkCmdSetStencilWriteMask(cmd, VK_STENCIL_FACE_FRONT_AND_BACK, stencil_write_mask);
	vkCmdSetStencilReference(cmd, VK_STENCIL_FACE_FRONT_AND_BACK, stencil_reference);
}

void pushStorageBuffers(CommandList& list, const Pipeline& pipeline, std::initializer_list<StorageBinding> bindings)
{
	pushStorageBuffers(list, pipeline, 0, bindings);
}

void pushStorageBuffers(CommandList& list, const Pipeline& pipeline, uint32_t first,
                        std::initializer_list<StorageBinding> bindings)
{
	std::array<VkDescriptorBufferInfo, 8> infos{};
	std::array<VkWriteDescriptorSet, 8> writes{};
	QUOKKA_ASSERT(bindings.size() <= infos.size(), "pushStorageBuffers: too many bindings");
	uint32_t count = 0;
	for (const StorageBinding& binding : bindings)
	{
		infos[count] = {binding.buffer->vk(), binding.offset, binding.range};
		VkWriteDescriptorSet& write = writes[count];
		write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
		write.dstBinding = first + count;
		write.descriptorCount = 1;
		write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
		write.pBufferInfo = &infos[count];
		++count;
	}
	pipeline.pushDescriptors(list, {writes.data(), count});
}

uint32_t dispatch1d(CommandList& list, const Pipeline& pipeline, uint64_t count_x, uint32_t max_groups)
{
	const uint32_t local = pipeline.localSize()[0] ? pipeline.localSize()[0] : 1;
	const uint64_t groups = (count_x + local - 1) / local;
	if (groups == 0)
		return 0;
	// One row: the kernels loop (include/quokka/gpu/dispatch.glsl.h). vkCmdDispatchBase cannot extend a row either:
	// base + count must stay within maxComputeWorkGroupCount too (VUID-vkCmdDispatchBase-groupCountX-00424).
	uint64_t cap = list.device().info().max_compute_work_group_count[0];
	if (max_groups != 0)
		cap = std::min<uint64_t>(cap, max_groups);
	const uint32_t launched = uint32_t(std::min(groups, std::max<uint64_t>(cap, 1)));
	vkCmdDispatch(list.vk(), launched, 1, 1);
	return launched;
}

} // namespace quokka::gpu
