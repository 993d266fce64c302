// heap_object.cpp — a heap object's life: reading its inputs, placement (read, acquire, attach), refresh when an input
// changes, prefetch stages, release; and the object table.
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

#include <absl/cleanup/cleanup.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include "pointer_table.hpp"
#include <quokka/atlas/atlas_sample.hpp>
#include <quokka/base/assert.hpp>
#include <quokka/base/block_cache.hpp>
#include <quokka/base/clock.hpp>
#include <quokka/base/range_overlay.hpp>
#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/gpu/scatter_copy.hpp>
#include <quokka/heap/chunk_allocator.hpp>
#include <quokka/heap/megacall_scan.hpp>
#include <quokka/inputs/object_inputs.hpp>

#include "attribute_convert.hpp"
#include "findings.hpp"
#include "heap_internal.hpp"

namespace quokka::heap
{

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] objects: placement, refresh, release
// ---------------------------------------------------------------------------------------------------------------------

void ObjectTable::insert(const scene::RenderObject* o, const Ref<HeapObject>& h)
{
	table_.insertDeferred(h.get(), hash(o));
	h->addRef();
}

Ref<HeapObject> ObjectTable::take(const scene::RenderObject* o)
{
	// (Any element filed under the hash is the object: the hash is a bijection.)
	HeapObject* h = table_.extract(hash(o), [](const HeapObject&) { return true; });
	return Ref<HeapObject>::adopt(h); // (the table's reference, or null; h stays untouched, a removal prefetches it)
}

bool ObjectTable::drain(size_t& cursor, size_t count)
{
	return table_.drain(cursor, count,
	                    [](HeapObject* h)
	                    {
		                    h->detach();
		                    h->release();
	                    });
}

void ObjectTable::clear()
{
	detail::PointerTable<HeapObject> old;
	std::swap(old, table_); // (a release may run code that looks at the table)
	old.forEach([](HeapObject* h) { h->release(); });
}

Result<void> HeapObject::validateDraw()
{
	if (!active)
		return {};
	const scene::ArrayBuffer* index_data =
	    draw.indexed && indices ? &object_->indices->buffer.getValue(Token{this}) : nullptr;
	QUOKKA_TRY_ASSIGN(reach, inputs::drawReach(*object_, draw, index_data));
	const size_t uniforms = bucket ? entries.size() - views_.size() : 0;
	for (size_t i = 0; i < views_.size(); ++i)
		QUOKKA_TRY(inputs::checkAttributeReach(
		    *object_, bucket ? std::string_view(bucket->indirect_effect->iface.attributes[i].name) : std::string_view(),
		    *views_[i], entries[uniforms + i]->elements, reach));
	return {};
}

Result<void> HeapObject::readState(scene::PipelineStateValues& state)
{
	state = routed_axes_ ? object_->state.snapshot(Token{this}, routed_axes_) : object_->state.snapshot(Token{this});
	if (modes_)
	{
		if (scene_->options.gpu_routing)
			QUOKKA_TRY(modes_->check(*object_, Token{this})); // (the device evaluates them: the declared state stays)
		else
			QUOKKA_TRY(modes_->apply(*object_, Token{this}, state));
	}
	return {};
}

Result<void> HeapObject::applyRulesOnCpu()
{
	if (!modes_)
		return {};
	scene::PipelineStateValues state = slot && slot->route ? slot->route->declared : object_->state.snapshot(Token{});
	return modes_->apply(*object_, Token{}, state);
}

Result<Slot*> HeapObject::routeState(const scene::PipelineStateValues& state)
{
	if (modes_ && scene_->options.gpu_routing)
		return scene_->routedSlotFor(*bucket, state, draw.indexed, *object_);
	return scene_->slotFor(*bucket, state, draw.indexed);
}

