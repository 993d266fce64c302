// Per-instance uniforms: the effect rewrite of instancing.hpp. Each rewritten stage gets `#define X s.X` for a
// per-instance uniform X (read as a flat port) and `#define D <expression>` for a trafo D derived from one; the
// expressions name other trafos, which expand in turn (a macro is never expanded inside its own expansion, so
// `#define ModelTrafo s.ModelTrafo` is safe), and the uniforms they still need are added to the stage.
#include <quokka/fx/instancing.hpp>
#include <quokka/fx/uniform_scope.hpp>

#include <algorithm>
#include <map>

namespace quokka::fx
{

namespace
{
struct Derivation
{
	const char* name;
	const char* expression;
	std::vector<std::string> inputs;
};

// The GPU side of classic::DerivedUniforms (same names, same meaning).
const std::vector<Derivation>& derivations()
{
	static const std::vector<Derivation> table = {
	    {"ViewProjTrafo", "(ProjTrafo * ViewTrafo)", {"ProjTrafo", "ViewTrafo"}},
	    {"ModelViewTrafo", "(ViewTrafo * ModelTrafo)", {"ViewTrafo", "ModelTrafo"}},
	    {"ModelViewProjTrafo", "(ViewProjTrafo * ModelTrafo)", {"ViewProjTrafo", "ModelTrafo"}},
	    {"ModelTrafoInv", "inverse(ModelTrafo)", {"ModelTrafo"}},
	    {"ViewTrafoInv", "inverse(ViewTrafo)", {"ViewTrafo"}},
	    {"ProjTrafoInv", "inverse(ProjTrafo)", {"ProjTrafo"}},
	    {"ViewProjTrafoInv", "(ViewTrafoInv * ProjTrafoInv)", {"ViewTrafoInv", "ProjTrafoInv"}},
	    {"ModelViewTrafoInv", "(ModelTrafoInv * ViewTrafoInv)", {"ModelTrafoInv", "ViewTrafoInv"}},
	    {"ModelViewProjTrafoInv", "(ModelTrafoInv * ViewProjTrafoInv)", {"ModelTrafoInv", "ViewProjTrafoInv"}},
	    {"NormalMatrix", "transpose(inverse(mat3(ModelTrafo)))", {"ModelTrafo"}},
	    {"CameraLocation", "(ViewTrafoInv[3].xyz)", {"ViewTrafoInv"}},
	    {"LightLocation", "(ViewTrafoInv[3].xyz)", {"ViewTrafoInv"}},
	};
	return table;
}

const Derivation* derivation(const std::string& name)
{
	for (const Derivation& d : derivations())
		if (name == d.name)
			return &d;
	return nullptr;
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
			if (const Derivation* d = derivation(name))
				v = std::any_of(d->inputs.begin(), d->inputs.end(), [&](const std::string& i) { return varies(i); });
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
		const Derivation* d = derivation(name);
		defines[name] = d->expression;
		for (const std::string& input : d->inputs)
		{
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
