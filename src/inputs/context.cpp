// The device-level caches both render paths share: buffer arenas, pipelines, samplers, and the interned GPU copies of
// adaptive buffers and textures.
#include <quokka/fx/instancing.hpp>
#include <quokka/inputs/context.hpp>
#include <quokka/inputs/object_inputs.hpp>

#include <algorithm>
#include <bit>
#include <cstring>

#include <quokka/base/assert.hpp>

namespace quokka::inputs
{

// ---- BufferArena ------------------------------------------------------------------------------------------------

BufferArena::BufferArena(gpu::Device& device, gpu::BufferUsage usage, uint32_t unit, uint64_t page_bytes,
                         std::string name)
    : device_(&device), usage_(usage), unit_(unit), page_bytes_(page_bytes), name_(std::move(name)),
      state_(std::make_shared<State>())
{
	QUOKKA_ASSERT(unit > 0 && page_bytes % unit == 0, "BufferArena: the page size must be a multiple of the unit");
}

BufferArena::~BufferArena()
{
	// Deferred frees still pending hold a weak reference and skip the arena; its pages die with it (the buffers'
	// own destruction is deferred by the Device).
	for (auto& page : state_->pages)
		if (page) // a dedicated page that gave its memory back leaves an empty slot
			page->allocator.reset();
}

Result<BufferArena::Range> BufferArena::allocate(uint64_t bytes)
{
	if (bytes == 0)
		return makeError(ErrorCode::InvalidArgument, name_ + ": zero-byte allocation");
	const uint64_t units = (bytes + unit_ - 1) / unit_;
	if (units >= kNoSpace)
		return makeError(ErrorCode::OutOfMemory, name_ + ": allocation too large");
	State& s = *state_;
	auto place = [&](uint32_t index) -> std::optional<Range>
	{
		Page& page = *s.pages[index];
		const Allocation a = page.allocator.allocate(uint32_t(units));
		if (!a.valid())
			return std::nullopt;
		Range r;
		r.buffer = page.buffer;
		r.offset = uint64_t(a.offset) * unit_;
		r.size = units * unit_;
		r.page = index;
		r.allocation = a;
		s.reserved += r.size;
		return r;
	};
	if (units * unit_ <= page_bytes_)
	{
		for (uint32_t i = 0; i < s.pages.size(); ++i)
			if (s.pages[i] && !s.pages[i]->dedicated)
				if (auto r = place(i))
					return *r;
	}
	const bool dedicated = units * unit_ > page_bytes_;
	const uint64_t size = dedicated ? units * unit_ : page_bytes_;
	gpu::BufferDesc desc;
	desc.size = size;
	desc.usage = usage_;
	desc.domain = gpu::MemoryDomain::DeviceLocal;
	desc.name = name_ + " page " + std::to_string(s.pages.size());
	QUOKKA_TRY_ASSIGN(buffer, device_->createBuffer(desc));
	auto page = std::make_unique<Page>(Page{std::move(buffer), OffsetAllocator(uint32_t(size / unit_), 64), dedicated});
	// Reuse a slot of a dropped dedicated page when there is one.
	uint32_t index = uint32_t(s.pages.size());
	for (uint32_t i = 0; i < s.pages.size(); ++i)
		if (!s.pages[i])
		{
			index = i;
			break;
		}
	if (index == s.pages.size())
		s.pages.push_back(std::move(page));
	else
		s.pages[index] = std::move(page);
	auto r = place(index);
	QUOKKA_ASSERT(r.has_value(), "BufferArena: a fresh page must fit the request");
	return *r;
}

void BufferArena::release(Range& range)
{
	if (!range.valid())
		return;
	std::weak_ptr<State> weak = state_;
	const uint32_t page = range.page;
	const Allocation a = range.allocation;
	const uint64_t size = range.size;
	range = Range{};
	device_->destroyLater(
	    [weak, page, a, size]
	    {
		    auto s = weak.lock();
		    if (!s || page >= s->pages.size() || !s->pages[page])
			    return;
		    Page& p = *s->pages[page];
		    [[maybe_unused]] const bool ok = p.allocator.free(a);
		    QUOKKA_ASSERT(ok, "BufferArena: bad free");
		    s->reserved -= size;
		    if (p.dedicated && p.allocator.liveCount() == 0)
			    s->pages[page].reset(); // large one-off ranges give their memory back
	    });
}

Result<void> BufferArena::validate() const
{
	uint64_t live = 0;
	for (const auto& page : state_->pages)
	{
		if (!page)
			continue;
		QUOKKA_TRY(page->allocator.validate());
		live += (uint64_t(page->allocator.size()) - page->allocator.totalFree()) * unit_;
	}
	if (live != state_->reserved)
		return makeError(ErrorCode::InvalidArgument, name_ + ": reserved bytes " + std::to_string(state_->reserved) +
		                                                 " but the allocators hold " + std::to_string(live));
	return {};
}

uint64_t BufferArena::reservedBytes() const
{
	return state_->reserved;
}

uint64_t BufferArena::pageBytes() const
{
	uint64_t total = 0;
	for (const auto& page : state_->pages)
		if (page)
			total += page->buffer->size();
	return total;
}

uint32_t BufferArena::pageCount() const
{
	return uint32_t(
	    std::count_if(state_->pages.begin(), state_->pages.end(), [](const auto& p) { return p != nullptr; }));
}

// ---- Context ----------------------------------------------------------------------------------------------------

namespace
{
constexpr gpu::BufferUsage kDataUsage = gpu::BufferUsage::Vertex | gpu::BufferUsage::Index | gpu::BufferUsage::Storage |
                                        gpu::BufferUsage::TransferDst | gpu::BufferUsage::TransferSrc;
constexpr gpu::BufferUsage kUniformUsage = gpu::BufferUsage::Uniform | gpu::BufferUsage::TransferDst;
constexpr uint32_t kUniformUnit = 256; // the spec's upper bound of minUniformBufferOffsetAlignment

uint64_t dataPageBytes(const gpu::Device& device)
{
	return std::min<uint64_t>(64ull << 20, device.info().max_storage_buffer_range & ~uint64_t(255));
}

void appendBytes(std::string& key, const void* data, size_t size)
{
	key.append(static_cast<const char*>(data), size);
}
template <typename T>
void appendValue(std::string& key, const T& value)
{
	static_assert(std::is_trivially_copyable_v<T>);
	appendBytes(key, &value, sizeof(T));
}
} // namespace

Context::Context(gpu::Device& device)
    : device_(&device), effects_(device.shaderCompiler()), staging_(device),
      data_arena_(device, kDataUsage, 16, dataPageBytes(device), "classic data arena"),
      uniform_arena_(device, kUniformUsage, kUniformUnit, 4ull << 20, "classic uniform arena")
{
}

Result<std::unique_ptr<Context>> Context::create(gpu::Device& device)
{
	// The uniform arena's 256-byte unit satisfies every device: the spec caps minUniformBufferOffsetAlignment at 256.
	return std::unique_ptr<Context>(new Context(device));
}

Context::~Context()
{
	// Resources only the upload queues hold (a frame failed before Context::upload) die here.
	dirty_buffers_.clear();
	dirty_textures_.clear();
	QUOKKA_ASSERT(buffers_.empty() && textures_.empty(),
	              "inputs::Context destroyed while buffer or texture resources are alive (destroy passes first)");
}

Result<const fx::Effect*> Context::objectEffect(const scene::RenderObject& object)
{
	bool any = false;
	for (const auto& entry : object.attributes)
		any |= entry.second.per_instance;
	if (!any)
		return &object.effect;
	const std::vector<std::string> per_instance = perInstanceUniforms(object);
	if (per_instance.empty())
		return &object.effect;
	std::string key = object.effect.id().hex();
	for (const std::string& n : per_instance)
		key += " " + n;
	key += " |";
	std::vector<std::string> supplied;
	for (const auto& entry : object.uniforms)
	{
		supplied.push_back(entry.first);
		key += " " + entry.first;
	}
	if (auto it = instanced_effects_.find(key); it != instanced_effects_.end())
		return &it->second;
	auto rewritten = fx::instanceUniforms(object.effect, per_instance, supplied);
	if (!rewritten.ok())
		return makeError(rewritten.error().code, objectName(object) + ": " + rewritten.error().message);
	return &instanced_effects_.emplace(std::move(key), std::move(rewritten.value())).first->second;
}

Result<const PipelineEntry*> Context::pipeline(const PipelineRequest& r)
{
	std::string key;
	key.reserve(256);
	appendValue(key, r.effect->key);
	for (const auto& b : r.bindings)
		appendValue(key, b);
	key.push_back('|');
	for (const auto& a : r.attributes)
		appendValue(key, a);
	key.push_back('|');
	appendValue(key, r.topology);
	for (VkFormat f : r.color_formats)
		appendValue(key, f);
	key.push_back('|');
	for (const auto& b : r.blend)
		appendValue(key, b);
	key.push_back('|');
	appendValue(key, r.depth_format);
	appendValue(key, r.samples);
	appendValue(key, uint8_t(r.alpha_to_coverage));
	appendValue(key, uint8_t(r.depth_clamp));
	if (auto it = pipelines_.find(key); it != pipelines_.end())
	{
		++stats_.pipeline_cache_hits;
		return it->second.get();
	}
	gpu::GraphicsPipelineDesc desc;
	desc.vertex = *r.effect->vertex;
	desc.fragment = *r.effect->fragment;
	desc.vertex_bindings = r.bindings;
	desc.vertex_attributes = r.attributes;
	desc.topology = r.topology;
	desc.color_formats = r.color_formats;
	desc.depth_format = r.depth_format;
	desc.samples = r.samples;
	desc.alpha_to_coverage = r.alpha_to_coverage;
	desc.depth_clamp = r.depth_clamp;
	desc.blend = r.blend;
	desc.name = "classic " + r.effect->key.hex().substr(0, 8);
	auto entry = std::make_unique<PipelineEntry>();
	entry->serial = stats_.pipelines_created;
	if (!workers_)
	{
		QUOKKA_TRY_ASSIGN(pipeline, device_->createGraphicsPipeline(desc));
		entry->pipeline = std::move(pipeline);
	}
	else
	{
		// The job owns the description (the request's code outlives it through the shared effect) and writes only
		// the entry, which outlives it: the queue is destroyed, and its running jobs finished, before the entries.
		entry->state.store(PipelineEntry::kPending, std::memory_order_relaxed);
		pending_.fetch_add(1, std::memory_order_acq_rel);
		workers_->submit([this, e = entry.get(), effect = r.effect, desc = std::move(desc)]
		                 { finish(*e, e->pipeline, device_->createGraphicsPipeline(desc)); });
	}
	++stats_.pipelines_created;
	const PipelineEntry* out = entry.get();
	pipelines_.emplace(std::move(key), std::move(entry));
	return out;
}

void Context::setBackgroundPipelines(bool on)
{
	if (on && !workers_)
		workers_ = std::make_unique<base::WorkQueue>(base::WorkQueue::defaultThreads(4));
	else if (!on && workers_)
	{
		workers_->hold(false);
		workers_->waitIdle();
		workers_.reset();
	}
}

Result<fx::CompiledEffectPtr> Context::compiledEffect(const fx::Effect& effect, const fx::FragmentOutputs& outputs,
                                                      fx::PathVariant path)
{
	if (!workers_)
		return effects_.compile(effect, outputs, path);
	const fx::Hash128 key = fx::EffectCompiler::cacheKey(effect, outputs, path);
	if (auto it = effect_jobs_.find(key); it != effect_jobs_.end())
	{
		const EffectJob& job = *it->second;
		switch (job.state.load(std::memory_order_acquire))
		{
		case PipelineEntry::kReady:
			return job.compiled;
		case PipelineEntry::kFailed:
			return job.error;
		default:
			return fx::CompiledEffectPtr();
		}
	}
	if (fx::CompiledEffectPtr cached = effects_.cached(key))
		return cached;
	// The job compiles a copy of the effect (effects are immutable values sharing their stages) and writes only its
	// own record, which outlives it (the queue goes first).
	auto job = std::make_unique<EffectJob>();
	pending_.fetch_add(1, std::memory_order_acq_rel);
	workers_->submit([this, j = job.get(), effect, outputs, path]
	                 { finish(*j, j->compiled, effects_.compile(effect, outputs, path)); });
	effect_jobs_.emplace(key, std::move(job));
	return fx::CompiledEffectPtr();
}

void Context::runJob(std::shared_ptr<BackgroundJob> job, std::function<Result<void>()> work)
{
	const auto settle = [](BackgroundJob& j, Result<void> r)
	{
		if (!r.ok())
			j.error = r.error();
		j.state.store(r.ok() ? PipelineEntry::kReady : PipelineEntry::kFailed, std::memory_order_release);
		return r.ok();
	};
	if (!workers_)
	{
		settle(*job, work());
		return;
	}
	std::erase_if(jobs_, [](const std::shared_ptr<BackgroundJob>& j) { return j->ready(); });
	jobs_.push_back(job);
	pending_.fetch_add(1, std::memory_order_acq_rel);
	workers_->submit(
	    [this, settle, j = std::move(job), w = std::move(work)]
	    {
		    if (!settle(*j, w()))
			    failed_.store(true, std::memory_order_release);
		    done_.fetch_add(1, std::memory_order_acq_rel);
		    pending_.fetch_sub(1, std::memory_order_acq_rel);
	    });
}

Result<void> Context::pipelineErrors() const
{
	if (!failed_.load(std::memory_order_acquire))
		return {};
	for (const std::shared_ptr<BackgroundJob>& job : jobs_)
		if (job->failed())
			return job->error;
	for (const auto& [key, job] : effect_jobs_)
		if (job->state.load(std::memory_order_acquire) == PipelineEntry::kFailed)
			return job->error;
	for (const auto& [key, entry] : pipelines_)
		if (entry->state.load(std::memory_order_acquire) == PipelineEntry::kFailed)
			return entry->error;
	return {};
}

Result<void> Context::waitPipelines()
{
	if (workers_)
	{
		workers_->hold(false);
		workers_->waitIdle();
	}
	return pipelineErrors();
}

void Context::holdPipelines(bool held)
{
	if (workers_)
		workers_->hold(held);
}

Result<gpu::SamplerHandle> Context::sampler(const scene::SamplerState& state)
{
	const auto key = std::make_tuple(int(state.filter), int(state.address), state.mipmaps);
	if (auto it = samplers_.find(key); it != samplers_.end())
		return it->second;
	gpu::SamplerDesc desc;
	desc.filter = state.filter == scene::Filter::Linear ? VK_FILTER_LINEAR : VK_FILTER_NEAREST;
	switch (state.address)
	{
	case scene::AddressMode::Repeat:
		desc.address = VK_SAMPLER_ADDRESS_MODE_REPEAT;
		break;
	case scene::AddressMode::ClampToEdge:
		desc.address = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
		break;
	case scene::AddressMode::MirroredRepeat:
		desc.address = VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT;
		break;
	}
	desc.mipmaps = state.mipmaps;
	desc.name = "classic sampler";
	QUOKKA_TRY_ASSIGN(sampler, device_->createSampler(desc));
	samplers_.emplace(key, sampler);
	return sampler;
}

Result<void> Context::objectTextures(const scene::RenderObject& object, std::span<const fx::TextureBinding> textures,
                                     std::vector<adaptive::Ref<TextureResource>>& images,
                                     std::vector<gpu::SamplerHandle>& samplers)
{
	for (const fx::TextureBinding& t : textures)
	{
		auto it = object.textures.find(t.name);
		if (it == object.textures.end())
			return makeError(ErrorCode::InvalidArgument, objectName(object) + ": effect samples the texture '" +
			                                                 t.name + "', which the object does not have");
		auto s = object.samplers.find(t.name);
		QUOKKA_TRY_ASSIGN(sampler, this->sampler(s == object.samplers.end() ? scene::SamplerState{} : s->second));
		images.push_back(texture(it->second));
		samplers.push_back(std::move(sampler));
	}
	return {};
}

adaptive::Ref<BufferResource> Context::buffer(const adaptive::aval<scene::ArrayBuffer>& buffer)
{
	const adaptive::AdaptiveObject* node = buffer.node().get();
	if (auto it = buffers_.find(node); it != buffers_.end())
		return adaptive::Ref<BufferResource>(it->second);
	auto r = adaptive::makeRef<BufferResource>(*this, buffer);
	buffers_.emplace(node, r.get());
	queueBuffer(r.get());
	return r;
}

adaptive::Ref<TextureResource> Context::texture(const adaptive::aval<scene::TextureData>& texture)
{
	const adaptive::AdaptiveObject* node = texture.node().get();
	if (auto it = textures_.find(node); it != textures_.end())
		return adaptive::Ref<TextureResource>(it->second);
	auto r = adaptive::makeRef<TextureResource>(*this, texture);
	textures_.emplace(node, r.get());
	queueTexture(r.get());
	return r;
}

void Context::queueBuffer(BufferResource* resource)
{
	if (resource->queued || resource->refCount() == 0) // (not while it is being destroyed: see queueTexture)
		return;
	resource->queued = true;
	dirty_buffers_.emplace_back(resource);
}

void Context::queueTexture(TextureResource* resource)
{
	// Not while it is being destroyed (reference count 0): ~TextureResource releases a renderTo framebuffer, which
	// marks the texture's outputs — this resource among them — and a queued reference to it would outlive it.
	if (resource->queued || resource->refCount() == 0)
		return;
	resource->queued = true;
	dirty_textures_.emplace_back(resource);
}

void Context::forgetBuffer(const adaptive::AdaptiveObject* node)
{
	buffers_.erase(node);
}

void Context::forgetTexture(const adaptive::AdaptiveObject* node)
{
	textures_.erase(node);
}

void Context::writeUniforms(const BufferArena::Range& range, const void* data, size_t size)
{
	QUOKKA_ASSERT(range.valid() && size <= range.size, "writeUniforms: the block must fit its range");
	if (uniform_pages_.size() <= range.page)
		uniform_pages_.resize(range.page + 1);
	UniformPage& page = uniform_pages_[range.page];
	if (page.buffer != range.buffer)
	{
		// A new page (or a dedicated page replaced in this slot): a fresh shadow.
		page.buffer = range.buffer;
		page.shadow.assign(range.buffer->size(), std::byte{0});
		page.dirty.clear();
	}
	std::memcpy(page.shadow.data() + range.offset, data, size);
	page.dirty.markRange(range.offset / kUniformUnit, (range.offset + size - 1) / kUniformUnit);
	if (!page.queued)
	{
		page.queued = true;
		dirty_uniform_pages_.push_back(range.page);
	}
	++stats_.uniform_blocks;
}

Result<void> Context::flushUniforms()
{
	// Runs of written units, merged across small gaps: the shadow mirrors the GPU page, so the clean bytes in a gap are
	// rewritten with the values they already have.
	for (uint32_t index : dirty_uniform_pages_)
	{
		UniformPage& page = uniform_pages_[index];
		page.queued = false;
		const uint64_t units = page.shadow.size() / kUniformUnit;
		Result<void> written;
		page.dirty.takeRuns(
		    [&](uint64_t lo, uint64_t hi)
		    {
			    hi = std::min(hi, units);
			    if (lo >= hi || !written.ok())
				    return;
			    written = staging_.write(page.buffer, lo * kUniformUnit, page.shadow.data() + lo * kUniformUnit,
			                             (hi - lo) * kUniformUnit);
			    ++stats_.uniform_runs;
		    });
		QUOKKA_TRY(written);
	}
	dirty_uniform_pages_.clear();
	return {};
}

Result<void> Context::upload(gpu::CommandList& list)
{
	QUOKKA_TRY(flushUniforms());
	// Resources nobody holds any more (only the queue does) are dropped without uploading.
	std::vector<adaptive::Ref<BufferResource>> buffers;
	buffers.swap(dirty_buffers_);
	for (auto& b : buffers)
	{
		b->queued = false;
		if (b->refCount() > 1)
			QUOKKA_TRY(b->update());
	}
	buffers.clear();
	std::vector<adaptive::Ref<TextureResource>> textures;
	textures.swap(dirty_textures_);
	for (auto& t : textures)
	{
		t->queued = false;
		if (t->refCount() > 1)
			QUOKKA_TRY(t->update(list));
	}
	textures.clear();
	// The heap renderer stages through this ring too: its draws read commands indirectly and its scans run in compute.
	last_flush_ = staging_.flush(list,
	                             VK_PIPELINE_STAGE_2_VERTEX_INPUT_BIT | VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT |
	                                 VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_2_DRAW_INDIRECT_BIT |
	                                 VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                             VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT |
	                                 VK_ACCESS_2_UNIFORM_READ_BIT | VK_ACCESS_2_SHADER_READ_BIT |
	                                 VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT);
	return {};
}

Result<void> Context::validate() const
{
	QUOKKA_TRY(data_arena_.validate());
	QUOKKA_TRY(uniform_arena_.validate());
	return {};
}

// ---- BufferResource ---------------------------------------------------------------------------------------------

BufferResource::BufferResource(Context& context, adaptive::aval<scene::ArrayBuffer> source)
    : AdaptiveObject(kWantsInputChanged), context_(&context), source_(std::move(source)),
      serial_(context.mutableStats().buffer_resources++)
{
}

BufferResource::~BufferResource()
{
	context_->forgetBuffer(source_.node().get());
	context_->dataArena().release(range_);
}

void BufferResource::inputChanged(adaptive::AdaptiveObject*)
{
	context_->queueBuffer(this);
}

Result<void> BufferResource::update()
{
	beginEvaluation();
	const scene::ArrayBuffer* value = nullptr;
	try
	{
		value = &source_.getValue(adaptive::Token{this});
	}
	catch (const std::exception& e)
	{
		endEvaluation(false);
		return makeError(ErrorCode::InvalidArgument, std::string("buffer value threw: ") + e.what());
	}
	endEvaluation(true);
	const scene::ArrayBuffer data = *value; // keep the bytes alive across the upload
	bytes_ = data.size();
	if (bytes_ == 0)
	{
		context_->dataArena().release(range_);
		return {};
	}
	if (!range_.valid() || range_.size < bytes_)
	{
		if (range_.valid())
			++context_->mutableStats().buffer_reallocations;
		context_->dataArena().release(range_);
		QUOKKA_TRY_ASSIGN(range, context_->dataArena().allocate(bytes_));
		range_ = std::move(range);
	}
	QUOKKA_TRY(context_->staging().write(range_.buffer, range_.offset, data.data(), bytes_));
	ContextStats& s = context_->mutableStats();
	++s.buffer_uploads;
	s.upload_bytes += bytes_;
	return {};
}

// ---- TextureResource --------------------------------------------------------------------------------------------

TextureResource::TextureResource(Context& context, adaptive::aval<scene::TextureData> source)
    : AdaptiveObject(kWantsInputChanged), context_(&context), source_(std::move(source))
{
	// A texture that is an AdaptiveResource (renderTo) lives while some GPU user holds it.
	resource_ = dynamic_cast<adaptive::detail::ResourceNode<scene::TextureData>*>(source_.node().get());
	if (resource_)
		resource_->acquireResource();
}

TextureResource::~TextureResource()
{
	if (resource_)
		resource_->releaseResource();
	context_->forgetTexture(source_.node().get());
}

void TextureResource::inputChanged(adaptive::AdaptiveObject*)
{
	context_->queueTexture(this);
}

Result<void> TextureResource::update(gpu::CommandList& list)
{
	beginEvaluation();
	const scene::TextureData* value = nullptr;
	try
	{
		value = &source_.getValue(adaptive::Token{this});
	}
	catch (const std::exception& e)
	{
		endEvaluation(false);
		return makeError(ErrorCode::InvalidArgument, std::string("texture value threw: ") + e.what());
	}
	endEvaluation(true);
	const scene::TextureData data = *value;
	if (data.image)
	{
		if (image_ != data.image)
			context_->noteTextureImageChange();
		image_ = data.image; // already on the GPU (renderTo)
		owned_ = false;
		return {};
	}
	const uint64_t bytes = uint64_t(data.width) * data.height * 4;
	if (data.width == 0 || data.height == 0 || !data.rgba8 || data.rgba8->size() != bytes)
		return makeError(ErrorCode::InvalidArgument, "texture of " + std::to_string(data.width) + "x" +
		                                                 std::to_string(data.height) + " needs " +
		                                                 std::to_string(bytes) + " bytes of RGBA8 texels, has " +
		                                                 std::to_string(data.rgba8 ? data.rgba8->size() : 0));
	const VkFormat format = data.srgb ? VK_FORMAT_R8G8B8A8_SRGB : VK_FORMAT_R8G8B8A8_UNORM;
	ContextStats& s = context_->mutableStats();
	// Same size and format: re-upload into the image we own (the upload's first barrier orders it after the
	// earlier frames' sampling). Otherwise a new image; the old one dies once the frames using it completed.
	if (!owned_ || !image_ || image_->width() != data.width || image_->height() != data.height ||
	    image_->format() != format)
	{
		gpu::ImageDesc desc;
		desc.width = data.width;
		desc.height = data.height;
		desc.format = format;
		desc.usage = gpu::ImageUsage::Sampled | gpu::ImageUsage::TransferDst | gpu::ImageUsage::TransferSrc;
		desc.name = "classic texture";
		desc.mip_levels = 0; // the full chain, generated on the GPU
		QUOKKA_TRY_ASSIGN(image, context_->device().createImage(desc));
		if (image_)
			list.keepAlive(image_);
		image_ = std::move(image);
		owned_ = true;
		++s.texture_images;
		context_->noteTextureImageChange();
	}
	QUOKKA_TRY(gpu::recordImageUpload(list, *image_, data.rgba8->data(), bytes));
	++s.texture_uploads;
	s.upload_bytes += bytes;
	return {};
}

} // namespace quokka::inputs