void HeapObject::writeHeader()
{
	GpuArray& h = bucket->headers;
	const uint32_t base = header * bucket->header_words;
	const size_t uniforms = entries.size() - views_.size();
	absl::InlinedVector<uint32_t, 16> words(bucket->header_words);
	for (size_t i = 0; i < entries.size(); ++i)
	{
		uint32_t ref = entries[i]->ref;
		if (i >= uniforms && views_[i - uniforms]->per_instance)
			ref |= fx::kHeapPerInstanceBit;
		words[i] = ref;
	}
	const int32_t vertex_base = draw.indexed ? draw.base_vertex : int32_t(draw.first);
	words[entries.size()] = uint32_t(vertex_base);
	words[entries.size() + 1] = draw.first_instance;
	if (bucket->atlas)
		for (size_t i = 0; i < textures_->uses.size(); ++i)
			std::copy_n(textures_->uses[i].words.data(), 4, words.data() + entries.size() + 2 + 4 * i);
	if (bucket->bindless)
		std::copy(textures_->entries.begin(), textures_->entries.end(), words.data() + entries.size() + 2);
	h.set(base, words.data(), words.size());
	scene_->markHeaders(bucket);
}

void HeapObject::writeRecord()
{
	Slot& s = *slot;
	const uint32_t n = count(), inst = instances();
	const uint32_t cw = s.commandWords();
	const size_t c = size_t(record) * cw;
	const size_t m = size_t(record) * fx::kRecordWords;
	if (s.indexed)
	{
		const uint32_t first_index = (indices ? (indices->ref + 16) / 4 : 0) + draw.first;
		const uint32_t command[5] = {n, inst, first_index, uint32_t(draw.base_vertex), header};
		s.commands.set(c, command, 5);
		const uint32_t mrecord[4] = {header, first_index, n, inst};
		s.mrecords.set(m + 1, mrecord, 4);
	}
	else
	{
		const uint32_t command[4] = {n, inst, draw.first, header};
		s.commands.set(c, command, 4);
		const uint32_t mrecord[4] = {header, fx::kNonIndexed, n, inst};
		s.mrecords.set(m + 1, mrecord, 4);
	}
	if (s.route)
		writeRouteInputs();
}

void HeapObject::writeRouteInputs()
{
	RouteGroup& g = *slot->route;
	const uint32_t w = g.spec.inputWords();
	if (w == 0)
		return;
	absl::InlinedVector<uint32_t, 32> words(w);
	modes_->pack(*object_, Token{this}, g.spec, words.data());
	g.inputs.set(size_t(record) * w, words.data(), w);
}

void HeapObject::attachToSlot(Slot* s)
{
	slot = s;
	record = uint32_t(s->records.size());
	s->records.push_back(this);
	s->commands.resize(s->records.size() * s->commandWords());
	s->mrecords.resize(s->records.size() * fx::kRecordWords);
	if (s->route)
		s->route->inputs.resize(s->records.size() * s->route->spec.inputWords());
	s->draw_count.set(0, uint32_t(s->records.size()));
	s->emit_sum += emits();
	writeRecord();
	scene_->markSlot(s);
}

void HeapObject::detachFromSlot()
{
	Slot* s = slot;
	if (!s)
		return;
	s->emit_sum -= emits();
	// Swap-pop: the last record fills the hole.
	HeapObject* last = s->records.back();
	s->records[record] = last;
	s->records.pop_back();
	if (last != this)
	{
		last->record = record;
		last->writeRecord();
	}
	s->commands.resize(s->records.size() * s->commandWords());
	s->mrecords.resize(s->records.size() * fx::kRecordWords);
	if (s->route)
		s->route->inputs.resize(s->records.size() * s->route->spec.inputWords());
	s->draw_count.set(0, uint32_t(s->records.size()));
	slot = nullptr;
	scene_->markSlot(s);
	if (s->records.empty())
		scene_->sweep_pending = true;
}

Result<void> HeapObject::place()
{
	Plan plan;
	Result<void> r = read(plan);
	if (r.ok() && plan.waiting)
	{
		scene_->wait(Ref<HeapObject>(this));
		return {};
	}
	if (r.ok())
		r = acquire(plan);
	if (r.ok())
		r = attach(plan);
	if (!r.ok())
		unplace(); // left out until an input changes (its edges are kept)
	return r;
}

