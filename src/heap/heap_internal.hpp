// heap_internal.hpp — the heap's internal types (internal to quokka::heap): pooled inputs and the pool, slots and
// buckets, the object table, the scene's state (detail::HeapCore) and the heap object. heap_scene.cpp implements them;
// the diagnostics (heap_diagnostics.cpp) read them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include "pointer_table.hpp"
#include <quokka/base/assert.hpp>
#include <quokka/base/block_cache.hpp>
#include <quokka/base/erase_some.hpp>
#include <quokka/base/scratch.hpp>
#include <quokka/heap/chunk_allocator.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/heap/megacall_scan.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/modes/mode_rules.hpp>
#include <quokka/modes/partition.hpp>

#include "arena.hpp"
#include "arena_staging.hpp"
#include "attribute_convert.hpp"
#include "bindless_textures.hpp"
#include "buckets.hpp"
#include "bulk_convert.hpp"
#include "derived_step.hpp"
#include "gpu_array.hpp"
#include "gpu_derive.hpp"
#include "heap_base.hpp"
#include "input_pool.hpp"
#include "prefetch.hpp"

namespace quokka::heap
{

/// The placed objects by their render object. Its hash is the render object's address times an odd constant — a
/// bijection, so equal hashes are the same object and a lookup never reads a HeapObject to compare. Holds a reference
/// to each.
class ObjectTable
{
public:
	ObjectTable() = default;
	ObjectTable(const ObjectTable&) = delete;
	ObjectTable& operator=(const ObjectTable&) = delete;
	~ObjectTable() { clear(); }

