// Fresh stack segments for deep recursion (stack_guard.hpp): ucontext switches, mmap'd segments with a guard page,
// a small per-thread cache, and AddressSanitizer's fiber annotations.
#include <quokka/base/stack_guard.hpp>

#include <exception>
#include <new>

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace quokka
{

namespace detail
{
constinit thread_local uintptr_t t_stack_floor = 0;
} // namespace detail

namespace
{

constexpr uint32_t kCachedSegments = 4;

/// Per-thread state, trivially destructible (so usable in any order at thread exit); SegmentReaper unmaps the cached
/// segments when the thread ends.
struct ThreadSegments
{
	void* cache[kCachedSegments] = {};
	uint32_t cached = 0;
	uint32_t depth = 0;
	uint32_t peak = 0;
	uint64_t switches = 0;
	bool closed = false; ///< the thread is exiting: segments are unmapped, not cached
};
thread_local ThreadSegments t_segments;

struct SegmentReaper
{
	~SegmentReaper()
	{
		ThreadSegments& s = t_segments;
		while (s.cached > 0)
			munmap(s.cache[--s.cached], kStackSegmentBytes);
		s.closed = true;
	}
};
thread_local SegmentReaper t_reaper;

size_t pageSize()
{
	static const size_t page = size_t(sysconf(_SC_PAGESIZE));
	return page;
}

void* acquireSegment()
{
	ThreadSegments& s = t_segments;
	(void)&t_reaper; // odr-use: constructs the reaper (registers its destructor) on this thread
	if (s.cached > 0)
		return s.cache[--s.cached];
	void* p =
	    mmap(nullptr, kStackSegmentBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		throw std::bad_alloc();
	// The lowest page is the guard: running off the segment faults instead of writing into a neighbour.
	mprotect(p, pageSize(), PROT_NONE);
	return p;
}

void releaseSegment(void* p)
{
	ThreadSegments& s = t_segments;
	if (!s.closed && s.cached < kCachedSegments)
	{
		// Give the touched pages back but keep the mapping (a deep evaluation repeated every frame reuses it).
		madvise(static_cast<char*>(p) + pageSize(), kStackSegmentBytes - pageSize(), MADV_DONTNEED);
		s.cache[s.cached++] = p;
		return;
	}
	munmap(p, kStackSegmentBytes);
}

/// The lowest usable address of the running thread's stack, plus headroom.
uintptr_t measureStackFloor()
{
	auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
	pthread_attr_t attr;
	void* low = nullptr;
	size_t size = 0;
	bool known = false;
	if (pthread_getattr_np(pthread_self(), &attr) == 0)
	{
		known = pthread_attr_getstack(&attr, &low, &size) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!known || reinterpret_cast<uintptr_t>(low) >= sp)
		return sp; // unknown extent: every deeper evaluation than this one moves to a segment
	return reinterpret_cast<uintptr_t>(low) + kStackHeadroom + pageSize();
}

/// One switch: what the segment runs and how to get back.
struct Switch
{
	void (*fn)(void*) = nullptr;
	void* arg = nullptr;
	std::exception_ptr error;
	ucontext_t caller{};
	ucontext_t callee{};
	const void* caller_bottom = nullptr; ///< the caller's stack, for AddressSanitizer
	size_t caller_size = 0;
};
thread_local Switch* t_switch = nullptr;

void segmentEntry()
{
	Switch* sw = t_switch;
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_finish_switch_fiber(nullptr, &sw->caller_bottom, &sw->caller_size);
#endif
	try
	{
		sw->fn(sw->arg);
	}
	catch (...)
	{
		sw->error = std::current_exception();
	}
#if defined(__SANITIZE_ADDRESS__)
	// nullptr: this segment's frames are done for good (its fake stack may be freed).
	__sanitizer_start_switch_fiber(nullptr, sw->caller_bottom, sw->caller_size);
#endif
	setcontext(&sw->caller);
}

/// getcontext and swapcontext return twice as far as the compiler knows: kept in functions of their own, so that no
/// caller's locals live across them (-Wclobbered).
[[gnu::noinline]] void prepareSegment(Switch& sw, char* low, size_t size)
{
	getcontext(&sw.callee);
	sw.callee.uc_stack.ss_sp = low;
	sw.callee.uc_stack.ss_size = size;
	sw.callee.uc_link = nullptr;
	makecontext(&sw.callee, segmentEntry, 0);
}

[[gnu::noinline]] void switchToSegment(Switch& sw)
{
	swapcontext(&sw.caller, &sw.callee);
}

} // namespace

void detail::runWithFreshStack(void (*fn)(void*), void* arg)
{
	if (t_stack_floor == 0)
	{
		t_stack_floor = measureStackFloor();
		if (reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) >= t_stack_floor)
		{
			fn(arg);
			return;
		}
	}
	void* segment = acquireSegment();
	char* low = static_cast<char*>(segment) + pageSize();
	size_t size = kStackSegmentBytes - pageSize();
	Switch sw;
	sw.fn = fn;
	sw.arg = arg;
	prepareSegment(sw, low, size);

	uintptr_t saved_floor = t_stack_floor;
	Switch* saved_switch = t_switch;
	t_stack_floor = reinterpret_cast<uintptr_t>(low) + kStackHeadroom;
	t_switch = &sw;
	ThreadSegments& s = t_segments;
	if (++s.depth > s.peak)
		s.peak = s.depth;
	++s.switches;
#if defined(__SANITIZE_ADDRESS__)
	void* fake_stack = nullptr;
	__sanitizer_start_switch_fiber(&fake_stack, low, size);
#endif
	switchToSegment(sw);
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
	--s.depth;
	t_switch = saved_switch;
	t_stack_floor = saved_floor;
	releaseSegment(segment);
	if (sw.error)
		std::rethrow_exception(sw.error);
}

StackSegmentStats stackSegmentStats()
{
	const ThreadSegments& s = t_segments;
	return StackSegmentStats{s.switches, s.depth, s.peak, s.cached};
}

} // namespace quokka
