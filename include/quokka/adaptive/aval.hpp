// quokka/adaptive/aval.hpp — adaptive values: aval<T> (read-only, derived) and cval<T> (changeable input).
//
// Combinators fold constants (map of a constant is a constant; bind of a constant returns the inner value itself).
// Map-like nodes cache their last inputs and skip the user function when the new inputs compare equal (operator==,
// when T has one): that is the only cut-off; marking itself always reaches every dependent.
// A user function that throws leaves the node out of date; the exception reaches the reader and the next read
// retries. Threading: owner thread only (core.hpp); use ChangeQueue to write from other threads.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <quokka/adaptive/core.hpp>

namespace quokka::adaptive
{

/// Equality used for cut-offs: operator== where T has one, otherwise "never equal".
template <typename T>
bool valuesEqual(const T& a, const T& b)
{
	if constexpr (std::equality_comparable<T>)
		return a == b;
	else
		return false;
}

/// Node of an adaptive value: caches the value; derived nodes implement compute().
template <typename T>
class AValNode : public AdaptiveObject
{
public:
	using ValueType = T;

	/// Returns the current value, evaluating if out of date, and records `token.caller` as an output.
	/// Up-to-date top-level reads are a flag test and a load. The reference is valid until the next evaluation.
	const T& getValue(Token token)
	{
		if (outOfDate()) [[unlikely]]
			evaluateAndRegister(token);
		else
			registerRead(token);
		return *value_;
	}

	/// The cached value as it stands — not evaluated, no output recorded — or null before the first evaluation. For
	/// hints that may be stale (a loop prefetching what a later getValue() will read), never for results.
	const T* cachedValue() const { return value_ ? &*value_ : nullptr; }

protected:
	explicit AValNode(uint32_t flags = 0) : AdaptiveObject(flags) {}
	/// Recomputes value_; reads inputs with Token{this}.
	virtual void compute(Token token) = 0;

	/// Evaluates, then records the read (getValue returns the value). The node is pinned throughout (core.hpp, Pin): a
	/// computation that drops the last outside reference to its own node cannot free it under the core, and a top-level
	/// read's result stays readable until the thread's next evaluation. Deep chains continue on fresh stack segments
	/// (stack_guard.hpp).
	void evaluateAndRegister(Token token)
	{
		Pin pin(this);
		withStackHeadroom(
		    [this]
		    {
			    beginEvaluation();
			    try
			    {
				    compute(Token{this});
			    }
			    catch (...)
			    {
				    endEvaluation(false);
				    throw;
			    }
			    endEvaluation(true);
		    });
		registerRead(token);
	}
	std::optional<T> value_;
};

/// Read-only handle of an adaptive value. Copying shares the node.
template <typename T>
class aval
{
public:
	using ValueType = T;
	aval() = default;
	aval(Ref<AValNode<T>> node) : node_(std::move(node)) {}