	static uint64_t hash(const scene::RenderObject* o)
	{
		return reinterpret_cast<uintptr_t>(o) * 0x9e3779b97f4a7c15ull;
	}
	/// Files `h`, placed for `o` (not in the table yet), and takes a reference.
	void insert(const scene::RenderObject* o, const Ref<HeapObject>& h);
	/// Removes the object filed for `o` and returns the table's reference to it (null when there is none).
	Ref<HeapObject> take(const scene::RenderObject* o);
	void prefetch(const scene::RenderObject* o) const { table_.prefetch(hash(o)); }
	/// Whether an object is filed for `o` (compares hashes only: does not read `o`).
	bool holds(const scene::RenderObject* o) const
	{
		return table_.find(hash(o), [](const HeapObject&) { return true; }) != nullptr;
	}
	size_t size() const { return table_.size(); }
	template <typename F>
	void forEach(F&& f) const
	{
		table_.forEach(f);
	}
	/// Drops every reference.
	void clear();
	/// Dismantling the scene (detail::HeapCore::closing): detaches and releases the objects of up to `count` table
	/// slots from `cursor` on. True while objects remain.
	bool drain(size_t& cursor, size_t count);
	/// Files the deferred insertions.
	void flush() { table_.flush(); }
	std::string check() const { return table_.check(); }
	size_t hostBytes() const { return table_.hostBytes(); }
	std::shared_ptr<void> releaseStorage() { return table_.releaseStorage(); }

private:
	detail::PointerTable<HeapObject> table_;
};

namespace detail
{
struct HeapCore;
/// GPU routing (mode_routing.cpp): records, for each route group carried by `carriers` (non-empty), the route kernel
/// over its records and the partition of their commands (or megacall records) into its draws' regions, then for
/// megacall carriers one scan per draw, between the barriers they need; (re)sizes the groups' buffers first. A
/// megacall carrier whose effect is still compiling in the background is left for the next frame (`later`).
/// Errors: OutOfMemory, as kernel and pipeline creation.
Result<void> recordRouting(HeapCore& p, gpu::CommandList& list, std::span<Slot* const> carriers, HeapStats& stats,
                           std::vector<Slot*>& later);
/// The error of a record the route kernel could not route (a rule gave no value of its axis) in the groups routed
/// by frames that completed since: the object's rules applied on the CPU name it and the value. Ok when none.
Result<void> checkRouting(HeapCore& p);
} // namespace detail

struct detail::HeapCore : Arena
{
	inputs::Context* context;
	scene::FramebufferSignature signature;
	fx::FragmentOutputs outputs;
	HeapOptions options;
	HeapStats* stats;
	/// Membership: a scene built over a set reads its changes (reader); one without gets add()/remove() calls, queued
	/// here in call order (serial) until the next update().
	adaptive::SetReader<RenderObjectPtr> reader;
	struct PendingAdd
	{
		RenderObjectPtr object;
		uint64_t serial;
	};
	std::vector<PendingAdd> pending_adds;
	std::vector<std::pair<const scene::RenderObject*, uint64_t>> pending_removals;
	/// The calls update() is applying, swapped with the pending ones and emptied after the frame, so both pairs keep
	/// their capacity (a frame of 10^4 adds grows no vector).
	std::vector<PendingAdd> frame_adds;
	std::vector<std::pair<const scene::RenderObject*, uint64_t>> frame_removals;
	uint64_t next_serial = 0;
	bool pushed_to_set_scene = false; ///< add()/remove() called on a scene built over a set (an error at update())
	inputs::DerivedUniforms derived;
	std::optional<MegacallScan> scanner;
	/// Derived uniforms computed on the device (HeapOptions::gpu_derived): made by the first entry that needs it.
	std::unique_ptr<GpuDerive> gpu_derive;
	/// A frame placing many objects converts their buffers on worker threads (HeapTuning::bulk_placement_above).
	detail::BulkConvert bulk;
	/// Command lists that were handed the scene's buffers (upload, prepare, encode) and did not retire yet: while any
	/// is in flight no write goes in place (HeapTuning::write_in_place). Shared with the lists' retire callbacks, which
	/// may outlive the scene.
	std::shared_ptr<std::atomic<uint32_t>> lists_in_flight = std::make_shared<std::atomic<uint32_t>>(0);
	/// Counts `list` among lists_in_flight until it retired (or is dropped unsubmitted).
	void holdUntilRetired(gpu::CommandList& list)
	{
		lists_in_flight->fetch_add(1, std::memory_order_relaxed);
		list.onRetire([n = lists_in_flight] { n->fetch_sub(1, std::memory_order_release); });
	}
	/// Whether the host may write the scene's mapped buffers now: they are DeviceMapped and no list reads them.
	bool writesInPlace() const
	{
		return domain == gpu::MemoryDomain::DeviceMapped && lists_in_flight->load(std::memory_order_acquire) == 0;
	}
	/// The device wrote buffers of the scene that the host may later write in place (copies, kernels) in the list being
	/// recorded: prepare() ends it with a barrier making those writes available to the host.
	bool host_barrier_due = false;
	/// No other list of the scene was in flight when this frame's upload() began (lists are submitted in the order
	/// they were recorded): the frame's commands need no execution dependency on earlier frames' reads — the GPU
	/// derive's dispatch then records no barrier before it.
	bool frame_alone = false;
	GpuDerive& gpuDerive()
	{
		if (!gpu_derive)
			gpu_derive = std::make_unique<GpuDerive>(*this);
		return *gpu_derive;
	}
	std::optional<gpu::ScatterCopy>
	    scatter; ///< made by the first upload() with enough regions (HeapTuning::scatter_above)

	// Flat (open-addressing) maps for the per-object tables: a node-based map costs ~3 cache misses per lookup at 10^6
	// objects (bucket slot, the node before, the node), which made pool lookups ~2/3 of an add's time.
	Pool pool;                                                     ///< non-constant inputs, by PoolKey
	absl::flat_hash_map<ConstantKey, Ref<UniformEntry>> constants; ///< constant uniform value → entry
	/// Calls f(Entry&) for every pool entry, constants included.
	template <typename F>
	void forEachEntry(F&& f) const
	{
		pool.forEach(f);
		for (const auto& kv : constants)
			f(*kv.second);
	}
	std::unordered_map<BucketKey, std::unique_ptr<Bucket>, BucketKeyHash> buckets;
	std::vector<Bucket*> bucket_order; ///< by creation (deterministic draw order)
	uint64_t next_bucket_serial = 0;
	ObjectTable objects;
	/// Non-constant uniform node → chunks holding an entry for it (bit c; chunks ≥ 64 are looked up in the pool). A
	/// node is listed from the first placement that looks for it until its last entry goes; every entry of a listed
	/// node is UniformEntry::indexed, and no entry of an unlisted one.
	absl::flat_hash_map<const void*, uint64_t> uniform_chunks;
	/// The placement index's mask for `node` (a node some entry reads), listing it first when it is not listed.
	uint64_t heldChunks(const void* node);
	std::vector<Ref<HeapObject>> dirty_objects;
	std::vector<Ref<UniformEntry>> dirty_entries;
	std::vector<Slot*> dirty_slots;
	size_t removed_since_collect = 0; ///< derived uniforms are collected when this passes half the live objects

