// HeapScene: the arena and the pools, the heap objects' placement and refresh, buckets and slots, and the frame's
// update(). The types are in heap_internal.hpp; upload() is in heap_upload.cpp, prepare() and encode() in
// heap_encode.cpp, validateHeap() in heap_diagnostics.cpp.
//
// [SECTION] chunks, GPU arrays and pooled inputs
// [SECTION] objects: placement, refresh, release
// [SECTION] pools, buckets and slots
// [SECTION] the frame: update
#include <quokka/heap/heap_scene.hpp>

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
#include <quokka/classic/object_inputs.hpp>
#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/gpu/scatter_copy.hpp>
#include <quokka/heap/chunk_allocator.hpp>
#include <quokka/heap/megacall_scan.hpp>

#include "attribute_convert.hpp"
#include "findings.hpp"
#include "heap_internal.hpp"

namespace quokka::heap
{

const char* strategyName(DrawStrategy s)
{
	switch (s)
	{
	case DrawStrategy::Auto:
		return "auto";
	case DrawStrategy::Indirect:
		return "indirect";
	case DrawStrategy::Megacall:
		return "megacall";
	}
	return "?";
}

Result<DrawStrategy> parseStrategy(const std::string& name)
{
	if (name == "auto")
		return DrawStrategy::Auto;
	if (name == "indirect")
		return DrawStrategy::Indirect;
	if (name == "megacall")
		return DrawStrategy::Megacall;
	return makeError(ErrorCode::InvalidArgument, "unknown draw strategy '" + name + "' (auto, indirect, megacall)");
}

bool heapEligible(const scene::RenderObject& object)
{
	if (!object.state.topology.node()->isConstant())
		return false;
	const VkPrimitiveTopology t = object.state.topology.force();
	return t == VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST || t == VK_PRIMITIVE_TOPOLOGY_LINE_LIST ||
	       t == VK_PRIMITIVE_TOPOLOGY_POINT_LIST;
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] chunks, GPU arrays and pooled inputs
// ---------------------------------------------------------------------------------------------------------------------

void* BufferEntry::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(BufferEntry), "BufferEntry is final");
	return RecordCache<sizeof(BufferEntry)>::allocate();
}

void BufferEntry::operator delete(void* p) noexcept
{
	RecordCache<sizeof(BufferEntry)>::release(p);
}

void* PrivateSet::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(PrivateSet), "PrivateSet is final");
	return RecordCache<sizeof(PrivateSet)>::allocate();
}

void PrivateSet::operator delete(void* p) noexcept
{
	RecordCache<sizeof(PrivateSet)>::release(p);
}

void* UniformEntry::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(UniformEntry), "UniformEntry is final");
	return RecordCache<sizeof(UniformEntry)>::allocate();
}

void UniformEntry::operator delete(void* p) noexcept
{
	RecordCache<sizeof(UniformEntry)>::release(p);
}

void UniformEntry::inputChanged(AdaptiveObject*)
{
	if (!queued)
	{
		queued = true;
		scene->dirty_entries.emplace_back(this);
	}
}

