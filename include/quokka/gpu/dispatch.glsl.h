// Grid-stride loops for dispatch1d() launches. dispatch1d() launches at most maxComputeWorkGroupCount[0] workgroups in
// one row (y = z = 1), so a kernel over `count` elements visits them as
//
//     for (uint i = gl_GlobalInvocationID.x; i < count; i = quokkaGridNext(i, count))
//
// and a kernel whose workgroups each own a block visits blocks g = gl_WorkGroupID.x, + gl_NumWorkGroups.x, … (the
// bound is uniform over the workgroup, so barriers inside such a loop are allowed). No second dimension: folding the
// overflow into y would be correct by the specification, but lavapipe (Mesa 22.3) leaves invocations of the second
// row unrun (a fill of 65,535 × 64 + 3,000 × 64 elements missed 126,465 of them).
//
// Keep each invocation's loop iterations, summed over all its loops, well below 65,535: llvmpipe's JIT ends every
// loop of a shader invocation after 65,535 iterations in all (LP_MAX_TGSI_LOOP_ITERATIONS, its guard against infinite
// loops), silently. A full row of 65,535 workgroups of 64 leaves at most 1,024 grid-stride iterations for any u32
// count; a launch capped far lower (dispatch1d's max_groups, for tests) can reach the guard.
#ifndef QUOKKA_DISPATCH_GLSL_H
#define QUOKKA_DISPATCH_GLSL_H

// The invocation's next element: i + the launch's invocation count, or `count` when that would wrap past 2^32 (so a
// count near 2^32 cannot make the loop run forever). A macro, not a function: gl_WorkGroupSize read in a function
// defined above the kernel's `layout(local_size_x = …) in;` is (1, 1, 1) — each element then ran about 64 times,
// harmless for a fill and wrong for the scan's `+=`.
#define quokkaGridNext(i, count)                                                                                       \
	((i) + gl_NumWorkGroups.x * gl_WorkGroupSize.x < (i) ? (count) : (i) + gl_NumWorkGroups.x * gl_WorkGroupSize.x)

#endif
