// The standard derived uniforms on the CPU: the plan of an effect's names, the interned derived nodes and the
// recipes a renderer pools itself.
#include <quokka/base/erase_some.hpp>
#include <quokka/inputs/derived_uniforms.hpp>

#include <algorithm>
#include <typeinfo>

#include <absl/container/inlined_vector.h>

#include <quokka/base/assert.hpp>
#include <quokka/base/host_bytes.hpp>
#include <quokka/rules/standard.hpp>

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

std::optional<rules::Value> ruleInput(const UniformValue& value, const rules::Input& input)
{
	using rules::Value;
	const fx::Type t = input.type;
	if (t == fx::M44f)
	{
		if (const auto* tr = std::get_if<math::Trafo3d>(&value))
			return Value::of(input.inverse ? tr->backward : tr->forward);
		if (const auto* m = std::get_if<math::M44f>(&value))
			return Value::of(input.inverse ? math::Trafo3d::fromMatrix(math::M44d(*m)).backward : math::M44d(*m));
		return std::nullopt;
	}
	if (input.inverse)
		return std::nullopt;
	if (const auto* m = std::get_if<math::M33f>(&value); m && t == fx::M33f)
		return Value::of(math::M33d(*m));
	if (const auto* v = std::get_if<math::V4f>(&value); v && t == fx::V4f)
		return Value::of(math::V4d(*v));
	if (const auto* v = std::get_if<math::V3f>(&value); v && t == fx::V3f)
		return Value::of(math::V3d(*v));
	if (const auto* v = std::get_if<math::V2f>(&value); v && t == fx::V2f)
		return Value::of(math::V2d(*v));
	if (const auto* f = std::get_if<float>(&value); f && t == fx::F32)
		return Value::real(*f);
	if (const auto* i = std::get_if<int32_t>(&value); i && t == fx::I32)
		return Value::i32(*i);
	if (const auto* u = std::get_if<uint32_t>(&value); u && t == fx::U32)
		return Value::u32(*u);
	return std::nullopt;
}

std::optional<UniformValue> uniformOf(const rules::Value& v)
{
	const fx::Type t = v.type;
	if (t == fx::M44f)
		return UniformValue(math::toFloat(v.m44()));
	if (t == fx::M33f)
		return UniformValue(math::toFloat(v.m33()));
	if (t == fx::V4f)
		return UniformValue(math::V4f(v.v4()));
	if (t == fx::V3f)
		return UniformValue(math::V3f(v.v3()));
	if (t == fx::V2f)
		return UniformValue(math::V2f(float(v.c[0]), float(v.c[1])));
	if (t == fx::F32)
		return UniformValue(float(v.c[0]));
	if (t == fx::I32)
		return UniformValue(int32_t(v.c[0]));
	if (t == fx::U32)
		return UniformValue(uint32_t(v.c[0]));
	return std::nullopt;
}

bool DerivedUniforms::drop(size_t count)
{
	// (The derivations first: they hold derived nodes, as derived nodes hold each other.)
	if (!gpu_derived_.empty())
		return eraseSome(gpu_derived_, gpu_drop_cursor_, count) || !derived_.empty();
	return eraseSome(derived_, drop_cursor_, count);
}

std::shared_ptr<void> DerivedUniforms::releaseStorage()
{
	derived_.clear(); // (the values are adaptive: released on the owner thread, the storage wherever)
	gpu_derived_.clear();
	auto storage = std::make_shared<std::pair<decltype(derived_), decltype(gpu_derived_)>>(std::move(derived_),
	                                                                                       std::move(gpu_derived_));
	derived_ = {};
	gpu_derived_ = {};
	drop_cursor_.reset();
	gpu_drop_cursor_.reset();
	return storage;
}

