// materials.cpp — glTF materials as effects, uniforms, textures and pipeline state: one effect per feature
// combination (topology, vertex colours, base colour texture, alpha mode, emissive factor and texture), cached per
// import; images decoded to RGBA8 once per image.
#include "internal.hpp"

#include <algorithm>
#include <cmath>

#include <quokka/fx/stock.hpp>
#include <quokka/fx/uniform_scope.hpp>

namespace quokka::gltf::detail
{
namespace
{

enum AlphaMode : int
{
	kOpaque = 0,
	kMask = 1,
	kBlend = 2,
};

int alphaMode(const tinygltf::Material& m)
{
	return m.alphaMode == "MASK" ? kMask : m.alphaMode == "BLEND" ? kBlend : kOpaque;
}

/// KHR_texture_transform of a texture reference as uv' = T · R · S · (u, v, 1); `tex_coord` is overridden when the
/// extension names its own set.
math::M33f textureTransform(const tinygltf::ExtensionMap& extensions, int& tex_coord)
{
	auto it = extensions.find("KHR_texture_transform");
	if (it == extensions.end() || !it->second.IsObject())
		return math::M33f(1.0f);
	const tinygltf::Value& ext = it->second;
	auto pair = [&](const char* key, float fallback)
	{
		math::V2f v(fallback);
		if (ext.Has(key) && ext.Get(key).IsArray() && ext.Get(key).ArrayLen() == 2)
			for (int i = 0; i < 2; ++i)
				v[i] = float(ext.Get(key).Get(i).GetNumberAsDouble());
		return v;
	};
	const math::V2f offset = pair("offset", 0.0f), scale = pair("scale", 1.0f);
	const float rotation = ext.Has("rotation") ? float(ext.Get("rotation").GetNumberAsDouble()) : 0.0f;
	if (ext.Has("texCoord") && ext.Get("texCoord").IsInt())
		tex_coord = ext.Get("texCoord").GetNumberAsInt();
	const float c = std::cos(rotation), s = std::sin(rotation);
	// Column-major (glm): T = [1 0 ox; 0 1 oy; 0 0 1], R = [c s 0; −s c 0; 0 0 1], S = diag(sx, sy, 1).
	const math::M33f t(1, 0, 0, 0, 1, 0, offset.x, offset.y, 1);
	const math::M33f r(c, -s, 0, s, c, 0, 0, 0, 1);
	const math::M33f sc(scale.x, 0, 0, 0, scale.y, 0, 0, 0, 1);
	return t * r * sc;
}

scene::SamplerState samplerState(const tinygltf::Sampler& s)
{
	scene::SamplerState out;
	out.filter = s.magFilter == TINYGLTF_TEXTURE_FILTER_NEAREST ? scene::Filter::Nearest : scene::Filter::Linear;
	out.address = s.wrapS == TINYGLTF_TEXTURE_WRAP_CLAMP_TO_EDGE     ? scene::AddressMode::ClampToEdge
	              : s.wrapS == TINYGLTF_TEXTURE_WRAP_MIRRORED_REPEAT ? scene::AddressMode::MirroredRepeat
	                                                                 : scene::AddressMode::Repeat;
	out.mipmaps = !(s.minFilter == TINYGLTF_TEXTURE_FILTER_NEAREST || s.minFilter == TINYGLTF_TEXTURE_FILTER_LINEAR);
	return out;
}

fx::StagePtr stage(fx::Stage&& s)
{
	return std::make_shared<const fx::Stage>(std::move(s));
}

} // namespace

TextureRef materialTexture(const tinygltf::Model& model, int material, int which)
{
	TextureRef ref;
	if (material < 0 || size_t(material) >= model.materials.size())
		return ref;
	const tinygltf::Material& m = model.materials[size_t(material)];
	const tinygltf::TextureInfo& info = which == 0 ? m.pbrMetallicRoughness.baseColorTexture : m.emissiveTexture;
	if (info.index < 0)
		return ref;
	ref.texture = info.index;
	ref.tex_coord = std::max(info.texCoord, 0);
	ref.transform = textureTransform(info.extensions, ref.tex_coord);
	return ref;
}

Result<fx::Effect> Materials::effect(const PrimitiveData& p, int alpha_mode, bool emissive)
{
	const uint32_t key = uint32_t(p.topology) | uint32_t(p.vertex_colors) << 2 | uint32_t(p.base_textured) << 3 |
	                     uint32_t(alpha_mode) << 4 | uint32_t(emissive) << 6 | uint32_t(p.emissive_textured) << 7;
	if (auto it = effects_.find(key); it != effects_.end())
		return it->second;
	QUOKKA_TRY(fx::UniformScope::declare("EmissiveColor", fx::V3f));
	QUOKKA_TRY(fx::UniformScope::declare("AlphaCutoff", fx::F32));

	std::vector<fx::StagePtr> stages;
	if (p.topology == Topology::Triangles)
		stages.push_back(fx::stock::trafo());
	else
		stages.push_back(stage(fx::Stage::vertex("gltf.unlitTrafo")
		                           .reads({{"Positions", fx::V4f}})
		                           .writes({{"Positions", fx::V4f, fx::Interp::Smooth, fx::Builtin::Position},
		                                    {"WorldPositions", fx::V4f}})
		                           .uniforms({"ModelTrafo", "ViewProjTrafo"})
		                           .glsl(R"(	vec4 wp = ModelTrafo * s.Positions;
	s.WorldPositions = wp;
	s.Positions = ViewProjTrafo * wp;)")));
	if (p.topology == Topology::Points)
		stages.push_back(stage(fx::Stage::vertex("gltf.pointSize")
		                           .writes({{"PointSize", fx::F32, fx::Interp::Smooth, fx::Builtin::PointSize}})
		                           .define("QK_POINT_SIZE", std::to_string(options_.point_size))
		                           .glsl("\ts.PointSize = QK_POINT_SIZE;")));
	if (p.vertex_colors)
		stages.push_back(stage(fx::Stage::fragment("gltf.baseColor")
		                           .reads({{"Colors", fx::V4f}})
		                           .writes({{"Colors", fx::V4f}})
		                           .uniforms({"ConstantColor"})
		                           .glsl("\ts.Colors = ConstantColor * s.Colors;")));
	else
		stages.push_back(fx::stock::constantColor());
	if (p.base_textured)
		stages.push_back(fx::stock::diffuseTexture());
	if (alpha_mode == kOpaque)
		stages.push_back(stage(fx::Stage::fragment("gltf.opaque")
		                           .reads({{"Colors", fx::V4f}})
		                           .writes({{"Colors", fx::V4f}})
		                           .glsl("\ts.Colors.a = 1.0;")));
	else if (alpha_mode == kMask)
		stages.push_back(stage(fx::Stage::fragment("gltf.alphaMask")
		                           .reads({{"Colors", fx::V4f}})
		                           .writes({{"Colors", fx::V4f}})
		                           .uniforms({"AlphaCutoff"})
		                           .glsl("\tif (s.Colors.a < AlphaCutoff)\n\t\tdiscard;\n\ts.Colors.a = 1.0;")));
	if (p.topology == Topology::Triangles)
		stages.push_back(fx::stock::simpleLighting());
	if (emissive && p.emissive_textured)
		stages.push_back(stage(fx::Stage::fragment("gltf.emissiveTexture")
		                           .reads({{"Colors", fx::V4f}, {"EmissiveCoordinates", fx::V2f}})
		                           .writes({{"Colors", fx::V4f}})
		                           .uniforms({"EmissiveColor"})
		                           .texture("EmissiveTexture")
		                           .glsl("\ts.Colors.rgb += EmissiveColor * texture(EmissiveTexture, "
		                                 "s.EmissiveCoordinates).rgb;")));
	else if (emissive)
		stages.push_back(stage(fx::Stage::fragment("gltf.emissive")
		                           .reads({{"Colors", fx::V4f}})
		                           .writes({{"Colors", fx::V4f}})
		                           .uniforms({"EmissiveColor"})
		                           .glsl("\ts.Colors.rgb += EmissiveColor;")));
	auto composed = fx::composeEffect(cat("gltf material ", key), std::move(stages));
	QUOKKA_TRY(composed);
	effects_.emplace(key, composed.value());
	return composed;
}

Result<adaptive::aval<scene::TextureData>> Materials::image(int image_index)
{
	if (auto it = images_.find(image_index); it != images_.end())
		return it->second;
	const std::string what = cat("image ", image_index);
	if (image_index < 0 || size_t(image_index) >= model_.images.size())
		return fail(ErrorCode::InvalidArgument, cat(what, " does not exist"));
	const tinygltf::Image& image = model_.images[size_t(image_index)];
	if (image.image.empty() || image.width <= 0 || image.height <= 0)
		return fail(ErrorCode::InvalidArgument,
		            cat(what, " ('", image.uri.size() > 64 ? std::string("data") : image.uri,
		                "') could not be loaded or decoded"));
	const int components = image.component;
	const int bytes = image.bits / 8;
	const size_t pixels = size_t(image.width) * size_t(image.height);
	if (components < 1 || components > 4 || (bytes != 1 && bytes != 2) ||
	    image.image.size() != pixels * size_t(components) * size_t(bytes))
		return fail(ErrorCode::Unsupported, cat(what, ": ", components, " channels of ", image.bits, " bits"));
	auto rgba = std::make_shared<std::vector<uint8_t>>(pixels * 4);
	for (size_t i = 0; i < pixels; ++i)
	{
		uint8_t c[4] = {0, 0, 0, 255};
		for (int k = 0; k < components; ++k)
		{
			// 16-bit channels are little-endian in tinygltf's buffer; keep the high byte.
			const size_t at = (i * size_t(components) + size_t(k)) * size_t(bytes);
			c[k] = bytes == 1 ? image.image[at] : image.image[at + 1];
		}
		if (components == 1 || components == 2) // grey (+ alpha)
		{
			c[3] = components == 2 ? c[1] : 255;
			c[1] = c[2] = c[0];
		}
		std::copy_n(c, 4, &(*rgba)[i * 4]);
	}
	scene::TextureData data;
	data.width = uint32_t(image.width);
	data.height = uint32_t(image.height);
	data.rgba8 = std::move(rgba);
	data.srgb = true;
	auto value = adaptive::constant(std::move(data));
	images_.emplace(image_index, value);
	return value;
}

Result<void> Materials::bindTexture(int texture, const char* name, scene::RenderObject& o)
{
	if (texture < 0 || size_t(texture) >= model_.textures.size())
		return fail(ErrorCode::InvalidArgument, cat("texture ", texture, " does not exist"));
	const tinygltf::Texture& t = model_.textures[size_t(texture)];
	if (t.source < 0)
		return fail(ErrorCode::Unsupported,
		            cat("texture ", texture, " has no source image (only an extension's image format, not supported)"));
	if (t.sampler >= 0 && size_t(t.sampler) >= model_.samplers.size())
		return fail(ErrorCode::InvalidArgument, cat("texture ", texture, ": sampler ", t.sampler, " does not exist"));
	auto data = image(t.source);
	QUOKKA_TRY(data);
	o.textures[name] = data.value();
	if (t.sampler >= 0)
		o.samplers[name] = samplerState(model_.samplers[size_t(t.sampler)]);
	return {};
}

Result<void> Materials::apply(const PrimitiveData& p, scene::RenderObject& o)
{
	static const tinygltf::Material kDefault; // the specification's default material
	const tinygltf::Material& m = p.material >= 0 ? model_.materials[size_t(p.material)] : kDefault;
	const std::vector<double>& f = m.pbrMetallicRoughness.baseColorFactor;
	const math::V4f color =
	    f.size() == 4 ? math::V4f(float(f[0]), float(f[1]), float(f[2]), float(f[3])) : math::V4f(1.0f);
	o.uniforms["ConstantColor"] = scene::uniform(color);
	math::V3f emissive(0.0f);
	if (m.emissiveFactor.size() == 3)
		emissive = math::V3f(float(m.emissiveFactor[0]), float(m.emissiveFactor[1]), float(m.emissiveFactor[2]));
	const bool has_emissive = emissive != math::V3f(0.0f);
	if (has_emissive)
		o.uniforms["EmissiveColor"] = scene::uniform(emissive);
	const int mode = alphaMode(m);
	if (mode == kMask)
		o.uniforms["AlphaCutoff"] = scene::uniform(float(m.alphaCutoff));

	if (p.base_textured)
		QUOKKA_TRY(bindTexture(m.pbrMetallicRoughness.baseColorTexture.index, "DiffuseColorTexture", o));
	PrimitiveData used = p;
	used.emissive_textured = p.emissive_textured && has_emissive;
	if (used.emissive_textured)
		QUOKKA_TRY(bindTexture(m.emissiveTexture.index, "EmissiveTexture", o));
	else
		o.attributes.erase("EmissiveCoordinates");
	auto e = effect(used, mode, has_emissive);
	QUOKKA_TRY(e);
	o.effect = e.value();

	o.state.topology = adaptive::constant(p.topology == Topology::Triangles ? VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST
	                                      : p.topology == Topology::Lines   ? VK_PRIMITIVE_TOPOLOGY_LINE_LIST
	                                                                        : VK_PRIMITIVE_TOPOLOGY_POINT_LIST);
	if (p.topology == Topology::Triangles && !m.doubleSided)
		o.state.cull_mode = adaptive::constant(VkCullModeFlags(VK_CULL_MODE_BACK_BIT));
	if (mode == kBlend)
	{
		o.state.default_blend = adaptive::constant(scene::BlendState::alpha());
		o.state.depth_write = adaptive::constant(false);
	}
	return {};
}

} // namespace quokka::gltf::detail
