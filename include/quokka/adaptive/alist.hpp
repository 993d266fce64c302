// quokka/adaptive/alist.hpp — adaptive ordered lists: alist<T> and the changeable clist<T>.
//
// A list is a persistent map Index → value (IndexList); Index (index.hpp) is an order-maintenance key, so inserting
// between two elements never renumbers anything and a list delta is a map delta keyed by Index (Set / Remove, later
// wins). map/filter/choose/mapA/filterA/chooseA keep the input indices and cost O(|delta|); collect and
// sortBy create output indices through a sorted key → Index mapping, O(|delta| log n); sub/skip/take cost the delta
// plus the elements that cross the window borders. clist::updateTo diffs (LCS) and keeps the indices of unchanged
// elements. content()/force() are O(1). Values need operator== (sortBy keys operator<).
// Threading: owner thread only (core.hpp), indices included.
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <quokka/adaptive/amap.hpp>
#include <quokka/adaptive/index.hpp>

namespace quokka::adaptive
{

/// State of an alist: Index → value, in list order.
template <typename T>
using IndexList = PMap<Index, T>;
/// Delta of an alist: Index → Set(value) or Remove.
template <typename T>
using ListDelta = MapDelta<Index, T>;
/// Traceable<IndexList, ListDelta>: a map trace keyed by Index.
template <typename T>
using ListTrace = MapTrace<Index, T>;
template <typename T>
using ListReader = Ref<HistoryReader<ListTrace<T>>>;

/// The values of an IndexList in order.
template <typename T>
std::vector<T> toVector(const IndexList<T>& l)
{
	std::vector<T> out;
	out.reserve(l.size());
	l.forEach([&](const Index&, const T& v) { out.push_back(v); });
	return out;
}

/// Delta turning `from` into a list with values `to` (in order): matched (LCS) elements keep their index, a run of
/// k removed and m added values becomes min(k, m) in-place Sets plus the rest as removes/inserts.
/// O(n + d²) with d the differing middle (after common prefix/suffix); a middle over 4·10^6 cells falls back to
/// positional Sets.
template <typename T>
ListDelta<T> computeListDelta(const IndexList<T>& from, const std::vector<T>& to)
{
	std::vector<std::pair<Index, T>> old;
	old.reserve(from.size());
	from.forEach([&](const Index& i, const T& v) { old.emplace_back(i, v); });
	size_t n = old.size(), m = to.size();
	size_t pre = 0;
	while (pre < n && pre < m && valuesEqual(old[pre].second, to[pre]))
		++pre;
	size_t suf = 0;
	while (suf < n - pre && suf < m - pre && valuesEqual(old[n - 1 - suf].second, to[m - 1 - suf]))
		++suf;
	size_t on = n - pre - suf, tn = m - pre - suf;
	// match[i] = position in `to` matched with old[pre + i], or npos.
	constexpr size_t npos = size_t(-1);
	std::vector<size_t> match(on, npos);
	if (on > 0 && tn > 0 && on * tn <= 4000000)
	{
		std::vector<uint32_t> lcs((on + 1) * (tn + 1), 0);
		auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (tn + 1) + j]; };
		for (size_t i = on; i-- > 0;)
			for (size_t j = tn; j-- > 0;)
				at(i, j) = valuesEqual(old[pre + i].second, to[pre + j]) ? at(i + 1, j + 1) + 1
				                                                         : std::max(at(i + 1, j), at(i, j + 1));
		for (size_t i = 0, j = 0; i < on && j < tn;)
		{
			if (valuesEqual(old[pre + i].second, to[pre + j]))
				match[i++] = pre + j++;
			else if (at(i + 1, j) >= at(i, j + 1))
				++i;
			else
				++j;
		}
	}
	ListDelta<T> d;
	Index prev = pre > 0 ? old[pre - 1].first : Index::zero();
	size_t j = pre; // next position in `to`
	auto flushGap = [&](size_t old_begin, size_t old_end, size_t to_end)
	{
		size_t k = old_begin;
		for (; k < old_end && j < to_end; ++k, ++j)
		{
			d.insert_or_assign(old[k].first, to[j]);
			prev = old[k].first;
		}
		for (; k < old_end; ++k)
			d.insert_or_assign(old[k].first, std::nullopt);
		for (; j < to_end; ++j)
		{
			prev = Index::after(prev);
			d.insert_or_assign(prev, to[j]);
		}
	};
	size_t gap_begin = pre;
	for (size_t i = 0; i < on; ++i)
	{
		if (match[i] == npos)
			continue;
		flushGap(gap_begin, pre + i, match[i]);
		prev = old[pre + i].first;
		j = match[i] + 1;
		gap_begin = pre + i + 1;
	}
	flushGap(gap_begin, pre + on, pre + tn);
	return d;
}

