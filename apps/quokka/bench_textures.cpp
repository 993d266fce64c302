// `quokka bench textures`: textures at scale. N quads on a grid sample T distinct S × S textures (object i the texture
// i mod T; linear, repeat, mipmaps), drawn by
//   shared  — the heap with one texture for every object (sampled from its atlas): the reference the others are
//             measured against;
//   shared-bound — the same with the atlas off: the one texture sampled by the hardware alone;
//   atlas   — the heap with the T textures packed into its atlas (objects differing in textures share a draw);
//   bindless — the heap with the T textures in its bindless table (where the device has descriptor indexing: objects
//             differing in textures share a draw, sampled by the hardware);
//   bound   — the heap with the atlas off: one bucket, and a draw, per texture;
//   classic — one draw per object.
// The variants of one (N, T) are measured interleaved: each placed and settled, then rounds of one steady frame per
// variant, the round's first rotating. Reported per row: draw calls, the first frame's CPU update per object
// (placement, atlas or table acquisitions included; the textures are uploaded by the first variant that samples them),
// the median GPU, frame and encode time of the steady frames, GPU time over the shared and shared-bound rows', the
// atlas's or table's entries and the atlas's bytes. A second table times the atlas's upload alone: T textures acquired
// and uploaded in one submission (mips and gutters built by its kernel, copied into the pages), as texel bytes per
// second of wall and GPU time (of the textures it had room for, when it is full).
#include "commands.hpp"
#include "render_common.hpp"
#include "scene_run.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <quokka/atlas/atlas_pool.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/gpu/timing.hpp>
#include <quokka/runtime/runtime.hpp>

namespace quokka::app
{

namespace
{

/// Positions as given (clip space), ConstantColor times the texture.
fx::Effect texturedEffect()
{
	auto pass = std::make_shared<const fx::Stage>(fx::Stage::vertex("bench.clipPositions")
	                                                  .reads({{"Positions", fx::V4f}})
	                                                  .writes({{"Positions", fx::V4f}})
	                                                  .glsl("\ts.Positions = s.Positions;"));
	auto effect = fx::composeEffect("bench.textured", {pass, fx::stock::constantColor(), fx::stock::diffuseTexture()});
	QUOKKA_ASSERT(effect.ok(), "bench textures: the effect composes");
	return effect.value();
}

/// `count` distinct `size` × `size` RGBA8 textures (a pattern per texture; what they show does not matter).
std::vector<adaptive::aval<scene::TextureData>> makeTextures(uint32_t count, uint32_t size)
{
	std::vector<adaptive::aval<scene::TextureData>> textures;
	textures.reserve(count);
	for (uint32_t t = 0; t < count; ++t)
	{
		auto texels = std::make_shared<std::vector<uint8_t>>(size_t(size) * size * 4);
		auto* words = reinterpret_cast<uint32_t*>(texels->data());
		const uint32_t tint = (t * 2654435761u) | 0xff000000u;
		for (uint32_t y = 0; y < size; ++y)
			for (uint32_t x = 0; x < size; ++x)
				words[size_t(y) * size + x] = tint ^ ((x ^ y) & 8 ? 0x00404040u : 0u);
		textures.push_back(adaptive::constant(scene::TextureData{size, size, std::move(texels), false, nullptr}));
	}
	return textures;
}

/// `n` quads on a square grid over the framebuffer; object i samples textures[i % textures.size()].
std::vector<scene::RenderObjectPtr>
makeObjects(uint32_t n, const std::vector<adaptive::aval<scene::TextureData>>& textures, const fx::Effect& effect)
{
	const uint32_t side = uint32_t(std::ceil(std::sqrt(double(n))));
	const float cell = 2.0f / float(side);
	const auto indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2, 0, 2, 3}, VK_FORMAT_R32_UINT);
	const auto coordinates =
	    scene::BufferView::of(std::vector<math::V2f>{{0, 0}, {1, 0}, {1, 1}, {0, 1}}, VK_FORMAT_R32G32_SFLOAT);
	const auto color = scene::uniform(math::V4f(1.0f));
	const auto draw = adaptive::constant(scene::DrawCall{true, 6});
	std::vector<scene::RenderObjectPtr> objects;
	objects.reserve(n);
	for (uint32_t i = 0; i < n; ++i)
	{
		const float x0 = -1.0f + cell * float(i % side), y0 = -1.0f + cell * float(i / side);
		const float x1 = x0 + 0.9f * cell, y1 = y0 + 0.9f * cell;
		scene::RenderObject o;
		o.effect = effect;
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<math::V4f>{{x0, y0, 0.5f, 1}, {x1, y0, 0.5f, 1}, {x1, y1, 0.5f, 1}, {x0, y1, 0.5f, 1}},
		    VK_FORMAT_R32G32B32A32_SFLOAT);
		o.attributes["DiffuseColorCoordinates"] = coordinates;
		o.indices = indices;
		o.uniforms["ConstantColor"] = color;
		o.textures["DiffuseColorTexture"] = textures[i % textures.size()];
		o.draw_call = draw;
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	return objects;
}

