// The megacall scan on a real device (lavapipe + validation in CI): every firstEmit, the args and every tile entry are
// read back and compared with a CPU reference, at sizes around the 512-record block and past the reference's
// 262,144-record cap; the probe is compared with its CPU replay; and the probe and checkScan are shown to report
// deliberately corrupted records and tile entries. Random slots print their seed on failure, so a failure replays.
#include "gpu_fixture.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/heap/megacall_scan.hpp>

namespace quokka::heap
{
namespace
{

using gpu::test::GpuTest;

constexpr uint32_t kWords = fx::kRecordWords;
// Written into word 0 before the scan, and into the tiles buffer: a scan that skips a word leaves it visible.
constexpr uint32_t kStale = 0xA5A5A5A5u;
constexpr uint32_t kArgsOffset = 16; // not 0, so that the offset is exercised

// Seeded random records: indexCount 0..96, instanceCount 1..3, about one in eight of each zero (inactive objects);
// with `zero_ends` the first and last 3 records emit nothing. Indexed records (when arena_words > 0, half of them)
// point inside an arena of that size.
std::vector<uint32_t> randomRecords(uint32_t n, uint32_t seed, bool zero_ends = true, uint32_t arena_words = 0)
{
	std::mt19937 rng(seed);
	std::vector<uint32_t> words(size_t(n) * kWords);
	for (uint32_t r = 0; r < n; ++r)
	{
		uint32_t* w = &words[size_t(r) * kWords];
		uint32_t count = rng() % 97;
		uint32_t instances = 1 + rng() % 3;
		if (rng() % 8 == 0)
			count = 0;
		if (rng() % 8 == 0)
			instances = 0;
		if (zero_ends && (r < 3 || r + 3 >= n))
			count = 0;
		w[0] = kStale;
		w[1] = rng();
		w[2] = arena_words > count && rng() % 2 ? rng() % (arena_words - count) : fx::kNonIndexed;
		w[3] = count;
		w[4] = instances;
	}
	return words;
}

// What the scan must produce, computed without the tile search the shader uses: firstEmit by a running sum, tiles by
// one sweep over the records.
struct Expected
{
	std::vector<uint32_t> first_emit;
	uint32_t total = 0;
	std::vector<uint32_t> tiles; // numTiles + 1 entries
};

Expected reference(const std::vector<uint32_t>& records)
{
	Expected x;
	const size_t n = records.size() / kWords;
	x.first_emit.resize(n);
	uint64_t sum = 0;
	for (size_t r = 0; r < n; ++r)
	{
		x.first_emit[r] = uint32_t(sum);
		sum += uint64_t(records[r * kWords + 3]) * records[r * kWords + 4];
	}
	EXPECT_LE(sum, UINT32_MAX) << "test data overflows u32";
	x.total = uint32_t(sum);
	const uint64_t tile_count = (sum + 63) / 64;
	size_t r = 0;
	for (uint64_t t = 0; t < tile_count; ++t)
	{
		while (r + 1 < n && x.first_emit[r + 1] <= t * 64)
			++r;
		x.tiles.push_back(uint32_t(r));
	}
	x.tiles.push_back(n == 0 ? 0 : uint32_t(n - 1));
	return x;
}

// One slot's GPU buffers.
struct Slot
{
	uint32_t record_count = 0;
	uint32_t tile_capacity = 0;
	gpu::BufferHandle records;
	gpu::BufferHandle args;
	gpu::BufferHandle tiles;
};

// Host copies of a slot after its scan.
struct Readback
{
	std::vector<uint32_t> records;
	std::vector<uint32_t> args;  // the whole args buffer
	std::vector<uint32_t> tiles; // the whole tiles buffer
};

class MegacallScanTest : public GpuTest
{
protected:
	void SetUp() override
	{
		GpuTest::SetUp();
		auto created = MegacallScan::create(device());
		ASSERT_TRUE(created.ok()) << created.error().message;
		scan_.emplace(std::move(created.value()));
	}
	void TearDown() override
	{
		scan_.reset();
		GpuTest::TearDown();
	}

	gpu::BufferHandle buffer(uint64_t bytes, gpu::BufferUsage extra, const char* name)
	{
		auto created = device().createBuffer(
		    {bytes, gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst | extra,
		     gpu::MemoryDomain::DeviceLocal, name});
		EXPECT_TRUE(created.ok()) << created.error().message;
		return created.ok() ? created.value() : nullptr;
	}

