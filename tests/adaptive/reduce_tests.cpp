// reduceByA over sets and lists, and computeDelta between two lists keyed by index (issue #35's operators): behaviour
// in words, work counted (a changed cell costs one sub + add, not a pass), and randomised differential tests against
// values recomputed from scratch after every transaction.
#include <gtest/gtest.h>

#include "../test_seed.hpp"
#include "differential.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/reduce.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

/// A sum that counts the calls of add and sub.
struct Counted
{
	int adds = 0, subs = 0;
	Reduction<int, int> sum()
	{
		return Reduction<int, int>{0,
		                           [this](int s, int x)
		                           {
			                           ++adds;
			                           return s + x;
		                           },
		                           [this](int s, int x)
		                           {
			                           ++subs;
			                           return std::optional<int>(s - x);
		                           }};
	}
};

Reduction<int, int> minimum()
{
	return Reduction<int, int>{1 << 30, [](int s, int x) { return std::min(s, x); }, {}};
}

} // namespace

// ---- reduceByA over sets -------------------------------------------------------------------------------------------

TEST(ASetReduceByA, SumsTheCellsOfTheElements)
{
	std::vector<cval<int>> cells;
	for (int i = 0; i < 10; ++i)
		cells.emplace_back(i * 100);
	cset<int> ids{1, 2, 3};
	int calls = 0;
	auto total = reduceByA(
	    aset<int>(ids),
	    [&](int id)
	    {
		    ++calls;
		    return aval<int>(cells[size_t(id)]);
	    },
	    Reduction<int, int>{0, [](int s, int x) { return s + x; },
	                        [](int s, int x) { return std::optional<int>(s - x); }});
	EXPECT_EQ(total.force(), 600);
	EXPECT_EQ(calls, 3);
	cells[2].setValue(5); // a cell of a member
	EXPECT_EQ(total.force(), 100 + 5 + 300);
	ids.add(9);
	EXPECT_EQ(total.force(), 405 + 900);
	EXPECT_EQ(calls, 4) << "f runs once per added element";
	ids.remove(1);
	EXPECT_EQ(total.force(), 1205);
	cells[1].setValue(-7); // no longer a member: no effect
	EXPECT_FALSE(total.outOfDate()) << "the cell of a removed element is no longer an input";
	EXPECT_EQ(total.force(), 1205);
	transact(
	    [&]
	    {
		    cells[3].setValue(0);
		    ids.add(1);
	    });
	EXPECT_EQ(total.force(), 5 + 0 + 900 - 7);
	ids.clear();
	EXPECT_EQ(total.force(), 0);
}

TEST(ASetReduceByA, AChangedCellCostsOneSubAndOneAddWhateverTheSize)
{
	std::vector<cval<int>> cells;
	cset<int> ids;
	for (int i = 0; i < 1000; ++i)
	{
		cells.emplace_back(i);
		ids.add(i);
	}
	Counted counted;
	auto total = reduceByA(
	    aset<int>(ids), [&](int id) { return aval<int>(cells[size_t(id)]); }, counted.sum());
	EXPECT_EQ(total.force(), 999 * 1000 / 2);
	counted = Counted{0, 0};
	cells[500].setValue(10500);
	EXPECT_EQ(total.force(), 999 * 1000 / 2 + 10000);
	EXPECT_EQ(counted.adds, 1);
	EXPECT_EQ(counted.subs, 1);
	counted = Counted{0, 0};
	transact(
	    [&]
	    {
		    ids.remove(3);
		    ids.remove(4);
		    cells[7].setValue(8);
	    });
	EXPECT_EQ(total.force(), 999 * 1000 / 2 + 10000 - 3 - 4 + 1);
	EXPECT_EQ(counted.adds, 1);
	EXPECT_EQ(counted.subs, 3);
}

