// Private helpers of the gpu module; never installed.
#pragma once

#include <cstdint>

namespace quokka::gpu::detail
{
} // namespace quokka::gpu::detail

namespace quokka::gpu
{
/// Process-wide monotonic id for buffers, images and pipelines (cache keys).
uint64_t nextGpuObjectId();
} // namespace quokka::gpu
