// prepared_object.cpp — the classic path's prepared object: reading an object's inputs for its compiled effect,
// validating its draw, packing and uploading its uniform block, and refreshing only what changed.
#include "scene_pass_internal.hpp"

#include <algorithm>
#include <cstring>

#include <quokka/base/assert.hpp>
#include <quokka/fx/types.hpp>

namespace quokka::classic
{

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

} // namespace quokka::classic
