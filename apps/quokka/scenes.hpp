// scenes.hpp — the CLI's scene sources: seeded built-in generators (grid, city, unique meshes) and glTF 2.0 files.
//
// Every source returns plain scene::RenderObjects whose uniforms read the shared camera and light cvals of
// SceneGlobals (ViewTrafo, ProjTrafo, LightLocation), so orbiting the camera is one cval write per frame. Objects
// carry ModelTrafo; the classic renderer derives ModelViewProjTrafo, NormalMatrix, … from ModelTrafo/ViewTrafo/
// ProjTrafo on demand. Bounds are world-space and frame the default camera.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <quokka/adaptive/aval.hpp>
#include <quokka/base/result.hpp>
#include <quokka/gltf/gltf.hpp>
#include <quokka/math/math.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::app
{

/// The inputs every generated object shares.
struct SceneGlobals
{
	adaptive::cval<math::Trafo3d> view{math::Trafo3d::identity()};
	adaptive::cval<math::Trafo3d> proj{math::Trafo3d::identity()};
	adaptive::cval<math::V3f> light_location{math::V3f(0.0f)};

	/// The uniforms every object of a generated scene carries (ViewTrafo, ProjTrafo, LightLocation).
	std::map<std::string, adaptive::aval<scene::UniformValue>> uniforms() const;
};

struct GeneratedScene
{
	std::vector<scene::RenderObjectPtr> objects;
	math::Box3d bounds; ///< world space
	uint64_t triangles = 0;
	uint64_t lines = 0;                ///< glTF line primitives
	uint64_t points = 0;               ///< glTF point primitives
	std::vector<gltf::Camera> cameras; ///< a glTF file's cameras
};

/// N unique meshes of 10–100 triangles, each with its own trafo and colour, on a square grid.
Result<GeneratedScene> makeGridScene(const SceneGlobals& globals, uint32_t objects, uint64_t seed);
/// A city of mixed effects: lit buildings, vertex-coloured props, textured objects, instanced trees (per-instance
/// trafos), mirrored (negative-determinant) trafos with the front face flipped; ~`objects` render objects.
Result<GeneratedScene> makeCityScene(const SceneGlobals& globals, uint32_t objects, uint64_t seed);
/// makeUniqueMeshScene's knobs.
struct UniqueMeshOptions
{
	/// Triangles of every object: even, 4…100 (a closed surface has an even count); 0 = each object draws its own
	/// count from {10, 12, …, 100}.
	uint32_t triangles = 0;
	/// ModelTrafo is a cval per object (UniqueMeshScene::trafos) instead of a constant: what edits need, at ~0.5 KiB
	/// more per object.
	bool editable = false;
};

/// A unique-mesh scene and, when editable, its objects' ModelTrafo cvals (index i belongs to objects[i]).
struct UniqueMeshScene
{
	GeneratedScene scene;
	std::vector<adaptive::cval<math::Trafo3d>> trafos;
};

/// N objects, each with its own random closed mesh (a jittered bipyramid, or a tetrahedron at 4 triangles; u32
/// indices, shared vertices with radial normals), its own ModelTrafo on a square grid in the xz-plane and one of 16
/// shared ConstantColor values; effect trafo + constantColor + simpleLighting, back faces culled. The heap
/// renderer's benchmark scene (issue #5): no two objects share a buffer. Deterministic in `seed` and `options`;
/// ~1.5 KiB of host memory per object. Errors: InvalidArgument (objects outside 1…10,000,000, a bad triangle count).
Result<UniqueMeshScene> makeUniqueMeshScene(const SceneGlobals& globals, uint32_t objects, uint64_t seed,
                                            const UniqueMeshOptions& options = {});
/// Imports a .gltf or .glb file with gltf::importFile (its objects carry `globals`' uniforms). `any_path`: buffer and
/// image URIs may point anywhere (default: inside the model's folder only). Errors as gltf::importFile, with the
/// confinement message naming --gltf-any-path.
Result<GeneratedScene> importGltf(const std::string& path, const SceneGlobals& globals, bool any_path = false);

} // namespace quokka::app
