// quokka/adaptive/aset.hpp — adaptive sets with counting (Z-set) semantics: aset<T> and the changeable cset<T>.
//
// A set delta maps elements to signed counts; the state counts how many contributors hold each element, and readers
// only ever see presence transitions (+1 when a count leaves 0, −1 when it returns to 0), so unions of overlapping
// sets, non-injective maps and useless add/remove pairs behave. Every operator is a
// reader that costs O(|delta|) per pull (mapA/filterA/chooseA add the dirty inner values, collect the dirty inner sets;
// removing an inner set or switching a bind costs its size). content()/force() are O(1) snapshots.
// Elements need operator< (states are persistent ordered maps, persistent_map.hpp) and operator==.
// Threading: owner thread only (core.hpp).
//
// [SECTION] index: SetDelta/SetTrace · aset, cset, asetOf · detail readers (choose, union, difference/intersect/xor,
// collect, chooseA, mapUse, bind) · operators · contains/count · reader callbacks (reduce and reduceByA: reduce.hpp).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <quokka/adaptive/history.hpp>
#include <quokka/adaptive/persistent_map.hpp>

namespace quokka::adaptive
{

/// State of an aset: element → number of contributors (> 0).
template <typename T>
using CountingSet = PMap<T, int>;
/// Delta of an aset: element → signed count change (never 0). A B-tree: a delta of 10^4 elements is built, combined
/// and read in O(k log k) with a few allocations per node of many elements, not one allocation and a pointer chase
/// per element (iterators are invalidated by inserts and erases, which no user of a delta holds across them).
template <typename T>
using SetDelta = absl::btree_map<T, int>;

/// Adds `count` to `delta[key]`, dropping entries that reach 0.
template <typename T>
void addCount(SetDelta<T>& delta, const T& key, int count)
{
	if (count == 0)
		return;
	auto [it, inserted] = delta.try_emplace(key, count);
	if (!inserted && (it->second += count) == 0)
		delta.erase(it);
}

/// Traceable<CountingSet, SetDelta>.
template <typename T>
struct SetTrace
{
	using State = CountingSet<T>;
	using Delta = SetDelta<T>;

	/// Applies counts; returns the effective delta (±1 presence transitions only).
	static Delta apply(State& s, const Delta& d)
	{
		Delta eff;
		for (const auto& [k, c] : d)
		{
			int o = 0, n = 0;
			s.update(k,
			         [&](const int* old) -> std::optional<int>
			         {
				         o = old ? *old : 0;
				         n = o + c;
				         return n > 0 ? std::optional<int>(n) : std::nullopt;
			         });
			if (n <= 0 && o > 0)
				eff.emplace_hint(eff.end(), k, -1);
			else if (n > 0 && o <= 0)
				eff.emplace_hint(eff.end(), k, 1);
		}
		return eff;
	}
	static void combine(Delta& a, const Delta& b)
	{
		for (const auto& [k, c] : b)
			addCount(a, k, c);
	}
	static Delta initial(const State& s)
	{
		Delta d;
		s.forEach([&](const T& k, int) { d.emplace_hint(d.end(), k, 1); });
		return d;
	}
	static bool isEmpty(const Delta& d) { return d.empty(); }
};

template <typename T>
using SetReader = Ref<HistoryReader<SetTrace<T>>>;

/// Read-only adaptive set handle. Copying shares the set.
template <typename T>
class aset
{
public:
	using ValueType = T;
	using Trace = SetTrace<T>;

	aset() = default;
	explicit aset(Ref<History<Trace>> history) : history_(std::move(history)) {}

