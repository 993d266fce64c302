// The table of standard uniforms (standard_uniforms.hpp).
#include <quokka/fx/standard_uniforms.hpp>

namespace quokka::fx
{

std::span<const StandardUniform> standardUniforms()
{
	using R = StandardRule;
	static constexpr StandardUniform table[] = {
	    {"ModelTrafo", R::Model, false, "", {}},
	    {"ViewTrafo", R::View, false, "", {}},
	    {"ProjTrafo", R::Proj, false, "", {}},
	    {"ViewProjTrafo", R::ViewProj, false, "(ProjTrafo * ViewTrafo)", {"ProjTrafo", "ViewTrafo"}},
	    {"ModelViewTrafo", R::ModelView, false, "(ViewTrafo * ModelTrafo)", {"ViewTrafo", "ModelTrafo"}},
	    {"ModelViewProjTrafo",
	     R::ModelViewProj,
	     false,
	     "(ViewProjTrafo * ModelTrafo)",
	     {"ViewProjTrafo", "ModelTrafo"}},
	    {"ModelTrafoInv", R::Model, true, "inverse(ModelTrafo)", {"ModelTrafo"}},
	    {"ViewTrafoInv", R::View, true, "inverse(ViewTrafo)", {"ViewTrafo"}},
	    {"ProjTrafoInv", R::Proj, true, "inverse(ProjTrafo)", {"ProjTrafo"}},
	    {"ViewProjTrafoInv", R::ViewProj, true, "(ViewTrafoInv * ProjTrafoInv)", {"ViewTrafoInv", "ProjTrafoInv"}},
	    {"ModelViewTrafoInv", R::ModelView, true, "(ModelTrafoInv * ViewTrafoInv)", {"ModelTrafoInv", "ViewTrafoInv"}},
	    {"ModelViewProjTrafoInv",
	     R::ModelViewProj,
	     true,
	     "(ModelTrafoInv * ViewProjTrafoInv)",
	     {"ModelTrafoInv", "ViewProjTrafoInv"}},
	    {"NormalMatrix", R::Normal, false, "transpose(inverse(mat3(ModelTrafo)))", {"ModelTrafo"}},
	    {"CameraLocation", R::Camera, false, "(ViewTrafoInv[3].xyz)", {"ViewTrafoInv"}},
	    {"LightLocation", R::Camera, false, "(ViewTrafoInv[3].xyz)", {"ViewTrafoInv"}},
	};
	return table;
}

const StandardUniform* standardUniform(std::string_view name)
{
	for (const StandardUniform& u : standardUniforms())
		if (u.name == name)
			return &u;
	return nullptr;
}

} // namespace quokka::fx
