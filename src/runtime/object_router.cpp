// ObjectRouter: one reader of the scene's set, routing each change to the heap or the classic set.
#include <quokka/runtime/object_router.hpp>

#include <vector>

#include <quokka/adaptive/core.hpp>

namespace quokka::runtime
{

ObjectRouter::ObjectRouter(adaptive::aset<scene::RenderObjectPtr> objects, heap::HeapScene& heap)
    : reader_(objects.getDeltaReader()), heap_(&heap)
{
}

void ObjectRouter::route()
{
	const auto changes = reader_->getChanges(adaptive::Token{});
	std::vector<const scene::RenderObjectPtr*> to_classic, from_classic;
	// Additions read the object (its topology) a few ahead; removals never do.
	std::vector<const scene::RenderObjectPtr*> added;
	added.reserve(changes.size());
	for (const auto& [object, count] : changes)
		if (count < 0)
		{
			heap_->remove(object);
			if (classic_size_ != 0)
				from_classic.push_back(&object);
		}
		else
			added.push_back(&object);
	for (size_t i = 0; i < added.size(); ++i)
	{
		constexpr size_t kAhead = 8;
		if (i + kAhead < added.size())
			__builtin_prefetch(added[i + kAhead]->get());
		const scene::RenderObjectPtr& object = *added[i];
		if (drawnByHeap(*object))
		{
			heap_->add(object);
			++to_heap_;
		}
		else
			to_classic.push_back(&object);
	}
	if (to_classic.empty() && from_classic.empty())
		return;
	adaptive::transact(
	    [&]
	    {
		    for (const scene::RenderObjectPtr* o : from_classic)
			    classic_size_ -= classic_.remove(*o) ? 1 : 0;
		    for (const scene::RenderObjectPtr* o : to_classic)
			    classic_size_ += classic_.add(*o) ? 1 : 0;
	    });
	to_classic_ += to_classic.size();
}

} // namespace quokka::runtime
