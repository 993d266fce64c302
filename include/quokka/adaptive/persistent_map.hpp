// quokka/adaptive/persistent_map.hpp — immutable ordered map with structural sharing (the state of every collection).
//
// A path-copying AVL tree with subtree sizes: copying a map is O(1) (one refcount), set/erase copy O(log n) nodes, and
// positional access (at, positionOf) is O(log n). It backs the counting set of aset, the map of amap and the
// Index-keyed list of alist, which is why collection content snapshots are O(1) (docs/adaptive.md explains the choice
// over a HAMT and over copy-on-write arrays). Keys need a strict weak order (`Less`, default operator<).
// Threading: nodes use a non-atomic refcount; a map and its copies belong to one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <quokka/base/assert.hpp>

namespace quokka::adaptive
{

/// Persistent (immutable) ordered map. Every "modifying" member returns nothing and replaces *this by the new version;
/// copies taken before keep seeing the old version.
template <typename K, typename V, typename Less = std::less<K>>
class PMap
{
	struct Node;
	struct NodePtr
	{
		Node* p = nullptr;
		NodePtr() = default;
		explicit NodePtr(Node* n) : p(n)
		{
			if (p)
				++p->rc;
		}
		NodePtr(const NodePtr& o) : NodePtr(o.p) {}
		NodePtr(NodePtr&& o) noexcept : p(std::exchange(o.p, nullptr)) {}
		NodePtr& operator=(NodePtr o) noexcept
		{
			std::swap(p, o.p);
			return *this;
		}
		// The test inline, the deletion (recursive through the children) out of line: an update moves NodePtrs
		// through every level of its descent, and each moved-from or still-shared one is then a test, not a call.
		~NodePtr()
		{
			if (p && --p->rc == 0) [[unlikely]]
				destroy(p);
		}
		[[gnu::noinline]] static void destroy(Node* n) { delete n; }
		Node* operator->() const { return p; }
		explicit operator bool() const { return p != nullptr; }
	};
	/// Per-thread free list of nodes: every update allocates O(log n) nodes and frees as many, so recycling them
	/// saves a malloc/free pair per node. Bounded, so that a dropped big map gives its memory back.
	struct NodePool
	{
		std::vector<void*> free;
		~NodePool()
		{
			for (void* p : free)
				::operator delete(p);
		}
	};
	static NodePool& pool()
	{
		thread_local NodePool p;
		return p;
	}
	struct Node
	{
		static void* operator new(std::size_t n)
		{
			NodePool& p = pool();
			if (n != sizeof(Node) || p.free.empty())
				return ::operator new(n);
			void* r = p.free.back();
			p.free.pop_back();
			return r;
		}
		static void operator delete(void* ptr, std::size_t n)
		{
			NodePool& p = pool();
			if (n == sizeof(Node) && p.free.size() < kMaxPooled)
				p.free.push_back(ptr);
			else
				::operator delete(ptr);
		}
		static constexpr size_t kMaxPooled = 1 << 14;

		uint32_t rc = 0;
		// The children's heights live in the parent: an update fixes a node on its path from the child it came
		// back from, without loading the sibling (at 10^6 keys the siblings of the deepest levels are cache misses).
		int8_t hl = 0, hr = 0;
		size_t size = 1;
		K key;
		V value;
		NodePtr left, right;
		Node(K k, V v, NodePtr l, NodePtr r)
		    : key(std::move(k)), value(std::move(v)), left(std::move(l)), right(std::move(r))
		{
			hl = int8_t(h(left));
			hr = int8_t(h(right));
			size = 1 + sz(left) + sz(right);
		}
	};

public:
	using key_type = K;
	using mapped_type = V;

	PMap() = default;

	size_t size() const { return sz(root_); }
	bool empty() const { return !root_; }