	/// The entry of `value` (with `recipe` applied) in `chunk`: shared, or allocated and staged. `unheld`: the caller
	/// knows no entry reads the value's node (see HeapObject::place), so the pool is not searched.
	Result<Entry*> acquireUniform(const aval<UniformValue>& value, inputs::DerivedRecipe recipe, uint32_t chunk,
	                              fx::Type expected, const scene::RenderObject& object, const std::string& name,
	                              bool unheld);
	/// The entry of a uniform derived on the device (recipe Gpu) as `d` in `chunk`: shared (the pool is searched only
	/// when some entry holds `d`), or allocated with its header staged over zeroed data and registered with the derive
	/// kernel.
	Result<Entry*> acquireGpuDerived(const inputs::DerivedUniforms::DerivationPtr& d, uint32_t chunk, fx::Type expected,
	                                 const scene::RenderObject& object, const std::string& name);
	/// The pool key of a non-constant uniform: `node` read through `recipe` in `chunk`.
	static PoolKey uniformKey(const void* node, inputs::DerivedRecipe recipe, uint32_t chunk)
	{
		PoolKey key = PoolKey::uniform(node, chunk);
		key.recipe = recipe;
		return key;
	}
	/// The pool key of `view` read as `type` in `chunk` (reads the buffer's current value without subscribing).
	static PoolKey bufferKey(Entry::Kind kind, const scene::BufferView& view, fx::Type type, uint32_t chunk)
	{
		PoolKey key;
		key.kind = kind;
		key.chunk = chunk;
		key.node = view.buffer.getValue(Token{}).bytes.get();
		key.format = uint32_t(view.format);
		key.offset = view.offset;
		key.stride = view.stride;
		key.type = type;
		return key;
	}
	using BufferLayout = detail::ArenaLayout;
	static BufferLayout bufferLayout(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
	                                 const scene::ArrayBuffer& data)
	{
		return detail::arenaLayout(kind == Entry::kIndex, view, type, data);
	}
	Result<Entry*> acquireBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type, uint32_t chunk,
	                             const scene::RenderObject& object, const std::string& name);
	/// Converts `data` read through `view` (laid out as `layout`) into `out`: tight 32-bit data of the shader's type —
	/// at once, or in a bulk frame queued for the workers (bulk; `out` is then written by BulkConvert::end()).
	/// Errors: a format the heap cannot convert to `type`.
	Result<void> convertBuffer(Entry::Kind kind, const scene::BufferView& view, fx::Type type,
	                           const BufferLayout& layout, const scene::ArrayBuffer& data, uint32_t* out,
	                           const scene::RenderObject& object, const std::string& name);
	/// The error of a uniform value whose type is not the effect's.
	static Error uniformMismatch(const scene::RenderObject& object, const std::string& name, fx::Type expected,
	                             fx::Type got)
	{
		return makeError(ErrorCode::InvalidArgument, inputs::objectName(object) + ": uniform '" + name + "' is " +
		                                                 fx::typeName(expected) + " in the effect but the value is " +
		                                                 fx::typeName(got));
	}
	/// A pooled entry of `node` is being made: objects holding a private part of `node` are queued for re-placement,
	/// where they find that entry (or make one) instead — a value read by several objects is stored and uploaded once.
	void promotePrivate(AdaptiveObject* node);
	/// Stages a re-packed uniform at `ref` of `chunk`: with its allocation header when the frame's previous write ends
	/// where the allocation starts (one copy region instead of two: an object's uniforms sit side by side).
	Result<void> stageUniform(uint32_t chunk, uint32_t ref, const inputs::PackedValue& p, uint32_t bytes);
	/// Records the copies of one page's `regions` into `target`: the short ones through the arena scatter when there
	/// are more than HeapTuning::scatter_above of them, everything else with vkCmdCopyBuffer (upload()).
	Result<void> copyWrites(gpu::CommandList& list, uint32_t page, std::span<const VkBufferCopy> regions,
	                        const gpu::Buffer& target);
	/// The error of a buffer larger than a chunk.
	Error bufferTooLarge(const scene::RenderObject& object, const std::string& name, uint64_t bytes) const
	{
		return makeError(ErrorCode::InvalidArgument, inputs::objectName(object) + ": " + name + " needs " +
		                                                 std::to_string(bytes) +
		                                                 " bytes, more than one arena chunk holds");
	}
	/// Drops one reference to `e`; the last one frees its block — at once, or into `batch` when given.
	void releaseEntry(Entry* e, FreeBatch* batch = nullptr);
	/// While set (the removal loop of update()), releaseEntry() leaves the pool erasures to eraseDoomed(): each one
	/// probes a random slot of a table of millions, and inside a removal that miss stalled the loop although its slot
	/// was prefetched removals ahead (perf on the H200: half of releaseEntry's time on that one load). Done together
	/// in a tight loop that prefetches ahead, the misses overlap. An entry waiting here has no holder (refcount 0) and
	/// its block is free, so it must be gone before anything searches the pool: update() erases right after the loop.
	bool defer_pool_erase = false;
	struct Doomed
	{
		PooledEntry* entry;
		uint64_t hash; ///< of its key, taken while the entry was warm
	};
	std::vector<Doomed> doomed_entries;
	void eraseDoomed();
	/// Set by ~HeapScene: objects leave without giving anything back one by one (their slots, blocks and pool entries
	/// all go with the scene), which makes closing a scene of 10^6 objects a fraction of 10^6 removals.
	bool closing = false;
	/// HeapScene::dismantle's progress: the step (objects, pool entries, constants, GPU-derive constituents, derived
	/// nodes, GPU-derive records, chunks, staging pages, buckets' arrays, the tables' storage, done) and the table slot
	/// it continues from.
	uint8_t dismantle_step = 0;
	size_t dismantle_cursor = 0;
	std::optional<decltype(constants)::iterator> constants_cursor; ///< (eraseSome)
	/// The bucket of `o` drawn with `source` (Context::objectEffect of `o`, compiled as `effect`) in `chunk`.
	Result<Bucket*> bucketFor(const scene::RenderObject& o, const fx::Effect& source,
	                          const fx::CompiledEffectPtr& effect, uint32_t chunk);
	/// The slot of `state` in `b`, through the routing seam (SlotRouting); a new slot changes the shape.
	Result<Slot*> slotFor(Bucket& b, const scene::PipelineStateValues& state, bool indexed);
	std::optional<SlotRouting> routing; ///< (made with the scene: it needs the context and the signature)
	/// GPU routing (HeapOptions::gpu_routing): the carrier slot of `o`'s route group in `b` for its declared state.
	Result<Slot*> routedSlotFor(Bucket& b, const scene::PipelineStateValues& declared, bool indexed,
	                            const scene::RenderObject& o);
	/// Route kernels by source (groups with equal specs share one), and the partition kernels (made on first use).
	std::map<std::string, std::shared_ptr<RouteKernelJob>> route_kernels;
	std::optional<modes::PartitionKernel> partition;
	/// Carriers routed by frames whose report (RouteGroup::bad) was not read yet.
	std::vector<Slot*> route_checks;
	/// Carriers whose declared leaves changed (DeclaredReader), re-specialised by update().
	std::vector<Slot*> respecialise_queue;
	Result<void> respecialiseGroups();
	/// The route kernel of `spec` (cached by source).
	Result<const RouteKernelJob*> routeKernel(const modes::RouteSpec& spec);
	/// The heap-indirect compile of `effect` (cached by effect id: no hashing of the request per object).
	/// An effect compiled for the heap, with its uniforms planned (DerivedUniforms resolves objects against the plan).
	/// The atlas or bindless variant of a textured effect (fx::PathVariant::HeapIndirectAtlas or
	/// HeapIndirectBindless, as the scene draws textures), compiled by Context::runJob — at once, or on a worker with
	/// background pipelines. Never fails: an effect the variant cannot be made of (a cube map; for the atlas a texture
	/// used otherwise than by sampling it) leaves `compiled` null and its objects bind their textures.
	struct TextureVariantJob : inputs::BackgroundJob
	{
		fx::CompiledEffectPtr compiled;
		std::string refused; ///< why the variant could not be made
	};
	struct HeapEffect
	{
		fx::CompiledEffectPtr compiled;
		inputs::UniformPlan uniforms;
		/// Drawing textures through the atlas or the bindless table, for an effect that samples only 2D textures;
		/// else null.
		std::shared_ptr<TextureVariantJob> variant;
	};
	/// The HeapEffect of `effect`, or null while it compiles in the background (inputs::Context::compiledEffect).
	Result<const HeapEffect*> heapEffect(const fx::Effect& effect);
	/// Effects seen compiling in the background, with the context's compilesDone() then.
	std::map<fx::Hash128, uint64_t> pending_effects;
	std::map<fx::Hash128, HeapEffect> heap_effects;
	/// Buckets whose draw headers changed this frame: upload() stages only theirs, so a frame's fixed cost does not
	/// visit every bucket's header array.
	std::vector<Bucket*> dirty_headers;
	void markHeaders(Bucket* b)
	{
		if (!std::exchange(b->headers_queued, true))
			dirty_headers.push_back(b);
	}
	void markSlot(Slot* s)
	{
		s->scan_dirty = true;
		if (!s->queued)
		{
			s->queued = true;
			dirty_slots.push_back(s);
		}
	}
	/// Drops empty slots and buckets (after the update, so nothing refers to them).
	void sweep();
	bool sweep_pending = false; ///< a slot or bucket became empty since the last sweep
	/// Objects waiting for their effect (Plan::waiting), and the context's compilesDone() when they were last looked
	/// at: once it changed, update() queues them for placement again.
	std::vector<Ref<HeapObject>> waiting;
	uint64_t waiting_since = 0;
	bool waiting_retry = false; ///< some waiting objects' effect is ready: placed next frame (placement budget)
	void wait(const Ref<HeapObject>& h);
	/// The slots (their number or strategies) changed since the shape figures were summed (the arena's blocks say so
	/// in blocks_changed): update() re-sums them only then, so a frame's fixed cost does not walk every chunk and slot.
	bool shape_changed = true;
	/// The shape part of HeapStats: slots, their strategies, chunks and their bytes.
	struct Shape
	{
		uint32_t slots = 0, indirect_slots = 0, megacall_slots = 0, chunks = 0;
		uint64_t arena_bytes = 0, live_bytes = 0;
		bool operator==(const Shape&) const = default;
	};
	Shape shape; ///< as last summed
	/// Sums the shape figures over the chunks and slots (O(chunks + slots)).
	Shape sumShape() const;
	/// Compacts chunks whose waste passed the floor: plans the moves, re-seats every reference (pool entries, draw
	/// headers, index starts in commands and records); upload() records the copies.
	void compact();
	void chooseStrategy(Slot& s);

