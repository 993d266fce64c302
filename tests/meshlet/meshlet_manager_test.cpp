// MeshletManager on a real device (lavapipe + validation in CI): every check reads both buffers back and compares
// each live batch's payload and patched records with a CPU model. Randomized sequences print their seed and dump the
// operation history on failure.
#include "../test_seed.hpp"
#include "gpu_fixture.hpp"

#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include <quokka/gpu/command_list.hpp>
#include <quokka/meshlet/meshlet_manager.hpp>

namespace quokka::meshlet
{
namespace
{

using gpu::test::GpuTest;

MeshletBatch randomBatch(std::mt19937& rng, uint32_t max_words, uint32_t max_records)
{
	MeshletBatch batch;
	batch.data.resize(1 + rng() % max_words);
	for (uint32_t& w : batch.data)
		w = rng();
	batch.records.resize(1 + rng() % max_records);
	for (MeshletRecord& r : batch.records)
	{
		for (float& f : r.bounds_min)
			f = float(rng() % 1000) * 0.5f;
		for (float& f : r.bounds_max)
			f = float(rng() % 1000) * 0.25f;
		r.address = rng() % uint32_t(batch.data.size());
		r.primitive_count = rng() % 129;
		r.vertex_count = rng() % 129;
		r.flags = rng();
		r.sphere[3] = 1.5f;
		r.cone = rng();
	}
	return batch;
}

// What every live batch must hold on the GPU after an update: its payload words and its records with absolute
// addresses.
struct Model
{
	std::map<uint64_t, MeshletBatch> batches; // by packed id

	static uint64_t key(BatchId id) { return (uint64_t(id.index) << 32) | id.generation; }
};

class MeshletManagerTest : public GpuTest
{
protected:
	std::unique_ptr<MeshletManager> make(uint32_t data_words, uint32_t records, CopyPath path = CopyPath::Auto)
	{
		MeshletManagerDesc desc;
		desc.copy_path = path;
		desc.initial_data_words = data_words;
		desc.initial_records = records;
		desc.data_growth_step = 64;
		desc.record_growth_step = 4;
		desc.name = "test.meshlets";
		auto created = MeshletManager::create(device(), desc);
		EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().message);
		return created.ok() ? std::move(created.value()) : nullptr;
	}

	void flush(MeshletManager& manager)
	{
		auto list = device().beginCommands();
		ASSERT_TRUE(list.ok());
		auto updated = manager.update(list.value());
		ASSERT_TRUE(updated.ok()) << updated.error().message;
		ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		device().completedValue(); // runs retirements: removed ranges become reusable
	}

	// Reads both buffers back and compares every live batch with the model. Returns "" or the first difference.
	std::string compare(MeshletManager& manager, const Model& model)
	{
		auto data = device().readBuffer(*manager.dataBuffer(), 0, manager.dataBuffer()->size());
		auto records = device().readBuffer(*manager.metadataBuffer(), 0, manager.metadataBuffer()->size());
		if (!data.ok() || !records.ok())
			return "readback failed";
		const auto* words = reinterpret_cast<const uint32_t*>(data.value().data());
		const auto* recs = reinterpret_cast<const MeshletRecord*>(records.value().data());
		const auto live = manager.batches();
		if (live.size() != model.batches.size())
			return "manager has " + std::to_string(live.size()) + " batches, model " +
			       std::to_string(model.batches.size());
		for (BatchId id : live)
		{
			auto it = model.batches.find(Model::key(id));
			if (it == model.batches.end())
				return "batch " + std::to_string(id.index) + " unknown to the model";
			const MeshletBatch& expected = it->second;
			const BatchPlacement p = manager.placement(id);
			if (p.data_words != expected.data.size() || p.meshlet_count != expected.records.size())
				return "batch " + std::to_string(id.index) + " has the wrong sizes";
			if (std::memcmp(words + p.data_offset, expected.data.data(), expected.data.size() * 4) != 0)
				return "batch " + std::to_string(id.index) + " payload differs at data offset " +
				       std::to_string(p.data_offset);
			for (uint32_t k = 0; k < p.meshlet_count; ++k)
			{
				MeshletRecord want = expected.records[k];
				want.address += p.data_offset;
				if (std::memcmp(&recs[p.record_offset + k], &want, sizeof(want)) != 0)
					return "batch " + std::to_string(id.index) + " record " + std::to_string(k) + " differs (address " +
					       std::to_string(recs[p.record_offset + k].address) + ", want " +
					       std::to_string(want.address) + ")";
			}
		}
		return "";
	}

