// Adaptive core: edges, deferred destruction, transactions and marking callbacks.
//
// Prior art: FSharp.Data.Adaptive Core/{AdaptiveObject,Transaction,Callbacks}.fs (semantics), alien-signals (link
// records, iterative marking); outputs are contiguous arrays for marking throughput. Differences from FDA are listed in
// docs/adaptive.md.
#include <quokka/adaptive/core.hpp>
#include <quokka/base/block_cache.hpp>

#include <algorithm>
#include <atomic>
#include <vector>

namespace quokka::adaptive
{

namespace detail
{

/// One edge input → consumer: an entry of the input's contiguous output array (found again through out_index) and a
/// record threaded into the consumer's input list (O(1) unlink on both sides).
/// The link owns one reference on its input (the consumer owns what it read last).
struct Link
{
	AdaptiveObject* input = nullptr;
	AdaptiveObject* consumer = nullptr;
	Link* prev_in = nullptr;
	Link* next_in = nullptr;
	uint64_t epoch = 0;     ///< evaluation of the consumer that last confirmed this link (64-bit: never wraps)
	uint32_t out_index = 0; ///< position in input->outs()
};

namespace
{

/// Links come from a per-thread block cache (a graph lives on one thread). Steady-state evaluation reuses links in
/// place, so the cache only serves structural changes. Bounded (BlockCache's cap): links recycled in destruction order
/// are scattered in memory; after a big graph dies, handing them all out again would scatter the next graph's edges too
/// (marking throughput fell 5–10x in the benchmark), so beyond the cap they go back to malloc, which coalesces them.
struct LinkPool
{
	using Cache = BlockCache<sizeof(Link)>;
	static Link* acquire() { return ::new (Cache::allocate()) Link(); }
	static void recycle(Link* l) noexcept
	{
		l->~Link();
		Cache::release(l);
	}
};

/// Objects whose count reached zero, destroyed iteratively so that freeing a 10^6-long chain does not recurse: a stack
/// threaded through the dying objects' epoch_ (only an object's own evaluation reads it, and a dying object is never
/// evaluated again). Trivially destructible, like t_destroying, so that nodes released by another thread_local's
/// destructor at thread exit (the scene's per-thread default leaves) find it intact whatever the destruction order.
thread_local AdaptiveObject* t_doomed = nullptr;
thread_local bool t_destroying = false;

/// Live objects counted per thread: a locked read-modify-write per construction and destruction drained the store
/// buffer each time (on x86 every `lock` instruction waits for all earlier stores), so the cold stores of placing an
/// object — its node, its entries — could no longer overlap (perf, `bench update`: ~9 % of an add and a removal in
/// the constructor and destructor). Each thread counts in a record of its own with plain loads and stores; the
/// records form a list that is only ever pushed to (never freed: a thread-local destructor may still release
/// objects after the thread's other destructors ran), and liveObjectCount() sums them. A record is 64 bytes, one per
/// thread that ever made or destroyed an adaptive object.
struct alignas(64) LiveCounter
{
	std::atomic<int64_t> count{0};
	LiveCounter* next = nullptr;
};
std::atomic<LiveCounter*> g_live_counters{nullptr};
thread_local LiveCounter* t_live = nullptr; // (trivially destructible: usable in any destructor at thread exit)

[[gnu::noinline]] LiveCounter& registerLiveCounter()
{
	auto* c = new LiveCounter;
	c->next = g_live_counters.load(std::memory_order_relaxed);
	while (!g_live_counters.compare_exchange_weak(c->next, c, std::memory_order_release, std::memory_order_relaxed))
	{
	}
	t_live = c;
	return *c;
}

inline void countLive(int64_t delta)
{
	LiveCounter& c = t_live ? *t_live : registerLiveCounter();
	// Only this thread writes its record: a load and a store, no locked instruction (readers see a whole value).
	c.count.store(c.count.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

} // namespace

struct CallbackEntry
{
	uint64_t id = 0;
	std::function<void()> fn;
	bool once = false;
	bool dead = false;
};

struct CallbackList
{
	std::vector<CallbackEntry> entries;
	bool running = false;
};

void destroyObject(AdaptiveObject* object) noexcept
{
	object->epoch_ = reinterpret_cast<uintptr_t>(t_doomed);
	t_doomed = object;
	if (t_destroying)
		return;
	t_destroying = true;
	while (AdaptiveObject* o = t_doomed)
	{
		t_doomed = reinterpret_cast<AdaptiveObject*>(uintptr_t(o->epoch_));
		delete o;
	}
	t_destroying = false;
}

namespace
{

/// Objects whose last reference a Pin gave up (releaseLater), threaded through epoch_ like t_doomed (nobody can
/// evaluate them: nothing else owns them). Released at the thread's next evaluation or commit, or at thread exit.
thread_local AdaptiveObject* t_deferred = nullptr;
thread_local bool t_deferred_closed = false; ///< the thread is exiting: release at once

} // namespace

void drainDeferred() noexcept
{
	while (AdaptiveObject* o = t_deferred)
	{
		t_deferred = reinterpret_cast<AdaptiveObject*>(uintptr_t(o->epoch_));
		o->release();
	}
}

namespace
{

struct DeferredReaper
{
	~DeferredReaper()
	{
		drainDeferred();
		t_deferred_closed = true;
	}
};
thread_local DeferredReaper t_deferred_reaper;

} // namespace

void deferRelease(AdaptiveObject* object) noexcept
{
	if (t_deferred_closed)
	{
		object->release();
		return;
	}
	(void)&t_deferred_reaper; // odr-use: the reaper's destructor drains the list at thread exit
	object->epoch_ = reinterpret_cast<uintptr_t>(t_deferred);
	t_deferred = object;
}

} // namespace detail

using detail::Link;

AdaptiveObject::AdaptiveObject(uint32_t flags) : flags_(flags | ((flags & kConstant) ? 0u : uint32_t(kOutOfDate)))
{
	detail::countLive(1);
}

AdaptiveObject::~AdaptiveObject()
{
	QUOKKA_ASSERT(out_count_ == 0, "destroying an adaptive object that still has outputs");
	QUOKKA_ASSERT(!(flags_ & kQueued), "destroying an adaptive object queued in a transaction");
	Link* l = inputs_head_;
	inputs_head_ = inputs_tail_ = cursor_ = nullptr;
	while (l)
	{
		Link* next = l->next_in;
		AdaptiveObject* in = l->input;
		in->removeOutput(l->out_index);
		detail::LinkPool::recycle(l);
		in->release();
		l = next;
	}
	if (out_cap_ > kInlineOutputs)
		::operator delete(out_store_.heap);
	delete callbacks_;
	detail::countLive(-1);
}

size_t edgeBytes()
{
	return sizeof(Link) + sizeof(detail::OutEdge);
}

size_t AdaptiveObject::inputCount() const
{
	size_t n = 0;
	for (Link* l = inputs_head_; l; l = l->next_in)
		++n;
	return n;
}

namespace
{

/// Evaluation stamp: links confirmed by the running evaluation of their consumer carry its epoch.
thread_local uint64_t t_epoch = 0;

/// The output array being walked by the running commit (marking is not re-entrant), so that an edge removed by user
/// code during the walk (a marking callback dropping a subgraph) neither skips nor repeats an entry.
struct OutputWalk
{
	AdaptiveObject* object = nullptr;
	size_t next = 0; ///< entries [0, next) are visited
};
thread_local OutputWalk t_walk;

} // namespace

void AdaptiveObject::addOutput(AdaptiveObject* consumer, Link* link)
{
	if (out_count_ == out_cap_)
	{
		uint32_t cap = out_cap_ * 2;
		auto* grown = static_cast<detail::OutEdge*>(::operator new(sizeof(detail::OutEdge) * cap));
		std::copy(outs(), outs() + out_count_, grown);
		if (out_cap_ > kInlineOutputs)
			::operator delete(out_store_.heap);
		out_store_.heap = grown;
		out_cap_ = cap;
	}
	link->out_index = out_count_;
	outs()[out_count_++] = detail::OutEdge{consumer, link};
}

void AdaptiveObject::removeOutput(uint32_t index)
{
	detail::OutEdge* o = outs();
	uint32_t last = --out_count_;
	if (t_walk.object == this && index < t_walk.next)
	{
		// Removing a visited entry while marking walks this array: fill the hole with the last visited entry and its
		// slot with the last entry, so that the visited entries stay a prefix.
		auto visited = uint32_t(--t_walk.next);
		if (index != visited)
		{
			o[index] = o[visited];
			o[index].link->out_index = index;
		}
		index = visited;
	}
	if (index != last)
	{
		o[index] = o[last];
		o[index].link->out_index = index;
	}
	// Shrink a mostly empty array (a fan-out that lost its consumers) with hysteresis: amortised O(1).
	if (out_cap_ > 16 && out_count_ <= out_cap_ / 4)
	{
		uint32_t cap = out_cap_ / 2;
		auto* shrunk = static_cast<detail::OutEdge*>(::operator new(sizeof(detail::OutEdge) * cap));
		std::copy(o, o + out_count_, shrunk);
		::operator delete(o);
		out_store_.heap = shrunk;
		out_cap_ = cap;
	}
}

namespace
{

Link* newLink(AdaptiveObject* input, AdaptiveObject* consumer)
{
	Link* l = detail::LinkPool::acquire();
	l->input = input;
	l->consumer = consumer;
	input->addRef();
	return l;
}

} // namespace

void AdaptiveObject::beginEvaluation()
{
	QUOKKA_ASSERT(!(flags_ & kEvaluating), "cycle: an adaptive object read itself during its evaluation");
	if (detail::t_deferred) [[unlikely]]
		detail::drainDeferred();
	flags_ |= kEvaluating;
	cursor_ = nullptr;
	epoch_ = ++t_epoch;
}

void AdaptiveObject::endEvaluation(bool success)
{
	flags_ &= ~uint32_t(kEvaluating);
	if (success && !(flags_ & kExplicitInputs))
	{
		// Inputs after the cursor were not read this time: the edge (and the ownership) goes away.
		Link* l = cursor_ ? cursor_->next_in : inputs_head_;
		while (l)
		{
			Link* next = l->next_in;
			unlink(l);
			l = next;
		}
	}
	cursor_ = nullptr;
	if (success)
		flags_ &= ~uint32_t(kOutOfDate);
}

void AdaptiveObject::trackInput(AdaptiveObject* input)
{
	if (level_ <= input->level_)
		level_ = input->level_ + 1;
	if (flags_ & kExplicitInputs)
	{
		trackExplicit(input);
		return;
	}
	// Steady state: inputs are read in the same order as last time, so the link after the cursor matches.
	Link* next = cursor_ ? cursor_->next_in : inputs_head_;
	if (next && next->input == input)
	{
		next->epoch = epoch_;
		cursor_ = next;
		return;
	}
	if (cursor_ && cursor_->input == input)
		return;
	trackSlow(input);
}

Link* AdaptiveObject::findLink(AdaptiveObject* input) const
{
	// Walk both lists in step: O(min(#inputs of this, #outputs of input)), so neither a wall (one consumer of 10^6
	// inputs) nor a fan-out (one input of 10^6 consumers) makes building edges quadratic.
	Link* a = inputs_tail_;
	const detail::OutEdge* first = input->outs();
	const detail::OutEdge* b = first + input->out_count_;
	while (a && b != first)
	{
		--b;
		if (a->input == input)
			return a;
		if (b->consumer == this)
			return b->link;
		a = a->prev_in;
	}
	return nullptr;
}

void AdaptiveObject::trackSlow(AdaptiveObject* input)
{
	Link* l = findLink(input);
	if (l && l->epoch == epoch_)
		return; // already read in this evaluation
	if (l)
	{
		// Read last time but in another order: move it right after the cursor.
		(l->prev_in ? l->prev_in->next_in : inputs_head_) = l->next_in;
		(l->next_in ? l->next_in->prev_in : inputs_tail_) = l->prev_in;
	}
	else
	{
		l = newLink(input, this);
		input->addOutput(this, l);
	}
	l->epoch = epoch_;
	Link* after = cursor_ ? cursor_->next_in : inputs_head_;
	l->prev_in = cursor_;
	l->next_in = after;
	(cursor_ ? cursor_->next_in : inputs_head_) = l;
	(after ? after->prev_in : inputs_tail_) = l;
	cursor_ = l;
}

void AdaptiveObject::trackExplicit(AdaptiveObject* input)
{
	if (input->out_count_ && input->outs()[input->out_count_ - 1].consumer == this)
		return;
	if (findLink(input))
		return;
	Link* l = newLink(input, this);
	input->addOutput(this, l);
	l->prev_in = inputs_tail_;
	(inputs_tail_ ? inputs_tail_->next_in : inputs_head_) = l;
	inputs_tail_ = l;
}

void AdaptiveObject::removeInput(AdaptiveObject* input)
{
	if (Link* l = findLink(input))
		unlink(l);
}

void AdaptiveObject::unlink(Link* l)
{
	AdaptiveObject* input = l->input;
	if (l == cursor_)
		cursor_ = l->prev_in;
	input->removeOutput(l->out_index);
	(l->prev_in ? l->prev_in->next_in : inputs_head_) = l->next_in;
	(l->next_in ? l->next_in->prev_in : inputs_tail_) = l->prev_in;
	detail::LinkPool::recycle(l);
	input->release();
}

// ---------------------------------------------------------------------------------------------------------------
// Transactions

namespace
{

/// Per-thread transaction state, reused across commits so that steady-state commits allocate nothing.
/// The mark queue is a bucket queue indexed by level (levels are small dense integers).
struct TxState
{
	Transaction* outer = nullptr;
	int depth = 0;
	bool committing = false;
	std::vector<std::vector<AdaptiveObject*>> buckets; ///< sources and cut-off nodes, by level
	std::vector<AdaptiveObject*> stack;                ///< plain nodes marked, whose outputs are still to visit
	size_t pinned = 0;                                 ///< stack entries [0, pinned) hold a reference (see pin)
	AdaptiveObject* walking = nullptr;                 ///< the popped plain node whose outputs are being marked
	bool walking_pinned = false;
	intptr_t last_step = 0; ///< address step between the last marked node and its input (stride prefetch)
	size_t queued = 0;
	int32_t min_level = 0;
	std::vector<std::function<void()>> finalizers;
};

thread_local TxState t_tx;

} // namespace

Transaction::Transaction()
{
	if (t_tx.depth++ == 0 && !t_tx.committing)
		t_tx.outer = this;
}

Transaction::~Transaction()
{
	if (--t_tx.depth > 0 || t_tx.committing)
		return;
	// Outermost scope: commit, also while unwinding (T11 [ours]). The scope stays "open" during the commit so that
	// changes made by marking callbacks join it.
	t_tx.depth = 1;
	if (detail::t_deferred) [[unlikely]]
		detail::drainDeferred(); // (destructors that transact join this commit)
	commit();
	t_tx.depth = 0;
	t_tx.outer = nullptr;
	// Finalizers run outside any transaction: they may open their own (T12).
	while (!t_tx.finalizers.empty())
	{
		std::vector<std::function<void()>> run;
		run.swap(t_tx.finalizers);
		for (auto& f : run)
			f();
		run.clear();
		if (t_tx.finalizers.empty())
			t_tx.finalizers.swap(run); // keep the capacity: no allocation in steady state
	}
}

Transaction* Transaction::current()
{
	return t_tx.depth > 0 ? t_tx.outer : nullptr;
}

bool Transaction::committing()
{
	return t_tx.committing;
}

void Transaction::addFinalizer(std::function<void()> f)
{
	if (t_tx.depth == 0)
	{
		f();
		return;
	}
	t_tx.finalizers.push_back(std::move(f));
}

void Transaction::enqueue(AdaptiveObject& o)
{
	if (t_tx.depth == 0)
	{
		Transaction t;
		enqueue(o);
		return;
	}
	if (o.flags_ & AdaptiveObject::kQueued)
		return;
	o.flags_ |= AdaptiveObject::kQueued;
	o.addRef();
	auto lvl = size_t(o.level_);
	if (t_tx.buckets.size() <= lvl)
		t_tx.buckets.resize(lvl + 1);
	t_tx.buckets[lvl].push_back(&o);
	++t_tx.queued;
	if (o.level_ < t_tx.min_level)
		t_tx.min_level = o.level_;
}

void AdaptiveObject::markOutdated()
{
	Transaction::enqueue(*this);
}

namespace
{

/// Plain nodes on the marking stack hold no reference while only the core runs: nothing can drop one. Before any user
/// code (inputChanged, onMark, marking callbacks) or a release that may destroy (destructors are user code), the
/// entries not yet pinned, and the node being walked, take a reference, released when they are popped.
void pinSlow(TxState& s) noexcept
{
	for (size_t i = s.pinned; i < s.stack.size(); ++i)
		s.stack[i]->addRef();
	s.pinned = s.stack.size();
	if (s.walking && !s.walking_pinned)
	{
		s.walking->addRef();
		s.walking_pinned = true;
	}
}

inline void pin(TxState& s) noexcept
{
	if (s.pinned < s.stack.size() || (s.walking && !s.walking_pinned))
		pinSlow(s);
}

/// Drops a reference the commit holds (queue entry or pin); pins first when this may destroy the object.
inline void releaseHeld(TxState& s, AdaptiveObject* o) noexcept
{
	if (o->refCount() == 1)
		pin(s);
	o->release();
}

} // namespace

/// How many consumers (or stack entries) ahead marking prefetches: covers DRAM latency at ~10 ns per visit.
constexpr size_t kAhead = 8;

void Transaction::markOutputs(AdaptiveObject* root) noexcept
{
	// Marks the consumers of `root` (held by the caller) and, depth first, everything plain below them; returns with
	// the stack empty. Each node's outputs are a contiguous array: the consumers' addresses are known ahead.
	TxState& s = t_tx;
	using AO = AdaptiveObject;
	// Continues marking below `c` (just marked, plain, with outputs; its input is `e`) while it is hot in the cache:
	// as long as the node has exactly one consumer that is plain and runs no user code, that consumer is marked at
	// once (a chain, the maps of a wall, the fan-in half of a diamond), with no stack traffic and no second visit. A
	// node with several consumers, or whose consumer needs the general path (inputChanged, callbacks, cut-off), goes
	// on the stack. No user code runs here, so no node can die.
	auto chase = [&s](AO* e, AO* c)
	{
		for (;;)
		{
			// Graphs built in order (chains) lie at a constant stride: when the step from e to c repeats, load the
			// node (both lines of its header) further down that stride, as a hardware stride prefetcher would.
			auto step = reinterpret_cast<intptr_t>(c) - reinterpret_cast<intptr_t>(e);
			if (step == s.last_step)
			{
				__builtin_prefetch(reinterpret_cast<const char*>(c) + step * intptr_t(2 * kAhead), 1);
				__builtin_prefetch(reinterpret_cast<const char*>(c) + step * intptr_t(2 * kAhead) + 64, 1);
			}
			s.last_step = step;
			if (c->out_count_ != 1)
			{
				// Several consumers: load them (or the heap array of many) while c waits on the stack.
				if (c->out_cap_ <= AO::kInlineOutputs)
				{
					__builtin_prefetch(c->out_store_.local[0].consumer);
					__builtin_prefetch(c->out_store_.local[1].consumer);
				}
				else
					__builtin_prefetch(c->out_store_.heap);
				s.stack.push_back(c);
				return;
			}
			AO* d = c->outs()[0].consumer;
			uint32_t f = d->flags_;
			if (f & AO::kWantsInputChanged)
			{
				s.stack.push_back(c); // the general path calls inputChanged
				return;
			}
			if (f & (AO::kOutOfDate | AO::kQueued))
				return; // a barrier, or queued already
			if ((f & AO::kHasMarkHook) || d->callbacks_)
			{
				s.stack.push_back(c); // the general path queues d or runs its callbacks
				return;
			}
			d->flags_ = f | AO::kOutOfDate;
			if (d->out_count_ == 0)
				return;
			e = c;
			c = d;
		}
	};
	AdaptiveObject* e = root;
	s.walking = nullptr;
	for (;;)
	{
		size_t n = e->out_count_;
		for (size_t i = 0; i < n; ++i)
		{
			const detail::OutEdge* edges = e->outs();
			// Marking large graphs is bound by cache misses on the consumers: start loading a few ahead (independent
			// misses overlap).
			if (i + kAhead < n)
				__builtin_prefetch(edges[i + kAhead].consumer);
			AdaptiveObject* c = edges[i].consumer;
			if (c->flags_ & AdaptiveObject::kWantsInputChanged)
			{
				// User code may add or remove edges of e (removeOutput keeps the visited prefix [0, i] intact) or
				// reallocate the array; it may drop references, so the stack is pinned first.
				pin(s);
				t_walk = OutputWalk{e, i + 1};
				c->inputChanged(e);
				i = t_walk.next - 1;
				t_walk.object = nullptr;
				n = e->out_count_;
			}
			if (c->flags_ & (AdaptiveObject::kOutOfDate | AdaptiveObject::kQueued))
				continue; // a barrier, or queued already
			if (c->flags_ & AdaptiveObject::kHasMarkHook)
			{
				// Cut-off nodes evaluate when marked: they wait in the level queue until every lower level is done.
				c->flags_ |= AdaptiveObject::kQueued;
				c->addRef();
				auto cl = size_t(c->level_);
				if (s.buckets.size() <= cl)
					s.buckets.resize(cl + 1);
				s.buckets[cl].push_back(c);
				++s.queued;
				continue;
			}
			// Plain nodes are marked on first contact; the order among them does not matter (no user code decides
			// anything), so a depth-first stack keeps the working set hot, and leaves are never touched twice.
			c->flags_ |= AdaptiveObject::kOutOfDate;
			if (c->callbacks_)
			{
				// The callbacks may drop the last reference to c itself (disposing the subscription that owns it):
				// c is held until its marking step is done, then released like the commit's other references.
				pin(s);
				c->addRef();
				t_walk = OutputWalk{e, i + 1};
				c->runMarkingCallbacks();
				if (c->out_count_)
					chase(e, c);
				releaseHeld(s, c); // may destroy c, unlinking it from e: the walk keeps the visited prefix
				i = t_walk.next - 1;
				t_walk.object = nullptr;
				n = e->out_count_;
				continue;
			}
			if (c->out_count_)
				chase(e, c);
		}
		if (s.walking && s.walking_pinned)
		{
			s.walking = nullptr;
			releaseHeld(s, e);
		}
		if (s.stack.empty())
			break;
		e = s.stack.back();
		s.stack.pop_back();
		// Entries pushed long ago (siblings in a fan-out) have left the cache: load the one popped kAhead later.
		if (s.stack.size() >= kAhead)
			__builtin_prefetch(s.stack[s.stack.size() - kAhead]);
		bool held = s.stack.size() < s.pinned;
		if (held)
			s.pinned = s.stack.size();
		s.walking = e;
		s.walking_pinned = held;
	}
	s.walking = nullptr;
}

void Transaction::commit() noexcept
{
	TxState& s = t_tx;
	s.committing = true;
	s.min_level = 0;
	for (;;)
	{
		if (s.queued == 0)
			break;
		while (s.buckets[size_t(s.min_level)].empty())
			++s.min_level;
		int32_t lvl = s.min_level;
		auto& bucket = s.buckets[size_t(lvl)];
		AdaptiveObject* e = bucket.back();
		bucket.pop_back();
		--s.queued;
		e->flags_ &= ~uint32_t(AdaptiveObject::kQueued);
		if (e->outOfDate())
		{
			releaseHeld(s, e); // already dirty: a barrier, its outputs were marked before
			continue;
		}
		if (e->level_ != lvl)
		{
			// The level grew since the object was queued: process it after its (deeper) inputs.
			enqueue(*e);
			releaseHeld(s, e);
			continue;
		}
		if (e->flags_ & AdaptiveObject::kHasMarkHook)
		{
			bool go = e->onMark();
			if (e->level_ != lvl)
			{
				// onMark evaluated inputs that turned out deeper: redo it at the new level.
				enqueue(*e);
				releaseHeld(s, e);
				continue;
			}
			if (!go)
			{
				releaseHeld(s, e);
				continue;
			}
		}
		e->flags_ |= AdaptiveObject::kOutOfDate;
		if (e->callbacks_)
			e->runMarkingCallbacks();
		markOutputs(e);
		releaseHeld(s, e);
	}
	s.min_level = 0;
	s.committing = false;
}

// ---------------------------------------------------------------------------------------------------------------
// Marking callbacks

namespace
{
std::atomic<uint64_t> g_next_callback_id{1}; // shared by the graphs of all threads
} // namespace

uint64_t addCallbackEntry(AdaptiveObject& o, std::function<void()> fn, bool once)
{
	if (!o.callbacks_)
		o.callbacks_ = new detail::CallbackList();
	uint64_t id = g_next_callback_id.fetch_add(1, std::memory_order_relaxed);
	o.callbacks_->entries.push_back(detail::CallbackEntry{id, std::move(fn), once, false});
	return id;
}

void removeCallbackEntry(AdaptiveObject& o, uint64_t id)
{
	if (!o.callbacks_)
		return;
	auto& es = o.callbacks_->entries;
	for (auto& e : es)
	{
		if (e.id == id)
			e.dead = true;
	}
	if (!o.callbacks_->running)
		std::erase_if(es, [](const detail::CallbackEntry& e) { return e.dead; });
}

void AdaptiveObject::runMarkingCallbacks() noexcept
{
	detail::CallbackList& cl = *callbacks_;
	bool was_running = cl.running;
	cl.running = true;
	// Index loop: callbacks may add entries (push_back can reallocate).
	for (size_t i = 0; i < cl.entries.size(); ++i)
	{
		if (cl.entries[i].dead)
			continue;
		if (cl.entries[i].once)
			cl.entries[i].dead = true;
		std::function<void()> fn = cl.entries[i].once ? std::move(cl.entries[i].fn) : cl.entries[i].fn;
		fn();
	}
	cl.running = was_running;
	if (!was_running)
		std::erase_if(cl.entries, [](const detail::CallbackEntry& e) { return e.dead; });
}

namespace
{

Subscription addCallback(const Ref<AdaptiveObject>& object, std::function<void()> callback, bool once)
{
	QUOKKA_ASSERT(object, "callback on a null object");
	uint64_t id = addCallbackEntry(*object, std::move(callback), once);
	Ref<AdaptiveObject> keep = object;
	return Subscription([keep, id] { removeCallbackEntry(*keep, id); });
}

} // namespace

Subscription addMarkingCallback(const Ref<AdaptiveObject>& object, std::function<void()> callback)
{
	return addCallback(object, std::move(callback), false);
}

Subscription onNextMarking(const Ref<AdaptiveObject>& object, std::function<void()> callback)
{
	return addCallback(object, std::move(callback), true);
}

int64_t liveObjectCount()
{
	int64_t live = 0;
	for (const detail::LiveCounter* c = detail::g_live_counters.load(std::memory_order_acquire); c; c = c->next)
		live += c->count.load(std::memory_order_relaxed);
	return live;
}

} // namespace quokka::adaptive
