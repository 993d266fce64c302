// quokka/adaptive/resource.hpp — AdaptiveResource<T>: an adaptive value that owns an external resource.
//
// After wombat.rendering's AdaptiveResource: users acquire() before reading and release() when done; the first
// acquire (0 → 1) lets the next evaluation create the resource, later evaluations (after an input changed) update it,
// and the last release (1 → 0) destroys it at once. Subscribing or reading does not acquire. GPU buffers, images and
// pipelines use it so that a resource lives exactly while some consumer holds it.
// Threading: owner thread only (core.hpp); the counter is not atomic.
#pragma once

#include <functional>
#include <optional>
#include <utility>

#include <quokka/adaptive/aval.hpp>

namespace quokka::adaptive
{

namespace detail
{

template <typename T>
class ResourceNode final : public AValNode<T>
{
public:
	ResourceNode(std::function<T(Token)> create, std::function<void(T&, Token)> update, std::function<void(T&)> destroy)
	    : create_(std::move(create)), update_(std::move(update)), destroy_(std::move(destroy))
	{
	}
	~ResourceNode() override { destroyValue(); }

	void acquireResource()
	{
		if (acquired_++ == 0)
			this->setOutOfDate(true); // created by the next evaluation
	}
	// Not named release(): that is the intrusive refcount of AdaptiveObject.
	void releaseResource()
	{
		QUOKKA_ASSERT(acquired_ > 0, "AdaptiveResource released more often than acquired");
		if (--acquired_ == 0)
		{
			// destroy_ is user code: it may drop the last handle to this node (held until the release is done).
			Ref<AdaptiveObject> keep(this);
			destroyValue();
			if (this->outputCount() > 0)
				this->markOutdated();
			else
				this->setOutOfDate(true);
		}
	}
	int acquired() const { return acquired_; }

protected:
	void compute(Token token) override
	{
		QUOKKA_ASSERT(acquired_ > 0, "AdaptiveResource read while not acquired");
		if (!this->value_)
			this->value_.emplace(create_(token));
		else if (update_)
			update_(*this->value_, token);
		else
		{
			destroyValue();
			this->value_.emplace(create_(token));
		}
	}

private:
	void destroyValue()
	{
		if (this->value_)
		{
			// Taken out first: a destroy_ that re-enters (through the node's own destruction) finds nothing to free.
			T value = std::move(*this->value_);
			this->value_.reset();
			destroy_(value);
		}
	}

	std::function<T(Token)> create_;
	std::function<void(T&, Token)> update_;
	std::function<void(T&)> destroy_;
	int acquired_ = 0;
};

} // namespace detail

/// Handle of an adaptive resource: an aval<T> with acquire/release reference counting.
template <typename T>
class AdaptiveResource : public aval<T>
{
public:
	AdaptiveResource() = default;
	explicit AdaptiveResource(Ref<detail::ResourceNode<T>> node) : aval<T>(Ref<AValNode<T>>(node)) {}

	/// Takes a reference; the first one (0 → 1) makes the next read create the resource.
	void acquire() const { rnode().acquireResource(); }
	/// Drops a reference; the last one (1 → 0) destroys the resource now and marks readers out of date.
	void release() const { rnode().releaseResource(); }
	/// Current number of acquisitions.
	int acquired() const { return rnode().acquired(); }

private:
	detail::ResourceNode<T>& rnode() const { return static_cast<detail::ResourceNode<T>&>(*this->node_); }
};

/// Makes a resource. create(token) builds it (reading inputs with the token); update(value, token) refreshes it after
/// an input changed (empty: destroy and create again); destroy(value) frees it. None may be null except update.
template <typename T>
AdaptiveResource<T> makeResource(std::function<T(Token)> create, std::function<void(T&, Token)> update,
                                 std::function<void(T&)> destroy)
{
	return AdaptiveResource<T>(
	    makeRef<detail::ResourceNode<T>>(std::move(create), std::move(update), std::move(destroy)));
}

} // namespace quokka::adaptive
