// alist and Index scenarios (L), D7, C7, M3 for alist, plus randomised differential tests against recomputed vectors.
#include <gtest/gtest.h>

#include "differential.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/reduce.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

template <typename T>
std::vector<T> forced(const alist<T>& l)
{
	return toVector(l.force());
}

using VI = std::vector<int>;

template <typename... A>
std::string cat(const A&... a)
{
	std::ostringstream o;
	(o << ... << a);
	return o.str();
}

} // namespace

TEST(Index, MaintainsOrderUnderRandomNarrowing) // L1
{
	std::mt19937 rng(3);
	Index l = Index::zero();
	Index r = Index::after(l);
	std::vector<Index> all{r};
	for (int i = 0; i < 20000; ++i)
	{
		Index m = Index::between(l, r);
		ASSERT_TRUE(l < m && m < r) << "step " << i;
		all.push_back(m);
		if (rng() % 2)
			l = m;
		else
			r = m;
	}
	for (size_t i = 0; i + 1 < all.size(); ++i)
		ASSERT_NE(all[i] <=> all[i + 1], std::strong_ordering::equal);
	// Many appends (step 2^32) and prepends keep order too.
	std::vector<Index> seq{Index::after(Index::zero())};
	for (int i = 0; i < 5000; ++i)
		seq.push_back(Index::after(seq.back()));
	for (int i = 0; i < 5000; ++i)
		seq.insert(seq.begin(), Index::before(seq.front()));
	ASSERT_TRUE(std::is_sorted(seq.begin(), seq.end()));
}

TEST(Index, NodesAreFreedWithTheirLastHandle)
{
	size_t before = Index::liveCount();
	{
		clist<int> l{1, 2, 3};
		EXPECT_EQ(Index::liveCount(), before + 3);
	}
	EXPECT_EQ(Index::liveCount(), before);
}

TEST(CList, MutationsWithoutTransactionRunTheirOwn) // T4
{
	clist<int> l{1, 2, 3, 4};
	l.append(5);
	l.removeAt(0);
	EXPECT_EQ(forced(alist<int>(l)), VI({2, 3, 4, 5}));
	l.append(10);
	EXPECT_EQ(forced(alist<int>(l)), VI({2, 3, 4, 5, 10}));
	clist<int> k{1, 2, 3, 4};
	k.removeAt(0);
	k.append(5);
	EXPECT_EQ(forced(alist<int>(k)), VI({2, 3, 4, 5}));
}

TEST(AListMapA, FollowsCellsAndStructure) // L2
{
	clist<int> l{1, 2, 3};
	cval<int> even(1), odd(0);
	auto r = mapA(alist<int>(l), [=](int v) { return v % 2 == 0 ? aval<int>(even) : aval<int>(odd); });
	EXPECT_EQ(forced(r), VI({0, 1, 0}));
	transact([&] { odd.setValue(2); });
	EXPECT_EQ(forced(r), VI({2, 1, 2}));
	transact([&] { l.append(4); });
	EXPECT_EQ(forced(r), VI({2, 1, 2, 1}));
	transact([&] { even.setValue(5); });
	EXPECT_EQ(forced(r), VI({2, 5, 2, 5}));
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(forced(r), VI({5, 2, 5}));
	transact(
	    [&]
	    {
		    even.setValue(1);
		    odd.setValue(0);
	    });
	EXPECT_EQ(forced(r), VI({1, 0, 1}));
}

