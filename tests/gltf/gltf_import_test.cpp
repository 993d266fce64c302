// gltf_import_test.cpp — gltf::importFile() on small .gltf/.glb files the tests write themselves (JSON by nlohmann,
// the binary buffer and GLB container by hand, a PNG by stb_image_write): hierarchy trafos, vertex and index data, u8
// index widening, base colour textures, computed flat normals, bounds, confined file access, and one-line errors for
// bad files. CPU only; gltf_render_test.cpp draws what this imports.
#include "gltf_builder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace
{

using namespace quokka;
using namespace quokka::gltf::test;
namespace fs = std::filesystem;

const std::vector<float> kTrianglePositions = {0, 0, 0, 1, 0, 0, 0, 1, 0};
const std::vector<float> kTriangleNormals = {0, 0, 1, 0, 0, 1, 0, 0, 1};

using GltfImport = GltfFixture;

TEST_F(GltfImport, HierarchyTrafosVertexDataAndBounds)
{
	// Interleaved positions + normals (byteStride 24) and u16 indices; parent translates, child scales.
	GltfBuilder b;
	std::vector<float> interleaved;
	for (size_t v = 0; v < 3; ++v)
		for (const auto* src : {&kTrianglePositions, &kTriangleNormals})
			interleaved.insert(interleaved.end(), src->begin() + long(v * 3), src->begin() + long(v * 3 + 3));
	const int view = b.addView(interleaved, 24);
	const int pos = b.addAccessor(view, kFloat, 3, "VEC3", 0);
	const int nrm = b.addAccessor(view, kFloat, 3, "VEC3", 12);
	const int idx = b.addAccessor(b.addView(std::vector<uint16_t>{0, 1, 2}), kU16, 3, "SCALAR");
	b.doc["materials"] = json::array({{{"pbrMetallicRoughness", {{"baseColorFactor", {0.5, 0.25, 1.0, 0.75}}}}}});
	const int mesh = b.addMesh({{"POSITION", pos}, {"NORMAL", nrm}}, idx, 0);
	const int child = b.addNode({{"mesh", mesh}, {"scale", {2.0, 2.0, 2.0}}});
	const int parent = b.addNode({{"translation", {1.0, 2.0, 3.0}}, {"children", {child}}});
	b.setScene({parent});
	const std::string path = file("hierarchy.gltf");
	b.writeGltf(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	const gltf::Scene& s = result.value();
	ASSERT_EQ(s.objects.size(), 1u);
	EXPECT_EQ(s.triangles, 1u);
	const scene::RenderObject& o = *s.objects[0];

	const math::Trafo3d model = uniformAs<math::Trafo3d>(o, "ModelTrafo");
	const math::Trafo3d expected = math::Trafo3d::translation({1, 2, 3}) * math::Trafo3d::scale(2.0);
	for (int c = 0; c < 4; ++c)
		for (int r = 0; r < 4; ++r)
		{
			EXPECT_DOUBLE_EQ(model.forward[c][r], expected.forward[c][r]) << c << "," << r;
			EXPECT_DOUBLE_EQ(model.backward[c][r], expected.backward[c][r]) << c << "," << r;
		}
	EXPECT_EQ(uniformAs<math::V4f>(o, "ConstantColor"), math::V4f(0.5f, 0.25f, 1.0f, 0.75f));
	for (const char* name : {"ViewTrafo", "ProjTrafo", "LightLocation"})
		EXPECT_TRUE(o.uniforms.count(name)) << name;

	const scene::BufferView& positions = o.attributes.at("Positions");
	EXPECT_EQ(positions.format, VK_FORMAT_R32G32B32_SFLOAT);
	EXPECT_EQ(bytesAs<float>(positions.buffer.force()), kTrianglePositions);
	EXPECT_EQ(bytesAs<float>(o.attributes.at("Normals").buffer.force()), kTriangleNormals);
	EXPECT_FALSE(o.attributes.count("DiffuseColorCoordinates"));
	EXPECT_TRUE(o.textures.empty());
	ASSERT_TRUE(o.indices.has_value());
	EXPECT_EQ(o.indices->format, VK_FORMAT_R16_UINT);
	EXPECT_EQ(bytesAs<uint16_t>(o.indices->buffer.force()), (std::vector<uint16_t>{0, 1, 2}));
	const scene::DrawCall dc = o.draw_call.force();
	EXPECT_TRUE(dc.indexed);
	EXPECT_EQ(dc.count, 3u);

	// World space: (0..2, 0..2, 0) scaled, then moved by (1, 2, 3).
	EXPECT_EQ(s.bounds.min, math::V3d(1, 2, 3));
	EXPECT_EQ(s.bounds.max, math::V3d(3, 4, 3));

	// The hierarchy is kept: the nodes in walk order with their local transforms, the object's ModelTrafo its node's
	// chain — moving the parent moves the object.
	ASSERT_EQ(s.nodes.size(), 2u);
	EXPECT_EQ(s.nodes[0].index, parent);
	EXPECT_EQ(s.nodes[0].parent, -1);
	EXPECT_EQ(s.nodes[1].index, child);
	EXPECT_EQ(s.nodes[1].parent, parent);
	EXPECT_EQ(s.nodes[1].chain.depth(), 2u);
	EXPECT_TRUE(s.nodes[1].chain.parent() == s.nodes[0].chain);
	EXPECT_EQ(s.nodes[0].local.value(), math::Trafo3d::translation({1, 2, 3}));
	EXPECT_TRUE(o.uniforms.at("ModelTrafo") == s.nodes[1].chain.world());
	adaptive::transact([&] { s.nodes[0].local.setValue(math::Trafo3d::translation({0, 0, -5})); });
	EXPECT_EQ(uniformAs<math::Trafo3d>(o, "ModelTrafo"),
	          math::Trafo3d::translation({0, 0, -5}) * math::Trafo3d::scale(2.0));
}

TEST_F(GltfImport, SharedUniformsAreTheApplicationsOwn)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
	const std::string path = file("shared.gltf");
	b.writeGltf(path);
	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	const scene::RenderObject& o = *result->objects[0];
	view_.setValue(math::Trafo3d::translation({0, 0, -5}));
	EXPECT_EQ(uniformAs<math::Trafo3d>(o, "ViewTrafo"), math::Trafo3d::translation({0, 0, -5}));
}

TEST_F(GltfImport, U8IndicesWidenToU16AndU32StayU32)
{
	GltfBuilder b;
	const int pos = b.addFloats({0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}, 3, "VEC3");
	const int nrm = b.addFloats({0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1}, 3, "VEC3");
	const int i8 = b.addAccessor(b.addView(std::vector<uint8_t>{0, 1, 2, 2, 1, 3}), kU8, 6, "SCALAR");
	const int i32 = b.addAccessor(b.addView(std::vector<uint32_t>{3, 2, 1}), kU32, 3, "SCALAR");
	const int m8 = b.addMesh({{"POSITION", pos}, {"NORMAL", nrm}}, i8);
	const int m32 = b.addMesh({{"POSITION", pos}, {"NORMAL", nrm}}, i32);
	b.setScene({b.addNode({{"mesh", m8}}), b.addNode({{"mesh", m32}})});
	const std::string path = file("indices.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	ASSERT_EQ(result->objects.size(), 2u);
	EXPECT_EQ(result->triangles, 3u);
	const scene::RenderObject& o8 = *result->objects[0];
	ASSERT_TRUE(o8.indices.has_value());
	EXPECT_EQ(o8.indices->format, VK_FORMAT_R16_UINT);
	EXPECT_EQ(bytesAs<uint16_t>(o8.indices->buffer.force()), (std::vector<uint16_t>{0, 1, 2, 2, 1, 3}));
	EXPECT_EQ(o8.draw_call.force().count, 6u);
	const scene::RenderObject& o32 = *result->objects[1];
	ASSERT_TRUE(o32.indices.has_value());
	EXPECT_EQ(o32.indices->format, VK_FORMAT_R32_UINT);
	EXPECT_EQ(bytesAs<uint32_t>(o32.indices->buffer.force()), (std::vector<uint32_t>{3, 2, 1}));
	EXPECT_EQ(result->bounds.min, math::V3d(0, 0, 0));
	EXPECT_EQ(result->bounds.max, math::V3d(1, 1, 0));
}

TEST_F(GltfImport, BaseColorTextureIsDecodedToRgba8)
{
	// A 2×2 RGB PNG inside a bufferView; tinygltf decodes it and the importer expands it to RGBA8.
	const std::vector<uint8_t> rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};
	const std::vector<uint8_t> png = encodePng(2, 2, 3, rgb);
	ASSERT_FALSE(png.empty());

	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	const int nrm = b.addFloats(kTriangleNormals, 3, "VEC3");
	const int uv = b.addFloats({0, 0, 1, 0, 0, 1}, 2, "VEC2");
	const int png_view = b.addView(png);
	b.doc["images"] = json::array({{{"bufferView", png_view}, {"mimeType", "image/png"}}});
	b.doc["samplers"] = json::array({{{"magFilter", 9728}, {"wrapS", 33071}}});
	b.doc["textures"] = json::array({{{"source", 0}, {"sampler", 0}}});
	b.doc["materials"] = json::array({{{"pbrMetallicRoughness", {{"baseColorTexture", {{"index", 0}}}}}}});
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}, {"NORMAL", nrm}, {"TEXCOORD_0", uv}}, -1, 0)}})});
	const std::string path = file("textured.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	ASSERT_EQ(result->objects.size(), 1u);
	const scene::RenderObject& o = *result->objects[0];
	ASSERT_TRUE(o.textures.count("DiffuseColorTexture"));
	const scene::TextureData tex = o.textures.at("DiffuseColorTexture").force();
	EXPECT_EQ(tex.width, 2u);
	EXPECT_EQ(tex.height, 2u);
	EXPECT_TRUE(tex.srgb);
	ASSERT_TRUE(tex.rgba8);
	const std::vector<uint8_t> expected = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255};
	EXPECT_EQ(*tex.rgba8, expected);
	EXPECT_EQ(o.samplers.at("DiffuseColorTexture").filter, scene::Filter::Nearest);
	EXPECT_EQ(o.samplers.at("DiffuseColorTexture").address, scene::AddressMode::ClampToEdge);
	const scene::BufferView& coords = o.attributes.at("DiffuseColorCoordinates");
	EXPECT_EQ(coords.format, VK_FORMAT_R32G32_SFLOAT);
	EXPECT_EQ(bytesAs<float>(coords.buffer.force()), (std::vector<float>{0, 0, 1, 0, 0, 1}));
	EXPECT_EQ(uniformAs<math::V4f>(o, "ConstantColor"), math::V4f(1.0f));
	EXPECT_EQ(o.effect.stages().size(), 5u); // trafo, constantColor, diffuseTexture, opaque, simpleLighting
	EXPECT_FALSE(o.draw_call.force().indexed);
}

