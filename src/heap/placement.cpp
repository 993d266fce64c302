// placement.cpp — HeapObject::acquire(): group-fit placement of one object's inputs, as named steps (Placement).
//
// An object's inputs — its private block (its own buffers and uniforms side by side), pooled buffers and pooled
// uniforms — all go into one chunk: a chunk already holding one of them, else the newest, else a new one; the first
// where everything fits. A failed attempt gives back what it took and tries the next chunk. Exactly the attempts that
// would fail are skipped up front (certainlyFull), so the placement equals the plain first-fit search.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include <absl/container/inlined_vector.h>

#include "heap_internal.hpp"

namespace quokka::heap
{

/// One acquire(): the object's inputs classified once, then the chunk attempts. Member functions are defined in the
/// class (inline): each is called once per placement on the add path.
class Placement
{
public:
	Placement(HeapObject& object, HeapObject::Plan& plan)
	    : h_(object), scene_(object.scene_), o_(*object.object_), plan_(plan), iface_((*plan.effect)->iface),
	      uniforms_(plan.uniforms), recipes_(plan.recipes), derivations_(plan.derivations)
	{
	}

	Result<void> run()
	{
		markUnheldUniforms();
		findCandidateChunks();
		QUOKKA_TRY(classifyBuffers());
		QUOKKA_TRY(packPrivateUniforms());
		if (private_bytes_ > scene_->max_chunk_bytes)
			return tooLarge();
		fresh_sum_ += private_bytes_;
		fresh_max_ = std::max(fresh_max_, private_bytes_);
		prefetchFirstBuffers();
		for (size_t attempt = 0;; ++attempt)
		{
			uint32_t chunk;
			if (attempt < candidates_.size())
			{
				chunk = candidates_[attempt];
				if (certainlyFull(chunk))
				{
					++scene_->stats->chunks_skipped;
					continue;
				}
			}
			else if (attempt == candidates_.size())
				chunk = scene_->openChunk();
			else
				return tooLarge();
			prefetchAcquisitions(chunk);
			scene_->chunk_full = false;
			const Result<void> acquired = tryChunk(chunk);
			if (acquired.ok())
				return commit(chunk);
			rollback(chunk);
			if (acquired.error().code != ErrorCode::OutOfMemory || !scene_->chunk_full)
				return acquired; // (not a full chunk: host memory for the staging pages, say)
		}
	}

private:
	enum Held : uint8_t
	{
		kHeld,    ///< some entry may hold it: looked up in the pool
		kFresh,   ///< unheld, pooled (past the private parts): no lookup
		kPrivate, ///< unheld, a part of the private block
	};
	/// A buffer of the private block.
	struct Part
	{
		Entry::Kind kind;
		const scene::BufferView* view;
		fx::Type type;
		const std::string* name;
		detail::HeapCore::BufferLayout layout;
		const scene::ArrayBuffer* data;
	};
	static inline const std::string kIndicesName = "indices";

	/// A uniform node that no entry reads — an entry subscribes to its node, so one without outputs, such as the
	/// object's own fresh ModelTrafo — has no entry in any chunk, for any recipe: its acquisitions skip the pool search
	/// (an unsuccessful probe at a random place of a table of millions). Decided before the first acquisition
	/// subscribes; a second use of one (node, recipe) by this object searches, and finds the first.
	void markUnheldUniforms()
	{
		unheld_.assign(uniforms_.size(), false);
		for (size_t i = 0; i < uniforms_.size(); ++i)
		{
			if (recipes_[i] == inputs::DerivedRecipe::Gpu)
				continue; // (no node: its entries are found in the pool by its derivation)
			const AdaptiveObject* node = uniforms_[i].node().get();
			unheld_[i] = !node->isConstant() && node->outputCount() == 0;
			for (size_t j = 0; j < i && unheld_[i]; ++j)
				unheld_[i] = !(uniforms_[j].node().get() == node && recipes_[j] == recipes_[i]);
		}
	}

