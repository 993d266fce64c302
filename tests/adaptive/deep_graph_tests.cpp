// Deep graphs (issue #35, defect 1): evaluation recurses through user code, so pulling a 10^6-deep chain top-down
// nests 10^6 evaluations. The core continues them on fresh stack segments (base/stack_guard.hpp): every chain here is
// read top-down on a fresh graph and again after a change at its bottom, in Release and under ASan, on the default
// stack and on a thread whose own stack is 256 KiB.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <thread>

#include <pthread.h>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/aval.hpp>
#include <quokka/adaptive/reduce.hpp>
#include <quokka/base/stack_guard.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

namespace
{

constexpr int kDeep = 1000000;

/// Runs `body` on a thread whose stack is `bytes` (pthread attributes: std::thread cannot set it), joining it.
void onThreadWithStack(size_t bytes, std::function<void()> body)
{
	pthread_attr_t attr;
	ASSERT_EQ(pthread_attr_init(&attr), 0);
	ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
	pthread_t thread;
	auto run = [](void* p) -> void*
	{
		(*static_cast<std::function<void()>*>(p))();
		return nullptr;
	};
	ASSERT_EQ(pthread_create(&thread, &attr, run, &body), 0);
	pthread_join(thread, nullptr);
	pthread_attr_destroy(&attr);
}

/// A chain of n maps, each adding one.
aval<int64_t> mapChain(const aval<int64_t>& bottom, int n)
{
	aval<int64_t> x = bottom;
	for (int i = 0; i < n; ++i)
		x = map(x, [](int64_t v) { return v + 1; });
	return x;
}

} // namespace

TEST(DeepGraph, MillionMapChainEvaluatesTopDownAndAgainAfterAChange)
{
	const int64_t live = liveObjectCount();
	const uint64_t switches = quokka::stackSegmentStats().switches;
	{
		cval<int64_t> c(0);
		aval<int64_t> top = mapChain(c, kDeep);
		EXPECT_EQ(top.force(), kDeep); // first read: the whole chain evaluates top-down
		EXPECT_GT(quokka::stackSegmentStats().switches, switches) << "a 10^6 chain must need fresh segments";
		std::printf("[ info ] a 10^6 map chain used %u stack segments at once\n", quokka::stackSegmentStats().peak);
		c.setValue(5);
		EXPECT_TRUE(top.outOfDate());
		EXPECT_EQ(top.force(), kDeep + 5); // re-read after a change at the bottom
		EXPECT_EQ(quokka::stackSegmentStats().depth, 0u) << "every segment is left when the read returns";
	}
	EXPECT_EQ(liveObjectCount(), live);
}

TEST(DeepGraph, MillionBindChainThroughOuterAndInnerValues)
{
	// Even levels: bind on the previous level (the depth runs through the outer value). Odd levels: bind on a switch
	// whose function returns the previous level (the depth runs through the inner value, known only after f ran).
	cval<int64_t> c(1);
	cval<bool> sw(true);
	aval<int64_t> x = c;
	for (int i = 0; i < kDeep; ++i)
	{
		if (i % 2 == 0)
			x = adaptive::bind(x, [](int64_t v) { return constant(v + 1); });
		else
			x = adaptive::bind(sw, [prev = x](bool on) { return on ? prev : constant(int64_t(-1)); });
	}
	EXPECT_EQ(x.force(), 1 + kDeep / 2);
	c.setValue(10);
	EXPECT_EQ(x.force(), 10 + kDeep / 2);
	sw.setValue(false); // every odd level switches to its constant: only the top one is read
	EXPECT_EQ(x.force(), -1);
	sw.setValue(true);
	EXPECT_EQ(x.force(), 10 + kDeep / 2);
}

