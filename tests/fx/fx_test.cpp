// Effects: composition rules, ids, the two-phase compile with pruning, error mapping, and a composed effect
// rendered on the GPU through its reflected interface; the per-instance uniform rewrite.
#include "../gpu/gpu_fixture.hpp"

#include <cstring>

#include <quokka/fx/compile.hpp>
#include <quokka/fx/effect.hpp>
#include <quokka/fx/instancing.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/fx/uniform_scope.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/gpu/pipeline.hpp>

namespace quokka::fx::test
{

using gpu::test::GpuTest;

std::vector<std::string> names(const std::vector<InterfaceVariable>& vars)
{
	std::vector<std::string> out;
	for (const auto& v : vars)
		out.push_back(v.name);
	return out;
}

TEST(UniformScope, IsPreSeededAndRejectsConflictingRedeclarations)
{
	EXPECT_EQ(UniformScope::lookup("ModelTrafo"), M44f);
	EXPECT_EQ(UniformScope::lookup("ModelViewProjTrafoInv"), M44f);
	EXPECT_EQ(UniformScope::lookup("NormalMatrix"), M33f);
	EXPECT_EQ(UniformScope::lookup("CameraLocation"), V3f);
	EXPECT_FALSE(UniformScope::lookup("NoSuchUniform"));
	ASSERT_TRUE(UniformScope::declare("TestTint", V4f).ok());
	ASSERT_TRUE(UniformScope::declare("TestTint", V4f).ok()); // same type: no-op
	auto clash = UniformScope::declare("TestTint", V3f);
	ASSERT_FALSE(clash.ok());
	EXPECT_NE(clash.error().message.find("V4f"), std::string::npos) << clash.error().message;
	EXPECT_FALSE(UniformScope::declare("_reserved", F32).ok());
	EXPECT_FALSE(UniformScope::declare("gl_Thing", F32).ok());
}

TEST(Effect, IdsAreContentHashesIndependentOfNames)
{
	auto a = Stage::fragment("a").writes({{"Colors", V4f}}).glsl("s.Colors = vec4(1);");
	auto b = Stage::fragment("renamed").writes({{"Colors", V4f}}).glsl("s.Colors = vec4(1);");
	auto c = Stage::fragment("a").writes({{"Colors", V4f}}).glsl("s.Colors = vec4(0);");
	EXPECT_EQ(a.id(), b.id());
	EXPECT_NE(a.id(), c.id());
	auto d = Stage::fragment("a").writes({{"Colors", V4f}}).glsl("s.Colors = vec4(1);").define("K", "1");
	EXPECT_NE(a.id(), d.id()) << "defines are part of the id";
	auto e1 = compose("e", *stock::trafo(), a);
	auto e2 = compose("other name", *stock::trafo(), b);
	auto e3 = compose("e", a, *stock::trafo());
	ASSERT_TRUE(e1.ok() && e2.ok() && e3.ok());
	EXPECT_EQ(e1->id(), e2->id());
	EXPECT_NE(e1->id(), e3->id()) << "order-sensitive";
	auto nested = compose("nested", e1.value(), stock::vertexColors());
	ASSERT_TRUE(nested.ok());
	EXPECT_EQ(nested->stages().size(), 3u);
}

TEST(Effect, CompositionRejectsConflictingPortsAndUnknownUniforms)
{
	auto v3 = Stage::fragment("v3").reads({{"Colors", V3f}}).writes({{"Colors", V3f}}).glsl("");
	auto bad = compose("bad", *stock::vertexColors(), v3);
	ASSERT_FALSE(bad.ok());
	EXPECT_NE(bad.error().message.find("'Colors'"), std::string::npos) << bad.error().message;
	EXPECT_NE(bad.error().message.find("stage 'v3'"), std::string::npos) << bad.error().message;

	auto unknown = compose("u", Stage::fragment("u").writes({{"Colors", V4f}}).uniforms({"Undeclared"}).glsl(""));
	ASSERT_FALSE(unknown.ok());
	EXPECT_NE(unknown.error().message.find("Undeclared"), std::string::npos);

	auto tex_clash = compose(
	    "t", Stage::fragment("t").reads({{"Albedo", V4f}}).writes({{"Colors", V4f}}).texture("Albedo").glsl(""));
	ASSERT_FALSE(tex_clash.ok());
	EXPECT_FALSE(compose("empty").ok());
}

using EffectCompile = GpuTest;

TEST_F(EffectCompile, PrunesWhatTheFramebufferDoesNotConsume)
{
	EffectCompiler compiler(device().shaderCompiler());
	// trafo writes WorldPositions and Normals, but constant colour reads neither: both varyings, the Normals attribute
	// and the ModelTrafo and NormalMatrix uniforms must disappear.
	auto effect = compose("trafo+constant", stock::trafo(), stock::constantColor());
	ASSERT_TRUE(effect.ok()) << effect.error().message;
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	const EffectInterface& i = compiled.value()->iface;
	EXPECT_EQ(names(i.attributes), (std::vector<std::string>{"Positions"}));
	EXPECT_TRUE(i.varyings.empty());
	std::vector<std::string> uniforms;
	for (const auto& u : i.uniforms)
		uniforms.push_back(u.name);
	// (ModelTrafo only feeds WorldPositions, which nothing reads: it goes too.)
	EXPECT_EQ(uniforms, (std::vector<std::string>{"ModelViewProjTrafo", "ConstantColor"}));
	EXPECT_EQ(i.uniform("ModelViewProjTrafo")->offset, 0u);
	EXPECT_EQ(i.uniform("ConstantColor")->offset, 64u);
	EXPECT_EQ(i.uniform("ModelViewProjTrafo")->matrix_stride, 16u);
	EXPECT_EQ(i.uniform_block_size, 80u);
	ASSERT_EQ(i.outputs.size(), 1u);
	EXPECT_EQ(i.outputs[0].name, "Colors");
	// The body still names NormalMatrix, so it stays declared — as a dead private global, not a block member.
	EXPECT_NE(compiled.value()->vertex_glsl.find("mat3 NormalMatrix; // inactive"), std::string::npos);
	auto reflected = gpu::reflectSpirv(*compiled.value()->vertex, VK_SHADER_STAGE_VERTEX_BIT);
	ASSERT_TRUE(reflected.ok());
	ASSERT_EQ(reflected->bindings.size(), 1u) << "only the uniform block survives";
}

TEST_F(EffectCompile, LightingKeepsItsVaryingsAndVertexColoursBecomeAnImplicitAttribute)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("lit", stock::trafo(), stock::vertexColors(), stock::simpleLighting());
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	const EffectInterface& i = compiled.value()->iface;
	auto attrs = names(i.attributes);
	std::sort(attrs.begin(), attrs.end());
	EXPECT_EQ(attrs, (std::vector<std::string>{"Colors", "Normals", "Positions"}));
	auto vars = names(i.varyings);
	std::sort(vars.begin(), vars.end());
	EXPECT_EQ(vars, (std::vector<std::string>{"Colors", "Normals", "WorldPositions"}));
	EXPECT_TRUE(i.uniform("NormalMatrix") && i.uniform("LightLocation"));
	EXPECT_EQ(i.uniform("NormalMatrix")->type, M33f);
	EXPECT_EQ(i.uniform("NormalMatrix")->matrix_stride, 16u) << "std140 mat3 columns are vec4-padded";
	// A second request hits the cache; another output set does not.
	auto again = compiler.compile(effect.value(), {});
	ASSERT_TRUE(again.ok());
	EXPECT_EQ(again.value().get(), compiled.value().get());
	EXPECT_EQ(compiler.cacheHits(), 1u);
}

