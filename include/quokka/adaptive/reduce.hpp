// quokka/adaptive/reduce.hpp — aggregates of sets and lists kept up to date from their changes: reduce and reduceByA.
//
// A Reduction folds contributions into a state: add(s, x) folds one in, sub(s, x) takes one out or returns nullopt when
// it cannot (a fold without inverse: the state is then folded again from every contribution). A group (sum, xor) has a
// total sub; min/max have none. reduce folds the elements themselves; reduceByA folds, per element, the value of an
// adaptive cell the element maps to (FDA's ASet/AList.reduceByA), so a cell that changes costs its own sub + add, not
// a pass over the collection. Every evaluation costs O(|delta| + changed cells) while sub succeeds. It refolds
// everything when there is no result yet, when sub fails, when at most two contributions remain, or when as many
// contributions changed as there are (so float sums stay exact after a clear or a reset).
// Contributions are combined in no particular order: add must be commutative. Threading: owner thread only.
#pragma once

#include <functional>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/aset.hpp>

namespace quokka::adaptive
{

/// An aggregate kept up to date from changes: seed, add, and an optional inverse `sub`.
template <typename T, typename S>
struct Reduction
{
	S seed;
	std::function<S(const S&, const T&)> add;
	std::function<std::optional<S>(const S&, const T&)> sub; ///< may be empty: always refold on removal
};

namespace detail
{

/// One evaluation of a reduction. `changes(out, in)` calls out(v) for every contribution that left and in(v) for every
/// one that entered; `all(g)` calls g(v) for every current contribution (a refold). `size` is the number of current
/// contributions and `changed` the number of changes.
template <typename V, typename S, typename Changes, typename All>
void reduceStep(const Reduction<V, S>& r, std::optional<S>& result, size_t size, size_t changed, Changes&& changes,
                All&& all)
{
	bool refold = !result || size <= 2 || changed >= size;
	if (!refold)
	{
		std::optional<S> acc = *result;
		changes([&](const V& v) { acc = (acc && r.sub) ? r.sub(*acc, v) : std::nullopt; },
		        [&](const V& v)
		        {
			        if (acc)
				        acc = r.add(*acc, v);
		        });
		if (acc)
			result = std::move(acc);
		else
			refold = true;
	}
	if (refold)
	{
		S acc = r.seed;
		all([&](const V& v) { acc = r.add(acc, v); });
		result = std::move(acc);
	}
}

/// reduceByA over the collection whose trace is `Trace` (a set: keys are the elements, f(x); a list: keys are the
/// indices, f(i, x)). One adaptive cell per element; the input reader and every cell read are explicit inputs;
/// inputChanged collects the marked cells, which are re-read on the next evaluation. Several elements may share one
/// cell (reverse map cell → keys).
template <typename Trace, typename Key, typename V, typename S, typename F>
class ReduceByANode final : public AValNode<S>
{
public:
	ReduceByANode(Ref<HistoryReader<Trace>> input, F f, Reduction<V, S> r)
	    : AValNode<S>(AdaptiveObject::kExplicitInputs | AdaptiveObject::kWantsInputChanged), input_(std::move(input)),
	      f_(std::move(f)), r_(std::move(r))
	{
	}

protected:
	void inputChanged(AdaptiveObject* in) override
	{
		if (in != input_.get())
			dirty_.insert(in);
	}

	void compute(Token t) override
	{
		std::unordered_set<AdaptiveObject*> dirty;
		dirty.swap(dirty_);
		left_.clear();
		entered_.clear();
		for (const auto& [k, change] : input_->getChanges(t))
		{
			if constexpr (std::is_same_v<Trace, SetTrace<Key>>)
				change < 0 ? leave(k, dirty) : enter(k, aval<V>(f_(k)), t);
			else
			{
				leave(k, dirty); // removed or replaced
				if (change)
					enter(k, aval<V>(f_(k, *change)), t);
			}
		}
		for (AdaptiveObject* cell : dirty)
		{
			auto it = users_.find(cell);
			if (it == users_.end())
				continue;
			for (const Key& k : it->second)
			{
				Entry& e = entries_.at(k);
				V v = e.cell.getValue(t);
				if (valuesEqual(v, e.last))
					continue;
				left_.push_back(std::move(e.last));
				entered_.push_back(v);
				e.last = std::move(v);
			}
		}
		reduceStep(
		    r_, this->value_, entries_.size(), left_.size() + entered_.size(),
		    [this](auto&& out, auto&& in)
		    {
			    for (const V& v : left_)
				    out(v);
			    for (const V& v : entered_)
				    in(v);
		    },
		    [this](auto&& g)
		    {
			    for (const auto& [k, e] : entries_)
				    g(e.last);
		    });
		left_.clear();
		entered_.clear();
	}

private:
	/// The element `k` left (or is replaced): its contribution goes, and its cell when no other element uses it.
	void leave(const Key& k, std::unordered_set<AdaptiveObject*>& dirty)
	{
		auto it = entries_.find(k);
		if (it == entries_.end())
			return;
		AdaptiveObject* cell = it->second.cell.node().get();
		left_.push_back(std::move(it->second.last));
		auto& users = users_[cell];
		std::erase(users, k);
		if (users.empty())
		{
			users_.erase(cell);
			dirty.erase(cell);
			this->removeInput(cell);
		}
		entries_.erase(it);
	}
	/// The element `k` entered with its cell: reads it (an explicit input from now on).
	void enter(const Key& k, aval<V> cell, Token t)
	{
		V v = cell.getValue(t);
		entered_.push_back(v);
		users_[cell.node().get()].push_back(k);
		entries_.insert_or_assign(k, Entry{std::move(cell), std::move(v)});
	}