/// Read-only adaptive list handle.
template <typename T>
class alist
{
public:
	using ValueType = T;
	using Trace = ListTrace<T>;

	alist() = default;
	explicit alist(Ref<History<Trace>> history) : history_(std::move(history)) {}

	/// A new independent reader: its first pull returns the whole content, later pulls the changes since.
	ListReader<T> getReader() const { return makeRef<HistoryReader<Trace>>(history_); }
	/// The content as an adaptive value (O(1) snapshots).
	aval<IndexList<T>> content() const { return aval<IndexList<T>>(Ref<AValNode<IndexList<T>>>(history_)); }
	/// Top-level read of the content (O(1) snapshot after bringing the list up to date).
	IndexList<T> force() const { return history_->getValue(Token{}); }
	const Ref<History<Trace>>& history() const { return history_; }
	friend bool operator==(const alist& a, const alist& b) { return a.history_ == b.history_; }

protected:
	Ref<History<Trace>> history_;
};

/// Changeable list. Positions are 0-based; mutations outside a Transaction run their own.
template <typename T>
class clist : public alist<T>
{
public:
	clist() : alist<T>(makeRef<History<ListTrace<T>>>(IndexList<T>())) {}
	explicit clist(const std::vector<T>& items) : clist() { updateTo(items); }
	clist(std::initializer_list<T> items) : clist(std::vector<T>(items)) {}

	const IndexList<T>& state() const { return this->history_->state(); }
	size_t count() const { return state().size(); }
	const T& at(size_t pos) const { return state().at(pos).second; }
	Index indexAt(size_t pos) const { return state().at(pos).first; }

	/// Appends after the last element; returns the new index.
	Index append(T v) const
	{
		Index i = state().empty() ? Index::after(Index::zero()) : Index::after(state().at(state().size() - 1).first);
		perform(i, std::move(v));
		return i;
	}
	/// Inserts before the first element.
	Index prepend(T v) const
	{
		Index i = state().empty() ? Index::after(Index::zero()) : Index::before(state().at(0).first);
		perform(i, std::move(v));
		return i;
	}
	/// Inserts so that the value ends up at position `pos` (0 ≤ pos ≤ count()).
	Index insertAt(size_t pos, T v) const
	{
		QUOKKA_ASSERT(pos <= count(), "clist::insertAt out of range");
		Index i = pos == 0 ? (state().empty() ? Index::after(Index::zero()) : Index::before(state().at(0).first))
		                   : Index::after(state().at(pos - 1).first);
		perform(i, std::move(v));
		return i;
	}
	Index insertAfter(const Index& at, T v) const
	{
		Index i = Index::after(at);
		perform(i, std::move(v));
		return i;
	}
	Index insertBefore(const Index& at, T v) const
	{
		Index i = Index::before(at);
		perform(i, std::move(v));
		return i;
	}
	/// Replaces the value at position `pos`.
	void setAt(size_t pos, T v) const { perform(indexAt(pos), std::move(v)); }
	/// Replaces (or inserts) the value at `index`.
	void set(const Index& index, T v) const { perform(index, std::move(v)); }
	void removeAt(size_t pos) const { remove(indexAt(pos)); }
	bool remove(const Index& index) const { return this->history_->perform(ListDelta<T>{{index, std::nullopt}}); }
	void clear() const
	{
		ListDelta<T> d;
		state().forEach([&](const Index& i, const T&) { d.emplace_hint(d.end(), i, std::nullopt); });
		this->history_->perform(d);
	}
	/// Makes the list equal to `items`, keeping the indices of unchanged elements. Returns whether anything changed.
	bool updateTo(const std::vector<T>& items) const
	{
		return this->history_->perform(computeListDelta(state(), items));
	}

private:
	void perform(const Index& i, T v) const { this->history_->perform(ListDelta<T>{{i, std::move(v)}}); }
};

