// heap_diagnostics.cpp — HeapScene::validateHeap: the heap's invariants checked on the CPU (allocators, pool, placement
// index, objects, emit sums) and against what the GPU holds (allocation headers, draws replayed, headers, commands,
// records, megacall scans, the probe and triangle coherence); and the tests' hook that corrupts a draw header.
#include "findings.hpp"
#include "heap_internal.hpp"
#include "heap_test_access.hpp"

#include <cmath>

#include <quokka/fx/megacall_glsl.hpp>

namespace quokka::heap
{

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] diagnostics
// ---------------------------------------------------------------------------------------------------------------------

namespace
{

/// validateHeap probes every emit of a megacall slot up to this many (32 bytes of probe results each: 32 MiB).
constexpr uint64_t kExhaustiveProbeEmits = 1u << 20;

Result<std::vector<uint32_t>> readWords(gpu::Device& device, const gpu::Buffer& buffer, uint64_t words)
{
	std::vector<uint32_t> out(words, 0);
	if (words == 0)
		return out;
	QUOKKA_TRY_ASSIGN(bytes, device.readBuffer(buffer, 0, words * 4));
	std::memcpy(out.data(), bytes.data(), words * 4);
	return out;
}

} // namespace

namespace
{

/// One run of validateHeap: each check is a named step over the scene's state, adding to one Findings.
class Validator
{
public:
	Validator(detail::HeapCore& p) : p_(p), device_(p.context->device()) {}

	Result<std::vector<std::string>> run()
	{
		QUOKKA_TRY(device_.waitIdle());
		// --- CPU: allocators, pools, objects, slots.
		checkTables();
		for (const HeapObject* h : placed_)
			checkObject(*h);
		checkEntries();
		checkPlacementIndex();
		checkEmitSums();
		checkAtlas();
		// --- GPU: allocation headers, draw headers, commands and records as uploaded; the megacall scans and search.
		for (size_t c = 0; c < p_.chunks.size(); ++c)
			QUOKKA_TRY(checkArena(uint32_t(c)));
		for (const Bucket* b : p_.bucket_order)
			QUOKKA_TRY(checkBucket(*b));
		return f_.finish();
	}

private:
	/// The chunk allocators and the two tables; collects the placed objects.
	void checkTables()
	{
		for (size_t c = 0; c < p_.chunks.size(); ++c)
			if (auto v = p_.chunks[c]->allocator.validate(); !v.ok())
				f_.add("allocator", "chunk " + std::to_string(c) + ": " + v.error().message);
		if (const std::string table = p_.pool.check(); !table.empty())
			f_.add("pool", "the pool table: " + table);
		if (const std::string table = p_.objects.check(); !table.empty())
			f_.add("object", "the object table: " + table);
		p_.objects.forEach(
		    [&](const HeapObject* h)
		    {
			    if (h->placed)
				    placed_.push_back(h);
			    else if (h->owned)
				    f_.add("object", inputs::objectName(h->object()) + " is not placed but owns a private block");
		    });
	}

	/// A placed object: bucket and slot, its private block, where its inputs live, its header words and its record.
	void checkObject(const HeapObject& h)
	{
		const std::string name = inputs::objectName(h.object());
		for (const Entry* e : h.entries)
			++uses_[e];
		if (h.indices)
			++uses_[h.indices];
		if (!h.bucket || !h.slot)
		{
			f_.add("object", name + " is placed but has no bucket or slot");
			return;
		}
		const Bucket& b = *h.bucket;
		if (h.owned)
			checkPrivateBlock(h, name, b);
		for (const Entry* e : h.entries)
			if (e->priv && (!h.owned || e < &h.owned->parts[0] || e >= &h.owned->parts[0] + h.owned->count))
				f_.add("object", name + ": a private input that is not one of its own parts");
		for (const Entry* e : h.entries)
			if (e->chunk != b.chunk)
				f_.add("object", name + ": an input lives in chunk " + std::to_string(e->chunk) + ", its bucket in " +
				                     std::to_string(b.chunk));
		const size_t base = size_t(h.header) * b.header_words;
		for (size_t i = 0; i < h.entries.size(); ++i)
			if ((b.headers.words[base + i] & ~15u) != h.entries[i]->ref)
				f_.add("header", name + ": word " + std::to_string(i) + " is " +
				                     std::to_string(b.headers.words[base + i]) + ", its input is at " +
				                     std::to_string(h.entries[i]->ref));
		if (h.record >= h.slot->records.size() || h.slot->records[h.record] != &h)
			f_.add("record", name + ": its record " + std::to_string(h.record) + " does not point back at it");
		checkAtlasUse(h, name, b, base);
	}

