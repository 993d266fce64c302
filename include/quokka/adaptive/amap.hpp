// quokka/adaptive/amap.hpp — adaptive maps: amap<K, V> and the changeable cmap<K, V>.
//
// A map delta holds one operation per key, Set(v) or Remove (std::nullopt); combining keeps the later operation per
// key, and applying drops a Set of an equal value and a Remove of an absent key. Operators
// are readers costing O(|delta|) per pull (mapA/filterA/chooseA add the marked inner values). content()/force() are
// O(1) snapshots of a persistent ordered map. Keys need operator<, values operator==. Threading: owner thread only
// (core.hpp).
#pragma once

#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <quokka/adaptive/aset.hpp>

namespace quokka::adaptive
{

/// Delta of an amap: key → Set(value) or Remove (nullopt).
template <typename K, typename V>
using MapDelta = std::map<K, std::optional<V>>;

/// Traceable<PMap, MapDelta>.
template <typename K, typename V>
struct MapTrace
{
	using State = PMap<K, V>;
	using Delta = MapDelta<K, V>;

	static Delta apply(State& s, const Delta& d)
	{
		Delta eff;
		for (const auto& [k, op] : d)
		{
			if (op)
			{
				const V* old = s.find(k);
				if (old && valuesEqual(*old, *op))
					continue;
				s.set(k, *op);
				eff.emplace(k, op);
			}
			else if (s.erase(k))
				eff.emplace(k, std::nullopt);
		}
		return eff;
	}
	static void combine(Delta& a, const Delta& b)
	{
		for (const auto& [k, op] : b)
			a.insert_or_assign(k, op);
	}
	static Delta initial(const State& s)
	{
		Delta d;
		s.forEach([&](const K& k, const V& v) { d.emplace_hint(d.end(), k, v); });
		return d;
	}
	static bool isEmpty(const Delta& d) { return d.empty(); }
};

/// The delta that turns map `from` into map `to`, keyed like them: Set(value) for every key that is new in `to` or
/// whose value differs (operator==), Remove for every key only `from` has; nothing for equal entries. So
/// MapTrace::apply(from, computeDelta(from, to)) leaves `to`, computeDelta(m, m) is empty, and deltas of successive
/// versions combine (later wins) into the delta across them. Shares PMap::diff's cost: about O(d log n) between a
/// version and one derived from it by d changes (shared subtrees are skipped), O(n + m) between unrelated maps.
/// For lists (IndexList = PMap<Index, T>) this is the delta keyed by index.
template <typename K, typename V>
MapDelta<K, V> computeDelta(const PMap<K, V>& from, const PMap<K, V>& to)
{
	MapDelta<K, V> d;
	PMap<K, V>::diff(
	    from, to,
	    [&d](const K& k, const V*, const V* now)
	    { d.emplace_hint(d.end(), k, now ? std::optional<V>(*now) : std::optional<V>()); },
	    [](const V& a, const V& b) { return valuesEqual(a, b); });
	return d;
}

template <typename K, typename V>
using MapReader = Ref<HistoryReader<MapTrace<K, V>>>;

/// Read-only adaptive map handle.
template <typename K, typename V>
class amap
{
public:
	using KeyType = K;
	using MappedType = V;
	using Trace = MapTrace<K, V>;

	amap() = default;
	explicit amap(Ref<History<Trace>> history) : history_(std::move(history)) {}

	/// A new independent reader: its first pull returns the whole content, later pulls the changes since.
	MapReader<K, V> getReader() const { return makeRef<HistoryReader<Trace>>(history_); }
	/// The content as an adaptive value (O(1) snapshots).
	aval<PMap<K, V>> content() const { return aval<PMap<K, V>>(Ref<AValNode<PMap<K, V>>>(history_)); }
	/// Top-level read of the content (O(1) snapshot after bringing the map up to date).
	PMap<K, V> force() const { return history_->getValue(Token{}); }
	const Ref<History<Trace>>& history() const { return history_; }
	friend bool operator==(const amap& a, const amap& b) { return a.history_ == b.history_; }

protected:
	Ref<History<Trace>> history_;
};

/// Changeable map. Mutations outside a Transaction run their own.
template <typename K, typename V>
class cmap : public amap<K, V>
{
public:
	cmap() : amap<K, V>(makeRef<History<MapTrace<K, V>>>(PMap<K, V>())) {}
	explicit cmap(const std::vector<std::pair<K, V>>& items) : cmap()
	{
		MapDelta<K, V> d;
		for (auto& [k, v] : items)
			d.insert_or_assign(k, v);
		this->history_->perform(d);
	}

