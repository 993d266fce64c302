// quokka/adaptive/core.hpp — the incremental core: adaptive objects, evaluation tokens, transactions, callbacks.
//
// Push-pull model after FSharp.Data.Adaptive: a change inside a Transaction marks every
// dependent object out of date, in ascending level order, and stops at objects already out of date; values are
// recomputed lazily when pulled. Edges are recorded during evaluation through a Token: a consumer owns (strong,
// intrusive, non-atomic refcount) the inputs it read in its last evaluation and inputs keep non-owning back links that
// destruction unlinks, so dropped subgraphs are freed at once and nothing read by a live node goes stale.
//
// THREADING RULE: a graph (every object reachable from another through edges, plus the transaction machinery) belongs
// to ONE owner thread. Only that thread may create, read, mark, subscribe or destroy its objects. Other threads hand
// changes to the owner through a ChangeQueue (change_queue.hpp), which the owner drains at a point it chooses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include <quokka/base/assert.hpp>
#include <quokka/base/stack_guard.hpp>

namespace quokka::adaptive
{

class AdaptiveObject;

namespace detail
{
struct Link;
struct CallbackList;
void destroyObject(AdaptiveObject* object) noexcept;
void deferRelease(AdaptiveObject* object) noexcept;
void drainDeferred() noexcept;
/// One entry of an input's contiguous output array: the consumer (what marking walks) and the edge record.
struct OutEdge
{
	AdaptiveObject* consumer;
	Link* link;
};
} // namespace detail

/// Intrusive owning pointer to an adaptive object (non-atomic count: owner thread only).
template <typename T>
class Ref
{
public:
	Ref() = default;
	Ref(std::nullptr_t) {}
	explicit Ref(T* p) : p_(p)
	{
		if (p_)
			p_->addRef();
	}
	Ref(const Ref& o) : Ref(o.p_) {}
	Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
	template <typename U>
	requires std::is_convertible_v<U*, T*> Ref(const Ref<U>& o) : Ref(o.get()) {}
	template <typename U>
	requires std::is_convertible_v<U*, T*> Ref(Ref<U>&& o)
	noexcept : p_(o.detach()) {}
	~Ref()
	{
		if (p_)
			p_->release();
	}
	Ref& operator=(Ref o) noexcept
	{
		std::swap(p_, o.p_);
		return *this;
	}
	T* get() const { return p_; }
	T* operator->() const { return p_; }
	T& operator*() const { return *p_; }
	explicit operator bool() const { return p_ != nullptr; }
	/// Gives up ownership without releasing; the caller takes over the reference.
	T* detach() { return std::exchange(p_, nullptr); }
	/// Takes over a reference the caller holds (one detach() gave up) without counting another: the object is not
	/// touched.
	static Ref adopt(T* p)
	{
		Ref r;
		r.p_ = p;
		return r;
	}
	friend bool operator==(const Ref& a, const Ref& b) { return a.p_ == b.p_; }

private:
	T* p_ = nullptr;
};

/// Creates a T (an AdaptiveObject subclass) owned by the returned Ref.
template <typename T, typename... Args>
Ref<T> makeRef(Args&&... args)
{
	return Ref<T>(new T(std::forward<Args>(args)...));
}

/// The evaluation context passed to getValue/getChanges. `caller` is the object being evaluated (nullptr at top
/// level): the callee records the caller as its output. A top-level read (`Token{}`) creates no edge.
struct Token
{
	AdaptiveObject* caller = nullptr;
};

/// Base of every node of the graph: out-of-date flag, level, outputs (non-owning back links) and inputs (owning).
/// Subclasses implement their evaluation with beginEvaluation/endEvaluation and read inputs with Token{this}.
/// Owner thread only. Not copyable; always held through Ref.
class AdaptiveObject
{
public:
	AdaptiveObject(const AdaptiveObject&) = delete;
	AdaptiveObject& operator=(const AdaptiveObject&) = delete;

	/// True until the object is evaluated, and again after it is marked. New objects start out of date.
	bool outOfDate() const { return (flags_ & kOutOfDate) != 0; }
	/// Graph depth: always greater than the level of every input read. Only grows.
	int32_t level() const { return level_; }
	/// Constants never change, are never marked and create no edges.
	bool isConstant() const { return (flags_ & kConstant) != 0; }
	/// Number of consumers that read this object in their last evaluation (plus marking-callback holders: none).
	size_t outputCount() const { return out_count_; }
	/// Number of inputs read in the last evaluation.
	size_t inputCount() const;
	uint32_t refCount() const { return refcount_; }
	/// Calls `f(AdaptiveObject*)` for each consumer that read this object (introspection: a renderer finding which of
	/// its own objects read a value). `f` must not add or remove edges.
	template <typename F>
	void forEachOutput(F&& f) const
	{
		const detail::OutEdge* e = outs();
		for (uint32_t i = 0; i < out_count_; ++i)
			f(e[i].consumer);
	}

