// Runtime, RenderTask (command list → one recorded frame, Clear+Render coalescing), framebuffers and renderTo.
#include <quokka/runtime/runtime.hpp>

#include "copy_command.hpp"

#include <chrono>

#include <quokka/base/assert.hpp>
#include <quokka/base/clock.hpp>
#include <quokka/gpu/command_list.hpp>

namespace quokka::runtime
{

using adaptive::Token;

namespace
{
constexpr VkPipelineStageFlags2 kColorStages = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT;
constexpr VkAccessFlags2 kColorAccess = VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT;
constexpr VkPipelineStageFlags2 kDepthStages =
    VK_PIPELINE_STAGE_2_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_2_LATE_FRAGMENT_TESTS_BIT;
constexpr VkAccessFlags2 kDepthAccess =
    VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;

/// One dynamic-rendering pass over every attachment of `fb`; `clear` (may be null) gives clearing load ops.
void beginPass(gpu::CommandList& list, Framebuffer& fb, const scene::ClearCommand* clear)
{
	std::vector<VkRenderingAttachmentInfo> colors(fb.colors.size(), {VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO});
	for (size_t i = 0; i < fb.colors.size(); ++i)
	{
		gpu::Image& image = *fb.colors[i];
		gpu::transitionImage(list, image, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, kColorStages, kColorAccess, true);
		VkRenderingAttachmentInfo& a = colors[i];
		a.imageView = image.view();
		a.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
		a.loadOp = VK_ATTACHMENT_LOAD_OP_LOAD;
		a.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
		if (clear)
		{
			auto it = clear->colors.find(fb.signature.colors[i].name);
			if (it != clear->colors.end())
			{
				const math::V4f c = it->second.force();
				a.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
				a.clearValue.color = {{c.x, c.y, c.z, c.w}};
			}
		}
		if (!fb.resolves.empty())
		{
			gpu::Image& resolve = *fb.resolves[i];
			gpu::transitionImage(list, resolve, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, kColorStages, kColorAccess,
			                     true);
			a.resolveMode = VK_RESOLVE_MODE_AVERAGE_BIT;
			a.resolveImageView = resolve.view();
			a.resolveImageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
		}
	}
	VkRenderingAttachmentInfo depth{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
	VkRenderingInfo info{VK_STRUCTURE_TYPE_RENDERING_INFO};
	info.layerCount = 1;
	info.renderArea = {{0, 0}, {fb.width, fb.height}};
	info.colorAttachmentCount = uint32_t(colors.size());
	info.pColorAttachments = colors.data();
	if (fb.depth)
	{
		gpu::transitionImage(list, *fb.depth, VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL, kDepthStages, kDepthAccess,
		                     true);
		depth.imageView = fb.depth->view();
		depth.imageLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL;
		depth.loadOp = VK_ATTACHMENT_LOAD_OP_LOAD;
		depth.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
		if (clear && clear->depth)
		{
			depth.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
			depth.clearValue.depthStencil = {clear->depth->force(), 0};
		}
		info.pDepthAttachment = &depth;
	}
	vkCmdBeginRendering(list.vk(), &info);
	VkViewport viewport{0.0f, 0.0f, float(fb.width), float(fb.height), 0.0f, 1.0f};
	VkRect2D scissor{{0, 0}, {fb.width, fb.height}};
	vkCmdSetViewport(list.vk(), 0, 1, &viewport);
	vkCmdSetScissor(list.vk(), 0, 1, &scissor);
}

} // namespace

// ---- Framebuffer ------------------------------------------------------------------------------------------------

gpu::ImageHandle Framebuffer::output(const std::string& name) const
{
	const int i = signature.location(name);
	if (i < 0 || size_t(i) >= colors.size())
		return nullptr;
	return resolves.empty() ? colors[size_t(i)] : resolves[size_t(i)];
}

Result<Framebuffer> createFramebuffer(gpu::Device& device, const scene::FramebufferSignature& signature, uint32_t width,
                                      uint32_t height)
{
	if (width == 0 || height == 0)
		return makeError(ErrorCode::InvalidArgument, "framebuffer size must be positive, got " + std::to_string(width) +
		                                                 "x" + std::to_string(height));
	Framebuffer fb;
	fb.signature = signature;
	fb.width = width;
	fb.height = height;
	const bool msaa = signature.samples != VK_SAMPLE_COUNT_1_BIT;
	const gpu::ImageUsage output = gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::Sampled |
	                               gpu::ImageUsage::TransferSrc | gpu::ImageUsage::TransferDst;
	for (const scene::ColorAttachment& c : signature.colors)
	{
		gpu::ImageDesc d;
		d.width = width;
		d.height = height;
		d.format = c.format;
		d.samples = signature.samples;
		d.usage = msaa ? gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferDst : output;
		d.name = "framebuffer " + c.name;
		QUOKKA_TRY_ASSIGN(image, device.createImage(d));
		fb.colors.push_back(std::move(image));
		if (msaa)
		{
			d.samples = VK_SAMPLE_COUNT_1_BIT;
			d.usage = output;
			d.name += " resolve";
			QUOKKA_TRY_ASSIGN(resolve, device.createImage(d));
			fb.resolves.push_back(std::move(resolve));
		}
	}
	if (signature.hasDepth())
	{
		gpu::ImageDesc d;
		d.width = width;
		d.height = height;
		d.format = signature.depth_format;
		d.samples = signature.samples;
		d.usage = gpu::ImageUsage::DepthAttachment;
		d.name = "framebuffer depth";
		QUOKKA_TRY_ASSIGN(depth, device.createImage(d));
		fb.depth = std::move(depth);
	}
	return fb;
}

// ---- RenderTask -------------------------------------------------------------------------------------------------

const char* pathName(RenderPath path)
{
	return path == RenderPath::Heap ? "heap" : "classic";
}

Result<RenderPath> parsePath(const std::string& name)
{
	if (name == "classic")
		return RenderPath::Classic;
	if (name == "heap")
		return RenderPath::Heap;
	return makeError(ErrorCode::InvalidArgument, "unknown render path '" + name + "' (classic, heap)");
}

RenderTask::RenderTask(Runtime& runtime, scene::FramebufferSignature signature,
                       adaptive::alist<scene::Command> commands, RenderOptions options)
    : runtime_(&runtime), options_(options), signature_(std::move(signature)), reader_(commands.getReader())
{
}

std::vector<heap::HeapScene*> RenderTask::heapScenes() const
{
	std::vector<heap::HeapScene*> out;
	for (const auto& [index, e] : entries_)
		if (e.heap)
			out.push_back(e.heap.get());
	return out;
}

RenderTask::HostMemory RenderTask::hostMemory() const
{
	HostMemory m;
	for (const auto& [index, e] : entries_)
	{
		if (e.heap)
			m.heap += e.heap->hostMemory();
		if (e.router)
			m.routers += e.router->hostBytes();
	}
	return m;
}

RenderTask::~RenderTask()
{
	for (auto& [index, e] : entries_)
		retire(e);
}

void RenderTask::retire(Entry& e)
{
	// Their teardown is the runtime's, a slice per frame (the classic pass goes with the entry).
	if (e.heap)
		runtime_->retire(std::move(e.router), std::move(e.heap));
}

void RenderTask::setHeapEnabled(adaptive::aval<bool> enabled)
{
	options_.heap_enabled = enabled;
	for (auto& [index, e] : entries_)
		if (e.router)
			e.router->setHeapEnabled(enabled);
}

std::vector<const classic::ScenePass*> RenderTask::passes() const
{
	std::vector<const classic::ScenePass*> out;
	for (const auto& [index, e] : entries_)
		if (e.pass)
			out.push_back(e.pass.get());
	return out;
}

Result<std::vector<std::string>> RenderTask::validate()
{
	std::vector<std::string> all;
	uint32_t index = 0;
	for (auto& [at, e] : entries_)
	{
		if (!e.heap && !e.router)
			continue;
		const std::string prefix = "render command " + std::to_string(index++) + ": ";
		if (e.heap)
		{
			QUOKKA_TRY_ASSIGN(findings, e.heap->validateHeap());
			for (const std::string& f : findings)
				all.push_back(prefix + f);
		}
		if (e.router)
			for (const std::string& f : e.router->validate())
				all.push_back(prefix + f);
	}
	return all;
}

Result<bool> RenderTask::update()
{
	bool changed = false;
	for (const auto& [index, op] : reader_->pull())
	{
		changed = true;
		if (auto it = entries_.find(index); it != entries_.end())
		{
			retire(it->second);
			entries_.erase(it);
		}
		if (!op)
			continue;
		Entry e{*op, nullptr, nullptr, nullptr};
		if (const auto* render = std::get_if<scene::RenderCommand>(&*op))
		{
			if (options_.path == RenderPath::Heap)
			{
				// One reader of the leaves routes each object to the heap or to the classic pass.
				e.heap = std::make_unique<heap::HeapScene>(runtime_->context(), signature_, options_.heap);
				e.router = std::make_unique<ObjectRouter>(scene::leafSet(render->tree), *e.heap, options_.heap_enabled);
				e.pass = std::make_unique<classic::ScenePass>(runtime_->context(), signature_,
				                                              scene::RenderTree::ofObjects(e.router->classicObjects()));
			}
			else
				e.pass = std::make_unique<classic::ScenePass>(runtime_->context(), signature_, render->tree);
		}
		entries_.emplace(index, std::move(e));
	}
	for (auto& [index, e] : entries_)
	{
		if (e.router)
		{
			const auto t0 = std::chrono::steady_clock::now();
			e.router->route();
			stats_.route_ms += msSince(t0);
		}
		if (e.heap)
		{
			QUOKKA_TRY(e.heap->update());
			const heap::HeapStats& h = e.heap->stats();
			changed = changed || h.added || h.removed || h.refreshed || h.rebuilt || h.uniform_uploads;
		}
		if (e.pass)
		{
			QUOKKA_TRY(e.pass->update());
			const classic::PassStats& s = e.pass->stats();
			changed = changed || s.prepared || s.released || s.refreshed || s.resorts;
		}
	}
	return changed;
}

Result<void> RenderTask::encode(gpu::CommandList& list, Framebuffer& fb)
{
	const scene::ClearCommand* pending_clear = nullptr;
	auto flushClear = [&]
	{
		if (!pending_clear)
			return;
		beginPass(list, fb, pending_clear);
		gpu::endRendering(list);
		++stats_.render_passes;
		pending_clear = nullptr;
	};
	for (auto& [index, e] : entries_)
	{
		if (const auto* clear = std::get_if<scene::ClearCommand>(&e.command))
		{
			flushClear();
			pending_clear = clear;
		}
		else if (e.pass)
		{
			// A Render command with nothing to draw and no clear before it opens no pass.
			const bool has_draws = e.pass->objectCount() > 0 || (e.heap && e.heap->objectCount() > 0);
			if (!has_draws && !pending_clear)
			{
				if (e.heap)
					stats_.heap += e.heap->stats();
				stats_.passes += e.pass->stats();
				continue;
			}
			beginPass(list, fb, pending_clear);
			pending_clear = nullptr;
			if (e.heap)
			{
				e.heap->encode(list);
				stats_.heap += e.heap->stats();
			}
			if (e.router)
			{
				for (size_t k = 0; k < kRouteReasons; ++k)
					stats_.routing[k] += e.router->reasonCounts()[k];
				stats_.migrations += e.router->migrations();
			}
			e.pass->encode(list);
			gpu::endRendering(list);
			++stats_.render_passes;
			stats_.passes += e.pass->stats();
		}
		else if (const auto* copy = std::get_if<scene::CopyCommand>(&e.command))
		{
			flushClear();
			QUOKKA_TRY(detail::recordCopy(list, fb, *copy));
		}
		else if (const auto* custom = std::get_if<scene::CustomCommand>(&e.command))
		{
			flushClear();
			if (custom->record)
				custom->record(list);
		}
	}
	flushClear();
	return {};
}

Result<void> RenderTask::upload(gpu::CommandList& list)
{
	for (auto& [index, e] : entries_)
		if (e.heap)
			QUOKKA_TRY(e.heap->upload(list));
	const auto t0 = std::chrono::steady_clock::now();
	QUOKKA_TRY(runtime_->context().upload(list));
	stats_.flush_ms = msSince(t0);
	stats_.staging = runtime_->context().lastFlush();
	for (auto& [index, e] : entries_)
		if (e.heap)
			QUOKKA_TRY(e.heap->prepare(list));
	return {};
}

Result<void> RenderTask::run(gpu::CommandList& list, Framebuffer& fb)
{
	if (!(fb.signature == signature_))
		return makeError(ErrorCode::InvalidArgument,
		                 "RenderTask::run: the framebuffer's signature differs from the task's");
	const auto t0 = std::chrono::steady_clock::now();
	stats_ = TaskStats{};
	QUOKKA_TRY(update());
	const auto t_targets = std::chrono::steady_clock::now();
	QUOKKA_TRY_ASSIGN(targets, runtime_->renderTargets(list));
	stats_.render_targets = targets;
	stats_.targets_ms = msSince(t_targets);
	QUOKKA_TRY(upload(list));
	stats_.update_ms = msSince(t0);
	const auto t1 = std::chrono::steady_clock::now();
	QUOKKA_TRY(encode(list, fb));
	list.keepAlive(fb.colors.empty() ? std::shared_ptr<const void>() : fb.colors[0]);
	stats_.encode_ms = msSince(t1);
	// Background pipelines: a creation that failed fails the frame (as it would have in the foreground).
	QUOKKA_TRY(runtime_->context().pipelineErrors());
	stats_.pipelines_pending = runtime_->context().pendingPipelines();
	if (!runtime_->retired_.empty())
	{
		const auto t2 = std::chrono::steady_clock::now();
		stats_.retired_left = runtime_->collect(options_.teardown_budget_ms);
		stats_.teardown_ms = msSince(t2);
	}
	return {};
}

// ---- RenderTarget -----------------------------------------------------------------------------------------------

namespace detail
{
struct RenderTargetState
{
	RenderTargetState(Runtime& owner, scene::FramebufferSignature sig, adaptive::alist<scene::Command> commands,
	                  adaptive::aval<math::V2i> extent)
	    : runtime(&owner), signature(std::move(sig)), task(owner.compile(signature, std::move(commands))),
	      size(std::move(extent))
	{
	}
	~RenderTargetState() { runtime->live_targets_.erase(this); }
	RenderTargetState(const RenderTargetState&) = delete;
	RenderTargetState& operator=(const RenderTargetState&) = delete;