TEST(AListChooseA, DropsAndRestoresElements) // L3
{
	clist<int> l{1, 2, 3};
	cval<std::optional<int>> even(1), odd(0);
	auto r = chooseA(alist<int>(l), [=](int v)
	                 { return v % 2 == 0 ? aval<std::optional<int>>(even) : aval<std::optional<int>>(odd); });
	EXPECT_EQ(forced(r), VI({0, 1, 0}));
	transact([&] { odd.setValue(2); });
	EXPECT_EQ(forced(r), VI({2, 1, 2}));
	transact([&] { l.append(4); });
	EXPECT_EQ(forced(r), VI({2, 1, 2, 1}));
	transact([&] { even.setValue(5); });
	EXPECT_EQ(forced(r), VI({2, 5, 2, 5}));
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(forced(r), VI({5, 2, 5}));
	transact(
	    [&]
	    {
		    even.setValue(1);
		    odd.setValue(0);
	    });
	EXPECT_EQ(forced(r), VI({1, 0, 1}));
	transact([&] { even.setValue(std::nullopt); });
	EXPECT_EQ(forced(r), VI({0}));
	transact(
	    [&]
	    {
		    even.setValue(2);
		    odd.setValue(std::nullopt);
	    });
	EXPECT_EQ(forced(r), VI({2, 2}));
	transact(
	    [&]
	    {
		    l.removeAt(1);
		    even.setValue(1);
		    odd.setValue(123);
	    });
	EXPECT_EQ(forced(r), VI({1, 1}));
}

TEST(AListSkipA, MatchesTheTailOfTheList) // L5
{
	VI init;
	for (int i = 0; i < 100; ++i)
		init.push_back(i);
	clist<int> l(init);
	cval<int64_t> o(0);
	auto p = skipA(alist<int>(l), o);
	auto check = [&]
	{
		VI full = toVector(l.state());
		VI want(full.begin() + std::min<int64_t>(o.value(), int64_t(full.size())), full.end());
		EXPECT_EQ(forced(p), want);
	};
	check();
	transact([&] { o.setValue(10); });
	check();
	transact([&] { l.removeAt(11); });
	check();
	transact([&] { l.removeAt(0); });
	check();
	transact([&] { l.removeAt(70); });
	check();
	transact([&] { l.insertAt(4, 1234); });
	check();
	transact([&] { l.insertAt(20, 4321); });
	check();
	transact([&] { l.setAt(21, 1337); });
	check();
	transact([&] { l.setAt(4, 1337); });
	check();
	transact([&] { o.setValue(3); });
	check();
}

TEST(AListSortSub, DescendingWindowFollowsEdits) // L6
{
	using S = std::vector<std::string>;
	clist<std::string> in{"a", "b", "c", "d", "e"};
	struct Desc
	{
		std::string s;
		bool operator<(const Desc& o) const { return o.s < s; }
	};
	auto sorted = sortBy(alist<std::string>(in), [](const std::string& s) { return Desc{s}; });
	auto p = sub(sorted, 1, 3);
	EXPECT_EQ(forced(p), S({"d", "c", "b"}));
	transact(
	    [&]
	    {
		    for (auto s : {"x", "y", "z", "w", "r"})
			    in.prepend(s);
	    });
	EXPECT_EQ(forced(p), S({"y", "x", "w"}));
	transact([&] { in.clear(); });
	EXPECT_EQ(forced(p), S({}));
	transact([&] { in.updateTo({"hans", "sepp", "hugo", "franz"}); });
	EXPECT_EQ(forced(p), S({"hugo", "hans", "franz"}));
	transact([&] { in.append("zitha"); });
	EXPECT_EQ(forced(p), S({"sepp", "hugo", "hans"}));
	transact(
	    [&]
	    {
		    in.removeAt(0);
		    in.removeAt(0);
		    in.removeAt(0);
		    in.removeAt(in.count() - 1);
	    });
	EXPECT_EQ(forced(p), S({}));
}