	/// A new independent reader: its first pull returns the whole content, later pulls the changes since.
	SetReader<T> getReader() const { return makeRef<HistoryReader<Trace>>(history_); }
	/// A reader for consumers of changes only (getChanges, never state()): it keeps no snapshot of the content, so
	/// the set's changes between its pulls update the content in place instead of path-copying O(log n) nodes each.
	SetReader<T> getDeltaReader() const { return makeRef<HistoryReader<Trace>>(history_, false); }
	/// The content as an adaptive value (O(1) snapshots; the history itself).
	aval<CountingSet<T>> content() const { return aval<CountingSet<T>>(Ref<AValNode<CountingSet<T>>>(history_)); }
	/// Top-level read of the content (O(1) snapshot after bringing the set up to date).
	CountingSet<T> force() const { return history_->getValue(Token{}); }
	const Ref<History<Trace>>& history() const { return history_; }
	Ref<AdaptiveObject> object() const { return Ref<AdaptiveObject>(history_); }
	friend bool operator==(const aset& a, const aset& b) { return a.history_ == b.history_; }

protected:
	Ref<History<Trace>> history_;
};

/// Changeable set (non-counting: an element is in or out). Mutations outside a Transaction run their own.
template <typename T>
class cset : public aset<T>
{
public:
	cset() : aset<T>(makeRef<History<SetTrace<T>>>(CountingSet<T>())) {}
	explicit cset(const std::vector<T>& items) : cset() { unionWith(items); }
	cset(std::initializer_list<T> items) : cset(std::vector<T>(items)) {}

