// Effect → GLSL (merged-state model) → SPIR-V, with the fragment-first two-phase compile and active-variable
// reflection.
//
// [SECTION] gathering the merged State of one stage kind
// [SECTION] GLSL generation
// [SECTION] reflection of active variables
// [SECTION] error mapping
// [SECTION] the two-phase compile
#include <quokka/fx/atlas_glsl.hpp>
#include <quokka/fx/compile.hpp>
#include <quokka/fx/megacall_glsl.hpp>
#include <quokka/fx/uniform_scope.hpp>

#include <spirv_cross_c.h>
#include <xxhash.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace quokka::fx
{

namespace
{
// Bump when generated code changes shape: it is part of every cache key.
constexpr uint32_t kGeneratorVersion = 4;

// The optimiser strips debug names, so reflection identifies everything by decorations: inputs by Location, analysis
// uniform blocks by binding (kAnalysisUniformBinding + index in the plan), textures by binding, the final block by
// binding 0. (Analysis bindings never reach a pipeline.)
constexpr uint32_t kAnalysisUniformBinding = 100;
constexpr uint32_t kAnalysisTextureBinding = 1000;

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] gathering the merged State of one stage kind
// ---------------------------------------------------------------------------------------------------------------------

struct Field
{
	Port port;
	bool written = false; ///< some stage of this kind writes it
};

struct Gathered
{
	std::vector<const Stage*> stages;
	std::vector<Field> state;             ///< union of ports, first-appearance order
	std::vector<std::string> first_reads; ///< ports read before any stage of this kind wrote them
	std::vector<std::string> uniforms;    ///< declared uniform names, first-appearance order
	std::vector<TextureDecl> textures;

	Field* find(const std::string& name)
	{
		for (Field& f : state)
			if (f.port.name == name)
				return &f;
		return nullptr;
	}
	void add(const Port& p)
	{
		if (Field* f = find(p.name))
		{
			if (p.builtin != Builtin::None)
				f->port.builtin = p.builtin;
			if (p.interp != Interp::Smooth)
				f->port.interp = p.interp;
			return;
		}
		state.push_back({p, false});
	}
};

Gathered gather(const Effect& effect, StageKind kind)
{
	Gathered g;
	for (const StagePtr& s : effect.stages())
	{
		if (s->kind() != kind)
			continue;
		g.stages.push_back(s.get());
		for (const Port& p : s->readPorts())
		{
			g.add(p);
			if (!g.find(p.name)->written &&
			    std::find(g.first_reads.begin(), g.first_reads.end(), p.name) == g.first_reads.end())
				g.first_reads.push_back(p.name);
		}
		for (const Port& p : s->writePorts())
		{
			g.add(p);
			g.find(p.name)->written = true;
		}
		for (const std::string& u : s->uniformNames())
			if (std::find(g.uniforms.begin(), g.uniforms.end(), u) == g.uniforms.end())
				g.uniforms.push_back(u);
		for (const TextureDecl& t : s->textures())
			if (std::none_of(g.textures.begin(), g.textures.end(),
			                 [&](const TextureDecl& x) { return x.name == t.name; }))
				g.textures.push_back(t);
	}
	return g;
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] GLSL generation
// ---------------------------------------------------------------------------------------------------------------------

struct Slot
{
	std::string name;
	Type type;
	uint32_t location;
	Interp interp = Interp::Smooth;
};

enum class UniformMode
{
	PerUniformBlocks, ///< analysis compile: one block per uniform, so reflection shows exactly the used ones
	OneBlock,         ///< final: one std140 block at set 0, binding 0
};

struct ShaderPlan
{
	StageKind kind;
	std::vector<Slot> inputs;
	std::vector<Slot> outputs;  ///< VS: varyings; FS: colour outputs
	std::string position_field; ///< VS: the field written to gl_Position
	std::vector<std::string> uniforms;
	UniformMode uniform_mode = UniformMode::OneBlock;
	std::vector<TextureDecl> textures; ///< bound at 1 + index (final) or 1000 + index (analysis)
	/// Final compiles: names the bodies reference that analysis found inactive. They are declared as private globals
	/// (uniforms) or at unused bindings (textures) so the code compiles; the optimiser removes them as dead.
	std::vector<std::string> dead_uniforms;
	std::vector<TextureDecl> dead_textures;
	/// Heap variants (final compiles only): VS inputs are pulled from the arena (`heap_attributes`, in header order)
	/// instead of declared as vertex inputs; uniforms are private globals loaded through the draw header.
	PathVariant path = PathVariant::Classic;
	std::vector<Slot> heap_attributes;
	bool heap_draw_varying = false; ///< the fragment stage reads uniforms: pass the draw index as a flat varying
	uint32_t heap_draw_location = 0;
	uint32_t heap_header_words = 0; ///< the draw header's size (the same in both stages)
	bool heap() const { return path != PathVariant::Classic; }
};

// Loads of every uniform/attribute type from the u32 arena (tight, column-major, 4 bytes per component). 4- and
// 2-component vectors go through the aliased uvec4/uvec2 views of the same binding: one 16-/8-byte load instead of
// four/two 4-byte ones (measured on the H200). That needs b % 4 == 0 (b % 2 == 0), which holds at every call: each
// allocation's data starts 16-byte aligned and vectors are stored at their full size (V4: stride 4 words, M44 columns
// at b + 4k; V2 stride 2, M22 columns at b + 2k).
constexpr const char* kHeapLoaders = R"(float qkF(uint b) { return uintBitsToFloat(qk_arena[b]); }
float qkLoadF32(uint b) { return qkF(b); }
vec2 qkLoadV2f(uint b) { return uintBitsToFloat(qk_arena2[b >> 1u]); }
vec3 qkLoadV3f(uint b) { return vec3(qkF(b), qkF(b + 1u), qkF(b + 2u)); }
vec4 qkLoadV4f(uint b) { return uintBitsToFloat(qk_arena4[b >> 2u]); }
int qkLoadI32(uint b) { return int(qk_arena[b]); }
ivec2 qkLoadV2i(uint b) { return ivec2(qk_arena2[b >> 1u]); }
ivec3 qkLoadV3i(uint b) { return ivec3(qk_arena[b], qk_arena[b + 1u], qk_arena[b + 2u]); }
ivec4 qkLoadV4i(uint b) { return ivec4(qk_arena4[b >> 2u]); }
uint qkLoadU32(uint b) { return qk_arena[b]; }
uvec2 qkLoadV2u(uint b) { return qk_arena2[b >> 1u]; }
uvec3 qkLoadV3u(uint b) { return uvec3(qk_arena[b], qk_arena[b + 1u], qk_arena[b + 2u]); }
uvec4 qkLoadV4u(uint b) { return qk_arena4[b >> 2u]; }
bool qkLoadBool(uint b) { return qk_arena[b] != 0u; }
mat2 qkLoadM22f(uint b) { return mat2(qkLoadV2f(b), qkLoadV2f(b + 2u)); }
mat3 qkLoadM33f(uint b) { return mat3(qkLoadV3f(b), qkLoadV3f(b + 3u), qkLoadV3f(b + 6u)); }
mat4 qkLoadM44f(uint b) { return mat4(qkLoadV4f(b), qkLoadV4f(b + 4u), qkLoadV4f(b + 8u), qkLoadV4f(b + 12u)); }
)";