TEST_F(GltfImport, MissingNormalsBecomeFlatNormals)
{
	// Two triangles sharing an edge, folded 90° (one in z = 0, one in x = 0); indexed input is un-indexed.
	GltfBuilder b;
	const int pos = b.addFloats({0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}, 3, "VEC3");
	const int idx = b.addAccessor(b.addView(std::vector<uint16_t>{0, 1, 2, 0, 2, 3}), kU16, 6, "SCALAR");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}}, idx)}})});
	const std::string path = file("flat.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_TRUE(result.ok()) << result.error().message;
	const scene::RenderObject& o = *result->objects[0];
	EXPECT_FALSE(o.indices.has_value());
	EXPECT_FALSE(o.draw_call.force().indexed);
	EXPECT_EQ(o.draw_call.force().count, 6u);
	EXPECT_EQ(bytesAs<float>(o.attributes.at("Positions").buffer.force()),
	          (std::vector<float>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}));
	EXPECT_EQ(bytesAs<float>(o.attributes.at("Normals").buffer.force()),
	          (std::vector<float>{0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0}));
	EXPECT_EQ(result->triangles, 2u);
}

TEST_F(GltfImport, MissingFileIsIo)
{
	const std::string path = file("does_not_exist.glb");
	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::Io);
	expectOneLineNaming(result.error(), path);
}

