// Mode rules on the CPU (mode_rules.hpp): checks, input resolution and application to a state snapshot.
#include <quokka/modes/mode_rules.hpp>

#include <array>
#include <cmath>
#include <cstdio>

#include <absl/container/inlined_vector.h>

#include <quokka/inputs/object_inputs.hpp>
#include <quokka/modes/route_spec.hpp>

namespace quokka::modes
{

using scene::ModeAxis;

namespace
{

constexpr std::string_view kDeclared = "declared";

bool isBoolAxis(ModeAxis a)
{
	return a == ModeAxis::DepthTest || a == ModeAxis::DepthWrite || a == ModeAxis::AlphaToCoverage;
}

/// The largest value of an enum axis (core Vulkan values).
uint32_t axisMax(ModeAxis a)
{
	switch (a)
	{
	case ModeAxis::CullMode:
		return VK_CULL_MODE_FRONT_AND_BACK;
	case ModeAxis::FrontFace:
		return VK_FRONT_FACE_CLOCKWISE;
	case ModeAxis::Topology:
		return VK_PRIMITIVE_TOPOLOGY_PATCH_LIST;
	case ModeAxis::DepthCompare:
		return VK_COMPARE_OP_ALWAYS;
	default:
		return 1;
	}
}

Error ruleError(const scene::RenderObject& o, ModeAxis a, const std::string& what)
{
	return makeError(ErrorCode::InvalidArgument,
	                 inputs::objectName(o) + ": the mode rule for " + scene::axisName(a) + " " + what);
}

} // namespace

fx::Type axisType(ModeAxis axis)
{
	return isBoolAxis(axis) ? fx::Bool : fx::U32;
}

Result<void> checkModeRules(const scene::RenderObject& o)
{
	std::array<bool, 8> seen{};
	for (const scene::ModeRule& m : o.mode_rules)
	{
		const size_t a = size_t(m.axis);
		if (a >= seen.size())
			return makeError(ErrorCode::InvalidArgument, inputs::objectName(o) + ": a mode rule for an unknown axis");
		if (seen[a])
			return makeError(ErrorCode::InvalidArgument, inputs::objectName(o) + ": two mode rules for " +
			                                                 scene::axisName(m.axis) + " (at most one per axis)");
		seen[a] = true;
		const fx::Type want = axisType(m.axis), got = m.rule.type();
		if (!(got == want || (want == fx::U32 && got == fx::I32)))
			return ruleError(o, m.axis, "gives " + fx::typeName(got) + " (the axis takes " + fx::typeName(want) + ")");
		if (m.axis == ModeAxis::Blend && m.blends.empty())
			return ruleError(o, m.axis, "has no blend states to select");
		for (const rules::Input& in : m.rule.inputs())
			if (in.name == kDeclared)
			{
				if (m.axis == ModeAxis::Blend)
					return ruleError(o, m.axis, "reads 'declared' (a blend rule selects among its states)");
				if (in.type != want || in.inverse)
					return ruleError(o, m.axis,
					                 "reads 'declared' as " + fx::typeName(in.type) + " (it is " + fx::typeName(want) +
					                     ")");
			}
	}
	return {};
}

Result<void> ModeInputs::resolve(const scene::RenderObject& o, inputs::DerivedUniforms& derived)
{
	nodes_.clear();
	QUOKKA_TRY(checkModeRules(o));
	for (const scene::ModeRule& m : o.mode_rules)
		for (const rules::Input& in : m.rule.inputs())
			if (in.name != kDeclared)
			{
				Result<adaptive::aval<scene::UniformValue>> node = derived.resolve(o, in.name);
				if (!node)
				{
					if (!o.uniforms.contains(in.name) && !o.derived.contains(in.name))
						return ruleError(o, m.axis,
						                 "reads '" + in.name + "', a uniform the object neither has nor derives");
					// (The message names the object already.)
					const std::string prefix = inputs::objectName(o) + ": ";
					std::string what = node.error().message;
					if (what.starts_with(prefix))
						what.erase(0, prefix.size());
					return ruleError(o, m.axis, "reads '" + in.name + "': " + what);
				}
				nodes_.push_back(std::move(*node));
			}
	return {};
}

Result<void> ModeInputs::apply(const scene::RenderObject& o, adaptive::Token token,
                               scene::PipelineStateValues& state) const
{
	size_t next = 0;
	// A rule's `declared` is its axis in `state` as the snapshot gave it: only the axis's own rule (one per axis)
	// writes it, and blend rules read no `declared`.
	for (const scene::ModeRule& m : o.mode_rules)
	{
		absl::InlinedVector<rules::Value, 4> values;
		for (const rules::Input& in : m.rule.inputs())
		{
			if (in.name == kDeclared)
			{
				const uint32_t d = axisValue(state, m.axis);
				values.push_back(isBoolAxis(m.axis) ? rules::Value::boolean(d != 0) : rules::Value::u32(d));
				continue;
			}
			QUOKKA_ASSERT(next < nodes_.size(), "ModeInputs::apply before resolve");
			const scene::UniformValue& v = nodes_[next++].getValue(token);
			std::optional<rules::Value> value = inputs::ruleInput(v, in);
			if (!value)
				return ruleError(o, m.axis,
				                 "reads '" + in.name + "' as " + fx::typeName(in.type) + " but its value is not");
			values.push_back(*value);
		}
		const double r = rules::evaluate(m.rule, values).c[0];
		if (isBoolAxis(m.axis))
		{
			setAxis(state, m.axis, r != 0.0 ? 1u : 0u, m.blends);
			continue;
		}
		const uint32_t limit = m.axis == ModeAxis::Blend ? uint32_t(m.blends.size()) - 1 : axisMax(m.axis);
		if (!(r >= 0.0 && r <= double(limit)) || r != std::floor(r))
		{
			char text[32];
			std::snprintf(text, sizeof text, "%g", r);
			return ruleError(o, m.axis, std::string("gives ") + text + " (not a value of the axis)");
		}
		setAxis(state, m.axis, uint32_t(r), m.blends);
	}
	return {};
}

Result<void> ModeInputs::check(const scene::RenderObject& o, adaptive::Token token) const
{
	size_t next = 0;
	for (const scene::ModeRule& m : o.mode_rules)
		for (const rules::Input& in : m.rule.inputs())
			if (in.name != kDeclared)
			{
				QUOKKA_ASSERT(next < nodes_.size(), "ModeInputs::check before resolve");
				if (!inputs::ruleInput(nodes_[next++].getValue(token), in))
					return ruleError(o, m.axis,
					                 "reads '" + in.name + "' as " + fx::typeName(in.type) + " but its value is not");
			}
	return {};
}

void ModeInputs::pack(const scene::RenderObject& o, adaptive::Token token, const RouteSpec& spec, uint32_t* out) const
{
	size_t first = 0; // the node of the current rule's first input (nodes_ skips `declared`)
	const std::span<const RouteAxis> axes = spec.axes();
	QUOKKA_ASSERT(axes.size() == o.mode_rules.size(), "ModeInputs::pack with another object's spec");
	for (size_t r = 0; r < axes.size(); ++r)
	{
		const std::span<const rules::Input> declared_inputs = o.mode_rules[r].rule.inputs();
		uint32_t at = axes[r].offset;
		for (size_t k = 0; k < axes[r].sources.size(); ++k)
		{
			const uint32_t source = axes[r].sources[k];
			size_t node = first;
			for (uint32_t j = 0; j < source; ++j)
				node += declared_inputs[j].name != kDeclared;
			const rules::Input& in = axes[r].rule.inputs()[k];
			const std::optional<rules::Value> v = inputs::ruleInput(nodes_[node].getValue(token), in);
			const uint32_t words = uint32_t(in.type.rows) * in.type.cols;
			if (v)
				RouteSpec::pack(*v, out + at);
			else
				std::fill(out + at, out + at + words, 0u);
			at += words;
		}
		for (const rules::Input& in : declared_inputs)
			first += in.name != kDeclared;
	}
}

} // namespace quokka::modes
