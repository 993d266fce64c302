// The standard derived uniforms on the CPU: the plan of an effect's names, the interned derived nodes and the
// recipes a renderer pools itself.
#include <quokka/inputs/derived_uniforms.hpp>

#include <algorithm>

#include <absl/container/inlined_vector.h>

#include <quokka/base/assert.hpp>

namespace quokka::inputs
{

using adaptive::aval;
using scene::UniformValue;

math::Trafo3d trafoOf(const UniformValue& v)
{
	if (const auto* t = std::get_if<math::Trafo3d>(&v))
		return *t;
	if (const auto* m = std::get_if<math::M44f>(&v))
		return math::Trafo3d::fromMatrix(math::M44d(*m));
	return math::Trafo3d::identity();
}

namespace
{
aval<UniformValue> trafoInput(const scene::RenderObject& object, const char* name, const aval<UniformValue>& identity)
{
	if (auto it = object.uniforms.find(name); it != object.uniforms.end())
		return it->second;
	return identity;
}

} // namespace

size_t DerivedUniforms::collect()
{
	size_t dropped = 0;
	// A derived node holds its inputs (ModelViewProj holds ViewProj): repeat until nothing more is free.
	for (bool again = true; again;)
	{
		again = false;
		for (auto it = derived_.begin(); it != derived_.end();)
			if (it->second.node()->refCount() == 1)
			{
				derived_.erase(it++); // (absl: erase leaves the other iterators valid)
				++dropped;
				again = true;
			}
			else
				++it;
	}
	return dropped;
}

UniformValue deriveValue(DerivedRecipe recipe, const UniformValue& input)
{
	switch (recipe)
	{
	case DerivedRecipe::NormalMatrix:
		return UniformValue(math::toFloat(trafoOf(input).normalMatrix()));
	case DerivedRecipe::Inverse:
		return UniformValue(trafoOf(input).inverse());
	case DerivedRecipe::None:
		break;
	}
	return input;
}

PackedValue packDerived(DerivedRecipe recipe, const UniformValue& input)
{
	return recipe == DerivedRecipe::None ? packUniform(input) : packUniform(deriveValue(recipe, input));
}

UniformPlan::UniformPlan(std::span<const std::string> names)
{
	fetch_.assign(names.begin(), names.end());
	for (const char* t : {"ModelTrafo", "ViewTrafo", "ProjTrafo"})
		fetch_.emplace_back(t);
	std::sort(fetch_.begin(), fetch_.end());
	fetch_.erase(std::unique(fetch_.begin(), fetch_.end()), fetch_.end());
	auto index = [&](std::string_view name)
	{ return uint32_t(std::lower_bound(fetch_.begin(), fetch_.end(), name) - fetch_.begin()); };
	model_ = index("ModelTrafo");
	view_ = index("ViewTrafo");
	proj_ = index("ProjTrafo");
	members_.reserve(names.size());
	for (const std::string& name : names)
	{
		members_.push_back({index(name), fx::standardUniform(name)});
	}
}

aval<UniformValue> DerivedUniforms::derive(fx::StandardRule rule, bool inverse, const aval<UniformValue>& model,
                                           const aval<UniformValue>& view, const aval<UniformValue>& proj)
{
	using Rule = fx::StandardRule;
	// Standard derived trafos, shared by every object with the same input nodes.
	enum Recipe
	{
		ViewProj,
		ModelView,
		ModelViewProj,
		Normal,
		Camera,
		Inverse,
	};
	auto intern = [&](Recipe r, const aval<UniformValue>& a, const aval<UniformValue>& b, auto make)
	{
		const auto key = std::make_tuple(int(r), static_cast<const void*>(a.node().get()),
		                                 static_cast<const void*>(b ? b.node().get() : nullptr));
		auto it = derived_.find(key);
		if (it == derived_.end())
			it = derived_.emplace(key, make()).first;
		return it->second;
	};
	auto product = [](const aval<UniformValue>& outer, const aval<UniformValue>& inner)
	{
		return adaptive::map2(outer, inner,
		                      [](const UniformValue& o, const UniformValue& i)
		                      { return UniformValue(trafoOf(o) * trafoOf(i)); });
	};
	const aval<UniformValue> none;
	auto viewProj = [&] { return intern(ViewProj, proj, view, [&] { return product(proj, view); }); };
	aval<UniformValue> base;
	switch (rule)
	{
	case Rule::Model:
		base = model;
		break;
	case Rule::View:
		base = view;
		break;
	case Rule::Proj:
		base = proj;
		break;
	case Rule::ViewProj:
		base = viewProj();
		break;
	case Rule::ModelView:
		base = intern(ModelView, view, model, [&] { return product(view, model); });
		break;
	case Rule::ModelViewProj:
	{
		const auto vp = viewProj();
		base = intern(ModelViewProj, vp, model, [&] { return product(vp, model); });
		break;
	}
	case Rule::Normal:
		return intern(Normal, model, none,
		              [&] {
			              return adaptive::map(model, [](const UniformValue& v)
			                                   { return deriveValue(DerivedRecipe::NormalMatrix, v); });
		              });
	case Rule::Camera:
		return intern(Camera, view, none,
		              [&]
		              {
			              return adaptive::map(
			                  view, [](const UniformValue& x)
			                  { return UniformValue(math::V3f(trafoOf(x).inverse().transformPos(math::V3d(0.0)))); });
		              });
	}
	if (!inverse)
		return base;
	return intern(
	    Inverse, base, none,
	    [&]
	    { return adaptive::map(base, [](const UniformValue& v) { return deriveValue(DerivedRecipe::Inverse, v); }); });
}

namespace
{
Error missingUniform(const scene::RenderObject& object, std::string_view name)
{
	return makeError(ErrorCode::InvalidArgument, objectName(object) + ": effect needs the uniform '" +
	                                                 std::string(name) + "', which the object does not provide");
}
} // namespace

Result<aval<UniformValue>> DerivedUniforms::resolve(const scene::RenderObject& object, const std::string& name)
{
	if (auto it = object.uniforms.find(name); it != object.uniforms.end())
		return it->second;
	const fx::StandardUniform* standard = fx::standardUniform(name);
	if (!standard)
		return missingUniform(object, name);
	return derive(standard->rule, standard->inverse, trafoInput(object, "ModelTrafo", identity_),
	              trafoInput(object, "ViewTrafo", identity_), trafoInput(object, "ProjTrafo", identity_));
}

Result<void> DerivedUniforms::resolve(const scene::RenderObject& object, const UniformPlan& plan,
                                      std::span<aval<UniformValue>> out, std::span<DerivedRecipe> pooled)
{
	QUOKKA_ASSERT(out.size() == plan.size() && (pooled.empty() || pooled.size() == plan.size()),
	              "DerivedUniforms::resolve: one output per planned name");
	// The object's values of the planned names: one merge walk over both sorted lists when the object's map is not
	// much longer than the plan, else a lookup per name.
	const std::vector<std::string>& names = plan.fetch_;
	absl::InlinedVector<const aval<UniformValue>*, 16> found(names.size(), nullptr);
	if (object.uniforms.size() <= 2 * names.size() + 8)
	{
		auto it = object.uniforms.begin();
		for (size_t f = 0; f < names.size() && it != object.uniforms.end();)
		{
			const int c = it->first.compare(names[f]);
			if (c < 0)
				++it;
			else if (c > 0)
				++f;
			else
				found[f++] = &(it++)->second;
		}
	}
	else
		for (size_t f = 0; f < names.size(); ++f)
			if (auto it = object.uniforms.find(names[f]); it != object.uniforms.end())
				found[f] = &it->second;
	auto input = [&](uint32_t f) -> const aval<UniformValue>& { return found[f] ? *found[f] : identity_; };
	const aval<UniformValue>& model = input(plan.model_);
	for (size_t i = 0; i < plan.members_.size(); ++i)
	{
		const UniformPlan::Member& m = plan.members_[i];
		DerivedRecipe recipe = DerivedRecipe::None;
		if (!found[m.own] && !pooled.empty() && m.standard)
			recipe = m.standard->rule == fx::StandardRule::Normal                         ? DerivedRecipe::NormalMatrix
			         : m.standard->rule == fx::StandardRule::Model && m.standard->inverse ? DerivedRecipe::Inverse
			                                                                              : DerivedRecipe::None;
		if (!pooled.empty())
			pooled[i] = recipe;
		if (found[m.own])
			out[i] = *found[m.own];
		else if (recipe != DerivedRecipe::None)
			out[i] = model;
		else if (!m.standard)
			return missingUniform(object, names[m.own]);
		else
			out[i] = derive(m.standard->rule, m.standard->inverse, model, input(plan.view_), input(plan.proj_));
	}
	return {};
}

} // namespace quokka::inputs
