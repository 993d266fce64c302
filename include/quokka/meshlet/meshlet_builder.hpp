// quokka/meshlet/meshlet_builder.hpp — indexed triangle meshes into meshlet batches (pure CPU transforms).
//
// buildMeshletBatch() clusters a mesh with meshoptimizer (≤ 128 vertices and ≤ 128 triangles per meshlet, the
// limits of meep-engine's builder), computes each meshlet's AABB, bounding sphere and normal cone, and packs
// the payload described in include/quokka/meshlet/meshlet_record.glsl.h: u8 local indices, f32 positions, octahedral
// normals. The result is what MeshletManager::addBatch() uploads. Procedural meshes for scenes, tests and benchmarks
// live here too.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/meshlet/meshlet_record.hpp>

namespace quokka::meshlet
{

/// An indexed triangle mesh. `normals` may be empty (area-weighted face normals are generated).
struct MeshView
{
	std::span<const float> positions;  ///< xyz per vertex (3 floats per vertex)
	std::span<const float> normals;    ///< xyz per vertex, or empty
	std::span<const uint32_t> indices; ///< 3 per triangle, each < vertex count
};

/// An owned indexed mesh (procedural generators return it).
struct IndexedMesh
{
	std::vector<float> positions;
	std::vector<float> normals;
	std::vector<uint32_t> indices;

	MeshView view() const { return {positions, normals, indices}; }
};

/// Clusters `mesh` into meshlets and packs them into one batch (addresses batch-local).
/// `cone_weight` (0 … 1) trades cluster compactness for tighter normal cones (meshoptimizer's parameter; meep used 0).
/// Errors: InvalidArgument for an empty mesh, an index count not divisible by 3, an index out of range or a
/// positions/normals size that is not 3 × vertex count.
Result<MeshletBatch> buildMeshletBatch(const MeshView& mesh, float cone_weight = 0.25f);

/// Octahedral normal encoding used by the payload: snorm16 x in the low half, y in the high half.
uint32_t encodeOctahedral(float x, float y, float z);

/// A torus around +Y: `rings` × `sides` quads (2 triangles each), radii R and r.
IndexedMesh makeTorus(uint32_t rings, uint32_t sides, float major_radius, float minor_radius);
/// A UV sphere: `stacks` × `slices` quads around +Y.
IndexedMesh makeSphere(uint32_t stacks, uint32_t slices, float radius);

} // namespace quokka::meshlet