Result<void> HeapObject::read(Plan& plan)
{
	const scene::RenderObject& o = *object_;
	if (!heapEligible(o))
		return fail("its topology (strips, fans, or one that is not a constant) cannot be drawn by the heap: draw it "
		            "on the classic path (runtime::ObjectRouter routes by heapEligible())");
	QUOKKA_TRY_ASSIGN(source, scene_->context->objectEffect(o));
	QUOKKA_TRY_ASSIGN(planned, scene_->heapEffect(*source));
	if (!planned)
	{
		plan.waiting = true; // (its effect compiles in the background: placed once it is ready)
		return {};
	}
	plan.source = source;
	plan.planned = planned;
	plan.effect = &planned->compiled;
	const fx::CompiledEffectPtr* variant = nullptr;
	if (planned->variant)
	{
		if (planned->variant->pending())
		{
			plan.waiting = true; // (its texture variant compiles in the background)
			return {};
		}
		if (planned->variant->compiled)
			variant = &planned->variant->compiled;
	}
	// (The texture variant has the same uniforms and attributes, in the same order: only the textures differ.)
	const fx::EffectInterface& iface = planned->compiled->iface;
	QUOKKA_ASSERT(!variant || ((*variant)->iface.uniforms.size() == iface.uniforms.size() &&
	                           (*variant)->iface.attributes.size() == iface.attributes.size()),
	              "an effect's texture variant reads other uniforms or attributes than its plain compile");
	inputs_.clear();
	views_.clear();
	Result<void> read = evaluate(
	    *object_,
	    [&]() -> Result<void>
	    {
		    // Read everything first (shader-driven: only what the compiled effect uses), then place.
		    // Values derived from the object's ModelTrafo alone are pooled by (input, recipe): no adaptive
		    // node per object, and nothing left in the derived table when the object goes. (Inline storage:
		    // an add otherwise spent a dozen allocations growing these few-element arrays.)
		    plan.uniforms.assign(iface.uniforms.size(), aval<UniformValue>());
		    plan.recipes.assign(iface.uniforms.size(), inputs::DerivedRecipe{});
		    plan.derivations.assign(iface.uniforms.size(), nullptr);
		    views_.reserve(iface.attributes.size());
		    QUOKKA_TRY(scene_->derived.resolve(o, planned->uniforms, plan.uniforms, plan.recipes, plan.derivations));
		    for (const fx::InterfaceVariable& a : iface.attributes)
		    {
			    QUOKKA_TRY_ASSIGN(view, inputs::attributeView(o, a));
			    views_.push_back(view);
			    track(view->buffer.node().get(), kBuffer);
		    }
		    QUOKKA_TRY(inputs::checkIndexView(o));
		    if (o.indices)
			    track(o.indices->buffer.node().get(), kBuffer);
		    // GPU routing: the leaves of the axes its rules derive are its route group's to read (a flip of
		    // a shared declared value then re-specialises the group, not every object).
		    routed_axes_ = scene_->options.gpu_routing ? modes::ruledAxes(o.mode_rules) : 0;
		    inputs::forEachStateLeaf(o.state,
		                             [&](AdaptiveObject* leaf)
		                             {
			                             if (!routed_axes_ || !modes::isAxisLeaf(o.state, routed_axes_, leaf))
				                             track(leaf, kState);
		                             });
		    if (!o.mode_rules.empty())
		    {
			    modes_ = std::make_unique<modes::ModeInputs>();
			    QUOKKA_TRY(modes_->resolve(o, scene_->derived));
			    for (const aval<UniformValue>& node : modes_->nodes())
				    track(node.node().get(), kState);
		    }
		    QUOKKA_TRY(readState(plan.state));
		    track(o.draw_call.node().get(), kDraw);
		    draw = o.draw_call.getValue(Token{this});
		    track(o.active.node().get(), kActive);
		    active = o.active.getValue(Token{this});
		    if (variant)
		    {
			    const fx::EffectInterface& vi = (*variant)->iface;
			    QUOKKA_TRY_ASSIGN(took,
			                      fx::isBindlessVariant((*variant)->path) ? acquireBindless(vi) : acquireAtlas(vi));
			    if (took)
				    plan.effect = variant;
		    }
		    else if (planned->variant)
			    refuseTextures(); // (its effect has no variant: TextureVariantJob::refused says why)
		    return {};
	    });
	if (!read.ok())
		return read;
	// Background pipelines: its GPU-derived values are computed by kernels compiled on a worker; until they are
	// ready it waits as for its effect (its edges are kept: read again when placed).
	if (scene_->context->backgroundPipelines())
		for (size_t i = 0; i < plan.recipes.size(); ++i)
			if (plan.recipes[i] == inputs::DerivedRecipe::Gpu &&
			    !scene_->gpuDerive().kernelsReady(*plan.derivations[i]))
				plan.waiting = true;
	return {};
}

