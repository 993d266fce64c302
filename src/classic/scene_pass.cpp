// ScenePass: walkers over the render tree, the pass's update over its prepared objects (prepared_object.cpp), and the
// per-draw encoder that skips redundant binds.
#include "scene_pass_internal.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <tuple>

#include <quokka/base/assert.hpp>
#include <quokka/base/clock.hpp>
#include <quokka/fx/types.hpp>

namespace quokka::classic
{

// ---- walkers ----------------------------------------------------------------------------------------------------

/// Mirrors one tree node. emit() appends the prepared leaves in draw order.
struct Walker
{
	virtual ~Walker() = default;
	virtual Result<void> init() = 0;
	virtual void emit(std::vector<PreparedObject*>& out) = 0;
};

/// The adaptive node of a walker with adaptive input: marked → queued in the pass.
class WalkerNode final : public AdaptiveObject
{
public:
	WalkerNode(ScenePass::Impl& p, struct AdaptiveWalkerBase* w)
	    : AdaptiveObject(kWantsInputChanged), pass(&p), owner(w)
	{
	}
	void begin() { beginEvaluation(); }
	void end(bool ok) { endEvaluation(ok); }
	void inputChanged(AdaptiveObject*) override
	{
		if (!queued && owner)
		{
			queued = true;
			pass->dirty_walkers.emplace_back(this);
		}
	}
	ScenePass::Impl* pass;
	struct AdaptiveWalkerBase* owner;
	bool queued = false;
};

struct AdaptiveWalkerBase : Walker
{
	explicit AdaptiveWalkerBase(ScenePass::Impl& p) : pass(&p), node(adaptive::makeRef<WalkerNode>(p, this)) {}
	~AdaptiveWalkerBase() override { node->owner = nullptr; }
	/// Pulls the delta (inside the node's evaluation).
	virtual Result<void> pull(Token token) = 0;
	Result<void> init() override { return update(); }
	Result<void> update()
	{
		node->begin();
		Result<void> r;
		try
		{
			r = pull(Token{node.get()});
		}
		catch (const std::exception& e)
		{
			r = makeError(ErrorCode::InvalidArgument, std::string("render tree input threw: ") + e.what());
		}
		node->end(r.ok());
		pass->order_dirty = true;
		return r;
	}
	ScenePass::Impl* pass;
	Ref<WalkerNode> node;
};

struct LeafWalker final : Walker
{
	LeafWalker(ScenePass::Impl& p, RenderObjectPtr o) : object(adaptive::makeRef<PreparedObject>(p, std::move(o))) {}
	~LeafWalker() override { object->detach(); }
	Result<void> init() override { return object->prepare(); }
	void emit(std::vector<PreparedObject*>& out) override { out.push_back(object.get()); }
	Ref<PreparedObject> object;
};

/// Sort key of a block of emitted objects: its first object's (pipeline, first texture, first vertex buffer, id), so
/// that objects sharing a pipeline, then a texture, then a mesh are drawn next to each other and their binds skipped.
auto blockKey(const PreparedObject* o)
{
	const uint64_t texture = o->textures.empty() || !o->textures[0]->image() ? 0 : o->textures[0]->image()->id();
	const uint64_t mesh = o->vertex_buffers.empty() ? 0 : o->vertex_buffers[0]->serial();
	return std::make_tuple(o->pipeline ? o->pipeline->serial : 0, texture, mesh, o->object().id);
}

/// Emits children as blocks; unordered parents sort the blocks.
template <typename Range>
void emitChildren(Range&& children, bool sorted, std::vector<PreparedObject*>& out)
{
	if (!sorted)
	{
		for (auto& c : children)
			c->emit(out);
		return;
	}
	const size_t base = out.size();
	std::vector<std::pair<size_t, size_t>> blocks; // [begin, end) into out
	for (auto& c : children)
	{
		const size_t b = out.size();
		c->emit(out);
		if (out.size() > b)
			blocks.emplace_back(b, out.size());
	}
	std::vector<PreparedObject*> items(out.begin() + std::ptrdiff_t(base), out.end());
	std::stable_sort(blocks.begin(), blocks.end(),
	                 [&](const auto& x, const auto& y)
	                 { return blockKey(items[x.first - base]) < blockKey(items[y.first - base]); });
	out.resize(base);
	for (const auto& [b, e] : blocks)
		out.insert(out.end(), items.begin() + std::ptrdiff_t(b - base), items.begin() + std::ptrdiff_t(e - base));
}

struct GroupWalker final : Walker
{
	GroupWalker(ScenePass::Impl& p, const RenderTree& t) : pass(&p), tree(&t) {}
	Result<void> init() override
	{
		for (const RenderTreePtr& c : tree->children)
		{
			QUOKKA_TRY_ASSIGN(w, pass->build(c));
			children.push_back(std::move(w));
		}
		return {};
	}
	void emit(std::vector<PreparedObject*>& out) override
	{
		emitChildren(children, tree->kind == RenderTree::Kind::Unordered, out);
	}
	ScenePass::Impl* pass;
	const RenderTree* tree;
	std::vector<std::unique_ptr<Walker>> children;
};

struct AvalWalker final : AdaptiveWalkerBase
{
	AvalWalker(ScenePass::Impl& p, aval<RenderTreePtr> in) : AdaptiveWalkerBase(p), input(std::move(in)) {}
	Result<void> pull(Token t) override
	{
		const RenderTreePtr& v = input.getValue(t);
		if (child && v == current)
			return {};
		current = v;
		child.reset();
		QUOKKA_TRY_ASSIGN(w, pass->build(current));
		child = std::move(w);
		return {};
	}
	void emit(std::vector<PreparedObject*>& out) override
	{
		if (child)
			child->emit(out);
	}
	aval<RenderTreePtr> input;
	RenderTreePtr current;
	std::unique_ptr<Walker> child;
};

struct ListWalker final : AdaptiveWalkerBase
{
	ListWalker(ScenePass::Impl& p, const adaptive::alist<RenderTreePtr>& list)
	    : AdaptiveWalkerBase(p), reader(list.getReader())
	{
	}
	Result<void> pull(Token t) override
	{
		for (const auto& [index, op] : reader->getChanges(t))
		{
			children.erase(index);
			if (op)
			{
				QUOKKA_TRY_ASSIGN(w, pass->build(*op));
				children.emplace(index, std::move(w));
			}
		}
		return {};
	}
	void emit(std::vector<PreparedObject*>& out) override
	{
		for (auto& [index, c] : children)
			c->emit(out);
	}
	adaptive::ListReader<RenderTreePtr> reader;
	std::map<adaptive::Index, std::unique_ptr<Walker>> children;
};

struct SetWalker final : AdaptiveWalkerBase
{
	SetWalker(ScenePass::Impl& p, const adaptive::aset<RenderTreePtr>& set)
	    : AdaptiveWalkerBase(p), reader(set.getReader())
	{
	}
	Result<void> pull(Token t) override
	{
		// Removals first so that their resources are released before additions allocate.
		// Additions in tree-id order (the delta is ordered by address): what they create — resources, pipelines and
		// their serials — is then the same in every run.
		const auto delta = reader->getChanges(t);
		std::vector<const RenderTreePtr*> added;
		for (const auto& [tree, count] : delta)
			if (count < 0)
				children.erase(tree.get());
			else if (count > 0 && !children.contains(tree.get()))
				added.push_back(&tree);
		// Leaves by object id (ofObjects creates its leaf trees while the set is read, in address order), other
		// subtrees by tree id.
		auto order = [](const RenderTreePtr* p)
		{
			const RenderTree& tree = **p;
			return tree.kind == RenderTree::Kind::Leaf && tree.leaf ? std::make_pair(0, tree.leaf->id)
			                                                        : std::make_pair(1, tree.id);
		};
		std::sort(added.begin(), added.end(),
		          [&](const RenderTreePtr* a, const RenderTreePtr* b) { return order(a) < order(b); });
		for (const RenderTreePtr* tree : added)
		{
			QUOKKA_TRY_ASSIGN(w, pass->build(*tree));
			children.emplace(tree->get(), std::move(w));
		}
		return {};
	}
	void emit(std::vector<PreparedObject*>& out) override
	{
		std::vector<Walker*> list;
		list.reserve(children.size());
		for (auto& [tree, c] : children)
			list.push_back(c.get());
		emitChildren(list, true, out);
	}
	adaptive::SetReader<RenderTreePtr> reader;
	std::map<const RenderTree*, std::unique_ptr<Walker>> children;
};

struct EmptyWalker final : Walker
{
	Result<void> init() override { return {}; }
	void emit(std::vector<PreparedObject*>&) override {}
};

Result<std::unique_ptr<Walker>> ScenePass::Impl::build(const RenderTreePtr& t)
{
	std::unique_ptr<Walker> w;
	if (!t)
		w = std::make_unique<EmptyWalker>();
	else
		switch (t->kind)
		{
		case RenderTree::Kind::Empty:
			w = std::make_unique<EmptyWalker>();
			break;
		case RenderTree::Kind::Leaf:
			if (!t->leaf)
				return makeError(ErrorCode::InvalidArgument, "render tree leaf without an object");
			w = std::make_unique<LeafWalker>(*this, t->leaf);
			break;
		case RenderTree::Kind::Ordered:
		case RenderTree::Kind::Unordered:
			w = std::make_unique<GroupWalker>(*this, *t);
			break;
		case RenderTree::Kind::Adaptive:
			w = std::make_unique<AvalWalker>(*this, t->adaptive);
			break;
		case RenderTree::Kind::OrderedFromList:
			w = std::make_unique<ListWalker>(*this, t->list);
			break;
		case RenderTree::Kind::UnorderedFromSet:
			w = std::make_unique<SetWalker>(*this, t->set);
			break;
		}
	QUOKKA_TRY(w->init());
	return w;
}

void ScenePass::Impl::rebuildOrder()
{
	emitted.clear();
	if (root)
		root->emit(emitted);
	order_dirty = false;
	++stats->resorts;
}

// ---- ScenePass --------------------------------------------------------------------------------------------------

ScenePass::ScenePass(inputs::Context& context, scene::FramebufferSignature signature, RenderTreePtr tree)
    : impl_(std::make_unique<Impl>()), signature_(std::move(signature))
{
	impl_->context = &context;
	impl_->signature = signature_;
	impl_->outputs.colors = signature_.colorNames();
	impl_->tree = std::move(tree);
	impl_->stats = &stats_;
}

ScenePass::~ScenePass()
{
	impl_->emitted.clear();
	impl_->dirty_objects.clear();
	impl_->dirty_walkers.clear();
	impl_->root.reset();
	impl_->derived.clear();
}

Result<void> ScenePass::update()
{
	const auto t0 = std::chrono::steady_clock::now();
	stats_ = PassStats{};
	Impl& p = *impl_;
	if (!p.root)
	{
		QUOKKA_TRY_ASSIGN(root, p.build(p.tree));
		p.root = std::move(root);
		p.order_dirty = true;
	}
	// Walkers first (they create and drop prepared objects), then the objects' changed inputs. Both queues may grow
	// while they are processed.
	for (size_t i = 0; i < p.dirty_walkers.size(); ++i)
	{
		Ref<WalkerNode> n = p.dirty_walkers[i];
		n->queued = false;
		if (n->owner)
			QUOKKA_TRY(n->owner->update());
	}
	p.dirty_walkers.clear();
	if (!p.waiting.empty())
	{
		std::erase_if(p.waiting, [](const Ref<PreparedObject>& o) { return o->dead; });
		const uint64_t done = p.context->compilesDone();
		const bool budget_left_some = std::exchange(p.waiting_retry, false);
		if (done != std::exchange(p.waiting_since, done) || budget_left_some)
		{
			std::vector<Ref<PreparedObject>> retry;
			retry.swap(p.waiting);
			for (const Ref<PreparedObject>& o : retry)
				o->requeue();
		}
	}
	// Background pipelines: objects whose effect became ready are prepared until the frame spent kPrepareBudgetMs
	// (the rest wait for the next frame); changes of prepared objects are always applied.
	const bool budgeted = p.context->backgroundPipelines();
	for (size_t i = 0; i < p.dirty_objects.size(); ++i)
	{
		Ref<PreparedObject> o = p.dirty_objects[i];
		if (budgeted && !o->prepared && !o->dead && stats_.prepared > 0 && msSince(t0) > kPrepareBudgetMs)
		{
			o->queued = false;
			p.waiting.push_back(o);
			p.waiting_retry = true;
			continue;
		}
		QUOKKA_TRY(o->refresh());
	}
	p.dirty_objects.clear();
	if (p.order_dirty)
		p.rebuildOrder();
	// Derived uniforms of released objects: collected in O(size) once the releases since the last collection reach
	// half the live objects. The interned count is O(objects ever live since then) × derived names per object, so
	// that is amortised O(1) per release (a threshold on the interned count would never be reached when objects
	// intern several each). The heap path does the same.
	p.released_since_collect += stats_.released;
	if (p.released_since_collect > 64 && p.released_since_collect * 2 > p.live_objects)
	{
		p.derived.collect();
		p.released_since_collect = 0;
	}
	stats_.derived_uniforms = uint32_t(p.derived.size());
	stats_.update_ms = msSince(t0);
	return {};
}

void ScenePass::encode(gpu::CommandList& list)
{
	const auto t0 = std::chrono::steady_clock::now();
	VkCommandBuffer cmd = list.vk();
	const inputs::PipelineEntry* bound = nullptr;
	gpu::DynamicState dyn;
	bool dyn_set = false;
	// Last pushed descriptors and bound buffers, to skip redundant work.
	VkBuffer pushed_ubo = VK_NULL_HANDLE;
	uint64_t pushed_offset = ~0ull;
	std::vector<VkImageView> pushed_views;
	std::vector<VkBuffer> vb, last_vb;
	std::vector<VkDeviceSize> vo, last_vo;
	VkBuffer last_ib = VK_NULL_HANDLE;
	VkDeviceSize last_io = ~0ull;
	VkIndexType last_it = VK_INDEX_TYPE_UINT32;
	std::vector<VkWriteDescriptorSet> writes;
	std::vector<VkDescriptorImageInfo> images;
	std::vector<VkImageView> views;
	for (PreparedObject* o : impl_->emitted)
	{
		const scene::DrawCall& d = o->draw;
		if (o->waiting)
		{
			++stats_.waiting; // (its effect compiles in the background)
			continue;
		}
		if (!o->active || d.count == 0 || d.instance_count == 0 || !o->pipeline)
		{
			++stats_.skipped;
			continue;
		}
		bool ready = true;
		for (const auto& b : o->vertex_buffers)
			ready = ready && b->range().valid();
		if (d.indexed)
			ready = ready && o->index_buffer && o->index_buffer->range().valid();
		for (const auto& t : o->textures)
			ready = ready && t->image() != nullptr;
		if (!ready || (o->ubo_size && !o->ubo.valid()))
		{
			++stats_.skipped;
			continue;
		}
		if (!o->pipeline->ready())
		{
			++stats_.waiting; // (created in the background: drawn from the first frame after it is ready)
			continue;
		}
		const gpu::Pipeline& pipeline = *o->pipeline->pipeline;
		if (o->pipeline != bound)
		{
			vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline.vk());
			bound = o->pipeline;
			++stats_.pipeline_binds;
			pushed_ubo = VK_NULL_HANDLE; // another layout: push descriptors again
			pushed_views.clear();
			pushed_offset = ~0ull;
		}
		if (!dyn_set || !(o->dyn == dyn))
		{
			o->dyn.apply(cmd);
			dyn = o->dyn;
			dyn_set = true;
			++stats_.dynamic_state_sets;
		}
		views.clear();
		for (const auto& t : o->textures)
			views.push_back(t->image()->view());
		const VkBuffer ubo = o->ubo_size ? o->ubo.buffer->vk() : VK_NULL_HANDLE;
		const uint64_t ubo_offset = o->ubo_size ? o->ubo.offset : 0;
		const bool needs_push = o->ubo_size || !views.empty();
		if (needs_push && (ubo != pushed_ubo || ubo_offset != pushed_offset || views != pushed_views))
		{
			writes.clear();
			images.clear();
			images.reserve(views.size());
			VkDescriptorBufferInfo buffer_info{ubo, ubo_offset, o->ubo_size};
			if (o->ubo_size)
			{
				VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
				w.dstBinding = 0;
				w.descriptorCount = 1;
				w.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
				w.pBufferInfo = &buffer_info;
				writes.push_back(w);
			}
			for (size_t i = 0; i < views.size(); ++i)
			{
				images.push_back({o->samplers[i]->vk(), views[i], VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL});
				VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
				w.dstBinding = o->texture_bindings[i];
				w.descriptorCount = 1;
				w.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
				w.pImageInfo = &images.back();
				writes.push_back(w);
			}
			pipeline.pushDescriptors(list, writes);
			pushed_ubo = ubo;
			pushed_offset = ubo_offset;
			pushed_views = views;
			++stats_.descriptor_pushes;
		}
		vb.clear();
		vo.clear();
		for (size_t i = 0; i < o->vertex_buffers.size(); ++i)
		{
			const inputs::BufferArena::Range& r = o->vertex_buffers[i]->range();
			vb.push_back(r.buffer->vk());
			vo.push_back(r.offset + o->vertex_offsets[i]);
		}
		if (!vb.empty() && (vb != last_vb || vo != last_vo))
		{
			vkCmdBindVertexBuffers(cmd, 0, uint32_t(vb.size()), vb.data(), vo.data());
			last_vb = vb;
			last_vo = vo;
			++stats_.vertex_binds;
		}
		if (d.indexed)
		{
			const inputs::BufferArena::Range& r = o->index_buffer->range();
			const VkDeviceSize offset = r.offset + o->index_offset;
			if (r.buffer->vk() != last_ib || offset != last_io || o->index_type != last_it)
			{
				vkCmdBindIndexBuffer(cmd, r.buffer->vk(), offset, o->index_type);
				last_ib = r.buffer->vk();
				last_io = offset;
				last_it = o->index_type;
			}
			vkCmdDrawIndexed(cmd, d.count, d.instance_count, d.first, d.base_vertex, d.first_instance);
		}
		else
			vkCmdDraw(cmd, d.count, d.instance_count, d.first, d.first_instance);
		++stats_.draws;
	}
	stats_.encode_ms = msSince(t0);
}

size_t ScenePass::objectCount() const
{
	return impl_->live_objects;
}

std::vector<uint64_t> ScenePass::drawOrder() const
{
	std::vector<uint64_t> ids;
	for (const PreparedObject* o : impl_->emitted)
		ids.push_back(o->object().id);
	return ids;
}

} // namespace quokka::classic
