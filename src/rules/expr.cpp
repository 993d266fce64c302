// Building and type-checking expressions (expr.hpp).
#include <quokka/rules/expr.hpp>

#include <optional>

#include <quokka/fx/uniform_scope.hpp>

namespace quokka::rules
{

using detail::ExprNode;
using fx::Scalar;

Value Value::real(double v)
{
	Value r;
	r.c[0] = v;
	return r;
}
Value Value::boolean(bool v)
{
	Value r;
	r.type = fx::Bool;
	r.c[0] = v ? 1.0 : 0.0;
	return r;
}
Value Value::i32(int32_t v)
{
	Value r;
	r.type = fx::I32;
	r.c[0] = v;
	return r;
}
Value Value::u32(uint32_t v)
{
	Value r;
	r.type = fx::U32;
	r.c[0] = v;
	return r;
}
namespace
{
template <int N>
Value vector(const glm::vec<N, double>& v)
{
	Value r;
	r.type = Type{Scalar::F32, uint8_t(N)};
	for (int i = 0; i < N; ++i)
		r.c[size_t(i)] = v[i];
	return r;
}
template <int N>
Value matrix(const glm::mat<N, N, double>& m)
{
	Value r;
	r.type = Type{Scalar::F32, uint8_t(N), uint8_t(N)};
	for (int col = 0; col < N; ++col)
		for (int row = 0; row < N; ++row)
			r.c[size_t(col * N + row)] = m[col][row];
	return r;
}
} // namespace
Value Value::of(const math::V2d& v)
{
	return vector<2>(v);
}
Value Value::of(const math::V3d& v)
{
	return vector<3>(v);
}
Value Value::of(const math::V4d& v)
{
	return vector<4>(v);
}
Value Value::of(const math::M33d& m)
{
	return matrix<3>(m);
}
Value Value::of(const math::M44d& m)
{
	return matrix<4>(m);
}

math::M44d Value::m44() const
{
	QUOKKA_ASSERT(type == fx::M44f, "rules::Value::m44 of another type");
	math::M44d m;
	for (int col = 0; col < 4; ++col)
		for (int row = 0; row < 4; ++row)
			m[col][row] = c[size_t(col * 4 + row)];
	return m;
}
math::M33d Value::m33() const
{
	QUOKKA_ASSERT(type == fx::M33f, "rules::Value::m33 of another type");
	math::M33d m;
	for (int col = 0; col < 3; ++col)
		for (int row = 0; row < 3; ++row)
			m[col][row] = c[size_t(col * 3 + row)];
	return m;
}
math::V4d Value::v4() const
{
	QUOKKA_ASSERT(type == fx::V4f, "rules::Value::v4 of another type");
	return {c[0], c[1], c[2], c[3]};
}
math::V3d Value::v3() const
{
	QUOKKA_ASSERT(type == fx::V3f, "rules::Value::v3 of another type");
	return {c[0], c[1], c[2]};
}

std::string_view opName(Op op)
{
	static constexpr std::string_view names[] = {"const",    "leaf",        "inverse-leaf",
	                                             "-",        "!",           "transpose",
	                                             "inverse",  "determinant", "resize",
	                                             "column",   "swizzle",     "convert",
	                                             "length",   "normalize",   "abs",
	                                             "sign",     "floor",       "sqrt",
	                                             "sin",      "cos",         "tan",
	                                             "asin",     "acos",        "atan",
	                                             "exp",      "log",         "+",
	                                             "-",        "*",           "/",
	                                             "*",        "<",           "<=",
	                                             ">",        ">=",          "==",
	                                             "!=",       "&&",          "||",
	                                             "dot",      "cross",       "min",
	                                             "max",      "pow",         "atan2",
	                                             "select",   "clamp",       "mix",
	                                             "construct"};
	static_assert(std::size(names) == size_t(Op::Construct) + 1);
	return names[size_t(op)];
}

namespace
{
std::shared_ptr<const ExprNode> errorNode(std::string message)
{
	auto n = std::make_shared<ExprNode>();
	n->error = true;
	n->name = "rules: " + std::move(message);
	return n;
}
Expr failed(std::string message)
{
	return Expr::wrap(errorNode(std::move(message)));
}

std::string name(Type t)
{
	return fx::typeName(t);
}
bool isReal(Type t)
{
	return t.scalar == Scalar::F32;
}
bool isScalar(Type t)
{
	return t.rows == 1 && t.cols == 1;
}
bool isVector(Type t)
{
	return t.cols == 1 && t.rows > 1;
}
bool isNumeric(Type t)
{
	return t.scalar != Scalar::Bool;
}
Type withScalar(Type t, Scalar s)
{
	return Type{s, t.rows, t.cols};
}

/// The result type of `op` over operands of `kids` types, or the reason there is none.
std::optional<Type> resultType(Op op, const std::vector<Type>& k, uint32_t aux, std::string& why)
{
	auto bad = [&](std::string text) -> std::optional<Type>
	{
		why = std::move(text);
		return std::nullopt;
	};
	auto operands = [&]
	{
		std::string s;
		for (size_t i = 0; i < k.size(); ++i)
			s += (i ? ", " : "") + name(k[i]);
		return s;
	};
	const std::string on = std::string(opName(op)) + " of " + operands();
	switch (op)
	{
	case Op::Neg:
		return isNumeric(k[0]) && k[0].scalar != Scalar::U32 ? std::optional(k[0]) : bad("no " + on);
	case Op::Not:
		return k[0] == fx::Bool ? std::optional(k[0]) : bad("no " + on + " (a bool is needed)");
	case Op::Transpose:
		return k[0].isMatrix() ? std::optional(Type{Scalar::F32, k[0].cols, k[0].rows}) : bad("no " + on);
	case Op::Inverse:
		return k[0].isMatrix() && k[0].rows == k[0].cols ? std::optional(k[0])
		                                                 : bad("no " + on + " (a square matrix is needed)");
	case Op::Determinant:
		return k[0].isMatrix() && k[0].rows == k[0].cols ? std::optional(fx::F32)
		                                                 : bad("no " + on + " (a square matrix is needed)");
	case Op::Resize:
	{
		const uint32_t rows = aux & 0xff, cols = aux >> 8;
		if (!k[0].isMatrix() || rows < 2 || rows > 4 || cols < 2 || cols > 4)
			return bad("cannot resize " + operands() + " to " + std::to_string(rows) + "x" + std::to_string(cols));
		return Type{Scalar::F32, uint8_t(rows), uint8_t(cols)};
	}
	case Op::Column:
		return k[0].isMatrix() && aux < k[0].cols ? std::optional(Type{Scalar::F32, k[0].rows})
		                                          : bad("no column " + std::to_string(aux) + " of " + operands());
	case Op::Swizzle:
	{
		const uint32_t count = aux & 7;
		if (k[0].cols != 1)
			return bad("cannot swizzle " + operands());
		for (uint32_t i = 0; i < count; ++i)
			if (((aux >> (3 + 2 * i)) & 3) >= k[0].rows)
				return bad("swizzle reaches past the " + std::to_string(k[0].rows) + " components of " + operands());
		return Type{k[0].scalar, uint8_t(count)};
	}
	case Op::Convert:
		return !k[0].isMatrix() ? std::optional(withScalar(k[0], Scalar(aux))) : bad("cannot convert " + operands());
	case Op::Length:
		return isReal(k[0]) && k[0].cols == 1 ? std::optional(fx::F32) : bad("no " + on);
	case Op::Normalize:
		return isReal(k[0]) && isVector(k[0]) ? std::optional(k[0]) : bad("no " + on);
	case Op::Abs:
	case Op::Sign:
		return !k[0].isMatrix() && (isReal(k[0]) || k[0].scalar == Scalar::I32) ? std::optional(k[0]) : bad("no " + on);
	case Op::Floor:
	case Op::Sqrt:
	case Op::Sin:
	case Op::Cos:
	case Op::Tan:
	case Op::Asin:
	case Op::Acos:
	case Op::Atan:
	case Op::Exp:
	case Op::Log:
		return isReal(k[0]) && !k[0].isMatrix() ? std::optional(k[0]) : bad("no " + on + " (reals are needed)");
	case Op::Add:
	case Op::Sub:
	case Op::Mul:
	case Op::Div:
	{
		if (!isNumeric(k[0]) || k[0].scalar != k[1].scalar)
			return bad("no " + on + (isNumeric(k[0]) ? " (convert() one side)" : ""));
		if (k[0] == k[1] && (!k[0].isMatrix() || op == Op::Add || op == Op::Sub))
			return k[0];
		if (isScalar(k[1]))
			return k[0];
		if (isScalar(k[0]) && op != Op::Div)
			return k[1];
		if (isScalar(k[0]) && !k[1].isMatrix())
			return k[1];
		return bad("no " + on);
	}
	case Op::MatMul:
		if (!isReal(k[0]) || !isReal(k[1]))
			return bad("no " + on);
		if (k[0].isMatrix() && k[1].isMatrix() && k[0].cols == k[1].rows)
			return Type{Scalar::F32, k[0].rows, k[1].cols};
		if (k[0].isMatrix() && isVector(k[1]) && k[0].cols == k[1].rows)
			return Type{Scalar::F32, k[0].rows};
		if (isVector(k[0]) && k[1].isMatrix() && k[0].rows == k[1].rows)
			return Type{Scalar::F32, k[1].cols};
		return bad("no " + on + " (the inner dimensions differ)");
	case Op::Lt:
	case Op::Le:
	case Op::Gt:
	case Op::Ge:
		return isScalar(k[0]) && k[0] == k[1] && isNumeric(k[0]) ? std::optional(fx::Bool)
		                                                         : bad("cannot compare " + operands());
	case Op::Eq:
	case Op::Ne:
		return isScalar(k[0]) && k[0] == k[1] ? std::optional(fx::Bool) : bad("cannot compare " + operands());
	case Op::And:
	case Op::Or:
		return k[0] == fx::Bool && k[1] == fx::Bool ? std::optional(fx::Bool) : bad("no " + on + " (bools needed)");
	case Op::Dot:
		return isReal(k[0]) && isVector(k[0]) && k[0] == k[1] ? std::optional(fx::F32) : bad("no " + on);
	case Op::Cross:
		return k[0] == fx::V3f && k[1] == fx::V3f ? std::optional(fx::V3f) : bad("no " + on + " (vec3s needed)");
	case Op::Min:
	case Op::Max:
		return isNumeric(k[0]) && !k[0].isMatrix() && (k[1] == k[0] || k[1] == withScalar(Type{}, k[0].scalar))
		           ? std::optional(k[0])
		           : bad("no " + on);
	case Op::Pow:
	case Op::Atan2:
		return isReal(k[0]) && !k[0].isMatrix() && k[0] == k[1] ? std::optional(k[0]) : bad("no " + on);
	case Op::Select:
		if (k[0] != fx::Bool)
			return bad("select needs a bool condition, not " + name(k[0]));
		return k[1] == k[2] ? std::optional(k[1])
		                    : bad("select between different types " + name(k[1]) + ", " + name(k[2]));
	case Op::Clamp:
	{
		const Type s = withScalar(Type{}, k[0].scalar);
		return isNumeric(k[0]) && !k[0].isMatrix() && (k[1] == k[0] || k[1] == s) && k[2] == k[1] ? std::optional(k[0])
		                                                                                          : bad("no " + on);
	}
	case Op::Mix:
		return isReal(k[0]) && !k[0].isMatrix() && k[1] == k[0] && (k[2] == k[0] || k[2] == fx::F32)
		           ? std::optional(k[0])
		           : bad("no " + on);
	case Op::Construct:
	{
		uint32_t total = 0;
		for (Type t : k)
		{
			if (t.isMatrix() || t.scalar != k[0].scalar)
				return bad("cannot construct from " + operands() + " (scalars and vectors of one kind)");
			total += t.rows;
		}
		if (total >= 2 && total <= 4)
			return Type{k[0].scalar, uint8_t(total)};
		bool columns = isReal(k[0]) && k.size() >= 2;
		for (Type t : k)
			columns = columns && t == k[0] && isVector(t);
		if (columns)
			return Type{Scalar::F32, k[0].rows, uint8_t(k.size())};
		return bad("cannot construct from " + operands());
	}
	case Op::Const:
	case Op::Leaf:
	case Op::LeafInv:
		break;
	}
	return bad("no " + on);
}

uint32_t arity(Op op)
{
	if (op <= Op::LeafInv)
		return 0;
	if (op <= Op::Log)
		return 1;
	if (op <= Op::Atan2)
		return 2;
	return op == Op::Construct ? 0 : 3; // Construct: any
}

Expr real(double v)
{
	return lit(v);
}
} // namespace

Expr::Expr() : node_(lit(0.0).node_) {}

const std::string& Expr::error() const
{
	static const std::string none;
	return node_->error ? node_->name : none;
}

Expr make(Op op, std::vector<Expr> kids, uint32_t aux)
{
	QUOKKA_ASSERT(op > Op::LeafInv, "rules::make: leaves and literals come from leaf() and lit()");
	const uint32_t n = arity(op);
	if ((n && kids.size() != n) || (!n && (kids.empty() || kids.size() > 4)))
		return failed(std::string(opName(op)) + " takes " + (n ? std::to_string(n) : "1 to 4") + " operands, not " +
		              std::to_string(kids.size()));
	std::vector<Type> types;
	for (const Expr& e : kids)
	{
		if (!e.ok())
			return e;
		types.push_back(e.type());
	}
	std::string why;
	const std::optional<Type> type = resultType(op, types, aux, why);
	if (!type)
		return failed(why);
	auto node = std::make_shared<ExprNode>();
	node->op = op;
	node->type = *type;
	node->aux = aux;
	node->kids.reserve(kids.size());
	for (const Expr& e : kids)
		node->kids.push_back(e.shared());
	return Expr::wrap(std::move(node));
}

Expr leaf(std::string_view uniform)
{
	if (const std::optional<Type> t = fx::UniformScope::lookup(uniform))
		return leaf(uniform, *t);
	return failed("the uniform '" + std::string(uniform) +
	              "' has no declared type (declare it in fx::UniformScope or give leaf() its type)");
}

Expr leaf(std::string_view uniform, Type type)
{
	if (uniform.empty())
		return failed("a leaf needs a uniform name");
	auto node = std::make_shared<ExprNode>();
	node->op = Op::Leaf;
	node->type = type;
	node->name = std::string(uniform);
	return Expr::wrap(std::move(node));
}

Expr lit(const Value& v)
{
	auto node = std::make_shared<ExprNode>();
	node->op = Op::Const;
	node->type = v.type;
	node->literal = v;
	return Expr::wrap(std::move(node));
}
Expr lit(double v)
{
	return lit(Value::real(v));
}
Expr lit(bool v)
{
	return lit(Value::boolean(v));
}
Expr lit(int32_t v)
{
	return lit(Value::i32(v));
}
Expr lit(uint32_t v)
{
	return lit(Value::u32(v));
}
Expr lit(const math::V2d& v)
{
	return lit(Value::of(v));
}
Expr lit(const math::V3d& v)
{
	return lit(Value::of(v));
}
Expr lit(const math::V4d& v)
{
	return lit(Value::of(v));
}
Expr lit(const math::M33d& m)
{
	return lit(Value::of(m));
}
Expr lit(const math::M44d& m)
{
	return lit(Value::of(m));
}

Expr vec(const Expr& a, const Expr& b)
{
	return make(Op::Construct, {a, b});
}
Expr vec(const Expr& a, const Expr& b, const Expr& c)
{
	return make(Op::Construct, {a, b, c});
}
Expr vec(const Expr& a, const Expr& b, const Expr& c, const Expr& d)
{
	return make(Op::Construct, {a, b, c, d});
}
Expr vec(double x, double y, double z, double w)
{
	return lit(math::V4d(x, y, z, w));
}

Expr operator-(const Expr& a)
{
	return make(Op::Neg, {a});
}
Expr operator+(const Expr& a, const Expr& b)
{
	return make(Op::Add, {a, b});
}
Expr operator-(const Expr& a, const Expr& b)
{
	return make(Op::Sub, {a, b});
}
Expr operator*(const Expr& a, const Expr& b)
{
	const bool product = (a.type().isMatrix() && !isScalar(b.type())) || (b.type().isMatrix() && !isScalar(a.type()));
	return make(product ? Op::MatMul : Op::Mul, {a, b});
}
Expr operator/(const Expr& a, const Expr& b)
{
	return make(Op::Div, {a, b});
}
Expr operator<(const Expr& a, const Expr& b)
{
	return make(Op::Lt, {a, b});
}
Expr operator<=(const Expr& a, const Expr& b)
{
	return make(Op::Le, {a, b});
}
Expr operator>(const Expr& a, const Expr& b)
{
	return make(Op::Gt, {a, b});
}
Expr operator>=(const Expr& a, const Expr& b)
{
	return make(Op::Ge, {a, b});
}
Expr equal(const Expr& a, const Expr& b)
{
	return make(Op::Eq, {a, b});
}
Expr notEqual(const Expr& a, const Expr& b)
{
	return make(Op::Ne, {a, b});
}
Expr both(const Expr& a, const Expr& b)
{
	return make(Op::And, {a, b});
}
Expr either(const Expr& a, const Expr& b)
{
	return make(Op::Or, {a, b});
}
Expr negate(const Expr& a)
{
	return make(Op::Not, {a});
}
Expr select(const Expr& condition, const Expr& then, const Expr& otherwise)
{
	return make(Op::Select, {condition, then, otherwise});
}

Expr inv(const Expr& m)
{
	if (!m.ok())
		return m;
	const ExprNode& n = m.node();
	if ((n.op == Op::Leaf || n.op == Op::LeafInv) && n.type == fx::M44f)
	{
		auto node = std::make_shared<ExprNode>(n);
		node->op = n.op == Op::Leaf ? Op::LeafInv : Op::Leaf;
		return Expr::wrap(std::move(node));
	}
	if (n.op == Op::Inverse)
		return Expr::wrap(n.kids[0]);
	return make(Op::Inverse, {m});
}
Expr transpose(const Expr& m)
{
	return make(Op::Transpose, {m});
}
Expr determinant(const Expr& m)
{
	return make(Op::Determinant, {m});
}
Expr resize(const Expr& m, uint32_t rows, uint32_t cols)
{
	return make(Op::Resize, {m}, rows | cols << 8);
}
Expr upper3x3(const Expr& m)
{
	return resize(m, 3, 3);
}
Expr column(const Expr& m, uint32_t index)
{
	return make(Op::Column, {m}, index);
}
Expr transformPos(const Expr& m, const Expr& p)
{
	return swizzle(m * vec(p, real(1.0)), "xyz");
}
Expr transformDir(const Expr& m, const Expr& d)
{
	return swizzle(m * vec(d, real(0.0)), "xyz");
}

Expr swizzle(const Expr& v, std::string_view components)
{
	if (components.empty() || components.size() > 4)
		return failed("a swizzle names 1 to 4 components, not '" + std::string(components) + "'");
	uint32_t code = uint32_t(components.size());
	for (size_t i = 0; i < components.size(); ++i)
	{
		const char ch = components[i];
		int index = -1;
		for (std::string_view set : {"xyzw", "rgba", "stpq"})
			if (const size_t p = set.find(ch); p != std::string_view::npos)
				index = int(p);
		if (index < 0)
			return failed("'" + std::string(components) + "' is no swizzle");
		code |= uint32_t(index) << (3 + 2 * i);
	}
	return make(Op::Swizzle, {v}, code);
}
Expr convert(const Expr& a, fx::Scalar to)
{
	return make(Op::Convert, {a}, uint32_t(to));
}
Expr dot(const Expr& a, const Expr& b)
{
	return make(Op::Dot, {a, b});
}
Expr cross(const Expr& a, const Expr& b)
{
	return make(Op::Cross, {a, b});
}
Expr length(const Expr& a)
{
	return make(Op::Length, {a});
}
Expr normalize(const Expr& a)
{
	return make(Op::Normalize, {a});
}
Expr abs(const Expr& a)
{
	return make(Op::Abs, {a});
}
Expr sign(const Expr& a)
{
	return make(Op::Sign, {a});
}
Expr floor(const Expr& a)
{
	return make(Op::Floor, {a});
}
Expr sqrt(const Expr& a)
{
	return make(Op::Sqrt, {a});
}
Expr sin(const Expr& a)
{
	return make(Op::Sin, {a});
}
Expr cos(const Expr& a)
{
	return make(Op::Cos, {a});
}
Expr tan(const Expr& a)
{
	return make(Op::Tan, {a});
}
Expr asin(const Expr& a)
{
	return make(Op::Asin, {a});
}
Expr acos(const Expr& a)
{
	return make(Op::Acos, {a});
}
Expr atan(const Expr& a)
{
	return make(Op::Atan, {a});
}
Expr exp(const Expr& a)
{
	return make(Op::Exp, {a});
}
Expr log(const Expr& a)
{
	return make(Op::Log, {a});
}
Expr min(const Expr& a, const Expr& b)
{
	return make(Op::Min, {a, b});
}
Expr max(const Expr& a, const Expr& b)
{
	return make(Op::Max, {a, b});
}
Expr pow(const Expr& a, const Expr& b)
{
	return make(Op::Pow, {a, b});
}
Expr atan2(const Expr& y, const Expr& x)
{
	return make(Op::Atan2, {y, x});
}
Expr clamp(const Expr& a, const Expr& lo, const Expr& hi)
{
	return make(Op::Clamp, {a, lo, hi});
}
Expr mix(const Expr& a, const Expr& b, const Expr& t)
{
	return make(Op::Mix, {a, b, t});
}

} // namespace quokka::rules
