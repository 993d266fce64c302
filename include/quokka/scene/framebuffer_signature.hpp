// quokka/scene/framebuffer_signature.hpp — what a framebuffer looks like to the shaders and pipelines drawing into it.
//
// Named colour attachments in location order (the names are the effect State fields written to them, e.g. "Colors"),
// an optional depth(/stencil) format, and the sample count. Equal signatures accept the same pipelines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

namespace quokka::scene
{

struct ColorAttachment
{
	std::string name = "Colors";
	VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
	bool operator==(const ColorAttachment&) const = default;
};

struct FramebufferSignature
{
	std::vector<ColorAttachment> colors = {ColorAttachment{}};
	VkFormat depth_format = VK_FORMAT_D32_SFLOAT; ///< VK_FORMAT_UNDEFINED: no depth attachment
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT;

	bool operator==(const FramebufferSignature&) const = default;
	bool hasDepth() const { return depth_format != VK_FORMAT_UNDEFINED; }
	/// Location of the attachment `name`, or -1.
	int location(const std::string& name) const;
	/// The colour names in location order (what fx::FragmentOutputs wants).
	std::vector<std::string> colorNames() const;
	size_t hash() const;
};

} // namespace quokka::scene
