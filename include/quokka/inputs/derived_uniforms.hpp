// quokka/inputs/derived_uniforms.hpp — uniforms an object need not supply, derived on the CPU in double precision:
// the standard ones (ModelViewProjTrafo, NormalMatrix, the *Inv variants, CameraLocation, …) from its ModelTrafo,
// ViewTrafo and ProjTrafo, and its own (RenderObject::derived) by their rules. Every derivation is a rules::Rule —
// the standard ones are rules/standard.hpp's, whose names the shader rewrite of per-instance uniforms
// (fx/standard_uniforms.hpp) knows too — evaluated by rules::evaluate, so the CPU path is the oracle of any other
// evaluation of the same rules.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/inlined_vector.h>

#include <quokka/base/erase_some.hpp>
#include <quokka/base/result.hpp>
#include <quokka/fx/standard_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/rules/rule.hpp>
#include <quokka/scene/render_object.hpp>
#include <quokka/scene/trafo_chain.hpp>

namespace quokka::inputs
{

/// The trafo a uniform value stands for: a Trafo3d itself, an M44f read as a forward matrix, the identity otherwise.
math::Trafo3d trafoOf(const scene::UniformValue& value);
/// `value` as the rule input `input` reads it (a trafo's backward matrix for an inverse input; an M44f's inverse
/// computed), or nullopt when the value is of another type.
std::optional<rules::Value> ruleInput(const scene::UniformValue& value, const rules::Input& input);
/// A rule's value as a uniform value (narrowed to float), or nullopt for a type no uniform value holds (bool, and
/// matrices other than 3×3 and 4×4).
std::optional<scene::UniformValue> uniformOf(const rules::Value& value);

/// A per-object derived uniform that a renderer may pool itself: a recipe over one input node (the object's
/// ModelTrafo, or the shared identity when it has none). The heap keys such values by (recipe, input, chunk) instead of
/// asking DerivedUniforms for an adaptive node per object.
enum class DerivedRecipe : uint8_t
{
	None,
	NormalMatrix, ///< transpose of the inverse's upper 3×3, narrowed to float
	Inverse,      ///< the inverse trafo
	/// Not on the CPU: the value of a derived node (DerivedUniforms::derivationOf) that a renderer computes on the
	/// device from the node's rule and inputs. deriveValue() and packDerived() do not take it.
	Gpu,
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
		uint32_t own;                    ///< index of the name in fetch_
		const rules::Rule* standard;     ///< its standard rule; null: the object must define or derive it
		DerivedRecipe recipe;            ///< the recipe of the standard rule a renderer may pool (or None)
		uint8_t inputs = 0;              ///< how many trafo leaves the standard rule reads …
		std::array<uint32_t, 3> input{}; ///< … and where each sits in fetch_ (its inputs() order)
	};
	std::vector<std::string> fetch_; ///< names read from the object, sorted and unique: every member's and the trafos'
	uint32_t model_ = 0, view_ = 0, proj_ = 0; ///< where ModelTrafo, ViewTrafo and ProjTrafo sit in fetch_
	std::vector<Member> members_;
};

/// Uniforms an object does not define are derived: by the object's own rule (RenderObject::derived) when it has one
/// for the name, else when they are standard (ModelViewProjTrafo, ViewProjTrafo, ModelViewTrafo, NormalMatrix, the
/// *Inv variants, CameraLocation; LightLocation defaults to the camera) from its ModelTrafo/ViewTrafo/ProjTrafo
/// (identity when absent), CPU-side in double precision. An object's rule may read its uniforms, the standard names
/// and its other derived names; those are flattened into one rule over values the object holds (a cycle is an
/// error). Derived values are interned by (rule, input nodes): 20,000 objects with one camera share one
/// ViewProjTrafo node.
class DerivedUniforms
{
public:
	/// How a derived value is computed: its rule over input nodes (one per rule input, in order; an inverse input reads
	/// its node's backward matrix). Held by a derived node (derivationOf), or on its own for a value computed on the
	/// device (DerivationPtr).
	struct Derivation
	{
		rules::Rule rule;
		absl::InlinedVector<adaptive::aval<scene::UniformValue>, 3> inputs;
		/// Entries a renderer keeps for it (the heap counts its GPU entries: a derivation none holds needs no search
		/// of its pool). Owner thread only.
		mutable uint32_t entries = 0;
	};
	/// A derivation computed on the device, interned by (rule, input nodes) as derived nodes are: equal derivations
	/// are one object, so its address identifies the value (a renderer's pool key). No node, no cached value: a
	/// fraction of a derived node's memory (its value alone is a UniformValue), which per object is what counts.
	using DerivationPtr = std::shared_ptr<const Derivation>;

