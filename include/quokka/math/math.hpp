// quokka/math/math.hpp — vectors, matrices, Trafo3d (double forward + backward), boxes, cameras and df32 helpers.
//
// glm underneath, configured for Vulkan (GLM_FORCE_DEPTH_ZERO_TO_ONE is a compile definition of quokka::math, so every
// user agrees): column vectors, `M * v`, column-major storage as GLSL. Clip space is Vulkan's: x right, y DOWN,
// depth 0 (near) … 1 (far). Trafo3d keeps a double forward matrix and its exact backward (inverse) matrix, composed
// alongside, so inverses are never computed numerically (Aardvark's Trafo3d). Pure value types; thread-safe.
#pragma once

#include <cstdint>

#include <glm/glm.hpp>

namespace quokka::math
{

using V2f = glm::vec2;
using V3f = glm::vec3;
using V4f = glm::vec4;
using V2i = glm::ivec2;
using V2d = glm::dvec2;
using V3d = glm::dvec3;
using V4d = glm::dvec4;
using M33f = glm::mat3;
using M44f = glm::mat4;
using M33d = glm::dmat3;
using M44d = glm::dmat4;

/// An affine or projective transformation with its exact inverse.
struct Trafo3d
{
	M44d forward{1.0};
	M44d backward{1.0};

	static Trafo3d identity() { return {}; }
	static Trafo3d translation(const V3d& t);
	static Trafo3d scale(const V3d& s); ///< components must be non-zero
	static Trafo3d scale(double s) { return scale(V3d(s)); }
	/// Right-handed rotation by `radians` about the unit `axis`.
	static Trafo3d rotation(const V3d& axis, double radians);
	/// From a forward matrix; the backward one is computed once with glm::inverse (prefer the constructors above).
	static Trafo3d fromMatrix(const M44d& forward);

	/// The inverse transformation (swaps the halves; exact).
	Trafo3d inverse() const { return {backward, forward}; }
	V3d transformPos(const V3d& p) const;
	V3d transformDir(const V3d& d) const;
	/// NormalMatrix of this trafo as the model transform: transpose of the upper 3×3 of `backward`.
	M33d normalMatrix() const;
	/// Determinant of the upper 3×3: negative for mirroring transforms (their faces flip winding).
	double det3() const;

	bool operator==(const Trafo3d&) const = default;
};

/// Composition in GLSL/glm order: (a * b) applies b first, then a. forward = a.f · b.f, backward = b.b · a.b.
Trafo3d operator*(const Trafo3d& a, const Trafo3d& b);

/// View transform of a camera at `eye` looking at `target` with `up` (right-handed; the camera looks down −z).
Trafo3d lookAt(const V3d& eye, const V3d& target, const V3d& up);
/// Vulkan perspective projection: vertical field of view in radians, aspect = width / height, depth 0 at `near`.
Trafo3d perspective(double fovy_radians, double aspect, double near_z, double far_z);
/// Vulkan orthographic projection of the view-space box [left, right] × [bottom, top] × [−far, −near] (y down in clip
/// space like perspective(), depth 0 at `near`).
Trafo3d orthographic(double left, double right, double bottom, double top, double near_z, double far_z);

/// Axis-aligned box; empty when min > max (the default).
struct Box3d
{
	V3d min{1e300};
	V3d max{-1e300};

	bool isEmpty() const { return min.x > max.x || min.y > max.y || min.z > max.z; }
	void extend(const V3d& p);
	void extend(const Box3d& b);
	V3d center() const { return (min + max) * 0.5; }
	V3d size() const { return isEmpty() ? V3d(0.0) : max - min; }
	/// The box of the 8 transformed corners.
	Box3d transformed(const Trafo3d& t) const;
};

/// Double-float: a double as the sum of two floats (hi = nearest float, lo = the rounded remainder). Precision ~2^-48
/// relative instead of float's 2^-24, for planet-scale coordinates on GPUs without fast fp64.
struct Df32
{
	float hi = 0.0f;
	float lo = 0.0f;
};
Df32 toDf32(double value);
inline double fromDf32(Df32 v)
{
	return double(v.hi) + double(v.lo);
}

/// Narrows to float matrices (column-major, ready for GLSL).
M44f toFloat(const M44d& m);
M33f toFloat(const M33d& m);

} // namespace quokka::math
