// Device: creation and destruction, memory accounting, timeline submission, deferred destruction, transfers and the
// pipeline cache. The instance, the physical-device choice and the logical device are set up in device_setup.cpp.
//
// [SECTION] environment and names
// [SECTION] creation and destruction
// [SECTION] submission and retirement
// [SECTION] convenience transfers
// [SECTION] pipeline cache
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>

#include <quokka/base/work_queue.hpp>

#include <quokka/base/file_io.hpp>
#include <quokka/gpu/shader.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace quokka::gpu
{

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] environment and names
// ---------------------------------------------------------------------------------------------------------------------

Result<DeviceKind> parseDeviceKind(std::string_view text)
{
	if (text == "auto")
		return DeviceKind::Auto;
	if (text == "gpu")
		return DeviceKind::Gpu;
	if (text == "cpu")
		return DeviceKind::Cpu;
	return makeError(ErrorCode::InvalidArgument,
	                 "unknown device kind '" + std::string(text) + "' (expected auto, gpu or cpu)");
}

const char* deviceKindName(DeviceKind kind)
{
	switch (kind)
	{
	case DeviceKind::Auto:
		return "auto";
	case DeviceKind::Gpu:
		return "gpu";
	case DeviceKind::Cpu:
		return "cpu";
	}
	return "auto";
}

DeviceDesc DeviceDesc::fromEnvironment()
{
	DeviceDesc desc;
	if (const char* kind = std::getenv("QUOKKA_DEVICE"); kind && *kind)
	{
		auto parsed = parseDeviceKind(kind);
		if (parsed.ok())
			desc.kind = parsed.value();
		else
			desc.invalid_kind_text = kind;
	}
	if (const char* v = std::getenv("QUOKKA_VALIDATION"); v && *v && std::strcmp(v, "0") != 0)
	{
		if (std::strcmp(v, "1") == 0 || std::strcmp(v, "sync") == 0)
		{
			desc.validation = true;
			desc.sync_validation = std::strcmp(v, "sync") == 0;
		}
		else
			desc.invalid_validation_text = v;
	}
	if (const char* dir = std::getenv("QUOKKA_CACHE_DIR"); dir && *dir)
		desc.cache_dir = dir;
	return desc;
}

std::string DeviceDesc::environmentError() const
{
	if (!invalid_kind_text.empty())
		return "QUOKKA_DEVICE='" + invalid_kind_text + "' is not one of auto, gpu, cpu";
	if (!invalid_validation_text.empty())
		return "QUOKKA_VALIDATION='" + invalid_validation_text + "' is not one of 0, 1, sync";
	return {};
}

std::string DeviceInfo::apiVersionString() const
{
	return std::to_string(VK_API_VERSION_MAJOR(api_version)) + "." + std::to_string(VK_API_VERSION_MINOR(api_version)) +
	       "." + std::to_string(VK_API_VERSION_PATCH(api_version));
}

const char* vkResultName(VkResult result)
{
	switch (result)
	{
#define QUOKKA_CASE(x)                                                                                                 \
	case x:                                                                                                            \
		return #x;
		QUOKKA_CASE(VK_SUCCESS)
		QUOKKA_CASE(VK_NOT_READY)
		QUOKKA_CASE(VK_TIMEOUT)
		QUOKKA_CASE(VK_INCOMPLETE)
		QUOKKA_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
		QUOKKA_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
		QUOKKA_CASE(VK_ERROR_INITIALIZATION_FAILED)
		QUOKKA_CASE(VK_ERROR_DEVICE_LOST)
		QUOKKA_CASE(VK_ERROR_MEMORY_MAP_FAILED)
		QUOKKA_CASE(VK_ERROR_LAYER_NOT_PRESENT)
		QUOKKA_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
		QUOKKA_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
		QUOKKA_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
		QUOKKA_CASE(VK_ERROR_TOO_MANY_OBJECTS)
		QUOKKA_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
		QUOKKA_CASE(VK_ERROR_FRAGMENTED_POOL)
		QUOKKA_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
#undef QUOKKA_CASE
	default:
		return "VkResult(unknown)";
	}
}

