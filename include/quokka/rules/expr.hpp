// quokka/rules/expr.hpp — expressions over uniforms: the language of derived uniforms and (later) derived pipeline
// state.
//
// An Expr is a pure expression without statements, loops, calls, textures or buffers: leaves are uniforms read by
// name (a trafo leaf also by its inverse, the trafo's stored backward matrix, which costs nothing and loses nothing),
// literals, and a closed set of operations — arithmetic, matrix products, comparisons, select, and the usual
// vector and scalar functions. Building one type-checks it as GLSL would; an ill-typed operation does not throw but
// gives an Expr that carries the error, and every Expr built from it carries the first error on, so a whole
// expression is checked once, when it becomes a Rule (rules/rule.hpp).
//
//     using namespace quokka::rules;
//     const Expr model = leaf("ModelTrafo"), view = leaf("ViewTrafo");        // types from fx::UniformScope
//     const Expr anchor = leaf("Anchor", fx::V3f);                             // or given
//     const Expr eye = column(inv(view), 3);                                   // the camera in world space
//     const Expr up = swizzle(inv(model) * vec(0.0, 1.0, 0.0, 0.0), "xyz");    // world up, in model space
//     const Expr far = select(length(swizzle(eye, "xyz") - anchor) > lit(100.0), lit(1.0), lit(0.0));
//
// Reals are doubles on the CPU and f32, df32 or f64 on the GPU (the GLSL emitter and the derived-uniform kernels
// choose); integers and booleans are exact. Matrices are column-major, products read right to left, as in GLSL.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <quokka/fx/types.hpp>
#include <quokka/math/math.hpp>

namespace quokka::rules
{

using fx::Type;

/// A value on the CPU: every component as a double (column-major for matrices; a bool is 0 or 1; integers exact up
/// to 2^53). Components past type.rows * type.cols are zero.
struct Value
{
	Type type = fx::F32;
	std::array<double, 16> c{};

	bool operator==(const Value&) const = default;
	/// Component `row` of column `col`.
	double at(uint32_t col, uint32_t row) const { return c[col * type.rows + row]; }
	double& at(uint32_t col, uint32_t row) { return c[col * type.rows + row]; }
	uint32_t components() const { return uint32_t(type.rows) * type.cols; }

	static Value real(double v);
	static Value boolean(bool v);
	static Value i32(int32_t v);
	static Value u32(uint32_t v);
	static Value of(const math::V2d& v);
	static Value of(const math::V3d& v);
	static Value of(const math::V4d& v);
	static Value of(const math::M33d& m);
	static Value of(const math::M44d& m);
	/// The value as a matrix/vector of doubles (asserts the type).
	math::M44d m44() const;
	math::M33d m33() const;
	math::V4d v4() const;
	math::V3d v3() const;
};

/// The operations. Arity: leaves and literals 0, the unary block 1, the binary block 2, Select/Clamp/Mix 3,
/// Construct 1–4.
enum class Op : uint8_t
{
	// leaves
	Const,
	Leaf,    ///< a uniform read by name
	LeafInv, ///< a 4×4 trafo uniform's inverse: its stored backward matrix
	         // unary
	Neg,
	Not,
	Transpose,
	Inverse, ///< of a computed square matrix (leaves use LeafInv)
	Determinant,
	Resize,  ///< a matrix to other dimensions, as GLSL's mat3(mat4) / mat4(mat3) (identity fill)
	Column,  ///< column `aux` of a matrix
	Swizzle, ///< components of a vector (aux: count in bits 0–2, index i in bits 3+2i)
	Convert, ///< to another scalar kind, same shape (GLSL's float(), int(), uint(), bool())
	Length,
	Normalize,
	Abs,
	Sign,
	Floor,
	Sqrt,
	Sin,
	Cos,
	Tan,
	Asin,
	Acos,
	Atan,
	Exp,
	Log,
	// binary
	Add,
	Sub,
	Mul, ///< component-wise, or scalar times anything
	Div, ///< component-wise, or anything over a scalar
	MatMul,
	Lt,
	Le,
	Gt,
	Ge,
	Eq,
	Ne,
	And,
	Or,
	Dot,
	Cross,
	Min,
	Max,
	Pow,
	Atan2,
	// ternary
	Select, ///< select(condition, then, else)
	Clamp,
	Mix,
	// n-ary
	Construct, ///< a vector from scalars and vectors, or a matrix from column vectors (GLSL constructor rules)
};

/// The GLSL-ish name of `op`, for diagnostics and tests.
std::string_view opName(Op op);

class Expr;

namespace detail
{
struct ExprNode
{
	Op op = Op::Const;
	Type type;
	uint32_t aux = 0; ///< Resize: rows | cols << 8; Column: index; Swizzle: code
	std::string name; ///< Leaf/LeafInv: the uniform; on an error node: the message
	Value literal;    ///< Const
	std::vector<std::shared_ptr<const ExprNode>> kids;
	bool error = false;
};
} // namespace detail

/// An expression handle: cheap to copy, immutable, shares its subexpressions.
class Expr
{
public:
	/// The literal 0.0.
	Expr();
	Type type() const { return node_->type; }
	Op op() const { return node_->op; }
	/// False when this expression or one of its parts is ill-typed; error() says why.
	bool ok() const { return !node_->error; }
	const std::string& error() const;

