// quokka/gpu/device.hpp — the Vulkan device: instance, physical-device selection, features, the queue, submission
// with a timeline semaphore, deferred destruction and the validation messenger.
//
// `Device` is the only factory of GPU objects. It is owned by one thread: every method is called from the
// thread that created it unless a method says otherwise. Every object it creates must be destroyed before it; objects
// are destroyed *deferred*: their Vk handles are released once every submission made before the release completed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <quokka/gpu/vk.hpp>

namespace quokka::base
{
class WorkQueue;
}

namespace quokka::gpu
{

/// The most textures a bindless table may hold on any device (DeviceInfo::max_bindless_textures is at most this).
inline constexpr uint32_t kMaxBindlessTextures = 1u << 20;
/// Descriptors a pipeline with a bindless set may have besides it (the device's limits count all of a layout's sets).
inline constexpr uint32_t kBindlessReserve = 64;

class Buffer;
class Image;
class Sampler;
struct SamplerDesc;
class Pipeline;
class ShaderCompiler;
class CommandList;
struct BufferDesc;
struct ImageDesc;
struct ComputePipelineDesc;
struct GraphicsPipelineDesc;
using BufferHandle = std::shared_ptr<Buffer>;
using ImageHandle = std::shared_ptr<Image>;
using SamplerHandle = std::shared_ptr<Sampler>;
using PipelineHandle = std::shared_ptr<Pipeline>;

/// Which physical device to pick. `Auto` prefers a discrete GPU, then an integrated or virtual GPU, then a CPU
/// implementation (lavapipe). `Gpu` accepts only discrete/integrated/virtual GPUs, `Cpu` only CPU implementations.
enum class DeviceKind
{
	Auto,
	Gpu,
	Cpu,
};

/// Parses "auto" | "gpu" | "cpu" (case-sensitive). Anything else is an InvalidArgument error naming the choices.
Result<DeviceKind> parseDeviceKind(std::string_view text);

/// "auto" | "gpu" | "cpu".
const char* deviceKindName(DeviceKind kind);

/// How to create a Device. Defaults are what an application wants; tests set `validation`.
struct DeviceDesc
{
	DeviceKind kind = DeviceKind::Auto;
	/// Enable VK_LAYER_KHRONOS_validation and a debug-utils messenger that counts ERROR messages.
	bool validation = false;
	/// Also enable synchronization validation (slower; implies `validation`).
	bool sync_validation = false;
	/// Directory for the persisted VkPipelineCache and the shader compile cache; empty = memory only.
	std::string cache_dir;
	/// Echo every validation message to stderr as it arrives (errors are always kept in validationMessages()).
	bool print_validation = true;

	/// Reads QUOKKA_DEVICE (auto|gpu|cpu), QUOKKA_VALIDATION (0|1|sync) and QUOKKA_CACHE_DIR. A malformed
	/// QUOKKA_DEVICE or QUOKKA_VALIDATION is reported by Device::create, not silently ignored.
	static DeviceDesc fromEnvironment();
	/// The first problem of the environment's settings ("" when none): what create() fails with.
	std::string environmentError() const;

