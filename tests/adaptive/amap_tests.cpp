// amap scenarios (M), D5 and C6 for amap, plus randomised differential tests against a recomputed std::map.
#include <gtest/gtest.h>

#include "differential.hpp"

#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <quokka/adaptive/amap.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

template <typename K, typename V>
std::map<K, V> toStd(const PMap<K, V>& m)
{
	std::map<K, V> r;
	m.forEach([&](const K& k, const V& v) { r.emplace(k, v); });
	return r;
}

using SM = std::map<std::string, int>;

} // namespace

TEST(MapDelta, LaterOperationWinsAndApplyDropsNoOps) // D5
{
	MapDelta<int, int> a{{1, 1}};
	MapTrace<int, int>::combine(a, MapDelta<int, int>{{1, std::nullopt}});
	EXPECT_EQ(a, (MapDelta<int, int>{{1, std::nullopt}}));
	MapTrace<int, int>::combine(a, MapDelta<int, int>{{1, 2}});
	EXPECT_EQ(a, (MapDelta<int, int>{{1, 2}}));
	PMap<int, int> s;
	s.set(1, 5);
	using D = MapDelta<int, int>;
	using Tr = MapTrace<int, int>;
	EXPECT_TRUE(Tr::apply(s, D{{1, 5}}).empty());
	EXPECT_TRUE(Tr::apply(s, D{{2, std::nullopt}}).empty());
	EXPECT_EQ(Tr::apply(s, D{{1, 6}}), (D{{1, 6}}));
}

TEST(AMapMapA, SharedFlagSwitchesEveryValue) // M2
{
	cmap<std::string, int> m({{"A", 1}, {"B", 2}, {"C", 3}});
	cval<bool> flag(true);
	auto r = mapA(amap<std::string, int>(m),
	              [=](const std::string&, int v) { return map(flag, [v](bool f) { return f ? v : -1; }); });
	EXPECT_EQ(toStd(r.force()), (SM{{"A", 1}, {"B", 2}, {"C", 3}}));
	transact([&] { flag.setValue(false); });
	EXPECT_EQ(toStd(r.force()), (SM{{"A", -1}, {"B", -1}, {"C", -1}}));
	transact([&] { m.updateTo({{"A", 2}, {"B", 4}, {"C", 6}}); });
	EXPECT_EQ(toStd(r.force()), (SM{{"A", -1}, {"B", -1}, {"C", -1}}));
	transact([&] { flag.setValue(true); });
	EXPECT_EQ(toStd(r.force()), (SM{{"A", 2}, {"B", 4}, {"C", 6}}));
}

TEST(AMapToASet, FollowsSetAndRemove) // M3 (sortBy part in alist tests)
{
	cmap<int, int> c;
	for (int i = 0; i < 100; ++i)
		c.set(i, i);
	auto s = toASet(amap<int, int>(c));
	auto k = keys(amap<int, int>(c));
	EXPECT_EQ(s.force().size(), 100u);
	transact([&] { c.set(30, 1000); });
	EXPECT_TRUE(s.force().contains({30, 1000}));
	EXPECT_FALSE(s.force().contains({30, 30}));
	transact([&] { c.remove(10); });
	EXPECT_EQ(s.force().size(), 99u);
	EXPECT_FALSE(k.force().contains(10));
	EXPECT_EQ(k.force().size(), 99u);
}

TEST(AMap, EqualValueIsNoDelta) // M4
{
	cmap<int, int> c({{5, 5}, {6, 6}});
	auto r = amap<int, int>(c).getReader();
	r->pull();
	transact([&] { c.set(5, 5); });
	EXPECT_TRUE(r->pull().empty());
	EXPECT_FALSE(c.updateTo({{5, 5}, {6, 6}}));
	EXPECT_TRUE(c.updateTo({{5, 5}}));
	EXPECT_EQ(r->pull(), (MapDelta<int, int>{{6, std::nullopt}}));
}

TEST(AMapCallback, SeesStateSizes) // C6
{
	cmap<std::string, int> m({{"a", 1}});
	std::vector<size_t> sizes;
	auto sub = subscribe(amap<std::string, int>(m),
	                     [&](const PMap<std::string, int>& before, const auto&) { sizes.push_back(before.size()); });
	transact([&] { m.set("b", 2); });
	transact([&] { m.remove("a"); });
	EXPECT_EQ(sizes, (std::vector<size_t>{0, 1, 2}));
}

