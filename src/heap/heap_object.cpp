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

Result<void> HeapObject::readState()
{
	state_ = object_->state.snapshot(Token{this});
	return {};
}

void HeapObject::writeHeader()
{
	GpuArray& h = bucket->headers;
	const uint32_t base = header * bucket->header_words;
	const size_t uniforms = entries.size() - views_.size();
	absl::InlinedVector<uint32_t, 16> words(entries.size() + 2);
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
}

void HeapObject::attachToSlot(Slot* s)
{
	slot = s;
	record = uint32_t(s->records.size());
	s->records.push_back(this);
	s->commands.resize(s->records.size() * s->commandWords());
	s->mrecords.resize(s->records.size() * fx::kRecordWords);
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
	if (r.ok())
		r = acquire(plan);
	if (r.ok())
		r = attach();
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
	plan.source = source;
	plan.planned = planned;
	const fx::EffectInterface& iface = planned->compiled->iface;
	inputs_.clear();
	views_.clear();
	return evaluate(*object_,
	                [&]() -> Result<void>
	                {
		                // Read everything first (shader-driven: only what the compiled effect uses), then place.
		                // Values derived from the object's ModelTrafo alone are pooled by (input, recipe): no adaptive
		                // node per object, and nothing left in the derived table when the object goes. (Inline storage:
		                // an add otherwise spent a dozen allocations growing these few-element arrays.)
		                plan.uniforms.assign(iface.uniforms.size(), aval<UniformValue>());
		                plan.recipes.assign(iface.uniforms.size(), inputs::DerivedRecipe{});
		                views_.reserve(iface.attributes.size());
		                QUOKKA_TRY(scene_->derived.resolve(o, planned->uniforms, plan.uniforms, plan.recipes));
		                for (const fx::InterfaceVariable& a : iface.attributes)
		                {
			                QUOKKA_TRY_ASSIGN(view, inputs::attributeView(o, a));
			                views_.push_back(view);
			                track(view->buffer.node().get(), kBuffer);
		                }
		                QUOKKA_TRY(inputs::checkIndexView(o));
		                if (o.indices)
			                track(o.indices->buffer.node().get(), kBuffer);
		                inputs::forEachStateLeaf(o.state, [&](AdaptiveObject* leaf) { track(leaf, kState); });
		                QUOKKA_TRY(readState());
		                track(o.draw_call.node().get(), kDraw);
		                draw = o.draw_call.getValue(Token{this});
		                track(o.active.node().get(), kActive);
		                active = o.active.getValue(Token{this});
		                return {};
	                });
}