Result<bool> HeapObject::acquireAtlas(const fx::EffectInterface& iface)
{
	QUOKKA_ASSERT(!textures_, "atlas entries acquired twice");
	const scene::RenderObject& o = *object_;
	auto uses = std::make_unique<SharedTextures>();
	uses->uses.reserve(iface.textures.size());
	for (const fx::TextureBinding& t : iface.textures)
	{
		auto it = o.textures.find(t.name);
		if (it == o.textures.end())
			return fail("effect samples the texture '" + t.name + "', which the object does not have");
		track(it->second.node().get(), kBuffer); // (a new texture: placed again, with the new entry)
		auto s = o.samplers.find(t.name);
		uses->uses.push_back(
		    {it->second.getValue(Token{this}), s == o.samplers.end() ? scene::SamplerState{} : s->second, {}});
	}
	QUOKKA_TRY_ASSIGN(pool, scene_->atlasPool());
	for (size_t i = 0; i < uses->uses.size(); ++i)
	{
		SharedTextures::Use& u = uses->uses[i];
		Result<std::optional<atlas::Placement>> got = pool->acquire(u.texture, u.sampler);
		if (!got.ok() || !*got)
		{
			for (size_t j = 0; j < i; ++j)
				pool->release(uses->uses[j].texture, uses->uses[j].sampler);
			if (!got.ok())
				return fail("texture '" + iface.textures[i].name + "': " + got.error().message);
			refuseTextures();
			return false;
		}
		u.words = atlas::packEntry(**got, u.sampler);
		if ((*got)->family == atlas::Family::Srgb)
			u.words[0] |= fx::kHeapAtlasSrgbBit;
	}
	textures_ = std::move(uses);
	++scene_->atlas_objects;
	return true;
}

Result<bool> HeapObject::acquireBindless(const fx::EffectInterface& iface)
{
	QUOKKA_ASSERT(!textures_, "bindless entries acquired twice");
	std::vector<Ref<inputs::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	if (Result<void> r = scene_->context->objectTextures(*object_, iface.textures, textures, samplers); !r.ok())
		return fail(r.error().message);
	QUOKKA_TRY_ASSIGN(table, scene_->bindlessTextures());
	auto held = std::make_unique<SharedTextures>();
	held->bindless = true;
	for (size_t i = 0; i < textures.size(); ++i)
	{
		const std::optional<uint32_t> e = table->acquire(textures[i], samplers[i]);
		if (!e)
		{
			for (uint32_t taken : held->entries)
				table->release(taken);
			refuseTextures();
			return false;
		}
		held->entries.push_back(*e);
	}
	textures_ = std::move(held);
	++scene_->bindless_objects;
	return true;
}

void HeapObject::refuseTextures()
{
	textures_ = std::make_unique<SharedTextures>(); // (remembers the refusal: counted while it is placed)
	textures_->refused = true;
	textures_->bindless = scene_->texture_path == HeapTextures::Bindless;
	++(textures_->bindless ? scene_->bindless_refused : scene_->atlas_refused);
}

void HeapObject::releaseTextures()
{
	if (!textures_)
		return;
	if (textures_->refused)
		--(textures_->bindless ? scene_->bindless_refused : scene_->atlas_refused);
	else if (textures_->bindless)
	{
		--scene_->bindless_objects;
		if (!scene_->closing)
			for (uint32_t e : textures_->entries)
				scene_->bindless->release(e);
	}
	else
	{
		--scene_->atlas_objects;
		if (!scene_->closing)
			for (const SharedTextures::Use& u : textures_->uses)
				scene_->atlas_pool->release(u.texture, u.sampler);
	}
	textures_.reset();
}