	void upload(const gpu::Buffer& dst, uint64_t offset, std::span<const uint32_t> words)
	{
		if (words.empty())
			return;
		auto uploaded = device().uploadBuffer(dst, offset, words.data(), words.size_bytes());
		ASSERT_TRUE(uploaded.ok()) << uploaded.error().message;
	}

	std::vector<uint32_t> read(const gpu::Buffer& src, uint64_t bytes)
	{
		auto data = device().readBuffer(src, 0, bytes);
		EXPECT_TRUE(data.ok()) << data.error().message;
		std::vector<uint32_t> words(bytes / 4);
		if (data.ok() && !words.empty()) // (memcpy from or to null is undefined even for 0 bytes)
			std::memcpy(words.data(), data.value().data(), words.size() * 4);
		return words;
	}

	// Uploads `records`; tiles and args start as kStale. `tile_capacity` 0 = exactly what the records need.
	Slot makeSlot(const std::vector<uint32_t>& records, uint32_t tile_capacity = 0)
	{
		Slot slot;
		slot.record_count = uint32_t(records.size() / kWords);
		slot.tile_capacity = tile_capacity ? tile_capacity : uint32_t(reference(records).tiles.size());
		slot.records = buffer(std::max<uint64_t>(records.size(), kWords) * 4, gpu::BufferUsage::None, "test.records");
		slot.args = buffer(64, gpu::BufferUsage::Indirect, "test.args");
		// Four spare entries past the capacity: the scan must not write them.
		slot.tiles = buffer((uint64_t(slot.tile_capacity) + 4) * 4, gpu::BufferUsage::None, "test.tiles");
		upload(*slot.records, 0, records);
		upload(*slot.args, 0, std::vector<uint32_t>(16, kStale));
		upload(*slot.tiles, 0, std::vector<uint32_t>(slot.tile_capacity + 4, kStale));
		return slot;
	}

	ScanJob job(ScanBuffers& buffers, const Slot& slot, uint64_t args_offset = kArgsOffset)
	{
		return {&buffers,        slot.records.get(), slot.record_count, slot.tile_capacity,
		        slot.args.get(), args_offset,        slot.tiles.get()};
	}

	// Records, submits and waits for one scan (by `scanner`, else the fixture's); returns the wall time of the
	// submission in ms (lavapipe's GPU timestamps are not trusted).
	double runScan(std::span<const ScanJob> jobs, const MegacallScan* scanner = nullptr)
	{
		auto list = device().beginCommands();
		EXPECT_TRUE(list.ok());
		if (!list.ok())
			return 0;
		auto recorded = (scanner ? *scanner : *scan_).record(list.value(), jobs);
		EXPECT_TRUE(recorded.ok()) << recorded.error().message;
		const auto start = std::chrono::steady_clock::now();
		EXPECT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
	}
	double runScan(const ScanJob& one, const MegacallScan* scanner = nullptr)
	{
		return runScan(std::span<const ScanJob>(&one, 1), scanner);
	}

	static ProbeDesc probeDesc(const Slot& slot, const gpu::Buffer& arena, bool all_emits)
	{
		ProbeDesc desc;
		desc.records = slot.records.get();
		desc.record_count = slot.record_count;
		desc.tiles = slot.tiles.get();
		desc.arena = &arena;
		desc.all_emits = all_emits;
		return desc;
	}

	Readback readSlot(const Slot& slot)
	{
		return {read(*slot.records, uint64_t(slot.record_count) * kWords * 4), read(*slot.args, 64),
		        read(*slot.tiles, slot.tiles->size())};
	}