Error vkError(VkResult result, const char* what)
{
	ErrorCode code = ErrorCode::Vulkan;
	if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY)
		code = ErrorCode::OutOfMemory;
	else if (result == VK_ERROR_DEVICE_LOST)
		code = ErrorCode::DeviceLost;
	else if (result == VK_ERROR_INCOMPATIBLE_DRIVER)
		code = ErrorCode::NoDriver;
	else if (result == VK_ERROR_FEATURE_NOT_PRESENT || result == VK_ERROR_EXTENSION_NOT_PRESENT ||
	         result == VK_ERROR_LAYER_NOT_PRESENT)
		code = ErrorCode::MissingFeature;
	return makeError(code, std::string(what) + " failed: " + vkResultName(result));
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] creation and destruction
// ---------------------------------------------------------------------------------------------------------------------

Result<std::unique_ptr<Device>> Device::create(const DeviceDesc& desc)
{
	if (std::string problem = desc.environmentError(); !problem.empty())
		return makeError(ErrorCode::InvalidArgument, problem);
	std::unique_ptr<Device> device(new Device());
	QUOKKA_TRY(device->init(desc));
	return device;
}

Result<void> Device::init(const DeviceDesc& desc)
{
	desc_ = desc;
	if (desc_.sync_validation)
		desc_.validation = true;
	QUOKKA_TRY(createInstance());
	QUOKKA_TRY(pickPhysicalDevice());
	QUOKKA_TRY(createLogicalDevice());
	loadPipelineCache();
	std::string shader_dir;
	if (!desc_.cache_dir.empty())
		shader_dir = (std::filesystem::path(desc_.cache_dir) / "shaders").string();
	shader_compiler_ = std::make_unique<ShaderCompiler>(shader_dir);
	return {};
}

Device::~Device()
{
	if (device_)
	{
		vkDeviceWaitIdle(device_);
		collect(UINT64_MAX);
		if (reaper_)
			reaper_->waitIdle(); // (destructions handed to it: done before the device goes)
		reaper_.reset();
		if (stats_.live_buffers || stats_.live_images)
		{
			std::fprintf(stderr, "quokka: Device destroyed with %llu live buffers (%llu bytes) and %llu live images\n",
			             (unsigned long long)stats_.live_buffers, (unsigned long long)stats_.buffer_bytes,
			             (unsigned long long)stats_.live_images);
			QUOKKA_ASSERT(false, "GPU objects outlive their Device (leak)");
		}
		(void)savePipelineCache();
		if (pipeline_cache_)
			vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
		if (!free_command_buffers_.empty())
			vkFreeCommandBuffers(device_, command_pool_, uint32_t(free_command_buffers_.size()),
			                     free_command_buffers_.data());
		vkDestroyCommandPool(device_, command_pool_, nullptr);
		vkDestroySemaphore(device_, timeline_, nullptr);
		if (bindless_layout_)
			vkDestroyDescriptorSetLayout(device_, bindless_layout_, nullptr);
		vkDestroyDevice(device_, nullptr);
	}
	if (messenger_)
	{
		auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
		    vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
		if (destroy)
			destroy(instance_, messenger_, nullptr);
	}
	if (instance_)
		vkDestroyInstance(instance_, nullptr);
}

void Device::setDebugName(VkObjectType type, uint64_t handle, const char* name)
{
	if (!set_object_name_ || !name || !*name)
		return;
	VkDebugUtilsObjectNameInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT};
	info.objectType = type;
	info.objectHandle = handle;
	info.pObjectName = name;
	set_object_name_(device_, &info);
}

uint32_t Device::findMemoryType(uint32_t type_bits, VkMemoryPropertyFlags required,
                                VkMemoryPropertyFlags preferred) const
{
	uint32_t fallback = UINT32_MAX;
	for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i)
	{
		if (!(type_bits & (1u << i)))
			continue;
		VkMemoryPropertyFlags flags = memory_props_.memoryTypes[i].propertyFlags;
		if ((flags & required) != required)
			continue;
		if ((flags & preferred) == preferred)
			return i;
		if (fallback == UINT32_MAX)
			fallback = i;
	}
	return fallback;
}

