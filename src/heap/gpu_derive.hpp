// gpu_derive.hpp — derived uniforms computed on the device (internal to quokka::heap).
//
// A uniform entry of recipe DerivedRecipe::Gpu holds a derivation (inputs::DerivedUniforms::DerivationPtr: a rule over
// input nodes, interned) and no node: its arena block is allocated and its header staged, and GpuDerive keeps a
// record [rule, output word, input slots…] in the entry's chunk. Each input node is a Constituent — its value at fp64
// or df32 precision in a slot of the constituents buffer (a forward and, when a rule reads it, a backward slot),
// shared by every record reading it and re-packed when the node changes. Each frame in which anything changed (a
// constituent re-packed, a record added, moved or removed), prepare() dispatches the derive kernel once per chunk
// whose records have something to compute (a record written, or a constituent one reads re-packed; every chunk
// holding records while transform chains exist), after the frame's arena writes and before the draws; the kernel
// computes only the records written
// or reading a constituent written since the last dispatch (epochs): a camera move re-packs one constituent and the
// GPU recomputes the values reading it, an edit of one trafo recomputes the values of that trafo.
//
// An input node that is a transform chain of depth ≥ 2 (scene::TrafoChain::world(), not constant) is a link: a
// constituent the chain kernel computes on the device (computed slots, GPU-only buffers) from its parent's world (a
// link, or the root's packed value) and its local transform (packed), never read on the CPU. Links are kept per level
// (depth − 2); prepare() dispatches the chain kernel level by level before the derive kernel, so moving a root re-packs
// one constituent and the GPU recomposes everything below it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include "gpu_array.hpp"
#include "heap_base.hpp"
#include <quokka/base/erase_some.hpp>
#include <quokka/derived/derive_kernel.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/scene/trafo_chain.hpp>

namespace quokka::heap
{
struct DerivedEntry;
}

namespace quokka::heap::detail
{

struct HeapCore;
class GpuDerive;

/// An input node of derive records: its forward value and, when read, its backward matrix, each in a slot.
struct Constituent final : AdaptiveObject
{
	static constexpr uint32_t kNone = UINT32_MAX;
	Constituent(GpuDerive& d, aval<UniformValue> n) : AdaptiveObject(kWantsInputChanged), derive(&d), node(std::move(n))
	{
	}
	GpuDerive* derive;
	aval<UniformValue> node;
	fx::Type type;                              ///< the type the records read (the forward half's)
	std::array<uint32_t, 2> slot{kNone, kNone}; ///< forward, backward
	std::array<uint32_t, 2> users{0, 0};
	bool queued = false;
	/// A link (computed on the device; slots carry derived::kComputedSlot): its chain, the constituents of its
	/// parent's world and of its local transform (whose halves it holds while it holds its own), its record.
	scene::TrafoChain chain;
	Constituent* parent = nullptr;
	Constituent* local = nullptr;
	uint32_t level = 0;
	uint32_t link = kNone; ///< its record in its level
	/// The chunks whose records read it: bit c for chunk c < 63, bit 63 for any chunk from 63 on (never cleared while
	/// it lives: a chunk marked once is at worst dispatched without need).
	uint64_t chunks = 0;

	bool isLink() const { return bool(chain); }

	void inputChanged(AdaptiveObject*) override;
	using AdaptiveObject::beginEvaluation;
	using AdaptiveObject::endEvaluation;
};

class GpuDerive
{
public:
	explicit GpuDerive(HeapCore& core);
	~GpuDerive();

	/// Registers `entry` (recipe Gpu, its block allocated in its chunk) as a record computing `d` into its data.
	/// Errors: an input whose value no constituent holds (a bool), or one node read as two types.
	Result<void> add(DerivedEntry& entry, const inputs::DerivedUniforms::Derivation& d);
	/// Drops the record of `entry` (its last user left) and the constituents only it read.
	void remove(DerivedEntry& entry);
	/// The entry's block moved (compaction): its record's output word follows.
	void moved(DerivedEntry& entry);
	/// Re-packs the constituents whose node changed (update). Errors: a value that changed its type.
	Result<void> refresh();
	/// Writes the changed constituents and records by `path`: in place, or staged (upload, before the staging ring is
	/// flushed).
	Result<void> upload(gpu::Device& device, gpu::StagingRing& staging, gpu::CommandList& list, HeapStats& stats,
	                    WritePath& path);
	/// Dispatches the kernel over each chunk whose records have something to compute since the last dispatch
	/// (prepare). Errors: the kernel's compilation.
	Result<void> dispatch(gpu::CommandList& list, HeapStats& stats);
	/// With background pipelines (inputs::Context::setBackgroundPipelines): true when the kernels that compute `d` are
	/// compiled; else registers its rule, starts compiling the kernels over every rule registered on a worker, and
	/// returns false — the object waits (HeapObject::Plan::waiting) and is placed once they are ready, so a frame never
	/// compiles the derive or chain kernel itself. Always true with background pipelines off (dispatch compiles them).
	bool kernelsReady(const inputs::DerivedUniforms::Derivation& d);

