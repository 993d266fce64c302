// Rules: checking and compacting expressions, the content hash, evaluation in double, folding and flattening
// (rule.hpp).
#include <quokka/rules/rule.hpp>

#include <cmath>
#include <cstring>
#include <optional>

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>
#include <glm/gtc/matrix_inverse.hpp>
#include <xxhash.h>

namespace quokka::rules
{

using detail::ExprNode;
using fx::Scalar;

namespace
{

/// Appends the bytes of `v` to `key`.
template <typename T>
void put(std::string& key, const T& v)
{
	key.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Compactor
{
public:
	Result<uint32_t> add(const ExprNode* root)
	{
		// Iterative post-order walk: expressions may be deep (a long chain of products).
		struct Frame
		{
			const ExprNode* node;
			size_t next;
		};
		std::vector<Frame> stack{{root, 0}};
		while (!stack.empty())
		{
			Frame& f = stack.back();
			if (visited_.contains(f.node))
			{
				stack.pop_back();
				continue;
			}
			if (f.next < f.node->kids.size())
			{
				stack.push_back({f.node->kids[f.next++].get(), 0});
				continue;
			}
			Result<uint32_t> index = intern(*f.node);
			if (!index)
				return index.error();
			visited_.emplace(f.node, *index);
			stack.pop_back();
		}
		return visited_.at(root);
	}

	Rule::Graph& graph() { return g_; }

private:
	Result<uint32_t> intern(const ExprNode& n)
	{
		Node node{n.op, n.type, uint8_t(n.kids.size()), {}, n.aux};
		for (size_t i = 0; i < n.kids.size(); ++i)
			node.kid[i] = visited_.at(n.kids[i].get());
		if (n.op == Op::Leaf || n.op == Op::LeafInv)
		{
			const Input input{n.name, n.type, n.op == Op::LeafInv};
			uint32_t at = uint32_t(g_.inputs.size());
			for (uint32_t i = 0; i < g_.inputs.size(); ++i)
			{
				if (g_.inputs[i].name == input.name && g_.inputs[i].type != input.type)
					return makeError(ErrorCode::InvalidArgument, "rules: the uniform '" + input.name + "' is read as " +
					                                                 fx::typeName(g_.inputs[i].type) + " and as " +
					                                                 fx::typeName(input.type));
				if (g_.inputs[i] == input)
					at = i;
			}
			if (at == g_.inputs.size())
				g_.inputs.push_back(input);
			node.aux = at;
		}
		else if (n.op == Op::Const)
		{
			uint32_t at = uint32_t(g_.literals.size());
			for (uint32_t i = 0; i < g_.literals.size(); ++i)
				if (g_.literals[i] == n.literal)
					at = i;
			if (at == g_.literals.size())
				g_.literals.push_back(n.literal);
			node.aux = at;
		}
		std::string key;
		put(key, node.op);
		put(key, node.type);
		put(key, node.aux);
		for (uint32_t i = 0; i < node.arity; ++i)
			put(key, node.kid[i]);
		auto [it, fresh] = interned_.try_emplace(key, uint32_t(g_.nodes.size()));
		if (fresh)
			g_.nodes.push_back(node);
		return it->second;
	}

	Rule::Graph g_;
	absl::flat_hash_map<const ExprNode*, uint32_t> visited_;
	absl::flat_hash_map<std::string, uint32_t> interned_;
};

fx::Hash128 contentHash(const Rule::Graph& g)
{
	std::string bytes;
	put(bytes, uint32_t(1)); // layout version of this serialisation
	for (const Node& n : g.nodes)
	{
		put(bytes, n.op);
		put(bytes, n.type);
		put(bytes, n.arity);
		put(bytes, n.aux);
		for (uint32_t i = 0; i < n.arity; ++i)
			put(bytes, n.kid[i]);
	}
	for (const Input& in : g.inputs)
	{
		put(bytes, uint32_t(in.name.size()));
		bytes += in.name;
		put(bytes, in.type);
		put(bytes, in.inverse);
	}
	for (const Value& v : g.literals)
	{
		put(bytes, v.type);
		for (uint32_t i = 0; i < v.components(); ++i)
			put(bytes, v.c[i] == 0.0 ? 0.0 : v.c[i]); // -0 and +0 are one literal
	}
	const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
	return {h.high64, h.low64};
}

// ---- evaluation of one operation

double wrapInteger(Scalar s, double v)
{
	if (s == Scalar::I32)
		return double(int32_t(uint32_t(int64_t(v))));
	if (s == Scalar::U32)
		return double(uint32_t(int64_t(v)));
	return v;
}

template <typename F>
Value componentwise(Type type, const Value& a, const Value* b, F f)
{
	Value r;
	r.type = type;
	const uint32_t n = r.components();
	for (uint32_t i = 0; i < n; ++i)
	{
		const double x = a.components() == 1 ? a.c[0] : a.c[i];
		const double y = !b ? 0.0 : b->components() == 1 ? b->c[0] : b->c[i];
		r.c[i] = f(x, y);
	}
	return r;
}

template <int N>
Value squareInverse(const Value& m)
{
	glm::mat<N, N, double> x;
	for (int c = 0; c < N; ++c)
		for (int r = 0; r < N; ++r)
			x[c][r] = m.c[size_t(c * N + r)];
	const double det = glm::determinant(x);
	Value out;
	out.type = m.type;
	if (det == 0.0 || !std::isfinite(det))
	{
		for (int i = 0; i < N * N; ++i)
			out.c[size_t(i)] = std::nan("");
		return out;
	}
	const glm::mat<N, N, double> y = glm::inverse(x);
	for (int c = 0; c < N; ++c)
		for (int r = 0; r < N; ++r)
			out.c[size_t(c * N + r)] = y[c][r];
	return out;
}

template <int N>
double squareDeterminant(const Value& m)
{
	glm::mat<N, N, double> x;
	for (int c = 0; c < N; ++c)
		for (int r = 0; r < N; ++r)
			x[c][r] = m.c[size_t(c * N + r)];
	return glm::determinant(x);
}

Value applyOp(const Node& node, std::span<const Value* const> k)
{
	const Type t = node.type;
	const Scalar s = t.scalar;
	auto unary = [&](auto f) { return componentwise(t, *k[0], nullptr, [&](double x, double) { return f(x); }); };
	auto binary = [&](auto f) { return componentwise(t, *k[0], k[1], f); };
	auto boolean = [&](bool b) { return Value::boolean(b); };
	switch (node.op)
	{
	case Op::Neg:
		return unary([&](double x) { return wrapInteger(s, -x); });
	case Op::Not:
		return boolean(k[0]->c[0] == 0.0);
	case Op::Transpose:
	{
		Value r;
		r.type = t;
		for (uint32_t c = 0; c < t.cols; ++c)
			for (uint32_t row = 0; row < t.rows; ++row)
				r.at(c, row) = k[0]->at(row, c);
		return r;
	}
	case Op::Inverse:
		return t.rows == 2 ? squareInverse<2>(*k[0]) : t.rows == 3 ? squareInverse<3>(*k[0]) : squareInverse<4>(*k[0]);
	case Op::Determinant:
	{
		const uint32_t n = k[0]->type.rows;
		return Value::real(n == 2   ? squareDeterminant<2>(*k[0])
		                   : n == 3 ? squareDeterminant<3>(*k[0])
		                            : squareDeterminant<4>(*k[0]));
	}
	case Op::Resize:
	{
		Value r;
		r.type = t;
		for (uint32_t c = 0; c < t.cols; ++c)
			for (uint32_t row = 0; row < t.rows; ++row)
				r.at(c, row) = c < k[0]->type.cols && row < k[0]->type.rows ? k[0]->at(c, row) : c == row ? 1.0 : 0.0;
		return r;
	}
	case Op::Column:
	{
		Value r;
		r.type = t;
		for (uint32_t row = 0; row < t.rows; ++row)
			r.c[row] = k[0]->at(node.aux, row);
		return r;
	}
	case Op::Swizzle:
	{
		Value r;
		r.type = t;
		for (uint32_t i = 0; i < (node.aux & 7); ++i)
			r.c[i] = k[0]->c[(node.aux >> (3 + 2 * i)) & 3];
		return r;
	}
	case Op::Convert:
		return unary(
		    [&](double x)
		    {
			    if (s == Scalar::Bool)
				    return x != 0.0 ? 1.0 : 0.0;
			    if (s == Scalar::F32)
				    return x;
			    return wrapInteger(s, std::isfinite(x) ? std::trunc(x) : 0.0);
		    });
	case Op::Length:
	{
		double sum = 0.0;
		for (uint32_t i = 0; i < k[0]->components(); ++i)
			sum += k[0]->c[i] * k[0]->c[i];
		return Value::real(std::sqrt(sum));
	}
	case Op::Normalize:
	{
		double sum = 0.0;
		for (uint32_t i = 0; i < k[0]->components(); ++i)
			sum += k[0]->c[i] * k[0]->c[i];
		const double len = std::sqrt(sum);
		return unary([&](double x) { return x / len; });
	}
	case Op::Abs:
		return unary([](double x) { return std::abs(x); });
	case Op::Sign:
		return unary([](double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0; });
	case Op::Floor:
		return unary([](double x) { return std::floor(x); });
	case Op::Sqrt:
		return unary([](double x) { return std::sqrt(x); });
	case Op::Sin:
		return unary([](double x) { return std::sin(x); });
	case Op::Cos:
		return unary([](double x) { return std::cos(x); });
	case Op::Tan:
		return unary([](double x) { return std::tan(x); });
	case Op::Asin:
		return unary([](double x) { return std::asin(x); });
	case Op::Acos:
		return unary([](double x) { return std::acos(x); });
	case Op::Atan:
		return unary([](double x) { return std::atan(x); });
	case Op::Exp:
		return unary([](double x) { return std::exp(x); });
	case Op::Log:
		return unary([](double x) { return std::log(x); });
	case Op::Add:
		return binary([&](double x, double y) { return wrapInteger(s, x + y); });
	case Op::Sub:
		return binary([&](double x, double y) { return wrapInteger(s, x - y); });
	case Op::Mul:
		return binary([&](double x, double y) { return wrapInteger(s, x * y); });
	case Op::Div:
		return binary(
		    [&](double x, double y)
		    {
			    if (s == Scalar::F32)
				    return x / y;
			    return y == 0.0 ? 0.0 : wrapInteger(s, std::trunc(x / y));
		    });
	case Op::MatMul:
	{
		// Vectors as k×1 (right operand) or 1×k (left operand).
		const Value& a = *k[0];
		const Value& b = *k[1];
		const bool rowVector = !a.type.isMatrix();
		const uint32_t inner = rowVector ? a.type.rows : a.type.cols;
		const uint32_t outRows = rowVector ? 1 : a.type.rows;
		const uint32_t outCols = b.type.isMatrix() ? b.type.cols : 1;
		Value r;
		r.type = t;
		for (uint32_t c = 0; c < outCols; ++c)
			for (uint32_t row = 0; row < outRows; ++row)
			{
				// Left to right from the first product, as glm sums (so results match glm's bit for bit).
				auto product = [&](uint32_t i)
				{
					const double x = rowVector ? a.c[i] : a.at(i, row);
					const double y = b.type.isMatrix() ? b.at(c, i) : b.c[i];
					return x * y;
				};
				double sum = product(0);
				for (uint32_t i = 1; i < inner; ++i)
					sum += product(i);
				r.c[rowVector ? c : c * outRows + row] = sum;
			}
		return r;
	}
	case Op::Lt:
		return boolean(k[0]->c[0] < k[1]->c[0]);
	case Op::Le:
		return boolean(k[0]->c[0] <= k[1]->c[0]);
	case Op::Gt:
		return boolean(k[0]->c[0] > k[1]->c[0]);
	case Op::Ge:
		return boolean(k[0]->c[0] >= k[1]->c[0]);
	case Op::Eq:
		return boolean(k[0]->c[0] == k[1]->c[0]);
	case Op::Ne:
		return boolean(k[0]->c[0] != k[1]->c[0]);
	case Op::And:
		return boolean(k[0]->c[0] != 0.0 && k[1]->c[0] != 0.0);
	case Op::Or:
		return boolean(k[0]->c[0] != 0.0 || k[1]->c[0] != 0.0);
	case Op::Dot:
	{
		double sum = k[0]->c[0] * k[1]->c[0];
		for (uint32_t i = 1; i < k[0]->components(); ++i)
			sum += k[0]->c[i] * k[1]->c[i];
		return Value::real(sum);
	}
	case Op::Cross:
		return Value::of(glm::cross(k[0]->v3(), k[1]->v3()));
	case Op::Min:
		return binary([](double x, double y) { return std::min(x, y); });
	case Op::Max:
		return binary([](double x, double y) { return std::max(x, y); });
	case Op::Pow:
		return binary([](double x, double y) { return std::pow(x, y); });
	case Op::Atan2:
		return binary([](double y, double x) { return std::atan2(y, x); });
	case Op::Select:
		return k[0]->c[0] != 0.0 ? *k[1] : *k[2];
	case Op::Clamp:
		return componentwise(t, *k[0], k[1],
		                     [&, i = 0u](double x, double lo) mutable
		                     {
			                     const double hi = k[2]->components() == 1 ? k[2]->c[0] : k[2]->c[i];
			                     ++i;
			                     return std::min(std::max(x, lo), hi);
		                     });
	case Op::Mix:
		return componentwise(t, *k[0], k[1],
		                     [&, i = 0u](double x, double y) mutable
		                     {
			                     const double a = k[2]->components() == 1 ? k[2]->c[0] : k[2]->c[i];
			                     ++i;
			                     return x * (1.0 - a) + y * a;
		                     });
	case Op::Construct:
	{
		Value r;
		r.type = t;
		uint32_t at = 0;
		for (const Value* part : k)
			for (uint32_t i = 0; i < part->components(); ++i)
				r.c[at++] = part->c[i];
		return r;
	}
	case Op::Const:
	case Op::Leaf:
	case Op::LeafInv:
		break;
	}
	QUOKKA_ASSERT(false, "rules::apply: a leaf is no operation");
	return {};
}

} // namespace

Result<Rule> Rule::make(const Expr& expr)
{
	if (!expr.ok())
		return makeError(ErrorCode::InvalidArgument, expr.error());
	Compactor c;
	Result<uint32_t> root = c.add(&expr.node());
	if (!root)
		return root.error();
	Graph& g = c.graph();
	QUOKKA_ASSERT(*root + 1 == g.nodes.size(), "rules: the root is the last node");
	g.id = contentHash(g);
	return Rule(std::make_shared<const Graph>(std::move(g)));
}

Rule::Rule()
{
	static const std::shared_ptr<const Graph> zero = make(lit(0.0)).value().g_;
	g_ = zero;
}

int Rule::input(std::string_view name, bool inverse) const
{
	for (size_t i = 0; i < g_->inputs.size(); ++i)
		if (g_->inputs[i].name == name && g_->inputs[i].inverse == inverse)
			return int(i);
	return -1;
}

namespace
{
/// Rebuilds a rule's expression with input i replaced by substitute(i) (the leaf itself when it returns nullopt).
template <typename Substitute>
Expr rebuild(const Rule& rule, Substitute substitute)
{
	std::vector<Expr> built;
	built.reserve(rule.nodes().size());
	for (const Node& n : rule.nodes())
	{
		if (n.op == Op::Leaf || n.op == Op::LeafInv)
		{
			const Input& in = rule.inputs()[n.aux];
			std::optional<Expr> s = substitute(n.aux);
			built.push_back(s ? *s : in.inverse ? inv(leaf(in.name, in.type)) : leaf(in.name, in.type));
		}
		else if (n.op == Op::Const)
			built.push_back(lit(rule.literals()[n.aux]));
		else
		{
			std::vector<Expr> kids;
			for (uint32_t i = 0; i < n.arity; ++i)
				kids.push_back(built[n.kid[i]]);
			built.push_back(make(n.op, std::move(kids), n.aux));
		}
	}
	return built.back();
}

Rule remake(const Expr& e)
{
	Result<Rule> r = Rule::make(e);
	QUOKKA_ASSERT(r.ok(), "rules: a rewrite of a checked rule is checked");
	return std::move(r.value());
}
} // namespace

Expr Rule::expr() const
{
	return rebuild(*this, [](uint32_t) { return std::optional<Expr>(); });
}

std::string Rule::describe() const
{
	std::vector<std::string> text;
	for (const Node& n : nodes())
	{
		auto kid = [&](uint32_t i) -> const std::string& { return text[n.kid[i]]; };
		std::string s;
		switch (n.op)
		{
		case Op::Leaf:
			s = inputs()[n.aux].name;
			break;
		case Op::LeafInv:
			s = "inverse(" + inputs()[n.aux].name + ")";
			break;
		case Op::Const:
			s = literals()[n.aux].components() == 1 ? std::to_string(literals()[n.aux].c[0])
			                                        : fx::typeName(n.type) + "(…)";
			break;
		default:
			if (n.arity == 2 && n.op >= Op::Add && n.op <= Op::Or)
				s = "(" + kid(0) + " " + std::string(opName(n.op)) + " " + kid(1) + ")";
			else
			{
				s = std::string(opName(n.op)) + "(";
				for (uint32_t i = 0; i < n.arity; ++i)
					s += (i ? ", " : "") + kid(i);
				s += ")";
			}
		}
		text.push_back(std::move(s));
	}
	return text.back();
}

Value evaluate(const Rule& rule, std::span<const Value> inputs)
{
	QUOKKA_ASSERT(inputs.size() == rule.inputs().size(), "rules::evaluate: one value per input");
	// (On the stack for the usual few nodes: the classic path evaluates a rule per object and camera move.)
	absl::InlinedVector<Value, 8> v(rule.nodes().size());
	std::array<const Value*, 4> kids{};
	for (size_t i = 0; i < rule.nodes().size(); ++i)
	{
		const Node& n = rule.nodes()[i];
		if (n.op == Op::Leaf || n.op == Op::LeafInv)
		{
			QUOKKA_ASSERT(inputs[n.aux].type == n.type, "rules::evaluate: an input of another type");
			v[i] = inputs[n.aux];
		}
		else if (n.op == Op::Const)
			v[i] = rule.literals()[n.aux];
		else
		{
			for (uint32_t j = 0; j < n.arity; ++j)
				kids[j] = &v[n.kid[j]];
			v[i] = applyOp(n, std::span(kids.data(), n.arity));
		}
	}
	return v.back();
}

Rule fold(const Rule& rule, std::span<const Binding> bindings)
{
	std::vector<std::optional<Value>> constant(rule.nodes().size());
	std::vector<Expr> built;
	built.reserve(rule.nodes().size());
	std::array<const Value*, 4> kids{};
	for (size_t i = 0; i < rule.nodes().size(); ++i)
	{
		const Node& n = rule.nodes()[i];
		if (n.op == Op::Leaf || n.op == Op::LeafInv)
		{
			const Input& in = rule.inputs()[n.aux];
			for (const Binding& b : bindings)
				if (b.name == in.name && b.value.type == in.type)
					constant[i] = in.inverse ? applyOp(Node{Op::Inverse, in.type, 1}, std::array{&b.value}) : b.value;
			built.push_back(in.inverse ? inv(leaf(in.name, in.type)) : leaf(in.name, in.type));
		}
		else if (n.op == Op::Const)
		{
			constant[i] = rule.literals()[n.aux];
			built.push_back(lit(*constant[i]));
			continue;
		}
		else if (n.op == Op::Select && constant[n.kid[0]])
		{
			const uint32_t pick = n.kid[constant[n.kid[0]]->c[0] != 0.0 ? 1 : 2];
			constant[i] = constant[pick];
			built.push_back(built[pick]);
			continue;
		}
		else
		{
			bool all = true;
			for (uint32_t j = 0; j < n.arity; ++j)
				all = all && constant[n.kid[j]].has_value();
			if (all)
			{
				for (uint32_t j = 0; j < n.arity; ++j)
					kids[j] = &*constant[n.kid[j]];
				constant[i] = applyOp(n, std::span(kids.data(), n.arity));
			}
			std::vector<Expr> parts;
			for (uint32_t j = 0; j < n.arity; ++j)
				parts.push_back(built[n.kid[j]]);
			built.push_back(make(n.op, std::move(parts), n.aux));
		}
		if (constant[i])
			built.back() = lit(*constant[i]);
	}
	return remake(built.back());
}

namespace
{
/// The inverse of `e`, exact where the algebra allows: products invert into reversed products of inverses.
Expr inverted(const Expr& e)
{
	const ExprNode& n = e.node();
	if (n.op == Op::MatMul && n.kids[0]->type.isMatrix() && n.kids[1]->type.isMatrix())
		return make(Op::MatMul, {inverted(Expr::wrap(n.kids[1])), inverted(Expr::wrap(n.kids[0]))});
	if (n.op == Op::Transpose)
		return transpose(inverted(Expr::wrap(n.kids[0])));
	return inv(e);
}

struct Flattener
{
	const Producer& producer;
	std::vector<std::string> stack;
	absl::flat_hash_map<std::string, Expr> done;

