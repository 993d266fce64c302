// RouteSpec and RouteKernel (route_spec.hpp): folding, value sets, the mixed-radix slots and the generated kernel.
#include <quokka/modes/route_spec.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <quokka/base/assert.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/shader.hpp>
#include <quokka/modes/mode_rules.hpp>
#include <quokka/modes/partition.hpp>

namespace quokka::modes
{

using scene::ModeAxis;

namespace
{

constexpr std::string_view kDeclared = "declared";
constexpr uint32_t kGroup = 64;

bool isBoolAxis(ModeAxis a)
{
	return axisType(a) == fx::Bool;
}

/// Every value of `axis` (Blend: the indices of `blends`); topologies: the list topologies the heap draws.
std::vector<uint32_t> domainOf(ModeAxis axis, size_t blends)
{
	switch (axis)
	{
	case ModeAxis::CullMode:
		return {0, 1, 2, 3};
	case ModeAxis::FrontFace:
		return {0, 1};
	case ModeAxis::Topology:
		return {VK_PRIMITIVE_TOPOLOGY_POINT_LIST, VK_PRIMITIVE_TOPOLOGY_LINE_LIST, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST};
	case ModeAxis::DepthCompare:
		return {0, 1, 2, 3, 4, 5, 6, 7};
	case ModeAxis::Blend:
	{
		std::vector<uint32_t> v(blends);
		for (uint32_t i = 0; i < v.size(); ++i)
			v[i] = i;
		return v;
	}
	default:
		return {0, 1};
	}
}

/// The values node `n` of `rule` can take, as axis values (a constant, the union of a select's branches); every
/// value of the domain where the node is computed.
void valuesOf(const rules::Rule& rule, uint32_t n, const std::vector<uint32_t>& domain, bool boolean,
              std::vector<uint32_t>& out)
{
	const rules::Node& node = rule.nodes()[n];
	if (node.op == rules::Op::Const)
	{
		const double v = rule.literals()[node.aux].c[0];
		const double x = boolean ? (v != 0.0 ? 1.0 : 0.0) : v;
		if (x >= 0.0 && x == std::floor(x) && x <= 4294967295.0 &&
		    std::find(domain.begin(), domain.end(), uint32_t(x)) != domain.end())
			out.push_back(uint32_t(x));
		return;
	}
	if (node.op == rules::Op::Select)
	{
		valuesOf(rule, node.kid[1], domain, boolean, out);
		valuesOf(rule, node.kid[2], domain, boolean, out);
		return;
	}
	out.insert(out.end(), domain.begin(), domain.end());
}

uint32_t declaredOf(ModeAxis a, const scene::PipelineStateValues& s)
{
	switch (a)
	{
	case ModeAxis::CullMode:
		return s.cull_mode;
	case ModeAxis::FrontFace:
		return s.front_face;
	case ModeAxis::Topology:
		return s.topology;
	case ModeAxis::DepthTest:
		return s.depth_test;
	case ModeAxis::DepthWrite:
		return s.depth_write;
	case ModeAxis::DepthCompare:
		return s.depth_compare;
	case ModeAxis::AlphaToCoverage:
		return s.alpha_to_coverage;
	case ModeAxis::Blend:
		return 0;
	}
	return 0;
}

/// A GLSL expression loading a value of `t` from the record words at `at` (a GLSL expression of the first word).
std::string load(fx::Type t, const std::string& at)
{
	auto component = [&](uint32_t k)
	{
		const char* format = t.scalar == fx::Scalar::F32    ? "uintBitsToFloat(w[%s + %uu])"
		                     : t.scalar == fx::Scalar::I32  ? "int(w[%s + %uu])"
		                     : t.scalar == fx::Scalar::Bool ? "(w[%s + %uu] != 0u)"
		                                                    : "w[%s + %uu]";
		char text[96];
		std::snprintf(text, sizeof text, format, at.c_str(), k);
		return std::string(text);
	};
	const std::string type = rules::glslType(t, rules::Precision::F32);
	if (t.rows == 1 && t.cols == 1)
		return component(0);
	std::string s = type + "(";
	if (t.cols == 1)
	{
		for (uint32_t r = 0; r < t.rows; ++r)
			s += (r ? ", " : "") + component(r);
		return s + ")";
	}
	const std::string column = rules::glslType(fx::Type{t.scalar, t.rows, 1}, rules::Precision::F32);
	for (uint32_t c = 0; c < t.cols; ++c)
	{
		s += (c ? ", " : "") + column + "(";
		for (uint32_t r = 0; r < t.rows; ++r)
			s += (r ? ", " : "") + component(c * t.rows + r);
		s += ")";
	}
	return s + ")";
}

std::string generate(std::span<const RouteAxis> axes, uint32_t words)
{
	std::string s = "#version 460\nlayout(local_size_x = " + std::to_string(kGroup) + ") in;\n";
	s += "layout(set = 0, binding = 0, std430) readonly buffer Inputs { uint w[]; };\n"
	     "layout(set = 0, binding = 1, std430) writeonly buffer Slots { uint slot_of[]; };\n"
	     "layout(set = 0, binding = 2, std430) buffer Bad { uint first_bad; };\n"
	     "layout(push_constant) uniform Push { uint count; } pc;\n";
	for (size_t a = 0; a < axes.size(); ++a)
		s += rules::glslFunction(axes[a].rule, "rule" + std::to_string(a), rules::Precision::F32) + "\n";
	// (The first statement keeps every binding in the SPIR-V — rules of constants read no input and never fail — so
	// every kernel has one layout: never true, RouteKernel::dispatch takes fewer records.)
	s += "void main()\n{\n\tif (pc.count == 0xffffffffu)\n\t\tatomicMin(first_bad, w[0]);\n"
	     "\tconst uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
	     "\tfor (uint i = gl_GlobalInvocationID.x; i < pc.count; i += step)\n\t{\n\t\tconst uint b = i * " +
	     std::to_string(words) + "u;\n\t\tuint slot = 0u;\n\t\tbool ok = true;\n";
	for (size_t a = 0; a < axes.size(); ++a)
	{
		const RouteAxis& ax = axes[a];
		const std::string n = std::to_string(a);
		std::string call = "rule" + n + "(";
		uint32_t at = ax.offset;
		for (size_t k = 0; k < ax.rule.inputs().size(); ++k)
		{
			const fx::Type t = ax.rule.inputs()[k].type;
			call += (k ? ", " : "") + load(t, "b + " + std::to_string(at) + "u");
			at += uint32_t(t.rows) * t.cols;
		}
		call += ")";
		const fx::Type rt = ax.rule.type();
		const std::string value = rt.scalar == fx::Scalar::Bool  ? "(" + call + " ? 1u : 0u)"
		                          : rt.scalar == fx::Scalar::U32 ? call
		                                                         : "uint(" + call + ")";
		s += "\t\t{\n\t\t\tconst uint x = " + value + ";\n\t\t\tuint d = 0xffffffffu;\n";
		for (size_t k = 0; k < ax.values.size(); ++k)
			s += "\t\t\tif (x == " + std::to_string(ax.values[k]) + "u) d = " + std::to_string(k) + "u;\n";
		s += "\t\t\tok = ok && d != 0xffffffffu;\n\t\t\tslot += d * " + std::to_string(ax.radix) + "u;\n\t\t}\n";
	}
	s += "\t\tslot_of[i] = ok ? slot : 0xffffffffu;\n\t\tif (!ok)\n\t\t\tatomicMin(first_bad, i);\n\t}\n}\n";
	return s;
}

} // namespace

void setAxis(scene::PipelineStateValues& state, ModeAxis axis, uint32_t value,
             std::span<const scene::BlendState> blends)
{
	switch (axis)
	{
	case ModeAxis::CullMode:
		state.cull_mode = VkCullModeFlags(value);
		break;
	case ModeAxis::FrontFace:
		state.front_face = VkFrontFace(value);
		break;
	case ModeAxis::Topology:
		state.topology = VkPrimitiveTopology(value);
		break;
	case ModeAxis::DepthTest:
		state.depth_test = value != 0;
		break;
	case ModeAxis::DepthWrite:
		state.depth_write = value != 0;
		break;
	case ModeAxis::DepthCompare:
		state.depth_compare = VkCompareOp(value);
		break;
	case ModeAxis::AlphaToCoverage:
		state.alpha_to_coverage = value != 0;
		break;
	case ModeAxis::Blend:
		state.default_blend = blends[value];
		state.blend.clear();
		break;
	}
}

uint32_t axisValue(const scene::PipelineStateValues& state, ModeAxis axis)
{
	return declaredOf(axis, state);
}

uint32_t ruledAxes(std::span<const scene::ModeRule> rules)
{
	uint32_t mask = 0;
	for (const scene::ModeRule& m : rules)
		mask |= 1u << uint32_t(m.axis);
	return mask;
}

bool isAxisLeaf(const scene::PipelineState& state, uint32_t axes, const adaptive::AdaptiveObject* node)
{
	auto in = [&](ModeAxis a) { return (axes >> uint32_t(a) & 1u) != 0; };
	for (ModeAxis a : {ModeAxis::CullMode, ModeAxis::FrontFace, ModeAxis::Topology, ModeAxis::DepthTest,
	                   ModeAxis::DepthWrite, ModeAxis::DepthCompare, ModeAxis::AlphaToCoverage})
		if (in(a) && declaredLeaf(state, a) == node)
			return true;
	if (in(ModeAxis::Blend))
	{
		if (state.default_blend.node().get() == node)
			return true;
		for (const auto& [name, b] : state.blend)
			if (b.node().get() == node)
				return true;
	}
	return false;
}

const adaptive::AdaptiveObject* declaredLeaf(const scene::PipelineState& s, ModeAxis axis)
{
	switch (axis)
	{
	case ModeAxis::CullMode:
		return s.cull_mode.node().get();
	case ModeAxis::FrontFace:
		return s.front_face.node().get();
	case ModeAxis::Topology:
		return s.topology.node().get();
	case ModeAxis::DepthTest:
		return s.depth_test.node().get();
	case ModeAxis::DepthWrite:
		return s.depth_write.node().get();
	case ModeAxis::DepthCompare:
		return s.depth_compare.node().get();
	case ModeAxis::AlphaToCoverage:
		return s.alpha_to_coverage.node().get();
	case ModeAxis::Blend:
		return nullptr;
	}
	return nullptr;
}

void readDeclared(const scene::PipelineState& s, ModeAxis axis, adaptive::Token token, scene::PipelineStateValues& v)
{
	switch (axis)
	{
	case ModeAxis::CullMode:
		v.cull_mode = s.cull_mode.getValue(token);
		break;
	case ModeAxis::FrontFace:
		v.front_face = s.front_face.getValue(token);
		break;
	case ModeAxis::Topology:
		v.topology = s.topology.getValue(token);
		break;
	case ModeAxis::DepthTest:
		v.depth_test = s.depth_test.getValue(token);
		break;
	case ModeAxis::DepthWrite:
		v.depth_write = s.depth_write.getValue(token);
		break;
	case ModeAxis::DepthCompare:
		v.depth_compare = s.depth_compare.getValue(token);
		break;
	case ModeAxis::AlphaToCoverage:
		v.alpha_to_coverage = s.alpha_to_coverage.getValue(token);
		break;
	case ModeAxis::Blend:
		break;
	}
}

void RouteSpec::pack(const rules::Value& value, uint32_t* out)
{
	for (uint32_t k = 0; k < value.components(); ++k)
	{
		const double c = value.c[k];
		switch (value.type.scalar)
		{
		case fx::Scalar::F32:
			out[k] = std::bit_cast<uint32_t>(float(c));
			break;
		case fx::Scalar::I32:
			out[k] = uint32_t(int32_t(c));
			break;
		case fx::Scalar::Bool:
			out[k] = c != 0.0 ? 1u : 0u;
			break;
		default:
			out[k] = uint32_t(c);
			break;
		}
	}
}

Result<RouteSpec> RouteSpec::make(std::span<const scene::ModeRule> rules, const scene::PipelineStateValues& declared)
{
	RouteSpec spec;
	for (const scene::ModeRule& m : rules)
	{
		RouteAxis ax;
		ax.axis = m.axis;
		ax.blends = m.blends;
		const bool boolean = isBoolAxis(m.axis);
		std::vector<rules::Binding> bind;
		if (m.rule.input(kDeclared) >= 0)
		{
			const uint32_t d = declaredOf(m.axis, declared);
			bind.push_back({std::string(kDeclared), boolean ? rules::Value::boolean(d != 0) : rules::Value::u32(d)});
		}
		ax.rule = rules::fold(m.rule, bind);
		for (const rules::Input& in : ax.rule.inputs())
			ax.sources.push_back(uint32_t(m.rule.input(in.name, in.inverse)));
		valuesOf(ax.rule, uint32_t(ax.rule.nodes().size() - 1), domainOf(m.axis, m.blends.size()), boolean, ax.values);
		std::sort(ax.values.begin(), ax.values.end());
		ax.values.erase(std::unique(ax.values.begin(), ax.values.end()), ax.values.end());
		if (ax.values.empty())
			ax.values.push_back(domainOf(m.axis, m.blends.size()).front()); // (never chosen: every record drops)
		ax.radix = spec.slots_;
		ax.offset = spec.words_;
		for (const rules::Input& in : ax.rule.inputs())
			spec.words_ += uint32_t(in.type.rows) * in.type.cols;
		if (uint64_t(spec.slots_) * ax.values.size() > kMaxRouteSlots)
			return makeError(ErrorCode::InvalidArgument,
			                 "mode rules give more than " + std::to_string(kMaxRouteSlots) +
			                     " combinations of pipeline state (the product of each rule's possible values)");
		spec.slots_ *= uint32_t(ax.values.size());
		spec.axes_.push_back(std::move(ax));
	}
	spec.source_ = generate(spec.axes_, spec.words_);
	return spec;
}

scene::PipelineStateValues RouteSpec::state(uint32_t slot, const scene::PipelineStateValues& declared) const
{
	scene::PipelineStateValues s = declared;
	for (const RouteAxis& ax : axes_)
		setAxis(s, ax.axis, ax.values[(slot / ax.radix) % ax.values.size()], ax.blends);
	return s;
}

uint32_t RouteSpec::slotOf(std::span<const uint32_t> words) const
{
	uint32_t slot = 0;
	for (const RouteAxis& ax : axes_)
	{
		std::vector<rules::Value> in;
		uint32_t at = ax.offset;
		for (const rules::Input& i : ax.rule.inputs())
		{
			rules::Value v;
			v.type = i.type;
			for (uint32_t k = 0; k < v.components(); ++k)
			{
				const uint32_t w = words[at + k];
				v.c[k] = i.type.scalar == fx::Scalar::F32    ? double(std::bit_cast<float>(w))
				         : i.type.scalar == fx::Scalar::I32  ? double(int32_t(w))
				         : i.type.scalar == fx::Scalar::Bool ? (w != 0 ? 1.0 : 0.0)
				                                             : double(w);
			}
			at += v.components();
			in.push_back(v);
		}
		const double r = rules::evaluate(ax.rule, in).c[0];
		const double x = isBoolAxis(ax.axis) ? (r != 0.0 ? 1.0 : 0.0) : r;
		const auto it = std::find_if(ax.values.begin(), ax.values.end(), [&](uint32_t v) { return double(v) == x; });
		if (it == ax.values.end())
			return kNoSlot;
		slot += uint32_t(it - ax.values.begin()) * ax.radix;
	}
	return slot;
}

Result<RouteKernel> RouteKernel::create(gpu::Device& device, const RouteSpec& spec)
{
	gpu::ShaderSource source;
	source.glsl = spec.kernelSource();
	source.stage = gpu::ShaderStage::Compute;
	source.name = "modes.route.comp";
	QUOKKA_TRY_ASSIGN(spirv, device.shaderCompiler().compile(source));
	QUOKKA_TRY_ASSIGN(pipeline, device.createComputePipeline({.spirv = *spirv, .name = "modes.route"}));
	RouteKernel k;
	k.pipeline_ = std::move(pipeline);
	return k;
}

void RouteKernel::dispatch(gpu::CommandList& list, const gpu::Buffer& inputs, const gpu::Buffer& slot_of,
                           const gpu::Buffer& bad, uint32_t count) const
{
	if (count == 0)
		return;
	list.keepAlive(pipeline_);
	pipeline_->bind(list);
	QUOKKA_ASSERT(count < 0xffffffffu, "RouteKernel: at most 2^32 - 2 records");
	gpu::pushStorageBuffers(list, *pipeline_, {{&inputs}, {&slot_of}, {&bad}});
	pipeline_->pushConstants(list, &count, sizeof(count));
	gpu::dispatch1d(list, *pipeline_, count, 4096);
}

} // namespace quokka::modes
