// quokka/base/host_bytes.hpp — the host bytes a container allocated, for memory accounting (HostMemory walks).
#pragma once

#include <cstddef>
#include <vector>

namespace quokka
{

/// What a std::vector allocated: its capacity, not its size.
template <typename T>
size_t vectorBytes(const std::vector<T>& v)
{
	return v.capacity() * sizeof(T);
}

/// What an absl flat (Swiss) table allocated: a value and a control byte per slot.
template <typename Table>
size_t flatTableBytes(const Table& t)
{
	return t.capacity() * (sizeof(typename Table::value_type) + 1);
}

} // namespace quokka