	/// An object of an atlas bucket holds an entry per texture of its effect, and its header carries them.
	void checkAtlasUse(const HeapObject& h, const std::string& name, const Bucket& b, size_t base)
	{
		const size_t entries = h.atlasEntries();
		atlas_objects_ += entries != 0;
		atlas_refused_ += h.atlasRefused();
		if (b.atlas != (entries != 0) || (b.atlas && entries != b.indirect_effect->iface.textures.size()))
			f_.add("atlas", name + ": holds " + std::to_string(entries) + " atlas entries in " +
			                    (b.atlas ? "an atlas bucket" : "a bucket of bound textures"));
		else if (b.atlas)
			for (size_t i = 0; i < entries; ++i)
				for (size_t k = 0; k < 4; ++k)
					if (b.headers.words[base + h.entries.size() + 2 + 4 * i + k] != h.atlasEntry(i)[k])
						f_.add("atlas", name + ": header word " + std::to_string(h.entries.size() + 2 + 4 * i + k) +
						                    " is not its atlas entry's");
		// The same for a bindless bucket and its table entries.
		const std::span<const uint32_t> held = h.bindlessEntries();
		bindless_objects_ += !held.empty();
		bindless_refused_ += h.bindlessRefused();
		for (uint32_t e : held)
		{
			if (e >= bindless_uses_.size())
				bindless_uses_.resize(e + 1);
			++bindless_uses_[e];
		}
		if (b.bindless != !held.empty() || (b.bindless && held.size() != b.indirect_effect->iface.textures.size()))
			f_.add("bindless", name + ": holds " + std::to_string(held.size()) + " bindless entries in " +
			                       (b.bindless ? "a bindless bucket" : "a bucket of bound textures"));
		else
			for (size_t i = 0; i < held.size(); ++i)
				if (b.headers.words[base + h.entries.size() + 2 + i] != held[i])
					f_.add("bindless", name + ": header word " + std::to_string(h.entries.size() + 2 + i) +
					                       " is not its bindless entry");
	}

	/// The atlas's packings and refcounts, and the scene's counts of objects drawn through it.
	void checkAtlas()
	{
		if (p_.atlas_pool)
			for (const std::string& line : p_.atlas_pool->validate())
				f_.add("atlas", line);
		if (atlas_objects_ != p_.atlas_objects || atlas_refused_ != p_.atlas_refused)
			f_.add("atlas", std::to_string(atlas_objects_) + " placed objects hold atlas entries and " +
			                    std::to_string(atlas_refused_) + " were refused, but the scene counts " +
			                    std::to_string(p_.atlas_objects) + " and " + std::to_string(p_.atlas_refused));
		if (p_.bindless)
			for (const std::string& line : p_.bindless->validate(bindless_uses_))
				f_.add("bindless", line);
		if (bindless_objects_ != p_.bindless_objects || bindless_refused_ != p_.bindless_refused)
			f_.add("bindless", std::to_string(bindless_objects_) + " placed objects hold bindless entries and " +
			                       std::to_string(bindless_refused_) + " were refused, but the scene counts " +
			                       std::to_string(p_.bindless_objects) + " and " + std::to_string(p_.bindless_refused));
	}

