// quokka/modes/mode_key.hpp — an exact, reversible, compact key of a render object's pipeline state.
//
// The heap draws a slot's records with one pipeline and one set of dynamic state, so objects whose state differs must
// land in different slots; a ModeKey is what that routing compares. It is built for one framebuffer (its colour
// attachments, in order): each attachment's blend is resolved (PipelineStateValues::blendFor), so two snapshots that
// realise the same state on that framebuffer — an attachment given its own blend equal to the default, or one not
// named — get equal keys, and snapshots that realise different states never do (the encoding is exact: decode() gives
// the state back). Every attachment count is encoded (0…255), stencil and depth bias included.
//
// The key has two parts, kept apart so that slots differing only in dynamic state share one pipeline:
// - the **pipeline part**: what a VkPipeline bakes in — topology, depth clamp, alpha-to-coverage and every colour
//   attachment's blend (enable, factors, ops, write mask);
// - the **dynamic part**: Vulkan 1.3 dynamic state, set per draw — cull mode, front face, depth test, write and
//   compare, depth bias (enable, constant, slope, clamp) and stencil (enable, ops, compare, reference, masks).
//
// Compact: fields are bit-packed into 64-bit words — enums in the bits their core values need (a larger value, e.g. an
// advanced blend op, is written in full after an escape code), 32-bit masks and references in 9 bits when below 256,
// floats in 1 bit when zero. One attachment's pipeline part and a typical dynamic part take one word each.
// Floats are compared as values: +0 and −0 give one key; every NaN gives one key (whose decoded value is a NaN, which
// no PipelineStateValues compares equal to).
//
//   std::vector<std::string> attachments{"Colors"};
//   ModeKey a = ModeKey::encode(object_state, attachments).value();
//   if (a.pipeline() == b.pipeline()) { /* one pipeline, two sets of dynamic state */ }
//   scene::PipelineStateValues back = a.decode(attachments).value(); // == ModeKey::canonical(object_state, …)
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <absl/container/inlined_vector.h>

#include <quokka/base/result.hpp>
#include <quokka/scene/pipeline_state.hpp>

namespace quokka::modes
{

/// Bit-packed words of one part of a key (unused trailing bits are zero).
using KeyWords = absl::InlinedVector<uint64_t, 2>;

class ModeKey
{
public:
	/// The most colour attachments a key encodes.
	static constexpr size_t kMaxAttachments = 255;

	/// The key of `values` on a framebuffer whose colour attachments are `attachments`, in order. Errors:
	/// InvalidArgument for more than kMaxAttachments attachments.
	static Result<ModeKey> encode(const scene::PipelineStateValues& values, std::span<const std::string> attachments);
	/// The state the key encodes, in canonical form (see canonical()). Errors: InvalidArgument when `attachments` is
	/// not as many as the key was encoded for, or the words are not a key (a truncated or altered key).
	Result<scene::PipelineStateValues> decode(std::span<const std::string> attachments) const;
	/// What `values` realises on the framebuffer: `blend` holds one entry per attachment (its resolved blend, names
	/// not among `attachments` dropped), `default_blend` is the default BlendState, zeros are +0. decode(encode(v)) ==
	/// canonical(v) for every v without NaNs.
	static scene::PipelineStateValues canonical(const scene::PipelineStateValues& values,
	                                            std::span<const std::string> attachments);

	/// The pipeline part: keys with equal pipeline parts can share one VkPipeline.
	const KeyWords& pipeline() const { return pipeline_; }
	/// The dynamic part: set per draw.
	const KeyWords& dynamic() const { return dynamic_; }
	uint32_t attachments() const { return attachments_; }
	/// Bits the two parts use (their words hold them rounded up to 64).
	uint32_t pipelineBits() const { return pipeline_bits_; }
	uint32_t dynamicBits() const { return dynamic_bits_; }

	bool operator==(const ModeKey&) const = default;
	template <typename H>
	friend H AbslHashValue(H h, const ModeKey& k)
	{
		return H::combine(std::move(h), k.pipeline_, k.dynamic_);
	}
	/// A hash consistent with operator==.
	size_t hash() const;

private:
	KeyWords pipeline_, dynamic_;
	uint32_t attachments_ = 0;
	uint32_t pipeline_bits_ = 0, dynamic_bits_ = 0;
};

} // namespace quokka::modes