TEST(AMapMapUse, DisposesRemovedResultsAndEverythingOnDispose) // M6
{
	cmap<int, int> c({{1, 0}, {2, 0}, {3, 0}, {4, 0}});
	int live = 0;
	auto [d, m] = mapUse(
	    amap<int, int>(c),
	    [&](int k, int)
	    {
		    ++live;
		    return k;
	    },
	    [&](int&) { --live; });
	EXPECT_EQ(live, 0);
	auto r = m.getReader();
	r->pull();
	EXPECT_EQ(r->state().size(), 4u);
	EXPECT_EQ(live, 4);
	transact([&] { c.remove(1); });
	r->pull();
	EXPECT_EQ(live, 3);
	transact([&] { c.set(7, 0); });
	r->pull();
	EXPECT_EQ(r->state().size(), 4u);
	EXPECT_EQ(live, 4);
	d.dispose();
	r->pull();
	EXPECT_EQ(r->state().size(), 0u);
	EXPECT_EQ(live, 0);
	d.dispose();
	r->pull();
	EXPECT_EQ(live, 0);
}

TEST(AMapUnion, RightSideWins)
{
	cmap<int, int> a({{1, 1}, {2, 2}});
	cmap<int, int> b({{2, 20}});
	auto u = unionOf(amap<int, int>(a), amap<int, int>(b));
	EXPECT_EQ(toStd(u.force()), (std::map<int, int>{{1, 1}, {2, 20}}));
	transact([&] { b.remove(2); });
	EXPECT_EQ(toStd(u.force()), (std::map<int, int>{{1, 1}, {2, 2}}));
	transact([&] { a.remove(2); });
	EXPECT_EQ(toStd(u.force()), (std::map<int, int>{{1, 1}}));
}

// ---- differential --------------------------------------------------------------------------------------------------

