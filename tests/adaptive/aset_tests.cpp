// aset scenarios: delta algebra (D), aset operators (S), history/readers (H), set callbacks (C5, C8), reductions (R).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/change_queue.hpp>
#include <quokka/adaptive/reduce.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

template <typename T>
std::vector<T> v(std::initializer_list<T> l)
{
	return std::vector<T>(l);
}

template <typename T>
std::vector<T> forced(const aset<T>& s)
{
	return elements(s.force());
}

SetDelta<int> sd(std::initializer_list<std::pair<const int, int>> l)
{
	return SetDelta<int>(l.begin(), l.end());
}

CountingSet<int> cs(std::initializer_list<std::pair<int, int>> l)
{
	CountingSet<int> s;
	for (auto& [k, c] : l)
		s.set(k, c);
	return s;
}

CountingSet<int> range(int lo, int hi)
{
	CountingSet<int> s;
	for (int i = lo; i <= hi; ++i)
		s.set(i, 1);
	return s;
}

SetDelta<int> rangeDelta(int lo, int hi, int c)
{
	SetDelta<int> d;
	for (int i = lo; i <= hi; ++i)
		d[i] = c;
	return d;
}

} // namespace

// ---- D: delta algebra ----------------------------------------------------------------------------------------------

TEST(SetDelta, ApplyDropsUselessRemoves) // D1
{
	auto s = CountingSet<int>();
	EXPECT_TRUE(SetTrace<int>::apply(s, sd({{1, -1}})).empty());
	EXPECT_TRUE(s.empty());
	s = range(2, 20);
	EXPECT_TRUE(SetTrace<int>::apply(s, sd({{1, -1}})).empty());
	EXPECT_EQ(s, range(2, 20));
	s = range(21, 21);
	EXPECT_TRUE(SetTrace<int>::apply(s, rangeDelta(1, 20, -1)).empty());
	EXPECT_EQ(s, range(21, 21));
	s = range(1, 20);
	EXPECT_TRUE(SetTrace<int>::apply(s, rangeDelta(21, 40, -1)).empty());
	EXPECT_EQ(s, range(1, 20));
}

TEST(SetDelta, CountingApplyKeepsReferenceCounts) // D2
{
	auto s = cs({{1, 1}});
	EXPECT_TRUE(SetTrace<int>::apply(s, sd({{1, 1}})).empty());
	EXPECT_EQ(s, cs({{1, 2}}));
	EXPECT_TRUE(SetTrace<int>::apply(s, sd({{1, -1}})).empty());
	EXPECT_EQ(s, cs({{1, 1}}));
	EXPECT_EQ(SetTrace<int>::apply(s, sd({{1, -1}})), sd({{1, -1}}));
	EXPECT_TRUE(s.empty());
	// plain set (cset): adding present elements is no delta
	cset<int> c{1};
	EXPECT_FALSE(c.add(1));
	c.unionWith(v({1, 2}));
	EXPECT_EQ(c.history()->state(), range(1, 2));
}

TEST(SetDelta, ApplyBasic) // D3
{
	auto s = range(1, 19);
	EXPECT_EQ(SetTrace<int>::apply(s, sd({{20, 1}})), sd({{20, 1}}));
	EXPECT_EQ(s, range(1, 20));
	s = range(1, 1);
	EXPECT_EQ(SetTrace<int>::apply(s, rangeDelta(1, 20, 1)), rangeDelta(2, 20, 1));
	EXPECT_EQ(elements(s), elements(range(1, 20)));
}

TEST(SetDelta, CombineSumsPerElementAndDropsZeros) // D4
{
	auto a = sd({{1, 1}});
	SetTrace<int>::combine(a, sd({{1, -1}}));
	EXPECT_TRUE(a.empty());
	a = sd({{1, 1}});
	SetTrace<int>::combine(a, sd({{1, 1}}));
	EXPECT_EQ(a, sd({{1, 2}}));
	a = sd({{1, 1}});
	SetTrace<int>::combine(a, sd({{2, -1}}));
	EXPECT_EQ(a, sd({{1, 1}, {2, -1}}));
}