	// Compares every firstEmit, the untouched words 1..4, the args, every tile entry up to numTiles, and that nothing
	// past numTiles was written; then checkScan must agree that the scan is correct.
	void expectScanned(const std::vector<uint32_t>& records, const Readback& got, uint64_t args_offset = kArgsOffset)
	{
		const Expected want = reference(records);
		ASSERT_EQ(got.records.size(), records.size());
		uint32_t wrong = 0;
		for (size_t r = 0; r < want.first_emit.size(); ++r)
		{
			const uint32_t* w = &got.records[r * kWords];
			const bool same = w[0] == want.first_emit[r] && std::memcmp(w + 1, &records[r * kWords + 1], 16) == 0;
			if (!same && wrong++ < 5)
				ADD_FAILURE() << "record " << r << ": firstEmit " << w[0] << ", expected " << want.first_emit[r];
		}
		EXPECT_EQ(wrong, 0u) << "records wrong";
		const uint32_t* args = &got.args[args_offset / 4];
		EXPECT_EQ(args[0], want.total);
		EXPECT_EQ(args[1], 1u);
		EXPECT_EQ(args[2], 0u);
		EXPECT_EQ(args[3], 0u);
		for (size_t i = 0; i < got.args.size(); ++i)
		{
			if (i < args_offset / 4 || i >= args_offset / 4 + 4)
			{
				EXPECT_EQ(got.args[i], kStale) << "args word " << i << " outside the command was written";
			}
		}
		ASSERT_GE(got.tiles.size(), want.tiles.size());
		wrong = 0;
		for (size_t t = 0; t < want.tiles.size(); ++t)
			if (got.tiles[t] != want.tiles[t] && wrong++ < 5)
				ADD_FAILURE() << "tiles[" << t << "] = " << got.tiles[t] << ", expected " << want.tiles[t]
				              << (t + 1 == want.tiles.size() ? " (sentinel)" : "");
		EXPECT_EQ(wrong, 0u) << "tile entries wrong";
		for (size_t t = want.tiles.size(); t < got.tiles.size(); ++t)
			ASSERT_EQ(got.tiles[t], kStale) << "tiles[" << t << "] past numTiles was written";
		const auto findings = checkScan(got.records, got.tiles, {args, 4});
		EXPECT_TRUE(findings.empty()) << findings.front();
	}

	ScanBuffers makeScanBuffers(uint32_t capacity)
	{
		auto created = ScanBuffers::create(device(), capacity, "test.scan");
		EXPECT_TRUE(created.ok()) << created.error().message;
		return std::move(created.value());
	}