	/// Sets key to value (insert or replace); returns whether anything changed.
	bool set(const K& key, V value) const { return this->history_->perform(MapDelta<K, V>{{key, std::move(value)}}); }
	/// Removes `key`; returns whether it was present.
	bool remove(const K& key) const { return this->history_->perform(MapDelta<K, V>{{key, std::nullopt}}); }
	/// Current value of `key` (no evaluation), or nullptr.
	const V* tryFind(const K& key) const { return this->history_->state().find(key); }
	size_t count() const { return this->history_->state().size(); }
	/// Removes every key, as one delta.
	void clear() const
	{
		MapDelta<K, V> d;
		this->history_->state().forEach([&](const K& k, const V&) { d.emplace_hint(d.end(), k, std::nullopt); });
		this->history_->perform(d);
	}
	/// Replaces the content; equal values produce no delta. Returns whether anything changed.
	bool updateTo(const std::map<K, V>& target) const
	{
		MapDelta<K, V> d;
		this->history_->state().forEach(
		    [&](const K& k, const V&)
		    {
			    if (!target.count(k))
				    d.emplace(k, std::nullopt);
		    });
		for (auto& [k, v] : target)
			d.insert_or_assign(k, v);
		return this->history_->perform(d);
	}
};

/// A constant map.
template <typename K, typename V>
amap<K, V> amapOf(const std::vector<std::pair<K, V>>& items)
{
	PMap<K, V> s;
	for (auto& [k, v] : items)
		s.set(k, v);
	return amap<K, V>(makeRef<History<MapTrace<K, V>>>(std::move(s)));
}

namespace detail
{

template <typename K, typename V>
amap<K, V> derivedMap(Ref<OpReader<MapTrace<K, V>>> reader)
{
	return amap<K, V>(makeRef<History<MapTrace<K, V>>>(std::move(reader)));
}

/// choose/map/filter per key: no cache needed (a Remove needs no old value).
template <typename K, typename V, typename U, typename F>
class MapChooseReader final : public OpReader<MapTrace<K, U>>
{
public:
	MapChooseReader(MapReader<K, V> input, F f) : input_(std::move(input)), f_(std::move(f)) {}

protected:
	MapDelta<K, U> compute(Token t) override
	{
		MapDelta<K, U> out;
		for (const auto& [k, op] : input_->getChanges(t))
			out.emplace_hint(out.end(), k, op ? f_(k, *op) : std::nullopt);
		return out;
	}

private:
	MapReader<K, V> input_;
	F f_;
};

/// mapUse per key: the previous result of a key is disposed when the key is removed or set again; after the disposer
/// ran, every live result is disposed and the map is empty.
template <typename K, typename V, typename U, typename F, typename D>
class MapMapUseReader final : public OpReader<MapTrace<K, U>>
{
public:
	struct Control
	{
		MapMapUseReader* reader = nullptr;
		bool disposed = false;
	};
	MapMapUseReader(MapReader<K, V> input, F f, D dispose, std::shared_ptr<Control> control)
	    : input_(std::move(input)), f_(std::move(f)), dispose_(std::move(dispose)), control_(std::move(control))
	{
		control_->reader = this;
	}
	~MapMapUseReader() override
	{
		control_->reader = nullptr;
		for (auto& [k, u] : live_)
			dispose_(u);
	}

protected:
	MapDelta<K, U> compute(Token t) override
	{
		MapDelta<K, U> out;
		MapDelta<K, V> d = input_->getChanges(t);
		if (control_->disposed)
		{
			for (auto& [k, u] : live_)
			{
				out.insert_or_assign(k, std::nullopt);
				dispose_(u);
			}
			live_.clear();
			return out;
		}
		for (const auto& [k, op] : d)
		{
			if (auto it = live_.find(k); it != live_.end())
			{
				dispose_(it->second);
				live_.erase(it);
			}
			if (op)
			{
				U u = f_(k, *op);
				out.insert_or_assign(k, u);
				live_.emplace(k, std::move(u));
			}
			else
				out.insert_or_assign(k, std::nullopt);
		}
		return out;
	}

private:
	MapReader<K, V> input_;
	F f_;
	D dispose_;
	std::shared_ptr<Control> control_;
	std::map<K, U> live_;
};

/// union, right-biased: the value of a key is b's when b has it, else a's.
template <typename K, typename V>
class MapUnionReader final : public OpReader<MapTrace<K, V>>
{
public:
	MapUnionReader(MapReader<K, V> a, MapReader<K, V> b) : a_(std::move(a)), b_(std::move(b)) {}

protected:
	MapDelta<K, V> compute(Token t) override
	{
		MapDelta<K, V> da = a_->getChanges(t);
		MapDelta<K, V> db = b_->getChanges(t);
		MapDelta<K, V> out;
		auto visit = [&](const K& k)
		{
			if (const V* vb = b_->state().find(k))
				out.insert_or_assign(k, *vb);
			else if (const V* va = a_->state().find(k))
				out.insert_or_assign(k, *va);
			else
				out.insert_or_assign(k, std::nullopt);
		};
		for (const auto& e : da)
			visit(e.first);
		for (const auto& e : db)
			visit(e.first);
		return out;
	}

private:
	MapReader<K, V> a_, b_;
};

/// chooseA/mapA/filterA per key: one cell per key; marked cells are re-read.
template <typename K, typename V, typename U, typename F>
class MapChooseAReader final : public OpReader<MapTrace<K, U>>
{
public:
	MapChooseAReader(MapReader<K, V> input, F f)
	    : OpReader<MapTrace<K, U>>(AdaptiveObject::kExplicitInputs | AdaptiveObject::kWantsInputChanged),
	      input_(std::move(input)), f_(std::move(f))
	{
	}

protected:
	void inputChanged(AdaptiveObject* input) override
	{
		if (input != input_.get())
			dirty_.insert(input);
	}
	MapDelta<K, U> compute(Token t) override
	{
		std::unordered_set<AdaptiveObject*> dirty;
		dirty.swap(dirty_);
		MapDelta<K, U> out;
		for (const auto& [k, op] : input_->getChanges(t))
		{
			dropCell(k, dirty);
			if (!op)
			{
				out.insert_or_assign(k, std::nullopt);
				continue;
			}
			aval<std::optional<U>> cell = f_(k, *op);
			out.insert_or_assign(k, cell.getValue(t));
			users_[cell.node().get()].push_back(k);
			cells_.insert_or_assign(k, std::move(cell));
		}
		for (AdaptiveObject* d : dirty)
		{
			auto it = users_.find(d);
			if (it == users_.end())
				continue;
			for (const K& k : it->second)
				out.insert_or_assign(k, cells_.at(k).getValue(t));
		}
		return out;
	}

private:
	void dropCell(const K& k, std::unordered_set<AdaptiveObject*>& dirty)
	{
		auto it = cells_.find(k);
		if (it == cells_.end())
			return;
		AdaptiveObject* cell = it->second.node().get();
		auto& users = users_[cell];
		std::erase(users, k);
		if (users.empty())
		{
			users_.erase(cell);
			dirty.erase(cell);
			this->removeInput(cell);
		}
		cells_.erase(it);
	}

