#include <gtest/gtest.h>

#include <random>

#include <quokka/math/math.hpp>

namespace quokka::math::test
{

void expectNear(const M44d& a, const M44d& b, double eps)
{
	for (int c = 0; c < 4; ++c)
		for (int r = 0; r < 4; ++r)
			EXPECT_NEAR(a[c][r], b[c][r], eps) << "column " << c << " row " << r;
}

TEST(Trafo3d, ComposedForwardAndBackwardStayInverse)
{
	std::mt19937 rng(7);
	std::uniform_real_distribution<double> u(-10.0, 10.0);
	for (int i = 0; i < 100; ++i)
	{
		const Trafo3d t = Trafo3d::translation({u(rng), u(rng), u(rng)}) *
		                  Trafo3d::rotation({u(rng), u(rng), u(rng) + 20.0}, u(rng)) *
		                  Trafo3d::scale({1.0 + std::abs(u(rng)), 0.5, -2.0});
		expectNear(t.forward * t.backward, M44d(1.0), 1e-12);
		expectNear(t.inverse().forward, t.backward, 0.0);
	}
}

TEST(Trafo3d, CompositionAppliesTheRightOperandFirst)
{
	const Trafo3d t = Trafo3d::translation({10, 0, 0}) * Trafo3d::scale(2.0);
	const V3d p = t.transformPos({1, 1, 1});
	EXPECT_DOUBLE_EQ(p.x, 12.0); // scaled first, then moved
	EXPECT_DOUBLE_EQ(p.y, 2.0);
	const V3d d = t.transformDir({1, 0, 0});
	EXPECT_DOUBLE_EQ(d.x, 2.0); // directions ignore translation
}

TEST(Trafo3d, MirroringHasANegativeDeterminantAndNormalMatrixIsInverseTranspose)
{
	EXPECT_LT(Trafo3d::scale({-1, 1, 1}).det3(), 0.0);
	EXPECT_GT(Trafo3d::rotation({0, 0, 1}, 1.0).det3(), 0.0);
	const Trafo3d s = Trafo3d::scale({2, 4, 8});
	const M33d n = s.normalMatrix();
	EXPECT_DOUBLE_EQ(n[0][0], 0.5);
	EXPECT_DOUBLE_EQ(n[1][1], 0.25);
	EXPECT_DOUBLE_EQ(n[2][2], 0.125);
}

TEST(Camera, PerspectiveMapsNearToZeroFarToOneAndUpToNegativeY)
{
	const Trafo3d view = lookAt({0, 0, 5}, {0, 0, 0}, {0, 1, 0});
	const Trafo3d proj = perspective(glm::radians(60.0), 1.0, 1.0, 100.0);
	const Trafo3d vp = proj * view;
	EXPECT_NEAR(vp.transformPos({0, 0, 4}).z, 0.0, 1e-12); // 1 unit in front of the eye: near plane
	EXPECT_NEAR(vp.transformPos({0, 0, -95}).z, 1.0, 1e-12);
	EXPECT_LT(vp.transformPos({0, 1, 0}).y, 0.0) << "Vulkan clip space: +y is down";
	EXPECT_GT(vp.transformPos({1, 0, 0}).x, 0.0);
	expectNear(view.forward * view.backward, M44d(1.0), 1e-12);
	const V3d eye = view.backward * V4d(0, 0, 0, 1);
	EXPECT_NEAR(eye.z, 5.0, 1e-12);
}

TEST(Box3d, ExtendsAndTransforms)
{
	Box3d b;
	EXPECT_TRUE(b.isEmpty());
	b.extend({1, 2, 3});
	b.extend({-1, 0, 5});
	EXPECT_EQ(b.min, V3d(-1, 0, 3));
	EXPECT_EQ(b.max, V3d(1, 2, 5));
	EXPECT_EQ(b.center(), V3d(0, 1, 4));
	const Box3d moved = b.transformed(Trafo3d::translation({10, 0, 0}));
	EXPECT_EQ(moved.min, V3d(9, 0, 3));
}

TEST(Df32, KeepsPlanetScaleCoordinatesToBelowAMillimetre)
{
	const double ecef = 6378137.123456; // metres: float alone resolves ~0.5 m here
	const Df32 v = toDf32(ecef);
	EXPECT_GT(std::abs(double(float(ecef)) - ecef), 1e-3);
	EXPECT_LT(std::abs(fromDf32(v) - ecef), 1e-6);
}

} // namespace quokka::math::test
