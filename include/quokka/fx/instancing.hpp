// quokka/fx/instancing.hpp — uniforms supplied per instance (Aardvark's instanceUniforms).
//
// An object drawn with several instances may give some of the uniforms its effect reads one value per instance. The
// effect is rewritten so that each such uniform is read from a flat State port of the same name and type; the
// renderers feed that port from a per-instance vertex attribute (an instance-rate input on the classic path, a load by
// instance index on the heap path), so the existing machinery draws it and a fragment-side read becomes a flat
// varying. The standard trafos derived from a per-instance uniform (ModelViewProjTrafo, NormalMatrix, *Inv, … — the
// ones inputs::DerivedUniforms would otherwise compute on the CPU, once per object) are computed in the shader from
// the per-instance value instead, unless the object supplies them itself.
#pragma once

#include <string>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/fx/effect.hpp>

namespace quokka::fx
{

/// `effect` with every uniform in `per_instance` read from a flat port of the same name and type, and every standard
/// trafo that derives from one of them and is not in `supplied` (the uniforms the object gives itself) computed in the
/// shader: ViewProjTrafo = ProjTrafo · ViewTrafo, ModelViewTrafo = ViewTrafo · ModelTrafo, ModelViewProjTrafo =
/// ViewProjTrafo · ModelTrafo, X Inv = inverse(X) (products of the factors' inverses), NormalMatrix =
/// transpose(inverse(mat3(ModelTrafo))), CameraLocation (and LightLocation) = the translation of ViewTrafoInv. Stages
/// reading none of them are kept as they are (same ids); the rewritten effect has its own id. Names in `per_instance`
/// that no stage reads as a uniform are ignored. Errors: InvalidArgument for a per-instance bool uniform (a vertex
/// attribute cannot be bool) or a name no UniformScope declares.
Result<Effect> instanceUniforms(const Effect& effect, const std::vector<std::string>& per_instance,
                                const std::vector<std::string>& supplied);

/// Whether some stage of `effect` reads `name` as a uniform.
bool readsUniform(const Effect& effect, const std::string& name);

} // namespace quokka::fx