	/// Set by fromEnvironment() when QUOKKA_DEVICE holds an unknown value; create() fails with it.
	std::string invalid_kind_text;
	/// Set by fromEnvironment() when QUOKKA_VALIDATION is not 0, 1 or sync; create() fails with it.
	std::string invalid_validation_text;
};

/// Features the later modules need. `required` ones are checked at creation; the rest are enabled when present.
struct DeviceFeatures
{
	// Required (creation fails with MissingFeature naming the first one absent).
	bool dynamic_rendering = false;
	bool synchronization2 = false;
	bool extended_dynamic_state = false; ///< core in 1.3
	bool timeline_semaphore = false;
	bool maintenance4 = false;
	bool multi_draw_indirect = false;
	bool draw_indirect_count = false;
	bool draw_indirect_first_instance = false;
	bool shader_draw_parameters = false;
	bool push_descriptor = false; ///< VK_KHR_push_descriptor
	// Optional.
	bool shader_float64 = false;
	bool shader_int64 = false;
	bool shader_int16 = false;
	bool buffer_device_address = false;
	bool scalar_block_layout = false;
	/// Bindless textures (BindlessTable): runtime arrays, non-uniform indexing of sampled images, partially bound,
	/// update-after-bind and update-unused-while-pending bindings of sampled images, variable descriptor counts.
	bool descriptor_indexing = false;
	bool mesh_shader = false;   ///< VK_EXT_mesh_shader (mesh + task)
	bool timestamps = false;    ///< timestampComputeAndGraphics and timestampValidBits > 0
	bool memory_budget = false; ///< VK_EXT_memory_budget: memoryBudget() reports what the driver allows now
};

/// Device-local memory the application may still use.
struct MemoryBudget
{
	uint64_t device_local_bytes = 0; ///< size of the device-local heaps
	/// What is left for this process: Σ (heap budget − heap usage) with VK_EXT_memory_budget, else the heaps' size
	/// minus what this device has allocated.
	uint64_t available_bytes = 0;
	bool from_driver = false; ///< the figure comes from VK_EXT_memory_budget
};

/// What `quokka info` prints: identity and the limits that shape the design.
struct DeviceInfo
{
	std::string name;
	std::string type;        ///< "discrete-gpu" | "integrated-gpu" | "virtual-gpu" | "cpu" | "other"
	bool is_cpu = false;     ///< VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe)
	std::string driver_name; ///< VkPhysicalDeviceDriverProperties::driverName
	std::string driver_info;
	uint32_t api_version = 0;
	uint32_t driver_version = 0;
	uint32_t vendor_id = 0;
	uint32_t device_id = 0;
	uint64_t max_storage_buffer_range = 0;
	uint32_t max_push_constants_size = 0;
	uint32_t max_compute_work_group_count[3] = {};
	uint32_t max_draw_indirect_count = 0;
	uint32_t max_image_dimension_2d = 0;
	uint32_t max_memory_allocation_count = 0;
	uint32_t max_push_descriptors = 0;
	/// Textures one bindless table may hold (the update-after-bind limits, at most kMaxBindlessTextures; 0 without
	/// DeviceFeatures::descriptor_indexing).
	uint32_t max_bindless_textures = 0;
	VkSampleCountFlags framebuffer_color_sample_counts = 0;
	float timestamp_period_ns = 0.0f;
	uint32_t timestamp_valid_bits = 0;
	/// GPU timestamps are trusted only on real GPUs; lavapipe's are not, so callers time with
	/// the wall clock there and say so.
	bool gpu_timestamps_reliable = false;
	uint64_t device_local_bytes = 0; ///< sum of DEVICE_LOCAL heaps
	/// The largest device-local heap with a memory type that is also host-visible and coherent (MemoryDomain::
	/// DeviceMapped): device memory the host can write directly (all of it on unified-memory devices and lavapipe, the
	/// whole VRAM with resizable BAR, typically 256 MiB without it, 0 where none is).
	uint64_t host_visible_device_local_bytes = 0;

	/// "1.3.230" style.
	std::string apiVersionString() const;
};

/// Live GPU objects and bytes, for leak checks and diagnostics.
struct DeviceMemoryStats
{
	uint64_t live_buffers = 0;
	uint64_t live_images = 0;
	uint64_t buffer_bytes = 0;
	uint64_t image_bytes = 0;
	uint64_t pending_destructions = 0;
	/// Buffers created since the device was, and their bytes (a frame's difference: what it allocated — a driver
	/// allocation of host-visible memory costs milliseconds per hundred MiB on some drivers)
	uint64_t buffers_created = 0;
	uint64_t buffer_bytes_created = 0;
};

/// The Vulkan device. Create with Device::create; destroy after every object it created.
class Device
{
public:
	/// Creates the instance, picks a physical device per `desc.kind`, creates the logical device with one
	/// graphics+compute queue. Errors: NoDriver (no loader/ICD or no physical device), NoDevice (none of the requested
	/// kind), MissingFeature (a required feature or the validation layer is absent), InvalidArgument (bad kind text).
	static Result<std::unique_ptr<Device>> create(const DeviceDesc& desc);

	~Device();
	Device(const Device&) = delete;
	Device& operator=(const Device&) = delete;

	const DeviceInfo& info() const { return info_; }
	const DeviceFeatures& features() const { return features_; }
	const DeviceDesc& desc() const { return desc_; }