TEST(ASetReduceByA, ElementsSharingACellCountItOncePerElement)
{
	cval<int> shared(5), other(1);
	cset<int> ids{1, 2, 3};
	auto total = reduceByA(
	    aset<int>(ids), [&](int id) { return id == 3 ? aval<int>(other) : aval<int>(shared); },
	    Reduction<int, int>{0, [](int s, int x) { return s + x; },
	                        [](int s, int x) { return std::optional<int>(s - x); }});
	EXPECT_EQ(total.force(), 11);
	shared.setValue(10);
	EXPECT_EQ(total.force(), 21);
	ids.remove(1);
	shared.setValue(20);
	EXPECT_EQ(total.force(), 21);
	ids.remove(2); // the shared cell has no user left: it is no longer an input
	EXPECT_EQ(total.force(), 1);
	shared.setValue(30);
	EXPECT_FALSE(total.outOfDate());
	EXPECT_EQ(total.force(), 1);
}

TEST(ASetReduceByA, FoldWithoutInverseRefoldsOnRemoval)
{
	std::vector<cval<int>> cells{cval<int>(4), cval<int>(2), cval<int>(9)};
	cset<int> ids{0, 1, 2};
	auto least = reduceByA(
	    aset<int>(ids), [&](int id) { return aval<int>(cells[size_t(id)]); }, minimum());
	EXPECT_EQ(least.force(), 2);
	cells[1].setValue(7);
	EXPECT_EQ(least.force(), 4);
	ids.remove(0);
	EXPECT_EQ(least.force(), 7);
	cells[2].setValue(1);
	EXPECT_EQ(least.force(), 1);
}

// ---- reduceByA over lists ------------------------------------------------------------------------------------------

TEST(AListReduceByA, FollowsCellsReplacementsAndIndices)
{
	std::vector<cval<int>> cells{cval<int>(1), cval<int>(10), cval<int>(100)};
	clist<int> l{0, 1, 2, 1}; // element values pick a cell; cell 1 is used twice
	std::vector<Index> seen;
	auto total = reduceByAi(
	    alist<int>(l),
	    [&](const Index& i, int c)
	    {
		    seen.push_back(i);
		    return aval<int>(cells[size_t(c)]);
	    },
	    Reduction<int, int>{0, [](int s, int x) { return s + x; },
	                        [](int s, int x) { return std::optional<int>(s - x); }});
	EXPECT_EQ(total.force(), 121);
	ASSERT_EQ(seen.size(), 4u);
	for (size_t p = 0; p < 4; ++p)
		EXPECT_EQ(seen[p], l.indexAt(p));
	cells[1].setValue(20);
	EXPECT_EQ(total.force(), 141);
	l.setAt(3, 2); // replaced: leaves with cell 1's value, enters with cell 2's
	EXPECT_EQ(total.force(), 1 + 20 + 100 + 100);
	l.removeAt(1);
	EXPECT_EQ(total.force(), 201);
	cells[1].setValue(0);
	EXPECT_FALSE(total.outOfDate());
	auto plain = reduceByA(
	    alist<int>(l), [&](int c) { return aval<int>(cells[size_t(c)]); }, minimum());
	EXPECT_EQ(plain.force(), 1);
	cells[0].setValue(500);
	EXPECT_EQ(plain.force(), 100);
}

// ---- differential --------------------------------------------------------------------------------------------------

