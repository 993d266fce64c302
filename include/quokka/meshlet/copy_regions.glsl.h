// Chunking of the compute copy (copy_regions.comp), shared by C++ and GLSL.
// 256 invocations × 16 words each = 4,096 words (16 KiB) per workgroup: enough bytes in flight per group to stream,
// small enough that a 512 MiB compaction is 32 Ki groups (folded into y past 65,535).
#ifndef QUOKKA_MESHLET_COPY_REGIONS_GLSL_H
#define QUOKKA_MESHLET_COPY_REGIONS_GLSL_H

#define QUOKKA_MESHLET_COPY_GROUP_SIZE 256
#define QUOKKA_MESHLET_COPY_CHUNK_WORDS 4096

#endif
