// heap_memory.cpp — HeapScene::hostMemory(): the host memory a heap scene holds, by category (HeapHostMemory). A walk
// over the objects, the pool, the buckets and the chunks that sums record sizes and the capacities of what each
// allocated; for benchmarks and diagnostics.
#include <quokka/base/host_bytes.hpp>

#include "heap_internal.hpp"

namespace quokka::heap
{

namespace
{

/// What an absl::InlinedVector allocated beyond its inline storage (nothing while it fits there).
template <typename T, size_t N>
size_t spilledBytes(const absl::InlinedVector<T, N>& v)
{
	return v.capacity() > N ? v.capacity() * sizeof(T) : 0;
}

} // namespace

size_t HeapObject::hostBytes() const
{
	size_t bytes = sizeof(HeapObject) + spilledBytes(inputs_) + spilledBytes(views_) + spilledBytes(entries);
	if (modes_)
		bytes += sizeof(modes::ModeInputs) + modes_->nodes().size() * sizeof(aval<UniformValue>);
	if (textures_)
		bytes += sizeof(SharedTextures) + spilledBytes(textures_->uses) + spilledBytes(textures_->entries);
	return bytes;
}

HeapHostMemory HeapScene::hostMemory() const
{
	const detail::HeapCore& p = *impl_;
	HeapHostMemory m;
	const size_t edge = adaptive::edgeBytes();

	p.objects.forEach(
	    [&](const HeapObject* h)
	    {
		    m.objects += h->hostBytes();
		    m.subscriptions += h->subscriptions() * edge;
		    if (h->owned)
			    m.private_sets += sizeof(PrivateSet);
	    });
	p.forEachEntry(
	    [&](const Entry& e)
	    {
		    if (const UniformEntry* u = asUniform(&e))
		    {
			    m.pool += sizeof(UniformEntry) + (u->constant ? sizeof(ConstantKey) : 0);
			    m.subscriptions += u->inputCount() * edge;
		    }
		    else if (asDerived(&e))
			    m.pool += sizeof(DerivedEntry);
		    else
			    m.pool += sizeof(BufferEntry);
	    });

	m.tables = p.objects.hostBytes() + p.pool.hostBytes() + flatTableBytes(p.constants) +
	           flatTableBytes(p.uniform_chunks) + p.buckets.bucket_count() * sizeof(void*);
	for (const auto& [key, bucket] : p.buckets)
	{
		const Bucket& b = *bucket;
		// The map's node (its value, the next pointer and the cached hash), the bucket and its arrays.
		m.draws += sizeof(std::pair<const BucketKey, std::unique_ptr<Bucket>>) + 2 * sizeof(void*) +
		           vectorBytes(key.textures) + sizeof(Bucket) + b.headers.hostBytes() + vectorBytes(b.free_headers) +
		           vectorBytes(b.textures) + vectorBytes(b.samplers) + vectorBytes(b.texture_bindings) +
		           vectorBytes(b.slots);
		m.tables += flatTableBytes(b.known) + flatTableBytes(b.routed);
		for (const std::unique_ptr<Slot>& slot : b.slots)
		{
			const Slot& s = *slot;
			m.draws += sizeof(Slot) + vectorBytes(s.records) + s.commands.hostBytes() + s.draw_count.hostBytes() +
			           s.mrecords.hostBytes();
			if (s.route)
				m.draws += sizeof(RouteGroup) + s.route->inputs.hostBytes();
		}
	}
	m.draws += vectorBytes(p.bucket_order);

	for (const std::unique_ptr<Chunk>& c : p.chunks)
	{
		m.allocator += sizeof(Chunk) + c->allocator.hostBytes();
		m.frame += vectorBytes(c->pending) + vectorBytes(c->moves);
	}
	m.allocator += vectorBytes(p.chunks);

	m.derive = p.derived.hostBytes() + (p.gpu_derive ? p.gpu_derive->hostBytes() : 0);

	m.frame += vectorBytes(p.pending_adds) + vectorBytes(p.pending_removals) + vectorBytes(p.frame_adds) +
	           vectorBytes(p.frame_removals) + vectorBytes(p.dirty_objects) + vectorBytes(p.dirty_entries) +
	           vectorBytes(p.dirty_slots) + vectorBytes(p.doomed_entries) + vectorBytes(p.waiting) +
	           vectorBytes(p.dirty_headers) + vectorBytes(p.route_checks) + vectorBytes(p.respecialise_queue);
	return m;
}

} // namespace quokka::heap
