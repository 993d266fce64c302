// bulk_convert.cpp — a bulk frame's conversions on worker threads (bulk_convert.hpp).
#include "bulk_convert.hpp"

#include <algorithm>
#include <system_error>

#include <quokka/base/assert.hpp>

namespace quokka::heap::detail
{

bool BulkConvert::begin(uint32_t threads)
{
	QUOKKA_ASSERT(!active_ && pending_.empty(), "a bulk frame ends before the next begins");
	threads = std::max(threads, 1u);
	if (!pool_ || workers_ != threads)
	{
		pool_.reset(); // (no jobs: the last frame ended)
		workers_ = 0;
		try
		{
			pool_ = std::make_unique<base::WorkQueue>(threads);
		}
		catch (const std::system_error&)
		{
			return false; // (the frame converts on its own thread)
		}
		workers_ = threads;
	}
	active_ = true;
	bytes_ = group_bytes_ = 0;
	return true;
}

void BulkConvert::submit()
{
	if (pending_.empty())
		return;
	auto group = std::make_shared<std::vector<Job>>();
	group->swap(pending_);
	pending_.reserve(group->size());
	group_bytes_ = 0;
	pool_->submit(
	    [group = std::move(group)]
	    {
		    for (const Job& j : *group)
		    {
			    [[maybe_unused]] const bool ok = convertFrom(j.index, j.format, j.type, j.layout, j.src, j.out);
			    QUOKKA_ASSERT(ok, "a queued conversion was checked convertible");
		    }
	    });
}

void BulkConvert::end()
{
	if (!active_)
		return;
	submit();
	pool_->waitIdle();
	active_ = false;
}

} // namespace quokka::heap::detail
