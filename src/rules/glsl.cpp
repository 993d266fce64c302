// GLSL rendering of a rule (rule.hpp): a function with one parameter per input and one statement per node.
#include <quokka/rules/rule.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdio>

namespace quokka::rules
{

using fx::Scalar;

std::string glslType(Type type, Precision precision)
{
	const std::string f = fx::glslName(type);
	if (precision == Precision::F64 && type.scalar == Scalar::F32)
		return f == "float" ? "double" : "d" + f;
	if (type.scalar == Scalar::Bool && type.rows > 1)
		return "bvec" + std::to_string(type.rows);
	return f;
}

namespace
{

std::string real(double v, Precision precision)
{
	if (std::isnan(v) || std::isinf(v))
	{
		if (precision == Precision::F64)
		{
			const uint64_t bits = std::bit_cast<uint64_t>(v);
			char buf[64];
			std::snprintf(buf, sizeof buf, "packDouble2x32(uvec2(0x%08xu, 0x%08xu))", uint32_t(bits),
			              uint32_t(bits >> 32));
			return buf;
		}
		char buf[48];
		std::snprintf(buf, sizeof buf, "uintBitsToFloat(0x%08xu)", std::bit_cast<uint32_t>(float(v)));
		return buf;
	}
	char buf[40];
	if (precision == Precision::F64)
		std::snprintf(buf, sizeof buf, "%.17g", v);
	else
		std::snprintf(buf, sizeof buf, "%.9g", double(float(v)));
	std::string s = buf;
	if (s.find_first_of(".e") == std::string::npos)
		s += ".0";
	return precision == Precision::F64 ? s + "lf" : s;
}

std::string component(Scalar s, double v, Precision precision)
{
	switch (s)
	{
	case Scalar::F32:
		return real(v, precision);
	case Scalar::Bool:
		return v != 0.0 ? "true" : "false";
	case Scalar::I32:
		return int32_t(v) == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(int32_t(v));
	case Scalar::U32:
		return std::to_string(uint32_t(v)) + "u";
	}
	return {};
}

std::string literal(const Value& v, Precision precision)
{
	if (v.components() == 1)
		return component(v.type.scalar, v.c[0], precision);
	std::string s = glslType(v.type, precision) + "(";
	for (uint32_t i = 0; i < v.components(); ++i)
		s += (i ? ", " : "") + component(v.type.scalar, v.c[i], precision);
	return s + ")";
}

std::string_view function(Op op)
{
	switch (op)
	{
	case Op::Transpose:
		return "transpose";
	case Op::Inverse:
		return "inverse";
	case Op::Determinant:
		return "determinant";
	case Op::Length:
		return "length";
	case Op::Normalize:
		return "normalize";
	case Op::Abs:
		return "abs";
	case Op::Sign:
		return "sign";
	case Op::Floor:
		return "floor";
	case Op::Sqrt:
		return "sqrt";
	case Op::Sin:
		return "sin";
	case Op::Cos:
		return "cos";
	case Op::Tan:
		return "tan";
	case Op::Asin:
		return "asin";
	case Op::Acos:
		return "acos";
	case Op::Atan:
	case Op::Atan2:
		return "atan";
	case Op::Exp:
		return "exp";
	case Op::Log:
		return "log";
	case Op::Pow:
		return "pow";
	case Op::Dot:
		return "dot";
	case Op::Cross:
		return "cross";
	case Op::Min:
		return "min";
	case Op::Max:
		return "max";
	case Op::Clamp:
		return "clamp";
	case Op::Mix:
		return "mix";
	default:
		return {};
	}
}

/// The parts one after another.
std::string cat(std::initializer_list<std::string_view> parts)
{
	std::string s;
	for (std::string_view p : parts)
		s.append(p);
	return s;
}

/// Functions GLSL defines for float only.
bool floatOnly(Op op)
{
	return op == Op::Sin || op == Op::Cos || op == Op::Tan || op == Op::Asin || op == Op::Acos || op == Op::Atan ||
	       op == Op::Atan2 || op == Op::Exp || op == Op::Log || op == Op::Pow;
}

} // namespace

std::string glslExpression(const Node& n, std::span<const std::string_view> kids, Precision precision)
{
	QUOKKA_ASSERT(n.op > Op::LeafInv && kids.size() == n.arity, "rules::glslExpression: an operation and its operands");
	auto k = [&](uint32_t j) { return kids[j]; };
	const std::string type = glslType(n.type, precision);
	std::string e;
	switch (n.op)
	{
	case Op::Neg:
		e = cat({"-(", k(0), ")"});
		break;
	case Op::Not:
		e = cat({"!(", k(0), ")"});
		break;
	case Op::Resize:
		e = cat({type, "(", k(0), ")"});
		break;
	case Op::Convert:
		// To u32 through i32, as rules::evaluate wraps (trunc, then modulo 2^32): GLSL leaves uint() of a negative real
		// undefined (lavapipe wraps, NVIDIA gives 0), while int() truncates and int → uint keeps the bits. Exact for
		// reals below 2^31 in magnitude and for every integer and bool.
		if (n.type.scalar == Scalar::U32)
		{
			const std::string via = glslType(Type{Scalar::I32, n.type.rows, n.type.cols}, precision);
			e = cat({type, "(", via, "(", k(0), "))"});
		}
		else
			e = cat({type, "(", k(0), ")"});
		break;
	case Op::Column:
		e = cat({k(0), "[", std::to_string(n.aux), "]"});
		break;
	case Op::Swizzle:
		e = cat({k(0), "."});
		for (uint32_t j = 0; j < (n.aux & 7); ++j)
			e += "xyzw"[(n.aux >> (3 + 2 * j)) & 3];
		break;
	case Op::Add:
	case Op::Sub:
	case Op::Mul:
	case Op::Div:
	case Op::MatMul:
	case Op::Lt:
	case Op::Le:
	case Op::Gt:
	case Op::Ge:
	case Op::Eq:
	case Op::Ne:
	case Op::And:
	case Op::Or:
		e = cat({"(", k(0), " ", opName(n.op), " ", k(1), ")"});
		break;
	case Op::Select:
		e = cat({"(", k(0), " ? ", k(1), " : ", k(2), ")"});
		break;
	case Op::Construct:
		e = cat({type, "("});
		for (uint32_t j = 0; j < n.arity; ++j)
			e.append(j ? ", " : "").append(k(j));
		e += ")";
		break;
	default:
	{
		const bool narrow = precision == Precision::F64 && floatOnly(n.op);
		const std::string cast = narrow ? glslType(n.type, Precision::F32) : "";
		e = cat({function(n.op), "("});
		for (uint32_t j = 0; j < n.arity; ++j)
			e += narrow ? cat({j ? ", " : "", cast, "(", k(j), ")"}) : cat({j ? ", " : "", k(j)});
		e += ")";
		if (narrow)
			e = cat({type, "(", e, ")"});
	}
	}
	return e;
}

std::string glslFunction(const Rule& rule, std::string_view name, Precision precision)
{
	const std::span<const Node> nodes = rule.nodes();
	std::vector<std::string> ref(nodes.size());
	std::string body;
	for (size_t i = 0; i < nodes.size(); ++i)
	{
		const Node& n = nodes[i];
		if (n.op == Op::Leaf || n.op == Op::LeafInv)
		{
			ref[i] = "in" + std::to_string(n.aux);
			continue;
		}
		if (n.op == Op::Const)
		{
			ref[i] = literal(rule.literals()[n.aux], precision);
			continue;
		}
		std::array<std::string_view, 4> kids{};
		for (uint32_t j = 0; j < n.arity; ++j)
			kids[j] = ref[n.kid[j]];
		const std::string type = glslType(n.type, precision);
		const std::string e = glslExpression(n, std::span(kids.data(), n.arity), precision);
		ref[i] = std::string("t").append(std::to_string(i));
		body.append("\t").append(type).append(" ").append(ref[i]).append(" = ").append(e).append(";\n");
	}
	std::string head = glslType(rule.type(), precision) + " " + std::string(name) + "(";
	for (size_t i = 0; i < rule.inputs().size(); ++i)
		head += (i ? ", " : "") + glslType(rule.inputs()[i].type, precision) + " in" + std::to_string(i);
	return head + ")\n{\n" + body + "\treturn " + ref.back() + ";\n}\n";
}

} // namespace quokka::rules