	/// The object's own uniform `name`, else a derived one. Errors: InvalidArgument naming the object.
	Result<adaptive::aval<scene::UniformValue>> resolve(const scene::RenderObject& object, const std::string& name);
	/// resolve() of every name of `plan` at once, into `out` (one value per name, in order). With `pooled` (as long as
	/// `out`), a name derived from the object's ModelTrafo alone (NormalMatrix, ModelTrafoInv) that the object does
	/// not define gives its recipe in `pooled` and the ModelTrafo node (the shared identity when absent) in `out`
	/// instead of an interned node — a renderer then pools the value itself; every other name gets None there. With
	/// GPU recipes on (setGpuRecipes) and `gpu` given (as long as `out`), a name derived into a value that is not
	/// constant gets DerivedRecipe::Gpu in `pooled`, its interned derivation in `gpu` and nothing in `out`.
	Result<void> resolve(const scene::RenderObject& object, const UniformPlan& plan,
	                     std::span<adaptive::aval<scene::UniformValue>> out, std::span<DerivedRecipe> pooled = {},
	                     std::span<DerivationPtr> gpu = {});
	/// The derivation of `node` (held by the node itself: no lookup), or null when it is no derived node (an object's
	/// own value, a constant).
	static const Derivation* derivationOf(const adaptive::AdaptiveObject* node);
	/// With `on`, resolve() with `pooled` and `gpu` gives each name it derives into a value that is not constant as a
	/// derivation (DerivedRecipe::Gpu: a renderer computes it on the device instead of reading it).
	void setGpuRecipes(bool on) { gpu_recipes_ = on; }
	/// Drops the interned nodes and derivations (their users keep what they hold).
	void clear()
	{
		derived_.clear();
		gpu_derived_.clear();
	}
	/// Drops the interned nodes nobody else holds any more (objects removed): O(size). Returns how many.
	size_t collect();
	/// Dismantling an owner (a renderer scene being torn down in slices): drops up to `count` interned nodes, whichever
	/// come first. True while some remain.
	bool drop(size_t count);
	/// Interned nodes and derivations.
	size_t size() const { return derived_.size() + gpu_derived_.size(); }
	/// The tables' storage once dropped (drop() until false), moved out for freeing elsewhere: a table that held 10^7
	/// values keeps its capacity, hundreds of MiB.
	std::shared_ptr<void> releaseStorage();
	/// Host bytes of the interned nodes (with their edges to their inputs), derivations and their tables. Memory
	/// accounting.
	size_t hostBytes() const;

private:
	struct Key
	{
		fx::Hash128 rule;
		absl::InlinedVector<const void*, 3> inputs; ///< the input nodes, in the rule's inputs() order
		bool operator==(const Key&) const = default;
		template <typename H>
		friend H AbslHashValue(H h, const Key& k)
		{
			return H::combine(std::move(h), k.rule.hi, k.rule.lo, k.inputs);
		}
	};
	class DerivedNode;
	/// The interned node of `rule` over `inputs` (one node per rule input, in order); a rule that is one input is that
	/// input's node unless `copy`.
	adaptive::aval<scene::UniformValue>
	derive(const rules::Rule& rule, std::span<const adaptive::aval<scene::UniformValue>> inputs, bool copy = false);
	/// The interned derivation of `rule` over `inputs` (not all constant), computed on the device.
	DerivationPtr deriveOnDevice(const rules::Rule& rule, std::span<const adaptive::aval<scene::UniformValue>> inputs);
	/// The object's own rule for `name`, flattened and derived. Errors: InvalidArgument naming the object.
	Result<adaptive::aval<scene::UniformValue>> deriveOwn(const scene::RenderObject& object, const std::string& name,
	                                                      const rules::Rule& rule);
	/// A flat map: at 10^6 objects it holds ~10^6 per-object derived values (NormalMatrix, …), where a node-based map's
	/// chain walk costs several cache misses per lookup.
	absl::flat_hash_map<Key, adaptive::aval<scene::UniformValue>> derived_;
	/// A derivation's identity without making one: its rule and input nodes (lookups in gpu_derived_).
	struct DerivationKey
	{
		const fx::Hash128& rule;
		std::span<const adaptive::aval<scene::UniformValue>> inputs;
	};
	/// gpu_derived_'s hash and equality, over a derivation or its key alike. (A set of the derivations themselves: an
	/// object's own derivation is one per object, so a map's key — a copy of the rule id and the input nodes — would
	/// double its slot.)
	struct DerivationHash
	{
		using is_transparent = void;
		static size_t of(const fx::Hash128& rule, std::span<const adaptive::aval<scene::UniformValue>> inputs);
		size_t operator()(const DerivationKey& k) const { return of(k.rule, k.inputs); }
		size_t operator()(const std::shared_ptr<Derivation>& d) const { return of(d->rule.id(), d->inputs); }
	};
	struct DerivationEq
	{
		using is_transparent = void;
		static bool same(const Derivation& d, const fx::Hash128& rule,
		                 std::span<const adaptive::aval<scene::UniformValue>> inputs);
		bool operator()(const std::shared_ptr<Derivation>& a, const std::shared_ptr<Derivation>& b) const
		{
			return a == b || same(*a, b->rule.id(), b->inputs);
		}
		bool operator()(const std::shared_ptr<Derivation>& a, const DerivationKey& k) const
		{
			return same(*a, k.rule, k.inputs);
		}
		bool operator()(const DerivationKey& k, const std::shared_ptr<Derivation>& a) const
		{
			return same(*a, k.rule, k.inputs);
		}
	};
	/// The derivations computed on the device, interned (a renderer holds each while it keeps entries for it).
	absl::flat_hash_set<std::shared_ptr<Derivation>, DerivationHash, DerivationEq> gpu_derived_;
	std::optional<decltype(gpu_derived_)::iterator> gpu_drop_cursor_; ///< drop()'s place in gpu_derived_
	/// drop()'s place in derived_ (nothing is interned while an owner is dismantled).
	std::optional<decltype(derived_)::iterator> drop_cursor_;
	bool gpu_recipes_ = false;
	/// The one node standing for every absent trafo: derived values are interned by their input nodes, so a fresh
	/// identity per lookup would give every object without a ModelTrafo its own NormalMatrix node and table entry.
	adaptive::aval<scene::UniformValue> identity_ = adaptive::constant(scene::UniformValue(math::Trafo3d::identity()));
};

} // namespace quokka::inputs
