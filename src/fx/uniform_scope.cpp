#include <quokka/fx/uniform_scope.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace quokka::fx
{

namespace
{
struct Registry
{
	std::mutex mutex;
	std::map<std::string, Type, std::less<>> types;

	Registry()
	{
		// Aardvark's standard names. NormalMatrix is a mat3 (the derived-uniform recipe's output type), not the padded
		// M44f of wombat's scope.
		for (const char* base :
		     {"ModelTrafo", "ViewTrafo", "ProjTrafo", "ModelViewTrafo", "ViewProjTrafo", "ModelViewProjTrafo"})
		{
			types.emplace(base, M44f);
			types.emplace(std::string(base) + "Inv", M44f);
		}
		types.emplace("NormalMatrix", M33f);
		types.emplace("CameraLocation", V3f);
		types.emplace("LightLocation", V3f);
		types.emplace("ViewportSize", V2f);
		types.emplace("ConstantColor", V4f);
	}
};

Registry& registry()
{
	static Registry r;
	return r;
}
} // namespace

bool isUserIdentifier(std::string_view name)
{
	if (name.empty() || name[0] == '_' || name.substr(0, 3) == "gl_" ||
	    !(std::isalpha(static_cast<unsigned char>(name[0]))))
		return false;
	return std::all_of(name.begin(), name.end(),
	                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

Result<void> UniformScope::declare(std::string_view name, Type type)
{
	if (!isUserIdentifier(name))
		return makeError(ErrorCode::InvalidArgument,
		                 "uniform name '" + std::string(name) + "' is not a valid identifier");
	if (glslName(type).empty())
		return makeError(ErrorCode::InvalidArgument,
		                 "uniform '" + std::string(name) + "' has a type GLSL cannot spell");
	Registry& r = registry();
	std::lock_guard lock(r.mutex);
	auto it = r.types.find(name);
	if (it == r.types.end())
	{
		r.types.emplace(std::string(name), type);
		return {};
	}
	if (it->second == type)
		return {};
	return makeError(ErrorCode::InvalidArgument, "uniform '" + std::string(name) + "' is already declared as " +
	                                                 typeName(it->second) + ", not " + typeName(type));
}

std::optional<Type> UniformScope::lookup(std::string_view name)
{
	Registry& r = registry();
	std::lock_guard lock(r.mutex);
	auto it = r.types.find(name);
	if (it == r.types.end())
		return std::nullopt;
	return it->second;
}

std::vector<std::string> UniformScope::names()
{
	Registry& r = registry();
	std::lock_guard lock(r.mutex);
	std::vector<std::string> out;
	for (const auto& [name, type] : r.types)
		out.push_back(name);
	return out;
}

} // namespace quokka::fx
