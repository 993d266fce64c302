// The scene model's small amount of logic: snapshots and hashes, format sizes, tree construction and the reference
// flattening walk.
#include <quokka/scene/framebuffer_signature.hpp>
#include <quokka/scene/pipeline_state.hpp>
#include <quokka/scene/render_object.hpp>
#include <quokka/scene/render_tree.hpp>

#include <algorithm>
#include <atomic>

namespace quokka::scene
{

namespace
{
void mix(size_t& seed, size_t value)
{
	// boost::hash_combine's mixing, 64-bit constant.
	seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

size_t hashBlend(const BlendState& b)
{
	size_t h = b.enabled;
	for (uint32_t v : {uint32_t(b.src_color), uint32_t(b.dst_color), uint32_t(b.color_op), uint32_t(b.src_alpha),
	                   uint32_t(b.dst_alpha), uint32_t(b.alpha_op), uint32_t(b.write_mask)})
		mix(h, v);
	return h;
}
} // namespace

// ---- pipeline state ---------------------------------------------------------------------------------------------

const BlendState& PipelineStateValues::blendFor(const std::string& name) const
{
	auto it = blend.find(name);
	return it == blend.end() ? default_blend : it->second;
}

size_t PipelineStateValues::hash() const
{
	size_t h = 0;
	for (uint32_t v :
	     {uint32_t(topology), uint32_t(cull_mode), uint32_t(front_face), uint32_t(depth_test), uint32_t(depth_write),
	      uint32_t(depth_compare), uint32_t(depth_clamp), uint32_t(alpha_to_coverage), uint32_t(depth_bias.enabled),
	      uint32_t(stencil.enabled), uint32_t(stencil.fail), uint32_t(stencil.pass), uint32_t(stencil.depth_fail),
	      uint32_t(stencil.compare), stencil.reference, stencil.compare_mask, stencil.write_mask})
		mix(h, v);
	mix(h, std::hash<float>()(depth_bias.constant));
	mix(h, std::hash<float>()(depth_bias.slope));
	mix(h, std::hash<float>()(depth_bias.clamp));
	mix(h, hashBlend(default_blend));
	for (const auto& [name, b] : blend)
	{
		mix(h, std::hash<std::string>()(name));
		mix(h, hashBlend(b));
	}
	return h;
}

PipelineState::PipelineState(FreshConstants)
{
	const PipelineStateValues v;
	topology = adaptive::constant(v.topology);
	cull_mode = adaptive::constant(v.cull_mode);
	front_face = adaptive::constant(v.front_face);
	depth_test = adaptive::constant(v.depth_test);
	depth_write = adaptive::constant(v.depth_write);
	depth_compare = adaptive::constant(v.depth_compare);
	depth_clamp = adaptive::constant(v.depth_clamp);
	depth_bias = adaptive::constant(v.depth_bias);
	stencil = adaptive::constant(v.stencil);
	default_blend = adaptive::constant(v.default_blend);
	alpha_to_coverage = adaptive::constant(v.alpha_to_coverage);
}

PipelineState::PipelineState()
    : PipelineState(
          []() -> const PipelineState&
          {
	          thread_local const PipelineState defaults{FreshConstants{}};
	          return defaults;
          }())
{
}

PipelineStateValues PipelineState::snapshot(adaptive::Token token, uint32_t skip) const
{
	auto skipped = [&](ModeAxis a) { return (skip >> uint32_t(a) & 1u) != 0; };
	PipelineStateValues v;
	if (!skipped(ModeAxis::Topology))
		v.topology = topology.getValue(token);
	if (!skipped(ModeAxis::CullMode))
		v.cull_mode = cull_mode.getValue(token);
	if (!skipped(ModeAxis::FrontFace))
		v.front_face = front_face.getValue(token);
	if (!skipped(ModeAxis::DepthTest))
		v.depth_test = depth_test.getValue(token);
	if (!skipped(ModeAxis::DepthWrite))
		v.depth_write = depth_write.getValue(token);
	if (!skipped(ModeAxis::DepthCompare))
		v.depth_compare = depth_compare.getValue(token);
	v.depth_clamp = depth_clamp.getValue(token);
	v.depth_bias = depth_bias.getValue(token);
	v.stencil = stencil.getValue(token);
	if (!skipped(ModeAxis::Blend))
	{
		v.default_blend = default_blend.getValue(token);
		for (const auto& [name, b] : blend)
			v.blend[name] = b.getValue(token);
	}
	if (!skipped(ModeAxis::AlphaToCoverage))
		v.alpha_to_coverage = alpha_to_coverage.getValue(token);
	return v;
}

PipelineStateValues PipelineState::snapshot(adaptive::Token token) const
{
	return snapshot(token, 0);
}

// ---- framebuffer signature --------------------------------------------------------------------------------------

int FramebufferSignature::location(const std::string& name) const
{
	for (size_t i = 0; i < colors.size(); ++i)
		if (colors[i].name == name)
			return int(i);
	return -1;
}

std::vector<std::string> FramebufferSignature::colorNames() const
{
	std::vector<std::string> names;
	for (const ColorAttachment& c : colors)
		names.push_back(c.name);
	return names;
}

size_t FramebufferSignature::hash() const
{
	size_t h = 0;
	for (const ColorAttachment& c : colors)
	{
		mix(h, std::hash<std::string>()(c.name));
		mix(h, uint32_t(c.format));
	}
	mix(h, uint32_t(depth_format));
	mix(h, uint32_t(samples));
	return h;
}

// ---- render objects ---------------------------------------------------------------------------------------------

uint32_t formatSize(VkFormat format)
{
	switch (format)
	{
	case VK_FORMAT_R8_UNORM:
	case VK_FORMAT_R8_UINT:
		return 1;
	case VK_FORMAT_R8G8_UNORM:
	case VK_FORMAT_R16_UINT:
	case VK_FORMAT_R16_SINT:
	case VK_FORMAT_R16_UNORM:
		return 2;
	case VK_FORMAT_R8G8B8A8_UNORM:
	case VK_FORMAT_R8G8B8A8_UINT:
	case VK_FORMAT_R16G16_UINT:
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32_UINT:
		return 4;
	case VK_FORMAT_R16G16B16A16_UINT:
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32_UINT:
		return 8;
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32_UINT:
		return 12;
	case VK_FORMAT_R32G32B32A32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		return 16;
	default:
		return 0;
	}
}

const detail::DefaultObjectLeaves& detail::DefaultObjectLeaves::ofThisThread()
{
	thread_local const DefaultObjectLeaves leaves{adaptive::constant(DrawCall{}), adaptive::constant(true)};
	return leaves;
}

RenderObjectPtr makeRenderObject(RenderObject object)
{
	static std::atomic<uint64_t> next_id{1};
	object.id = next_id.fetch_add(1, std::memory_order_relaxed);
	return std::make_shared<const RenderObject>(std::move(object));
}

// ---- render trees -----------------------------------------------------------------------------------------------

namespace
{
RenderTreePtr node(RenderTree t)
{
	static std::atomic<uint64_t> next_id{1};
	t.id = next_id.fetch_add(1, std::memory_order_relaxed);
	return std::make_shared<const RenderTree>(std::move(t));
}
} // namespace

RenderTreePtr RenderTree::empty()
{
	static const RenderTreePtr e = node(RenderTree{});
	return e;
}

RenderTreePtr RenderTree::leafOf(RenderObjectPtr object)
{
	RenderTree t;
	t.kind = Kind::Leaf;
	t.leaf = std::move(object);
	return node(std::move(t));
}

RenderTreePtr RenderTree::ordered(std::vector<RenderTreePtr> children)
{
	RenderTree t;
	t.kind = Kind::Ordered;
	t.children = std::move(children);
	return node(std::move(t));
}

RenderTreePtr RenderTree::unordered(std::vector<RenderTreePtr> children)
{
	RenderTree t;
	t.kind = Kind::Unordered;
	t.children = std::move(children);
	return node(std::move(t));
}

RenderTreePtr RenderTree::ofAval(adaptive::aval<RenderTreePtr> tree)
{
	RenderTree t;
	t.kind = Kind::Adaptive;
	t.adaptive = std::move(tree);
	return node(std::move(t));
}

RenderTreePtr RenderTree::ofList(adaptive::alist<RenderTreePtr> list)
{
	RenderTree t;
	t.kind = Kind::OrderedFromList;
	t.list = std::move(list);
	return node(std::move(t));
}

RenderTreePtr RenderTree::ofSet(adaptive::aset<RenderTreePtr> set)
{
	RenderTree t;
	t.kind = Kind::UnorderedFromSet;
	t.set = std::move(set);
	return node(std::move(t));
}

RenderTreePtr RenderTree::ofObjects(adaptive::aset<RenderObjectPtr> objects)
{
	RenderTree t;
	t.kind = Kind::UnorderedFromSet;
	t.set = adaptive::map(objects, [](const RenderObjectPtr& o) { return leafOf(o); });
	t.objects = std::move(objects);
	return node(std::move(t));
}

namespace
{
adaptive::aset<RenderObjectPtr> leavesOfTrees(const adaptive::aset<RenderTreePtr>& trees)
{
	auto leaves = adaptive::choose(trees,
	                               [](const RenderTreePtr& t) -> std::optional<RenderObjectPtr>
	                               {
		                               if (t && t->kind == RenderTree::Kind::Leaf && t->leaf)
			                               return t->leaf;
		                               return std::nullopt;
	                               });
	auto others =
	    adaptive::filter(trees, [](const RenderTreePtr& t)
	                     { return t && t->kind != RenderTree::Kind::Leaf && t->kind != RenderTree::Kind::Empty; });
	return adaptive::unionOf(leaves, adaptive::collect(others, [](const RenderTreePtr& t) { return leafSet(t); }));
}
} // namespace

adaptive::aset<RenderObjectPtr> leafSet(const RenderTreePtr& tree)
{
	if (!tree)
		return adaptive::asetOf<RenderObjectPtr>({});
	switch (tree->kind)
	{
	case RenderTree::Kind::Empty:
		return adaptive::asetOf<RenderObjectPtr>({});
	case RenderTree::Kind::Leaf:
		return adaptive::asetOf<RenderObjectPtr>({tree->leaf});
	case RenderTree::Kind::Ordered:
	case RenderTree::Kind::Unordered:
		return leavesOfTrees(adaptive::asetOf(tree->children));
	case RenderTree::Kind::Adaptive:
		return adaptive::bind(tree->adaptive, [](const RenderTreePtr& t) { return leafSet(t); });
	case RenderTree::Kind::OrderedFromList:
		return leavesOfTrees(adaptive::toASet(tree->list));
	case RenderTree::Kind::UnorderedFromSet:
		if (tree->objects.history())
			return tree->objects;
		return leavesOfTrees(tree->set);
	}
	return adaptive::asetOf<RenderObjectPtr>({});
}

namespace
{
void flattenInto(const RenderTreePtr& tree, adaptive::Token token, std::vector<RenderObjectPtr>& out)
{
	if (!tree)
		return;
	auto sortedTail = [&](size_t from)
	{
		std::sort(out.begin() + std::ptrdiff_t(from), out.end(),
		          [](const RenderObjectPtr& a, const RenderObjectPtr& b) { return a->id < b->id; });
	};
	switch (tree->kind)
	{
	case RenderTree::Kind::Empty:
		break;
	case RenderTree::Kind::Leaf:
		out.push_back(tree->leaf);
		break;
	case RenderTree::Kind::Ordered:
		for (const RenderTreePtr& c : tree->children)
			flattenInto(c, token, out);
		break;
	case RenderTree::Kind::Unordered:
	{
		const size_t from = out.size();
		for (const RenderTreePtr& c : tree->children)
			flattenInto(c, token, out);
		sortedTail(from);
		break;
	}
	case RenderTree::Kind::Adaptive:
		flattenInto(tree->adaptive.getValue(token), token, out);
		break;
	case RenderTree::Kind::OrderedFromList:
		for (const auto& [index, child] : tree->list.content().getValue(token))
			flattenInto(child, token, out);
		break;
	case RenderTree::Kind::UnorderedFromSet:
	{
		const size_t from = out.size();
		for (const auto& [child, count] : tree->set.content().getValue(token))
			flattenInto(child, token, out);
		sortedTail(from);
		break;
	}
	}
}
} // namespace

std::vector<RenderObjectPtr> flatten(const RenderTreePtr& tree, adaptive::Token token)
{
	std::vector<RenderObjectPtr> out;
	flattenInto(tree, token, out);
	return out;
}

const char* axisName(ModeAxis axis)
{
	switch (axis)
	{
	case ModeAxis::CullMode:
		return "cull_mode";
	case ModeAxis::FrontFace:
		return "front_face";
	case ModeAxis::Topology:
		return "topology";
	case ModeAxis::DepthTest:
		return "depth_test";
	case ModeAxis::DepthWrite:
		return "depth_write";
	case ModeAxis::DepthCompare:
		return "depth_compare";
	case ModeAxis::AlphaToCoverage:
		return "alpha_to_coverage";
	case ModeAxis::Blend:
		return "blend";
	}
	return "?";
}

} // namespace quokka::scene