/// "qkLoadV3f(" etc.: the loader of `t` in kHeapLoaders (typeName spells matrices only: "float", "V2ui" are not
/// loader names).
std::string heapLoader(Type t)
{
	const char scalar = t.scalar == Scalar::F32 ? 'f' : t.scalar == Scalar::I32 ? 'i' : 'u';
	std::string name;
	if (t == Bool)
		name = "Bool";
	else if (t.isMatrix())
		name = typeName(t);
	else if (t.rows == 1)
		name = t.scalar == Scalar::F32 ? "F32" : t.scalar == Scalar::I32 ? "I32" : "U32";
	else
		name = "V" + std::to_string(t.rows) + scalar;
	return "qkLoad" + name + "(";
}

/// Generated source plus where each stage's body starts, for error mapping.
struct Generated
{
	std::string glsl;
	std::map<std::string, const Stage*> files; // #line file name → stage
};

std::string zeroOf(Type t)
{
	return glslName(t) + "(0)";
}

const char* interpQualifier(Interp interp, Type t)
{
	if (t.isInteger() || interp == Interp::Flat)
		return "flat ";
	if (interp == Interp::NoPerspective)
		return "noperspective ";
	return "";
}

std::string fragmentOutputExpr(const std::string& field, Type t)
{
	const std::string v = "s." + field;
	if (t == V4f)
		return v;
	if (t == V3f)
		return "vec4(" + v + ", 1.0)";
	if (t == V2f)
		return "vec4(" + v + ", 0.0, 1.0)";
	return "vec4(" + v + ", 0.0, 0.0, 1.0)";
}

// Appends lines while counting them, so `#line` directives can restore the generated numbering.
struct Writer
{
	std::ostringstream out;
	uint32_t line = 1; // number of the next line
	void emit(const std::string& text)
	{
		out << text << '\n';
		line += 1 + uint32_t(std::count(text.begin(), text.end(), '\n'));
	}
};

