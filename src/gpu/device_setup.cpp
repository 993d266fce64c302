// Device set-up: the instance and its validation messenger, the physical-device choice, and the logical device with
// its features, limits, queue, timeline and the bindless layout. The rest of Device (creation, submission, retirement,
// transfers, the pipeline cache) is in device.cpp.
//
// [SECTION] helpers
// [SECTION] instance and validation messenger
// [SECTION] physical-device selection and features
// [SECTION] logical device
#include <quokka/gpu/device.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace quokka::gpu
{

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] helpers
// ---------------------------------------------------------------------------------------------------------------------

namespace
{
const char* physicalDeviceTypeName(VkPhysicalDeviceType type)
{
	switch (type)
	{
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return "discrete-gpu";
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return "integrated-gpu";
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return "virtual-gpu";
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return "cpu";
	default:
		return "other";
	}
}

bool isGpuType(VkPhysicalDeviceType type)
{
	return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU || type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
	       type == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
}

// Lower is better for DeviceKind::Auto.
int autoRank(VkPhysicalDeviceType type)
{
	switch (type)
	{
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return 0;
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return 1;
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return 2;
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return 3;
	default:
		return 4;
	}
}

bool hasExtension(const std::vector<VkExtensionProperties>& list, const char* name)
{
	return std::any_of(list.begin(), list.end(),
	                   [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// Validation messages we know to be false positives, by VUID (each with the upstream issue). Empty so far.
constexpr const char* kIgnoredVuids[] = {""};

} // namespace

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] instance and validation messenger
// ---------------------------------------------------------------------------------------------------------------------

VkBool32 VKAPI_PTR Device::debugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                         VkDebugUtilsMessageTypeFlagsEXT,
                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void* user)
{
	auto* self = static_cast<Device*>(user);
	const char* id = data->pMessageIdName ? data->pMessageIdName : "";
	for (const char* ignored : kIgnoredVuids)
		if (*ignored && std::strcmp(ignored, id) == 0)
			return VK_FALSE;
	const bool is_error = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0;
	if (self->desc_.print_validation || is_error)
		std::fprintf(stderr, "[vulkan %s] %s\n", is_error ? "ERROR" : "warning", data->pMessage);
	if (is_error)
	{
		std::lock_guard lock(self->validation_mutex_);
		++self->validation_errors_;
		if (self->validation_messages_.size() < 64)
			self->validation_messages_.emplace_back(data->pMessage ? data->pMessage : id);
	}
	return VK_FALSE;
}

uint32_t Device::validationErrorCount() const
{
	std::lock_guard lock(validation_mutex_);
	return validation_errors_;
}

std::vector<std::string> Device::validationMessages() const
{
	std::lock_guard lock(validation_mutex_);
	return validation_messages_;
}

void Device::clearValidationMessages()
{
	std::lock_guard lock(validation_mutex_);
	validation_errors_ = 0;
	validation_messages_.clear();
}

Result<void> Device::createInstance()
{
	uint32_t loader_version = VK_API_VERSION_1_0;
	if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS || loader_version < VK_API_VERSION_1_3)
		return makeError(ErrorCode::NoDriver, "the Vulkan loader is older than 1.3 (install libvulkan1 >= 1.3)");

	std::vector<const char*> layers;
	std::vector<const char*> extensions;
	if (desc_.validation)
	{
		uint32_t count = 0;
		vkEnumerateInstanceLayerProperties(&count, nullptr);
		std::vector<VkLayerProperties> props(count);
		vkEnumerateInstanceLayerProperties(&count, props.data());
		const bool found = std::any_of(props.begin(), props.end(),
		                               [](const VkLayerProperties& p)
		                               { return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0; });
		if (!found)
			return makeError(ErrorCode::MissingFeature, "validation was requested but VK_LAYER_KHRONOS_validation is "
			                                            "not installed (Debian package vulkan-validationlayers)");
		layers.push_back("VK_LAYER_KHRONOS_validation");
		extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
	}

	VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
	app.pApplicationName = "quokka";
	app.pEngineName = "quokka";
	app.apiVersion = VK_API_VERSION_1_3;

	VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
	messenger_info.messageSeverity =
	    VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
	// GENERAL messages are the loader's ("Found no drivers!"): the Device reports those itself as one-line errors.
	messenger_info.messageType =
	    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
	messenger_info.pfnUserCallback = &Device::debugCallback;
	messenger_info.pUserData = this;

