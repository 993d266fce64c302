// Rules on the device: the GLSL rendering of rules covering every operation, run in a compute shader in float and
// (where the device has shaderFloat64) double precision, against the CPU evaluation in double.
#include "gpu_fixture.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <quokka/fx/standard_uniforms.hpp>
#include <quokka/fx/uniform_scope.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>
#include <quokka/rules/rule.hpp>
#include <quokka/rules/standard.hpp>

#include "../test_seed.hpp"

namespace quokka::rules::test
{
namespace
{

using gpu::test::GpuTest;
using math::Trafo3d;
using math::V3d;
using RulesGpuTest = GpuTest;

/// Rules over every operation, reading trafos, vectors, scalars and integers.
std::vector<Rule> everyOperation()
{
	const Expr m = leaf("ModelTrafo", fx::M44f), v = leaf("ViewTrafo", fx::M44f);
	const Expr a = leaf("Anchor", fx::V3f), s = leaf("Opacity", fx::F32), k = leaf("Layer", fx::I32);
	const Expr u = leaf("Flags", fx::U32);
	const Expr angle = clamp(s, lit(-0.9), lit(0.9));
	const std::vector<Expr> exprs = {
	    v * m,
	    inv(m) * inv(v),
	    transpose(upper3x3(inv(m))),
	    swizzle(column(inv(v), 3), "xyz"),
	    transformPos(m, a) - transformDir(v, a) * s,
	    vec(normalize(a), length(a)),
	    vec(dot(a, a), determinant(upper3x3(m)), floor(s * lit(7.5)), sqrt(abs(s))),
	    vec(sin(s), cos(s), tan(angle), asin(angle)),
	    vec(acos(angle), atan(s), exp(angle), log(abs(s) + lit(1.0))),
	    vec(pow(abs(s) + lit(0.5), lit(1.5)), atan2(s, lit(0.5)), sign(s), -s),
	    cross(a, swizzle(a, "zxy")) / lit(3.0),
	    min(a, lit(V3d(0.25))) + max(a, swizzle(a, "yzx")),
	    mix(a, swizzle(a, "zzx"), s) + clamp(a, lit(V3d(-0.5)), lit(V3d(0.5))),
	    select(both(s < lit(0.0), negate(equal(k, lit(3)))), a, -a),
	    select(either(s >= lit(0.5), notEqual(u, lit(7u))), lit(1.0), lit(2.0)) + convert(k, fx::Scalar::F32),
	    convert(k * lit(3) - lit(1), fx::Scalar::F32) + convert(u / lit(2u) + lit(1u), fx::Scalar::F32),
	    resize(resize(m, 3, 3), 4, 4) * vec(a, s),
	    inv(resize(m, 3, 3) * lit(math::M33d(2.0))),
	    lit(V3d(1.0, 2.0, 3.0)) * lit(math::M33d(1.0)) + a,
	    vec(select(s <= lit(0.25), lit(1.0), lit(0.0)), lit(2.0)),
	};
	std::vector<Rule> out;
	for (const Expr& e : exprs)
	{
		Result<Rule> r = Rule::make(e);
		EXPECT_TRUE(r.ok()) << r.error().message;
		if (r.ok())
			out.push_back(r.value());
	}
	return out;
}

Value randomInput(const Input& in, std::mt19937_64& rng)
{
	std::uniform_real_distribution<double> d(-1.0, 1.0);
	if (in.type == fx::M44f)
	{
		const V3d axis = glm::normalize(V3d(d(rng), d(rng), d(rng)) + V3d(0.0, 0.0, 2.0));
		const Trafo3d t = Trafo3d::translation(V3d(d(rng), d(rng), d(rng)) * 5.0) *
		                  Trafo3d::rotation(axis, 3.0 * d(rng)) * Trafo3d::scale(V3d(1.5 + d(rng), 1.2, 0.8));
		return Value::of(in.inverse ? t.backward : t.forward);
	}
	Value v;
	v.type = in.type;
	for (uint32_t i = 0; i < v.components(); ++i)
		v.c[i] = in.type.scalar == fx::Scalar::F32   ? d(rng)
		         : in.type.scalar == fx::Scalar::I32 ? double(int(rng() % 7) - 3)
		                                             : double(rng() % 9);
	return v;
}

/// A compute shader calling each rule once with its inputs from a flat array and writing its components.
std::string kernel(const std::vector<Rule>& rules, Precision precision, std::vector<uint32_t>& in_at,
                   std::vector<uint32_t>& out_at)
{
	const std::string real = precision == Precision::F64 ? "double" : "float";
	std::string src = "#version 460\nlayout(local_size_x = 1) in;\n";
	src += "layout(set = 0, binding = 0, std430) readonly buffer In { " + real + " v[]; } inp;\n";
	src += "layout(set = 0, binding = 1, std430) writeonly buffer Out { " + real + " v[]; } outp;\n";
	std::string main = "void main()\n{\n";
	uint32_t in_next = 0, out_next = 0;
	for (size_t r = 0; r < rules.size(); ++r)
	{
		const Rule& rule = rules[r];
		src += glslFunction(rule, "rule" + std::to_string(r), precision);
		std::string call = "rule" + std::to_string(r) + "(";
		in_at.push_back(in_next);
		for (size_t i = 0; i < rule.inputs().size(); ++i)
		{
			const Type t = rule.inputs()[i].type;
			std::string args;
			for (uint32_t c = 0; c < uint32_t(t.rows) * t.cols; ++c)
				args += (c ? ", " : "") + std::string("inp.v[") + std::to_string(in_next++) + "]";
			call += (i ? ", " : "") + glslType(t, precision) + "(" + args + ")";
		}
		call += ")";
		out_at.push_back(out_next);
		const Type t = rule.type();
		main += "\t{\n\t\t" + glslType(t, precision) + " r = " + call + ";\n";
		for (uint32_t col = 0; col < t.cols; ++col)
			for (uint32_t row = 0; row < t.rows; ++row)
			{
				std::string at = t.isMatrix() ? "r[" + std::to_string(col) + "][" + std::to_string(row) + "]"
				                 : t.rows > 1 ? "r[" + std::to_string(row) + "]"
				                              : "r";
				main += "\t\toutp.v[" + std::to_string(out_next++) + "] = " + real + "(" + at + ");\n";
			}
		main += "\t}\n";
	}
	return src + main + "}\n";
}

template <typename Real>
std::vector<double> run(gpu::Device& device, const std::string& glsl, const std::vector<double>& inputs, size_t outputs)
{
	auto code = device.shaderCompiler().compile({glsl, gpu::ShaderStage::Compute, "rules.comp"});
	EXPECT_TRUE(code.ok()) << (code.ok() ? "" : code.error().message) << "\n" << glsl;
	if (!code.ok())
		return {};
	auto pipeline = device.createComputePipeline({.spirv = *code.value(), .name = "rules"});
	EXPECT_TRUE(pipeline.ok());
	std::vector<Real> in(inputs.begin(), inputs.end());
	const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
	auto in_buf = device.createBuffer({in.size() * sizeof(Real), usage, gpu::MemoryDomain::DeviceLocal, "rules.in"});
	auto out_buf = device.createBuffer({outputs * sizeof(Real), usage, gpu::MemoryDomain::DeviceLocal, "rules.out"});
	EXPECT_TRUE(in_buf.ok() && out_buf.ok());
	EXPECT_TRUE(device.uploadBuffer(*in_buf.value(), 0, in.data(), in.size() * sizeof(Real)).ok());
	auto list = device.beginCommands();
	EXPECT_TRUE(list.ok());
	pipeline.value()->bind(list.value());
	pipeline.value()->pushBuffer(list.value(), 0, *in_buf.value());
	pipeline.value()->pushBuffer(list.value(), 1, *out_buf.value());
	vkCmdDispatch(list.value().vk(), 1, 1, 1);
	EXPECT_TRUE(device.submitAndWait(std::move(list.value())).ok());
	auto bytes = device.readBuffer(*out_buf.value(), 0, outputs * sizeof(Real));
	EXPECT_TRUE(bytes.ok());
	std::vector<Real> out(outputs);
	std::memcpy(out.data(), bytes.value().data(), outputs * sizeof(Real));
	return {out.begin(), out.end()};
}

/// True when the rule calls a function GLSL has in float only (so a double rendering is float-accurate there).
bool floatOnly(const Rule& rule)
{
	for (const Node& n : rule.nodes())
		if ((n.op >= Op::Sin && n.op <= Op::Log) || n.op == Op::Pow || n.op == Op::Atan2)
			return true;
	return false;
}

/// Each rule's GPU components against the CPU's, within `tolerance` relative (`float_only` for rules calling
/// float-only functions).
void compare(gpu::Device& device, Precision precision, double tolerance, double float_only)
{
	const std::vector<Rule> rules = everyOperation();
	std::mt19937_64 rng(quokka::test::testSeed(38));
	for (int round = 0; round < 3; ++round)
	{
		std::vector<uint32_t> in_at, out_at;
		const std::string glsl = kernel(rules, precision, in_at, out_at);
		std::vector<double> inputs, expected;
		for (const Rule& rule : rules)
		{
			std::vector<Value> values;
			for (const Input& in : rule.inputs())
			{
				values.push_back(randomInput(in, rng));
				inputs.insert(inputs.end(), values.back().c.begin(),
				              values.back().c.begin() + values.back().components());
			}
			const Value out = evaluate(rule, values);
			expected.insert(expected.end(), out.c.begin(), out.c.begin() + out.components());
		}
		const std::vector<double> got = precision == Precision::F64 ? run<double>(device, glsl, inputs, expected.size())
		                                                            : run<float>(device, glsl, inputs, expected.size());
		ASSERT_EQ(got.size(), expected.size());
		for (size_t r = 0; r < rules.size(); ++r)
		{
			const size_t end = r + 1 < rules.size() ? out_at[r + 1] : expected.size();
			for (size_t i = out_at[r]; i < end; ++i)
				EXPECT_NEAR(got[i], expected[i],
				            (floatOnly(rules[r]) ? float_only : tolerance) * std::max(1.0, std::abs(expected[i])))
				    << rules[r].describe() << " component " << i - out_at[r] << " round " << round;
		}
	}
}

TEST_F(RulesGpuTest, GlslInFloatEqualsTheCpuEvaluationWithinFloatRounding)
{
	// Vulkan allows float sin/cos an absolute error of 2^-11 and asin, atan, pow thousands of ulp; lavapipe uses it.
	compare(device(), Precision::F32, 2e-4, 1e-3);
}

TEST_F(RulesGpuTest, GlslInDoubleEqualsTheCpuEvaluation)
{
	if (!device().features().shader_float64)
		GTEST_SKIP() << "the device has no shaderFloat64";
	// Products, sums and the computed inverse in double; the float-only functions (sin, exp, pow, …) in float.
	compare(device(), Precision::F64, 1e-12, 1e-3);
}

// The two forms of the standard uniforms mean the same: each name's GLSL expression in fx's table (what per-instance
// shaders inline), run on the device, equals its rule's CPU evaluation.
TEST_F(RulesGpuTest, TheStandardGlslExpressionsEqualTheStandardRules)
{
	std::mt19937_64 rng(quokka::test::testSeed(38));
	const std::string leaves[] = {"ModelTrafo", "ViewTrafo", "ProjTrafo"};
	std::vector<Trafo3d> trafos;
	std::vector<double> inputs;
	for (int i = 0; i < 3; ++i)
	{
		const Value v = randomInput({leaves[i], fx::M44f, false}, rng);
		trafos.push_back(Trafo3d::fromMatrix(v.m44()));
		inputs.insert(inputs.end(), v.c.begin(), v.c.end());
	}
	std::string src = "#version 460\nlayout(local_size_x = 1) in;\n"
	                  "layout(set = 0, binding = 0, std430) readonly buffer In { float v[]; } inp;\n"
	                  "layout(set = 0, binding = 1, std430) writeonly buffer Out { float v[]; } outp;\n"
	                  "void main()\n{\n";
	std::vector<double> expected;
	uint32_t out = 0;
	for (const fx::StandardUniform& u : fx::standardUniforms())
	{
		const Type type = *fx::UniformScope::lookup(u.name);
		std::string value = u.glsl.empty() ? "" : std::string(u.glsl);
		if (value.empty())
		{
			const int i = u.name == "ModelTrafo" ? 0 : u.name == "ViewTrafo" ? 1 : 2;
			value = "mat4(";
			for (int c = 0; c < 16; ++c)
				value += (c ? ", " : "") + std::string("inp.v[") + std::to_string(16 * i + c) + "]";
			value += ")";
		}
		src += "\t" + fx::glslName(type) + " " + std::string(u.name) + " = " + value + ";\n";
		const Rule* rule = standardRule(u.name);
		ASSERT_NE(rule, nullptr) << u.name;
		ASSERT_EQ(rule->type(), type) << u.name;
		std::vector<Value> values;
		for (const Input& in : rule->inputs())
		{
			const Trafo3d& t = trafos[in.name == "ModelTrafo" ? 0 : in.name == "ViewTrafo" ? 1 : 2];
			values.push_back(Value::of(in.inverse ? t.backward : t.forward));
		}
		const Value v = evaluate(*rule, values);
		for (uint32_t c = 0; c < v.components(); ++c)
		{
			const std::string at =
			    type.isMatrix() ? "[" + std::to_string(c / type.rows) + "][" + std::to_string(c % type.rows) + "]"
			                    : "[" + std::to_string(c) + "]";
			src += "\toutp.v[" + std::to_string(out++) + "] = " + std::string(u.name) + at + ";\n";
			expected.push_back(v.c[c]);
		}
	}
	src += "}\n";
	const std::vector<double> got = run<float>(device(), src, inputs, expected.size());
	ASSERT_EQ(got.size(), expected.size());
	for (size_t i = 0; i < got.size(); ++i)
		EXPECT_NEAR(got[i], expected[i], 1e-3 * std::max(1.0, std::abs(expected[i]))) << "component " << i;
}

} // namespace
} // namespace quokka::rules::test
