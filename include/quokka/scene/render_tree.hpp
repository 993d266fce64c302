// quokka/scene/render_tree.hpp — how render objects are grouped: ordered (drawn in sequence), unordered (the
// renderer may sort), and adaptive variants whose structure itself changes (an aval of a tree, an alist, an aset).
//
// Trees are immutable shared nodes; the adaptive ones change through their avals/collections, and a renderer walks
// them with readers so a frame costs O(changes), not O(tree). Owner thread only.
#pragma once

#include <memory>
#include <vector>

#include <quokka/adaptive/alist.hpp>
#include <quokka/adaptive/aset.hpp>
#include <quokka/adaptive/aval.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::scene
{

struct RenderTree;
using RenderTreePtr = std::shared_ptr<const RenderTree>;

struct RenderTree
{
	enum class Kind
	{
		Empty,
		Leaf,
		Ordered,
		Unordered,
		Adaptive,
		OrderedFromList,
		UnorderedFromSet,
	};

	Kind kind = Kind::Empty;
	RenderObjectPtr leaf;                   ///< Leaf
	std::vector<RenderTreePtr> children;    ///< Ordered, Unordered
	adaptive::aval<RenderTreePtr> adaptive; ///< Adaptive
	adaptive::alist<RenderTreePtr> list;    ///< OrderedFromList
	adaptive::aset<RenderTreePtr> set;      ///< UnorderedFromSet
	/// UnorderedFromSet made by ofObjects: the objects themselves, so leafSet() hands them on without mapping every
	/// object to a leaf and back (a removal then costs no reader state at all).
	adaptive::aset<RenderObjectPtr> objects;
	/// Monotonic id assigned by the factories below: renderers create the walkers of a set's new members in a
	/// deterministic order (leaves by object id, other trees by this id), so caches, serials and therefore draw order
	/// never depend on heap addresses.
	uint64_t id = 0;

	static RenderTreePtr empty();
	static RenderTreePtr leafOf(RenderObjectPtr object);
	static RenderTreePtr ordered(std::vector<RenderTreePtr> children);
	static RenderTreePtr unordered(std::vector<RenderTreePtr> children);
	static RenderTreePtr ofAval(adaptive::aval<RenderTreePtr> tree);
	static RenderTreePtr ofList(adaptive::alist<RenderTreePtr> list);
	static RenderTreePtr ofSet(adaptive::aset<RenderTreePtr> set);
	/// Convenience: an unordered set of leaves.
	static RenderTreePtr ofObjects(adaptive::aset<RenderObjectPtr> objects);
};

/// The leaves of `tree` in draw order (ordered parts in sequence, unordered parts in object-id order), reading every
/// adaptive part with `token`. A full walk: the reference the incremental ScenePass is tested against.
std::vector<RenderObjectPtr> flatten(const RenderTreePtr& tree, adaptive::Token token = {});

/// The leaves of `tree` as an adaptive set (order dropped): what a renderer that sorts everything itself (the heap)
/// consumes. Incremental: a set's leaf members pass through one choose stage, other members are collected.
adaptive::aset<RenderObjectPtr> leafSet(const RenderTreePtr& tree);

} // namespace quokka::scene
