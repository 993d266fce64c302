// User code that releases the object the core is processing (issue #35, defect 2). Marking callbacks, value and
// reader callbacks, custom computations, collection functions and resource destructors run while the core holds raw
// pointers to the node they belong to; each test here drops the last reference to that node from inside such code. The
// core must keep the node alive until its step is done (these tests fail under ASan with heap-use-after-free otherwise)
// and then free it: every test ends with the live-object count back where it started.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/aval.hpp>
#include <quokka/adaptive/resource.hpp>

using namespace quokka::adaptive;
namespace adaptive = quokka::adaptive;

TEST(Reentrancy, MarkingCallbackDisposingTheSubscriptionThatOwnsItsNode)
{
	const int64_t live = liveObjectCount();
	cval<int> src(1);
	int fired = 0;
	Subscription sub;
	{
		auto m = map(src, [](int x) { return x + 1; });
		EXPECT_EQ(m.force(), 2);
		sub = addMarkingCallback(m.object(),
		                         [&]
		                         {
			                         ++fired;
			                         sub.dispose(); // the subscription's reference is the node's last one
		                         });
	}
	EXPECT_EQ(src.node()->outputCount(), 1u);
	src.setValue(2);
	EXPECT_EQ(fired, 1);
	EXPECT_FALSE(sub.active());
	EXPECT_EQ(src.node()->outputCount(), 0u) << "the node died after its marking step and unlinked from its input";
	EXPECT_EQ(liveObjectCount(), live + 1); // src
}

TEST(Reentrancy, OneShotMarkingCallbackDisposingItsOwnSubscription)
{
	const int64_t live = liveObjectCount();
	cval<int> src(1);
	int fired = 0;
	Subscription sub;
	{
		auto m = map(src, [](int x) { return x * 2; });
		m.force();
		sub = onNextMarking(m.object(),
		                    [&]
		                    {
			                    ++fired;
			                    sub.dispose();
		                    });
	}
	src.setValue(2);
	src.setValue(3);
	EXPECT_EQ(fired, 1);
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, MarkingCallbackInTheMiddleOfAFanOutDropsItselfAndASibling)
{
	// src → {a, b, c, d}: b's callback drops b (its subscription) and c (the user's last handle): the walk over src's
	// outputs must neither skip nor revisit a, d, and must not touch b or c after they died.
	const int64_t live = liveObjectCount();
	cval<int> src(1);
	auto a = map(src, [](int x) { return x + 1; });
	std::optional<aval<int>> c;
	auto d = map(src, [](int x) { return x + 4; });
	Subscription sub;
	{
		auto b = map(src, [](int x) { return x + 2; });
		c = map(src, [](int x) { return x + 3; });
		// Read in the order a, b, c, d so that b sits in the middle of src's output array.
		EXPECT_EQ(a.force() + b.force() + c->force() + d.force(), 14);
		sub = addMarkingCallback(b.object(),
		                         [&]
		                         {
			                         c.reset();
			                         sub.dispose();
		                         });
	}
	EXPECT_EQ(src.node()->outputCount(), 4u);
	src.setValue(10);
	EXPECT_TRUE(a.outOfDate());
	EXPECT_TRUE(d.outOfDate());
	EXPECT_EQ(src.node()->outputCount(), 2u);
	EXPECT_EQ(a.force(), 11);
	EXPECT_EQ(d.force(), 14);
	EXPECT_EQ(liveObjectCount(), live + 3); // src, a, d
}

TEST(Reentrancy, MarkingCallbackDropsTheConsumersBelowItsNode)
{
	// src → m → top: m's callback drops the user's handle to top and disposes itself: m dies while its own outputs
	// were still to be marked.
	const int64_t live = liveObjectCount();
	cval<int> src(1);
	std::optional<aval<int>> top;
	Subscription sub;
	{
		auto m = map(src, [](int x) { return x + 1; });
		top = map(m, [](int x) { return x * 10; });
		EXPECT_EQ(top->force(), 20);
		sub = addMarkingCallback(m.object(),
		                         [&]
		                         {
			                         top.reset();
			                         sub.dispose();
		                         });
	}
	src.setValue(2);
	EXPECT_EQ(src.node()->outputCount(), 0u);
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, MarkingCallbackOnAChangedSourceDropsTheSource)
{
	// The source itself (queued by the transaction) loses its last user handle inside its own callback.
	const int64_t live = liveObjectCount();
	auto src = std::make_unique<cval<int>>(1);
	src->force();
	Subscription sub = addMarkingCallback(src->object(),
	                                      [&]
	                                      {
		                                      src.reset();
		                                      sub.dispose();
	                                      });
	src->setValue(2);
	EXPECT_EQ(src, nullptr);
	EXPECT_EQ(liveObjectCount(), live);
}