size_t DerivedUniforms::collect()
{
	size_t dropped = 0;
	// A derived node holds its inputs (ModelViewProj holds ViewProj): repeat until nothing more is free.
	for (auto it = gpu_derived_.begin(); it != gpu_derived_.end();)
		if (it->use_count() == 1)
		{
			gpu_derived_.erase(it++);
			++dropped;
		}
		else
			++it;
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
	case DerivedRecipe::Gpu:
		QUOKKA_ASSERT(false, "deriveValue: a GPU-derived value has no CPU recipe");
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
		Member m{index(name), rules::standardRule(name), DerivedRecipe::None};
		if (m.standard)
		{
			for (const rules::Input& in : m.standard->inputs())
				m.input[m.inputs++] = index(in.name);
			m.recipe = name == "NormalMatrix"    ? DerivedRecipe::NormalMatrix
			           : name == "ModelTrafoInv" ? DerivedRecipe::Inverse
			                                     : DerivedRecipe::None;
		}
		members_.push_back(m);
	}
}

namespace
{
/// A transform chain of depth ≥ 2 that is not constant: a renderer computing derived values on the device composes
/// it there too, so no value it reaches may be read on the CPU.
bool isChainLink(const aval<UniformValue>& node)
{
	return !node.isConstant() && scene::TrafoChain::of(node.node().get()).depth() >= 2;
}
/// The rule copying a trafo: how a chain link read as a uniform itself is derived on the device.
const rules::Rule& copyTrafoRule()
{
	static const rules::Rule rule = rules::Rule::make(rules::leaf("ModelTrafo", fx::M44f)).value();
	return rule;
}

/// The value of `rule` over `values` (one per rule input) as a uniform value.
UniformValue evaluateRule(const rules::Rule& rule, std::span<const UniformValue* const> values)
{
	absl::InlinedVector<rules::Value, 3> in;
	for (size_t i = 0; i < values.size(); ++i)
	{
		std::optional<rules::Value> v = ruleInput(*values[i], rule.inputs()[i]);
		if (!v)
			// An input of another type than the rule reads: a value of a type the effect cannot take, so the renderer
			// reports the uniform's type mismatch instead of drawing with a wrong value.
			return rule.type() == fx::I32 ? UniformValue(0.0f) : UniformValue(int32_t(0));
		in.push_back(*v);
	}
	return *uniformOf(rules::evaluate(rule, in));
}
} // namespace

/// A derived node that is not constant: it holds its derivation (what a renderer computing it elsewhere reads through
/// derivationOf) and evaluates it when read on the CPU.
class DerivedUniforms::DerivedNode final : public adaptive::AValNode<UniformValue>
{
public:
	explicit DerivedNode(Derivation d) : derivation(std::move(d)) {}
	Derivation derivation;

protected:
	void compute(adaptive::Token t) override
	{
		absl::InlinedVector<const UniformValue*, 3> values;
		for (const aval<UniformValue>& a : derivation.inputs)
			values.push_back(&a.getValue(t));
		value_.emplace(evaluateRule(derivation.rule, values));
	}
};

const DerivedUniforms::Derivation* DerivedUniforms::derivationOf(const adaptive::AdaptiveObject* node)
{
	if (!node || typeid(*node) != typeid(DerivedNode))
		return nullptr;
	return &static_cast<const DerivedNode*>(node)->derivation;
}

size_t DerivedUniforms::hostBytes() const
{
	size_t bytes = flatTableBytes(derived_);
	for (const auto& [key, value] : derived_)
	{
		if (key.inputs.capacity() > 3)
			bytes += key.inputs.capacity() * sizeof(const void*);
		const adaptive::AdaptiveObject* node = value.node().get();
		if (node && typeid(*node) == typeid(DerivedNode))
			bytes += sizeof(DerivedNode) + node->inputCount() * adaptive::edgeBytes();
	}
	bytes += flatTableBytes(gpu_derived_);
	for (const std::shared_ptr<Derivation>& d : gpu_derived_)
		bytes += sizeof(Derivation) + 2 * sizeof(void*) + // (the shared pointer's control block: two counts, a vtable)
		         (d->inputs.capacity() > 3 ? d->inputs.capacity() * sizeof(aval<UniformValue>) : 0);
	return bytes;
}