struct Row
{
	uint32_t objects = 0, textures = 0;
	std::string variant;
	uint32_t draw_calls = 0, buckets = 0;
	double place_ms = 0, place_us_per_object = 0;
	double gpu_ms = 0, frame_ms = 0, encode_us = 0;
	uint32_t atlas_entries = 0;
	uint64_t atlas_bytes = 0;
	uint32_t bindless_entries = 0;
};

/// One variant of a row group: its objects (own textures or the shared one) and options.
struct Variant
{
	std::string name;
	const std::vector<scene::RenderObjectPtr>* objects;
	runtime::RenderOptions options;
};

/// Every variant's task placed (its first frame timed: placement; the textures are uploaded by the first variant that
/// samples them, as the tasks share the session's context) and settled by a second frame, then `reps` rounds of one
/// steady frame per variant, the round's first variant rotating — a GPU state change (clocks, caches) reaches every
/// variant alike instead of biasing whichever ran after it. Rows in variant order.
Result<std::vector<Row>> measureInterleaved(gpu::Device& device, BenchSession& session,
                                            const std::vector<Variant>& variants, uint32_t reps)
{
	struct Live
	{
		std::unique_ptr<runtime::RenderTask> task;
		std::vector<double> gpu, wall, encode;
		Row row;
	};
	gpu::FrameTimer timer(device);
	std::vector<Live> live(variants.size());
	const auto frame = [&](Live& l, bool counted) -> Result<void>
	{
		QUOKKA_TRY_ASSIGN(timed, timedFrame(device, timer, *l.task, session.framebuffer));
		const runtime::TaskStats& s = l.task->stats();
		l.row.draw_calls = s.heap.draw_calls + s.passes.draws;
		l.row.buckets = s.heap.buckets;
		l.row.atlas_entries = s.heap.atlas_entries;
		l.row.atlas_bytes = s.heap.atlas_bytes;
		l.row.bindless_entries = s.heap.bindless_entries;
		if (counted)
		{
			l.gpu.push_back(timed.timing.ms);
			l.wall.push_back(timed.wall_ms);
			l.encode.push_back(1000.0 * s.encode_ms);
		}
		return {};
	};
	for (size_t i = 0; i < variants.size(); ++i)
	{
		Live& l = live[i];
		l.task = benchTask(session, *variants[i].objects, variants[i].options);
		QUOKKA_TRY(frame(l, false));
		const runtime::TaskStats& s = l.task->stats();
		l.row.place_ms = s.update_ms;
		l.row.place_us_per_object = 1000.0 * s.update_ms / double(variants[i].objects->size());
		if (variants[i].options.path == runtime::RenderPath::Heap && s.heap.objects != variants[i].objects->size())
			return makeError(ErrorCode::Unsupported, "bench textures: the heap holds " +
			                                             std::to_string(s.heap.objects) + " of " +
			                                             std::to_string(variants[i].objects->size()) + " objects");
		QUOKKA_TRY(frame(l, false)); // (the second frame settles what the first deferred)
	}
	for (uint32_t r = 0; r < reps; ++r)
		for (size_t k = 0; k < live.size(); ++k)
			QUOKKA_TRY(frame(live[(r + k) % live.size()], true));
	std::vector<Row> rows;
	for (size_t i = 0; i < live.size(); ++i)
	{
		Row row = live[i].row;
		row.variant = variants[i].name;
		row.gpu_ms = median(live[i].gpu);
		row.frame_ms = median(live[i].wall);
		row.encode_us = median(live[i].encode);
		rows.push_back(row);
	}
	return rows;
}

struct UploadRow
{
	uint32_t textures = 0, size = 0;
	uint32_t placed = 0, refused = 0; ///< textures the atlas took, and those it had no room for
	uint64_t texel_bytes = 0;         ///< of the placed textures
	double wall_ms = 0, gpu_ms = 0;
	uint32_t layers = 0;
};

