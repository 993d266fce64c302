#include <quokka/math/math.hpp>

#include <glm/gtc/matrix_transform.hpp>

#include <cmath>

namespace quokka::math
{

Trafo3d Trafo3d::translation(const V3d& t)
{
	return {glm::translate(M44d(1.0), t), glm::translate(M44d(1.0), -t)};
}

Trafo3d Trafo3d::scale(const V3d& s)
{
	return {glm::scale(M44d(1.0), s), glm::scale(M44d(1.0), 1.0 / s)};
}

Trafo3d Trafo3d::rotation(const V3d& axis, double radians)
{
	const V3d a = glm::normalize(axis);
	const M44d r = glm::rotate(M44d(1.0), radians, a);
	return {r, glm::transpose(r)}; // rotations are orthonormal: the inverse is the transpose, exactly
}

Trafo3d Trafo3d::fromMatrix(const M44d& forward)
{
	return {forward, glm::inverse(forward)};
}

V3d Trafo3d::transformPos(const V3d& p) const
{
	const V4d r = forward * V4d(p, 1.0);
	return V3d(r) / r.w;
}

V3d Trafo3d::transformDir(const V3d& d) const
{
	return V3d(forward * V4d(d, 0.0));
}

M33d Trafo3d::normalMatrix() const
{
	return glm::transpose(M33d(backward));
}

double Trafo3d::det3() const
{
	return glm::determinant(M33d(forward));
}

Trafo3d operator*(const Trafo3d& a, const Trafo3d& b)
{
	return {a.forward * b.forward, b.backward * a.backward};
}

Trafo3d lookAt(const V3d& eye, const V3d& target, const V3d& up)
{
	const M44d view = glm::lookAtRH(eye, target, up);
	// A view matrix is a rigid motion: its inverse is the transposed rotation with the eye as translation.
	const M33d rot = M33d(view);
	M44d inv = M44d(glm::transpose(rot));
	inv[3] = V4d(eye, 1.0);
	return {view, inv};
}

Trafo3d perspective(double fovy, double aspect, double near_z, double far_z)
{
	// Vulkan clip space: depth 0..1 (GLM_FORCE_DEPTH_ZERO_TO_ONE), y down: flip y of the GL-style projection.
	M44d p = glm::perspectiveRH_ZO(fovy, aspect, near_z, far_z);
	p[1][1] = -p[1][1];
	return Trafo3d::fromMatrix(p);
}

Trafo3d orthographic(double left, double right, double bottom, double top, double near_z, double far_z)
{
	M44d p = glm::orthoRH_ZO(left, right, bottom, top, near_z, far_z);
	p[1][1] = -p[1][1];
	p[3][1] = -p[3][1];
	return Trafo3d::fromMatrix(p);
}

void Box3d::extend(const V3d& p)
{
	min = glm::min(min, p);
	max = glm::max(max, p);
}

void Box3d::extend(const Box3d& b)
{
	if (b.isEmpty())
		return;
	extend(b.min);
	extend(b.max);
}

Box3d Box3d::transformed(const Trafo3d& t) const
{
	Box3d out;
	if (isEmpty())
		return out;
	for (int i = 0; i < 8; ++i)
		out.extend(t.transformPos(V3d(i & 1 ? max.x : min.x, i & 2 ? max.y : min.y, i & 4 ? max.z : min.z)));
	return out;
}

Df32 toDf32(double value)
{
	const float hi = float(value);
	return {hi, float(value - double(hi))};
}

M44f toFloat(const M44d& m)
{
	return M44f(m);
}

M33f toFloat(const M33d& m)
{
	return M33f(m);
}

} // namespace quokka::math