	BatchId add(MeshletManager& manager, Model& model, const MeshletBatch& batch)
	{
		auto id = manager.addBatch(batch);
		EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
		if (!id.ok())
			return {};
		model.batches[Model::key(id.value())] = batch;
		return id.value();
	}

	BatchId clone(MeshletManager& manager, Model& model, BatchId source)
	{
		auto id = manager.cloneBatchAllocation(source);
		EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
		if (!id.ok())
			return {};
		model.batches[Model::key(id.value())] = model.batches.at(Model::key(source));
		return id.value();
	}

	void remove(MeshletManager& manager, Model& model, BatchId id)
	{
		EXPECT_TRUE(manager.removeBatch(id));
		model.batches.erase(Model::key(id));
	}
};

MeshletBatch sizedBatch(uint32_t words, uint32_t records, uint32_t seed)
{
	std::mt19937 rng(seed);
	MeshletBatch batch = randomBatch(rng, 1, 1);
	batch.data.resize(words);
	for (uint32_t& w : batch.data)
		w = rng();
	batch.records.resize(records, batch.records[0]);
	for (uint32_t k = 0; k < records; ++k)
		batch.records[k].address = (k * 7) % words;
	return batch;
}

TEST_F(MeshletManagerTest, AddedBatchesReadBackWithAbsoluteAddresses)
{
	auto manager = make(4096, 64);
	Model model;
	std::mt19937 rng(1);
	for (int i = 0; i < 5; ++i)
		add(*manager, model, randomBatch(rng, 300, 8));
	EXPECT_EQ(manager->stats().pending_uploads, 5u);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
	EXPECT_EQ(manager->stats().pending_uploads, 0u);
	EXPECT_TRUE(manager->validate().ok());
	EXPECT_EQ(manager->gpuMemoryUsage(), 4096u * 4 + 64u * kRecordBytes);
	uint64_t occupied = 0;
	for (auto& [k, b] : model.batches)
		occupied += b.data.size() * 4 + b.records.size() * kRecordBytes;
	EXPECT_EQ(manager->gpuMemoryUsageOccupied(), occupied);
}

TEST_F(MeshletManagerTest, RemoveBatchReturnsFalseForIdsItDoesNotOwn)
{
	auto manager = make(1024, 16);
	auto other = make(1024, 16);
	Model model, other_model;
	const BatchId a = add(*manager, model, sizedBatch(10, 2, 1));
	const BatchId b = add(*other, other_model, sizedBatch(10, 2, 2));
	EXPECT_EQ(a.index, b.index); // same slot and generation, different owner
	EXPECT_FALSE(manager->removeBatch(b));
	EXPECT_FALSE(manager->removeBatch(BatchId{}));
	EXPECT_FALSE(manager->removeBatch({a.index + 5, a.generation, a.owner}));
	EXPECT_TRUE(manager->removeBatch(a));
	EXPECT_FALSE(manager->removeBatch(a)); // twice
	EXPECT_FALSE(manager->cloneBatchAllocation(a).ok());
	EXPECT_TRUE(other->removeBatch(b));
	flush(*manager);
	flush(*other);
}

TEST_F(MeshletManagerTest, AddBatchRejectsEmptyBatchesAndAddressesOutsideTheData)
{
	auto manager = make(1024, 16);
	EXPECT_EQ(manager->addBatch({}).error().code, ErrorCode::InvalidArgument);
	MeshletBatch bad = sizedBatch(10, 2, 3);
	bad.records[1].address = 10;
	EXPECT_EQ(manager->addBatch(bad).error().code, ErrorCode::InvalidArgument);
}

TEST_F(MeshletManagerTest, CloneIsAllocatedAtOnceAndFilledByUpdateWithOnePatchPerRecord)
{
	auto manager = make(1024, 32);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(100, 5, 4));
	flush(*manager);
	const BatchId c = clone(*manager, model, a);
	const BatchPlacement pc = manager->placement(c);
	EXPECT_NE(pc.data_offset, manager->placement(a).data_offset);
	EXPECT_EQ(pc.data_words, 100u);
	EXPECT_EQ(manager->stats().pending_clones, 1u);
	const BatchId cc = clone(*manager, model, c); // clone of a pending clone
	flush(*manager);
	EXPECT_EQ(manager->lastUpdate().patches, 10u);
	EXPECT_EQ(manager->lastUpdate().uploaded_bytes, 0u);
	EXPECT_EQ(manager->stats().pending_clones, 0u);
	EXPECT_EQ(compare(*manager, model), "");
	EXPECT_TRUE(manager->validate().ok());
	(void)cc;
}

