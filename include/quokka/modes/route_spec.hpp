// quokka/modes/route_spec.hpp — mode rules specialised for GPU routing: which slot each record's rules choose.
//
// A RouteSpec is what a group of objects sharing one set of mode rules and one declared state compiles to: each rule
// with its `declared` input bound to the declared state's value and folded (rules::fold), the set of values each
// rule can give (a constant, the branches of selects, else every value of the axis), and the cartesian product of
// those sets as the group's slots — slot = Σ digit(axis) × radix(axis), the digit being the value's index in its
// axis's set (no cap at 16; at most kMaxRouteSlots). Every record carries its rules' inputs packed as 32-bit words
// (inputWords() per record, in axis then input order, each value as the rule reads it: floats, ints, uints, bools as
// 0/1; matrices column-major). The generated kernel (kernelSource(), RouteKernel) evaluates the folded rules per
// record in float and writes the record's slot, or kNoSlot when a rule gives no value of its axis (the record is not
// drawn; the CPU path reports such a value as an error); slotOf() is its oracle on the CPU, in double.
//
//   auto spec = modes::RouteSpec::make(object.mode_rules, declared_state).value();
//   for (uint32_t s = 0; s < spec.slots(); ++s) pipelineFor(spec.state(s, declared_state));
//   auto kernel = modes::RouteKernel::create(device, spec).value();
//   kernel.dispatch(list, inputs, slot_of, count);   // then partition the records by slot_of (partition.hpp)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/rules/rule.hpp>
#include <quokka/scene/pipeline_state.hpp>

namespace quokka::modes
{

/// The most slots one RouteSpec may have (the product of its axes' value sets).
inline constexpr uint32_t kMaxRouteSlots = 4096;

/// One routed axis: its folded rule, the values it can give (ascending) and where its inputs come from.
struct RouteAxis
{
	scene::ModeAxis axis = scene::ModeAxis::CullMode;
	rules::Rule rule;                      ///< `declared` bound and folded
	std::vector<uint32_t> values;          ///< the axis values the rule can give, ascending (bools: 0, 1)
	std::vector<scene::BlendState> blends; ///< Blend: the states values index
	/// For each input of `rule`: its index among the inputs of the ModeRule's rule (the object resolves those).
	std::vector<uint32_t> sources;
	uint32_t radix = 1;  ///< slot weight of this axis's digit
	uint32_t offset = 0; ///< first word of this axis's inputs in a record
};

class RouteSpec
{
public:
	/// The spec of `rules` (already checked: checkModeRules) with `declared` read from `declared`. Errors:
	/// InvalidArgument when the slots would exceed kMaxRouteSlots.
	static Result<RouteSpec> make(std::span<const scene::ModeRule> rules, const scene::PipelineStateValues& declared);

	std::span<const RouteAxis> axes() const { return axes_; }
	uint32_t slots() const { return slots_; }
	/// Words of one record's packed inputs.
	uint32_t inputWords() const { return words_; }
	/// `declared` with each routed axis set to its value in `slot`.
	scene::PipelineStateValues state(uint32_t slot, const scene::PipelineStateValues& declared) const;
	/// The slot the packed `words` (inputWords()) choose, evaluated in double; kNoSlot when a rule gives a value
	/// outside its axis's set.
	uint32_t slotOf(std::span<const uint32_t> words) const;
	/// The compute kernel: binding 0 the records' packed inputs (any buffer when inputWords() is 0), binding 1 one slot
	/// per record, binding 2 one word lowered (atomicMin) to the index of a record whose rules gave no value of their
	/// axis; push constant: count. Equal sources compute the same slots: a cache key for kernels.
	const std::string& kernelSource() const { return source_; }

	/// The words of `value` as a record packs it (value.components() words).
	static void pack(const rules::Value& value, uint32_t* out);

private:
	std::vector<RouteAxis> axes_;
	uint32_t slots_ = 1;
	uint32_t words_ = 0;
	std::string source_;
};

/// The compute pipeline of one RouteSpec's kernel.
class RouteKernel
{
public:
	/// Errors: ShaderCompile (a bug: the generated source is checked by the tests), as pipeline creation.
	static Result<RouteKernel> create(gpu::Device& device, const RouteSpec& spec);
	/// Records the kernel over `count` records: reads `inputs` (count × inputWords() words), writes `slot_of` (count
	/// words) and lowers `bad`'s first word to the smallest index of a record it gave kNoSlot (the caller sets it to
	/// kNoSlot and reads it once the work completed). The caller orders the inputs' writes before and the slots' reads
	/// after (compute).
	void dispatch(gpu::CommandList& list, const gpu::Buffer& inputs, const gpu::Buffer& slot_of, const gpu::Buffer& bad,
	              uint32_t count) const;

private:
	gpu::PipelineHandle pipeline_;
};

/// The axes `rules` derive, as a mask (bit 1 << ModeAxis): the leaves PipelineState::snapshot(token, skip) skips.
uint32_t ruledAxes(std::span<const scene::ModeRule> rules);
/// Whether `node` is a leaf of an axis in `axes` (a mask as ruledAxes gives) of `state`.
bool isAxisLeaf(const scene::PipelineState& state, uint32_t axes, const adaptive::AdaptiveObject* node);
/// The leaf of `axis` in `state` (not Blend: several leaves) — what a rule's `declared` reads.
const adaptive::AdaptiveObject* declaredLeaf(const scene::PipelineState& state, scene::ModeAxis axis);
/// Sets `axis` of `values` to its leaf's value in `state`, read with `token` (not Blend).
void readDeclared(const scene::PipelineState& state, scene::ModeAxis axis, adaptive::Token token,
                  scene::PipelineStateValues& values);

/// The value of `axis` in `state` as `declared` reads it (0 for Blend).
uint32_t axisValue(const scene::PipelineStateValues& state, scene::ModeAxis axis);

/// Sets `axis` of `state` to `value` (a Blend value indexes `blends`: every attachment's blend).
void setAxis(scene::PipelineStateValues& state, scene::ModeAxis axis, uint32_t value,
             std::span<const scene::BlendState> blends);

} // namespace quokka::modes
