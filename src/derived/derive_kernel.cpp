// Derive kernels (derive_kernel.hpp): constituents, compilation and dispatch.
#include <quokka/derived/derive_kernel.hpp>

#include <bit>
#include <cstring>

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/shader.hpp>

namespace quokka::derived
{

const char* precisionName(Precision p)
{
	return p == Precision::Fp64 ? "fp64" : "df32";
}

Precision precisionFor(const gpu::Device& device)
{
	return device.features().shader_float64 ? Precision::Fp64 : Precision::Df32;
}

void packConstituent(const rules::Value& value, Precision precision, std::span<uint32_t, kSlotWords> out)
{
	std::fill(out.begin(), out.end(), 0u);
	for (uint32_t c = 0; c < value.components(); ++c)
	{
		const double v = value.c[c];
		if (precision == Precision::Fp64)
		{
			const uint64_t bits = std::bit_cast<uint64_t>(v);
			out[2 * c] = uint32_t(bits);
			out[2 * c + 1] = uint32_t(bits >> 32);
		}
		else
		{
			const float hi = float(v);
			out[2 * c] = std::bit_cast<uint32_t>(hi);
			out[2 * c + 1] = std::bit_cast<uint32_t>(float(v - double(hi)));
		}
	}
}

Result<DeriveKernel> DeriveKernel::create(gpu::Device& device, std::vector<rules::Rule> rules, Precision precision)
{
	if (precision == Precision::Fp64 && !device.features().shader_float64)
		return makeError(ErrorCode::MissingFeature, "derive kernel: fp64 constituents need shaderFloat64, which " +
		                                                device.info().name + " lacks (use df32)");
	DeriveKernel k;
	for (const rules::Rule& r : rules)
	{
		if (r.type().scalar == fx::Scalar::Bool)
			return makeError(ErrorCode::InvalidArgument,
			                 "derive kernel: the rule " + r.describe() + " gives a bool, which no uniform holds");
		if (r.inputs().size() > 16)
			return makeError(ErrorCode::InvalidArgument, "derive kernel: the rule " + r.describe() + " reads " +
			                                                 std::to_string(r.inputs().size()) +
			                                                 " inputs (at most 16)");
		k.max_inputs_ = std::max(k.max_inputs_, uint32_t(r.inputs().size()));
	}
	const std::string glsl = kernelSource(rules, precision);
	QUOKKA_TRY_ASSIGN(code, device.shaderCompiler().compile(
	                            {glsl, gpu::ShaderStage::Compute, std::string("derive.") + precisionName(precision)}));
	QUOKKA_TRY_ASSIGN(pipeline, device.createComputePipeline({.spirv = *code, .name = "derive"}));
	k.pipeline_ = std::move(pipeline);
	k.rules_ = std::move(rules);
	k.precision_ = precision;
	return k;
}

void DeriveKernel::dispatch(gpu::CommandList& list, Slots packed, Slots computed, const gpu::Buffer& records,
                            const gpu::Buffer& target, uint32_t first, uint32_t count, uint32_t stride,
                            uint32_t epoch) const
{
	const RecordBatch batch{&records, &target, count, first};
	dispatchAll(list, packed, computed, std::span(&batch, 1), stride, epoch);
}

uint32_t DeriveKernel::dispatchAll(gpu::CommandList& list, Slots packed, Slots computed,
                                   std::span<const RecordBatch> batches, uint32_t stride, uint32_t epoch) const
{
	QUOKKA_ASSERT(stride >= recordStride(max_inputs_), "DeriveKernel::dispatchAll: records too narrow for the rules");
	uint32_t dispatches = 0;
	for (const RecordBatch& b : batches)
	{
		if (b.count == 0)
			continue;
		if (dispatches++ == 0)
		{
			pipeline_->bind(list);
			gpu::pushStorageBuffers(
			    list, *pipeline_,
			    {{packed.values}, {b.records}, {b.target}, {packed.epochs}, {computed.values}, {computed.epochs}});
		}
		else
			gpu::pushStorageBuffers(list, *pipeline_, 1, {{b.records}, {b.target}});
		const uint32_t push[4] = {b.first, b.count, stride, epoch};
		pipeline_->pushConstants(list, push, sizeof(push));
		gpu::dispatch1d(list, *pipeline_, b.count);
	}
	return dispatches;
}

Result<ChainKernel> ChainKernel::create(gpu::Device& device, Precision precision)
{
	if (precision == Precision::Fp64 && !device.features().shader_float64)
		return makeError(ErrorCode::MissingFeature, "chain kernel: fp64 constituents need shaderFloat64, which " +
		                                                device.info().name + " lacks (use df32)");
	ChainKernel k;
	QUOKKA_TRY_ASSIGN(code, device.shaderCompiler().compile({chainKernelSource(precision), gpu::ShaderStage::Compute,
	                                                         std::string("chain.") + precisionName(precision)}));
	QUOKKA_TRY_ASSIGN(pipeline, device.createComputePipeline({.spirv = *code, .name = "chain"}));
	k.pipeline_ = std::move(pipeline);
	k.precision_ = precision;
	return k;
}

void ChainKernel::dispatch(gpu::CommandList& list, Slots packed, Slots computed, const gpu::Buffer& links,
                           uint32_t first, uint32_t count, uint32_t epoch) const
{
	const LinkLevel level{&links, count, first};
	dispatchLevels(list, packed, computed, std::span(&level, 1), epoch);
}

uint32_t ChainKernel::dispatchLevels(gpu::CommandList& list, Slots packed, Slots computed,
                                     std::span<const LinkLevel> levels, uint32_t epoch) const
{
	uint32_t dispatches = 0;
	for (const LinkLevel& level : levels)
	{
		if (level.count == 0)
			continue;
		if (dispatches++ == 0)
		{
			pipeline_->bind(list);
			gpu::pushStorageBuffers(
			    list, *pipeline_,
			    {{packed.values}, {packed.epochs}, {computed.values}, {computed.epochs}, {level.links}});
		}
		else
		{
			// (A level reads what the one before wrote.)
			list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
			                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
			gpu::pushStorageBuffers(list, *pipeline_, 4, {{level.links}});
		}
		const uint32_t push[3] = {level.first, level.count, epoch};
		pipeline_->pushConstants(list, push, sizeof(push));
		gpu::dispatch1d(list, *pipeline_, level.count);
	}
	return dispatches;
}

} // namespace quokka::derived
