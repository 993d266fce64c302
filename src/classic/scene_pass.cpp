// ScenePass: walkers over the render tree, prepared objects driven by the adaptive graph (inputs: object_inputs.hpp),
// and the per-draw encoder that skips redundant binds.
#include <quokka/classic/scene_pass.hpp>

#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/modes/mode_rules.hpp>

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

using adaptive::AdaptiveObject;
using adaptive::aval;
using adaptive::Ref;
using adaptive::Token;
using scene::RenderObjectPtr;
using scene::RenderTree;
using scene::RenderTreePtr;
using scene::UniformValue;

/// With background pipelines: the milliseconds of a frame's update after which objects whose effect became ready wait
/// for the next frame (as the heap's HeapTuning::placement_budget_ms).
constexpr double kPrepareBudgetMs = 8.0;

// ---- the pass ---------------------------------------------------------------------------------------------------

class PreparedObject;
class WalkerNode;

struct ScenePass::Impl
{
	inputs::Context* context;
	scene::FramebufferSignature signature;
	fx::FragmentOutputs outputs;
	RenderTreePtr tree;
	PassStats* stats;

	std::unique_ptr<struct Walker> root;
	std::vector<Ref<PreparedObject>> dirty_objects;
	/// Objects waiting for their effect (compiled in the background), and the context's compilesDone() when they were
	/// last looked at: once it changed, update() prepares them again.
	std::vector<Ref<PreparedObject>> waiting;
	uint64_t waiting_since = 0;
	bool waiting_retry = false; ///< some waiting objects' effect is ready: prepared next frame (preparation budget)
	/// Effects seen compiling in the background, with the context's compilesDone() then (no request hashed per
	/// waiting object).
	std::map<fx::Hash128, uint64_t> pending_effects;
	std::vector<Ref<WalkerNode>> dirty_walkers;
	std::vector<PreparedObject*> emitted;
	bool order_dirty = true;
	size_t live_objects = 0;
	size_t released_since_collect = 0; ///< derived uniforms are collected when this passes half their count
	inputs::DerivedUniforms derived;

	Result<std::unique_ptr<Walker>> build(const RenderTreePtr& tree);
	void rebuildOrder();
};

// ---- prepared objects -------------------------------------------------------------------------------------------

/// One leaf ready to draw. Reads exactly the inputs its compiled effect needs; inputChanged() tells it which.
class PreparedObject final : public inputs::ObjectNode
{
public:
	PreparedObject(ScenePass::Impl& pass, RenderObjectPtr object) : pass_(&pass), object_(std::move(object))
	{
		++pass_->live_objects;
	}
	~PreparedObject() override
	{
		pass_->context->uniformArena().release(ubo);
		--pass_->live_objects;
	}

	Result<void> prepare();
	Result<void> refresh();
	void detach()
	{
		dead = true;
		++pass_->stats->released;
	}

	const scene::RenderObject& object() const { return *object_; }

	// What encode() reads.
	const inputs::PipelineEntry* pipeline = nullptr;
	gpu::DynamicState dyn;
	std::vector<Ref<inputs::BufferResource>> vertex_buffers;
	std::vector<uint64_t> vertex_offsets; ///< view offsets
	Ref<inputs::BufferResource> index_buffer;
	uint64_t index_offset = 0;
	VkIndexType index_type = VK_INDEX_TYPE_UINT32;
	inputs::BufferArena::Range ubo;
	uint32_t ubo_size = 0;
	std::vector<Ref<inputs::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	std::vector<uint32_t> texture_bindings;
	scene::DrawCall draw;
	bool active = true;
	bool queued = false;
	bool dead = false;
	bool prepared = false;
	bool waiting = false; ///< its effect compiles in the background (Impl::waiting): not drawn yet

	/// Queues a refresh (a waiting object's effect may be ready).
	void requeue()
	{
		if (!queued && !dead)
		{
			queued = true;
			pass_->dirty_objects.emplace_back(this);
		}
	}

	void inputChanged(AdaptiveObject* input) override
	{
		dirty_inputs_.push_back(input);
		if (!queued && !dead)
		{
			queued = true;
			pass_->dirty_objects.emplace_back(this);
		}
	}

private:
	enum Role : uint32_t
	{
		kUniform,
		kState,
		kDraw,
		kActive,
		kBuffer,
	};
	struct Input
	{
		AdaptiveObject* node;
		Role role;
		uint32_t index;
	};

	Result<void> readUniform(uint32_t i);
	Result<void> readState();
	Result<void> readBuffer(uint32_t i);
	Result<void> validateDraw();
	Result<void> uploadUniforms();
	Error fail(const std::string& what) const
	{
		return makeError(ErrorCode::InvalidArgument, inputs::objectName(*object_) + ": " + what);
	}
	void track(AdaptiveObject* node, Role role, uint32_t index)
	{
		if (node && !node->isConstant())
			inputs_.push_back({node, role, index});
	}