	void addRef() noexcept { ++refcount_; }
	void release() noexcept
	{
		if (--refcount_ == 0)
			detail::destroyObject(this);
	}
	/// As release(), but when this is the last reference the object is destroyed at the thread's next evaluation or
	/// commit instead of now (Pin).
	void releaseLater() noexcept
	{
		if (refcount_ == 1) [[unlikely]]
			detail::deferRelease(this);
		else
			--refcount_;
	}

	/// Marks this object out of date: joins the transaction open (or committing) on this thread, or runs a
	/// one-change transaction of its own when none is open.
	void markOutdated();

protected:
	enum Flags : uint32_t
	{
		kOutOfDate = 1u << 0,
		kQueued = 1u << 1,
		kEvaluating = 1u << 2,
		kConstant = 1u << 3,
		kWantsInputChanged = 1u << 4, ///< inputChanged() is called once per marked incoming edge
		kHasMarkHook = 1u << 5,       ///< onMark() is called when the object is marked
		kExplicitInputs = 1u << 6,    ///< inputs are kept until removeInput(), not pruned after each evaluation
	};

	explicit AdaptiveObject(uint32_t flags = 0);
	virtual ~AdaptiveObject();

	/// Called (with kHasMarkHook) inside the commit before the object is flagged out of date. Returning false stops
	/// propagation and leaves the object up to date. May evaluate inputs (eager cut-off). Must not throw.
	virtual bool onMark() { return true; }
	/// Called (with kWantsInputChanged) once per marked input edge, also when this object is already out of date.
	virtual void inputChanged(AdaptiveObject* input) { (void)input; }

	/// Starts an evaluation: following reads with Token{this} re-register (or keep) input edges.
	void beginEvaluation();
	/// Ends it. On success, inputs not read again are unlinked (unless kExplicitInputs) and the object is up to date;
	/// on failure (an exception) every edge is kept and the object stays out of date, so the next read retries.
	void endEvaluation(bool success);
	/// Records that this object (being evaluated) read `input`: creates or keeps the edge and raises the level.
	void trackInput(AdaptiveObject* input);
	/// Drops the edge to `input` (kExplicitInputs objects; harmless when absent).
	void removeInput(AdaptiveObject* input);
	/// Registers the caller of a read of this object as an output (no-op for top-level reads and constants).
	void registerRead(Token token)
	{
		if (token.caller && !(flags_ & kConstant))
			token.caller->trackInput(this);
	}
	bool isEvaluating() const { return (flags_ & kEvaluating) != 0; }
	void setOutOfDate(bool v) { flags_ = v ? (flags_ | kOutOfDate) : (flags_ & ~uint32_t(kOutOfDate)); }

private:
	friend class Transaction;
	friend struct detail::Link;
	friend void detail::destroyObject(AdaptiveObject*) noexcept;
	friend void detail::deferRelease(AdaptiveObject*) noexcept;
	friend void detail::drainDeferred() noexcept;
	friend class Subscription;
	friend uint64_t addCallbackEntry(AdaptiveObject&, std::function<void()>, bool);
	friend void removeCallbackEntry(AdaptiveObject&, uint64_t);

	void trackSlow(AdaptiveObject* input);
	detail::Link* findLink(AdaptiveObject* input) const;
	void unlink(detail::Link* link);
	void trackExplicit(AdaptiveObject* input);
	void runMarkingCallbacks() noexcept;
	void addOutput(AdaptiveObject* consumer, detail::Link* link);
	void removeOutput(uint32_t index);

	static constexpr uint32_t kInlineOutputs = 2; ///< outputs stored in the node (chains, binary fan-out)
	detail::OutEdge* outs() { return out_cap_ <= kInlineOutputs ? out_store_.local : out_store_.heap; }
	const detail::OutEdge* outs() const { return out_cap_ <= kInlineOutputs ? out_store_.local : out_store_.heap; }