	/// The chunks to try, in order: those already holding one of the uniforms (ascending, as a scan of every chunk
	/// for every input would give: one lookup per input), then the newest.
	void findCandidateChunks()
	{
		auto consider = [&](uint32_t c)
		{
			if (std::find(candidates_.begin(), candidates_.end(), c) == candidates_.end())
				candidates_.push_back(c);
		};
		if (scene_->chunks.size() > 1)
		{
			// Only a node some entry reads can be held: an entry subscribes to its node, so a node without outputs
			// (an object's own fresh ModelTrafo) needs no lookup in these tables of millions of keys.
			// (A value derived on the device has no node: u is empty.)
			auto mayBeHeld = [](const aval<UniformValue>& u)
			{ return u && !u.node()->isConstant() && u.node()->outputCount() != 0; };
			uint64_t held = 0;
			for (const aval<UniformValue>& u : uniforms_)
				if (mayBeHeld(u))
					held |= scene_->heldChunks(u.node().get());
			for (uint32_t c = 0; c < 64 && c < scene_->chunks.size(); ++c)
				if (held & (uint64_t(1) << c))
					consider(c);
			for (uint32_t c = 64; c < scene_->chunks.size(); ++c)
				for (const aval<UniformValue>& u : uniforms_)
					if (mayBeHeld(u) && scene_->pool.find(PoolKey::uniform(u.node().get(), c)))
					{
						consider(c);
						break;
					}
		}
		if (!scene_->chunks.empty())
			consider(uint32_t(scene_->chunks.size() - 1));
	}

	/// Buffers that no pool entry holds — their storage is referenced by its aval alone, and every entry keeps a
	/// reference — are looked up nowhere; those whose node only this view holds are this object's own: the first
	/// PrivateSet::kBufferParts of them go side by side into the private block (no pool entries), others are pooled.
	Result<Held> classify(Entry::Kind kind, const scene::BufferView& v, fx::Type type, const std::string& name)
	{
		const scene::ArrayBuffer& data = v.buffer.getValue(Token{});
		if (!storageUnheld(v, data))
			return kHeld;
		const detail::HeapCore::BufferLayout layout = detail::HeapCore::bufferLayout(kind, v, type, data);
		if (16 + layout.data_bytes > scene_->max_chunk_bytes)
			return scene_->bufferTooLarge(o_, name, 16 + layout.data_bytes);
		const uint64_t bytes = align16(16 + layout.data_bytes);
		// Private only when this view is the one way to the storage: its node held by this view alone (a changeable
		// buffer's node is held by its cval too, and is often read by many objects).
		if (parts_.size() < PrivateSet::kBufferParts && v.buffer.node()->refCount() == 1)
		{
			parts_.push_back({kind, &v, type, &name, layout, &data});
			private_bytes_ += bytes;
			return kPrivate;
		}
		fresh_sum_ += bytes;
		fresh_max_ = std::max(fresh_max_, bytes);
		return kFresh;
	}

	/// classify() for the index buffer and each attribute. (Which buffers are unheld also spares their pool slots'
	/// prefetches: acquireBuffer never probes for them, and each is a DRAM miss in a table of millions.)
	Result<void> classifyBuffers()
	{
		if (o_.indices)
		{
			QUOKKA_TRY_ASSIGN(held, classify(Entry::kIndex, *o_.indices, fx::U32, kIndicesName));
			index_held_ = held;
		}
		view_held_.assign(h_.views_.size(), kHeld);
		for (size_t i = 0; i < h_.views_.size(); ++i)
		{
			QUOKKA_TRY_ASSIGN(
			    held, classify(Entry::kAttribute, *h_.views_[i], iface_.attributes[i].type, iface_.attributes[i].name));
			view_held_[i] = held;
		}
		return {};
	}

	/// The object's own uniforms — a node nothing reads yet (its fresh ModelTrafo, what derives from it) — join the
	/// private block too, up to PrivateSet::kUniformParts: no pool entry, no entry object, and the object itself
	/// subscribes to the node (re-packing the parts in refresh()). Read and packed once, before the chunk attempts.
	/// Should another reader appear later, its pooled entry has this object re-placed (HeapCore::promotePrivate), so a
	/// shared value is stored and uploaded once.
	Result<void> packPrivateUniforms()
	{
		uniform_private_.assign(uniforms_.size(), false);
		for (size_t i = 0; i < uniforms_.size() && packed_private_.size() < PrivateSet::kUniformParts; ++i)
		{
			if (!unheld_[i])
				continue;
			inputs::PackedValue packed;
			try
			{
				packed = detail::DerivedStep::pack(recipes_[i], uniforms_[i].getValue(Token{&h_}));
			}
			catch (const std::exception& ex)
			{
				return h_.fail("uniform '" + iface_.uniforms[i].name + "' threw: " + ex.what());
			}
			if (packed.type != iface_.uniforms[i].type)
				return scene_->uniformMismatch(o_, iface_.uniforms[i].name, iface_.uniforms[i].type, packed.type);
			h_.track(uniforms_[i].node().get(), HeapObject::kUniform);
			uniform_private_[i] = true;
			packed_private_.push_back(packed);
			private_bytes_ += align16(16ull + packed.type.packedBytes());
		}
		return {};
	}