namespace
{

/// One random case: a set and a list of cell numbers (0..7), cells changing, elements added, removed and replaced;
/// reduceByA with a group (sum) and a fold without inverse (min) compared with a recomputation after every transaction.
bool runReduceByACase(uint32_t seed)
{
	std::mt19937 rng(seed);
	auto rand = [&](int n) { return int(rng() % uint32_t(n)); };
	std::vector<cval<int>> cells;
	std::vector<int> cell_model;
	for (int i = 0; i < 8; ++i)
	{
		cells.emplace_back(rand(50));
		cell_model.push_back(cells.back().value());
	}
	cset<int> set;
	std::set<int> set_model;
	clist<int> list;
	std::vector<int> list_model;
	auto cell = [&](int c) { return aval<int>(cells[size_t(c % 8)]); };
	Reduction<int, int> sum{0, [](int s, int x) { return s + x; },
	                        [](int s, int x) { return std::optional<int>(s - x); }};
	auto set_sum = reduceByA(aset<int>(set), cell, sum);
	auto set_min = reduceByA(aset<int>(set), cell, minimum());
	auto list_sum = reduceByA(alist<int>(list), cell, sum);
	auto list_min = reduceByAi(
	    alist<int>(list), [&](const Index&, int c) { return cell(c); }, minimum());
	std::vector<std::string> history;
	for (int tx = 0; tx < 12; ++tx)
	{
		{
			Transaction t;
			for (int n = 1 + rand(5); n > 0; --n)
			{
				int what = rand(8), x = rand(16);
				std::ostringstream log;
				if (what < 2)
				{
					set_model.count(x) ? (void)set.remove(x) : (void)set.add(x);
					set_model.count(x) ? (void)set_model.erase(x) : (void)set_model.insert(x);
					log << "set toggle " << x;
				}
				else if (what < 4)
				{
					size_t p = size_t(rand(int(list_model.size()) + 1));
					list.insertAt(p, x);
					list_model.insert(list_model.begin() + int64_t(p), x);
					log << "list insertAt " << p << " " << x;
				}
				else if (what < 5 && !list_model.empty())
				{
					size_t p = size_t(rand(int(list_model.size())));
					list.removeAt(p);
					list_model.erase(list_model.begin() + int64_t(p));
					log << "list removeAt " << p;
				}
				else if (what < 6 && !list_model.empty())
				{
					size_t p = size_t(rand(int(list_model.size())));
					list.setAt(p, x);
					list_model[p] = x;
					log << "list setAt " << p << " " << x;
				}
				else
				{
					int c = rand(8), v = rand(50) - 10;
					cells[size_t(c)].setValue(v);
					cell_model[size_t(c)] = v;
					log << "cell " << c << " := " << v;
				}
				history.push_back(log.str());
			}
		}
		int want_set_sum = 0, want_set_min = 1 << 30, want_list_sum = 0, want_list_min = 1 << 30;
		for (int x : set_model)
		{
			want_set_sum += cell_model[size_t(x % 8)];
			want_set_min = std::min(want_set_min, cell_model[size_t(x % 8)]);
		}
		for (int x : list_model)
		{
			want_list_sum += cell_model[size_t(x % 8)];
			want_list_min = std::min(want_list_min, cell_model[size_t(x % 8)]);
		}
		// Forced irregularly: several transactions' changes may reach one evaluation.
		if (rand(3) == 0 && tx < 11)
			continue;
		if (set_sum.force() != want_set_sum || set_min.force() != want_set_min || list_sum.force() != want_list_sum ||
		    list_min.force() != want_list_min)
		{
			ADD_FAILURE() << "mismatch after transaction " << tx << ": set sum " << set_sum.force() << " want "
			              << want_set_sum << ", set min " << set_min.force() << " want " << want_set_min
			              << ", list sum " << list_sum.force() << " want " << want_list_sum << ", list min "
			              << list_min.force() << " want " << want_list_min << "\n"
			              << quokka::adaptive::test::failureDump(seed, "reduceByA(set|list, cell, sum|min)", history);
			return false;
		}
	}
	return true;
}

} // namespace

TEST(ReduceByADifferential, RandomChangesMatchRecomputedAggregates)
{
	const uint32_t first = quokka::test::testSeed(1);
	std::printf("reduceByA differential: seeds %u..%u\n", first, first + 399);
	for (uint32_t seed = first; seed < first + 400; ++seed)
	{
		if (!runReduceByACase(seed))
			break;
	}
}

// ---- computeDelta between lists ------------------------------------------------------------------------------------

namespace
{

/// A random edit of `l` (insert, remove, replace), building versions that share indices and structure.
void randomEdit(std::mt19937& rng, clist<int>& l)
{
	int what = int(rng() % 4);
	int x = int(rng() % 6);
	if (what == 0 || l.count() == 0)
		l.insertAt(rng() % (l.count() + 1), x);
	else if (what == 1)
		l.removeAt(rng() % l.count());
	else
		l.setAt(rng() % l.count(), x);
}

IndexList<int> applied(IndexList<int> l, const ListDelta<int>& d)
{
	ListTrace<int>::apply(l, d);
	return l;
}

ListDelta<int> combined(ListDelta<int> a, const ListDelta<int>& b)
{
	ListTrace<int>::combine(a, b);
	return a;
}

} // namespace

