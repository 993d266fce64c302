// input_pool.cpp — the pooled inputs (input_pool.hpp): the entries' record caches, a uniform entry's re-pack, and
// HeapCore's acquisition and release of entries — the sharing rules (identity keys, constant interning, private blocks
// promoted when a value gains a second reader, the node → chunk placement index) and the batched erasure of entries
// that lost their last user.
#include <algorithm>
#include <cstring>

#include "heap_internal.hpp"

namespace quokka::heap
{

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

void* DerivedEntry::operator new([[maybe_unused]] size_t bytes)
{
	QUOKKA_ASSERT(bytes == sizeof(DerivedEntry), "DerivedEntry is final");
	return RecordCache<sizeof(DerivedEntry)>::allocate();
}

void DerivedEntry::operator delete(void* p) noexcept
{
	RecordCache<sizeof(DerivedEntry)>::release(p);
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
	inputs::PackedValue p;
	try
	{
		p = detail::DerivedStep::pack(recipe, uniform.getValue(Token{this}));
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
// [SECTION] pools, buckets and slots
// ---------------------------------------------------------------------------------------------------------------------

Result<Entry*> detail::HeapCore::acquireUniform(const aval<UniformValue>& value, inputs::DerivedRecipe recipe,
                                                uint32_t chunk, fx::Type expected, const scene::RenderObject& object,
                                                const std::string& name, bool unheld)
{
	auto mismatch = [&](fx::Type got) { return uniformMismatch(object, name, expected, got); };
	const bool constant = value.node()->isConstant();
	inputs::PackedValue packed{};
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
		packed = detail::DerivedStep::pack(recipe, value.force());
		constant_key.chunk = chunk;
		constant_key.type = packed.type;
		std::memcpy(constant_key.value.data(), packed.f, packed.type.packedBytes());
		if (auto it = constants.find(constant_key); it != constants.end())
			return shared(it->second.get());
	}
	QUOKKA_ASSERT(recipe != inputs::DerivedRecipe::Gpu, "a GPU-derived uniform acquired by value");
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
			packed = detail::DerivedStep::pack(recipe, value.getValue(Token{e.get()}));
		}
		catch (const std::exception& ex)
		{
			e->endEvaluation(false);
			return makeError(ErrorCode::InvalidArgument,
			                 inputs::objectName(object) + ": uniform '" + name + "' threw: " + ex.what());
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

Result<Entry*> detail::HeapCore::acquireGpuDerived(const inputs::DerivedUniforms::DerivationPtr& d, uint32_t chunk,
                                                   fx::Type expected, const scene::RenderObject& object,
                                                   const std::string& name)
{
	const PoolKey key = uniformKey(d.get(), inputs::DerivedRecipe::Gpu, chunk);
	// (A derivation no entry holds yet — an object's fresh ModelViewProjTrafo — needs no search.)
	if (d->entries != 0)
		if (Entry* e = pool.find(key))
		{
			if (e->type != expected)
				return uniformMismatch(object, name, expected, e->type);
			++e->refcount;
			return e;
		}
	if (d->rule.type() != expected)
		return uniformMismatch(object, name, expected, d->rule.type());
	// Not read on the CPU: the block is allocated, its header staged over zeroed data, and the derive kernel writes
	// the value before this frame's draws. The entry holds the derivation (so its address, the key, stays unique).
	auto e = std::make_unique<DerivedEntry>(chunk);
	e->derivation = d;
	e->type = expected;
	e->elements = 1;
	e->data_bytes = expected.packedBytes();
	QUOKKA_TRY_ASSIGN(staged, allocateStaged(chunk, kTypeUniform, 1, e->data_bytes));
	const auto [ref, out] = staged;
	std::memset(out, 0, e->data_bytes);
	e->ref = ref;
	e->refcount = 1;
	e->key = key;
	if (Result<void> r = gpuDerive().add(*e, *d); !r.ok())
	{
		freeBlock(chunk, ref);
		return makeError(ErrorCode::InvalidArgument,
		                 inputs::objectName(object) + ": uniform '" + name + "': " + r.error().message);
	}
	++d->entries;
	Entry* raw = e.get();
	pool.insert(std::move(e));
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
	const bool index = kind == Entry::kIndex;
	// (A small buffer costs less to convert than to queue.)
	constexpr uint64_t kQueueAbove = 256;
	if (bulk.active() && layout.data_bytes > kQueueAbove && convertible(index, view.format, type, layout))
	{
		bulk.add({data.bytes, data.data() + view.offset, out, layout, type, view.format, index});
		return {};
	}
	if (!detail::convertToArena(index, view, type, layout, data, out))
		return makeError(ErrorCode::InvalidArgument, inputs::objectName(object) + ": attribute '" + name +
		                                                 "' has a format the heap cannot convert to " +
		                                                 fx::typeName(type));
	return {};
}

Result<void> detail::HeapCore::stageUniform(uint32_t chunk, uint32_t ref, const inputs::PackedValue& p, uint32_t bytes)
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

void Arena::freeBatch(FreeBatch& batch)
{
	if (!batch.refs.empty())
	{
		chunks[batch.chunk]->allocator.freeMany(batch.refs);
		blocks_changed = upload_chunks = compaction_check = true;
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
	if (DerivedEntry* d = asDerived(e))
	{
		gpuDerive().remove(*d);
		--d->derivation->entries;
	}
	UniformEntry* u = asUniform(e);
	if (u && u->indexed)
		if (auto it = uniform_chunks.find(u->key.node);
		    it != uniform_chunks.end() && !(it->second &= ~(uint64_t(1) << e->chunk)))
			uniform_chunks.erase(it);
	// Erasing may destroy e (unless queued for a re-pack, which then skips it).
	if (u && u->constant)
		constants.erase(*u->constant);
	else if (defer_pool_erase)
		doomed_entries.push_back({pooled(e), Pool::hashOf(pooled(e)->key)});
	else
		pool.erase(pooled(e));
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
	trimScratch(doomed_entries, n);
}

} // namespace quokka::heap
