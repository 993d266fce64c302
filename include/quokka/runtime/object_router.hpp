// quokka/runtime/object_router.hpp — which renderer draws an object: the heap scene, or a classic pass.
//
// An ObjectRouter is the single reader of a set of render objects. Each route() pulls the set's changes and sends every
// object to one of two destinations: a heap::HeapScene (add/remove) when the heap can draw it, otherwise the router's
// classic set, which a classic::ScenePass draws (RenderTree::ofObjects(classicObjects())). The rule today is static —
// heap::heapEligible(), list topologies given as constants — so an object keeps its destination for its lifetime and a
// removal needs no look at the object: it is removed from the heap (which ignores what it does not hold) and, when the
// classic set holds anything, from that set.
//
// Per frame: route(), then the heap's update(), then the classic pass's update(). Owner thread only.
#pragma once

#include <cstdint>

#include <quokka/adaptive/aset.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::runtime
{

class ObjectRouter
{
public:
	/// Routes the objects of `objects` into `heap` (built without a set; it must outlive the router) and the classic
	/// set. Reads nothing until the first route().
	ObjectRouter(adaptive::aset<scene::RenderObjectPtr> objects, heap::HeapScene& heap);

	/// Whether the heap draws `object` (else the classic pass does): heap::heapEligible().
	static bool drawnByHeap(const scene::RenderObject& object) { return heap::heapEligible(object); }

	/// Pulls the set's changes and routes each: additions to the heap or the classic set, removals out of both.
	/// O(changes).
	void route();

	/// The objects the heap cannot draw, for a classic pass; changed by route().
	adaptive::aset<scene::RenderObjectPtr> classicObjects() const { return classic_; }
	/// Objects routed to the heap and to the classic set, counted over every route() (additions only).
	uint64_t routedToHeap() const { return to_heap_; }
	uint64_t routedToClassic() const { return to_classic_; }

private:
	adaptive::SetReader<scene::RenderObjectPtr> reader_;
	heap::HeapScene* heap_;
	adaptive::cset<scene::RenderObjectPtr> classic_;
	uint64_t classic_size_ = 0;
	uint64_t to_heap_ = 0;
	uint64_t to_classic_ = 0;
};

} // namespace quokka::runtime
