// Linear invocation index of a dispatch1d() launch: groups fold into y when x exceeds maxComputeWorkGroupCount[0].
#ifndef QUOKKA_DISPATCH_GLSL_H
#define QUOKKA_DISPATCH_GLSL_H

uint quokkaLinearInvocation()
{
	return gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * gl_WorkGroupSize.x) + gl_GlobalInvocationID.x;
}

#endif