	Result<Expr> of(const Rule& rule)
	{
		std::vector<std::optional<Expr>> subs(rule.inputs().size());
		for (size_t i = 0; i < rule.inputs().size(); ++i)
		{
			const Input& in = rule.inputs()[i];
			Result<std::optional<Expr>> e = produce(in);
			if (!e)
				return e.error();
			subs[i] = *e;
		}
		return rebuild(rule, [&](uint32_t i) { return subs[i]; });
	}

	Result<std::optional<Expr>> produce(const Input& in)
	{
		auto found = done.find(in.name);
		if (found == done.end())
		{
			const Rule* p = producer(in.name);
			if (!p)
				return std::optional<Expr>();
			for (size_t i = 0; i < stack.size(); ++i)
				if (stack[i] == in.name)
				{
					std::string cycle;
					for (size_t j = i; j < stack.size(); ++j)
						cycle += stack[j] + " -> ";
					return makeError(ErrorCode::InvalidArgument,
					                 "rules: derived uniforms form a cycle: " + cycle + in.name);
				}
			if (p->type() != in.type)
				return makeError(ErrorCode::InvalidArgument, "rules: '" + in.name + "' is read as " +
				                                                 fx::typeName(in.type) + " but its rule gives " +
				                                                 fx::typeName(p->type()));
			stack.push_back(in.name);
			Result<Expr> e = of(*p);
			stack.pop_back();
			if (!e)
				return e.error();
			found = done.emplace(in.name, *e).first;
		}
		return std::optional<Expr>(in.inverse ? inverted(found->second) : found->second);
	}
};
} // namespace

Result<Rule> flatten(const Rule& rule, const Producer& producer)
{
	Flattener f{producer, {}, {}};
	Result<Expr> e = f.of(rule);
	if (!e)
		return e.error();
	return Rule::make(*e);
}

} // namespace quokka::rules