TEST_F(EffectCompile, TexturedEffectReflectsItsSampler)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("tex", stock::trafo(), stock::vertexColors(), stock::diffuseTexture());
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	const EffectInterface& i = compiled.value()->iface;
	ASSERT_EQ(i.textures.size(), 1u);
	EXPECT_EQ(i.textures[0].name, "DiffuseColorTexture");
	EXPECT_EQ(i.textures[0].binding, 1u);
	EXPECT_TRUE(i.attribute("DiffuseColorCoordinates"));
	auto pipeline_check = gpu::reflectSpirv(*compiled.value()->fragment, VK_SHADER_STAGE_FRAGMENT_BIT);
	ASSERT_TRUE(pipeline_check.ok());
	bool sampler = false;
	for (const auto& b : pipeline_check->bindings)
		sampler |= b.binding == 1 && b.type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
	EXPECT_TRUE(sampler);
}

TEST_F(EffectCompile, ErrorsNameTheEffectTheStageAndTheLine)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto broken = Stage::fragment("tint")
	                  .reads({{"Colors", V4f}})
	                  .writes({{"Colors", V4f}})
	                  .glsl("\tvec4 c = s.Colors;\n\tc.rgb *= not_declared;\n\ts.Colors = c;");
	auto effect = compose("broken effect", stock::trafo(), broken);
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_FALSE(compiled.ok());
	EXPECT_EQ(compiled.error().code, ErrorCode::ShaderCompile);
	const std::string& m = compiled.error().message;
	EXPECT_NE(m.find("effect 'broken effect', stage 'tint' line 2"), std::string::npos) << m;
	EXPECT_NE(m.find("not_declared"), std::string::npos) << m;
	EXPECT_NE(m.find("    2 | \tc.rgb *= not_declared;"), std::string::npos) << m;
}

