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

/// The GLSL of a kernel over `rules` (rule index = position) at `precision`.
std::string kernelSource(std::span<const rules::Rule> rules, Precision precision);

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
	              uint32_t stride, uint32_t epoch) const;

private:
	DeriveKernel() = default;
	gpu::PipelineHandle pipeline_;
	std::vector<rules::Rule> rules_;
	Precision precision_ = Precision::Df32;
	uint32_t max_inputs_ = 0;
};

} // namespace quokka::derived