aval<UniformValue> DerivedUniforms::derive(const rules::Rule& rule, std::span<const aval<UniformValue>> inputs,
                                           bool copy)
{
	if (!copy && rule.nodes().size() == 1 && rule.nodes()[0].op == rules::Op::Leaf)
		return inputs[0]; // the rule of ModelTrafo, ViewTrafo, ProjTrafo: the value itself
	Key key{rule.id(), {}};
	for (const aval<UniformValue>& in : inputs)
		key.inputs.push_back(in.node().get());
	auto [it, fresh] = derived_.try_emplace(std::move(key));
	if (!fresh)
		return it->second;
	// Over constants only (the identity standing for absent trafos, a fixed camera): a constant, as adaptive::map
	// gives, so renderers pool it by value.
	if (std::all_of(inputs.begin(), inputs.end(), [](const aval<UniformValue>& a) { return a.isConstant(); }))
	{
		absl::InlinedVector<const UniformValue*, 3> values;
		for (const aval<UniformValue>& a : inputs)
			values.push_back(&a.force());
		it->second = adaptive::constant(evaluateRule(rule, values));
		return it->second;
	}
	it->second = aval<UniformValue>(adaptive::makeRef<DerivedNode>(Derivation{rule, {inputs.begin(), inputs.end()}}));
	return it->second;
}

size_t DerivedUniforms::DerivationHash::of(const fx::Hash128& rule, std::span<const aval<UniformValue>> inputs)
{
	uint64_t h = rule.lo ^ (rule.hi * 0x9e3779b97f4a7c15ull);
	for (const aval<UniformValue>& in : inputs)
		h = (h ^ uint64_t(reinterpret_cast<uintptr_t>(in.node().get()))) * 0xff51afd7ed558ccdull;
	return size_t(h ^ (h >> 32));
}

bool DerivedUniforms::DerivationEq::same(const Derivation& d, const fx::Hash128& rule,
                                         std::span<const aval<UniformValue>> inputs)
{
	return d.rule.id() == rule &&
	       std::equal(d.inputs.begin(), d.inputs.end(), inputs.begin(), inputs.end(),
	                  [](const aval<UniformValue>& a, const aval<UniformValue>& b) { return a.node() == b.node(); });
}

DerivedUniforms::DerivationPtr DerivedUniforms::deriveOnDevice(const rules::Rule& rule,
                                                               std::span<const aval<UniformValue>> inputs)
{
	if (auto it = gpu_derived_.find(DerivationKey{rule.id(), inputs}); it != gpu_derived_.end())
		return *it;
	auto d = std::make_shared<Derivation>(Derivation{rule, {inputs.begin(), inputs.end()}});
	gpu_derived_.insert(d);
	return d;
}

namespace
{
Error missingUniform(const scene::RenderObject& object, std::string_view name)
{
	return makeError(ErrorCode::InvalidArgument, objectName(object) + ": effect needs the uniform '" +
	                                                 std::string(name) + "', which the object does not provide");
}
} // namespace

namespace
{
Error bothValueAndRule(const scene::RenderObject& object, std::string_view name)
{
	return makeError(ErrorCode::InvalidArgument, objectName(object) + ": the uniform '" + std::string(name) +
	                                                 "' has both a value and a rule; give it one of them");
}
} // namespace

Result<aval<UniformValue>> DerivedUniforms::deriveOwn(const scene::RenderObject& object, const std::string& name,
                                                      const rules::Rule& rule)
{
	if (object.uniforms.contains(name))
		return bothValueAndRule(object, name);
	// Inputs the object has a value for stay inputs; names it derives or that are standard are their rules.
	const rules::Producer producer = [&](std::string_view input) -> const rules::Rule*
	{
		const std::string key(input);
		if (object.uniforms.contains(key))
			return nullptr;
		if (auto it = object.derived.find(key); it != object.derived.end())
			return &it->second;
		return rules::isTrafoLeaf(input) ? nullptr : rules::standardRule(input);
	};
	rules::Producer root = [&](std::string_view input) { return input == name ? &rule : producer(input); };
	Result<rules::Rule> flat = rules::flatten(rules::Rule::make(rules::leaf(name, rule.type())).value(), root);
	if (!flat)
		return makeError(ErrorCode::InvalidArgument,
		                 objectName(object) + ": derived uniform '" + name + "': " + flat.error().message);
	if (!uniformOf(rules::Value{rule.type()}))
		return makeError(ErrorCode::InvalidArgument, objectName(object) + ": derived uniform '" + name + "' is " +
		                                                 fx::typeName(rule.type()) + ", which no uniform value holds");
	absl::InlinedVector<aval<UniformValue>, 3> inputs;
	for (const rules::Input& in : flat->inputs())
	{
		if (auto it = object.uniforms.find(in.name); it != object.uniforms.end())
			inputs.push_back(it->second);
		else if (rules::isTrafoLeaf(in.name))
			inputs.push_back(identity_);
		else
			return makeError(ErrorCode::InvalidArgument, objectName(object) + ": derived uniform '" + name +
			                                                 "' reads the uniform '" + in.name +
			                                                 "', which the object does not provide");
	}
	return derive(*flat, inputs);
}

