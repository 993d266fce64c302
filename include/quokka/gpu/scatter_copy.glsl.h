// The scatter copy's layouts, shared by C++ (quokka/gpu/scatter_copy.hpp, src/gpu/scatter_copy.cpp) and the kernel
// shaders/gpu/scatter_copy.comp.
#ifndef QUOKKA_GPU_SCATTER_COPY_GLSL_H
#define QUOKKA_GPU_SCATTER_COPY_GLSL_H

/* Workgroup g copies regions g, g + groups, …; its invocations copy a region's words with a stride of the group
 * size. */
#define QUOKKA_GPU_SCATTER_GROUP_SIZE 64

#ifdef __cplusplus
#include <cstdint>
namespace quokka::gpu::detail
{
using uint = uint32_t;
#endif

/* One region of the table (16 bytes, std430 uvec4): `words` u32 words from word `src` of the source binding to word
 * `dst` of the target binding. */
struct ScatterCopyRegion
{
	uint src;
	uint dst;
	uint words;
	uint pad;
};

/* Push constants of scatter_copy.comp: the table's region count. */
struct ScatterCopyPush
{
	uint count;
	uint pad0;
	uint pad1;
	uint pad2;
};

#ifdef __cplusplus
} // namespace quokka::gpu::detail
#endif

#endif