Result<void> HeapObject::acquire(Plan& plan)
{
	const scene::RenderObject& o = *object_;
	const fx::CompiledEffectPtr& effect = plan.planned->compiled;
	const fx::EffectInterface& iface = effect->iface;
	const auto& uniforms = plan.uniforms;
	const auto& recipes = plan.recipes;
	return evaluate(
	    *object_,
	    [&]() -> Result<void>
	    {
		    // A uniform node that no entry reads — an entry subscribes to its node, so one without outputs, such as
		    // the object's own fresh ModelTrafo — has no entry in any chunk, for any recipe: its acquisitions skip the
		    // pool search (an unsuccessful probe at a random place of a table of millions). Decided before the first
		    // acquisition subscribes; a second use of one (node, recipe) by this object searches, and finds the first.
		    absl::InlinedVector<bool, 8> unheld(uniforms.size());
		    for (size_t i = 0; i < uniforms.size(); ++i)
		    {
			    const AdaptiveObject* node = uniforms[i].node().get();
			    unheld[i] = !node->isConstant() && node->outputCount() == 0;
			    for (size_t j = 0; j < i && unheld[i]; ++j)
				    unheld[i] = !(uniforms[j].node().get() == node && recipes[j] == recipes[i]);
		    }
		    // Group-fit placement: a chunk already holding one of the inputs, else the newest, else a new one; the
		    // first where every input fits (allocations are rolled back when one does not).
		    absl::InlinedVector<uint32_t, 8> candidates;
		    auto consider = [&](uint32_t c)
		    {
			    if (std::find(candidates.begin(), candidates.end(), c) == candidates.end())
				    candidates.push_back(c);
		    };
		    if (scene_->chunks.size() > 1)
		    {
			    // Ascending chunk order, as a scan of every chunk for every input would give: one lookup per input.
			    // Only a node some entry reads can be held: an entry subscribes to its node, so a node without
			    // outputs (an object's own fresh ModelTrafo) needs no lookup in these tables of millions of keys.
			    auto mayBeHeld = [](const aval<UniformValue>& u)
			    { return !u.node()->isConstant() && u.node()->outputCount() != 0; };
			    uint64_t held = 0;
			    for (const aval<UniformValue>& u : uniforms)
				    if (mayBeHeld(u))
					    held |= scene_->heldChunks(u.node().get());
			    for (uint32_t c = 0; c < 64 && c < scene_->chunks.size(); ++c)
				    if (held & (uint64_t(1) << c))
					    consider(c);
			    for (uint32_t c = 64; c < scene_->chunks.size(); ++c)
				    for (const aval<UniformValue>& u : uniforms)
					    if (mayBeHeld(u) && scene_->pool.find(PoolKey::uniform(u.node().get(), c)))
					    {
						    consider(c);
						    break;
					    }
		    }
		    if (!scene_->chunks.empty())
			    consider(uint32_t(scene_->chunks.size() - 1));
		    // Buffers that no pool entry holds — their storage is referenced by its aval alone, and every entry keeps
		    // a reference — are looked up nowhere; those whose node only this view holds are this object's own: the
		    // first PrivateSet::kBufferParts of them go side by side into one block (no pool entries), others are
		    // pooled. A chunk where that certainly fails (the private block or the largest pooled one does not fit, or
		    // their sum exceeds the chunk's free and unused bytes) is skipped in O(1): no pool lookups (cache misses in
		    // a table of millions of entries) and no allocation attempts. Exactly the attempts that would fail are
		    // skipped, so placement is unchanged.
		    struct Part
		    {
			    Entry::Kind kind;
			    const scene::BufferView* view;
			    fx::Type type;
			    const std::string* name;
			    detail::HeapCore::BufferLayout layout;
			    const scene::ArrayBuffer* data;
		    };
		    absl::InlinedVector<Part, PrivateSet::kBufferParts> parts;
		    uint64_t private_bytes = 0, fresh_sum = 0, fresh_max = 0;
		    enum Held : uint8_t
		    {
			    kHeld,    ///< some entry may hold it: looked up in the pool
			    kFresh,   ///< unheld, pooled (past the private parts): no lookup
			    kPrivate, ///< unheld, a part of the private block
		    };
		    auto classify = [&](Entry::Kind kind, const scene::BufferView& v, fx::Type type,
		                        const std::string& name) -> Result<Held>
		    {
			    const scene::ArrayBuffer& data = v.buffer.getValue(Token{});
			    if (!storageUnheld(v, data))
				    return kHeld;
			    const detail::HeapCore::BufferLayout layout = detail::HeapCore::bufferLayout(kind, v, type, data);
			    if (16 + layout.data_bytes > scene_->max_chunk_bytes)
				    return scene_->bufferTooLarge(o, name, 16 + layout.data_bytes);
			    const uint64_t bytes = align16(16 + layout.data_bytes);
			    // Private only when this view is the one way to the storage: its node held by this view alone (a
			    // changeable buffer's node is held by its cval too, and is often read by many objects).
			    if (parts.size() < PrivateSet::kBufferParts && v.buffer.node()->refCount() == 1)
			    {
				    parts.push_back({kind, &v, type, &name, layout, &data});
				    private_bytes += bytes;
				    return kPrivate;
			    }
			    fresh_sum += bytes;
			    fresh_max = std::max(fresh_max, bytes);
			    return kFresh;
		    };
		    // (Which buffers are unheld also spares their pool slots' prefetches below: acquireBuffer never probes for
		    // them, and each is a DRAM miss in a table of millions that only took a line fill buffer.)
		    static const std::string kIndicesName = "indices";
		    Held index_held = kHeld;
		    if (o.indices)
		    {
			    QUOKKA_TRY_ASSIGN(h, classify(Entry::kIndex, *o.indices, fx::U32, kIndicesName));
			    index_held = h;
		    }
		    absl::InlinedVector<Held, 8> view_held(views_.size(), kHeld);
		    for (size_t i = 0; i < views_.size(); ++i)
		    {
			    QUOKKA_TRY_ASSIGN(
			        h, classify(Entry::kAttribute, *views_[i], iface.attributes[i].type, iface.attributes[i].name));
			    view_held[i] = h;
		    }
		    // The object's own uniforms — a node nothing reads yet (its fresh ModelTrafo, what derives from it) — join
		    // the private block too, up to PrivateSet::kUniformParts: no pool entry, no entry object, and the object
		    // itself subscribes to the node (re-packing the parts in refresh()). Read and packed once, before the
		    // chunk attempts. Should another reader appear later, its pooled entry has this object re-placed
		    // (detail::HeapCore::promotePrivate), so a shared value is stored and uploaded once.
		    absl::InlinedVector<bool, 8> uniform_private(uniforms.size(), false);
		    absl::InlinedVector<inputs::PackedValue, PrivateSet::kUniformParts> packed_private;
		    for (size_t i = 0; i < uniforms.size() && packed_private.size() < PrivateSet::kUniformParts; ++i)
		    {
			    if (!unheld[i])
				    continue;
			    inputs::PackedValue packed;
			    try
			    {
				    packed = inputs::packDerived(recipes[i], uniforms[i].getValue(Token{this}));
			    }
			    catch (const std::exception& ex)
			    {
				    return fail("uniform '" + iface.uniforms[i].name + "' threw: " + ex.what());
			    }
			    if (packed.type != iface.uniforms[i].type)
				    return scene_->uniformMismatch(o, iface.uniforms[i].name, iface.uniforms[i].type, packed.type);
			    track(uniforms[i].node().get(), kUniform);
			    uniform_private[i] = true;
			    packed_private.push_back(packed);
			    private_bytes += align16(16ull + packed.type.packedBytes());
		    }
		    auto tooLarge = [&] {
			    return fail("its inputs do not fit in one arena chunk of " + std::to_string(scene_->max_chunk_bytes) +
			                " bytes");
		    };
		    if (private_bytes > scene_->max_chunk_bytes)
			    return tooLarge();
		    fresh_sum += private_bytes;
		    fresh_max = std::max(fresh_max, private_bytes);
		    const bool first_fresh = o.indices ? index_held != kHeld : !views_.empty() && view_held[0] != kHeld;
		    auto certainlyFull = [&](uint32_t c)
		    {
			    const ChunkAllocator& a = scene_->chunks[c]->allocator;
			    return fresh_max != 0 && (!a.fits(fresh_max) || a.capacity() - a.cursor() + a.freeBytes() < fresh_sum);
		    };
		    if (candidates.size() > 1 && !first_fresh)
		    {
			    // Each attempt starts with a pool lookup of the first buffer (below) — scattered slots of a large
			    // table; fetching them for every candidate at once overlaps the misses of full chunks' attempts.
			    if (o.indices)
				    for (uint32_t c : candidates)
					    scene_->pool.prefetch(detail::HeapCore::bufferKey(Entry::kIndex, *o.indices, fx::U32, c));
			    else if (!views_.empty())
				    for (uint32_t c : candidates)
					    scene_->pool.prefetch(
					        detail::HeapCore::bufferKey(Entry::kAttribute, *views_[0], iface.attributes[0].type, c));
		    }
		    for (size_t attempt = 0;; ++attempt)
		    {
			    uint32_t chunk;
			    if (attempt < candidates.size())
			    {
				    chunk = candidates[attempt];
				    if (certainlyFull(chunk))
				    {
					    ++scene_->stats->chunks_skipped;
					    continue;
				    }
			    }
			    else if (attempt == candidates.size())
				    chunk = scene_->openChunk();
			    else
				    return tooLarge();
			    // Each acquisition below probes the pool (a random slot of a table of millions, so a miss each) after
			    // the previous one's copying: fetched together here, the misses overlap instead of queueing.
			    if (o.indices && index_held == kHeld)
				    scene_->pool.prefetch(detail::HeapCore::bufferKey(Entry::kIndex, *o.indices, fx::U32, chunk));
			    for (size_t i = 0; i < views_.size(); ++i)
				    if (view_held[i] == kHeld)
					    scene_->pool.prefetch(detail::HeapCore::bufferKey(Entry::kAttribute, *views_[i],
					                                                      iface.attributes[i].type, chunk));
			    for (size_t i = 0; i < uniforms.size(); ++i)
				    if (!uniforms[i].node()->isConstant() && !unheld[i])
					    scene_->pool.prefetch(
					        detail::HeapCore::uniformKey(uniforms[i].node().get(), recipes[i], chunk));
			    // Entries in header order (uniforms, then attributes), buffers first: they are the large allocations,
			    // so a chunk without room fails at its first one instead of after acquiring (and then releasing) every
			    // uniform — with 8 full chunks before the newest, that was most of an add. The private block first of
			    // all: one allocation for the object's own buffers.
			    absl::InlinedVector<Entry*, 8> got(uniforms.size() + views_.size(), nullptr);
			    Entry* idx = nullptr;
			    std::unique_ptr<PrivateSet> own;
			    scene_->chunk_full = false;
			    Result<void> acquired = [&]() -> Result<void>
			    {
				    if (private_bytes != 0)
				    {
					    QUOKKA_TRY_ASSIGN(block, scene_->allocate(chunk, uint32_t(private_bytes - 16)));
					    own = std::make_unique<PrivateSet>();
					    own->chunk = chunk;
					    own->block = block;
					    own->bytes = uint32_t(private_bytes);
					    Chunk& c = *scene_->chunks[chunk];
					    uint32_t at = block;
					    for (const Part& part : parts)
					    {
						    const uint32_t n = part.layout.elements, bytes = uint32_t(part.layout.data_bytes);
						    QUOKKA_TRY_ASSIGN(out,
						                      stageAllocation(scene_->pages, c, at,
						                                      part.kind == Entry::kIndex ? kTypeIndex : kTypeAttribute,
						                                      n, bytes));
						    QUOKKA_TRY(detail::HeapCore::convertBuffer(part.kind, *part.view, part.type, part.layout,
						                                               *part.data, reinterpret_cast<uint32_t*>(out), o,
						                                               *part.name));
						    own->append(part.kind, at, part.type, n, bytes);
						    at += uint32_t(align16(16ull + bytes));
					    }
					    own->first_uniform = own->count;
					    size_t next_uniform = 0;
					    for (size_t i = 0; i < uniforms.size(); ++i)
					    {
						    if (!uniform_private[i])
							    continue;
						    const inputs::PackedValue& packed = packed_private[next_uniform];
						    const uint32_t bytes = packed.type.packedBytes();
						    QUOKKA_TRY_ASSIGN(out, stageAllocation(scene_->pages, c, at, kTypeUniform, 1, bytes));
						    std::memcpy(out, packed.f, bytes);
						    PrivateSet::Part& e = own->append(Entry::kUniform, at, packed.type, 1, bytes);
						    e.key = detail::HeapCore::uniformKey(uniforms[i].node().get(), recipes[i], chunk);
						    own->uniforms[next_uniform++] = uniforms[i];
						    got[i] = &e;
						    at += uint32_t(align16(16ull + bytes));
					    }
				    }
				    size_t next_part = 0;
				    if (o.indices)
				    {
					    if (index_held == kPrivate)
						    idx = &own->parts[next_part++];
					    else
					    {
						    QUOKKA_TRY_ASSIGN(
						        e, scene_->acquireBuffer(Entry::kIndex, *o.indices, fx::U32, chunk, o, kIndicesName));
						    idx = e;
					    }
				    }
				    for (size_t i = 0; i < views_.size(); ++i)
				    {
					    if (view_held[i] == kPrivate)
					    {
						    got[uniforms.size() + i] = &own->parts[next_part++];
						    continue;
					    }
					    QUOKKA_TRY_ASSIGN(e,
					                      scene_->acquireBuffer(Entry::kAttribute, *views_[i], iface.attributes[i].type,
					                                            chunk, o, iface.attributes[i].name));
					    got[uniforms.size() + i] = e;
				    }
				    for (size_t i = 0; i < uniforms.size(); ++i)
				    {
					    if (uniform_private[i])
						    continue;
					    QUOKKA_TRY_ASSIGN(e,
					                      scene_->acquireUniform(uniforms[i], recipes[i], chunk, iface.uniforms[i].type,
					                                             o, iface.uniforms[i].name, unheld[i]));
					    got[i] = e;
				    }
				    return {};
			    }();
			    if (!acquired.ok())
			    {
				    for (Entry* e : got)
					    if (e && !e->priv)
						    scene_->releaseEntry(e);
				    if (idx && !idx->priv)
					    scene_->releaseEntry(idx);
				    if (own) // (its staged bytes land in a free block: harmless)
					    scene_->freeBlock(chunk, own->block);
				    if (acquired.error().code != ErrorCode::OutOfMemory || !scene_->chunk_full)
					    return acquired; // (not a full chunk: host memory for the staging pages, say)
				    continue;
			    }
			    entries = std::move(got);
			    indices = idx;
			    owned = std::move(own);
			    QUOKKA_TRY_ASSIGN(b, scene_->bucketFor(o, *plan.source, effect, chunk));
			    bucket = b;
			    ++bucket->objects;
			    break;
		    }
		    // Checked here, not when attaching: an object that fails gives its blocks back before the batch's later
		    // objects acquire theirs.
		    return validateDraw();
	    });
}

Result<void> HeapObject::attach()
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
		    QUOKKA_TRY_ASSIGN(s, scene_->slotFor(*bucket, state_, draw.indexed));
		    attachToSlot(s);
		    dirty_inputs_.clear();
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
				scene_->uniform_chunks.prefetch(e->key.node);
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
		const inputs::PackedValue p = inputs::packDerived(part.key.recipe, u.getValue(Token{this}));
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
	dirty.swap(dirty_inputs_);
	if (!placed || !slot || std::exchange(replace, false))
	{
		unplace();
		return place();
	}
	// The common edit — only the values of private uniform parts changed (the object's own ModelTrafo): re-packed,
	// nothing else looked at.
	if (owned && std::all_of(dirty.begin(), dirty.end(), [&](const AdaptiveObject* n) { return holdsPrivate(n); }))
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
			                QUOKKA_TRY(readState());
			                writeHeader();
			                QUOKKA_TRY_ASSIGN(s, scene_->slotFor(*bucket, state_, draw.indexed));
			                if (s != slot)
			                {
				                detachFromSlot();
				                attachToSlot(s);
			                }
		                }
		                return {};
	                });
}

} // namespace quokka::heap