	VkValidationFeatureEnableEXT sync_feature = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
	VkValidationFeaturesEXT validation_features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
	validation_features.enabledValidationFeatureCount = 1;
	validation_features.pEnabledValidationFeatures = &sync_feature;
	if (desc_.sync_validation)
		messenger_info.pNext = &validation_features;

	VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
	info.pApplicationInfo = &app;
	info.enabledLayerCount = uint32_t(layers.size());
	info.ppEnabledLayerNames = layers.data();
	info.enabledExtensionCount = uint32_t(extensions.size());
	info.ppEnabledExtensionNames = extensions.data();
	if (desc_.validation)
		info.pNext = &messenger_info; // also covers vkCreateInstance/vkDestroyInstance
	VkResult result = vkCreateInstance(&info, nullptr, &instance_);
	if (result == VK_ERROR_INCOMPATIBLE_DRIVER)
		return makeError(ErrorCode::NoDriver, "no Vulkan driver found (install mesa-vulkan-drivers for lavapipe)");
	QUOKKA_VK_TRY(result);

	if (desc_.validation)
	{
		auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
		    vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
		if (!create)
			return makeError(ErrorCode::MissingFeature, "VK_EXT_debug_utils is not available");
		messenger_info.pNext = nullptr;
		QUOKKA_VK_TRY(create(instance_, &messenger_info, nullptr, &messenger_));
		set_object_name_ = reinterpret_cast<PFN_vkSetDebugUtilsObjectNameEXT>(
		    vkGetInstanceProcAddr(instance_, "vkSetDebugUtilsObjectNameEXT"));
	}
	return {};
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] physical-device selection and features
// ---------------------------------------------------------------------------------------------------------------------

Result<void> Device::pickPhysicalDevice()
{
	uint32_t count = 0;
	VkResult result = vkEnumeratePhysicalDevices(instance_, &count, nullptr);
	if (result != VK_SUCCESS || count == 0)
		return makeError(ErrorCode::NoDriver,
		                 "no Vulkan driver found: no physical device (install mesa-vulkan-drivers for lavapipe)");
	std::vector<VkPhysicalDevice> devices(count);
	vkEnumeratePhysicalDevices(instance_, &count, devices.data());

	std::string seen;
	int best_rank = 1 << 30;
	for (VkPhysicalDevice candidate : devices)
	{
		VkPhysicalDeviceProperties props;
		vkGetPhysicalDeviceProperties(candidate, &props);
		if (!seen.empty())
			seen += ", ";
		seen += std::string(props.deviceName) + " (" + physicalDeviceTypeName(props.deviceType) + ")";
		if (desc_.kind == DeviceKind::Gpu && !isGpuType(props.deviceType))
			continue;
		if (desc_.kind == DeviceKind::Cpu && props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU)
			continue;
		if (props.apiVersion < VK_API_VERSION_1_3)
		{
			seen += " [Vulkan < 1.3]";
			continue;
		}
		int rank = autoRank(props.deviceType);
		if (rank < best_rank)
		{
			best_rank = rank;
			physical_ = candidate;
		}
	}
	if (physical_ == VK_NULL_HANDLE)
		return makeError(ErrorCode::NoDevice, std::string("no Vulkan 1.3 device of kind '") +
		                                          deviceKindName(desc_.kind) + "' (found: " + seen + ")");
	return {};
}

namespace
{
struct FeatureChain
{
	VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
	VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
	VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
	VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
	VkPhysicalDeviceMeshShaderFeaturesEXT mesh{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MESH_SHADER_FEATURES_EXT};

	void link(bool with_mesh)
	{
		f2.pNext = &v11;
		v11.pNext = &v12;
		v12.pNext = &v13;
		v13.pNext = with_mesh ? &mesh : nullptr;
		mesh.pNext = nullptr;
	}
};
} // namespace

