// The arena scatter's layouts, shared by C++ (quokka/heap/arena_scatter.hpp, src/heap/arena_scatter.cpp) and the
// kernel shaders/heap/arena_scatter.comp (STYLE R9).
#ifndef QUOKKA_HEAP_ARENA_SCATTER_GLSL_H
#define QUOKKA_HEAP_ARENA_SCATTER_GLSL_H

/* Workgroup g copies regions g, g + groups, …; its invocations copy a region's words with a stride of the group
 * size. */
#define QUOKKA_HEAP_SCATTER_GROUP_SIZE 64

#ifdef __cplusplus
#include <cstdint>
namespace quokka::heap::detail
{
using uint = uint32_t;
#endif

/* One region of the table (16 bytes, std430 uvec4): `words` u32 words from word `src` of the source binding to word
 * `dst` of the target binding. */
struct ArenaScatterRegion
{
	uint src;
	uint dst;
	uint words;
	uint pad;
};

/* Push constants of arena_scatter.comp: the table's region count. */
struct ArenaScatterPush
{
	uint count;
	uint pad0;
	uint pad1;
	uint pad2;
};

#ifdef __cplusplus
} // namespace quokka::heap::detail
#endif

#endif