/// A constant list.
template <typename T>
alist<T> alistOf(const std::vector<T>& items)
{
	IndexList<T> s;
	Index prev = Index::zero();
	for (const T& v : items)
	{
		prev = Index::after(prev);
		s.set(prev, v);
	}
	return alist<T>(makeRef<History<ListTrace<T>>>(std::move(s)));
}

namespace detail
{

template <typename T>
alist<T> derivedList(Ref<OpReader<ListTrace<T>>> reader)
{
	return alist<T>(makeRef<History<ListTrace<T>>>(std::move(reader)));
}

/// Output indices for sorted keys: a new key gets a fresh Index right after its predecessor's.
template <typename Key>
class IndexMapping
{
public:
	/// Index of `key`, created when absent. `created` tells which.
	Index get(const Key& key)
	{
		auto it = map_.lower_bound(key);
		if (it != map_.end() && !(key < it->first))
			return it->second;
		Index lo = it == map_.begin() ? Index::zero() : std::prev(it)->second;
		Index i = Index::after(lo);
		map_.emplace_hint(it, key, i);
		return i;
	}
	std::optional<Index> remove(const Key& key)
	{
		auto it = map_.find(key);
		if (it == map_.end())
			return std::nullopt;
		Index i = it->second;
		map_.erase(it);
		return i;
	}
	std::map<Key, Index>& entries() { return map_; }

private:
	std::map<Key, Index> map_;
};

/// collect/collecti: one inner reader per outer index (f(outer index, value)); output index = mapping of (outer index,
/// inner index).
template <typename T, typename U, typename F>
class ListCollectReader final : public OpReader<ListTrace<U>>
{
public:
	ListCollectReader(ListReader<T> outer, F f)
	    : OpReader<ListTrace<U>>(AdaptiveObject::kExplicitInputs | AdaptiveObject::kWantsInputChanged),
	      outer_(std::move(outer)), f_(std::move(f))
	{
	}

protected:
	void inputChanged(AdaptiveObject* input) override
	{
		if (input != outer_.get())
			dirty_.insert(input);
	}
	ListDelta<U> compute(Token t) override
	{
		std::unordered_set<AdaptiveObject*> dirty;
		dirty.swap(dirty_);
		ListDelta<U> out;
		for (const auto& [i, op] : outer_->getChanges(t))
		{
			if (auto it = inner_.find(i); it != inner_.end())
			{
				// Replaced or removed: every element of the old inner list goes.
				auto& m = mapping_.entries();
				for (auto e = m.lower_bound({i, Index::zero()}); e != m.end() && e->first.first == i;)
				{
					out.insert_or_assign(e->second, std::nullopt);
					e = m.erase(e);
				}
				owner_.erase(it->second.get());
				dirty.erase(it->second.get());
				this->removeInput(it->second.get());
				inner_.erase(it);
			}
			if (op)
			{
				ListReader<U> r = alist<U>(f_(i, *op)).getReader();
				owner_.emplace(r.get(), i);
				apply(i, r->getChanges(t), out);
				inner_.insert_or_assign(i, std::move(r));
			}
		}
		for (AdaptiveObject* d : dirty)
		{
			auto it = owner_.find(d);
			if (it != owner_.end())
			{
				Index i = it->second;
				apply(i, inner_.at(i)->getChanges(t), out);
			}
		}
		return out;
	}

private:
	void apply(const Index& outer, const ListDelta<U>& d, ListDelta<U>& out)
	{
		for (const auto& [j, op] : d)
		{
			if (op)
				out.insert_or_assign(mapping_.get({outer, j}), *op);
			else if (auto o = mapping_.remove({outer, j}))
				out.insert_or_assign(*o, std::nullopt);
		}
	}

