// The GLSL of a derive kernel (derive_kernel.hpp): one arm per rule, every node's value held as components — doubles
// (fp64) or hi/lo float pairs (df32) — so products and sums run at the constituents' precision in a fixed order.
#include <quokka/derived/derive_kernel.hpp>

#include <bit>
#include <cstdio>

namespace quokka::derived
{

using rules::Node;
using rules::Op;

namespace
{

constexpr const char* kDf32Helpers =
    R"(// df32: a value as hi + lo (two floats). Error-free transforms; `precise` keeps them from being contracted.
vec2 twoSum(float a, float b)
{
	precise float s = a + b;
	precise float bb = s - a;
	precise float e = (a - (s - bb)) + (b - bb);
	return vec2(s, e);
}
vec2 quickTwoSum(float a, float b)
{
	precise float s = a + b;
	precise float e = b - (s - a);
	return vec2(s, e);
}
vec2 split(float a)
{
	precise float t = 4097.0 * a;
	precise float hi = t - (t - a);
	precise float lo = a - hi;
	return vec2(hi, lo);
}
vec2 twoProd(float a, float b)
{
	precise float p = a * b;
	vec2 x = split(a), y = split(b);
	precise float e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
	return vec2(p, e);
}
vec2 dfAdd(vec2 a, vec2 b)
{
	vec2 s = twoSum(a.x, b.x);
	vec2 t = twoSum(a.y, b.y);
	precise float sy = s.y + t.x;
	vec2 r = quickTwoSum(s.x, sy);
	precise float ry = r.y + t.y;
	return quickTwoSum(r.x, ry);
}
vec2 dfMul(vec2 a, vec2 b)
{
	vec2 p = twoProd(a.x, b.x);
	precise float e = p.y + (a.x * b.y + a.y * b.x);
	return quickTwoSum(p.x, e);
}
// r = a · b, column-major: a is rows × inner (a row vector: rows = 1), b is inner × cols (a column vector: cols = 1).
void matMul(vec2 a[16], vec2 b[16], uint rows, uint inner, uint cols, out vec2 r[16])
{
	for (uint c = 0u; c < cols; ++c)
		for (uint row = 0u; row < rows; ++row)
		{
			vec2 s = dfMul(a[row], b[c * inner]);
			for (uint k = 1u; k < inner; ++k)
				s = dfAdd(s, dfMul(a[k * rows + row], b[c * inner + k]));
			r[c * rows + row] = s;
		}
}
)";

constexpr const char* kFp64Helpers =
    R"(// r = a · b, column-major: a is rows × inner (a row vector: rows = 1), b is inner × cols (a column vector: cols = 1),
// summed left to right from the first product, uncontracted.
void matMul(double a[16], double b[16], uint rows, uint inner, uint cols, out double r[16])
{
	for (uint c = 0u; c < cols; ++c)
		for (uint row = 0u; row < rows; ++row)
		{
			precise double s = a[row] * b[c * inner];
			for (uint k = 1u; k < inner; ++k)
			{
				precise double p = a[k * rows + row] * b[c * inner + k];
				s = s + p;
			}
			r[c * rows + row] = s;
		}
}
)";

/// Reading a slot (packed: the constituents buffer; computed — kComputedSlot set — the computed buffer), both bound as
/// uvec4 arrays: a slot is 8 quads of 16 bytes, component c in quad c / 2 (words .xy when c is even, .zw when odd),
/// read with one 16-byte load per two components rather than one 4-byte load per word. Needs the buffers constituents,
/// epochs, computed and computedEpochs.
constexpr const char* kSlotAccess = R"(uvec4 slotQuad(uint slot, uint q)
{
	return slot >= 0x80000000u ? computed[(slot & 0x7fffffffu) * 8u + q] : constituents[slot * 8u + q];
}
uint slotEpoch(uint slot)
{
	return slot >= 0x80000000u ? computedEpochs[slot & 0x7fffffffu] : epochs[slot];
}
)";

/// Component c of a slot whose quad c / 2 is `quad`: a double (fp64) or a hi/lo pair (df32).
std::string componentOf(const std::string& quad, uint32_t c, bool fp64)
{
	const std::string half = quad + (c % 2 == 0 ? ".xy" : ".zw");
	return fp64 ? "packDouble2x32(" + half + ")" : "uintBitsToFloat(" + half + ")";
}