Result<void> HeapObject::attach(const Plan& plan)
{
	return guarded(
	    [&]() -> Result<void>
	    {
		    if (bucket->free_headers.empty())
		    {
			    header = bucket->header_count++;
			    bucket->headers.resize(size_t(bucket->header_count) * bucket->header_words);
			    scene_->markHeaders(bucket);
		    }
		    else
		    {
			    header = bucket->free_headers.back();
			    bucket->free_headers.pop_back();
		    }
		    placed = true;
		    writeHeader();
		    QUOKKA_TRY_ASSIGN(s, routeState(plan.state));
		    attachToSlot(s);
		    for (Input& in : inputs_)
			    in.dirty = false;
		    ++scene_->stats->added;
		    return {};
	    });
}

void HeapObject::prefetch(PrefetchStage stage) const
{
	switch (stage)
	{
	case PrefetchStage::kObject:
		prefetchLines(this, int((sizeof(HeapObject) + 63) / 64));
		break;
	case PrefetchStage::kArrays:
		__builtin_prefetch(entries.data());
		__builtin_prefetch(inputs_.data());
		break;
	case PrefetchStage::kEntries:
		for (const Entry* e : entries)
			if (!e->priv)
				prefetchLines(e, 3);
		if (indices && !indices->priv)
			prefetchLines(indices, 3);
		if (owned)
			prefetchLines(owned.get(), 1); // (the block's place; its parts are not read by a removal)
		for (const Input& in : inputs_)
			__builtin_prefetch(in.node);
		break;
	case PrefetchStage::kPool:
	{
		auto pool = [&](const Entry* e)
		{
			if (e->priv || e->refcount != 1)
				return;
			// (Its pool slot is erased after the removals: detail::HeapCore::eraseDoomed fetches it then.)
			if (const UniformEntry* u = asUniform(e); u && u->indexed)
				scene_->uniform_chunks.prefetch(u->key.node);
			scene_->chunks[e->chunk]->allocator.prefetchFree(e->ref, 16ull + e->data_bytes);
		};
		for (const Entry* e : entries)
			pool(e);
		if (indices)
			pool(indices);
		if (owned)
			scene_->chunks[owned->chunk]->allocator.prefetchFree(owned->block, owned->bytes);
		break;
	}
	case PrefetchStage::kSlot:
		if (slot && record < slot->records.size())
		{
			__builtin_prefetch(&slot->records[record]);
			__builtin_prefetch(slot->commands.words.data() + size_t(record) * slot->commandWords());
			__builtin_prefetch(slot->mrecords.words.data() + size_t(record) * fx::kRecordWords);
			prefetchLines(slot->records.back(), 2);
		}
		break;
	case PrefetchStage::kLast:
		if (slot && !slot->records.empty())
			if (const Entry* last_indices = slot->records.back()->indices)
				__builtin_prefetch(last_indices);
		break;
	}
}

void HeapObject::unplace()
{
	releaseTextures();
	if (scene_->closing)
	{
		// The scene goes, and its slots, blocks and entries with it: nothing to give back one by one.
		slot = nullptr;
		entries.clear();
		indices = nullptr;
		owned.reset();
		bucket = nullptr;
		placed = false;
		return;
	}
	detachFromSlot();
	detail::HeapCore::FreeBatch freed;
	for (Entry* e : entries)
		if (!e->priv)
			scene_->releaseEntry(e, &freed);
	entries.clear();
	if (indices && !indices->priv)
		scene_->releaseEntry(indices, &freed);
	indices = nullptr;
	if (owned)
	{
		// The subscriptions of its private uniform parts go with them (a re-placement that shares a pooled entry
		// instead must not be told of the value's changes).
		for (const aval<UniformValue>& u : owned->uniforms)
			if (AdaptiveObject* node = u.node().get())
			{
				removeInput(node);
				inputs_.erase(std::remove_if(inputs_.begin(), inputs_.end(),
				                             [&](const Input& in) { return in.node == node && in.role == kUniform; }),
				              inputs_.end());
			}
		scene_->freeLater(&freed, owned->chunk, owned->block);
		owned.reset();
	}
	scene_->freeBatch(freed);
	if (bucket)
	{
		if (placed)
			bucket->free_headers.push_back(header);
		if (--bucket->objects == 0)
			scene_->sweep_pending = true;
	}
	bucket = nullptr;
	placed = false;
}