	/// Adds `v`; returns false when it was already present. One descent of the state, no temporary delta.
	bool add(const T& v) const
	{
		return this->history_->edit(
		    [&](CountingSet<T>& state, SetDelta<T>* sink)
		    {
			    bool added = false;
			    state.update(v,
			                 [&](const int* old)
			                 {
				                 added = !old;
				                 return std::optional<int>(old ? *old : 1);
			                 });
			    if (added && sink)
				    addCount(*sink, v, 1);
			    return added;
		    });
	}
	/// Removes `v`; returns false when it was absent.
	bool remove(const T& v) const
	{
		return this->history_->edit(
		    [&](CountingSet<T>& state, SetDelta<T>* sink)
		    {
			    if (!state.erase(v))
				    return false;
			    if (sink)
				    addCount(*sink, v, -1);
			    return true;
		    });
	}
	bool contains(const T& v) const { return this->history_->state().contains(v); }
	size_t count() const { return this->history_->state().size(); }
	void unionWith(const std::vector<T>& items) const
	{
		SetDelta<T> d;
		for (const T& v : items)
		{
			if (!contains(v))
				d[v] = 1;
		}
		this->history_->perform(d);
	}
	void exceptWith(const std::vector<T>& items) const
	{
		SetDelta<T> d;
		for (const T& v : items)
		{
			if (contains(v))
				d[v] = -1;
		}
		this->history_->perform(d);
	}
	void intersectWith(const std::vector<T>& items) const
	{
		std::map<T, int> keep;
		for (const T& v : items)
			keep[v] = 1;
		SetDelta<T> d;
		this->history_->state().forEach(
		    [&](const T& k, int)
		    {
			    if (!keep.count(k))
				    d[k] = -1;
		    });
		this->history_->perform(d);
	}
	void symmetricExceptWith(const std::vector<T>& items) const
	{
		SetDelta<T> d;
		for (const T& v : items)
		{
			if (d.count(v))
				d.erase(v);
			else
				d[v] = contains(v) ? -1 : 1;
		}
		this->history_->perform(d);
	}
	void clear() const
	{
		SetDelta<T> d = SetTrace<T>::initial(this->history_->state());
		for (auto& [k, c] : d)
			c = -1;
		this->history_->perform(d);
	}
	/// Replaces the content with `items`, as one delta.
	void setValue(const std::vector<T>& items) const
	{
		std::map<T, int> want;
		for (const T& v : items)
			want[v] = 1;
		SetDelta<T> d;
		this->history_->state().forEach(
		    [&](const T& k, int)
		    {
			    if (!want.erase(k))
				    d[k] = -1;
		    });
		for (auto& [k, c] : want)
			d[k] = 1;
		this->history_->perform(d);
	}
};

/// A constant set (never changes).
template <typename T>
aset<T> asetOf(const std::vector<T>& items)
{
	CountingSet<T> s;
	for (const T& v : items)
		s.set(v, 1);
	return aset<T>(makeRef<History<SetTrace<T>>>(std::move(s)));
}

/// Plain std::vector of the elements of a counting set (ascending), for tests and callers.
template <typename T>
std::vector<T> elements(const CountingSet<T>& s)
{
	std::vector<T> out;
	out.reserve(s.size());
	s.forEach([&](const T& k, int) { out.push_back(k); });
	return out;
}

namespace detail
{

template <typename T>
aset<T> derivedSet(Ref<OpReader<SetTrace<T>>> reader)
{
	return aset<T>(makeRef<History<SetTrace<T>>>(std::move(reader)));
}

/// A per-element cache: a flat hash map when std::hash<T> exists (O(1) per changed element, one slot read where a
/// node-based map walks a chain of separately allocated nodes — it holds every element of big sets), else an ordered
/// map.
template <typename T, typename V, typename = void>
struct ElementCache
{
	using type = std::map<T, V>;
};
template <typename T, typename V>
struct ElementCache<T, V, std::void_t<decltype(std::hash<T>{}(std::declval<const T&>()))>>
{
	using type = absl::flat_hash_map<T, V>; // absl::Hash mixes (also over a std::hash fallback): std::hash of a
	                                        // pointer is the identity, too weak for SwissTable's 7-bit tags
};

/// Set of elements: hashed when T has std::hash, else ordered.
template <typename T, typename = void>
struct ElementSet
{
	using type = std::set<T>;
};
template <typename T>
struct ElementSet<T, std::void_t<decltype(std::hash<T>{}(std::declval<const T&>()))>>
{
	using type = absl::flat_hash_set<T>; // (absl::Hash: see ElementCache)
};

/// choose (and map): f runs once per added element; the results that are values are cached so removal never calls f.
/// Elements f maps to nothing are not remembered at all: their removal has nothing to retract (the input's deltas
/// are effective, so an element is never removed without having been added), and a choose that keeps few of many
/// elements — the heap/classic split of a scene — then holds only those few.
template <typename T, typename U, typename F>
class SetChooseReader final : public OpReader<SetTrace<U>>
{
public:
	SetChooseReader(SetReader<T> input, F f) : input_(std::move(input)), f_(std::move(f)) {}

protected:
	SetDelta<U> compute(Token t) override
	{
		SetDelta<U> out;
		for (const auto& [k, c] : input_->getChanges(t))
		{
			if (c > 0)
			{
				std::optional<U> r = f_(k);
				if (r)
				{
					addCount(out, *r, 1);
					cache_.insert_or_assign(k, std::move(*r));
				}
			}
			else if (auto it = cache_.find(k); it != cache_.end())
			{
				addCount(out, it->second, -1);
				cache_.erase(it);
			}
		}
		return out;
	}

private:
	SetReader<T> input_;
	F f_;
	typename ElementCache<T, U>::type cache_;
};

/// filter: the predicate runs once per added element; the elements it kept are remembered (membership only, no
/// mapped copy), so removal never calls it and an element it rejected costs nothing after its add.
template <typename T, typename P>
class SetFilterReader final : public OpReader<SetTrace<T>>
{
public:
	SetFilterReader(SetReader<T> input, P p) : input_(std::move(input)), p_(std::move(p)) {}

protected:
	SetDelta<T> compute(Token t) override
	{
		SetDelta<T> out;
		for (const auto& [k, c] : input_->getChanges(t))
		{
			if (c > 0)
			{
				if (p_(k))
				{
					addCount(out, k, 1);
					kept_.insert(k);
				}
			}
			else if (kept_.erase(k) != 0)
				addCount(out, k, -1);
		}
		return out;
	}

private:
	SetReader<T> input_;
	P p_;
	typename ElementSet<T>::type kept_;
};

/// union of a fixed list of sets: the counting history keeps an element while any input holds it.
template <typename T>
class SetUnionReader final : public OpReader<SetTrace<T>>
{
public:
	explicit SetUnionReader(std::vector<SetReader<T>> inputs) : inputs_(std::move(inputs)) {}

protected:
	SetDelta<T> compute(Token t) override
	{
		SetDelta<T> out;
		for (auto& r : inputs_)
			SetTrace<T>::combine(out, r->getChanges(t));
		return out;
	}

private:
	std::vector<SetReader<T>> inputs_;
};

enum class SetBinaryOp
{
	Difference,
	Intersect,
	Xor
};

/// difference/intersect/xor: presence before/after is recovered from each reader's state and its delta.
template <typename T>
class SetBinaryReader final : public OpReader<SetTrace<T>>
{
public:
	SetBinaryReader(SetReader<T> a, SetReader<T> b, SetBinaryOp op) : a_(std::move(a)), b_(std::move(b)), op_(op) {}

protected:
	SetDelta<T> compute(Token t) override
	{
		SetDelta<T> da = a_->getChanges(t);
		SetDelta<T> db = b_->getChanges(t);
		SetDelta<T> out;
		auto visit = [&](const T& k)
		{
			bool na = a_->state().contains(k);
			bool nb = b_->state().contains(k);
			auto ia = da.find(k);
			auto ib = db.find(k);
			bool oa = ia == da.end() ? na : ia->second < 0;
			bool ob = ib == db.end() ? nb : ib->second < 0;
			bool before = present(oa, ob);
			bool now = present(na, nb);
			if (before != now)
				out.emplace(k, now ? 1 : -1);
		};
		for (const auto& [k, c] : da)
			visit(k);
		for (const auto& [k, c] : db)
		{
			if (!da.count(k))
				visit(k);
		}
		return out;
	}

private:
	bool present(bool a, bool b) const
	{
		switch (op_)
		{
		case SetBinaryOp::Difference:
			return a && !b;
		case SetBinaryOp::Intersect:
			return a && b;
		case SetBinaryOp::Xor:
			return a != b;
		}
		return false;
	}
	SetReader<T> a_, b_;
	SetBinaryOp op_;
};

/// collect / unionMany: one inner reader per outer element; only inner readers marked since the last pull are pulled.
template <typename T, typename U, typename F>
class SetCollectReader final : public OpReader<SetTrace<U>>
{
public:
	SetCollectReader(SetReader<T> outer, F f)
	    : OpReader<SetTrace<U>>(AdaptiveObject::kExplicitInputs | AdaptiveObject::kWantsInputChanged),
	      outer_(std::move(outer)), f_(std::move(f))
	{
	}

protected:
	void inputChanged(AdaptiveObject* input) override
	{
		if (input != outer_.get())
			dirty_.insert(input);
	}
	SetDelta<U> compute(Token t) override
	{
		std::unordered_set<AdaptiveObject*> dirty;
		dirty.swap(dirty_);
		SetDelta<U> out;
		for (const auto& [k, c] : outer_->getChanges(t))
		{
			if (c < 0)
			{
				auto it = inner_.find(k);
				if (it == inner_.end())
					continue;
				SetReader<U> r = std::move(it->second);
				inner_.erase(it);
				r->state().forEach([&](const U& e, int) { addCount(out, e, -1); });
				owner_.erase(r.get());
				dirty.erase(r.get());
				this->removeInput(r.get());
			}
			else
			{
				SetReader<U> r = f_(k).getReader();
				owner_.emplace(r.get(), k);
				SetTrace<U>::combine(out, r->getChanges(t));
				inner_.insert_or_assign(k, std::move(r));
			}
		}
		for (AdaptiveObject* d : dirty)
		{
			auto it = owner_.find(d);
			if (it != owner_.end())
				SetTrace<U>::combine(out, inner_.at(it->second)->getChanges(t));
		}
		return out;
	}

private:
	SetReader<T> outer_;
	F f_;
	std::map<T, SetReader<U>> inner_;
	std::unordered_map<AdaptiveObject*, T> owner_;
	std::unordered_set<AdaptiveObject*> dirty_;
};

/// chooseA (and mapA/filterA): one adaptive option per element; marked cells are re-read and emit −old +new.
/// Several elements may share one cell (reverse map cell → elements).
template <typename T, typename U, typename F>
class SetChooseAReader final : public OpReader<SetTrace<U>>
{
public:
	SetChooseAReader(SetReader<T> input, F f)
	    : OpReader<SetTrace<U>>(AdaptiveObject::kExplicitInputs | AdaptiveObject::kWantsInputChanged),
	      input_(std::move(input)), f_(std::move(f))
	{
	}

protected:
	void inputChanged(AdaptiveObject* input) override
	{
		if (input != input_.get())
			dirty_.insert(input);
	}
	SetDelta<U> compute(Token t) override
	{
		std::unordered_set<AdaptiveObject*> dirty;
		dirty.swap(dirty_);
		SetDelta<U> out;
		for (const auto& [k, c] : input_->getChanges(t))
		{
			if (c < 0)
			{
				auto it = entries_.find(k);
				if (it == entries_.end())
					continue;
				if (it->second.last)
					addCount(out, *it->second.last, -1);
				AdaptiveObject* cell = it->second.cell.node().get();
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
			else
			{
				aval<std::optional<U>> cell = f_(k);
				std::optional<U> v = cell.getValue(t);
				if (v)
					addCount(out, *v, 1);
				users_[cell.node().get()].push_back(k);
				entries_.insert_or_assign(k, Entry{std::move(cell), std::move(v)});
			}
		}
		for (AdaptiveObject* d : dirty)
		{
			auto it = users_.find(d);
			if (it == users_.end())
				continue;
			for (const T& k : it->second)
			{
				Entry& e = entries_.at(k);
				std::optional<U> v = e.cell.getValue(t);
				if (v == e.last)
					continue;
				if (e.last)
					addCount(out, *e.last, -1);
				if (v)
					addCount(out, *v, 1);
				e.last = std::move(v);
			}
		}
		return out;
	}

private:
	struct Entry
	{
		aval<std::optional<U>> cell;
		std::optional<U> last;
	};
	SetReader<T> input_;
	F f_;
	std::map<T, Entry> entries_;
	std::unordered_map<AdaptiveObject*, std::vector<T>> users_;
	std::unordered_set<AdaptiveObject*> dirty_;
};

/// mapUse: like choose-map, but results are handed to `dispose` when their element leaves; the disposer returned by
/// mapUse disposes every live result and empties the set (later input changes are ignored).
template <typename T, typename U, typename F, typename D>
class SetMapUseReader final : public OpReader<SetTrace<U>>
{
public:
	struct Control
	{
		SetMapUseReader* reader = nullptr; ///< null once the reader is gone
		bool disposed = false;
	};
	SetMapUseReader(SetReader<T> input, F f, D dispose, std::shared_ptr<Control> control)
	    : input_(std::move(input)), f_(std::move(f)), dispose_(std::move(dispose)), control_(std::move(control))
	{
		control_->reader = this;
	}
	~SetMapUseReader() override
	{
		control_->reader = nullptr;
		for (auto& [k, u] : cache_)
			dispose_(u);
	}

protected:
	SetDelta<U> compute(Token t) override
	{
		SetDelta<U> out;
		SetDelta<T> d = input_->getChanges(t);
		if (control_->disposed)
		{
			for (auto& [k, u] : cache_)
			{
				addCount(out, u, -1);
				dispose_(u);
			}
			cache_.clear();
			return out;
		}
		for (const auto& [k, c] : d)
		{
			if (c > 0)
			{
				U u = f_(k);
				addCount(out, u, 1);
				cache_.insert_or_assign(k, std::move(u));
			}
			else if (auto it = cache_.find(k); it != cache_.end())
			{
				addCount(out, it->second, -1);
				dispose_(it->second);
				cache_.erase(it);
			}
		}
		return out;
	}

private:
	SetReader<T> input_;
	F f_;
	D dispose_;
	std::shared_ptr<Control> control_;
	std::map<T, U> cache_;
};

/// bind (aval → aset): on an outer change, −(old inner state) + (new inner's first pull); otherwise inner changes.
template <typename A, typename U, typename F>
class SetBindReader final : public OpReader<SetTrace<U>>
{
public:
	SetBindReader(aval<A> outer, F f) : outer_(std::move(outer)), f_(std::move(f)) {}

protected:
	SetDelta<U> compute(Token t) override
	{
		SetDelta<U> out;
		const A& v = outer_.getValue(t);
		if (!inner_ || !last_ || !valuesEqual(*last_, v))
		{
			if (inner_)
				inner_->state().forEach([&](const U& e, int) { addCount(out, e, -1); });
			last_ = v;
			inner_ = aset<U>(f_(v)).getReader();
		}
		SetTrace<U>::combine(out, inner_->getChanges(t));
		return out;
	}

private:
	aval<A> outer_;
	F f_;
	std::optional<A> last_;
	SetReader<U> inner_;
};

} // namespace detail

/// Keeps the elements for which f returns a value, mapped to it. f runs once per added element (cached).
template <typename T, typename F>
auto choose(const aset<T>& s, F f) -> aset<typename std::invoke_result_t<F&, const T&>::value_type>
{
	using U = typename std::invoke_result_t<F&, const T&>::value_type;
	return detail::derivedSet<U>(makeRef<detail::SetChooseReader<T, U, F>>(s.getDeltaReader(), std::move(f)));
}

/// Maps every element; non-injective maps count contributors (an output stays while any input maps to it).
template <typename T, typename F>
auto map(const aset<T>& s, F f) -> aset<std::decay_t<std::invoke_result_t<F&, const T&>>>
{
	using U = std::decay_t<std::invoke_result_t<F&, const T&>>;
	return choose(s, [f = std::move(f)](const T& v) mutable { return std::optional<U>(f(v)); });
}

/// Keeps the elements satisfying `p` (run once per added element).
template <typename T, typename P>
aset<T> filter(const aset<T>& s, P p)
{
	return detail::derivedSet<T>(makeRef<detail::SetFilterReader<T, P>>(s.getDeltaReader(), std::move(p)));
}

/// Maps every element to a resource f(x) that is released with dispose(u) when x leaves. The Subscription
/// disposes every live result at once and makes the set empty; disposing it twice is harmless.
template <typename T, typename F, typename D>
auto mapUse(const aset<T>& s, F f, D dispose)
    -> std::pair<Subscription, aset<std::decay_t<std::invoke_result_t<F&, const T&>>>>
{
	using U = std::decay_t<std::invoke_result_t<F&, const T&>>;
	using Reader = detail::SetMapUseReader<T, U, F, D>;
	auto control = std::make_shared<typename Reader::Control>();
	auto reader = makeRef<Reader>(s.getReader(), std::move(f), std::move(dispose), control);
	aset<U> result = detail::derivedSet<U>(reader);
	Subscription disposer(
	    [control]
	    {
		    if (control->disposed)
			    return;
		    control->disposed = true;
		    if (control->reader)
			    control->reader->markOutdated();
	    });
	return {std::move(disposer), result};
}

/// Union of two sets; unionOf(a, a) is a itself. FDA: ASet.union.
template <typename T>
aset<T> unionOf(const aset<T>& a, const aset<T>& b)
{
	if (a == b)
		return a;
	return detail::derivedSet<T>(
	    makeRef<detail::SetUnionReader<T>>(std::vector<SetReader<T>>{a.getReader(), b.getReader()}));
}

/// Elements of a not in b. difference(a, a) is empty.
template <typename T>
aset<T> difference(const aset<T>& a, const aset<T>& b)
{
	if (a == b)
		return asetOf<T>({});
	return detail::derivedSet<T>(
	    makeRef<detail::SetBinaryReader<T>>(a.getReader(), b.getReader(), detail::SetBinaryOp::Difference));
}

/// Elements in both. intersect(a, a) is a.
template <typename T>
aset<T> intersect(const aset<T>& a, const aset<T>& b)
{
	if (a == b)
		return a;
	return detail::derivedSet<T>(
	    makeRef<detail::SetBinaryReader<T>>(a.getReader(), b.getReader(), detail::SetBinaryOp::Intersect));
}

/// Elements in exactly one of a, b (FDA: ASet.xor). symmetricDifference(a, a) is empty.
template <typename T>
aset<T> symmetricDifference(const aset<T>& a, const aset<T>& b)
{
	if (a == b)
		return asetOf<T>({});
	return detail::derivedSet<T>(
	    makeRef<detail::SetBinaryReader<T>>(a.getReader(), b.getReader(), detail::SetBinaryOp::Xor));
}

/// Union of the sets f(x) over the elements x of s (FDA: ASet.collect). Only marked inner sets are pulled.
template <typename T, typename F>
auto collect(const aset<T>& s, F f) -> aset<typename std::invoke_result_t<F&, const T&>::ValueType>
{
	using U = typename std::invoke_result_t<F&, const T&>::ValueType;
	return detail::derivedSet<U>(makeRef<detail::SetCollectReader<T, U, F>>(s.getReader(), std::move(f)));
}

/// Union of a set of sets.
template <typename T>
aset<T> unionMany(const aset<aset<T>>& sets)
{
	return collect(sets, [](const aset<T>& x) { return x; });
}

/// Adaptive choose: f(x) is an aval<optional<U>> per element; cells shared by several elements are supported.
template <typename T, typename F>
auto chooseA(const aset<T>& s, F f)
    -> aset<typename std::decay_t<std::invoke_result_t<F&, const T&>>::ValueType::value_type>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const T&>>::ValueType::value_type;
	auto g = [f = std::move(f)](const T& v) mutable { return aval<std::optional<U>>(f(v)); };
	return detail::derivedSet<U>(makeRef<detail::SetChooseAReader<T, U, decltype(g)>>(s.getReader(), std::move(g)));
}

/// Adaptive map: f(x) is an aval<U> per element.
template <typename T, typename F>
auto mapA(const aset<T>& s, F f) -> aset<typename std::decay_t<std::invoke_result_t<F&, const T&>>::ValueType>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const T&>>::ValueType;
	return chooseA(s, [f = std::move(f)](const T& v) mutable
	               { return adaptive::map(aval<U>(f(v)), [](const U& u) { return std::optional<U>(u); }); });
}

