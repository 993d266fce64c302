// Shared by the randomised differential tests: the failure dump with the seed, the expression and the
// whole operation history, so a failing case can be replayed by hand.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace quokka::adaptive::test
{

inline std::string failureDump(uint32_t seed, const std::string& expr, const std::vector<std::string>& history)
{
	std::ostringstream o;
	o << "seed " << seed << "\nexpr " << expr << "\nhistory:\n";
	for (const std::string& h : history)
		o << "  " << h << "\n";
	return o.str();
}

} // namespace quokka::adaptive::test
