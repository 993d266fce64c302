// input_pool.hpp — the heap's pooled inputs (internal to quokka::heap): what makes two inputs one pool entry
// (PoolKey, ConstantKey), the entries themselves (buffer entries, uniform entries, an object's private block) and the
// pool table. The sharing rules live here; HeapCore's acquire*/release* functions apply them (heap_scene.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include <absl/container/inlined_vector.h>

#include "heap_base.hpp"
#include "pointer_table.hpp"
#include <quokka/adaptive/core.hpp>
#include <quokka/base/block_cache.hpp>
#include <quokka/fx/types.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::heap
{

/// What makes two inputs the same pool entry: the kind, the chunk, the source's identity (a uniform's node; a
/// buffer's current storage) and, for buffers, how it is read. Constant uniforms are keyed by value in their own map
/// (ConstantKey): this key stays 32 bytes, so a lookup in the 5-entries-per-object pool touches one slot.
struct PoolKey
{
	const void* node = nullptr;
	uint32_t chunk = 0;
	uint32_t format = 0, offset = 0, stride = 0; ///< a buffer view's (VkFormat); 0 for uniforms
	fx::Type type;
	uint8_t kind = 0;
	inputs::DerivedRecipe recipe = inputs::DerivedRecipe::None; ///< a uniform's: `node` read through this recipe
	bool operator==(const PoolKey&) const = default;

	/// The key of a non-constant uniform (kind 0 = Entry::kUniform).
	static PoolKey uniform(const void* node, uint32_t chunk)
	{
		PoolKey k;
		k.chunk = chunk;
		k.node = node;
		return k;
	}
};

/// PoolKey's hash: the fields packed into three words and folded by two 64×64→128-bit multiplies (the wyhash mix).
/// absl's generic combine of the nine fields one by one was a tenth of a placement's pool cost (callgrind).
struct PoolKeyHash
{
	__extension__ typedef unsigned __int128 U128;
	static uint64_t mix(uint64_t a, uint64_t b)
	{
		const U128 r = static_cast<U128>(a) * b;
		return uint64_t(r) ^ uint64_t(r >> 64);
	}
	size_t operator()(const PoolKey& k) const
	{
		const uint64_t small = uint64_t(uint8_t(k.type.scalar)) | uint64_t(k.type.rows) << 8 |
		                       uint64_t(k.type.cols) << 16 | uint64_t(k.kind) << 24 | uint64_t(k.chunk) << 32;
		const uint64_t view = uint64_t(k.offset) | uint64_t(k.stride) << 32;
		return mix(reinterpret_cast<uintptr_t>(k.node) ^ 0xa0761d6478bd642full, small ^ 0xe7037ed1a0b428dbull) ^
		       mix(view ^ 0x8ebc6af09c88c6e3ull,
		           (uint64_t(k.format) | uint64_t(k.recipe) << 32) ^ 0x589965cc75374cc3ull);
	}
};
static_assert(sizeof(PoolKey) == 32, "a pool key stays half a cache line");

/// A constant uniform's pool key: equal constants share one allocation per chunk.
struct ConstantKey
{
	uint32_t chunk = 0;
	fx::Type type;
	std::array<uint32_t, 16> value{}; ///< the packed value (zero past its size)
	bool operator==(const ConstantKey&) const = default;
	template <typename H>
	friend H AbslHashValue(H h, const ConstantKey& k)
	{
		return H::combine(std::move(h), k.chunk, uint8_t(k.type.scalar), k.type.rows, k.type.cols, k.value);
	}
};

/// A pooled input in one chunk: a uniform value, a converted vertex attribute or widened indices — the part every kind
/// shares (what the allocation holds, where, and how many objects use it). Buffer entries (BufferEntry) are plain
/// records: they are read once, and the objects using a buffer re-place themselves when it changes. Uniform entries
/// (UniformEntry) are adaptive objects: they read their aval themselves (one re-pack per change, however many objects
/// share the value). Three of an object's five or so entries are buffers, so keeping the adaptive machinery (its
/// ~100-byte node, construction and teardown) out of them is a third less memory to touch per add and removal.
struct Entry
{
	enum Kind : uint8_t
	{
		kUniform,
		kAttribute,
		kIndex,
		kDerived, ///< a uniform value computed on the device (DerivedEntry)
	};
	Kind kind;
	/// A part of an object's PrivateSet (owned by that object: never pooled, never shared, no reference count to
	/// drop); false for the pool's entries.
	bool priv = false;
	uint32_t chunk;
	uint32_t ref = 0;      ///< byte offset of the allocation header in the chunk
	uint32_t elements = 0; ///< attribute elements / indices / 1
	uint32_t data_bytes = 0;
	uint32_t refcount = 0;
	fx::Type type;

	Entry(Kind k, uint32_t c) : kind(k), chunk(c) {}
	Entry(const Entry&) = delete;
	Entry& operator=(const Entry&) = delete;

protected:
	~Entry() = default; // (destroyed as its concrete type: dropPooled, Ref<UniformEntry>)
};
static_assert(Entry::kUniform == 0, "PoolKey::uniform assumes kind 0");
static_assert(sizeof(Entry) <= 28, "an entry stays small: an object's private set holds six");

/// An entry of the pool (not private): the key it is filed under. Private parts carry no key — their uniform parts'
/// node and recipe are their PrivateSet's — which keeps an object's private set at half the size.
struct PooledEntry : Entry
{
	PooledEntry(Kind k, uint32_t c) : Entry(k, c) {}
	PoolKey key; ///< the pool key (for erasure); node null for a constant uniform

protected:
	~PooledEntry() = default;
};

/// The pooled entry behind `e`, which is not a private part.
inline PooledEntry* pooled(Entry* e)
{
	QUOKKA_ASSERT(!e->priv, "a private part has no pool key");
	return static_cast<PooledEntry*>(e);
}
inline const PooledEntry* pooled(const Entry* e)
{
	QUOKKA_ASSERT(!e->priv, "a private part has no pool key");
	return static_cast<const PooledEntry*>(e);
}

/// A vertex attribute or index buffer converted into one chunk.
struct BufferEntry final : PooledEntry
{
	BufferEntry(Kind k, uint32_t c) : PooledEntry(k, c) {}
	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;

	/// Keep the keyed storage alive, so its address (the key) is not reused while the entry exists: the constant node
	/// holding it — a plain count — or, for a buffer that may change, the value read (a locked count). See
	/// storageUnheld().
	Ref<AdaptiveObject> node;
	scene::ArrayBuffer buffer;
};

/// What only one object reads, side by side in one arena block that the object owns: its unshared buffers — storage
/// that no other view can reach (storageUnheld, and a node that only the view holds), such as a mesh made for this one
/// object — and its own uniforms (a node nothing else reads: its fresh ModelTrafo and what derives from it). One
/// allocation and one free per object instead of one per input, and no pool entry to file, find or erase (each a miss
/// in a table of millions at 10^6 objects). Each part
/// keeps its own 16-byte allocation header, so headers, shaders and validators read a part as they read a pooled
/// allocation. Storage that a second object reaches only later (a view copied into a new object) gets a pooled copy
/// then, which that object and every later one share; the first object keeps its private copy until it is re-placed —
/// at most one extra copy per storage and chunk.
struct PrivateSet final
{
	/// At most this many buffers and uniforms per object; more unshared ones are pooled as before.
	static constexpr size_t kBufferParts = 4;
	static constexpr size_t kUniformParts = 2;
	static constexpr size_t kParts = kBufferParts + kUniformParts;
	struct Part final : Entry
	{
		Part() : Entry(kAttribute, 0) { priv = true; }
	};
	uint32_t chunk = 0;
	uint32_t block = 0; ///< the block's offset: its first part's allocation header
	uint32_t bytes = 0; ///< the block's size: its parts' (16-byte header + data, rounded up to 16) in order
	uint32_t count = 0;
	uint32_t first_uniform = 0; ///< parts [first_uniform, count) are uniforms (key: node and recipe), buffers before
	std::array<Part, kParts> parts;
	std::array<aval<UniformValue>, kUniformParts> uniforms; ///< the uniform parts' values, in part order
	/// The recipe each uniform part applies to its value, in part order.
	std::array<inputs::DerivedRecipe, kUniformParts> recipes{};

	/// The pool key a pooled entry of uniform part `i` (first_uniform ≤ i < count) would have.
	PoolKey uniformKey(uint32_t i) const
	{
		PoolKey key = PoolKey::uniform(uniforms[i - first_uniform].node().get(), chunk);
		key.recipe = recipes[i - first_uniform];
		return key;
	}

	/// Appends a part of `data_bytes` at `ref` (its allocation header) and returns it.
	Part& append(Entry::Kind kind, uint32_t ref, fx::Type type, uint32_t elements, uint32_t data_bytes)
	{
		Part& e = parts[count++];
		e.kind = kind;
		e.chunk = chunk;
		e.ref = ref;
		e.type = type;
		e.elements = elements;
		e.data_bytes = data_bytes;
		e.refcount = 1;
		return e;
	}

	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;
};

/// True when no pool entry can hold `data`, the value of `view`: an entry holds the storage itself or the constant
/// node holding it (BufferEntry), so storage counted once, and if in a constant node then in one counted once (by
/// the view), is read through this view alone — no other object's entry can have it.
inline bool storageUnheld(const scene::BufferView& view, const scene::ArrayBuffer& data)
{
	if (data.bytes.use_count() != 1)
		return false;
	const AdaptiveObject* node = view.buffer.node().get();
	return !node->isConstant() || node->refCount() == 1;
}

/// A uniform value (or a recipe applied to one) in one chunk, re-packed when its aval changes.
struct UniformEntry final : AdaptiveObject, PooledEntry
{
	UniformEntry(detail::HeapCore& s, uint32_t c)
	    : AdaptiveObject(kWantsInputChanged), PooledEntry(kUniform, c), scene(&s)
	{
	}
	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;

	detail::HeapCore* scene;
	aval<UniformValue> uniform; ///< with a non-constant source
	/// The value is this recipe applied to `uniform` (NormalMatrix from a ModelTrafo node) — pooled by (input node,
	/// recipe) instead of an adaptive node per object; None for a plain value.
	inputs::DerivedRecipe recipe = inputs::DerivedRecipe::None;
	std::unique_ptr<ConstantKey> constant; ///< a constant uniform's key (for erasure)
	bool queued = false;

	/// May be listed in the placement index (detail::HeapCore::uniform_chunks): plain values of a non-constant node in
	/// the first 64 chunks (a recipe entry's node is the object's ModelTrafo, whose own entry sits in the same chunk
	/// when the effect reads it).
	bool placementIndexed() const { return key.node && chunk < 64 && recipe == inputs::DerivedRecipe::None; }
	/// Its chunk's bit is in the placement index: the index lists a node from the first placement that asks for it
	/// (not when its first entry is made), so an object's own uniforms, which no other placement asks for, never
	/// enter that table of millions of keys.
	bool indexed = false;

	void inputChanged(AdaptiveObject*) override;
	/// Re-reads the uniform value and stages it. Errors: the value changed its type.
	Result<void> repack();

	using AdaptiveObject::beginEvaluation;
	using AdaptiveObject::endEvaluation;
};

/// A uniform value computed on the device (DerivedRecipe::Gpu): its interned derivation — whose address is its key's
/// node — and its record in the derive kernel's records (GpuDerive). It reads nothing on the host (its inputs'
/// constituents follow their nodes), so it is a plain record instead of an adaptive object: per object this is the
/// camera-relative ModelViewProjTrafo, and a UniformEntry's node would be most of its memory.
struct DerivedEntry final : PooledEntry
{
	explicit DerivedEntry(uint32_t c) : PooledEntry(kDerived, c) {}
	static void* operator new(size_t bytes);
	static void operator delete(void* p) noexcept;

	inputs::DerivedUniforms::DerivationPtr derivation;
	uint32_t rule = 0;            ///< the derive kernel's index of the derivation's rule
	uint32_t record = UINT32_MAX; ///< its record in its chunk
};

/// The derived entry behind `e`, or null.
inline DerivedEntry* asDerived(Entry* e)
{
	return e->kind == Entry::kDerived ? static_cast<DerivedEntry*>(e) : nullptr;
}
inline const DerivedEntry* asDerived(const Entry* e)
{
	return e->kind == Entry::kDerived ? static_cast<const DerivedEntry*>(e) : nullptr;
}

/// The uniform entry behind `e`, or null for a buffer or derived entry.
inline UniformEntry* asUniform(Entry* e)
{
	return e->kind == Entry::kUniform ? static_cast<UniformEntry*>(e) : nullptr;
}
inline const UniformEntry* asUniform(const Entry* e)
{
	return e->kind == Entry::kUniform ? static_cast<const UniformEntry*>(e) : nullptr;
}

/// Drops the pool's hold on an entry it holds: deletes a buffer or derived entry, or releases the pool's reference to
/// a uniform entry (a queued re-pack may hold another).
inline void dropPooled(Entry* e) noexcept
{
	if (UniformEntry* u = asUniform(e))
		u->release();
	else if (DerivedEntry* d = asDerived(e))
		delete d;
	else
		delete static_cast<BufferEntry*>(e);
}

/// The pool: the non-constant entries, found by the key they hold and erased by identity (both hashed by the key),
/// each slot the entry's pointer beside its key's hash (detail::PointerTable: one slot per probe, prefetched exactly).
/// It owns its entries: a buffer entry is deleted when erased, a uniform entry loses the pool's reference.
class Pool
{
public:
	Pool() = default;
	Pool(const Pool&) = delete;
	Pool& operator=(const Pool&) = delete;
	~Pool() { table_.forEach(dropPooled); }

	PooledEntry* find(const PoolKey& key) const
	{
		return table_.find(PoolKeyHash{}(key), [&](const PooledEntry& e) { return e.key == key; });
	}
	/// Takes a new buffer or derived entry. (Filed a few insertions later — its slot is a miss in a table of millions,
	/// and an add inserts ~5 entries — but found at once: PointerTable::insertDeferred.)
	template <typename T>
	requires std::is_same_v<T, BufferEntry> || std::is_same_v<T, DerivedEntry>
	void insert(std::unique_ptr<T> e)
	{
		const uint64_t hash = PoolKeyHash{}(e->key);
		table_.insertDeferred(e.release(), hash);
	}
	/// Takes a reference to a new uniform entry (filed as above).
	void insert(const Ref<UniformEntry>& e)
	{
		table_.insertDeferred(e.get(), PoolKeyHash{}(e->key));
		e->addRef();
	}
	/// Files the deferred insertions.
	void flush() { table_.flush(); }
	size_t size() const { return table_.size(); }
	/// Dismantling the scene: drops the entries of up to `count` table slots from `cursor` on. True while some remain.
	bool drain(size_t& cursor, size_t count) { return table_.drain(cursor, count, dropPooled); }
	/// Removes and drops `e` (which may destroy it).
	void erase(PooledEntry* e) { erase(e, PoolKeyHash{}(e->key)); }
	/// erase() for a caller that hashed `e`'s key already (hashOf).
	void erase(PooledEntry* e, uint64_t hash)
	{
		if (table_.erase(e, hash))
			dropPooled(e);
	}
	static uint64_t hashOf(const PoolKey& key) { return PoolKeyHash{}(key); }
	void prefetch(const PoolKey& key) const { table_.prefetch(PoolKeyHash{}(key)); }
	void prefetch(uint64_t hash) const { table_.prefetch(hash); }
	template <typename F>
	void forEach(F&& f) const
	{
		table_.forEach([&](PooledEntry* e) { f(*e); });
	}
	std::string check() const { return table_.check(); }
	size_t hostBytes() const { return table_.hostBytes(); }
	/// The emptied pool's table storage (PointerTable::releaseStorage).
	std::shared_ptr<void> releaseStorage() { return table_.releaseStorage(); }

private:
	detail::PointerTable<PooledEntry> table_;
};

} // namespace quokka::heap
