// Meshlet building with meshoptimizer (Arseny Kapoulkine, MIT): meshopt_buildMeshlets + meshopt_computeMeshletBounds,
// then packing into the payload layout of include/quokka/meshlet/meshlet_record.glsl.h.
#include <quokka/meshlet/meshlet_builder.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include <meshoptimizer.h>

namespace quokka::meshlet
{

namespace
{
// meshoptimizer 0.18 requires max_triangles divisible by 4 and ≤ 512, max_vertices ≤ 255.
static_assert(QUOKKA_MESHLET_MAX_TRIANGLES % 4 == 0 && QUOKKA_MESHLET_MAX_TRIANGLES <= 512);
static_assert(QUOKKA_MESHLET_MAX_VERTICES <= 255);

std::vector<float> faceNormals(std::span<const float> positions, std::span<const uint32_t> indices)
{
	std::vector<float> normals(positions.size(), 0.0f);
	for (size_t t = 0; t + 2 < indices.size(); t += 3)
	{
		const float* a = &positions[size_t(indices[t]) * 3];
		const float* b = &positions[size_t(indices[t + 1]) * 3];
		const float* c = &positions[size_t(indices[t + 2]) * 3];
		const float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
		const float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
		const float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
		                    e1[0] * e2[1] - e1[1] * e2[0]}; // length = 2 × area: area weighting
		for (int k = 0; k < 3; ++k)
			for (int i = 0; i < 3; ++i)
				normals[size_t(indices[t + k]) * 3 + i] += n[i];
	}
	return normals;
}
} // namespace

uint32_t encodeOctahedral(float x, float y, float z)
{
	const float len = std::abs(x) + std::abs(y) + std::abs(z);
	if (len <= 0.0f)
		return encodeOctahedral(0, 0, 1);
	float u = x / len, v = y / len;
	if (z < 0.0f)
	{
		const float fu = (1.0f - std::abs(v)) * (u >= 0.0f ? 1.0f : -1.0f);
		const float fv = (1.0f - std::abs(u)) * (v >= 0.0f ? 1.0f : -1.0f);
		u = fu;
		v = fv;
	}
	auto snorm16 = [](float f)
	{ return uint32_t(uint16_t(int16_t(std::lround(std::clamp(f, -1.0f, 1.0f) * 32767.0f)))); };
	return snorm16(u) | (snorm16(v) << 16);
}

Result<MeshletBatch> buildMeshletBatch(const MeshView& mesh, float cone_weight)
{
	const size_t vertex_count = mesh.positions.size() / 3;
	if (mesh.indices.empty() || mesh.indices.size() % 3 != 0 || vertex_count == 0 || mesh.positions.size() % 3 != 0)
		return makeError(ErrorCode::InvalidArgument, "meshlet build needs a non-empty triangle list");
	if (!mesh.normals.empty() && mesh.normals.size() != mesh.positions.size())
		return makeError(ErrorCode::InvalidArgument, "normals must have one xyz per vertex");
	for (uint32_t i : mesh.indices)
		if (i >= vertex_count)
			return makeError(ErrorCode::InvalidArgument, "index " + std::to_string(i) + " out of range");
	std::vector<float> generated;
	std::span<const float> normals = mesh.normals;
	if (normals.empty())
	{
		generated = faceNormals(mesh.positions, mesh.indices);
		normals = generated;
	}

	const size_t max_meshlets =
	    meshopt_buildMeshletsBound(mesh.indices.size(), QUOKKA_MESHLET_MAX_VERTICES, QUOKKA_MESHLET_MAX_TRIANGLES);
	std::vector<meshopt_Meshlet> meshlets(max_meshlets);
	std::vector<unsigned int> meshlet_vertices(max_meshlets * QUOKKA_MESHLET_MAX_VERTICES);
	std::vector<unsigned char> meshlet_triangles(max_meshlets * QUOKKA_MESHLET_MAX_TRIANGLES * 3);
	const size_t count =
	    meshopt_buildMeshlets(meshlets.data(), meshlet_vertices.data(), meshlet_triangles.data(), mesh.indices.data(),
	                          mesh.indices.size(), mesh.positions.data(), vertex_count, sizeof(float) * 3,
	                          QUOKKA_MESHLET_MAX_VERTICES, QUOKKA_MESHLET_MAX_TRIANGLES, cone_weight);

	MeshletBatch batch;
	batch.records.reserve(count);
	for (size_t m = 0; m < count; ++m)
	{
		const meshopt_Meshlet& ml = meshlets[m];
		const unsigned int* verts = &meshlet_vertices[ml.vertex_offset];
		const unsigned char* tris = &meshlet_triangles[ml.triangle_offset];
		const meshopt_Bounds bounds = meshopt_computeMeshletBounds(
		    verts, tris, ml.triangle_count, mesh.positions.data(), vertex_count, sizeof(float) * 3);
		MeshletRecord r;
		r.address = uint32_t(batch.data.size());
		r.primitive_count = ml.triangle_count;
		r.vertex_count = ml.vertex_count;
		r.flags = QUOKKA_MESHLET_FLAG_NONE;
		std::copy(bounds.center, bounds.center + 3, r.sphere);
		r.sphere[3] = bounds.radius;
		r.cone = uint32_t(uint8_t(bounds.cone_axis_s8[0])) | uint32_t(uint8_t(bounds.cone_axis_s8[1])) << 8 |
		         uint32_t(uint8_t(bounds.cone_axis_s8[2])) << 16 | uint32_t(uint8_t(bounds.cone_cutoff_s8)) << 24;
		std::fill(r.bounds_min, r.bounds_min + 3, INFINITY);
		std::fill(r.bounds_max, r.bounds_max + 3, -INFINITY);

		// Local indices: u8 per corner, 4 per word, little-endian.
		const uint32_t corners = ml.triangle_count * 3;
		const size_t index_base = batch.data.size();
		batch.data.resize(index_base + (corners + 3) / 4, 0u);
		for (uint32_t c = 0; c < corners; ++c)
			batch.data[index_base + c / 4] |= uint32_t(tris[c]) << ((c % 4) * 8);
		// Positions, then normals.
		for (uint32_t v = 0; v < ml.vertex_count; ++v)
		{
			const float* p = &mesh.positions[size_t(verts[v]) * 3];
			for (int i = 0; i < 3; ++i)
			{
				uint32_t bits;
				std::memcpy(&bits, &p[i], 4);
				batch.data.push_back(bits);
				r.bounds_min[i] = std::min(r.bounds_min[i], p[i]);
				r.bounds_max[i] = std::max(r.bounds_max[i], p[i]);
			}
		}
		for (uint32_t v = 0; v < ml.vertex_count; ++v)
		{
			const float* n = &normals[size_t(verts[v]) * 3];
			batch.data.push_back(encodeOctahedral(n[0], n[1], n[2]));
		}
		batch.records.push_back(r);
	}
	return batch;
}

