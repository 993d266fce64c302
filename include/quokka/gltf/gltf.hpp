// quokka/gltf/gltf.hpp — glTF 2.0 import (.gltf and .glb) into scene::RenderObjects, with the file's cameras.
//
// importFile() walks the default scene (scene 0 when none is named; every root node when the file has no scenes),
// keeps the node hierarchy as transform chains (scene/trafo_chain.hpp: each node's local transform is a cval in
// Scene::nodes, each object's ModelTrafo its node's chain — moving a node moves everything below it, and the heap
// renderer composes the chains on the device), and turns every mesh primitive into one render object:
// - Geometry: POSITION; NORMAL (flat normals are computed for triangles without them, as the specification asks);
//   COLOR_0 (VEC3 or VEC4; float or normalised unsigned byte/short) multiplies the base colour; indices (u8 widened to
//   u16). TRIANGLES, TRIANGLE_STRIP and TRIANGLE_FAN draw as triangle lists; LINES, LINE_STRIP and LINE_LOOP as line
//   lists; POINTS as points of PointSize pixels (default 1). Lines and points are unlit, triangles lit.
// - Material (metallic-roughness base only): baseColorFactor and baseColorTexture (sRGB, its own TEXCOORD_n and
//   sampler), emissiveFactor and emissiveTexture (added after lighting), alphaMode OPAQUE (alpha forced to 1), MASK
//   (fragments below alphaCutoff discarded) and BLEND (src-alpha blending, no depth writes; objects are not sorted),
//   doubleSided (single-sided triangles cull back faces), KHR_texture_transform on either texture (applied to the
//   texture coordinates at import). Metallic, roughness, normal and occlusion maps are ignored; lighting is the
//   effect library's simple diffuse term.
// - Uniforms: ModelTrafo and the material's (ConstantColor, EmissiveColor, AlphaCutoff), plus every entry of
//   ImportOptions::shared_uniforms (the application's view, projection and light, typically its own cvals, so that a
//   camera move is one write for all objects).
// - Cameras: every node with a camera, its view trafo (world → camera) and projection parameters.
// What is worked out from the world transforms at import — cameras' views, Scene::bounds, which meshes are mirrored
// (their front face flipped) or hidden by a zero scale — is not updated when a node's transform is changed later.
//
// Every accessor, buffer view, index and reference is checked: bad input is an Error (one line naming the file and
// the problem), never a crash or a silently empty scene. Versions other than 2.x, extensionsRequired outside the
// supported set (named in the message), structural errors and files with nothing to draw are errors.
// Files are read only where ImportOptions allows: by default buffer and image URIs must resolve inside the model's
// folder (after following symbolic links; `data:` URIs always work).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <quokka/adaptive/aval.hpp>
#include <quokka/base/result.hpp>
#include <quokka/math/math.hpp>
#include <quokka/scene/render_object.hpp>
#include <quokka/scene/trafo_chain.hpp>

namespace quokka::gltf
{

struct ImportOptions
{
	/// false (default): buffer and image URIs must resolve inside the model's folder (no absolute paths, no `..` out
	/// of it, symbolic links followed before the check). true: any path the process can read, for trusted input.
	bool any_path = false;
	/// Uniforms every imported object carries (ViewTrafo, ProjTrafo, LightLocation, …). Missing ones take the effect
	/// system's defaults (identity trafos, a light at the origin).
	std::map<std::string, adaptive::aval<scene::UniformValue>> shared_uniforms;
	/// Size in pixels of POINTS primitives.
	float point_size = 1.0f;
};

/// A camera the file places in the scene.
struct Camera
{
	std::string name; ///< the camera's name, else the node's, else "camera N"
	int node = -1;    ///< the node that places it
	/// World → camera (right-handed, the camera looks down −z with +y up): the inverse of the node's world trafo.
	math::Trafo3d view;
	bool orthographic = false;
	double yfov = 0.0;             ///< perspective: vertical field of view in radians
	double aspect_ratio = 0.0;     ///< perspective: width / height the file asks for; 0 = the viewport's
	double xmag = 0.0, ymag = 0.0; ///< orthographic: half the view's width and height
	double znear = 0.0;
	double zfar = 0.0; ///< 0 = infinite (perspective only)

	/// The projection for a viewport of aspect `viewport_aspect` (width / height), Vulkan clip space (y down, depth
	/// 0…1). A perspective camera keeps its yfov; an orthographic one keeps ymag and widens or narrows x to the
	/// viewport; an infinite far plane becomes 10^6 · znear.
	math::Trafo3d projection(double viewport_aspect) const;
};

/// A node of the scene walk.
struct Node
{
	int index = -1;  ///< in the file's node list
	int parent = -1; ///< in the file's node list; -1 for a root of the scene
	std::string name;
	/// Its transform relative to its parent (the file's matrix or TRS); set it to move the node and what hangs below.
	adaptive::cval<math::Trafo3d> local{math::Trafo3d::identity()};
	/// Its world transform: the chain of its ancestors' local transforms and its own.
	scene::TrafoChain chain;
};

struct Scene
{
	std::vector<scene::RenderObjectPtr> objects;
	std::vector<Node> nodes; ///< every node the scene walk reaches, in the walk's order (depth first, parents first)
	math::Box3d bounds;      ///< world space, of every object
	uint64_t triangles = 0;
	uint64_t lines = 0;
	uint64_t points = 0;
	std::vector<Camera> cameras; ///< in the order the scene walk meets their nodes
};

/// Imports a .gltf or .glb file. Errors: Io (a missing or unreadable file, including a buffer or image it names),
/// InvalidArgument (a malformed file, or a URI outside what ImportOptions allows), Unsupported (valid glTF this
/// importer does not handle: another major version, a required extension, sparse accessors, …), OutOfMemory.
Result<Scene> importFile(const std::string& path, const ImportOptions& options = {});

/// The extensions importFile() accepts in extensionsRequired.
const std::vector<std::string>& supportedRequiredExtensions();

} // namespace quokka::gltf