TEST_F(EffectCompile, MissingOutputAndMissingPositionAreClearErrors)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("e", stock::trafo(), stock::constantColor());
	ASSERT_TRUE(effect.ok());
	auto no_output = compiler.compile(effect.value(), FragmentOutputs{{"Colors", "Normals2"}});
	ASSERT_FALSE(no_output.ok());
	EXPECT_NE(no_output.error().message.find("'Normals2'"), std::string::npos);
	auto no_vertex = compose("fs only", stock::constantColor());
	ASSERT_TRUE(no_vertex.ok());
	auto r = compiler.compile(no_vertex.value(), {});
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("Position"), std::string::npos) << r.error().message;
}

namespace
{
// Renders a full-screen quad (two triangles, positions in object space) with `compiled`, binding attributes from
// `attributes` (name → tightly packed float data, one binding each) and uniforms from `uniforms` (name → floats,
// column-major), and returns the pixels.
struct BoundTexture
{
	gpu::ImageHandle image;
	gpu::SamplerHandle sampler;
};

gpu::Rgba8Image renderQuad(gpu::Device& device, const CompiledEffect& compiled,
                           const std::map<std::string, std::vector<float>>& attributes,
                           const std::map<std::string, std::vector<float>>& uniforms,
                           const std::map<std::string, BoundTexture>& textures = {})
{
	const EffectInterface& iface = compiled.iface;
	gpu::GraphicsPipelineDesc desc;
	desc.vertex = *compiled.vertex;
	desc.fragment = *compiled.fragment;
	desc.color_formats = {VK_FORMAT_R8G8B8A8_UNORM};
	desc.name = "fx-quad";
	std::vector<gpu::BufferHandle> buffers;
	for (uint32_t b = 0; b < iface.attributes.size(); ++b)
	{
		const InterfaceVariable& a = iface.attributes[b];
		const auto& data = attributes.at(a.name);
		const uint32_t components = uint32_t(data.size() / 6); // 6 vertices
		const VkFormat formats[] = {VK_FORMAT_R32_SFLOAT, VK_FORMAT_R32G32_SFLOAT, VK_FORMAT_R32G32B32_SFLOAT,
		                            VK_FORMAT_R32G32B32A32_SFLOAT};
		desc.vertex_bindings.push_back({b, components * 4, VK_VERTEX_INPUT_RATE_VERTEX});
		desc.vertex_attributes.push_back({a.location, b, formats[components - 1], 0});
		auto buf = device.createBuffer({data.size() * 4, gpu::BufferUsage::Vertex | gpu::BufferUsage::TransferDst,
		                                gpu::MemoryDomain::DeviceLocal, a.name});
		EXPECT_TRUE(buf.ok());
		EXPECT_TRUE(device.uploadBuffer(*buf.value(), 0, data.data(), data.size() * 4).ok());
		buffers.push_back(buf.value());
	}
	auto pipeline = device.createGraphicsPipeline(desc);
	EXPECT_TRUE(pipeline.ok()) << (pipeline.ok() ? "" : pipeline.error().message);
	gpu::BufferHandle ubo;
	if (iface.uniform_block_size)
	{
		std::vector<std::byte> block(iface.uniform_block_size);
		for (const UniformMember& m : iface.uniforms)
			writeStd140(m.type, uniforms.at(m.name).data(), block.data() + m.offset, m.matrix_stride);
		auto buf = device.createBuffer({block.size(), gpu::BufferUsage::Uniform | gpu::BufferUsage::TransferDst,
		                                gpu::MemoryDomain::DeviceLocal, "ubo"});
		EXPECT_TRUE(buf.ok());
		EXPECT_TRUE(device.uploadBuffer(*buf.value(), 0, block.data(), block.size()).ok());
		ubo = buf.value();
	}
	auto target = device.createImage({32, 32, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
	                                  gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferSrc, "fx-target"});
	EXPECT_TRUE(target.ok());
	auto list = device.beginCommands();
	EXPECT_TRUE(list.ok());
	gpu::RenderingDesc pass;
	pass.color = target.value().get();
	gpu::beginRendering(list.value(), pass);
	pipeline.value()->bind(list.value());
	gpu::DynamicState{.depth_test = false, .depth_write = false}.apply(list->vk());
	if (ubo)
		pipeline.value()->pushBuffer(list.value(), 0, *ubo);
	for (const TextureBinding& t : iface.textures)
	{
		const BoundTexture& bound = textures.at(t.name);
		VkDescriptorImageInfo info{bound.sampler->vk(), bound.image->view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
		VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
		write.dstBinding = t.binding;
		write.descriptorCount = 1;
		write.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
		write.pImageInfo = &info;
		pipeline.value()->pushDescriptors(list.value(), std::span<const VkWriteDescriptorSet>(&write, 1));
	}
	for (uint32_t b = 0; b < buffers.size(); ++b)
	{
		VkBuffer vb = buffers[b]->vk();
		VkDeviceSize offset = 0;
		vkCmdBindVertexBuffers(list->vk(), b, 1, &vb, &offset);
	}
	vkCmdDraw(list->vk(), 6, 1, 0, 0);
	gpu::endRendering(list.value());
	EXPECT_TRUE(device.submitAndWait(std::move(list.value())).ok());
	auto pixels = gpu::readImageRgba8(device, *target.value());
	EXPECT_TRUE(pixels.ok());
	return pixels.value();
}

const std::vector<float> kQuad = {-1, -1, 0, 1, 1, -1, 0, 1, 1, 1, 0, 1, -1, -1, 0, 1, 1, 1, 0, 1, -1, 1, 0, 1};
const std::vector<float> kIdentity = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
} // namespace

TEST_F(EffectCompile, ComposedEffectRendersThroughItsReflectedInterface)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("trafo+constant", stock::trafo(), stock::constantColor());
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	// ModelTrafo scales x and y by ½ (column-major): the quad covers the centre 16×16 pixels of 32×32.
	const std::vector<float> half = {0.5f, 0, 0, 0, 0, 0.5f, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
	const auto pixels =
	    renderQuad(device(), *compiled.value(), {{"Positions", kQuad}},
	               {{"ModelTrafo", half}, {"ModelViewProjTrafo", half}, {"ConstantColor", {0, 1, 0, 1}}});
	EXPECT_EQ(pixels.at(16, 16), (std::array<uint8_t, 4>{0, 255, 0, 255}));
	EXPECT_EQ(pixels.at(9, 9), (std::array<uint8_t, 4>{0, 255, 0, 255}));
	EXPECT_EQ(pixels.at(7, 7), (std::array<uint8_t, 4>{0, 0, 0, 255}));
	EXPECT_EQ(pixels.at(24, 16), (std::array<uint8_t, 4>{0, 0, 0, 255}));
}

TEST_F(EffectCompile, EarlyReturnInOneStageStillRunsTheNext)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto first = Stage::fragment("first")
	                 .writes({{"Colors", V4f}})
	                 .glsl("\ts.Colors = vec4(1, 0, 0, 1);\n\treturn;\n\ts.Colors = vec4(0);");
	auto second =
	    Stage::fragment("second").reads({{"Colors", V4f}}).writes({{"Colors", V4f}}).glsl("\ts.Colors.b = 1.0;");
	auto effect = compose("ret", stock::trafo(), first, second);
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	const auto pixels = renderQuad(device(), *compiled.value(), {{"Positions", kQuad}},
	                               {{"ModelTrafo", kIdentity}, {"ModelViewProjTrafo", kIdentity}});
	EXPECT_EQ(pixels.at(16, 16), (std::array<uint8_t, 4>{255, 0, 255, 255}));
}