IndexedMesh makeTorus(uint32_t rings, uint32_t sides, float major_radius, float minor_radius)
{
	IndexedMesh mesh;
	const float tau = 2.0f * std::numbers::pi_v<float>;
	for (uint32_t i = 0; i < rings; ++i)
		for (uint32_t j = 0; j < sides; ++j)
		{
			const float u = tau * float(i) / float(rings), v = tau * float(j) / float(sides);
			const float cx = std::cos(u), cz = std::sin(u), nx = std::cos(v) * cx, ny = std::sin(v),
			            nz = std::cos(v) * cz;
			mesh.positions.insert(mesh.positions.end(), {major_radius * cx + minor_radius * nx, minor_radius * ny,
			                                             major_radius * cz + minor_radius * nz});
			mesh.normals.insert(mesh.normals.end(), {nx, ny, nz});
		}
	for (uint32_t i = 0; i < rings; ++i)
		for (uint32_t j = 0; j < sides; ++j)
		{
			const uint32_t a = i * sides + j, b = ((i + 1) % rings) * sides + j,
			               c = ((i + 1) % rings) * sides + (j + 1) % sides, d = i * sides + (j + 1) % sides;
			mesh.indices.insert(mesh.indices.end(), {a, d, b, b, d, c});
		}
	return mesh;
}

IndexedMesh makeSphere(uint32_t stacks, uint32_t slices, float radius)
{
	IndexedMesh mesh;
	const float pi = std::numbers::pi_v<float>;
	for (uint32_t i = 0; i <= stacks; ++i)
		for (uint32_t j = 0; j <= slices; ++j)
		{
			const float theta = pi * float(i) / float(stacks), phi = 2.0f * pi * float(j) / float(slices);
			const float x = std::sin(theta) * std::cos(phi), y = std::cos(theta), z = std::sin(theta) * std::sin(phi);
			mesh.positions.insert(mesh.positions.end(), {radius * x, radius * y, radius * z});
			mesh.normals.insert(mesh.normals.end(), {x, y, z});
		}
	for (uint32_t i = 0; i < stacks; ++i)
		for (uint32_t j = 0; j < slices; ++j)
		{
			const uint32_t a = i * (slices + 1) + j, b = a + slices + 1;
			mesh.indices.insert(mesh.indices.end(), {a, a + 1, b, b, a + 1, b + 1});
		}
	return mesh;
}

} // namespace quokka::meshlet