TEST_F(MeshletManagerTest, CloneOfABatchStillUploadingIsUploadedToo)
{
	auto manager = make(1024, 32);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(50, 3, 5));
	clone(*manager, model, a);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
}

// Worked example: before meep-engine 3.13 the clone's copy ran at stale offsets after the compaction and
// overwrote half of C.
TEST_F(MeshletManagerTest, CloneQueuedBeforeACompactionLandsAtTheNewAddresses)
{
	// X[0,20) A[20,60) B[60,90): removing X and compacting moves A as well as its clone.
	auto manager = make(140, 16);
	Model model;
	const BatchId x = add(*manager, model, sizedBatch(20, 1, 11));
	const BatchId a = add(*manager, model, sizedBatch(40, 3, 10));
	add(*manager, model, sizedBatch(30, 2, 12));
	flush(*manager);
	remove(*manager, model, x);
	const BatchId a2 = clone(*manager, model, a);
	EXPECT_EQ(manager->placement(a2).data_offset, 90u);
	add(*manager, model, sizedBatch(30, 2, 13)); // no 30-word hole: compacts (space was released)
	EXPECT_EQ(manager->stats().compactions, 1u);
	EXPECT_EQ(manager->stats().growths, 0u);
	EXPECT_EQ(manager->placement(a2).data_offset, 70u);
	EXPECT_EQ(manager->placement(a).data_offset, 0u);
	EXPECT_EQ(manager->stats().pending_clones, 1u);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
	EXPECT_TRUE(manager->validate().ok());
}

TEST_F(MeshletManagerTest, ComputeCopyPathMovesAndClonesLikeTheTransferPath)
{
	auto manager = make(20000, 64, CopyPath::Compute);
	Model model;
	std::mt19937 rng(77);
	std::vector<BatchId> ids;
	for (int i = 0; i < 12; ++i)
		ids.push_back(add(*manager, model, randomBatch(rng, 1500, 5))); // spans several 4,096-word chunks
	flush(*manager);
	for (int i = 0; i < 12; i += 3)
		remove(*manager, model, ids[size_t(i)]);
	clone(*manager, model, ids[1]);
	clone(*manager, model, ids[2]);
	ASSERT_TRUE(manager->compact().ok());
	flush(*manager);
	EXPECT_GE(manager->lastUpdate().copy_dispatches, 2u);
	EXPECT_EQ(compare(*manager, model), "");
	clone(*manager, model, ids[4]); // same-buffer compute copy
	flush(*manager);
	EXPECT_EQ(manager->lastUpdate().copy_dispatches, 2u);
	EXPECT_EQ(compare(*manager, model), "");
}