	/// The private block: its parts tile it in order, each used once by this object, in its bucket's chunk.
	void checkPrivateBlock(const HeapObject& h, const std::string& name, const Bucket& b)
	{
		const PrivateSet& own = *h.owned;
		if (own.chunk != b.chunk)
			f_.add("object", name + ": its private block lives in chunk " + std::to_string(own.chunk) +
			                     ", its bucket in " + std::to_string(b.chunk));
		else if (p_.chunks[own.chunk]->allocator.blockBytes(own.block) != own.bytes)
			f_.add("pool", name + ": its private block at offset " + std::to_string(own.block) + " is " +
			                   std::to_string(p_.chunks[own.chunk]->allocator.blockBytes(own.block)) +
			                   " bytes, its parts need " + std::to_string(own.bytes));
		uint64_t at = own.block;
		for (uint32_t i = 0; i < own.count; ++i)
		{
			const PrivateSet::Part& part = own.parts[i];
			if (part.ref != at || part.chunk != own.chunk || !part.priv || part.refcount != 1)
				f_.add("pool", name + ": private part " + std::to_string(i) + " at offset " + std::to_string(part.ref) +
				                   " does not follow the block's layout (expected " + std::to_string(at) + ")");
			at += align16(16ull + part.data_bytes);
			const size_t n = std::count(h.entries.begin(), h.entries.end(), &part) + (h.indices == &part);
			if (n != 1)
				f_.add("pool",
				       name + ": private part " + std::to_string(i) + " is used " + std::to_string(n) + " times");
		}
		for (uint32_t i = own.first_uniform; i < own.count; ++i)
		{
			const PrivateSet::Part& part = own.parts[i];
			if (part.kind != Entry::kUniform)
				f_.add("pool", name + ": private part " + std::to_string(i) + " is not a uniform");
			else if (p_.pool.find(own.uniformKey(i)))
				f_.add("pool", name + ": private uniform part " + std::to_string(i) +
				                   " beside a pooled entry of the same value (it should have been re-placed)");
		}
		if (at != uint64_t(own.block) + own.bytes)
			f_.add("pool", name + ": its private parts cover " + std::to_string(at - own.block) + " of " +
			                   std::to_string(own.bytes) + " block bytes");
	}

	/// Every pooled entry: as many users as its reference count, a block of the size its data needs.
	void checkEntries()
	{
		p_.forEachEntry(
		    [&](const Entry& entry)
		    {
			    const Entry* e = &entry;
			    const uint32_t n = uses_.count(e) ? uses_[e] : 0;
			    if (n != e->refcount)
				    f_.add("pool", "an entry at chunk " + std::to_string(e->chunk) + " offset " +
				                       std::to_string(e->ref) + " has refcount " + std::to_string(e->refcount) +
				                       " but " + std::to_string(n) + " users");
			    const uint64_t block = p_.chunks[e->chunk]->allocator.blockBytes(e->ref);
			    if (block != align16(16ull + e->data_bytes))
				    f_.add("pool", "the allocation at chunk " + std::to_string(e->chunk) + " offset " +
				                       std::to_string(e->ref) + " is " + std::to_string(block) +
				                       " bytes, its entry needs " + std::to_string(align16(16ull + e->data_bytes)));
		    });
	}

	/// The placement index: a listed node's mask has bit c ⇔ chunk c holds an entry for the node, and exactly the
	/// entries of listed nodes are marked.
	void checkPlacementIndex()
	{
		absl::flat_hash_map<const void*, uint64_t> held;
		p_.pool.forEach(
		    [&](const PooledEntry& e)
		    {
			    const UniformEntry* u = asUniform(&e);
			    if (!u || !u->placementIndexed())
				    return;
			    if (u->indexed != p_.uniform_chunks.contains(e.key.node))
				    f_.add("pool", std::string("the uniform entry at chunk ") + std::to_string(e.chunk) + " offset " +
				                       std::to_string(e.ref) +
				                       (u->indexed ? " is marked listed but its node is not"
				                                   : " is not marked listed but its node is"));
			    if (u->indexed)
				    held[e.key.node] |= uint64_t(1) << e.chunk;
		    });
		if (held != p_.uniform_chunks)
			f_.add("pool", "the uniform placement index lists " + std::to_string(p_.uniform_chunks.size()) +
			                   " nodes, the pool holds " + std::to_string(held.size()) + " (or their chunks differ)");
	}

