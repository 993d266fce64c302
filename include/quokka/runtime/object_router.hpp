// quokka/runtime/object_router.hpp — which renderer draws an object: the heap scene, or a classic pass.
//
// An ObjectRouter is the single reader of a set of render objects. Each route() pulls the set's changes and sends every
// object to one of two destinations: a heap::HeapScene (add/remove) when the heap can draw it, otherwise the router's
// classic set, which a classic::ScenePass draws (RenderTree::ofObjects(classicObjects())). An object goes to the
// classic path for a reason (RouteReason): the task's `heap_enabled` is false, its topology is not a constant list
// topology (heap::heapEligible), or its buffers together do not fit one heap chunk (HeapScene::maxChunkBytes). The
// last depends on its buffers' values: an object whose buffers can change is watched, and when one changes — or
// `heap_enabled` does — route() moves the object between the heap and the classic set (a migration: the same pixels,
// drawn by the other path from that frame on). reasonCounts() says how many objects each reason holds.
//
// Per frame: route(), then the heap's update(), then the classic pass's update(). Owner thread only.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/aval.hpp>
#include <quokka/base/erase_some.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::runtime
{

/// Where an object is drawn and why.
enum class RouteReason : uint8_t
{
	Heap,          ///< drawn by the heap
	HeapDisabled,  ///< the task's heap_enabled is false
	Topology,      ///< strips, fans, or a topology that is not a constant (heap::heapEligible)
	InputTooLarge, ///< its attribute and index buffers together exceed one heap chunk
};
inline constexpr size_t kRouteReasons = 4;
const char* routeReasonName(RouteReason reason);

class ObjectRouter
{
public:
	/// Routes the objects of `objects` into `heap` (built without a set; it must outlive the router) and the classic
	/// set. Reads nothing until the first route().
	ObjectRouter(adaptive::aset<scene::RenderObjectPtr> objects, heap::HeapScene& heap,
	             adaptive::aval<bool> heap_enabled = adaptive::constant(true));
	~ObjectRouter();
	ObjectRouter(const ObjectRouter&) = delete;
	ObjectRouter& operator=(const ObjectRouter&) = delete;

	/// Why `object` cannot be drawn by a heap whose chunks hold `max_chunk_bytes` (Heap when it can), its buffers
	/// read with `token`.
	static RouteReason reasonOf(const scene::RenderObject& object, uint64_t max_chunk_bytes,
	                            adaptive::Token token = {});

	/// Replaces the heap switch: the next route() reads it (and moves every object when its value changed).
	void setHeapEnabled(adaptive::aval<bool> heap_enabled);

	/// Pulls the set's changes and routes each; moves the objects whose reason changed (a buffer, or heap_enabled).
	/// O(changes), and O(objects) when heap_enabled changed.
	void route();

	/// The objects the heap does not draw, for a classic pass; changed by route().
	adaptive::aset<scene::RenderObjectPtr> classicObjects() const { return classic_; }
	/// Objects routed to the heap and to the classic set, counted over every route() (additions only).
	uint64_t routedToHeap() const { return to_heap_; }
	uint64_t routedToClassic() const { return to_classic_; }
	/// Objects moved from one path to the other, counted over every route().
	uint64_t migrations() const { return migrations_; }
	/// Objects held now per reason (index: RouteReason).
	const std::array<uint64_t, kRouteReasons>& reasonCounts() const { return counts_; }
	/// Checks, after a frame, that the counts add up to the objects held, the heap holds as many as are routed to it
	/// and the classic set exactly the others; one line per violation.
	std::vector<std::string> validate() const;

	/// Teardown in slices (Runtime::collect): forgets its objects a slice at a time until `deadline`, at least one
	/// slice per call; true once none is left (destroying it then frees its set reader and classic set). After the
	/// first call it must not route again; the heap scene it fed is not touched.
	bool dismantle(std::chrono::steady_clock::time_point deadline);
	/// The objects dismantle() has yet to forget.
	size_t dismantleLeft() const { return routed_.size(); }
	/// Host bytes it holds: its table of routed objects, the watches of objects whose buffers can change (with their
	/// edges) and its queues. O(objects): memory accounting.
	size_t hostBytes() const;

private:
	struct Watch;
	struct Routed
	{
		scene::RenderObjectPtr object;
		RouteReason own = RouteReason::Heap; ///< its own reason (heap_enabled aside)
		RouteReason now = RouteReason::Heap; ///< where it is: Heap, or why the classic set holds it
		adaptive::Ref<Watch> watch;          ///< when its buffers can change
	};
	RouteReason evaluate(Routed& r);
	/// Moves `r` to where `reason` says (the classic set's changes collected for one transaction).
	void place(Routed& r, RouteReason reason);

	adaptive::SetReader<scene::RenderObjectPtr> reader_;
	heap::HeapScene* heap_;
	adaptive::aval<bool> heap_enabled_;
	adaptive::Ref<Watch> enabled_watch_;
	bool enabled_ = true;
	absl::flat_hash_map<const scene::RenderObject*, Routed> routed_;
	std::optional<decltype(routed_)::iterator> dismantle_cursor_; ///< (eraseSome)
	std::vector<const scene::RenderObject*> dirty_;               ///< objects whose watched buffers changed
	adaptive::cset<scene::RenderObjectPtr> classic_;
	std::vector<scene::RenderObjectPtr> classic_add_, classic_remove_;
	std::array<uint64_t, kRouteReasons> counts_{};
	uint64_t to_heap_ = 0;
	uint64_t to_classic_ = 0;
	uint64_t migrations_ = 0;
};

} // namespace quokka::runtime