	const detail::ExprNode& node() const { return *node_; }
	const std::shared_ptr<const detail::ExprNode>& shared() const { return node_; }
	static Expr wrap(std::shared_ptr<const detail::ExprNode> node) { return Expr(std::move(node)); }

private:
	explicit Expr(std::shared_ptr<const detail::ExprNode> node) : node_(std::move(node)) {}
	std::shared_ptr<const detail::ExprNode> node_;
};

// ---- leaves and literals
/// The uniform `name`, typed by fx::UniformScope (an error Expr when the name is not declared there).
Expr leaf(std::string_view name);
/// The uniform `name` of the given type.
Expr leaf(std::string_view name, Type type);
Expr lit(double v);
Expr lit(bool v);
Expr lit(int32_t v);
Expr lit(uint32_t v);
Expr lit(const math::V2d& v);
Expr lit(const math::V3d& v);
Expr lit(const math::V4d& v);
Expr lit(const math::M33d& m);
Expr lit(const math::M44d& m);
Expr lit(const Value& v);
/// A vector or matrix from parts, by GLSL's constructor rules: vec(a, b) is vec2(a, b) for scalars, vec(v3, 1.0) a
/// vec4, vec(c0, c1, c2, c3) of four vec4 columns a mat4. Numbers are real literals.
Expr vec(const Expr& a, const Expr& b);
Expr vec(const Expr& a, const Expr& b, const Expr& c);
Expr vec(const Expr& a, const Expr& b, const Expr& c, const Expr& d);
Expr vec(double x, double y, double z, double w);

// ---- arithmetic (operators follow GLSL: a * b of two matrices, or a matrix and a vector, is the matrix product)
Expr operator-(const Expr& a);
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr equal(const Expr& a, const Expr& b);    ///< scalars only: a bool
Expr notEqual(const Expr& a, const Expr& b); ///< scalars only: a bool
Expr both(const Expr& a, const Expr& b);     ///< logical and of two bools
Expr either(const Expr& a, const Expr& b);   ///< logical or of two bools
Expr negate(const Expr& a);                  ///< logical not of a bool
Expr select(const Expr& condition, const Expr& then, const Expr& otherwise);

// ---- matrices
/// The inverse: of a trafo leaf (4×4) its stored backward matrix; of the inverse of a leaf, the leaf; of anything
/// else the computed inverse (less precise: prefer rules whose inverses are products of leaf inverses).
Expr inv(const Expr& m);
Expr transpose(const Expr& m);
Expr determinant(const Expr& m);
Expr resize(const Expr& m, uint32_t rows, uint32_t cols);
Expr upper3x3(const Expr& m);
Expr column(const Expr& m, uint32_t index);
/// (m * vec4(p, 1)).xyz and (m * vec4(d, 0)).xyz for a 4×4 m and a 3-vector.
Expr transformPos(const Expr& m, const Expr& p);
Expr transformDir(const Expr& m, const Expr& d);

// ---- vectors and scalars
/// Components by GLSL letters ("xyz", "wzyx", "x"; rgba and stpq too).
Expr swizzle(const Expr& v, std::string_view components);
Expr convert(const Expr& a, fx::Scalar to);
Expr dot(const Expr& a, const Expr& b);
Expr cross(const Expr& a, const Expr& b);
Expr length(const Expr& a);
Expr normalize(const Expr& a);
Expr abs(const Expr& a);
Expr sign(const Expr& a);
Expr floor(const Expr& a);
Expr sqrt(const Expr& a);
Expr sin(const Expr& a);
Expr cos(const Expr& a);
Expr tan(const Expr& a);
Expr asin(const Expr& a);
Expr acos(const Expr& a);
Expr atan(const Expr& a);
Expr exp(const Expr& a);
Expr log(const Expr& a);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr pow(const Expr& a, const Expr& b);
Expr atan2(const Expr& y, const Expr& x);
Expr clamp(const Expr& a, const Expr& lo, const Expr& hi);
Expr mix(const Expr& a, const Expr& b, const Expr& t);

/// The node `op` over `kids` with `aux`, type-checked (what the builders above call; Leaf, LeafInv and Const are
/// made by leaf()/inv()/lit()). For code that rewrites expressions.
Expr make(Op op, std::vector<Expr> kids, uint32_t aux = 0);

} // namespace quokka::rules