/// main()'s heap prelude: find the draw (and, in the vertex shader, the vertex and instance), then load the uniforms
/// and attributes through the draw header.
std::string heapPrelude(const ShaderPlan& plan, bool vs)
{
	const std::string stride = std::to_string(plan.heap_header_words);
	const uint32_t uniforms = uint32_t(plan.uniforms.size());
	const uint32_t attributes = uint32_t(plan.heap_attributes.size());
	std::string m;
	if (!vs && !plan.heap_draw_varying)
		return m; // the fragment side reads no uniform
	if (!vs)
		m += "\n\tuint qk_draw = qk_draw_varying;";
	else if (!isMegacallVariant(plan.path))
		m += "\n\tuint qk_draw = uint(gl_BaseInstance);"
		     "\n\tuint qk_vertex = uint(gl_VertexIndex);"
		     "\n\tuint qk_instance = uint(gl_InstanceIndex - gl_BaseInstance);";
	else
		m += "\n\tuint qk_emit = uint(gl_VertexIndex);"
		     "\n\tuint qk_record = qkFindRecord(qk_emit) * 5u;"
		     "\n\tuint qk_draw = qk_records[qk_record + 1u];"
		     "\n\tuint qk_index_start = qk_records[qk_record + 2u];"
		     "\n\tuint qk_index_count = qk_records[qk_record + 3u];"
		     "\n\tuint qk_local = qk_emit - qk_records[qk_record];"
		     "\n\tuint qk_instance = qk_local / qk_index_count;"
		     "\n\tuint qk_li = qk_local - qk_instance * qk_index_count;";
	m += "\n\tuint qk_h = qk_draw * " + stride + "u;";
	if (vs && isMegacallVariant(plan.path))
		m += "\n\tuint qk_vertex = uint(int(qk_index_start == 0xFFFFFFFFu ? qk_li : qk_arena[qk_index_start + qk_li]) "
		     "+ int(qk_headers[qk_h + " +
		     std::to_string(uniforms + attributes) + "u]));";
	for (uint32_t i = 0; i < uniforms; ++i)
		m += "\n\t" + plan.uniforms[i] + " = " + heapLoader(*UniformScope::lookup(plan.uniforms[i])) +
		     "qk_headers[qk_h + " + std::to_string(i) + "u] / 4u + 4u);";
	for (uint32_t i = 0; i < attributes; ++i)
	{
		const Slot& a = plan.heap_attributes[i];
		const std::string ref = "qk_ref_" + a.name;
		m += "\n\tuint " + ref + " = qk_headers[qk_h + " + std::to_string(uniforms + i) + "u];";
		m += "\n\ts." + a.name + " = " + heapLoader(a.type) + "(" + ref + " & ~15u) / 4u + 4u + ((" + ref +
		     " & 1u) != 0u ? qk_instance + qk_headers[qk_h + " + std::to_string(uniforms + attributes + 1) +
		     "u] : qk_vertex) * " + std::to_string(a.type.rows * a.type.cols) + "u);";
	}
	// (The textures' words come after the uniforms, every attribute — the fragment plan lists none — and the two draw
	// words.)
	const size_t first = plan.heap_header_words - textureHeaderWords(plan.path) * plan.textures.size();
	if (isAtlasVariant(plan.path))
		for (size_t i = 0; i < plan.textures.size(); ++i)
		{
			const std::string w = "qk_headers[qk_h + " + std::to_string(first + 4 * i);
			m += "\n\t" + plan.textures[i].name + ".e = uvec4(" + w + "u], " + w + "u + 1u], " + w + "u + 2u], " + w +
			     "u + 3u]);";
		}
	if (isBindlessVariant(plan.path))
		for (size_t i = 0; i < plan.textures.size(); ++i)
			m += "\n\tqk_tex_" + plan.textures[i].name + " = qk_headers[qk_h + " + std::to_string(first + i) + "u];";
	return m;
}

/// Atlas variants: the pages of both families, and texture(), textureLod(), textureGrad(), textureSize() and
/// texelFetch() overloaded for the entry type that stands for each texture (sampled as atlas_glsl.hpp describes).
std::string atlasDeclarations(bool vs)
{
	std::string d =
	    "layout(set = 0, binding = " + std::to_string(kHeapAtlasBinding) +
	    ") uniform sampler2DArray qk_atlas_unorm;\nlayout(set = 0, binding = " + std::to_string(kHeapAtlasBinding + 1) +
	    ") uniform sampler2DArray qk_atlas_srgb;\n";
	d += kAtlasSampleGlsl;
	if (!vs)
		d += kAtlasSampleFragmentGlsl;
	d += R"glsl(
struct QkAtlasTexture { uvec4 e; };
uvec4 qkAtlasEntry(QkAtlasTexture t) { return uvec4(t.e.x & 0x7fffffffu, t.e.yzw); }
// (The coordinates are computed once; only the fetches depend on the family — both pages have one size.)
vec4 qkAtlasLod(QkAtlasTexture t, vec2 uv, float lod)
{
	const QuokkaAtlasTaps taps = quokkaAtlasTaps(qkAtlasEntry(t), uv, lod, vec2(textureSize(qk_atlas_unorm, 0).xy));
	vec4 a, b;
	if ((t.e.x & 0x80000000u) == 0u)
	{
		a = textureLod(qk_atlas_unorm, taps.a, 0.0);
		b = taps.f == 0.0 ? a : textureLod(qk_atlas_unorm, taps.b, 0.0);
	}
	else
	{
		a = textureLod(qk_atlas_srgb, taps.a, 0.0);
		b = taps.f == 0.0 ? a : textureLod(qk_atlas_srgb, taps.b, 0.0);
	}
	return taps.f == 0.0 ? a : mix(a, b, taps.f);
}
vec4 textureLod(QkAtlasTexture t, vec2 uv, float lod) { return qkAtlasLod(t, uv, lod); }
ivec2 textureSize(QkAtlasTexture t, int lod)
{
	return max(ivec2(int(t.e.z & 0xffffu) >> lod, int(t.e.z >> 16) >> lod), ivec2(1));
}
vec4 textureGrad(QkAtlasTexture t, vec2 uv, vec2 dx, vec2 dy)
{
	const vec2 size = vec2(textureSize(t, 0));
	const vec2 a = dx * size, b = dy * size;
	return qkAtlasLod(t, uv, 0.5 * log2(max(dot(a, a), dot(b, b))));
}
vec4 texelFetch(QkAtlasTexture t, ivec2 p, int lod)
{
	const uvec4 e = qkAtlasEntry(t);
	ivec2 size;
	const ivec2 o = quokkaAtlasLevel(e, clamp(lod, 0, int(e.w & 0xffu) - 1), size);
	const ivec3 at = ivec3(o + clamp(p, ivec2(0), size - 1), int(e.x));
	return (t.e.x & 0x80000000u) == 0u ? texelFetch(qk_atlas_unorm, at, 0) : texelFetch(qk_atlas_srgb, at, 0);
}
)glsl";
	if (vs)
		d += "vec4 texture(QkAtlasTexture t, vec2 uv) { return qkAtlasLod(t, uv, 0.0); }\n";
	else
		d += "vec4 texture(QkAtlasTexture t, vec2 uv) { return qkAtlasLod(t, uv, quokkaAtlasLodOf(qkAtlasEntry(t), "
		     "uv)); }\nvec4 texture(QkAtlasTexture t, vec2 uv, float bias) { return qkAtlasLod(t, uv, "
		     "quokkaAtlasLodOf(qkAtlasEntry(t), uv) + bias); }\n";
	return d;
}