void Device::account(bool buffer, int64_t count, int64_t bytes)
{
	std::lock_guard lock(stats_mutex_);
	if (buffer)
	{
		stats_.live_buffers += uint64_t(count);
		stats_.buffer_bytes += uint64_t(bytes);
		if (count > 0)
		{
			stats_.buffers_created += uint64_t(count);
			stats_.buffer_bytes_created += uint64_t(bytes);
		}
	}
	else
	{
		stats_.live_images += uint64_t(count);
		stats_.image_bytes += uint64_t(bytes);
	}
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] submission and retirement
// ---------------------------------------------------------------------------------------------------------------------

Result<CommandList> Device::beginCommands()
{
	(void)completedValue();
	VkCommandBuffer cmd = VK_NULL_HANDLE;
	if (!free_command_buffers_.empty())
	{
		cmd = free_command_buffers_.back();
		free_command_buffers_.pop_back();
		QUOKKA_VK_TRY(vkResetCommandBuffer(cmd, 0));
	}
	else
	{
		VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
		info.commandPool = command_pool_;
		info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
		info.commandBufferCount = 1;
		QUOKKA_VK_TRY(vkAllocateCommandBuffers(device_, &info, &cmd));
	}
	VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
	VkResult result = vkBeginCommandBuffer(cmd, &begin);
	if (result != VK_SUCCESS)
	{
		free_command_buffers_.push_back(cmd);
		return vkError(result, "vkBeginCommandBuffer");
	}
	return CommandList(this, cmd);
}

Result<uint64_t> Device::submit(CommandList&& list)
{
	QUOKKA_ASSERT(list.valid() && list.device_ == this, "submit() of an empty or foreign CommandList");
	VkCommandBuffer cmd = list.cmd_;
	list.cmd_ = VK_NULL_HANDLE; // the list is consumed, whatever happens below
	list.device_ = nullptr;
	std::vector<std::shared_ptr<const void>> keep;
	std::vector<std::function<void()>> retire;
	list.releaseTo(keep, retire);

	auto recycle = [this, cmd, keep = std::move(keep), retire = std::move(retire)]() mutable
	{
		keep.clear();
		for (auto& fn : retire)
			fn();
		free_command_buffers_.push_back(cmd);
	};

	VkResult result = vkEndCommandBuffer(cmd);
	if (result != VK_SUCCESS)
	{
		vkResetCommandBuffer(cmd, 0);
		recycle();
		return vkError(result, "vkEndCommandBuffer");
	}
	const uint64_t value = last_submitted_ + 1;
	VkCommandBufferSubmitInfo cmd_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO};
	cmd_info.commandBuffer = cmd;
	VkSemaphoreSubmitInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
	signal.semaphore = timeline_;
	signal.value = value;
	signal.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
	VkSubmitInfo2 submit_info{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
	submit_info.commandBufferInfoCount = 1;
	submit_info.pCommandBufferInfos = &cmd_info;
	submit_info.signalSemaphoreInfoCount = 1;
	submit_info.pSignalSemaphoreInfos = &signal;
	result = vkQueueSubmit2(queue_, 1, &submit_info, VK_NULL_HANDLE);
	if (result != VK_SUCCESS)
	{
		vkResetCommandBuffer(cmd, 0);
		recycle();
		return vkError(result, "vkQueueSubmit2");
	}
	last_submitted_ = value;
	retireAfter(value, std::move(recycle));
	return value;
}

Result<void> Device::wait(uint64_t value, uint64_t timeout_ns)
{
	if (value > last_submitted_)
		return makeError(ErrorCode::InvalidArgument, "wait() for timeline value " + std::to_string(value) +
		                                                 " that was never submitted (last " +
		                                                 std::to_string(last_submitted_) + ")");
	if (value > last_completed_)
	{
		VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
		info.semaphoreCount = 1;
		info.pSemaphores = &timeline_;
		info.pValues = &value;
		VkResult result = vkWaitSemaphores(device_, &info, timeout_ns);
		if (result == VK_TIMEOUT)
			return makeError(ErrorCode::Vulkan,
			                 "timed out waiting for GPU work (timeline value " + std::to_string(value) + ")");
		QUOKKA_VK_TRY(result);
	}
	(void)completedValue();
	return {};
}

