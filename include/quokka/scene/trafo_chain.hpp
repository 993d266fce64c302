// quokka/scene/trafo_chain.hpp — transforms in a hierarchy (a scene graph's nodes, a BIM model's site → building →
// storey → element, a map's layers): an object's model transform as a chain parent ∘ local of any depth.
//
//   TrafoChain site = TrafoChain::root(site_trafo);            // an aval<Trafo3d>
//   TrafoChain storey = site.child(storey_trafo);
//   object.uniforms["ModelTrafo"] = storey.child(element_trafo).world();
//
// world() = parent.world() · local (the local transform applies first; forward = P·L, backward = L⁻¹·P⁻¹, in double).
// Chains are interned as a suffix trie: a chain's children are kept by their local node, so child() with the same
// local node gives the same chain — objects hanging below one ancestor share its node, and a transform changed
// anywhere in the chain changes the world of everything below it.
//
// Who computes world():
//   - read on the CPU (the classic renderer, a user's own code) it is a product per chain node, computed lazily when
//     read and cached until an ancestor's or its own local transform changes — moving a root re-multiplies every
//     chain node below it that is read;
//   - the heap renderer composes chains of depth ≥ 2 on the device instead (level by level, in double or df32
//     precision, see heap_scene.hpp), without reading world() on the CPU: moving a root costs O(1) CPU there,
//     however many objects hang below it.
// A chain whose local transforms are all constant is a constant. Owner thread only (adaptive values).
#pragma once

#include <cstdint>

#include <quokka/adaptive/aval.hpp>
#include <quokka/math/math.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::scene
{

namespace detail
{
class ChainNode;
}

class TrafoChain
{
public:
	/// The empty chain (no transform).
	TrafoChain() = default;
	/// A chain of one transform.
	static TrafoChain root(adaptive::aval<math::Trafo3d> local);
	/// This chain followed by `local` (applied first): world = this->world() · local. Interned by `local`'s node.
	/// Precondition: this chain is not empty.
	TrafoChain child(adaptive::aval<math::Trafo3d> local) const;

	explicit operator bool() const { return bool(node_); }
	/// Transforms in the chain: 1 for a root.
	uint32_t depth() const;
	/// The chain without its last transform (empty for a root or the empty chain).
	TrafoChain parent() const;
	/// The last transform.
	const adaptive::aval<math::Trafo3d>& local() const;
	/// local() as a uniform value (one node per chain, made when first asked for).
	const adaptive::aval<UniformValue>& localUniform() const;
	/// The composed transform as a uniform value (a Trafo3d), for RenderObject::uniforms — ModelTrafo, or any
	/// trafo uniform an effect reads. The same node every time.
	adaptive::aval<UniformValue> world() const;

	/// The chain whose world() node `node` is, or the empty chain.
	static TrafoChain of(const adaptive::AdaptiveObject* node);

	friend bool operator==(const TrafoChain& a, const TrafoChain& b) { return a.node_ == b.node_; }

private:
	explicit TrafoChain(adaptive::Ref<adaptive::AdaptiveObject> node) : node_(std::move(node)) {}
	detail::ChainNode* node() const;
	adaptive::Ref<adaptive::AdaptiveObject> node_; ///< a detail::ChainNode
};

} // namespace quokka::scene