TEST_F(GltfImport, TruncatedGlbIsInvalidArgument)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
	const std::string path = file("truncated.glb");
	b.writeGlb(path);
	ASSERT_TRUE(gltf::importFile(path, options_).ok());
	fs::resize_file(path, fs::file_size(path) / 2);

	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument);
	expectOneLineNaming(result.error(), path);
	EXPECT_NE(result.error().message.find("truncated"), std::string::npos) << result.error().message;
}

TEST_F(GltfImport, VersionsOtherThanTwoAreUnsupported)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
	for (const char* version : {"1.0", "3.0", "1"})
	{
		b.doc["asset"]["version"] = version;
		const std::string path = file("versioned.gltf");
		b.writeGltf(path);
		auto result = gltf::importFile(path, options_);
		ASSERT_FALSE(result.ok()) << version;
		EXPECT_EQ(result.error().code, ErrorCode::Unsupported) << version;
		EXPECT_NE(result.error().message.find(std::string("version '") + version + "'"), std::string::npos)
		    << result.error().message;
		expectOneLineNaming(result.error(), path);
	}
	// A glTF 1.0-style document (string ids, no asset.version at all is also refused).
	const std::string old_style = file("old.gltf");
	std::ofstream(old_style) << R"({"asset":{"version":"1.0"},"scene":"defaultScene",
	  "scenes":{"defaultScene":{"nodes":["node_1"]}},"nodes":{"node_1":{"meshes":["mesh_1"]}}})";
	auto old = gltf::importFile(old_style, options_);
	ASSERT_FALSE(old.ok());
	EXPECT_EQ(old.error().code, ErrorCode::Unsupported) << old.error().message;
	// A .glb whose container says version 1.
	b.doc["asset"]["version"] = "2.0";
	const std::string glb = file("v1.glb");
	b.writeGlb(glb);
	{
		std::fstream f(glb, std::ios::in | std::ios::out | std::ios::binary);
		f.seekp(4);
		const uint32_t one = 1;
		f.write(reinterpret_cast<const char*>(&one), 4);
	}
	auto v1 = gltf::importFile(glb, options_);
	ASSERT_FALSE(v1.ok());
	EXPECT_EQ(v1.error().code, ErrorCode::Unsupported);
	EXPECT_NE(v1.error().message.find("glTF-Binary version 1"), std::string::npos) << v1.error().message;
}