Result<void> UniformEntry::repack()
{
	queued = false;
	if (refcount == 0)
		return {};
	beginEvaluation();
	classic::PackedValue p;
	try
	{
		p = classic::packDerived(recipe, uniform.getValue(Token{this}));
	}
	catch (const std::exception& e)
	{
		endEvaluation(false);
		return makeError(ErrorCode::InvalidArgument, std::string("a uniform input threw: ") + e.what());
	}
	endEvaluation(true);
	if (p.type != type)
		return makeError(ErrorCode::InvalidArgument, "a shared uniform value changed its type from " +
		                                                 fx::typeName(type) + " to " + fx::typeName(p.type));
	QUOKKA_TRY(scene->stageUniform(chunk, ref, p, data_bytes));
	++scene->stats->uniform_uploads;
	return {};
}

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
	if (!active || draw.count == 0 || draw.instance_count == 0)
		return {};
	uint64_t vertices = uint64_t(draw.first) + draw.count;
	if (draw.indexed)
	{
		if (!indices)
			return fail("the draw call is indexed but the object has no index buffer");
		if (uint64_t(draw.first) + draw.count > indices->elements)
			return fail("the draw reads indices up to " + std::to_string(uint64_t(draw.first) + draw.count) + " of " +
			            std::to_string(indices->elements));
		// The largest index decides how many vertices the draw reads (only when the draw or the buffer changed).
		const scene::BufferView& v = *object_->indices;
		const scene::ArrayBuffer& data = v.buffer.getValue(Token{this});
		const bool u16 = v.format == VK_FORMAT_R16_UINT;
		const std::byte* base = data.data() + v.offset + uint64_t(draw.first) * (u16 ? 2 : 4);
		const uint32_t max_index = classic::maxIndex(base, u16, draw.count);
		const int64_t last = int64_t(max_index) + draw.base_vertex;
		if (last < 0)
			return fail("base vertex " + std::to_string(draw.base_vertex) + " makes indices negative");
		vertices = uint64_t(last) + 1;
	}
	const uint64_t instances = uint64_t(draw.first_instance) + draw.instance_count;
	const size_t uniforms = bucket ? entries.size() - views_.size() : 0;
	for (size_t i = 0; i < views_.size(); ++i)
	{
		const Entry* e = entries[uniforms + i];
		const uint64_t n = views_[i]->per_instance ? instances : vertices;
		if (n > e->elements)
			return fail("attribute '" + (bucket ? bucket->indirect_effect->iface.attributes[i].name : std::string()) +
			            "' holds " + std::to_string(e->elements) + " elements but the draw reads " + std::to_string(n) +
			            (views_[i]->per_instance ? " instances" : " vertices"));
	}
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
		            "on the classic path, or set HeapOptions::skip_ineligible and give it to a classic pass");
	QUOKKA_TRY_ASSIGN(source, scene_->context->objectEffect(o));
	QUOKKA_TRY_ASSIGN(planned, scene_->heapEffect(*source));
	plan.source = source;
	plan.planned = planned;
	const fx::EffectInterface& iface = planned->compiled->iface;
	inputs_.clear();
	views_.clear();
	return evaluate(
	    *object_,
	    [&]() -> Result<void>
	    {
		    // Read everything first (shader-driven: only what the compiled effect uses), then place.
		    // Values derived from the object's ModelTrafo alone are pooled by (input, recipe): no adaptive node per
		    // object, and nothing left in the derived table when the object goes.
		    // (Inline storage: an add otherwise spent a dozen allocations growing these few-element arrays.)
		    plan.uniforms.assign(iface.uniforms.size(), aval<UniformValue>());
		    plan.recipes.assign(iface.uniforms.size(), classic::DerivedRecipe{});
		    views_.reserve(iface.attributes.size());
		    QUOKKA_TRY(scene_->derived.resolve(o, planned->uniforms, plan.uniforms, plan.recipes));
		    for (const fx::InterfaceVariable& a : iface.attributes)
		    {
			    auto it = o.attributes.find(a.name);
			    if (it == o.attributes.end())
				    return fail("effect needs the vertex attribute '" + a.name + "' (" + fx::typeName(a.type) +
				                "), which the object does not have");
			    if (scene::formatSize(it->second.format) == 0 || !classic::formatFeeds(it->second.format, a.type))
				    return fail("attribute '" + a.name + "' has a format that cannot feed a " + fx::typeName(a.type) +
				                " input");
			    views_.push_back(&it->second);
			    track(it->second.buffer.node().get(), kBuffer);
		    }
		    if (o.indices)
		    {
			    if (o.indices->format != VK_FORMAT_R16_UINT && o.indices->format != VK_FORMAT_R32_UINT)
				    return fail("indices must be R16_UINT or R32_UINT");
			    if (o.indices->offset % (o.indices->format == VK_FORMAT_R16_UINT ? 2 : 4) != 0)
				    return fail("the index offset must be a multiple of the index size");
			    track(o.indices->buffer.node().get(), kBuffer);
		    }
		    const scene::PipelineState& st = o.state;
		    auto trackState = [&](const auto&... leaves) { (track(leaves.node().get(), kState), ...); };
		    trackState(st.topology, st.cull_mode, st.front_face, st.depth_test, st.depth_write, st.depth_compare,
		               st.depth_clamp, st.depth_bias, st.stencil, st.default_blend, st.alpha_to_coverage);
		    for (const auto& [name, b] : st.blend)
			    trackState(b);
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
		    absl::InlinedVector<classic::PackedValue, PrivateSet::kUniformParts> packed_private;
		    for (size_t i = 0; i < uniforms.size() && packed_private.size() < PrivateSet::kUniformParts; ++i)
		    {
			    if (!unheld[i])
				    continue;
			    classic::PackedValue packed;
			    try
			    {
				    packed = classic::packDerived(recipes[i], uniforms[i].getValue(Token{this}));
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
						    const classic::PackedValue& packed = packed_private[next_uniform];
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
		const classic::PackedValue p =
		    classic::packDerived(classic::DerivedRecipe(part.key.format), u.getValue(Token{this}));
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

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] pools, buckets and slots
// ---------------------------------------------------------------------------------------------------------------------

uint32_t detail::HeapCore::openChunk()
{
	chunks.push_back(std::make_unique<Chunk>(max_chunk_bytes));
	shape_changed = upload_chunks = true;
	return uint32_t(chunks.size() - 1);
}

Result<uint32_t> detail::HeapCore::allocate(uint32_t chunk, uint32_t data_bytes)
{
	const std::optional<uint32_t> at = chunks[chunk]->allocator.allocate(16ull + data_bytes);
	if (!at)
	{
		chunk_full = true;
		return makeError(ErrorCode::OutOfMemory, "arena chunk full");
	}
	shape_changed = upload_chunks = true;
	return *at;
}

Result<std::pair<uint32_t, std::byte*>> detail::HeapCore::allocateStaged(uint32_t chunk, uint32_t type_id,
                                                                         uint32_t length, uint32_t data_bytes)
{
	QUOKKA_TRY_ASSIGN(ref, allocate(chunk, data_bytes));
	Result<std::byte*> staged = stageAllocation(pages, *chunks[chunk], ref, type_id, length, data_bytes);
	if (!staged.ok())
	{
		freeBlock(chunk, ref);
		return staged.error();
	}
	return std::pair{ref, staged.value()};
}

Result<Entry*> detail::HeapCore::acquireUniform(const aval<UniformValue>& value, classic::DerivedRecipe recipe,
                                                uint32_t chunk, fx::Type expected, const scene::RenderObject& object,
                                                const std::string& name, bool unheld)
{
	auto mismatch = [&](fx::Type got) { return uniformMismatch(object, name, expected, got); };
	const bool constant = value.node()->isConstant();
	classic::PackedValue packed{};
	const PoolKey key = uniformKey(constant ? nullptr : value.node().get(), recipe, chunk);
	ConstantKey constant_key;
	auto shared = [&](Entry* e) -> Result<Entry*>
	{
		if (e->type != expected)
			return mismatch(e->type);
		++e->refcount;
		return e;
	};
	if (constant)
	{
		// Equal constants share one allocation: the key is the value itself.
		packed = classic::packDerived(recipe, value.force());
		constant_key.chunk = chunk;
		constant_key.type = packed.type;
		std::memcpy(constant_key.value.data(), packed.f, packed.type.packedBytes());
		if (auto it = constants.find(constant_key); it != constants.end())
			return shared(it->second.get());
	}
	if (!constant && !unheld)
	{
		if (Entry* e = pool.find(key))
			return shared(e);
		if (value.node()->outputCount() != 0)
			promotePrivate(value.node().get());
	}
	Ref<UniformEntry> e = adaptive::makeRef<UniformEntry>(*this, chunk);
	if (!constant)
	{
		e->uniform = value;
		e->recipe = recipe;
		e->beginEvaluation();
		try
		{
			packed = classic::packDerived(recipe, value.getValue(Token{e.get()}));
		}
		catch (const std::exception& ex)
		{
			e->endEvaluation(false);
			return makeError(ErrorCode::InvalidArgument,
			                 classic::objectName(object) + ": uniform '" + name + "' threw: " + ex.what());
		}
		e->endEvaluation(true);
	}
	if (packed.type != expected)
		return mismatch(packed.type);
	e->type = packed.type;
	e->elements = 1;
	e->data_bytes = packed.type.packedBytes();
	QUOKKA_TRY_ASSIGN(staged, allocateStaged(chunk, kTypeUniform, 1, e->data_bytes));
	const auto [ref, out] = staged;
	std::memcpy(out, packed.f, e->data_bytes);
	e->ref = ref;
	e->refcount = 1;
	e->key = key;
	Entry* raw = e.get();
	if (constant)
	{
		e->constant = std::make_unique<ConstantKey>(constant_key);
		constants.emplace(constant_key, std::move(e));
		return raw;
	}
	if (e->placementIndexed() && !unheld) // (a node no entry read is not listed)
		if (auto it = uniform_chunks.find(key.node); it != uniform_chunks.end())
		{
			it->second |= uint64_t(1) << chunk;
			e->indexed = true;
		}
	pool.insert(e);
	return raw;
}

Result<Entry*> detail::HeapCore::acquireBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
                                               uint32_t chunk, const scene::RenderObject& object,
                                               const std::string& name)
{
	// Read without subscribing: the objects using this buffer track it and re-place themselves on a change. The key
	// is the value's storage (ArrayBuffer equality is storage identity), held by the entry so the address is not
	// reused: after a change the first user to re-place creates the new entry and the others share it, while the old
	// one dies with its last user — no user can pick up the old bytes.
	const scene::ArrayBuffer& data = view.buffer.getValue(Token{}); // (a reference: no reference-count traffic)
	const PoolKey key = bufferKey(kind, view, type, chunk);
	// No lookup (a probe that fails at a random place of a table of millions) for a buffer no entry can hold — the
	// common case of an add.
	if (!storageUnheld(view, data))
		if (Entry* e = pool.find(key))
		{
			++e->refcount;
			return e;
		}
	const BufferLayout layout = bufferLayout(kind, view, type, data);
	const uint32_t n = layout.elements;
	const uint64_t data_bytes = layout.data_bytes;
	if (data_bytes + 16 > max_chunk_bytes)
		return bufferTooLarge(object, name, data_bytes + 16);
	// Convert straight into the staged bytes.
	QUOKKA_TRY_ASSIGN(
	    staged, allocateStaged(chunk, kind == Entry::kIndex ? kTypeIndex : kTypeAttribute, n, uint32_t(data_bytes)));
	const uint32_t ref = staged.first;
	if (Result<void> r =
	        convertBuffer(kind, view, type, layout, data, reinterpret_cast<uint32_t*>(staged.second), object, name);
	    !r.ok())
	{
		freeBlock(chunk, ref); // (the staged bytes land in a free block: harmless)
		return r.error();
	}
	auto e = std::make_unique<BufferEntry>(kind, chunk);
	if (view.buffer.node()->isConstant())
		e->node = Ref<AdaptiveObject>(view.buffer.node().get());
	else
		e->buffer = data;
	e->type = type;
	e->elements = n;
	e->data_bytes = uint32_t(data_bytes);
	e->ref = ref;
	e->refcount = 1;
	e->key = key;
	Entry* raw = e.get();
	pool.insert(std::move(e));
	return raw;
}

Result<void> detail::HeapCore::convertBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
                                             const BufferLayout& layout, const scene::ArrayBuffer& data, uint32_t* out,
                                             const scene::RenderObject& object, const std::string& name)
{
	if (!detail::convertToArena(kind == Entry::kIndex, view, type, layout, data, out))
		return makeError(ErrorCode::InvalidArgument, classic::objectName(object) + ": attribute '" + name +
		                                                 "' has a format the heap cannot convert to " +
		                                                 fx::typeName(type));
	return {};
}

Result<void> detail::HeapCore::stageUniform(uint32_t chunk, uint32_t ref, const classic::PackedValue& p, uint32_t bytes)
{
	Chunk& c = *chunks[chunk];
	if (c.pendingEndsAt(ref))
	{
		// The previous re-pack ends where this allocation starts (an object's uniforms sit side by side): staging the
		// unchanged header too makes both one copy region. Drivers pay per region (on the H200, vkCmdCopyBuffer's
		// regions were ~15 % of a frame of 10^4 edits), so 16 more bytes are cheaper than a second region.
		QUOKKA_TRY_ASSIGN(out, stageAllocation(pages, c, ref, kTypeUniform, 1, bytes));
		std::memcpy(out, p.f, bytes);
		return {};
	}
	return c.write(pages, ref + 16, p.f, bytes);
}

void detail::HeapCore::promotePrivate(AdaptiveObject* node)
{
	node->forEachOutput(
	    [&](AdaptiveObject* consumer)
	    {
		    if (auto* h = dynamic_cast<HeapObject*>(consumer); h && h->scene() == this && h->holdsPrivate(node))
			    h->requestReplace();
	    });
}

void detail::HeapCore::freeBatch(FreeBatch& batch)
{
	if (!batch.refs.empty())
	{
		chunks[batch.chunk]->allocator.freeMany(batch.refs);
		shape_changed = upload_chunks = compaction_check = true;
	}
	batch.refs.clear();
}

uint64_t detail::HeapCore::heldChunks(const void* node)
{
	if (auto it = uniform_chunks.find(node); it != uniform_chunks.end())
		return it->second;
	// First asked: one pool lookup per chunk, then listed (and its entries marked) until its last entry goes.
	uint64_t mask = 0;
	for (uint32_t c = 0; c < 64 && c < chunks.size(); ++c)
		if (Entry* e = pool.find(PoolKey::uniform(node, c)))
		{
			UniformEntry* u = asUniform(e);
			QUOKKA_ASSERT(u && u->placementIndexed() && !u->indexed, "an unlisted node's entry is marked listed");
			u->indexed = true;
			mask |= uint64_t(1) << c;
		}
	if (mask != 0)
		uniform_chunks.emplace(node, mask);
	return mask;
}

void detail::HeapCore::releaseEntry(Entry* e, FreeBatch* batch)
{
	QUOKKA_ASSERT(e->refcount > 0, "pool entry released more often than acquired");
	if (--e->refcount > 0)
		return;
	QUOKKA_ASSERT(!e->priv, "a private part released as a pool entry");
	freeLater(batch, e->chunk, e->ref);
	const UniformEntry* u = asUniform(e);
	if (u && u->indexed)
		if (auto it = uniform_chunks.find(e->key.node);
		    it != uniform_chunks.end() && !(it->second &= ~(uint64_t(1) << e->chunk)))
			uniform_chunks.erase(it);
	// Erasing may destroy e (unless queued for a re-pack, which then skips it).
	if (u && u->constant)
		constants.erase(*u->constant);
	else if (defer_pool_erase)
		doomed_entries.push_back({e, Pool::hashOf(e->key)});
	else
		pool.erase(e);
}

void detail::HeapCore::eraseDoomed()
{
	// Each erasure reads the entry's home slot, the entry and, for a uniform entry, the node its destruction
	// unsubscribes from. By the time this loop runs the frame's removals have moved on through megabytes of other
	// objects, so the entries are cold again: the slot (from the hash kept at removal) and the entry are fetched
	// 2 × kAhead erasures ahead, the node — found through the entry — kAhead ahead.
	constexpr size_t kAhead = 8;
	const size_t n = doomed_entries.size();
	auto far = [&](const Doomed& d)
	{
		pool.prefetch(d.hash);
		prefetchLines(d.entry, 2);
	};
	auto near = [&](const Doomed& d)
	{
		if (const UniformEntry* u = asUniform(d.entry); u && u->uniform.node())
			__builtin_prefetch(u->uniform.node().get());
	};
	for (size_t i = 0; i < std::min(n, 2 * kAhead); ++i)
		far(doomed_entries[i]);
	for (size_t i = 0; i < std::min(n, kAhead); ++i)
		near(doomed_entries[i]);
	for (size_t i = 0; i < n; ++i)
	{
		if (i + 2 * kAhead < n)
			far(doomed_entries[i + 2 * kAhead]);
		if (i + kAhead < n)
			near(doomed_entries[i + kAhead]);
		pool.erase(doomed_entries[i].entry, doomed_entries[i].hash);
	}
	doomed_entries.clear();
}

Result<const detail::HeapCore::HeapEffect*> detail::HeapCore::heapEffect(const fx::Effect& effect)
{
	if (auto it = heap_effects.find(effect.id()); it != heap_effects.end())
		return &it->second;
	QUOKKA_TRY_ASSIGN(compiled, context->effects().compile(effect, outputs, fx::PathVariant::HeapIndirect));
	std::vector<std::string> names;
	for (const fx::UniformMember& m : compiled->iface.uniforms)
		names.push_back(m.name);
	classic::UniformPlan plan(names);
	return &heap_effects.emplace(effect.id(), HeapEffect{std::move(compiled), std::move(plan)}).first->second;
}

Result<Bucket*> detail::HeapCore::bucketFor(const scene::RenderObject& o, const fx::Effect& source,
                                            const fx::CompiledEffectPtr& effect, uint32_t chunk)
{
	BucketKey key{effect->key, chunk, {}};
	std::vector<Ref<classic::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	for (const fx::TextureBinding& t : effect->iface.textures)
	{
		auto it = o.textures.find(t.name);
		if (it == o.textures.end())
			return makeError(ErrorCode::InvalidArgument, classic::objectName(o) + ": effect samples the texture '" +
			                                                 t.name + "', which the object does not have");
		textures.push_back(context->texture(it->second));
		auto sit = o.samplers.find(t.name);
		QUOKKA_TRY_ASSIGN(sampler, context->sampler(sit == o.samplers.end() ? scene::SamplerState{} : sit->second));
		key.textures.push_back(textures.back().get());
		key.textures.push_back(sampler.get());
		samplers.push_back(std::move(sampler));
	}
	auto it = buckets.find(key);
	if (it != buckets.end())
		return it->second.get();
	auto b = std::make_unique<Bucket>();
	sweep_pending = true; // dropped again if placement fails before it is used
	b->chunk = chunk;
	b->effect = source;
	b->indirect_effect = effect;
	b->header_words = effect->iface.header_words;
	b->textures = std::move(textures);
	b->samplers = std::move(samplers);
	for (const fx::TextureBinding& t : effect->iface.textures)
		b->texture_bindings.push_back(t.binding);
	b->serial = next_bucket_serial++;
	Bucket* raw = b.get();
	buckets.emplace(std::move(key), std::move(b));
	bucket_order.push_back(raw);
	return raw;
}

Result<Slot*> detail::HeapCore::slotFor(Bucket& b, const scene::PipelineStateValues& state, bool indexed)
{
	for (const Bucket::Known& k : b.known)
		if (k.indexed == indexed && k.state == state)
			return k.slot;
	QUOKKA_TRY_ASSIGN(slot, createSlot(b, state, indexed));
	b.known.push_back({state, indexed, slot});
	return slot;
}

Result<Slot*> detail::HeapCore::createSlot(Bucket& b, const scene::PipelineStateValues& state, bool indexed)
{
	classic::PipelineRequest req;
	req.effect = b.indirect_effect;
	req.topology = state.topology;
	for (const scene::ColorAttachment& c : signature.colors)
	{
		req.color_formats.push_back(c.format);
		req.blend.push_back(classic::toVk(state.blendFor(c.name)));
	}
	req.depth_format = signature.depth_format;
	req.samples = signature.samples;
	req.alpha_to_coverage = state.alpha_to_coverage;
	req.depth_clamp = state.depth_clamp;
	QUOKKA_TRY_ASSIGN(entry, context->pipeline(req));
	const gpu::DynamicState dyn = classic::dynamicState(state, signature.hasDepth());
	for (const auto& s : b.slots)
		if (s->indirect_pipeline == entry && s->dyn == dyn && s->indexed == indexed)
			return s.get();
	auto s = std::make_unique<Slot>();
	sweep_pending = true; // dropped again if placement fails before it is used
	s->bucket = &b;
	s->indirect_pipeline = entry;
	s->request = std::move(req);
	s->dyn = dyn;
	s->indexed = indexed;
	s->prim = primitiveVertices(state.topology);
	s->draw_count.words = {0};
	s->strategy = options.draw == DrawStrategy::Megacall ? DrawStrategy::Megacall : DrawStrategy::Indirect;
	b.slots.push_back(std::move(s));
	shape_changed = true;
	return b.slots.back().get();
}

void detail::HeapCore::chooseStrategy(Slot& s)
{
	if (options.draw != DrawStrategy::Auto || s.records.empty())
		return;
	// Mean vertices emitted per record, with a ±25 % band so a slot hovering at the crossover does not flip every
	// frame (a flip re-uploads the slot's whole array).
	const double mean = double(s.emit_sum) / double(s.records.size());
	const double t = options.megacall_below;
	DrawStrategy want = s.strategy;
	if (s.strategy == DrawStrategy::Indirect && mean < t * 0.75)
		want = DrawStrategy::Megacall;
	else if (s.strategy == DrawStrategy::Megacall && mean > t * 1.25)
		want = DrawStrategy::Indirect;
	if (want == s.strategy)
		return;
	s.strategy = want;
	shape_changed = true;
	(want == DrawStrategy::Megacall ? s.mrecords : s.commands).touchAll();
	s.draw_count.touchAll();
	s.scan_dirty = true;
}

void detail::HeapCore::compact()
{
	if (!std::exchange(compaction_check, false))
		return;
	for (uint32_t c = 0; c < chunks.size(); ++c)
	{
		Chunk& chunk = *chunks[c];
		if (!chunk.allocator.shouldCompact(options.compaction_floor))
			continue;
		if (!chunk.buffer || !chunk.moves.empty())
		{
			compaction_check = true; // (not yet: looked at again next frame)
			continue;
		}
		std::vector<ChunkAllocator::Move> moves = chunk.allocator.planCompaction();
		if (moves.empty())
			continue;
		shape_changed = upload_chunks = true;
		forEachEntry(
		    [&](Entry& e)
		    {
			    if (e.chunk == c)
				    e.ref = ChunkAllocator::remap(moves, e.ref);
		    });
		for (Bucket* b : bucket_order)
		{
			if (b->chunk != c)
				continue;
			for (const auto& s : b->slots)
			{
				for (HeapObject* h : s->records)
				{
					if (h->owned)
					{
						// (A placed object's private block is in its bucket's chunk, and only placed objects own one.)
						h->owned->block = ChunkAllocator::remap(moves, h->owned->block);
						for (uint32_t i = 0; i < h->owned->count; ++i)
							h->owned->parts[i].ref = ChunkAllocator::remap(moves, h->owned->parts[i].ref);
					}
					h->rewrite();
				}
				markSlot(s.get());
			}
		}
		chunk.moves = std::move(moves);
		++stats->compactions;
	}
}

detail::HeapCore::Shape detail::HeapCore::sumShape() const
{
	Shape s;
	for (const Bucket* b : bucket_order)
		for (const auto& slot : b->slots)
		{
			++s.slots;
			++(slot->strategy == DrawStrategy::Megacall ? s.megacall_slots : s.indirect_slots);
		}
	s.chunks = uint32_t(chunks.size());
	for (const auto& c : chunks)
	{
		s.arena_bytes += c->allocator.cursor();
		s.live_bytes += c->allocator.liveBytes();
	}
	return s;
}

void detail::HeapCore::sweep()
{
	// Only a frame that emptied a slot or a bucket has anything to drop: other frames skip the O(buckets) walk.
	if (!std::exchange(sweep_pending, false))
		return;
	shape_changed = true;
	std::erase_if(dirty_slots, [](const Slot* s) { return s->records.empty(); });
	for (Bucket* b : bucket_order)
	{
		std::erase_if(b->known, [](const Bucket::Known& k) { return k.slot->records.empty(); });
		std::erase_if(b->slots, [](const std::unique_ptr<Slot>& s) { return s->records.empty(); });
	}
	std::erase_if(dirty_headers, [](const Bucket* b) { return b->objects == 0; });
	std::erase_if(bucket_order, [](const Bucket* b) { return b->objects == 0; });
	std::erase_if(buckets, [](const auto& kv) { return kv.second->objects == 0; });
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] the frame: update
// ---------------------------------------------------------------------------------------------------------------------

HeapScene::HeapScene(classic::Context& context, scene::FramebufferSignature signature,
                     adaptive::aset<RenderObjectPtr> objects, HeapOptions options)
    : impl_(std::make_unique<detail::HeapCore>()), options_(options)
{
	detail::HeapCore& p = *impl_;
	p.context = &context;
	p.signature = std::move(signature);
	p.outputs.colors = p.signature.colorNames();
	p.options = options;
	p.stats = &stats_;
	// The draw headers and records the heap stages through the context's ring.
	context.staging().setScatterAbove(options.ring_scatter_above);
	const uint64_t range = context.device().info().max_storage_buffer_range;
	p.max_chunk_bytes = options.max_chunk_bytes ? options.max_chunk_bytes : std::min<uint64_t>(range, 256ull << 20);
	p.max_chunk_bytes = std::min<uint64_t>(p.max_chunk_bytes, range) & ~uint64_t(15);
	p.reader = objects.getDeltaReader();
	p.pages.bind(context.device());
}

HeapScene::~HeapScene()
{
	// The objects leave their input nodes (which outlive the scene) and give nothing else back: the pool, the chunks
	// and the buckets are dropped whole below (the core's members), each entry once, however many objects shared it.
	impl_->closing = true;
	impl_->objects.forEach([](HeapObject* h) { h->detach(); });
	impl_->objects.clear();
	for (const auto& c : impl_->chunks)
		c->allocator.reset(); // (dropped with the scene: no leak to report)
	impl_->dirty_objects.clear();
	impl_->dirty_entries.clear();
}

size_t HeapScene::objectCount() const
{
	return impl_->objects.size();
}

adaptive::aset<RenderObjectPtr> HeapScene::skipped() const
{
	return impl_->skipped;
}

namespace
{

/// One HeapScene::update(), as its steps: pull the set's changes, remove, collect derived uniforms, place the additions
/// in batches, re-pack changed shared values, refresh changed objects, then publish the shape. Each loop over
/// scattered objects prefetches ahead (the distances were measured; the comments say where each line is fetched).
class FrameUpdate
{
public:
	FrameUpdate(detail::HeapCore& p, HeapStats& stats) : p_(p), stats_(stats) {}

	Result<void> run()
	{
		p_.compact();
		pullChanges();
		removeObjects();
		updateSkipped();
		collectDerived();
		placeObjects();
		p_.objects.flush();
		p_.pool.flush();
		repackChangedValues();
		refreshChangedObjects();
		p_.sweep();
		for (Slot* s : p_.dirty_slots)
			p_.chooseStrategy(*s);
		publishShape();
		return std::move(result_);
	}

private:
	/// The set's delta: removals, and additions in object-id order (placement, and therefore the draw order, never
	/// depends on addresses). Objects the heap cannot draw go to the skipped set when the options say so.
	void pullChanges()
	{
		changes_ = p_.reader->getChanges(Token{});
		std::vector<const RenderObjectPtr*> adding;
		for (const auto& [object, count] : changes_)
			if (count < 0)
				removed_.push_back(&object); // (one never placed is not found below)
			else
				adding.push_back(&object);
		// The objects are cold, so each is read once — its id beside the pointer, a few objects ahead — and the sort
		// compares ids.
		added_.reserve(adding.size());
		for (size_t i = 0; i < adding.size(); ++i)
		{
			constexpr size_t kAhead = 8;
			if (i + kAhead < adding.size())
				__builtin_prefetch(adding[i + kAhead]->get());
			const scene::RenderObject& object = **adding[i];
			if (!p_.options.skip_ineligible || heapEligible(object))
				added_.emplace_back(object.id, adding[i]);
			else
				skip_added_.push_back(adding[i]);
		}
		std::sort(added_.begin(), added_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
		// (Removals run first, so their blocks are reused by this frame's additions.)
	}

	/// Removals: the lookups, then the detaches, with scattered objects prefetched ahead (HeapObject::prefetch); pool
	/// entries that lost their last user are erased together at the end.
	void removeObjects()
	{
		constexpr size_t kAhead = 4;
		std::vector<Ref<HeapObject>> doomed;
		doomed.reserve(removed_.size());
		for (size_t i = 0; i < removed_.size(); ++i)
		{
			if (i + 2 * kAhead < removed_.size())
				p_.objects.prefetch(removed_[i + 2 * kAhead]->get());
			Ref<HeapObject> h = p_.objects.take(removed_[i]->get());
			if (!h)
			{
				if (p_.options.skip_ineligible)
					skip_removed_.push_back(removed_[i]); // (skipped when it came)
				continue;
			}
			doomed.push_back(std::move(h));
		}
		using Stage = HeapObject::PrefetchStage;
		p_.defer_pool_erase = true;
		for (size_t i = 0; i < doomed.size(); ++i)
		{
			// (The lookups above never read the objects: the table compares hashes only.)
			if (i + 4 * kAhead < doomed.size())
				doomed[i + 4 * kAhead]->prefetch(Stage::kObject);
			if (i + 3 * kAhead < doomed.size())
				doomed[i + 3 * kAhead]->prefetch(Stage::kArrays);
			if (i + 2 * kAhead < doomed.size())
				doomed[i + 2 * kAhead]->prefetch(Stage::kEntries);
			if (i + kAhead < doomed.size())
				doomed[i + kAhead]->prefetch(Stage::kPool);
			// (The slot's last object changes with every swap-pop: looked at only one and two removals ahead.)
			if (i + 2 < doomed.size())
				doomed[i + 2]->prefetch(Stage::kSlot);
			if (i + 1 < doomed.size())
				doomed[i + 1]->prefetch(Stage::kLast);
			doomed[i]->detach();
			doomed[i] = Ref<HeapObject>();
		}
		p_.defer_pool_erase = false;
		p_.eraseDoomed();
		stats_.removed += uint32_t(doomed.size());
	}

	void updateSkipped()
	{
		if (skip_added_.empty() && skip_removed_.empty())
			return;
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr* o : skip_removed_)
				    p_.skipped.remove(*o);
			    for (const RenderObjectPtr* o : skip_added_)
				    p_.skipped.add(*o);
		    });
	}

	/// Derived uniforms of removed objects: collected in O(size) once the removals since the last collection reach
	/// half the live objects (amortised O(1) per removal; ScenePass::update explains the threshold).
	void collectDerived()
	{
		p_.removed_since_collect += stats_.removed;
		if (p_.removed_since_collect > 64 && p_.removed_since_collect * 2 > p_.objects.size())
		{
			p_.derived.collect();
			p_.removed_since_collect = 0;
		}
	}

	/// An object that fails a placement phase is left out (until an input changes: its edges are kept) and dropped
	/// from its batch's later phases; the first error is kept.
	void settle(Ref<HeapObject>& h, Result<void> r)
	{
		if (r.ok())
			return;
		h->unplace();
		if (result_.ok())
			result_ = std::move(r);
		h = Ref<HeapObject>();
	}

	/// Placement phase by phase over batches of kBatch objects (HeapObject::Plan says why): read, acquire, attach.
	void placeObjects()
	{
		batch_.reserve(std::min(kBatch, added_.size()));
		plans_.resize(std::min(kBatch, added_.size())); // (none in a frame without additions)
		for (size_t first = 0; first < added_.size(); first += kBatch)
		{
			const size_t last = std::min(added_.size(), first + kBatch);
			readBatch(first, last);
			acquireBatch();
			for (size_t j = 0; j < batch_.size(); ++j)
			{
				plans_[j] = HeapObject::Plan{}; // (drops the uniform values it holds)
				if (batch_[j])
					settle(batch_[j], batch_[j]->attach());
			}
		}
	}

	/// Makes the heap objects of additions [first, last) and reads their inputs into their plans.
	void readBatch(size_t first, size_t last)
	{
		batch_.clear();
		for (size_t i = first; i < last; ++i)
		{
			// Reading an object touches the object, the nodes of its attribute and uniform maps and the input nodes
			// they hold — scattered lines, each a miss in a large scene, most of them known only once the one before
			// is read. Fetched in stages ahead, each stage reading only what the one before fetched: the object and
			// its table slot (eight objects ahead), its maps' first nodes and its index node (four), every map
			// node's input node (two).
			constexpr size_t kAhead = 2;
			if (i + 4 * kAhead < added_.size())
			{
				const scene::RenderObject* ahead = added_[i + 4 * kAhead].second->get();
				p_.objects.prefetch(ahead);
				prefetchLines(ahead, int(sizeof(scene::RenderObject) / 64) + 1);
			}
			if (i + 2 * kAhead < added_.size())
			{
				const scene::RenderObject& ahead = **added_[i + 2 * kAhead].second;
				if (!ahead.attributes.empty())
					__builtin_prefetch(&*ahead.attributes.begin());
				if (!ahead.uniforms.empty())
					__builtin_prefetch(&*ahead.uniforms.begin());
				if (ahead.indices)
					__builtin_prefetch(ahead.indices->buffer.node().get());
			}
			if (i + kAhead < added_.size())
			{
				const scene::RenderObject& ahead = **added_[i + kAhead].second;
				for (const auto& [name, view] : ahead.attributes)
					__builtin_prefetch(view.buffer.node().get());
				for (const auto& [name, value] : ahead.uniforms)
					__builtin_prefetch(value.node().get());
			}
			const RenderObjectPtr& object = *added_[i].second;
			Ref<HeapObject> h = adaptive::makeRef<HeapObject>(p_, object);
			p_.objects.insert(object.get(), h);
			settle(h, h->read(plans_[i - first]));
			batch_.push_back(std::move(h));
		}
	}

	/// Acquires the batch's arena space and pooled inputs. Acquiring copies the buffers: their storage is read first
	/// through its reference count (the control block beside the byte vector: one line) and then copied — the control
	/// block one object ahead, the data's first lines just before (the hardware streams the rest).
	void acquireBatch()
	{
		auto views = [](const scene::RenderObject& o, auto&& fn)
		{
			for (const auto& [name, view] : o.attributes)
				fn(view);
			if (o.indices)
				fn(*o.indices);
		};
		for (size_t j = 0; j < batch_.size(); ++j)
		{
			if (j + 1 < batch_.size() && batch_[j + 1])
				views(batch_[j + 1]->object(),
				      [](const scene::BufferView& v)
				      {
					      if (const scene::ArrayBuffer* b = cachedBuffer(v))
					      {
						      // (make_shared puts the counts 16 bytes before the vector, maybe in the line before)
						      __builtin_prefetch(reinterpret_cast<const char*>(b->bytes.get()) - 16);
						      __builtin_prefetch(b->bytes.get());
					      }
				      });
			if (!batch_[j])
				continue;
			views(batch_[j]->object(),
			      [](const scene::BufferView& v)
			      {
				      if (const scene::ArrayBuffer* b = cachedBuffer(v); b && v.offset < b->size())
					      prefetchLines(b->data() + v.offset,
					                    int(std::min<uint64_t>(b->size() - v.offset, 256) + 63) / 64);
			      });
			settle(batch_[j], batch_[j]->acquire(plans_[j]));
		}
	}

	/// Changed shared values: one re-pack each, in arena address order — the staging ring then appends each write
	/// instead of searching its ordered region map, and neighbouring allocations merge into one copy region.
	void repackChangedValues()
	{
		std::vector<Ref<UniformEntry>> entries;
		entries.swap(p_.dirty_entries);
		// The entries are scattered objects (10^4 random edits in a 10^6-object scene touch 10^4 cold entries and
		// their uniform nodes), so both loops prefetch ahead: each visit is then one cache hit instead of a miss per
		// level.
		constexpr size_t kAhead = 8;
		std::vector<std::pair<uint64_t, UniformEntry*>> by_address;
		by_address.reserve(entries.size());
		for (size_t i = 0; i < entries.size(); ++i)
		{
			if (i + kAhead < entries.size())
				prefetchLines(entries[i + kAhead].get(), 4);
			const UniformEntry* e = entries[i].get();
			by_address.emplace_back(uint64_t(e->chunk) << 32 | e->ref, entries[i].get());
		}
		std::sort(by_address.begin(), by_address.end());
		for (size_t i = 0; i < by_address.size(); ++i)
		{
			if (i + 2 * kAhead < by_address.size())
				prefetchLines(by_address[i + 2 * kAhead].second, 4);
			if (i + kAhead < by_address.size())
				if (const auto& node = by_address[i + kAhead].second->uniform.node())
					prefetchLines(node.get(), 4);
			Result<void> r = by_address[i].second->repack();
			if (!r.ok() && result_.ok())
				result_ = r;
		}
	}

	/// Objects whose inputs changed, re-read (re-placements may queue more: objects whose private uniform part a new
	/// pooled entry now holds). In object-id order (re-placements, and so the draw order, never depend on addresses):
	/// each id read once, a few objects ahead, then the pairs sorted — comparing through the scattered objects cost
	/// misses per comparison.
	void refreshChangedObjects()
	{
		for (std::vector<Ref<HeapObject>> dirty; !p_.dirty_objects.empty();)
		{
			dirty.clear();
			dirty.swap(p_.dirty_objects);
			std::vector<std::pair<uint64_t, HeapObject*>> order(dirty.size());
			for (size_t i = 0; i < dirty.size(); ++i)
			{
				constexpr size_t kIdAhead = 8;
				if (i + 2 * kIdAhead < dirty.size())
					__builtin_prefetch(dirty[i + 2 * kIdAhead].get());
				if (i + kIdAhead < dirty.size())
					__builtin_prefetch(&dirty[i + kIdAhead]->object());
				order[i] = {dirty[i]->object().id, dirty[i].get()};
			}
			std::sort(order.begin(), order.end());
			for (const auto& [id, h] : order)
			{
				Result<void> r = h->refresh();
				if (!r.ok() && result_.ok())
					result_ = r;
			}
		}
	}

	/// The statistics of the scene's shape (re-summed only after a block or slot changed).
	void publishShape()
	{
		stats_.objects = uint32_t(p_.objects.size());
		stats_.derived_uniforms = uint32_t(p_.derived.size());
		stats_.buckets = uint32_t(p_.bucket_order.size());
		if (std::exchange(p_.shape_changed, false))
			p_.shape = p_.sumShape();
		QUOKKA_ASSERT(p_.sumShape() == p_.shape, "heap shape figures changed without shape_changed");
		stats_.slots = p_.shape.slots;
		stats_.megacall_slots = p_.shape.megacall_slots;
		stats_.indirect_slots = p_.shape.indirect_slots;
		stats_.chunks = p_.shape.chunks;
		stats_.arena_bytes = p_.shape.arena_bytes;
		stats_.live_bytes = p_.shape.live_bytes;
	}

	static constexpr size_t kBatch = 32;
	detail::HeapCore& p_;
	HeapStats& stats_;
	Result<void> result_;
	/// The set's delta this frame: removed_, added_ and the skip lists point into it.
	decltype(std::declval<adaptive::SetReader<RenderObjectPtr>&>()->getChanges(Token{})) changes_;
	std::vector<const RenderObjectPtr*> removed_;
	std::vector<std::pair<uint64_t, const RenderObjectPtr*>> added_;
	std::vector<const RenderObjectPtr*> skip_added_, skip_removed_;
	std::vector<Ref<HeapObject>> batch_;
	std::vector<HeapObject::Plan> plans_;
};

} // namespace

Result<void> HeapScene::update()
{
	const auto t0 = std::chrono::steady_clock::now();
	const HeapStats keep = stats_;
	stats_ = HeapStats{};
	stats_.compactions = keep.compactions;
	FrameUpdate frame(*impl_, stats_);
	Result<void> result = frame.run();
	stats_.update_ms = msSince(t0);
	return result;
}

} // namespace quokka::heap
