// quokka/scene/pipeline_state.hpp — the fixed-function state of a render object, every leaf adaptive.
//
// Each leaf is an aval so applications bind it to their own inputs (a cval shared by many objects, a map of a
// selection flag, …). PipelineStateValues is the plain snapshot of all leaves: it is value-keyed (equal values → equal
// snapshots, whatever avals produced them), hashable, and what pipeline caches and mode keys are built from.
// Which leaves Vulkan 1.3 treats as dynamic state (cull, front face, depth test/write/compare, depth bias, stencil)
// is decided by the renderer, not here. Owner thread only (adaptive values).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include <quokka/adaptive/aval.hpp>
#include <quokka/rules/rule.hpp>

namespace quokka::scene
{

using adaptive::aval;

/// Blending of one colour attachment (Vulkan factors and ops), plus its write mask.
struct BlendState
{
	bool enabled = false;
	VkBlendFactor src_color = VK_BLEND_FACTOR_SRC_ALPHA;
	VkBlendFactor dst_color = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
	VkBlendOp color_op = VK_BLEND_OP_ADD;
	VkBlendFactor src_alpha = VK_BLEND_FACTOR_ONE;
	VkBlendFactor dst_alpha = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
	VkBlendOp alpha_op = VK_BLEND_OP_ADD;
	VkColorComponentFlags write_mask =
	    VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;

	bool operator==(const BlendState&) const = default;
	/// Standard premultiplied-free alpha blending (src·α + dst·(1−α)).
	static BlendState alpha()
	{
		BlendState b;
		b.enabled = true;
		return b;
	}
};

struct StencilState
{
	bool enabled = false;
	VkStencilOp fail = VK_STENCIL_OP_KEEP;
	VkStencilOp pass = VK_STENCIL_OP_KEEP;
	VkStencilOp depth_fail = VK_STENCIL_OP_KEEP;
	VkCompareOp compare = VK_COMPARE_OP_ALWAYS;
	uint32_t reference = 0;
	uint32_t compare_mask = 0xff;
	uint32_t write_mask = 0xff;

	bool operator==(const StencilState&) const = default;
};

struct DepthBias
{
	bool enabled = false;
	float constant = 0.0f;
	float slope = 0.0f;
	float clamp = 0.0f;

	bool operator==(const DepthBias&) const = default;
};

/// The plain values of every leaf: the pipeline-cache key part of a render object.
struct PipelineStateValues
{
	VkPrimitiveTopology topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
	VkCullModeFlags cull_mode = VK_CULL_MODE_NONE;
	VkFrontFace front_face = VK_FRONT_FACE_COUNTER_CLOCKWISE;
	bool depth_test = true;
	bool depth_write = true;
	VkCompareOp depth_compare = VK_COMPARE_OP_LESS_OR_EQUAL;
	bool depth_clamp = false;
	DepthBias depth_bias;
	StencilState stencil;
	BlendState default_blend;                ///< attachments without an entry in `blend`
	std::map<std::string, BlendState> blend; ///< by framebuffer attachment name
	bool alpha_to_coverage = false;

	bool operator==(const PipelineStateValues&) const = default;
	/// The blend state of attachment `name`.
	const BlendState& blendFor(const std::string& name) const;
	/// A hash consistent with operator==.
	size_t hash() const;
};

/// Adaptive pipeline state. Every leaf defaults to a constant holding the PipelineStateValues default.
struct PipelineState
{
	/// The default leaves are one set of constant nodes per thread, shared by every default state made on it: a
	/// default state allocates no node (a default RenderObject made 13 before). Constants are never marked and are read
	/// without edges, so the sharing changes nothing but node identity; per thread because nodes belong to the thread
	/// that made them (adaptive/core.hpp). The set lives until the thread ends (objects still holding it keep it).
	PipelineState();

	aval<VkPrimitiveTopology> topology;
	aval<VkCullModeFlags> cull_mode;
	aval<VkFrontFace> front_face;
	aval<bool> depth_test;
	aval<bool> depth_write;
	aval<VkCompareOp> depth_compare;
	aval<bool> depth_clamp;
	aval<DepthBias> depth_bias;
	aval<StencilState> stencil;
	aval<BlendState> default_blend;
	std::map<std::string, aval<BlendState>> blend;
	aval<bool> alpha_to_coverage;

	/// Reads every leaf with `token` (so the caller depends on all of them) and returns the values.
	PipelineStateValues snapshot(adaptive::Token token) const;
	/// The same, except the leaves of the axes in `skip` (bit 1 << ModeAxis; Blend: the default and per-attachment
	/// blends), which are neither read nor depended on and keep their PipelineStateValues defaults.
	PipelineStateValues snapshot(adaptive::Token token, uint32_t skip) const;

private:
	struct FreshConstants
	{
	};
	/// Every leaf a new constant node (builds a thread's shared set).
	explicit PipelineState(FreshConstants);
};

/// A pipeline-state axis a mode rule derives.
enum class ModeAxis : uint8_t
{
	CullMode,        ///< VkCullModeFlags (u32)
	FrontFace,       ///< VkFrontFace (u32)
	Topology,        ///< VkPrimitiveTopology (u32)
	DepthTest,       ///< bool
	DepthWrite,      ///< bool
	DepthCompare,    ///< VkCompareOp (u32)
	AlphaToCoverage, ///< bool
	Blend,           ///< an index (u32) into ModeRule::blends: every colour attachment's blend
};
/// The axis's name in messages: cull_mode, front_face, topology, depth_test, depth_write, depth_compare,
/// alpha_to_coverage, blend.
const char* axisName(ModeAxis axis);

/// A rule deriving one axis of an object's pipeline state from its uniforms: the rule (rules/rule.hpp) reads uniforms
/// by name — the object's own, the standard derived ones (ModelTrafo, ModelViewTrafo, …) and its derived ones — and
/// may read `declared`, the axis's value as the object's PipelineState gives it (u32 for enum axes, bool for bool
/// axes; not for Blend). Its result is the axis's value: a u32 (or i32) Vulkan enum value for enum axes, a bool for
/// bool axes, an index into `blends` for Blend. E.g. flip the front face where the model matrix mirrors:
///   {ModeAxis::FrontFace, Rule::make(select(determinant(upper3x3(leaf("ModelTrafo", M44f))) < lit(0.0),
///                                           lit(1u) - leaf("declared", U32), leaf("declared", U32))).value()}
/// At most one rule per axis per object.
struct ModeRule
{
	ModeAxis axis = ModeAxis::CullMode;
	rules::Rule rule;
	std::vector<BlendState> blends; ///< Blend: the states the rule's index selects
};

} // namespace quokka::scene
