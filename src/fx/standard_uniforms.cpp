// The table of standard uniforms (standard_uniforms.hpp).
#include <quokka/fx/standard_uniforms.hpp>

namespace quokka::fx
{

std::span<const StandardUniform> standardUniforms()
{
	static constexpr StandardUniform table[] = {
	    {"ModelTrafo", "", {}},
	    {"ViewTrafo", "", {}},
	    {"ProjTrafo", "", {}},
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

const StandardUniform* standardUniform(std::string_view name)
{
	for (const StandardUniform& u : standardUniforms())
		if (u.name == name)
			return &u;
	return nullptr;
}

} // namespace quokka::fx