TEST(PMap, PersistentVersionsAreIndependentAndPositional)
{
	PMap<int, int> a;
	for (int i = 0; i < 1000; ++i)
		a.set((i * 7919) % 1000, i);
	PMap<int, int> b = a;
	for (int i = 0; i < 500; ++i)
		b.erase(i * 2);
	EXPECT_EQ(a.size(), 1000u);
	EXPECT_EQ(b.size(), 500u);
	for (int i = 0; i < 1000; ++i)
	{
		EXPECT_TRUE(a.contains(i));
		EXPECT_EQ(b.contains(i), i % 2 == 1);
		EXPECT_EQ(a.at(size_t(i)).first, i);
		EXPECT_EQ(a.rank(i), size_t(i));
	}
	EXPECT_EQ(*b.before(5).first, 3);
	EXPECT_EQ(*b.after(5).first, 7);
	EXPECT_EQ(b.before(1).first, nullptr);
	int prev = -1;
	for (auto [k, val] : b)
	{
		EXPECT_GT(k, prev);
		prev = k;
		(void)val;
	}
}

// Random sets and erases on one map while snapshots are taken and dropped at random: every snapshot keeps the content
// it had (updates of unshared nodes happen in place, shared ones are copied), and the map stays a valid ordered AVL
// map.
TEST(PMap, InPlaceUpdatesNeverReachASnapshot)
{
	std::mt19937 rng(11);
	PMap<int, int> m;
	std::map<int, int> model;
	std::vector<std::pair<PMap<int, int>, std::map<int, int>>> snapshots;
	for (int op = 0; op < 20000; ++op)
	{
		const int key = int(rng() % 512);
		if (rng() % 3 == 0)
		{
			EXPECT_EQ(m.erase(key), model.erase(key) == 1);
		}
		else
		{
			m.set(key, op);
			model[key] = op;
		}
		if (op % 499 == 0)
		{
			ASSERT_TRUE(m.valid()) << "op " << op;
		}
		if (rng() % 97 == 0)
			snapshots.emplace_back(m, model);
		if (!snapshots.empty() && rng() % 131 == 0)
			snapshots.erase(snapshots.begin() + ptrdiff_t(rng() % snapshots.size()));
	}
	snapshots.emplace_back(m, model);
	ASSERT_GT(snapshots.size(), 10u);
	for (const auto& [snapshot, expected] : snapshots)
	{
		ASSERT_TRUE(snapshot.valid());
		ASSERT_EQ(snapshot.size(), expected.size());
		size_t i = 0;
		for (const auto& [k, v] : expected)
		{
			const auto [sk, sv] = snapshot.at(i++);
			ASSERT_EQ(sk, k);
			ASSERT_EQ(sv, v);
			ASSERT_EQ(snapshot.rank(k), i - 1);
		}
	}
}

// A map nobody shares is updated in place: a value's address survives setting another key and replacing its own value.
TEST(PMap, UnsharedMapIsUpdatedInPlace)
{
	PMap<int, int> m;
	for (int i = 0; i < 100; ++i)
		m.set(i, i);
	const int* v50 = m.find(50);
	m.set(50, -50);
	EXPECT_EQ(m.find(50), v50);
	EXPECT_EQ(*v50, -50);
	PMap<int, int> copy = m;
	m.set(50, 7); // shared now: copied, the copy keeps -50
	EXPECT_EQ(*copy.find(50), -50);
	EXPECT_EQ(*m.find(50), 7);
	EXPECT_NE(m.find(50), copy.find(50));
}

// Rotations and removals of unshared nodes relink them instead of copying: every key that stays keeps its node (the
// address of its value) through thousands of inserts and erases that rebalance the tree around it.
TEST(PMap, UnsharedRebalancingRelinksNodesInsteadOfCopyingThem)
{
	std::mt19937 rng(3);
	PMap<int, int> m;
	std::vector<int> keys(4000);
	for (int i = 0; i < 4000; ++i)
		keys[size_t(i)] = i;
	std::shuffle(keys.begin(), keys.end(), rng);
	for (int k : keys)
		m.set(k, k);
	std::map<int, const int*> address;
	for (int k : keys)
		address[k] = m.find(k);
	for (int i = 0; i < 2000; ++i)
	{
		ASSERT_TRUE(m.erase(keys[size_t(i)]));
		address.erase(keys[size_t(i)]);
		m.set(4000 + i, i); // new keys at the right edge: rotations all the way up
	}
	ASSERT_TRUE(m.valid());
	EXPECT_EQ(m.size(), 4000u);
	for (const auto& [k, p] : address)
	{
		ASSERT_EQ(m.find(k), p) << k;
		ASSERT_EQ(*p, k);
	}
}

// ---- S: aset -------------------------------------------------------------------------------------------------------

