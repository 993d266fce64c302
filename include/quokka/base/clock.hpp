// quokka/base/clock.hpp — the one CPU timer the renderers' stats use.
#pragma once

#include <chrono>

namespace quokka
{

/// Milliseconds of the steady clock since `t0`.
inline double msSince(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace quokka