	/// The scene's texture atlas (HeapOptions::atlas), made by the first object that needs it.
	std::unique_ptr<atlas::AtlasPool> atlas_pool;
	gpu::SamplerHandle atlas_sampler; ///< linear, clamp to edge, one level: what the atlas sampling code expects
	Result<atlas::AtlasPool*> atlasPool();
	uint32_t atlas_objects = 0; ///< objects holding atlas entries now
	uint32_t atlas_refused = 0; ///< objects placed with bound textures because the atlas refused theirs
	uint64_t atlas_uploads_seen = 0;
	/// HeapOptions::textures resolved for the device (never Auto); with Bindless requested on a device without
	/// descriptor indexing, update() fails with `textures_error`.
	HeapTextures texture_path = HeapTextures::Bound;
	std::string textures_error;
	/// The scene's bindless table (HeapTextures::Bindless), made by the first object that needs it.
	std::unique_ptr<BindlessTextures> bindless;
	Result<BindlessTextures*> bindlessTextures();
	uint32_t bindless_objects = 0; ///< objects holding bindless entries now
	uint32_t bindless_refused = 0; ///< objects placed with bound textures because the table was full
};

/// One object in the heap. Reads its draw call, active flag, pipeline-state leaves and buffers (uniform values are
/// read by their pool entries); inputChanged() tells it which changed.
class HeapObject final : public inputs::ObjectNode
{
public:
	HeapObject(detail::HeapCore& s, RenderObjectPtr o) : scene_(&s), object_(std::move(o)) {}
	~HeapObject() override { unplace(); }
	static void* operator new([[maybe_unused]] size_t bytes)
	{
		QUOKKA_ASSERT(bytes == sizeof(HeapObject), "HeapObject is final");
		return RecordCache<sizeof(HeapObject)>::allocate();
	}
	static void operator delete(void* p) noexcept { RecordCache<sizeof(HeapObject)>::release(p); }