	ListReader<T> outer_;
	F f_;
	std::map<Index, ListReader<U>> inner_;
	std::unordered_map<AdaptiveObject*, Index> owner_;
	std::unordered_set<AdaptiveObject*> dirty_;
	IndexMapping<std::pair<Index, Index>> mapping_;
};

/// sortBy: output index = mapping of (sort key, input index): stable for equal keys.
template <typename T, typename K, typename F>
class ListSortReader final : public OpReader<ListTrace<T>>
{
public:
	ListSortReader(ListReader<T> input, F f) : input_(std::move(input)), f_(std::move(f)) {}

protected:
	ListDelta<T> compute(Token t) override
	{
		ListDelta<T> out;
		for (const auto& [i, op] : input_->getChanges(t))
		{
			auto it = keys_.find(i);
			std::optional<K> nk = op ? std::optional<K>(f_(*op)) : std::nullopt;
			if (it != keys_.end())
			{
				if (nk && !(*nk < it->second) && !(it->second < *nk))
				{
					out.insert_or_assign(mapping_.get({*nk, i}), *op); // same place, new value
					continue;
				}
				if (auto o = mapping_.remove({it->second, i}))
					out.insert_or_assign(*o, std::nullopt);
				keys_.erase(it);
			}
			if (nk)
			{
				out.insert_or_assign(mapping_.get({*nk, i}), *op);
				keys_.emplace(i, std::move(*nk));
			}
		}
		return out;
	}

private:
	ListReader<T> input_;
	F f_;
	std::map<Index, K> keys_;
	IndexMapping<std::pair<K, Index>> mapping_;
};

/// aset → alist sorted by f(x) (ties by the element itself).
template <typename T, typename K, typename F>
class SetSortReader final : public OpReader<ListTrace<T>>
{
public:
	SetSortReader(SetReader<T> input, F f) : input_(std::move(input)), f_(std::move(f)) {}

protected:
	ListDelta<T> compute(Token t) override
	{
		ListDelta<T> out;
		for (const auto& [x, c] : input_->getChanges(t))
		{
			if (c > 0)
			{
				K k = f_(x);
				out.insert_or_assign(mapping_.get({k, x}), x);
				keys_.insert_or_assign(x, std::move(k));
			}
			else if (auto it = keys_.find(x); it != keys_.end())
			{
				if (auto o = mapping_.remove({it->second, x}))
					out.insert_or_assign(*o, std::nullopt);
				keys_.erase(it);
			}
		}
		return out;
	}

private:
	SetReader<T> input_;
	F f_;
	std::map<T, K> keys_;
	IndexMapping<std::pair<K, T>> mapping_;
};

/// sub/skip/take with adaptive bounds: the window [offset, offset + count) of positions. Emits the delta entries
/// inside the window plus the elements crossing its borders (found by walking the key ranges between old and new
/// borders), so its cost follows the change, not the list length.
template <typename T>
class ListSubReader final : public OpReader<ListTrace<T>>
{
public:
	ListSubReader(ListReader<T> input, aval<int64_t> offset, aval<int64_t> count)
	    : input_(std::move(input)), offset_(std::move(offset)), count_(std::move(count))
	{
	}

protected:
	ListDelta<T> compute(Token t) override
	{
		IndexList<T> s0 = input_->state();
		ListDelta<T> d = input_->getChanges(t);
		const IndexList<T>& s1 = input_->state();
		Window w0 = window_;
		window_ = windowOf(s1, offset_.getValue(t), count_.getValue(t));
		ListDelta<T> out;
		auto visit = [&](const Index& x)
		{
			bool in_old = w0.contains(x) && s0.contains(x);
			const T* nv = s1.find(x);
			bool in_new = window_.contains(x) && nv;
			if (in_new && (!in_old || d.count(x)))
				out.insert_or_assign(x, *nv);
			else if (!in_new && in_old)
				out.insert_or_assign(x, std::nullopt);
		};
		for (const auto& e : d)
			visit(e.first);
		// Border crossings: elements between old and new borders, in either state.
		for (const IndexList<T>* s : std::array<const IndexList<T>*, 2>{&s0, &s1})
		{
			walkBetween(*s, w0.lo, window_.lo, visit);
			walkBetween(*s, w0.hi, window_.hi, visit);
		}
		return out;
	}

private:
	struct Window
	{
		std::optional<Index> lo, hi; ///< first and last index inside (both set, or neither)
		bool contains(const Index& x) const { return lo && !(x < *lo) && !(*hi < x); }
	};
	static Window windowOf(const IndexList<T>& s, int64_t offset, int64_t count)
	{
		int64_t n = int64_t(s.size());
		int64_t a = std::clamp<int64_t>(offset, 0, n);
		int64_t b = std::clamp<int64_t>(count < 0 ? n : a + count, a, n);
		if (a >= b)
			return Window{};
		return Window{s.at(size_t(a)).first, s.at(size_t(b - 1)).first};
	}
	/// Visits the entries of `s` whose key lies between borders p and q (inclusive, either order; a missing border
	/// spans to the list end on its side).
	template <typename V>
	static void walkBetween(const IndexList<T>& s, const std::optional<Index>& p, const std::optional<Index>& q,
	                        V& visit)
	{
		if (!p && !q)
			return;
		size_t a, b;
		if (p && q)
		{
			const Index& lo = *p < *q ? *p : *q;
			const Index& hi = *p < *q ? *q : *p;
			a = s.rank(lo);
			b = s.rank(hi) + 1;
		}
		else
		{
			// One window is empty: everything the other window covered may have crossed.
			const Index& x = p ? *p : *q;
			a = 0;
			b = s.size();
			(void)x;
		}
		for (size_t i = a; i < std::min(b, s.size()); ++i)
			visit(s.at(i).first);
	}

