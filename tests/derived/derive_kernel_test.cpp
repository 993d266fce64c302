// Derive kernels on the device, as a specification: the standard rules and user rules evaluated on the GPU from fp64
// and df32 constituents equal the CPU's double evaluation rounded to float — fp64 bit for bit, df32 within a bound
// stated here — for trafos 10^7 m from the origin, where a float product in world space loses the metres.
#include "gpu_fixture.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <quokka/derived/derive_kernel.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/rules/standard.hpp>

#include "../test_seed.hpp"

namespace quokka::derived::test
{
namespace
{

using gpu::test::GpuTest;
using math::Trafo3d;
using math::V3d;
using rules::Rule;
using rules::Value;
using DeriveKernelTest = GpuTest;

/// A trafo near `origin`: a rotation, a scale and a translation of ±100 m about it.
Trafo3d nearOrigin(std::mt19937_64& rng, const V3d& origin)
{
	std::uniform_real_distribution<double> u(-1.0, 1.0);
	const V3d axis = glm::normalize(V3d(u(rng), u(rng), u(rng)) + V3d(0.0, 0.0, 1.5));
	return Trafo3d::translation(origin + 100.0 * V3d(u(rng), u(rng), u(rng))) * Trafo3d::rotation(axis, 3.0 * u(rng)) *
	       Trafo3d::scale(V3d(1.0 + 0.5 * u(rng), 1.0, 2.0));
}

/// The float ulp at `v`.
double ulp(float v)
{
	return double(std::nextafter(std::abs(v), INFINITY)) - double(std::abs(v));
}

struct Outcome
{
	size_t components = 0, exact = 0, within_ulp = 0;
	std::vector<size_t> beyond_ulp; ///< per rule: components farther than an ulp from the CPU's
	double worst_beyond_ulp = 0.0;  ///< the largest |gpu − cpu| − ulp, relative to the largest input component
};

/// Evaluates every rule of `rules` over `count` random scenes on the GPU and compares with the CPU.
Outcome run(gpu::Device& device, const std::vector<Rule>& rules, Precision precision, uint32_t count,
            std::mt19937_64& rng)
{
	auto kernel = DeriveKernel::create(device, rules, precision);
	EXPECT_TRUE(kernel.ok()) << (kernel.ok() ? "" : kernel.error().message);
	if (!kernel.ok())
		return {};
	const uint32_t stride = recordStride(kernel->maxInputs());
	std::vector<uint32_t> constituents, records;
	std::vector<float> expected;
	std::vector<double> scale; // the largest input component of each output's record
	std::vector<uint32_t> rule_of;
	std::uniform_real_distribution<double> u(-1.0, 1.0);
	auto slot = [&](const Value& v)
	{
		const uint32_t index = uint32_t(constituents.size() / kSlotWords);
		constituents.resize(constituents.size() + kSlotWords);
		packConstituent(v, precision,
		                std::span<uint32_t, kSlotWords>(constituents.data() + index * kSlotWords, kSlotWords));
		return index;
	};
	for (uint32_t s = 0; s < count; ++s)
	{
		// Model and view 10^7 m out (camera-relative products cancel the offset), a projection, a user anchor.
		const V3d origin = s % 2 ? V3d(1e7, -2e6, 5e6) : V3d(0.0);
		const Trafo3d m = nearOrigin(rng, origin);
		const Trafo3d v = math::lookAt(origin + V3d(300.0, 200.0, 100.0), origin, V3d(0.0, 1.0, 0.0));
		const Trafo3d p = math::perspective(0.9, 1.5, 0.5, 5000.0);
		const Value anchor = Value::of(origin + V3d(u(rng), u(rng), u(rng)) * 50.0);
		for (uint32_t r = 0; r < rules.size(); ++r)
		{
			std::vector<Value> inputs;
			records.push_back(r);
			records.push_back(uint32_t(expected.size()));
			records.push_back(0); // (epoch: dispatched at epoch 0, every record computes)
			double big = 0.0;
			for (const rules::Input& in : rules[r].inputs())
			{
				const Trafo3d* t = in.name == "ModelTrafo" ? &m : in.name == "ViewTrafo" ? &v : &p;
				inputs.push_back(in.name == "TestAnchor" ? anchor : Value::of(in.inverse ? t->backward : t->forward));
				for (uint32_t c = 0; c < inputs.back().components(); ++c)
					big = std::max(big, std::abs(inputs.back().c[c]));
				records.push_back(slot(inputs.back()));
			}
			records.resize(records.size() + stride - kRecordInputs - rules[r].inputs().size());
			const Value out = rules::evaluate(rules[r], inputs);
			for (uint32_t c = 0; c < out.components(); ++c)
			{
				expected.push_back(float(out.c[c]));
				scale.push_back(big);
				rule_of.push_back(r);
			}
		}
	}
	const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
	auto make = [&](const std::vector<uint32_t>& words, const char* name)
	{
		auto b = device.createBuffer({words.size() * 4, usage, gpu::MemoryDomain::DeviceLocal, name});
		EXPECT_TRUE(b.ok());
		EXPECT_TRUE(device.uploadBuffer(*b.value(), 0, words.data(), words.size() * 4).ok());
		return std::move(b.value());
	};
	auto c_buf = make(constituents, "derive.constituents");
	auto r_buf = make(records, "derive.records");
	auto t_buf = make(std::vector<uint32_t>(expected.size(), 0xffffffffu), "derive.target");
	auto list = device.beginCommands();
	EXPECT_TRUE(list.ok());
	kernel->dispatch(*list, *c_buf, *c_buf, *r_buf, *t_buf, 0, uint32_t(records.size() / stride), stride, 0);
	EXPECT_TRUE(device.submitAndWait(std::move(*list)).ok());
	auto bytes = device.readBuffer(*t_buf, 0, expected.size() * 4);
	EXPECT_TRUE(bytes.ok());
	std::vector<float> got(expected.size());
	std::memcpy(got.data(), bytes->data(), got.size() * 4);
	Outcome o;
	std::vector<size_t> missed(rules.size());
	for (size_t i = 0; i < got.size(); ++i)
	{
		if (std::abs(double(got[i]) - double(expected[i])) > ulp(expected[i]))
			++missed[rule_of[i]];
		++o.components;
		const double d = std::abs(double(got[i]) - double(expected[i]));
		o.exact += std::memcmp(&got[i], &expected[i], 4) == 0 || (got[i] == 0.0f && expected[i] == 0.0f);
		o.within_ulp += d <= ulp(expected[i]);
		o.worst_beyond_ulp = std::max(o.worst_beyond_ulp, (d - ulp(expected[i])) / scale[i]);
	}
	o.beyond_ulp = std::move(missed);
	return o;
}

/// The standard rules, and user rules: a billboard (camera-facing rotation at an anchor), a view-space anchor.
std::vector<Rule> testRules()
{
	using namespace rules;
	std::vector<Rule> out;
	for (const Standard& s : standardRules())
		out.push_back(s.rule);
	const Expr anchor = leaf("TestAnchor", fx::V3f);
	const Expr translate =
	    vec(vec(1.0, 0.0, 0.0, 0.0), vec(0.0, 1.0, 0.0, 0.0), vec(0.0, 0.0, 1.0, 0.0), vec(anchor, lit(1.0)));
	const Expr view = leaf("ViewTrafo", fx::M44f);
	out.push_back(
	    Rule::make(leaf("ProjTrafo", fx::M44f) * view * translate * resize(upper3x3(inv(view)), 4, 4)).value());
	out.push_back(Rule::make(transformPos(view, anchor)).value());
	return out;
}

TEST_F(DeriveKernelTest, Fp64OutputsEqualTheCpuRoundedToFloatBitForBit)
{
	if (!device().features().shader_float64)
		GTEST_SKIP() << "the device has no shaderFloat64";
	std::mt19937_64 rng(quokka::test::testSeed(38));
	const Outcome o = run(device(), testRules(), Precision::Fp64, 64, rng);
	ASSERT_GT(o.components, 0u);
	EXPECT_EQ(o.exact, o.components) << "fp64 products are summed in the CPU's order, uncontracted";
}

TEST_F(DeriveKernelTest, Df32OutputsAreWithinAnUlpOfTheCpuRoundedToFloat)
{
	std::mt19937_64 rng(quokka::test::testSeed(39));
	const Outcome o = run(device(), testRules(), Precision::Df32, 64, rng);
	ASSERT_GT(o.components, 0u);
	// The standard rules: every component within one float ulp of the double result rounded to float.
	for (size_t r = 0; r < rules::standardRules().size(); ++r)
		EXPECT_EQ(o.beyond_ulp[r], 0u) << rules::standardRules()[r].name;
	// Any rule: within an ulp, or — components that cancel to far below their operands, such as the zeros of a
	// billboard's view rotation times its inverse — within 2^-40 of the largest operand: 10 µm at 10^7 m, where a float
	// product in world space loses metres.
	EXPECT_LE(o.worst_beyond_ulp, std::ldexp(1.0, -40)) << o.within_ulp << " of " << o.components << " within an ulp";
}

/// Evaluates `rule` on the GPU once per input list of `records`; the outputs' floats, record after record.
std::vector<float> derive(gpu::Device& device, const Rule& rule, Precision precision,
                          const std::vector<std::vector<Value>>& records)
{
	auto kernel = DeriveKernel::create(device, {rule}, precision);
	EXPECT_TRUE(kernel.ok());
	if (!kernel.ok())
		return {};
	const uint32_t stride = recordStride(kernel->maxInputs());
	std::vector<uint32_t> constituents, words;
	uint32_t out = 0;
	for (const std::vector<Value>& inputs : records)
	{
		words.push_back(0);
		words.push_back(out);
		words.push_back(0);
		out += rule.type().rows * rule.type().cols;
		for (const Value& v : inputs)
		{
			words.push_back(uint32_t(constituents.size() / kSlotWords));
			constituents.resize(constituents.size() + kSlotWords);
			packConstituent(
			    v, precision,
			    std::span<uint32_t, kSlotWords>(constituents.data() + constituents.size() - kSlotWords, kSlotWords));
		}
		words.resize(words.size() + stride - kRecordInputs - inputs.size());
	}
	const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
	auto make = [&](const std::vector<uint32_t>& w)
	{
		auto b = device.createBuffer({w.size() * 4, usage, gpu::MemoryDomain::DeviceLocal, "derive.test"});
		EXPECT_TRUE(b.ok() && device.uploadBuffer(*b.value(), 0, w.data(), w.size() * 4).ok());
		return std::move(b.value());
	};
	auto c = make(constituents), r = make(words), t = make(std::vector<uint32_t>(out, 0));
	auto list = device.beginCommands();
	EXPECT_TRUE(list.ok());
	kernel->dispatch(*list, *c, *c, *r, *t, 0, uint32_t(records.size()), stride, 0);
	EXPECT_TRUE(device.submitAndWait(std::move(*list)).ok());
	auto bytes = device.readBuffer(*t, 0, uint64_t(out) * 4);
	EXPECT_TRUE(bytes.ok());
	std::vector<float> floats(out);
	std::memcpy(floats.data(), bytes->data(), floats.size() * 4);
	return floats;
}

/// Where a float vertex shader puts `p` with the float matrix `mvp` on a 1000 × 1000 viewport, in pixels.
math::V2d pixelOf(const math::M44f& mvp, const math::V3f& p)
{
	const math::V4f clip = mvp * math::V4f(p, 1.0f);
	return 500.0 * (math::V2d(clip.x / clip.w, clip.y / clip.w) + 1.0);
}

// Jitter: a model 10^7 m from the origin and a camera orbiting 30 m from it. Drawn with the derived ModelViewProj (the
// product taken in double on the GPU, the large translations cancelling before the result is narrowed to float), each
// vertex lands within 1/8 pixel of the double-precision projection, frame after frame, in fp64 and in df32. The
// world-space float product the stock trafo used before — ViewProj · (Model · p), both matrices narrowed — misses by
// many pixels: the test can fail.
TEST_F(DeriveKernelTest, CameraRelativeProductsDoNotJitterTenThousandKilometresOut)
{
	const V3d origin(1e7, 2.5e6, -4e6);
	const Trafo3d model = Trafo3d::translation(origin) * Trafo3d::rotation(V3d(0.0, 1.0, 0.0), 0.4);
	const Trafo3d proj = math::perspective(0.8, 1.0, 0.1, 1000.0);
	std::vector<math::V3f> vertices;
	for (int i = 0; i < 27; ++i)
		vertices.emplace_back(float(i % 3 - 1) * 4.0f, float(i / 3 % 3 - 1) * 4.0f, float(i / 9 - 1) * 4.0f);
	std::vector<Trafo3d> views;
	for (int f = 0; f < 24; ++f)
	{
		const double a = 0.05 * f;
		views.push_back(
		    math::lookAt(origin + V3d(30.0 * std::cos(a), 8.0, 30.0 * std::sin(a)), origin, V3d(0.0, 1.0, 0.0)));
	}
	const Rule& mvp = *rules::standardRule("ModelViewProjTrafo");
	std::vector<std::vector<Value>> records;
	for (const Trafo3d& v : views)
		records.push_back({Value::of(proj.forward), Value::of(v.forward), Value::of(model.forward)});
	auto worst = [&](auto matrixOf)
	{
		double err = 0.0;
		for (size_t f = 0; f < views.size(); ++f)
		{
			const math::M44d exact = (proj * views[f] * model).forward;
			const math::M44f m = matrixOf(f);
			for (const math::V3f& p : vertices)
			{
				const math::V4d clip = exact * math::V4d(math::V3d(p), 1.0);
				const math::V2d want = 500.0 * (math::V2d(clip.x / clip.w, clip.y / clip.w) + 1.0);
				err = std::max(err, glm::length(pixelOf(m, p) - want));
			}
		}
		return err;
	};
	std::vector<Precision> precisions{Precision::Df32};
	if (device().features().shader_float64)
		precisions.push_back(Precision::Fp64);
	for (Precision precision : precisions)
	{
		const std::vector<float> out = derive(device(), mvp, precision, records);
		ASSERT_EQ(out.size(), views.size() * 16);
		const double err = worst(
		    [&](size_t f)
		    {
			    math::M44f m;
			    for (int c = 0; c < 16; ++c)
				    m[c / 4][c % 4] = out[16 * f + size_t(c)];
			    return m;
		    });
		EXPECT_LE(err, 0.125) << precisionName(precision);
		std::printf("derived ModelViewProj, %s: at most %.2e px from the double projection\n", precisionName(precision),
		            err);
	}
	// The world-space float product: ViewProj · (Model · p) with both matrices narrowed to float.
	double err = 0.0;
	for (size_t f = 0; f < views.size(); ++f)
	{
		const math::M44f vp = math::toFloat((proj * views[f]).forward), m = math::toFloat(model.forward);
		const math::M44d exact = (proj * views[f] * model).forward;
		for (const math::V3f& p : vertices)
		{
			const math::V4f clip = vp * (m * math::V4f(p, 1.0f));
			const math::V2d got = 500.0 * (math::V2d(clip.x / clip.w, clip.y / clip.w) + 1.0);
			const math::V4d c = exact * math::V4d(math::V3d(p), 1.0);
			err = std::max(err, glm::length(got - 500.0 * (math::V2d(c.x / c.w, c.y / c.w) + 1.0)));
		}
	}
	EXPECT_GT(err, 8.0) << "the world-space float product should be off by pixels at 10^7 m";
	std::printf("world-space float product: at most %.1f px from the double projection\n", err);
}

// A dispatch at epoch E computes the records written at E and those reading a constituent written at E; the others
// keep what their outputs hold. Epoch 0 computes every record.
TEST_F(DeriveKernelTest, ADispatchComputesOnlyWhatChangedInItsEpoch)
{
	const Rule& mv = *rules::standardRule("ModelViewTrafo"); // inputs: ViewTrafo, ModelTrafo
	auto kernel = DeriveKernel::create(device(), {mv}, Precision::Df32);
	ASSERT_TRUE(kernel.ok()) << kernel.error().message;
	const uint32_t stride = recordStride(kernel->maxInputs());
	// Slots: 0 the view, 1–3 three models; their epochs 5, 7, 9, 3.
	std::vector<uint32_t> constituents(4 * kSlotWords);
	const Trafo3d view = Trafo3d::translation(V3d(0.0, 0.0, -5.0));
	packConstituent(Value::of(view.forward), Precision::Df32,
	                std::span<uint32_t, kSlotWords>(constituents.data(), kSlotWords));
	for (uint32_t m = 1; m <= 3; ++m)
		packConstituent(Value::of(Trafo3d::translation(V3d(double(m), 0.0, 0.0)).forward), Precision::Df32,
		                std::span<uint32_t, kSlotWords>(constituents.data() + m * kSlotWords, kSlotWords));
	const std::vector<uint32_t> epochs = {5, 7, 9, 3};
	// Records r0..r2 read (view, model r + 1) into outputs 16 words apart; written at epochs 2, 2 and 9.
	std::vector<uint32_t> records;
	const uint32_t written[3] = {2, 2, 9};
	for (uint32_t r = 0; r < 3; ++r)
	{
		const std::vector<uint32_t> row = {0, 16 * r, written[r], 0, r + 1};
		records.insert(records.end(), row.begin(), row.end());
		records.resize(size_t(r + 1) * stride, 0);
	}
	const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
	auto make = [&](const std::vector<uint32_t>& w)
	{
		auto b = device().createBuffer({w.size() * 4, usage, gpu::MemoryDomain::DeviceLocal, "derive.epochs"});
		EXPECT_TRUE(b.ok() && device().uploadBuffer(*b.value(), 0, w.data(), w.size() * 4).ok());
		return std::move(b.value());
	};
	auto c = make(constituents), e = make(epochs), r = make(records);
	auto computed = [&](uint32_t epoch)
	{
		auto t = make(std::vector<uint32_t>(48, 0xffffffffu));
		auto list = device().beginCommands();
		EXPECT_TRUE(list.ok());
		kernel->dispatch(*list, *c, *e, *r, *t, 0, 3, stride, epoch);
		EXPECT_TRUE(device().submitAndWait(std::move(*list)).ok());
		auto bytes = device().readBuffer(*t, 0, 48 * 4);
		std::vector<uint32_t> words(48);
		std::memcpy(words.data(), bytes->data(), 48 * 4);
		std::vector<bool> out;
		for (uint32_t i = 0; i < 3; ++i)
		{
			out.push_back(words[16 * i] != 0xffffffffu);
			if (out.back()) // the value itself: View · Model, translation (i + 1, 0, -5)
			{
				EXPECT_EQ(std::bit_cast<float>(words[16 * i + 12]), float(i + 1)) << "record " << i;
			}
		}
		return out;
	};
	EXPECT_EQ(computed(9), (std::vector<bool>{false, true, true})) << "r1 reads model 2 (written at 9), r2 was";
	EXPECT_EQ(computed(5), (std::vector<bool>{true, true, true})) << "every record reads the view (written at 5)";
	EXPECT_EQ(computed(7), (std::vector<bool>{true, false, false}));
	EXPECT_EQ(computed(4), (std::vector<bool>{false, false, false}));
	EXPECT_EQ(computed(0), (std::vector<bool>{true, true, true}));
}

// Fp64 on a device without shaderFloat64 and rules a uniform cannot hold are errors.
TEST_F(DeriveKernelTest, KernelsRefuseWhatTheyCannotCompute)
{
	auto boolean =
	    DeriveKernel::create(device(), {Rule::make(rules::lit(1.0) < rules::lit(2.0)).value()}, Precision::Df32);
	ASSERT_FALSE(boolean.ok());
	EXPECT_EQ(boolean.error().message, "derive kernel: the rule (1.000000 < 2.000000) gives a bool, which no uniform "
	                                   "holds");
	if (!device().features().shader_float64)
	{
		auto fp64 = DeriveKernel::create(device(), testRules(), Precision::Fp64);
		ASSERT_FALSE(fp64.ok());
		EXPECT_EQ(fp64.error().code, ErrorCode::MissingFeature);
	}
	EXPECT_EQ(precisionFor(device()), device().features().shader_float64 ? Precision::Fp64 : Precision::Df32);
}

} // namespace
} // namespace quokka::derived::test