Result<void> Device::submitAndWait(CommandList&& list)
{
	auto value = submit(std::move(list));
	if (!value.ok())
		return value.error();
	return wait(value.value());
}

Result<void> Device::waitIdle()
{
	if (last_submitted_ == 0)
		return {};
	return wait(last_submitted_);
}

uint64_t Device::completedValue()
{
	uint64_t value = last_completed_;
	if (vkGetSemaphoreCounterValue(device_, timeline_, &value) == VK_SUCCESS && value > last_completed_)
		collect(value);
	return last_completed_;
}

void Device::retireAfter(uint64_t value, std::function<void()> fn)
{
	{
		std::lock_guard lock(retire_mutex_);
		if (value > last_completed_)
		{
			auto pos = std::upper_bound(retirements_.begin(), retirements_.end(), value,
			                            [](uint64_t v, const Retirement& r) { return v < r.value; });
			retirements_.insert(pos, Retirement{value, std::move(fn)});
			stats_.pending_destructions = retirements_.size();
			return;
		}
	}
	fn();
}

void Device::destroyOffThread(std::function<void()> fn)
{
	std::call_once(reaper_once_, [this] { reaper_ = std::make_unique<base::WorkQueue>(1); });
	destroyLater([this, fn = std::move(fn)]() mutable { reaper_->submit(std::move(fn)); });
}

void Device::collect(uint64_t completed)
{
	std::vector<Retirement> due;
	{
		std::lock_guard lock(retire_mutex_);
		if (completed != UINT64_MAX)
			last_completed_ = std::max(last_completed_.load(), completed);
		else
			last_completed_ = last_submitted_.load();
		// Move the due prefix out first: callbacks may release objects, which queues (and, being due, runs) more.
		auto end = std::upper_bound(retirements_.begin(), retirements_.end(), last_completed_.load(),
		                            [](uint64_t v, const Retirement& r) { return v < r.value; });
		due.assign(std::make_move_iterator(retirements_.begin()), std::make_move_iterator(end));
		retirements_.erase(retirements_.begin(), end);
	}
	for (Retirement& r : due)
		r.fn();
	std::lock_guard lock(retire_mutex_);
	stats_.pending_destructions = retirements_.size();
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] convenience transfers
// ---------------------------------------------------------------------------------------------------------------------

Result<void> Device::uploadBuffer(const Buffer& dst, uint64_t offset, const void* data, uint64_t size)
{
	if (size == 0)
		return {};
	if (offset + size > dst.size() || offset + size < offset)
		return makeError(ErrorCode::InvalidArgument, "uploadBuffer: range [" + std::to_string(offset) + ", +" +
		                                                 std::to_string(size) + ") is outside '" + dst.name() + "' (" +
		                                                 std::to_string(dst.size()) + " bytes)");
	auto staging = createBuffer({size, BufferUsage::TransferSrc, MemoryDomain::Upload, "quokka.upload"});
	if (!staging.ok())
		return staging.error();
	std::memcpy(staging.value()->mapped(), data, size);
	staging.value()->flush();
	auto list = beginCommands();
	if (!list.ok())
		return list.error();
	list->memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	                    VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT, VK_PIPELINE_STAGE_2_COPY_BIT,
	                    VK_ACCESS_2_TRANSFER_WRITE_BIT);
	copyBuffer(list->vk(), *staging.value(), 0, dst, offset, size);
	list->memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
	                    VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	                    VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
	list->keepAlive(staging.value());
	return submitAndWait(std::move(list.value()));
}