TEST_F(EffectCompile, VertexColoursPassThroughAsAnImplicitAttribute)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("colors", stock::trafo(), stock::vertexColors());
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	std::vector<float> colors;
	for (int v = 0; v < 6; ++v)
		colors.insert(colors.end(), {0.0f, 0.0f, 1.0f, 1.0f});
	const auto pixels = renderQuad(device(), *compiled.value(), {{"Positions", kQuad}, {"Colors", colors}},
	                               {{"ModelTrafo", kIdentity}, {"ModelViewProjTrafo", kIdentity}});
	EXPECT_EQ(pixels.at(3, 28), (std::array<uint8_t, 4>{0, 0, 255, 255}));
}

TEST_F(EffectCompile, DiffuseTextureIsSampledThroughItsReflectedBinding)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("textured", stock::trafo(), stock::vertexColors(), stock::diffuseTexture());
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	// 2×2 texture: red, green / blue, white (top row first); nearest filtering, clamped.
	const uint8_t texels[16] = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255};
	auto image = device().createImage({2, 2, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
	                                   gpu::ImageUsage::Sampled | gpu::ImageUsage::TransferDst, "texture"});
	ASSERT_TRUE(image.ok());
	ASSERT_TRUE(gpu::uploadImage(device(), *image.value(), texels, sizeof(texels)).ok());
	EXPECT_FALSE(gpu::uploadImage(device(), *image.value(), texels, 12).ok()) << "size mismatch is an error";
	auto sampler = device().createSampler({VK_FILTER_NEAREST, VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE, "nearest"});
	ASSERT_TRUE(sampler.ok());
	// Texture coordinates follow NDC: (-1,-1) top-left → (0,0).
	std::vector<float> uv, colors;
	for (size_t v = 0; v < kQuad.size(); v += 4)
	{
		uv.push_back((kQuad[v] + 1.0f) * 0.5f);
		uv.push_back((kQuad[v + 1] + 1.0f) * 0.5f);
		colors.insert(colors.end(), {1.0f, 1.0f, 1.0f, 1.0f});
	}
	const auto pixels = renderQuad(device(), *compiled.value(),
	                               {{"Positions", kQuad}, {"Colors", colors}, {"DiffuseColorCoordinates", uv}},
	                               {{"ModelTrafo", kIdentity}, {"ModelViewProjTrafo", kIdentity}},
	                               {{"DiffuseColorTexture", {image.value(), sampler.value()}}});
	EXPECT_EQ(pixels.at(8, 8), (std::array<uint8_t, 4>{255, 0, 0, 255}));
	EXPECT_EQ(pixels.at(24, 8), (std::array<uint8_t, 4>{0, 255, 0, 255}));
	EXPECT_EQ(pixels.at(8, 24), (std::array<uint8_t, 4>{0, 0, 255, 255}));
	EXPECT_EQ(pixels.at(24, 24), (std::array<uint8_t, 4>{255, 255, 255, 255}));
}