TEST(ListComputeDelta, RoundTripsForRandomLists)
{
	const uint32_t seed = quokka::test::testSeed(3);
	std::mt19937 rng(seed);
	for (int round = 0; round < 300; ++round)
	{
		// l1, l2, l3: successive versions of one list (shared indices), or with probability 1/4 an unrelated list.
		clist<int> l;
		for (int n = int(rng() % 20); n > 0; --n)
			l.append(int(rng() % 6));
		IndexList<int> l1 = l.state();
		for (int n = int(rng() % 8); n > 0; --n)
			randomEdit(rng, l);
		IndexList<int> l2 = l.state();
		if (rng() % 4 == 0)
		{
			clist<int> other;
			for (int n = int(rng() % 20); n > 0; --n)
				other.append(int(rng() % 6));
			l2 = other.state();
		}
		IndexList<int> l3 = l2;
		for (int n = int(rng() % 8); n > 0; --n)
		{
			Index i = l3.empty() ? Index::after(Index::zero()) : Index::after(l3.at(rng() % l3.size()).first);
			if (rng() % 3 == 0 && !l3.empty())
				l3.erase(l3.at(rng() % l3.size()).first);
			else
				l3.set(i, int(rng() % 6));
		}
		const ListDelta<int> d12 = computeDelta(l1, l2), d23 = computeDelta(l2, l3), d31 = computeDelta(l3, l1);
		SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round));
		EXPECT_TRUE(computeDelta(l1, l1).empty());
		EXPECT_TRUE(computeDelta(l2, IndexList<int>(l2)).empty());
		ASSERT_EQ(applied(l1, d12), l2);
		ASSERT_EQ(applied(l2, d23), l3);
		ASSERT_EQ(applied(l1, combined(d12, d23)), l3);
		ASSERT_EQ(applied(l1, combined(combined(d12, d23), d31)), l1);
		// Minimal: every entry changes something (no Set of an equal value, no Remove of an absent index).
		for (const auto& [i, op] : d12)
		{
			const int* old = l1.find(i);
			if (op)
				EXPECT_TRUE(!old || *old != *op);
			else
				EXPECT_NE(old, nullptr);
		}
	}
}

TEST(ListComputeDelta, KeysByIndexNotByPosition)
{
	clist<int> l{1, 2, 3};
	IndexList<int> before = l.state();
	Index first = l.indexAt(0);
	l.prepend(0); // every position shifts, no existing index changes
	ListDelta<int> d = computeDelta(before, l.state());
	ASSERT_EQ(d.size(), 1u);
	EXPECT_EQ(*d.begin()->second, 0);
	EXPECT_TRUE(d.begin()->first < first);
	l.setAt(2, 20); // the element 2 keeps its index, its value changes
	d = computeDelta(before, l.state());
	ASSERT_EQ(d.size(), 2u);
	EXPECT_EQ(d.at(l.indexAt(2)), std::optional<int>(20));
}

TEST(PMapDiff, SkipsSharedSubtreesAndReportsEveryDifference)
{
	// A large map and a version with a few changes: the differences are exactly the changes, and a map against an
	// unrelated copy with equal content reports nothing.
	PMap<int, int> a;
	for (int k = 0; k < 100000; ++k)
		a.set(k, k);
	PMap<int, int> b = a;
	b.set(50000, -1);
	b.erase(7);
	b.set(100000, 5);
	std::vector<std::pair<int, int>> seen; // (key, 0 removed / 1 added / 2 changed)
	PMap<int, int>::diff(a, b, [&](int k, const int* o, const int* n) { seen.emplace_back(k, !o ? 1 : !n ? 0 : 2); });
	EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{7, 0}, {50000, 2}, {100000, 1}}));
	PMap<int, int> c;
	for (int k = 99999; k >= 0; --k)
		c.set(k, k);
	int n = 0;
	PMap<int, int>::diff(a, c, [&](int, const int*, const int*) { ++n; });
	EXPECT_EQ(n, 0);
}