/// Emits one rule's arm: `void arm<k>(uint base)`.
class ArmWriter
{
public:
	ArmWriter(const rules::Rule& rule, Precision precision) : rule_(rule), fp64_(precision == Precision::Fp64) {}

	std::string write(uint32_t index)
	{
		// Skipped unless the record or one of its inputs was written in this dispatch's epoch (0: every record).
		std::string s = "void arm" + std::to_string(index) +
		                "(uint base)\n{\n\tif (push.epoch != 0u && records[base + 2u] != push.epoch";
		for (size_t i = 0; i < rule_.inputs().size(); ++i)
			s += " && slotEpoch(records[base + " + std::to_string(derived::kRecordInputs + i) + "u]) != push.epoch";
		s += ")\n\t\treturn;\n\tuint outWord = records[base + 1u];\n";
		for (size_t i = 0; i < rule_.nodes().size(); ++i)
			node(uint32_t(i));
		s += body_;
		const Node& root = rule_.nodes().back();
		for (uint32_t c = 0; c < components(root.type); ++c)
			s += "\ttarget[outWord + " + std::to_string(c) +
			     "u] = " + store(root.type, value(rule_.nodes().size() - 1, c)) + ";\n";
		return s + "}\n";
	}

private:
	static uint32_t components(fx::Type t) { return uint32_t(t.rows) * t.cols; }
	std::string real() const { return fp64_ ? "double" : "vec2"; }
	std::string value(size_t node, uint32_t c) const { return "t" + std::to_string(node) + "_" + std::to_string(c); }

	/// A double literal as a component: exact in both representations (df32: the nearest float and the remainder).
	std::string literal(double v) const
	{
		char buf[96];
		if (fp64_)
		{
			const uint64_t bits = std::bit_cast<uint64_t>(v);
			std::snprintf(buf, sizeof buf, "packDouble2x32(uvec2(0x%08xu, 0x%08xu))", uint32_t(bits),
			              uint32_t(bits >> 32));
			return buf;
		}
		const float hi = float(v);
		const float lo = float(v - double(hi));
		std::snprintf(buf, sizeof buf, "vec2(uintBitsToFloat(0x%08xu), uintBitsToFloat(0x%08xu))",
		              std::bit_cast<uint32_t>(hi), std::bit_cast<uint32_t>(lo));
		return buf;
	}
	std::string add(const std::string& a, const std::string& b) const
	{
		return fp64_ ? "(" + a + " + " + b + ")" : "dfAdd(" + a + ", " + b + ")";
	}
	std::string mul(const std::string& a, const std::string& b) const
	{
		return fp64_ ? "(" + a + " * " + b + ")" : "dfMul(" + a + ", " + b + ")";
	}
	/// A component as a GLSL scalar of `type`'s scalar kind (df32 reals: hi + lo, the nearest float).
	std::string scalar(fx::Type type, const std::string& v) const
	{
		const std::string r = fp64_ ? v : "(" + v + ".x + " + v + ".y)";
		switch (type.scalar)
		{
		case fx::Scalar::F32:
			return r;
		case fx::Scalar::I32:
			return "int(" + r + ")";
		case fx::Scalar::U32:
			return "uint(" + r + ")";
		case fx::Scalar::Bool:
			return "(" + r + (fp64_ ? " != 0.0lf)" : " != 0.0)");
		}
		return r;
	}
	/// The output word of a component.
	std::string store(fx::Type type, const std::string& v) const
	{
		const std::string r = fp64_ ? v : "(" + v + ".x + " + v + ".y)";
		switch (type.scalar)
		{
		case fx::Scalar::F32:
			return "floatBitsToUint(float(" + r + "))";
		case fx::Scalar::I32:
			return "uint(int(" + r + "))";
		default:
			return "uint(" + r + ")";
		}
	}
	void let(size_t node, uint32_t c, const std::string& e)
	{
		body_ += "\tprecise " + real() + " " + value(node, c) + " = " + e + ";\n";
	}
	/// Component c of kid j of `n`, broadcasting a scalar.
	std::string kid(const Node& n, uint32_t j, uint32_t c) const
	{
		const Node& k = rule_.nodes()[n.kid[j]];
		return value(n.kid[j], components(k.type) == 1 ? 0 : c);
	}
	/// A node's components as a 16-element array (zero past them).
	std::string array(size_t node) const
	{
		std::string s = real() + "[16](";
		const uint32_t count = components(rule_.nodes()[node].type);
		for (uint32_t c = 0; c < 16; ++c)
			s += (c ? ", " : "") + (c < count ? value(node, c)
			                        : fp64_   ? std::string("0.0lf")
			                                  : std::string("vec2(0.0)"));
		return s + ")";
	}
	/// The GLSL value of a node, built from its components (df32: narrowed to float).
	std::string typed(size_t node) const
	{
		const fx::Type t = rule_.nodes()[node].type;
		std::string s = rules::glslType(t, fp64_ ? rules::Precision::F64 : rules::Precision::F32) + "(";
		for (uint32_t c = 0; c < components(t); ++c)
			s += (c ? ", " : "") + scalar(t, value(node, c));
		return s + ")";
	}