	/// Pointer to the value of `key`, or nullptr.
	const V* find(const K& key) const
	{
		Node* n = root_.p;
		while (n)
		{
			if (less_(key, n->key))
				n = n->left.p;
			else if (less_(n->key, key))
				n = n->right.p;
			else
				return &n->value;
		}
		return nullptr;
	}
	bool contains(const K& key) const { return find(key) != nullptr; }

	/// Inserts or replaces the value of `key`. Nodes this map alone holds (no copy of the map shares them) are updated
	/// in place; shared ones are copied, so copies taken before keep seeing the old version either way.
	void set(const K& key, V value)
	{
		ptrdiff_t grown = 0;
		root_ = insertOwned(std::move(root_), key, std::move(value), grown);
	}
	/// Read-modify-write of one key in one descent: f(const V* old) (null when absent) returns the new value, or
	/// std::nullopt to leave the key absent. In place where unshared, like set().
	template <typename F>
	void update(const K& key, F&& f)
	{
		ptrdiff_t grown = 0;
		root_ = updateOwned(std::move(root_), key, f, grown);
	}
	/// Removes `key`; returns whether it was present. In place where unshared, like set().
	bool erase(const K& key)
	{
		ptrdiff_t grown = 0;
		root_ = removeOwned(std::move(root_), key, grown);
		return grown != 0;
	}

	/// The entry at sorted position `pos` (< size()).
	std::pair<const K&, const V&> at(size_t pos) const
	{
		QUOKKA_ASSERT(pos < size(), "PMap::at out of range");
		Node* n = root_.p;
		for (;;)
		{
			size_t ls = sz(n->left);
			if (pos < ls)
				n = n->left.p;
			else if (pos == ls)
				return {n->key, n->value};
			else
			{
				pos -= ls + 1;
				n = n->right.p;
			}
		}
	}
	/// Number of keys strictly less than `key` (the position `key` has or would have).
	size_t rank(const K& key) const
	{
		size_t r = 0;
		Node* n = root_.p;
		while (n)
		{
			if (less_(n->key, key))
			{
				r += sz(n->left) + 1;
				n = n->right.p;
			}
			else
				n = n->left.p;
		}
		return r;
	}
	/// Greatest entry with key < `key`, or nullptr.
	const std::pair<const K*, const V*> before(const K& key) const
	{
		Node* best = nullptr;
		for (Node* n = root_.p; n;)
		{
			if (less_(n->key, key))
			{
				best = n;
				n = n->right.p;
			}
			else
				n = n->left.p;
		}
		return best ? std::pair<const K*, const V*>(&best->key, &best->value) : std::pair<const K*, const V*>();
	}
	/// Smallest entry with key > `key`, or nullptr.
	const std::pair<const K*, const V*> after(const K& key) const
	{
		Node* best = nullptr;
		for (Node* n = root_.p; n;)
		{
			if (less_(key, n->key))
			{
				best = n;
				n = n->left.p;
			}
			else
				n = n->right.p;
		}
		return best ? std::pair<const K*, const V*>(&best->key, &best->value) : std::pair<const K*, const V*>();
	}

	/// Calls f(key, value) in ascending key order.
	template <typename F>
	void forEach(F&& f) const
	{
		walk(root_.p, f);
	}

	/// Forward iterator over (key, value) in ascending order; holds a stack of O(log n) nodes.
	class iterator
	{
	public:
		using value_type = std::pair<const K&, const V&>;
		iterator() = default;
		explicit iterator(Node* root) { pushLeft(root); }
		value_type operator*() const { return {stack_.back()->key, stack_.back()->value}; }
		iterator& operator++()
		{
			Node* n = stack_.back();
			stack_.pop_back();
			pushLeft(n->right.p);
			return *this;
		}
		bool operator==(const iterator& o) const
		{
			return stack_.empty() ? o.stack_.empty() : (!o.stack_.empty() && stack_.back() == o.stack_.back());
		}

