// cli_bench_test.cpp — `quokka bench`: draw, update, camera, chain, textures and modes rows, their restrictions and
// their bad options (each spawned as a process on small sizes).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace
{

// Rows of a bench JSON array keyed by `key` (a row's name, or op/k).
std::map<std::string, nlohmann::json> rowsBy(const nlohmann::json& rows, const std::string& key)
{
	std::map<std::string, nlohmann::json> out;
	for (const auto& r : rows)
		out[key == "op/k" ? r["op"].get<std::string>() + "/" + std::to_string(r["k"].get<int>())
		                  : r[key].get<std::string>()] = r;
	return out;
}

TEST(CliBench, DrawReportsEveryVariantAgainstTheBakedFloor)
{
	const CliRun run = runCli("bench draw --objects 200 --reps 2 --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["bench"], "draw");
	// The device the suite runs on (QUOKKA_DEVICE: lavapipe in CI, the GPU on a device run).
	const CliRun info = runCli("info --json");
	ASSERT_EQ(info.exit_code, 0) << info.err;
	EXPECT_EQ(j["device_type"], nlohmann::json::parse(info.out)["type"]);
	EXPECT_TRUE(j["timing_source"] == "wall" || j["timing_source"] == "gpu");
	auto rows = rowsBy(j["results"], "name");
	ASSERT_EQ(rows.size(), 5u) << j["results"].dump();
	for (const char* name : {"classic", "heap-indirect", "heap-megacall", "heap-auto", "baked"})
	{
		ASSERT_EQ(rows.count(name), 1u) << name;
		const auto& r = rows[name];
		EXPECT_EQ(r["objects"], 200) << name;
		EXPECT_GE(r["cpu_update_ms"].get<double>(), 0.0) << name;
		for (const char* key : {"cpu_encode_ms", "gpu_ms", "frame_ms", "gpu_vs_baked"})
			EXPECT_GT(r[key].get<double>(), 0.0) << name << "." << key;
		EXPECT_GT(r["draw_calls"].get<int>(), 0) << name;
		// Interleaved rounds: the median within its spread; ratios to the fastest variant of the run.
		EXPECT_LE(r["gpu_min_ms"].get<double>(), r["gpu_ms"].get<double>()) << name;
		EXPECT_GE(r["gpu_max_ms"].get<double>(), r["gpu_ms"].get<double>()) << name;
		EXPECT_GE(r["gpu_vs_best"].get<double>(), 1.0) << name;
		ASSERT_EQ(rows.count(r["best"].get<std::string>()), 1u) << name;
		EXPECT_DOUBLE_EQ(rows[r["best"].get<std::string>()]["gpu_vs_best"].get<double>(), 1.0) << name;
		EXPECT_EQ(r["cpu_frame_ms"]["frames"], j["reps"]) << name; // (one per round)
		EXPECT_GE(r["cpu_frame_ms"]["max_over_median"].get<double>(), 1.0) << name;
	}
	EXPECT_EQ(rows["classic"]["path"], "classic");
	EXPECT_EQ(rows["classic"]["draw_calls"], 200);
	// One bucket and one slot: a draw per slot, whatever the strategy.
	for (const char* name : {"heap-indirect", "heap-megacall", "heap-auto"})
	{
		EXPECT_EQ(rows[name]["path"], "heap") << name;
		EXPECT_LE(rows[name]["draw_calls"].get<int>(), 4) << name;
	}
	EXPECT_EQ(rows["heap-megacall"]["draw"], "megacall");
	EXPECT_EQ(rows["heap-megacall"]["heap"]["megacall_slots"].get<int>(), rows["heap-megacall"]["heap"]["slots"]);
	EXPECT_EQ(rows["baked"]["path"], "baked");
	EXPECT_EQ(rows["baked"]["draw"], "single");
	EXPECT_EQ(rows["baked"]["draw_calls"], 1);
	EXPECT_DOUBLE_EQ(rows["baked"]["gpu_vs_baked"].get<double>(), 1.0);
	// The crossover study follows a smaller --objects and covers every triangle count.
	ASSERT_EQ(j["crossover"].size(), 4u);
	int expected[] = {4, 12, 32, 100};
	for (size_t i = 0; i < 4; ++i)
	{
		const auto& c = j["crossover"][i];
		EXPECT_EQ(c["triangles"], expected[i]);
		EXPECT_GT(c["indirect_gpu_ms"].get<double>(), 0.0);
		EXPECT_GT(c["megacall_gpu_ms"].get<double>(), 0.0);
	}
	EXPECT_EQ(j["crossover"][0]["auto_picks"], "megacall"); // 12 emitted vertices, far under megacall_below
	EXPECT_EQ(j["crossover"][3]["auto_picks"], "indirect"); // 300
}

TEST(CliBench, DrawPathAndStrategyRestrictTheVariants)
{
	const CliRun run = runCli("bench draw --objects 100 --reps 1 --path heap --draw megacall --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	auto rows = rowsBy(j["results"], "name");
	EXPECT_EQ(rows.size(), 2u) << j["results"].dump();
	EXPECT_EQ(rows.count("heap-megacall"), 1u);
	EXPECT_EQ(rows.count("baked"), 1u); // the floor is always measured
	EXPECT_TRUE(j["crossover"].empty());
}

TEST(CliBench, UpdateUploadsBytesProportionalToTheChange)
{
	// 1000 objects: k is capped at n/10, so k ∈ {1, 100}.
	const CliRun run = runCli("bench update --objects 1000 --reps 1 --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["bench"], "update");
	EXPECT_EQ(j["objects"], 1000);
	EXPECT_EQ(j["draw"], "auto");
	EXPECT_EQ(j["wait"], "block");
	EXPECT_EQ(j["idle"]["upload_bytes"], 0);
	// The placement frame's steps: placement's three phases took time, and the steps are parts of the frame's update.
	const auto& place = j["placement"];
	const auto& phases = place["phases_ms"];
	double steps = 0.0;
	for (const char* step : {"pull", "remove", "read", "acquire", "attach", "refresh", "finish", "upload"})
	{
		ASSERT_TRUE(phases.contains(step)) << place.dump();
		EXPECT_GE(phases[step].get<double>(), 0.0) << step;
		steps += phases[step].get<double>();
	}
	for (const char* step : {"read", "acquire", "attach"})
		EXPECT_GT(phases[step].get<double>(), 0.0) << step;
	EXPECT_LE(steps, place["cpu_update_ms"].get<double>());
	EXPECT_DOUBLE_EQ(place["us_per_object"].get<double>(), place["cpu_update_ms"].get<double>());
	// Host memory per object: jemalloc's count where the CLI runs on it (null on a sanitizer's malloc); an object
	// costs at least its records and at most a few kilobytes.
	if (!place["host_bytes_per_object"].is_null())
	{
		EXPECT_GT(place["host_bytes_per_object"].get<double>(), 100.0);
		EXPECT_LT(place["host_bytes_per_object"].get<double>(), 100000.0);
	}
	// What the task holds per object, by category, and their sum.
	const auto& held = place["host_held_per_object"];
	double held_sum = 0.0;
	for (const char* category : {"objects", "private_sets", "pool", "subscriptions", "tables", "draws", "allocator",
	                             "derive", "frame", "router"})
	{
		ASSERT_TRUE(held.contains(category)) << category << ": " << held.dump();
		held_sum += held[category].get<double>();
	}
	EXPECT_GT(held["objects"].get<double>(), 100.0) << held.dump();
	EXPECT_NEAR(held["accounted"].get<double>(), held_sum, 1e-6 * held_sum);
	auto rows = rowsBy(j["results"], "op/k");
	ASSERT_EQ(rows.size(), 8u) << j["results"].dump();
	for (const char* op : {"add", "remove", "readd", "edit"})
		for (int k : {1, 100})
		{
			const auto& r = rows[std::string(op) + "/" + std::to_string(k)];
			EXPECT_GT(r["cpu_update_ms"].get<double>(), 0.0) << op << k;
			EXPECT_GT(r["us_per_object"].get<double>(), 0.0) << op << k;
			EXPECT_GT(r["upload_bytes"].get<uint64_t>(), 0u) << op << k;
			// Where the frame went: every part present, none negative, the heap's update and upload among them; the
			// parts' medians cover the frame's median (other: the rest of the runtime's frame).
			const auto& parts = r["parts_ms"];
			double sum = 0.0;
			for (const char* part :
			     {"route", "heap_update", "heap_upload", "flush", "heap_prepare", "classic", "other"})
			{
				ASSERT_TRUE(parts.contains(part)) << op << k << " " << parts.dump();
				EXPECT_GE(parts[part].get<double>(), 0.0) << op << k << " " << part;
				sum += parts[part].get<double>();
			}
			EXPECT_DOUBLE_EQ(parts["heap_update"].get<double>(), r["heap_update_ms"].get<double>());
			EXPECT_GT(parts["heap_update"].get<double>(), 0.0) << op << k;
			EXPECT_GE(sum, 0.999 * r["cpu_update_ms"].get<double>()) << op << k << " " << parts.dump();
		}
	// An edit re-packs ModelTrafo (64 bytes), NormalMatrix (48) and the ModelTrafo's constituent slot the device
	// derives the camera-relative trafo from (128, with its epoch): a few hundred bytes per object at most, however
	// many objects the scene holds.
	const uint64_t edit1 = rows["edit/1"]["upload_bytes"], edit100 = rows["edit/100"]["upload_bytes"];
	EXPECT_LT(edit100, 100u * 400u);
	EXPECT_GT(edit100, edit1);
	EXPECT_GT(rows["add/100"]["upload_bytes"].get<uint64_t>(), rows["add/1"]["upload_bytes"].get<uint64_t>());
	// Objects that return after a removal are placed again like new ones: their meshes are staged again (the scene's
	// meshes have 10–100 triangles, so 100 random ones weigh about what 100 fresh ones do), which a removal never does.
	const double readd = rows["readd/100"]["bytes_per_object"], add = rows["add/100"]["bytes_per_object"];
	EXPECT_GT(readd, 0.5 * add);
	EXPECT_LT(readd, 2.0 * add);
	EXPECT_GT(readd, 10.0 * rows["remove/100"]["bytes_per_object"].get<double>());
}

TEST(CliBench, UpToAHundredMillionObjectsAreAcceptedAndRefusedWithAClearErrorWhenTheyWouldNotFit)
{
	// 10^8 objects are within range; no test machine has the ~0.8 TiB they need, so each benchmark says so up front
	// (exit 1, one line, nothing generated) instead of failing an allocation hours later.
	for (const char* cmd :
	     {"bench update --objects 100000000", "bench draw --objects 100000000", "bench textures --objects 100000000"})
	{
		const CliRun run = runCli(cmd);
		EXPECT_EQ(run.exit_code, 1) << cmd << ": " << run.err;
		EXPECT_NE(run.err.find("objects need about"), std::string::npos) << cmd << ": " << run.err;
		EXPECT_NE(run.err.find("use fewer objects"), std::string::npos) << cmd << ": " << run.err;
		EXPECT_EQ(run.out, "") << cmd;
	}
	const CliRun over = runCli("bench update --objects 100000001");
	EXPECT_EQ(over.exit_code, 2) << over.err;
	EXPECT_NE(over.err.find("not in range"), std::string::npos) << over.err;
}

TEST(CliBench, UpdateOpAndKRestrictTheRows)
{
	// --k 7 3 (in that order, each capped at n/10 = 50) and --op edit remove: four rows, in k then op order. The frames
	// spin on the GPU's timeline instead of sleeping (--wait spin): only how the CPU waits changes, not the work.
	const CliRun run = runCli("bench update --objects 500 --reps 1 --op edit --op remove --k 7 3 --wait spin --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["wait"], "spin");
	ASSERT_EQ(j["results"].size(), 4u) << j["results"].dump();
	const char* want[4][2] = {{"edit", "7"}, {"remove", "7"}, {"edit", "3"}, {"remove", "3"}};
	for (size_t i = 0; i < 4; ++i)
	{
		EXPECT_EQ(j["results"][i]["op"], want[i][0]);
		EXPECT_EQ(j["results"][i]["k"].get<int>(), std::stoi(want[i][1]));
	}
	for (const auto& row : j["results"])
	{
		// The core's clock beside each row, and the row's cost in core cycles (µs × GHz = thousands of cycles).
		EXPECT_GT(row["core_clock_ghz"].get<double>(), 0.3);
		EXPECT_LT(row["core_clock_ghz"].get<double>(), 8.0);
		EXPECT_NEAR(row["kcycles_per_object"].get<double>(),
		            row["us_per_object"].get<double>() * row["core_clock_ghz"].get<double>(), 1e-9);
	}
	EXPECT_GE(j["core_clock_ghz"].get<double>(), j["core_clock_ghz_min"].get<double>());
	EXPECT_LE(j["core_clock_ghz"].get<double>(), j["core_clock_ghz_max"].get<double>());
	// An edit of k objects uploads k × (ModelTrafo 64 B + NormalMatrix's header 16 B + NormalMatrix 36 B + its padding
	// to 16 bytes 12 B) = k × 128 bytes: the two allocations sit side by side, so the re-pack stages the header between
	// them and they upload as one copy region (7 regions: copied, no scatter table). Plus the constituent of each
	// ModelTrafo that the GPU derives the camera-relative ModelViewProjTrafo from: its changed words — a quarter turn
	// changes the 3×3 part, 12 components at 8 bytes, 96 B (up to its 128-byte slot where dirty runs of neighbouring
	// slots merge) — and the 32-byte granule of its epoch word (up to 96 B merged). Proportional to k either way.
	const uint64_t bytes = j["results"][0]["upload_bytes"].get<uint64_t>();
	EXPECT_GE(bytes, 7u * (128u + 96u + 32u));
	EXPECT_LE(bytes, 7u * (128u + 128u + 96u));
}

// bench camera: one row per (objects, effect, path); on the heap a camera frame re-uploads no uniform value even for
// the effect reading every object's ModelViewProjTrafo (the GPU derives it), while the classic path re-uploads every
// object's block; CPU devices report no derive timing (their timestamps are not trusted).
TEST(CliBench, CameraRowsShowTheGpuDerivingWhatTheCameraChanges)
{
	const CliRun run = runCli("bench camera --objects 200 --reps 1 --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["benchmark"], "camera");
	ASSERT_EQ(j["rows"].size(), 4u) << j["rows"].dump();
	for (const auto& row : j["rows"])
	{
		EXPECT_EQ(row["objects"].get<int>(), 200);
		EXPECT_GT(row["camera"]["update_us"].get<double>(), 0.0);
		EXPECT_TRUE(row["derive_on_camera_frame"].is_null());
		const bool heap = row["path"] == "heap";
		if (heap)
		{
			EXPECT_EQ(row["camera"]["uniform_uploads"].get<int>(), row["effect"] == "stock" ? 1 : 0) << row.dump();
		}
		else
		{
			EXPECT_EQ(row["camera"]["uniform_uploads"].get<int>(), 200) << row.dump();
		}
	}
	expectOneLineError(runCli("bench camera --objects 0"), "--objects");
}

// bench chain: the objects hang below a D-deep hierarchy whose root turns; on the heap a root move re-uploads no
// uniform value (the device recomposes the chains: one link per object and per inner node), while the classic path
// re-uploads every object's block.
TEST(CliBench, ChainRowsShowTheDeviceComposingWhatARootMoveChanges)
{
	const CliRun run = runCli("bench chain --objects 200 --depth 6 --reps 1 --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["benchmark"], "chain");
	EXPECT_EQ(j["depth"].get<int>(), 6);
	ASSERT_EQ(j["rows"].size(), 2u) << j["rows"].dump();
	for (const auto& row : j["rows"])
	{
		EXPECT_EQ(row["objects"].get<int>(), 200);
		EXPECT_GT(row["root_move"]["update_us"].get<double>(), 0.0);
		if (row["path"] == "heap")
		{
			EXPECT_EQ(row["root_move"]["uniform_uploads"].get<int>(), 0) << row.dump();
			EXPECT_EQ(row["chain_links"].get<int>(), 200 + 4)
			    << "each object's leaf and the 4 inner nodes below the root";
			EXPECT_EQ(row["chain_levels"].get<int>(), 5);
		}
		else
		{
			EXPECT_EQ(row["root_move"]["uniform_uploads"].get<int>(), 200) << row.dump();
		}
	}
	expectOneLineError(runCli("bench chain --depth 1"), "--depth");
}

// bench textures: per (textures, objects) the shared, shared-bound, atlas, bindless (where the device has it), bound
// and classic rows — the atlas, the bindless table and the shared texture draw once whatever the texture count, bound
// textures once per texture, classic once per object — and the upload.
TEST(CliBench, TexturesRowsDrawOnceThroughTheAtlasOrTheBindlessTableWhateverTheTextureCount)
{
	const CliRun run = runCli("bench textures --objects 60 --textures 3 20 --texture-size 16 --reps 1 --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["benchmark"], "textures");
	EXPECT_EQ(j["texture_size"].get<int>(), 16);
	// (shared, shared-bound, atlas, bindless where the device has it, bound, classic) per texture count.
	ASSERT_TRUE(j["rows"].size() == 10u || j["rows"].size() == 12u) << j["rows"].dump();
	for (const auto& row : j["rows"])
	{
		const std::string v = row["variant"];
		const int textures = row["textures"].get<int>();
		EXPECT_EQ(row["objects"].get<int>(), 60);
		EXPECT_GT(row["gpu_ms"].get<double>(), 0.0) << row.dump();
		EXPECT_GT(row["place_us_per_object"].get<double>(), 0.0) << row.dump();
		if (v == "shared" || v == "atlas")
		{
			EXPECT_EQ(row["draw_calls"].get<int>(), 1) << row.dump();
			EXPECT_EQ(row["atlas_entries"].get<int>(), textures) << row.dump();
		}
		else if (v == "bindless")
		{
			EXPECT_EQ(row["draw_calls"].get<int>(), 1) << row.dump();
			EXPECT_EQ(row["bindless_entries"].get<int>(), textures) << row.dump();
			EXPECT_EQ(row["atlas_entries"].get<int>(), 0) << row.dump();
		}
		else if (v == "bound" || v == "shared-bound")
		{
			EXPECT_EQ(row["draw_calls"].get<int>(), textures) << row.dump();
			EXPECT_EQ(row["atlas_entries"].get<int>(), 0) << row.dump();
		}
		else
			EXPECT_EQ(row["draw_calls"].get<int>(), 60) << row.dump();
	}
	ASSERT_EQ(j["uploads"].size(), 2u);
	EXPECT_EQ(j["uploads"][1]["texel_bytes"].get<int>(), 20 * 16 * 16 * 4);
	EXPECT_EQ(j["uploads"][1]["placed"].get<int>(), 20);
	EXPECT_EQ(j["uploads"][1]["refused"].get<int>(), 0);
	EXPECT_GT(j["uploads"][1]["wall_gb_per_s"].get<double>(), 0.0);
	expectOneLineError(runCli("bench textures --textures 0"), "--textures");
}

// bench modes: the partition of records by slot, both layouts for 1, 4, 16 and 64 slots, with the bytes it moves and
// their rate against the device's copy bandwidth.
TEST(CliBench, ModesRowsCoverBothLayoutsEverySlotCountAndTheDeclaredFlip)
{
	const CliRun run = runCli("bench modes --objects 300 --reps 1 --json");
	ASSERT_EQ(run.exit_code, 0) << run.err;
	const auto j = nlohmann::json::parse(run.out);
	EXPECT_EQ(j["benchmark"], "modes");
	EXPECT_GT(j["copy_gb_per_s"].get<double>(), 0.0);
	ASSERT_EQ(j["rows"].size(), 8u) << j["rows"].dump();
	std::set<std::pair<int, std::string>> seen;
	for (const auto& row : j["rows"])
	{
		EXPECT_EQ(row["records"].get<int>(), 300);
		EXPECT_GT(row["ms"].get<double>(), 0.0);
		EXPECT_EQ(row["bytes"].get<int>(), 300 * (row["layout"] == "compact" ? 48 : 44)) << row.dump();
		seen.emplace(row["slots"].get<int>(), row["layout"].get<std::string>());
	}
	EXPECT_EQ(seen.size(), 8u);
	// The declared flip: GPU routing re-specialises one group and refreshes no object; CPU routing refreshes all.
	ASSERT_EQ(j["declared_flip"].size(), 2u) << j.dump();
	for (const auto& row : j["declared_flip"])
	{
		EXPECT_EQ(row["objects"].get<int>(), 300);
		EXPECT_GT(row["flip_update_us"].get<double>(), 0.0);
		if (row["routing"] == "gpu")
		{
			EXPECT_EQ(row["objects_refreshed"].get<int>(), 0) << row.dump();
			EXPECT_EQ(row["groups_respecialised"].get<int>(), 1) << row.dump();
		}
		else
		{
			EXPECT_EQ(row["objects_refreshed"].get<int>(), 300) << row.dump();
		}
	}
	expectOneLineError(runCli("bench modes --objects 0"), "--objects");
}

TEST(CliErrors, BadBenchOptionsAreOneLineAndNonZero)
{
	expectOneLineError(runCli("bench update --op move"), "--op");
	expectOneLineError(runCli("bench draw --draw nope"), "--draw");
	expectOneLineError(runCli("bench draw --objects 0"), "--objects");
	expectOneLineError(runCli("bench update --path classic"), "heap only");
	expectOneLineError(runCli("bench update --draw all"), "--draw all");
	expectOneLineError(runCli("bench update --objects 5"), "below 10");
	expectOneLineError(runCli("bench update --objects 100 200"), "one --objects");
	expectOneLineError(runCli("bench update --wait nap"), "--wait");
}

} // namespace
