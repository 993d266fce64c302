// QUOKKA_TEST_SEED: the randomised tests draw from a fixed seed unless this names another, so a failure found by a
// soak (`for s in $(seq 100); do QUOKKA_TEST_SEED=$s …; done`) replays exactly.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>

namespace quokka::test
{

/// The seed QUOKKA_TEST_SEED names, if it is set.
inline std::optional<uint32_t> envTestSeed()
{
	const char* env = std::getenv("QUOKKA_TEST_SEED");
	if (!env || !*env)
		return std::nullopt;
	return uint32_t(std::strtoul(env, nullptr, 10));
}

/// QUOKKA_TEST_SEED when set, else `fallback`.
inline uint32_t testSeed(uint32_t fallback)
{
	return envTestSeed().value_or(fallback);
}

} // namespace quokka::test
