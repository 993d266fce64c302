// `quokka bench NAME`: the benchmarks of the issues that define them. Each prints medians and
// same-run ratios, or one JSON object with --json.
#include "commands.hpp"

namespace quokka::app
{

int runBench(const BenchOptions& options)
{
	if (options.name == "meshlet")
		return runBenchMeshlet(options);
	if (options.name == "draw")
		return runBenchDraw(options);
	if (options.name == "update")
		return runBenchUpdate(options);
	if (options.name == "camera")
		return runBenchCamera(options);
	if (options.name == "chain")
		return runBenchChain(options);
	if (options.name == "modes")
		return runBenchModes(options);
	if (options.name == "textures")
		return runBenchTextures(options);
	return usage("unknown benchmark '" + options.name +
	             "' (available: meshlet, draw, update, camera, chain, modes, textures)");
}

} // namespace quokka::app