TEST(ASetMap, IsRefcountedAndLazyOnRemoval) // S1
{
	cset<int> s{1, 2, 3};
	int cnt = 0;
	auto m = map(s,
	             [&](int x)
	             {
		             ++cnt;
		             return x % 2;
	             });
	EXPECT_EQ(forced(m), v({0, 1}));
	EXPECT_EQ(cnt, 3);
	transact([&] { s.remove(1); });
	EXPECT_EQ(forced(m), v({0, 1}));
	EXPECT_EQ(cnt, 3);
	transact([&] { s.remove(3); });
	EXPECT_EQ(forced(m), v({0}));
	transact([&] { s.add(5); });
	EXPECT_EQ(forced(m), v({0, 1}));
	EXPECT_EQ(cnt, 4);
}

TEST(ASetMap, DocsExampleCallsFunctionOncePerAddedElement) // S2
{
	cset<int> s{1, 2, 3};
	int cnt = 0;
	auto m = map(s,
	             [&](int x)
	             {
		             ++cnt;
		             return x * 2;
	             });
	EXPECT_EQ(forced(m), v({2, 4, 6}));
	EXPECT_EQ(cnt, 3);
	transact([&] { s.add(0); });
	EXPECT_EQ(forced(m), v({0, 2, 4, 6}));
	EXPECT_EQ(cnt, 4);
	transact([&] { s.remove(2); });
	EXPECT_EQ(forced(m), v({0, 2, 6}));
	EXPECT_EQ(cnt, 4);
}

TEST(ASetFilter, PredicateRunsOncePerAddedElementAndNeverOnRemoval)
{
	cset<int> s{1, 2, 3, 4};
	int calls = 0;
	auto evens = filter(s,
	                    [&](int x)
	                    {
		                    ++calls;
		                    return x % 2 == 0;
	                    });
	EXPECT_EQ(forced(evens), v({2, 4}));
	EXPECT_EQ(calls, 4);
	transact([&] { s.add(6), s.add(7), s.remove(2), s.remove(3); });
	EXPECT_EQ(forced(evens), v({4, 6}));
	EXPECT_EQ(calls, 6); // 6 and 7; the removed 2 and 3 are not asked again
	transact([&] { s.remove(4), s.remove(7), s.add(2), s.add(3); });
	EXPECT_EQ(forced(evens), v({2, 6}));
	EXPECT_EQ(calls, 8);
}

TEST(ASetChoose, ElementsMappedToNothingLeaveWithoutAnEffect)
{
	// An element mapped to nothing is not remembered; its removal must still leave every kept result alone, even when
	// another element maps to the same value (counting) and when it comes back later.
	cset<int> s{1, 2, 3, 4, 5};
	int calls = 0;
	auto halves = choose(s,
	                     [&](int x) -> std::optional<int>
	                     {
		                     ++calls;
		                     return x % 2 == 0 ? std::optional<int>(x / 2) : std::nullopt;
	                     });
	EXPECT_EQ(forced(halves), v({1, 2}));
	transact([&] { s.remove(1), s.remove(3), s.add(8); });
	EXPECT_EQ(forced(halves), v({1, 2, 4}));
	transact([&] { s.add(1), s.remove(2); });
	EXPECT_EQ(forced(halves), v({2, 4}));
	transact([&] { s.remove(5), s.remove(1), s.remove(4); });
	EXPECT_EQ(forced(halves), v({4}));
	EXPECT_EQ(calls, 7); // 1–5, 8, and 1 again
}

TEST(ASetUnion, WithAConstantKeepsSharedElements) // S3
{
	auto k = asetOf(v({1, 2, 3}));
	cset<int> c{4, 5, 6};
	for (auto u : {unionOf(k, aset<int>(c)), unionOf(aset<int>(c), k)})
	{
		EXPECT_EQ(forced(u), v({1, 2, 3, 4, 5, 6}));
	}
	auto u1 = unionOf(k, aset<int>(c));
	auto u2 = unionOf(aset<int>(c), k);
	u1.force();
	u2.force();
	transact([&] { c.add(1); });
	EXPECT_EQ(forced(u1), v({1, 2, 3, 4, 5, 6}));
	transact([&] { c.remove(1); });
	EXPECT_EQ(forced(u1), v({1, 2, 3, 4, 5, 6}));
	transact([&] { c.remove(5); });
	EXPECT_EQ(forced(u1), v({1, 2, 3, 4, 6}));
	EXPECT_EQ(forced(u2), v({1, 2, 3, 4, 6}));
	cset<int> c2{3, 4, 5};
	auto u3 = unionOf(k, aset<int>(c2));
	EXPECT_EQ(forced(u3), v({1, 2, 3, 4, 5}));
	transact([&] { c2.remove(5); });
	EXPECT_EQ(forced(u3), v({1, 2, 3, 4}));
}

