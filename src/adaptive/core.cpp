// Adaptive core: edges, deferred destruction, transactions and marking callbacks.
//
// Prior art: FSharp.Data.Adaptive Core/{AdaptiveObject,Transaction,Callbacks}.fs (semantics), alien-signals (edges as
// doubly linked link records, iterative marking). Differences from FDA are listed in docs/adaptive.md.
#include <quokka/adaptive/core.hpp>

#include <algorithm>
#include <atomic>
#include <vector>

namespace quokka::adaptive
{

namespace detail
{

/// One edge input → consumer, threaded into the input's output list and the consumer's input list (O(1) unlink).
/// The link owns one reference on its input (the consumer owns what it read last).
struct Link
{
	AdaptiveObject* input = nullptr;
	AdaptiveObject* consumer = nullptr;
	Link* prev_out = nullptr;
	Link* next_out = nullptr;
	Link* prev_in = nullptr;
	Link* next_in = nullptr;
	uint64_t epoch = 0; ///< evaluation of the consumer that last confirmed this link (64-bit: never wraps)
};

namespace
{

/// Free list of links, per thread (a graph lives on one thread). Steady-state evaluation reuses links in place, so the
/// pool only serves structural changes.
struct LinkPool
{
	std::vector<Link*> free;
	~LinkPool()
	{
		for (Link* l : free)
			delete l;
	}
	Link* acquire()
	{
		if (free.empty())
			return new Link();
		Link* l = free.back();
		free.pop_back();
		*l = Link{};
		return l;
	}
	// Bounded: links recycled in destruction order are scattered in memory; after a big graph dies, handing them out
	// again would scatter the next graph's edges too (marking throughput fell 5–10x in the benchmark). Beyond the cap
	// they go back to malloc, which coalesces them and serves new graphs contiguously.
	void recycle(Link* l)
	{
		if (free.size() < kMaxFree)
			free.push_back(l);
		else
			delete l;
	}
	static constexpr size_t kMaxFree = 4096;
};

thread_local LinkPool t_links;

/// Objects whose count reached zero; destroyed iteratively so that freeing a 10^6-long chain does not recurse.
thread_local std::vector<AdaptiveObject*> t_doomed;
thread_local bool t_destroying = false;

std::atomic<int64_t> g_live{0};

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
	t_doomed.push_back(object);
	if (t_destroying)
		return;
	t_destroying = true;
	while (!t_doomed.empty())
	{
		AdaptiveObject* o = t_doomed.back();
		t_doomed.pop_back();
		delete o;
	}
	t_destroying = false;
}

} // namespace detail

using detail::Link;

AdaptiveObject::AdaptiveObject(uint32_t flags) : flags_(flags | ((flags & kConstant) ? 0u : uint32_t(kOutOfDate)))
{
	detail::g_live.fetch_add(1, std::memory_order_relaxed);
}

AdaptiveObject::~AdaptiveObject()
{
	QUOKKA_ASSERT(outputs_head_ == nullptr, "destroying an adaptive object that still has outputs");
	QUOKKA_ASSERT(!(flags_ & kQueued), "destroying an adaptive object queued in a transaction");
	Link* l = inputs_head_;
	inputs_head_ = inputs_tail_ = cursor_ = nullptr;
	while (l)
	{
		Link* next = l->next_in;
		AdaptiveObject* in = l->input;
		(l->prev_out ? l->prev_out->next_out : in->outputs_head_) = l->next_out;
		(l->next_out ? l->next_out->prev_out : in->outputs_tail_) = l->prev_out;
		detail::t_links.recycle(l);
		in->release();
		l = next;
	}
	delete callbacks_;
	detail::g_live.fetch_sub(1, std::memory_order_relaxed);
}

size_t AdaptiveObject::outputCount() const
{
	size_t n = 0;
	for (Link* l = outputs_head_; l; l = l->next_out)
		++n;
	return n;
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

Link* newLink(AdaptiveObject* input, AdaptiveObject* consumer, Link*& out_head, Link*& out_tail)
{
	Link* l = detail::t_links.acquire();
	l->input = input;
	l->consumer = consumer;
	input->addRef();
	l->prev_out = out_tail;
	(out_tail ? out_tail->next_out : out_head) = l;
	out_tail = l;
	return l;
}

} // namespace

void AdaptiveObject::beginEvaluation()
{
	QUOKKA_ASSERT(!(flags_ & kEvaluating), "cycle: an adaptive object read itself during its evaluation");
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
	Link* b = input->outputs_tail_;
	while (a && b)
	{
		if (a->input == input)
			return a;
		if (b->consumer == this)
			return b;
		a = a->prev_in;
		b = b->prev_out;
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
		l = newLink(input, this, input->outputs_head_, input->outputs_tail_);
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
	if (input->outputs_tail_ && input->outputs_tail_->consumer == this)
		return;
	if (findLink(input))
		return;
	Link* l = newLink(input, this, input->outputs_head_, input->outputs_tail_);
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
	(l->prev_out ? l->prev_out->next_out : input->outputs_head_) = l->next_out;
	(l->next_out ? l->next_out->prev_out : input->outputs_tail_) = l->prev_out;
	(l->prev_in ? l->prev_in->next_in : inputs_head_) = l->next_in;
	(l->next_in ? l->next_in->prev_in : inputs_tail_) = l->prev_in;
	detail::t_links.recycle(l);
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

void Transaction::markOutputs(AdaptiveObject* e) noexcept
{
	TxState& s = t_tx;
	for (Link* l = e->outputs_head_; l; l = l->next_out)
	{
		// Marking large graphs is bound by dependent cache misses (link → consumer → its first link): start loading
		// the next consumer and this consumer's first output link early.
		if (l->next_out)
			__builtin_prefetch(l->next_out->consumer);
		AdaptiveObject* c = l->consumer;
		if (c->flags_ & AdaptiveObject::kWantsInputChanged)
			c->inputChanged(e);
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
			c->runMarkingCallbacks();
		if (c->outputs_head_)
		{
			__builtin_prefetch(c->outputs_head_);
			c->addRef();
			s.stack.push_back(c);
		}
	}
}

void Transaction::commit() noexcept
{
	TxState& s = t_tx;
	s.committing = true;
	s.min_level = 0;
	for (;;)
	{
		while (!s.stack.empty())
		{
			AdaptiveObject* e = s.stack.back();
			s.stack.pop_back();
			markOutputs(e);
			e->release();
		}
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
			e->release(); // already dirty: a barrier, its outputs were marked before
			continue;
		}
		if (e->level_ != lvl)
		{
			// The level grew since the object was queued: process it after its (deeper) inputs.
			e->release();
			enqueue(*e);
			continue;
		}
		if (e->flags_ & AdaptiveObject::kHasMarkHook)
		{
			bool go = e->onMark();
			if (e->level_ != lvl)
			{
				// onMark evaluated inputs that turned out deeper (notes §3.1): redo it at the new level.
				e->release();
				enqueue(*e);
				continue;
			}
			if (!go)
			{
				e->release();
				continue;
			}
		}
		e->flags_ |= AdaptiveObject::kOutOfDate;
		if (e->callbacks_)
			e->runMarkingCallbacks();
		markOutputs(e);
		e->release();
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
	return detail::g_live.load(std::memory_order_relaxed);
}

} // namespace quokka::adaptive