/// Adaptive filter: p(x) is an aval<bool> per element.
template <typename T, typename P>
aset<T> filterA(const aset<T>& s, P p)
{
	return chooseA(
	    s, [p = std::move(p)](const T& v) mutable
	    { return adaptive::map(aval<bool>(p(v)), [v](bool b) { return b ? std::optional<T>(v) : std::nullopt; }); });
}

/// Dynamic set: f(value of a) is the set to follow; switching costs the sizes of the old and new sets.
template <typename A, typename F>
auto bind(const aval<A>& a, F f) -> aset<typename std::invoke_result_t<F&, const A&>::ValueType>
requires std::is_convertible_v<std::invoke_result_t<F&, const A&>,
                               aset<typename std::invoke_result_t<F&, const A&>::ValueType>>
{
	using U = typename std::invoke_result_t<F&, const A&>::ValueType;
	return detail::derivedSet<U>(makeRef<detail::SetBindReader<A, U, F>>(a, std::move(f)));
}

namespace detail
{

/// An aval computed from a set reader: fn(reader, delta) is called on every evaluation with the pulled delta.
template <typename T, typename R, typename Fn>
aval<R> readerValue(const aset<T>& s, Fn fn)
{
	return makeFunctionNode<R>([reader = s.getReader(), fn = std::move(fn)](Token t, std::optional<R>& out) mutable
	                           { fn(*reader, reader->getChanges(t), out); });
}

} // namespace detail

/// Whether `v` is in the set, O(|delta|) per change.
template <typename T>
aval<bool> contains(const aset<T>& s, T v)
{
	return detail::readerValue<T, bool>(s, [v](auto& r, const SetDelta<T>&, std::optional<bool>& out)
	                                    { out = r.state().contains(v); });
}

/// Number of elements, O(|delta|) per change.
template <typename T>
aval<size_t> count(const aset<T>& s)
{
	return detail::readerValue<T, size_t>(s, [](auto& r, const SetDelta<T>&, std::optional<size_t>& out)
	                                      { out = r.state().size(); });
}

/// Reader callback for sets: f(stateBefore, delta). See subscribeReader.
template <typename T, typename F>
Subscription subscribe(const aset<T>& s, F f)
{
	return subscribeReader<SetTrace<T>>(s.getReader(), std::move(f));
}

} // namespace quokka::adaptive