Result<aval<UniformValue>> DerivedUniforms::resolve(const scene::RenderObject& object, const std::string& name)
{
	if (auto it = object.uniforms.find(name); it != object.uniforms.end())
		return it->second;
	if (auto it = object.derived.find(name); it != object.derived.end())
		return deriveOwn(object, name, it->second);
	const rules::Rule* standard = rules::standardRule(name);
	if (!standard)
		return missingUniform(object, name);
	absl::InlinedVector<aval<UniformValue>, 3> inputs;
	for (const rules::Input& in : standard->inputs())
	{
		auto it = object.uniforms.find(in.name);
		inputs.push_back(it != object.uniforms.end() ? it->second : identity_);
	}
	return derive(*standard, inputs);
}

Result<void> DerivedUniforms::resolve(const scene::RenderObject& object, const UniformPlan& plan,
                                      std::span<aval<UniformValue>> out, std::span<DerivedRecipe> pooled,
                                      std::span<DerivationPtr> gpu)
{
	QUOKKA_ASSERT(out.size() == plan.size() && (pooled.empty() || pooled.size() == plan.size()) &&
	                  (gpu.empty() || gpu.size() == plan.size()),
	              "DerivedUniforms::resolve: one output per planned name");
	const bool on_device = gpu_recipes_ && !pooled.empty() && !gpu.empty();
	// A value computed on the device: its derivation in `gpu`, nothing in `out`.
	auto onDevice = [&](size_t i, const rules::Rule& rule, std::span<const aval<UniformValue>> inputs)
	{
		gpu[i] = deriveOnDevice(rule, inputs);
		pooled[i] = DerivedRecipe::Gpu;
		out[i] = {};
	};
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
		if (!pooled.empty())
			pooled[i] = DerivedRecipe::None;
		if (!gpu.empty())
			gpu[i] = nullptr;
		if (found[m.own])
		{
			out[i] = *found[m.own];
			if (!object.derived.empty() && object.derived.contains(names[m.own]))
				return bothValueAndRule(object, names[m.own]);
			if (on_device && isChainLink(out[i]))
			{
				const aval<UniformValue> link = out[i];
				onDevice(i, copyTrafoRule(), std::span(&link, 1));
			}
			continue;
		}
		if (!object.derived.empty())
			if (auto it = object.derived.find(names[m.own]); it != object.derived.end())
			{
				Result<aval<UniformValue>> own = deriveOwn(object, names[m.own], it->second);
				if (!own)
					return own.error();
				out[i] = std::move(*own);
				if (on_device && !out[i].isConstant())
					if (const Derivation* d = derivationOf(out[i].node().get()))
					{
						// (Its node stays interned until collected: an object's own rules are rare.)
						const Derivation copy = *d;
						onDevice(i, copy.rule, copy.inputs);
					}
				continue;
			}
		if (!m.standard)
			return missingUniform(object, names[m.own]);
		if (!pooled.empty() && m.recipe != DerivedRecipe::None && !(on_device && isChainLink(model)))
		{
			pooled[i] = m.recipe;
			out[i] = model;
			continue;
		}
		std::array<aval<UniformValue>, 3> inputs;
		for (uint32_t k = 0; k < m.inputs; ++k)
			inputs[k] = input(m.input[k]);
		const std::span<const aval<UniformValue>> read(inputs.data(), m.inputs);
		if (on_device && m.standard->nodes().size() != 1 &&
		    !std::all_of(read.begin(), read.end(), [](const aval<UniformValue>& a) { return a.isConstant(); }))
			onDevice(i, *m.standard, read);
		else
			out[i] = derive(*m.standard, read);
	}
	return {};
}

} // namespace quokka::inputs
