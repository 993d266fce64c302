#include <quokka/fx/types.hpp>

#include <cstring>

namespace quokka::fx
{

std::string glslName(Type t)
{
	if (t.isMatrix())
	{
		if (t.scalar != Scalar::F32)
			return {};
		if (t.rows == t.cols)
			return "mat" + std::to_string(t.cols);
		return "mat" + std::to_string(t.cols) + "x" + std::to_string(t.rows);
	}
	const char* scalar = "float";
	const char* prefix = "vec";
	switch (t.scalar)
	{
	case Scalar::F32:
		break;
	case Scalar::I32:
		scalar = "int", prefix = "ivec";
		break;
	case Scalar::U32:
		scalar = "uint", prefix = "uvec";
		break;
	case Scalar::Bool:
		scalar = "bool", prefix = "bvec";
		break;
	}
	if (t.rows == 1)
		return scalar;
	return prefix + std::to_string(t.rows);
}

std::string typeName(Type t)
{
	const char* s = t.scalar == Scalar::F32   ? "f"
	                : t.scalar == Scalar::I32 ? "i"
	                : t.scalar == Scalar::U32 ? "ui"
	                                          : "b";
	if (t.isMatrix())
		return "M" + std::to_string(t.rows) + std::to_string(t.cols) + s;
	if (t.rows == 1)
		return t.scalar == Scalar::F32   ? "float"
		       : t.scalar == Scalar::I32 ? "int"
		       : t.scalar == Scalar::U32 ? "uint"
		                                 : "bool";
	return "V" + std::to_string(t.rows) + s;
}

uint32_t std140Size(Type t, uint32_t matrix_stride)
{
	return t.isMatrix() ? t.cols * matrix_stride : t.packedBytes();
}

void writeStd140(Type t, const void* value, void* dst, uint32_t matrix_stride)
{
	if (!t.isMatrix())
	{
		std::memcpy(dst, value, t.packedBytes());
		return;
	}
	const auto* src = static_cast<const std::byte*>(value);
	auto* out = static_cast<std::byte*>(dst);
	for (uint32_t c = 0; c < t.cols; ++c)
		std::memcpy(out + c * matrix_stride, src + c * t.rows * 4u, t.rows * 4u);
}

} // namespace quokka::fx