TEST(DeepGraph, MillionLevelMixedChainOfValuesSetsAndLists)
{
	// Levels cycle through five kinds (10^6 adaptive levels in all): aval map → aval bind → aset bound to the value →
	// aset map → aval reduce of the set → …; every 50th round an alist (bind → map → reduce) instead of the aset.
	constexpr int64_t kMod = 1000003;
	cval<int64_t> c(0);
	aval<int64_t> v = c;
	Reduction<int64_t, int64_t> sum{0, [](int64_t s, int64_t x) { return s + x; },
	                                [](int64_t s, int64_t x) { return std::optional<int64_t>(s - x); }};
	int rounds = 0;
	for (int levels = 0; levels < kDeep; levels += 5, ++rounds)
	{
		v = map(v, [](int64_t x) { return x + 1; });
		v = adaptive::bind(v, [](int64_t x) { return constant(x * 3 % kMod); });
		if (rounds % 50 == 49)
		{
			alist<int64_t> l = adaptive::bind(v, [](int64_t x) { return alistOf<int64_t>({x, 1}); });
			v = reduce(map(l, [](int64_t x) { return x - 1; }), sum);
		}
		else
		{
			aset<int64_t> s = adaptive::bind(v, [](int64_t x) { return asetOf<int64_t>({x}); });
			v = reduce(map(s, [](int64_t x) { return x + 3; }), sum);
		}
	}
	auto expected = [&](int64_t x)
	{
		for (int r = 0; r < rounds; ++r)
			x = ((x + 1) * 3 % kMod) + (r % 50 == 49 ? -1 : 3);
		return x;
	};
	EXPECT_EQ(v.force(), expected(0));
	c.setValue(12345);
	EXPECT_EQ(v.force(), expected(12345));
}

TEST(DeepGraph, ThreadWithASmallStackEvaluatesADeepChain)
{
	// 256 KiB is the headroom itself: every evaluation of the chain beyond the first runs on segments, so the thread's
	// own stack use stays bounded whatever the depth.
	int64_t result = 0;
	uint64_t switches = 0;
	onThreadWithStack(size_t(256) << 10,
	                  [&]
	                  {
		                  cval<int64_t> c(7);
		                  aval<int64_t> top = mapChain(c, 200000);
		                  result = top.force();
		                  switches = quokka::stackSegmentStats().switches;
	                  });
	EXPECT_EQ(result, 200007);
	EXPECT_GT(switches, 0u);
}

TEST(DeepGraph, ExceptionAtTheBottomOfADeepChainReachesTheReaderAndTheNextReadRetries)
{
	// On a 256 KiB thread the whole evaluation runs on segments: the exception is carried across their edges.
	onThreadWithStack(size_t(256) << 10,
	                  []
	                  {
		                  cval<int64_t> c(0);
		                  aval<int64_t> bottom = map(c,
		                                             [](int64_t v)
		                                             {
			                                             if (v < 0)
				                                             throw std::runtime_error("negative");
			                                             return v;
		                                             });
		                  aval<int64_t> top = mapChain(bottom, 100000);
		                  top.force();
		                  c.setValue(-1);
		                  EXPECT_THROW(top.force(), std::runtime_error); // thrown on a segment, rethrown on ours
		                  EXPECT_GE(quokka::stackSegmentStats().peak, 1u) << "the throw must cross a segment's edge";
		                  EXPECT_TRUE(top.outOfDate());
		                  EXPECT_EQ(quokka::stackSegmentStats().depth, 0u);
		                  c.setValue(3);
		                  EXPECT_EQ(top.force(), 3 + 100000);
	                  });
}

TEST(DeepGraph, DeepSetChainPullsThroughReaders)
{
	// A chain of 10^5 set maps: every pull goes down through the readers and histories of the levels below.
	cset<int> s{1, 2, 3};
	aset<int> x = s;
	for (int i = 0; i < 100000; ++i)
		x = map(x, [](int v) { return v + 1; });
	auto r = x.getReader();
	r->pull();
	EXPECT_EQ(r->state().size(), 3u);
	EXPECT_TRUE(r->state().contains(100001));
	s.add(10);
	auto d = r->pull();
	ASSERT_EQ(d.size(), 1u);
	EXPECT_EQ(d.begin()->first, 100010);
}