	/// Top-level read (creates no edge). Evaluates when out of date; rethrows what the user function threw.
	const T& force() const { return node_->getValue(Token{}); }
	/// Read inside an evaluation: pass the token received by the reading computation.
	const T& getValue(Token token) const { return node_->getValue(token); }
	bool outOfDate() const { return node_->outOfDate(); }
	int32_t level() const { return node_->level(); }
	bool isConstant() const { return node_->isConstant(); }
	const Ref<AValNode<T>>& node() const { return node_; }
	Ref<AdaptiveObject> object() const { return Ref<AdaptiveObject>(node_); }
	explicit operator bool() const { return bool(node_); }
	friend bool operator==(const aval& a, const aval& b) { return a.node_ == b.node_; }
	/// Identity order (node address), so that avals can be elements of asets and keys of amaps.
	friend bool operator<(const aval& a, const aval& b) { return std::less<>()(a.node_.get(), b.node_.get()); }

protected:
	Ref<AValNode<T>> node_;
};

namespace detail
{

template <typename T>
class ConstantNode final : public AValNode<T>
{
public:
	explicit ConstantNode(T v) : AValNode<T>(AdaptiveObject::kConstant) { this->value_.emplace(std::move(v)); }

protected:
	void compute(Token) override {}
};

template <typename T>
class CValNode final : public AValNode<T>
{
public:
	explicit CValNode(T v) { this->value_.emplace(std::move(v)); }
	const T& value() const { return *this->value_; }
	bool set(T v)
	{
		if (valuesEqual(*this->value_, v))
			return false;
		this->value_ = std::move(v);
		this->markOutdated();
		return true;
	}

protected:
	void compute(Token) override {}
};

} // namespace detail

/// Changeable input value. Writes of an equal value are no-ops. A write outside a Transaction runs its own one-change
/// transaction (auto-transaction for single writes; use a Transaction scope to batch).
template <typename T>
class cval : public aval<T>
{
public:
	explicit cval(T initial) : aval<T>(makeRef<detail::CValNode<T>>(std::move(initial))) {}
	/// The stored value (no evaluation, no edge).
	const T& value() const { return cnode().value(); }
	/// Sets the value; returns false (and marks nothing) when it equals the current one.
	bool updateTo(T v) const { return cnode().set(std::move(v)); }
	void setValue(T v) const { (void)cnode().set(std::move(v)); }

private:
	detail::CValNode<T>& cnode() const { return static_cast<detail::CValNode<T>&>(*this->node_); }
};

/// A constant value: never marked, level 0, read without creating edges.
template <typename T>
aval<std::decay_t<T>> constant(T&& v)
{
	return aval<std::decay_t<T>>(makeRef<detail::ConstantNode<std::decay_t<T>>>(std::forward<T>(v)));
}

namespace detail
{

/// Node evaluating `fn(token)`; FunctionNode is the common base of map/map2/map3/custom/bind.
template <typename T, typename Fn>
class FunctionNode final : public AValNode<T>
{
public:
	explicit FunctionNode(Fn fn) : fn_(std::move(fn)) {}

protected:
	void compute(Token token) override { fn_(token, this->value_); }

private:
	Fn fn_;
};

template <typename T, typename Fn>
aval<T> makeFunctionNode(Fn fn)
{
	return aval<T>(makeRef<FunctionNode<T, Fn>>(std::move(fn)));
}

/// Eager cut-off node: re-reads its input when marked and stops propagation when equal.
template <typename T>
class CutoffNode final : public AValNode<T>
{
public:
	explicit CutoffNode(aval<T> input) : AValNode<T>(AdaptiveObject::kHasMarkHook), input_(std::move(input)) {}

protected:
	void compute(Token token) override { this->value_ = input_.getValue(token); }
	bool onMark() override
	{
		try
		{
			this->beginEvaluation();
			const T& v = input_.getValue(Token{this});
			this->endEvaluation(true);
			// value_ stays the last delivered value until compute(): a re-queued onMark compares against it again.
			if (this->value_ && valuesEqual(*this->value_, v))
				return false;
		}
		catch (...)
		{
			this->endEvaluation(false);
		}
		return true;
	}

private:
	aval<T> input_;
};

} // namespace detail

/// Lazily applies `f(a)`; f runs only when the input value changed (operator==). Constant input → constant.
template <typename A, typename F>
auto map(const aval<A>& a, F f) -> aval<std::decay_t<std::invoke_result_t<F&, const A&>>>
{
	using T = std::decay_t<std::invoke_result_t<F&, const A&>>;
	if (a.isConstant())
		return constant(f(a.force()));
	return detail::makeFunctionNode<T>(
	    [a, f = std::move(f), last = std::optional<A>()](Token t, std::optional<T>& out) mutable
	    {
		    const A& v = a.getValue(t);
		    if (last && out && valuesEqual(*last, v))
			    return;
		    out = f(v);
		    last = v;
	    });
}

/// map over two inputs; constant arguments are folded in.
template <typename A, typename B, typename F>
auto map2(const aval<A>& a, const aval<B>& b, F f) -> aval<std::decay_t<std::invoke_result_t<F&, const A&, const B&>>>
{
	using T = std::decay_t<std::invoke_result_t<F&, const A&, const B&>>;
	if (a.isConstant() && b.isConstant())
		return constant(f(a.force(), b.force()));
	if (a.isConstant())
		return map(b, [va = a.force(), f = std::move(f)](const B& vb) mutable { return f(va, vb); });
	if (b.isConstant())
		return map(a, [vb = b.force(), f = std::move(f)](const A& va) mutable { return f(va, vb); });
	return detail::makeFunctionNode<T>(
	    [a, b, f = std::move(f), la = std::optional<A>(), lb = std::optional<B>()](Token t,
	                                                                               std::optional<T>& out) mutable
	    {
		    const A& va = a.getValue(t);
		    const B& vb = b.getValue(t);
		    if (out && la && valuesEqual(*la, va) && valuesEqual(*lb, vb))
			    return;
		    out = f(va, vb);
		    la = va;
		    lb = vb;
	    });
}

/// map over three inputs; constant arguments are folded in.
template <typename A, typename B, typename C, typename F>
auto map3(const aval<A>& a, const aval<B>& b, const aval<C>& c, F f)
    -> aval<std::decay_t<std::invoke_result_t<F&, const A&, const B&, const C&>>>
{
	using T = std::decay_t<std::invoke_result_t<F&, const A&, const B&, const C&>>;
	if (a.isConstant())
		return map2(b, c,
		            [va = a.force(), f = std::move(f)](const B& vb, const C& vc) mutable { return f(va, vb, vc); });
	if (b.isConstant())
		return map2(a, c,
		            [vb = b.force(), f = std::move(f)](const A& va, const C& vc) mutable { return f(va, vb, vc); });
	if (c.isConstant())
		return map2(a, b,
		            [vc = c.force(), f = std::move(f)](const A& va, const B& vb) mutable { return f(va, vb, vc); });
	return detail::makeFunctionNode<T>(
	    [a, b, c, f = std::move(f), la = std::optional<A>(), lb = std::optional<B>(),
	     lc = std::optional<C>()](Token t, std::optional<T>& out) mutable
	    {
		    const A& va = a.getValue(t);
		    const B& vb = b.getValue(t);
		    const C& vc = c.getValue(t);
		    if (out && la && valuesEqual(*la, va) && valuesEqual(*lb, vb) && valuesEqual(*lc, vc))
			    return;
		    out = f(va, vb, vc);
		    la = va;
		    lb = vb;
		    lc = vc;
	    });
}

/// Applies `f` on every read, with no cache (FDA's decorator for cheap projections). quokka implements it as a
/// plain node: bind here compares values, not node identity, so FDA's #87 cannot occur.
template <typename A, typename F>
auto mapNonAdaptive(const aval<A>& a, F f) -> aval<std::decay_t<std::invoke_result_t<F&, const A&>>>
{
	using T = std::decay_t<std::invoke_result_t<F&, const A&>>;
	if (a.isConstant())
		return constant(f(a.force()));
	return detail::makeFunctionNode<T>([a, f = std::move(f)](Token t, std::optional<T>& out) mutable
	                                   { out = f(a.getValue(t)); });
}

/// Dynamic dependency: `f(a)` returns the aval to read. f runs again only when `a` changed (operator==); the old inner
/// value's edge is dropped after the switch. A constant `a` returns f(value) itself.
template <typename A, typename F>
auto bind(const aval<A>& a, F f) -> aval<typename std::decay_t<std::invoke_result_t<F&, const A&>>::ValueType>
requires requires(F& g, const A& x)
{
	g(x).getValue(Token{});
}
{
	using T = typename std::decay_t<std::invoke_result_t<F&, const A&>>::ValueType;
	if (a.isConstant())
		return aval<T>(f(a.force()));
	return aval<T>(detail::makeFunctionNode<T>(
	    [a, f = std::move(f), last = std::optional<A>(), inner = aval<T>()](Token t, std::optional<T>& out) mutable
	    {
		    const A& v = a.getValue(t);
		    if (!last || !inner || !valuesEqual(*last, v))
		    {
			    inner = f(v);
			    last = v;
		    }
		    out = inner.getValue(t);
	    }));
}

/// bind over two inputs (the pair is compared for the switch).
template <typename A, typename B, typename F>
auto bind2(const aval<A>& a, const aval<B>& b, F f)
{
	return adaptive::bind(adaptive::map2(a, b, [](const A& x, const B& y) { return std::pair<A, B>(x, y); }),
	                      [f = std::move(f)](const std::pair<A, B>& p) mutable { return f(p.first, p.second); });
}

/// Arbitrary computation `f(token)`: dependencies are whatever it reads with the token; nodes it creates and reads
/// are owned by this node until its next evaluation (they never go stale; see FDA #122).
template <typename F>
auto custom(F f) -> aval<std::decay_t<std::invoke_result_t<F&, Token>>>
{
	using T = std::decay_t<std::invoke_result_t<F&, Token>>;
	return detail::makeFunctionNode<T>([f = std::move(f)](Token t, std::optional<T>& out) mutable { out = f(t); });
}

/// Eager cut-off: when marked, re-reads `input` inside the commit and stops propagation if the value is unchanged.
/// Costs an evaluation during marking; use where a cheap input often changes to an equal value.
template <typename T>
aval<T> cutoff(const aval<T>& input)
{
	if (input.isConstant())
		return input;
	return aval<T>(makeRef<detail::CutoffNode<T>>(input));
}

/// Value callback: calls `f(value)` now (or after the running commit), then after every transaction that marked `v`,
/// with the new value, unless it equals the last delivered one. Runs after the commit, so it may open transactions.
/// If evaluating `v` throws, that delivery is skipped. Keep the Subscription. Owner thread only.
template <typename T, typename F>
Subscription subscribe(const aval<T>& v, F f)
{
	struct State
	{
		aval<T> value;
		F fn;
		std::optional<T> last;
		bool alive = true;
	};
	auto st = std::make_shared<State>(State{v, std::move(f), std::nullopt, true});
	auto deliver = [st]
	{
		if (!st->alive)
			return;
		try
		{
			const T& x = st->value.force();
			if (st->last && valuesEqual(*st->last, x))
				return;
			st->last = x;
			st->fn(x);
		}
		catch (...)
		{
		}
	};
	if (Transaction::committing())
		Transaction::addFinalizer(deliver);
	else
		deliver();
	Subscription marking = addMarkingCallback(v.object(), [deliver] { Transaction::addFinalizer(deliver); });
	auto holder = std::make_shared<Subscription>(std::move(marking));
	return Subscription(
	    [st, holder]
	    {
		    st->alive = false;
		    holder->dispose();
	    });
}

} // namespace quokka::adaptive
