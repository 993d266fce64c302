// The README's 20-line API example, verbatim between the markers, so the README cannot drift from the API.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <quokka/adaptive/aset.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/runtime/runtime.hpp>

namespace
{
using namespace quokka;

int readmeExample(gpu::Rgba8Image& result)
{
	// clang-format off
	// --- README begin
	auto device = gpu::Device::create(gpu::DeviceDesc::fromEnvironment()).value(); // QUOKKA_DEVICE=auto|gpu|cpu
	auto runtime = runtime::Runtime::create(*device).value();                      // pipeline, buffer, texture caches
	adaptive::cval<math::V4f> color(math::V4f(1, 0.4f, 0, 1));                     // an input the application changes
	scene::RenderObject tri;
	tri.effect = fx::compose("flat", fx::stock::trafo(), fx::stock::constantColor()).value();
	tri.attributes["Positions"] = {adaptive::constant(scene::ArrayBuffer::of(std::vector<math::V3f>{
	    {-0.5f, -0.5f, 0.5f}, {-0.5f, 0.5f, 0.5f}, {0.5f, 0.0f, 0.5f}})), VK_FORMAT_R32G32B32_SFLOAT};
	tri.uniforms["ConstantColor"] = scene::uniform(color);            // trafos not given default to identity
	tri.draw_call = adaptive::constant(scene::DrawCall{.count = 3});
	adaptive::cset<scene::RenderObjectPtr> objects;                     // add/remove objects at any time
	objects.add(scene::makeRenderObject(std::move(tri)));
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0, 0, 0, 1)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
	scene::FramebufferSignature signature;                              // "Colors" RGBA8 + D32 depth
	auto task = runtime->compile(signature, commands);                  // the heap router: a draw per bucket
	auto fb = runtime::createFramebuffer(*device, signature, 64, 64).value();
	for (math::V4f c : {math::V4f(1, 0.4f, 0, 1), math::V4f(0, 0.4f, 1, 1)}) {
	    color.setValue(c);                                              // the next frame re-uploads one uniform block
	    auto cmd = device->beginCommands().value();
	    if (!task->run(cmd, fb) || !device->submitAndWait(std::move(cmd))) return 1;
	}
	auto pixels = gpu::readImageRgba8(*device, *fb.output()).value();   // the triangle is blue now
	// --- README end
	// clang-format on
	result = pixels;
	return device->validationErrorCount() == 0 ? 0 : 2;
}

// Lines of `text` from the line after the one containing `begin` to the line before `end`, whitespace-collapsed.
std::vector<std::string> block(const std::string& path, const std::string& begin, const std::string& end)
{
	std::ifstream in(path);
	std::vector<std::string> lines;
	bool inside = false;
	for (std::string line; std::getline(in, line);)
	{
		if (inside && line.find(end) != std::string::npos)
			break;
		if (inside)
		{
			std::istringstream words(line);
			std::string word, collapsed;
			while (words >> word)
			{
				if (!collapsed.empty())
					collapsed += ' ';
				collapsed += word;
			}
			if (!collapsed.empty())
				lines.push_back(collapsed);
		}
		if (!inside && line.find(begin) != std::string::npos)
			inside = true;
	}
	return lines;
}
} // namespace

TEST(ReadmeExample, MatchesTheReadme)
{
	const auto readme = block(QUOKKA_SOURCE_DIR "/README.md", "using namespace quokka;", "```");
	const auto here =
	    block(QUOKKA_SOURCE_DIR "/tests/classic/readme_example_test.cpp", "--- README begin", "--- README end");
	ASSERT_FALSE(readme.empty());
	EXPECT_EQ(readme, here);
	// The installed-package example program carries the same block (tests/package builds and runs it).
	EXPECT_EQ(readme, block(QUOKKA_SOURCE_DIR "/examples/hello_triangle.cpp", "--- README begin", "--- README end"));
}

TEST(ReadmeExample, RendersTheTriangleInItsLatestColour)
{
	gpu::Rgba8Image pixels;
	ASSERT_EQ(readmeExample(pixels), 0);
	ASSERT_EQ(pixels.width, 64u);
	EXPECT_EQ(pixels.at(24, 32), (std::array<uint8_t, 4>{0, 102, 255, 255})); // inside the triangle
	EXPECT_EQ(pixels.at(60, 4), (std::array<uint8_t, 4>{0, 0, 0, 255}));      // background
}
