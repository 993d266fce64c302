// gltf_to_png — renders a glTF 2.0 file (.gltf or .glb) to a PNG with quokka's library API: gltf::importFile makes
// the render objects, which share the application's camera and light inputs; the view is the file's first camera
// or, when it has none, one that frames the scene's bounds from the front-right and above.
//     gltf_to_png model.glb out.png [width height]        (QUOKKA_DEVICE=cpu picks lavapipe)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <quokka/adaptive/aset.hpp>
#include <quokka/gltf/gltf.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/runtime/runtime.hpp>

using namespace quokka;

namespace
{

int fail(const std::string& message)
{
	std::fprintf(stderr, "gltf_to_png: %s\n", message.c_str());
	return 1;
}

/// A view and projection that show all of `bounds` with some margin, for a vertical field of view `fovy`.
void frame(const math::Box3d& bounds, double fovy, double aspect, math::Trafo3d& view, math::Trafo3d& proj)
{
	const math::V3d centre = bounds.center();
	const double radius = std::max(0.5 * glm::length(bounds.size()), 1e-6);
	// The bounding sphere fits the narrower of the two fields of view, with 10 % to spare.
	const double half_fov = std::min(fovy, 2.0 * std::atan(std::tan(0.5 * fovy) * aspect)) * 0.5;
	const double distance = 1.1 * radius / std::sin(half_fov);
	const math::V3d eye = centre + distance * glm::normalize(math::V3d(0.6, 0.5, 1.0));
	view = math::lookAt(eye, centre, math::V3d(0, 1, 0));
	proj = math::perspective(fovy, aspect, std::max(distance - 1.5 * radius, distance * 1e-3), distance + 1.5 * radius);
}

} // namespace

int main(int argc, char** argv)
{
	if (argc != 3 && argc != 5)
		return std::fprintf(stderr, "usage: gltf_to_png MODEL.gltf|.glb OUT.png [WIDTH HEIGHT]\n"), 2;
	const std::string model = argv[1], out = argv[2];
	const uint32_t width = argc == 5 ? uint32_t(std::strtoul(argv[3], nullptr, 10)) : 640;
	const uint32_t height = argc == 5 ? uint32_t(std::strtoul(argv[4], nullptr, 10)) : 480;
	if (width == 0 || height == 0 || width > 8192 || height > 8192)
		return std::fprintf(stderr, "gltf_to_png: WIDTH and HEIGHT must be 1…8192\n"), 2;

	auto device = gpu::Device::create(gpu::DeviceDesc::fromEnvironment());
	if (!device.ok())
		return fail(device.error().message);
	auto runtime = runtime::Runtime::create(*device.value());
	if (!runtime.ok())
		return fail(runtime.error().message);

	// The inputs every object reads: one write moves the camera for all of them.
	adaptive::cval<math::Trafo3d> view(math::Trafo3d::identity()), proj(math::Trafo3d::identity());
	adaptive::cval<math::V3f> light(math::V3f(0.0f));
	gltf::ImportOptions options;
	options.shared_uniforms = {
	    {"ViewTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(view))},
	    {"ProjTrafo", scene::uniform(static_cast<const adaptive::aval<math::Trafo3d>&>(proj))},
	    {"LightLocation", scene::uniform(static_cast<const adaptive::aval<math::V3f>&>(light))},
	};
	auto imported = gltf::importFile(model, options);
	if (!imported.ok())
		return fail(imported.error().message);
	const gltf::Scene& scene = imported.value();

	const double aspect = double(width) / double(height);
	math::Trafo3d v, p;
	if (!scene.cameras.empty())
	{
		v = scene.cameras.front().view;
		p = scene.cameras.front().projection(aspect);
	}
	else
		frame(scene.bounds, 0.8, aspect, v, p);
	view.setValue(v);
	proj.setValue(p);
	light.setValue(math::V3f(v.inverse().transformPos(math::V3d(0.0)))); // a headlight

	adaptive::cset<scene::RenderObjectPtr> objects;
	for (const scene::RenderObjectPtr& o : scene.objects)
		objects.add(o);
	adaptive::clist<scene::Command> commands;
	commands.append(scene::clearCommand(math::V4f(0.1f, 0.1f, 0.12f, 1)));
	commands.append(scene::RenderCommand{scene::RenderTree::ofObjects(objects)});
	scene::FramebufferSignature signature;
	signature.samples = VK_SAMPLE_COUNT_4_BIT;
	auto task = runtime.value()->compile(signature, commands);
	auto fb = runtime::createFramebuffer(*device.value(), signature, width, height);
	if (!fb.ok())
		return fail(fb.error().message);
	auto cmd = device.value()->beginCommands();
	if (!cmd.ok())
		return fail(cmd.error().message);
	if (auto ran = task->run(cmd.value(), fb.value()); !ran.ok())
		return fail(ran.error().message);
	if (auto done = device.value()->submitAndWait(std::move(cmd).value()); !done.ok())
		return fail(done.error().message);
	auto pixels = gpu::readImageRgba8(*device.value(), *fb.value().output());
	if (!pixels.ok())
		return fail(pixels.error().message);
	if (auto written = gpu::writePng(out, pixels.value()); !written.ok())
		return fail(written.error().message);
	std::printf("wrote %s: %zu objects, %llu triangles, %llu lines, %llu points, %s\n", out.c_str(),
	            scene.objects.size(), (unsigned long long)scene.triangles, (unsigned long long)scene.lines,
	            (unsigned long long)scene.points,
	            scene.cameras.empty() ? "framed camera" : ("camera '" + scene.cameras.front().name + "'").c_str());
	return 0;
}
