// quokka/fx/standard_uniforms.hpp — the standard uniforms: names an effect may read that an object need not supply,
// because they follow from its ModelTrafo, ViewTrafo and ProjTrafo (each the identity when absent). One table serves
// both derivations — the CPU one (inputs::DerivedUniforms: per object, double precision) and the shader one
// (instanceUniforms: per instance, from a per-instance trafo) — so both know the same names with the same meaning.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace quokka::fx
{

/// What a standard uniform is computed from. Products read right to left: ModelViewProj = Proj · View · Model.
enum class StandardRule : uint8_t
{
	Model,
	View,
	Proj,
	ViewProj,
	ModelView,
	ModelViewProj,
	Normal, ///< transpose(inverse(upper 3×3 of Model))
	Camera, ///< the translation of View's inverse (the eye in world space)
};

struct StandardUniform
{
	std::string_view name;
	StandardRule rule;
	bool inverse;          ///< the inverse of `rule`'s trafo (the *Inv names)
	std::string_view glsl; ///< the GLSL expression over other standard names; empty for the three inputs
	std::array<std::string_view, 2> inputs; ///< the standard names `glsl` reads (empty when fewer)
};

/// Every standard uniform: ModelTrafo, ViewTrafo, ProjTrafo, ViewProjTrafo, ModelViewTrafo, ModelViewProjTrafo, the
/// *Inv of each of these six, NormalMatrix, CameraLocation and LightLocation (the camera unless supplied).
std::span<const StandardUniform> standardUniforms();
/// The entry named `name`, or null when the name has no standard meaning.
const StandardUniform* standardUniform(std::string_view name);

} // namespace quokka::fx
