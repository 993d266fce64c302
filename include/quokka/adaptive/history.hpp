// quokka/adaptive/history.hpp — the delta/reader protocol shared by aset, amap and alist.
//
// A Trace names a collection's State (persistent, O(1) copy) and Delta and how deltas apply and combine. An OpReader
// is an adaptive object whose getChanges(token) returns the delta since its previous pull. Every adaptive collection
// is a History: the materialised state plus a list of versions, one per point in time some live reader is at, each
// holding the delta accumulated since. Several readers of one collection therefore share the upstream work; a reader
// that is dropped releases its version at once. Threading: owner thread only (core.hpp).
#pragma once

#include <memory>
#include <utility>

#include <quokka/adaptive/aval.hpp>

namespace quokka::adaptive
{

/// Reader of deltas: each getChanges returns what changed since the previous call (everything on the first call).
template <typename Trace>
class OpReader : public AdaptiveObject
{
public:
	using Delta = typename Trace::Delta;

	/// Pulls the changes since the last pull; records token.caller as an output. An exception from a user function
	/// propagates; the reader is then out of sync (documented weakness: rebuild it).
	Delta getChanges(Token token)
	{
		if (!outOfDate()) [[likely]]
		{
			registerRead(token);
			return Delta();
		}
		return pullChanges(token);
	}

protected:
	explicit OpReader(uint32_t flags = 0) : AdaptiveObject(flags) {}

	/// Pulls with the reader pinned (a computation may drop the last reference to it; the delta is returned by value,
	/// so the pin releases at once) and on a fresh stack segment when the running one is low (stack_guard.hpp).
	Delta pullChanges(Token token)
	{
		Ref<AdaptiveObject> pin(this);
		Delta d;
		withStackHeadroom(
		    [this, &d]
		    {
			    beginEvaluation();
			    try
			    {
				    d = compute(Token{this});
			    }
			    catch (...)
			    {
				    endEvaluation(false);
				    throw;
			    }
			    endEvaluation(true);
		    });
		registerRead(token);
		return d;
	}
	virtual Delta compute(Token token) = 0;
};

/// Materialised collection: state + versions for its readers. Its adaptive value is the state (content, O(1)).
template <typename Trace>
class History final : public AValNode<typename Trace::State>
{
public:
	using State = typename Trace::State;
	using Delta = typename Trace::Delta;

	/// A changeable history (cset/cmap/clist) starting at `initial`.
	explicit History(State initial) { this->value_.emplace(std::move(initial)); }
	/// A derived history fed by `input`.
	explicit History(Ref<OpReader<Trace>> input) : input_(std::move(input)) { this->value_.emplace(); }
	~History() override
	{
		while (head_)
		{
			Version* v = head_;
			head_ = v->next;
			delete v;
		}
	}

	/// Number of live versions (points in time some reader is at); tests check that dead readers release theirs.
	size_t versionCount() const
	{
		size_t n = 0;
		for (Version* v = head_; v; v = v->next)
			++n;
		return n;
	}
	/// Current state without evaluating (changeable histories are always current).
	const State& state() const { return *this->value_; }

	/// Applies `delta` to the state now, keeps the effective part for the readers and marks the history (in the
	/// current transaction, or a one-change transaction). Returns whether anything changed.
	bool perform(const Delta& delta)
	{
		Delta eff = Trace::apply(*this->value_, delta);
		if (Trace::isEmpty(eff))
			return false;
		append(std::move(eff));
		this->markOutdated();
		return true;
	}

	/// Changes the state in place: f(state, sink) applies a change and adds its effective delta to `sink` (null when
	/// no reader keeps a version), returning whether anything changed. For single-element edits (cset::add) that
	/// would otherwise build a delta, apply it and combine the effective one.
	template <typename F>
	bool edit(F&& f)
	{
		if (!f(*this->value_, tail_ ? &tail_->delta : static_cast<Delta*>(nullptr)))
			return false;
		this->markOutdated();
		return true;
	}

	struct Version
	{
		Delta delta;
		int refs = 0;
		Version* prev = nullptr;
		Version* next = nullptr;
	};