	/// Compiles, reads and validates the inputs, then places the object (chunk, entries, bucket, header, slot, record):
	/// read(), acquire() and attach() in a row; on failure the object is left out until an input changes.
	Result<void> place();
	/// What placement carries from one phase to the next. HeapScene::update() places a frame's additions phase by
	/// phase over batches of objects: one object's whole path is larger than the L1 instruction cache, so placed one
	/// at a time every object fetched it again (callgrind: ~300 simulated I-cache misses per placement), while each
	/// phase's code stays cached across a batch. The phases run in object order and depend only on earlier objects'
	/// earlier phases, so a batch places exactly as one-at-a-time placement does.
	struct Plan
	{
		const fx::Effect* source = nullptr;
		const detail::HeapCore::HeapEffect* planned = nullptr;
		/// The compile it is drawn with: planned->compiled, or the texture variant when the atlas or the bindless
		/// table took its textures.
		const fx::CompiledEffectPtr* effect = nullptr;
		absl::InlinedVector<aval<UniformValue>, 8> uniforms; ///< (recipe Gpu: none, the derivation instead)
		absl::InlinedVector<inputs::DerivedRecipe, 8> recipes;
		absl::InlinedVector<inputs::DerivedUniforms::DerivationPtr, 8> derivations; ///< recipe Gpu's
		/// Its pipeline state (rules applied, or only checked where the device evaluates them): the slot it attaches
		/// to. Not kept after placement — a slot holds its state, and a refresh reads it again.
		scene::PipelineStateValues state;
		/// The effect is being compiled in the background (inputs::Context::compiledEffect): nothing was read, the
		/// object waits (detail::HeapCore::waiting) and is placed once the compile finished.
		bool waiting = false;
	};
	/// Phase 1: compiles the effect and reads the inputs (subscribing to the changeable ones).
	Result<void> read(Plan& plan);
	/// Phase 2: chooses the chunk and acquires the entries there (group fit), and the bucket; validates the draw.
	Result<void> acquire(Plan& plan);
	/// Phase 3: the draw header, the slot and the record.
	Result<void> attach(const Plan& plan);
	/// Applies the changed inputs.
	Result<void> refresh();
	/// The slot of the object's state: by value, or with GPU routing and mode rules its route group's carrier.
	Result<Slot*> routeState(const scene::PipelineStateValues& state);
	/// GPU routing: packs its rules' inputs beside its record in the route group.
	void writeRouteInputs();
	/// GPU routing: its rules applied on the CPU to its declared state (the error the device could only flag).
	Result<void> applyRulesOnCpu();
	/// Leaves the heap (entries released, header freed, record removed).
	void unplace();
	void detach()
	{
		dead = true;
		unplace();
		for (const Input& in : inputs_)
			removeInput(in.node);
		inputs_.clear();
	}