TEST(ASetBind, OverTheSetsOwnContentTracksItsSize) // S5
{
	cset<int> s;
	auto r = adaptive::bind(s.content(),
	                        [](const CountingSet<int>& hs)
	                        {
		                        std::vector<int> d;
		                        hs.forEach([&](int x, int) { d.push_back(x * 2); });
		                        return asetOf(d);
	                        });
	for (int i = 1; i <= 100; ++i)
	{
		transact([&] { s.add(i); });
		EXPECT_EQ(r.force().size(), s.count());
	}
}

TEST(CSet, MutationsWithoutTransactionRunTheirOwn) // T4 (and T5 policy: auto-transaction)
{
	cset<int> s{1, 2, 3, 4};
	s.add(5);
	s.remove(1);
	EXPECT_EQ(forced(aset<int>(s)), v({2, 3, 4, 5}));
	EXPECT_TRUE(s.add(10));
	auto m = map(aset<int>(s), [](int x) { return x; });
	EXPECT_EQ(forced(m), v({2, 3, 4, 5, 10}));
	s.remove(2); // has a dependent now: marks it through a one-change transaction
	EXPECT_EQ(forced(m), v({3, 4, 5, 10}));
}

TEST(CSet, QueriesContainsAndCount) // S7
{
	cset<int> s{1, 2};
	auto n = count(aset<int>(s));
	auto has1 = contains(aset<int>(s), 1);
	EXPECT_EQ(n.force(), 2u);
	EXPECT_TRUE(has1.force());
	EXPECT_TRUE(transact([&] { return s.remove(2); }));
	EXPECT_EQ(n.force(), 1u);
	EXPECT_TRUE(s.contains(1));
	transact([&] { s.remove(1); });
	EXPECT_EQ(n.force(), 0u);
	EXPECT_FALSE(has1.force());
	EXPECT_EQ(s.count(), 0u);
}

TEST(CSet, IntersectWithKeepsOnlyCommonElements) // S8
{
	cset<int> s{1, 2, 3, 4};
	transact([&] { s.intersectWith(v({2, 3, 5})); });
	EXPECT_EQ(forced(aset<int>(s)), v({2, 3}));
	transact([&] { s.symmetricExceptWith(v({3, 7})); });
	EXPECT_EQ(forced(aset<int>(s)), v({2, 7}));
	transact([&] { s.exceptWith(v({7})); });
	EXPECT_EQ(forced(aset<int>(s)), v({2}));
	transact([&] { s.setValue(v({9, 8})); });
	EXPECT_EQ(forced(aset<int>(s)), v({8, 9}));
	s.clear();
	EXPECT_EQ(forced(aset<int>(s)), v<int>({}));
}

TEST(ASetRange, SystematicBoundsChanges) // S9
{
	for (int pl = 0; pl <= 4; ++pl)
		for (int pu = 0; pu <= 4; ++pu)
			for (int l = 0; l <= 4; ++l)
				for (int u = 0; u <= 4; ++u)
				{
					cval<int> lo(pl), hi(pu);
					auto r = adaptive::bind(map2(lo, hi, [](int a, int b) { return std::make_pair(a, b); }),
					                        [](const std::pair<int, int>& b)
					                        {
						                        std::vector<int> xs;
						                        for (int i = b.first; i <= b.second; ++i)
							                        xs.push_back(i);
						                        return asetOf(xs);
					                        });
					auto rd = r.getReader();
					rd->pull();
					transact(
					    [&]
					    {
						    lo.setValue(l);
						    hi.setValue(u);
					    });
					rd->pull();
					std::vector<int> want;
					for (int i = l; i <= u; ++i)
						want.push_back(i);
					ASSERT_EQ(elements(rd->state()), want);
				}
}