	void node(uint32_t i)
	{
		const Node& n = rule_.nodes()[i];
		const uint32_t count = components(n.type);
		switch (n.op)
		{
		case Op::Leaf:
		case Op::LeafInv:
		{
			const std::string slot = "s" + std::to_string(i), quad = "q" + std::to_string(i) + "_";
			body_ += "\tuint " + slot + " = records[base + " + std::to_string(kRecordInputs + n.aux) + "u];\n";
			for (uint32_t q = 0; q < (count + 1) / 2; ++q)
				body_ +=
				    "\tuvec4 " + quad + std::to_string(q) + " = slotQuad(" + slot + ", " + std::to_string(q) + "u);\n";
			for (uint32_t c = 0; c < count; ++c)
				let(i, c, componentOf(quad + std::to_string(c / 2), c, fp64_));
			return;
		}
		case Op::Const:
			for (uint32_t c = 0; c < count; ++c)
				let(i, c, literal(rule_.literals()[n.aux].c[c]));
			return;
		case Op::Neg:
			if (n.type.scalar != fx::Scalar::F32)
				break;
			for (uint32_t c = 0; c < count; ++c)
				let(i, c, "-" + kid(n, 0, c));
			return;
		case Op::Add:
		case Op::Sub:
		case Op::Mul:
			if (n.type.scalar != fx::Scalar::F32)
				break;
			for (uint32_t c = 0; c < count; ++c)
			{
				const std::string a = kid(n, 0, c), b = kid(n, 1, c);
				let(i, c, n.op == Op::Add ? add(a, b) : n.op == Op::Sub ? add(a, "-" + b) : mul(a, b));
			}
			return;
		case Op::MatMul:
		case Op::Dot:
		{
			// matMul() over arrays: a loop, not 64 unrolled products per 4×4 product (the kernel compiles ~10× faster).
			const fx::Type a = rule_.nodes()[n.kid[0]].type, b = rule_.nodes()[n.kid[1]].type;
			const bool dot = n.op == Op::Dot, row_vector = !dot && !a.isMatrix();
			const uint32_t inner = dot || row_vector ? a.rows : a.cols;
			const uint32_t rows = dot || row_vector ? 1 : a.rows;
			const uint32_t cols = dot ? 1 : b.isMatrix() ? b.cols : 1;
			const std::string r = "m" + std::to_string(i);
			body_ += "\t" + real() + " " + r + "[16];\n\tmatMul(" + array(n.kid[0]) + ", " + array(n.kid[1]) + ", " +
			         std::to_string(rows) + "u, " + std::to_string(inner) + "u, " + std::to_string(cols) + "u, " + r +
			         ");\n";
			for (uint32_t c = 0; c < count; ++c)
				let(i, c, r + "[" + std::to_string(c) + "]");
			return;
		}
		case Op::Transpose:
			for (uint32_t col = 0; col < n.type.cols; ++col)
				for (uint32_t row = 0; row < n.type.rows; ++row)
					let(i, col * n.type.rows + row, value(n.kid[0], row * n.type.cols + col));
			return;
		case Op::Resize:
		{
			const fx::Type from = rule_.nodes()[n.kid[0]].type;
			for (uint32_t col = 0; col < n.type.cols; ++col)
				for (uint32_t row = 0; row < n.type.rows; ++row)
					let(i, col * n.type.rows + row,
					    col < from.cols && row < from.rows ? value(n.kid[0], col * from.rows + row)
					                                       : literal(col == row ? 1.0 : 0.0));
			return;
		}
		case Op::Column:
			for (uint32_t row = 0; row < n.type.rows; ++row)
				let(i, row, value(n.kid[0], n.aux * n.type.rows + row));
			return;
		case Op::Swizzle:
			for (uint32_t c = 0; c < count; ++c)
				let(i, c, value(n.kid[0], (n.aux >> (3 + 2 * c)) & 3));
			return;
		case Op::Construct:
		{
			uint32_t at = 0;
			for (uint32_t j = 0; j < n.arity; ++j)
				for (uint32_t c = 0; c < components(rule_.nodes()[n.kid[j]].type); ++c)
					let(i, at++, value(n.kid[j], c));
			return;
		}
		case Op::Select:
		{
			const std::string cond = value(n.kid[0], 0) + (fp64_ ? " != 0.0lf" : ".x != 0.0");
			for (uint32_t c = 0; c < count; ++c)
				let(i, c, "(" + cond + ") ? " + value(n.kid[1], c) + " : " + value(n.kid[2], c));
			return;
		}
		default:
			break;
		}
		generic(i);
	}