Generated generate(const Gathered& g, const ShaderPlan& plan, const std::string& effect_name)
{
	const bool vs = plan.kind == StageKind::Vertex;
	const std::string self = std::string("quokka:") + (vs ? "vertex" : "fragment");
	Generated result;
	Writer w;
	w.emit("#version 460");
	w.emit("#extension GL_GOOGLE_cpp_style_line_directive : require");
	if (isBindlessVariant(plan.path) && !plan.textures.empty())
		w.emit("#extension GL_EXT_nonuniform_qualifier : require");
	w.emit("// generated by quokka::fx for effect '" + effect_name + "'");

	// Heap: the arena chunk and the draw headers (plus the megacall's records and tile index) replace vertex inputs
	// and the uniform block.
	if (plan.heap())
	{
		w.emit("layout(std430, set = 0, binding = 0) readonly buffer _QkArena { uint qk_arena[]; };");
		w.emit("layout(std430, set = 0, binding = 0) readonly buffer _QkArena4 { uvec4 qk_arena4[]; };");
		w.emit("layout(std430, set = 0, binding = 0) readonly buffer _QkArena2 { uvec2 qk_arena2[]; };");
		w.emit("layout(std430, set = 0, binding = 1) readonly buffer _QkHeaders { uint qk_headers[]; };");
		if (vs && isMegacallVariant(plan.path))
		{
			w.emit("layout(std430, set = 0, binding = 2) readonly buffer _QkRecords { uint qk_records[]; };");
			w.emit("layout(std430, set = 0, binding = 3) readonly buffer _QkTiles { uint qk_tiles[]; };");
			w.emit(kMegacallSearchGlsl);
		}
		w.emit(kHeapLoaders);
		for (const std::string& u : plan.uniforms)
			w.emit(glslName(*UniformScope::lookup(u)) + " " + u + ";");
	}
	else if (!plan.uniforms.empty())
	{
		if (plan.uniform_mode == UniformMode::PerUniformBlocks)
		{
			uint32_t binding = kAnalysisUniformBinding;
			for (const std::string& u : plan.uniforms)
				w.emit("layout(std140, set = 0, binding = " + std::to_string(binding++) + ") uniform _U_" + u + " { " +
				       glslName(*UniformScope::lookup(u)) + " " + u + "; };");
		}
		else
		{
			std::string block = "layout(std140, set = 0, binding = 0) uniform _Uniforms\n{";
			for (const std::string& u : plan.uniforms)
				block += "\n\t" + glslName(*UniformScope::lookup(u)) + " " + u + ";";
			block += "\n};";
			w.emit(block);
		}
	}
	for (const std::string& u : plan.dead_uniforms)
		w.emit(glslName(*UniformScope::lookup(u)) + " " + u + "; // inactive");
	for (size_t i = 0; i < plan.dead_textures.size(); ++i)
		w.emit("layout(set = 0, binding = " + std::to_string(kAnalysisTextureBinding + i) + ") uniform " +
		       (plan.dead_textures[i].kind == TexKind::SamplerCube ? "samplerCube " : "sampler2D ") +
		       plan.dead_textures[i].name + "; // inactive");
	const uint32_t texture_base = plan.uniform_mode == UniformMode::PerUniformBlocks ? kAnalysisTextureBinding
	                              : plan.heap()                                      ? kHeapTextureBinding
	                                                                                 : 1;
	if (isAtlasVariant(plan.path))
	{
		if (!plan.textures.empty())
			w.emit(atlasDeclarations(vs));
		for (const TextureDecl& t : plan.textures)
			w.emit("QkAtlasTexture " + t.name + ";");
	}
	else if (isBindlessVariant(plan.path))
	{
		// The texture's name stands for its entry of the table: the bodies sample it as any sampler2D.
		if (!plan.textures.empty())
			w.emit("layout(set = " + std::to_string(kHeapBindlessSet) +
			       ", binding = 0) uniform sampler2D qk_bindless[];");
		for (const TextureDecl& t : plan.textures)
			w.emit("uint qk_tex_" + t.name + ";\n#define " + t.name + " qk_bindless[nonuniformEXT(qk_tex_" + t.name +
			       ")]");
	}
	else
		for (size_t i = 0; i < plan.textures.size(); ++i)
			w.emit("layout(set = 0, binding = " + std::to_string(texture_base + i) + ") uniform " +
			       (plan.textures[i].kind == TexKind::SamplerCube ? "samplerCube " : "sampler2D ") +
			       plan.textures[i].name + ";");

	// Interface.
	for (const Slot& s : plan.inputs)
		w.emit("layout(location = " + std::to_string(s.location) + ") " +
		       (vs ? "" : interpQualifier(s.interp, s.type)) + "in " + glslName(s.type) + " in_" + s.name + ";");
	for (const Slot& s : plan.outputs)
		w.emit("layout(location = " + std::to_string(s.location) + ") " +
		       (vs ? interpQualifier(s.interp, s.type) : "") + "out " + (vs ? glslName(s.type) : std::string("vec4")) +
		       " out_" + s.name + ";");
	if (plan.heap_draw_varying)
		w.emit("layout(location = " + std::to_string(plan.heap_draw_location) + ") flat " + (vs ? "out" : "in") +
		       " uint qk_draw_varying;");

	// The merged State.
	std::string state = "struct _State\n{";
	for (const Field& f : g.state)
		state += "\n\t" + glslName(f.port.type) + " " + f.port.name + ";";
	state += "\n};";
	w.emit(state);

	// Helpers, deduplicated by exact text.
	std::set<std::string> helpers;
	for (const Stage* s : g.stages)
		if (!s->helperCode().empty() && helpers.insert(s->helperCode()).second)
			w.emit(s->helperCode());

	// One function per stage; `return;` leaves only that stage.
	for (size_t i = 0; i < g.stages.size(); ++i)
	{
		const Stage* s = g.stages[i];
		std::string file = s->name();
		for (int k = 2; result.files.count(file); ++k)
			file = s->name() + "#" + std::to_string(k);
		result.files[file] = s;
		for (const auto& [k, v] : s->defines())
			w.emit("#define " + k + " " + v);
		w.emit("void _s" + std::to_string(i) + "(inout _State s)\n{");
		w.emit("#line 1 \"" + file + "\"");
		w.emit(s->body());
		w.emit("#line " + std::to_string(w.line + 1) + " \"" + self + "\"");
		w.emit("}");
		for (const auto& [k, v] : s->defines())
			w.emit("#undef " + k);
	}

	// main(): zero-init, inputs, stages in order, outputs.
	std::string main = "void main()\n{\n\t_State s;";
	for (const Field& f : g.state)
		main += "\n\ts." + f.port.name + " = " + zeroOf(f.port.type) + ";";
	for (const Slot& s : plan.inputs)
		main += "\n\ts." + s.name + " = in_" + s.name + ";";
	if (plan.heap())
		main += heapPrelude(plan, vs);
	for (size_t i = 0; i < g.stages.size(); ++i)
		main += "\n\t_s" + std::to_string(i) + "(s);";
	if (vs)
	{
		main += "\n\tgl_Position = s." + plan.position_field + ";";
		for (const Field& f : g.state)
			if (f.port.builtin == Builtin::PointSize)
				main += "\n\tgl_PointSize = s." + f.port.name + ";";
		for (const Slot& s : plan.outputs)
			main += "\n\tout_" + s.name + " = s." + s.name + ";";
		if (plan.heap_draw_varying)
			main += "\n\tqk_draw_varying = qk_draw;";
	}
	else
	{
		for (const Slot& s : plan.outputs)
			main += "\n\tout_" + s.name + " = " + fragmentOutputExpr(s.name, s.type) + ";";
		for (const Field& f : g.state)
			if (f.port.builtin == Builtin::FragDepth)
				main += "\n\tgl_FragDepth = s." + f.port.name + ";";
	}
	main += "\n}";
	w.emit(main);
	result.glsl = w.out.str();
	return result;
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] reflection of active variables
// ---------------------------------------------------------------------------------------------------------------------

