// quokka/base/block_cache.hpp — a per-thread free list of equal-sized blocks, for types whose objects are made and
// dropped in bulk (graph links, heap pool entries, heap objects): a class's operator new/delete pop and push a list
// instead of going through the general allocator each time.
#pragma once

#include <cstddef>
#include <new>

namespace quokka
{

/// Blocks of `Size` bytes (aligned for any scalar type, as ::operator new gives), cached per thread. At most `Cap`
/// freed blocks are kept per thread; beyond that they go back to the general allocator, which coalesces them: blocks
/// recycled in destruction order are scattered in memory, and handing out a whole dead graph's worth again would
/// scatter the next one too. A block may be freed on another thread than the one that made it (it then joins that
/// thread's list). The lists are freed when their thread exits.
///
/// Under AddressSanitizer every call goes straight to ::operator new/delete, so a use after free stays detectable.
template <size_t Size, size_t Cap = 4096>
class BlockCache
{
	static_assert(Size >= sizeof(void*), "a cached block holds the free list's link");

public:
	static void* allocate()
	{
#if defined(__SANITIZE_ADDRESS__)
		return ::operator new(Size);
#else
		List& l = list();
		if (Node* n = l.head)
		{
			l.head = n->next;
			--l.count;
			return n;
		}
		return ::operator new(Size);
#endif
	}
	static void release(void* p) noexcept
	{
#if defined(__SANITIZE_ADDRESS__)
		::operator delete(p, Size);
#else
		List& l = list();
		if (l.count >= Cap)
		{
			::operator delete(p, Size);
			return;
		}
		Node* n = ::new (p) Node;
		n->next = l.head;
		l.head = n;
		++l.count;
#endif
	}
	/// Blocks cached on this thread (tests).
	static size_t cached()
	{
		return list().count;
	}

private:
	struct Node
	{
		Node* next = nullptr;
	};
	struct List
	{
		Node* head = nullptr;
		size_t count = 0;
		~List()
		{
			while (Node* n = head)
			{
				head = n->next;
				::operator delete(static_cast<void*>(n), Size);
			}
		}
	};
	static List& list()
	{
		thread_local List l;
		return l;
	}
};

} // namespace quokka