	const scene::RenderObject& object() const { return *object_; }
	void inputChanged(AdaptiveObject* input) override
	{
		for (Input& in : inputs_)
			if (in.node == input)
				in.dirty = true;
		if (!queued && !dead)
		{
			queued = true;
			scene_->dirty_objects.emplace_back(this);
		}
	}

	// Placement (read by the slot/bucket writers and the diagnostics).
	Bucket* bucket = nullptr;
	Slot* slot = nullptr;
	uint32_t header = 0;
	uint32_t record = 0;
	absl::InlinedVector<Entry*, 8>
	    entries; ///< uniforms then attributes (header order); inline: no allocation per object
	Entry* indices = nullptr;
	std::unique_ptr<PrivateSet> owned; ///< what only it reads (parts listed in `entries` / `indices`), or null
	scene::DrawCall draw;
	bool active = true;
	bool queued = false;
	bool dead = false;
	bool placed = false;
	bool replace = false; ///< re-place at the next refresh (a private uniform part's value gained another reader)

	/// True when this object holds a private uniform part of `node` (PrivateSet).
	bool holdsPrivate(const AdaptiveObject* node) const
	{
		if (owned)
			for (const aval<UniformValue>& u : owned->uniforms)
				if (u.node().get() == node)
					return true;
		return false;
	}
	/// Queues this object for re-placement (detail::HeapCore::promotePrivate): it then finds the value's pooled entry.
	void requestReplace()
	{
		replace = true;
		if (!queued && !dead)
		{
			queued = true;
			scene_->dirty_objects.emplace_back(this);
		}
	}
	const detail::HeapCore* scene() const { return scene_; }
	/// Host bytes of its record and of what it allocated beyond it (arrays that outgrew the record, its mode inputs and
	/// texture entries); the inputs it subscribed to (subscriptions()) and its private set are counted apart. Memory
	/// accounting (heap_memory.cpp).
	size_t hostBytes() const;
	size_t subscriptions() const { return inputs_.size(); }
	/// The atlas entries it samples (0 when it binds its textures), in its effect's texture order, and entry `i` as
	/// its draw header carries it.
	size_t atlasEntries() const { return textures_ ? textures_->uses.size() : 0; }
	const std::array<uint32_t, 4>& atlasEntry(size_t i) const { return textures_->uses[i].words; }
	/// Its bindless table entries (empty when it binds its textures or uses the atlas), in its effect's texture order.
	std::span<const uint32_t> bindlessEntries() const
	{
		return textures_ ? std::span<const uint32_t>(textures_->entries) : std::span<const uint32_t>();
	}
	/// Placed with bound textures because the atlas (the bindless table) refused its textures or its effect has no
	/// atlas (bindless) variant.
	bool atlasRefused() const { return textures_ && textures_->refused && !textures_->bindless; }
	bool bindlessRefused() const { return textures_ && textures_->refused && textures_->bindless; }

