// findings.hpp — what the heap's diagnostics report (internal to quokka::heap): one line per finding, at most
// kMaxPerKind lines of each kind, the rest counted in one closing line per kind, so a corrupted heap of a million
// objects reports a readable page instead of a million lines.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace quokka::heap::detail
{

class Findings
{
public:
	static constexpr uint32_t kMaxPerKind = 8;

	/// Adds `line` as it is.
	void addLine(const std::string& kind, std::string line)
	{
		if (counts_[kind]++ < kMaxPerKind)
			lines_.push_back(std::move(line));
	}
	/// Adds "kind: what".
	void add(const std::string& kind, const std::string& what) { addLine(kind, kind + ": " + what); }
	bool empty() const { return lines_.empty(); }
	/// The lines, then "... and N more KIND findings" for each kind past the cap. Leaves this empty.
	std::vector<std::string> finish()
	{
		for (const auto& [kind, count] : counts_)
			if (count > kMaxPerKind)
				lines_.push_back("... and " + std::to_string(count - kMaxPerKind) + " more " + kind + " findings");
		counts_.clear();
		return std::move(lines_);
	}

private:
	std::map<std::string, uint64_t> counts_;
	std::vector<std::string> lines_;
};

} // namespace quokka::heap::detail
