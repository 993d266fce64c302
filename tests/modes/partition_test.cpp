// The partition as a spec: on the device, each slot's records equal partitionCPU's as multisets, for random inputs of
// 1–64 slots (and more than fit in shared memory), empty slots, every record in one slot, dropped records, and a slot
// count that changes between runs; compact offsets are the scan of the counts; regions cap a slot at its capacity and
// still count what asked.
#include "gpu_fixture.hpp"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/modes/partition.hpp>

#include "../test_seed.hpp"

namespace quokka::modes
{
namespace
{

using gpu::test::GpuTest;
using PartitionTest = GpuTest;

struct PartitionRun
{
	gpu::Device& device;
	PartitionKernel kernel;

	gpu::BufferHandle make(const std::vector<uint32_t>& words, size_t min_words, const char* name)
	{
		const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
		auto b = device.createBuffer(
		    {std::max<size_t>(16, std::max(words.size(), min_words) * 4), usage, gpu::MemoryDomain::DeviceLocal, name});
		EXPECT_TRUE(b.ok());
		if (!words.empty())
		{
			EXPECT_TRUE(device.uploadBuffer(*b.value(), 0, words.data(), words.size() * 4).ok());
		}
		return std::move(b.value());
	}
	std::vector<uint32_t> read(const gpu::BufferHandle& b, size_t words)
	{
		if (words == 0)
			return {};
		auto bytes = device.readBuffer(*b, 0, words * 4);
		EXPECT_TRUE(bytes.ok());
		std::vector<uint32_t> out(words);
		std::memcpy(out.data(), bytes->data(), words * 4);
		return out;
	}
};

/// Records whose words are unique (record i: i·stride + w, so a lost or duplicated record shows) and slots drawn from
/// `pick`.
struct Input
{
	std::vector<uint32_t> slot_of, records;
};
template <typename Pick>
Input input(uint32_t count, uint32_t stride, Pick pick)
{
	Input in;
	for (uint32_t i = 0; i < count; ++i)
	{
		in.slot_of.push_back(pick(i));
		for (uint32_t w = 0; w < stride; ++w)
			in.records.push_back(i * stride + w);
	}
	return in;
}

/// Slot s's records as a sorted list of records (each `stride` words).
std::vector<std::vector<uint32_t>> sortedRecords(std::span<const uint32_t> words, uint32_t stride)
{
	std::vector<std::vector<uint32_t>> r;
	for (size_t i = 0; i + stride <= words.size(); i += stride)
		r.emplace_back(words.begin() + i, words.begin() + i + stride);
	std::sort(r.begin(), r.end());
	return r;
}

/// Runs the compact partition and checks it against partitionCPU.
void checkCompact(PartitionRun& run, const Input& in, uint32_t stride, uint32_t slots)
{
	const uint32_t n = uint32_t(in.slot_of.size());
	auto slot_of = run.make(in.slot_of, 1, "slot_of");
	auto records = run.make(in.records, 1, "records");
	auto counts = run.make({}, slots, "counts");
	auto offsets = run.make({}, slots, "offsets");
	auto cursors = run.make({}, slots, "cursors");
	auto out = run.make({}, size_t(n) * stride, "out");
	auto list = run.device.beginCommands();
	ASSERT_TRUE(list.ok());
	run.kernel.compact(*list, {&*slot_of, &*records, &*counts, &*offsets, &*cursors, &*out}, n, stride, slots);
	ASSERT_TRUE(run.device.submitAndWait(std::move(*list)).ok());
	const auto want = partitionCPU(in.slot_of, in.records, stride, slots);
	const auto c = run.read(counts, slots), o = run.read(offsets, slots);
	const auto words = run.read(out, size_t(n) * stride);
	uint32_t at = 0;
	for (uint32_t s = 0; s < slots; ++s)
	{
		ASSERT_EQ(c[s] * stride, want[s].size()) << "slot " << s;
		ASSERT_EQ(o[s], at) << "slot " << s << ": the exclusive scan of the counts";
		at += c[s];
		const std::span<const uint32_t> got(words.data() + size_t(o[s]) * stride, size_t(c[s]) * stride);
		ASSERT_EQ(sortedRecords(got, stride), sortedRecords(want[s], stride)) << "slot " << s;
	}
}

TEST_F(PartitionTest, CompactMatchesTheCpuOracleForRandomInputs)
{
	auto k = PartitionKernel::create(device());
	ASSERT_TRUE(k.ok()) << k.error().message;
	PartitionRun run{device(), std::move(*k)};
	std::mt19937 rng(quokka::test::testSeed(39));
	for (uint32_t slots : {1u, 2u, 3u, 16u, 17u, 64u, 1500u})
		for (uint32_t count : {0u, 1u, 255u, 257u, 5000u})
		{
			SCOPED_TRACE("slots " + std::to_string(slots) + ", records " + std::to_string(count));
			const uint32_t stride = 1 + rng() % 5;
			// Skewed: half the records in slot 0 (a hot slot), some dropped, the rest spread (some slots stay empty).
			checkCompact(run,
			             input(count, stride,
			                   [&](uint32_t) -> uint32_t
			                   {
				                   const uint32_t r = rng() % 100;
				                   return r < 50 ? 0u : r < 55 ? kNoSlot : r < 60 ? slots + r : rng() % slots;
			                   }),
			             stride, slots);
		}
}

TEST_F(PartitionTest, EveryRecordInOneSlotAndEmptySlotsAround)
{
	auto k = PartitionKernel::create(device());
	ASSERT_TRUE(k.ok()) << k.error().message;
	PartitionRun run{device(), std::move(*k)};
	checkCompact(run, input(100'000, 5, [](uint32_t) { return 7u; }), 5, 16);
	checkCompact(run, input(100'000, 5, [](uint32_t i) { return i % 64; }), 5, 64);
	checkCompact(run, input(1'000, 2, [](uint32_t) { return kNoSlot; }), 2, 4);
}

TEST_F(PartitionTest, AMillionRecordsOnAGpuATenthOfThatOnTheCpu)
{
	// The benchmark's size (10^6 records of 5 words over 1–64 slots) checked against the oracle where a GPU runs the
	// suite; lavapipe takes 10^5 (CI time).
	auto k = PartitionKernel::create(device());
	ASSERT_TRUE(k.ok()) << k.error().message;
	PartitionRun run{device(), std::move(*k)};
	const uint32_t n = device().info().type == "cpu" ? 100'000 : 1'000'000;
	std::mt19937 rng(quokka::test::testSeed(41));
	for (uint32_t slots : {1u, 64u})
	{
		SCOPED_TRACE("slots " + std::to_string(slots) + ", records " + std::to_string(n));
		checkCompact(run, input(n, 5, [&](uint32_t) { return rng() % 50 == 0 ? kNoSlot : rng() % slots; }), 5, slots);
	}
}

TEST_F(PartitionTest, RegionsAppendUpToTheirCapacityAndCountWhatAsked)
{
	auto k = PartitionKernel::create(device());
	ASSERT_TRUE(k.ok()) << k.error().message;
	PartitionRun run{device(), std::move(*k)};
	std::mt19937 rng(quokka::test::testSeed(40));
	const uint32_t n = 20'000, stride = 4, slots = 5;
	const Input in = input(n, stride, [&](uint32_t) { return rng() % 6 == 0 ? kNoSlot : rng() % slots; });
	const auto want = partitionCPU(in.slot_of, in.records, stride, slots);
	// Regions: slot 2 too small by 100 records, slot 4 exactly big enough, the others with room to spare; a gap
	// between regions that must stay untouched.
	std::vector<uint32_t> regions;
	uint32_t base = 0;
	for (uint32_t s = 0; s < slots; ++s)
	{
		const uint32_t asked = uint32_t(want[s].size() / stride);
		const uint32_t capacity = s == 2 ? asked - 100 : s == 4 ? asked : asked + 50;
		regions.insert(regions.end(), {base, capacity});
		base += capacity + 10;
	}
	auto slot_of = run.make(in.slot_of, 1, "slot_of");
	auto records = run.make(in.records, 1, "records");
	auto counts = run.make({}, slots, "counts");
	auto region_buffer = run.make(regions, 0, "regions");
	auto cursors = run.make({}, slots, "cursors");
	auto out = run.make(std::vector<uint32_t>(size_t(base) * stride, 0xdeadbeefu), 0, "out");
	for (int round = 0; round < 2; ++round) // (a second run over the same buffers gives the same result)
	{
		auto list = run.device.beginCommands();
		ASSERT_TRUE(list.ok());
		run.kernel.regions(*list, {&*slot_of, &*records, &*counts, &*region_buffer, &*cursors, &*out}, n, stride,
		                   slots);
		ASSERT_TRUE(run.device.submitAndWait(std::move(*list)).ok());
		const auto c = run.read(counts, slots);
		const auto words = run.read(out, size_t(base) * stride);
		for (uint32_t s = 0; s < slots; ++s)
		{
			const uint32_t asked = uint32_t(want[s].size() / stride), capacity = regions[2 * s + 1];
			EXPECT_EQ(c[s], asked) << "slot " << s;
			const std::span<const uint32_t> got(words.data() + size_t(regions[2 * s]) * stride,
			                                    size_t(std::min(asked, capacity)) * stride);
			const auto got_sorted = sortedRecords(got, stride), all = sortedRecords(want[s], stride);
			if (asked <= capacity)
			{
				EXPECT_EQ(got_sorted, all) << "slot " << s;
			}
			else
			{
				// The capacity's worth of distinct records of this slot.
				EXPECT_TRUE(std::includes(all.begin(), all.end(), got_sorted.begin(), got_sorted.end())) << s;
				EXPECT_EQ(std::adjacent_find(got_sorted.begin(), got_sorted.end()), got_sorted.end()) << s;
			}
			for (size_t w = size_t(regions[2 * s] + std::min(asked, capacity)) * stride;
			     w < size_t(regions[2 * s] + capacity + 10) * stride && w < words.size(); ++w)
				ASSERT_EQ(words[w], 0xdeadbeefu) << "slot " << s << ": written past its records at word " << w;
		}
	}
}

TEST_F(PartitionTest, TheSlotCountMayChangeBetweenRunsOverTheSameBuffers)
{
	auto k = PartitionKernel::create(device());
	ASSERT_TRUE(k.ok()) << k.error().message;
	PartitionRun run{device(), std::move(*k)};
	const uint32_t n = 4'096, stride = 2;
	auto slot_of_words = [&](uint32_t slots) { return input(n, stride, [&](uint32_t i) { return (i * 7) % slots; }); };
	const Input wide = slot_of_words(12), narrow = slot_of_words(3);
	auto slot_of = run.make(wide.slot_of, 1, "slot_of");
	auto records = run.make(wide.records, 1, "records");
	auto counts = run.make({}, 12, "counts");
	auto offsets = run.make({}, 12, "offsets");
	auto cursors = run.make({}, 12, "cursors");
	auto out = run.make({}, size_t(n) * stride, "out");
	for (const auto& [in, slots] : {std::pair{&wide, 12u}, std::pair{&narrow, 3u}, std::pair{&wide, 12u}})
	{
		ASSERT_TRUE(run.device.uploadBuffer(*slot_of, 0, in->slot_of.data(), in->slot_of.size() * 4).ok());
		auto list = run.device.beginCommands();
		ASSERT_TRUE(list.ok());
		run.kernel.compact(*list, {&*slot_of, &*records, &*counts, &*offsets, &*cursors, &*out}, n, stride, slots);
		ASSERT_TRUE(run.device.submitAndWait(std::move(*list)).ok());
		const auto want = partitionCPU(in->slot_of, in->records, stride, slots);
		const auto c = run.read(counts, slots), o = run.read(offsets, slots);
		const auto words = run.read(out, size_t(n) * stride);
		for (uint32_t s = 0; s < slots; ++s)
		{
			ASSERT_EQ(c[s] * stride, want[s].size());
			EXPECT_EQ(sortedRecords({words.data() + size_t(o[s]) * stride, size_t(c[s]) * stride}, stride),
			          sortedRecords(want[s], stride));
		}
	}
}

} // namespace
} // namespace quokka::modes