	ScenePass::Impl* pass_;
	RenderObjectPtr object_;
	fx::CompiledEffectPtr effect_;
	std::vector<Input> inputs_;
	std::vector<AdaptiveObject*> dirty_inputs_;
	std::vector<aval<UniformValue>> uniform_values_;
	std::vector<std::byte> ubo_bytes_;
	bool ubo_dirty_ = false;
	scene::PipelineStateValues state_;
	modes::ModeInputs modes_; ///< the inputs of the object's mode rules (none without rules)
	// Buffers in the order: attributes (iface order), then the index buffer.
	struct BufferInput
	{
		const scene::BufferView* view;
		fx::Type type;
		std::string name;
		uint64_t bytes = 0; ///< size of the current host value
	};
	std::vector<BufferInput> buffers_;
};

Result<void> PreparedObject::readUniform(uint32_t i)
{
	const fx::UniformMember& m = effect_->iface.uniforms[i];
	const UniformValue& v = uniform_values_[i].getValue(Token{this});
	const inputs::PackedValue p = inputs::packUniform(v);
	if (p.type != m.type)
		return fail("uniform '" + m.name + "' is " + fx::typeName(m.type) + " in the effect but the value is " +
		            fx::typeName(p.type));
	fx::writeStd140(m.type, p.f, ubo_bytes_.data() + m.offset, m.matrix_stride ? m.matrix_stride : 16);
	ubo_dirty_ = true;
	return {};
}

Result<void> PreparedObject::readState()
{
	state_ = object_->state.snapshot(Token{this});
	if (!object_->mode_rules.empty())
		QUOKKA_TRY(modes_.apply(*object_, Token{this}, state_));
	const bool has_depth = pass_->signature.hasDepth();
	dyn = inputs::dynamicState(state_, has_depth);
	inputs::PipelineRequest req;
	req.effect = effect_;
	for (uint32_t i = 0; i < effect_->iface.attributes.size(); ++i)
	{
		const fx::InterfaceVariable& a = effect_->iface.attributes[i];
		const scene::BufferView& view = *buffers_[i].view;
		const uint32_t column = scene::formatSize(view.format);
		const uint32_t stride = view.stride ? view.stride : column * a.type.cols;
		req.bindings.push_back(
		    {i, stride, view.per_instance ? VK_VERTEX_INPUT_RATE_INSTANCE : VK_VERTEX_INPUT_RATE_VERTEX});
		for (uint32_t c = 0; c < a.type.cols; ++c)
			req.attributes.push_back({a.location + c, i, view.format, c * column});
	}
	req.topology = state_.topology;
	for (const scene::ColorAttachment& c : pass_->signature.colors)
	{
		req.color_formats.push_back(c.format);
		req.blend.push_back(inputs::toVk(state_.blendFor(c.name)));
	}
	req.depth_format = pass_->signature.depth_format;
	req.samples = pass_->signature.samples;
	req.alpha_to_coverage = state_.alpha_to_coverage;
	req.depth_clamp = state_.depth_clamp;
	QUOKKA_TRY_ASSIGN(entry, pass_->context->pipeline(req));
	if (entry != pipeline)
	{
		pipeline = entry;
		pass_->order_dirty = true;
	}
	return {};
}

Result<void> PreparedObject::readBuffer(uint32_t i)
{
	BufferInput& b = buffers_[i];
	b.bytes = b.view->buffer.getValue(Token{this}).size();
	return {};
}

Result<void> PreparedObject::validateDraw()
{
	if (!active)
		return {};
	const scene::ArrayBuffer* indices =
	    draw.indexed && object_->indices ? &object_->indices->buffer.getValue(Token{this}) : nullptr;
	QUOKKA_TRY_ASSIGN(reach, inputs::drawReach(*object_, draw, indices));
	for (uint32_t i = 0; i < effect_->iface.attributes.size(); ++i)
	{
		const BufferInput& b = buffers_[i];
		QUOKKA_TRY(inputs::checkAttributeReach(*object_, b.name, *b.view,
		                                       inputs::viewElements(*b.view, b.type, b.bytes), reach));
	}
	return {};
}

Result<void> PreparedObject::uploadUniforms()
{
	if (!ubo_dirty_ || ubo_bytes_.empty())
		return {};
	ubo_dirty_ = false;
	if (!ubo.valid())
	{
		QUOKKA_TRY_ASSIGN(range, pass_->context->uniformArena().allocate(ubo_bytes_.size()));
		ubo = std::move(range);
	}
	pass_->context->writeUniforms(ubo, ubo_bytes_.data(), ubo_bytes_.size());
	++pass_->stats->uniform_uploads;
	return {};
}