TEST_F(EffectCompile, InstanceTrafoIsAMatrixAttributeTakingFourLocations)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect =
	    compose("instanced", stock::instanceTrafo(), stock::trafo(), stock::vertexColors(), stock::simpleLighting());
	ASSERT_TRUE(effect.ok()) << effect.error().message;
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	const EffectInterface& i = compiled.value()->iface;
	auto attrs = names(i.attributes);
	std::sort(attrs.begin(), attrs.end());
	EXPECT_EQ(attrs, (std::vector<std::string>{"Colors", "InstanceTrafo", "Normals", "Positions"}));
	const InterfaceVariable* inst = i.attribute("InstanceTrafo");
	ASSERT_TRUE(inst);
	EXPECT_EQ(inst->type, M44f);
	// Its 4 column locations overlap no other attribute.
	for (const InterfaceVariable& a : i.attributes)
	{
		if (a.name != "InstanceTrafo")
		{
			EXPECT_TRUE(a.location + a.type.locations() <= inst->location || a.location >= inst->location + 4)
			    << a.name << " at " << a.location << " overlaps InstanceTrafo at " << inst->location;
		}
	}
	EXPECT_TRUE(i.uniform("ModelTrafo") && i.uniform("NormalMatrix") && i.uniform("LightLocation"));
	// Composed after trafo it is a different effect (order matters for ids).
	auto swapped = compose("swapped", stock::trafo(), stock::instanceTrafo());
	ASSERT_TRUE(swapped.ok());
	EXPECT_FALSE(swapped.value().id() == effect.value().id());
}

