// copy_command.hpp — recording a scene::CopyCommand (runtime internal).
#pragma once

#include <quokka/base/result.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/runtime/runtime.hpp>
#include <quokka/scene/command.hpp>

namespace quokka::runtime::detail
{

/// Records `copy` into `list` (outside a render pass) against `fb`. Errors: InvalidArgument naming what does not fit
/// (a missing attachment, image or buffer; sizes or formats that do not match; a format without a known texel size).
Result<void> recordCopy(gpu::CommandList& list, const Framebuffer& fb, const scene::CopyCommand& copy);

} // namespace quokka::runtime::detail
