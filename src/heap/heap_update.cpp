// heap_update.cpp — HeapScene::update(): one frame's changes, as named steps (FrameUpdate).
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <thread>
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

namespace
{

/// One HeapScene::update(), as its steps: pull the set's changes, remove, collect derived uniforms, place the additions
/// in batches, re-pack changed shared values, refresh changed objects, then publish the shape. Each loop over
/// scattered objects prefetches ahead (the distances were measured; the comments say where each line is fetched).
class FrameUpdate
{
public:
	FrameUpdate(detail::HeapCore& p, HeapStats& stats)
	    : p_(p), stats_(stats), started_(std::chrono::steady_clock::now())
	{
	}

	Result<void> run()
	{
		HeapUpdatePhases& t = stats_.phases;
		result_ = detail::checkRouting(p_);
		// (Where no list in flight reads the scene's buffers, the chunks' writes go in place where they can. Off again
		// at the end: writes outside update() are staged.)
		p_.pages.setInPlace(p_.writesInPlace());
		auto staged_after = absl::MakeCleanup([&] { p_.pages.setInPlace(false); });
		p_.compact();
		pullChanges();
		lap(t.pull_ms);
		removeObjects();
		collectDerived();
		lap(t.remove_ms);
		placeObjects();
		const size_t adds = p_.frame_adds.size(), removals = p_.frame_removals.size();
		p_.frame_adds.clear(); // (added_ points into it: placed now)
		p_.frame_removals.clear();
		// (Each pair swaps per frame: both buffers were this frame's or the last one's.)
		trimScratch(p_.frame_adds, adds);
		trimScratch(p_.pending_adds, std::max(adds, p_.pending_adds.size()));
		trimScratch(p_.frame_removals, removals);
		trimScratch(p_.pending_removals, std::max(removals, p_.pending_removals.size()));
		p_.objects.flush();
		p_.pool.flush();
		lap(t.attach_ms);
		const auto refresh_start = lap_;
		repackChangedValues();
		lap(t.repack_ms);
		retryWaiting();
		if (p_.gpu_derive)
			if (Result<void> r = p_.gpu_derive->refresh(); !r.ok() && result_.ok())
				result_ = r;
		lap(t.derive_refresh_ms);
		refreshChangedObjects();
		if (!p_.respecialise_queue.empty())
			if (Result<void> r = p_.respecialiseGroups(); !r.ok() && result_.ok())
				result_ = r;
		lap(t.objects_refresh_ms);
		t.refresh_ms += msSince(refresh_start);
		p_.sweep();
		for (Slot* s : p_.dirty_slots)
			p_.chooseStrategy(*s);
		publishShape();
		lap(t.finish_ms);
		return std::move(result_);
	}

private:
	/// This frame's membership changes — the set's delta, or the add()/remove() calls since the last update() —
	/// as removals, and additions in object-id order (placement, and therefore the draw order, never depends on
	/// addresses).
	void pullChanges()
	{
		std::vector<const RenderObjectPtr*> adding;
		if (p_.reader)
		{
			changes_ = p_.reader->getChanges(Token{});
			for (const auto& [object, count] : changes_)
				if (count < 0)
					removed_.push_back(object.get()); // (one never placed is not found below)
				else
					adding.push_back(&object);
		}
		else
			takePushedChanges(adding);
		// The objects are cold, so each is read once — its id beside the pointer, a few objects ahead — and the sort
		// compares ids.
		added_.reserve(adding.size());
		forEachAhead(
		    adding.size(), [&](size_t i) { added_.emplace_back((*adding[i])->id, adding[i]); },
		    Ahead{8, [&](size_t j) { __builtin_prefetch(adding[j]->get()); }});
		std::sort(added_.begin(), added_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
		// (Removals run first, so their blocks are reused by this frame's additions.)
	}

	/// The add()/remove() calls since the last update(), the last call per object winning: an addition followed by a
	/// removal of the same object is dropped (its removal then finds nothing to release); a removal followed by an
	/// addition releases and places it again. Adding an object the heap holds is ignored when it is read (readBatch).
	void takePushedChanges(std::vector<const RenderObjectPtr*>& adding)
	{
		p_.frame_adds.swap(p_.pending_adds);
		p_.frame_removals.swap(p_.pending_removals);
		const auto& pushed = p_.frame_adds;
		const auto& removals = p_.frame_removals;
		pushed_adds_ = true;
		removed_.reserve(removals.size());
		for (const auto& [object, serial] : removals)
			removed_.push_back(object);
		adding.reserve(pushed.size());
		if (removals.empty() || pushed.empty())
		{
			for (const auto& a : pushed)
				adding.push_back(&a.object);
			return;
		}
		absl::flat_hash_map<const scene::RenderObject*, uint64_t> last_removal;
		for (const auto& [object, serial] : removals)
			last_removal[object] = std::max(last_removal[object], serial);
		for (const auto& a : pushed)
			if (auto it = last_removal.find(a.object.get()); it == last_removal.end() || it->second < a.serial)
				adding.push_back(&a.object);
	}

	/// Removals: the lookups, then the detaches, with scattered objects prefetched ahead (HeapObject::prefetch); pool
	/// entries that lost their last user are erased together at the end.
	void removeObjects()
	{
		constexpr size_t kAhead = 4;
		std::vector<Ref<HeapObject>> doomed;
		doomed.reserve(removed_.size());
		forEachAhead(
		    removed_.size(),
		    [&](size_t i)
		    {
			    if (Ref<HeapObject> h = p_.objects.take(removed_[i]))
				    doomed.push_back(std::move(h));
		    },
		    Ahead{2 * kAhead, [&](size_t j) { p_.objects.prefetch(removed_[j]); }});
		// (The lookups above never read the objects: the table compares hashes only. The slot's last object changes
		// with every swap-pop: it is looked at only one and two removals ahead.)
		using Stage = HeapObject::PrefetchStage;
		auto stage = [&](Stage s) { return [&doomed, s](size_t j) { doomed[j]->prefetch(s); }; };
		p_.defer_pool_erase = true;
		forEachAhead(
		    doomed.size(),
		    [&](size_t i)
		    {
			    doomed[i]->detach();
			    doomed[i] = Ref<HeapObject>();
		    },
		    Ahead{4 * kAhead, stage(Stage::kObject)}, Ahead{3 * kAhead, stage(Stage::kArrays)},
		    Ahead{2 * kAhead, stage(Stage::kEntries)}, Ahead{kAhead, stage(Stage::kPool)},
		    Ahead{2, stage(Stage::kSlot)}, Ahead{1, stage(Stage::kLast)});
		p_.defer_pool_erase = false;
		p_.eraseDoomed();
		stats_.removed += uint32_t(doomed.size());
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
		beginBulk(added_.size());
		batch_.reserve(std::min(kBatch, added_.size()));
		plans_.resize(std::min(kBatch, added_.size())); // (none in a frame without additions)
		for (size_t first = 0; first < added_.size(); first += kBatch)
		{
			const size_t last = std::min(added_.size(), first + kBatch);
			readBatch(first, last);
			lap(stats_.phases.read_ms);
			acquireBatch();
			lap(stats_.phases.acquire_ms);
			for (size_t j = 0; j < batch_.size(); ++j)
			{
				if (batch_[j])
					settle(batch_[j], batch_[j]->attach(plans_[j]));
				plans_[j] = HeapObject::Plan{}; // (drops the uniform values it holds)
			}
			lap(stats_.phases.attach_ms);
		}
		if (endBulk())
			lap(stats_.phases.convert_wait_ms);
	}

	/// A frame placing HeapTuning::bulk_placement_above objects or more converts their buffers on the heap's workers
	/// (BulkConvert) until endBulk().
	void beginBulk(size_t placements)
	{
		const HeapTuning& t = p_.options.tuning;
		if (placements < t.bulk_placement_above || t.convert_threads == 0 || std::thread::hardware_concurrency() < 2)
			return;
		if (p_.bulk.begin(base::WorkQueue::defaultThreads(t.convert_threads)))
		{
			p_.pages.setAhead(true);
			// (The workers fill their spans while the frame goes on: a block freed and handed out again in the frame
			// must not be written in place by the frame while a worker may still write its old span there.)
			in_place_ = p_.pages.inPlace();
			p_.pages.setInPlace(false);
		}
	}
	/// Waits for the bulk frame's conversions (false: it was none).
	bool endBulk()
	{
		if (!p_.bulk.active())
			return false;
		p_.bulk.end();
		p_.pages.setAhead(false);
		p_.pages.setInPlace(in_place_);
		stats_.converted_off_thread += p_.bulk.bytes();
		return true;
	}

	/// Adds the time since the last lap to `phase` (HeapStats::phases).
	void lap(double& phase)
	{
		const auto now = std::chrono::steady_clock::now();
		phase += std::chrono::duration<double, std::milli>(now - lap_).count();
		lap_ = now;
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
			if (pushed_adds_ && p_.objects.holds(object.get()))
			{
				batch_.emplace_back(); // (added again without a removal: it is placed already)
				continue;
			}
			Ref<HeapObject> h = adaptive::makeRef<HeapObject>(p_, object);
			p_.objects.insert(object.get(), h);
			settle(h, h->read(plans_[i - first]));
			if (h && plans_[i - first].waiting)
			{
				p_.wait(h);
				h = Ref<HeapObject>();
			}
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
			// Background pipelines: placements of objects whose effect became ready stop at the frame's budget (the
			// others wait for the next frame); changes of placed objects are always applied.
			const double budget = p_.context->backgroundPipelines() ? p_.options.tuning.placement_budget_ms : 0.0;
			beginBulk(order.size()); // (objects placed once their effect is ready, or re-placed)
			for (const auto& [id, h] : order)
			{
				// (At least one placement per frame: every frame makes progress.)
				if (budget > 0.0 && !h->placed && !h->dead && stats_.added > 0 && msSince(started_) > budget)
				{
					h->queued = false;
					p_.wait(Ref<HeapObject>(h));
					p_.waiting_retry = true;
					continue;
				}
				Result<void> r = h->refresh();
				if (!r.ok() && result_.ok())
					result_ = r;
			}
			endBulk();
		}
	}