	VkInstance instance() const { return instance_; }
	VkPhysicalDevice physicalDevice() const { return physical_; }
	VkDevice vk() const { return device_; }
	VkQueue queue() const { return queue_; }
	uint32_t queueFamily() const { return queue_family_; }
	VkPipelineCache pipelineCache() const { return pipeline_cache_; }
	/// The one layout of bindless texture sets (with DeviceFeatures::descriptor_indexing, else VK_NULL_HANDLE):
	/// binding 0, an array of DeviceInfo::max_bindless_textures combined image samplers visible to every stage,
	/// partially bound, update-after-bind, updatable while unused by pending work, of variable count. A pipeline whose
	/// shaders declare a runtime array of samplers (`layout(set = N, binding = 0) uniform sampler2D t[];`, N > 0)
	/// gets this layout for set N, so every BindlessTable's set binds to every such pipeline.
	VkDescriptorSetLayout bindlessLayout() const { return bindless_layout_; }

	// ---- objects -------------------------------------------------------------------------------------------------

	/// Creates a buffer (one dedicated allocation; sub-allocation is the job of the arenas above). May be called from
	/// another thread than the one recording (the device's counters are locked). Errors: InvalidArgument for size 0 or
	/// above the device limits, OutOfMemory when the driver refuses.
	Result<BufferHandle> createBuffer(const BufferDesc& desc);
	/// Creates a 2D image (optionally with a mip chain) and one view over all levels. Errors as createBuffer.
	Result<ImageHandle> createImage(const ImageDesc& desc);
	/// Creates a sampler (filtering, addressing, optional linear mipmapping and anisotropy).
	Result<SamplerHandle> createSampler(const SamplerDesc& desc);
	/// Builds a compute pipeline; descriptor and push-constant layouts come from SPIR-V reflection.
	Result<PipelineHandle> createComputePipeline(const ComputePipelineDesc& desc);
	/// Builds a graphics pipeline for dynamic rendering; layouts come from reflection of both stages.
	Result<PipelineHandle> createGraphicsPipeline(const GraphicsPipelineDesc& desc);

	/// The run-time GLSL compiler with its content-hash cache (disk directory = desc.cache_dir/shaders). Thread-safe.
	ShaderCompiler& shaderCompiler() { return *shader_compiler_; }

	// ---- commands and submission ---------------------------------------------------------------------------------

	/// Returns a recording command buffer (recycled once its submission completed).
	Result<CommandList> beginCommands();
	/// Ends and submits `list`; returns the timeline value that signals when it completed.
	Result<uint64_t> submit(CommandList&& list);
	/// Blocks until the timeline reaches `value` (or `timeout_ns` passes: an Error naming the timeout).
	Result<void> wait(uint64_t value, uint64_t timeout_ns = UINT64_MAX);
	/// submit() + wait().
	Result<void> submitAndWait(CommandList&& list);
	/// Waits for every submission.
	Result<void> waitIdle();
	/// Highest completed timeline value (polls the semaphore and runs due retirements).
	uint64_t completedValue();
	/// Timeline value of the most recent submit (0 before the first).
	uint64_t lastSubmittedValue() const { return last_submitted_; }
	/// Runs `fn` once every submission up to and including `value` completed (immediately when it already has).
	/// Used for deferred destruction and for recycling staging memory.
	void retireAfter(uint64_t value, std::function<void()> fn);
	/// Queues `fn` to run once all work submitted so far completed (deferred destruction).
	void destroyLater(std::function<void()> fn) { retireAfter(last_submitted_, std::move(fn)); }
	/// destroyLater() for a destruction that is slow itself (freeing hundreds of MiB of device memory takes
	/// milliseconds): once due, `fn` runs on a background thread, not in the frame that dropped the object. `fn` may
	/// only destroy Vulkan objects no other thread uses (Vulkan synchronises destruction per object). The device's
	/// destruction waits for it.
	void destroyOffThread(std::function<void()> fn);

	// ---- convenience transfers (each one submits and waits; for set-up, tests and tools, not per frame) ----------

	/// Copies `size` bytes of `data` into `dst` at `offset` through a staging buffer.
	Result<void> uploadBuffer(const Buffer& dst, uint64_t offset, const void* data, uint64_t size);
	/// Reads `size` bytes of `src` at `offset` back to the host.
	Result<std::vector<std::byte>> readBuffer(const Buffer& src, uint64_t offset, uint64_t size);

	// ---- validation ----------------------------------------------------------------------------------------------