TEST_F(EffectCompile, InstanceTrafoPlacesEachInstance)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("instanced constant", stock::instanceTrafo(), stock::trafo(), stock::constantColor());
	ASSERT_TRUE(effect.ok());
	auto compiled = compiler.compile(effect.value(), {});
	ASSERT_TRUE(compiled.ok()) << compiled.error().message;
	const EffectInterface& iface = compiled.value()->iface;
	const InterfaceVariable* inst = iface.attribute("InstanceTrafo");
	const InterfaceVariable* pos = iface.attribute("Positions");
	ASSERT_TRUE(inst && pos);
	// Two instances of the full-screen quad, each scaled by ¼ and moved to (−½, −½) resp. (½, ½) in NDC: they cover
	// pixels 4…11 of the top-left and 20…27 of the bottom-right quadrant of 32×32.
	const std::vector<float> instances = {0.25f, 0, 0, 0, 0, 0.25f, 0, 0, 0, 0, 1, 0, -0.5f, -0.5f, 0, 1,
	                                      0.25f, 0, 0, 0, 0, 0.25f, 0, 0, 0, 0, 1, 0, 0.5f,  0.5f,  0, 1};
	gpu::GraphicsPipelineDesc desc;
	desc.vertex = *compiled.value()->vertex;
	desc.fragment = *compiled.value()->fragment;
	desc.color_formats = {VK_FORMAT_R8G8B8A8_UNORM};
	desc.name = "fx-instanced";
	desc.vertex_bindings = {{0, 16, VK_VERTEX_INPUT_RATE_VERTEX}, {1, 64, VK_VERTEX_INPUT_RATE_INSTANCE}};
	desc.vertex_attributes.push_back({pos->location, 0, VK_FORMAT_R32G32B32A32_SFLOAT, 0});
	for (uint32_t c = 0; c < 4; ++c)
		desc.vertex_attributes.push_back({inst->location + c, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 16 * c});
	auto pipeline = device().createGraphicsPipeline(desc);
	ASSERT_TRUE(pipeline.ok()) << pipeline.error().message;
	auto upload = [&](const std::vector<float>& data, gpu::BufferUsage usage, const char* name)
	{
		auto buf = device().createBuffer(
		    {data.size() * 4, usage | gpu::BufferUsage::TransferDst, gpu::MemoryDomain::DeviceLocal, name});
		EXPECT_TRUE(buf.ok());
		EXPECT_TRUE(device().uploadBuffer(*buf.value(), 0, data.data(), data.size() * 4).ok());
		return buf.value();
	};
	auto quad = upload(kQuad, gpu::BufferUsage::Vertex, "quad");
	auto per_instance = upload(instances, gpu::BufferUsage::Vertex, "instances");
	std::vector<std::byte> block(iface.uniform_block_size);
	const std::vector<float> green = {0, 1, 0, 1};
	for (const UniformMember& m : iface.uniforms)
		writeStd140(m.type, (m.name == "ConstantColor" ? green : kIdentity).data(), block.data() + m.offset,
		            m.matrix_stride);
	auto ubo = device().createBuffer({block.size(), gpu::BufferUsage::Uniform | gpu::BufferUsage::TransferDst,
	                                  gpu::MemoryDomain::DeviceLocal, "ubo"});
	ASSERT_TRUE(ubo.ok());
	ASSERT_TRUE(device().uploadBuffer(*ubo.value(), 0, block.data(), block.size()).ok());
	auto target = device().createImage({32, 32, VK_FORMAT_R8G8B8A8_UNORM, VK_SAMPLE_COUNT_1_BIT,
	                                    gpu::ImageUsage::ColorAttachment | gpu::ImageUsage::TransferSrc, "target"});
	ASSERT_TRUE(target.ok());
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	gpu::RenderingDesc pass;
	pass.color = target.value().get();
	gpu::beginRendering(list.value(), pass);
	pipeline.value()->bind(list.value());
	gpu::DynamicState{.depth_test = false, .depth_write = false}.apply(list->vk());
	pipeline.value()->pushBuffer(list.value(), 0, *ubo.value());
	const VkBuffer vbs[2] = {quad->vk(), per_instance->vk()};
	const VkDeviceSize offsets[2] = {0, 0};
	vkCmdBindVertexBuffers(list->vk(), 0, 2, vbs, offsets);
	vkCmdDraw(list->vk(), 6, 2, 0, 0);
	gpu::endRendering(list.value());
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	auto pixels = gpu::readImageRgba8(device(), *target.value());
	ASSERT_TRUE(pixels.ok());
	const std::array<uint8_t, 4> on{0, 255, 0, 255}, off{0, 0, 0, 255};
	EXPECT_EQ(pixels->at(8, 8), on);
	EXPECT_EQ(pixels->at(24, 24), on);
	EXPECT_EQ(pixels->at(24, 8), off);
	EXPECT_EQ(pixels->at(8, 24), off);
	EXPECT_EQ(pixels->at(16, 16), off);
}

// ---- per-instance uniforms (instancing.hpp)

const Stage* stageNamed(const Effect& e, const std::string& name)
{
	for (const StagePtr& s : e.stages())
		if (s->name() == name)
			return s.get();
	return nullptr;
}

