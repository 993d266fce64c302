// HeapScene: construction, membership and teardown, the heap effects, compaction and the scene's shape. The pooled
// inputs are in input_pool.cpp, buckets and slots in buckets.cpp, the heap objects in heap_object.cpp and
// placement.cpp, update() in heap_update.cpp, upload() in heap_upload.cpp, prepare() and encode() in heap_encode.cpp,
// validateHeap() in heap_diagnostics.cpp.
#include <quokka/base/erase_some.hpp>
#include <quokka/heap/heap_scene.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

#include <absl/cleanup/cleanup.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include "pointer_table.hpp"
#include <quokka/base/assert.hpp>
#include <quokka/base/block_cache.hpp>
#include <quokka/base/clock.hpp>
#include <quokka/base/range_overlay.hpp>
#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/gpu/scatter_copy.hpp>
#include <quokka/heap/chunk_allocator.hpp>
#include <quokka/heap/megacall_scan.hpp>
#include <quokka/inputs/object_inputs.hpp>

#include "attribute_convert.hpp"
#include "findings.hpp"
#include "heap_internal.hpp"

namespace quokka::heap
{

const char* strategyName(DrawStrategy s)
{
	switch (s)
	{
	case DrawStrategy::Auto:
		return "auto";
	case DrawStrategy::Indirect:
		return "indirect";
	case DrawStrategy::Megacall:
		return "megacall";
	}
	return "?";
}

Result<DrawStrategy> parseStrategy(const std::string& name)
{
	if (name == "auto")
		return DrawStrategy::Auto;
	if (name == "indirect")
		return DrawStrategy::Indirect;
	if (name == "megacall")
		return DrawStrategy::Megacall;
	return makeError(ErrorCode::InvalidArgument, "unknown draw strategy '" + name + "' (auto, indirect, megacall)");
}

const char* texturesName(HeapTextures t)
{
	switch (t)
	{
	case HeapTextures::Auto:
		return "auto";
	case HeapTextures::Bindless:
		return "bindless";
	case HeapTextures::Atlas:
		return "atlas";
	case HeapTextures::Bound:
		return "bound";
	}
	return "?";
}

Result<HeapTextures> parseTextures(const std::string& name)
{
	for (HeapTextures t : {HeapTextures::Auto, HeapTextures::Bindless, HeapTextures::Atlas, HeapTextures::Bound})
		if (name == texturesName(t))
			return t;
	return makeError(ErrorCode::InvalidArgument, "unknown texture path '" + name + "' (auto, bindless, atlas, bound)");
}

HeapTextures HeapScene::textures() const
{
	return impl_->texture_path;
}

uint64_t HeapScene::maxChunkBytes() const
{
	return impl_->max_chunk_bytes;
}

bool heapEligible(const scene::RenderObject& object)
{
	if (!object.state.topology.node()->isConstant())
		return false;
	const VkPrimitiveTopology t = object.state.topology.force();
	return t == VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST || t == VK_PRIMITIVE_TOPOLOGY_LINE_LIST ||
	       t == VK_PRIMITIVE_TOPOLOGY_POINT_LIST;
}

Result<const detail::HeapCore::HeapEffect*> detail::HeapCore::heapEffect(const fx::Effect& effect)
{
	if (auto it = heap_effects.find(effect.id()); it != heap_effects.end())
		return &it->second;
	// Compiling in the background: known pending until a compile finished (no request hashed per waiting object).
	const uint64_t done = context->compilesDone();
	if (auto it = pending_effects.find(effect.id()); it != pending_effects.end() && it->second == done)
		return nullptr;
	QUOKKA_TRY_ASSIGN(compiled, context->compiledEffect(effect, outputs, fx::PathVariant::HeapIndirect));
	if (!compiled)
	{
		pending_effects[effect.id()] = done;
		return nullptr;
	}
	pending_effects.erase(effect.id());
	std::vector<std::string> names;
	for (const fx::UniformMember& m : compiled->iface.uniforms)
		names.push_back(m.name);
	inputs::UniformPlan plan(names);
	std::shared_ptr<TextureVariantJob> variant;
	const auto& sampled = compiled->iface.textures;
	if (textures_error.empty() && texture_path != HeapTextures::Bound && !sampled.empty() &&
	    std::all_of(sampled.begin(), sampled.end(),
	                [](const fx::TextureBinding& t) { return t.kind == fx::TexKind::Sampler2D; }))
	{
		// The texture variant: at once, or on a worker (its objects wait for it as for their effect).
		const fx::PathVariant path = texture_path == HeapTextures::Bindless ? fx::PathVariant::HeapIndirectBindless
		                                                                    : fx::PathVariant::HeapIndirectAtlas;
		variant = std::make_shared<TextureVariantJob>();
		context->runJob(
		    variant,
		    [job = variant.get(), &compiler = context->effects(), effect, outputs = outputs, path]() -> Result<void>
		    {
			    Result<fx::CompiledEffectPtr> r = compiler.compile(effect, outputs, path);
			    if (r.ok())
				    job->compiled = std::move(r.value());
			    else
				    job->refused = r.error().message;
			    return {};
		    });
	}
	return &heap_effects.emplace(effect.id(), HeapEffect{std::move(compiled), std::move(plan), std::move(variant)})
	            .first->second;
}

Result<atlas::AtlasPool*> detail::HeapCore::atlasPool()
{
	if (!atlas_pool)
	{
		QUOKKA_TRY_ASSIGN(made, atlas::AtlasPool::create(context->device(), options.atlas_options));
		QUOKKA_TRY_ASSIGN(sampler, context->sampler({scene::Filter::Linear, scene::AddressMode::ClampToEdge, false}));
		atlas_pool = std::move(made);
		atlas_sampler = std::move(sampler);
	}
	return atlas_pool.get();
}

Result<detail::BindlessTextures*> detail::HeapCore::bindlessTextures()
{
	if (!bindless)
	{
		const uint32_t capacity = std::min(options.bindless_capacity, device->info().max_bindless_textures);
		QUOKKA_TRY_ASSIGN(made, BindlessTextures::create(*context, std::max(capacity, 1u)));
		bindless = std::move(made);
	}
	return bindless.get();
}

void detail::HeapCore::wait(const Ref<HeapObject>& h)
{
	waiting.push_back(h);
}

void detail::HeapCore::compact()
{
	if (!std::exchange(compaction_check, false))
		return;
	for (uint32_t c = 0; c < chunks.size(); ++c)
	{
		Chunk& chunk = *chunks[c];
		if (!chunk.allocator.shouldCompact(options.tuning.compaction_floor))
			continue;
		if (!chunk.buffer() || !chunk.moves.empty())
		{
			compaction_check = true; // (not yet: looked at again next frame)
			continue;
		}
		std::vector<ChunkAllocator::Move> moves = chunk.allocator.planCompaction();
		if (moves.empty())
			continue;
		blocks_changed = upload_chunks = true;
		forEachEntry(
		    [&](Entry& e)
		    {
			    if (e.chunk != c)
				    return;
			    e.ref = ChunkAllocator::remap(moves, e.ref);
			    if (DerivedEntry* d = asDerived(&e))
				    gpuDerive().moved(*d);
		    });
		for (Bucket* b : bucket_order)
		{
			if (b->chunk != c)
				continue;
			for (const auto& s : b->slots)
			{
				for (HeapObject* h : s->records)
				{
					if (h->owned)
					{
						// (A placed object's private block is in its bucket's chunk, and only placed objects own one.)
						h->owned->block = ChunkAllocator::remap(moves, h->owned->block);
						for (uint32_t i = 0; i < h->owned->count; ++i)
							h->owned->parts[i].ref = ChunkAllocator::remap(moves, h->owned->parts[i].ref);
					}
					h->rewrite();
				}
				markSlot(s.get());
			}
		}
		chunk.moves = std::move(moves);
		++stats->compactions;
	}
}

detail::HeapCore::Shape detail::HeapCore::sumShape() const
{
	Shape s;
	for (const Bucket* b : bucket_order)
		for (const auto& slot : b->slots)
		{
			++s.slots;
			++(slot->strategy == DrawStrategy::Megacall ? s.megacall_slots : s.indirect_slots);
		}
	s.chunks = uint32_t(chunks.size());
	for (const auto& c : chunks)
	{
		s.arena_bytes += c->allocator.cursor();
		s.live_bytes += c->allocator.liveBytes();
	}
	return s;
}

HeapScene::HeapScene(inputs::Context& context, scene::FramebufferSignature signature, HeapOptions options)
    : impl_(std::make_unique<detail::HeapCore>()), options_(options)
{
	detail::HeapCore& p = *impl_;
	p.context = &context;
	p.signature = std::move(signature);
	p.outputs.colors = p.signature.colorNames();
	p.options = options;
	p.derived.setGpuRecipes(options.gpu_derived);
	p.stats = &stats_;
	// The draw headers and records the heap stages through the context's ring.
	context.staging().setScatterAbove(options.tuning.ring_scatter_above);
	const uint64_t range = context.device().info().max_storage_buffer_range;
	p.max_chunk_bytes = options.max_chunk_bytes ? options.max_chunk_bytes : std::min<uint64_t>(range, 256ull << 20);
	p.max_chunk_bytes = std::max<uint64_t>(16, std::min<uint64_t>(p.max_chunk_bytes, range) & ~uint64_t(15));
	p.device = &context.device();
	p.pages.bind(context.device());
	// Writes in place where the host can write (nearly) all of the device's memory: resizable BAR, unified memory.
	// (With a 256 MiB BAR window the arena would not fit in it.)
	const gpu::DeviceInfo& info = context.device().info();
	if (options.tuning.write_in_place && info.host_visible_device_local_bytes > 0 &&
	    2 * info.host_visible_device_local_bytes >= info.device_local_bytes)
		p.domain = gpu::MemoryDomain::DeviceMapped;
	p.routing.emplace(context, p.signature, options.draw);
	const bool bindless = context.device().features().descriptor_indexing;
	p.texture_path = options.textures;
	if (p.texture_path == HeapTextures::Auto)
		p.texture_path = bindless ? HeapTextures::Bindless : HeapTextures::Atlas;
	if (p.texture_path == HeapTextures::Bindless && !bindless)
		p.textures_error = "bindless textures (HeapOptions::textures) need descriptor indexing, which " +
		                   context.device().info().name + " lacks (use auto, atlas or bound)";
}

HeapScene::HeapScene(inputs::Context& context, scene::FramebufferSignature signature,
                     adaptive::aset<RenderObjectPtr> objects, HeapOptions options)
    : HeapScene(context, std::move(signature), options)
{
	impl_->reader = objects.getDeltaReader();
}

void HeapScene::add(RenderObjectPtr object)
{
	if (impl_->reader)
	{
		impl_->pushed_to_set_scene = true;
		return;
	}
	if (object)
		impl_->pending_adds.push_back({std::move(object), impl_->next_serial++});
}

void HeapScene::remove(const RenderObjectPtr& object)
{
	if (impl_->reader)
	{
		impl_->pushed_to_set_scene = true;
		return;
	}
	if (object)
		impl_->pending_removals.emplace_back(object.get(), impl_->next_serial++);
}

HeapScene::~HeapScene()
{
	// The objects leave their input nodes (which outlive the scene) and give nothing else back: the pool, the chunks
	// and the buckets are dropped whole below (the core's members), each entry once, however many objects shared it.
	impl_->closing = true;
	impl_->objects.forEach([](HeapObject* h) { h->detach(); });
	impl_->objects.clear();
	for (const auto& c : impl_->chunks)
		c->allocator.reset(); // (dropped with the scene: no leak to report)
	impl_->dirty_objects.clear();
	impl_->dirty_entries.clear();
}

namespace
{
/// Dismantling: hands bucket `cursor`'s host arrays to the device's reaper thread (freed there once the frames in
/// flight completed) and advances the cursor. True while buckets remain.
bool releaseBucketArrays(detail::HeapCore& p, size_t& cursor)
{
	if (cursor >= p.bucket_order.size())
		return false;
	Bucket& b = *p.bucket_order[cursor++];
	auto words = std::make_shared<std::vector<std::vector<uint32_t>>>();
	auto records = std::make_shared<std::vector<std::vector<HeapObject*>>>();
	words->push_back(std::move(b.headers.words));
	for (const std::unique_ptr<Slot>& s : b.slots)
	{
		words->push_back(std::move(s->commands.words));
		words->push_back(std::move(s->mrecords.words));
		records->push_back(std::move(s->records));
		s->commands.words.clear(); // (moved from: empty now, whatever the library left)
		s->mrecords.words.clear();
		s->records.clear();
	}
	b.headers.words.clear();
	p.context->device().destroyOffThread(
	    [words, records]
	    {
		    std::vector<std::vector<uint32_t>>().swap(*words);
		    std::vector<std::vector<HeapObject*>>().swap(*records);
	    });
	return cursor < p.bucket_order.size();
}

/// Dismantling: frees `storage` on the device's reaper thread.
void freeOffThread(detail::HeapCore& p, std::vector<std::shared_ptr<void>> storage)
{
	auto held = std::make_shared<std::vector<std::shared_ptr<void>>>(std::move(storage));
	p.context->device().destroyOffThread([held] { std::vector<std::shared_ptr<void>>().swap(*held); });
}

/// A container's storage, moved out (it is left empty, without storage). Its elements are destroyed here first: they
/// may hold adaptive objects, which only the owner thread may release.
template <typename C>
std::shared_ptr<void> moveOut(C& c)
{
	c.clear();
	auto out = std::make_shared<C>(std::move(c));
	c = C();
	return out;
}
} // namespace

bool HeapScene::dismantle(std::chrono::steady_clock::time_point deadline)
{
	detail::HeapCore& p = *impl_;
	// From now on objects leave without giving anything back one by one (see ~HeapScene).
	p.closing = true;
	// Table slots (or map entries) per look at the clock: ~256 objects are ~0.1 ms on a fast core.
	constexpr size_t kSlice = 256;
	// True when the step is done and the next may start: before the deadline, or past it while this call has freed
	// nothing yet (every call frees something until all is gone; a step found empty does not count).
	const size_t before = dismantleLeft();
	auto drained = [&](auto&& slice)
	{
		while (slice())
			if (std::chrono::steady_clock::now() >= deadline)
				return false;
		p.dismantle_cursor = 0;
		++p.dismantle_step;
		return std::chrono::steady_clock::now() < deadline || dismantleLeft() == before;
	};
	size_t& cursor = p.dismantle_cursor;
	switch (p.dismantle_step)
	{
	case 0:
		if (!drained([&] { return p.objects.drain(cursor, kSlice); }))
			return false;
		[[fallthrough]];
	case 1:
		// Objects whose inputs changed while they were placed: released with the objects' last references.
		p.dirty_objects.clear();
		p.dirty_entries.clear();
		if (!drained([&] { return p.pool.drain(cursor, kSlice); }))
			return false;
		[[fallthrough]];
	case 2:
		if (!drained([&] { return eraseSome(p.constants, p.constants_cursor, kSlice); }))
			return false;
		[[fallthrough]];
	case 3:
		if (!drained([&] { return p.gpu_derive && p.gpu_derive->drain(kSlice); }))
			return false;
		[[fallthrough]];
	case 4:
		if (!drained([&] { return p.derived.drop(kSlice); }))
			return false;
		[[fallthrough]];
	case 5:
		// The large arrays, a slice each: the GPU-derive records, then the chunks one by one (each frees its device
		// memory and its allocator's bookkeeping), then the free staging pages.
		if (!drained(
		        [&]
		        {
			        if (p.gpu_derive)
				        freeOffThread(p, {p.gpu_derive->releaseHostArrays()});
			        p.gpu_derive.reset();
			        return false;
		        }))
			return false;
		[[fallthrough]];
	case 6:
		if (!drained(
		        [&]
		        {
			        if (p.chunks.empty())
				        return false;
			        p.chunks.back()->allocator.reset(); // (dropped with the scene: no leak to report)
			        p.chunks.pop_back();
			        return !p.chunks.empty();
		        }))
			return false;
		[[fallthrough]];
	case 7:
		if (!drained([&] { return p.pages.dropFreePage(); }))
			return false;
		[[fallthrough]];
	case 8:
		// The buckets' host arrays — draw headers, each slot's records, commands and megacall records: tens of bytes
		// per object that held one, hundreds of MiB at 10^7 objects — one bucket per slice, freed on the device's
		// reaper thread instead of on the frame's (teardown's frame-path CPU at 10^6 on the H100: 1.5–1.9 s before,
		// 1.1–1.4 s after). (The buckets themselves go with the scene, empty.)
		if (!drained([&] { return releaseBucketArrays(p, cursor); }))
			return false;
		[[fallthrough]];
	case 9:
		// The emptied tables' and queues' storage — the objects' and the pool's tables, the constants, the placement
		// index, the derived values' tables, the frame queues: capacity for the scene's largest frame, hundreds of MiB
		// at 10^7 objects — freed on the reaper thread too, instead of by the scene's destruction on the frame's.
		if (!drained(
		        [&]
		        {
			        freeOffThread(p, {p.objects.releaseStorage(), p.pool.releaseStorage(), moveOut(p.constants),
			                          moveOut(p.uniform_chunks), p.derived.releaseStorage(), moveOut(p.pending_adds),
			                          moveOut(p.frame_adds), moveOut(p.pending_removals), moveOut(p.frame_removals),
			                          moveOut(p.dirty_objects), moveOut(p.dirty_entries), moveOut(p.doomed_entries),
			                          moveOut(p.waiting)});
			        p.constants_cursor.reset();
			        return false;
		        }))
			return false;
		[[fallthrough]];
	default:
		return true;
	}
}

size_t HeapScene::dismantleLeft() const
{
	const detail::HeapCore& p = *impl_;
	const size_t buckets_left =
	    p.dismantle_step < 8
	        ? p.bucket_order.size()
	        : (p.dismantle_step == 8 ? p.bucket_order.size() - std::min(p.dismantle_cursor, p.bucket_order.size()) : 0);
	const size_t storage_left = p.dismantle_step <= 9 ? 1 : 0; // (step 9: the tables' storage)
	return p.objects.size() + p.pool.size() + p.constants.size() +
	       (p.gpu_derive ? 1 + p.gpu_derive->constituents() : 0) + p.derived.size() + p.chunks.size() +
	       p.pages.freePages() + buckets_left + storage_left;
}

size_t HeapScene::objectCount() const
{
	return impl_->objects.size();
}

} // namespace quokka::heap
