// Per-instance uniforms: the effect rewrite of instancing.hpp. Each rewritten stage gets `#define X s.X` for a
// per-instance uniform X (read as a flat port) and `#define D <expression>` for a trafo D derived from one; the
// expressions name other trafos, which expand in turn (a macro is never expanded inside its own expansion, so
// `#define ModelTrafo s.ModelTrafo` is safe), and the uniforms they still need are added to the stage.
#include <quokka/fx/instancing.hpp>
#include <quokka/fx/standard_uniforms.hpp>
#include <quokka/fx/uniform_scope.hpp>

#include <algorithm>
#include <map>

namespace quokka::fx
{

namespace
{
/// The standard uniform `name` when it is derived from others (not one of the three input trafos), else null.
const StandardUniform* derivation(const std::string& name)
{
	const StandardUniform* u = standardUniform(name);
	return u && !u->glsl.empty() ? u : nullptr;
}

bool contains(const std::vector<std::string>& names, const std::string& name)
{
	return std::find(names.begin(), names.end(), name) != names.end();
}

struct Rewriter
{
	const std::vector<std::string>& per_instance;
	const std::vector<std::string>& supplied;
	std::map<std::string, bool> varies_memo;

	/// Whether `name` takes a different value per instance: supplied per instance, or derived (not supplied) from
	/// something that does.
	bool varies(const std::string& name)
	{
		if (auto it = varies_memo.find(name); it != varies_memo.end())
			return it->second;
		bool v = contains(per_instance, name);
		if (!v && !contains(supplied, name))
			if (const StandardUniform* d = derivation(name))
				v = std::any_of(d->inputs.begin(), d->inputs.end(),
				                [&](std::string_view i) { return !i.empty() && varies(std::string(i)); });
		varies_memo[name] = v;
		return v;
	}

	/// Adds to `stage` what reading the varying `name` needs: a port and a define, or a define and, recursively, its
	/// inputs (uniforms when they do not vary).
	Result<void> need(const std::string& name, std::vector<Port>& reads, std::vector<std::string>& uniforms,
	                  std::map<std::string, std::string>& defines)
	{
		if (defines.count(name))
			return {};
		if (contains(per_instance, name))
		{
			const auto type = UniformScope::lookup(name);
			if (!type)
				return makeError(ErrorCode::InvalidArgument,
				                 "per-instance uniform '" + name + "' is not declared in the UniformScope");
			if (type->scalar == Scalar::Bool)
				return makeError(ErrorCode::InvalidArgument,
				                 "uniform '" + name + "' is bool and cannot be supplied per instance");
			defines[name] = "s." + name;
			reads.push_back({name, *type, Interp::Flat});
			return {};
		}
		const StandardUniform* d = derivation(name);
		defines[name] = std::string(d->glsl);
		for (std::string_view view : d->inputs)
		{
			if (view.empty())
				continue;
			const std::string input(view);
			if (varies(input))
				QUOKKA_TRY(need(input, reads, uniforms, defines));
			else if (!contains(uniforms, input))
				uniforms.push_back(input);
		}
		return {};
	}
};
} // namespace

bool readsUniform(const Effect& effect, const std::string& name)
{
	return std::any_of(effect.stages().begin(), effect.stages().end(),
	                   [&](const StagePtr& s) { return contains(s->uniformNames(), name); });
}

Result<Effect> instanceUniforms(const Effect& effect, const std::vector<std::string>& per_instance,
                                const std::vector<std::string>& supplied)
{
	Rewriter rw{per_instance, supplied, {}};
	std::vector<StagePtr> stages;
	bool changed = false;
	for (const StagePtr& s : effect.stages())
	{
		std::vector<std::string> uniforms;
		std::vector<Port> reads = s->readPorts();
		std::map<std::string, std::string> defines;
		for (const std::string& u : s->uniformNames())
			if (!rw.varies(u) && !contains(uniforms, u))
				uniforms.push_back(u);
		bool rewrite = false;
		for (const std::string& u : s->uniformNames())
			if (rw.varies(u))
			{
				rewrite = true;
				if (auto r = rw.need(u, reads, uniforms, defines); !r.ok())
					return makeError(ErrorCode::InvalidArgument,
					                 "effect '" + effect.name() + "', stage '" + s->name() + "': " + r.error().message);
			}
		if (!rewrite)
		{
			stages.push_back(s);
			continue;
		}
		changed = true;
		Stage copy = *s;
		for (auto& [k, v] : defines)
			std::move(copy).define(k, v); // in place
		stages.push_back(
		    std::make_shared<const Stage>(std::move(copy).reads(std::move(reads)).uniforms(std::move(uniforms))));
	}
	if (!changed)
		return effect;
	return composeEffect(effect.name(), std::move(stages));
}

} // namespace quokka::fx
