// quokka/modes/mode_rules.hpp — an object's mode rules (scene::ModeRule) evaluated on the CPU.
//
// Both render paths route an object by the state its mode rules give: ModeInputs resolves the uniforms the rules read
// once (the object's own, standard derived or its derived ones, through inputs::DerivedUniforms), the renderer tracks
// those nodes as pipeline-state inputs, and apply() evaluates the rules over them in double (rules::evaluate, the
// oracle of any other evaluation) whenever one changes. A rule's `declared` input is the axis's value in the
// object's own state snapshot.
//
//   modes::ModeInputs in;
//   QUOKKA_TRY(in.resolve(object, derived));          // checks the rules, resolves their inputs
//   for (auto& node : in.nodes()) track(node);         // re-read the state when one changes
//   scene::PipelineStateValues v = object.state.snapshot(token);
//   QUOKKA_TRY(in.apply(object, token, v));            // v now holds the rules' values
#pragma once

#include <span>
#include <vector>

#include <quokka/adaptive/aval.hpp>
#include <quokka/base/result.hpp>
#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::modes
{

class RouteSpec;

/// The type a rule's result (and its `declared` input) has on `axis`: U32 for enum axes and Blend, Bool for bool axes.
fx::Type axisType(scene::ModeAxis axis);

/// Checks an object's mode rules: at most one per axis, each result of the axis's type (an enum axis takes i32 too),
/// `declared` read as the axis's type and not on Blend, a Blend rule with states to select. Errors: InvalidArgument,
/// one line naming the object and the axis.
Result<void> checkModeRules(const scene::RenderObject& object);

/// The inputs of an object's mode rules, resolved.
class ModeInputs
{
public:
	/// Checks the rules (checkModeRules) and resolves every input other than `declared`. Errors: as checkModeRules and
	/// DerivedUniforms::resolve (an input the object neither has nor derives).
	Result<void> resolve(const scene::RenderObject& object, inputs::DerivedUniforms& derived);
	/// The nodes the rules read (every rule's inputs but `declared`, in rule and input order).
	std::span<const adaptive::aval<scene::UniformValue>> nodes() const { return nodes_; }
	/// Applies the rules to `state` (the object's snapshot), reading the nodes with `token`. Errors: InvalidArgument
	/// naming the object and the axis — an input of another type than the rule reads, a value that is no value of the
	/// axis (a cull mode of 7, a blend index past the rule's states).
	Result<void> apply(const scene::RenderObject& object, adaptive::Token token,
	                   scene::PipelineStateValues& state) const;
	/// Checks that every node holds a value of the type its rule reads (apply()'s input errors), reading them with
	/// `token`, without evaluating the rules (GPU routing evaluates them on the device).
	Result<void> check(const scene::RenderObject& object, adaptive::Token token) const;
	/// Packs the inputs `spec` (made from the object's rules) reads into `out` (spec.inputWords() words), reading the
	/// nodes with `token`. A value check() would reject packs as zeros.
	void pack(const scene::RenderObject& object, adaptive::Token token, const RouteSpec& spec, uint32_t* out) const;

private:
	std::vector<adaptive::aval<scene::UniformValue>> nodes_;
};

} // namespace quokka::modes