TEST(ASetMapUse, DisposesRemovedResultsAndEverythingOnDispose) // S6
{
	cset<int> s{1, 2, 3, 4};
	int live = 0;
	auto [d, m] = mapUse(
	    aset<int>(s),
	    [&](int x)
	    {
		    ++live;
		    return x * 10;
	    },
	    [&](int&) { --live; });
	EXPECT_EQ(live, 0);
	auto r = m.getReader();
	r->pull();
	EXPECT_EQ(r->state().size(), 4u);
	EXPECT_EQ(live, 4);
	transact([&] { s.remove(1); });
	r->pull();
	EXPECT_EQ(r->state().size(), 3u);
	EXPECT_EQ(live, 3);
	transact([&] { s.add(7); });
	r->pull();
	EXPECT_EQ(r->state().size(), 4u);
	EXPECT_EQ(live, 4);
	d.dispose();
	r->pull();
	EXPECT_EQ(r->state().size(), 0u);
	EXPECT_EQ(live, 0);
	d.dispose();
	transact([&] { s.add(8); });
	r->pull();
	EXPECT_EQ(r->state().size(), 0u);
	EXPECT_EQ(live, 0);
}

TEST(ASetBinary, DifferenceIntersectXor) // S10
{
	cset<int> a{1, 2, 3}, b{2, 3, 4};
	auto d = difference(aset<int>(a), aset<int>(b));
	auto i = intersect(aset<int>(a), aset<int>(b));
	auto x = symmetricDifference(aset<int>(a), aset<int>(b));
	EXPECT_EQ(forced(d), v({1}));
	EXPECT_EQ(forced(i), v({2, 3}));
	EXPECT_EQ(forced(x), v({1, 4}));
	transact([&] { b.add(1); });
	EXPECT_EQ(forced(d), v<int>({}));
	EXPECT_EQ(forced(i), v({1, 2, 3}));
	EXPECT_EQ(forced(x), v({4}));
	transact([&] { a.remove(2); });
	EXPECT_EQ(forced(d), v<int>({}));
	EXPECT_EQ(forced(i), v({1, 3}));
	EXPECT_EQ(forced(x), v({2, 4}));
	aset<int> aa = a;
	EXPECT_EQ(unionOf(aa, aa), aa);
	EXPECT_TRUE(difference(aa, aa).force().empty());
	EXPECT_TRUE(symmetricDifference(aa, aa).force().empty());
}

// A delta-only reader sees the same changes as a full one, and content snapshots taken before a change keep their
// content although the set now updates in place between pulls.
TEST(ASetReaders, DeltaOnlyReaderSeesTheSameChangesAndSnapshotsSurvive)
{
	cset<int> s{1, 2, 3};
	auto full = s.getReader();
	auto delta = s.getDeltaReader();
	EXPECT_EQ(full->pull(), delta->pull());
	for (int round = 0; round < 50; ++round)
	{
		const CountingSet<int> before = s.force();
		const size_t before_size = before.size();
		transact(
		    [&]
		    {
			    for (int i = 0; i < 20; ++i)
				    s.add(1000 + 100 * round + i);
			    s.remove(1000 + 100 * round + 7);
			    if (round > 0)
				    s.remove(1000 + 100 * (round - 1) + 3);
		    });
		const auto d = delta->pull();
		EXPECT_EQ(d, full->pull());
		EXPECT_EQ(d.size(), round > 0 ? 20u : 19u);
		EXPECT_EQ(before.size(), before_size);
		EXPECT_FALSE(before.contains(1000 + 100 * round + 1));
		EXPECT_EQ(s.force().size(), before_size + 19 - (round > 0 ? 1 : 0));
	}
}

TEST(ASetReaders, ShareUpstreamWork) // S13
{
	cset<int> s{1, 2, 3};
	int cnt = 0;
	auto m = map(s,
	             [&](int x)
	             {
		             ++cnt;
		             return x;
	             });
	auto r1 = m.getReader();
	auto r2 = m.getReader();
	r1->pull();
	r2->pull();
	EXPECT_EQ(cnt, 3);
	transact([&] { s.add(4); });
	r1->pull();
	r2->pull();
	EXPECT_EQ(cnt, 4);
	EXPECT_EQ(elements(r2->state()), v({1, 2, 3, 4}));
}

TEST(ASetCollect, PullsOnlyChangedInnerSets)
{
	cset<int> a{1, 2}, b{10};
	cset<int> outer{0, 1};
	auto c = collect(aset<int>(outer), [=](int i) { return i == 0 ? aset<int>(a) : aset<int>(b); });
	EXPECT_EQ(forced(c), v({1, 2, 10}));
	transact([&] { b.add(11); });
	EXPECT_EQ(forced(c), v({1, 2, 10, 11}));
	transact([&] { outer.remove(0); });
	EXPECT_EQ(forced(c), v({10, 11}));
	transact([&] { a.add(3); });
	EXPECT_EQ(forced(c), v({10, 11}));
	transact([&] { outer.add(0); });
	EXPECT_EQ(forced(c), v({1, 2, 3, 10, 11}));
}