TEST(InstanceUniforms, APerInstanceModelTrafoBecomesAFlatPortAndItsDerivedTrafosShaderExpressions)
{
	auto effect = compose("lit", stock::trafo(), stock::constantColor(), stock::simpleLighting());
	ASSERT_TRUE(effect.ok());
	auto r = instanceUniforms(effect.value(), {"ModelTrafo"}, {});
	ASSERT_TRUE(r.ok()) << r.error().message;
	EXPECT_FALSE(r->id() == effect->id());
	const Stage* trafo = stageNamed(r.value(), "stock.trafo");
	ASSERT_TRUE(trafo);
	// ModelTrafo is read from the State; NormalMatrix and ModelViewProjTrafo are computed from it; ViewProjTrafo
	// becomes a uniform.
	EXPECT_EQ(trafo->uniformNames(), (std::vector<std::string>{"ViewProjTrafo"}));
	const auto& reads = trafo->readPorts();
	auto port = std::find_if(reads.begin(), reads.end(), [](const Port& p) { return p.name == "ModelTrafo"; });
	ASSERT_NE(port, reads.end());
	EXPECT_EQ(port->type, M44f);
	EXPECT_EQ(port->interp, Interp::Flat);
	EXPECT_EQ(trafo->defines().at("ModelTrafo"), "s.ModelTrafo");
	EXPECT_EQ(trafo->defines().at("NormalMatrix"), "transpose(inverse(mat3(ModelTrafo)))");
	EXPECT_EQ(trafo->defines().at("ModelViewProjTrafo"), "(ViewProjTrafo * ModelTrafo)");
	EXPECT_EQ(trafo->defines().size(), 3u);
	// Stages reading nothing per instance are shared as they are (LightLocation derives from the view only).
	EXPECT_EQ(r->stages()[1].get(), effect->stages()[1].get());
	EXPECT_EQ(r->stages()[2].get(), effect->stages()[2].get());
	// Unchanged when no stage reads the name as a uniform.
	auto same = instanceUniforms(effect.value(), {"InstanceTrafo"}, {});
	ASSERT_TRUE(same.ok());
	EXPECT_EQ(same->id(), effect->id());
}

TEST(InstanceUniforms, DerivedTrafosFollowTheirInputsUnlessTheObjectSuppliesThem)
{
	auto reader = std::make_shared<const Stage>(Stage::vertex("mvp")
	                                                .reads({{"Positions", V4f}})
	                                                .writes({{"Positions", V4f}})
	                                                .uniforms({"ModelViewProjTrafoInv", "CameraLocation"})
	                                                .glsl("s.Positions = ModelViewProjTrafoInv * s.Positions + "
	                                                      "vec4(CameraLocation, 0.0);"));
	auto effect = compose("mvp", reader, stock::constantColor());
	ASSERT_TRUE(effect.ok());
	// A per-instance view: ModelViewProjTrafoInv = ModelTrafoInv · ViewProjTrafoInv with both factors derived from
	// the view, and the camera from the per-instance view as well; ProjTrafoInv and ModelTrafoInv stay uniforms.
	auto r = instanceUniforms(effect.value(), {"ViewTrafo"}, {});
	ASSERT_TRUE(r.ok()) << r.error().message;
	const Stage* s = stageNamed(r.value(), "mvp");
	auto uniforms = s->uniformNames();
	std::sort(uniforms.begin(), uniforms.end());
	EXPECT_EQ(uniforms, (std::vector<std::string>{"ModelTrafoInv", "ProjTrafoInv"}));
	std::vector<std::string> defined;
	for (const auto& [k, v] : s->defines())
		defined.push_back(k);
	EXPECT_EQ(defined, (std::vector<std::string>{"CameraLocation", "ModelViewProjTrafoInv", "ViewProjTrafoInv",
	                                             "ViewTrafo", "ViewTrafoInv"}));
	// The object supplies ModelViewProjTrafoInv itself: only the camera is derived per instance.
	auto supplied = instanceUniforms(effect.value(), {"ViewTrafo"}, {"ModelViewProjTrafoInv"});
	ASSERT_TRUE(supplied.ok());
	s = stageNamed(supplied.value(), "mvp");
	EXPECT_EQ(s->uniformNames(), (std::vector<std::string>{"ModelViewProjTrafoInv"}));
	EXPECT_EQ(s->defines().count("ModelViewProjTrafoInv"), 0u);
	EXPECT_EQ(s->defines().count("CameraLocation"), 1u);
}

TEST(InstanceUniforms, ABoolUniformCannotBeSuppliedPerInstance)
{
	ASSERT_TRUE(UniformScope::declare("TestFlag", Bool).ok());
	auto stage = std::make_shared<const Stage>(Stage::fragment("flagged")
	                                               .writes({{"Colors", V4f}})
	                                               .uniforms({"TestFlag"})
	                                               .glsl("s.Colors = TestFlag ? vec4(1.0) : vec4(0.0);"));
	auto effect = compose("flag", stock::trafo(), stage);
	ASSERT_TRUE(effect.ok());
	auto r = instanceUniforms(effect.value(), {"TestFlag"}, {});
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("'TestFlag' is bool"), std::string::npos) << r.error().message;
	EXPECT_NE(r.error().message.find("stage 'flagged'"), std::string::npos) << r.error().message;
}

