// quokka/adaptive/index.hpp — order-maintenance keys for alist/clist (Dietz–Sleator style).
//
// An Index is an opaque, totally ordered key: new indices are created after, before or between existing ones and keep
// their relative order forever; they are ordering keys, never positions. Nodes of one global doubly linked list carry
// 64-bit tags; comparison is a tag comparison (O(1)); an insertion into an exhausted gap relabels a window whose span
// exceeds the square of its node count (amortised O(log n)). Nodes are refcounted (non-atomic) and unlinked when the
// last Index referring to them dies. Threading: each thread has its own order list; an Index belongs to the thread that
// created it (the graph owner thread) and must be compared, copied and destroyed there.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace quokka::adaptive
{

namespace detail
{
struct IndexNode
{
	uint64_t tag = 0;
	IndexNode* prev = nullptr;
	IndexNode* next = nullptr;
	uint32_t refcount = 0;
};
void releaseIndexNode(IndexNode* n);
} // namespace detail

/// Totally ordered list key. Default-constructed = Index::zero(), the smallest index, which lists never use directly.
class Index
{
public:
	Index();
	Index(const Index& o) : n_(o.n_) { ++n_->refcount; }
	Index& operator=(const Index& o)
	{
		Index tmp(o);
		std::swap(n_, tmp.n_);
		return *this;
	}
	~Index()
	{
		if (--n_->refcount == 0)
			detail::releaseIndexNode(n_);
	}

	/// The smallest index (permanent).
	static Index zero();
	/// A new index between `i` and the next existing index (so after `i`, before anything created after `i` before).
	static Index after(const Index& i);
	/// A new index between the previous existing index and `i`.
	static Index before(const Index& i);
	/// A new index strictly between `lo` and `hi` (requires lo < hi).
	static Index between(const Index& lo, const Index& hi);

	friend bool operator==(const Index& a, const Index& b) { return a.n_ == b.n_; }
	friend std::strong_ordering operator<=>(const Index& a, const Index& b) { return a.n_->tag <=> b.n_->tag; }
	/// Identity hash (stable under relabeling).
	size_t hash() const { return std::hash<const void*>()(n_); }
	/// Number of live index nodes (tests).
	static size_t liveCount();

private:
	explicit Index(detail::IndexNode* n) : n_(n) { ++n_->refcount; }
	detail::IndexNode* n_;
};

} // namespace quokka::adaptive