	std::optional<MegacallScan> scan_;
};

// ---- scan -----------------------------------------------------------------------------------------------------------

class MegacallScanSizes : public MegacallScanTest, public ::testing::WithParamInterface<uint32_t>
{
};

TEST_P(MegacallScanSizes, MatchesCpuReference)
{
	const uint32_t n = GetParam();
	const uint32_t seed = 1000 + n;
	SCOPED_TRACE("seed " + std::to_string(seed));
	const std::vector<uint32_t> records = randomRecords(n, seed, n > 6);
	const Slot slot = makeSlot(records);
	ScanBuffers buffers = makeScanBuffers(n);
	const double ms = runScan(job(buffers, slot));
	std::printf("[          ] %u records, %u tiles: scan %.1f ms (wall clock, %s)\n", n, slot.tile_capacity, ms,
	            device().info().name.c_str());
	expectScanned(records, readSlot(slot));
}

INSTANTIATE_TEST_SUITE_P(MegacallScan, MegacallScanSizes, ::testing::Values(1u, 511u, 512u, 513u, 262145u, 1000000u),
                         ::testing::PrintToStringParamName());

// Every kernel with fewer workgroups than elements (or blocks) need: each loops over the rest, as on a device whose
// maxComputeWorkGroupCount[0] (65,535 on lavapipe) is below a large slot's group count. The same records each time
// (0 = the device's limit). Not fewer than 2 workgroups at 262,145 records: lavapipe ends a shader's loops after
// 65,535 iterations in all (gpu/dispatch.glsl.h), and one workgroup's tile loop would need ~3,300 × 20.
class MegacallScanFewWorkgroups : public MegacallScanTest, public ::testing::WithParamInterface<uint32_t>
{
};

TEST_P(MegacallScanFewWorkgroups, MatchesCpuReference)
{
	const uint32_t n = GetParam();
	for (const uint32_t max_groups : {0u, 2u, 5u})
	{
		auto capped = MegacallScan::create(device(), max_groups);
		ASSERT_TRUE(capped.ok()) << capped.error().message;
		const uint32_t seed = 2000 + n;
		SCOPED_TRACE("seed " + std::to_string(seed) + ", at most " + std::to_string(max_groups) + " workgroups");
		const std::vector<uint32_t> records = randomRecords(n, seed, n > 6);
		const Slot slot = makeSlot(records);
		ScanBuffers buffers = makeScanBuffers(n);
		runScan(job(buffers, slot), &capped.value());
		expectScanned(records, readSlot(slot));
	}
}

INSTANTIATE_TEST_SUITE_P(MegacallScan, MegacallScanFewWorkgroups, ::testing::Values(1u, 511u, 512u, 513u, 262145u),
                         ::testing::PrintToStringParamName());

TEST_F(MegacallScanTest, AllZeroSlotDrawsNothingAndPointsTheSentinelAtTheLastRecord)
{
	std::vector<uint32_t> records = randomRecords(1000, 7, false);
	for (size_t r = 0; r < 1000; ++r)
		records[r * kWords + (r % 2 ? 3 : 4)] = 0;
	const Slot slot = makeSlot(records);
	ASSERT_EQ(slot.tile_capacity, 1u);
	ScanBuffers buffers = makeScanBuffers(1000);
	runScan(job(buffers, slot));
	const Readback got = readSlot(slot);
	expectScanned(records, got);
	EXPECT_EQ(got.tiles[0], 999u);
}

TEST_F(MegacallScanTest, EmptySlotDrawsNothing)
{
	const Slot slot = makeSlot({}, 3);
	ScanBuffers buffers = makeScanBuffers(0);
	runScan(job(buffers, slot));
	const Readback got = readSlot(slot);
	EXPECT_EQ(got.args[kArgsOffset / 4 + 0], 0u);
	EXPECT_EQ(got.args[kArgsOffset / 4 + 1], 1u);
	EXPECT_EQ(got.args[kArgsOffset / 4 + 2], 0u);
	EXPECT_EQ(got.args[kArgsOffset / 4 + 3], 0u);
	EXPECT_EQ(got.tiles[0], 0u);
	EXPECT_EQ(got.tiles[1], kStale);
	const auto findings = checkScan({}, got.tiles, {&got.args[kArgsOffset / 4], 4});
	EXPECT_TRUE(findings.empty()) << findings.front();
}

TEST_F(MegacallScanTest, ReusedScanBuffersGrowForALargerSlotAndServeASmallerOne)
{
	ScanBuffers buffers = makeScanBuffers(600);
	const uint32_t sizes[] = {513, 300000, 700};
	const uint32_t want_capacity[] = {600, 524288, 524288};
	gpu::BufferHandle previous = buffers.buffer();
	for (int i = 0; i < 3; ++i)
	{
		SCOPED_TRACE("slot of " + std::to_string(sizes[i]) + " records");
		const std::vector<uint32_t> records = randomRecords(sizes[i], 50 + i);
		const Slot slot = makeSlot(records);
		runScan(job(buffers, slot));
		expectScanned(records, readSlot(slot));
		EXPECT_EQ(buffers.recordCapacity(), want_capacity[i]);
		EXPECT_EQ(buffers.buffer() != previous, i == 1) << "scratch must grow exactly once";
		previous = buffers.buffer();
	}
}

TEST_F(MegacallScanTest, BatchedSlotsWithSharedArgsBufferMatchCpuReference)
{
	// Different level counts in one record() call (1, 1, 2 and 3 levels, plus an empty slot), their args side by side
	// in one buffer: each level's dispatches run without barriers between slots.
	const uint32_t sizes[] = {0, 5, 512, 513, 263000};
	std::vector<std::vector<uint32_t>> records;
	std::vector<Slot> slots;
	std::vector<ScanBuffers> buffers;
	for (uint32_t i = 0; i < 5; ++i)
	{
		records.push_back(randomRecords(sizes[i], 80 + i, sizes[i] > 6));
		slots.push_back(makeSlot(records.back()));
		buffers.push_back(makeScanBuffers(sizes[i]));
	}
	const gpu::BufferHandle shared_args = buffer(5 * 16, gpu::BufferUsage::Indirect, "test.shared_args");
	upload(*shared_args, 0, std::vector<uint32_t>(20, kStale));
	std::vector<ScanJob> jobs;
	for (uint32_t i = 0; i < 5; ++i)
	{
		jobs.push_back(job(buffers[i], slots[i]));
		jobs.back().args = shared_args.get();
		jobs.back().args_offset = i * 16;
	}
	runScan(jobs);
	const std::vector<uint32_t> args = read(*shared_args, 5 * 16);
	for (uint32_t i = 1; i < 5; ++i)
	{
		SCOPED_TRACE("slot " + std::to_string(i));
		Readback got = readSlot(slots[i]);
		got.args = std::vector<uint32_t>(args.begin() + i * 4, args.begin() + i * 4 + 4);
		expectScanned(records[i], got, 0);
	}
	EXPECT_EQ(args[0], 0u);
	EXPECT_EQ(args[1], 1u);
}

TEST_F(MegacallScanTest, JobsShareARecordsBufferAtDisjointOffsets)
{
	// Two regions of one records buffer (the second at a multiple of 256 bytes), scanned by two jobs of one record()
	// call — as a GPU-routed group scans its combinations: each equals the scan of its records alone, and the words
	// between the regions are not written.
	const std::vector<uint32_t> a = randomRecords(700, 91), b = randomRecords(300, 92);
	const uint64_t b_at = 256 * 64; // bytes: past a's 700 × 20 = 14,000
	const uint64_t words = b_at / 4 + b.size() + 64;
	const gpu::BufferHandle shared = buffer(words * 4, gpu::BufferUsage::None, "test.shared_records");
	upload(*shared, 0, std::vector<uint32_t>(words, kStale));
	upload(*shared, 0, a);
	upload(*shared, b_at, b);
	Slot sa = makeSlot(a), sb = makeSlot(b);
	ScanBuffers ba = makeScanBuffers(700), bb = makeScanBuffers(300);
	std::vector<ScanJob> jobs = {job(ba, sa), job(bb, sb)};
	jobs[0].records = shared.get();
	jobs[1].records = shared.get();
	jobs[1].records_offset = b_at;
	runScan(jobs);
	const std::vector<uint32_t> all = read(*shared, words * 4);
	Readback got_a = readSlot(sa), got_b = readSlot(sb);
	got_a.records.assign(all.begin(), all.begin() + std::ptrdiff_t(a.size()));
	got_b.records.assign(all.begin() + std::ptrdiff_t(b_at / 4), all.begin() + std::ptrdiff_t(b_at / 4 + b.size()));
	expectScanned(a, got_a);
	expectScanned(b, got_b);
	for (size_t w = a.size(); w < b_at / 4; ++w)
		ASSERT_EQ(all[w], kStale) << "word " << w << " between the regions";
}

TEST_F(MegacallScanTest, TooSmallTileCapacityShortensTheDrawInsteadOfOverrunningTheIndex)
{
	const std::vector<uint32_t> records = randomRecords(3000, 11);
	const Expected want = reference(records);
	const uint32_t capacity = uint32_t(want.tiles.size() / 2);
	const Slot slot = makeSlot(records, capacity);
	ScanBuffers buffers = makeScanBuffers(3000);
	runScan(job(buffers, slot));
	const Readback got = readSlot(slot);
	EXPECT_EQ(got.args[kArgsOffset / 4], (capacity - 1) * 64);
	for (uint32_t t = 0; t + 1 < capacity; ++t)
		ASSERT_EQ(got.tiles[t], want.tiles[t]) << "tile " << t;
	EXPECT_EQ(got.tiles[capacity - 1], 2999u) << "the sentinel closes the shortened index";
	EXPECT_EQ(got.tiles[capacity], kStale);
	const auto findings = checkScan(got.records, got.tiles, {&got.args[kArgsOffset / 4], 4});
	ASSERT_FALSE(findings.empty());
	EXPECT_NE(findings.front().find("args"), std::string::npos) << findings.front();
}

// ---- probe ----------------------------------------------------------------------------------------------------------

class MegacallProbeTest : public MegacallScanTest
{
protected:
	static constexpr uint32_t kArenaWords = 1u << 16;

