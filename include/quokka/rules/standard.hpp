// quokka/rules/standard.hpp — the standard derived uniforms as rules.
//
// Every name of fx::standardUniforms() with its rule over the three trafo leaves ModelTrafo, ViewTrafo and ProjTrafo
// (an object lacking one reads the identity). Products read right to left; inverses are products of the leaves'
// stored backward matrices in reverse order, so no matrix is ever inverted numerically:
//   ViewProjTrafo = Proj · View            ModelViewTrafo = View · Model        ModelViewProjTrafo = (Proj · View) ·
//   Model *Inv          = the reversed product of the leaf inverses, e.g. ModelViewProjTrafoInv = Model⁻¹ · (View⁻¹ ·
//   Proj⁻¹) NormalMatrix  = transpose(upper 3×3 of Model⁻¹)                     CameraLocation = LightLocation =
//   (View⁻¹)[3].xyz
// The grouping is the one the CPU path has always used, so its values are bit for bit those of math::Trafo3d products.
#pragma once

#include <span>
#include <string_view>

#include <quokka/rules/rule.hpp>

namespace quokka::rules
{

struct Standard
{
	std::string_view name;
	Rule rule;
};

/// The standard uniforms, in fx::standardUniforms() order.
std::span<const Standard> standardRules();
/// The rule of standard uniform `name`, or null.
const Rule* standardRule(std::string_view name);
/// True for ModelTrafo, ViewTrafo and ProjTrafo: the leaves the standard rules read (each the identity when absent).
bool isTrafoLeaf(std::string_view name);

} // namespace quokka::rules