	private:
		void pushLeft(Node* n)
		{
			for (; n; n = n->left.p)
				stack_.push_back(n);
		}
		std::vector<Node*> stack_;
	};
	iterator begin() const { return iterator(root_.p); }
	iterator end() const { return iterator(); }

	/// Invariant check for tests and debug builds: keys strictly ascending, every node's height and size agree with its
	/// children, and no two sibling subtrees differ in height by more than one. O(n).
	bool valid() const
	{
		const K* prev = nullptr;
		bool ok = true;
		check(root_.p, prev, ok);
		return ok;
	}

	/// Calls f(key, old, now) — `old` the value in `a` or nullptr, `now` the value in `b` or nullptr — for every key
	/// whose entry differs between the two maps (present in one only, or `eq(old, now)` false), in ascending key order.
	/// Subtrees both versions share (one node, as path copying leaves every subtree off a changed path) are skipped
	/// whole: comparing a map with a version derived from it by d changes costs about O(d log n), unrelated maps
	/// O(n + m). Two in-order cursors whose items are single entries or whole subtrees; when both cursors are at the
	/// same subtree, every key either consumed lies below that subtree's keys, so the subtree contributes nothing.
	template <typename F, typename Eq = std::equal_to<>>
	static void diff(const PMap& a, const PMap& b, F&& f, Eq eq = Eq())
	{
		struct Item
		{
			Node* n;
			bool whole; ///< the subtree rooted at n, or n's own entry
		};
		std::vector<Item> x, y;
		auto push = [](std::vector<Item>& c, Node* n)
		{
			if (n)
				c.push_back(Item{n, true});
		};
		auto expand = [&push](std::vector<Item>& c)
		{
			Node* n = c.back().n;
			c.pop_back();
			push(c, n->right.p);
			c.push_back(Item{n, false});
			push(c, n->left.p);
		};
		auto height = [](const Node* n) { return 1 + std::max<int32_t>(n->hl, n->hr); };
		push(x, a.root_.p);
		push(y, b.root_.p);
		while (!x.empty() && !y.empty())
		{
			const Item p = x.back();
			const Item q = y.back();
			if (p.whole && q.whole)
			{
				if (p.n == q.n)
				{
					x.pop_back();
					y.pop_back();
					continue;
				}
				// Expand the taller subtree (both when equal): shared subtrees meet at equal heights.
				int32_t hp = height(p.n), hq = height(q.n);
				if (hp >= hq)
					expand(x);
				if (hq >= hp)
					expand(y);
			}
			else if (p.whole)
				expand(x);
			else if (q.whole)
				expand(y);
			else if (a.less_(p.n->key, q.n->key))
			{
				f(p.n->key, static_cast<const V*>(&p.n->value), static_cast<const V*>(nullptr));
				x.pop_back();
			}
			else if (a.less_(q.n->key, p.n->key))
			{
				f(q.n->key, static_cast<const V*>(nullptr), static_cast<const V*>(&q.n->value));
				y.pop_back();
			}
			else
			{
				if (p.n != q.n && !eq(p.n->value, q.n->value))
					f(q.n->key, static_cast<const V*>(&p.n->value), static_cast<const V*>(&q.n->value));
				x.pop_back();
				y.pop_back();
			}
		}
		auto rest = [](std::vector<Item>& c, auto&& g)
		{
			while (!c.empty())
			{
				Item i = c.back();
				c.pop_back();
				if (i.whole)
				{
					auto each = [&g](const K& k, const V& v) { g(k, &v); };
					walk(i.n, each);
				}
				else
					g(i.n->key, &i.n->value);
			}
		};
		rest(x, [&f](const K& k, const V* v) { f(k, v, static_cast<const V*>(nullptr)); });
		rest(y, [&f](const K& k, const V* v) { f(k, static_cast<const V*>(nullptr), v); });
	}