TEST(Reentrancy, ValueCallbackDisposingItselfAndDroppingTheValue)
{
	const int64_t live = liveObjectCount();
	cval<int> src(1);
	std::vector<int> seen;
	Subscription sub;
	{
		std::optional<aval<int>> value = map(src, [](int x) { return x * 3; });
		sub = subscribe(*value,
		                [&](const int& v)
		                {
			                seen.push_back(v);
			                if (seen.size() == 2)
			                {
				                value.reset();
				                sub.dispose();
				                seen.push_back(v); // v is still readable: the delivery holds the value
			                }
		                });
		src.setValue(2);
		EXPECT_FALSE(value.has_value());
	}
	src.setValue(3);
	EXPECT_EQ(seen, (std::vector<int>{3, 6, 6}));
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, ReaderCallbackDisposingItselfAndDroppingTheSet)
{
	const int64_t live = liveObjectCount();
	cset<int> src{1};
	int deliveries = 0;
	Subscription sub;
	{
		std::optional<aset<int>> mapped = map(src, [](int x) { return x + 1; });
		sub = subscribe(*mapped,
		                [&](const CountingSet<int>& before, const SetDelta<int>& d)
		                {
			                ++deliveries;
			                if (deliveries == 2)
			                {
				                mapped.reset();
				                sub.dispose();
				                EXPECT_EQ(before.size() + d.size(), 2u); // both still readable
			                }
		                });
		src.add(5);
		EXPECT_FALSE(mapped.has_value());
	}
	src.add(6);
	EXPECT_EQ(deliveries, 2);
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, CustomComputationDroppingTheLastHandleToItsOwnNode)
{
	// A cache slot that the computation clears while it runs (a memo table evicting the entry being computed).
	const int64_t live = liveObjectCount();
	cval<int> src(4);
	{
		std::optional<aval<int>> slot;
		slot = custom(
		    [&](Token t)
		    {
			    int v = src.getValue(t);
			    slot.reset();
			    return v * v;
		    });
		const int value = slot->force(); // the slot is the node's only owner
		EXPECT_EQ(value, 16) << "the top-level read's value is readable after the node lost every handle";
		EXPECT_FALSE(slot.has_value());
	}
	// The node dies at the thread's next evaluation or commit.
	src.setValue(5);
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, InnerComputationDroppingItsHandleIsKeptByTheReadingConsumer)
{
	// `slot` is the inner node's only owner; the outer computation reads it through the slot and the inner
	// computation clears the slot: from then on the edge of the outer evaluation owns the inner node.
	const int64_t live = liveObjectCount();
	cval<int> src(2);
	cval<bool> use_inner(true);
	{
		std::optional<aval<int>> slot = custom(
		    [&](Token t)
		    {
			    int v = src.getValue(t) + 100;
			    slot.reset();
			    return v;
		    });
		aval<int> outer = custom(
		    [&](Token t)
		    {
			    if (!use_inner.getValue(t) || !slot)
				    return -1;
			    return slot->getValue(t);
		    });
		EXPECT_EQ(outer.force(), 102);
		EXPECT_FALSE(slot.has_value());
		src.setValue(3);
		EXPECT_TRUE(outer.outOfDate()); // the inner node is alive and linked: the change reached outer
		EXPECT_EQ(outer.force(), -1);   // the slot is empty now: the inner node is no longer read and is freed
	}
	EXPECT_EQ(liveObjectCount(), live + 2);
}

TEST(Reentrancy, ReaderPulledWhileItsFunctionDropsTheUsersReaderHandle)
{
	const int64_t live = liveObjectCount();
	cset<int> src{1, 2};
	{
		SetReader<int> reader;
		aset<int> mapped = map(src,
		                       [&](int x)
		                       {
			                       reader = {}; // the user's last handle to the reader being pulled
			                       return x * 2;
		                       });
		reader = mapped.getReader();
		auto d = reader->pull();
		EXPECT_EQ(d.size(), 2u);
		EXPECT_FALSE(reader);
	}
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, ListFunctionDroppingTheListDuringItsOwnEvaluation)
{
	const int64_t live = liveObjectCount();
	clist<int> src{1, 2, 3};
	int64_t total = 0;
	{
		std::optional<alist<int>> mapped;
		mapped = map(src,
		             [&](int x)
		             {
			             mapped.reset();
			             return x + 1;
		             });
		IndexList<int> content = mapped->force(); // `mapped` is the list's only owner
		EXPECT_FALSE(mapped.has_value());
		content.forEach([&](const Index&, const int& v) { total += v; });
	}
	EXPECT_EQ(total, 9);
	src.append(4); // next commit: the deferred history is freed
	EXPECT_EQ(liveObjectCount(), live + 1);
}

TEST(Reentrancy, ResourceWhoseDestroyDropsTheLastHandleToIt)
{
	const int64_t live = liveObjectCount();
	cval<int> src(2);
	int destroyed = 0;
	std::optional<AdaptiveResource<int>> res;
	res = makeResource<int>([&](Token t) { return src.getValue(t) * 10; }, nullptr,
	                        [&](int& v)
	                        {
		                        ++destroyed;
		                        EXPECT_EQ(v, 20);
		                        res.reset(); // the user's last handle, from inside the destruction it triggered
	                        });
	res->acquire();
	EXPECT_EQ(res->force(), 20);
	res->release(); // `res` is the only handle; the last release destroys the value; destroy drops the node's last
	                // handle
	EXPECT_EQ(destroyed, 1) << "destroyed exactly once";
	EXPECT_FALSE(res.has_value());
	EXPECT_EQ(liveObjectCount(), live + 1);
}