TEST_F(GltfImport, FilesWithNothingToDrawOrAMissingDefaultSceneAreErrors)
{
	GltfBuilder b;
	b.setScene({b.addNode({{"translation", {1.0, 0.0, 0.0}}})}); // a node, no mesh
	const std::string empty = file("empty.gltf");
	b.writeGltf(empty);
	auto nothing = gltf::importFile(empty, options_);
	ASSERT_FALSE(nothing.ok());
	EXPECT_EQ(nothing.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(nothing.error().message.find("nothing to draw"), std::string::npos) << nothing.error().message;

	GltfBuilder c;
	const int pos = c.addFloats(kTrianglePositions, 3, "VEC3");
	c.addNode({{"mesh", c.addMesh({{"POSITION", pos}})}});
	c.doc["scene"] = 0; // names scene 0, but there is no scenes array
	const std::string noscenes = file("noscenes.gltf");
	c.writeGltf(noscenes);
	auto missing = gltf::importFile(noscenes, options_);
	ASSERT_FALSE(missing.ok());
	EXPECT_EQ(missing.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(missing.error().message.find("no scenes"), std::string::npos) << missing.error().message;
}

TEST_F(GltfImport, MissingExternalBufferIsIo)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
	b.doc["buffers"] = json::array({{{"byteLength", b.bin.size()}, {"uri", "missing.bin"}}});
	const std::string path = file("external.gltf");
	std::ofstream(path) << b.doc.dump();

	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::Io);
	expectOneLineNaming(result.error(), path);
}

