// quokka/fx/stock.hpp — stock effects (Aardvark's DefaultSurfaces): trafo, vertex colours, constant colour, simple
// lighting and diffuse texture. Each returns a shared immutable stage; compose them with fx::compose().
//
// Conventions (Aardvark DefaultSemantic names): vertex attributes Positions (V4f, object space), Normals (V3f),
// Colors (V4f), DiffuseColorCoordinates (V2f); the fragment output is Colors.
#pragma once

#include <quokka/fx/effect.hpp>

namespace quokka::fx::stock
{

/// VS, composed BEFORE trafo(): Positions = InstanceTrafo · Positions; Normals = mat3(InstanceTrafo) · Normals.
/// InstanceTrafo (M44f) is a per-instance vertex attribute taking 4 locations, one per column; bind it as a
/// BufferView with per_instance = true, format R32G32B32A32_SFLOAT (one column) and stride 64 (column c at offset
/// + 16·c). The normal transform uses the upper 3×3 itself, not its inverse transpose, so instance trafos must be
/// rotations, uniform scales and translations (simpleLighting renormalises); no non-uniform scale, and no mirroring
/// (a mirrored instance would flip its triangles' winding, which one pipeline front face cannot follow per instance).
StagePtr instanceTrafo();
/// VS: Positions = ModelViewProjTrafo · Positions (gl_Position; camera-relative: the product is taken in double
/// before it reaches the shader, so models far from the origin do not jitter); WorldPositions = ModelTrafo ·
/// Positions; Normals = NormalMatrix · Normals.
StagePtr trafo();
/// FS: passes the interpolated vertex Colors through (they become an implicit vertex attribute).
StagePtr vertexColors();
/// FS: Colors = the uniform ConstantColor (V4f).
StagePtr constantColor();
/// FS: Lambert + ambient with the light at LightLocation (world space) over the incoming Colors.
StagePtr simpleLighting();
/// FS: Colors *= texture(DiffuseColorTexture, DiffuseColorCoordinates).
StagePtr diffuseTexture();

} // namespace quokka::fx::stock