TEST(AListFilterAi, SelectsByIndexThroughASet) // L7, L8
{
	clist<int> m{1, 2, 3, 4, 5};
	std::vector<Index> ix;
	for (size_t i = 0; i < 5; ++i)
		ix.push_back(m.indexAt(i));
	cset<int> keys{0, 2, 4}; // positions a, c, e as stable keys
	auto pos = [ix](const Index& i) { return int(std::find(ix.begin(), ix.end(), i) - ix.begin()); };
	auto f = filterAi(alist<int>(m), [=](const Index& i, int) { return contains(aset<int>(keys), pos(i)); });
	auto g = mapAi(alist<int>(m), [=](const Index& i, int v)
	               { return map(contains(aset<int>(keys), pos(i)), [v](bool t) { return t ? v : -1; }); });
	EXPECT_EQ(forced(f), VI({1, 3, 5}));
	EXPECT_EQ(forced(g), VI({1, -1, 3, -1, 5}));
	transact(
	    [&]
	    {
		    for (size_t i = 0; i < 5; ++i)
			    m.setAt(i, m.at(i) * 2); // keyed update: indices preserved
	    });
	EXPECT_EQ(m.indexAt(2), ix[2]);
	EXPECT_EQ(forced(f), VI({2, 6, 10}));
	EXPECT_EQ(forced(g), VI({2, -1, 6, -1, 10}));
	transact([&] { keys.add(3); });
	EXPECT_EQ(forced(f), VI({2, 6, 8, 10}));
	EXPECT_EQ(forced(g), VI({2, -1, 6, 8, 10}));
}

TEST(AListInit, FollowsLength) // L10
{
	cval<int64_t> n(1);
	auto l = init(n, [](int64_t i) { return int(i + 1); });
	EXPECT_EQ(forced(l), VI({1}));
	for (auto [len, want] : std::vector<std::pair<int64_t, VI>>{
	         {0, {}}, {4, {1, 2, 3, 4}}, {2, {1, 2}}, {1, {1}}, {6, {1, 2, 3, 4, 5, 6}}, {6, {1, 2, 3, 4, 5, 6}}})
	{
		transact([&] { n.setValue(len); });
		EXPECT_EQ(forced(l), want);
	}
}

TEST(AListRange, SystematicBounds) // L11 (range = init + offset)
{
	for (int pl = 0; pl <= 4; ++pl)
		for (int pu = 0; pu <= 4; ++pu)
			for (int lo_v = 0; lo_v <= 4; ++lo_v)
				for (int hi_v = 0; hi_v <= 4; ++hi_v)
				{
					cval<int> lo(pl), hi(pu);
					auto len = map2(lo, hi, [](int a, int b) { return int64_t(std::max(0, b - a + 1)); });
					auto l = adaptive::bind(aval<int>(lo),
					                        [len](int a) { return init(len, [a](int64_t i) { return a + int(i); }); });
					auto r = l.getReader();
					r->pull();
					transact(
					    [&]
					    {
						    lo.setValue(lo_v);
						    hi.setValue(hi_v);
					    });
					r->pull();
					VI want;
					for (int i = lo_v; i <= hi_v; ++i)
						want.push_back(i);
					ASSERT_EQ(toVector(r->state()), want);
				}
}

TEST(AListToASet, CollapsesDuplicates) // L12
{
	clist<int> l{1, 1, 2, 2, 3, 3};
	auto s = toASet(alist<int>(l));
	EXPECT_EQ(elements(s.force()), VI({1, 2, 3}));
	transact([&] { l.append(2); });
	EXPECT_EQ(elements(s.force()), VI({1, 2, 3}));
	transact([&] { l.append(4); });
	EXPECT_EQ(elements(s.force()), VI({1, 2, 3, 4}));
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(elements(s.force()), VI({1, 2, 3, 4}));
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(elements(s.force()), VI({2, 3, 4}));
}

TEST(AListSortBy, IsStableForEqualKeys) // L14
{
	using P = std::pair<int, char>;
	clist<P> l{{1, 'a'}, {0, 'b'}, {1, 'c'}};
	auto s = sortBy(alist<P>(l), [](const P& p) { return p.first; });
	EXPECT_EQ(forced(s), (std::vector<P>{{0, 'b'}, {1, 'a'}, {1, 'c'}}));
	transact([&] { l.setAt(2, {0, 'c'}); });
	EXPECT_EQ(forced(s), (std::vector<P>{{0, 'b'}, {0, 'c'}, {1, 'a'}}));
}

