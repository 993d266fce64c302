// quokka/fx/standard_uniforms.hpp — the standard uniforms: names an effect may read that an object need not supply,
// because they follow from its ModelTrafo, ViewTrafo and ProjTrafo (each the identity when absent). This table gives
// each name's GLSL expression, which the shader rewrite of per-instance uniforms (instanceUniforms) inlines; the same
// names' rules (rules/standard.hpp, in this table's order) are what every other derivation evaluates, and a test holds
// the two to one meaning.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace quokka::fx
{

struct StandardUniform
{
	std::string_view name;
	std::string_view glsl; ///< the GLSL expression over other standard names; empty for the three inputs
	std::array<std::string_view, 2> inputs; ///< the standard names `glsl` reads (empty when fewer)
};

/// Every standard uniform: ModelTrafo, ViewTrafo, ProjTrafo, ViewProjTrafo, ModelViewTrafo, ModelViewProjTrafo, the
/// *Inv of each of these six, NormalMatrix, CameraLocation and LightLocation (the camera unless supplied).
std::span<const StandardUniform> standardUniforms();
/// The entry named `name`, or null when the name has no standard meaning.
const StandardUniform* standardUniform(std::string_view name);

} // namespace quokka::fx
