// The generated route kernel on the device equals RouteSpec::slotOf for every record of random inputs: rules over
// matrices and scalars, computed values spanning a whole axis, values outside an axis (kNoSlot), and no records.
#include "gpu_fixture.hpp"

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/modes/partition.hpp>
#include <quokka/modes/route_spec.hpp>
#include <quokka/rules/expr.hpp>

#include "rule_helpers.hpp"

namespace quokka::modes
{
namespace
{

using namespace quokka::rules;
using scene::ModeAxis;
using RouteKernelTest = gpu::test::GpuTest;

using test::make;

/// Runs `spec`'s kernel over `words` (count records) and returns the slots; `first_bad` gets the kernel's report.
std::vector<uint32_t> run(gpu::Device& device, const RouteSpec& spec, const std::vector<uint32_t>& words,
                          uint32_t count, uint32_t* first_bad = nullptr)
{
	auto kernel = RouteKernel::create(device, spec);
	EXPECT_TRUE(kernel.ok()) << kernel.error().message << "\n" << spec.kernelSource();
	const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
	auto in =
	    device.createBuffer({std::max<size_t>(16, words.size() * 4), usage, gpu::MemoryDomain::DeviceLocal, "in"});
	auto out =
	    device.createBuffer({std::max<size_t>(16, size_t(count) * 4), usage, gpu::MemoryDomain::DeviceLocal, "slots"});
	auto bad = device.createBuffer({16, usage, gpu::MemoryDomain::DeviceLocal, "bad"});
	if (!words.empty())
	{
		EXPECT_TRUE(device.uploadBuffer(**in, 0, words.data(), words.size() * 4).ok());
	}
	const uint32_t none[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
	EXPECT_TRUE(device.uploadBuffer(**bad, 0, none, 16).ok());
	auto list = device.beginCommands().value();
	kernel->dispatch(list, **in, **out, **bad, count);
	EXPECT_TRUE(device.submitAndWait(std::move(list)).ok());
	if (first_bad)
	{
		auto b = device.readBuffer(**bad, 0, 4).value();
		std::memcpy(first_bad, b.data(), 4);
	}
	if (count == 0)
		return {};
	auto bytes = device.readBuffer(**out, 0, size_t(count) * 4).value();
	std::vector<uint32_t> slots(count);
	std::memcpy(slots.data(), bytes.data(), size_t(count) * 4);
	return slots;
}

TEST_F(RouteKernelTest, SlotsEqualTheOracleForRandomRecords)
{
	const Expr declared = leaf("declared", fx::U32);
	const Expr model = leaf("ModelTrafo", fx::M44f), opacity = leaf("Opacity", fx::F32), flag = leaf("Flag", fx::I32);
	const std::vector<scene::ModeRule> rules = {
	    {ModeAxis::FrontFace, make(select(determinant(upper3x3(model)) < lit(0.0), lit(1u) - declared, declared)), {}},
	    {ModeAxis::DepthCompare, make(convert(floor(opacity * lit(8.0)), fx::Scalar::U32)), {}},
	    {ModeAxis::CullMode, make(select(flag > lit(0), lit(2u), select(flag < lit(-5), lit(7u), lit(0u)))), {}},
	    {ModeAxis::DepthWrite, make(both(opacity >= lit(0.5), leaf("Visible", fx::Bool))), {}},
	    {ModeAxis::Blend, make(convert(abs(flag), fx::Scalar::U32)), std::vector<scene::BlendState>(3)}};
	scene::PipelineStateValues declared_state;
	declared_state.front_face = VK_FRONT_FACE_CLOCKWISE;
	const RouteSpec spec = RouteSpec::make(rules, declared_state).value();
	ASSERT_EQ(spec.inputWords(), 16u + 1u + 1u + 1u + 1u + 1u);
	std::mt19937 rng(11);
	std::uniform_real_distribution<double> u(-1.0, 1.0);
	const uint32_t count = 5000;
	std::vector<uint32_t> words(size_t(count) * spec.inputWords());
	for (uint32_t i = 0; i < count; ++i)
	{
		uint32_t* w = words.data() + size_t(i) * spec.inputWords();
		const math::Trafo3d t = math::Trafo3d::scale(math::V3d(u(rng) < 0 ? -2.0 : 1.5, 1.0, 0.5)) *
		                        math::Trafo3d::translation(math::V3d(u(rng), u(rng), u(rng)) * 10.0);
		RouteSpec::pack(Value::of(t.forward), w);
		const float o = float(u(rng) * 0.6 + 0.5); // (some below 0: floor is negative, no compare op)
		w[16] = std::bit_cast<uint32_t>(o);
		const int32_t f = int32_t(rng() % 13) - 8;
		w[17] = uint32_t(f);
		w[18] = std::bit_cast<uint32_t>(o);
		w[19] = rng() % 2;
		w[20] = uint32_t(f);
	}
	uint32_t first_bad = 0;
	const std::vector<uint32_t> gpu_slots = run(device(), spec, words, count, &first_bad);
	uint32_t dropped = 0, mismatches = 0, first_dropped = kNoSlot;
	std::vector<uint32_t> seen(spec.slots(), 0);
	for (uint32_t i = 0; i < count; ++i)
	{
		const uint32_t cpu = spec.slotOf(std::span(words).subspan(size_t(i) * spec.inputWords(), spec.inputWords()));
		if (gpu_slots[i] != cpu && mismatches++ < 5)
			ADD_FAILURE() << "record " << i << ": GPU " << gpu_slots[i] << ", CPU " << cpu;
		if (cpu != kNoSlot)
			++seen[cpu];
		else if (dropped++ == 0)
			first_dropped = i;
	}
	EXPECT_EQ(mismatches, 0u);
	EXPECT_GT(dropped, 0u) << "cull mode 7, negative opacity and blend ≥ 3 drop records";
	EXPECT_EQ(first_bad, first_dropped) << "the kernel reports the first record it dropped";
	EXPECT_GT(std::count_if(seen.begin(), seen.end(), [](uint32_t c) { return c > 0; }), 20)
	    << "many combinations reached";
	EXPECT_TRUE(run(device(), spec, {}, 0).empty());
}

TEST_F(RouteKernelTest, ARuleOfConstantsOnlyNeedsNoInputs)
{
	const std::vector<scene::ModeRule> rules = {{ModeAxis::FrontFace, make(lit(1u) - leaf("declared", fx::U32)), {}}};
	const RouteSpec spec = RouteSpec::make(rules, {}).value();
	EXPECT_EQ(spec.inputWords(), 0u);
	EXPECT_EQ(spec.slots(), 1u);
	uint32_t first_bad = 0;
	const std::vector<uint32_t> slots = run(device(), spec, {}, 100, &first_bad);
	EXPECT_EQ(slots, std::vector<uint32_t>(100, 0u));
	EXPECT_EQ(first_bad, kNoSlot);
	EXPECT_EQ(spec.state(0, {}).front_face, VK_FRONT_FACE_CLOCKWISE) << "declared counter-clockwise, flipped";
}

} // namespace
} // namespace quokka::modes