Result<void> PreparedObject::prepare()
{
	const scene::RenderObject& o = *object_;
	QUOKKA_TRY_ASSIGN(source, pass_->context->objectEffect(o));
	const uint64_t done = pass_->context->compilesDone();
	auto pending = pass_->pending_effects.find(source->id());
	fx::CompiledEffectPtr effect;
	if (pending == pass_->pending_effects.end() || pending->second != done)
	{
		QUOKKA_TRY_ASSIGN(compiled, pass_->context->compiledEffect(*source, pass_->outputs));
		effect = std::move(compiled);
		if (effect)
			pass_->pending_effects.erase(source->id());
		else
			pass_->pending_effects[source->id()] = done;
	}
	waiting = !effect;
	if (waiting)
	{
		// Compiling in the background: not drawn (nor read) until it is ready.
		prepared = false;
		pipeline = nullptr;
		pass_->waiting.emplace_back(this);
		return {};
	}
	effect_ = std::move(effect);
	const fx::EffectInterface& iface = effect_->iface;
	// A retry after a failed preparation starts over.
	inputs_.clear();
	buffers_.clear();
	uniform_values_.clear();
	vertex_buffers.clear();
	vertex_offsets.clear();
	index_buffer = nullptr;
	textures.clear();
	samplers.clear();
	texture_bindings.clear();
	return evaluate(*object_,
	                [&]() -> Result<void>
	                {
		                // Attributes (shader-driven: only the ones the compiled effect reads).
		                for (const fx::InterfaceVariable& a : iface.attributes)
		                {
			                QUOKKA_TRY_ASSIGN(view, inputs::attributeView(o, a));
			                buffers_.push_back({view, a.type, a.name, 0});
		                }
		                QUOKKA_TRY(inputs::checkIndexView(o));
		                if (o.indices)
		                {
			                index_type =
			                    o.indices->format == VK_FORMAT_R16_UINT ? VK_INDEX_TYPE_UINT16 : VK_INDEX_TYPE_UINT32;
			                buffers_.push_back({&*o.indices, fx::U32, "indices", 0});
		                }
		                for (uint32_t i = 0; i < buffers_.size(); ++i)
		                {
			                track(buffers_[i].view->buffer.node().get(), kBuffer, i);
			                QUOKKA_TRY(readBuffer(i));
			                Ref<inputs::BufferResource> r = pass_->context->buffer(buffers_[i].view->buffer);
			                if (i < iface.attributes.size())
			                {
				                vertex_buffers.push_back(std::move(r));
				                vertex_offsets.push_back(buffers_[i].view->offset);
			                }
			                else
			                {
				                index_buffer = std::move(r);
				                index_offset = buffers_[i].view->offset;
			                }
		                }
		                // Uniforms: the object's own, else derived standard ones.
		                ubo_size = iface.uniform_block_size;
		                ubo_bytes_.assign(ubo_size, std::byte{0});
		                for (uint32_t i = 0; i < iface.uniforms.size(); ++i)
		                {
			                QUOKKA_TRY_ASSIGN(value, pass_->derived.resolve(o, iface.uniforms[i].name));
			                uniform_values_.push_back(value);
			                track(value.node().get(), kUniform, i);
			                QUOKKA_TRY(readUniform(i));
		                }
		                // Textures and samplers.
		                QUOKKA_TRY(pass_->context->objectTextures(o, iface.textures, textures, samplers));
		                for (const fx::TextureBinding& t : iface.textures)
			                texture_bindings.push_back(t.binding);
		                // Pipeline state: every leaf is an input, and every uniform a mode rule reads.
		                inputs::forEachStateLeaf(o.state, [&](AdaptiveObject* leaf) { track(leaf, kState, 0); });
		                if (!o.mode_rules.empty())
		                {
			                QUOKKA_TRY(modes_.resolve(o, pass_->derived));
			                for (const aval<UniformValue>& node : modes_.nodes())
				                track(node.node().get(), kState, 0);
		                }
		                QUOKKA_TRY(readState());
		                track(o.draw_call.node().get(), kDraw, 0);
		                draw = o.draw_call.getValue(Token{this});
		                track(o.active.node().get(), kActive, 0);
		                active = o.active.getValue(Token{this});
		                QUOKKA_TRY(validateDraw());
		                QUOKKA_TRY(uploadUniforms());
		                prepared = true;
		                dirty_inputs_.clear();
		                ++pass_->stats->prepared;
		                return {};
	                });
}

Result<void> PreparedObject::refresh()
{
	queued = false;
	if (dead)
		return {};
	if (!prepared)
		return prepare();
	std::vector<AdaptiveObject*> dirty;
	dirty.swap(dirty_inputs_);
	std::sort(dirty.begin(), dirty.end());
	dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
	++pass_->stats->refreshed;
	return evaluate(*object_,
	                [&]() -> Result<void>
	                {
		                bool state = false, validate = false;
		                for (const Input& in : inputs_)
		                {
			                if (!std::binary_search(dirty.begin(), dirty.end(), in.node))
				                continue;
			                switch (in.role)
			                {
			                case kUniform:
				                QUOKKA_TRY(readUniform(in.index));
				                break;
			                case kState:
				                state = true;
				                break;
			                case kDraw:
				                draw = object_->draw_call.getValue(Token{this});
				                validate = true;
				                break;
			                case kActive:
				                active = object_->active.getValue(Token{this});
				                validate = true;
				                break;
			                case kBuffer:
				                QUOKKA_TRY(readBuffer(in.index));
				                validate = true;
				                break;
			                }
		                }
		                if (state)
			                QUOKKA_TRY(readState());
		                if (validate)
			                QUOKKA_TRY(validateDraw());
		                return uploadUniforms();
	                });
}

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
