// bench_flip.hpp — the declared-flip rows of `quokka bench modes` (bench_flip.cpp).
#pragma once

#include <cstdint>

#include <quokka/base/result.hpp>
#include <quokka/gpu/device.hpp>

#include "scene_run.hpp"

namespace quokka::app
{

struct FlipRow
{
	uint32_t objects = 0;
	const char* routing = "";
	double place_ms = 0, static_us = 0, flip_us = 0, static_gpu_ms = 0, flip_gpu_ms = 0;
	double flip_heap_update_us = 0, flip_heap_upload_us = 0, flip_heap_prepare_us = 0; ///< parts of flip_us
	uint32_t refreshed = 0, respecialised = 0;                                         ///< of the last flip frame
};

/// `n` objects under a front-face rule over one shared declared front face, placed, then `reps` static and `reps`
/// flip frames (medians; CPU: the task's update, GPU: the frame). Errors: as the renderer.
Result<FlipRow> measureDeclaredFlip(gpu::Device& device, BenchSession& session, uint32_t n, bool gpu_routing,
                                    uint32_t reps);

} // namespace quokka::app