/// `textures` acquired by a fresh atlas and uploaded in one submission (timed on the wall and, where trusted, the GPU).
Result<UploadRow> measureUpload(gpu::Device& device, const std::vector<adaptive::aval<scene::TextureData>>& textures,
                                const atlas::AtlasOptions& options)
{
	QUOKKA_TRY_ASSIGN(pool, atlas::AtlasPool::create(device, options));
	gpu::FrameTimer timer(device);
	UploadRow row;
	row.textures = uint32_t(textures.size());
	const auto t0 = std::chrono::steady_clock::now();
	for (const auto& t : textures)
	{
		const scene::TextureData& data = t.force();
		row.size = data.width;
		row.texel_bytes += data.rgba8->size();
		QUOKKA_TRY_ASSIGN(placed, pool->acquire(data, scene::SamplerState{}));
		if (!placed)
		{
			// (The atlas is full: the figure is the throughput of what it took, said so in the row.)
			row.refused = uint32_t(textures.size()) - row.placed;
			row.texel_bytes -= data.rgba8->size();
			break;
		}
		++row.placed;
	}
	QUOKKA_TRY_ASSIGN(list, device.beginCommands());
	timer.begin(list);
	QUOKKA_TRY(pool->upload(list));
	timer.end(list);
	QUOKKA_TRY(device.submitAndWait(std::move(list)));
	row.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	QUOKKA_TRY_ASSIGN(timing, timer.resolve());
	row.gpu_ms = timing.source == gpu::TimingSource::Gpu ? timing.gpu_ms : -1.0;
	row.layers = pool->stats().layers[0];
	return row;
}

} // namespace