	/// Whether chunk `c` certainly cannot take the object's unshared bytes: the largest block does not fit, or their
	/// sum exceeds the chunk's free and unused bytes. Such a chunk is skipped without pool lookups or allocations.
	bool certainlyFull(uint32_t c) const
	{
		const ChunkAllocator& a = scene_->chunks[c]->allocator;
		return fresh_max_ != 0 && (!a.fits(fresh_max_) || a.capacity() - a.cursor() + a.freeBytes() < fresh_sum_);
	}

	/// Each attempt starts with a pool lookup of the first buffer — scattered slots of a large table; fetching them for
	/// every candidate at once overlaps the misses of full chunks' attempts.
	void prefetchFirstBuffers() const
	{
		const bool first_fresh = o_.indices ? index_held_ != kHeld : !h_.views_.empty() && view_held_[0] != kHeld;
		if (candidates_.size() <= 1 || first_fresh)
			return;
		if (o_.indices)
			for (uint32_t c : candidates_)
				scene_->pool.prefetch(detail::HeapCore::bufferKey(Entry::kIndex, *o_.indices, fx::U32, c));
		else if (!h_.views_.empty())
			for (uint32_t c : candidates_)
				scene_->pool.prefetch(
				    detail::HeapCore::bufferKey(Entry::kAttribute, *h_.views_[0], iface_.attributes[0].type, c));
	}

	/// Each acquisition probes the pool (a random slot of a table of millions, so a miss each) after the previous
	/// one's copying: fetched together here, the misses overlap instead of queueing.
	void prefetchAcquisitions(uint32_t chunk) const
	{
		if (o_.indices && index_held_ == kHeld)
			scene_->pool.prefetch(detail::HeapCore::bufferKey(Entry::kIndex, *o_.indices, fx::U32, chunk));
		for (size_t i = 0; i < h_.views_.size(); ++i)
			if (view_held_[i] == kHeld)
				scene_->pool.prefetch(
				    detail::HeapCore::bufferKey(Entry::kAttribute, *h_.views_[i], iface_.attributes[i].type, chunk));
		for (size_t i = 0; i < uniforms_.size(); ++i)
			if (recipes_[i] == inputs::DerivedRecipe::Gpu)
			{
				if (derivations_[i]->entries != 0)
					scene_->pool.prefetch(
					    detail::HeapCore::uniformKey(derivations_[i].get(), inputs::DerivedRecipe::Gpu, chunk));
			}
			else if (!uniforms_[i].node()->isConstant() && !unheld_[i])
				scene_->pool.prefetch(detail::HeapCore::uniformKey(uniforms_[i].node().get(), recipes_[i], chunk));
	}

	/// The private block: one allocation holding the object's own buffers (converted) and uniforms (packed).
	Result<void> stagePrivateBlock(uint32_t chunk)
	{
		QUOKKA_TRY_ASSIGN(block, scene_->allocate(chunk, uint32_t(private_bytes_ - 16)));
		own_ = std::make_unique<PrivateSet>();
		own_->chunk = chunk;
		own_->block = block;
		own_->bytes = uint32_t(private_bytes_);
		Chunk& c = *scene_->chunks[chunk];
		uint32_t at = block;
		for (const Part& part : parts_)
		{
			const uint32_t n = part.layout.elements, bytes = uint32_t(part.layout.data_bytes);
			QUOKKA_TRY_ASSIGN(out, stageAllocation(scene_->pages, c, at,
			                                       part.kind == Entry::kIndex ? kTypeIndex : kTypeAttribute, n, bytes));
			QUOKKA_TRY(scene_->convertBuffer(part.kind, *part.view, part.type, part.layout, *part.data,
			                                 reinterpret_cast<uint32_t*>(out), o_, *part.name));
			own_->append(part.kind, at, part.type, n, bytes);
			at += uint32_t(align16(16ull + bytes));
		}
		own_->first_uniform = own_->count;
		size_t next_uniform = 0;
		for (size_t i = 0; i < uniforms_.size(); ++i)
		{
			if (!uniform_private_[i])
				continue;
			const inputs::PackedValue& packed = packed_private_[next_uniform];
			const uint32_t bytes = packed.type.packedBytes();
			QUOKKA_TRY_ASSIGN(out, stageAllocation(scene_->pages, c, at, kTypeUniform, 1, bytes));
			std::memcpy(out, packed.f, bytes);
			PrivateSet::Part& e = own_->append(Entry::kUniform, at, packed.type, 1, bytes);
			own_->recipes[next_uniform] = recipes_[i];
			own_->uniforms[next_uniform++] = uniforms_[i];
			got_[i] = &e;
			at += uint32_t(align16(16ull + bytes));
		}
		return {};
	}

