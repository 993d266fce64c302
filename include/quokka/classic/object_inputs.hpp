// quokka/classic/object_inputs.hpp — how a render object's inputs become what the GPU reads, shared by the classic
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

#include <absl/container/flat_hash_map.h>

#include <quokka/base/result.hpp>
#include <quokka/fx/types.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::classic
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

VkPipelineColorBlendAttachmentState toVk(const scene::BlendState& blend);
/// The Vulkan 1.3 dynamic part of a pipeline state (depth test/write forced off without a depth attachment).
gpu::DynamicState dynamicState(const scene::PipelineStateValues& values, bool has_depth);

/// A per-object derived uniform that a renderer may pool itself: a recipe over one input node (the object's
/// ModelTrafo, or the shared identity when it has none). The heap keys such values by (recipe, input, chunk) instead of
/// asking DerivedUniforms for an adaptive node per object.
enum class DerivedRecipe : uint8_t
{
	None,
	NormalMatrix, ///< transpose of the inverse's upper 3×3, narrowed to float
	Inverse,      ///< the inverse trafo
};
/// `recipe` applied to `input`: the arithmetic of the nodes DerivedUniforms builds, so both agree bit for bit.
scene::UniformValue deriveValue(DerivedRecipe recipe, const scene::UniformValue& input);
/// packUniform(deriveValue(recipe, input)), without copying `input` when there is no recipe.
PackedValue packDerived(DerivedRecipe recipe, const scene::UniformValue& input);

/// How a list of uniform names (a compiled effect's, in order) resolves, worked out once: the names an object may
/// define itself, and for each the standard derivation DerivedUniforms uses when it does not. A renderer plans each
/// compiled effect once; resolving an object against the plan then compares names only in one merge walk over the
/// object's (sorted) uniform map, where resolving by name looks every name and every trafo input up and compares it
/// with the standard names in turn.
class UniformPlan
{
public:
	explicit UniformPlan(std::span<const std::string> names);
	size_t size() const { return members_.size(); }

private:
	friend class DerivedUniforms;
	/// The standard derivation of a name the object does not define (the *Inv variants: `inverse` on
	/// Model…ModelViewProj).
	enum class Rule : uint8_t
	{
		Model,
		View,
		Proj,
		ViewProj,
		ModelView,
		ModelViewProj,
		Normal,
		Camera,
		Missing, ///< no standard meaning: an error when the object does not define it
	};
	static Rule parse(std::string_view name, bool& inverse);
	struct Member
	{
		uint32_t own; ///< index of the name in fetch_
		Rule rule;
		bool inverse;
	};
	std::vector<std::string> fetch_; ///< names read from the object, sorted and unique: every member's and the trafos'
	uint32_t model_ = 0, view_ = 0, proj_ = 0; ///< where ModelTrafo, ViewTrafo and ProjTrafo sit in fetch_
	std::vector<Member> members_;
};

/// Uniforms an object does not define are derived when they are standard trafos (ModelViewProjTrafo, ViewProjTrafo,
/// ModelViewTrafo, NormalMatrix, the *Inv variants, CameraLocation; LightLocation defaults to the camera) from its
/// ModelTrafo/ViewTrafo/ProjTrafo (identity when absent), CPU-side in double precision. Derived values are interned by
/// their input nodes: 20,000 objects with one camera share one ViewProjTrafo node.
class DerivedUniforms
{
public:
	/// The object's own uniform `name`, else a derived one. Errors: InvalidArgument naming the object.
	Result<adaptive::aval<scene::UniformValue>> resolve(const scene::RenderObject& object, const std::string& name);
	/// resolve() of every name of `plan` at once, into `out` (one value per name, in order). With `pooled` (as long as
	/// `out`), a name derived from the object's ModelTrafo alone (NormalMatrix, ModelTrafoInv) that the object does
	/// not define gives its recipe in `pooled` and the ModelTrafo node (the shared identity when absent) in `out`
	/// instead of an interned node — a renderer then pools the value itself; every other name gets None there.
	Result<void> resolve(const scene::RenderObject& object, const UniformPlan& plan,
	                     std::span<adaptive::aval<scene::UniformValue>> out, std::span<DerivedRecipe> pooled = {});
	/// Drops the interned nodes (their users keep what they hold).
	void clear() { derived_.clear(); }
	/// Drops the interned nodes nobody else holds any more (objects removed): O(size). Returns how many.
	size_t collect();
	size_t size() const { return derived_.size(); }

private:
	using Key = std::tuple<int, const void*, const void*>; ///< (recipe, input a, input b)
	/// The value of `rule` from the object's trafo inputs (each the identity when the object lacks it).
	adaptive::aval<scene::UniformValue> derive(UniformPlan::Rule rule, bool inverse,
	                                           const adaptive::aval<scene::UniformValue>& model,
	                                           const adaptive::aval<scene::UniformValue>& view,
	                                           const adaptive::aval<scene::UniformValue>& proj);
	/// A flat map: at 10^6 objects it holds ~10^6 per-object derived values (NormalMatrix, …), where a node-based map's
	/// chain walk costs several cache misses per lookup.
	absl::flat_hash_map<Key, adaptive::aval<scene::UniformValue>> derived_;
	/// The one node standing for every absent trafo: derived values are interned by their input nodes, so a fresh
	/// identity per lookup would give every object without a ModelTrafo its own NormalMatrix node and table entry.
	adaptive::aval<scene::UniformValue> identity_ = adaptive::constant(scene::UniformValue(math::Trafo3d::identity()));
};

} // namespace quokka::classic