	size_t records() const { return records_; }
	size_t constituents() const { return constituents_.size(); }
	/// Dismantling the scene (HeapScene::dismantle): drops up to `count` constituents. True while some remain.
	bool drain(size_t count) { return eraseSome(constituents_, drain_cursor_, count); }
	/// Dismantling, once drained: its host arrays — the constituents' table, the records' bookkeeping and shadows, the
	/// links' — moved out for freeing elsewhere (hundreds of MiB at 10^7 records); the GPU buffers stay.
	std::shared_ptr<void> releaseHostArrays();
	size_t links() const { return links_; }
	/// Host bytes of its constituents (with their edges), records' bookkeeping, chain links and shadows. Memory
	/// accounting.
	size_t hostBytes() const;
	size_t levels() const { return levels_.size(); }
	/// HeapStats::derive_bytes: records and links with what they read and write.
	uint64_t bytes() const
	{
		return uint64_t(records_) * stride_ * 4 + value_bytes_ + uint64_t(links_) * derived::kChainStride * 4 +
		       uint64_t(link_halves_) * (3 * derived::kSlotWords * 4 + 12);
	}
	gpu::FrameTimer* timer = nullptr; ///< HeapScene::setDeriveTimer
	derived::Precision precision() const { return precision_; }
	void queue(Constituent* c) { queued_.emplace_back(c); }

private:
	struct RecordInfo
	{
		DerivedEntry* owner;
		absl::InlinedVector<std::pair<Constituent*, uint8_t>, 3> inputs; ///< (constituent, half)
		uint32_t value_bytes;                                            ///< its share of value_bytes_
	};
	struct ChunkRecords
	{
		GpuArray words{gpu::BufferUsage::Storage, "heap derive records", {}, {}, {}, false};
		std::vector<RecordInfo> info;
		/// A record of it was written, or a constituent one of them reads re-packed, since the last dispatch: the next
		/// dispatch computes this chunk (the others have nothing to compute in its epoch).
		bool dirty = false;
	};
	/// Marks the chunks whose records read `c` (Constituent::chunks).
	void markReaders(const Constituent& c);
	struct Level
	{
		GpuArray words{gpu::BufferUsage::Storage, "heap chain links", {}, {}, {}, false};
		std::vector<Constituent*> owner;
	};
	uint32_t ruleIndex(const rules::Rule& rule);
	/// Holds half `half` (0 forward, 1 backward) of the constituent of `node` read as `type`.
	Result<Constituent*> acquire(const aval<UniformValue>& node, fx::Type type, uint8_t half);
	/// A link's half: its computed slot, and the same half of its parent and local transform.
	Result<void> acquireLink(Constituent& c, uint8_t half);
	void releaseSlot(Constituent* c, uint8_t half);
	void writeLink(const Constituent& c);
	void removeLink(Constituent& c);
	/// Makes the computed buffers hold every computed slot (a new pair recomputes every link).
	Result<void> reserveComputed(gpu::Device& device);
	Result<void> pack(Constituent& c);
	void writeRecord(uint32_t chunk, uint32_t index);
	void restride(uint32_t stride);
	/// Takes the kernels the background jobs finished.
	void adoptJobs();

	/// A kernel compiled in the background (kernelsReady): what its worker makes, published by the job's state.
	struct DeriveJob final : inputs::BackgroundJob
	{
		std::optional<derived::DeriveKernel> kernel;
		size_t rules = 0; ///< it covers rules_[0, rules)
	};
	struct ChainJob final : inputs::BackgroundJob
	{
		std::optional<derived::ChainKernel> kernel;
	};

	HeapCore& core_;
	derived::Precision precision_;
	std::vector<rules::Rule> rules_;
	absl::flat_hash_map<std::pair<uint64_t, uint64_t>, uint32_t> rule_index_;
	std::optional<derived::DeriveKernel> kernel_; ///< over rules_[0, kernel_rules_)
	size_t kernel_rules_ = 0;
	size_t needed_rules_ = 0; ///< 1 + the highest rule index a record holds (registered rules may be unused yet)
	std::shared_ptr<DeriveJob> kernel_job_;
	std::shared_ptr<ChainJob> chain_job_;
	uint32_t stride_ = derived::recordStride(2);
	absl::flat_hash_map<const void*, Ref<Constituent>> constituents_;
	std::optional<decltype(constituents_)::iterator> drain_cursor_; ///< drain()'s place
	std::vector<Ref<Constituent>>
	    queued_; ///< changed since the last refresh (held: a release may drop the table's hold)
	/// The constituents' slots: no host copy (GpuWriteLog), only the frame's packed slots.
	GpuWriteLog slots_{gpu::BufferUsage::Storage, "heap derive constituents", 0, {}, {}, {}};
	GpuArray epochs_{gpu::BufferUsage::Storage, "heap derive epochs", {}, {}, {}, false}; ///< per slot
	/// The next dispatch's epoch: what packing a constituent and writing a record stamp, so that dispatch computes
	/// only the records written or reading a value written since the last one. Never 0 (0 computes every record).
	uint32_t epoch_ = 1;
	std::vector<uint32_t> free_slots_;
	uint32_t next_slot_ = 0;
	std::vector<ChunkRecords> chunks_;
	size_t records_ = 0;
	std::optional<derived::ChainKernel> chain_kernel_;
	std::vector<Level> levels_;
	size_t links_ = 0, link_halves_ = 0;
	std::vector<uint32_t> free_computed_;
	uint32_t next_computed_ = 0, computed_capacity_ = 0;
	gpu::BufferHandle computed_, computed_epochs_; ///< GPU-only: what the chain kernel writes
	uint64_t value_bytes_ = 0; ///< Σ over records: inputs' epochs and constituent components, output bytes
	bool dirty_ = false;
};

} // namespace quokka::heap::detail