	struct Entry
	{
		aval<V> cell;
		V last;
	};
	Ref<HistoryReader<Trace>> input_;
	F f_;
	Reduction<V, S> r_;
	std::map<Key, Entry> entries_;
	std::unordered_map<AdaptiveObject*, std::vector<Key>> users_;
	std::unordered_set<AdaptiveObject*> dirty_;
	std::vector<V> left_, entered_; ///< this evaluation's contributions out and in
};

} // namespace detail

/// Reduces the set with `r`: O(|delta|) per change while sub succeeds (see the header comment for when it refolds).
template <typename T, typename S>
aval<S> reduce(const aset<T>& s, Reduction<T, S> r)
{
	return detail::readerValue<T, S>(s,
	                                 [r = std::move(r)](auto& reader, const SetDelta<T>& d, std::optional<S>& out)
	                                 {
		                                 const CountingSet<T>& st = reader.state();
		                                 detail::reduceStep(
		                                     r, out, st.size(), d.size(),
		                                     [&](auto&& leave, auto&& enter)
		                                     {
			                                     for (const auto& [x, c] : d)
				                                     c > 0 ? enter(x) : leave(x);
		                                     },
		                                     [&](auto&& g) { st.forEach([&](const T& x, int) { g(x); }); });
	                                 });
}

/// Reduces the values of the list with `r`: O(|delta|) per change while sub succeeds.
template <typename T, typename S>
aval<S> reduce(const alist<T>& l, Reduction<T, S> r)
{
	return detail::makeFunctionNode<S>(
	    [reader = l.getReader(), r = std::move(r)](Token t, std::optional<S>& out) mutable
	    {
		    IndexList<T> before = reader->state(); // O(1) snapshot: old values of replaced/removed indices
		    ListDelta<T> d = reader->getChanges(t);
		    const IndexList<T>& st = reader->state();
		    detail::reduceStep(
		        r, out, st.size(), d.size(),
		        [&](auto&& leave, auto&& enter)
		        {
			        for (const auto& [i, op] : d)
			        {
				        if (const T* old = before.find(i))
					        leave(*old);
				        if (op)
					        enter(*op);
			        }
		        },
		        [&](auto&& g) { st.forEach([&](const Index&, const T& v) { g(v); }); });
	    });
}

/// Reduces the adaptive values f(x) of the set's elements with `r` (FDA: ASet.reduceByA). f runs once per element
/// added; an element's cell that changes costs one sub + add; elements may share cells. O(|delta| + changed cells)
/// per evaluation while sub succeeds. V needs operator== (an unchanged cell value is skipped).
template <typename T, typename V, typename S, typename F>
aval<S> reduceByA(const aset<T>& s, F f, Reduction<V, S> r)
{
	using Node = detail::ReduceByANode<SetTrace<T>, T, V, S, F>;
	return aval<S>(makeRef<Node>(s.getDeltaReader(), std::move(f), std::move(r)));
}

/// Reduces the adaptive values f(i, x) of the list's elements (i: the element's Index) with `r` (FDA:
/// AList.reduceByA). Costs as the set version; a replaced element leaves and enters again.
template <typename T, typename V, typename S, typename F>
aval<S> reduceByAi(const alist<T>& l, F f, Reduction<V, S> r)
{
	auto reader = makeRef<HistoryReader<ListTrace<T>>>(l.history(), false); // deltas only: no state snapshot
	using Node = detail::ReduceByANode<ListTrace<T>, Index, V, S, F>;
	return aval<S>(makeRef<Node>(std::move(reader), std::move(f), std::move(r)));
}

/// reduceByAi with f(x).
template <typename T, typename V, typename S, typename F>
aval<S> reduceByA(const alist<T>& l, F f, Reduction<V, S> r)
{
	auto g = [f = std::move(f)](const Index&, const T& x) mutable { return f(x); };
	return reduceByAi(l, std::move(g), std::move(r));
}

} // namespace quokka::adaptive
