// The standard derived uniforms as rules (standard.hpp).
#include <quokka/rules/standard.hpp>

#include <vector>

#include <quokka/fx/standard_uniforms.hpp>

namespace quokka::rules
{

namespace
{
Expr standardExpr(std::string_view name)
{
	const Expr m = leaf("ModelTrafo", fx::M44f), v = leaf("ViewTrafo", fx::M44f), p = leaf("ProjTrafo", fx::M44f);
	const Expr eye = swizzle(column(inv(v), 3), "xyz");
	const std::pair<std::string_view, Expr> table[] = {
	    {"ModelTrafo", m},
	    {"ViewTrafo", v},
	    {"ProjTrafo", p},
	    {"ViewProjTrafo", p * v},
	    {"ModelViewTrafo", v * m},
	    {"ModelViewProjTrafo", (p * v) * m},
	    {"ModelTrafoInv", inv(m)},
	    {"ViewTrafoInv", inv(v)},
	    {"ProjTrafoInv", inv(p)},
	    {"ViewProjTrafoInv", inv(v) * inv(p)},
	    {"ModelViewTrafoInv", inv(m) * inv(v)},
	    {"ModelViewProjTrafoInv", inv(m) * (inv(v) * inv(p))},
	    {"NormalMatrix", transpose(upper3x3(inv(m)))},
	    {"CameraLocation", eye},
	    {"LightLocation", eye},
	};
	for (const auto& [n, e] : table)
		if (n == name)
			return e;
	QUOKKA_ASSERT(false, "rules: a standard uniform without a rule");
	return {};
}
} // namespace

std::span<const Standard> standardRules()
{
	static const std::vector<Standard> rules = []
	{
		std::vector<Standard> out;
		for (const fx::StandardUniform& u : fx::standardUniforms())
			out.push_back({u.name, Rule::make(standardExpr(u.name)).value()});
		return out;
	}();
	return rules;
}

const Rule* standardRule(std::string_view name)
{
	for (const Standard& s : standardRules())
		if (s.name == name)
			return &s.rule;
	return nullptr;
}

bool isTrafoLeaf(std::string_view name)
{
	return name == "ModelTrafo" || name == "ViewTrafo" || name == "ProjTrafo";
}

} // namespace quokka::rules