	// A scanned random slot with indexed and non-indexed records and a random arena.
	void SetUp() override
	{
		MegacallScanTest::SetUp();
		std::mt19937 rng(kSeed);
		std::vector<uint32_t> arena(kArenaWords);
		for (uint32_t& index : arena)
			index = rng() % 100000;
		arena_ = buffer(kArenaWords * 4, gpu::BufferUsage::None, "test.arena");
		upload(*arena_, 0, arena);
		records_ = randomRecords(4000, kSeed, true, kArenaWords);
		slot_ = makeSlot(records_);
		auto created = ScanBuffers::create(device(), 4000);
		ASSERT_TRUE(created.ok());
		buffers_.emplace(std::move(created.value()));
		runScan(job(*buffers_, slot_));
	}
	void TearDown() override
	{
		buffers_.reset();
		slot_ = {};
		arena_.reset();
		MegacallScanTest::TearDown();
	}

	ProbeReport probe(bool all_emits)
	{
		ProbeDesc desc = probeDesc(slot_, *arena_, all_emits);
		desc.seed = kSeed;
		auto report = scan_->probeSlot(desc);
		EXPECT_TRUE(report.ok()) << report.error().message;
		return report.ok() ? std::move(report.value()) : ProbeReport{};
	}

	void overwrite(const gpu::Buffer& buffer, uint64_t word, uint32_t value)
	{
		upload(buffer, word * 4, std::span<const uint32_t>(&value, 1));
	}

