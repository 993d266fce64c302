// derived_step.hpp — the derived-uniform seam (internal to quokka::heap).
//
// Values derived from an object's ModelTrafo alone (NormalMatrix, ModelTrafoInv: inputs::DerivedRecipe) are no
// adaptive nodes in the heap: each is a pooled part keyed by (input node, recipe, chunk) — a shared pool entry or a
// part of the object's private block — whose words the heap writes when the input changes. DerivedStep::pack() is the
// one place those words are produced: every site that writes a uniform part (a new pool entry, a changed shared entry,
// a new private block, a changed private part) calls it, with DerivedRecipe::None for a plain value.
//
// Today the step runs on the CPU, in double precision (inputs::packDerived), when the part is written, and the words
// travel with the frame's other arena writes. GPU-derived uniforms replace this step: it then writes the input's
// words only and marks the derived part, and a per-chunk kernel computes the marked parts in place before the draws,
// so a changed trafo costs one upload of its own words however many values derive from it.
#pragma once

#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::heap::detail
{

struct DerivedStep
{
	/// The words of `recipe` applied to `input` (the input itself for None), as the shaders read them.
	static inputs::PackedValue pack(inputs::DerivedRecipe recipe, const scene::UniformValue& input)
	{
		return inputs::packDerived(recipe, input);
	}
};

} // namespace quokka::heap::detail
