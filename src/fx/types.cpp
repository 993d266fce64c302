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
		// Built by appending: `"literal" + std::to_string(…)` trips GCC 12's bogus -Wrestrict (GCC bug 105651).
		std::string name = "mat";
		name += std::to_string(t.cols);
		if (t.rows != t.cols)
		{
			name += 'x';
			name += std::to_string(t.rows);
		}
		return name;
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
	std::string name = prefix;
	name += char('0' + t.rows);
	return name;
}

std::string typeName(Type t)
{
	const char* s = t.scalar == Scalar::F32   ? "f"
	                : t.scalar == Scalar::I32 ? "i"
	                : t.scalar == Scalar::U32 ? "ui"
	                                          : "b";
	std::string name;
	if (t.isMatrix())
	{
		name = "M";
		name += char('0' + t.rows);
		name += char('0' + t.cols);
		name += s;
		return name;
	}
	if (t.rows == 1)
		return t.scalar == Scalar::F32   ? "float"
		       : t.scalar == Scalar::I32 ? "int"
		       : t.scalar == Scalar::U32 ? "uint"
		                                 : "bool";
	name = "V";
	name += char('0' + t.rows);
	name += s;
	return name;
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