TEST(AMapToASetSortBy, ListEqualsPairsSortedByValue) // M3
{
	cmap<int, int> c;
	for (int i = 0; i < 100; ++i)
		c.set(i, i);
	using P = std::pair<int, int>;
	auto l = sortBy(toASet(amap<int, int>(c)), [](const P& p) { return p.second; });
	auto check = [&]
	{
		std::vector<P> want;
		c.history()->state().forEach([&](int k, int v) { want.emplace_back(k, v); });
		std::sort(want.begin(), want.end(),
		          [](const P& a, const P& b) { return std::tie(a.second, a) < std::tie(b.second, b); });
		EXPECT_EQ(forced(l), want);
	};
	check();
	transact([&] { c.set(30, 1000); });
	check();
	transact([&] { c.remove(10); });
	check();
	transact([&] { c.set(14, 10); });
	check();
}

TEST(AListReduce, HalfGroupProduct) // R3
{
	clist<int> l{1, 2, 3};
	int failed = 0;
	auto p = reduce(alist<int>(l), Reduction<int, int>{1, [](int a, int x) { return a * x; },
	                                                   [&](int a, int x) -> std::optional<int>
	                                                   {
		                                                   if (x == 0)
		                                                   {
			                                                   ++failed;
			                                                   return std::nullopt;
		                                                   }
		                                                   return a / x;
	                                                   }});
	EXPECT_EQ(p.force(), 6);
	transact([&] { l.append(4); });
	EXPECT_EQ(p.force(), 24);
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(p.force(), 24);
	transact([&] { l.clear(); });
	EXPECT_EQ(p.force(), 1);
	for (int x : {0, 10, 2, 2})
	{
		transact([&] { l.append(x); });
		EXPECT_EQ(p.force(), 0);
	}
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(p.force(), 40);
	EXPECT_GT(failed, 0);
}

TEST(AListCallback, SeesStateSizes) // C7
{
	clist<int> l{10, 20};
	std::vector<size_t> sizes;
	auto sub = subscribe(alist<int>(l),
	                     [&](const IndexList<int>& before, const ListDelta<int>&) { sizes.push_back(before.size()); });
	transact([&] { l.append(30); });
	transact([&] { l.removeAt(0); });
	EXPECT_EQ(sizes, (std::vector<size_t>{0, 2, 3}));
}

TEST(ListDelta, DiffToAPlainSequence) // D7
{
	std::mt19937 rng(11);
	for (int round = 0; round < 200; ++round)
	{
		VI a, b;
		for (int n = int(rng() % 12); n > 0; --n)
			a.push_back(int(rng() % 5));
		for (int n = int(rng() % 12); n > 0; --n)
			b.push_back(int(rng() % 5));
		clist<int> l(a);
		EXPECT_TRUE(computeListDelta(l.state(), a).empty());
		IndexList<int> s = l.state();
		MapTrace<Index, int>::apply(s, computeListDelta(l.state(), b));
		ASSERT_EQ(toVector(s), b);
	}
}

TEST(AListCollect, ConcatenatesInnerListsInOrder)
{
	clist<int> a{1, 2}, b{10};
	clist<int> outer{0, 1, 0};
	auto c = collect(alist<int>(outer), [=](int i) { return i == 0 ? alist<int>(a) : alist<int>(b); });
	EXPECT_EQ(forced(c), VI({1, 2, 10, 1, 2}));
	transact([&] { a.prepend(0); });
	EXPECT_EQ(forced(c), VI({0, 1, 2, 10, 0, 1, 2}));
	transact([&] { outer.removeAt(0); });
	EXPECT_EQ(forced(c), VI({10, 0, 1, 2}));
	transact([&] { outer.setAt(0, 0); });
	EXPECT_EQ(forced(c), VI({0, 1, 2, 0, 1, 2}));
}

