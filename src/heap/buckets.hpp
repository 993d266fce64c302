// buckets.hpp — how the heap organises draws (internal to quokka::heap): a bucket per (effect, chunk, texture key) with
// its draw-header heap, and in it a slot per distinct pipeline state, drawn with one strategy. Two seams live here:
// the bucket's texture key (TextureKey) and slot routing (SlotRouting).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include <quokka/adaptive/core.hpp>
#include <quokka/base/result.hpp>
#include <quokka/fx/compile.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/heap/megacall_scan.hpp>
#include <quokka/inputs/context.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/modes/mode_key.hpp>
#include <quokka/modes/route_spec.hpp>

#include "gpu_array.hpp"

namespace quokka::heap
{

using adaptive::Ref;
using detail::GpuArray;
class HeapObject;
struct Bucket;
struct Slot;

/// The leaves a route group's rules read as `declared` (scene::ModeRule), read by the group instead of its objects: a
/// change queues the group for re-specialisation (SlotRouting::respecialise) — O(groups), no object touched.
struct DeclaredReader final : adaptive::AdaptiveObject
{
	DeclaredReader(Slot* carrier_, std::vector<Slot*>* queue_, scene::PipelineState leaves_)
	    : AdaptiveObject(kWantsInputChanged), carrier(carrier_), queue(queue_), leaves(std::move(leaves_))
	{
	}
	Slot* carrier;
	std::vector<Slot*>* queue;
	scene::PipelineState leaves; ///< the first member's state: its non-constant declared leaves are every member's
	std::vector<adaptive::AdaptiveObject*> tracked;
	bool queued = false;
	void inputChanged(adaptive::AdaptiveObject*) override
	{
		if (!std::exchange(queued, true))
			queue->push_back(carrier);
	}
	/// Sets every axis of `rules` that reads `declared` in `values` from its leaf, depending on the non-constant ones.
	void read(std::span<const scene::ModeRule> rules, scene::PipelineStateValues& values);
	/// Drops its dependencies (the group goes).
	void detach();
};

/// GPU routing of one group of objects (mode_routing.cpp): objects of one bucket and index kind with the same mode
/// rules and the same declared state. Their records live in one carrier Slot (indirect commands, as any slot's) with
/// their rules' inputs packed beside them; each frame that changed them, the route kernel writes every record's slot
/// and the partition appends its command into that slot's region of `out` (regions of `capacity` records each), and
/// each of the spec's slots is one indirect-count draw of its region with its own pipeline and dynamic state.
/// A route kernel, compiled at once or, with background pipelines, on a worker (inputs::Context::runJob): a group
/// whose kernel is not ready yet is not routed and not drawn (its draws are counted as waiting).
struct RouteKernelJob final : inputs::BackgroundJob
{
	std::optional<modes::RouteKernel> kernel;
};

struct RouteGroup
{
	modes::RouteSpec spec;
	scene::PipelineStateValues declared; ///< the state the group's objects declare (the rules' `declared`)
	const RouteKernelJob* kernel = nullptr;
	/// The regions hold the partition of the current spec (false from a new spec or buffers until the routing is
	/// recorded — a kernel compiling in the background delays it): encode draws the group only then.
	bool routed = false;
	struct Draw
	{
		const inputs::PipelineEntry* pipeline = nullptr; ///< indirect
		gpu::DynamicState dyn;
		inputs::PipelineRequest request;                 ///< (the indirect one: the megacall pipeline is made from it)
		const inputs::PipelineEntry* megacall = nullptr; ///< made when the carrier first draws with the megacall
	};
	std::vector<Draw> draws; ///< one per spec slot
	GpuArray inputs{gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc, "heap route inputs"};
	uint32_t capacity = 0; ///< records each region (and slot_of) holds; 0 = no buffers yet
	uint32_t stride = 0;   ///< words of one record in `out`: the carrier's command words, or megacall records' 5
	gpu::BufferHandle slot_of, regions, counts, cursors, out;
	/// The megacall strategy: per draw, the scan's scratch and tile index, and the draws' arguments (16 bytes each).
	std::vector<std::optional<ScanBuffers>> scans;
	std::vector<gpu::BufferHandle> tiles;
	gpu::BufferHandle args;
	/// One host-readable word the route kernel lowers to the first record it could not route (kNoSlot: none); read
	/// by the update after the routing's submission `bad_after` completed (detail::checkRouting).
	gpu::BufferHandle bad;
	uint64_t bad_after = 0;
	adaptive::Ref<DeclaredReader> reader;
	/// Specialisations for declared states the group had before (a toggle flipping back finds its spec, draws and
	/// kernel here: no spec made, no pipeline looked up), most recent last, at most kKept.
	struct Specialised
	{
		scene::PipelineStateValues declared;
		modes::RouteSpec spec;
		std::vector<Draw> draws;
		const RouteKernelJob* kernel = nullptr;
	};
	static constexpr size_t kKept = 4;
	std::vector<Specialised> kept;
	~RouteGroup()
	{
		if (reader)
			reader->detach();
	}
};

/// One pipeline state inside a bucket: its records and, per strategy, its GPU arrays.
struct Slot
{
	Bucket* bucket = nullptr;
	const inputs::PipelineEntry* indirect_pipeline = nullptr;
	const inputs::PipelineEntry* megacall_pipeline = nullptr;
	inputs::PipelineRequest request; ///< (indirect variant) kept to create the megacall pipeline lazily
	gpu::DynamicState dyn;
	bool indexed = true;
	uint32_t prim = 3; ///< vertices per primitive
	std::vector<HeapObject*> records;
	uint64_t emit_sum = 0;
	DrawStrategy strategy = DrawStrategy::Indirect; ///< how the slot draws now (Auto chooses per frame)
	// indirect: VkDrawIndexedIndirectCommand (5 words) or VkDrawIndirectCommand (4 words) per record; count word.
	GpuArray commands{gpu::BufferUsage::Indirect | gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
	                  "heap commands"};
	GpuArray draw_count{gpu::BufferUsage::Indirect | gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc,
	                    "heap count"};
	// megacall: 5-word records, scan scratch, arguments, tile index.
	GpuArray mrecords{gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc, "heap megacall records"};
	std::optional<ScanBuffers> scan;
	gpu::BufferHandle args;
	gpu::BufferHandle tiles;
	bool scan_dirty = true;
	bool queued = false;
	/// GPU routing: this slot carries a route group's records (drawn through the group's draws, never itself).
	std::unique_ptr<RouteGroup> route;

