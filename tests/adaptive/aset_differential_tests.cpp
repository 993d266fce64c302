// Randomised differential tests for aset: random expression graphs over random
// csets and cvals, random batches of changes per transaction, compared after every transaction with a
// recompute-everything reference. On failure the seed, the expression and the whole operation history are printed.
#include <gtest/gtest.h>

#include "differential.hpp"

#include <cstdio>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <quokka/adaptive/aset.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

struct Env
{
	std::mt19937 rng;
	std::vector<cset<int>> sets;
	std::vector<std::set<int>> set_models;
	std::vector<cval<int>> vals;
	std::vector<int> val_models;
	std::vector<std::string> history;

	int rand(int n) { return int(rng() % uint32_t(n)); }
};

struct Expr
{
	aset<int> set;
	std::function<std::set<int>()> ref;
	std::string desc;
};

Expr leaf(Env& env)
{
	int i = env.rand(int(env.sets.size()));
	return Expr{env.sets[size_t(i)], [&env, i] { return env.set_models[size_t(i)]; }, "s" + std::to_string(i)};
}

Expr gen(Env& env, int depth)
{
	if (depth == 0 || env.rand(5) == 0)
		return leaf(env);
	int op = env.rand(13);
	Expr a = gen(env, depth - 1);
	int k = 1 + env.rand(5);
	int j = env.rand(int(env.vals.size()));
	auto ref = a.ref;
	switch (op)
	{
	case 0:
	{
		auto f = [k](int x) { return (x * k) % 13; };
		return Expr{map(a.set, f),
		            [ref, f]
		            {
			            std::set<int> r;
			            for (int x : ref())
				            r.insert(f(x));
			            return r;
		            },
		            "map(" + a.desc + ")"};
	}
	case 1:
	{
		auto p = [k](int x) { return x % (k + 1) != 0; };
		return Expr{filter(a.set, p),
		            [ref, p]
		            {
			            std::set<int> r;
			            for (int x : ref())
				            if (p(x))
					            r.insert(x);
			            return r;
		            },
		            "filter(" + a.desc + ")"};
	}
	case 2:
	{
		auto f = [k](int x) { return x % 3 == 0 ? std::nullopt : std::optional<int>(x / 2 + k); };
		return Expr{choose(a.set, f),
		            [ref, f]
		            {
			            std::set<int> r;
			            for (int x : ref())
				            if (auto y = f(x))
					            r.insert(*y);
			            return r;
		            },
		            "choose(" + a.desc + ")"};
	}
	case 3:
	case 4:
	case 5:
	case 6:
	{
		Expr b = gen(env, depth - 1);
		auto rb = b.ref;
		std::function<bool(bool, bool)> pred;
		aset<int> s;
		std::string name;
		if (op == 3)
		{
			s = unionOf(a.set, b.set), pred = [](bool x, bool y) { return x || y; }, name = "union";
		}
		else if (op == 4)
		{
			s = difference(a.set, b.set), pred = [](bool x, bool y) { return x && !y; }, name = "difference";
		}
		else if (op == 5)
		{
			s = intersect(a.set, b.set), pred = [](bool x, bool y) { return x && y; }, name = "intersect";
		}
		else
		{
			s = symmetricDifference(a.set, b.set), pred = [](bool x, bool y) { return x != y; }, name = "xor";
		}
		return Expr{s,
		            [ref, rb, pred]
		            {
			            std::set<int> x = ref(), y = rb(), all = x, r;
			            all.insert(y.begin(), y.end());
			            for (int e : all)
				            if (pred(x.count(e) > 0, y.count(e) > 0))
					            r.insert(e);
			            return r;
		            },
		            name + "(" + a.desc + "," + b.desc + ")"};
	}
	case 7:
	{
		int si = env.rand(int(env.sets.size()));
		cset<int> inner = env.sets[size_t(si)];
		auto s = collect(a.set, [inner](int x) { return x % 3 == 0 ? aset<int>(inner) : asetOf<int>({x, x + 100}); });
		return Expr{s,
		            [ref, &env, si]
		            {
			            std::set<int> r;
			            for (int x : ref())
			            {
				            if (x % 3 == 0)
					            r.insert(env.set_models[size_t(si)].begin(), env.set_models[size_t(si)].end());
				            else
					            r.insert({x, x + 100});
			            }
			            return r;
		            },
		            "collect(" + a.desc + ",s" + std::to_string(si) + ")"};
	}
	case 8:
	{
		cval<int> c = env.vals[size_t(j)];
		auto s = filterA(a.set, [c](int x) { return map(c, [x](int v) { return (x + v) % 3 != 0; }); });
		return Expr{s,
		            [ref, &env, j]
		            {
			            std::set<int> r;
			            for (int x : ref())
				            if ((x + env.val_models[size_t(j)]) % 3 != 0)
					            r.insert(x);
			            return r;
		            },
		            "filterA(" + a.desc + ",v" + std::to_string(j) + ")"};
	}
	case 9:
	{
		cval<int> c = env.vals[size_t(j)];
		auto s = mapA(a.set, [c](int x) { return map(c, [x](int v) { return (x * v) % 17; }); });
		return Expr{s,
		            [ref, &env, j]
		            {
			            std::set<int> r;
			            for (int x : ref())
				            r.insert((x * env.val_models[size_t(j)]) % 17);
			            return r;
		            },
		            "mapA(" + a.desc + ",v" + std::to_string(j) + ")"};
	}
	case 10:
	{
		cval<int> c = env.vals[size_t(j)];
		auto f = [](int x, int v) { return (x + v) % 4 == 0 ? std::nullopt : std::optional<int>(x % 7 + v % 3); };
		auto s = chooseA(a.set, [c, f](int x) { return map(c, [x, f](int v) { return f(x, v); }); });
		return Expr{s,
		            [ref, &env, j, f]
		            {
			            std::set<int> r;
			            for (int x : ref())
				            if (auto y = f(x, env.val_models[size_t(j)]))
					            r.insert(*y);
			            return r;
		            },
		            "chooseA(" + a.desc + ",v" + std::to_string(j) + ")"};
	}
	case 11:
	{
		Expr b = gen(env, depth - 1);
		cval<int> c = env.vals[size_t(j)];
		aset<int> sa = a.set, sb = b.set;
		auto rb = b.ref;
		auto s = adaptive::bind(aval<int>(c), [sa, sb](int v) { return v % 2 == 0 ? sa : sb; });
		return Expr{s, [ref, rb, &env, j] { return env.val_models[size_t(j)] % 2 == 0 ? ref() : rb(); },
		            "bind(v" + std::to_string(j) + "," + a.desc + "," + b.desc + ")"};
	}
	default:
	{
		// Shared cell for every element: chooseA with one aval read by many elements.
		cval<int> c = env.vals[size_t(j)];
		auto cell = map(c, [](int v) { return v % 3 == 0 ? std::nullopt : std::optional<int>(v); });
		auto s = chooseA(a.set, [cell](int) { return cell; });
		return Expr{s,
		            [ref, &env, j]
		            {
			            std::set<int> r;
			            int v = env.val_models[size_t(j)];
			            if (!ref().empty() && v % 3 != 0)
				            r.insert(v);
			            return r;
		            },
		            "chooseAShared(" + a.desc + ",v" + std::to_string(j) + ")"};
	}
	}
}