int runBenchTextures(const BenchOptions& b)
{
	auto device = createBenchDevice(b);
	if (!device.ok())
		return fail(device.error());
	gpu::Device& dev = **device;
	const bool cpu = dev.info().is_cpu;
	const std::vector<uint32_t> counts = !b.objects.empty() ? b.objects
	                                     : cpu              ? std::vector<uint32_t>{1000}
	                                                        : std::vector<uint32_t>{10000, 100000};
	const std::vector<uint32_t> texture_counts = !b.textures.empty() ? b.textures
	                                             : cpu               ? std::vector<uint32_t>{10, 100}
	                                                                 : std::vector<uint32_t>{10, 1000, 10000};
	// Two object lists (shared and own textures) and one task at a time (heap or classic, whichever is larger).
	for (uint32_t n : counts)
		if (Result<void> fits = checkObjectsFit(
		        dev, "bench textures", n, 2 * kUniqueSceneHostBytes + kHeapTaskHostBytes, kClassicTaskDeviceBytes);
		    !fits.ok())
			return fail(fits.error());
	const uint32_t size = b.texture_size ? b.texture_size : cpu ? 64 : 256;
	auto session = BenchSession::create(dev);
	if (!session.ok())
		return fail(session.error());
	const char* timing = dev.info().gpu_timestamps_reliable ? "gpu" : "wall";
	// Room for every texture of the largest count: as many layers as the device allows (the pool clamps).
	atlas::AtlasOptions atlas_options;
	atlas_options.max_layers = 1u << 16;
	const fx::Effect effect = texturedEffect();
	if (!b.json)
		std::printf("quokka bench textures on %s (%s timing), %ux%u textures, median of %u steady frames\n\n  %8s "
		            "%8s %-12s %7s %8s %11s %9s %9s %10s %7s %7s %8s %9s\n",
		            dev.info().name.c_str(), timing, size, size, b.reps, "objects", "textures", "variant", "draws",
		            "buckets", "place us/o", "gpu ms", "wall ms", "encode us", "xshared", "xbound1", "entries",
		            "atlas MB");
	nlohmann::ordered_json rows = nlohmann::ordered_json::array(), uploads = nlohmann::ordered_json::array();
	for (uint32_t t : texture_counts)
	{
		const auto textures = makeTextures(t, size);
		for (uint32_t n : counts)
		{
			const auto shared_objects = makeObjects(n, {textures.front()}, effect);
			const auto objects = makeObjects(n, textures, effect);
			std::vector<Variant> variants;
			for (const char* variant : {"shared", "shared-bound", "atlas", "bindless", "bound", "classic"})
			{
				const std::string v = variant;
				if (!b.path.empty() && (v == "classic") != (b.path == "classic"))
					continue;
				if (v == "bindless" && !dev.features().descriptor_indexing)
					continue; // (the device has no bindless textures)
				runtime::RenderOptions options = runtime::RenderOptions::classic();
				if (v != "classic")
				{
					options.path = runtime::RenderPath::Heap;
					applyHeapFlags(b, options.heap);
					options.heap.textures = v == "bindless"                       ? heap::HeapTextures::Bindless
					                        : v == "bound" || v == "shared-bound" ? heap::HeapTextures::Bound
					                                                              : heap::HeapTextures::Atlas;
					options.heap.atlas_options = atlas_options;
				}
				const bool shared = v == "shared" || v == "shared-bound";
				variants.push_back({v, shared ? &shared_objects : &objects, options});
			}
			auto measured = measureInterleaved(dev, *session, variants, b.reps);
			if (!measured.ok())
				return fail(measured.error());
			double shared_gpu = 0.0, shared_bound_gpu = 0.0;
			for (Row& row : measured.value())
			{
				const std::string& v = row.variant;
				const bool shared = v == "shared" || v == "shared-bound";
				row.objects = n;
				row.textures = shared ? 1 : t;
				if (v == "shared")
					shared_gpu = row.gpu_ms;
				if (v == "shared-bound")
					shared_bound_gpu = row.gpu_ms;
				const double ratio = shared_gpu > 0.0 ? row.gpu_ms / shared_gpu : 0.0;
				const double ratio_bound = shared_bound_gpu > 0.0 ? row.gpu_ms / shared_bound_gpu : 0.0;
				if (!b.json)
					std::printf("  %8u %8u %-12s %7u %8u %11.2f %9.3f %9.3f %10.1f %7.2f %7.2f %8u %9.1f\n", n,
					            row.textures, v.c_str(), row.draw_calls, row.buckets, row.place_us_per_object,
					            row.gpu_ms, row.frame_ms, row.encode_us, ratio, ratio_bound,
					            row.atlas_entries + row.bindless_entries, double(row.atlas_bytes) / double(1 << 20));
				rows.push_back(nlohmann::ordered_json{{"objects", n},
				                                      {"textures", row.textures},
				                                      {"variant", v},
				                                      {"draw_calls", row.draw_calls},
				                                      {"buckets", row.buckets},
				                                      {"place_ms", row.place_ms},
				                                      {"place_us_per_object", row.place_us_per_object},
				                                      {"gpu_ms", row.gpu_ms},
				                                      {"frame_ms", row.frame_ms},
				                                      {"encode_us", row.encode_us},
				                                      {"gpu_over_shared", ratio},
				                                      {"gpu_over_shared_bound", ratio_bound},
				                                      {"atlas_entries", row.atlas_entries},
				                                      {"atlas_bytes", row.atlas_bytes},
				                                      {"bindless_entries", row.bindless_entries}});
			}
		}
		auto up = measureUpload(dev, textures, atlas_options);
		if (!up.ok())
			return fail(up.error());
		const double gb = double(up->texel_bytes) / 1e9;
		uploads.push_back(nlohmann::ordered_json{
		    {"textures", t},
		    {"placed", up->placed},
		    {"refused", up->refused},
		    {"texture_size", size},
		    {"texel_bytes", up->texel_bytes},
		    {"wall_ms", up->wall_ms},
		    {"gpu_ms", up->gpu_ms >= 0.0 ? nlohmann::ordered_json(up->gpu_ms) : nlohmann::ordered_json()},
		    {"wall_gb_per_s", gb / (up->wall_ms / 1000.0)},
		    {"layers", up->layers}});
		if (!b.json)
			std::printf(
			    "  upload: %u textures%s, %.1f MB of texels in %.2f ms (%.2f GB/s wall%s), %u layers\n", up->placed,
			    up->refused ? (" (" + std::to_string(up->refused) + " more refused: the atlas is full)").c_str() : "",
			    double(up->texel_bytes) / 1e6, up->wall_ms, gb / (up->wall_ms / 1000.0),
			    up->gpu_ms >= 0.0 ? (", " + std::to_string(gb / (up->gpu_ms / 1000.0)) + " GB/s GPU").c_str() : "",
			    up->layers);
	}
	if (b.json)
	{
		nlohmann::ordered_json j;
		j["benchmark"] = "textures";
		j["device"] = dev.info().name;
		j["timing_source"] = timing;
		j["reps"] = b.reps;
		j["texture_size"] = size;
		j["rows"] = std::move(rows);
		j["uploads"] = std::move(uploads);
		std::printf("%s\n", j.dump(2).c_str());
	}
	return 0;
}

} // namespace quokka::app