Result<void> HeapObject::repackPrivate(const DirtyInputs& dirty)
{
	if (!owned)
		return {};
	for (uint32_t i = owned->first_uniform; i < owned->count; ++i)
	{
		const aval<UniformValue>& u = owned->uniforms[i - owned->first_uniform];
		if (std::find(dirty.begin(), dirty.end(), u.node().get()) == dirty.end())
			continue;
		PrivateSet::Part& part = owned->parts[i];
		const inputs::PackedValue p =
		    detail::DerivedStep::pack(owned->recipes[i - owned->first_uniform], u.getValue(Token{this}));
		if (p.type != part.type)
			return fail("uniform value changed its type from " + fx::typeName(part.type) + " to " +
			            fx::typeName(p.type));
		QUOKKA_TRY(scene_->stageUniform(part.chunk, part.ref, p, part.data_bytes));
		++scene_->stats->uniform_uploads;
	}
	return {};
}

Result<void> HeapObject::refresh()
{
	queued = false;
	if (dead)
		return {};
	DirtyInputs dirty;
	for (Input& in : inputs_)
		if (std::exchange(in.dirty, false))
			dirty.push_back(in.node);
	if (!placed || !slot || std::exchange(replace, false))
	{
		unplace();
		return place();
	}
	// The common edit — only the values of private uniform parts changed (the object's own ModelTrafo): re-packed,
	// nothing else looked at (unless a mode rule may read them).
	if (owned && !modes_ &&
	    std::all_of(dirty.begin(), dirty.end(), [&](const AdaptiveObject* n) { return holdsPrivate(n); }))
		return evaluate(*object_, [&]() -> Result<void> { return repackPrivate(dirty); });
	std::sort(dirty.begin(), dirty.end());
	dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
	bool state = false, draw_changed = false, rebuild = false, uniform = false;
	for (const Input& in : inputs_)
		if (std::binary_search(dirty.begin(), dirty.end(), in.node))
		{
			state = state || in.role == kState;
			draw_changed = draw_changed || in.role == kDraw || in.role == kActive;
			rebuild = rebuild || in.role == kBuffer;
			uniform = uniform || in.role == kUniform;
		}
	if (rebuild)
	{
		++scene_->stats->rebuilt;
		unplace();
		return place();
	}
	++scene_->stats->refreshed;
	return evaluate(*object_,
	                [&]() -> Result<void>
	                {
		                if (uniform)
			                QUOKKA_TRY(repackPrivate(dirty));
		                if (draw_changed)
		                {
			                const uint64_t before = emits();
			                draw = object_->draw_call.getValue(Token{this});
			                active = object_->active.getValue(Token{this});
			                QUOKKA_TRY(validateDraw());
			                if (draw.indexed != slot->indexed)
				                state = true; // another slot
			                else
			                {
				                slot->emit_sum = slot->emit_sum - before + emits();
				                writeHeader();
				                writeRecord();
				                scene_->markSlot(slot);
			                }
		                }
		                if (state)
		                {
			                scene::PipelineStateValues values;
			                QUOKKA_TRY(readState(values));
			                writeHeader();
			                QUOKKA_TRY_ASSIGN(s, routeState(values));
			                if (s != slot)
			                {
				                detachFromSlot();
				                attachToSlot(s);
			                }
			                else if (slot->route)
			                {
				                writeRouteInputs(); // (a rule's input changed: the device routes it again)
				                scene_->markSlot(slot);
			                }
		                }
		                return {};
	                });
}

} // namespace quokka::heap
