// gltf_features_test.cpp — what gltf::importFile() makes of materials (COLOR_0, alphaMode, emissive, doubleSided,
// KHR_texture_transform), primitive modes (strips, fans, loops, lines, points), mirrored nodes and cameras, and the
// document checks (typed fields, required extensions, bytes that are not glTF). CPU only: buffers, uniforms, state
// and effect stages are read back and compared with exact values.
#include "gltf_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace
{

using namespace quokka;
using namespace quokka::gltf::test;
using GltfFeatures = GltfFixture;

const std::vector<float> kTrianglePositions3 = {0, 0, 0, 1, 0, 0, 0, 1, 0};
const std::vector<float> kQuad = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0}; // 4 vertices, counter-clockwise in z = 0

bool hasStage(const scene::RenderObject& o, const std::string& name)
{
	const auto& stages = o.effect.stages();
	return std::any_of(stages.begin(), stages.end(), [&](const fx::StagePtr& s) { return s->name() == name; });
}

template <typename T>
T forced(const adaptive::aval<T>& v)
{
	return v.force();
}

TEST_F(GltfFeatures, VertexColorsOfThreeNormalizedBytesBecomeRgbaFloats)
{
	GltfBuilder b;
	const int pos = b.addFloats(kQuad, 3, "VEC3");
	const std::vector<uint8_t> rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 51, 102, 153};
	const int col = b.addAccessor(b.addView(rgb), kU8, 4, "VEC3");
	b.doc["accessors"][size_t(col)]["normalized"] = true;
	const int idx = b.addAccessor(b.addView(std::vector<uint16_t>{0, 1, 2, 0, 2, 3}), kU16, 6, "SCALAR");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}, {"COLOR_0", col}}, idx)}})});
	const std::string path = file("colors.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	const scene::RenderObject& o = *result->objects[0];
	// No normals: flat normals un-index the quad, so the colours are gathered per corner.
	const std::vector<float> colors = bytesAs<float>(o.attributes.at("Colors").buffer.force());
	ASSERT_EQ(colors.size(), 6u * 4u);
	const std::vector<float> expected_v3 = {0.2f, 0.4f, 0.6f, 1.0f}; // corner 5 is vertex 3
	for (int k = 0; k < 4; ++k)
		EXPECT_FLOAT_EQ(colors[5 * 4 + size_t(k)], expected_v3[size_t(k)]);
	EXPECT_FLOAT_EQ(colors[0], 1.0f);
	EXPECT_FLOAT_EQ(colors[3], 1.0f);
	EXPECT_EQ(o.attributes.at("Colors").format, VK_FORMAT_R32G32B32A32_SFLOAT);
	EXPECT_TRUE(hasStage(o, "gltf.baseColor"));
	EXPECT_FALSE(hasStage(o, "stock.constantColor"));
}

TEST_F(GltfFeatures, AlphaModesSetCutoffBlendingAndDepthWrites)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions3, 3, "VEC3");
	b.doc["materials"] = json::array({{{"alphaMode", "OPAQUE"}},
	                                  {{"alphaMode", "MASK"}, {"alphaCutoff", 0.25}},
	                                  {{"alphaMode", "BLEND"}, {"doubleSided", true}}});
	std::vector<int> nodes;
	for (int m = 0; m < 3; ++m)
		nodes.push_back(b.addNode({{"mesh", b.addMesh({{"POSITION", pos}}, -1, m)}}));
	b.setScene(nodes);
	const std::string path = file("alpha.gltf");
	b.writeGltf(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	ASSERT_EQ(result->objects.size(), 3u);
	const scene::RenderObject& opaque = *result->objects[0];
	const scene::RenderObject& mask = *result->objects[1];
	const scene::RenderObject& blend = *result->objects[2];
	EXPECT_TRUE(hasStage(opaque, "gltf.opaque"));
	EXPECT_FALSE(forced(opaque.state.default_blend).enabled);
	EXPECT_TRUE(forced(opaque.state.depth_write));
	EXPECT_EQ(forced(opaque.state.cull_mode), VkCullModeFlags(VK_CULL_MODE_BACK_BIT)); // single-sided by default
	EXPECT_TRUE(hasStage(mask, "gltf.alphaMask"));
	EXPECT_FLOAT_EQ(uniformAs<float>(mask, "AlphaCutoff"), 0.25f);
	EXPECT_FALSE(hasStage(blend, "gltf.opaque"));
	EXPECT_FALSE(hasStage(blend, "gltf.alphaMask"));
	EXPECT_TRUE(forced(blend.state.default_blend).enabled);
	EXPECT_FALSE(forced(blend.state.depth_write));
	EXPECT_EQ(forced(blend.state.cull_mode), VkCullModeFlags(VK_CULL_MODE_NONE)); // doubleSided
}