	/// Vertices emitted per instance (whole primitives) and instances, 0 when hidden.
	uint32_t count() const
	{
		if (!active || !slot)
			return 0;
		return draw.count - draw.count % slot->prim;
	}
	uint32_t instances() const { return active ? draw.instance_count : 0; }
	uint64_t emits() const { return uint64_t(count()) * instances(); }
	/// Removal of many scattered objects: detach() visits the object, its entry and input arrays, the entries, the
	/// input nodes and the entries' pool slots — one cache miss per level. The removal loop calls this for objects
	/// ahead of the one it detaches, deeper levels for nearer objects, so each level is in cache when needed.
	enum class PrefetchStage
	{
		kObject,  ///< this object
		kArrays,  ///< the entry and input arrays (this object must be in cache)
		kEntries, ///< the entries and the input nodes (the arrays must be)
		kPool,    ///< the allocator bits and placement-index slots of entries this removal frees (the entries must be)
		kSlot,    ///< the record's place in the slot arrays, and the slot's last object (which the swap-pop moves)
		kLast,    ///< that last object's index entry (its record names the index start; the object must be in cache)
	};
	void prefetch(PrefetchStage stage) const;
	/// Writes this object's command and megacall record into its slot's shadows.
	void writeRecord();
	/// Re-writes header and record after its inputs moved (compaction).
	void rewrite()
	{
		writeHeader();
		writeRecord();
	}

private:
	friend class Placement; // (placement.cpp: acquire() as named steps)
	enum Role : uint8_t
	{
		kState,
		kDraw,
		kActive,
		kBuffer,
		kUniform, ///< the value of a private uniform part (PrivateSet)
	};
	struct Input
	{
		AdaptiveObject* node;
		Role role;
		bool dirty = false; ///< changed since the last refresh (no list per object: the flag fits the padding)
	};
	/// Runs `body`, turning an exception an input throws into an error (as evaluate() does, without an evaluation).
	template <typename F>
	Result<void> guarded(F&& body)
	{
		try
		{
			return body();
		}
		catch (const std::exception& e)
		{
			return fail(std::string("an input threw: ") + e.what());
		}
	}
	Error fail(const std::string& what) const
	{
		return makeError(ErrorCode::InvalidArgument, inputs::objectName(*object_) + ": " + what);
	}
	void track(AdaptiveObject* node, Role role)
	{
		if (node && !node->isConstant())
		{
			trackInput(node);
			inputs_.push_back({node, role, false});
		}
	}
	Result<void> validateDraw();
	Result<void> readState(scene::PipelineStateValues& state);
	/// Inputs changed since the last refresh (Input::dirty), collected by refresh().
	using DirtyInputs = absl::InlinedVector<AdaptiveObject*, 4>;
	/// Re-packs and stages the private uniform parts whose node is in `dirty`. Errors: a value changed its type.
	Result<void> repackPrivate(const DirtyInputs& dirty);
	void writeHeader();
	/// With an atlas variant of its effect: reads its textures (subscribing: a new texture re-places it) and acquires
	/// their atlas entries. False, with nothing held, when the atlas refuses one (it binds them instead). Errors: a
	/// texture the effect samples and the object lacks; texels that do not match the texture's size.
	Result<bool> acquireAtlas(const fx::EffectInterface& iface);
	/// With a bindless variant of its effect: the table entries of its textures and samplers (no subscription: a
	/// texture's new value keeps its entry). False, with nothing held, when the table is full. Errors: a texture the
	/// effect samples and the object lacks; as Context::sampler.
	Result<bool> acquireBindless(const fx::EffectInterface& iface);
	/// Counts it as refused (HeapStats::atlas_refused or bindless_refused) while it is placed with bound textures.
	void refuseTextures();
	void releaseTextures();
	void attachToSlot(Slot* s);
	void detachFromSlot();

