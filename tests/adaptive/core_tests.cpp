// Scenarios of transactions and marking (T), aval combinators (V), callbacks (C), lifetime and threading (G, X).
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <quokka/adaptive/aval.hpp>
#include <quokka/adaptive/change_queue.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

// ---- T: transactions and marking ----------------------------------------------------------------------------------

TEST(Transaction, NestedScopesJoinTheOuterOne) // T1 [ours: nested scopes join]
{
	EXPECT_EQ(Transaction::current(), nullptr);
	{
		Transaction outer;
		Transaction* a = Transaction::current();
		EXPECT_EQ(a, &outer);
		{
			Transaction inner;
			EXPECT_EQ(Transaction::current(), a);
		}
		EXPECT_EQ(Transaction::current(), a);
	}
	EXPECT_EQ(Transaction::current(), nullptr);
}

TEST(Transaction, NestedChangesCommitWithTheOuterScope)
{
	cval<int> c(1);
	auto m = map(c, [](int x) { return x + 1; });
	EXPECT_EQ(m.force(), 2);
	{
		Transaction outer;
		{
			Transaction inner;
			c.setValue(5);
		}
		EXPECT_FALSE(m.outOfDate()); // not committed yet
	}
	EXPECT_TRUE(m.outOfDate());
	EXPECT_EQ(m.force(), 6);
}

TEST(Transaction, ThrowingNestedScopeLeavesOuterCurrent) // T2
{
	Transaction outer;
	try
	{
		transact([] { throw std::runtime_error("x"); });
	}
	catch (const std::runtime_error&)
	{
	}
	EXPECT_EQ(Transaction::current(), &outer);
}

TEST(Transaction, CommitsWhenTheBodyThrows) // T11 [ours]
{
	cval<int> c(1);
	auto m = map(c, [](int x) { return x * 10; });
	EXPECT_EQ(m.force(), 10);
	try
	{
		transact(
		    [&]
		    {
			    c.setValue(2);
			    throw std::runtime_error("boom");
		    });
	}
	catch (const std::runtime_error&)
	{
	}
	EXPECT_TRUE(m.outOfDate());
	EXPECT_EQ(m.force(), 20);
}

TEST(CVal, WritesWithoutTransactionAndNoDependents) // T3
{
	cval<int> c(5);
	c.setValue(1);
	EXPECT_EQ(c.force(), 1);
	c.setValue(2);
	EXPECT_EQ(c.force(), 2);
}

TEST(CVal, WriteWithoutTransactionMarksDependentsThroughAnAutoTransaction) // T5 [ours: auto-transaction]
{
	cval<int> c(1);
	auto m = map(c, [](int x) { return x + 1; });
	EXPECT_EQ(m.force(), 2);
	c.setValue(2);
	EXPECT_TRUE(m.outOfDate());
	EXPECT_EQ(m.force(), 3);
}

TEST(CVal, EqualWriteIsANoOp) // T6
{
	cval<int> c(5);
	int cnt = 0;
	auto m = map(c,
	             [&](int x)
	             {
		             ++cnt;
		             return x;
	             });
	m.force();
	transact([&] { c.setValue(5); });
	EXPECT_FALSE(m.outOfDate());
	EXPECT_EQ(cnt, 1);
	EXPECT_FALSE(c.updateTo(5));
	EXPECT_TRUE(c.updateTo(6));
}

TEST(CVal, ManyWritesInOneTransactionRecomputeOnce) // T7
{
	cval<int> c(0);
	int cnt = 0;
	auto m = map(c,
	             [&](int x)
	             {
		             ++cnt;
		             return x * 2;
	             });
	m.force();
	transact(
	    [&]
	    {
		    c.setValue(1);
		    c.setValue(2);
		    c.setValue(3);
	    });
	EXPECT_EQ(m.force(), 6);
	EXPECT_EQ(cnt, 2);
}

TEST(Marking, OutOfDateNodeIsABarrier) // T9
{
	cval<int> m(10);
	auto d = map(m, [](int x) { return x; });
	d.force();
	int calls = 0;
	auto sub = addMarkingCallback(d.object(), [&] { ++calls; });
	transact([&] { m.setValue(100); });
	transact([&] { m.setValue(20); });
	EXPECT_EQ(calls, 1);
}

