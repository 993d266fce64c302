// trafo_chain.cpp — transforms in a hierarchy (trafo_chain.hpp): the chain nodes, interned by (parent, local node).
#include <quokka/scene/trafo_chain.hpp>

#include <typeinfo>

#include <absl/container/flat_hash_map.h>

#include <quokka/base/assert.hpp>

namespace quokka::scene
{

namespace detail
{

/// A chain node is its own world node: the value parent.world · local, the chain's structure, and its children (a
/// suffix trie: a child unregisters itself when it dies).
class ChainNode final : public adaptive::AValNode<UniformValue>
{
public:
	ChainNode(adaptive::Ref<ChainNode> parent, adaptive::aval<math::Trafo3d> local, bool constant)
	    : AValNode(constant ? AdaptiveObject::kConstant : 0u), parent_(std::move(parent)), local_(std::move(local)),
	      depth_(parent_ ? parent_->depth_ + 1 : 1)
	{
		if (constant)
			value_.emplace(combine(parent_ ? &parent_->force() : nullptr, local_.force()));
	}
	~ChainNode() override
	{
		if (parent_)
			parent_->children_.erase(local_.node().get());
	}

	static adaptive::Ref<ChainNode> make(adaptive::Ref<ChainNode> parent, adaptive::aval<math::Trafo3d> local)
	{
		QUOKKA_ASSERT(bool(local), "TrafoChain: a null local transform");
		ChainNode* p = parent.get();
		if (p)
			if (auto it = p->children_.find(local.node().get()); it != p->children_.end())
				return adaptive::Ref<ChainNode>(it->second);
		const bool constant = local.isConstant() && (!p || p->isConstant());
		auto node = adaptive::makeRef<ChainNode>(std::move(parent), std::move(local), constant);
		if (p)
			p->children_.emplace(node->local_.node().get(), node.get());
		return node;
	}

	const UniformValue& force() { return getValue(adaptive::Token{}); }

	adaptive::Ref<ChainNode> parent_;
	adaptive::aval<math::Trafo3d> local_;
	adaptive::aval<UniformValue> local_uniform_; ///< made when first asked for
	uint32_t depth_;

protected:
	void compute(adaptive::Token t) override
	{
		const math::Trafo3d& local = local_.getValue(t);
		value_.emplace(combine(parent_ ? &parent_->getValue(t) : nullptr, local));
	}

private:
	/// parent · local (the local alone at a root): what compute() and a constant chain's construction evaluate.
	static UniformValue combine(const UniformValue* parent, const math::Trafo3d& local)
	{
		return parent ? UniformValue(std::get<math::Trafo3d>(*parent) * local) : UniformValue(local);
	}
	absl::flat_hash_map<const void*, ChainNode*> children_; ///< by the child's local node
};

} // namespace detail

detail::ChainNode* TrafoChain::node() const
{
	return static_cast<detail::ChainNode*>(node_.get());
}

TrafoChain TrafoChain::root(adaptive::aval<math::Trafo3d> local)
{
	return TrafoChain(detail::ChainNode::make(nullptr, std::move(local)));
}

TrafoChain TrafoChain::child(adaptive::aval<math::Trafo3d> local) const
{
	QUOKKA_ASSERT(bool(node_), "TrafoChain::child of the empty chain");
	return TrafoChain(detail::ChainNode::make(adaptive::Ref<detail::ChainNode>(node()), std::move(local)));
}

uint32_t TrafoChain::depth() const
{
	return node_ ? node()->depth_ : 0;
}

TrafoChain TrafoChain::parent() const
{
	return node_ ? TrafoChain(node()->parent_) : TrafoChain();
}

const adaptive::aval<math::Trafo3d>& TrafoChain::local() const
{
	QUOKKA_ASSERT(bool(node_), "TrafoChain::local of the empty chain");
	return node()->local_;
}

const adaptive::aval<UniformValue>& TrafoChain::localUniform() const
{
	QUOKKA_ASSERT(bool(node_), "TrafoChain::localUniform of the empty chain");
	if (!node()->local_uniform_)
		node()->local_uniform_ = uniform(node()->local_);
	return node()->local_uniform_;
}

adaptive::aval<UniformValue> TrafoChain::world() const
{
	QUOKKA_ASSERT(bool(node_), "TrafoChain::world of the empty chain");
	return adaptive::aval<UniformValue>(adaptive::Ref<adaptive::AValNode<UniformValue>>(node()));
}

TrafoChain TrafoChain::of(const adaptive::AdaptiveObject* node)
{
	if (!node || typeid(*node) != typeid(detail::ChainNode))
		return {};
	return TrafoChain(adaptive::Ref<adaptive::AdaptiveObject>(const_cast<adaptive::AdaptiveObject*>(node)));
}

} // namespace quokka::scene