	detail::HeapCore* scene_;
	RenderObjectPtr object_;
	/// The non-constant inputs it subscribed to (inline: the common object — its own trafo and one more — allocates
	/// nothing; a growing std::vector made two allocations per add and two frees per removal).
	absl::InlinedVector<Input, 2> inputs_;
	absl::InlinedVector<const scene::BufferView*, 4> views_; ///< attributes in header order
	/// GPU routing: the axes its mode rules derive (their leaves are read by its route group, not by it).
	uint32_t routed_axes_ = 0;
	std::unique_ptr<modes::ModeInputs> modes_; ///< the inputs of its mode rules (only with rules)
	/// The atlas entries or bindless table entries it holds (only while drawn through them), in the effect's texture
	/// order, or its refusal.
	struct SharedTextures
	{
		struct Use
		{
			scene::TextureData texture;
			scene::SamplerState sampler;
			std::array<uint32_t, 4> words; ///< the entry as the draw header carries it
		};
		absl::InlinedVector<Use, 2> uses;         ///< atlas entries
		absl::InlinedVector<uint32_t, 4> entries; ///< bindless table entries (the draw header's words)
		bool bindless = false;
		bool refused = false; ///< counted in detail::HeapCore::atlas_refused or bindless_refused
	};
	std::unique_ptr<SharedTextures> textures_;
};

// The arena's small steps, inline: placement calls them for every allocation.

} // namespace quokka::heap