	MapReader<K, V> input_;
	F f_;
	std::map<K, aval<std::optional<U>>> cells_;
	std::unordered_map<AdaptiveObject*, std::vector<K>> users_;
	std::unordered_set<AdaptiveObject*> dirty_;
};

/// keys / toASet: set deltas derived from map deltas and the reader's state before the pull.
template <typename K, typename V, typename T, typename F>
class MapToSetReader final : public OpReader<SetTrace<T>>
{
public:
	MapToSetReader(MapReader<K, V> input, F f) : input_(std::move(input)), f_(std::move(f)) {}

protected:
	SetDelta<T> compute(Token t) override
	{
		PMap<K, V> before = input_->state(); // O(1) snapshot
		SetDelta<T> out;
		for (const auto& [k, op] : input_->getChanges(t))
		{
			if (const V* old = before.find(k))
				addCount(out, f_(k, *old), -1);
			if (op)
				addCount(out, f_(k, *op), 1);
		}
		return out;
	}

private:
	MapReader<K, V> input_;
	F f_;
};

} // namespace detail

/// Keeps the keys for which f(key, value) returns a value, mapped to it.
template <typename K, typename V, typename F>
auto choose(const amap<K, V>& m, F f) -> amap<K, typename std::invoke_result_t<F&, const K&, const V&>::value_type>
{
	using U = typename std::invoke_result_t<F&, const K&, const V&>::value_type;
	return detail::derivedMap<K, U>(makeRef<detail::MapChooseReader<K, V, U, F>>(m.getReader(), std::move(f)));
}

/// Maps every value: f(key, value).
template <typename K, typename V, typename F>
auto map(const amap<K, V>& m, F f) -> amap<K, std::decay_t<std::invoke_result_t<F&, const K&, const V&>>>
{
	using U = std::decay_t<std::invoke_result_t<F&, const K&, const V&>>;
	return choose(m, [f = std::move(f)](const K& k, const V& v) mutable { return std::optional<U>(f(k, v)); });
}

/// Keeps the entries satisfying p(key, value).
template <typename K, typename V, typename P>
amap<K, V> filter(const amap<K, V>& m, P p)
{
	return choose(m, [p = std::move(p)](const K& k, const V& v) mutable
	              { return p(k, v) ? std::optional<V>(v) : std::nullopt; });
}

/// Maps every value to a resource f(key, value), released with dispose(u) when the key goes or changes.
/// The Subscription disposes every live result and empties the map; disposing twice is harmless.
template <typename K, typename V, typename F, typename D>
auto mapUse(const amap<K, V>& m, F f, D dispose)
    -> std::pair<Subscription, amap<K, std::decay_t<std::invoke_result_t<F&, const K&, const V&>>>>
{
	using U = std::decay_t<std::invoke_result_t<F&, const K&, const V&>>;
	using Reader = detail::MapMapUseReader<K, V, U, F, D>;
	auto control = std::make_shared<typename Reader::Control>();
	auto reader = makeRef<Reader>(m.getReader(), std::move(f), std::move(dispose), control);
	amap<K, U> result = detail::derivedMap<K, U>(reader);
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

/// Right-biased union: where both have a key, b's value wins (FDA: AMap.union).
template <typename K, typename V>
amap<K, V> unionOf(const amap<K, V>& a, const amap<K, V>& b)
{
	if (a == b)
		return a;
	return detail::derivedMap<K, V>(makeRef<detail::MapUnionReader<K, V>>(a.getReader(), b.getReader()));
}

/// Adaptive choose: f(key, value) is an aval<optional<U>>.
template <typename K, typename V, typename F>
auto chooseA(const amap<K, V>& m, F f)
    -> amap<K, typename std::decay_t<std::invoke_result_t<F&, const K&, const V&>>::ValueType::value_type>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const K&, const V&>>::ValueType::value_type;
	auto g = [f = std::move(f)](const K& k, const V& v) mutable { return aval<std::optional<U>>(f(k, v)); };
	return detail::derivedMap<K, U>(
	    makeRef<detail::MapChooseAReader<K, V, U, decltype(g)>>(m.getReader(), std::move(g)));
}

/// Adaptive map: f(key, value) is an aval<U>.
template <typename K, typename V, typename F>
auto mapA(const amap<K, V>& m, F f)
    -> amap<K, typename std::decay_t<std::invoke_result_t<F&, const K&, const V&>>::ValueType>
{
	using U = typename std::decay_t<std::invoke_result_t<F&, const K&, const V&>>::ValueType;
	return chooseA(m, [f = std::move(f)](const K& k, const V& v) mutable
	               { return adaptive::map(aval<U>(f(k, v)), [](const U& u) { return std::optional<U>(u); }); });
}

/// Adaptive filter: p(key, value) is an aval<bool>.
template <typename K, typename V, typename P>
amap<K, V> filterA(const amap<K, V>& m, P p)
{
	return chooseA(
	    m, [p = std::move(p)](const K& k, const V& v) mutable
	    { return adaptive::map(aval<bool>(p(k, v)), [v](bool b) { return b ? std::optional<V>(v) : std::nullopt; }); });
}

/// The key set.
template <typename K, typename V>
aset<K> keys(const amap<K, V>& m)
{
	auto f = [](const K& k, const V&) { return k; };
	return detail::derivedSet<K>(makeRef<detail::MapToSetReader<K, V, K, decltype(f)>>(m.getReader(), f));
}

/// The entries as a set of (key, value) pairs.
template <typename K, typename V>
aset<std::pair<K, V>> toASet(const amap<K, V>& m)
{
	auto f = [](const K& k, const V& v) { return std::pair<K, V>(k, v); };
	return detail::derivedSet<std::pair<K, V>>(
	    makeRef<detail::MapToSetReader<K, V, std::pair<K, V>, decltype(f)>>(m.getReader(), f));
}

/// Reader callback for maps: f(stateBefore, delta). See subscribeReader.
template <typename K, typename V, typename F>
Subscription subscribe(const amap<K, V>& m, F f)
{
	return subscribeReader<MapTrace<K, V>>(m.getReader(), std::move(f));
}

} // namespace quokka::adaptive