TEST(AListCollecti, PassesEachElementsIndexAndFollowsReplacements)
{
	clist<int> outer{1, 2, 3};
	std::vector<std::pair<Index, int>> calls;
	auto c = collecti(alist<int>(outer),
	                  [&](const Index& i, int x)
	                  {
		                  calls.emplace_back(i, x);
		                  return alistOf<int>({x, x * 10});
	                  });
	EXPECT_EQ(forced(c), VI({1, 10, 2, 20, 3, 30}));
	ASSERT_EQ(calls.size(), 3u);
	for (size_t p = 0; p < 3; ++p)
		EXPECT_EQ(calls[p].first, outer.indexAt(p)) << "element " << p << " gets its own index";
	calls.clear();
	transact([&] { outer.setAt(1, 5); }); // replaced: its old inner list goes, f runs again for it alone
	EXPECT_EQ(forced(c), VI({1, 10, 5, 50, 3, 30}));
	ASSERT_EQ(calls.size(), 1u);
	EXPECT_EQ(calls[0], std::make_pair(outer.indexAt(1), 5));
	calls.clear();
	Index inserted;
	transact([&] { inserted = outer.insertAt(0, 7); });
	EXPECT_EQ(forced(c), VI({7, 70, 1, 10, 5, 50, 3, 30}));
	ASSERT_EQ(calls.size(), 1u);
	EXPECT_EQ(calls[0].first, inserted);
	transact([&] { outer.removeAt(2); });
	EXPECT_EQ(forced(c), VI({7, 70, 1, 10, 3, 30}));
}

// ---- differential --------------------------------------------------------------------------------------------------