TEST(Marking, EdgesAndLevelsFollowReads) // T10
{
	cval<int> c(1);
	auto m1 = map(c, [](int x) { return x + 1; });
	auto m2 = map(m1, [](int x) { return x * 10; });
	EXPECT_EQ(c.node()->outputCount(), 0u);
	EXPECT_EQ(m2.force(), 20);
	EXPECT_EQ(c.node()->outputCount(), 1u);
	EXPECT_EQ(c.level(), 0);
	EXPECT_GE(m1.level(), 1);
	EXPECT_GE(m2.level(), 2);
	transact([&] { c.setValue(5); });
	EXPECT_TRUE(m2.outOfDate());
	EXPECT_EQ(m2.force(), 60);
	EXPECT_FALSE(m2.outOfDate());
}

TEST(Marking, DiamondIsGlitchFreeAndEvaluatesOnce)
{
	cval<int> c(1);
	auto a = map(c, [](int x) { return x + 1; });
	auto b = map(c, [](int x) { return x * 2; });
	int cnt = 0;
	std::vector<std::pair<int, int>> seen;
	auto d = map2(a, b,
	              [&](int x, int y)
	              {
		              ++cnt;
		              seen.emplace_back(x, y);
		              return x + y;
	              });
	EXPECT_EQ(d.force(), 4);
	transact([&] { c.setValue(3); });
	EXPECT_EQ(d.force(), 10);
	EXPECT_EQ(cnt, 2);
	EXPECT_EQ(seen.back(), std::make_pair(4, 6));
}

TEST(Transaction, ValueCallbackMayTransact) // T12
{
	cval<int> c(1);
	cval<int> e(0);
	auto g = map(e, [](int x) { return x; });
	g.force();
	auto sub = subscribe(c,
	                     [&](int v)
	                     {
		                     if (v == 2)
			                     transact([&] { e.setValue(v * 10); });
	                     });
	transact([&] { c.setValue(2); });
	EXPECT_EQ(g.force(), 20);
}

TEST(Transaction, MarkingCallbackWritesJoinTheRunningCommit) // T13-like
{
	cval<int> a(0);
	cval<int> b(0);
	auto mb = map(b, [](int x) { return x; });
	mb.force();
	a.force();
	auto sub = addMarkingCallback(a.object(), [&] { b.setValue(7); });
	transact([&] { a.setValue(1); });
	EXPECT_TRUE(mb.outOfDate());
	EXPECT_EQ(mb.force(), 7);
}

// ---- V: aval -----------------------------------------------------------------------------------------------------

TEST(AVal, ConstantInputsFoldToConstants) // V1
{
	auto one = constant(1);
	EXPECT_TRUE(map(one, [](int x) { return x; }).isConstant());
	EXPECT_TRUE(map2(one, constant(2), [](int x, int y) { return std::make_pair(x, y); }).isConstant());
	EXPECT_TRUE(map3(one, constant(2), constant(3), [](int x, int y, int z) { return x + y + z; }).isConstant());
	EXPECT_EQ(map3(one, constant(2), constant(3), [](int x, int y, int z) { return x + y + z; }).force(), 6);
}

TEST(AVal, BindOnConstantReturnsTheInnerNode) // V2
{
	auto b = map(cval<std::string>("b"), [](const std::string& s) { return s; });
	auto c = map(cval<std::string>("c"), [](const std::string& s) { return s; });
	auto r = adaptive::bind(constant(10), [&](int v) { return v == 10 ? b : c; });
	EXPECT_EQ(r, b);
}

TEST(AVal, NoOpChangeSkipsDownstreamWork) // V3
{
	cval<int> in(5);
	auto a = map(in, [](int x) { return x; });
	auto b = map(in, [](int x) { return -x; });
	auto c = map2(a, b, [](int x, int y) { return x + y; });
	int cnt = 0;
	auto d = map(c,
	             [&](int x)
	             {
		             ++cnt;
		             return x;
	             });
	EXPECT_EQ(d.force(), 0);
	EXPECT_EQ(cnt, 1);
	transact([&] { in.setValue(10); });
	EXPECT_TRUE(d.outOfDate());
	EXPECT_EQ(d.force(), 0);
	EXPECT_EQ(cnt, 1);
}

TEST(AVal, CutoffExampleFromTheDocs) // V4
{
	cval<int> x(10);
	int c1 = 0, c2 = 0;
	auto y = map(x,
	             [&](int v)
	             {
		             ++c1;
		             return v % 2;
	             });
	auto z = map(y,
	             [&](int v)
	             {
		             ++c2;
		             return v * 10;
	             });
	EXPECT_EQ(z.force(), 0);
	EXPECT_EQ(c1, 1);
	EXPECT_EQ(c2, 1);
	transact([&] { x.setValue(12); });
	EXPECT_TRUE(z.outOfDate());
	EXPECT_EQ(z.force(), 0);
	EXPECT_EQ(c1, 2);
	EXPECT_EQ(c2, 1);
}

