// quokka/rules/rule.hpp — a checked, hash-consed, content-hashed expression: what a derived uniform is computed by.
//
// Rule::make(expr) checks an Expr (its first error becomes the Result's) and compacts it into a flat graph in
// evaluation order, interning structurally equal subexpressions into one node — so a rule that reads ViewTrafo in
// two places reads one input, and a subproduct used twice is computed once. Its inputs are the distinct leaves
// (name, inverse) in first-appearance order: the argument order of evaluate() and of the GLSL function. Its id() is
// a 128-bit hash of that canonical form, equal for equal rules however they were built, stable across processes:
// registries deduplicate rules and kernels cache by it.
//
//     const Rule mvp = Rule::make(leaf("ProjTrafo") * leaf("ViewTrafo") * leaf("ModelTrafo")).value();
//     Value out = evaluate(mvp, {Value::of(P), Value::of(V), Value::of(M)});    // in double
//     std::string f = glslFunction(mvp, "mvp", Precision::F32);               // mat4 mvp(mat4, mat4, mat4)
//
// Rules compose: flatten() replaces inputs that are themselves derived by their producers' expressions (detecting
// cycles), and fold() binds inputs to constants and folds what became constant, selects with a constant condition
// included.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/fx/effect.hpp>
#include <quokka/rules/expr.hpp>

namespace quokka::rules
{

/// A leaf a rule reads: a uniform, or with `inverse` a trafo uniform's backward matrix.
struct Input
{
	std::string name;
	Type type;
	bool inverse = false;
	bool operator==(const Input&) const = default;
};

/// One node of a rule's graph. Kids precede their parents; the last node is the result.
struct Node
{
	Op op = Op::Const;
	Type type;
	uint8_t arity = 0;
	std::array<uint32_t, 4> kid{}; ///< node indices
	uint32_t aux = 0;              ///< Leaf/LeafInv: input index; Const: literal index; else as ExprNode::aux
};

class Rule
{
public:
	/// The rule of the literal 0.0 (so that rules can sit in maps and be assigned).
	Rule();
	/// Checks and compacts `expr`. Errors: InvalidArgument with the expression's first error.
	static Result<Rule> make(const Expr& expr);

	Type type() const { return g_->nodes.back().type; }
	const fx::Hash128& id() const { return g_->id; }
	std::span<const Input> inputs() const { return g_->inputs; }
	std::span<const Node> nodes() const { return g_->nodes; }
	std::span<const Value> literals() const { return g_->literals; }
	/// The index of input (name, inverse), or -1.
	int input(std::string_view name, bool inverse = false) const;
	/// The rule as an expression again (for rewriting).
	Expr expr() const;
	/// A one-line rendering for diagnostics: "(ProjTrafo * (ViewTrafo * ModelTrafo))".
	std::string describe() const;

	bool operator==(const Rule& o) const { return id() == o.id(); }

	/// The representation (shared, immutable): what the accessors above read.
	struct Graph
	{
		std::vector<Node> nodes;
		std::vector<Input> inputs;
		std::vector<Value> literals;
		fx::Hash128 id;
	};

private:
	explicit Rule(std::shared_ptr<const Graph> g) : g_(std::move(g)) {}
	std::shared_ptr<const Graph> g_;
};

/// The rule's value for the given inputs (one per inputs() entry, in order; each of the input's type). Division by
/// zero and the like give IEEE results (inf, nan), as the GPU would; the inverse of a singular matrix is all nan.
Value evaluate(const Rule& rule, std::span<const Value> inputs);

/// `rule` with each input named in `bindings` replaced by the bound constant (matching `inverse`: a binding of a trafo
/// name binds its backward half to the constant's inverse), then constant-folded: operations over constants become
/// constants, select over a constant condition becomes its branch. fold(rule, {}) folds literals only.
struct Binding
{
	std::string name;
	Value value;
};
Rule fold(const Rule& rule, std::span<const Binding> bindings = {});

/// `rule` with every input that `producer(name)` names a rule for replaced by that rule's expression, recursively;
/// an inverse input of a derived name by the inverse of its producer (a product of trafo leaves inverts into the
/// reversed product of their inverses, exactly). Errors: InvalidArgument naming the cycle ("A -> B -> A"), or a
/// producer whose type differs from the input's.
using Producer = std::function<const Rule*(std::string_view name)>;
Result<Rule> flatten(const Rule& rule, const Producer& producer);

/// The precision of a GLSL rendering: f32 (float types) or f64 (double types; functions GLSL lacks in double
/// precision — sin, cos, tan, asin, acos, atan, exp, log, pow — are evaluated in float).
enum class Precision : uint8_t
{
	F32,
	F64,
};
/// The GLSL type spelling of `type` at `precision` ("mat4", "dmat4", "bool", "uvec2", …).
std::string glslType(Type type, Precision precision);
/// The GLSL expression of one operation node over its operands' expressions (`kids`, in order), at `precision`.
std::string glslExpression(const Node& node, std::span<const std::string_view> kids, Precision precision);
/// A GLSL function `<type> name(<input 0>, <input 1>, …)` computing `rule`: one statement per node.
std::string glslFunction(const Rule& rule, std::string_view name, Precision precision);

} // namespace quokka::rules