namespace
{

using IM = std::map<int, int>;

struct MEnv
{
	std::mt19937 rng;
	std::vector<cmap<int, int>> maps;
	std::vector<IM> models;
	std::vector<cval<int>> vals;
	std::vector<int> val_models;
	std::vector<std::string> history;
	int rand(int n) { return int(rng() % uint32_t(n)); }
};

struct MExpr
{
	amap<int, int> map;
	std::function<IM()> ref;
	std::string desc;
};

/// Builds a description string (GCC 12 warns falsely on chained std::string operator+, PR 105329).
template <typename... A>
std::string cat(const A&... a)
{
	std::ostringstream o;
	(o << ... << a);
	return o.str();
}

MExpr genMap(MEnv& env, int depth)
{
	if (depth == 0 || env.rand(5) == 0)
	{
		int i = env.rand(int(env.maps.size()));
		return MExpr{env.maps[size_t(i)], [&env, i] { return env.models[size_t(i)]; }, cat("m", i)};
	}
	MExpr a = genMap(env, depth - 1);
	auto ra = a.ref;
	int k = 1 + env.rand(4);
	int j = env.rand(int(env.vals.size()));
	cval<int> c = env.vals[size_t(j)];
	auto transform = [ra](auto f)
	{
		return [ra, f]
		{
			IM r;
			for (auto& [key, v] : ra())
				if (auto y = f(key, v))
					r[key] = *y;
			return r;
		};
	};
	switch (env.rand(7))
	{
	case 0:
	{
		auto f = [k](int key, int v) { return std::optional<int>(v * k + key); };
		return MExpr{map(a.map, [f](int key, int v) { return *f(key, v); }), transform(f), cat("map(", a.desc, ")")};
	}
	case 1:
	{
		auto f = [k](int key, int v) { return (key + v) % (k + 1) != 0 ? std::optional<int>(v) : std::nullopt; };
		return MExpr{filter(a.map, [f](int key, int v) { return f(key, v).has_value(); }), transform(f),
		             cat("filter(", a.desc, ")")};
	}
	case 2:
	{
		auto f = [k](int key, int v) { return v % 3 == 0 ? std::nullopt : std::optional<int>(v + key * k); };
		return MExpr{choose(a.map, f), transform(f), cat("choose(", a.desc, ")")};
	}
	case 3:
	{
		MExpr b = genMap(env, depth - 1);
		auto rb = b.ref;
		return MExpr{unionOf(a.map, b.map),
		             [ra, rb]
		             {
			             IM r = ra();
			             for (auto& [key, v] : rb())
				             r[key] = v;
			             return r;
		             },
		             cat("union(", a.desc, ",", b.desc, ")")};
	}
	case 4:
		return MExpr{
		    mapA(a.map, [c](int key, int v) { return map(c, [key, v](int x) { return v * x + key; }); }),
		    transform([&env, j](int key, int v) { return std::optional<int>(v * env.val_models[size_t(j)] + key); }),
		    cat("mapA(", a.desc, ",v", j, ")")};
	case 5:
		return MExpr{
		    filterA(a.map, [c](int key, int v) { return map(c, [key, v](int x) { return (key + v + x) % 3 != 0; }); }),
		    transform(
		        [&env, j](int key, int v)
		        { return (key + v + env.val_models[size_t(j)]) % 3 != 0 ? std::optional<int>(v) : std::nullopt; }),
		    cat("filterA(", a.desc, ",v", j, ")")};
	default:
	{
		auto f = [](int key, int v, int x) { return (v + x) % 4 == 0 ? std::nullopt : std::optional<int>(key - x); };
		return MExpr{chooseA(a.map, [c, f](int key, int v) { return map(c, [=](int x) { return f(key, v, x); }); }),
		             transform([&env, j, f](int key, int v) { return f(key, v, env.val_models[size_t(j)]); }),
		             cat("chooseA(", a.desc, ",v", j, ")")};
	}
	}
}

void randomMapChange(MEnv& env)
{
	std::ostringstream log;
	int what = env.rand(10);
	size_t i = size_t(env.rand(int(env.maps.size())));
	if (what < 5)
	{
		int key = env.rand(12), val = env.rand(6);
		env.maps[i].set(key, val);
		env.models[i][key] = val;
		log << "m" << i << "[" << key << "]:=" << val;
	}
	else if (what < 8)
	{
		int key = env.rand(12);
		env.maps[i].remove(key);
		env.models[i].erase(key);
		log << "m" << i << ".remove(" << key << ")";
	}
	else
	{
		size_t vi = size_t(env.rand(int(env.vals.size())));
		int x = env.rand(8);
		env.vals[vi].setValue(x);
		env.val_models[vi] = x;
		log << "v" << vi << ":=" << x;
	}
	env.history.push_back(log.str());
}

bool runMapCase(uint32_t seed)
{
	MEnv env{std::mt19937(seed), {}, {}, {}, {}, {}};
	for (int i = 0; i < 3; ++i)
	{
		std::vector<std::pair<int, int>> items;
		IM model;
		for (int n = env.rand(8); n > 0; --n)
		{
			int key = env.rand(12), v = env.rand(6);
			model[key] = v;
		}
		for (auto& kv : model)
			items.push_back(kv);
		env.maps.emplace_back(items);
		env.models.push_back(model);
		env.vals.emplace_back(env.rand(8));
		env.val_models.push_back(env.vals.back().value());
	}
	MExpr e = genMap(env, 1 + env.rand(4));
	auto reader = e.map.getReader();
	auto ks = keys(e.map);
	auto entries = toASet(e.map);
	IM mirror;
	for (int tx = 0; tx < 10; ++tx)
	{
		if (tx > 0)
		{
			env.history.push_back("-- transaction " + std::to_string(tx));
			Transaction t;
			for (int n = 1 + env.rand(5); n > 0; --n)
				randomMapChange(env);
		}
		IM want = e.ref();
		for (auto& [key, op] : reader->pull())
		{
			if (op)
				mirror[key] = *op;
			else
				mirror.erase(key);
		}
		std::set<int> want_keys;
		std::set<std::pair<int, int>> want_entries;
		for (auto& kv : want)
		{
			want_keys.insert(kv.first);
			want_entries.insert(kv);
		}
		auto got_keys = elements(ks.force());
		auto got_entries = elements(entries.force());
		if (mirror != want || toStd(e.map.force()) != want ||
		    std::set<int>(got_keys.begin(), got_keys.end()) != want_keys ||
		    std::set<std::pair<int, int>>(got_entries.begin(), got_entries.end()) != want_entries)
		{
			ADD_FAILURE() << "mismatch after transaction " << tx << "\n"
			              << quokka::adaptive::test::failureDump(seed, e.desc, env.history);
			return false;
		}
	}
	return true;
}

} // namespace

TEST(AMapDifferential, RandomGraphsMatchRecomputedReference)
{
	std::printf("amap differential: seeds 1..600\n");
	for (uint32_t seed = 1; seed <= 600; ++seed)
	{
		if (!runMapCase(seed))
			break;
	}
}
