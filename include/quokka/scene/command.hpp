// quokka/scene/command.hpp — the commands of a render task: Clear, Render, Copy and Custom.
//
// A RenderTask (runtime module) runs an adaptive list of commands against a framebuffer supplied at run time. Clear
// values are adaptive; Render draws a RenderTree; Copy copies one colour attachment into an application image; Custom
// records arbitrary commands. A Clear immediately followed by a Render becomes one pass with clearing load ops.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include <quokka/adaptive/aval.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/math/math.hpp>
#include <quokka/scene/render_tree.hpp>

namespace quokka::scene
{

struct ClearCommand
{
	std::map<std::string, adaptive::aval<math::V4f>> colors; ///< by attachment name; absent attachments keep content
	std::optional<adaptive::aval<float>> depth;
	std::optional<adaptive::aval<uint32_t>> stencil;
	bool operator==(const ClearCommand&) const = default;
};

struct RenderCommand
{
	RenderTreePtr tree;
	bool operator==(const RenderCommand&) const = default;
};

struct CopyCommand
{
	std::string attachment = "Colors";            ///< source colour attachment (resolved when multisampled)
	adaptive::aval<gpu::ImageHandle> destination; ///< same size and format as the attachment
	bool operator==(const CopyCommand&) const = default;
};

/// Records arbitrary commands into the task's command list, outside any render pass.
struct CustomCommand
{
	std::function<void(gpu::CommandList&)> record;
	/// Functions have no equality: two custom commands are never equal (a replaced one always counts as a change).
	bool operator==(const CustomCommand&) const { return false; }
};

using Command = std::variant<ClearCommand, RenderCommand, CopyCommand, CustomCommand>;

/// A colour clear of "Colors" plus a depth clear to 1: the usual first command.
inline Command clearCommand(math::V4f color, float depth = 1.0f)
{
	ClearCommand c;
	c.colors["Colors"] = adaptive::constant(color);
	c.depth = adaptive::constant(depth);
	return c;
}

} // namespace quokka::scene
