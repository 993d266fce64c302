// quokka/base/assert.hpp — programmer-error checks (error tier 1 of 3: assert, Result, VkResult).
//
// QUOKKA_ASSERT(cond, "message") is compiled in Debug builds, every test binary and the sanitizer presets
// (QUOKKA_ENABLE_ASSERTS); in plain Release builds it compiles to nothing and `cond` is not evaluated.
// A failed assert calls the installed handler (default: print file:line and message to stderr, then abort).
// Tests may install a handler that throws, to check that an assert fires.
#pragma once

namespace quokka
{

/// Signature of an assert handler. May throw (tests) or not return (default: abort).
using AssertHandler = void (*)(const char* expr, const char* message, const char* file, int line);

/// Installs `handler` (nullptr restores the default) and returns the previous one. Not thread-safe: call at start-up.
AssertHandler setAssertHandler(AssertHandler handler);

/// Reports a failed assertion through the current handler. Used by QUOKKA_ASSERT; rarely called directly.
void assertFailed(const char* expr, const char* message, const char* file, int line);

} // namespace quokka

#if defined(QUOKKA_ENABLE_ASSERTS) && QUOKKA_ENABLE_ASSERTS
#define QUOKKA_ASSERT(cond, message)                                                                                   \
	do                                                                                                                 \
	{                                                                                                                  \
		if (!(cond))                                                                                                   \
			::quokka::assertFailed(#cond, message, __FILE__, __LINE__);                                                \
	} while (0)
#else
#define QUOKKA_ASSERT(cond, message)                                                                                   \
	do                                                                                                                 \
	{                                                                                                                  \
	} while (0)
#endif