	/// Each slot's emit sum is its records' emits.
	void checkEmitSums()
	{
		for (const Bucket* b : p_.bucket_order)
			for (const auto& sp : b->slots)
			{
				const Slot& s = *sp;
				uint64_t emits = 0;
				for (const HeapObject* h : s.records)
					emits += h->emits();
				if (emits != s.emit_sum)
					f_.add("slot", "bucket " + std::to_string(b->serial) + ": emit sum " + std::to_string(s.emit_sum) +
					                   " but its records emit " + std::to_string(emits));
			}
	}

	/// Chunk `c` as the GPU holds it: every allocation header and finite floats, then every draw replayed.
	Result<void> checkArena(uint32_t c)
	{
		const Chunk& chunk = *p_.chunks[c];
		if (!chunk.buffer() || chunk.allocator.cursor() == 0)
			return {};
		QUOKKA_TRY_ASSIGN(arena, readWords(device_, *chunk.buffer(), chunk.allocator.cursor() / 4));
		auto check = [&](const Entry& e) { checkAllocation(c, arena, e); };
		p_.forEachEntry(check);
		for (const HeapObject* h : placed_)
			if (h->owned)
				for (uint32_t i = 0; i < h->owned->count; ++i)
					check(h->owned->parts[i]);
		simulateDraws(c, arena);
		return {};
	}

	void checkAllocation(uint32_t c, const std::vector<uint32_t>& arena, const Entry& e)
	{
		if (e.chunk != c)
			return;
		const uint32_t w = e.ref / 4;
		const uint32_t want_type = e.kind == Entry::kIndex       ? kTypeIndex
		                           : e.kind == Entry::kAttribute ? kTypeAttribute
		                                                         : kTypeUniform;
		if (arena[w] != want_type || arena[w + 1] != e.elements ||
		    arena[w + 2] != (e.elements ? e.data_bytes / e.elements : 0))
			f_.add("arena", "chunk " + std::to_string(c) + " offset " + std::to_string(e.ref) +
			                    ": allocation header {" + std::to_string(arena[w]) + ", " +
			                    std::to_string(arena[w + 1]) + ", " + std::to_string(arena[w + 2]) + "} differs");
		if (e.kind != Entry::kIndex && e.type.scalar == fx::Scalar::F32)
			for (uint32_t k = 0; k < e.data_bytes / 4; ++k)
			{
				float v;
				std::memcpy(&v, &arena[w + 4 + k], 4);
				if (!std::isfinite(v))
				{
					f_.add("arena", "chunk " + std::to_string(c) + " offset " + std::to_string(e.ref) +
					                    ": a non-finite float at element word " + std::to_string(k));
					break;
				}
			}
	}

	/// simulateDraws: replays every draw's vertex fetches from the uploaded indices — each index range inside its
	/// allocation, every attribute element a vertex or instance reads inside the attribute's allocation.
	void simulateDraws(uint32_t c, const std::vector<uint32_t>& arena)
	{
		for (const Bucket* b : p_.bucket_order)
		{
			if (b->chunk != c)
				continue;
			for (const auto& sp : b->slots)
				for (const HeapObject* h : sp->records)
					if (h->count() && h->instances())
						simulateDraw(*b, *h, arena);
		}
	}

	void simulateDraw(const Bucket& b, const HeapObject& h, const std::vector<uint32_t>& arena)
	{
		const std::string name = inputs::objectName(h.object());
		int64_t max_vertex = int64_t(h.draw.first) + h.count() - 1;
		if (h.draw.indexed)
		{
			if (!h.indices)
				return;
			const uint64_t first = (h.indices->ref + 16) / 4 + uint64_t(h.draw.first);
			if (first + h.count() > (uint64_t(h.indices->ref) + 16 + h.indices->data_bytes) / 4)
			{
				f_.add("simulate", name + ": indices past its index allocation");
				return;
			}
			uint32_t m = 0;
			for (uint32_t i = 0; i < h.count(); ++i)
				m = std::max(m, arena[first + i]);
			max_vertex = int64_t(m) + h.draw.base_vertex;
		}
		const uint64_t max_instance = uint64_t(h.draw.first_instance) + h.instances() - 1;
		const uint32_t hdr = h.header * b.header_words;
		for (size_t i = 0; i < h.entries.size(); ++i)
		{
			const Entry* e = h.entries[i];
			if (e->kind != Entry::kAttribute)
				continue;
			const bool per_instance = (b.headers.words[hdr + i] & fx::kHeapPerInstanceBit) != 0;
			const uint64_t need = per_instance ? max_instance : uint64_t(std::max<int64_t>(max_vertex, 0));
			if (max_vertex < 0 || need >= e->elements)
				f_.add("simulate", name + ": reads element " + std::to_string(need) + " of an attribute of " +
				                       std::to_string(e->elements));
		}
	}

