// quokka/scene/command.hpp — the commands of a render task: Clear, Render, Copy and Custom.
//
// A RenderTask (runtime module) runs an adaptive list of commands against a framebuffer supplied at run time. Clear
// values are adaptive; Render draws a RenderTree; Copy copies between attachments, images and buffers; Custom
// records arbitrary commands. A Clear immediately followed by a Render becomes one pass with clearing load ops.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include <quokka/adaptive/aval.hpp>
#include <quokka/gpu/buffer.hpp>
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

/// `size` bytes of an application buffer from `offset` (size 0: to the buffer's end).
struct BufferRegion
{
	adaptive::aval<gpu::BufferHandle> buffer;
	uint64_t offset = 0;
	uint64_t size = 0;
	bool operator==(const BufferRegion&) const = default;
};
/// A colour attachment of the framebuffer the task runs against, by name (resolved when multisampled).
struct AttachmentRef
{
	std::string name = "Colors";
	bool operator==(const AttachmentRef&) const = default;
};
using CopySource = std::variant<AttachmentRef, adaptive::aval<gpu::ImageHandle>, BufferRegion>;
using CopyDestination = std::variant<adaptive::aval<gpu::ImageHandle>, BufferRegion>;

/// Copies, outside any render pass and after everything before it in the list, from an attachment, an image or a
/// buffer region into an image or a buffer region:
///   image → image    the same size and format (level 0, layer 0);
///   image → buffer   level 0's texels, rows tightly packed, into a region of at least width × height × texel bytes;
///   buffer → image   the same, the other way;
///   buffer → buffer  the source region's bytes, into a region at least as large.
/// Images are read and written in their transfer layouts and left there; what reads the destination later waits
/// for the copy (a barrier after it). A mismatch is an error of the frame naming what does not fit.
struct CopyCommand
{
	CopySource source = AttachmentRef{};
	CopyDestination destination;
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