TEST(AVal, BindThroughNonAdaptiveProjection) // V6
{
	for (int chain = 1; chain <= 2; ++chain)
	{
		cval<bool> v(true);
		aval<bool> p = map(v, [](bool b) { return b; });
		for (int i = 0; i < chain; ++i)
			p = mapNonAdaptive(p, [](bool b) { return b; });
		auto out = adaptive::bind(p, [](bool f) { return f ? constant(0) : constant(1); });
		EXPECT_EQ(out.force(), 0);
		transact([&] { v.setValue(false); });
		EXPECT_EQ(out.force(), 1);
	}
}

TEST(AVal, ProjectionKeepsChainAlive) // V7
{
	cval<int> v(10);
	aval<int> t;
	{
		auto p = mapNonAdaptive(v, [](int x) { return x + 1; });
		t = map(p, [](int x) { return x; });
	}
	EXPECT_EQ(t.force(), 11);
	transact([&] { v.setValue(100); });
	EXPECT_EQ(t.force(), 101);
}

TEST(AVal, NodeCreatedInsideCustomNeverGoesStale) // V8 / FDA #122
{
	cval<int> src(1);
	auto outer = custom(
	    [src](Token t)
	    {
		    auto inner = map(src, [](int x) { return x * 3; });
		    return inner.getValue(t);
	    });
	EXPECT_EQ(outer.force(), 3);
	transact([&] { src.setValue(2); });
	EXPECT_TRUE(outer.outOfDate());
	EXPECT_EQ(outer.force(), 6);
}

TEST(AVal, EagerCutoffStopsPropagationOnEqualValue) // V9
{
	cval<int> a(0);
	auto mod2 = map(a, [](int x) { return x % 2; });
	auto e = cutoff(mod2);
	auto out = map(e, [](int x) { return x; });
	EXPECT_EQ(out.force(), 0);
	transact([&] { a.setValue(2); });
	EXPECT_FALSE(out.outOfDate());
	EXPECT_EQ(out.force(), 0);
	transact([&] { a.setValue(1); });
	EXPECT_TRUE(out.outOfDate());
	EXPECT_EQ(out.force(), 1);
	transact([&] { a.setValue(3); });
	EXPECT_FALSE(out.outOfDate());
	EXPECT_EQ(out.force(), 1);
	transact([&] { a.setValue(0); });
	EXPECT_TRUE(out.outOfDate());
	EXPECT_EQ(out.force(), 0);
}

TEST(AVal, EagerNodeWhoseInputGetsDeeperIsRequeued) // V10
{
	auto chain = [](aval<std::string> x, int n)
	{
		for (int i = 0; i < n; ++i)
			x = map(x, [](const std::string& s) { return s; });
		return x;
	};
	cval<int> a(0);
	cval<std::string> shortv("a");
	auto longv = chain(cval<std::string>("a"), 3);
	auto diff = chain(cval<std::string>("b"), 5);
	auto dyn = adaptive::bind(a, [=](int l) -> aval<std::string> { return l == 0   ? shortv
		                                                                  : l == 1 ? longv
		                                                                           : diff; });
	auto e = cutoff(dyn);
	EXPECT_EQ(e.force(), "a");
	EXPECT_EQ(e.level(), 2);
	transact([&] { a.setValue(1); });
	EXPECT_FALSE(e.outOfDate());
	EXPECT_EQ(e.force(), "a");
	EXPECT_GT(e.level(), longv.level());
	transact([&] { a.setValue(2); });
	EXPECT_TRUE(e.outOfDate());
	EXPECT_EQ(e.force(), "b");
	EXPECT_GT(e.level(), diff.level());
}

TEST(AVal, BindOverTwoInputsCreatingInnerPerEvaluation) // V11
{
	cval<bool> flag(true);
	cval<int> a(1);
	cval<int> b(2);
	auto r = bind2(
	    flag, a, [=](bool f, int av) { return map(f ? aval<int>(a) : aval<int>(b), [av](int x) { return x + av; }); });
	EXPECT_EQ(r.force(), 2);
	transact([&] { flag.setValue(false); });
	EXPECT_EQ(r.force(), 3);
	transact([&] { b.setValue(10); });
	EXPECT_EQ(r.force(), 11);
}

