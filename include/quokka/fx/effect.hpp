// quokka/fx/effect.hpp — effects: ordered lists of stages, each a GLSL body over one merged State plus a declared
// interface (reads, writes, uniforms, textures).
//
// A Stage is written by the user as a function body over `s.<Port>` and bare uniform/texture names; `return;` leaves
// only that stage. compose() concatenates stages after validating their interfaces; the generator (compile.hpp) fuses
// same-kind stages into one shader per kind (the merged-state model), so the same snippets serve
// the classic path today and the heap path later (only the prelude and main() differ). Ids are 128-bit content hashes
// of everything that affects the code; display names are excluded. Stages and effects are immutable values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/fx/types.hpp>

namespace quokka::fx
{

/// 128-bit content hash.
struct Hash128
{
	uint64_t hi = 0, lo = 0;
	constexpr bool operator==(const Hash128&) const = default;
	constexpr bool operator<(const Hash128& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
	std::string hex() const;
};

enum class StageKind : uint8_t
{
	Vertex,
	Fragment,
};

enum class Interp : uint8_t
{
	Smooth,
	Flat,
	NoPerspective,
};

/// A port may stand for a builtin output: the vertex position (gl_Position), point size, or fragment depth.
enum class Builtin : uint8_t
{
	None,
	Position,
	PointSize,
	FragDepth,
};

/// A named, typed field of the merged State that a stage reads or writes.
struct Port
{
	std::string name;
	Type type = V4f;
	Interp interp = Interp::Smooth; ///< integer ports are always flat
	Builtin builtin = Builtin::None;
};

enum class TexKind : uint8_t
{
	Sampler2D,
	SamplerCube,
};

struct TextureDecl
{
	std::string name;
	TexKind kind = TexKind::Sampler2D;
};

/// One snippet of an effect. Built with the fluent setters, then shared immutably inside Effects.
class Stage
{
public:
	static Stage vertex(std::string name);
	static Stage fragment(std::string name);

	Stage&& reads(std::vector<Port> ports) &&;
	Stage&& writes(std::vector<Port> ports) &&;
	/// Uniform names; their types come from UniformScope (declare custom names first).
	Stage&& uniforms(std::vector<std::string> names) &&;
	Stage&& texture(std::string name, TexKind kind = TexKind::Sampler2D) &&;
	/// Extra GLSL functions the body calls; deduplicated by exact text across an effect.
	Stage&& helpers(std::string glsl) &&;
	/// The body: statements over `s.<Port>`, uniforms and textures by name.
	Stage&& glsl(std::string body) &&;
	/// A `#define name value` visible to this stage's body (closure holes); part of the id.
	Stage&& define(std::string name, std::string value) &&;

	StageKind kind() const { return kind_; }
	const std::string& name() const { return name_; }
	const std::vector<Port>& readPorts() const { return reads_; }
	const std::vector<Port>& writePorts() const { return writes_; }
	const std::vector<std::string>& uniformNames() const { return uniforms_; }
	const std::vector<TextureDecl>& textures() const { return textures_; }
	const std::string& helperCode() const { return helpers_; }
	const std::string& body() const { return body_; }
	const std::map<std::string, std::string>& defines() const { return defines_; }
	/// Content hash of kind, ports, uniforms, textures, helpers, body and defines (not the name).
	Hash128 id() const;

private:
	StageKind kind_ = StageKind::Vertex;
	std::string name_;
	std::vector<Port> reads_, writes_;
	std::vector<std::string> uniforms_;
	std::vector<TextureDecl> textures_;
	std::string helpers_;
	std::string body_;
	std::map<std::string, std::string> defines_;
};

using StagePtr = std::shared_ptr<const Stage>;

/// An ordered list of stages with a content id (order-sensitive combination of the stage ids).
class Effect
{
public:
	const std::vector<StagePtr>& stages() const { return stages_; }
	const Hash128& id() const { return id_; }
	const std::string& name() const { return name_; }

private:
	friend Result<Effect> composeEffect(std::string name, std::vector<StagePtr> stages);
	std::vector<StagePtr> stages_;
	Hash128 id_;
	std::string name_;
};

/// Composes stages (and the stages of effects) in order. Validates: identifiers, uniforms declared in the scope,
/// one type per port name across all stages, texture names distinct from port and uniform names, one text per helper
/// function name is not checked (helpers are deduplicated by exact text). Errors: InvalidArgument naming the stage.
Result<Effect> composeEffect(std::string name, std::vector<StagePtr> stages);

/// Convenience: compose(name, a, b, …) over Stage values or Effects.
template <typename... Parts>
Result<Effect> compose(std::string name, const Parts&... parts);

namespace detail
{
inline void appendStages(std::vector<StagePtr>& out, const Stage& s)
{
	out.push_back(std::make_shared<const Stage>(s));
}
inline void appendStages(std::vector<StagePtr>& out, const StagePtr& s)
{
	out.push_back(s);
}
inline void appendStages(std::vector<StagePtr>& out, const Effect& e)
{
	out.insert(out.end(), e.stages().begin(), e.stages().end());
}
} // namespace detail

template <typename... Parts>
Result<Effect> compose(std::string name, const Parts&... parts)
{
	std::vector<StagePtr> stages;
	(detail::appendStages(stages, parts), ...);
	return composeEffect(std::move(name), std::move(stages));
}

} // namespace quokka::fx