	/// Any other operation on GLSL values (doubles in fp64, floats in df32), its components taken back.
	void generic(uint32_t i)
	{
		const Node& n = rule_.nodes()[i];
		std::array<std::string, 4> kids;
		std::array<std::string_view, 4> views;
		for (uint32_t j = 0; j < n.arity; ++j)
		{
			kids[j] = typed(n.kid[j]);
			views[j] = kids[j];
		}
		const rules::Precision p = fp64_ ? rules::Precision::F64 : rules::Precision::F32;
		const std::string name = "g" + std::to_string(i);
		body_ += "\t" + rules::glslType(n.type, p) + " " + name + " = " +
		         rules::glslExpression(n, std::span(views.data(), n.arity), p) + ";\n";
		const uint32_t count = components(n.type);
		for (uint32_t c = 0; c < count; ++c)
		{
			const std::string at = n.type.isMatrix() ? name + "[" + std::to_string(c / n.type.rows) + "][" +
			                                               std::to_string(c % n.type.rows) + "]"
			                       : count > 1 ? name + "[" + std::to_string(c) + "]"
			                                   : name;
			let(i, c, fp64_ ? "double(" + at + ")" : "vec2(float(" + at + "), 0.0)");
		}
	}

	const rules::Rule& rule_;
	bool fp64_;
	std::string body_;
};

} // namespace

std::string kernelSource(std::span<const rules::Rule> rules, Precision precision)
{
	std::string s = "#version 460\nlayout(local_size_x = 64) in;\n"
	                "layout(set = 0, binding = 0, std430) readonly buffer Constituents { uvec4 constituents[]; };\n"
	                "layout(set = 0, binding = 1, std430) readonly buffer Records { uint records[]; };\n"
	                "layout(set = 0, binding = 2, std430) buffer Target { uint target[]; };\n"
	                "layout(set = 0, binding = 3, std430) readonly buffer Epochs { uint epochs[]; };\n"
	                "layout(set = 0, binding = 4, std430) readonly buffer Computed { uvec4 computed[]; };\n"
	                "layout(set = 0, binding = 5, std430) readonly buffer ComputedEpochs { uint computedEpochs[]; };\n"
	                "layout(push_constant) uniform Push { uint first; uint count; uint stride; uint epoch; } push;\n";
	s += precision == Precision::Df32 ? kDf32Helpers : kFp64Helpers;
	s += kSlotAccess;
	for (size_t k = 0; k < rules.size(); ++k)
		s += ArmWriter(rules[k], precision).write(uint32_t(k));
	// A grid-stride loop over the records (run-time sources have no includes: quokkaGridNext of dispatch.glsl.h).
	s += "void main()\n{\n\tuint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
	     "\tfor (uint i = gl_GlobalInvocationID.x; i < push.count; i = i + step < i ? push.count : i + step)\n\t{\n"
	     "\t\tuint base = (push.first + i) * push.stride;\n\t\tswitch (records[base])\n\t\t{\n";
	for (size_t k = 0; k < rules.size(); ++k)
		s += "\t\tcase " + std::to_string(k) + "u:\n\t\t\tarm" + std::to_string(k) + "(base);\n\t\t\tbreak;\n";
	s += "\t\tdefault:\n\t\t\tbreak;\n\t\t}\n\t}\n}\n";
	return s;
}