TEST_F(GltfFeatures, EmissiveFactorAndTextureWithItsOwnSetAndATextureTransform)
{
	const std::vector<uint8_t> png = encodePng(1, 1, 3, {10, 20, 30});
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions3, 3, "VEC3");
	const int nrm = b.addFloats({0, 0, 1, 0, 0, 1, 0, 0, 1}, 3, "VEC3");
	const int uv0 = b.addFloats({0, 0, 1, 0, 0, 1}, 2, "VEC2");
	const int uv1 = b.addFloats({0.5f, 0.5f, 1, 0.5f, 0.5f, 1}, 2, "VEC2");
	b.doc["images"] = json::array({{{"bufferView", b.addView(png)}, {"mimeType", "image/png"}}});
	b.doc["textures"] = json::array({{{"source", 0}}});
	// Base colour: offset (0.5, 0.25), rotation π/2, scale (2, 3): uv' = T·R·S·uv. Emissive: set 1, untransformed.
	b.doc["materials"] =
	    json::array({{{"pbrMetallicRoughness",
	                   {{"baseColorTexture",
	                     {{"index", 0},
	                      {"extensions",
	                       {{"KHR_texture_transform",
	                         {{"offset", {0.5, 0.25}}, {"rotation", 1.5707963267948966}, {"scale", {2.0, 3.0}}}}}}}}}},
	                  {"emissiveFactor", {1.0, 0.5, 0.0}},
	                  {"emissiveTexture", {{"index", 0}, {"texCoord", 1}}}}});
	b.doc["extensionsUsed"] = json::array({"KHR_texture_transform"});
	b.doc["extensionsRequired"] = json::array({"KHR_texture_transform"});
	b.setScene({b.addNode(
	    {{"mesh", b.addMesh({{"POSITION", pos}, {"NORMAL", nrm}, {"TEXCOORD_0", uv0}, {"TEXCOORD_1", uv1}}, -1, 0)}})});
	const std::string path = file("emissive.gltf");
	b.writeGltf(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	const scene::RenderObject& o = *result->objects[0];
	EXPECT_EQ(uniformAs<math::V3f>(o, "EmissiveColor"), math::V3f(1.0f, 0.5f, 0.0f));
	EXPECT_TRUE(hasStage(o, "gltf.emissiveTexture"));
	EXPECT_TRUE(o.textures.count("EmissiveTexture"));
	EXPECT_EQ(bytesAs<float>(o.attributes.at("EmissiveCoordinates").buffer.force()),
	          (std::vector<float>{0.5f, 0.5f, 1, 0.5f, 0.5f, 1}));
	// S·(1, 0) = (2, 0); R(π/2)·(2, 0) = (0, −2) in the extension's convention (x' = c·x + s·y, y' = −s·x + c·y);
	// T adds (0.5, 0.25).
	const std::vector<float> uv = bytesAs<float>(o.attributes.at("DiffuseColorCoordinates").buffer.force());
	const std::vector<float> expected = {0.5f, 0.25f, 0.5f, -1.75f, 3.5f, 0.25f};
	ASSERT_EQ(uv.size(), expected.size());
	for (size_t i = 0; i < uv.size(); ++i)
		EXPECT_NEAR(uv[i], expected[i], 1e-6f) << i;
}

