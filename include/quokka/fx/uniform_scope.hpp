// quokka/fx/uniform_scope.hpp — the process-wide registry of uniform names and their types.
//
// Effects name their uniforms; the scope supplies the types, so the same name has one type everywhere (the role of
// Aardvark's/wombat's UniformScope). It is pre-seeded with the standard trafo names (ModelTrafo … ModelViewProjTrafo,
// their *Inv inverses, NormalMatrix as mat3, CameraLocation, LightLocation, ViewportSize). Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/fx/types.hpp>

namespace quokka::fx
{

class UniformScope
{
public:
	/// Declares `name` with `type`. Re-declaring with the same type is a no-op; with another type an InvalidArgument
	/// error naming both types. Names must be GLSL identifiers not starting with '_' (reserved for generated code).
	static Result<void> declare(std::string_view name, Type type);
	/// The type of `name`, if declared.
	static std::optional<Type> lookup(std::string_view name);
	/// Every declared name (sorted), for diagnostics.
	static std::vector<std::string> names();
};

/// True when `name` is a valid GLSL identifier that does not start with '_' or "gl_".
bool isUserIdentifier(std::string_view name);

} // namespace quokka::fx