TEST_F(MeshletManagerTest, CloneQueuedBeforeAGrowthInTheSameFrameLandsAtTheNewAddresses)
{
	auto manager = make(100, 8);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(60, 4, 20));
	const BatchId b = add(*manager, model, sizedBatch(40, 4, 21)); // both buffers full
	flush(*manager);
	const BatchId a2 = clone(*manager, model, a); // grows (nothing released)
	EXPECT_EQ(manager->stats().growths, 1u);
	EXPECT_GE(manager->dataCapacityWords(), 160u);
	const BatchId b2 = clone(*manager, model, b); // may grow again, same frame
	add(*manager, model, sizedBatch(500, 9, 22)); // forces one more growth before update
	EXPECT_GE(manager->stats().growths, 2u);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
	(void)a2;
	(void)b2;
}

TEST_F(MeshletManagerTest, RemovingTheSourceOfAPendingCloneStillFillsTheCloneAndKeepsTheRangeReserved)
{
	auto manager = make(200, 16);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(50, 2, 30));
	flush(*manager);
	const BatchId c = clone(*manager, model, a);
	const MeshletBatch source = model.batches.at(Model::key(a));
	const BatchPlacement pa = manager->placement(a);
	remove(*manager, model, a);
	EXPECT_FALSE(manager->contains(a));
	// A same-sized batch must not take the removed source's range before the clone's copy has executed.
	const BatchId d = add(*manager, model, sizedBatch(50, 2, 31));
	EXPECT_NE(manager->placement(d).data_offset, pa.data_offset);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
	EXPECT_EQ(model.batches.at(Model::key(c)).data, source.data);
	EXPECT_TRUE(manager->validate().ok());
}

TEST_F(MeshletManagerTest, RemovingAPendingCloneCancelsItsCopy)
{
	auto manager = make(200, 16);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(50, 2, 40));
	flush(*manager);
	const BatchId c = clone(*manager, model, a);
	remove(*manager, model, c);
	flush(*manager);
	EXPECT_EQ(manager->lastUpdate().copied_bytes, 0u);
	EXPECT_EQ(compare(*manager, model), "");
}

TEST_F(MeshletManagerTest, FreedRangeIsReusedOnlyAfterTheNextUpdateCompleted)
{
	auto manager = make(100, 8);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(50, 4, 50));
	add(*manager, model, sizedBatch(25, 2, 51));
	flush(*manager);
	const uint32_t a_offset = manager->placement(a).data_offset;
	remove(*manager, model, a);
	EXPECT_EQ(manager->stats().retiring_frees, 1u);
	// Not reusable yet: this one fits the 25-word tail.
	const BatchId b = add(*manager, model, sizedBatch(25, 2, 52));
	EXPECT_NE(manager->placement(b).data_offset, a_offset);
	flush(*manager); // hands the free to this list; reusable once it completed
	EXPECT_EQ(manager->stats().retiring_frees, 1u);
	device().completedValue();
	const BatchId c = add(*manager, model, sizedBatch(50, 4, 53));
	EXPECT_EQ(manager->placement(c).data_offset, a_offset);
	EXPECT_EQ(manager->stats().compactions + manager->stats().growths, 0u);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
}

TEST_F(MeshletManagerTest, FailedAllocationCompactsWhenSpaceWasReleasedAndGrowsOtherwise)
{
	auto manager = make(100, 16);
	Model model;
	std::vector<BatchId> ids;
	for (int i = 0; i < 4; ++i)
		ids.push_back(add(*manager, model, sizedBatch(25, 2, 60 + i)));
	flush(*manager);
	add(*manager, model, sizedBatch(30, 1, 70)); // nothing released: grow
	EXPECT_EQ(manager->stats().growths, 1u);
	EXPECT_EQ(manager->dataCapacityWords(), 100u + 64u); // max(100 + 30, 100 + step 64, 125)
	EXPECT_EQ(manager->recordCapacity(), 16u);           // the record side did not need to grow
	remove(*manager, model, ids[0]);
	remove(*manager, model, ids[2]);
	add(*manager, model, sizedBatch(60, 1, 71)); // holes of 25 and 25, tail of 34: compacting makes 84 contiguous
	EXPECT_EQ(manager->stats().compactions, 1u);
	EXPECT_EQ(manager->stats().growths, 1u);
	flush(*manager);
	EXPECT_EQ(compare(*manager, model), "");
	EXPECT_TRUE(manager->validate().ok());
}

