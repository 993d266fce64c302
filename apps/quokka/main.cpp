// quokka — command-line front end: parses arguments and dispatches to one command.
#include "commands.hpp"
#include "scene_run.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include <unistd.h>

#include <quokka/base/version.hpp>

#ifdef QUOKKA_JEMALLOC
// jemalloc reads this at its initialisation: back the heap with transparent huge pages (the kernel's default policy,
// "madvise", gives them only to memory that asks). At 10^6 objects the renderer's per-object structures span
// gigabytes; with 4 KiB pages a cache miss on them is usually a TLB miss as well (docs/benchmarks.md § heap).
extern "C" const char* malloc_conf; // NOLINT: jemalloc's configuration symbol
const char* malloc_conf = "thp:always,metadata_thp:auto";
#endif

int main(int argc, char** argv)
{
	using namespace quokka::app;
	CLI::App app{"quokka — incremental, GPU-driven rendering of huge, living scenes on Vulkan"};
	app.require_subcommand(1);
	app.set_version_flag("--version", std::string("quokka ") + QUOKKA_VERSION_STRING);

	InfoOptions info;
	CLI::App* info_cmd = app.add_subcommand("info", "print the Vulkan device, driver, features and limits");
	info.device.addTo(*info_cmd);
	info_cmd->add_flag("--json", info.json, "one JSON object on stdout");

	RenderOptions render;
	CLI::App* render_cmd = app.add_subcommand("render", "render a scene offscreen and write a PNG");
	render.device.addTo(*render_cmd);
	CLI::Option* render_scene =
	    render_cmd->add_option("--scene", render.scene, "built-in scene: triangle, grid, city, meshlets");
	render_cmd->add_option("--gltf", render.gltf, "render a glTF 2.0 file (.gltf or .glb) instead of a built-in scene")
	    ->excludes(render_scene);
	render_cmd->add_flag("--gltf-any-path", render.gltf_any_path,
	                     "let the glTF file's buffer and image URIs leave its folder (trusted input only)");
	CLI::Option* render_objects =
	    render_cmd->add_option("--objects", render.objects, "objects of a generated scene (grid: 1000, city: 20000)")
	        ->check(CLI::Range(1u, 10000000u));
	render_cmd->add_option("--seed", render.seed, "seed of a generated scene");
	render_cmd
	    ->add_option("--path", render.path,
	                 "render path of scene-graph scenes: heap (the default: the heap draws what it can in a few draws "
	                 "per bucket, the classic path the rest) or classic (a draw per object)")
	    ->check(CLI::IsMember({"classic", "heap"}));
	render_cmd
	    ->add_option("--heap", render.heap_switch,
	                 "on|off: the heap path's switch (off: every object drawn by the classic path through the router)")
	    ->check(CLI::IsMember({"on", "off"}));
	render_cmd
	    ->add_option("--textures", render.textures,
	                 "auto|bindless|atlas|bound: how the heap path draws textures — a bindless table (where the device "
	                 "has descriptor indexing) or an atlas, so that objects differing only in their textures share a "
	                 "draw, or bound per draw in a bucket per texture set; auto (the default): bindless where the "
	                 "device allows, else atlas")
	    ->check(CLI::IsMember({"auto", "bindless", "atlas", "bound"}));
	render_cmd->add_flag("--compare", render.compare,
	                     "render the same frames on the classic path first, then on the heap path (implies --path "
	                     "heap; the image is the heap path's) and print the two side by side");
	render_cmd->add_flag("--explain-routing", render.explain_routing,
	                     "heap path: print how many objects each routing reason sends where");
	render_cmd->add_option("--draw", render.draw, "heap draw strategy: auto, indirect, megacall")
	    ->check(CLI::IsMember({"auto", "indirect", "megacall"}));
	render_cmd
	    ->add_option("--max-chunk-bytes", render.max_chunk_bytes,
	                 "heap arena chunk size in bytes (default: min(maxStorageBufferRange, 256 MiB))")
	    ->check(CLI::Range(uint64_t(4096), uint64_t(1) << 32));
	render_cmd
	    ->add_option("--convert-threads", render.convert_threads,
	                 "heap: worker threads converting vertex and index data while a frame places many objects (0: on "
	                 "the frame's thread; default 4)")
	    ->check(CLI::Range(0u, 64u));
	render_cmd
	    ->add_option("--write-in-place", render.write_in_place,
	                 "heap: on (the default) writes a frame's changes straight into device memory the host can map "
	                 "(resizable BAR, unified memory) while no earlier frame is in flight; off stages and copies them")
	    ->transform(CLI::IsMember(std::map<std::string, bool>{{"on", true}, {"off", false}}));
	render_cmd->add_option("--width", render.width, "framebuffer width in pixels")->check(CLI::Range(1u, 16384u));
	render_cmd->add_option("--height", render.height, "framebuffer height in pixels")->check(CLI::Range(1u, 16384u));
	render_cmd->add_option("--frames", render.frames, "frames to render (timed; the last is written)")
	    ->check(CLI::Range(1u, 100000u));
	render_cmd->add_option("--samples", render.samples, "MSAA samples: 1, 2, 4 or 8")
	    ->check(CLI::IsMember({1, 2, 4, 8}));
	render_cmd->add_option("--out", render.out, "output PNG path");
	render_cmd
	    ->add_option("--meshlet-path", render.meshlet_path,
	                 "meshlets scene: auto (mesh shaders where available), vertex or mesh")
	    ->check(CLI::IsMember({"auto", "vertex", "mesh"}));
	render_cmd->add_flag("--json", render.json, "one JSON object on stdout");
	render_cmd->add_option("--view", render.view,
	                       "camera direction AZIMUTH,ELEVATION in degrees (grid, city, glTF; default 34,35)");
	render_cmd->add_flag("--ortho", render.ortho, "orthographic projection (grid, city, glTF)");
	render_cmd->add_option("--origin", render.origin,
	                       "move the scene and its camera by X,Y,Z metres, e.g. 1e7,0,0: georeferenced coordinates "
	                       "(grid, city, glTF)");
	render_cmd->add_option("--camera", render.camera, "use the glTF file's camera N (0 = the first)")
	    ->check(CLI::Range(0, 1 << 20));
	render_cmd->add_flag("--quiet", render.quiet, "no progress on stderr");
	render_cmd->add_flag("--background-pipelines", render.background_pipelines,
	                     "create pipelines on worker threads: frames do not wait for them (draws wait instead); the "
	                     "written frame waits for all");

	BenchOptions bench;
	CLI::App* bench_cmd = app.add_subcommand("bench", "run a benchmark and print medians and same-run ratios");
	bench.device.addTo(*bench_cmd);
	bench_cmd->add_option("name", bench.name, "benchmark: meshlet, draw, update, camera, chain, modes, textures")
	    ->required();
	bench_cmd
	    ->add_option("--objects", bench.objects,
	                 "draw, camera, chain, textures: object counts; modes: records (default 10000 100000 1000000; 1000 "
	                 "10000 on a CPU "
	                 "device); update: "
	                 "scene size (default 1000000; 20000 on a CPU device)")
	    ->check(CLI::Range(1u, 100000000u));
	bench_cmd
	    ->add_option("--path", bench.path, "draw, camera, chain: only this render path (classic, heap); update: heap")
	    ->check(CLI::IsMember({"classic", "heap"}));
	bench_cmd
	    ->add_option("--draw", bench.draw,
	                 "heap draw strategy: auto, indirect, megacall, all (draw: default all; update: default auto)")
	    ->check(CLI::IsMember({"auto", "indirect", "megacall", "all"}));
	bench_cmd->add_option("--max-chunk-bytes", bench.max_chunk_bytes, "heap arena chunk size in bytes")
	    ->check(CLI::Range(uint64_t(4096), uint64_t(1) << 32));
	bench_cmd
	    ->add_option("--convert-threads", bench.convert_threads,
	                 "update: worker threads converting vertex and index data while a frame places many objects (0: "
	                 "on the frame's thread; default 4)")
	    ->check(CLI::Range(0u, 64u));
	bench_cmd
	    ->add_option("--write-in-place", bench.write_in_place,
	                 "heap: on (the default) writes a frame's changes straight into device memory the host can map "
	                 "while no earlier frame is in flight; off stages and copies them")
	    ->transform(CLI::IsMember(std::map<std::string, bool>{{"on", true}, {"off", false}}));
	bench_cmd
	    ->add_option("--textures", bench.textures,
	                 "textures: distinct texture counts (default 10 1000 10000; 10 100 on a CPU device)")
	    ->check(CLI::Range(1u, 1000000u));
	bench_cmd
	    ->add_option("--texture-size", bench.texture_size,
	                 "textures: texels per side of each texture (default 256; 64 on a CPU device)")
	    ->check(CLI::Range(1u, 4096u));
	bench_cmd
	    ->add_option("--op", bench.update_ops, "update: only these operations (add, remove, readd, edit; default all)")
	    ->check(CLI::IsMember({"add", "remove", "readd", "edit"}));
	bench_cmd->add_option("--k", bench.update_k, "update: objects changed per frame (default 1 100 10000)")
	    ->check(CLI::Range(1u, 1000000u));
	bench_cmd
	    ->add_option("--wait", bench.update_wait,
	                 "update: how each frame waits for the GPU: block (sleep in the driver, default) or spin (poll, "
	                 "keeping the core and its caches)")
	    ->check(CLI::IsMember({"block", "spin"}));

	RenderOptions validate;
	CLI::App* validate_cmd =
	    app.add_subcommand("validate", "render a scene on the heap path, then check every chunk and slot of the heap");
	validate.device.addTo(*validate_cmd);
	validate.path = "heap";
	validate.frames = 3;
	validate.samples = 1;
	validate_cmd->add_option("--scene", validate.scene, "built-in scene: grid, city")
	    ->check(CLI::IsMember({"grid", "city"}));
	validate_cmd->add_option("--gltf", validate.gltf, "a glTF 2.0 file instead of a built-in scene")
	    ->excludes(validate_cmd->get_option("--scene"));
	validate_cmd->add_flag("--gltf-any-path", validate.gltf_any_path,
	                       "let the glTF file's buffer and image URIs leave its folder (trusted input only)");
	validate_cmd->add_option("--objects", validate.objects, "objects of a generated scene")
	    ->check(CLI::Range(1u, 10000000u));
	validate_cmd->add_option("--seed", validate.seed, "seed of a generated scene");
	validate_cmd->add_option("--draw", validate.draw, "heap draw strategy: auto, indirect, megacall")
	    ->check(CLI::IsMember({"auto", "indirect", "megacall"}));
	validate_cmd->add_option("--max-chunk-bytes", validate.max_chunk_bytes, "heap arena chunk size in bytes")
	    ->check(CLI::Range(uint64_t(4096), uint64_t(1) << 32));
	validate_cmd->add_option("--frames", validate.frames, "frames to render before validating")
	    ->check(CLI::Range(1u, 100000u));
	validate_cmd->add_flag("--json", validate.json, "one JSON object on stdout");
	validate_cmd->add_flag("--quiet", validate.quiet, "no progress on stderr");
	bench_cmd->add_flag("--json", bench.json, "one JSON object on stdout");
	bench_cmd->add_option("--depth", bench.depth, "chain: depth of the hierarchy the objects hang below (default 16)")
	    ->check(CLI::Range(2u, 64u));
	bench_cmd->add_option("--ops", bench.ops, "allocator alloc+free pairs per run")
	    ->check(CLI::Range(1000, 1000000000));
	bench_cmd->add_option("--reps", bench.reps, "runs per figure (median reported)")->check(CLI::Range(1u, 1000u));
	bench_cmd->add_option("--mib", bench.mib, "GPU working set in MiB (default 512 on a GPU, 64 on a CPU device)")
	    ->check(CLI::Range(1, 65536));

	const std::string first = argc > 1 ? argv[1] : "";
	if (!first.empty() && first[0] != '-' && first != "info" && first != "render" && first != "bench" &&
	    first != "validate")
	{
		std::fprintf(stderr,
		             "quokka: error: unknown command '%s' (expected info, render, bench or validate; see quokka "
		             "--help)\n",
		             argv[1]);
		return 2;
	}
	try
	{
		app.parse(argc, argv);
	}
	catch (const CLI::CallForHelp& e)
	{
		return app.exit(e);
	}
	catch (const CLI::CallForAllHelp& e)
	{
		return app.exit(e);
	}
	catch (const CLI::CallForVersion& e)
	{
		return app.exit(e);
	}
	catch (const CLI::ParseError& e)
	{
		std::fprintf(stderr, "quokka: error: %s (see quokka --help)\n", e.what());
		return 2;
	}

	if (render_cmd->parsed())
	{
		// Options that mean nothing for what is rendered, or an output that could not be what was asked for.
		if (render_objects->count() > 0 &&
		    (!render.gltf.empty() || render.scene == "triangle" || render.scene == "meshlets"))
			return usage("--objects sets the size of a generated scene (grid, city), not of " +
			             (render.gltf.empty() ? "--scene " + render.scene : std::string("a glTF file")));
		const bool camera_options = render_cmd->count("--view") + render_cmd->count("--ortho") +
		                                render_cmd->count("--camera") + render_cmd->count("--origin") >
		                            0;
		if (camera_options && render.gltf.empty() && (render.scene == "triangle" || render.scene == "meshlets"))
			return usage(
			    "--view, --ortho, --camera and --origin place the camera (and scene) of grid, city and glTF scenes, "
			    "not of --scene " +
			    render.scene);
		if (render_cmd->count("--camera") > 0 && render.gltf.empty())
			return usage("--camera N picks a camera of the glTF file (--gltf FILE)");
		if (render_cmd->count("--camera") > 0 && (render_cmd->count("--view") + render_cmd->count("--ortho")) > 0)
			return usage("--camera uses the file's camera; --view and --ortho place a framed one (give one or the "
			             "other)");
		if (render_cmd->count("--view") > 0)
			if (auto spec = viewSpecOf(render); !spec.ok())
				return usage(spec.error().message);
		if (render_cmd->count("--origin") > 0)
			if (auto origin = originOf(render); !origin.ok())
				return usage(origin.error().message);
		if (render_cmd->count("--textures") > 0 && render.path != "heap" && render_cmd->count("--heap") == 0)
			return usage("--textures applies to the heap path (the default), not to --path classic");
		if (render_cmd->count("--heap") > 0 && render.path == "classic" && render_cmd->count("--path") > 0)
			return usage("--heap on|off switches the heap path: it cannot be combined with --path classic");
		if (render.compare && render.path == "classic" && render_cmd->count("--path") > 0)
			return usage("--compare renders the classic path beside the heap path: it cannot be combined with --path "
			             "classic");
		if ((render_cmd->count("--heap") > 0 || render.explain_routing || render.compare) &&
		    (render.scene == "meshlets" || render.scene == "triangle") && render.gltf.empty())
			return usage("--heap, --compare and --explain-routing apply to scene-graph scenes (grid, city, --gltf)");
		if (render.scene == "meshlets" && render_cmd->count("--path") > 0)
			return usage("--path picks the renderer of scene-graph scenes; the meshlets scene has its own "
			             "(--meshlet-path)");
		if (render_cmd->count("--out") > 0)
		{
			const std::string& out = render.out;
			const size_t slash = out.rfind('/');
			const std::string name = slash == std::string::npos ? out : out.substr(slash + 1);
			const size_t dot = name.rfind('.');
			std::string ext = dot == std::string::npos || dot == 0 ? "" : name.substr(dot + 1);
			for (char& c : ext)
				c = char(std::tolower(static_cast<unsigned char>(c)));
			if (out.empty() || out == "-" || name.empty())
				return usage("--out needs a file name (the image is written as PNG)");
			if (!ext.empty() && ext != "png")
				return usage("--out '" + out + "': the image is written as PNG, name a .png file");
		}
	}
	// Settings that are wrong are usage errors (exit 2) before any work starts: --device and the environment
	// (QUOKKA_DEVICE, QUOKKA_VALIDATION).
	const DeviceOptions* device = info_cmd->parsed()     ? &info.device
	                              : render_cmd->parsed() ? &render.device
	                              : bench_cmd->parsed()  ? &bench.device
	                                                     : &validate.device;
	if (auto desc = device->desc(); !desc.ok())
		return usage(desc.error().message);
	else if (std::string problem = desc.value().environmentError(); !problem.empty())
		return usage(problem);

	// Progress lines only where a person watches: a terminal, no --quiet, no --json.
	enableProgress(isatty(STDERR_FILENO) == 1 && ((render_cmd->parsed() && !render.quiet && !render.json) ||
	                                              (validate_cmd->parsed() && !validate.quiet && !validate.json)));
	int rc = 0;
	if (info_cmd->parsed())
		rc = runInfo(info);
	else if (render_cmd->parsed())
		rc = runRender(render);
	else if (bench_cmd->parsed())
		rc = runBench(bench);
	else if (validate_cmd->parsed())
	{
		if (validate.scene == "triangle" && validate.gltf.empty())
			validate.scene = "grid";
		rc = runValidate(validate);
	}
	else
		return fail("no command given (see quokka --help)");
	// Output that could not be written (a full disk, a closed pipe) is an error, not a silent short report.
	if (std::fflush(stdout) != 0 || std::ferror(stdout))
	{
		std::fprintf(stderr, "quokka: error: cannot write standard output: %s\n", std::strerror(errno));
		return rc != 0 ? rc : 1;
	}
	return rc;
}
