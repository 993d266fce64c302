// `quokka render --scene meshlets` (issue #6).
#include "commands.hpp"

namespace quokka::app
{

int runRenderMeshlets(const RenderOptions&)
{
	return fail("scene 'meshlets' is not built yet");
}

} // namespace quokka::app
