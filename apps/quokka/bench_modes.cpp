// `quokka bench modes`: the partition of records by slot on the device (modes/partition.hpp), GPU time against the
// device's copy bandwidth, for both layouts; and a declared flip over N routed objects (bench_flip.cpp).
#include "commands.hpp"

#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include <quokka/gpu/buffer.hpp>
#include <quokka/modes/partition.hpp>

#include "bench_copy.hpp"
#include "bench_flip.hpp"

namespace quokka::app
{

namespace
{

/// Words per record: an indexed indirect draw command (what the indirect strategy partitions).
constexpr uint32_t kStride = 5;

struct Row
{
	uint32_t records = 0, slots = 0;
	const char* layout = "";
	double ms = 0.0, gb_per_s = 0.0;
	uint64_t bytes = 0;
};

Result<gpu::BufferHandle> deviceBuffer(gpu::Device& dev, const std::vector<uint32_t>& words, size_t min_words,
                                       const char* name)
{
	QUOKKA_TRY_ASSIGN(b, dev.createBuffer({std::max<size_t>(16, std::max(words.size(), min_words) * 4),
	                                       gpu::BufferUsage::Storage | gpu::BufferUsage::TransferDst,
	                                       gpu::MemoryDomain::DeviceLocal, name}));
	if (!words.empty())
		QUOKKA_TRY(dev.uploadBuffer(*b, 0, words.data(), words.size() * 4));
	return b;
}

/// Both layouts over `n` records spread uniformly over `slots` slots.
Result<std::vector<Row>> measure(gpu::Device& dev, const modes::PartitionKernel& kernel, uint32_t n, uint32_t slots,
                                 uint32_t reps)
{
	std::mt19937 rng(n ^ slots);
	std::vector<uint32_t> slot_of(n), records(size_t(n) * kStride), regions;
	std::vector<uint32_t> per_slot(slots, 0);
	for (uint32_t i = 0; i < n; ++i)
	{
		slot_of[i] = rng() % slots;
		++per_slot[slot_of[i]];
		for (uint32_t w = 0; w < kStride; ++w)
			records[size_t(i) * kStride + w] = i + w;
	}
	uint32_t base = 0;
	for (uint32_t s = 0; s < slots; ++s)
	{
		regions.insert(regions.end(), {base, per_slot[s]});
		base += per_slot[s];
	}
	QUOKKA_TRY_ASSIGN(slot_buffer, deviceBuffer(dev, slot_of, 1, "bench slot_of"));
	QUOKKA_TRY_ASSIGN(record_buffer, deviceBuffer(dev, records, 1, "bench records"));
	QUOKKA_TRY_ASSIGN(counts, deviceBuffer(dev, {}, slots, "bench counts"));
	QUOKKA_TRY_ASSIGN(offsets, deviceBuffer(dev, {}, slots, "bench offsets"));
	QUOKKA_TRY_ASSIGN(region_buffer, deviceBuffer(dev, regions, 0, "bench regions"));
	QUOKKA_TRY_ASSIGN(cursors, deviceBuffer(dev, {}, slots, "bench cursors"));
	QUOKKA_TRY_ASSIGN(out, deviceBuffer(dev, {}, size_t(n) * kStride, "bench out"));
	gpu::FrameTimer timer(dev);
	std::vector<Row> rows;
	for (const bool compact : {true, false})
	{
		// Bytes: each record's slot (read twice by compact: count and scatter) and its words read and written.
		const uint64_t bytes = uint64_t(n) * ((compact ? 8 : 4) + 2 * kStride * 4);
		const modes::PartitionBuffers b{
		    &*slot_buffer, &*record_buffer, &*counts, compact ? &*offsets : &*region_buffer, &*cursors, &*out};
		QUOKKA_TRY_ASSIGN(gbs, medianRate(dev, timer, bytes, reps,
		                                  [&](gpu::CommandList& list) -> Result<void>
		                                  {
			                                  if (compact)
				                                  kernel.compact(list, b, n, kStride, slots);
			                                  else
				                                  kernel.regions(list, b, n, kStride, slots);
			                                  return {};
		                                  }));
		rows.push_back({n, slots, compact ? "compact" : "regions", double(bytes) / (gbs * 1e6), gbs, bytes});
	}
	return rows;
}

} // namespace

int runBenchModes(const BenchOptions& b)
{
	auto device = createBenchDevice(b);
	if (!device.ok())
		return fail(device.error());
	gpu::Device& dev = **device;
	std::vector<uint32_t> counts = benchObjectCounts(b, dev);
	for (uint32_t n : counts)
		if (n < 1 || n > 10'000'000)
			return usage("bench modes: --objects " + std::to_string(n) + " is outside 1…10,000,000");
	auto kernel = modes::PartitionKernel::create(dev);
	if (!kernel.ok())
		return fail(kernel.error());
	gpu::FrameTimer copy_timer(dev);
	const uint64_t copy_bytes = std::min<uint64_t>(256ull << 20, dev.info().max_storage_buffer_range);
	auto copy = computeCopyBandwidth(dev, copy_timer, copy_bytes, 3);
	if (!copy.ok())
		return fail(copy.error());
	std::vector<Row> rows;
	for (uint32_t n : counts)
		for (uint32_t slots : {1u, 4u, 16u, 64u})
		{
			auto r = measure(dev, *kernel, n, slots, b.reps);
			if (!r.ok())
				return fail(r.error());
			rows.insert(rows.end(), r->begin(), r->end());
		}
	// The declared flip: GPU routing at every count, CPU routing (every object re-evaluated) up to 10^5 objects.
	auto session = BenchSession::create(dev);
	if (!session.ok())
		return fail(session.error());
	std::vector<FlipRow> flips;
	for (uint32_t n : counts)
		for (const bool gpu_routing : {true, false})
		{
			if (!gpu_routing && n > 100000)
				continue;
			auto r = measureDeclaredFlip(dev, *session, n, gpu_routing, b.reps);
			if (!r.ok())
				return fail(r.error());
			flips.push_back(*r);
		}
	const bool gpu_time = dev.info().gpu_timestamps_reliable;
	if (b.json)
	{
		nlohmann::ordered_json j;
		j["benchmark"] = "modes";
		j["device"] = dev.info().name;
		j["timing_source"] = gpu_time ? "gpu" : "wall";
		j["reps"] = b.reps;
		j["copy_gb_per_s"] = *copy;
		j["record_words"] = kStride;
		for (const Row& r : rows)
			j["rows"].push_back({{"records", r.records},
			                     {"slots", r.slots},
			                     {"layout", r.layout},
			                     {"ms", r.ms},
			                     {"bytes", r.bytes},
			                     {"gb_per_s", r.gb_per_s},
			                     {"fraction_of_copy_bandwidth", *copy > 0.0 ? r.gb_per_s / *copy : 0.0}});
		for (const FlipRow& f : flips)
			j["declared_flip"].push_back({{"objects", f.objects},
			                              {"routing", f.routing},
			                              {"place_ms", f.place_ms},
			                              {"static_update_us", f.static_us},
			                              {"flip_update_us", f.flip_us},
			                              {"flip_heap_update_us", f.flip_heap_update_us},
			                              {"flip_heap_upload_us", f.flip_heap_upload_us},
			                              {"flip_heap_prepare_us", f.flip_heap_prepare_us},
			                              {"static_gpu_ms", f.static_gpu_ms},
			                              {"flip_gpu_ms", f.flip_gpu_ms},
			                              {"objects_refreshed", f.refreshed},
			                              {"groups_respecialised", f.respecialised}});
		std::printf("%s\n", j.dump(2).c_str());
		return 0;
	}
	std::printf("partition of %u-word records by slot on %s (%s time, median of %u; compute copy %.1f GB/s)\n", kStride,
	            dev.info().name.c_str(), gpu_time ? "GPU" : "wall", b.reps, *copy);
	std::printf("  %10s %6s %8s %10s %9s %8s\n", "records", "slots", "layout", "ms", "GB/s", "of copy");
	for (const Row& r : rows)
		std::printf("  %10u %6u %8s %10.4f %9.1f %8.2f\n", r.records, r.slots, r.layout, r.ms, r.gb_per_s,
		            *copy > 0.0 ? r.gb_per_s / *copy : 0.0);
	std::printf("\ndeclared flip: objects under a front-face rule over one shared declared front face, flipped every "
	            "frame (CPU: the frame's update; %s time)\n",
	            gpu_time ? "GPU" : "wall");
	std::printf("  %10s %8s %10s %10s %10s %22s %10s %10s %10s %7s\n", "objects", "routing", "place ms", "static us",
	            "flip us", "(update·upload·prepare)", "static ms", "flip ms", "refreshed", "groups");
	for (const FlipRow& f : flips)
		std::printf("  %10u %8s %10.1f %10.1f %10.1f %8.1f·%6.1f·%6.1f %10.3f %10.3f %10u %7u\n", f.objects, f.routing,
		            f.place_ms, f.static_us, f.flip_us, f.flip_heap_update_us, f.flip_heap_upload_us,
		            f.flip_heap_prepare_us, f.static_gpu_ms, f.flip_gpu_ms, f.refreshed, f.respecialised);
	return 0;
}

} // namespace quokka::app