struct Reflected
{
	std::set<uint32_t> input_locations;
	std::set<uint32_t> uniform_bindings;
	std::set<uint32_t> texture_bindings;
	std::vector<UniformMember> members; ///< final: offsets of _Uniforms members in declaration order
	uint32_t block_size = 0;
};

Result<Reflected> reflectActive(std::span<const uint32_t> spirv)
{
	spvc_context context = nullptr;
	if (spvc_context_create(&context) != SPVC_SUCCESS)
		return makeError(ErrorCode::OutOfMemory, "spirv-cross: no context");
	struct Guard
	{
		spvc_context c;
		~Guard() { spvc_context_destroy(c); }
	} guard{context};
	spvc_parsed_ir ir = nullptr;
	spvc_compiler compiler = nullptr;
	if (spvc_context_parse_spirv(context, spirv.data(), spirv.size(), &ir) != SPVC_SUCCESS ||
	    spvc_context_create_compiler(context, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) !=
	        SPVC_SUCCESS)
		return makeError(ErrorCode::InvalidArgument,
		                 std::string("spirv-cross: ") + spvc_context_get_last_error_string(context));
	spvc_set active = nullptr;
	spvc_compiler_get_active_interface_variables(compiler, &active);
	spvc_resources resources = nullptr;
	spvc_compiler_create_shader_resources_for_active_variables(compiler, &resources, active);

	Reflected out;
	auto list = [&](spvc_resource_type type)
	{
		const spvc_reflected_resource* items = nullptr;
		size_t count = 0;
		spvc_resources_get_resource_list_for_type(resources, type, &items, &count);
		return std::span<const spvc_reflected_resource>(items, count);
	};
	for (const auto& r : list(SPVC_RESOURCE_TYPE_STAGE_INPUT))
		out.input_locations.insert(spvc_compiler_get_decoration(compiler, r.id, SpvDecorationLocation));
	for (const auto& r : list(SPVC_RESOURCE_TYPE_SAMPLED_IMAGE))
		out.texture_bindings.insert(spvc_compiler_get_decoration(compiler, r.id, SpvDecorationBinding));
	for (const auto& r : list(SPVC_RESOURCE_TYPE_UNIFORM_BUFFER))
	{
		const uint32_t binding = spvc_compiler_get_decoration(compiler, r.id, SpvDecorationBinding);
		out.uniform_bindings.insert(binding);
		if (binding == 0)
		{
			spvc_type type = spvc_compiler_get_type_handle(compiler, r.base_type_id);
			size_t size = 0;
			spvc_compiler_get_declared_struct_size(compiler, type, &size);
			out.block_size = uint32_t(size);
			for (unsigned i = 0; i < spvc_type_get_num_member_types(type); ++i)
			{
				UniformMember m;
				spvc_compiler_type_struct_member_offset(compiler, type, i, &m.offset);
				unsigned stride = 0;
				if (spvc_compiler_type_struct_member_matrix_stride(compiler, type, i, &stride) == SPVC_SUCCESS)
					m.matrix_stride = stride;
				out.members.push_back(m);
			}
		}
	}
	return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] error mapping
