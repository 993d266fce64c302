// AdaptiveResource<T>: create on 0 → 1, update on input change, destroy on 1 → 0.
#include <gtest/gtest.h>

#include <quokka/adaptive/resource.hpp>

using namespace quokka::adaptive;

TEST(AdaptiveResource, CreatesOnFirstAcquireAndDestroysOnLastRelease)
{
	cval<int> size(4);
	int created = 0, updated = 0, destroyed = 0;
	auto res = makeResource<std::vector<int>>(
	    [&](Token t)
	    {
		    ++created;
		    return std::vector<int>(size_t(size.getValue(t)));
	    },
	    [&](std::vector<int>& v, Token t)
	    {
		    ++updated;
		    v.resize(size_t(size.getValue(t)));
	    },
	    [&](std::vector<int>&) { ++destroyed; });
	EXPECT_EQ(created, 0);
	res.acquire();
	res.acquire();
	EXPECT_EQ(res.force().size(), 4u);
	EXPECT_EQ(created, 1);
	transact([&] { size.setValue(8); });
	EXPECT_EQ(res.force().size(), 8u);
	EXPECT_EQ(updated, 1);
	EXPECT_EQ(created, 1);
	res.release();
	EXPECT_EQ(destroyed, 0);
	res.release();
	EXPECT_EQ(destroyed, 1);
	res.acquire();
	EXPECT_EQ(res.force().size(), 8u);
	EXPECT_EQ(created, 2);
	res.release();
	EXPECT_EQ(destroyed, 2);
}

TEST(AdaptiveResource, ConsumersAreMarkedWhenTheResourceIsDestroyed)
{
	cval<int> x(1);
	int destroyed = 0;
	auto res = makeResource<int>([&](Token t) { return x.getValue(t) * 10; }, nullptr, [&](int&) { ++destroyed; });
	auto consumer = map(aval<int>(res), [](int v) { return v + 1; });
	res.acquire();
	EXPECT_EQ(consumer.force(), 11);
	res.release();
	EXPECT_EQ(destroyed, 1);
	EXPECT_TRUE(consumer.outOfDate());
	res.acquire();
	transact([&] { x.setValue(2); });
	EXPECT_EQ(consumer.force(), 21); // created again
	EXPECT_EQ(destroyed, 1);
	transact([&] { x.setValue(3); }); // no update function: destroy + create
	EXPECT_EQ(consumer.force(), 31);
	EXPECT_EQ(destroyed, 2);
	res.release();
	EXPECT_EQ(destroyed, 3);
}