std::string chainKernelSource(Precision precision)
{
	const bool fp64 = precision == Precision::Fp64;
	std::string s = "#version 460\nlayout(local_size_x = 64) in;\n"
	                "layout(set = 0, binding = 0, std430) readonly buffer Constituents { uvec4 constituents[]; };\n"
	                "layout(set = 0, binding = 1, std430) readonly buffer Epochs { uint epochs[]; };\n"
	                "layout(set = 0, binding = 2, std430) buffer Computed { uvec4 computed[]; };\n"
	                "layout(set = 0, binding = 3, std430) buffer ComputedEpochs { uint computedEpochs[]; };\n"
	                "layout(set = 0, binding = 4, std430) readonly buffer Links { uint links[]; };\n"
	                "layout(push_constant) uniform Push { uint first; uint count; uint epoch; } push;\n";
	s += fp64 ? kFp64Helpers : kDf32Helpers;
	s += kSlotAccess;
	const std::string real = fp64 ? "double" : "vec2";
	// 8 quads in, 8 quads out: two components per 16-byte load or store.
	s += "void load(uint slot, out " + real +
	     " m[16])\n{\n\tfor (uint q = 0u; q < 8u; ++q)\n\t{\n\t\tuvec4 w = slotQuad(slot, q);\n\t\tm[2u * q] = " +
	     componentOf("w", 0, fp64) + ";\n\t\tm[2u * q + 1u] = " + componentOf("w", 1, fp64) + ";\n\t}\n}\n";
	s += "void store(uint slot, " + real +
	     " m[16])\n{\n\tuint b = (slot & 0x7fffffffu) * 8u;\n\tfor (uint q = 0u; q < 8u; ++q)\n";
	s += fp64 ? "\t\tcomputed[b + q] = uvec4(unpackDouble2x32(m[2u * q]), unpackDouble2x32(m[2u * q + 1u]));\n"
	          : "\t\tcomputed[b + q] = uvec4(floatBitsToUint(m[2u * q]), floatBitsToUint(m[2u * q + 1u]));\n";
	s += "\tcomputedEpochs[slot & 0x7fffffffu] = push.epoch;\n}\n";
	s += "bool changed(uint slot)\n{\n\treturn slot != 0xffffffffu && slotEpoch(slot) == push.epoch;\n}\n";
	// Each half: forward = parent · local, backward = local⁻¹ · parent⁻¹ (the stored backward matrices).
	s += "void main()\n{\n\tuint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
	     "\tfor (uint i = gl_GlobalInvocationID.x; i < push.count; i = i + step < i ? push.count : i + step)\n\t{\n"
	     "\t\tuint b = (push.first + i) * " +
	     std::to_string(kChainStride) +
	     "u;\n"
	     "\t\tif (push.epoch != 0u && links[b] != push.epoch && !changed(links[b + 3u]) && !changed(links[b + 4u]) &&\n"
	     "\t\t    !changed(links[b + 5u]) && !changed(links[b + 6u]))\n\t\t\tcontinue;\n"
	     "\t\t" +
	     real +
	     " p[16], l[16], r[16];\n"
	     "\t\tif (links[b + 1u] != 0xffffffffu)\n\t\t{\n"
	     "\t\t\tload(links[b + 3u], p);\n\t\t\tload(links[b + 5u], l);\n"
	     "\t\t\tmatMul(p, l, 4u, 4u, 4u, r);\n\t\t\tstore(links[b + 1u], r);\n\t\t}\n"
	     "\t\tif (links[b + 2u] != 0xffffffffu)\n\t\t{\n"
	     "\t\t\tload(links[b + 4u], p);\n\t\t\tload(links[b + 6u], l);\n"
	     "\t\t\tmatMul(l, p, 4u, 4u, 4u, r);\n\t\t\tstore(links[b + 2u], r);\n\t\t}\n"
	     "\t}\n}\n";
	return s;
}

} // namespace quokka::derived
