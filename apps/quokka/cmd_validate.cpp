// `quokka validate`: renders a scene on the heap path for a few (orbiting) frames, then runs every heap diagnostic over
// every chunk and slot and exits non-zero on any finding. Also used by `render --path heap --validate`.
#include "scene_run.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace quokka::app
{

Result<std::vector<std::string>> heapFindings(runtime::RenderTask& task)
{
	return task.validate();
}

int runValidate(const RenderOptions& o)
{
	auto session = openScene(o);
	if (!session.ok())
		return fail(session.error());
	gpu::Device& dev = *session->device;
	auto options = renderOptionsOf("heap", o.draw, o.max_chunk_bytes);
	if (!options.ok())
		return fail(options.error());
	auto run = runFrames(dev, *session->runtime, *session->framebuffer, session->scene, session->globals, o.frames,
	                     true, options.value());
	if (!run.ok())
		return fail(run.error());
	auto findings = heapFindings(*run->task);
	if (!findings.ok())
		return fail(findings.error());
	const heap::HeapStats& h = run->last.heap;
	if (o.json)
	{
		nlohmann::ordered_json j;
		j["device"] = dev.info().name;
		j["objects"] = h.objects;
		j["buckets"] = h.buckets;
		j["slots"] = h.slots;
		j["chunks"] = h.chunks;
		j["findings"] = findings.value();
		std::printf("%s\n", j.dump(2).c_str());
	}
	else
	{
		std::printf("quokka validate on %s: %u objects, %u buckets, %u slots (%u megacall), %u chunks — %zu findings\n",
		            dev.info().name.c_str(), h.objects, h.buckets, h.slots, h.megacall_slots, h.chunks,
		            findings->size());
		for (const std::string& f : findings.value())
			std::printf("  %s\n", f.c_str());
	}
	run->task.reset();
	session->close();
	const int v = validationExit(dev);
	return findings->empty() ? v : 1;
}

} // namespace quokka::app