	/// ERROR-severity validation messages since creation or the last clearValidationMessages(). Thread-safe.
	uint32_t validationErrorCount() const;
	/// The ERROR messages themselves (at most the first 64 are kept). Thread-safe.
	std::vector<std::string> validationMessages() const;
	void clearValidationMessages();
	bool validationEnabled() const { return messenger_ != VK_NULL_HANDLE; }

	// ---- diagnostics ---------------------------------------------------------------------------------------------

	DeviceMemoryStats memoryStats() const
	{
		std::lock_guard lock(stats_mutex_);
		return stats_;
	}
	/// Device-local memory still available (VK_EXT_memory_budget where the device has it). For estimates before
	/// large allocations: a request above it will fail or page.
	MemoryBudget memoryBudget() const;
	/// Writes the VkPipelineCache to desc.cache_dir (no-op without one). Also done by the destructor.
	Result<void> savePipelineCache();
	/// Attaches a debug name (VK_EXT_debug_utils) when validation is on; no-op otherwise.
	void setDebugName(VkObjectType type, uint64_t handle, const char* name);

	/// Picks a memory type for `type_bits` with `required` flags, preferring `preferred`; UINT32_MAX when none.
	uint32_t findMemoryType(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

	// Extension entry points resolved at creation.
	PFN_vkCmdPushDescriptorSetKHR cmdPushDescriptorSet = nullptr;
	/// vkCmdDrawMeshTasksEXT; null unless features().mesh_shader.
	PFN_vkCmdDrawMeshTasksEXT cmdDrawMeshTasks = nullptr;

private:
	friend class Buffer;      // (account)
	friend class Image;       // (account)
	friend class CommandList; // (recycleUnsubmitted)
	/// Memory statistics: a buffer or image of `bytes` made (count 1) or destroyed (count -1).
	void account(bool buffer, int64_t count, int64_t bytes);
	/// Returns the (reset) command buffer of a CommandList dropped without submit to the free list.
	void recycleUnsubmitted(VkCommandBuffer cmd) { free_command_buffers_.push_back(cmd); }

	Device() = default;
	Result<void> init(const DeviceDesc& desc);
	Result<void> createInstance();
	Result<void> pickPhysicalDevice();
	Result<void> createLogicalDevice();
	void loadPipelineCache();
	void collect(uint64_t completed);

	struct Retirement
	{
		uint64_t value;
		std::function<void()> fn;
	};

	DeviceDesc desc_;
	DeviceInfo info_;
	DeviceFeatures features_;
	VkInstance instance_ = VK_NULL_HANDLE;
	VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
	VkPhysicalDevice physical_ = VK_NULL_HANDLE;
	VkDevice device_ = VK_NULL_HANDLE;
	VkQueue queue_ = VK_NULL_HANDLE;
	uint32_t queue_family_ = 0;
	VkPhysicalDeviceMemoryProperties memory_props_{};
	VkCommandPool command_pool_ = VK_NULL_HANDLE;
	std::vector<VkCommandBuffer> free_command_buffers_;
	VkSemaphore timeline_ = VK_NULL_HANDLE;
	VkDescriptorSetLayout bindless_layout_ = VK_NULL_HANDLE;
	/// Atomics, and retirements_ under retire_mutex_: a pipeline created on a worker thread (inputs::Context's
	/// background compiles) may retire objects (a failed creation's layout) from there.
	std::atomic<uint64_t> last_submitted_{0};
	std::atomic<uint64_t> last_completed_{0};
	std::mutex retire_mutex_;
	std::vector<Retirement> retirements_; // in non-decreasing `value` order
	std::once_flag reaper_once_;
	std::unique_ptr<base::WorkQueue> reaper_; ///< destroyOffThread's thread (made on first use)
	VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
	std::unique_ptr<ShaderCompiler> shader_compiler_;
	mutable std::mutex stats_mutex_; ///< buffers are made and dropped on other threads too (the heap's staging ahead)
	DeviceMemoryStats stats_;
	PFN_vkSetDebugUtilsObjectNameEXT set_object_name_ = nullptr;

	mutable std::mutex validation_mutex_;
	uint32_t validation_errors_ = 0;
	std::vector<std::string> validation_messages_;
	static VkBool32 VKAPI_PTR debugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
	                                        VkDebugUtilsMessageTypeFlagsEXT types,
	                                        const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);
};

} // namespace quokka::gpu