TEST_F(EffectCompile, PerInstanceUniformsAreInstanceAttributesAndFlatVaryingsInBothPaths)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("lit", stock::trafo(), stock::constantColor(), stock::simpleLighting());
	ASSERT_TRUE(effect.ok());
	auto r = instanceUniforms(effect.value(), {"ModelTrafo", "ConstantColor"}, {});
	ASSERT_TRUE(r.ok()) << r.error().message;
	for (PathVariant path : {PathVariant::Classic, PathVariant::HeapIndirect, PathVariant::HeapMegacall})
	{
		auto compiled = compiler.compile(r.value(), {}, path);
		ASSERT_TRUE(compiled.ok()) << compiled.error().message;
		const EffectInterface& i = compiled.value()->iface;
		const InterfaceVariable* m = i.attribute("ModelTrafo");
		const InterfaceVariable* c = i.attribute("ConstantColor");
		ASSERT_TRUE(m && c);
		EXPECT_EQ(m->type, M44f);
		EXPECT_EQ(c->type, V4f);
		EXPECT_FALSE(i.uniform("ModelTrafo") || i.uniform("NormalMatrix") || i.uniform("ConstantColor"));
		EXPECT_TRUE(i.uniform("ViewProjTrafo") && i.uniform("LightLocation"));
		// The fragment side reads the colour through a flat varying.
		bool flat_color = false;
		for (const InterfaceVariable& v : i.varyings)
			flat_color |= v.name == "ConstantColor";
		EXPECT_TRUE(flat_color);
		EXPECT_NE(compiled.value()->fragment_glsl.find("flat in vec4 in_ConstantColor"), std::string::npos);
	}
}

/// The heap's texture variants put each texture's entry in the draw header after the two draw words — an atlas entry
/// (4 words) or a bindless table index (1 word, the body sampling `qk_bindless` non-uniformly) — and refuse a cube
/// map, which neither an atlas nor a table of 2D textures holds.
TEST_F(EffectCompile, TextureVariantsCarryEachTexturesEntryInTheDrawHeader)
{
	EffectCompiler compiler(device().shaderCompiler());
	auto effect = compose("textured", stock::trafo(), stock::constantColor(), stock::diffuseTexture());
	ASSERT_TRUE(effect.ok());
	auto plain = compiler.compile(effect.value(), {}, PathVariant::HeapIndirect);
	ASSERT_TRUE(plain.ok()) << plain.error().message;
	const EffectInterface& base = plain.value()->iface;
	ASSERT_EQ(base.textures.size(), 1u);
	const uint32_t draw_words = uint32_t(base.uniforms.size() + base.attributes.size()) + 2;
	EXPECT_EQ(base.header_words, draw_words);
	for (PathVariant path : {PathVariant::HeapIndirectAtlas, PathVariant::HeapMegacallAtlas,
	                         PathVariant::HeapIndirectBindless, PathVariant::HeapMegacallBindless})
	{
		auto compiled = compiler.compile(effect.value(), {}, path);
		ASSERT_TRUE(compiled.ok()) << compiled.error().message;
		const EffectInterface& i = compiled.value()->iface;
		EXPECT_EQ(i.header_words, draw_words + textureHeaderWords(path));
		ASSERT_EQ(i.textures.size(), 1u);
		EXPECT_EQ(i.textures[0].binding, draw_words) << "the entry's first header word";
		EXPECT_EQ(i.uniforms.size(), base.uniforms.size());
		EXPECT_EQ(i.attributes.size(), base.attributes.size());
		const bool bindless = isBindlessVariant(path);
		EXPECT_EQ(compiled.value()->fragment_glsl.find("qk_bindless[nonuniformEXT(qk_tex_DiffuseColorTexture)]") !=
		              std::string::npos,
		          bindless);
		EXPECT_EQ(megacallVariantOf(path) == path, isMegacallVariant(path));
	}
	auto cube = compose("cube", stock::trafo(),
	                    std::make_shared<const Stage>(Stage::fragment("sky")
	                                                      .reads({{"Normals", V3f}})
	                                                      .writes({{"Colors", V4f}})
	                                                      .texture("Sky", TexKind::SamplerCube)
	                                                      .glsl("\ts.Colors = texture(Sky, s.Normals);")));
	ASSERT_TRUE(cube.ok()) << cube.error().message;
	for (PathVariant path : {PathVariant::HeapIndirectAtlas, PathVariant::HeapIndirectBindless})
	{
		auto refused = compiler.compile(cube.value(), {}, path);
		ASSERT_FALSE(refused.ok());
		EXPECT_EQ(refused.error().code, ErrorCode::Unsupported);
		EXPECT_NE(refused.error().message.find("'Sky' is not a 2D texture"), std::string::npos);
	}
	EXPECT_TRUE(compiler.compile(cube.value(), {}, PathVariant::HeapIndirect).ok());
}

} // namespace quokka::fx::test