	/// Collects the delta from `v` (nullptr: first read, everything) to now and moves the reader to a current version.
	Delta readFrom(Version*& v)
	{
		Delta result;
		if (!v)
			result = Trace::initial(*this->value_);
		else if (v == tail_ && v->refs == 1 && !v->prev) // sole reader, no older version needs the delta
		{
			result = std::move(v->delta);
			v->delta = Delta();
			return result;
		}
		else
		{
			// The last reader of a version that no older one absorbs on release takes its delta instead of a copy
			// (with two readers the second one to pull, for instance: no second copy of every changed element).
			Version* x = v;
			if (v->refs == 1 && !v->prev)
			{
				result = std::move(v->delta);
				v->delta = Delta();
				x = v->next;
			}
			for (; x; x = x->next)
				Trace::combine(result, x->delta);
			releaseVersion(v);
		}
		if (tail_ && Trace::isEmpty(tail_->delta))
		{
			++tail_->refs;
			v = tail_;
		}
		else
		{
			v = new Version{Delta(), 1, tail_, nullptr};
			(tail_ ? tail_->next : head_) = v;
			tail_ = v;
		}
		return result;
	}
	void releaseVersion(Version* v)
	{
		if (--v->refs > 0)
			return;
		// Nobody is at v any more: readers at v->prev still need v's changes.
		if (v->prev)
			Trace::combine(v->prev->delta, v->delta);
		(v->prev ? v->prev->next : head_) = v->next;
		(v->next ? v->next->prev : tail_) = v->prev;
		delete v;
	}

protected:
	void compute(Token token) override
	{
		if (!input_)
			return;
		Delta d = input_->getChanges(token);
		Delta eff = Trace::apply(*this->value_, d);
		if (!Trace::isEmpty(eff))
			append(std::move(eff));
	}

private:
	void append(Delta eff)
	{
		if (tail_)
			Trace::combine(tail_->delta, eff);
	}

	Ref<OpReader<Trace>> input_;
	Version* head_ = nullptr;
	Version* tail_ = nullptr;
};

/// A reader of a History, with its own state (an O(1) snapshot of the history state after each pull).
template <typename Trace>
class HistoryReader final : public OpReader<Trace>
{
public:
	using State = typename Trace::State;
	using Delta = typename Trace::Delta;

	/// `keep_state` false: a delta-only reader. It holds no snapshot of the history's state, so the history's nodes
	/// stay unshared between pulls and its next changes are applied in place (PMap's transient updates) instead of
	/// path-copying; state() is then unavailable.
	explicit HistoryReader(Ref<History<Trace>> history, bool keep_state = true)
	    : history_(std::move(history)), keep_state_(keep_state)
	{
	}
	~HistoryReader() override
	{
		if (version_)
			history_->releaseVersion(version_);
	}
	/// The reader's state after its last pull (its previous state plus every delta it returned).
	const State& state() const
	{
		QUOKKA_ASSERT(keep_state_, "HistoryReader::state() on a delta-only reader");
		return state_;
	}
	/// Top-level pull.
	Delta pull() { return this->getChanges(Token{}); }

protected:
	Delta compute(Token token) override
	{
		if (keep_state_)
			state_ = history_->getValue(token);
		else
			history_->getValue(token);
		return history_->readFrom(version_);
	}

private:
	Ref<History<Trace>> history_;
	typename History<Trace>::Version* version_ = nullptr;
	bool keep_state_ = true;
	State state_;
};

/// Reader callback: calls f(stateBefore, delta) now with the full content, then after every
/// transaction that changed the collection, with a non-empty delta. Keep the Subscription. Owner thread only.
template <typename Trace, typename F>
Subscription subscribeReader(Ref<HistoryReader<Trace>> reader, F f)
{
	struct State
	{
		Ref<HistoryReader<Trace>> reader;
		F fn;
		bool alive = true;
		bool first = true;
	};
	auto st = std::make_shared<State>(State{std::move(reader), std::move(f), true, true});
	auto deliver = [st]
	{
		if (!st->alive)
			return;
		typename Trace::State before = st->reader->state();
		typename Trace::Delta d;
		try
		{
			d = st->reader->pull();
		}
		catch (...)
		{
			return;
		}
		if (!Trace::isEmpty(d) || st->first)
			st->fn(before, d);
		st->first = false;
	};
	if (Transaction::committing())
		Transaction::addFinalizer(deliver);
	else
		deliver();
	auto holder = std::make_shared<Subscription>(
	    addMarkingCallback(Ref<AdaptiveObject>(st->reader), [deliver] { Transaction::addFinalizer(deliver); }));
	return Subscription(
	    [st, holder]
	    {
		    st->alive = false;
		    holder->dispose();
	    });
}

} // namespace quokka::adaptive