	ListReader<T> input_;
	aval<int64_t> offset_, count_;
	Window window_;
};

/// init: a list of n elements f(0..n-1); a change of n appends or removes at the end.
template <typename T, typename F>
class ListInitReader final : public OpReader<ListTrace<T>>
{
public:
	ListInitReader(aval<int64_t> n, F f) : n_(std::move(n)), f_(std::move(f)) {}

protected:
	ListDelta<T> compute(Token t) override
	{
		ListDelta<T> out;
		auto n = size_t(std::max<int64_t>(0, n_.getValue(t)));
		while (indices_.size() > n)
		{
			out.insert_or_assign(indices_.back(), std::nullopt);
			indices_.pop_back();
		}
		while (indices_.size() < n)
		{
			Index i = Index::after(indices_.empty() ? Index::zero() : indices_.back());
			out.insert_or_assign(i, f_(int64_t(indices_.size())));
			indices_.push_back(i);
		}
		return out;
	}

private:
	aval<int64_t> n_;
	F f_;
	std::vector<Index> indices_;
};

/// bind (aval → alist): on an outer change, Remove every old element + the new inner's first pull.
template <typename A, typename U, typename F>
class ListBindReader final : public OpReader<ListTrace<U>>
{
public:
	ListBindReader(aval<A> outer, F f) : outer_(std::move(outer)), f_(std::move(f)) {}

protected:
	ListDelta<U> compute(Token t) override
	{
		ListDelta<U> out;
		const A& v = outer_.getValue(t);
		if (!inner_ || !last_ || !valuesEqual(*last_, v))
		{
			if (inner_)
				inner_->state().forEach([&](const Index& i, const U&) { out.insert_or_assign(i, std::nullopt); });
			last_ = v;
			inner_ = alist<U>(f_(v)).getReader();
		}
		ListTrace<U>::combine(out, inner_->getChanges(t));
		return out;
	}

private:
	aval<A> outer_;
	F f_;
	std::optional<A> last_;
	ListReader<U> inner_;
};

} // namespace detail

