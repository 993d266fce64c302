// Timing recorded GPU work and the device's copy bandwidth (bench_copy.hpp).
#include "bench_copy.hpp"

#include <algorithm>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/gpu/shader.hpp>

namespace quokka::app
{

Result<double> copyBandwidth(gpu::Device& device, gpu::FrameTimer& timer, uint64_t bytes, uint32_t reps)
{
	auto a = device.createBuffer({bytes, gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst,
	                              gpu::MemoryDomain::DeviceLocal, "bench.copy.a"});
	if (!a.ok())
		return a.error();
	auto b = device.createBuffer({bytes, gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst,
	                              gpu::MemoryDomain::DeviceLocal, "bench.copy.b"});
	if (!b.ok())
		return b.error();
	return medianRate(device, timer, bytes, reps,
	                  [&](gpu::CommandList& list) -> Result<void>
	                  {
		                  gpu::copyBuffer(list.vk(), *a.value(), 0, *b.value(), 0, bytes);
		                  return {};
	                  });
}

Result<double> computeCopyBandwidth(gpu::Device& device, gpu::FrameTimer& timer, uint64_t bytes, uint32_t reps)
{
	static const char* kCopy = R"(#version 460
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) readonly buffer Src { uvec4 src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Params { uint count; } params;
void main()
{
	const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
	for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride)
		dst[i] = src[i];
}
)";
	auto code = device.shaderCompiler().compile({kCopy, gpu::ShaderStage::Compute, "bench_copy.comp"});
	if (!code.ok())
		return code.error();
	auto pipeline = device.createComputePipeline({.spirv = *code.value(), .name = "bench.copy"});
	if (!pipeline.ok())
		return pipeline.error();
	auto a = device.createBuffer({bytes, gpu::BufferUsage::Storage, gpu::MemoryDomain::DeviceLocal, "bench.ccopy.a"});
	if (!a.ok())
		return a.error();
	auto b = device.createBuffer({bytes, gpu::BufferUsage::Storage, gpu::MemoryDomain::DeviceLocal, "bench.ccopy.b"});
	if (!b.ok())
		return b.error();
	const uint32_t count = uint32_t(bytes / 16);
	// Enough groups to fill any current GPU (a few waves of 256-wide groups), few enough to keep the loop useful.
	const uint32_t groups = std::min<uint32_t>(std::max<uint32_t>(count / 256, 1), 4096);
	return medianRate(device, timer, bytes, reps,
	                  [&](gpu::CommandList& list) -> Result<void>
	                  {
		                  pipeline.value()->bind(list);
		                  pipeline.value()->pushBuffer(list, 0, *a.value());
		                  pipeline.value()->pushBuffer(list, 1, *b.value());
		                  pipeline.value()->pushConstants(list, &count, sizeof(count));
		                  vkCmdDispatch(list.vk(), groups, 1, 1);
		                  return {};
	                  });
}

} // namespace quokka::app
