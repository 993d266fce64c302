// hello_triangle — the README's API example as a program: one triangle whose colour is an application input,
// rendered once orange and once blue; the second frame re-uploads one uniform block. Writes the image to the PNG
// named on the command line (default hello_triangle.png) and prints the centre pixel.
//     hello_triangle [out.png]        (QUOKKA_DEVICE=cpu picks lavapipe)
#include <cstdio>
#include <string>

#include <quokka/adaptive/aset.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/runtime/runtime.hpp>

using namespace quokka;

int main(int argc, char** argv)
{
	const std::string out = argc > 1 ? argv[1] : "hello_triangle.png";
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
	if (auto written = gpu::writePng(out, pixels); !written.ok())
	{
		std::fprintf(stderr, "hello_triangle: %s\n", written.error().message.c_str());
		return 1;
	}
	const auto centre = pixels.at(32, 32);
	std::printf("wrote %s; centre pixel %d %d %d %d\n", out.c_str(), centre[0], centre[1], centre[2], centre[3]);
	return 0;
}