/// Dynamic list: f(value of a) is the list to follow; switching costs the sizes of the old and new lists.
template <typename A, typename F>
auto bind(const aval<A>& a, F f) -> alist<typename std::invoke_result_t<F&, const A&>::ValueType>
requires std::is_convertible_v<std::invoke_result_t<F&, const A&>,
                               alist<typename std::invoke_result_t<F&, const A&>::ValueType>>
{
	using U = typename std::invoke_result_t<F&, const A&>::ValueType;
	return detail::derivedList<U>(makeRef<detail::ListBindReader<A, U, F>>(a, std::move(f)));
}

/// Keeps the elements for which f(value) returns a value, mapped to it; indices are kept.
template <typename T, typename F>
auto choose(const alist<T>& l, F f) -> alist<typename std::invoke_result_t<F&, const T&>::value_type>
{
	using U = typename std::invoke_result_t<F&, const T&>::value_type;
	auto g = [f = std::move(f)](const Index&, const T& v) mutable { return f(v); };
	return detail::derivedList<U>(
	    makeRef<detail::MapChooseReader<Index, T, U, decltype(g)>>(l.getReader(), std::move(g)));
}

/// Maps every element; indices are kept.
template <typename T, typename F>
auto map(const alist<T>& l, F f) -> alist<std::decay_t<std::invoke_result_t<F&, const T&>>>
{
	using U = std::decay_t<std::invoke_result_t<F&, const T&>>;
	return choose(l, [f = std::move(f)](const T& v) mutable { return std::optional<U>(f(v)); });
}

/// Keeps the elements satisfying p; indices are kept.
template <typename T, typename P>
alist<T> filter(const alist<T>& l, P p)
{
	return choose(l, [p = std::move(p)](const T& v) mutable { return p(v) ? std::optional<T>(v) : std::nullopt; });
}

/// Adaptive choose by (Index, value): f returns aval<optional<U>>.
template <typename T, typename F>
auto chooseAi(const alist<T>& l, F f)
    -> alist<typename std::decay_t<std::invoke_result_t<F&, const Index&, const T&>>::ValueType::value_type>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const Index&, const T&>>::ValueType::value_type;
	auto g = [f = std::move(f)](const Index& i, const T& v) mutable { return aval<std::optional<U>>(f(i, v)); };
	return detail::derivedList<U>(
	    makeRef<detail::MapChooseAReader<Index, T, U, decltype(g)>>(l.getReader(), std::move(g)));
}

/// Adaptive choose: f(value) returns aval<optional<U>>.
template <typename T, typename F>
auto chooseA(const alist<T>& l, F f)
{
	return chooseAi(l, [f = std::move(f)](const Index&, const T& v) mutable { return f(v); });
}

/// Adaptive map by (Index, value).
template <typename T, typename F>
auto mapAi(const alist<T>& l, F f)
    -> alist<typename std::decay_t<std::invoke_result_t<F&, const Index&, const T&>>::ValueType>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const Index&, const T&>>::ValueType;
	return chooseAi(l, [f = std::move(f)](const Index& i, const T& v) mutable
	                { return adaptive::map(aval<U>(f(i, v)), [](const U& u) { return std::optional<U>(u); }); });
}

/// Adaptive map: f(value) returns aval<U>.
template <typename T, typename F>
auto mapA(const alist<T>& l, F f)
{
	return mapAi(l, [f = std::move(f)](const Index&, const T& v) mutable { return f(v); });
}

/// Adaptive filter by (Index, value).
template <typename T, typename P>
alist<T> filterAi(const alist<T>& l, P p)
{
	return chooseAi(
	    l, [p = std::move(p)](const Index& i, const T& v) mutable
	    { return adaptive::map(aval<bool>(p(i, v)), [v](bool b) { return b ? std::optional<T>(v) : std::nullopt; }); });
}