TEST_F(GltfImport, UrisStayInsideTheModelsFolderUnlessAnyPathIsAllowed)
{
	// The same triangle with its buffer outside the model's folder: by absolute path, by `..`, through a symbolic
	// link inside the folder, and one that is only found relative to the working directory. Each is refused with the
	// path named; the absolute one loads when any path is allowed; a buffer in a subfolder always loads.
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
	const fs::path model_dir = dir_ / "model";
	const fs::path outside_dir = dir_ / "outside";
	fs::create_directories(model_dir / "sub");
	fs::create_directories(outside_dir);
	for (const fs::path& bin : {outside_dir / "tri.bin", model_dir / "sub" / "tri.bin"})
		std::ofstream(bin, std::ios::binary).write(reinterpret_cast<const char*>(b.bin.data()), long(b.bin.size()));
	fs::create_symlink(outside_dir / "tri.bin", model_dir / "link.bin");
	auto withUri = [&](const std::string& uri, const char* name)
	{
		json d = b.doc;
		d["buffers"] = json::array({{{"byteLength", b.bin.size()}, {"uri", uri}}});
		const std::string path = (model_dir / name).string();
		std::ofstream(path) << d.dump();
		return path;
	};
	for (const auto& [uri, name] :
	     std::vector<std::pair<std::string, const char*>>{{(outside_dir / "tri.bin").string(), "absolute.gltf"},
	                                                      {"../outside/tri.bin", "dotdot.gltf"},
	                                                      {"link.bin", "link.gltf"}})
	{
		const std::string path = withUri(uri, name);
		auto result = gltf::importFile(path, options_);
		ASSERT_FALSE(result.ok()) << uri;
		EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument) << uri;
		EXPECT_NE(result.error().message.find("outside the model's folder"), std::string::npos)
		    << result.error().message;
		EXPECT_NE(result.error().message.find("refusing to read"), std::string::npos) << result.error().message;
		expectOneLineNaming(result.error(), path);
	}
	// Only in the working directory (tinygltf also looks there): refused too.
	const fs::path cwd = fs::current_path();
	fs::current_path(outside_dir);
	auto in_cwd = gltf::importFile(withUri("tri.bin", "cwd.gltf"), options_);
	fs::current_path(cwd);
	ASSERT_FALSE(in_cwd.ok());
	EXPECT_NE(in_cwd.error().message.find("outside the model's folder"), std::string::npos) << in_cwd.error().message;

	auto trusted = gltf::importFile(withUri((outside_dir / "tri.bin").string(), "absolute.gltf"), trusted_);
	ASSERT_TRUE(trusted.ok()) << trusted.error().message;
	EXPECT_EQ(trusted.value().triangles, 1u);
	auto inside = gltf::importFile(withUri("sub/tri.bin", "inside.gltf"), options_);
	ASSERT_TRUE(inside.ok()) << inside.error().message;
	EXPECT_EQ(inside.value().triangles, 1u);
}

TEST_F(GltfImport, MalformedJsonIsInvalidArgument)
{
	const std::string path = file("broken.gltf");
	std::ofstream(path) << "{\"asset\": {\"version\": \"2.0\"},\n \"nodes\": [\n";
	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument);
	expectOneLineNaming(result.error(), path);
}

TEST_F(GltfImport, OutOfRangeIndexIsInvalidArgument)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	const int idx = b.addAccessor(b.addView(std::vector<uint16_t>{0, 1, 3}), kU16, 3, "SCALAR");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}}, idx)}})});
	const std::string path = file("bad_index.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument);
	expectOneLineNaming(result.error(), path);
	EXPECT_NE(result.error().message.find("out of range"), std::string::npos) << result.error().message;
}