TEST(ASetFilterA, SharedPredicateFlipsAllItsElements)
{
	cset<int> s{1, 2, 3, 4};
	cval<int> mod(2);
	auto f = filterA(aset<int>(s), [=](int x) { return map(mod, [x](int m) { return x % m == 0; }); });
	EXPECT_EQ(forced(f), v({2, 4}));
	transact([&] { mod.setValue(3); });
	EXPECT_EQ(forced(f), v({3}));
	transact([&] { s.add(6); });
	EXPECT_EQ(forced(f), v({3, 6}));
	auto shared = map(mod, [](int m) { return std::optional<int>(m); });
	auto c = chooseA(aset<int>(s), [=](int) { return shared; });
	EXPECT_EQ(forced(c), v({3}));
	transact([&] { mod.setValue(5); });
	EXPECT_EQ(forced(c), v({5}));
	transact([&] { s.clear(); });
	EXPECT_EQ(forced(c), v<int>({}));
}

// ---- H: history / readers ------------------------------------------------------------------------------------------

TEST(History, SingleReaderSeesDeltasAndState) // H2, H3
{
	cset<int> s;
	auto r = aset<int>(s).getReader();
	EXPECT_TRUE(r->pull().empty());
	transact(
	    [&]
	    {
		    s.add(1);
		    s.add(2);
	    });
	EXPECT_EQ(r->pull(), sd({{1, 1}, {2, 1}}));
	EXPECT_EQ(elements(r->state()), v({1, 2}));
	transact([&] { s.remove(1); });
	EXPECT_EQ(r->pull(), sd({{1, -1}}));
	EXPECT_EQ(elements(r->state()), v({2}));
	EXPECT_TRUE(r->pull().empty());
	EXPECT_EQ(elements(r->state()), v({2}));
}

TEST(History, CoalescesAddAndRemoveBeforeAPull) // H4
{
	cset<int> s{1};
	auto r = aset<int>(s).getReader();
	r->pull();
	transact([&] { s.add(7); });
	transact([&] { s.remove(7); });
	EXPECT_TRUE(r->pull().empty());
	transact(
	    [&]
	    {
		    s.add(7);
		    s.remove(7);
	    });
	EXPECT_TRUE(r->pull().empty());
}

TEST(History, ReadersPullingAtDifferentPacesEachSeeTheirOwnChanges) // H2 with several readers
{
	// a pulls after every change, b every other one, c once at the end: the last reader of a version takes its delta
	// instead of a copy, and must neither lose nor repeat a change for the others.
	cset<int> s{1};
	auto a = aset<int>(s).getReader(), b = aset<int>(s).getDeltaReader(), c = aset<int>(s).getReader();
	EXPECT_EQ(a->pull(), sd({{1, 1}}));
	EXPECT_EQ(b->pull(), sd({{1, 1}}));
	EXPECT_EQ(c->pull(), sd({{1, 1}}));
	transact([&] { s.add(2); });
	EXPECT_EQ(a->pull(), sd({{2, 1}}));
	transact([&] { s.add(3); });
	EXPECT_EQ(b->pull(), sd({{2, 1}, {3, 1}})); // b is the last at the version before 2: it takes that delta
	EXPECT_EQ(a->pull(), sd({{3, 1}}));
	transact([&] { s.remove(2); });
	EXPECT_EQ(a->pull(), sd({{2, -1}}));
	transact([&] { s.remove(1); });
	EXPECT_EQ(b->pull(), sd({{1, -1}, {2, -1}}));
	EXPECT_EQ(a->pull(), sd({{1, -1}}));
	EXPECT_EQ(c->pull(), sd({{1, -1}, {3, 1}})); // since c's first pull: 2 came and went, 3 came, 1 went
	EXPECT_EQ(elements(c->state()), v({3}));
	EXPECT_EQ(elements(a->state()), v({3}));
	transact([&] { s.add(4); });
	EXPECT_EQ(c->pull(), sd({{4, 1}}));
	EXPECT_EQ(b->pull(), sd({{4, 1}}));
	EXPECT_EQ(a->pull(), sd({{4, 1}}));
	EXPECT_TRUE(a->pull().empty());
	EXPECT_TRUE(b->pull().empty());
	EXPECT_TRUE(c->pull().empty());
	EXPECT_LE(s.history()->versionCount(), 3u);
}