namespace
{

struct LEnv
{
	std::mt19937 rng;
	std::vector<clist<int>> lists;
	std::vector<VI> models;
	std::vector<cval<int>> vals;
	std::vector<int> val_models;
	std::vector<std::string> history;
	int rand(int n) { return int(rng() % uint32_t(n)); }
};

struct LExpr
{
	alist<int> list;
	std::function<VI()> ref;
	std::string desc;
};

LExpr genList(LEnv& env, int depth)
{
	if (depth == 0 || env.rand(5) == 0)
	{
		int i = env.rand(int(env.lists.size()));
		return LExpr{env.lists[size_t(i)], [&env, i] { return env.models[size_t(i)]; }, cat("l", i)};
	}
	LExpr a = genList(env, depth - 1);
	auto ra = a.ref;
	int k = 1 + env.rand(4);
	int j = env.rand(int(env.vals.size()));
	cval<int> c = env.vals[size_t(j)];
	auto each = [ra](auto f)
	{
		return [ra, f]
		{
			VI r;
			for (int x : ra())
				if (auto y = f(x))
					r.push_back(*y);
			return r;
		};
	};
	switch (env.rand(10))
	{
	case 0:
		return LExpr{map(a.list, [k](int x) { return x * k % 11; }),
		             each([k](int x) { return std::optional<int>(x * k % 11); }), cat("map(", a.desc, ")")};
	case 1:
		return LExpr{filter(a.list, [k](int x) { return x % (k + 1) != 0; }),
		             each([k](int x) { return x % (k + 1) != 0 ? std::optional<int>(x) : std::nullopt; }),
		             cat("filter(", a.desc, ")")};
	case 2:
	{
		auto f = [k](int x) { return x % 3 == 1 ? std::nullopt : std::optional<int>(x + k); };
		return LExpr{choose(a.list, f), each(f), cat("choose(", a.desc, ")")};
	}
	case 3:
		return LExpr{mapA(a.list, [c](int x) { return map(c, [x](int v) { return x * 10 + v; }); }),
		             each([&env, j](int x) { return std::optional<int>(x * 10 + env.val_models[size_t(j)]); }),
		             cat("mapA(", a.desc, ",v", j, ")")};
	case 4:
		return LExpr{filterA(a.list, [c](int x) { return map(c, [x](int v) { return (x + v) % 3 != 0; }); }),
		             each([&env, j](int x)
		                  { return (x + env.val_models[size_t(j)]) % 3 != 0 ? std::optional<int>(x) : std::nullopt; }),
		             cat("filterA(", a.desc, ",v", j, ")")};
	case 5:
	{
		int li = env.rand(int(env.lists.size()));
		clist<int> inner = env.lists[size_t(li)];
		return LExpr{collect(a.list,
		                     [inner](int x) {
			                     return x % 2 == 0 ? alist<int>(inner) : alistOf<int>({x, -x});
		                     }),
		             [ra, &env, li]
		             {
			             VI r;
			             for (int x : ra())
			             {
				             if (x % 2 == 0)
					             r.insert(r.end(), env.models[size_t(li)].begin(), env.models[size_t(li)].end());
				             else
					             r.insert(r.end(), {x, -x});
			             }
			             return r;
		             },
		             cat("collect(", a.desc, ",l", li, ")")};
	}
	case 6:
		return LExpr{sortBy(a.list, [k](int x) { return x % (k + 2); }),
		             [ra, k]
		             {
			             VI r = ra();
			             std::stable_sort(r.begin(), r.end(), [k](int x, int y) { return x % (k + 2) < y % (k + 2); });
			             return r;
		             },
		             cat("sortBy(", a.desc, ")")};
	case 7:
	{
		cval<int> cv = c;
		auto off = map(cv, [](int v) { return int64_t(v % 4); });
		auto cnt = map(cv, [](int v) { return int64_t(v % 3 == 0 ? -1 : v % 5 + 1); });
		return LExpr{subA(a.list, off, cnt),
		             [ra, &env, j]
		             {
			             VI r = ra();
			             int v = env.val_models[size_t(j)];
			             int64_t o = v % 4, n = v % 3 == 0 ? -1 : v % 5 + 1;
			             int64_t lo = std::min<int64_t>(o, int64_t(r.size()));
			             int64_t hi = n < 0 ? int64_t(r.size()) : std::min<int64_t>(lo + n, int64_t(r.size()));
			             return VI(r.begin() + lo, r.begin() + hi);
		             },
		             cat("subA(", a.desc, ",v", j, ")")};
	}
	case 8:
	{
		// collecti: f also checks that the index it receives holds x in the input list at that moment.
		int li = env.rand(int(env.lists.size()));
		clist<int> inner = env.lists[size_t(li)];
		auto input = a.list.history();
		return LExpr{collecti(a.list,
		                      [inner, input, &env](const Index& i, int x)
		                      {
			                      const int* at = input->state().find(i);
			                      if (!at || *at != x)
				                      env.history.push_back("collecti: wrong index passed");
			                      return x % 3 == 0 ? alist<int>(map(inner, [x](int y) { return y + x; }))
			                                        : alistOf<int>({x});
		                      }),
		             [ra, &env, li]
		             {
			             VI r;
			             for (int x : ra())
			             {
				             if (x % 3 == 0)
					             for (int y : env.models[size_t(li)])
						             r.push_back(y + x);
				             else
					             r.push_back(x);
			             }
			             return r;
		             },
		             cat("collecti(", a.desc, ",l", li, ")")};
	}
	default:
		return LExpr{sortBy(toASet(a.list), [](int x) { return -x; }),
		             [ra]
		             {
			             std::set<int> s;
			             for (int x : ra())
				             s.insert(x);
			             VI r(s.rbegin(), s.rend());
			             return r;
		             },
		             cat("sortBy(toASet(", a.desc, "))")};
	}
}

void randomListChange(LEnv& env)
{
	std::ostringstream log;
	size_t i = size_t(env.rand(int(env.lists.size())));
	clist<int>& l = env.lists[i];
	VI& m = env.models[i];
	int what = env.rand(12);
	int x = env.rand(10);
	if (what < 2)
	{
		l.append(x);
		m.push_back(x);
		log << "l" << i << ".append(" << x << ")";
	}
	else if (what < 3)
	{
		l.prepend(x);
		m.insert(m.begin(), x);
		log << "l" << i << ".prepend(" << x << ")";
	}
	else if (what < 5)
	{
		size_t p = size_t(env.rand(int(m.size()) + 1));
		l.insertAt(p, x);
		m.insert(m.begin() + int64_t(p), x);
		log << "l" << i << ".insertAt(" << p << "," << x << ")";
	}
	else if (what < 7 && !m.empty())
	{
		size_t p = size_t(env.rand(int(m.size())));
		l.removeAt(p);
		m.erase(m.begin() + int64_t(p));
		log << "l" << i << ".removeAt(" << p << ")";
	}
	else if (what < 8 && !m.empty())
	{
		size_t p = size_t(env.rand(int(m.size())));
		l.setAt(p, x);
		m[p] = x;
		log << "l" << i << "[" << p << "]:=" << x;
	}
	else if (what < 9)
	{
		VI nv = m;
		for (int n = env.rand(4); n > 0; --n)
		{
			if (!nv.empty() && env.rand(2))
				nv.erase(nv.begin() + env.rand(int(nv.size())));
			else
				nv.insert(nv.begin() + env.rand(int(nv.size()) + 1), env.rand(10));
		}
		l.updateTo(nv);
		m = nv;
		log << "l" << i << ".updateTo(" << nv.size() << " items)";
	}
	else
	{
		size_t vi = size_t(env.rand(int(env.vals.size())));
		env.vals[vi].setValue(x);
		env.val_models[vi] = x;
		log << "v" << vi << ":=" << x;
	}
	env.history.push_back(log.str());
}

bool runListCase(uint32_t seed)
{
	LEnv env{std::mt19937(seed), {}, {}, {}, {}, {}};
	for (int i = 0; i < 3; ++i)
	{
		VI xs;
		for (int n = env.rand(8); n > 0; --n)
			xs.push_back(env.rand(10));
		env.lists.emplace_back(xs);
		env.models.push_back(xs);
		env.vals.emplace_back(env.rand(10));
		env.val_models.push_back(env.vals.back().value());
	}
	LExpr e = genList(env, 1 + env.rand(4));
	auto reader = e.list.getReader();
	auto second = e.list.getReader();
	std::map<Index, int> mirror;
	for (int tx = 0; tx < 10; ++tx)
	{
		if (tx > 0)
		{
			env.history.push_back(cat("-- transaction ", tx));
			Transaction t;
			for (int n = 1 + env.rand(5); n > 0; --n)
				randomListChange(env);
		}
		VI want = e.ref();
		for (auto& [i, op] : reader->pull())
		{
			if (op)
				mirror[i] = *op;
			else
				mirror.erase(i);
		}
		VI got_mirror;
		for (auto& kv : mirror)
			got_mirror.push_back(kv.second);
		bool ok = got_mirror == want && toVector(e.list.force()) == want && toVector(reader->state()) == want;
		ok = ok &&
		     std::find(env.history.begin(), env.history.end(), "collecti: wrong index passed") == env.history.end();
		if (ok && env.rand(2))
		{
			second->pull();
			ok = toVector(second->state()) == want;
		}
		if (!ok)
		{
			ADD_FAILURE() << "mismatch after transaction " << tx << "\n"
			              << quokka::adaptive::test::failureDump(seed, e.desc, env.history);
			return false;
		}
	}
	return true;
}

} // namespace

TEST(AListDifferential, RandomGraphsMatchRecomputedReference)
{
	std::printf("alist differential: seeds 1..600\n");
	for (uint32_t seed = 1; seed <= 600; ++seed)
	{
		if (!runListCase(seed))
			break;
	}
}
