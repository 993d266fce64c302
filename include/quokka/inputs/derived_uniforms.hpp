// quokka/inputs/derived_uniforms.hpp — the standard uniforms an object need not supply (ModelViewProjTrafo,
// NormalMatrix, the *Inv variants, CameraLocation, …), derived on the CPU in double precision from its ModelTrafo,
// ViewTrafo and ProjTrafo. The names and their meaning are fx/standard_uniforms.hpp's table, which the shader rewrite
// of per-instance uniforms reads too, so the CPU and the GPU derive the same names the same way.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include <quokka/base/result.hpp>
#include <quokka/fx/standard_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::inputs
{

/// The trafo a uniform value stands for: a Trafo3d itself, an M44f read as a forward matrix, the identity otherwise.
math::Trafo3d trafoOf(const scene::UniformValue& value);

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
	struct Member
	{
		uint32_t own;                        ///< index of the name in fetch_
		const fx::StandardUniform* standard; ///< its standard derivation; null: an error when the object lacks it
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
	adaptive::aval<scene::UniformValue> derive(fx::StandardRule rule, bool inverse,
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

} // namespace quokka::inputs
