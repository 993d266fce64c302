// gltf_render_test.cpp — imported glTF drawn on the device, on both render paths: a LINES primitive lands on exactly
// its pixel row in its material colour (unlit), a POINTS primitive on exactly its pixel, and a MASK material with
// vertex-colour alpha keeps exactly the half of a quad above the cutoff. The shared uniforms are identity view and
// projection, so positions are clip coordinates.
#include "../gpu/gpu_fixture.hpp"
#include "gltf_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <quokka/adaptive/aset.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/runtime/runtime.hpp>

namespace
{

using namespace quokka;
using namespace quokka::gltf::test;
using Pixel = std::array<uint8_t, 4>;

constexpr uint32_t kSize = 32;
/// Clip coordinate of the centre of pixel `i` (Vulkan: x right, y down).
constexpr float centre(uint32_t i)
{
	return (float(i) + 0.5f) / float(kSize) * 2.0f - 1.0f;
}

class GltfRender : public gpu::test::GpuTest, public ::testing::WithParamInterface<runtime::RenderPath>
{
protected:
	void TearDown() override
	{
		std::error_code ec;
		std::filesystem::remove_all(dir_, ec);
		GpuTest::TearDown();
	}

	/// Imports `b` and renders one frame of it; returns the pixels.
	gpu::Rgba8Image render(GltfBuilder& b)
	{
		std::filesystem::create_directories(dir_);
		const std::string path = (dir_ / "scene.glb").string();
		b.writeGlb(path);
		gltf::ImportOptions options;
		options.shared_uniforms = {{"ViewTrafo", scene::uniform(math::Trafo3d::identity())},
		                           {"ProjTrafo", scene::uniform(math::Trafo3d::identity())}};
		auto imported = gltf::importFile(path, options);
		EXPECT_TRUE(imported.ok()) << imported.error().message;
		if (!imported.ok())
			return {};
		auto rt = runtime::Runtime::create(device());
		EXPECT_TRUE(rt.ok());
		adaptive::cset<scene::RenderObjectPtr> objects;
		for (const auto& o : imported->objects)
			objects.add(o);
		adaptive::clist<scene::Command> commands;
		commands.append(scene::clearCommand(math::V4f(0, 0, 0, 1)));
		commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
		scene::FramebufferSignature sig;
		runtime::RenderOptions render_options;
		render_options.path = GetParam();
		gpu::Rgba8Image pixels;
		{
			auto task = rt.value()->compile(sig, commands, render_options);
			auto fb = runtime::createFramebuffer(device(), sig, kSize, kSize);
			EXPECT_TRUE(fb.ok());
			auto list = device().beginCommands();
			EXPECT_TRUE(list.ok());
			auto ran = task->run(*list, *fb);
			EXPECT_TRUE(ran.ok()) << ran.error().message;
			EXPECT_TRUE(device().submitAndWait(std::move(*list)).ok());
			auto read = gpu::readImageRgba8(device(), *fb->output());
			EXPECT_TRUE(read.ok());
			pixels = std::move(read).value();
		}
		EXPECT_TRUE(device().waitIdle().ok());
		return pixels;
	}

	/// One directory per test and process; the parameterised name ("Test/classic") loses its '/', so TearDown's
	/// remove_all takes the whole directory (a nested one left its empty parent behind in the temporary folder).
	std::filesystem::path dir_ =
	    std::filesystem::temp_directory_path() / ("quokka_gltf_render_" + std::to_string(getpid()) + "_" + flatName());

	static std::string flatName()
	{
		std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
		std::replace(name.begin(), name.end(), '/', '_');
		return name;
	}
};

TEST_P(GltfRender, LinesPointsAndAnAlphaMaskDrawExactlyTheirPixels)
{
	GltfBuilder b;
	b.doc["materials"] = json::array({{{"pbrMetallicRoughness", {{"baseColorFactor", {0.0, 1.0, 0.0, 1.0}}}}},
	                                  {{"pbrMetallicRoughness", {{"baseColorFactor", {1.0, 0.0, 0.0, 1.0}}}}},
	                                  {{"alphaMode", "MASK"}, {"alphaCutoff", 0.5}, {"doubleSided", true}}});
	// A horizontal line through the centres of row 16, from x = −1 to 1.
	const int line = b.addFloats({-1.0f, centre(16), 0.5f, 1.0f, centre(16), 0.5f}, 3, "VEC3");
	// One point at the centre of pixel (4, 4).
	const int point = b.addFloats({centre(4), centre(4), 0.5f}, 3, "VEC3");
	// A quad over rows 24…31 whose vertex alpha runs 0 (left) … 1 (right): x < 0 falls below the cutoff.
	const int quad = b.addFloats({-1, 0.5f, 0.5f, 1, 0.5f, 0.5f, 1, 1, 0.5f, -1, 1, 0.5f}, 3, "VEC3");
	const int alpha = b.addFloats({1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, 4, "VEC4");
	const int idx = b.addAccessor(b.addView(std::vector<uint16_t>{0, 1, 2, 0, 2, 3}), kU16, 6, "SCALAR");
	b.setScene({b.addNode({{"mesh", b.addMesh({{"POSITION", line}}, -1, 0, 1)}}),
	            b.addNode({{"mesh", b.addMesh({{"POSITION", point}}, -1, 1, 0)}}),
	            b.addNode({{"mesh", b.addMesh({{"POSITION", quad}, {"COLOR_0", alpha}}, idx, 2)}})});
	const gpu::Rgba8Image img = render(b);
	ASSERT_EQ(img.width, kSize);

	const Pixel black{0, 0, 0, 255}, green{0, 255, 0, 255}, red{255, 0, 0, 255};
	for (uint32_t x = 1; x + 1 < kSize; ++x)
	{
		EXPECT_EQ(img.at(x, 16), green) << x;
		EXPECT_EQ(img.at(x, 15), black) << x;
		EXPECT_EQ(img.at(x, 17), black) << x;
	}
	EXPECT_EQ(img.at(4, 4), red);
	for (auto [x, y] : {std::pair{3u, 4u}, {5u, 4u}, {4u, 3u}, {4u, 5u}})
		EXPECT_EQ(img.at(x, y), black) << x << "," << y;
	// The mask: left of the middle discarded, right of it drawn (lit, so only "not background" is exact).
	for (uint32_t y = 25; y < 31; ++y)
	{
		EXPECT_EQ(img.at(4, y), black) << y;
		EXPECT_EQ(img.at(12, y), black) << y;
		EXPECT_NE(img.at(20, y), black) << y;
		EXPECT_NE(img.at(28, y), black) << y;
	}
}

INSTANTIATE_TEST_SUITE_P(Paths, GltfRender, ::testing::Values(runtime::RenderPath::Classic, runtime::RenderPath::Heap),
                         [](const ::testing::TestParamInfo<runtime::RenderPath>& param)
                         { return std::string(runtime::pathName(param.param)); });

} // namespace