/// Adaptive filter: p(value) returns aval<bool>.
template <typename T, typename P>
alist<T> filterA(const alist<T>& l, P p)
{
	return filterAi(l, [p = std::move(p)](const Index&, const T& v) mutable { return p(v); });
}

/// Concatenation of the lists f(i, x) in order of the elements' indices i (FDA's AList.collecti). f runs once per
/// element added or replaced; a change inside one inner list costs that change. The index passed is the element's
/// Index in `l` (comparable with the indices of l's content, e.g. to look neighbours up).
template <typename T, typename F>
auto collecti(const alist<T>& l, F f)
    -> alist<typename std::decay_t<std::invoke_result_t<F&, const Index&, const T&>>::ValueType>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const Index&, const T&>>::ValueType;
	return detail::derivedList<U>(makeRef<detail::ListCollectReader<T, U, F>>(l.getReader(), std::move(f)));
}

/// Concatenation of the lists f(x) in order of x.
template <typename T, typename F>
auto collect(const alist<T>& l, F f) -> alist<typename std::decay_t<std::invoke_result_t<F&, const T&>>::ValueType>
{
	return collecti(l, [f = std::move(f)](const Index&, const T& v) mutable { return f(v); });
}

/// Stable sort by f(value) (equal keys keep list order).
template <typename T, typename F>
alist<T> sortBy(const alist<T>& l, F f)
{
	using K = std::decay_t<std::invoke_result_t<F&, const T&>>;
	return detail::derivedList<T>(makeRef<detail::ListSortReader<T, K, F>>(l.getReader(), std::move(f)));
}

/// Sorts a set into a list by f(x), ties broken by the element (FDA: ASet.sortBy).
template <typename T, typename F>
alist<T> sortBy(const aset<T>& s, F f)
{
	using K = std::decay_t<std::invoke_result_t<F&, const T&>>;
	return detail::derivedList<T>(makeRef<detail::SetSortReader<T, K, F>>(s.getReader(), std::move(f)));
}

/// The elements at positions [offset, offset + count) (count < 0: to the end), with adaptive bounds.
template <typename T>
alist<T> subA(const alist<T>& l, const aval<int64_t>& offset, const aval<int64_t>& count)
{
	return detail::derivedList<T>(makeRef<detail::ListSubReader<T>>(l.getReader(), offset, count));
}
/// The elements at positions [offset, offset + count) (count < 0: to the end).
template <typename T>
alist<T> sub(const alist<T>& l, int64_t offset, int64_t count)
{
	return subA(l, constant(offset), constant(count));
}
/// All but the first n elements, with adaptive n.
template <typename T>
alist<T> skipA(const alist<T>& l, const aval<int64_t>& n)
{
	return subA(l, n, constant(int64_t(-1)));
}
/// All but the first n elements.
template <typename T>
alist<T> skip(const alist<T>& l, int64_t n)
{
	return sub(l, n, -1);
}
/// The first n elements.
template <typename T>
alist<T> take(const alist<T>& l, int64_t n)
{
	return sub(l, 0, n);
}

/// n elements f(0), …, f(n − 1) with adaptive n.
template <typename F>
auto init(const aval<int64_t>& n, F f) -> alist<std::decay_t<std::invoke_result_t<F&, int64_t>>>
{
	using T = std::decay_t<std::invoke_result_t<F&, int64_t>>;
	return detail::derivedList<T>(makeRef<detail::ListInitReader<T, F>>(n, std::move(f)));
}

/// The elements as a set; duplicates collapse (refcounted).
template <typename T>
aset<T> toASet(const alist<T>& l)
{
	auto f = [](const Index&, const T& v) { return v; };
	return detail::derivedSet<T>(makeRef<detail::MapToSetReader<Index, T, T, decltype(f)>>(l.getReader(), f));
}

/// Reader callback for lists: f(stateBefore, delta). See subscribeReader.
template <typename T, typename F>
Subscription subscribe(const alist<T>& l, F f)
{
	return subscribeReader<ListTrace<T>>(l.getReader(), std::move(f));
}

} // namespace quokka::adaptive
