// The partition kernels' layouts, shared by C++ (quokka/modes/partition.hpp, src/modes/partition.cpp) and the kernels
// shaders/modes/partition_*.comp.
#ifndef QUOKKA_MODES_PARTITION_GLSL_H
#define QUOKKA_MODES_PARTITION_GLSL_H

/* Invocations per workgroup of every partition kernel, and the records a workgroup takes per step. */
#define QUOKKA_PARTITION_GROUP 256
/* Slots counted in workgroup-shared memory (more: counted with global atomics). */
#define QUOKKA_PARTITION_SHARED_SLOTS 1024
/* The most words a record has. */
#define QUOKKA_PARTITION_MAX_STRIDE 16
/* A record whose slot is this (or any value ≥ the slot count) belongs to no slot: it is dropped. */
#define QUOKKA_PARTITION_NO_SLOT 0xffffffffu

#ifdef __cplusplus
#include <cstdint>
namespace quokka::modes::detail
{
using uint = uint32_t;
#endif

/* Push constants of every partition kernel. mode: 0 = compact (slots laid out back to back by a scan of their counts),
 * 1 = regions (each slot appends into its region {base, capacity} of the regions binding). */
struct PartitionPush
{
	uint count;  /* records */
	uint stride; /* words per record */
	uint slots;
	uint mode;
};

#ifdef __cplusplus
} // namespace quokka::modes::detail
#endif

#endif