// ---------------------------------------------------------------------------------------------------------------------

// shaderc reports "FILE:LINE: error: …", where FILE is a stage name (from #line) or quokka:vertex/fragment.
Error mapCompileError(const Error& error, const Generated& gen, const std::string& effect_name, const std::string& self)
{
	std::istringstream in(error.message);
	std::string line, out;
	std::getline(in, line); // "cannot compile … shader '…':"
	while (std::getline(in, line))
	{
		const size_t colon = line.find(':');
		size_t c2 = colon == std::string::npos ? colon : line.find(':', colon + 1);
		// stage names may not contain ':' but "quokka:vertex" does: try the generated name first
		std::string file;
		size_t number_at = std::string::npos;
		if (line.rfind(self + ":", 0) == 0)
		{
			file = self;
			number_at = self.size() + 1;
		}
		else if (colon != std::string::npos)
		{
			file = line.substr(0, colon);
			number_at = colon + 1;
		}
		(void)c2;
		size_t end = number_at;
		while (end != std::string::npos && end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])))
			++end;
		if (number_at == std::string::npos || end == number_at || end >= line.size() || line[end] != ':')
		{
			if (line.find("compilation terminated") == std::string::npos && !line.empty() && line[0] != ' ')
				out += line + "\n";
			continue;
		}
		const uint32_t number = uint32_t(std::stoul(line.substr(number_at, end - number_at)));
		std::string message = line.substr(end + 1);
		while (!message.empty() && message[0] == ' ')
			message.erase(0, 1);
		auto it = gen.files.find(file);
		if (it == gen.files.end())
		{
			out += "effect '" + effect_name + "', generated " + self.substr(7) + " shader line " +
			       std::to_string(number) + ": " + message + "\n";
			continue;
		}
		out += "effect '" + effect_name + "', stage '" + it->second->name() + "' line " + std::to_string(number) +
		       ": " + message + "\n";
		std::istringstream body(it->second->body());
		std::string src;
		for (uint32_t n = 1; std::getline(body, src); ++n)
			if (n == number)
			{
				char gutter[32];
				std::snprintf(gutter, sizeof(gutter), "  %5u | ", number);
				out += gutter + src + "\n";
				break;
			}
	}
	if (!out.empty() && out.back() == '\n')
		out.pop_back();
	if (out.empty())
		out = "effect '" + effect_name + "': " + error.message;
	return makeError(ErrorCode::ShaderCompile, out);
}

Result<gpu::SpirvCode> compileGenerated(gpu::ShaderCompiler& shaders, const Generated& gen, StageKind kind,
                                        const std::string& effect_name)
{
	const bool vs = kind == StageKind::Vertex;
	const std::string self = std::string("quokka:") + (vs ? "vertex" : "fragment");
	auto code = shaders.compile({gen.glsl, vs ? gpu::ShaderStage::Vertex : gpu::ShaderStage::Fragment, self});
	if (!code.ok())
		return mapCompileError(code.error(), gen, effect_name, self);
	return code.value();
}

std::vector<Slot> assignLocations(const std::vector<std::string>& names, const Gathered& g)
{
	std::vector<Slot> slots;
	uint32_t location = 0;
	for (const std::string& n : names)
	{
		const Field* f = const_cast<Gathered&>(g).find(n);
		slots.push_back({n, f->port.type, location, f->port.interp});
		location += f->port.type.locations();
	}
	return slots;
}

} // namespace

// ---------------------------------------------------------------------------------------------------------------------
// [SECTION] the two-phase compile
// ---------------------------------------------------------------------------------------------------------------------

const UniformMember* EffectInterface::uniform(const std::string& name) const
{
	for (const UniformMember& m : uniforms)
		if (m.name == name)
			return &m;
	return nullptr;
}

const InterfaceVariable* EffectInterface::attribute(const std::string& name) const
{
	for (const InterfaceVariable& a : attributes)
		if (a.name == name)
			return &a;
	return nullptr;
}

Hash128 EffectCompiler::cacheKey(const Effect& effect, const FragmentOutputs& outputs, PathVariant path)
{
	XXH3_state_t* state = XXH3_createState();
	XXH3_128bits_reset(state);
	const uint32_t header[2] = {kGeneratorVersion, uint32_t(path)};
	XXH3_128bits_update(state, header, sizeof(header));
	XXH3_128bits_update(state, &effect.id(), sizeof(Hash128));
	for (const std::string& c : outputs.colors)
	{
		const uint64_t n = c.size();
		XXH3_128bits_update(state, &n, sizeof(n));
		XXH3_128bits_update(state, c.data(), c.size());
	}
	XXH128_hash_t h = XXH3_128bits_digest(state);
	XXH3_freeState(state);
	return {h.high64, h.low64};
}

uint64_t EffectCompiler::cacheHits() const
{
	std::lock_guard lock(mutex_);
	return hits_;
}

uint64_t EffectCompiler::compiles() const
{
	std::lock_guard lock(mutex_);
	return compiles_;
}

CompiledEffectPtr EffectCompiler::cached(const Hash128& key) const
{
	std::lock_guard lock(mutex_);
	auto it = cache_.find(key);
	return it == cache_.end() ? nullptr : it->second;
}