TEST(AVal, BindSwitchDropsTheOldInnerEdge)
{
	cval<bool> flag(true);
	cval<int> a(1);
	cval<int> b(2);
	auto r = adaptive::bind(flag, [=](bool f) -> aval<int> { return f ? a : b; });
	EXPECT_EQ(r.force(), 1);
	EXPECT_EQ(a.node()->outputCount(), 1u);
	transact([&] { flag.setValue(false); });
	EXPECT_EQ(r.force(), 2);
	EXPECT_EQ(a.node()->outputCount(), 0u);
	transact([&] { a.setValue(5); });
	EXPECT_FALSE(r.outOfDate());
}

TEST(AVal, ExceptionPropagatesAndIsRetriedOnNextRead) // V12
{
	cval<int> c(1);
	bool fail = true;
	int calls = 0;
	auto m = map(c,
	             [&](int x)
	             {
		             ++calls;
		             if (fail)
			             throw std::runtime_error("user");
		             return x * 2;
	             });
	auto top = map(m, [](int x) { return x + 1; });
	EXPECT_THROW(top.force(), std::runtime_error);
	EXPECT_TRUE(m.outOfDate());
	EXPECT_THROW(top.force(), std::runtime_error);
	fail = false;
	EXPECT_EQ(top.force(), 3);
	EXPECT_EQ(calls, 3);
	transact([&] { c.setValue(2); });
	EXPECT_EQ(top.force(), 5);
}

TEST(CVal, StartsOutOfDateUntilFirstRead) // V13
{
	cval<int> c(3);
	EXPECT_TRUE(c.outOfDate());
	c.force();
	EXPECT_FALSE(c.outOfDate());
}

// ---- C: callbacks --------------------------------------------------------------------------------------------------

TEST(MarkingCallback, FiresOncePerUpToDateToOutOfDateTransition) // C1
{
	cval<int> m(10);
	auto d = map(m, [](int x) { return x; });
	int calls = 0;
	auto sub = addMarkingCallback(d.object(), [&] { ++calls; });
	EXPECT_EQ(calls, 0);
	d.force();
	EXPECT_EQ(calls, 0);
	transact([&] { m.setValue(100); });
	EXPECT_EQ(calls, 1);
	transact([&] { m.setValue(20); });
	EXPECT_EQ(calls, 1);
	d.force();
	transact([&] { m.setValue(15); });
	EXPECT_EQ(calls, 2);
	sub.dispose();
	sub.dispose();
	d.force();
	transact([&] { m.setValue(16); });
	EXPECT_EQ(calls, 2);
}

TEST(MarkingCallback, NeverReadNodeNeverFires) // C1b
{
	cval<int> m(10);
	auto d = map(m, [](int x) { return x; });
	int calls = 0;
	auto sub = addMarkingCallback(d.object(), [&] { ++calls; });
	transact([&] { m.setValue(100); });
	EXPECT_EQ(calls, 0);
}

TEST(MarkingCallback, OneShotFiresOnlyOnce) // C2
{
	cval<int> m(10);
	auto d = map(m, [](int x) { return x; });
	int calls = 0;
	auto sub = onNextMarking(d.object(), [&] { ++calls; });
	d.force();
	transact([&] { m.setValue(100); });
	EXPECT_EQ(calls, 1);
	d.force();
	transact([&] { m.setValue(15); });
	EXPECT_EQ(calls, 1);
}

TEST(ValueCallback, DeliversInitialValueThenChangedValuesOnly) // C4 [ours: initial delivery recorded]
{
	cval<int> c(1);
	auto m = map(c, [](int x) { return x / 2; });
	std::vector<int> seen;
	auto sub = subscribe(m, [&](int v) { seen.push_back(v); });
	transact([&] { c.setValue(2); });
	transact([&] { c.setValue(3); }); // 3/2 == 1: no delivery
	transact([&] { c.setValue(4); });
	EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
	sub.dispose();
	transact([&] { c.setValue(10); });
	EXPECT_EQ(seen.size(), 3u);
}

// ---- G: lifetime ---------------------------------------------------------------------------------------------------

TEST(Lifetime, OutputLinksOfManyConsumersAreExactAndUnlinkedOnDestruction) // G1
{
	for (int n : {0, 1, 2, 4, 8, 9, 20})
	{
		cval<int> c(1);
		std::vector<aval<int>> consumers;
		for (int i = 0; i < n; ++i)
		{
			consumers.push_back(map(c, [i](int x) { return x + i; }));
			consumers.back().force();
		}
		EXPECT_EQ(c.node()->outputCount(), size_t(n));
		consumers.clear();
		EXPECT_EQ(c.node()->outputCount(), 0u);
	}
}

