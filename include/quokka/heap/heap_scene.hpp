// quokka/heap/heap_scene.hpp — the heap renderer: every object's data in shared GPU heaps, drawn per bucket.
//
// A HeapScene draws render objects whose inputs live in an arena of chunks (one storage buffer each, at most
// max_chunk_bytes, doubling as the index buffer): every allocation is a 16-byte header {typeId, length, strideBytes,
// pad} plus tight data, placed by a best-fit allocator per chunk, and all inputs of one draw are in one chunk. Inputs
// are pooled: a uniform aval is one allocation per chunk however many objects read it (one upload per change), equal
// constants share one, a vertex or index buffer likewise (converted to the shader's type at ingest, u16 indices
// widened); what only one object reads sits side by side in one private block that object owns. Objects are grouped
// into buckets (effect, chunk, textures), each with a draw-header heap (one header of arena refs per object), and in a
// bucket into slots (one per distinct pipeline state). A slot is drawn with one of two strategies, pixel-identical:
//  - `indirect`: one VkDrawIndexedIndirectCommand per object (firstInstance = header index), one
//    vkCmdDraw(Indexed)IndirectCount per slot with the count in a GPU buffer;
//  - `megacall`: 5-word records, a GPU scan writing each record's first emitted vertex, the draw's arguments and a
//    tile index, then one non-indexed draw per slot whose vertex shader finds its record by binary search.
// `auto` picks per slot from the mean vertices emitted per record (small objects: megacall), see HeapTuning.
// Objects the heap cannot draw (strip and fan topologies, or a topology that is not a constant) are refused by
// heapEligible(); the runtime's ObjectRouter sends those to the classic path. Draw order inside the heap is
// unspecified.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <quokka/adaptive/aset.hpp>
#include <quokka/atlas/atlas_pool.hpp>
#include <quokka/base/result.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/inputs/context.hpp>
#include <quokka/scene/framebuffer_signature.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::heap
{

enum class DrawStrategy : uint8_t
{
	Auto,
	Indirect,
	Megacall,
};
const char* strategyName(DrawStrategy strategy);
/// Parses "auto" | "indirect" | "megacall".
Result<DrawStrategy> parseStrategy(const std::string& name);

/// How the heap draws textured objects (HeapOptions::textures).
enum class HeapTextures : uint8_t
{
	Auto,     ///< Bindless where the device has descriptor indexing, else Atlas
	Bindless, ///< a table of textures the shaders index (gpu::BindlessTable); needs descriptor indexing
	Atlas,    ///< textures packed into the pages of an atlas (atlas::AtlasPool), sampled in software
	Bound,    ///< each texture set bound per draw: its own bucket and draw
};
const char* texturesName(HeapTextures textures);
/// Parses "auto" | "bindless" | "atlas" | "bound".
Result<HeapTextures> parseTextures(const std::string& name);

/// Thresholds inside the heap, exposed for measurement and tests. EXPERIMENTAL: fields, meanings and defaults may
/// change in any release without notice; the defaults are the best measured on the H200 (docs/benchmarks.md).
struct HeapTuning
{
	/// A chunk is compacted when its free bytes reach this floor and its live bytes are under half its cursor. Bytes.
	uint64_t compaction_floor = 4ull << 20;
	/// `auto`: a slot whose records emit fewer vertices than this on average (index count × instance count) is drawn
	/// by the megacall, a larger one by indirect commands (the crossover lies between 12 and 36 emitted vertices).
	uint32_t megacall_below = 24;
	/// A staging page's arena writes reach their chunk through the compute scatter (gpu::ScatterCopy: one dispatch, 16
	/// bytes of table per region) when the page has more than this many regions of at most 64 KiB, and through
	/// vkCmdCopyBuffer otherwise (and for longer regions): the copy costs the driver CPU time per region, the scatter
	/// a fixed dispatch. 0 = every short region is scattered; UINT32_MAX = none is.
	uint32_t scatter_above = 32;
	/// The same rule for what the heap stages through its context's StagingRing (draw headers, records, indirect
	/// commands): StagingRing::setScatterAbove. Same meaning of 0 and UINT32_MAX.
	uint32_t ring_scatter_above = 256;
	/// With background pipelines (inputs::Context::setBackgroundPipelines): objects whose effect became ready are
	/// placed until a frame's update spent this many milliseconds; the rest wait for the next frame (a scene whose
	/// objects all waited for one effect appears over a few frames instead of in one long one; at least one object
	/// is placed per frame). 0 = no limit.
	double placement_budget_ms = 8.0;
	/// A frame placing at least this many objects (a scene's first frame, a model load) is a bulk frame: the conversion
	/// of their vertex and index data into the arena's layout runs on up to `convert_threads` worker threads (the
	/// heap's own, at most one less than the host's hardware threads), overlapped with the placement of the objects
	/// after them; the frame waits for the last conversions before its upload. Its staging pages past 16 MiB are made
	/// one ahead on another thread (the driver's allocation of host-visible memory, the first touch of its pages).
	/// Smaller frames do all of it on the calling thread, as does every frame when `convert_threads` is 0 or the host
	/// has one hardware thread. UINT32_MAX = never.
	uint32_t bulk_placement_above = 256;
	uint32_t convert_threads = 4;
	/// On a device whose device-local memory the host can write — all of it, or at least half (resizable BAR, unified
	/// memory, lavapipe: DeviceInfo::host_visible_device_local_bytes) — the arena's chunks and the draw and derive
	/// arrays live in gpu::MemoryDomain::DeviceMapped memory, and a frame whose scene no command list in flight may
	/// read (every earlier list that uploaded, prepared or encoded the scene completed) writes its changes straight
	/// into it: no staging, no copy recorded, no barrier for them. A frame while earlier ones are in flight, and a
	/// chunk's writes after one of its writes had to be staged in the frame (its buffer too small, a compaction, a bulk
	/// frame), stage and copy as before. false (or no such memory): every write is staged and copied into device-local
	/// buffers.
	bool write_in_place = true;
};

struct HeapOptions
{
	/// How slots draw: `indirect`, `megacall`, or `auto` (per slot, by HeapTuning::megacall_below).
	DrawStrategy draw = DrawStrategy::Auto;
	/// Bytes per arena chunk, a multiple of 16 (rounded down); 0 = min(maxStorageBufferRange, 256 MiB). An object's
	/// inputs must fit in one chunk. Small values force paging (tests).
	uint64_t max_chunk_bytes = 0;
	/// Derived uniforms that read values changing independently of each other — ModelViewProjTrafo from an object's
	/// ModelTrafo and the camera, an object's own rules (RenderObject::derived) over the view — are computed on the
	/// device by a derive kernel per frame (in fp64 where the device has shaderFloat64, else df32), so a camera move
	/// costs the CPU one value, not one per object. false: every derived value on the CPU in double, as the classic
	/// path does.
	bool gpu_derived = true;
	/// Force df32 constituents on a device with shaderFloat64 (tests compare both).
	bool force_df32 = false;
	/// Objects with mode rules (RenderObject::mode_rules) are routed on the device: objects sharing their rules and
	/// declared state form a group whose records a generated kernel assigns to the rules' combinations of state and a
	/// partition kernel sorts into one draw per combination, so the CPU neither evaluates rules nor moves records when
	/// the rules' inputs change (it re-packs the changed inputs), and a declared value the group's objects share (a
	/// toggle) re-specialises the group, not each object.
	/// false: the rules are evaluated on the CPU and each object moves between slots by value, as the classic path.
	bool gpu_routing = true;
	/// How objects whose effect samples only 2D textures are drawn, so that objects differing only in their textures
	/// share a bucket and a draw:
	/// - Bindless: the scene's table of textures (gpu::BindlessTable, one entry per texture and sampler, shared by the
	///   objects using them) is bound once; each object's draw header holds its textures' entries and the shaders
	///   index the table (fx::PathVariant::HeapIndirectBindless): hardware sampling, any texture on the GPU (renderTo
	///   images too), every texture function. A texture changing its value keeps its entry (a new size or format
	///   rewrites the entry once the frames in flight retired).
	/// - Atlas: textures that are RGBA8 texels on the host are packed into the atlas's pages and sampled there in
	///   software (fx::PathVariant::HeapIndirectAtlas); a texture changing its value re-places its objects.
	/// - Bound: every texture set its own bucket and draw.
	/// An object the table or atlas refuses — the table full; for the atlas a texture on the GPU already, larger
	/// than a page, no room even after evicting idle entries and growing — or whose effect uses a texture otherwise
	/// (a cube map; for the atlas, a texture passed to a function of its own) is drawn with its textures bound: its
	/// own bucket per texture set (never an error, never a dropped object). Auto: Bindless where the device has
	/// descriptor indexing, else Atlas. Bindless on a device without it: update() fails (MissingFeature).
	HeapTextures textures = HeapTextures::Auto;
	/// Entries of the bindless table (distinct texture and sampler pairs); at most DeviceInfo::max_bindless_textures.
	uint32_t bindless_capacity = 1u << 16;
	atlas::AtlasOptions atlas_options;
	HeapTuning tuning; ///< EXPERIMENTAL
};

/// Where update()'s CPU time went: its steps, in milliseconds (the sum is update_ms less a few microseconds of
/// bookkeeping). Placement is three phases over batches of objects: read, acquire, attach.
struct HeapUpdatePhases
{
	double pull_ms = 0.0;    ///< taking the membership's changes; sorting the additions by object id
	double remove_ms = 0.0;  ///< releasing removed objects (arena space, pooled entries, records)
	double read_ms = 0.0;    ///< placement: making the objects and reading their inputs (adaptive reads)
	double acquire_ms = 0.0; ///< placement: arena space and pooled inputs — converting and staging the buffers
	double attach_ms = 0.0;  ///< placement: buckets, slots, headers and draw records
	/// placement of a bulk frame: waiting for the worker threads' last conversions (HeapTuning::bulk_placement_above)
	double convert_wait_ms = 0.0;
	double refresh_ms = 0.0; ///< re-packing changed shared values; re-reading objects whose inputs changed
	double finish_ms = 0.0;  ///< strategy choice per changed slot, GPU-derive bookkeeping, the shape's counts
	/// refresh_ms by part: re-packing changed shared values, the GPU-derive constituents queued for packing, re-reading
	/// the changed objects (with the retried waiting ones and re-specialised groups)
	double repack_ms = 0.0, derive_refresh_ms = 0.0, objects_refresh_ms = 0.0;
	/// upload_ms (HeapStats) by part: sizing and compacting the chunks, the frame's arena writes and their pages, the
	/// GPU-derive arrays, the atlas, the draw headers and slot records
	double upload_chunks_ms = 0.0, upload_writes_ms = 0.0, upload_derive_ms = 0.0, upload_atlas_ms = 0.0,
	       upload_draws_ms = 0.0;

	HeapUpdatePhases& operator+=(const HeapUpdatePhases& o)
	{
		pull_ms += o.pull_ms;
		remove_ms += o.remove_ms;
		read_ms += o.read_ms;
		acquire_ms += o.acquire_ms;
		attach_ms += o.attach_ms;
		convert_wait_ms += o.convert_wait_ms;
		refresh_ms += o.refresh_ms;
		finish_ms += o.finish_ms;
		repack_ms += o.repack_ms;
		derive_refresh_ms += o.derive_refresh_ms;
		objects_refresh_ms += o.objects_refresh_ms;
		upload_chunks_ms += o.upload_chunks_ms;
		upload_writes_ms += o.upload_writes_ms;
		upload_derive_ms += o.upload_derive_ms;
		upload_atlas_ms += o.upload_atlas_ms;
		upload_draws_ms += o.upload_draws_ms;
		return *this;
	}
};

/// Counters of the last update() … encode(), plus the heap's current shape.
struct HeapStats
{
	uint32_t added = 0;           ///< objects placed (update)
	uint32_t removed = 0;         ///< objects released (update)
	uint32_t refreshed = 0;       ///< objects with a changed draw, active flag or state (update)
	uint32_t rebuilt = 0;         ///< objects re-placed because a buffer changed (update)
	uint32_t uniform_uploads = 0; ///< pooled uniform values re-written (update)
	uint64_t upload_bytes = 0;    ///< bytes written for the GPU: staged and copied, or in place (update, upload)
	/// Of upload_bytes, those written straight into the buffers' mapped device memory (HeapTuning::write_in_place)
	uint64_t in_place_bytes = 0;
	uint32_t scans = 0;          ///< megacall scans recorded (prepare)
	uint32_t draw_calls = 0;     ///< indirect draw commands recorded (encode)
	uint32_t pipeline_binds = 0; ///< (encode)
	/// Draws left out because their pipeline, or their route group's route kernel, is still being made in the
	/// background (encode)
	uint32_t waiting_draws = 0;
	uint32_t compactions = 0; ///< (update)
	/// Objects not placed yet because their effect, or a kernel computing their GPU-derived values (derive, chain),
	/// is still being compiled in the background (update)
	uint32_t waiting_objects = 0;
	/// Placement attempts skipped because the chunk certainly had no room for an object's unshared buffers (update)
	uint32_t chunks_skipped = 0;
	/// Bytes of vertex and index data converted on worker threads (update; a bulk frame:
	/// HeapTuning::bulk_placement_above)
	uint64_t converted_off_thread = 0;
	/// Arena writes of the frame that overlapped an earlier one — a block written, freed and handed out again within
	/// the frame (a placement rolled back from a full chunk) — resolved so that the later write wins (upload)
	uint32_t overlapping_writes = 0;
	/// Copy regions recorded for the frame's arena writes: one per run of blocks staged side by side (upload)
	uint32_t copy_regions = 0;
	/// Arena scatter dispatches recorded for them (upload; HeapTuning::scatter_above)
	uint32_t scatters = 0;
	/// derive kernel dispatches (prepare): one per chunk whose records have something to compute (a record written, or
	/// a value one reads re-packed)
	uint32_t derive_dispatches = 0;
	uint32_t constituent_uploads = 0; ///< constituents re-packed: values GPU-derived uniforms read (update)
	uint32_t chain_dispatches = 0;    ///< chain kernel dispatches (prepare): one per level of links, when changed
	uint32_t routed_groups = 0;       ///< GPU-routed groups routed and partitioned again (prepare): those that changed
	/// GPU-routed groups re-specialised because a declared value they read changed (update): no object touched
	uint32_t respecialised = 0;
	uint32_t atlas_uploads = 0; ///< atlas entries built and copied into their pages (upload)
	// Shape after the update.
	uint32_t objects = 0;
	uint32_t atlas_objects = 0; ///< objects whose textures are sampled from the atlas
	/// Objects whose textures the atlas refused, or whose effect has no atlas variant (see HeapOptions::atlas): drawn
	/// with their textures bound
	uint32_t atlas_refused = 0;
	uint32_t atlas_entries = 0; ///< textures held by the atlas (in use or idle)
	/// How the scene draws textures (HeapScene::textures(); summed stats: the first scene's).
	HeapTextures texture_path = HeapTextures::Auto;
	uint32_t bindless_objects = 0; ///< objects whose textures are entries of the bindless table
	/// Objects drawn with bound textures because the bindless table was full or their effect has no bindless variant.
	uint32_t bindless_refused = 0;
	uint32_t bindless_entries = 0; ///< distinct (texture, sampler) pairs in the bindless table
	/// Frames that waited for the frames in flight before rewriting the entry of a texture whose image was replaced.
	uint32_t bindless_waits = 0;
	uint64_t atlas_bytes = 0;      ///< device memory of the atlas's pages
	uint32_t derived_uniforms = 0; ///< derived uniform nodes interned (collected under add/remove churn)
	uint32_t derive_records = 0;   ///< uniform values the derive kernel computes
	/// Transform-chain nodes of depth ≥ 2 (scene/trafo_chain.hpp) the chain kernel composes, and their levels
	uint32_t chain_links = 0;
	uint32_t chain_levels = 0;
	/// Bytes a derive dispatch over every record reads and writes (records, their inputs' epochs and constituents,
	/// outputs): what a camera move that every record reads costs the GPU's memory
	uint64_t derive_bytes = 0;
	uint32_t buckets = 0;
	uint32_t slots = 0;
	uint32_t indirect_slots = 0; ///< slots drawn with the indirect strategy
	uint32_t megacall_slots = 0;
	uint32_t chunks = 0;
	uint64_t arena_bytes = 0;          ///< sum of the chunks' cursors
	uint64_t live_bytes = 0;           ///< bytes of live allocations
	uint64_t arena_capacity_bytes = 0; ///< GPU memory of the chunks' buffers (upload; an emptied chunk gives its back)
	double update_ms = 0.0;
	HeapUpdatePhases phases; ///< update_ms by step
	double upload_ms = 0.0;  ///< CPU time of upload(): staging this frame's writes and shadow arrays
	double prepare_ms = 0.0; ///< CPU time of prepare(): recording the chain, derive and megacall-scan dispatches
	double encode_ms = 0.0;

	/// Sums every field (a task over several heap scenes).
	HeapStats& operator+=(const HeapStats& o)
	{
		added += o.added;
		removed += o.removed;
		refreshed += o.refreshed;
		rebuilt += o.rebuilt;
		uniform_uploads += o.uniform_uploads;
		upload_bytes += o.upload_bytes;
		in_place_bytes += o.in_place_bytes;
		scans += o.scans;
		draw_calls += o.draw_calls;
		pipeline_binds += o.pipeline_binds;
		waiting_draws += o.waiting_draws;
		waiting_objects += o.waiting_objects;
		routed_groups += o.routed_groups;
		respecialised += o.respecialised;
		atlas_uploads += o.atlas_uploads;
		atlas_objects += o.atlas_objects;
		atlas_refused += o.atlas_refused;
		atlas_entries += o.atlas_entries;
		if (texture_path == HeapTextures::Auto)
			texture_path = o.texture_path;
		bindless_objects += o.bindless_objects;
		bindless_refused += o.bindless_refused;
		bindless_entries += o.bindless_entries;
		bindless_waits += o.bindless_waits;
		atlas_bytes += o.atlas_bytes;
		compactions += o.compactions;
		chunks_skipped += o.chunks_skipped;
		converted_off_thread += o.converted_off_thread;
		overlapping_writes += o.overlapping_writes;
		copy_regions += o.copy_regions;
		scatters += o.scatters;
		derive_dispatches += o.derive_dispatches;
		constituent_uploads += o.constituent_uploads;
		chain_dispatches += o.chain_dispatches;
		objects += o.objects;
		derive_records += o.derive_records;
		chain_links += o.chain_links;
		chain_levels = std::max(chain_levels, o.chain_levels);
		derive_bytes += o.derive_bytes;
		buckets += o.buckets;
		slots += o.slots;
		indirect_slots += o.indirect_slots;
		megacall_slots += o.megacall_slots;
		chunks += o.chunks;
		arena_bytes += o.arena_bytes;
		live_bytes += o.live_bytes;
		arena_capacity_bytes += o.arena_capacity_bytes;
		derived_uniforms += o.derived_uniforms;
		update_ms += o.update_ms;
		phases += o.phases;
		upload_ms += o.upload_ms;
		prepare_ms += o.prepare_ms;
		encode_ms += o.encode_ms;
		return *this;
	}
};

/// Host memory a heap scene holds, by category (HeapScene::hostMemory()): the sizes of its records and the capacities
/// of the arrays and tables it allocated — what a user's process pays per placed object beyond the scene's own data.
/// Not counted: malloc's own overhead per allocation, the per-effect and per-pipeline state (compiled effects, route
/// kernels: O(effects)), device memory (chunks, staging pages: see arena_capacity_bytes) and the B-tree of each chunk's
/// free blocks beyond its keys (estimated at 1.5 × 8 bytes per free block).
struct HeapHostMemory
{
	uint64_t objects = 0;      ///< the objects' records (HeapObject) and their arrays that outgrew the record
	uint64_t private_sets = 0; ///< the objects' private blocks' descriptions (buffers and uniforms only they read)
	uint64_t pool = 0;         ///< pooled entries: shared buffers, uniform values (constants with their keys)
	/// Edges from the inputs the scene reads to the objects and entries reading them: a link record each and its
	/// place in the input's output array
	uint64_t subscriptions = 0;
	uint64_t tables = 0; ///< lookup tables: objects, pool, constants, the placement index, buckets and slot maps
	/// Buckets and slots with their host copies of the GPU's draw headers, commands, megacall records and counts, and
	/// each slot's object list
	uint64_t draws = 0;
	uint64_t allocator = 0; ///< the chunks' allocators: block-start and live bitmaps, free-block index
	uint64_t derive = 0;    ///< derived uniforms (CPU nodes' table) and GPU derive (constituents, records, chain links)
	uint64_t frame = 0;     ///< capacity kept between frames: queues, dirty lists, the chunks' write logs

	uint64_t total() const
	{
		return objects + private_sets + pool + subscriptions + tables + draws + allocator + derive + frame;
	}
	HeapHostMemory& operator+=(const HeapHostMemory& o)
	{
		objects += o.objects;
		private_sets += o.private_sets;
		pool += o.pool;
		subscriptions += o.subscriptions;
		tables += o.tables;
		draws += o.draws;
		allocator += o.allocator;
		derive += o.derive;
		frame += o.frame;
		return *this;
	}
};

/// Whether the heap can draw `object`: list topologies (the megacall emits whole primitives per record) given as
/// constants. Everything else (attributes, instancing, textures, blending, MSAA, u16/u32 indices) is supported.
bool heapEligible(const scene::RenderObject& object);

namespace detail
{
struct HeapCore;       // the scene's state (src/heap/heap_internal.hpp)
struct HeapTestAccess; // test hooks (src/heap/heap_test_access.hpp)
} // namespace detail

/// The heap renderer. Owned by one thread (adaptive values); destroy before its Context.
///
/// Lifecycle per frame: any number of add() / remove() calls (or changes of the set the scene was built over, and of
/// the objects' inputs), then update() (CPU: the membership changes, removals first, then the changed inputs —
/// O(changes)); upload(list) (chunk growth and compaction copies, this frame's arena writes from host pages, draw
/// headers and records through the context's staging ring); Context::upload(list); prepare(list) (megacall scans of
/// changed slots) — all outside a render pass — then encode(list) inside the render pass (O(buckets × slots)
/// commands), then submit. Errors of update() name the object; that object is left out until one of its inputs
/// changes, and the others are placed.
///
/// Lifetimes: the context must outlive the scene. The scene holds a reference to every object it draws and to what it
/// reads of it, so the caller may drop its own. GPU memory a frame may still read is freed only after the command
/// lists that read it completed. Destroying the scene drops its pool, chunks and buckets whole (no per-object removal).
class HeapScene
{
public:
	/// An empty heap scene drawing into framebuffers of `signature`; add() and remove() say which objects it draws.
	/// `context` must outlive the scene.
	HeapScene(inputs::Context& context, scene::FramebufferSignature signature, HeapOptions options = {});
	/// A heap scene drawing the objects of `objects`: each update() reads the set's changes (the scene is its only
	/// reader unless the caller adds another). add() and remove() are errors on such a scene.
	HeapScene(inputs::Context& context, scene::FramebufferSignature signature,
	          adaptive::aset<scene::RenderObjectPtr> objects, HeapOptions options = {});
	~HeapScene();
	HeapScene(const HeapScene&) = delete;
	HeapScene& operator=(const HeapScene&) = delete;

	/// Membership (a scene built without a set). An added object is placed by the next update(), a removed one
	/// released by it; between two update()s the last call per object wins (add then remove: nothing happens; remove
	/// then add: the object is placed again). Adding an object the scene holds, or removing one it does not, changes
	/// nothing. Every object must be heapEligible(): update() reports one that is not. O(1) each.
	void add(scene::RenderObjectPtr object);
	void remove(const scene::RenderObjectPtr& object);

	/// Applies the membership changes (removals before additions, additions in object-id order) and the changed
	/// inputs. Errors: one line naming the offending object (the object is left out until it changes); add()/remove()
	/// on a scene built over a set.
	Result<void> update();
	/// Grows GPU buffers, records compaction copies and stages this frame's writes. Before Context::upload(list).
	Result<void> upload(gpu::CommandList& list);
	/// Records the derive kernel's dispatches (GPU-derived uniforms) and the megacall scans of changed slots. After
	/// Context::upload(list), outside a render pass.
	Result<void> prepare(gpu::CommandList& list);
	/// Benchmarks: when set, prepare() writes `timer`'s timestamp pair around the derive dispatches of frames that
	/// record any (the caller resolves it after the submission completed; `derive_dispatches` says whether it ran).
	/// Null (the default): no timestamps.
	void setDeriveTimer(gpu::FrameTimer* timer);
	/// Records the draws: per slot one pipeline bind, one descriptor push and one indirect draw.
	void encode(gpu::CommandList& list);

	const HeapStats& stats() const { return stats_; }
	/// The largest chunk the heap makes (HeapOptions::max_chunk_bytes, as the device's limits cut it): an object
	/// whose buffers do not fit one is drawn by the classic path (runtime::ObjectRouter).
	uint64_t maxChunkBytes() const;
	const HeapOptions& options() const { return options_; }
	/// How this scene draws textured objects: HeapOptions::textures with Auto resolved for the device.
	HeapTextures textures() const;
	size_t objectCount() const;
	/// Host memory it holds now, by category. O(objects + pooled entries): for benchmarks and diagnostics, not frames.
	HeapHostMemory hostMemory() const;

	/// Tears the scene down in slices, until `deadline`: its objects leave their input nodes and are freed, then its
	/// pooled entries, constant values, GPU-derive constituents and derived nodes, the GPU-derive records, the arena
	/// chunks one by one and the free staging pages; the buckets' host arrays and the emptied tables' storage go to the
	/// device's reaper thread (freed there). True once all are gone; destroying the scene then costs
	/// O(buckets) instead of O(objects) — so a large scene leaves without a frame's
	/// stall (runtime::Runtime retires a dropped task's scenes this way, a budget per frame). After the first call the
	/// scene draws nothing and must not be updated, uploaded, prepared or encoded again; only dismantle() and
	/// destruction may follow. Each call makes progress (at least one slice) whatever the deadline.
	bool dismantle(std::chrono::steady_clock::time_point deadline);
	/// What dismantle() has yet to free: objects, pooled entries, constants, GPU-derive constituents (and their
	/// records, as one), derived nodes, arena chunks, free staging pages, buckets' arrays and, as one, the emptied
	/// tables' storage.
	size_t dismantleLeft() const;

	/// Diagnostics, over every chunk and every slot; each returns its findings (empty = clean).
	/// validateHeap: allocator invariants, pool refcounts, every header ref inside its chunk and on a live allocation
	/// of the right size, every record consistent with its object; plus (GPU read-back) the allocation headers, the
	/// draw headers and records as uploaded, and the megacall scans (firstEmit prefix, arguments, tile index).
	Result<std::vector<std::string>> validateHeap();

private:
	friend struct detail::HeapTestAccess; // the tests' hooks (src/heap/heap_test_access.hpp)
	std::unique_ptr<detail::HeapCore> impl_;
	HeapOptions options_;
	HeapStats stats_;
};

} // namespace quokka::heap