Result<CompiledEffectPtr> EffectCompiler::compile(const Effect& effect, const FragmentOutputs& outputs,
                                                  PathVariant path)
{
	const Hash128 key = cacheKey(effect, outputs, path);
	{
		std::lock_guard lock(mutex_);
		if (auto it = cache_.find(key); it != cache_.end())
		{
			++hits_;
			return it->second;
		}
	}
	const std::string& ename = effect.name();
	Gathered fs = gather(effect, StageKind::Fragment);
	Gathered vs = gather(effect, StageKind::Vertex);

	// ---- Phase 1: fragment shader, outputs fixed by the framebuffer; reflect the active inputs.
	for (const std::string& out : outputs.colors)
		if (!fs.find(out))
		{
			// Not touched by any fragment stage: passed through from the vertex side (FShade semantics).
			const Field* from_vs = vs.find(out);
			if (!from_vs)
				return makeError(ErrorCode::InvalidArgument,
				                 "effect '" + ename + "': no stage writes the framebuffer output '" + out + "'");
			fs.state.push_back({from_vs->port, false});
			fs.first_reads.push_back(out);
		}
	std::vector<Slot> fs_outputs;
	for (size_t i = 0; i < outputs.colors.size(); ++i)
	{
		const Field* f = fs.find(outputs.colors[i]);
		if (f->port.type.isInteger() || f->port.type.isMatrix())
			return makeError(ErrorCode::Unsupported, "effect '" + ename + "': output '" + f->port.name + "' of type " +
			                                             typeName(f->port.type) + " cannot feed a colour attachment");
		fs_outputs.push_back({f->port.name, f->port.type, uint32_t(i)});
	}
	ShaderPlan fs_plan{StageKind::Fragment, assignLocations(fs.first_reads, fs), fs_outputs, "",
	                   fs.uniforms,         UniformMode::PerUniformBlocks,       fs.textures};
	Generated fs_gen = generate(fs, fs_plan, ename);
	auto fs_code = compileGenerated(*shaders_, fs_gen, StageKind::Fragment, ename);
	if (!fs_code.ok())
		return fs_code.error();
	auto fs_refl = reflectActive(*fs_code.value());
	if (!fs_refl.ok())
		return fs_refl.error();
	std::vector<Slot> varyings;
	for (const Slot& s : fs_plan.inputs)
		if (fs_refl->input_locations.count(s.location))
			varyings.push_back(s);

	// ---- Phase 2: vertex shader producing exactly the active varyings.
	for (const Slot& v : varyings)
	{
		Field* f = vs.find(v.name);
		if (!f)
		{
			// Implicit attribute: read by the fragment side, written by no vertex stage.
			vs.state.push_back({Port{v.name, v.type, v.interp, Builtin::None}, false});
			vs.first_reads.push_back(v.name);
		}
		else if (!(f->port.type == v.type))
			return makeError(ErrorCode::InvalidArgument, "effect '" + ename + "': '" + v.name + "' is " +
			                                                 typeName(f->port.type) + " in the vertex stages but " +
			                                                 typeName(v.type) + " in the fragment stages");
	}
	std::string position;
	for (const Field& f : vs.state)
		if (f.port.builtin == Builtin::Position)
			position = f.port.name;
	if (position.empty())
	{
		const Field* p = vs.find("Positions");
		if (!p || !(p->port.type == V4f))
			return makeError(ErrorCode::InvalidArgument, "effect '" + ename +
			                                                 "': no vertex stage writes a Position builtin port (and "
			                                                 "there is no V4f 'Positions' to use instead)");
		position = "Positions";
	}
	if (!vs.find(position)->written &&
	    std::find(vs.first_reads.begin(), vs.first_reads.end(), position) == vs.first_reads.end())
		vs.first_reads.push_back(position);
	ShaderPlan vs_plan{StageKind::Vertex, assignLocations(vs.first_reads, vs), varyings,   position,
	                   vs.uniforms,       UniformMode::PerUniformBlocks,       vs.textures};
	Generated vs_gen = generate(vs, vs_plan, ename);
	auto vs_code = compileGenerated(*shaders_, vs_gen, StageKind::Vertex, ename);
	if (!vs_code.ok())
		return vs_code.error();
	auto vs_refl = reflectActive(*vs_code.value());
	if (!vs_refl.ok())
		return vs_refl.error();

	// ---- Active uniforms/textures over both stages, in first-appearance order; final compiles with one block.
	auto active_in = [](const std::vector<std::string>& plan_names, const std::string& name, const Reflected& r)
	{
		const auto it = std::find(plan_names.begin(), plan_names.end(), name);
		return it != plan_names.end() &&
		       r.uniform_bindings.count(kAnalysisUniformBinding + uint32_t(it - plan_names.begin()));
	};
	auto texture_in = [](const std::vector<TextureDecl>& plan_textures, const std::string& name, const Reflected& r)
	{
		for (size_t i = 0; i < plan_textures.size(); ++i)
			if (plan_textures[i].name == name)
				return r.texture_bindings.count(kAnalysisTextureBinding + uint32_t(i)) != 0;
		return false;
	};
	std::vector<std::string> uniforms;
	for (const StagePtr& s : effect.stages())
		for (const std::string& u : s->uniformNames())
			if ((active_in(fs_plan.uniforms, u, *fs_refl) || active_in(vs_plan.uniforms, u, *vs_refl)) &&
			    std::find(uniforms.begin(), uniforms.end(), u) == uniforms.end())
				uniforms.push_back(u);
	std::vector<TextureDecl> textures;
	for (const StagePtr& s : effect.stages())
		for (const TextureDecl& t : s->textures())
			if ((texture_in(fs_plan.textures, t.name, *fs_refl) || texture_in(vs_plan.textures, t.name, *vs_refl)) &&
			    std::none_of(textures.begin(), textures.end(), [&](const TextureDecl& x) { return x.name == t.name; }))
				textures.push_back(t);
	std::vector<Slot> attributes;
	for (const Slot& s : vs_plan.inputs)
		if (vs_refl->input_locations.count(s.location))
			attributes.push_back(s);
	const bool fs_reads_uniforms =
	    std::any_of(uniforms.begin(), uniforms.end(),
	                [&](const std::string& u) { return active_in(fs_plan.uniforms, u, *fs_refl); });
	const bool atlas = isAtlasVariant(path);
	const uint32_t texture_words = textureHeaderWords(path);
	if (texture_words)
		for (const TextureDecl& t : textures)
			if (t.kind != TexKind::Sampler2D)
				return makeError(ErrorCode::Unsupported,
				                 "effect '" + ename + "': the texture '" + t.name + "' is not a 2D texture, which " +
				                     (atlas ? "an atlas" : "a bindless table") + " cannot hold");
	const bool fs_reads_header =
	    fs_reads_uniforms || (texture_words && std::any_of(textures.begin(), textures.end(),
	                                                       [&](const TextureDecl& t)
	                                                       { return texture_in(fs_plan.textures, t.name, *fs_refl); }));

	auto dead = [&](ShaderPlan& plan)
	{
		for (const std::string& u : plan.uniforms)
			if (std::find(uniforms.begin(), uniforms.end(), u) == uniforms.end())
				plan.dead_uniforms.push_back(u);
		for (const TextureDecl& t : plan.textures)
			if (std::none_of(textures.begin(), textures.end(), [&](const TextureDecl& x) { return x.name == t.name; }))
				plan.dead_textures.push_back(t);
	};
	dead(fs_plan);
	dead(vs_plan);
	fs_plan.inputs = varyings;
	fs_plan.uniforms = uniforms;
	fs_plan.uniform_mode = UniformMode::OneBlock;
	fs_plan.textures = textures;
	vs_plan.inputs = attributes;
	vs_plan.uniforms = uniforms;
	vs_plan.uniform_mode = UniformMode::OneBlock;
	vs_plan.textures = textures;
	if (path != PathVariant::Classic)
	{
		vs_plan.path = fs_plan.path = path;
		vs_plan.heap_attributes = attributes;
		vs_plan.inputs.clear();
		uint32_t location = 0;
		for (const Slot& v : varyings)
			location += v.type.locations();
		vs_plan.heap_draw_varying = fs_plan.heap_draw_varying = fs_reads_header;
		vs_plan.heap_draw_location = fs_plan.heap_draw_location = location;
		vs_plan.heap_header_words = fs_plan.heap_header_words =
		    uint32_t(uniforms.size() + attributes.size()) + 2 + texture_words * uint32_t(textures.size());
	}
	Generated fs_final = generate(fs, fs_plan, ename);
	Generated vs_final = generate(vs, vs_plan, ename);
	auto fs_spv = compileGenerated(*shaders_, fs_final, StageKind::Fragment, ename);
	if (!fs_spv.ok())
		return fs_spv.error();
	auto vs_spv = compileGenerated(*shaders_, vs_final, StageKind::Vertex, ename);
	if (!vs_spv.ok())
		return vs_spv.error();

	auto result = std::make_shared<CompiledEffect>();
	result->key = key;
	result->path = path;
	result->vertex = vs_spv.value();
	result->fragment = fs_spv.value();
	result->vertex_glsl = vs_final.glsl;
	result->fragment_glsl = fs_final.glsl;
	EffectInterface& iface = result->iface;
	if (path != PathVariant::Classic)
	{
		const uint32_t u = uint32_t(uniforms.size());
		for (uint32_t i = 0; i < attributes.size(); ++i)
			iface.attributes.push_back({attributes[i].name, attributes[i].type, u + i});
		for (uint32_t i = 0; i < u; ++i)
			iface.uniforms.push_back({uniforms[i], *UniformScope::lookup(uniforms[i]), i, 0});
		iface.header_words = vs_plan.heap_header_words;
	}
	else
		for (const Slot& s : attributes)
			iface.attributes.push_back({s.name, s.type, s.location});
	for (const Slot& s : varyings)
		iface.varyings.push_back({s.name, s.type, s.location});
	for (const Slot& s : fs_outputs)
		iface.outputs.push_back({s.name, s.type, s.location});
	const uint32_t texture_base = texture_words                  ? uint32_t(uniforms.size() + attributes.size()) + 2
	                              : path == PathVariant::Classic ? 1
	                                                             : kHeapTextureBinding;
	for (size_t i = 0; i < textures.size(); ++i)
		iface.textures.push_back(
		    {textures[i].name, textures[i].kind, uint32_t(texture_base + std::max(texture_words, 1u) * i)});
	if (!uniforms.empty() && path == PathVariant::Classic)
	{
		// Both stages declare the same block; reflect it where it survived optimisation.
		auto refl = reflectActive(*vs_spv.value());
		if (!refl.ok())
			return refl.error();
		if (refl->members.empty())
		{
			refl = reflectActive(*fs_spv.value());
			if (!refl.ok())
				return refl.error();
		}
		if (refl->members.size() != uniforms.size())
			return makeError(ErrorCode::Unsupported, "effect '" + ename + "': uniform block reflection mismatch");
		for (size_t i = 0; i < uniforms.size(); ++i)
		{
			UniformMember m = refl->members[i];
			m.name = uniforms[i];
			m.type = *UniformScope::lookup(uniforms[i]);
			iface.uniforms.push_back(m);
		}
		iface.uniform_block_size = refl->block_size;
	}

	std::lock_guard lock(mutex_);
	++compiles_;
	auto [it, inserted] = cache_.emplace(key, std::move(result));
	return it->second;
}

} // namespace quokka::fx