TEST(History, DeadReadersReleaseTheirVersions) // H5
{
	cset<int> s;
	auto live = aset<int>(s).getReader();
	live->pull();
	for (int round = 0; round < 50; ++round)
	{
		{
			auto r = aset<int>(s).getReader();
			r->pull();
			std::vector<int> big;
			for (int i = 0; i < 1000; ++i)
				big.push_back(round * 1000 + i);
			transact(
			    [&]
			    {
				    s.clear();
				    s.unionWith(big);
			    });
		}                                           // r dies with a pending 2000-element delta
		EXPECT_EQ(s.history()->versionCount(), 1u); // only the live reader's version holds the delta
		EXPECT_EQ(live->pull().size(), round == 0 ? 1000u : 2000u);
	}
	EXPECT_EQ(s.count(), 1000u);
}

// ---- C: set callbacks ----------------------------------------------------------------------------------------------

TEST(ASetCallback, ReceivesStateBeforeAndDelta) // C5
{
	cset<int> s{1, 2};
	std::vector<std::pair<size_t, size_t>> calls;
	auto sub = subscribe(aset<int>(s), [&](const CountingSet<int>& before, const SetDelta<int>& d)
	                     { calls.emplace_back(before.size(), d.size()); });
	transact([&] { s.add(3); });
	transact(
	    [&]
	    {
		    s.add(4);
		    s.remove(1);
	    });
	sub.dispose();
	transact([&] { s.add(99); });
	EXPECT_EQ(calls, (std::vector<std::pair<size_t, size_t>>{{0, 2}, {2, 1}, {3, 2}}));
}

TEST(ASetCallback, SubscriptionOwnsItsReaderAndStopsWhenDisposed) // C8
{
	cset<int> input;
	std::set<int> mirror;
	auto apply = [](std::set<int>& m)
	{
		return [&m](const CountingSet<int>&, const SetDelta<int>& d)
		{
			for (auto& [k, c] : d)
			{
				if (c > 0)
					m.insert(k);
				else
					m.erase(k);
			}
		};
	};
	auto strong = subscribe(aset<int>(input), apply(mirror));
	std::set<int> scoped_mirror;
	{
		auto scoped = subscribe(map(aset<int>(input), [](int x) { return x; }), apply(scoped_mirror));
	}
	transact([&] { input.unionWith(v({1, 2, 3})); });
	EXPECT_EQ(mirror, (std::set<int>{1, 2, 3}));
	transact([&] { input.unionWith(v({4, 5})); });
	EXPECT_EQ(mirror, (std::set<int>{1, 2, 3, 4, 5}));
	strong.dispose();
	transact([&] { input.clear(); });
	EXPECT_EQ(mirror, (std::set<int>{1, 2, 3, 4, 5}));
	EXPECT_TRUE(scoped_mirror.empty());
}

// ---- R: reductions -------------------------------------------------------------------------------------------------

namespace
{
Reduction<int, int> sumGroup()
{
	return Reduction<int, int>{0, [](int s, int x) { return s + x; },
	                           [](int s, int x) { return std::optional<int>(s - x); }};
}
} // namespace

TEST(ASetReduce, GroupSum) // R1
{
	cset<int> s{1, 2, 3};
	auto r = reduce(aset<int>(s), sumGroup());
	EXPECT_EQ(r.force(), 6);
	transact([&] { s.add(4); });
	EXPECT_EQ(r.force(), 10);
	transact([&] { s.remove(1); });
	EXPECT_EQ(r.force(), 9);
	transact([&] { s.clear(); });
	EXPECT_EQ(r.force(), 0);
}

TEST(ASetReduce, FailingSubtractFallsBackToRefold) // R5
{
	cset<int> s;
	int failures = 0;
	Reduction<int, int> red{0, [](int a, int x) { return a + x; },
	                        [&](int a, int x) -> std::optional<int>
	                        {
		                        if (a % 2 != 0)
		                        {
			                        ++failures;
			                        return std::nullopt;
		                        }
		                        return a - x;
	                        }};
	auto r = reduce(aset<int>(s), red);
	auto ref = reduce(aset<int>(s), sumGroup());
	std::mt19937 rng(7);
	for (int i = 0; i < 200; ++i)
	{
		int x = int(rng() % 30);
		transact([&] { s.contains(x) ? (void)s.remove(x) : (void)s.add(x); });
		ASSERT_EQ(r.force(), ref.force());
	}
	EXPECT_GT(failures, 0);
}

