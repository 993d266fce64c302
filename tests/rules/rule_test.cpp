// Rules on the CPU, as a specification: what an expression may be built from and the errors it reports, how a rule
// is compacted and identified, its evaluation in double (the oracle of every GPU derivation), folding, flattening,
// its GLSL rendering, and the standard derived uniforms against the trafo arithmetic they stand for.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <quokka/fx/standard_uniforms.hpp>
#include <quokka/rules/rule.hpp>
#include <quokka/rules/standard.hpp>

#include "../test_seed.hpp"

namespace quokka::rules::test
{
namespace
{

using math::M44d;
using math::Trafo3d;
using math::V3d;

Trafo3d randomTrafo(std::mt19937_64& rng, double offset)
{
	std::uniform_real_distribution<double> u(-1.0, 1.0);
	const V3d axis = glm::normalize(V3d(u(rng), u(rng), u(rng)) + V3d(0.0, 0.0, 1.5));
	return Trafo3d::translation(V3d(u(rng), u(rng), u(rng)) * offset) * Trafo3d::rotation(axis, 3.0 * u(rng)) *
	       Trafo3d::scale(V3d(1.5 + u(rng), 1.5 + u(rng), -1.5 - u(rng)));
}

Rule ruleOf(const Expr& e)
{
	Result<Rule> r = Rule::make(e);
	EXPECT_TRUE(r.ok()) << r.error().message;
	return r.ok() ? r.value() : Rule::make(lit(0.0)).value();
}

/// The value of each input of `rule` from the three trafos (inverse inputs from the backward matrices).
std::vector<Value> trafoInputs(const Rule& rule, const Trafo3d& m, const Trafo3d& v, const Trafo3d& p)
{
	std::vector<Value> out;
	for (const Input& in : rule.inputs())
	{
		const Trafo3d& t = in.name == "ModelTrafo" ? m : in.name == "ViewTrafo" ? v : p;
		out.push_back(Value::of(in.inverse ? t.backward : t.forward));
	}
	return out;
}

// The standard uniforms are rules, and on the CPU their values are those of the Trafo3d products the CPU path has
// always computed — bit for bit, at 10^7 m offsets too.
TEST(Rules, StandardRulesEqualTheTrafoArithmeticBitForBit)
{
	std::mt19937_64 rng(quokka::test::testSeed(38));
	ASSERT_EQ(standardRules().size(), fx::standardUniforms().size());
	for (size_t i = 0; i < standardRules().size(); ++i)
		EXPECT_EQ(standardRules()[i].name, fx::standardUniforms()[i].name);
	for (int round = 0; round < 50; ++round)
	{
		const double offset = round % 2 ? 1e7 : 10.0;
		const Trafo3d m = randomTrafo(rng, offset), v = randomTrafo(rng, offset);
		const Trafo3d p = math::perspective(1.0, 1.5, 0.1, 1000.0);
		const Trafo3d vp = p * v, mv = v * m, mvp = vp * m;
		const std::pair<const char*, Value> expected[] = {
		    {"ModelTrafo", Value::of(m.forward)},
		    {"ViewProjTrafo", Value::of(vp.forward)},
		    {"ModelViewTrafo", Value::of(mv.forward)},
		    {"ModelViewProjTrafo", Value::of(mvp.forward)},
		    {"ModelTrafoInv", Value::of(m.backward)},
		    {"ViewProjTrafoInv", Value::of(vp.backward)},
		    {"ModelViewTrafoInv", Value::of(mv.backward)},
		    {"ModelViewProjTrafoInv", Value::of(mvp.backward)},
		    {"NormalMatrix", Value::of(m.normalMatrix())},
		    {"CameraLocation", Value::of(v.inverse().transformPos(V3d(0.0)))},
		};
		for (const auto& [name, value] : expected)
		{
			const Rule* rule = standardRule(name);
			ASSERT_NE(rule, nullptr) << name;
			EXPECT_EQ(evaluate(*rule, trafoInputs(*rule, m, v, p)), value) << name << " round " << round;
		}
	}
	EXPECT_EQ(standardRule("Tint"), nullptr);
	EXPECT_TRUE(isTrafoLeaf("ViewTrafo"));
	EXPECT_FALSE(isTrafoLeaf("ViewProjTrafo"));
}

// A rule is its structure: the same expression built twice has one id (and a different grouping another); a
// subexpression written twice is one node; a uniform read twice is one input.
TEST(Rules, EqualStructureIsOneIdAndSharedSubexpressionsAreOneNode)
{
	const Expr m = leaf("ModelTrafo", fx::M44f), v = leaf("ViewTrafo", fx::M44f), p = leaf("ProjTrafo", fx::M44f);
	const Rule a = ruleOf((p * v) * m);
	const Rule b = ruleOf((leaf("ProjTrafo", fx::M44f) * leaf("ViewTrafo", fx::M44f)) * leaf("ModelTrafo", fx::M44f));
	const Rule c = ruleOf(p * (v * m));
	EXPECT_EQ(a.id(), b.id());
	EXPECT_NE(a.id(), c.id());
	EXPECT_EQ(a.nodes().size(), 5u);
	ASSERT_EQ(a.inputs().size(), 3u);
	EXPECT_EQ(a.inputs()[0].name, "ProjTrafo"); // first appearance order: the argument order
	EXPECT_EQ(a.input("ModelTrafo"), 2);
	EXPECT_EQ(a.input("ModelTrafo", true), -1);

	// (v·m) + (v·m): leaves, one product, one sum.
	const Rule twice = ruleOf((v * m) + (v * m));
	EXPECT_EQ(twice.nodes().size(), 4u);
	// The backward half is its own input.
	const Rule both = ruleOf(m * inv(m));
	ASSERT_EQ(both.inputs().size(), 2u);
	EXPECT_TRUE(both.inputs()[1].inverse);
	EXPECT_EQ(ruleOf(inv(inv(m))).id(), ruleOf(m).id());
	// Literals are content too; -0 and +0 are one literal.
	EXPECT_NE(ruleOf(m * lit(2.0)).id(), ruleOf(m * lit(3.0)).id());
	EXPECT_EQ(ruleOf(m * lit(0.0)).id(), ruleOf(m * lit(-0.0)).id());
	EXPECT_EQ(ruleOf(m).describe(), "ModelTrafo");
	EXPECT_EQ(a.describe(), "((ProjTrafo * ViewTrafo) * ModelTrafo)");
	EXPECT_EQ(ruleOf(inv(v) * inv(p)).describe(), "(inverse(ViewTrafo) * inverse(ProjTrafo))");
}

// Every ill-typed operation gives an Expr carrying a one-line error, and everything built from it carries the first
// error on to Rule::make.
TEST(Rules, IllTypedExpressionsReportTheirFirstErrorWhenMadeARule)
{
	const Expr m = leaf("ModelTrafo", fx::M44f), v3 = leaf("Anchor", fx::V3f), f = leaf("Opacity", fx::F32);
	auto error = [](const Expr& e)
	{
		Result<Rule> r = Rule::make(e);
		return r.ok() ? std::string("(no error)") : r.error().message;
	};
	EXPECT_EQ(error(m * v3), "rules: no * of M44f, V3f (the inner dimensions differ)");
	EXPECT_EQ(error(transpose(m * v3) + m), "rules: no * of M44f, V3f (the inner dimensions differ)");
	EXPECT_EQ(error(select(f, m, m)), "rules: select needs a bool condition, not float");
	EXPECT_EQ(error(select(f < lit(1.0), m, lit(1.0))), "rules: select between different types M44f, float");
	EXPECT_EQ(error(swizzle(v3, "xyzw")), "rules: swizzle reaches past the 3 components of V3f");
	EXPECT_EQ(error(swizzle(v3, "xk")), "rules: 'xk' is no swizzle");
	EXPECT_EQ(error(f + lit(1)), "rules: no + of float, int (convert() one side)");
	EXPECT_EQ(error(cross(f, f)), "rules: no cross of float, float (vec3s needed)");
	EXPECT_EQ(error(leaf("NoSuchUniformAnywhere")),
	          "rules: the uniform 'NoSuchUniformAnywhere' has no declared type (declare it in fx::UniformScope or "
	          "give leaf() its type)");
	EXPECT_EQ(error(leaf("Anchor", fx::V3f) + swizzle(leaf("Anchor", fx::V4f), "xyz")),
	          "rules: the uniform 'Anchor' is read as V3f and as V4f");
	EXPECT_EQ(error(determinant(leaf("Skew", fx::Type{fx::Scalar::F32, 3, 4}))),
	          "rules: no determinant of M34f (a square matrix is needed)");
	EXPECT_EQ(error(column(m, 4)), "rules: no column 4 of M44f");
	// Declared standard names take their type from the uniform scope.
	EXPECT_EQ(leaf("ModelTrafo").type(), fx::M44f);
	EXPECT_EQ(leaf("NormalMatrix").type(), fx::M33f);
	EXPECT_TRUE(leaf("ModelTrafo").ok());
}

// Evaluation follows GLSL's semantics: component-wise arithmetic with scalar broadcast, matrix products on either
// side of a vector, resizes with identity fill, integer wraparound and truncating division and conversion.
TEST(Rules, EvaluationFollowsGlslSemantics)
{
	auto value = [](const Expr& e) { return evaluate(ruleOf(e), {}); };
	const M44d t = Trafo3d::translation(V3d(1.0, 2.0, 3.0)).forward;
	EXPECT_EQ(value(transformPos(lit(t), lit(V3d(1.0, 1.0, 1.0)))), Value::of(V3d(2.0, 3.0, 4.0)));
	EXPECT_EQ(value(transformDir(lit(t), lit(V3d(1.0, 1.0, 1.0)))), Value::of(V3d(1.0, 1.0, 1.0)));
	EXPECT_EQ(value(vec(1.0, 2.0, 3.0, 4.0) * lit(t)), Value::of(math::V4d(1.0, 2.0, 3.0, 4.0 + 1.0 + 4.0 + 9.0)));
	EXPECT_EQ(value(column(lit(t), 3)), Value::of(math::V4d(1.0, 2.0, 3.0, 1.0)));
	EXPECT_EQ(value(resize(upper3x3(lit(t)), 4, 4)), Value::of(M44d(1.0)));
	EXPECT_EQ(value(swizzle(vec(1.0, 2.0, 3.0, 4.0), "wzx")), Value::of(V3d(4.0, 3.0, 1.0)));
	EXPECT_EQ(value(vec(swizzle(lit(V3d(1.0, 2.0, 3.0)), "xy"), lit(5.0))), Value::of(V3d(1.0, 2.0, 5.0)));
	EXPECT_EQ(value(lit(V3d(2.0, 4.0, 6.0)) / lit(2.0)), Value::of(V3d(1.0, 2.0, 3.0)));
	EXPECT_EQ(value(lit(2.0) * lit(V3d(1.0, 2.0, 3.0))), Value::of(V3d(2.0, 4.0, 6.0)));
	EXPECT_EQ(value(lit(INT32_MAX) + lit(1)), Value::i32(INT32_MIN));
	EXPECT_EQ(value(lit(0u) - lit(1u)), Value::u32(UINT32_MAX));
	EXPECT_EQ(value(lit(-7) / lit(2)), Value::i32(-3));
	EXPECT_EQ(value(convert(lit(-2.75), fx::Scalar::I32)), Value::i32(-2));
	EXPECT_EQ(value(convert(lit(0.5), fx::Scalar::Bool)), Value::boolean(true));
	EXPECT_EQ(value(select(lit(2.0) < lit(1.0), lit(1.0), lit(2.0))), Value::real(2.0));
	EXPECT_EQ(value(both(lit(true), negate(lit(false)))), Value::boolean(true));
	EXPECT_EQ(value(clamp(lit(V3d(-1.0, 0.5, 3.0)), lit(0.0), lit(1.0))), Value::of(V3d(0.0, 0.5, 1.0)));
	EXPECT_EQ(value(mix(lit(V3d(0.0)), lit(V3d(2.0, 4.0, 8.0)), lit(0.5))), Value::of(V3d(1.0, 2.0, 4.0)));
	EXPECT_EQ(value(cross(lit(V3d(1.0, 0.0, 0.0)), lit(V3d(0.0, 1.0, 0.0)))), Value::of(V3d(0.0, 0.0, 1.0)));
	EXPECT_EQ(value(length(lit(V3d(3.0, 4.0, 0.0)))), Value::real(5.0));
	EXPECT_EQ(value(determinant(lit(Trafo3d::scale(V3d(2.0, 3.0, -1.0)).forward))), Value::real(-6.0));
	EXPECT_EQ(value(transpose(lit(t))), Value::of(glm::transpose(t)));
	// A computed inverse; a singular one is all nan, as no GPU would make it finite either.
	const Value i = value(inv(lit(t) * lit(t)));
	EXPECT_EQ(i, Value::of(Trafo3d::translation(V3d(-2.0, -4.0, -6.0)).forward));
	const Value singular = value(inv(lit(M44d(0.0))));
	EXPECT_TRUE(std::isnan(singular.c[0]) && std::isnan(singular.c[15]));
	EXPECT_EQ(value(max(lit(3), lit(-4))), Value::i32(3));
	EXPECT_EQ(value(abs(lit(-4))), Value::i32(4));
	EXPECT_EQ(value(atan2(lit(1.0), lit(1.0))), Value::real(std::atan2(1.0, 1.0)));
	// Inputs arrive in inputs() order.
	const Rule r = ruleOf(leaf("B", fx::F32) - leaf("A", fx::F32));
	EXPECT_EQ(evaluate(r, std::vector{Value::real(10.0), Value::real(4.0)}), Value::real(6.0));
}

// fold() binds inputs to constants and folds: a select over a bound value collapses to one branch, leaving the
// other inputs; literal arithmetic becomes one literal.
TEST(Rules, FoldBindsInputsAndCollapsesConstantSelects)
{
	const Expr declared = leaf("declared", fx::U32);
	const Expr mirrored = determinant(upper3x3(leaf("ModelTrafo", fx::M44f))) < lit(0.0);
	const Rule cull = ruleOf(select(equal(declared, lit(0u)), lit(0u), select(mirrored, lit(1u), lit(2u))));
	ASSERT_EQ(cull.inputs().size(), 2u);

	const Rule none = fold(cull, std::vector<Binding>{{"declared", Value::u32(0)}});
	EXPECT_TRUE(none.inputs().empty());
	EXPECT_EQ(none.nodes().size(), 1u);
	EXPECT_EQ(evaluate(none, {}), Value::u32(0));

	const Rule back = fold(cull, std::vector<Binding>{{"declared", Value::u32(2)}});
	ASSERT_EQ(back.inputs().size(), 1u);
	EXPECT_EQ(back.inputs()[0].name, "ModelTrafo");
	EXPECT_EQ(back.id(), ruleOf(select(mirrored, lit(1u), lit(2u))).id());
	EXPECT_EQ(evaluate(back, std::vector{Value::of(Trafo3d::scale(V3d(1.0, 1.0, -1.0)).forward)}), Value::u32(1));

	const Rule literal = fold(ruleOf(leaf("A", fx::F32) * (lit(2.0) * lit(3.0))));
	EXPECT_EQ(literal.id(), ruleOf(leaf("A", fx::F32) * lit(6.0)).id());
	// Binding a trafo binds its inverse input to the inverse.
	const Rule bound = fold(ruleOf(inv(leaf("ViewTrafo", fx::M44f))),
	                        std::vector<Binding>{{"ViewTrafo", Value::of(Trafo3d::scale(2.0).forward)}});
	EXPECT_EQ(evaluate(bound, {}), Value::of(Trafo3d::scale(0.5).forward));
}

// flatten() replaces derived inputs by their producers' expressions: a user rule over ModelViewTrafo reads
// ModelTrafo and ViewTrafo afterwards; an inverse of a derived product is the reversed product of inverses; a cycle
// is an error naming it.
TEST(Rules, FlattenSubstitutesDerivedInputsAndReportsCycles)
{
	const Rule billboard =
	    ruleOf(leaf("ModelViewTrafo", fx::M44f) * inv(leaf("ModelViewTrafo", fx::M44f)) * leaf("Offset", fx::M44f));
	auto standard = [](std::string_view name) { return isTrafoLeaf(name) ? nullptr : standardRule(name); };
	Result<Rule> flat = flatten(billboard, standard);
	ASSERT_TRUE(flat.ok()) << flat.error().message;
	EXPECT_EQ(flat.value().describe(),
	          "(((ViewTrafo * ModelTrafo) * (inverse(ModelTrafo) * inverse(ViewTrafo))) * Offset)");

	const Rule a = ruleOf(leaf("B", fx::F32) + lit(1.0));
	const Rule b = ruleOf(leaf("C", fx::F32) * lit(2.0));
	const Rule c = ruleOf(leaf("A", fx::F32) - lit(1.0));
	auto user = [&](std::string_view name) -> const Rule* {
		return name == "A" ? &a : name == "B" ? &b : name == "C" ? &c : nullptr;
	};
	Result<Rule> cycle = flatten(ruleOf(leaf("A", fx::F32)), user);
	ASSERT_FALSE(cycle.ok());
	EXPECT_EQ(cycle.error().message, "rules: derived uniforms form a cycle: A -> B -> C -> A");

	auto acyclic = [&](std::string_view name) -> const Rule* {
		return name == "A" ? &a : name == "B" ? &b : nullptr;
	};
	Result<Rule> chain = flatten(ruleOf(leaf("A", fx::F32)), acyclic);
	ASSERT_TRUE(chain.ok());
	EXPECT_EQ(evaluate(chain.value(), std::vector{Value::real(5.0)}), Value::real(11.0));

	const Rule wrong = ruleOf(leaf("X", fx::V3f));
	auto typed = [&](std::string_view name) -> const Rule* { return name == "A" ? &wrong : nullptr; };
	Result<Rule> mismatch = flatten(ruleOf(leaf("A", fx::F32)), typed);
	ASSERT_FALSE(mismatch.ok());
	EXPECT_EQ(mismatch.error().message, "rules: 'A' is read as float but its rule gives V3f");
}

// The GLSL rendering is a function of the inputs in order, one statement per node, in float or double types.
TEST(Rules, GlslFunctionTakesTheInputsInOrder)
{
	const Rule* mvp = standardRule("ModelViewProjTrafo");
	ASSERT_NE(mvp, nullptr);
	EXPECT_EQ(glslFunction(*mvp, "mvp", Precision::F32),
	          "mat4 mvp(mat4 in0, mat4 in1, mat4 in2)\n{\n\tmat4 t2 = (in0 * in1);\n\tmat4 t4 = (t2 * in2);\n\treturn "
	          "t4;\n}\n");
	const std::string f64 = glslFunction(*standardRule("NormalMatrix"), "normalMatrix", Precision::F64);
	EXPECT_EQ(f64, "dmat3 normalMatrix(dmat4 in0)\n{\n\tdmat3 t1 = dmat3(in0);\n\tdmat3 t2 = transpose(t1);\n\treturn "
	               "t2;\n}\n");
	EXPECT_EQ(glslType(fx::V3f, Precision::F64), "dvec3");
	EXPECT_EQ(glslType(fx::F32, Precision::F64), "double");
	EXPECT_EQ(glslType(fx::U32, Precision::F64), "uint");
	const std::string lits = glslFunction(ruleOf(leaf("A", fx::F32) * lit(0.1) + lit(-1.0)), "f", Precision::F64);
	EXPECT_NE(lits.find("0.10000000000000001lf"), std::string::npos) << lits;
	EXPECT_NE(lits.find("-1.0lf"), std::string::npos) << lits;
}

} // namespace
} // namespace quokka::rules::test
