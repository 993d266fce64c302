// quokka/derived/derive_kernel.hpp — derived uniforms computed on the GPU: one compute kernel evaluates many rules over
// many records, reading high-precision constituents and writing float outputs where the draws read them.
//
// The data model (one kernel dispatch per arena chunk):
//   constituents — a buffer of slots, kSlotWords words each: a value a rule reads (a trafo's forward or backward
//                  matrix, a vector, a scalar), every component as an fp64 double (2 words, low first) or as a df32
//                  pair (hi, lo floats: value ≈ hi + lo, ~48 significant bits), packed by packConstituent();
//   records      — fixed-stride rows of uint words [rule index, output word, epoch, input slot 0, input slot 1, …]:
//                  rule index into the kernel's rule list, the output's word offset in the target buffer (the arena
//                  chunk), the epoch the record was last written in, and one constituent slot per rule input
//                  (rules::Rule::inputs() order);
//   epochs       — one word per constituent slot: the epoch its value was last written in. A dispatch at epoch E
//                  computes only the records written at E or reading a slot written at E (E = 0: every record), so a
//                  changed trafo recomputes the values reading it, not the chunk;
//   target       — the buffer the outputs are written to, tightly packed f32/i32/u32 components (column-major), the
//                  layout the heap's arena uses for a uniform's data.
// Slots come in two kinds: packed ones (written by the host: the constituents buffer and its epochs) and computed ones
// (slot | kComputedSlot: a second pair of buffers, written by the chain kernel).
//
// Transform chains (scene/trafo_chain.hpp) are composed by the chain kernel, one dispatch per level of the hierarchy:
// a link record [epoch, forward out, backward out, parent forward, parent backward, local forward, local backward]
// computes forward = parent · local and backward = local⁻¹ · parent⁻¹ (the stored backward matrices) into computed
// slots at the constituents' precision (fp64 in the CPU's order: equal to math::Trafo3d's product bit for bit), and
// stamps their epochs, so the next level and the derive records see in the same epoch what changed. An out slot
// kNoSlot skips that half (its inputs are then kNoSlot too).
//
// Products, sums, negation, component moves (transpose, resize, column, swizzle, construct) and select are computed
// at the constituents' precision — in fp64 in the order rules::evaluate sums (left to right, never contracted into
// fma), so outputs equal the CPU's double result rounded to f32 exactly; in df32 with error-free transforms (`precise`:
// SPIR-V NoContraction), within about 2^-44 of the operands' magnitude. Every other operation (division, functions,
// comparisons, inverses of computed matrices) runs on GLSL values: doubles in fp64 (the float-only functions in
// float), floats in df32. Outputs are narrowed to f32 only at the end, so a ModelView of two trafos 10^7 m from the
// origin keeps its camera-relative translation to float precision.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/rules/rule.hpp>

namespace quokka::derived
{

/// How constituents are stored and products computed.
enum class Precision : uint8_t
{
	Fp64, ///< doubles: needs the device's shaderFloat64
	Df32, ///< float pairs: every device
};
const char* precisionName(Precision p);
/// Fp64 where the device has shaderFloat64, else Df32.
Precision precisionFor(const gpu::Device& device);

/// Words per constituent slot: a 4×4 matrix at two words per component.
inline constexpr uint32_t kSlotWords = 32;

/// `value`'s components as constituent words at `precision` (2 words each; words past them are zero).
void packConstituent(const rules::Value& value, Precision precision, std::span<uint32_t, kSlotWords> out);

/// Record words for rules reading at most `max_inputs` inputs: [rule, output word, epoch, slots…].
constexpr uint32_t recordStride(uint32_t max_inputs)
{
	return 3 + max_inputs;
}
/// Where a record's words are.
inline constexpr uint32_t kRecordRule = 0, kRecordOutput = 1, kRecordEpoch = 2, kRecordInputs = 3;

/// A slot with this bit set is slot (s & ~kComputedSlot) of the computed buffers.
inline constexpr uint32_t kComputedSlot = 0x80000000u;
/// No slot (a chain link's half that is not computed).
inline constexpr uint32_t kNoSlot = 0xffffffffu;
/// Words of a chain link record: [epoch, forward out, backward out, parent fwd, parent bwd, local fwd, local bwd].
inline constexpr uint32_t kChainStride = 7;

/// A pair of constituent buffers: the values (kSlotWords words per slot) and one epoch word per slot.
struct Slots
{
	const gpu::Buffer* values = nullptr;
	const gpu::Buffer* epochs = nullptr;
};

/// One buffer of records and the chunk they write (DeriveKernel::dispatchAll): records [first, first + count).
struct RecordBatch
{
	const gpu::Buffer* records = nullptr;
	const gpu::Buffer* target = nullptr;
	uint32_t count = 0;
	uint32_t first = 0; ///< the first record
};
/// One level of chain links (ChainKernel::dispatchLevels): link records [first, first + count) of `links`.
struct LinkLevel
{
	const gpu::Buffer* links = nullptr;
	uint32_t count = 0;
	uint32_t first = 0; ///< the first link record
};

/// The GLSL of a kernel over `rules` (rule index = position) at `precision`.
std::string kernelSource(std::span<const rules::Rule> rules, Precision precision);
/// The GLSL of the chain kernel at `precision`.
std::string chainKernelSource(Precision precision);

/// A compiled derive kernel.
class DeriveKernel
{
public:
	/// Compiles the kernel over `rules`. Errors: MissingFeature for Fp64 on a device without shaderFloat64;
	/// InvalidArgument for a rule whose output is bool or that reads more than 16 inputs; as the shader compiler.
	static Result<DeriveKernel> create(gpu::Device& device, std::vector<rules::Rule> rules, Precision precision);

