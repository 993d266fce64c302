// quokka/fx/stock.hpp — stock effects (Aardvark's DefaultSurfaces): trafo, vertex colours, constant colour, simple
// lighting and diffuse texture. Each returns a shared immutable stage; compose them with fx::compose().
//
// Conventions (Aardvark DefaultSemantic names): vertex attributes Positions (V4f, object space), Normals (V3f),
// Colors (V4f), DiffuseColorCoordinates (V2f); the fragment output is Colors.
#pragma once

#include <quokka/fx/effect.hpp>

namespace quokka::fx::stock
{

/// VS: WorldPositions = ModelTrafo · Positions; Positions = ViewProjTrafo · WorldPositions (gl_Position);
/// Normals = NormalMatrix · Normals.
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
