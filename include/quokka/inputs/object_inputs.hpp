// quokka/inputs/object_inputs.hpp — how a render object's inputs become what the GPU reads, shared by the classic
// and the heap path (so both derive the same uniforms, accept the same formats and build the same pipeline state):
// uniform packing, attribute format checks, blend/dynamic state conversion and the standard derived trafo uniforms.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/fx/compile.hpp>
#include <quokka/fx/types.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::inputs
{

/// "render object #<id>", the prefix of every per-object error.
std::string objectName(const scene::RenderObject& object);

/// An adaptive node standing for one render object in a renderer (classic PreparedObject, heap HeapObject): its
/// inputs are explicit and it is told which of them changed.
class ObjectNode : public adaptive::AdaptiveObject
{
protected:
	ObjectNode() : AdaptiveObject(kExplicitInputs | kWantsInputChanged) {}
	/// Runs `body` (reading inputs with Token{this}) as one evaluation; an exception thrown by an input becomes an
	/// error naming `object`, and the node's edges are kept so that a change retries.
	template <typename F>
	Result<void> evaluate(const scene::RenderObject& object, F&& body)
	{
		beginEvaluation();
		Result<void> r;
		try
		{
			r = body();
		}
		catch (const std::exception& e)
		{
			r = makeError(ErrorCode::InvalidArgument, objectName(object) + ": an input threw: " + e.what());
		}
		endEvaluation(r.ok());
		return r;
	}
};

/// The uniforms `object` supplies per instance (fx/instancing.hpp): the names of its per-instance views that its effect
/// reads as uniforms, in name order. Such a view is the uniform's value for each instance (element first_instance + i
/// for instance i, as for every per-instance attribute); it shadows a uniform of the same name in `object.uniforms`.
std::vector<std::string> perInstanceUniforms(const scene::RenderObject& object);

/// The largest of `count` u16 (`u16`) or u32 indices at `data` (how many vertices an indexed draw reads). Uses the
/// widest scan the CPU has (IndexScan).
uint32_t maxIndex(const std::byte* data, bool u16, uint32_t count);

/// The vector scans maxIndex() chooses from: Portable (SSE2 on x86-64, scalar elsewhere) or Sse41 (x86-64 CPUs with
/// SSE4.1: unsigned maxima of 4 u32 / 8 u16 per instruction). Public so tests compare each with a plain loop.
enum class IndexScan
{
	Portable,
	Sse41,
};
bool indexScanSupported(IndexScan scan);
/// maxIndex() with the given scan, which must be supported.
uint32_t maxIndexWith(IndexScan scan, const std::byte* data, bool u16, uint32_t count);

/// The fx type of a uniform value plus its tightly packed column-major data (Trafo3d → its forward matrix, narrowed).
struct PackedValue
{
	fx::Type type;
	float f[16];
};
PackedValue packUniform(const scene::UniformValue& value);

/// Whether a vertex buffer of `format` can feed a shader input of type `type` (same component class: float-like,
/// signed or unsigned integer; Vulkan's vertex input rules).
bool formatFeeds(VkFormat format, fx::Type type);

// ---- reading and checking an object's inputs (one implementation for both paths) ----

/// The view of the vertex attribute `attribute` that an effect reads. Errors: InvalidArgument naming the object when
/// it has no such attribute or the view's format cannot feed the attribute's type.
Result<const scene::BufferView*> attributeView(const scene::RenderObject& object,
                                               const fx::InterfaceVariable& attribute);
/// Checks the object's index view, when it has one: R16_UINT or R32_UINT, its offset a multiple of the index size.
/// Errors: InvalidArgument naming the object.
Result<void> checkIndexView(const scene::RenderObject& object);

/// Calls `f(node)` for the adaptive node of every leaf of `state` (a renderer tracks each as an input).
template <typename F>
void forEachStateLeaf(const scene::PipelineState& state, F&& f)
{
	auto each = [&](const auto&... leaves) { (f(leaves.node().get()), ...); };
	each(state.topology, state.cull_mode, state.front_face, state.depth_test, state.depth_write, state.depth_compare,
	     state.depth_clamp, state.depth_bias, state.stencil, state.default_blend, state.alpha_to_coverage);
	for (const auto& [name, blend] : state.blend)
		each(blend);
}

/// How many elements of `element` bytes, `stride` apart, a view starting at byte `offset` of `bytes` holds (0 when
/// not even one fits, or for a zero element size: a format without a size).
uint64_t elementsIn(uint64_t bytes, uint64_t offset, uint32_t element, uint32_t stride);
/// elementsIn() for an attribute view read as `type` (its column format times the type's columns; the view's stride,
/// or tightly packed).
uint64_t viewElements(const scene::BufferView& view, fx::Type type, uint64_t bytes);

/// How far a draw reads: the vertices its per-vertex attributes must hold and the instances its per-instance ones
/// must hold. Both 0 for a draw that draws nothing.
struct DrawReach
{
	uint64_t vertices = 0;
	uint64_t instances = 0;
};
/// The reach of `draw` for `object`. An indexed draw reads indices [first, first + count) of the object's index view
/// — `indices` is that view's buffer value, read by the caller so the dependency is its own — and reaches the largest
/// of them plus base vertex, plus one, vertices (an O(count) scan); a non-indexed draw reaches first + count.
/// Instances reach first instance + instance count. Errors: InvalidArgument naming the object when the draw is indexed
/// but the object has no indices, reads past them, or its base vertex makes an index negative.
Result<DrawReach> drawReach(const scene::RenderObject& object, const scene::DrawCall& draw,
                            const scene::ArrayBuffer* indices);
/// Checks that the attribute `name`, whose view holds `elements` elements, covers `reach`. Errors: InvalidArgument
/// naming the object, the attribute and both counts.
Result<void> checkAttributeReach(const scene::RenderObject& object, std::string_view name,
                                 const scene::BufferView& view, uint64_t elements, const DrawReach& reach);

VkPipelineColorBlendAttachmentState toVk(const scene::BlendState& blend);
/// The Vulkan 1.3 dynamic part of a pipeline state (depth test/write forced off without a depth attachment).
gpu::DynamicState dynamicState(const scene::PipelineStateValues& values, bool has_depth);

} // namespace quokka::inputs
