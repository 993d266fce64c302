// gltf_builder.hpp — writes small glTF documents for the importer's tests: one JSON document and one binary buffer,
// saved as .gltf (data URI) or .glb; PNG bytes by stb_image_write; typed reads of imported buffers and uniforms.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <quokka/gltf/gltf.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stb_image_write.h>
#include <unistd.h>

namespace quokka::gltf::test
{

using nlohmann::json;

constexpr int kFloat = 5126;
constexpr int kU8 = 5121;
constexpr int kU16 = 5123;
constexpr int kU32 = 5125;

/// Builds a glTF document and its one binary buffer, then writes it as .gltf (data URI) or .glb.
struct GltfBuilder
{
	json doc = {{"asset", {{"version", "2.0"}}}};
	std::vector<uint8_t> bin;

	template <typename T>
	int addView(const std::vector<T>& values, size_t stride = 0)
	{
		while (bin.size() % 4 != 0)
			bin.push_back(0);
		json view = {{"buffer", 0}, {"byteOffset", bin.size()}, {"byteLength", values.size() * sizeof(T)}};
		if (stride != 0)
			view["byteStride"] = stride;
		const auto* p = reinterpret_cast<const uint8_t*>(values.data());
		bin.insert(bin.end(), p, p + values.size() * sizeof(T));
		doc["bufferViews"].push_back(view);
		return int(doc["bufferViews"].size()) - 1;
	}
	int addAccessor(int view, int component_type, size_t count, const char* type, size_t offset = 0)
	{
		doc["accessors"].push_back({{"bufferView", view},
		                            {"byteOffset", offset},
		                            {"componentType", component_type},
		                            {"count", count},
		                            {"type", type}});
		return int(doc["accessors"].size()) - 1;
	}
	int addFloats(const std::vector<float>& values, int components, const char* type)
	{
		return addAccessor(addView(values), kFloat, values.size() / size_t(components), type);
	}
	/// A mesh of one primitive; returns the mesh index.
	int addMesh(json attributes, int indices = -1, int material = -1, int mode = -1)
	{
		json prim = {{"attributes", std::move(attributes)}};
		if (indices >= 0)
			prim["indices"] = indices;
		if (material >= 0)
			prim["material"] = material;
		if (mode >= 0)
			prim["mode"] = mode;
		doc["meshes"].push_back({{"primitives", json::array({prim})}});
		return int(doc["meshes"].size()) - 1;
	}
	int addNode(json node)
	{
		doc["nodes"].push_back(std::move(node));
		return int(doc["nodes"].size()) - 1;
	}
	void setScene(std::vector<int> roots)
	{
		doc["scenes"] = json::array({{{"nodes", roots}}});
		doc["scene"] = 0;
	}

	void writeGlb(const std::string& path)
	{
		while (bin.size() % 4 != 0)
			bin.push_back(0);
		json d = doc;
		if (!bin.empty())
			d["buffers"] = json::array({{{"byteLength", bin.size()}}});
		std::string text = d.dump();
		while (text.size() % 4 != 0)
			text.push_back(' ');
		std::vector<uint8_t> out;
		auto u32 = [&](uint32_t v)
		{
			for (int i = 0; i < 4; ++i)
				out.push_back(uint8_t(v >> (8 * i)));
		};
		const uint32_t total = 12 + 8 + uint32_t(text.size()) + (bin.empty() ? 0 : 8 + uint32_t(bin.size()));
		out.insert(out.end(), {'g', 'l', 'T', 'F'});
		u32(2);
		u32(total);
		u32(uint32_t(text.size()));
		u32(0x4E4F534A); // JSON
		out.insert(out.end(), text.begin(), text.end());
		if (!bin.empty())
		{
			u32(uint32_t(bin.size()));
			u32(0x004E4942); // BIN
			out.insert(out.end(), bin.begin(), bin.end());
		}
		std::ofstream(path, std::ios::binary)
		    .write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
	}

	void writeGltf(const std::string& path)
	{
		json d = doc;
		if (!bin.empty())
		{
			std::string uri = "data:application/octet-stream;base64,";
			uri.append(base64(bin));
			d["buffers"] = json::array({{{"byteLength", bin.size()}, {"uri", uri}}});
		}
		std::ofstream(path) << d.dump(1);
	}

	static std::string base64(const std::vector<uint8_t>& data)
	{
		static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		std::string out;
		for (size_t i = 0; i < data.size(); i += 3)
		{
			uint32_t v = uint32_t(data[i]) << 16;
			if (i + 1 < data.size())
				v |= uint32_t(data[i + 1]) << 8;
			if (i + 2 < data.size())
				v |= data[i + 2];
			out.push_back(kAlphabet[(v >> 18) & 63]);
			out.push_back(kAlphabet[(v >> 12) & 63]);
			out.push_back(i + 1 < data.size() ? kAlphabet[(v >> 6) & 63] : '=');
			out.push_back(i + 2 < data.size() ? kAlphabet[v & 63] : '=');
		}
		return out;
	}
};

/// PNG bytes of `pixels` (rows top to bottom, `components` bytes per pixel), written by stb_image_write.
inline std::vector<uint8_t> encodePng(int width, int height, int components, const std::vector<uint8_t>& pixels)
{
	std::vector<uint8_t> png;
	stbi_write_png_to_func(
	    [](void* ctx, void* data, int size)
	    {
		    auto* out = static_cast<std::vector<uint8_t>*>(ctx);
		    out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
	    },
	    &png, width, height, components, pixels.data(), width * components);
	return png;
}

template <typename T>
std::vector<T> bytesAs(const scene::ArrayBuffer& b)
{
	std::vector<T> out(b.size() / sizeof(T));
	if (!out.empty())
		std::memcpy(out.data(), b.data(), out.size() * sizeof(T));
	return out;
}

template <typename T>
T uniformAs(const scene::RenderObject& o, const std::string& name)
{
	return std::get<T>(o.uniforms.at(name).force());
}

/// A temporary folder per test and import options whose shared uniforms are a view cval and two constants.
class GltfFixture : public ::testing::Test
{
protected:
	void SetUp() override
	{
		std::string name = "quokka_gltf_test_";
		name.append(std::to_string(getpid())).append("_");
		name.append(::testing::UnitTest::GetInstance()->current_test_info()->name());
		dir_ = std::filesystem::temp_directory_path() / name;
		std::filesystem::create_directories(dir_);
	}
	void TearDown() override
	{
		std::error_code ec;
		std::filesystem::remove_all(dir_, ec);
	}
	std::string file(const char* name) const { return (dir_ / name).string(); }

	static void expectOneLineNaming(const Error& e, const std::string& path)
	{
		EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
		EXPECT_NE(e.message.find(path), std::string::npos) << e.message;
	}

	std::filesystem::path dir_;
	adaptive::cval<math::Trafo3d> view_{math::Trafo3d::identity()};
	ImportOptions options_{false,
	                       {{"ViewTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(view_))},
	                        {"ProjTrafo", scene::uniform(math::Trafo3d::identity())},
	                        {"LightLocation", scene::uniform(math::V3f(0.0f))}}};
	ImportOptions trusted_{true, options_.shared_uniforms};
};

} // namespace quokka::gltf::test