TEST_F(GltfImport, AccessorPastItsBufferViewIsInvalidArgument)
{
	GltfBuilder b;
	const int view = b.addView(kTrianglePositions);
	const int pos = b.addAccessor(view, kFloat, 4, "VEC3"); // 48 bytes from a 36-byte view
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}})}})});
	const std::string path = file("overrun.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument);
	expectOneLineNaming(result.error(), path);
}

TEST_F(GltfImport, NodeCycleIsInvalidArgument)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	const int mesh = b.addMesh({{"POSITION", pos}});
	b.addNode({{"mesh", mesh}, {"children", {1}}});
	b.addNode({{"children", {0}}});
	b.setScene({0});
	const std::string path = file("cycle.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument);
	expectOneLineNaming(result.error(), path);
}

TEST_F(GltfImport, UnknownPrimitiveModeIsInvalidArgument)
{
	GltfBuilder b;
	const int pos = b.addFloats(kTrianglePositions, 3, "VEC3");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", pos}}, -1, -1, 7)}})});
	const std::string path = file("mode7.glb");
	b.writeGlb(path);

	auto result = gltf::importFile(path, options_);
	ASSERT_FALSE(result.ok());
	EXPECT_EQ(result.error().code, ErrorCode::InvalidArgument);
	EXPECT_NE(result.error().message.find("mode"), std::string::npos) << result.error().message;
	expectOneLineNaming(result.error(), path);
}

TEST_F(GltfImport, CorruptedFilesNeverCrash)
{
	// Every truncation and a few hundred seeded byte mutations of a textured, indexed .glb: each import either
	// succeeds or fails with a one-line error naming the file, and never reads out of bounds.
	const std::vector<uint8_t> rgba = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255};
	const std::vector<uint8_t> png = encodePng(2, 2, 4, rgba);
	GltfBuilder b;
	const int pos = b.addFloats({0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}, 3, "VEC3");
	const int uv = b.addFloats({0, 0, 1, 0, 0, 1, 1, 1}, 2, "VEC2");
	const int idx = b.addAccessor(b.addView(std::vector<uint8_t>{0, 1, 2, 2, 1, 3}), kU8, 6, "SCALAR");
	b.doc["images"] = json::array({{{"bufferView", b.addView(png)}, {"mimeType", "image/png"}}});
	b.doc["textures"] = json::array({{{"source", 0}}});
	b.doc["materials"] = json::array({{{"pbrMetallicRoughness", {{"baseColorTexture", {{"index", 0}}}}}}});
	const int mesh = b.addMesh({{"POSITION", pos}, {"TEXCOORD_0", uv}}, idx, 0);
	b.setScene({b.addNode({{"mesh", mesh}, {"children", {1}}})});
	b.addNode({{"mesh", mesh}, {"translation", {1.0, 0.0, 0.0}}});
	const std::string original = file("original.glb");
	b.writeGlb(original);
	ASSERT_TRUE(gltf::importFile(original, options_).ok());

	std::ifstream in(original, std::ios::binary);
	const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	const std::string path = file("corrupt.glb");
	auto check = [&](const std::vector<char>& data)
	{
		std::ofstream(path, std::ios::binary | std::ios::trunc).write(data.data(), std::streamsize(data.size()));
		auto result = gltf::importFile(path, options_);
		if (!result.ok())
			expectOneLineNaming(result.error(), path);
	};
	for (size_t n = 0; n < bytes.size(); n += 3)
		check(std::vector<char>(bytes.begin(), bytes.begin() + long(n)));
	uint64_t state = 0x9E3779B97F4A7C15ull;
	auto next = [&]
	{
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		return state;
	};
	for (int i = 0; i < 400; ++i)
	{
		std::vector<char> data = bytes;
		const int flips = 1 + int(next() % 3);
		for (int f = 0; f < flips; ++f)
		{
			const size_t at = 20 + size_t(next() % (data.size() - 20)); // keep the GLB header, corrupt the rest
			data[at] = (next() % 2) ? char(next()) : "0123456789-e.,:{}[]\""[next() % 20];
		}
		check(data);
	}
}

} // namespace