	/// True when both maps are the same version (O(1); unequal versions may still hold equal content).
	bool sameVersion(const PMap& o) const { return root_.p == o.root_.p; }
	friend bool operator==(const PMap& a, const PMap& b)
	{
		if (a.root_.p == b.root_.p)
			return true;
		if (a.size() != b.size())
			return false;
		auto i = a.begin();
		auto j = b.begin();
		for (; i != a.end(); ++i, ++j)
		{
			auto x = *i;
			auto y = *j;
			if (a.less_(x.first, y.first) || a.less_(y.first, x.first) || !(x.second == y.second))
				return false;
		}
		return true;
	}

private:
	static int32_t h(const NodePtr& n) { return n ? 1 + std::max<int32_t>(n->hl, n->hr) : 0; }
	static size_t sz(const NodePtr& n) { return n ? n->size : 0; }
	static NodePtr mk(K k, V v, NodePtr l, NodePtr r)
	{
		return NodePtr(new Node(std::move(k), std::move(v), std::move(l), std::move(r)));
	}
	static NodePtr balance(K k, V v, NodePtr l, NodePtr r)
	{
		int32_t hl = h(l), hr = h(r);
		if (hl > hr + 1)
		{
			if (l->hl >= l->hr)
				return mk(l->key, l->value, l->left, mk(std::move(k), std::move(v), l->right, std::move(r)));
			const NodePtr& lr = l->right;
			return mk(lr->key, lr->value, mk(l->key, l->value, l->left, lr->left),
			          mk(std::move(k), std::move(v), lr->right, std::move(r)));
		}
		if (hr > hl + 1)
		{
			if (r->hr >= r->hl)
				return mk(r->key, r->value, mk(std::move(k), std::move(v), std::move(l), r->left), r->right);
			const NodePtr& rl = r->left;
			return mk(rl->key, rl->value, mk(std::move(k), std::move(v), std::move(l), rl->left),
			          mk(r->key, r->value, rl->right, r->right));
		}
		return mk(std::move(k), std::move(v), std::move(l), std::move(r));
	}
	NodePtr insert(const NodePtr& t, const K& k, V v) const
	{
		if (!t)
			return mk(k, std::move(v), NodePtr(), NodePtr());
		if (less_(k, t->key))
			return balance(t->key, t->value, insert(t->left, k, std::move(v)), t->right);
		if (less_(t->key, k))
			return balance(t->key, t->value, t->left, insert(t->right, k, std::move(v)));
		return mk(t->key, std::move(v), t->left, t->right);
	}
	// Transient updates: a node whose refcount is 1 is reachable only through the pointer being updated (the map's
	// root, or a parent that is itself unshared), so it is changed in place — no node copies, no key copies — which is
	// what a collection that nobody snapshots (the common case: a cset between frames) pays per change. A shared node
	// falls back to the copying versions above; copying it raises its children's counts, so they are copied too.
	// `grown` returns the change in the number of keys (−1, 0 or +1), so that sizes on the way back are adjusted
	// without loading siblings; rotations of unshared nodes relink them.