TEST(ASetReduce, FloatSumIsExactAfterClearAndReset) // R6
{
	cset<double> s;
	auto r =
	    reduce(aset<double>(s), Reduction<double, double>{0.0, [](double a, double x) { return a + x; },
	                                                      [](double a, double x) { return std::optional(a - x); }});
	std::mt19937 rng(1);
	std::uniform_real_distribution<double> u(-1e6, 1e6);
	for (int i = 0; i < 10000; ++i)
	{
		s.add(u(rng));
		if (i % 1000 == 0)
			r.force();
	}
	r.force();
	s.clear();
	EXPECT_EQ(r.force(), 0.0);
	for (int i = 0; i < 100; ++i)
		s.add(u(rng));
	r.force();
	s.setValue({0.1});
	EXPECT_EQ(r.force(), 0.1);
}

TEST(ExistsA, OverCells) // R7
{
	cval<bool> a(false), b(false);
	cset<int> which{0, 1};
	auto exists = map(count(chooseA(aset<int>(which),
	                                [=](int i)
	                                {
		                                return map(i == 0 ? aval<bool>(a) : aval<bool>(b),
		                                           [i](bool x) { return x ? std::optional<int>(i) : std::nullopt; });
	                                })),
	                  [](size_t n) { return n > 0; });
	EXPECT_FALSE(exists.force());
	transact([&] { a.setValue(true); });
	EXPECT_TRUE(exists.force());
	transact(
	    [&]
	    {
		    b.setValue(true);
		    a.setValue(false);
	    });
	EXPECT_TRUE(exists.force());
	transact([&] { b.setValue(false); });
	EXPECT_FALSE(exists.force());
	transact([&] { a.setValue(true); });
	EXPECT_TRUE(exists.force());
	transact([&] { b.setValue(true); });
	EXPECT_TRUE(exists.force());
}

// ---- X: threading --------------------------------------------------------------------------------------------------

TEST(ASetThreads, StructuralChurnSubmittedFromOtherThreadsWhileOwnerPulls) // X1 adapted to the owner-thread rule
{
	cset<cval<int>> s;
	auto mapped = mapA(aset<cval<int>>(s), [](const cval<int>& c) { return aval<int>(c); });
	auto evens =
	    chooseA(aset<cval<int>>(s), [](const cval<int>& c)
	            { return map(aval<int>(c), [](int v) { return v % 2 == 0 ? std::optional<int>(v) : std::nullopt; }); });
	auto r1 = mapped.getReader();
	auto r2 = evens.getReader();
	ChangeQueue q;
	std::vector<cval<int>> cells; // owned and touched by the owner thread only
	// Runs on the owner thread: the closure captures references to owner objects and plain numbers.
	auto change = [&s, &cells](int kind, int a, int b)
	{
		auto live = elements(s.history()->state());
		if (kind == 0 || live.empty())
		{
			cells.emplace_back(a);
			s.add(cells.back());
		}
		else if (kind == 1 && live.size() > 10)
			s.remove(live[size_t(a) % live.size()]);
		else if (kind == 2)
		{
			auto c = live[size_t(a) % live.size()];
			c.setValue(b);
			s.remove(c);
		}
		else
			live[size_t(a) % live.size()].setValue(b);
	};
	std::atomic<int> finished{0};
	std::vector<std::thread> threads;
	for (int t = 0; t < 3; ++t)
		threads.emplace_back(
		    [&, t]
		    {
			    std::mt19937 rng(uint32_t(t + 1));
			    for (int i = 0; i < 2000; ++i)
			    {
				    int kind = int(rng() % 4), a = int(rng() % 1000), b = int(rng() % 100);
				    q.submit([&change, kind, a, b] { change(kind, a, b); });
			    }
			    finished.fetch_add(1);
		    });
	auto check = [&]
	{
		std::set<int> want_all, want_even;
		s.history()->state().forEach(
		    [&](const cval<int>& c, int)
		    {
			    want_all.insert(c.value());
			    if (c.value() % 2 == 0)
				    want_even.insert(c.value());
		    });
		r1->pull();
		r2->pull();
		auto a = elements(r1->state());
		auto e = elements(r2->state());
		ASSERT_EQ(std::set<int>(a.begin(), a.end()), want_all);
		ASSERT_EQ(std::set<int>(e.begin(), e.end()), want_even);
	};
	while (finished.load() < 3 || q.pending() > 0)
	{
		q.apply();
		check();
	}
	for (auto& t : threads)
		t.join();
	q.apply();
	check();
	cells.clear();
}
