// quokka/inputs/context.hpp — the device-level caches of the classic (per-object) render path.
//
// One Context serves every ScenePass of a runtime: compiled effects (fx::EffectCompiler), graphics pipelines keyed by
// (effect, framebuffer signature, pipeline-state *values* without the dynamic parts, vertex layout), samplers by
// SamplerState, and the GPU copies of adaptive buffers and textures interned by the identity of their aval — a buffer
// shared by 1,000 objects is uploaded once, on change, into the same range when the new size fits. Buffer data and
// uniform blocks are sub-allocated from a few large arenas (one VkDeviceMemory per page, not per object); freed ranges
// are reused only after the frames that may read them completed. Every upload of a frame goes through one staging
// ring: one vkCmdCopyBuffer per arena page.
//
// Per frame: ScenePass::update() for each pass, then Context::upload(list) (outside a render pass), then
// ScenePass::encode() inside it. Owner thread only (adaptive values).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <quokka/adaptive/core.hpp>
#include <quokka/adaptive/resource.hpp>
#include <quokka/base/dirty_runs.hpp>
#include <quokka/base/offset_allocator.hpp>
#include <quokka/base/result.hpp>
#include <quokka/base/work_queue.hpp>
#include <quokka/fx/compile.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/staging.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::inputs
{

/// A sub-allocator of GPU buffer memory: pages of `page_bytes` (larger requests get a page of their own), each managed
/// by an OffsetAllocator in units of `unit` bytes (so every range is `unit`-aligned). Frees are deferred until the
/// work submitted so far completed. validate() checks every page's allocator (debug builds and tests).
class BufferArena
{
public:
	struct Range
	{
		gpu::BufferHandle buffer;
		uint64_t offset = 0; ///< bytes into buffer
		uint64_t size = 0;   ///< bytes reserved (≥ the request, a multiple of the unit)
		uint32_t page = 0;
		Allocation allocation;
		bool valid() const { return buffer != nullptr; }
	};

	BufferArena(gpu::Device& device, gpu::BufferUsage usage, uint32_t unit, uint64_t page_bytes, std::string name);
	~BufferArena();
	BufferArena(const BufferArena&) = delete;
	BufferArena& operator=(const BufferArena&) = delete;

	/// Reserves at least `bytes` (> 0). Errors: OutOfMemory.
	Result<Range> allocate(uint64_t bytes);
	/// Returns `range` once the work submitted so far completed; resets `range`. Invalid ranges are ignored.
	void release(Range& range);
	/// Checks every page's allocator invariants; returns the first violation.
	Result<void> validate() const;
	uint64_t reservedBytes() const; ///< bytes of live ranges
	uint64_t pageBytes() const;     ///< bytes of GPU buffers held
	uint32_t pageCount() const;

private:
	struct Page
	{
		gpu::BufferHandle buffer;
		OffsetAllocator allocator;
		bool dedicated = false;
	};
	struct State
	{
		std::vector<std::unique_ptr<Page>> pages;
		uint64_t reserved = 0;
	};
	gpu::Device* device_;
	gpu::BufferUsage usage_;
	uint32_t unit_;
	uint64_t page_bytes_;
	std::string name_;
	std::shared_ptr<State> state_; // shared with deferred frees, which skip it once the arena is gone
};

/// Cumulative counters of a Context (tests and the frame summary take differences).
struct ContextStats
{
	uint64_t pipelines_created = 0;
	uint64_t pipeline_cache_hits = 0;
	uint64_t buffer_uploads = 0;  ///< adaptive buffers written (first upload or change)
	uint64_t texture_uploads = 0; ///< textures written
	uint64_t texture_images = 0;  ///< texture images created (a change of size or format needs a new one)
	uint64_t upload_bytes = 0;    ///< bytes of buffer and texture uploads
	uint64_t buffer_reallocations = 0;
	uint64_t buffer_resources = 0; ///< GPU buffer resources created (interned adaptive buffers)
	uint64_t uniform_blocks = 0;   ///< uniform blocks written (each object's block counts once per frame it changed)
	uint64_t uniform_runs = 0;     ///< staging writes they were coalesced into
};

class BufferResource;
class TextureResource;

/// The pipeline-relevant description of one draw; built by ScenePass, interned by Context::pipeline().
struct PipelineRequest
{
	fx::CompiledEffectPtr effect;
	std::vector<VkVertexInputBindingDescription> bindings;
	std::vector<VkVertexInputAttributeDescription> attributes;
	VkPrimitiveTopology topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
	std::vector<VkFormat> color_formats;
	std::vector<VkPipelineColorBlendAttachmentState> blend;
	VkFormat depth_format = VK_FORMAT_UNDEFINED;
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;
	bool alpha_to_coverage = false;
	bool depth_clamp = false;
};

/// A cached pipeline and its creation serial (a deterministic sort key). With background pipelines
/// (Context::setBackgroundPipelines) an entry is handed out before its pipeline exists: a renderer draws with it only
/// once ready() — until then the draws that need it wait (are skipped, and counted), and the frame does not block.
struct PipelineEntry
{
	gpu::PipelineHandle pipeline; ///< set once ready() (never changes after)
	uint64_t serial = 0;
	/// The pipeline exists (always true for entries made in the foreground).
	bool ready() const { return state.load(std::memory_order_acquire) == kReady; }

	static constexpr uint8_t kPending = 0, kReady = 1, kFailed = 2;
	std::atomic<uint8_t> state{kReady};
	Error error; ///< kFailed: why (written before the state)
};

/// A renderer's own background work — a compute kernel it compiles (the heap's derive, chain and route kernels) —
/// published like a PipelineEntry: the worker writes what the job makes (in the object that holds the job), then the
/// state with release; the owner reads it once ready() (acquire). Held by shared_ptr: the worker's hold keeps it
/// alive when its owner goes first.
struct BackgroundJob
{
	std::atomic<uint8_t> state{PipelineEntry::kPending};
	Error error; ///< kFailed: why (written before the state)
	bool ready() const { return state.load(std::memory_order_acquire) == PipelineEntry::kReady; }
	bool failed() const { return state.load(std::memory_order_acquire) == PipelineEntry::kFailed; }
	bool pending() const { return state.load(std::memory_order_acquire) == PipelineEntry::kPending; }
};

class Context
{
public:
	static Result<std::unique_ptr<Context>> create(gpu::Device& device);
	~Context();
	Context(const Context&) = delete;
	Context& operator=(const Context&) = delete;

	gpu::Device& device() { return *device_; }
	fx::EffectCompiler& effects() { return effects_; }
	gpu::StagingRing& staging() { return staging_; }
	BufferArena& uniformArena() { return uniform_arena_; }

	/// The effect `object` is drawn with: its own, or — when per-instance views supply uniforms it reads
	/// (perInstanceUniforms) — its fx::instanceUniforms rewrite, cached by the effect's id, those names and the names
	/// of the uniforms the object supplies. The pointer stays valid while `object` and the context live. Errors:
	/// InvalidArgument naming the object (a bool uniform supplied per instance).
	Result<const fx::Effect*> objectEffect(const scene::RenderObject& object);

	/// The pipeline for `request`, created on first use — at once, or with background pipelines on a worker thread
	/// (the entry is returned pending; see PipelineEntry::ready()). Errors as Device::createGraphicsPipeline (in the
	/// background: reported by pipelineErrors() and waitPipelines()).
	Result<const PipelineEntry*> pipeline(const PipelineRequest& request);

	/// `effect` compiled for `outputs` as `path` (through effects(), cached) — at once, or with background pipelines
	/// on a worker thread: null until ready (the renderer leaves the object out and looks again once compilesDone()
	/// changed). Errors: as EffectCompiler::compile (in the background: once the compile failed, and from
	/// pipelineErrors()).
	Result<fx::CompiledEffectPtr> compiledEffect(const fx::Effect& effect, const fx::FragmentOutputs& outputs,
	                                             fx::PathVariant path = fx::PathVariant::Classic);

	/// Background pipelines: effects are compiled (compiledEffect) and pipelines created (pipeline) on worker threads,
	/// the pipelines through the device's VkPipelineCache, instead of inside the frame — so a frame never blocks on a
	/// compile. An object whose effect or pipeline is not ready is left out of the frame (counted) and drawn from the
	/// first frame after it is. Off by default (every frame complete, as offline renders and tests expect); turning it
	/// off waits for the outstanding work.
	void setBackgroundPipelines(bool on);
	bool backgroundPipelines() const { return workers_ != nullptr; }
	/// Effect compiles and pipeline creations requested in the background and not finished yet.
	uint32_t pendingPipelines() const { return pending_.load(std::memory_order_acquire); }
	/// Background compiles finished so far (a renderer with objects waiting for an effect looks again when it grew).
	uint64_t compilesDone() const { return done_.load(std::memory_order_acquire); }
	/// The first background compile or creation that failed, as an error (a frame reports it and fails); ok when none
	/// did.
	Result<void> pipelineErrors() const;
	/// Blocks until nothing is pending, then as pipelineErrors(): for screenshots, tests and benchmarks.
	Result<void> waitPipelines();
	/// Runs `work` for `job` — at once when background pipelines are off (the job is finished on return), else on a
	/// worker thread (pending until then; counted by pendingPipelines()/compilesDone(), a failure reported by
	/// pipelineErrors()). `work` may only touch what `job`'s holder keeps alive and thread-safe device calls.
	void runJob(std::shared_ptr<BackgroundJob> job, std::function<Result<void>()> work);
	/// Tests: while held, background work does not start (frames see their effects and pipelines pending).
	void holdPipelines(bool held);
	/// The sampler for `state`, created on first use.
	Result<gpu::SamplerHandle> sampler(const scene::SamplerState& state);
	/// Appends the texture and the sampler of every binding in `textures` (a compiled effect's) as `object` supplies
	/// them; a texture without a sampler of its own is sampled with the default SamplerState. Errors: InvalidArgument
	/// naming the object when it lacks a texture the effect samples; as sampler().
	Result<void> objectTextures(const scene::RenderObject& object, std::span<const fx::TextureBinding> textures,
	                            std::vector<adaptive::Ref<TextureResource>>& images,
	                            std::vector<gpu::SamplerHandle>& samplers);
	/// The GPU copy of `buffer` (interned by aval identity; alive while a Ref is held). Uploaded by upload().
	adaptive::Ref<BufferResource> buffer(const adaptive::aval<scene::ArrayBuffer>& buffer);
	/// The GPU copy of `texture` (interned by aval identity). Uploaded by upload().
	adaptive::Ref<TextureResource> texture(const adaptive::aval<scene::TextureData>& texture);

	/// Queues the bytes of the uniform block at `range` (from uniformArena()). Blocks are kept in a host shadow of
	/// each arena page; upload() writes the changed parts as coalesced runs (one staging write per run of nearby
	/// changed blocks, not one per block), so a frame that changes every block copies each page in one region.
	void writeUniforms(const BufferArena::Range& range, const void* data, size_t size);

	/// Brings every new or changed buffer and texture up to date: buffer bytes go into the staging ring, texture
	/// uploads are recorded into `list`; then flushes the staging ring into `list`. Call outside a render pass, after
	/// the passes' update() and before their encode(). Errors: OutOfMemory, InvalidArgument (a malformed texture).
	Result<void> upload(gpu::CommandList& list);
	/// What the last upload()'s staging flush recorded (copy commands, regions, scatters, bytes).
	const gpu::StagingFlushStats& lastFlush() const { return last_flush_; }

	const ContextStats& stats() const { return stats_; }
	/// Buffers and textures queued for the next upload(): each holds a reference until then.
	size_t queuedResources() const { return dirty_buffers_.size() + dirty_textures_.size(); }
	/// Checks the arenas' invariants.
	Result<void> validate() const;

	// Internal (resources queue themselves when marked).
	void queueBuffer(BufferResource* resource);
	void queueTexture(TextureResource* resource);
	void forgetBuffer(const adaptive::AdaptiveObject* node);
	void forgetTexture(const adaptive::AdaptiveObject* node);
	BufferArena& dataArena() { return data_arena_; }
	ContextStats& mutableStats() { return stats_; }
	/// Counts the times a TextureResource's image changed (made, replaced by a new size or format, a new renderTo
	/// image): a renderer that keeps image views (a bindless table) looks at its textures again only when it moved.
	uint64_t textureImageChanges() const { return texture_image_changes_; }
	void noteTextureImageChange() { ++texture_image_changes_; }

private:
	explicit Context(gpu::Device& device);

	gpu::Device* device_;
	fx::EffectCompiler effects_;
	gpu::StagingRing staging_;
	gpu::StagingFlushStats last_flush_;
	BufferArena data_arena_;
	BufferArena uniform_arena_;
	std::unordered_map<std::string, std::unique_ptr<PipelineEntry>> pipelines_;
	/// A background effect compile: its result, published by `state` (PipelineEntry's states).
	struct EffectJob
	{
		std::atomic<uint8_t> state{PipelineEntry::kPending};
		fx::CompiledEffectPtr compiled;
		Error error;
	};
	std::map<fx::Hash128, std::unique_ptr<EffectJob>> effect_jobs_;
	std::vector<std::shared_ptr<BackgroundJob>> jobs_; ///< runJob's unfinished or failed jobs
	/// A worker's end of a background job: the result into `slot` (or the error), then the job's state published,
	/// then the counters.
	template <typename Job, typename T>
	void finish(Job& job, T& slot, Result<T> made)
	{
		if (made.ok())
		{
			slot = std::move(made.value());
			job.state.store(PipelineEntry::kReady, std::memory_order_release);
		}
		else
		{
			job.error = made.error();
			job.state.store(PipelineEntry::kFailed, std::memory_order_release);
			failed_.store(true, std::memory_order_release);
		}
		done_.fetch_add(1, std::memory_order_acq_rel);
		pending_.fetch_sub(1, std::memory_order_acq_rel);
	}
	std::atomic<uint32_t> pending_{0};
	std::atomic<uint64_t> done_{0};
	std::atomic<bool> failed_{false};
	std::unique_ptr<base::WorkQueue> workers_; ///< background pipelines; destroyed first (before the entries)
	std::unordered_map<std::string, fx::Effect> instanced_effects_;
	std::map<std::tuple<int, int, bool>, gpu::SamplerHandle> samplers_;
	std::unordered_map<const adaptive::AdaptiveObject*, BufferResource*> buffers_;
	std::unordered_map<const adaptive::AdaptiveObject*, TextureResource*> textures_;
	struct UniformPage
	{
		gpu::BufferHandle buffer;
		std::vector<std::byte> shadow;
		/// 256-byte units written since the last upload; runs up to 16 clean units apart are copied as one
		DirtyRuns<16> dirty;
		bool queued = false;
	};
	Result<void> flushUniforms();
	std::vector<UniformPage> uniform_pages_;
	std::vector<uint32_t> dirty_uniform_pages_;
	std::vector<adaptive::Ref<BufferResource>> dirty_buffers_;
	std::vector<adaptive::Ref<TextureResource>> dirty_textures_;
	uint64_t texture_image_changes_ = 0;
	ContextStats stats_;
};

/// The GPU copy of one adaptive buffer: an arena range re-written in place when a new value fits, reallocated when it
/// grows. Marked when its aval changes; Context::upload() writes it.
class BufferResource final : public adaptive::AdaptiveObject
{
public:
	BufferResource(Context& context, adaptive::aval<scene::ArrayBuffer> source);
	~BufferResource() override;
	/// Reads the aval and queues the bytes. Called by Context::upload().
	Result<void> update();
	const BufferArena::Range& range() const { return range_; }
	uint64_t bytes() const { return bytes_; } ///< size of the uploaded value
	/// Creation serial: a deterministic sort key (objects sharing a mesh are drawn next to each other).
	uint64_t serial() const { return serial_; }
	bool queued = false;

protected:
	void inputChanged(adaptive::AdaptiveObject* input) override;

private:
	Context* context_;
	adaptive::aval<scene::ArrayBuffer> source_;
	BufferArena::Range range_;
	uint64_t bytes_ = 0;
	uint64_t serial_ = 0;
};

/// The GPU copy of one adaptive texture (RGBA8, full mip chain built on the GPU). A new value of the same size and
/// format is uploaded into the same image; otherwise a new image replaces it and the old one is destroyed once the
/// frames using it completed.
class TextureResource final : public adaptive::AdaptiveObject
{
public:
	TextureResource(Context& context, adaptive::aval<scene::TextureData> source);
	~TextureResource() override;
	Result<void> update(gpu::CommandList& list);
	const gpu::ImageHandle& image() const { return image_; }
	bool queued = false;

protected:
	void inputChanged(adaptive::AdaptiveObject* input) override;

private:
	Context* context_;
	adaptive::aval<scene::TextureData> source_;
	adaptive::detail::ResourceNode<scene::TextureData>* resource_ = nullptr;
	gpu::ImageHandle image_;
	bool owned_ = false; ///< image_ was created here (not a renderTo image)
};

} // namespace quokka::inputs
