// Order maintenance for Index (Dietz & Sleator, "Two algorithms for maintaining order in a list", 1987; the simple
// tag-relabeling variant also used by FSharp.Data.Adaptive Datastructures/Index.fs, re-derived here).
//
// Tags live in [0, 2^64 - 1). Appending after the last node advances by at most 2^32 so that 2^32 appends fit before
// a relabel. When a gap is exhausted, the window [a, node_j) grows until its tag span exceeds j², then its nodes are
// spread evenly (spacing > j ≥ 2). If the window reaches the end of the list without room, the whole list is spread
// over the tag space.
#include <quokka/adaptive/index.hpp>

#include <limits>

#include <quokka/base/assert.hpp>

namespace quokka::adaptive
{

namespace detail
{

namespace
{

constexpr uint64_t kTagEnd = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kAppendStep = uint64_t(1) << 32;

// One order list per thread: a graph (and its lists) belongs to one thread, so graphs on different threads never
// share, and never race on, index nodes. Indices of different threads must not be compared.
thread_local IndexNode g_zero{0, nullptr, nullptr, 1}; // never released
thread_local size_t g_live = 0;

void relabelAll()
{
	size_t n = 0;
	for (IndexNode* x = g_zero.next; x; x = x->next)
		++n;
	uint64_t spacing = kTagEnd / (n + 2);
	uint64_t t = 0;
	for (IndexNode* x = g_zero.next; x; x = x->next)
	{
		t += spacing;
		x->tag = t;
	}
}

/// Makes room for a new tag right after `a`.
void relabelAfter(IndexNode* a)
{
	uint64_t j = 1;
	IndexNode* node = a->next;
	while (node && node->tag - a->tag <= j * j)
	{
		node = node->next;
		++j;
		if (j > (uint64_t(1) << 31))
			break;
	}
	uint64_t span = (node ? node->tag : kTagEnd) - a->tag;
	if (span <= j * j)
	{
		relabelAll();
		return;
	}
	uint64_t spacing = span / j;
	uint64_t k = 1;
	for (IndexNode* x = a->next; x != node; x = x->next, ++k)
		x->tag = a->tag + k * spacing;
}

IndexNode* insertAfter(IndexNode* a)
{
	uint64_t hi = a->next ? a->next->tag : kTagEnd;
	if (hi - a->tag < 2)
	{
		relabelAfter(a);
		hi = a->next ? a->next->tag : kTagEnd;
		QUOKKA_ASSERT(hi - a->tag >= 2, "Index relabeling failed");
	}
	uint64_t gap = hi - a->tag;
	uint64_t step = a->next ? gap / 2 : (gap / 2 < kAppendStep ? gap / 2 : kAppendStep);
	auto* n = new IndexNode{a->tag + step, a, a->next, 0};
	if (a->next)
		a->next->prev = n;
	a->next = n;
	++g_live;
	return n;
}

} // namespace

void releaseIndexNode(IndexNode* n)
{
	QUOKKA_ASSERT(n != &g_zero, "Index::zero released");
	if (n->prev)
		n->prev->next = n->next;
	if (n->next)
		n->next->prev = n->prev;
	--g_live;
	delete n;
}

} // namespace detail

Index::Index() : Index(&detail::g_zero) {}

Index Index::zero()
{
	return Index();
}

Index Index::after(const Index& i)
{
	return Index(detail::insertAfter(i.n_));
}

Index Index::before(const Index& i)
{
	QUOKKA_ASSERT(i.n_->prev != nullptr, "Index::before(zero): nothing is smaller than zero");
	return Index(detail::insertAfter(i.n_->prev));
}

Index Index::between(const Index& lo, const Index& hi)
{
	QUOKKA_ASSERT(lo < hi, "Index::between needs lo < hi");
	(void)hi;
	return Index(detail::insertAfter(lo.n_));
}

size_t Index::liveCount()
{
	return detail::g_live;
}

} // namespace quokka::adaptive
