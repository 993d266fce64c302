// quokka/fx/types.hpp — the value types effects talk about: scalars, vectors and matrices of f32/i32/u32/bool.
//
// A Type is (scalar, rows, cols): a vector has cols = 1, a matrix rows x cols (column-major, as GLSL). The names
// follow Aardvark (V3f, M44f). glslName() gives the GLSL spelling; locations() the interface locations it uses.
#pragma once

#include <cstdint>
#include <string>

namespace quokka::fx
{

enum class Scalar : uint8_t
{
	F32,
	I32,
	U32,
	Bool,
};

/// A GLSL value type: scalar, vector (rows = n, cols = 1) or matrix (rows x cols, float only).
struct Type
{
	Scalar scalar = Scalar::F32;
	uint8_t rows = 1;
	uint8_t cols = 1;

	constexpr bool operator==(const Type&) const = default;
	constexpr bool isMatrix() const { return cols > 1; }
	constexpr bool isInteger() const
	{
		return scalar == Scalar::I32 || scalar == Scalar::U32 || scalar == Scalar::Bool;
	}
	/// Interface locations taken by a vertex input or varying of this type (one per matrix column).
	constexpr uint32_t locations() const { return cols; }
	/// Tightly packed size in bytes (4 bytes per component).
	constexpr uint32_t packedBytes() const { return 4u * rows * cols; }
};

inline constexpr Type F32{Scalar::F32}, V2f{Scalar::F32, 2}, V3f{Scalar::F32, 3}, V4f{Scalar::F32, 4};
inline constexpr Type I32{Scalar::I32}, V2i{Scalar::I32, 2}, V3i{Scalar::I32, 3}, V4i{Scalar::I32, 4};
inline constexpr Type U32{Scalar::U32}, V2u{Scalar::U32, 2}, V3u{Scalar::U32, 3}, V4u{Scalar::U32, 4};
inline constexpr Type Bool{Scalar::Bool};
inline constexpr Type M22f{Scalar::F32, 2, 2}, M33f{Scalar::F32, 3, 3}, M44f{Scalar::F32, 4, 4};

/// "float", "vec3", "uvec2", "mat4", "mat3x4", … Empty for types GLSL cannot spell (bool vectors are not used).
std::string glslName(Type type);

/// "V3f", "M44f", … for diagnostics.
std::string typeName(Type type);

/// Writes `value` (tightly packed column-major floats/ints, `type.packedBytes()` bytes) into a std140 block member at
/// `dst` with the given matrix stride (16 for std140 matrices); vectors and scalars are copied as is.
void writeStd140(Type type, const void* value, void* dst, uint32_t matrix_stride = 16);

/// Bytes a std140 member of `type` occupies (matrices: cols x matrix_stride).
uint32_t std140Size(Type type, uint32_t matrix_stride = 16);

} // namespace quokka::fx