Result<std::vector<std::byte>> Device::readBuffer(const Buffer& src, uint64_t offset, uint64_t size)
{
	if (offset + size > src.size() || offset + size < offset)
		return makeError(ErrorCode::InvalidArgument, "readBuffer: range [" + std::to_string(offset) + ", +" +
		                                                 std::to_string(size) + ") is outside '" + src.name() + "' (" +
		                                                 std::to_string(src.size()) + " bytes)");
	std::vector<std::byte> out(size);
	if (size == 0)
		return out;
	auto readback = createBuffer({size, BufferUsage::TransferDst, MemoryDomain::Readback, "quokka.readback"});
	if (!readback.ok())
		return readback.error();
	auto list = beginCommands();
	if (!list.ok())
		return list.error();
	list->memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
	                    VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
	copyBuffer(list->vk(), src, offset, *readback.value(), 0, size);
	list->memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT,
	                    VK_ACCESS_2_HOST_READ_BIT);
	QUOKKA_TRY(submitAndWait(std::move(list.value())));
	readback.value()->invalidate();
	std::memcpy(out.data(), readback.value()->mapped(), size);
	return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] pipeline cache
// ---------------------------------------------------------------------------------------------------------------------

namespace
{
std::filesystem::path pipelineCachePath(const std::string& dir)
{
	return std::filesystem::path(dir) / "pipeline_cache.bin";
}
} // namespace

void Device::loadPipelineCache()
{
	std::vector<char> data;
	if (!desc_.cache_dir.empty())
	{
		std::ifstream in(pipelineCachePath(desc_.cache_dir), std::ios::binary);
		if (in)
			data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
		// Validate the header ourselves (VkPipelineCacheHeaderVersionOne): a cache from another driver or device is
		// dropped rather than handed to a driver that might not check it.
		VkPhysicalDeviceProperties props;
		vkGetPhysicalDeviceProperties(physical_, &props);
		VkPipelineCacheHeaderVersionOne header{};
		if (data.size() < sizeof(header))
			data.clear();
		else
		{
			std::memcpy(&header, data.data(), sizeof(header));
			if (header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || header.vendorID != props.vendorID ||
			    header.deviceID != props.deviceID ||
			    std::memcmp(header.pipelineCacheUUID, props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
				data.clear();
		}
	}
	VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
	info.initialDataSize = data.size();
	info.pInitialData = data.empty() ? nullptr : data.data();
	if (vkCreatePipelineCache(device_, &info, nullptr, &pipeline_cache_) != VK_SUCCESS)
	{
		info.initialDataSize = 0;
		info.pInitialData = nullptr;
		QUOKKA_VK_CHECK(vkCreatePipelineCache(device_, &info, nullptr, &pipeline_cache_));
	}
}

MemoryBudget Device::memoryBudget() const
{
	MemoryBudget out;
	out.device_local_bytes = info_.device_local_bytes;
	if (features_.memory_budget)
	{
		VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
		    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
		VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
		props.pNext = &budget;
		vkGetPhysicalDeviceMemoryProperties2(physical_, &props);
		for (uint32_t i = 0; i < props.memoryProperties.memoryHeapCount; ++i)
			if (props.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
				out.available_bytes +=
				    budget.heapBudget[i] > budget.heapUsage[i] ? budget.heapBudget[i] - budget.heapUsage[i] : 0;
		out.from_driver = true;
		return out;
	}
	const DeviceMemoryStats stats = memoryStats();
	const uint64_t used = stats.buffer_bytes + stats.image_bytes;
	out.available_bytes = out.device_local_bytes > used ? out.device_local_bytes - used : 0;
	return out;
}

Result<void> Device::savePipelineCache()
{
	if (desc_.cache_dir.empty() || !pipeline_cache_)
		return {};
	size_t size = 0;
	QUOKKA_VK_TRY(vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr));
	std::vector<char> data(size);
	QUOKKA_VK_TRY(vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()));
	std::error_code ec;
	std::filesystem::create_directories(desc_.cache_dir, ec);
	// A temporary file per process, then a rename: concurrent runs sharing the cache never see a torn file.
	return writeFileAtomically(pipelineCachePath(desc_.cache_dir).string(),
	                           std::span(reinterpret_cast<const uint8_t*>(data.data()), size));
}

} // namespace quokka::gpu