	// Marking reads only bytes 8..72 (flags, level, outputs, callbacks): keep them together.
	uint32_t refcount_ = 0;
	int32_t level_ = 0;
	uint32_t flags_ = 0;
	uint32_t out_count_ = 0;            ///< consumers that read this object in their last evaluation
	uint32_t out_cap_ = kInlineOutputs; ///< beyond kInlineOutputs, the entries live in out_store_.heap
	detail::CallbackList* callbacks_ = nullptr;
	/// out_count_ entries {consumer, link}, in edge creation order (but see removeOutput).
	union OutStore
	{
		detail::OutEdge local[kInlineOutputs];
		detail::OutEdge* heap;
	} out_store_{};
	uint64_t epoch_ = 0; ///< stamp of the running (or last) evaluation
	detail::Link* inputs_head_ = nullptr;
	detail::Link* inputs_tail_ = nullptr;
	detail::Link* cursor_ = nullptr; ///< last input confirmed by the running evaluation
};

/// Holds a reference on an object while the core runs user code on it (an evaluation and the read that follows it), so
/// that user code dropping the last outside reference to that very object cannot free it under the core. If the pin
/// turns out to hold the last reference, the object dies at the thread's next evaluation or commit rather than at
/// once: the value a top-level read returns stays readable until then, as for any read (valid until the next
/// evaluation).
class Pin
{
public:
	explicit Pin(AdaptiveObject* object) noexcept : object_(object) { object_->addRef(); }
	~Pin() { object_->releaseLater(); }
	Pin(const Pin&) = delete;
	Pin& operator=(const Pin&) = delete;

private:
	AdaptiveObject* object_;
};

/// Move-only RAII handle of a callback registration: destroying it (or calling dispose) unsubscribes. Disposing twice
/// is harmless; a disposed callback never runs again, even if a delivery is already scheduled.
class Subscription
{
public:
	Subscription() = default;
	explicit Subscription(std::function<void()> dispose) : dispose_(std::move(dispose)) {}
	Subscription(Subscription&& o) noexcept : dispose_(std::exchange(o.dispose_, nullptr)) {}
	Subscription& operator=(Subscription&& o) noexcept
	{
		if (this != &o)
		{
			dispose();
			dispose_ = std::exchange(o.dispose_, nullptr);
		}
		return *this;
	}
	~Subscription() { dispose(); }
	void dispose()
	{
		if (auto d = std::exchange(dispose_, nullptr))
			d();
	}
	bool active() const { return dispose_ != nullptr; }

private:
	std::function<void()> dispose_;
};

/// RAII transaction scope. Changes made while a scope is open are collected; when the outermost scope ends they are
/// committed: marked in level order, marking callbacks run inside the commit, value callbacks (finalizers) after it.
/// Nested scopes JOIN the outer one (quokka semantics; FDA commits nested transactions separately). The commit also
/// happens when the body throws: writes already made are never left unmarked.
/// A scope opened while a commit runs (from a marking callback) joins the running commit.
/// Owner thread only; scopes must nest (stack discipline).
class Transaction
{
public:
	Transaction();
	~Transaction();
	Transaction(const Transaction&) = delete;
	Transaction& operator=(const Transaction&) = delete;

	/// The outermost open scope on this thread, or nullptr when none is open.
	static Transaction* current();
	/// True while a commit is marking objects on this thread.
	static bool committing();
	/// Queues `f` to run after the commit of the current transaction (runs `f` now when none is open).
	static void addFinalizer(std::function<void()> f);
	/// Adds `object` to the current transaction (or a one-change transaction). Same as object.markOutdated().
	static void enqueue(AdaptiveObject& object);

private:
	static void commit() noexcept;
	static void markOutputs(AdaptiveObject* object) noexcept;
};

/// Runs `body` inside one Transaction and returns its result.
template <typename F>
decltype(auto) transact(F&& body)
{
	Transaction t;
	return std::forward<F>(body)();
}

/// Adds a marking callback to `object`: runs inside the commit each time the object goes from up to date to out of
/// date (never for an object already out of date or never evaluated). It may write cvals (joined into the running
/// commit) and must not throw. Keep the Subscription: destroying it unsubscribes. Owner thread only.
Subscription addMarkingCallback(const Ref<AdaptiveObject>& object, std::function<void()> callback);
/// As addMarkingCallback, but fires at most once.
Subscription onNextMarking(const Ref<AdaptiveObject>& object, std::function<void()> callback);

/// Number of AdaptiveObjects alive on all threads (tests: leak and lifetime checks). Summed from per-thread counts,
/// so exact whenever no other thread is making or destroying objects meanwhile.
int64_t liveObjectCount();

/// Host bytes one edge costs (a consumer reading an input): its link record and its entry in the input's output array.
/// Memory accounting (heap::HeapScene::hostMemory).
size_t edgeBytes();

} // namespace quokka::adaptive