TEST(Lifetime, ForEachOutputVisitsExactlyTheCurrentConsumers) // [ours: introspection]
{
	for (int n : {0, 1, 2, 3, 9})
	{
		cval<int> c(1);
		std::vector<aval<int>> consumers;
		for (int i = 0; i < n; ++i)
		{
			consumers.push_back(map(c, [i](int x) { return x + i; }));
			consumers.back().force();
		}
		std::vector<const AdaptiveObject*> seen;
		c.node()->forEachOutput([&](AdaptiveObject* o) { seen.push_back(o); });
		std::vector<const AdaptiveObject*> want;
		for (const aval<int>& a : consumers)
			want.push_back(a.node().get());
		std::sort(seen.begin(), seen.end());
		std::sort(want.begin(), want.end());
		EXPECT_EQ(seen, want) << n << " consumers";
		if (n > 0)
		{
			consumers.erase(consumers.begin()); // (its node dies and unlinks)
			int count = 0;
			c.node()->forEachOutput([&](AdaptiveObject*) { ++count; });
			EXPECT_EQ(count, n - 1);
		}
	}
}

TEST(Lifetime, UnobservedNodesDieImmediately) // G2
{
	int64_t before = liveObjectCount();
	cval<int> c(1);
	{
		auto m = map(c, [](int x) { return x + 1; });
		m.force();
		EXPECT_EQ(c.node()->outputCount(), 1u);
	}
	EXPECT_EQ(c.node()->outputCount(), 0u);
	EXPECT_EQ(liveObjectCount(), before + 1);
}

TEST(Lifetime, LongChainIsFreedWithoutRecursion)
{
	int64_t before = liveObjectCount();
	{
		cval<int> c(0);
		aval<int> x = c;
		for (int i = 0; i < 200000; ++i)
		{
			x = map(x, [](int v) { return v + 1; });
			x.force(); // bottom-up, so evaluation depth stays 1
		}
		EXPECT_EQ(x.force(), 200000);
	}
	EXPECT_EQ(liveObjectCount(), before);
}

/// Nodes may be held by thread_local objects (the scene's per-thread default leaves are): released by their destructors
/// at thread exit, in whatever order the runtime destroys thread_locals, they are freed — chains included — without
/// touching core state that thread exit already destroyed.
TEST(Lifetime, NodesReleasedByThreadLocalDestructorsAtThreadExitAreFreed)
{
	const int64_t before = liveObjectCount();
	std::thread(
	    []
	    {
		    struct Holder
		    {
			    aval<int> value;
		    };
		    // Two holders: the first one's destructor is the thread's first destruction of a node.
		    thread_local Holder first, second;
		    cval<int> c(1);
		    first.value = map(c, [](int x) { return x + 1; });
		    aval<int> chain = c;
		    for (int i = 0; i < 1000; ++i)
			    chain = map(chain, [](int x) { return x + 1; });
		    second.value = chain;
		    EXPECT_EQ(first.value.force() + second.value.force(), 2 + 1001);
	    })
	    .join();
	EXPECT_EQ(liveObjectCount(), before);
}

// ---- X: threading --------------------------------------------------------------------------------------------------

TEST(ChangeQueue, OtherThreadsSubmitAndTheOwnerAppliesInOneTransaction) // X1/X2 adapted: one owner thread
{
	cval<int> c(0);
	auto m = map(c, [](int x) { return x; });
	ChangeQueue q;
	std::vector<int> seen;
	auto sub = subscribe(m, [&](int v) { seen.push_back(v); });
	std::atomic<bool> done{false};
	std::vector<std::thread> threads;
	for (int t = 0; t < 3; ++t)
		threads.emplace_back(
		    [&q, &c]
		    {
			    // Capture the handle by reference: the closure runs on the owner thread, no refcount is touched here.
			    for (int i = 0; i < 1000; ++i)
				    q.submit([&c] { c.setValue(c.value() + 1); });
		    });
	size_t applied = 0;
	while (applied < 3000)
	{
		applied += q.apply();
		EXPECT_EQ(m.force(), c.value()); // the owner reads between batches
	}
	for (auto& t : threads)
		t.join();
	EXPECT_EQ(q.pending(), 0u);
	EXPECT_EQ(c.value(), 3000);
	EXPECT_EQ(seen.back(), 3000);
}