	/// An unshared node after its `left` (or right) child was replaced and its subtree grew by `grown` keys.
	static NodePtr refit(NodePtr t, bool left, ptrdiff_t grown)
	{
		Node* n = t.p;
		if (left)
			n->hl = int8_t(h(n->left));
		else
			n->hr = int8_t(h(n->right));
		n->size = size_t(ptrdiff_t(n->size) + grown);
		return rebalance(std::move(t));
	}
	/// Restores the AVL bound at an unshared node whose hl/hr/size are current: by relinking when every node the
	/// rotation moves is unshared too (no allocation, no key copies), else by copying.
	static NodePtr rebalance(NodePtr t)
	{
		Node* n = t.p;
		if (n->hl > n->hr + 1)
		{
			Node* l = n->left.p;
			if (l->hl >= l->hr)
			{
				if (l->rc == 1)
					return rotateRight(std::move(t));
			}
			else if (l->rc == 1 && l->right->rc == 1)
			{
				n->left = rotateLeft(std::move(n->left));
				n->hl = int8_t(h(n->left));
				return rotateRight(std::move(t));
			}
			return balance(n->key, n->value, n->left, n->right);
		}
		if (n->hr > n->hl + 1)
		{
			Node* r = n->right.p;
			if (r->hr >= r->hl)
			{
				if (r->rc == 1)
					return rotateLeft(std::move(t));
			}
			else if (r->rc == 1 && r->left->rc == 1)
			{
				n->right = rotateRight(std::move(n->right));
				n->hr = int8_t(h(n->right));
				return rotateLeft(std::move(t));
			}
			return balance(n->key, n->value, n->left, n->right);
		}
		return t;
	}
	/// Rotations of unshared nodes (t and the child that rises): pointers move, reference counts stay; heights and
	/// sizes follow from the stored ones (plus the size of the rising child's outer subtree).
	static NodePtr rotateRight(NodePtr t)
	{
		NodePtr l = std::move(t->left);
		const size_t outer = sz(l->left);
		t->left = std::move(l->right);
		t->hl = l->hr;
		t->size -= 1 + outer;
		l->hr = int8_t(h(t));
		l->size = 1 + outer + t->size;
		l->right = std::move(t);
		return l;
	}
	static NodePtr rotateLeft(NodePtr t)
	{
		NodePtr r = std::move(t->right);
		const size_t outer = sz(r->right);
		t->right = std::move(r->left);
		t->hr = r->hl;
		t->size -= 1 + outer;
		r->hl = int8_t(h(t));
		r->size = 1 + outer + t->size;
		r->left = std::move(t);
		return r;
	}
	NodePtr insertOwned(NodePtr t, const K& k, V v, ptrdiff_t& grown) const
	{
		if (!t)
		{
			grown = 1;
			return mk(k, std::move(v), NodePtr(), NodePtr());
		}
		if (t->rc != 1)
		{
			const size_t before = t->size;
			NodePtr r = insert(t, k, std::move(v));
			grown = ptrdiff_t(r->size) - ptrdiff_t(before);
			return r;
		}
		Node* n = t.p;
		if (less_(k, n->key))
		{
			n->left = insertOwned(std::move(n->left), k, std::move(v), grown);
			return refit(std::move(t), true, grown);
		}
		if (less_(n->key, k))
		{
			n->right = insertOwned(std::move(n->right), k, std::move(v), grown);
			return refit(std::move(t), false, grown);
		}
		n->value = std::move(v);
		return t;
	}
	template <typename F>
	NodePtr updateOwned(NodePtr t, const K& k, F& f, ptrdiff_t& grown) const
	{
		if (!t || t->rc != 1)
		{
			// Absent, or a shared subtree: look up, then insert or remove by the copying versions.
			const V* old = nullptr;
			for (Node* n = t.p; n && !old;)
				if (less_(k, n->key))
					n = n->left.p;
				else if (less_(n->key, k))
					n = n->right.p;
				else
					old = &n->value;
			std::optional<V> value = f(old);
			if (value)
				return insertOwned(std::move(t), k, std::move(*value), grown);
			return old ? removeOwned(std::move(t), k, grown) : t;
		}
		Node* n = t.p;
		if (less_(k, n->key))
		{
			n->left = updateOwned(std::move(n->left), k, f, grown);
			return grown ? refit(std::move(t), true, grown) : t;
		}
		if (less_(n->key, k))
		{
			n->right = updateOwned(std::move(n->right), k, f, grown);
			return grown ? refit(std::move(t), false, grown) : t;
		}
		std::optional<V> value = f(static_cast<const V*>(&n->value));
		if (value)
		{
			n->value = std::move(*value);
			return t;
		}
		grown = -1;
		return withoutRootOwned(std::move(t));
	}
	NodePtr removeOwned(NodePtr t, const K& k, ptrdiff_t& grown) const
	{
		if (!t)
			return t;
		if (t->rc != 1)
		{
			bool found = false;
			NodePtr r = remove(t, k, found);
			grown = found ? -1 : 0;
			return r;
		}
		Node* n = t.p;
		if (less_(k, n->key))
		{
			n->left = removeOwned(std::move(n->left), k, grown);
			return grown ? refit(std::move(t), true, grown) : t;
		}
		if (less_(n->key, k))
		{
			n->right = removeOwned(std::move(n->right), k, grown);
			return grown ? refit(std::move(t), false, grown) : t;
		}
		grown = -1;
		return withoutRootOwned(std::move(t));
	}
	/// withoutRoot() for an unshared `t`: its successor node is unlinked and takes t's place when the right subtree's
	/// path to it is unshared (no copies); otherwise the copying version.
	static NodePtr withoutRootOwned(NodePtr t)
	{
		Node* n = t.p;
		if (!n->left)
			return std::move(n->right);
		if (!n->right)
			return std::move(n->left);
		NodePtr min;
		NodePtr r = removeMinOwned(std::move(n->right), min);
		if (!min)
		{
			// A shared node on the way: the right subtree was left as it was.
			n->right = std::move(r);
			return withoutRoot(n);
		}
		min->left = std::move(n->left);
		min->right = std::move(r);
		min->hl = n->hl;
		min->hr = int8_t(h(min->right));
		min->size = n->size - 1;
		return rebalance(std::move(min));
	}
	/// Unlinks the smallest node of an unshared path into `min` and returns the rest; leaves `min` empty (and returns
	/// `t` unchanged) when a shared node is met first.
	static NodePtr removeMinOwned(NodePtr t, NodePtr& min)
	{
		if (t->rc != 1)
			return t;
		if (!t->left)
		{
			NodePtr rest = std::move(t->right);
			min = std::move(t);
			return rest;
		}
		t->left = removeMinOwned(std::move(t->left), min);
		return min ? refit(std::move(t), true, -1) : t;
	}
	/// The subtree that replaces `n` when n's own key is removed: its only child, else n's successor over both.
	static NodePtr withoutRoot(const Node* n)
	{
		if (!n->left)
			return n->right;
		if (!n->right)
			return n->left;
		const Node* min = nullptr;
		NodePtr r = removeMin(n->right, min);
		return balance(min->key, min->value, n->left, std::move(r));
	}
	static NodePtr removeMin(const NodePtr& t, const Node*& min)
	{
		if (!t->left)
		{
			min = t.p;
			return t->right;
		}
		return balance(t->key, t->value, removeMin(t->left, min), t->right);
	}
	NodePtr remove(const NodePtr& t, const K& k, bool& found) const
	{
		if (!t)
			return t;
		if (less_(k, t->key))
		{
			NodePtr l = remove(t->left, k, found);
			return found ? balance(t->key, t->value, std::move(l), t->right) : t;
		}
		if (less_(t->key, k))
		{
			NodePtr r = remove(t->right, k, found);
			return found ? balance(t->key, t->value, t->left, std::move(r)) : t;
		}
		found = true;
		return withoutRoot(t.p);
	}
	int32_t check(const Node* n, const K*& prev, bool& ok) const
	{
		if (!n)
			return 0;
		const int32_t hl = check(n->left.p, prev, ok);
		if (prev && !less_(*prev, n->key))
			ok = false;
		prev = &n->key;
		const int32_t hr = check(n->right.p, prev, ok);
		if (hl > hr + 1 || hr > hl + 1 || n->hl != hl || n->hr != hr || n->size != 1 + sz(n->left) + sz(n->right) ||
		    n->rc == 0)
			ok = false;
		return 1 + std::max(hl, hr);
	}
	template <typename F>
	static void walk(Node* n, F& f)
	{
		while (n)
		{
			walk(n->left.p, f);
			f(n->key, n->value);
			n = n->right.p;
		}
	}

	NodePtr root_;
	[[no_unique_address]] Less less_;
};

} // namespace quokka::adaptive
