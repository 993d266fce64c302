// ObjectRouter: one reader of the scene's set, routing each object to the heap or the classic set, and moving the
// objects whose reason changed.
#include <quokka/runtime/object_router.hpp>

#include <quokka/adaptive/core.hpp>
#include <quokka/base/host_bytes.hpp>

namespace quokka::runtime
{

const char* routeReasonName(RouteReason reason)
{
	switch (reason)
	{
	case RouteReason::Heap:
		return "heap";
	case RouteReason::HeapDisabled:
		return "heap disabled";
	case RouteReason::Topology:
		return "topology";
	case RouteReason::InputTooLarge:
		return "input larger than a heap chunk";
	}
	return "?";
}

/// Watches what an object's reason reads (its buffers), or heap_enabled (object null): a change queues it.
struct ObjectRouter::Watch final : adaptive::AdaptiveObject
{
	Watch(ObjectRouter& r, const scene::RenderObject* o) : AdaptiveObject(kWantsInputChanged), router(&r), object(o) {}
	ObjectRouter* router;
	const scene::RenderObject* object;
	bool queued = false;
	void inputChanged(AdaptiveObject*) override
	{
		if (queued)
			return;
		queued = true;
		if (object)
			router->dirty_.push_back(object);
	}
	using AdaptiveObject::beginEvaluation;
	using AdaptiveObject::endEvaluation;
};

size_t ObjectRouter::hostBytes() const
{
	size_t bytes =
	    flatTableBytes(routed_) + vectorBytes(dirty_) + vectorBytes(classic_add_) + vectorBytes(classic_remove_);
	for (const auto& [object, r] : routed_)
		if (r.watch)
			bytes += sizeof(Watch) + r.watch->inputCount() * adaptive::edgeBytes();
	return bytes;
}

ObjectRouter::ObjectRouter(adaptive::aset<scene::RenderObjectPtr> objects, heap::HeapScene& heap,
                           adaptive::aval<bool> heap_enabled)
    : reader_(objects.getDeltaReader()), heap_(&heap), heap_enabled_(std::move(heap_enabled))
{
}

ObjectRouter::~ObjectRouter() = default;

bool ObjectRouter::dismantle(std::chrono::steady_clock::time_point deadline)
{
	constexpr size_t kSlice = 256;
	while (eraseSome(routed_, dismantle_cursor_, kSlice))
		if (std::chrono::steady_clock::now() >= deadline)
			return false;
	return true;
}

void ObjectRouter::setHeapEnabled(adaptive::aval<bool> heap_enabled)
{
	heap_enabled_ = std::move(heap_enabled);
	if (enabled_watch_)
	{
		// A new watch (the old one, with its edge to the old switch, goes): read at the next route().
		enabled_watch_ = adaptive::makeRef<Watch>(*this, nullptr);
		enabled_watch_->queued = true;
	}
}

namespace
{

/// Whether the buffers of an object the heap can draw fit one chunk (read with `token`).
RouteReason sizeReason(const scene::RenderObject& object, uint64_t max_chunk_bytes, adaptive::Token token)
{
	// (The heap places an object's own data in one chunk and each pooled input in one: all of it fitting one chunk
	// is enough, if not always needed.)
	uint64_t bytes = 16;
	const auto add = [&](const scene::BufferView& view)
	{
		if (view.buffer.node()) // (a view without a buffer is the heap's error to report, naming the object)
			bytes += view.buffer.getValue(token).size() + 16;
	};
	for (const auto& [name, view] : object.attributes)
		add(view);
	if (object.indices)
		add(*object.indices);
	return bytes > max_chunk_bytes ? RouteReason::InputTooLarge : RouteReason::Heap;
}

} // namespace

RouteReason ObjectRouter::reasonOf(const scene::RenderObject& object, uint64_t max_chunk_bytes, adaptive::Token token)
{
	return heap::heapEligible(object) ? sizeReason(object, max_chunk_bytes, token) : RouteReason::Topology;
}

RouteReason ObjectRouter::evaluate(Routed& r)
{
	const scene::RenderObject& o = *r.object;
	const auto changes = [](const scene::BufferView& view) { return view.buffer.node() && !view.buffer.isConstant(); };
	bool changeable = false;
	for (const auto& [name, view] : o.attributes)
		changeable = changeable || changes(view);
	changeable = changeable || (o.indices && changes(*o.indices));
	if (!heap::heapEligible(o)) // (evaluated once per object: a constant topology leaves nothing to watch)
	{
		r.watch = adaptive::Ref<Watch>();
		return RouteReason::Topology;
	}
	if (!changeable)
	{
		r.watch = adaptive::Ref<Watch>();
		return sizeReason(o, heap_->maxChunkBytes(), {});
	}
	if (!r.watch)
		r.watch = adaptive::makeRef<Watch>(*this, &o);
	Watch& w = *r.watch;
	w.queued = false;
	w.beginEvaluation();
	try
	{
		const RouteReason reason = sizeReason(o, heap_->maxChunkBytes(), adaptive::Token{&w});
		w.endEvaluation(true);
		return reason;
	}
	catch (...)
	{
		w.endEvaluation(false);
		throw;
	}
}

void ObjectRouter::place(Routed& r, RouteReason reason)
{
	if (r.now == reason)
		return;
	const bool was_heap = r.now == RouteReason::Heap, to_heap = reason == RouteReason::Heap;
	--counts_[size_t(r.now)];
	++counts_[size_t(reason)];
	r.now = reason;
	if (was_heap == to_heap)
		return; // (classic either way: only the reason changed)
	++migrations_;
	if (to_heap)
	{
		classic_remove_.push_back(r.object);
		heap_->add(r.object);
	}
	else
	{
		heap_->remove(r.object);
		classic_add_.push_back(r.object);
	}
}

void ObjectRouter::route()
{
	if (!enabled_watch_)
	{
		enabled_watch_ = adaptive::makeRef<Watch>(*this, nullptr);
		enabled_watch_->queued = true; // (read below for the first time)
	}
	bool enabled_changed = false;
	if (enabled_watch_->queued)
	{
		enabled_watch_->queued = false;
		enabled_watch_->beginEvaluation();
		const bool enabled = heap_enabled_.getValue(adaptive::Token{enabled_watch_.get()});
		enabled_watch_->endEvaluation(true);
		enabled_changed = enabled != enabled_;
		enabled_ = enabled;
	}
	const auto effective = [&](RouteReason own)
	{ return enabled_ || own != RouteReason::Heap ? own : RouteReason::HeapDisabled; };

	const auto changes = reader_->getChanges(adaptive::Token{});
	for (const auto& [object, count] : changes)
		if (count < 0)
		{
			auto it = routed_.find(object.get());
			if (it == routed_.end())
				continue;
			Routed& r = it->second;
			--counts_[size_t(r.now)];
			if (r.now == RouteReason::Heap)
				heap_->remove(object);
			else
				classic_remove_.push_back(object);
			routed_.erase(it);
		}
	for (const auto& [object, count] : changes)
	{
		if (count < 0)
			continue;
		auto [it, fresh] = routed_.try_emplace(object.get());
		if (!fresh)
			continue;
		Routed& r = it->second;
		r.object = object;
		r.own = evaluate(r);
		r.now = effective(r.own);
		++counts_[size_t(r.now)];
		if (r.now == RouteReason::Heap)
		{
			heap_->add(object);
			++to_heap_;
		}
		else
		{
			classic_add_.push_back(object);
			++to_classic_;
		}
	}
	// Objects whose buffers changed: their reason again, moved when it changed.
	std::vector<const scene::RenderObject*> dirty;
	dirty.swap(dirty_);
	for (const scene::RenderObject* o : dirty)
		if (auto it = routed_.find(o); it != routed_.end())
		{
			it->second.own = evaluate(it->second);
			place(it->second, effective(it->second.own));
		}
	if (enabled_changed)
		for (auto& [o, r] : routed_)
			place(r, effective(r.own));
	if (classic_add_.empty() && classic_remove_.empty())
		return;
	adaptive::transact(
	    [&]
	    {
		    for (const scene::RenderObjectPtr& o : classic_remove_)
			    classic_.remove(o);
		    for (const scene::RenderObjectPtr& o : classic_add_)
			    classic_.add(o);
	    });
	classic_add_.clear();
	classic_remove_.clear();
}

std::vector<std::string> ObjectRouter::validate() const
{
	std::vector<std::string> out;
	uint64_t sum = 0;
	for (uint64_t c : counts_)
		sum += c;
	if (sum != routed_.size())
		out.push_back("router: the reasons count " + std::to_string(sum) + " objects, it holds " +
		              std::to_string(routed_.size()));
	if (heap_->objectCount() != counts_[size_t(RouteReason::Heap)])
		out.push_back("router: " + std::to_string(counts_[size_t(RouteReason::Heap)]) +
		              " objects routed to the heap, the heap holds " + std::to_string(heap_->objectCount()));
	const auto classic = classic_.force();
	if (classic.size() != routed_.size() - counts_[size_t(RouteReason::Heap)])
		out.push_back("router: the classic set holds " + std::to_string(classic.size()) + " objects, " +
		              std::to_string(routed_.size() - counts_[size_t(RouteReason::Heap)]) + " are routed to it");
	for (const auto& [o, r] : routed_)
		if ((r.now != RouteReason::Heap) != classic.contains(r.object))
			out.push_back("router: render object #" + std::to_string(o->id) + " routed for '" + routeReasonName(r.now) +
			              "' is " + (classic.contains(r.object) ? "" : "not ") + "in the classic set");
	return out;
}

} // namespace quokka::runtime