	/// One attempt in `chunk`. Entries in header order (uniforms, then attributes), buffers first: they are the large
	/// allocations, so a chunk without room fails at its first one instead of after acquiring (and then releasing)
	/// every uniform. The private block first of all: one allocation for the object's own buffers.
	Result<void> tryChunk(uint32_t chunk)
	{
		got_.assign(uniforms_.size() + h_.views_.size(), nullptr);
		idx_ = nullptr;
		own_.reset();
		if (private_bytes_ != 0)
			QUOKKA_TRY(stagePrivateBlock(chunk));
		size_t next_part = 0;
		if (o_.indices)
		{
			if (index_held_ == kPrivate)
				idx_ = &own_->parts[next_part++];
			else
			{
				QUOKKA_TRY_ASSIGN(e,
				                  scene_->acquireBuffer(Entry::kIndex, *o_.indices, fx::U32, chunk, o_, kIndicesName));
				idx_ = e;
			}
		}
		for (size_t i = 0; i < h_.views_.size(); ++i)
		{
			if (view_held_[i] == kPrivate)
			{
				got_[uniforms_.size() + i] = &own_->parts[next_part++];
				continue;
			}
			QUOKKA_TRY_ASSIGN(e, scene_->acquireBuffer(Entry::kAttribute, *h_.views_[i], iface_.attributes[i].type,
			                                           chunk, o_, iface_.attributes[i].name));
			got_[uniforms_.size() + i] = e;
		}
		for (size_t i = 0; i < uniforms_.size(); ++i)
		{
			if (uniform_private_[i])
				continue;
			if (recipes_[i] == inputs::DerivedRecipe::Gpu)
			{
				QUOKKA_TRY_ASSIGN(e, scene_->acquireGpuDerived(derivations_[i], chunk, iface_.uniforms[i].type, o_,
				                                               iface_.uniforms[i].name));
				got_[i] = e;
				continue;
			}
			QUOKKA_TRY_ASSIGN(e, scene_->acquireUniform(uniforms_[i], recipes_[i], chunk, iface_.uniforms[i].type, o_,
			                                            iface_.uniforms[i].name, unheld_[i]));
			got_[i] = e;
		}
		return {};
	}

	/// Gives back what a failed attempt took.
	void rollback(uint32_t chunk)
	{
		for (Entry* e : got_)
			if (e && !e->priv)
				scene_->releaseEntry(e);
		if (idx_ && !idx_->priv)
			scene_->releaseEntry(idx_);
		if (own_) // (its staged bytes land in a free block: harmless)
			scene_->freeBlock(chunk, own_->block);
		own_.reset();
	}

	/// The object takes what the attempt in `chunk` acquired and joins its bucket. The draw is checked here, not when
	/// attaching: an object that fails gives its blocks back before the batch's later objects acquire theirs.
	Result<void> commit(uint32_t chunk)
	{
		h_.entries = std::move(got_);
		h_.indices = idx_;
		h_.owned = std::move(own_);
		QUOKKA_TRY_ASSIGN(b, scene_->bucketFor(o_, *plan_.source, *plan_.effect, chunk));
		h_.bucket = b;
		++h_.bucket->objects;
		return h_.validateDraw();
	}

	Error tooLarge() const
	{
		return h_.fail("its inputs do not fit in one arena chunk of " + std::to_string(scene_->max_chunk_bytes) +
		               " bytes");
	}

	HeapObject& h_;
	detail::HeapCore* scene_;
	const scene::RenderObject& o_;
	HeapObject::Plan& plan_;
	const fx::EffectInterface& iface_;
	const decltype(HeapObject::Plan::uniforms)& uniforms_;
	const decltype(HeapObject::Plan::recipes)& recipes_;
	const decltype(HeapObject::Plan::derivations)& derivations_;
	absl::InlinedVector<bool, 8> unheld_;
	absl::InlinedVector<uint32_t, 8> candidates_;
	absl::InlinedVector<Part, PrivateSet::kBufferParts> parts_;
	uint64_t private_bytes_ = 0, fresh_sum_ = 0, fresh_max_ = 0;
	Held index_held_ = kHeld;
	absl::InlinedVector<Held, 8> view_held_;
	absl::InlinedVector<bool, 8> uniform_private_;
	absl::InlinedVector<inputs::PackedValue, PrivateSet::kUniformParts> packed_private_;
	absl::InlinedVector<Entry*, 8> got_;
	Entry* idx_ = nullptr;
	std::unique_ptr<PrivateSet> own_;
};

Result<void> HeapObject::acquire(Plan& plan)
{
	return evaluate(*object_, [&] { return Placement(*this, plan).run(); });
}

} // namespace quokka::heap