TEST_F(GltfFeatures, StripsFansAndLoopsBecomeListsWithTheirWinding)
{
	GltfBuilder b;
	const int pos = b.addFloats(kQuad, 3, "VEC3");
	const int nrm = b.addFloats({0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1}, 3, "VEC3");
	b.doc["materials"] = json::array({{{"doubleSided", true}}});
	std::vector<int> nodes;
	for (int mode : {5 /*strip*/, 6 /*fan*/, 3 /*line strip*/, 2 /*line loop*/, 0 /*points*/, 1 /*lines*/})
		nodes.push_back(b.addNode({{"mesh", b.addMesh({{"POSITION", pos}, {"NORMAL", nrm}}, -1, 0, mode)}}));
	b.setScene(nodes);
	const std::string path = file("modes.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	ASSERT_EQ(result->objects.size(), 6u);
	auto indices = [&](size_t i) { return bytesAs<uint16_t>(result->objects[i]->indices->buffer.force()); };
	auto topology = [&](size_t i) { return forced(result->objects[i]->state.topology); };
	EXPECT_EQ(indices(0), (std::vector<uint16_t>{0, 1, 2, 2, 1, 3}));
	EXPECT_EQ(indices(1), (std::vector<uint16_t>{0, 1, 2, 0, 2, 3}));
	EXPECT_EQ(indices(2), (std::vector<uint16_t>{0, 1, 1, 2, 2, 3}));
	EXPECT_EQ(indices(3), (std::vector<uint16_t>{0, 1, 1, 2, 2, 3, 3, 0}));
	EXPECT_EQ(topology(0), VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
	EXPECT_EQ(topology(2), VK_PRIMITIVE_TOPOLOGY_LINE_LIST);
	EXPECT_EQ(topology(4), VK_PRIMITIVE_TOPOLOGY_POINT_LIST);
	EXPECT_EQ(topology(5), VK_PRIMITIVE_TOPOLOGY_LINE_LIST);
	EXPECT_FALSE(result->objects[4]->indices.has_value());
	EXPECT_EQ(result->objects[4]->draw_call.force().count, 4u);
	EXPECT_EQ(result->triangles, 4u);
	EXPECT_EQ(result->lines, 3u + 4u + 2u);
	EXPECT_EQ(result->points, 4u);
	// Lines and points are unlit and carry no normals; points write their size.
	EXPECT_FALSE(result->objects[2]->attributes.count("Normals"));
	EXPECT_FALSE(hasStage(*result->objects[2], "stock.simpleLighting"));
	EXPECT_TRUE(hasStage(*result->objects[4], "gltf.pointSize"));
	EXPECT_TRUE(hasStage(*result->objects[0], "stock.simpleLighting"));
}

TEST_F(GltfFeatures, MirroredNodesFlipTheFrontFaceAndZeroScaleHidesAMesh)
{
	GltfBuilder b;
	const int mesh = b.addMesh({{"POSITION", b.addFloats(kTrianglePositions3, 3, "VEC3")}});
	b.setScene({b.addNode({{"mesh", mesh}, {"scale", {-1.0, 1.0, 1.0}}}),
	            b.addNode({{"mesh", mesh}, {"scale", {0.0, 0.0, 0.0}}}), b.addNode({{"mesh", mesh}})});
	const std::string path = file("mirrored.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	ASSERT_EQ(result->objects.size(), 2u); // the zero-scale instance draws nothing
	EXPECT_EQ(forced(result->objects[0]->state.front_face), VK_FRONT_FACE_CLOCKWISE);
	EXPECT_EQ(forced(result->objects[1]->state.front_face), VK_FRONT_FACE_COUNTER_CLOCKWISE);

	GltfBuilder z;
	std::vector<double> zeros(16, 0.0), huge = {1e38, 0, 0, 0, 0, 1e38, 0, 0, 0, 0, 1e38, 0, 0, 0, 0, 1};
	const int zmesh = z.addMesh({{"POSITION", z.addFloats(kTrianglePositions3, 3, "VEC3")}});
	z.setScene({z.addNode({{"mesh", zmesh}, {"matrix", zeros}})});
	const std::string zero_path = file("zero.glb");
	z.writeGlb(zero_path);
	auto zero = gltf::importFile(zero_path, options_);
	ASSERT_FALSE(zero.ok());
	EXPECT_NE(zero.error().message.find("nothing to draw"), std::string::npos) << zero.error().message;
	z.doc["nodes"][0]["matrix"] = huge;
	z.writeGlb(zero_path);
	auto overflow = gltf::importFile(zero_path, options_);
	ASSERT_FALSE(overflow.ok());
	EXPECT_EQ(overflow.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(overflow.error().message.find("float range"), std::string::npos) << overflow.error().message;
}

TEST_F(GltfFeatures, CamerasComeWithTheirNodesViewAndProjection)
{
	GltfBuilder b;
	const int mesh = b.addMesh({{"POSITION", b.addFloats(kTrianglePositions3, 3, "VEC3")}});
	b.doc["cameras"] = json::array(
	    {{{"type", "perspective"},
	      {"name", "front"},
	      {"perspective", {{"yfov", 0.5}, {"znear", 0.1}, {"zfar", 100.0}}}},
	     {{"type", "orthographic"}, {"orthographic", {{"xmag", 2.0}, {"ymag", 1.5}, {"znear", 0.0}, {"zfar", 10.0}}}}});
	const int cam0 = b.addNode({{"camera", 0}, {"translation", {0.0, 0.0, 5.0}}});
	const int cam1 = b.addNode({{"camera", 1}, {"name", "top"}, {"translation", {1.0, 2.0, 3.0}}});
	b.setScene({b.addNode({{"mesh", mesh}}), cam0, cam1});
	const std::string path = file("cameras.gltf");
	b.writeGltf(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	ASSERT_EQ(result->cameras.size(), 2u);
	const gltf::Camera& front = result->cameras[0];
	EXPECT_EQ(front.name, "front");
	EXPECT_FALSE(front.orthographic);
	EXPECT_DOUBLE_EQ(front.yfov, 0.5);
	EXPECT_EQ(front.view, math::Trafo3d::translation({0, 0, -5}));
	// The perspective keeps yfov: a point on the upper frustum edge lands on the top of clip space (y = −1 in Vulkan).
	const math::V3d edge = front.projection(2.0).transformPos(math::V3d(0, std::tan(0.25) * 10.0, -10.0));
	EXPECT_NEAR(edge.y, -1.0, 1e-9);
	const gltf::Camera& top = result->cameras[1];
	EXPECT_EQ(top.name, "top");
	EXPECT_TRUE(top.orthographic);
	EXPECT_DOUBLE_EQ(top.ymag, 1.5);
	EXPECT_EQ(top.view, math::Trafo3d::translation({-1, -2, -3}));
	const math::V3d corner = top.projection(2.0).transformPos(math::V3d(3.0, 1.5, -10.0));
	EXPECT_NEAR(corner.x, 1.0, 1e-9);
	EXPECT_NEAR(corner.y, -1.0, 1e-9);
	EXPECT_NEAR(corner.z, 1.0, 1e-9);
}

TEST_F(GltfFeatures, MistypedFieldsAreNamedNotIgnored)
{
	const int kCases = 8;
	for (int c = 0; c < kCases; ++c)
	{
		GltfBuilder b;
		const int pos = b.addFloats(kTrianglePositions3, 3, "VEC3");
		b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
		std::string field;
		switch (c)
		{
		case 0:
			b.doc["textures"] = json::array({{{"source", "0"}}});
			field = "textures[0].source";
			break;
		case 1:
			b.doc["samplers"] = json::array({{{"wrapS", 1234}}});
			field = "samplers[0].wrapS";
			break;
		case 2:
			b.doc["meshes"][0]["primitives"] = json::object();
			field = "meshes[0].primitives";
			break;
		case 3:
			b.doc["scene"] = "0";
			field = "scene";
			break;
		case 4:
			b.doc["materials"] = json::array({{{"alphaMode", "GLASS"}}});
			field = "materials[0].alphaMode";
			break;
		case 5:
			b.doc["nodes"][0]["matrix"] = json::array({1, 0, 0});
			field = "nodes[0].matrix";
			break;
		case 6:
			b.doc["materials"] = json::array({{{"pbrMetallicRoughness", {{"baseColorTexture", {{"index", -1}}}}}}});
			field = "baseColorTexture.index";
			break;
		case 7:
			b.doc["nodes"][0]["children"] = json::array({"a"});
			field = "nodes[0].children[0]";
			break;
		}
		const std::string path = file("typed.gltf");
		b.writeGltf(path);
		auto result = gltf::importFile(path, options_);
		ASSERT_FALSE(result.ok()) << c;
		EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument) << c;
		EXPECT_NE(result.error().message.find(field), std::string::npos) << result.error().message;
		expectOneLineNaming(result.error(), path);
	}
}

TEST_F(GltfFeatures, RequiredExtensionsAreNamed)
{
	GltfBuilder b;
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", b.addFloats(kTrianglePositions3, 3, "VEC3")}})}})});
	b.doc["extensionsRequired"] = json::array({"KHR_draco_mesh_compression"});
	const std::string path = file("draco.gltf");
	b.writeGltf(path);
	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::Unsupported);
	EXPECT_NE(result.error().message.find("requires the extension KHR_draco_mesh_compression"), std::string::npos)
	    << result.error().message;
}

TEST_F(GltfFeatures, BytesThatAreNotGltfGiveAShortPrintableMessage)
{
	std::vector<std::string> inputs;
	inputs.push_back(std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
	inputs.push_back("solid cube\n  facet normal 0 0 1\n    outer loop\n");
	inputs.push_back("v 0 0 0\nv 1 0 0\nf 1 2 3\n");
	std::string random(4096, '\0');
	uint32_t state = 12345u;
	for (char& ch : random)
	{
		state = state * 1664525u + 1013904223u;
		ch = char(state >> 24);
	}
	inputs.push_back(random);
	inputs.push_back(
	    R"({"asset":{"version":"2.0"},"meshes":[{"primitives":[{"attributes":{"POSITION":"\u0001\u0002"}}]}]})");
	for (size_t i = 0; i < inputs.size(); ++i)
	{
		const std::string path = file("notgltf.gltf");
		std::ofstream(path, std::ios::binary | std::ios::trunc) << inputs[i];
		auto result = gltf::importFile(path, options_);
		ASSERT_FALSE(result.ok()) << i;
		const std::string& m = result.error().message;
		expectOneLineNaming(result.error(), path);
		EXPECT_LT(m.size(), path.size() + 200) << m;
		EXPECT_TRUE(std::none_of(m.begin(), m.end(), [](char ch) { return (unsigned char)ch < 0x20; })) << m;
	}
}

} // namespace

namespace
{

TEST_F(GltfFeatures, MutatedFeatureRichDocumentsNeverCrash)
{
	// A .gltf using every supported feature (vertex colours, both textures with a transform, every alpha mode, strips,
	// loops, points, cameras, a mirrored node), then 600 seeded mutations of its JSON text — characters replaced by
	// JSON punctuation, digits or signs, or cut — each imported: a scene or a one-line error naming the file.
	const std::vector<uint8_t> png = encodePng(2, 1, 4, {255, 0, 0, 128, 0, 255, 0, 255});
	GltfBuilder b;
	const int pos = b.addFloats(kQuad, 3, "VEC3");
	const int nrm = b.addFloats({0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1}, 3, "VEC3");
	const int uv = b.addFloats({0, 0, 1, 0, 1, 1, 0, 1}, 2, "VEC2");
	const int col = b.addAccessor(
	    b.addView(std::vector<uint8_t>{255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 9, 9, 9, 9}), kU8, 4, "VEC4");
	b.doc["accessors"][size_t(col)]["normalized"] = true;
	const int idx = b.addAccessor(b.addView(std::vector<uint8_t>{0, 1, 2, 0, 2, 3}), kU8, 6, "SCALAR");
	b.doc["images"] = json::array({{{"bufferView", b.addView(png)}, {"mimeType", "image/png"}}});
	b.doc["samplers"] = json::array({{{"magFilter", 9728}, {"minFilter", 9987}, {"wrapS", 33648}}});
	b.doc["textures"] = json::array({{{"source", 0}, {"sampler", 0}}});
	const json transform = {{"KHR_texture_transform", {{"offset", {0.1, 0.2}}, {"rotation", 0.3}, {"scale", {2, 2}}}}};
	b.doc["materials"] = json::array(
	    {{{"pbrMetallicRoughness",
	       {{"baseColorFactor", {1, 0.5, 0.5, 0.9}}, {"baseColorTexture", {{"index", 0}, {"extensions", transform}}}}},
	      {"emissiveFactor", {0.1, 0.2, 0.3}},
	      {"emissiveTexture", {{"index", 0}}},
	      {"alphaMode", "MASK"},
	      {"alphaCutoff", 0.4}},
	     {{"alphaMode", "BLEND"}, {"doubleSided", true}}});
	b.doc["cameras"] = json::array(
	    {{{"type", "perspective"}, {"perspective", {{"yfov", 0.7}, {"znear", 0.1}}}},
	     {{"type", "orthographic"}, {"orthographic", {{"xmag", 1}, {"ymag", 1}, {"znear", 0}, {"zfar", 5}}}}});
	json attributes = {{"POSITION", pos}, {"NORMAL", nrm}, {"TEXCOORD_0", uv}, {"COLOR_0", col}};
	std::vector<int> nodes;
	for (int mode = 0; mode <= 6; ++mode)
		nodes.push_back(b.addNode({{"mesh", b.addMesh(attributes, mode == 4 ? idx : -1, mode % 2, mode)},
		                           {"scale", {mode == 3 ? -1.0 : 1.0, 1.0, 1.0}}}));
	nodes.push_back(b.addNode({{"camera", 0}, {"translation", {0, 0, 3}}}));
	nodes.push_back(b.addNode({{"camera", 1}, {"rotation", {0, 0.7071068, 0, 0.7071068}}}));
	b.setScene(nodes);
	const std::string original = file("rich.gltf");
	b.writeGltf(original);
	auto imported = gltf::importFile(original, options_);
	ASSERT_TRUE(imported.ok()) << imported.error().message;
	ASSERT_EQ(imported->objects.size(), 7u);
	ASSERT_EQ(imported->cameras.size(), 2u);

	std::ifstream in(original);
	const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	const std::string path = file("mutated.gltf");
	uint64_t state = 0xC0FFEE123456789ull;
	auto next = [&]
	{
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		return state;
	};
	size_t failures = 0;
	for (int i = 0; i < 600; ++i)
	{
		std::string mutated = text;
		const int edits = 1 + int(next() % 4);
		for (int e = 0; e < edits; ++e)
		{
			const size_t at = size_t(next() % mutated.size());
			if (next() % 8 == 0)
				mutated.resize(at); // cut
			else
				mutated[at] = "0123456789-+.e,:{}[]\" \\ntruefalsnul"[next() % 36];
			if (mutated.empty())
				mutated.push_back('{');
		}
		std::ofstream(path, std::ios::trunc) << mutated;
		auto result = gltf::importFile(path, options_);
		if (!result.ok())
		{
			++failures;
			expectOneLineNaming(result.error(), path);
		}
	}
	EXPECT_GT(failures, 100u); // most mutations break something; the point is that none crashes
}

} // namespace
