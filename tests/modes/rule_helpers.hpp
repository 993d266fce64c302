// The modes tests' rules: a checked Rule from an expression, and the front-face rule most tests use.
#pragma once

#include <gtest/gtest.h>

#include <quokka/rules/expr.hpp>
#include <quokka/rules/rule.hpp>

namespace quokka::modes::test
{

/// `e` as a Rule (a failed check fails the test and gives the literal 0.0).
inline rules::Rule make(const rules::Expr& e)
{
	Result<rules::Rule> r = rules::Rule::make(e);
	EXPECT_TRUE(r.ok()) << r.error().message;
	return r.ok() ? *r : rules::Rule{};
}

/// Flips `declared` (0 ↔ 1) where the model trafo mirrors.
inline rules::Rule flipWhenMirrored()
{
	using namespace quokka::rules;
	const Expr declared = leaf("declared", fx::U32);
	return make(select(determinant(upper3x3(leaf("ModelTrafo", fx::M44f))) < lit(0.0), lit(1u) - declared, declared));
}

} // namespace quokka::modes::test
