// quokka/base/stack_guard.hpp — recursion without stack overflow: continue on a fresh stack segment when the current
// one runs low.
//
// The adaptive core evaluates lazily and recursively: reading an out-of-date node evaluates its inputs inside the
// user's computation, so pulling a 10^6-long chain nests 10^6 evaluations. Their order is known only to the user code
// (a bind reads what its function returns), so the recursion cannot be turned into a loop from outside. Instead each
// nested evaluation runs through withStackHeadroom(f): when less than kStackHeadroom bytes of the running stack remain,
// f runs on a fresh segment (16 MiB of address space, mmap'd with a guard page, pages committed as touched, cached
// per thread for the next deep evaluation) and the caller resumes on its own stack when f returns or throws. So the
// thread's own stack use stays bounded whatever the depth, on threads with small stacks too; only the memory the depth
// really needs is used, in segments. An exception thrown on a segment is carried back and rethrown on the caller's
// stack. Sanitizers are told about every switch (AddressSanitizer's fiber annotations).
//
// The check on the common path is a thread-local load and a compare against the stack pointer. Prior art: Rust's
// `stacker::maybe_grow` (rustc's deep recursion), GCC's split stacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace quokka
{

/// Bytes of stack that must remain below the caller of withStackHeadroom for it to run f in place (user code between
/// two nested evaluations gets at least this much). Larger under AddressSanitizer, whose frames carry redzones.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr size_t kStackHeadroom = size_t(1) << 20;
#else
inline constexpr size_t kStackHeadroom = size_t(256) << 10;
#endif
/// Size of one fresh segment (address space; only touched pages take memory).
inline constexpr size_t kStackSegmentBytes = size_t(16) << 20;

namespace detail
{
/// Lowest stack address (plus headroom) f may start from on this thread's current stack; 0 until first measured.
/// Trivially destructible: usable from any destructor at thread exit; constinit: read without a TLS init wrapper.
extern constinit thread_local uintptr_t t_stack_floor;
/// Runs fn(arg) on a fresh segment (or in place when the stack turns out to have room after measuring it).
void runWithFreshStack(void (*fn)(void*), void* arg);
} // namespace detail

/// Runs `f()` on the current stack when at least kStackHeadroom bytes remain, otherwise on a fresh segment; returns
/// when f returns, and rethrows on the caller's stack what f threw.
template <typename F>
inline void withStackHeadroom(F&& f)
{
	// The address of a local approximates the stack pointer (__builtin_frame_address would force a frame pointer on
	// every function this is inlined into).
	char probe;
	auto sp = reinterpret_cast<uintptr_t>(&probe);
	uintptr_t floor = detail::t_stack_floor;
	if (sp >= floor && floor != 0) [[likely]]
	{
		f();
		return;
	}
	using Fn = std::remove_reference_t<F>;
	detail::runWithFreshStack([](void* p) { (*static_cast<Fn*>(p))(); },
	                          const_cast<void*>(static_cast<const void*>(&f)));
}

/// Statistics of this thread's fresh-stack use (tests and benchmarks).
struct StackSegmentStats
{
	uint64_t switches = 0; ///< evaluations that continued on a fresh segment
	uint32_t depth = 0;    ///< segments in use now (nested switches)
	uint32_t peak = 0;     ///< the most segments ever in use at once on this thread
	uint32_t cached = 0;   ///< free segments kept for the next deep evaluation
};
StackSegmentStats stackSegmentStats();

} // namespace quokka