void randomChange(Env& env)
{
	int what = env.rand(10);
	std::ostringstream log;
	if (what < 6)
	{
		size_t i = size_t(env.rand(int(env.sets.size())));
		int x = env.rand(20);
		if (env.rand(2) == 0)
		{
			env.sets[i].add(x);
			env.set_models[i].insert(x);
			log << "s" << i << ".add(" << x << ")";
		}
		else
		{
			env.sets[i].remove(x);
			env.set_models[i].erase(x);
			log << "s" << i << ".remove(" << x << ")";
		}
	}
	else if (what < 9)
	{
		size_t i = size_t(env.rand(int(env.vals.size())));
		int x = env.rand(10);
		env.vals[i].setValue(x);
		env.val_models[i] = x;
		log << "v" << i << ":=" << x;
	}
	else
	{
		size_t i = size_t(env.rand(int(env.sets.size())));
		std::vector<int> xs;
		for (int n = env.rand(6); n > 0; --n)
			xs.push_back(env.rand(20));
		env.sets[i].setValue(xs);
		env.set_models[i] = std::set<int>(xs.begin(), xs.end());
		log << "s" << i << ".setValue(" << xs.size() << " items)";
	}
	env.history.push_back(log.str());
}

std::string dump(const Env& env, uint32_t seed, const std::string& desc)
{
	return quokka::adaptive::test::failureDump(seed, desc, env.history);
}

std::set<int> toSet(const CountingSet<int>& s)
{
	std::set<int> r;
	s.forEach([&](int k, int) { r.insert(k); });
	return r;
}

/// One seeded case; returns false (after reporting) on the first mismatch.
bool runCase(uint32_t seed)
{
	Env env{std::mt19937(seed), {}, {}, {}, {}, {}};
	for (int i = 0; i < 3; ++i)
	{
		std::vector<int> xs;
		for (int n = env.rand(8); n > 0; --n)
			xs.push_back(env.rand(20));
		env.sets.emplace_back(xs);
		env.set_models.emplace_back(xs.begin(), xs.end());
		env.vals.emplace_back(env.rand(10));
		env.val_models.push_back(env.vals.back().value());
	}
	Expr e = gen(env, 1 + env.rand(5));
	auto r1 = e.set.getReader();
	auto r2 = e.set.getReader();
	std::set<int> mirror;
	for (int tx = 0; tx < 12; ++tx)
	{
		if (tx > 0)
		{
			env.history.push_back("-- transaction " + std::to_string(tx));
			Transaction t;
			for (int n = 1 + env.rand(5); n > 0; --n)
				randomChange(env);
		}
		std::set<int> want = e.ref();
		for (const auto& [k, c] : r1->pull())
		{
			bool ok = c > 0 ? mirror.insert(k).second : mirror.erase(k) == 1;
			if (!ok || (c != 1 && c != -1))
			{
				ADD_FAILURE() << "invalid delta entry " << k << ":" << c << "\n" << dump(env, seed, e.desc);
				return false;
			}
		}
		if (mirror != want || toSet(r1->state()) != want || toSet(e.set.force()) != want)
		{
			ADD_FAILURE() << "mismatch after transaction " << tx << "\n" << dump(env, seed, e.desc);
			return false;
		}
		int mode = env.rand(4);
		if (mode == 0)
			r2 = e.set.getReader(); // a fresh reader starts from the full content
		if (mode <= 1)
		{
			r2->pull();
			if (toSet(r2->state()) != want)
			{
				ADD_FAILURE() << "second reader mismatch after transaction " << tx << "\n" << dump(env, seed, e.desc);
				return false;
			}
		}
	}
	return true;
}

} // namespace

TEST(ASetDifferential, RandomGraphsMatchRecomputedReference)
{
	std::printf("aset differential: seeds 1..600\n");
	for (uint32_t seed = 1; seed <= 600; ++seed)
	{
		if (!runCase(seed))
			break;
	}
}