	Result<void> render(gpu::CommandList& list)
	{
		task->stats_ = TaskStats{};
		QUOKKA_TRY_ASSIGN(changed, task->update());
		if (!changed && !fresh)
			return {};
		fresh = false;
		++renders;
		QUOKKA_TRY(task->upload(list));
		QUOKKA_TRY(task->encode(list, *framebuffer));
		// A draw that waited for its pipeline (background pipelines) makes the next frame render the target again,
		// although its scene did not change.
		fresh = task->stats().waitingDraws() > 0;
		for (const scene::ColorAttachment& c : signature.colors)
			gpu::transitionImage(list, *framebuffer->output(c.name), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
			                     VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT, true);
		return {};
	}

	Runtime* runtime;
	scene::FramebufferSignature signature;
	std::unique_ptr<RenderTask> task;
	adaptive::aval<math::V2i> size;
	Framebuffer* framebuffer = nullptr;
	bool fresh = true;
	uint64_t renders = 0;
};
} // namespace detail

RenderTarget::RenderTarget(Runtime& runtime, scene::FramebufferSignature signature,
                           adaptive::alist<scene::Command> commands, adaptive::aval<math::V2i> size)
    : state_(std::make_shared<detail::RenderTargetState>(runtime, std::move(signature), std::move(commands),
                                                         std::move(size)))
{
	// The callbacks hold the state, not this handle: the textures (which hold the resource) may outlive the handle.
	resource_ = adaptive::makeResource<std::shared_ptr<Framebuffer>>(
	    [state = state_](Token t) -> std::shared_ptr<Framebuffer>
	    {
		    const math::V2i s = state->size.getValue(t);
		    auto fb = createFramebuffer(state->runtime->device(), state->signature, uint32_t(std::max(s.x, 0)),
		                                uint32_t(std::max(s.y, 0)));
		    if (!fb)
			    throw std::runtime_error("renderTo: " + fb.error().message);
		    auto p = std::make_shared<Framebuffer>(std::move(fb).value());
		    state->framebuffer = p.get();
		    state->fresh = true;
		    state->runtime->live_targets_.insert(state.get());
		    return p;
	    },
	    nullptr,
	    [state = state_](std::shared_ptr<Framebuffer>& fb)
	    {
		    if (state->framebuffer == fb.get())
		    {
			    state->framebuffer = nullptr;
			    state->runtime->live_targets_.erase(state.get());
		    }
		    fb.reset();
	    });
}

RenderTarget::~RenderTarget() = default;

bool RenderTarget::allocated() const
{
	return state_->framebuffer != nullptr;
}

uint64_t RenderTarget::renders() const
{
	return state_->renders;
}

adaptive::aval<scene::TextureData> RenderTarget::texture(const std::string& name)
{
	if (auto it = textures_.find(name); it != textures_.end())
		return it->second;
	// The texture is a resource over the framebuffer resource: it holds the framebuffer while it exists itself.
	auto fb = resource_;
	auto texture = adaptive::makeResource<scene::TextureData>(
	    [fb, name](Token t)
	    {
		    fb.acquire();
		    try
		    {
			    const std::shared_ptr<Framebuffer>& f = fb.getValue(t);
			    scene::TextureData d;
			    d.image = f->output(name);
			    if (!d.image)
				    throw std::runtime_error("renderTo: no colour attachment '" + name + "'");
			    d.width = f->width;
			    d.height = f->height;
			    return d;
		    }
		    catch (...)
		    {
			    fb.release();
			    throw;
		    }
	    },
	    nullptr, [fb](scene::TextureData&) { fb.release(); });
	textures_.emplace(name, texture);
	return texture;
}

// ---- Runtime ----------------------------------------------------------------------------------------------------

Result<std::unique_ptr<Runtime>> Runtime::create(gpu::Device& device)
{
	QUOKKA_TRY_ASSIGN(context, inputs::Context::create(device));
	return std::unique_ptr<Runtime>(new Runtime(std::move(context)));
}

Runtime::~Runtime() = default;

void Runtime::retire(std::unique_ptr<ObjectRouter> router, std::unique_ptr<heap::HeapScene> scene)
{
	retired_.push_back({std::move(router), std::move(scene)});
}

size_t Runtime::collect(double budget_ms)
{
	using Clock = std::chrono::steady_clock;
	// (A budget past a day, or an infinite one, means no deadline.)
	const Clock::time_point deadline =
	    !(budget_ms < 8.64e7) ? Clock::time_point::max()
	                          : Clock::now() + std::chrono::duration_cast<Clock::duration>(
	                                               std::chrono::duration<double, std::milli>(std::max(budget_ms, 0.0)));
	last_collect_ = {};
	Clock::time_point t = Clock::now();
	auto lap = [&](double& into)
	{
		const Clock::time_point now = Clock::now();
		into += std::chrono::duration<double, std::milli>(now - t).count();
		t = now;
		return now;
	};
	// The oldest first; each call advances at least one slice (dismantle's promise), then stops at the deadline.
	while (!retired_.empty())
	{
		Retired& r = retired_.front();
		if (r.router)
		{
			const bool done = r.router->dismantle(deadline);
			lap(last_collect_.routers_ms);
			if (!done)
				break;
			r.router.reset(); // (its set reader and classic set)
			if (lap(last_collect_.router_destroy_ms) >= deadline)
				break;
		}
		const bool done = r.heap->dismantle(deadline);
		lap(last_collect_.scenes_ms);
		if (!done)
			break;
		retired_.pop_front(); // (what is left costs O(buckets))
		if (lap(last_collect_.scene_destroy_ms) >= deadline)
			break;
	}
	return retired();
}

size_t Runtime::retired() const
{
	size_t left = retired_.size();
	for (const Retired& r : retired_)
		left += (r.router ? r.router->dismantleLeft() : 0) + r.heap->dismantleLeft();
	return left;
}

std::unique_ptr<RenderTask> Runtime::compile(const scene::FramebufferSignature& signature,
                                             adaptive::alist<scene::Command> commands, RenderOptions options)
{
	return std::unique_ptr<RenderTask>(new RenderTask(*this, signature, std::move(commands), options));
}

std::shared_ptr<RenderTarget> Runtime::renderTo(const scene::FramebufferSignature& signature,
                                                adaptive::alist<scene::Command> commands,
                                                adaptive::aval<math::V2i> size)
{
	return std::shared_ptr<RenderTarget>(new RenderTarget(*this, signature, std::move(commands), std::move(size)));
}

Result<uint32_t> Runtime::renderTargets(gpu::CommandList& list)
{
	// The passes' update() created or refreshed the texture resources that acquire targets; their framebuffers are
	// allocated by evaluating the textures, which Context::upload() does — do that first so targets exist.
	QUOKKA_TRY(context_->upload(list));
	uint32_t rendered = 0;
	std::vector<detail::RenderTargetState*> targets(live_targets_.begin(), live_targets_.end());
	for (detail::RenderTargetState* t : targets)
	{
		const uint64_t before = t->renders;
		QUOKKA_TRY(t->render(list));
		rendered += uint32_t(t->renders - before);
	}
	return rendered;
}

} // namespace quokka::runtime
