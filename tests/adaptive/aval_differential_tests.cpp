// Randomised differential tests for aval: random DAGs of map/map2/map3/bind/custom/cutoff/
// mapNonAdaptive over random cvals, random batches of writes per transaction, a random subset of nodes forced after
// each transaction (so partially evaluated graphs are exercised) and compared with a recompute-everything reference;
// value subscriptions must have seen the latest value. Failures print the seed, the graph and the history.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <quokka/adaptive/aval.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

struct Node
{
	aval<int> value;
	std::function<int()> ref;
	std::string desc;
};

struct VEnv
{
	std::mt19937 rng;
	std::vector<cval<int>> inputs;
	std::vector<int> models;
	std::vector<Node> nodes; // inputs first, then derived nodes in creation order
	std::vector<std::string> history;
	int rand(int n) { return int(rng() % uint32_t(n)); }
	const Node& pick() { return nodes[size_t(rand(int(nodes.size())))]; }
};

template <typename... A>
std::string cat(const A&... a)
{
	std::ostringstream o;
	(o << ... << a);
	return o.str();
}

Node makeNode(VEnv& env, size_t id)
{
	Node a = env.pick(), b = env.pick(), c = env.pick();
	int k = 1 + env.rand(5);
	switch (env.rand(7))
	{
	case 0:
		return Node{map(a.value, [k](int x) { return (x * k + 1) % 101; }),
		            [ra = a.ref, k] { return (ra() * k + 1) % 101; }, cat("n", id, "=map(", a.desc, ")")};
	case 1:
		return Node{map2(a.value, b.value, [](int x, int y) { return (x - y) % 97; }),
		            [ra = a.ref, rb = b.ref] { return (ra() - rb()) % 97; },
		            cat("n", id, "=map2(", a.desc, ",", b.desc, ")")};
	case 2:
		return Node{map3(a.value, b.value, c.value, [](int x, int y, int z) { return x % 3 == 0 ? y : z; }),
		            [ra = a.ref, rb = b.ref, rc = c.ref] { return ra() % 3 == 0 ? rb() : rc(); },
		            cat("n", id, "=map3(", a.desc, ",", b.desc, ",", c.desc, ")")};
	case 3:
	{
		aval<int> vb = b.value, vc = c.value;
		return Node{adaptive::bind(a.value, [vb, vc](int x) { return x % 2 == 0 ? vb : vc; }),
		            [ra = a.ref, rb = b.ref, rc = c.ref] { return ra() % 2 == 0 ? rb() : rc(); },
		            cat("n", id, "=bind(", a.desc, ",", b.desc, ",", c.desc, ")")};
	}
	case 4:
	{
		// custom reading a dynamic number of inputs, creating an inner node per evaluation (never goes stale, V8)
		aval<int> va = a.value, vb = b.value, vc = c.value;
		return Node{custom(
		                [va, vb, vc](Token t)
		                {
			                int n = va.getValue(t);
			                auto inner = map(vb, [](int x) { return x + 7; });
			                return n % 2 == 0 ? inner.getValue(t) : n + vc.getValue(t);
		                }),
		            [ra = a.ref, rb = b.ref, rc = c.ref]
		            {
			            int n = ra();
			            return n % 2 == 0 ? rb() + 7 : n + rc();
		            },
		            cat("n", id, "=custom(", a.desc, ",", b.desc, ",", c.desc, ")")};
	}
	case 5:
		return Node{cutoff(map(a.value, [k](int x) { return x / (k + 1); })),
		            [ra = a.ref, k] { return ra() / (k + 1); }, cat("n", id, "=cutoff(", a.desc, ")")};
	default:
		return Node{mapNonAdaptive(a.value, [](int x) { return -x; }), [ra = a.ref] { return -ra(); },
		            cat("n", id, "=mapNonAdaptive(", a.desc, ")")};
	}
}

bool runValueCase(uint32_t seed)
{
	VEnv env{std::mt19937(seed), {}, {}, {}, {}};
	for (int i = 0; i < 4; ++i)
	{
		env.inputs.emplace_back(env.rand(20));
		env.models.push_back(env.inputs.back().value());
		size_t idx = size_t(i);
		env.nodes.push_back(Node{env.inputs.back(), [&env, idx] { return env.models[idx]; }, cat("c", i)});
	}
	int count = 3 + env.rand(15);
	for (int i = 0; i < count; ++i)
	{
		Node n = makeNode(env, size_t(i));
		env.history.push_back(n.desc);
		n.desc = cat("n", i); // later nodes refer to it by name
		env.nodes.push_back(std::move(n));
	}
	const Node& watched = env.nodes.back();
	int delivered = 0;
	bool has_delivery = false;
	auto sub = subscribe(watched.value,
	                     [&](int v)
	                     {
		                     delivered = v;
		                     has_delivery = true;
	                     });
	auto fail = [&](const std::string& what)
	{
		std::ostringstream o;
		o << what << "\nseed " << seed << "\ngraph and history:\n";
		for (auto& h : env.history)
			o << "  " << h << "\n";
		ADD_FAILURE() << o.str();
		return false;
	};
	for (int tx = 0; tx < 12; ++tx)
	{
		if (tx > 0)
		{
			env.history.push_back(cat("-- transaction ", tx));
			Transaction t;
			for (int n = 1 + env.rand(3); n > 0; --n)
			{
				size_t i = size_t(env.rand(int(env.inputs.size())));
				int v = env.rand(20);
				env.inputs[i].setValue(v);
				env.models[i] = v;
				env.history.push_back(cat("c", i, ":=", v));
			}
		}
		for (auto& n : env.nodes)
		{
			if (env.rand(3) != 0)
				continue; // leave some nodes unread: partially evaluated graphs
			if (n.value.force() != n.ref())
				return fail(cat("mismatch at ", n.desc, " after transaction ", tx, ": got ", n.value.force(), " want ",
				                n.ref()));
		}
		if (!has_delivery || delivered != watched.ref())
			return fail(cat("value callback saw ", delivered, " want ", watched.ref(), " after transaction ", tx));
	}
	return true;
}

} // namespace

TEST(AValDifferential, RandomGraphsMatchRecomputedReference)
{
	std::printf("aval differential: seeds 1..600\n");
	for (uint32_t seed = 1; seed <= 600; ++seed)
	{
		if (!runValueCase(seed))
			break;
	}
}
