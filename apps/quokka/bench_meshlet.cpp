// `quokka bench meshlet` (issue #6): the meshlet memory manager's numbers, each next to a baseline measured in the
// same run:
//   allocator   OffsetAllocator alloc+free pairs/s on one core vs a naive best-fit free list (10k live
//               allocations, sizes 1–65,536 units in a 2^30-unit space, pre-generated stream);
//   copy        the device's buffer-to-buffer copy bandwidth: the faster of one vkCmdCopyBuffer and one grid-stride
//               uvec4 compute copy of the working-set size (on NVIDIA the compute copy is ~2.5x faster than
//               vkCmdCopyBuffer, so the transfer figure alone would flatter every fraction below);
//   compaction  bytes moved per second by MeshletManager::update() after compact() with ~30 % of batches removed;
//   clone       bytes copied per second by update() flushing clones of ~25 % of the batches.
// GPU phases are timed with timestamps on real GPUs and the wall clock on lavapipe (the output says which).
#include "bench_copy.hpp"
#include "commands.hpp"
#include "render_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include <quokka/base/offset_allocator.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/meshlet/meshlet_manager.hpp>

namespace quokka::app
{

namespace
{

// The baseline: free ranges in a vector sorted by offset; allocate scans all of them for the smallest fit, free
// inserts with a binary search and merges neighbours. O(free ranges) per operation.
class NaiveBestFit
{
public:
	explicit NaiveBestFit(uint32_t size) { free_.push_back({0, size}); }
	uint32_t allocate(uint32_t size)
	{
		size_t best = free_.size();
		for (size_t i = 0; i < free_.size(); ++i)
			if (free_[i].size >= size && (best == free_.size() || free_[i].size < free_[best].size))
				best = i;
		if (best == free_.size())
			return kNoSpace;
		const uint32_t offset = free_[best].offset;
		free_[best].offset += size;
		free_[best].size -= size;
		if (free_[best].size == 0)
			free_.erase(free_.begin() + ptrdiff_t(best));
		return offset;
	}
	void free(uint32_t offset, uint32_t size)
	{
		auto it = std::lower_bound(free_.begin(), free_.end(), offset,
		                           [](const FreeRegion& r, uint32_t o) { return r.offset < o; });
		it = free_.insert(it, {offset, size});
		if (it + 1 != free_.end() && it->offset + it->size == (it + 1)->offset)
		{
			it->size += (it + 1)->size;
			free_.erase(it + 1);
		}
		if (it != free_.begin() && (it - 1)->offset + (it - 1)->size == it->offset)
		{
			(it - 1)->size += it->size;
			free_.erase(it);
		}
	}

private:
	std::vector<FreeRegion> free_;
};

struct Stream
{
	std::vector<uint32_t> victims;
	std::vector<uint32_t> sizes;
};

constexpr uint32_t kLive = 10000;
constexpr uint32_t kSpace = 1u << 30;

Stream makeStream(uint64_t pairs, uint32_t seed)
{
	std::mt19937 rng(seed);
	Stream s;
	s.victims.resize(pairs);
	s.sizes.resize(pairs);
	for (uint64_t i = 0; i < pairs; ++i)
	{
		s.victims[i] = rng() % kLive;
		s.sizes[i] = 1 + rng() % 65536;
	}
	return s;
}

// Pairs per second of free(victim) + allocate(size) in steady state.
double offsetAllocatorRate(const Stream& s, uint64_t& failures)
{
	OffsetAllocator allocator(kSpace, kLive);
	std::vector<Allocation> live(kLive);
	for (uint32_t i = 0; i < kLive; ++i)
		live[i] = allocator.allocate(s.sizes[i]);
	const double t0 = threadSeconds();
	for (size_t i = 0; i < s.victims.size(); ++i)
	{
		Allocation& slot = live[s.victims[i]];
		allocator.free(slot);
		slot = allocator.allocate(s.sizes[i]);
		failures += !slot.valid();
	}
	const double rate = double(s.victims.size()) / (threadSeconds() - t0);
	allocator.reset();
	return rate;
}

double naiveRate(const Stream& s, uint64_t pairs)
{
	NaiveBestFit allocator(kSpace);
	std::vector<std::pair<uint32_t, uint32_t>> live(kLive);
	for (uint32_t i = 0; i < kLive; ++i)
		live[i] = {allocator.allocate(s.sizes[i]), s.sizes[i]};
	const double t0 = threadSeconds();
	for (size_t i = 0; i < pairs; ++i)
	{
		auto& slot = live[s.victims[i]];
		if (slot.first != kNoSpace)
			allocator.free(slot.first, slot.second);
		slot = {allocator.allocate(s.sizes[i]), s.sizes[i]};
	}
	return double(pairs) / (threadSeconds() - t0);
}

Result<void> flush(gpu::Device& device, meshlet::MeshletManager& manager)
{
	auto list = device.beginCommands();
	if (!list.ok())
		return list.error();
	QUOKKA_TRY(manager.update(list.value()));
	QUOKKA_TRY(device.submitAndWait(std::move(list.value())));
	device.completedValue();
	return {};
}

meshlet::MeshletBatch makeBatch(std::mt19937& rng, uint32_t mean_words)
{
	meshlet::MeshletBatch batch;
	const uint32_t words = std::max(256u, uint32_t(mean_words / 2 + rng() % mean_words));
	batch.data.assign(words, rng());
	batch.records.resize(std::max(1u, words / 1024)); // ~1,000 words per meshlet
	for (size_t k = 0; k < batch.records.size(); ++k)
		batch.records[k].address = uint32_t(k * 1024);
	return batch;
}

// Fills the manager with batches until `target` of the data capacity is used.
Result<void> fill(meshlet::MeshletManager& manager, std::vector<meshlet::BatchId>& live, std::mt19937& rng,
                  uint32_t mean_words, double target)
{
	while (double(manager.stats().data_used_bytes) < target * double(manager.dataCapacityWords()) * 4.0)
	{
		auto id = manager.addBatch(makeBatch(rng, mean_words));
		if (!id.ok())
			return id.error();
		live.push_back(id.value());
	}
	return {};
}

// The allocator figures: OffsetAllocator vs the naive best-fit list on the same stream.
nlohmann::ordered_json allocatorFigures(const BenchOptions& o)
{
	const uint64_t pairs = o.ops;
	const uint64_t naive_pairs = std::min<uint64_t>(pairs, 20000);
	const Stream stream = makeStream(pairs, 42);
	std::vector<double> fast, naive, ghz;
	uint64_t failures = 0;
	for (uint32_t rep = 0; rep < o.reps; ++rep)
	{
		ghz.push_back(clockGHz()); // before and after each rep: the clock may change in between
		fast.push_back(offsetAllocatorRate(stream, failures));
		ghz.push_back(clockGHz());
	}
	for (uint32_t rep = 0; rep < std::min(o.reps, 3u); ++rep)
		naive.push_back(naiveRate(stream, naive_pairs));
	const double fast_rate = median(fast);
	const double naive_rate = median(naive);
	const double clock = median(ghz);
	return {{"clock", "thread_cpu_time"},
	        {"core_clock_ghz", clock},
	        {"core_clock_ghz_min", *std::min_element(ghz.begin(), ghz.end())},
	        {"core_clock_ghz_max", *std::max_element(ghz.begin(), ghz.end())},
	        {"offset_allocator_cycles_per_pair", clock * 1e9 / fast_rate},
	        {"live_allocations", kLive},
	        {"space_units", kSpace},
	        {"size_range", {1, 65536}},
	        {"pairs", pairs},
	        {"offset_allocator_pairs_per_s", fast_rate},
	        {"offset_allocator_ns_per_pair", 1e9 / fast_rate},
	        {"failed_allocations", failures},
	        {"naive_best_fit_pairs", naive_pairs},
	        {"naive_best_fit_pairs_per_s", naive_rate},
	        {"ratio_vs_naive", fast_rate / naive_rate},
	        {"target_pairs_per_s", 20e6}};
}

struct PathFigures
{
	double compact_rate = 0, clone_rate = 0;
	uint64_t compact_moved = 0, clone_copied = 0;
	uint32_t compact_regions = 0, compact_patches = 0;
};

struct ManagerBench
{
	gpu::Device& device;
	gpu::FrameTimer& timer;
	meshlet::MeshletManager& manager;
	uint32_t mean_words;
	uint32_t reps;
	std::mt19937 rng{7};
	std::vector<meshlet::BatchId> live;
};

// Compaction: fill to 60 %, remove ~30 % of the batches, compact, time the update that moves everything. Then clones
// of ~25 % of the batches (they fit without a rebuild at this fill level), timed the same way.
Result<PathFigures> measurePath(ManagerBench& b, meshlet::CopyPath path)
{
	b.manager.setCopyPath(path);
	PathFigures f;
	std::vector<double> compact_gbs, clone_gbs;
	auto update = [&](gpu::CommandList& list) { return b.manager.update(list); };
	for (uint32_t rep = 0; rep < b.reps; ++rep)
	{
		QUOKKA_TRY(fill(b.manager, b.live, b.rng, b.mean_words, 0.6));
		QUOKKA_TRY(flush(b.device, b.manager));
		std::shuffle(b.live.begin(), b.live.end(), b.rng);
		const size_t keep = b.live.size() * 7 / 10;
		for (size_t i = keep; i < b.live.size(); ++i)
			b.manager.removeBatch(b.live[i]);
		b.live.resize(keep);
		QUOKKA_TRY(flush(b.device, b.manager));
		QUOKKA_TRY(b.manager.compact());
		auto ms = timed(b.device, b.timer, update);
		if (!ms.ok())
			return ms.error();
		f.compact_moved = b.manager.lastUpdate().copied_bytes;
		f.compact_regions = b.manager.lastUpdate().copy_regions;
		f.compact_patches = b.manager.lastUpdate().patches;
		compact_gbs.push_back(double(f.compact_moved) / (ms.value() * 1e6));

		std::vector<meshlet::BatchId> clones;
		for (size_t i = 0; i < b.live.size(); i += 4)
		{
			auto id = b.manager.cloneBatchAllocation(b.live[i]);
			if (!id.ok())
				return id.error();
			clones.push_back(id.value());
		}
		if (b.manager.stats().pending_moves > 0)
			return makeError(ErrorCode::Unsupported, "bench: a clone triggered a rebuild; lower the fill level");
		auto cms = timed(b.device, b.timer, update);
		if (!cms.ok())
			return cms.error();
		f.clone_copied = b.manager.lastUpdate().copied_bytes;
		clone_gbs.push_back(double(f.clone_copied) / (cms.value() * 1e6));
		for (meshlet::BatchId id : clones)
			b.manager.removeBatch(id);
		QUOKKA_TRY(flush(b.device, b.manager));
	}
	f.compact_rate = median(compact_gbs);
	f.clone_rate = median(clone_gbs);
	return f;
}

void printText(const nlohmann::ordered_json& j, const PathFigures& transfer, const PathFigures& compute)
{
	const double copy_rate = j["copy"]["gb_per_s"].get<double>();
	const auto& a = j["allocator"];
	const double fast = a["offset_allocator_pairs_per_s"].get<double>();
	std::printf("quokka bench meshlet on %s (%s timing), working set %.0f MiB, medians of %u runs\n",
	            j["device"].get<std::string>().c_str(), j["timing_source"].get<std::string>().c_str(),
	            j["working_set_bytes"].get<double>() / (1 << 20), j["reps"].get<uint32_t>());
	std::printf("  allocator   OffsetAllocator %.1f M pairs/s (%.1f ns/pair; target >= 20 M/s), naive best-fit "
	            "%.3f M pairs/s: %.0f times faster\n",
	            fast / 1e6, 1e9 / fast, a["naive_best_fit_pairs_per_s"].get<double>() / 1e6,
	            a["ratio_vs_naive"].get<double>());
	std::printf("              core clock %.2f GHz (%.2f-%.2f over the runs): %.0f cycles per pair\n",
	            a["core_clock_ghz"].get<double>(), a["core_clock_ghz_min"].get<double>(),
	            a["core_clock_ghz_max"].get<double>(), a["offset_allocator_cycles_per_pair"].get<double>());
	std::printf("  copy        %.2f GB/s (best of vkCmdCopyBuffer %.2f GB/s and a compute copy %.2f GB/s)\n", copy_rate,
	            j["copy"]["transfer_gb_per_s"].get<double>(), j["copy"]["compute_gb_per_s"].get<double>());
	for (const auto& [name, f] : {std::pair<const char*, const PathFigures&>{"transfer", transfer},
	                              std::pair<const char*, const PathFigures&>{"compute", compute}})
	{
		std::printf("  compaction  %-8s %.2f GB/s = %.0f%% of copy bandwidth (%.1f MiB moved, %u regions, %u "
		            "patches)\n",
		            name, f.compact_rate, 100.0 * f.compact_rate / copy_rate, double(f.compact_moved) / (1 << 20),
		            f.compact_regions, f.compact_patches);
		std::printf("  clone       %-8s %.2f GB/s = %.0f%% of copy bandwidth (%.1f MiB copied)\n", name, f.clone_rate,
		            100.0 * f.clone_rate / copy_rate, double(f.clone_copied) / (1 << 20));
	}
	std::printf("  MeshletManager's automatic choice on this device: %s\n",
	            j["auto_copy_path"].get<std::string>().c_str());
}

} // namespace

int runBenchMeshlet(const BenchOptions& o)
{
	nlohmann::ordered_json j;
	j["bench"] = "meshlet";
	j["allocator"] = allocatorFigures(o);

	auto desc = o.device.desc();
	if (!desc.ok())
		return fail(desc.error());
	auto created = gpu::Device::create(desc.value());
	if (!created.ok())
		return fail(created.error());
	gpu::Device& device = *created.value();
	const bool cpu = device.info().is_cpu;
	const uint64_t range = device.info().max_storage_buffer_range & ~uint64_t(255);
	if (o.mib && (uint64_t(o.mib) << 20) > range)
		return usage("bench meshlet: --mib " + std::to_string(o.mib) + " exceeds what one storage buffer of " +
		             device.info().name + " may cover (" + std::to_string(range >> 20) + " MiB)");
	const uint64_t mib = o.mib ? o.mib : (cpu ? 64 : 512);
	const uint64_t bytes = std::min<uint64_t>(mib << 20, range);
	gpu::FrameTimer timer(device);
	j["device"] = device.info().name;
	j["device_type"] = cpu ? "cpu" : "gpu";
	j["timing_source"] = gpu::timingSourceName(timer.source());
	j["working_set_bytes"] = bytes;
	j["reps"] = o.reps;
	auto transfer_rate = copyBandwidth(device, timer, bytes, o.reps);
	if (!transfer_rate.ok())
		return fail(transfer_rate.error());
	auto compute_rate = computeCopyBandwidth(device, timer, bytes, o.reps);
	if (!compute_rate.ok())
		return fail(compute_rate.error());
	const double copy = std::max(transfer_rate.value(), compute_rate.value());
	j["copy"] = {{"bytes", bytes},
	             {"gb_per_s", copy},
	             {"transfer_gb_per_s", transfer_rate.value()},
	             {"compute_gb_per_s", compute_rate.value()}};

	meshlet::MeshletManagerDesc mdesc;
	mdesc.initial_data_words = uint32_t(bytes / 4);
	mdesc.initial_records = uint32_t(bytes / 4 / 1024 + 1024);
	mdesc.name = "bench.meshlets";
	auto made = meshlet::MeshletManager::create(device, mdesc);
	if (!made.ok())
		return fail(made.error());
	// ~2,000 batches of ~1,000 words per meshlet record.
	ManagerBench bench{device, timer, *made.value(), uint32_t(std::max<uint64_t>(4096, bytes / 4 / 2048)), o.reps};
	const meshlet::CopyPath auto_path = bench.manager.copyPath();
	auto transfer = measurePath(bench, meshlet::CopyPath::Transfer);
	if (!transfer.ok())
		return fail(transfer.error());
	auto compute = measurePath(bench, meshlet::CopyPath::Compute);
	if (!compute.ok())
		return fail(compute.error());
	const PathFigures& chosen = auto_path == meshlet::CopyPath::Compute ? compute.value() : transfer.value();
	auto path_json = [&](const PathFigures& f)
	{
		return nlohmann::ordered_json{{"compaction_gb_per_s", f.compact_rate},
		                              {"compaction_fraction_of_copy_bandwidth", f.compact_rate / copy},
		                              {"clone_gb_per_s", f.clone_rate},
		                              {"clone_fraction_of_copy_bandwidth", f.clone_rate / copy}};
	};
	j["auto_copy_path"] = auto_path == meshlet::CopyPath::Compute ? "compute" : "transfer";
	j["compaction"] = {{"bytes_moved", chosen.compact_moved},
	                   {"copy_regions", chosen.compact_regions},
	                   {"patched_records", chosen.compact_patches},
	                   {"gb_per_s", chosen.compact_rate},
	                   {"fraction_of_copy_bandwidth", chosen.compact_rate / copy}};
	j["clone"] = {{"bytes_copied", chosen.clone_copied},
	              {"gb_per_s", chosen.clone_rate},
	              {"fraction_of_copy_bandwidth", chosen.clone_rate / copy}};
	j["paths"] = {{"transfer", path_json(transfer.value())}, {"compute", path_json(compute.value())}};
	j["batches"] = bench.live.size();
	j["validation_errors"] = device.validationErrorCount();
	made.value().reset();

	if (o.json)
		std::printf("%s\n", j.dump(2).c_str());
	else
		printText(j, transfer.value(), compute.value());
	if (device.validationErrorCount() > 0)
		return fail(std::to_string(device.validationErrorCount()) +
		            " Vulkan validation error(s); first: " + device.validationMessages().front());
	return 0;
}

} // namespace quokka::app