	/// A bucket's draw headers on the GPU against the host shadow (live headers only), then each slot.
	Result<void> checkBucket(const Bucket& b)
	{
		if (!b.headers.buffer)
			return {};
		QUOKKA_TRY_ASSIGN(gpu_headers, readWords(device_, *b.headers.buffer, b.headers.words.size()));
		std::vector<bool> live(b.header_count, true);
		for (uint32_t free_header : b.free_headers)
			live[free_header] = false;
		for (uint32_t hdr = 0; hdr < b.header_count; ++hdr)
			for (uint32_t k = 0; live[hdr] && k < b.header_words; ++k)
			{
				const size_t w = size_t(hdr) * b.header_words + k;
				if (gpu_headers[w] != b.headers.words[w])
				{
					f_.add("header", "bucket " + std::to_string(b.serial) + " header " + std::to_string(hdr) +
					                     " word " + std::to_string(k) + " is " + std::to_string(gpu_headers[w]) +
					                     " on the GPU, " + std::to_string(b.headers.words[w]) + " expected");
					break;
				}
			}
		for (const auto& sp : b.slots)
		{
			const std::string where = "bucket " + std::to_string(b.serial) + " slot";
			if (sp->strategy == DrawStrategy::Indirect)
				QUOKKA_TRY(checkIndirect(*sp, where));
			else
				QUOKKA_TRY(checkMegacall(b, *sp, where));
		}
		return {};
	}

	/// An indirect slot: its commands and draw count on the GPU are the slot's.
	Result<void> checkIndirect(const Slot& s, const std::string& where)
	{
		if (!s.commands.buffer || !s.draw_count.buffer)
			return {};
		QUOKKA_TRY_ASSIGN(cmds, readWords(device_, *s.commands.buffer, s.commands.words.size()));
		QUOKKA_TRY_ASSIGN(count, readWords(device_, *s.draw_count.buffer, 1));
		if (cmds != s.commands.words)
			f_.add("commands", where + ": the indirect commands on the GPU differ from the slot's");
		if (count[0] != s.records.size())
			f_.add("commands", where + ": draw count " + std::to_string(count[0]) + ", " +
			                       std::to_string(s.records.size()) + " records");
		return {};
	}