	uint32_t commandWords() const { return indexed ? 5u : 4u; }
};

/// The bucket's texture key — what an object's textures contribute to its bucket — and the textures it binds.
///
/// Seam: the key is the texture set itself, (texture, sampler) per binding, so objects with different textures draw
/// from different buckets and every bucket pushes its own descriptors. Objects drawn with an effect's atlas variant
/// (Bucket::atlas) have no key: their entries are in their draw headers. A bindless table would do the same with an
/// index per texture.
struct TextureKey
{
	std::vector<const void*> words; ///< texture, sampler, texture, sampler, … (identities: equal words, same bucket)
	std::vector<Ref<inputs::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;

	/// The key of the textures `bindings` (a compiled effect's) name, as `object` supplies them. Errors:
	/// InvalidArgument naming the object (a texture it lacks); as Context::sampler().
	static Result<TextureKey> of(inputs::Context& context, const scene::RenderObject& object,
	                             std::span<const fx::TextureBinding> bindings);
};

/// What makes two objects share a bucket: the heap effect's compile key, the chunk and the texture key.
struct BucketKey
{
	fx::Hash128 effect;
	uint32_t chunk = 0;
	std::vector<const void*> textures; ///< TextureKey::words
	bool operator==(const BucketKey&) const = default;
};

struct BucketKeyHash
{
	size_t operator()(const BucketKey& k) const
	{
		uint64_t h = k.effect.lo ^ (k.effect.hi * 0x9E3779B97F4A7C15ull) ^ (uint64_t(k.chunk) << 17);
		for (const void* t : k.textures)
			h = (h ^ uint64_t(uintptr_t(t))) * 0xff51afd7ed558ccdull;
		return size_t(h ^ (h >> 31));
	}
};

/// (effect, chunk, textures): one draw-header heap and its slots.
struct Bucket
{
	uint32_t chunk = 0;
	fx::Effect effect;
	fx::CompiledEffectPtr indirect_effect;
	fx::CompiledEffectPtr megacall_effect;
	uint32_t header_words = 0;
	GpuArray headers{gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc, "heap draw headers"};
	std::vector<uint32_t> free_headers;
	uint32_t header_count = 0;
	bool headers_queued = false; ///< listed in detail::HeapCore::dirty_headers
	std::vector<Ref<inputs::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	std::vector<uint32_t> texture_bindings;
	/// Its effect is an atlas variant: the atlas's pages are bound, each object's entries are in its draw header.
	bool atlas = false;
	/// Its effect is a bindless variant: the scene's table is bound, each object's entries are in its draw header.
	bool bindless = false;
	fx::PathVariant megacallVariant() const { return fx::megacallVariantOf(indirect_effect->path); }
	std::vector<std::unique_ptr<Slot>> slots;
	/// Mode keys (and index kinds) already resolved to a slot: one hash lookup per object, however many states the
	/// bucket holds, and no PipelineRequest built for a state seen before.
	absl::flat_hash_map<std::pair<modes::ModeKey, bool>, Slot*> known;
	/// GPU routing: the carrier slot of each route group, by (declared state, index kind, the rules' key).
	absl::flat_hash_map<std::tuple<modes::ModeKey, bool, std::string>, Slot*> routed;
	/// The last state routed (most buckets see one state): compared by value before a key is encoded.
	struct LastRoute
	{
		scene::PipelineStateValues state;
		bool indexed = false;
		Slot* slot = nullptr;
	} last;
	uint32_t objects = 0;
	uint64_t serial = 0;
};

/// Slot routing: how an object's pipeline state chooses its slot inside a bucket.
///
/// Seam: today the routing is on the CPU, by value. An object's pipeline-state values are encoded as a mode key for the
/// framebuffer's attachments and looked up among the keys the bucket has seen (Bucket::known); a new key builds a
/// pipeline request and lands in the slot with the same pipeline, dynamic state and index kind, or a new slot.
/// GPU-routed pipeline state replaces this class: a per-object mode key computed on the GPU partitions the bucket's
/// records into its slots, and the CPU no longer reads state values per object.
class SlotRouting
{
public:
	SlotRouting(inputs::Context& context, const scene::FramebufferSignature& signature, DrawStrategy draw)
	    : context_(&context), signature_(&signature), attachments_(signature.colorNames()), draw_(draw)
	{
	}
	/// The slot for `state` and the index kind in `bucket`; `created` tells whether a new slot was made (the caller's
	/// shape changed). Errors: as Context::pipeline().
	Result<Slot*> route(Bucket& bucket, const scene::PipelineStateValues& state, bool indexed, bool& created);
	/// GPU routing: the carrier slot of the route group of objects declaring `declared` with `rules` (their key:
	/// rulesKey()) in `bucket`, made with its draws (a pipeline per spec slot) when new. Errors: as RouteSpec::make
	/// and Context::pipeline().
	Result<Slot*> routeGroup(Bucket& bucket, const scene::PipelineStateValues& declared, bool indexed,
	                         const scene::RenderObject& object, const std::string& key, std::vector<Slot*>& queue,
	                         bool& created);
	/// The key of `object`'s route group besides its bucket, index kind and declared state: its rules (axes, rule
	/// ids, blend states) and the declared leaves they read — by identity where a leaf may change (a shared toggle: one
	/// group re-specialised when it flips), by value where it is a constant.
	static std::string groupKey(const scene::RenderObject& object);
	/// Re-reads the declared leaves of `carrier`'s group and, when their values changed, re-specialises it: a new spec
	/// and draws (pipelines of the new combinations). Returns whether the records' packed inputs changed their layout
	/// (the caller re-packs every record; folding with the new values kept or dropped other inputs). Errors: as
	/// RouteSpec::make and Context::pipeline().
	Result<bool> respecialise(Slot& carrier);

private:
	/// The pipeline and dynamic state of `state` for `bucket`'s effect (and the request that made it).
	struct Pipeline
	{
		const inputs::PipelineEntry* entry;
		gpu::DynamicState dyn;
		inputs::PipelineRequest request;
	};
	Result<Pipeline> pipelineOf(const Bucket& bucket, const scene::PipelineStateValues& state);
	/// The spec of `rules` for `declared` and its draws, into `group`.
	Result<void> specialise(const Bucket& bucket, RouteGroup& group, std::span<const scene::ModeRule> rules,
	                        const scene::PipelineStateValues& declared);
	Result<Slot*> slotOf(Bucket& bucket, const scene::PipelineStateValues& state, bool indexed, bool& created);
	inputs::Context* context_;
	const scene::FramebufferSignature* signature_;
	std::vector<std::string> attachments_; ///< the signature's colour attachments, what mode keys are encoded for
	DrawStrategy draw_;
};

} // namespace quokka::heap