	/// Objects waiting for their effect (compiled in the background): queued for placement again once a background
	/// compile finished since they were last looked at; removed ones are dropped.
	void retryWaiting()
	{
		if (p_.waiting.empty())
			return;
		std::erase_if(p_.waiting, [](const Ref<HeapObject>& h) { return h->dead; });
		const uint64_t done = p_.context->compilesDone();
		const bool budget_left_some = std::exchange(p_.waiting_retry, false);
		if (done != std::exchange(p_.waiting_since, done) || budget_left_some)
		{
			std::vector<Ref<HeapObject>> retry;
			retry.swap(p_.waiting);
			for (const Ref<HeapObject>& h : retry)
				h->requestReplace();
		}
	}

	/// The statistics of the scene's shape (re-summed only after a block or slot changed).
	void publishShape()
	{
		stats_.objects = uint32_t(p_.objects.size());
		stats_.derived_uniforms = uint32_t(p_.derived.size());
		stats_.derive_records = p_.gpu_derive ? uint32_t(p_.gpu_derive->records()) : 0;
		stats_.derive_bytes = p_.gpu_derive ? p_.gpu_derive->bytes() : 0;
		stats_.chain_links = p_.gpu_derive ? uint32_t(p_.gpu_derive->links()) : 0;
		stats_.chain_levels = p_.gpu_derive ? uint32_t(p_.gpu_derive->levels()) : 0;
		stats_.buckets = uint32_t(p_.bucket_order.size());
		stats_.atlas_objects = p_.atlas_objects;
		stats_.atlas_refused = p_.atlas_refused;
		stats_.texture_path = p_.texture_path;
		stats_.bindless_objects = p_.bindless_objects;
		stats_.bindless_refused = p_.bindless_refused;
		stats_.bindless_entries = p_.bindless ? p_.bindless->entries() : 0;
		stats_.waiting_objects = uint32_t(p_.waiting.size());
		const bool slots_changed = std::exchange(p_.shape_changed, false);
		if (std::exchange(p_.blocks_changed, false) || slots_changed)
			p_.shape = p_.sumShape();
		QUOKKA_ASSERT(p_.sumShape() == p_.shape, "heap shape figures changed without shape_changed or blocks_changed");
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
	std::chrono::steady_clock::time_point started_;
	std::chrono::steady_clock::time_point lap_ = started_; ///< the end of the last timed step (lap)
	Result<void> result_;
	/// The set's delta this frame (or, with add() calls, p_.frame_adds): added_ points into one of them.
	decltype(std::declval<adaptive::SetReader<RenderObjectPtr>&>()->getChanges(Token{})) changes_;
	bool pushed_adds_ = false; ///< this frame's additions are add() calls (p_.frame_adds), not the set's delta
	bool in_place_ = false;    ///< whether the frame wrote in place before a bulk frame turned it off
	std::vector<const scene::RenderObject*> removed_;
	std::vector<std::pair<uint64_t, const RenderObjectPtr*>> added_;
	std::vector<Ref<HeapObject>> batch_;
	std::vector<HeapObject::Plan> plans_;
};

} // namespace

Result<void> HeapScene::update()
{
	if (impl_->closing)
		return makeError(ErrorCode::InvalidArgument,
		                 "HeapScene::update after dismantle(): the scene is being torn down");
	if (impl_->pushed_to_set_scene)
	{
		impl_->pushed_to_set_scene = false;
		return makeError(ErrorCode::InvalidArgument, "HeapScene::add/remove on a scene built over a set: its set is "
		                                             "its membership (change the set, or build the scene without one)");
	}
	if (!impl_->textures_error.empty())
		return makeError(ErrorCode::MissingFeature, impl_->textures_error);
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