	/// A megacall slot: records on the GPU, the scan (checkScan), the vertex shaders' record search against its CPU
	/// replay (probeSlot) and triangle coherence.
	Result<void> checkMegacall(const Bucket& b, const Slot& s, const std::string& where)
	{
		if (!s.mrecords.buffer || !s.tiles || !s.args || !p_.scanner)
			return {};
		QUOKKA_TRY_ASSIGN(recs, readWords(device_, *s.mrecords.buffer, s.mrecords.words.size()));
		for (size_t r = 0; r < s.records.size(); ++r)
			for (uint32_t k = 1; k < fx::kRecordWords; ++k)
				if (recs[r * fx::kRecordWords + k] != s.mrecords.words[r * fx::kRecordWords + k])
				{
					f_.add("records", where + " record " + std::to_string(r) + " word " + std::to_string(k) +
					                      " differs on the GPU");
					break;
				}
		const uint32_t tiles = tileCapacityBound(s.emit_sum);
		QUOKKA_TRY_ASSIGN(tile_words, readWords(device_, *s.tiles, std::min<uint64_t>(tiles, s.tiles->size() / 4)));
		QUOKKA_TRY_ASSIGN(args, readWords(device_, *s.args, 4));
		for (const std::string& line : checkScan(recs, tile_words, args))
			f_.add("scan", where + ": " + line);
		if (s.emit_sum == 0)
			return {};
		ProbeDesc probe;
		probe.records = s.mrecords.buffer.get();
		probe.record_count = uint32_t(s.records.size());
		probe.tiles = s.tiles.get();
		probe.arena = p_.chunks[b.chunk]->buffer().get();
		// Every emit (and so every primitive's coherence) up to 2^20 emits per slot; past that the record boundaries
		// and 2,048 random emits, with coherence checked per record below.
		probe.all_emits = s.emit_sum <= kExhaustiveProbeEmits;
		probe.primitive_vertices = s.prim;
		probe.random_emits = 2048;
		probe.seed = uint32_t(b.serial + 1);
		QUOKKA_TRY_ASSIGN(report, p_.scanner->probeSlot(probe));
		if (report.mismatch_count)
			f_.add("probe", where + ": probeBinarySearch found " + std::to_string(report.mismatch_count) + " of " +
			                    std::to_string(report.probed) +
			                    " emits where the GPU search and the CPU replay disagree (first: emit " +
			                    std::to_string(report.mismatches.front().emit) + ")");
		if (report.incoherent_primitives)
			f_.add("triangles", where + ": " + std::to_string(report.incoherent_primitives) + " of " +
			                        std::to_string(report.primitives_checked) +
			                        " primitives do not come from one record, one instance and consecutive vertices "
			                        "(first at emit " +
			                        std::to_string(report.first_incoherent_emit) + ")");
		// Triangle coherence: the emits of one primitive come from one record and one instance.
		for (size_t r = 0; r < s.records.size(); ++r)
		{
			const uint32_t n = recs[r * fx::kRecordWords + 3];
			if (n % s.prim != 0)
				f_.add("triangles", where + " record " + std::to_string(r) + ": " + std::to_string(n) +
				                        " vertices per instance, not whole primitives of " + std::to_string(s.prim));
		}
		return {};
	}

	detail::HeapCore& p_;
	gpu::Device& device_;
	detail::Findings f_;
	std::vector<const HeapObject*> placed_;
	std::unordered_map<const Entry*, uint32_t> uses_;
	uint32_t atlas_objects_ = 0, atlas_refused_ = 0;
	uint32_t bindless_objects_ = 0, bindless_refused_ = 0;
	std::vector<uint32_t> bindless_uses_; ///< holders per bindless entry, as the objects count them
};

} // namespace

Result<std::vector<std::string>> HeapScene::validateHeap()
{
	Validator validator(*impl_);
	return validator.run();
}

Result<void> detail::HeapTestAccess::corruptDrawHeader(HeapScene& scene, uint32_t word, uint32_t value)
{
	detail::HeapCore& p = *scene.impl_;
	if (p.bucket_order.empty() || !p.bucket_order.front()->headers.buffer)
		return makeError(ErrorCode::InvalidArgument, "corruptDrawHeader: no uploaded bucket");
	const gpu::BufferHandle& buffer = p.bucket_order.front()->headers.buffer;
	if (uint64_t(word) * 4 + 4 > buffer->size())
		return makeError(ErrorCode::InvalidArgument, "corruptDrawHeader: word outside the header buffer");
	return p.context->device().uploadBuffer(*buffer, uint64_t(word) * 4, &value, 4);
}

Result<std::vector<std::vector<std::byte>>> detail::HeapTestAccess::arenaBytes(HeapScene& scene)
{
	detail::HeapCore& p = *scene.impl_;
	std::vector<std::vector<std::byte>> out;
	for (const std::unique_ptr<Chunk>& c : p.chunks)
	{
		const uint64_t bytes = c->allocator.cursor();
		if (bytes == 0 || !c->buffer())
		{
			out.emplace_back();
			continue;
		}
		QUOKKA_TRY_ASSIGN(data, p.context->device().readBuffer(*c->buffer(), 0, bytes));
		out.push_back(std::move(data));
	}
	return out;
}

} // namespace quokka::heap