	Precision precision() const { return precision_; }
	std::span<const rules::Rule> rules() const { return rules_; }
	/// The most inputs any rule reads (records need recordStride() of it, or more).
	uint32_t maxInputs() const { return max_inputs_; }

	/// Records `count` records from record `first` (each `stride` words) at `epoch` (0: every record; `epochs` is
	/// then not read): binds the pipeline and the four buffers (push descriptors) and dispatches. The caller orders
	/// the writes of the buffers before and the reads of `target` after with barriers.
	void dispatch(gpu::CommandList& list, const gpu::Buffer& constituents, const gpu::Buffer& epochs,
	              const gpu::Buffer& records, const gpu::Buffer& target, uint32_t first, uint32_t count,
	              uint32_t stride, uint32_t epoch) const
	{
		dispatch(list, {&constituents, &epochs}, {&constituents, &epochs}, records, target, first, count, stride,
		         epoch);
	}
	/// The same with computed slots (records may read slots with kComputedSlot set from `computed`).
	void dispatch(gpu::CommandList& list, Slots packed, Slots computed, const gpu::Buffer& records,
	              const gpu::Buffer& target, uint32_t first, uint32_t count, uint32_t stride, uint32_t epoch) const;
	/// One dispatch per batch (an empty one skipped) with one pipeline bind, the slot buffers pushed once and per batch
	/// only its records and target: the frame's derive work over every chunk. Returns the dispatches recorded.
	uint32_t dispatchAll(gpu::CommandList& list, Slots packed, Slots computed, std::span<const RecordBatch> batches,
	                     uint32_t stride, uint32_t epoch) const;

private:
	DeriveKernel() = default;
	gpu::PipelineHandle pipeline_;
	std::vector<rules::Rule> rules_;
	Precision precision_ = Precision::Df32;
	uint32_t max_inputs_ = 0;
};

/// The compiled chain kernel.
class ChainKernel
{
public:
	/// Errors: MissingFeature for Fp64 on a device without shaderFloat64; as the shader compiler.
	static Result<ChainKernel> create(gpu::Device& device, Precision precision);
	Precision precision() const { return precision_; }
	/// Records `count` link records (kChainStride words each) from record `first` of `links` at `epoch` (0: every
	/// link): each computes its halves into `computed` when the record was written at `epoch` or an input slot was.
	/// The caller orders the writes before and the reads after with barriers (between two levels: compute → compute).
	void dispatch(gpu::CommandList& list, Slots packed, Slots computed, const gpu::Buffer& links, uint32_t first,
	              uint32_t count, uint32_t epoch) const;
	/// The levels in order, one dispatch each (an empty one skipped) with a compute → compute barrier between two, one
	/// pipeline bind, the slot buffers pushed once and per level only its links. Returns the dispatches recorded.
	uint32_t dispatchLevels(gpu::CommandList& list, Slots packed, Slots computed, std::span<const LinkLevel> levels,
	                        uint32_t epoch) const;

private:
	ChainKernel() = default;
	gpu::PipelineHandle pipeline_;
	Precision precision_ = Precision::Df32;
};

} // namespace quokka::derived