TEST_F(MeshletManagerTest, NonClassSizedRequestOnAFullBufferNeedsExactlyOneGrowth)
{
	// The reference's bin rounding made a full buffer grown by a non-class size (513, 1000, 1025 …) fail again and
	// grow a second time.
	for (uint32_t words : {513u, 1000u, 1025u})
	{
		SCOPED_TRACE(words);
		auto manager = make(1000, 8);
		Model model;
		add(*manager, model, sizedBatch(1000, 8, words));
		add(*manager, model, sizedBatch(words, 1, words + 1));
		EXPECT_EQ(manager->stats().growths, 1u);
		EXPECT_EQ(manager->stats().compactions, 0u);
		flush(*manager);
		EXPECT_EQ(compare(*manager, model), "");
	}
}

TEST_F(MeshletManagerTest, UpdateWithNothingPendingRecordsNothing)
{
	auto manager = make(1000, 8);
	Model model;
	add(*manager, model, sizedBatch(10, 1, 5));
	flush(*manager);
	flush(*manager);
	EXPECT_EQ(manager->lastUpdate().copied_bytes + manager->lastUpdate().uploaded_bytes, 0u);
	EXPECT_EQ(manager->lastUpdate().patches, 0u);
	EXPECT_EQ(compare(*manager, model), "");
}

TEST_F(MeshletManagerTest, ChangedFiresOncePerMovedBatchWithOldAndNewPlacement)
{
	auto manager = make(300, 16);
	Model model;
	std::vector<BatchId> ids;
	for (int i = 0; i < 5; ++i)
		ids.push_back(add(*manager, model, sizedBatch(20, 2, 80 + i)));
	flush(*manager);
	std::vector<BatchMove> moves;
	manager->setChangedListener([&](const BatchMove& m) { moves.push_back(m); });
	remove(*manager, model, ids[1]);
	ASSERT_TRUE(manager->compact().ok());
	ASSERT_EQ(moves.size(), 3u); // ids 2, 3, 4 slide down; id 0 stays
	EXPECT_EQ(moves[0].id, ids[2]);
	EXPECT_EQ(moves[0].before.data_offset, 40u);
	EXPECT_EQ(moves[0].after.data_offset, 20u);
	EXPECT_EQ(moves[0].after.record_offset, 2u);
	flush(*manager);
	EXPECT_EQ(manager->lastUpdate().patches, 6u); // the three moved batches' records
	EXPECT_EQ(compare(*manager, model), "");
	moves.clear();
	ASSERT_TRUE(manager->grow(1000, 0).ok()); // a pure growth moves nothing
	EXPECT_TRUE(moves.empty());
	EXPECT_EQ(manager->stats().pending_moves, 4u);
	flush(*manager);
	EXPECT_EQ(manager->stats().pending_moves, 0u);
	EXPECT_EQ(manager->lastUpdate().copy_regions, 2u); // one merged region per buffer
	EXPECT_EQ(manager->lastUpdate().patches, 0u);
	EXPECT_EQ(compare(*manager, model), "");
}

TEST_F(MeshletManagerTest, DebugDumpIsOneJsonObjectListingEveryBatch)
{
	auto manager = make(300, 16);
	Model model;
	const BatchId a = add(*manager, model, sizedBatch(20, 2, 90));
	flush(*manager);
	clone(*manager, model, a);
	const auto j = nlohmann::json::parse(manager->debugDump());
	EXPECT_EQ(j["batches"].size(), 2u);
	EXPECT_EQ(j["batches"][0]["state"], "resident");
	EXPECT_EQ(j["batches"][1]["state"], "cloning");
	EXPECT_EQ(j["data"]["capacity_words"], 300);
	EXPECT_EQ(j["free_regions"]["data"].size(), 1u);
	EXPECT_EQ(j["counters"]["pending_clones"], 1);
	flush(*manager);
}

