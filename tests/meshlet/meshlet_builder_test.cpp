// buildMeshletBatch: limits, bounds, and a decode of the packed payload that must give back every input triangle.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <set>

#include <quokka/meshlet/meshlet_builder.hpp>

namespace quokka::meshlet
{
namespace
{

using Triangle = std::array<std::array<float, 3>, 3>;

// Rotates a triangle so that its lexicographically smallest corner comes first (winding preserved).
Triangle canonical(Triangle t)
{
	const size_t first = size_t(std::min_element(t.begin(), t.end()) - t.begin());
	std::rotate(t.begin(), t.begin() + ptrdiff_t(first), t.end());
	return t;
}

TEST(MeshletBuilder, MeshletsRespectTheLimitsAndTheirPayloadDecodesToTheInputTriangles)
{
	const IndexedMesh mesh = makeTorus(40, 24, 1.0f, 0.3f);
	auto built = buildMeshletBatch(mesh.view());
	ASSERT_TRUE(built.ok()) << built.error().message;
	const MeshletBatch& batch = built.value();
	ASSERT_GT(batch.records.size(), 10u);

	std::multiset<Triangle> input, decoded;
	for (size_t t = 0; t < mesh.indices.size(); t += 3)
	{
		Triangle tri;
		for (int k = 0; k < 3; ++k)
			for (int i = 0; i < 3; ++i)
				tri[k][i] = mesh.positions[size_t(mesh.indices[t + k]) * 3 + i];
		input.insert(canonical(tri));
	}
	for (const MeshletRecord& r : batch.records)
	{
		ASSERT_LE(r.vertex_count, 128u);
		ASSERT_LE(r.primitive_count, 128u);
		ASSERT_GT(r.primitive_count, 0u);
		const uint32_t positions = r.address + (r.primitive_count * 3 + 3) / 4;
		ASSERT_LE(positions + r.vertex_count * 4, batch.data.size());
		for (uint32_t c = 0; c < r.primitive_count * 3; c += 3)
		{
			Triangle tri;
			for (uint32_t k = 0; k < 3; ++k)
			{
				const uint32_t corner = c + k;
				const uint32_t local = (batch.data[r.address + corner / 4] >> ((corner % 4) * 8)) & 0xff;
				ASSERT_LT(local, r.vertex_count);
				std::memcpy(tri[k].data(), &batch.data[positions + local * 3], 12);
				for (int i = 0; i < 3; ++i)
				{
					EXPECT_GE(tri[k][i], r.bounds_min[i]);
					EXPECT_LE(tri[k][i], r.bounds_max[i]);
					const float d = tri[k][i] - r.sphere[i];
					(void)d;
				}
				const float dx = tri[k][0] - r.sphere[0], dy = tri[k][1] - r.sphere[1], dz = tri[k][2] - r.sphere[2];
				EXPECT_LE(std::sqrt(dx * dx + dy * dy + dz * dz), r.sphere[3] * 1.0001f + 1e-5f);
			}
			decoded.insert(canonical(tri));
		}
	}
	EXPECT_EQ(decoded, input);
}

TEST(MeshletBuilder, OctahedralNormalsHaveExactGoldenBits)
{
	EXPECT_EQ(encodeOctahedral(0, 0, 1), 0x00000000u);
	EXPECT_EQ(encodeOctahedral(1, 0, 0), 0x00007fffu);
	EXPECT_EQ(encodeOctahedral(0, 1, 0), 0x7fff0000u);
	EXPECT_EQ(encodeOctahedral(0, -1, 0), 0x80010000u);
	EXPECT_EQ(encodeOctahedral(0, 0, -1), 0x7fff7fffu); // folded: (1 - |0|) × sign(+0) on both axes
}

TEST(MeshletBuilder, BadMeshesAreErrors)
{
	const std::vector<float> positions = {0, 0, 0, 1, 0, 0, 0, 1, 0};
	const std::vector<uint32_t> ok = {0, 1, 2}, short_list = {0, 1}, out_of_range = {0, 1, 3};
	EXPECT_TRUE(buildMeshletBatch({positions, {}, ok}).ok());
	EXPECT_FALSE(buildMeshletBatch({positions, {}, short_list}).ok());
	EXPECT_FALSE(buildMeshletBatch({positions, {}, out_of_range}).ok());
	EXPECT_FALSE(buildMeshletBatch({{}, {}, {}}).ok());
}

} // namespace
} // namespace quokka::meshlet