	static constexpr uint32_t kSeed = 4242;
	std::vector<uint32_t> records_;
	Slot slot_;
	gpu::BufferHandle arena_;
	std::optional<ScanBuffers> buffers_;
};

TEST_F(MegacallProbeTest, AgreesWithTheReplayOnEveryEmitOfARandomSlot)
{
	SCOPED_TRACE("seed " + std::to_string(kSeed));
	const Expected want = reference(records_);
	const ProbeReport all = probe(true);
	EXPECT_EQ(all.total_emit, want.total);
	EXPECT_EQ(all.probed, want.total);
	EXPECT_EQ(all.mismatch_count, 0u) << "first at emit " << (all.mismatches.empty() ? 0 : all.mismatches[0].emit);
	const ProbeReport sampled = probe(false);
	EXPECT_GT(sampled.probed, 4096u) << "record boundaries plus 4,096 random emits";
	EXPECT_EQ(sampled.mismatch_count, 0u);
	// The slot really mixes both kinds of record, so both vid paths ran.
	uint32_t indexed = 0;
	for (size_t r = 0; r < records_.size() / kWords; ++r)
		indexed += records_[r * kWords + 2] != fx::kNonIndexed && records_[r * kWords + 3] > 0;
	EXPECT_GT(indexed, 1000u);
	EXPECT_LT(indexed, 3000u);
}

TEST_F(MegacallProbeTest, AgreesWithTheReplayWhenFourWorkgroupsProbeEveryEmit)
{
	auto capped = MegacallScan::create(device(), 4);
	ASSERT_TRUE(capped.ok()) << capped.error().message;
	ProbeDesc desc = probeDesc(slot_, *arena_, true);
	desc.seed = kSeed;
	auto report = capped->probeSlot(desc);
	ASSERT_TRUE(report.ok()) << report.error().message;
	EXPECT_EQ(report->probed, reference(records_).total);
	EXPECT_EQ(report->mismatch_count, 0u);
}

TEST_F(MegacallScanTest, TriangleCoherenceHoldsForWholePrimitivesAndBreaksAfterARecordOfFour)
{
	// Records of whole triangles (indexed and not, one inactive, two instances) are coherent on every emit; a record of
	// 4 vertices shifts every later record off the primitive grid, so primitives straddle records from there on.
	auto arena = buffer(4096, gpu::BufferUsage::None, "test.arena");
	std::vector<uint32_t> indices(1024);
	for (uint32_t i = 0; i < indices.size(); ++i)
		indices[i] = i * 7 % 101;
	upload(*arena, 0, indices);
	auto check = [&](std::vector<uint32_t> counts) -> ProbeReport
	{
		std::vector<uint32_t> records;
		for (size_t r = 0; r < counts.size(); ++r)
			records.insert(records.end(), {kStale, uint32_t(r), r % 2 ? fx::kNonIndexed : uint32_t(r * 16), counts[r],
			                               r == 2 ? 0u : 1u + uint32_t(r % 3 == 1)});
		Slot slot = makeSlot(records);
		auto created = ScanBuffers::create(device(), uint32_t(counts.size()));
		EXPECT_TRUE(created.ok());
		ScanBuffers buffers = std::move(created.value());
		runScan(job(buffers, slot));
		ProbeDesc desc = probeDesc(slot, *arena, true);
		desc.primitive_vertices = 3;
		auto report = scan_->probeSlot(desc);
		EXPECT_TRUE(report.ok()) << report.error().message;
		return report.ok() ? std::move(report.value()) : ProbeReport{};
	};
	const ProbeReport whole = check({3, 6, 9, 12, 3, 30, 6});
	EXPECT_EQ(whole.mismatch_count, 0u);
	EXPECT_EQ(whole.total_emit, 3u + 12 + 0 + 12 + 6 + 30 + 6);
	EXPECT_EQ(whole.primitives_checked, whole.total_emit / 3);
	EXPECT_EQ(whole.incoherent_primitives, 0u);

	// Record 1 emits 4 vertices twice (two instances) at emits 3..10: the primitive at 3 is vertices 0..2 of its first
	// instance (fine), the one at 6 takes vertex 3 of the first instance and 0..1 of the second.
	const ProbeReport shifted = check({3, 4, 9, 12, 3, 30, 6});
	EXPECT_EQ(shifted.mismatch_count, 0u) << "the search itself is right: only the primitive grid is broken";
	EXPECT_GT(shifted.incoherent_primitives, 0u);
	EXPECT_EQ(shifted.first_incoherent_emit, 6u);
}

TEST_F(MegacallProbeTest, ReportsACorruptFirstEmit)
{
	const Expected want = reference(records_);
	// The first non-empty record past the middle: shifting its firstEmit by one hands its first emit to the record
	// before it.
	uint32_t r = 2000;
	while (records_[r * kWords + 3] * records_[r * kWords + 4] == 0)
		++r;
	overwrite(*slot_.records, uint64_t(r) * kWords, want.first_emit[r] + 1);
	const ProbeReport report = probe(true);
	ASSERT_GT(report.mismatch_count, 0u);
	bool found = false;
	for (const ProbeMismatch& m : report.mismatches)
		found |= m.emit == want.first_emit[r] && m.expected.record == r;
	EXPECT_TRUE(found) << "no mismatch names record " << r << " at emit " << want.first_emit[r];

	const Readback got = readSlot(slot_);
	const auto findings = checkScan(got.records, got.tiles, {&got.args[kArgsOffset / 4], 4});
	ASSERT_FALSE(findings.empty());
	EXPECT_EQ(findings.front().rfind("record " + std::to_string(r) + ": firstEmit", 0), 0u) << findings.front();
}

TEST_F(MegacallProbeTest, ReportsACorruptTileEntry)
{
	const Expected want = reference(records_);
	// A tile whose first emit belongs to an earlier record than the next tile's: starting its search at the next
	// tile's record finds a record too late for emit t × 64.
	uint32_t t = uint32_t(want.tiles.size() / 2);
	while (want.tiles[t] == want.tiles[t + 1])
		++t;
	overwrite(*slot_.tiles, t, want.tiles[t + 1]);
	const ProbeReport report = probe(true);
	ASSERT_GT(report.mismatch_count, 0u);
	bool found = false;
	for (const ProbeMismatch& m : report.mismatches)
		found |= m.emit == t * 64 && m.expected.record == want.tiles[t] && m.got.record == want.tiles[t + 1];
	EXPECT_TRUE(found) << "no mismatch at emit " << t * 64;

	const Readback got = readSlot(slot_);
	const auto findings = checkScan(got.records, got.tiles, {&got.args[kArgsOffset / 4], 4});
	ASSERT_EQ(findings.size(), 1u);
	EXPECT_EQ(findings.front(), "tiles[" + std::to_string(t) + "]: " + std::to_string(want.tiles[t + 1]) +
	                                ", expected " + std::to_string(want.tiles[t]));
}

TEST_F(MegacallProbeTest, ReportsAnOutOfRangeTileEntryWithoutReadingPastTheRecords)
{
	const Expected want = reference(records_);
	const uint32_t t = uint32_t(want.tiles.size() / 2);
	overwrite(*slot_.tiles, t, 0xFFFFFFF0u);
	const ProbeReport report = probe(true);
	// Tile t − 1 searches up to entry t and tile t from it: all 128 of their emits are reported, as all-invalid.
	EXPECT_EQ(report.mismatch_count, 128u);
	ASSERT_FALSE(report.mismatches.empty());
	EXPECT_EQ(report.mismatches.front().emit, (t - 1) * 64);
	EXPECT_EQ(report.mismatches.front().got.record, kProbeInvalid);
	EXPECT_EQ(report.mismatches.front().got.vid, kProbeInvalid);
}

// ---- CPU references -------------------------------------------------------------------------------------------------

// Golden replay of a hand-made slot: zero-emit records first, in the middle and last.
TEST(MegacallReplay, FindsTheRecordOfEachEmitPastZeroEmitRecords)
{
	const std::vector<uint32_t> records = {
	    kStale, 10, fx::kNonIndexed,
	    4,      0, // 0: no instances
	    kStale, 11, 2,
	    3,      2, // 1: indexed, 3 indices × 2 instances: emits 0..5
	    kStale, 12, 0,
	    0,      5, // 2: no indices
	    kStale, 13, fx::kNonIndexed,
	    2,      1, // 3: non-indexed, 2 vertices: emits 6..7
	    kStale, 14, 0,
	    0,      0, // 4: nothing
	};
	const std::vector<uint32_t> arena = {90, 91, 92, 93, 94};
	const std::vector<uint32_t> emits = {0, 2, 3, 5, 6, 7, 8};
	std::vector<ProbeResult> out(emits.size());
	replayProbe(records, arena, emits, out);
	const ProbeResult I{kProbeInvalid, kProbeInvalid, kProbeInvalid, kProbeInvalid,
	                    kProbeInvalid, kProbeInvalid, kProbeInvalid, kProbeInvalid};
	const ProbeResult want[] = {
	    {1, 11, 2, 3, 2, 0, 0, 92},
	    {1, 11, 2, 3, 2, 2, 0, 94},
	    {1, 11, 2, 3, 2, 3, 1, 92},
	    {1, 11, 2, 3, 2, 5, 1, 94},
	    {3, 13, fx::kNonIndexed, 2, 1, 0, 0, 0},
	    {3, 13, fx::kNonIndexed, 2, 1, 1, 0, 1},
	    I, // past the total
	};
	for (size_t i = 0; i < emits.size(); ++i)
		EXPECT_EQ(out[i], want[i]) << "emit " << emits[i] << ": record " << out[i].record << " vid " << out[i].vid;
}

// A correct scan of the slot above, then one corruption of each kind.
TEST(MegacallCheckScan, ReportsEachKindOfError)
{
	std::vector<uint32_t> records = {
	    0,  10, fx::kNonIndexed, 40, 0, 0,  11, 2, 30, 2, 60, 12, 0, 0, 5,
	    60, 13, fx::kNonIndexed, 10, 1, 70, 14, 0, 0,  0,
	};
	// 70 emits: tiles 0 and 1, sentinel 4.
	std::vector<uint32_t> tiles = {1, 3, 4};
	std::vector<uint32_t> args = {70, 1, 0, 0};
	EXPECT_TRUE(checkScan(records, tiles, args).empty());

	auto first = [](std::vector<uint32_t> r, std::vector<uint32_t> t, std::vector<uint32_t> a)
	{
		const auto findings = checkScan(r, t, a);
		return findings.empty() ? std::string("(none)") : findings.front();
	};
	auto with = [](std::vector<uint32_t> v, size_t i, uint32_t value)
	{
		v[i] = value;
		return v;
	};
	EXPECT_EQ(first(with(records, 15, 61), tiles, args), "record 3: firstEmit 61, expected 60");
	EXPECT_EQ(first(records, tiles, with(args, 0, 64)), "args: {64, 1, 0, 0}, expected {70, 1, 0, 0}");
	EXPECT_EQ(first(records, with(tiles, 1, 2), args), "tiles[1]: 2, expected 3");
	EXPECT_EQ(first(records, with(tiles, 2, 5), args), "tiles[numTiles = 2] (sentinel): 5, expected 4");
	EXPECT_EQ(first(records, {1, 3}, args), "tiles: 2 entries, numTiles + 1 = 3 needed");

	// A wholesale failure stays readable: 8 lines of a kind, then a count.
	std::vector<uint32_t> many = randomRecords(100, 3, false);
	const auto findings = checkScan(many, std::vector<uint32_t>{0}, std::vector<uint32_t>{0, 1, 0, 0});
	ASSERT_GE(findings.size(), 9u);
	EXPECT_NE(findings.back().find("more firstEmit findings"), std::string::npos) << findings.back();
}

TEST(MegacallScanLayout, TileCapacityBoundCountsTheSentinel)
{
	EXPECT_EQ(tileCapacityBound(0), 1u);
	EXPECT_EQ(tileCapacityBound(1), 2u);
	EXPECT_EQ(tileCapacityBound(64), 2u);
	EXPECT_EQ(tileCapacityBound(65), 3u);
	EXPECT_EQ(tileCapacityBound(UINT32_MAX), (1u << 26) + 1);
}

} // namespace
} // namespace quokka::heap
