// scene_gltf.cpp — SceneGlobals::uniforms(), shared by every scene source of the CLI, and glTF files as CLI scenes
// (quokka::gltf does the import).
#include "scenes.hpp"

namespace quokka::app
{

std::map<std::string, adaptive::aval<scene::UniformValue>> SceneGlobals::uniforms() const
{
	// Cast to the aval base: scene::uniform(const T&) would otherwise take the cval itself as a constant.
	return {
	    {"ViewTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(view))},
	    {"ProjTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(proj))},
	    {"LightLocation", scene::uniform(static_cast<const adaptive::aval<math::V3f>&>(light_location))},
	};
}

Result<GeneratedScene> importGltf(const std::string& path, const SceneGlobals& globals, bool any_path)
{
	gltf::ImportOptions options;
	options.any_path = any_path;
	options.shared_uniforms = globals.uniforms();
	auto imported = gltf::importFile(path, options);
	if (!imported.ok())
	{
		Error e = imported.error();
		// The library names its option; the CLI user needs the flag.
		if (const size_t at = e.message.find("ImportOptions::any_path"); at != std::string::npos)
			e.message.replace(at, std::string("ImportOptions::any_path").size(), "--gltf-any-path");
		return e;
	}
	gltf::Scene& s = imported.value();
	GeneratedScene out;
	out.objects = std::move(s.objects);
	out.bounds = s.bounds;
	out.triangles = s.triangles;
	out.lines = s.lines;
	out.points = s.points;
	out.cameras = std::move(s.cameras);
	return out;
}

} // namespace quokka::app
