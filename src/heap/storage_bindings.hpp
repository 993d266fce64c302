// Private to quokka_heap: the megacall scan's storage-buffer bindings, pushed with gpu::pushStorageBuffers.
#pragma once

#include <quokka/gpu/pipeline.hpp>

namespace quokka::heap::detail
{

using Binding = gpu::StorageBinding;
using gpu::pushStorageBuffers;

} // namespace quokka::heap::detail
