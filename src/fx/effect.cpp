#include <quokka/fx/effect.hpp>
#include <quokka/fx/uniform_scope.hpp>

#include <xxhash.h>

#include <cstdio>
#include <map>
#include <set>

namespace quokka::fx
{

std::string Hash128::hex() const
{
	char buf[33];
	std::snprintf(buf, sizeof(buf), "%016llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
	return buf;
}

Stage Stage::vertex(std::string name)
{
	Stage s;
	s.kind_ = StageKind::Vertex;
	s.name_ = std::move(name);
	return s;
}

Stage Stage::fragment(std::string name)
{
	Stage s;
	s.kind_ = StageKind::Fragment;
	s.name_ = std::move(name);
	return s;
}

Stage&& Stage::reads(std::vector<Port> ports) &&
{
	reads_ = std::move(ports);
	return std::move(*this);
}
Stage&& Stage::writes(std::vector<Port> ports) &&
{
	writes_ = std::move(ports);
	return std::move(*this);
}
Stage&& Stage::uniforms(std::vector<std::string> names) &&
{
	uniforms_ = std::move(names);
	return std::move(*this);
}
Stage&& Stage::texture(std::string name, TexKind kind) &&
{
	textures_.push_back({std::move(name), kind});
	return std::move(*this);
}
Stage&& Stage::helpers(std::string glsl) &&
{
	helpers_ = std::move(glsl);
	return std::move(*this);
}
Stage&& Stage::glsl(std::string body) &&
{
	body_ = std::move(body);
	return std::move(*this);
}
Stage&& Stage::define(std::string name, std::string value) &&
{
	defines_[std::move(name)] = std::move(value);
	return std::move(*this);
}

namespace
{
// Length-prefixed feeding: ("ab","c") and ("a","bc") hash differently.
struct Hasher
{
	XXH3_state_t* state = XXH3_createState();
	Hasher() { XXH3_128bits_reset(state); }
	~Hasher() { XXH3_freeState(state); }
	void bytes(const void* data, size_t size)
	{
		const uint64_t n = size;
		XXH3_128bits_update(state, &n, sizeof(n));
		XXH3_128bits_update(state, data, size);
	}
	void str(const std::string& s) { bytes(s.data(), s.size()); }
	void u32(uint32_t v) { bytes(&v, sizeof(v)); }
	void port(const Port& p)
	{
		str(p.name);
		u32(uint32_t(p.type.scalar) | uint32_t(p.type.rows) << 8 | uint32_t(p.type.cols) << 16 |
		    uint32_t(p.interp) << 24);
		u32(uint32_t(p.builtin));
	}
	Hash128 digest()
	{
		XXH128_hash_t h = XXH3_128bits_digest(state);
		return {h.high64, h.low64};
	}
};
} // namespace

Hash128 Stage::id() const
{
	Hasher h;
	h.u32(uint32_t(kind_));
	h.u32(uint32_t(reads_.size()));
	for (const Port& p : reads_)
		h.port(p);
	h.u32(uint32_t(writes_.size()));
	for (const Port& p : writes_)
		h.port(p);
	h.u32(uint32_t(uniforms_.size()));
	for (const std::string& u : uniforms_)
	{
		h.str(u);
		// The type is part of the meaning of the code.
		const auto t = UniformScope::lookup(u);
		h.u32(t ? uint32_t(t->scalar) | uint32_t(t->rows) << 8 | uint32_t(t->cols) << 16 : 0xffffffffu);
	}
	h.u32(uint32_t(textures_.size()));
	for (const TextureDecl& t : textures_)
	{
		h.str(t.name);
		h.u32(uint32_t(t.kind));
	}
	h.str(helpers_);
	h.str(body_);
	h.u32(uint32_t(defines_.size()));
	for (const auto& [k, v] : defines_)
	{
		h.str(k);
		h.str(v);
	}
	return h.digest();
}

Result<Effect> composeEffect(std::string name, std::vector<StagePtr> stages)
{
	if (stages.empty())
		return makeError(ErrorCode::InvalidArgument, "effect '" + name + "' has no stages");
	std::map<std::string, std::pair<Type, std::string>> port_types; // name → (type, first stage)
	std::set<std::string> textures, uniforms;
	for (const StagePtr& s : stages)
	{
		const std::string where = "effect '" + name + "', stage '" + s->name() + "': ";
		auto check_port = [&](const Port& p) -> Result<void>
		{
			if (!isUserIdentifier(p.name))
				return makeError(ErrorCode::InvalidArgument,
				                 where + "port name '" + p.name + "' is not a valid identifier");
			if (glslName(p.type).empty() || p.type.scalar == Scalar::Bool)
				return makeError(ErrorCode::InvalidArgument, where + "port '" + p.name + "' has an unsupported type");
			auto [it, inserted] = port_types.emplace(p.name, std::make_pair(p.type, s->name()));
			if (!inserted && !(it->second.first == p.type))
				return makeError(ErrorCode::InvalidArgument, where + "port '" + p.name + "' is " + typeName(p.type) +
				                                                 " but stage '" + it->second.second + "' has it as " +
				                                                 typeName(it->second.first));
			if (p.builtin == Builtin::Position && !(p.type == V4f))
				return makeError(ErrorCode::InvalidArgument, where + "a Position builtin port must be V4f");
			return {};
		};
		for (const Port& p : s->readPorts())
			QUOKKA_TRY(check_port(p));
		for (const Port& p : s->writePorts())
			QUOKKA_TRY(check_port(p));
		for (const std::string& u : s->uniformNames())
		{
			if (!UniformScope::lookup(u))
				return makeError(ErrorCode::InvalidArgument,
				                 where + "uniform '" + u + "' is not declared (UniformScope::declare it first)");
			uniforms.insert(u);
		}
		for (const TextureDecl& t : s->textures())
		{
			if (!isUserIdentifier(t.name))
				return makeError(ErrorCode::InvalidArgument, where + "texture name '" + t.name + "' is not valid");
			textures.insert(t.name);
		}
	}
	for (const std::string& t : textures)
		if (port_types.count(t) || uniforms.count(t))
			return makeError(ErrorCode::InvalidArgument,
			                 "effect '" + name + "': texture '" + t + "' has the name of a port or uniform");
	for (const std::string& u : uniforms)
		if (port_types.count(u))
			return makeError(ErrorCode::InvalidArgument,
			                 "effect '" + name + "': uniform '" + u + "' has the name of a port");

	Effect e;
	e.name_ = std::move(name);
	e.stages_ = std::move(stages);
	Hasher h;
	for (const StagePtr& s : e.stages_)
	{
		const Hash128 id = s->id();
		h.bytes(&id, sizeof(id));
	}
	e.id_ = h.digest();
	return e;
}

} // namespace quokka::fx