Result<void> Device::createLogicalDevice()
{
	// Properties.
	VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
	VkPhysicalDevicePushDescriptorPropertiesKHR push{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
	VkPhysicalDeviceDescriptorIndexingProperties indexing{
	    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_PROPERTIES};
	driver.pNext = &push;
	push.pNext = &indexing;
	VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
	props2.pNext = &driver;
	vkGetPhysicalDeviceProperties2(physical_, &props2);
	const VkPhysicalDeviceProperties& p = props2.properties;
	const VkPhysicalDeviceLimits& l = p.limits;
	info_.name = p.deviceName;
	info_.type = physicalDeviceTypeName(p.deviceType);
	info_.is_cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
	info_.driver_name = driver.driverName;
	info_.driver_info = driver.driverInfo;
	info_.api_version = p.apiVersion;
	info_.driver_version = p.driverVersion;
	info_.vendor_id = p.vendorID;
	info_.device_id = p.deviceID;
	info_.max_storage_buffer_range = l.maxStorageBufferRange;
	info_.max_push_constants_size = l.maxPushConstantsSize;
	for (int i = 0; i < 3; ++i)
		info_.max_compute_work_group_count[i] = l.maxComputeWorkGroupCount[i];
	info_.max_draw_indirect_count = l.maxDrawIndirectCount;
	info_.max_image_dimension_2d = l.maxImageDimension2D;
	info_.max_memory_allocation_count = l.maxMemoryAllocationCount;
	info_.max_push_descriptors = push.maxPushDescriptors;
	{
		// (The limits count every set of a pipeline layout: room is left for the other sets' resources.)
		const uint32_t limit = std::min(
		    {indexing.maxDescriptorSetUpdateAfterBindSampledImages, indexing.maxDescriptorSetUpdateAfterBindSamplers,
		     indexing.maxPerStageDescriptorUpdateAfterBindSampledImages,
		     indexing.maxPerStageDescriptorUpdateAfterBindSamplers, indexing.maxPerStageUpdateAfterBindResources});
		info_.max_bindless_textures =
		    limit > 2 * kBindlessReserve ? std::min(limit - kBindlessReserve, kMaxBindlessTextures) : 0;
	}
	info_.framebuffer_color_sample_counts = l.framebufferColorSampleCounts & l.framebufferDepthSampleCounts;
	info_.timestamp_period_ns = l.timestampPeriod;
	vkGetPhysicalDeviceMemoryProperties(physical_, &memory_props_);
	for (uint32_t i = 0; i < memory_props_.memoryHeapCount; ++i)
		if (memory_props_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
			info_.device_local_bytes += memory_props_.memoryHeaps[i].size;
	constexpr VkMemoryPropertyFlags kMappableDeviceLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
	                                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
	                                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i)
		if ((memory_props_.memoryTypes[i].propertyFlags & kMappableDeviceLocal) == kMappableDeviceLocal)
			info_.host_visible_device_local_bytes =
			    std::max(info_.host_visible_device_local_bytes,
			             memory_props_.memoryHeaps[memory_props_.memoryTypes[i].heapIndex].size);

	// Queue: one family with graphics + compute (transfer is implied).
	uint32_t family_count = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, nullptr);
	std::vector<VkQueueFamilyProperties> families(family_count);
	vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, families.data());
	queue_family_ = UINT32_MAX;
	for (uint32_t i = 0; i < family_count; ++i)
		if ((families[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) ==
		    (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT))
		{
			queue_family_ = i;
			break;
		}
	if (queue_family_ == UINT32_MAX)
		return makeError(ErrorCode::MissingFeature, info_.name + " has no graphics+compute queue");
	info_.timestamp_valid_bits = families[queue_family_].timestampValidBits;

	// Extensions.
	uint32_t ext_count = 0;
	vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ext_count, nullptr);
	std::vector<VkExtensionProperties> exts(ext_count);
	vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ext_count, exts.data());
	const bool has_mesh = hasExtension(exts, VK_EXT_MESH_SHADER_EXTENSION_NAME);
	features_.push_descriptor = hasExtension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
	features_.memory_budget = hasExtension(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

	// Features available.
	FeatureChain have;
	have.link(has_mesh);
	vkGetPhysicalDeviceFeatures2(physical_, &have.f2);
	features_.dynamic_rendering = have.v13.dynamicRendering;
	features_.synchronization2 = have.v13.synchronization2;
	features_.maintenance4 = have.v13.maintenance4;
	features_.extended_dynamic_state = p.apiVersion >= VK_API_VERSION_1_3;
	features_.timeline_semaphore = have.v12.timelineSemaphore;
	features_.multi_draw_indirect = have.f2.features.multiDrawIndirect;
	features_.draw_indirect_count = have.v12.drawIndirectCount;
	features_.draw_indirect_first_instance = have.f2.features.drawIndirectFirstInstance;
	features_.shader_draw_parameters = have.v11.shaderDrawParameters;
	features_.shader_float64 = have.f2.features.shaderFloat64;
	features_.shader_int64 = have.f2.features.shaderInt64;
	features_.shader_int16 = have.f2.features.shaderInt16;
	features_.buffer_device_address = have.v12.bufferDeviceAddress;
	features_.scalar_block_layout = have.v12.scalarBlockLayout;
	features_.descriptor_indexing =
	    have.v12.runtimeDescriptorArray && have.v12.shaderSampledImageArrayNonUniformIndexing &&
	    have.v12.descriptorBindingPartiallyBound && have.v12.descriptorBindingSampledImageUpdateAfterBind &&
	    have.v12.descriptorBindingUpdateUnusedWhilePending && have.v12.descriptorBindingVariableDescriptorCount &&
	    info_.max_bindless_textures > 0;
	if (!features_.descriptor_indexing)
		info_.max_bindless_textures = 0;
	features_.mesh_shader = has_mesh && have.mesh.meshShader && have.mesh.taskShader;
	features_.timestamps = l.timestampComputeAndGraphics && info_.timestamp_valid_bits > 0;
	info_.gpu_timestamps_reliable = features_.timestamps && !info_.is_cpu;

	const std::pair<bool, const char*> required[] = {
	    {features_.dynamic_rendering, "dynamicRendering"},
	    {features_.synchronization2, "synchronization2"},
	    {features_.maintenance4, "maintenance4"},
	    {features_.extended_dynamic_state, "extended dynamic state (Vulkan 1.3)"},
	    {features_.timeline_semaphore, "timelineSemaphore"},
	    {features_.multi_draw_indirect, "multiDrawIndirect"},
	    {features_.draw_indirect_count, "drawIndirectCount"},
	    {features_.draw_indirect_first_instance, "drawIndirectFirstInstance"},
	    {features_.shader_draw_parameters, "shaderDrawParameters"},
	    {features_.push_descriptor, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME},
	};
	for (const auto& [present, name] : required)
		if (!present)
			return makeError(ErrorCode::MissingFeature, info_.name + " lacks the required feature " + name);

	// Features enabled: the required ones plus the optional ones that are present.
	FeatureChain want;
	want.link(features_.mesh_shader);
	want.f2.features.multiDrawIndirect = VK_TRUE;
	want.f2.features.drawIndirectFirstInstance = VK_TRUE;
	want.f2.features.shaderFloat64 = have.f2.features.shaderFloat64;
	want.f2.features.shaderInt64 = have.f2.features.shaderInt64;
	want.f2.features.shaderInt16 = have.f2.features.shaderInt16;
	want.f2.features.samplerAnisotropy = have.f2.features.samplerAnisotropy;
	want.f2.features.fillModeNonSolid = have.f2.features.fillModeNonSolid;
	want.f2.features.depthClamp = have.f2.features.depthClamp;
	want.f2.features.depthBiasClamp = have.f2.features.depthBiasClamp;
	want.f2.features.independentBlend = have.f2.features.independentBlend;
	want.f2.features.fragmentStoresAndAtomics = have.f2.features.fragmentStoresAndAtomics;
	want.f2.features.vertexPipelineStoresAndAtomics = have.f2.features.vertexPipelineStoresAndAtomics;
	want.f2.features.shaderStorageImageWriteWithoutFormat = have.f2.features.shaderStorageImageWriteWithoutFormat;
	want.v11.shaderDrawParameters = VK_TRUE;
	want.v11.storageBuffer16BitAccess = have.v11.storageBuffer16BitAccess;
	want.v12.drawIndirectCount = VK_TRUE;
	want.v12.timelineSemaphore = VK_TRUE;
	want.v12.bufferDeviceAddress = have.v12.bufferDeviceAddress;
	want.v12.scalarBlockLayout = have.v12.scalarBlockLayout;
	want.v12.storageBuffer8BitAccess = have.v12.storageBuffer8BitAccess;
	want.v12.shaderInt8 = have.v12.shaderInt8;
	want.v12.hostQueryReset = have.v12.hostQueryReset;
	if (features_.descriptor_indexing)
	{
		want.v12.runtimeDescriptorArray = VK_TRUE;
		want.v12.shaderSampledImageArrayNonUniformIndexing = VK_TRUE;
		want.v12.descriptorBindingPartiallyBound = VK_TRUE;
		want.v12.descriptorBindingSampledImageUpdateAfterBind = VK_TRUE;
		want.v12.descriptorBindingUpdateUnusedWhilePending = VK_TRUE;
		want.v12.descriptorBindingVariableDescriptorCount = VK_TRUE;
	}
	want.v13.dynamicRendering = VK_TRUE;
	want.v13.synchronization2 = VK_TRUE;
	// shaderc emits LocalSizeId for compute shaders when targeting Vulkan 1.3; that needs maintenance4
	// (VUID-RuntimeSpirv-LocalSizeId-06434).
	want.v13.maintenance4 = VK_TRUE;
	if (features_.mesh_shader)
	{
		want.mesh.meshShader = VK_TRUE;
		want.mesh.taskShader = VK_TRUE;
	}

	std::vector<const char*> enabled_exts = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
	if (features_.mesh_shader)
		enabled_exts.push_back(VK_EXT_MESH_SHADER_EXTENSION_NAME);
	if (features_.memory_budget)
		enabled_exts.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

	const float priority = 1.0f;
	VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
	queue_info.queueFamilyIndex = queue_family_;
	queue_info.queueCount = 1;
	queue_info.pQueuePriorities = &priority;

	VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
	info.pNext = &want.f2;
	info.queueCreateInfoCount = 1;
	info.pQueueCreateInfos = &queue_info;
	info.enabledExtensionCount = uint32_t(enabled_exts.size());
	info.ppEnabledExtensionNames = enabled_exts.data();
	QUOKKA_VK_TRY(vkCreateDevice(physical_, &info, nullptr, &device_));
	vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

	cmdPushDescriptorSet =
	    reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
	if (!cmdPushDescriptorSet)
		return makeError(ErrorCode::MissingFeature, "vkCmdPushDescriptorSetKHR is not available");
	if (features_.mesh_shader)
	{
		cmdDrawMeshTasks =
		    reinterpret_cast<PFN_vkCmdDrawMeshTasksEXT>(vkGetDeviceProcAddr(device_, "vkCmdDrawMeshTasksEXT"));
		if (!cmdDrawMeshTasks)
			features_.mesh_shader = false; // advertised but not loadable: fall back rather than fail
	}

	VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
	pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
	pool_info.queueFamilyIndex = queue_family_;
	QUOKKA_VK_TRY(vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_));

	VkSemaphoreTypeCreateInfo type_info{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
	type_info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
	type_info.initialValue = 0;
	VkSemaphoreCreateInfo sem_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
	sem_info.pNext = &type_info;
	QUOKKA_VK_TRY(vkCreateSemaphore(device_, &sem_info, nullptr, &timeline_));
	setDebugName(VK_OBJECT_TYPE_SEMAPHORE, uint64_t(timeline_), "quokka.timeline");
	if (features_.descriptor_indexing)
	{
		const VkDescriptorBindingFlags flags =
		    VK_DESCRIPTOR_BINDING_PARTIALLY_BOUND_BIT | VK_DESCRIPTOR_BINDING_UPDATE_AFTER_BIND_BIT |
		    VK_DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING_BIT | VK_DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT_BIT;
		VkDescriptorSetLayoutBindingFlagsCreateInfo binding_flags{
		    VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO};
		binding_flags.bindingCount = 1;
		binding_flags.pBindingFlags = &flags;
		const VkDescriptorSetLayoutBinding binding{0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
		                                           info_.max_bindless_textures, VK_SHADER_STAGE_ALL, nullptr};
		VkDescriptorSetLayoutCreateInfo layout{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
		layout.pNext = &binding_flags;
		layout.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_UPDATE_AFTER_BIND_POOL_BIT;
		layout.bindingCount = 1;
		layout.pBindings = &binding;
		QUOKKA_VK_TRY(vkCreateDescriptorSetLayout(device_, &layout, nullptr, &bindless_layout_));
	}
	return {};
}

} // namespace quokka::gpu