TEST_F(MeshletManagerTest, GrowthBeyondTheDeviceLimitIsAnError)
{
	auto manager = make(64, 4);
	const auto r = manager->grow(0xfffffff0u, 0);
	ASSERT_FALSE(r.ok());
	EXPECT_EQ(r.error().code, ErrorCode::OutOfMemory);
	EXPECT_EQ(manager->dataCapacityWords(), 64u);
}

// Random add / remove / clone / compact / grow sequences; at every update the GPU contents are compared with the
// model. Small capacities make rebuilds frequent; clones are often queued in the same frame as a rebuild.
class MeshletManagerRandomTest : public MeshletManagerTest
{
protected:
	void run(CopyPath path, uint32_t default_seed);
};

TEST_F(MeshletManagerRandomTest, SequencesMatchTheCpuModelAfterEveryUpdateWithTransferCopies)
{
	run(CopyPath::Transfer, 6001);
}

TEST_F(MeshletManagerRandomTest, SequencesMatchTheCpuModelAfterEveryUpdateWithComputeCopies)
{
	run(CopyPath::Compute, 7001);
}

void MeshletManagerRandomTest::run(CopyPath path, uint32_t default_seed)
{
	const uint32_t base_seed = quokka::test::testSeed(default_seed);
	for (uint32_t round = 0; round < 4; ++round)
	{
		const uint32_t seed = base_seed + round;
		std::printf("MeshletManager random sequence seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
		std::mt19937 rng(seed);
		auto manager = make(256 + rng() % 256, 8 + rng() % 8, path);
		ASSERT_EQ(manager->copyPath(), path);
		Model model;
		std::vector<BatchId> live;
		std::vector<std::string> history;
		auto fail = [&](const std::string& why)
		{
			std::ostringstream all;
			for (const std::string& h : history)
				all << "  " << h << "\n";
			FAIL() << why << " (seed " << seed << ")\nhistory:\n" << all.str() << manager->debugDump();
		};
		for (int op = 0; op < 160; ++op)
		{
			const uint32_t roll = rng() % 100;
			if (roll < 35 || live.empty())
			{
				const BatchId id = add(*manager, model, randomBatch(rng, 120, 6));
				history.push_back("add -> " + std::to_string(id.index) + " @" +
				                  std::to_string(manager->placement(id).data_offset));
				live.push_back(id);
			}
			else if (roll < 55)
			{
				const size_t i = rng() % live.size();
				history.push_back("remove " + std::to_string(live[i].index));
				remove(*manager, model, live[i]);
				live[i] = live.back();
				live.pop_back();
			}
			else if (roll < 75)
			{
				const BatchId src = live[rng() % live.size()];
				const BatchId id = clone(*manager, model, src);
				history.push_back("clone " + std::to_string(src.index) + " -> " + std::to_string(id.index));
				live.push_back(id);
			}
			else if (roll < 82)
			{
				history.push_back("compact");
				ASSERT_TRUE(manager->compact().ok());
			}
			else if (roll < 87)
			{
				history.push_back("grow");
				ASSERT_TRUE(manager->grow(rng() % 100, rng() % 4).ok());
			}
			else
			{
				history.push_back("update");
				flush(*manager);
				if (const std::string diff = compare(*manager, model); !diff.empty())
					return fail(diff);
			}
			if (auto valid = manager->validate(); !valid.ok())
				return fail(valid.error().message);
			if (::testing::Test::HasFailure())
				return fail("operation failed");
		}
		flush(*manager);
		if (const std::string diff = compare(*manager, model); !diff.empty())
			return fail(diff);
	}
}

} // namespace
} // namespace quokka::meshlet
