// quokka/gpu/image.hpp — 2D images (colour, depth, MSAA), layout transitions, clears and dynamic-rendering helpers.
//
// An Image tracks the layout its last helper transition left it in, so helpers can fill barriers; code that records
// its own barriers updates it with setLayout(). Colour formats RGBA8 (UNORM/SRGB) and depth D32 are the ones the
// renderer uses; others work where the device supports them. Readback to RGBA8 lives in Device-free helpers below.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <quokka/gpu/vk.hpp>

namespace quokka::gpu
{

class Device;
class CommandList;

/// What the GPU does with an image. Combine with `|`.
enum class ImageUsage : uint32_t
{
	None = 0,
	ColorAttachment = 1u << 0,
	DepthAttachment = 1u << 1,
	Sampled = 1u << 2,
	Storage = 1u << 3,
	TransferSrc = 1u << 4,
	TransferDst = 1u << 5,
};
constexpr ImageUsage operator|(ImageUsage a, ImageUsage b)
{
	return ImageUsage(uint32_t(a) | uint32_t(b));
}
constexpr bool hasFlag(ImageUsage set, ImageUsage flag)
{
	return (uint32_t(set) & uint32_t(flag)) != 0;
}

struct ImageDesc
{
	uint32_t width = 0;  ///< pixels, 1 … maxImageDimension2D
	uint32_t height = 0; ///< pixels, 1 … maxImageDimension2D
	VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT; ///< must be in framebufferColorSampleCounts
	ImageUsage usage = ImageUsage::ColorAttachment | ImageUsage::TransferSrc | ImageUsage::TransferDst;
	std::string name;
};

class Image
{
public:
	~Image();
	Image(const Image&) = delete;
	Image& operator=(const Image&) = delete;

	VkImage vk() const { return image_; }
	VkImageView view() const { return view_; }
	VkFormat format() const { return format_; }
	uint32_t width() const { return width_; }
	uint32_t height() const { return height_; }
	VkExtent2D extent() const { return {width_, height_}; }
	VkSampleCountFlagBits samples() const { return samples_; }
	VkImageAspectFlags aspect() const { return aspect_; }
	bool isDepth() const { return (aspect_ & VK_IMAGE_ASPECT_DEPTH_BIT) != 0; }
	uint64_t id() const { return id_; }
	const std::string& name() const { return name_; }

	VkImageLayout layout() const { return layout_; }
	void setLayout(VkImageLayout layout) { layout_ = layout; }

private:
	friend class Device;
	Image() = default;

	Device* device_ = nullptr;
	VkImage image_ = VK_NULL_HANDLE;
	VkImageView view_ = VK_NULL_HANDLE;
	VkDeviceMemory memory_ = VK_NULL_HANDLE;
	uint64_t bytes_ = 0;
	VkFormat format_ = VK_FORMAT_UNDEFINED;
	uint32_t width_ = 0;
	uint32_t height_ = 0;
	VkSampleCountFlagBits samples_ = VK_SAMPLE_COUNT_1_BIT;
	VkImageAspectFlags aspect_ = VK_IMAGE_ASPECT_COLOR_BIT;
	VkImageLayout layout_ = VK_IMAGE_LAYOUT_UNDEFINED;
	uint64_t id_ = 0;
	std::string name_;
};

using ImageHandle = std::shared_ptr<Image>;

/// Texture sampling state.
struct SamplerDesc
{
	VkFilter filter = VK_FILTER_LINEAR;
	VkSamplerAddressMode address = VK_SAMPLER_ADDRESS_MODE_REPEAT;
	std::string name;
};

/// A VkSampler, destroyed deferred like every Device object.
class Sampler
{
public:
	~Sampler();
	Sampler(const Sampler&) = delete;
	Sampler& operator=(const Sampler&) = delete;
	VkSampler vk() const { return sampler_; }

private:
	friend class Device;
	Sampler() = default;
	Device* device_ = nullptr;
	VkSampler sampler_ = VK_NULL_HANDLE;
};

using SamplerHandle = std::shared_ptr<Sampler>;

/// Uploads tightly packed RGBA8/BGRA8 texels (`size` = width × height × 4 bytes, top row first) into level 0 of a
/// single-sample `image` (TransferDst + Sampled usage) and leaves it in SHADER_READ_ONLY_OPTIMAL. Submits and waits:
/// for set-up and tests; per-frame texture streaming belongs to the modules above. Errors: InvalidArgument (size or
/// sample-count mismatch), Unsupported (other formats), OutOfMemory.
Result<void> uploadImage(Device& device, Image& image, const void* texels, uint64_t size);

/// True for depth(/stencil) formats.
bool isDepthFormat(VkFormat format);

/// A filled VkImageMemoryBarrier2 for the whole image, from its tracked layout to `new_layout`.
VkImageMemoryBarrier2 imageBarrier(const Image& image, VkImageLayout new_layout, VkPipelineStageFlags2 src_stages,
                                   VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                   VkAccessFlags2 dst_access);

/// Transitions `image` to `new_layout` with a conservative barrier (all prior writes → `dst_stages`/`dst_access`)
/// and records the new layout. No-op when already in that layout and `force` is false.
void transitionImage(CommandList& list, Image& image, VkImageLayout new_layout,
                     VkPipelineStageFlags2 dst_stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                     VkAccessFlags2 dst_access = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
                     bool force = false);

/// Clears a colour image (any sample count) to `rgba` (linear values; sRGB formats encode on write).
void clearColorImage(CommandList& list, Image& image, const float rgba[4]);
/// Clears a depth image to `depth`.
void clearDepthImage(CommandList& list, Image& image, float depth);

/// The attachments of one dynamic-rendering pass. Null pointers are absent attachments.
struct RenderingDesc
{
	Image* color = nullptr;   ///< colour target (may be multisampled)
	Image* resolve = nullptr; ///< single-sample resolve target when `color` is multisampled
	Image* depth = nullptr;
	bool clear_color = true;
	float clear_rgba[4] = {0, 0, 0, 1};
	bool clear_depth = true;
	float clear_depth_value = 1.0f;
	bool store_depth = false; ///< keep depth after the pass (else DONT_CARE)
};

/// Transitions the attachments, begins dynamic rendering over the full extent of `color` (or `depth`), and sets
/// viewport and scissor to it.
void beginRendering(CommandList& list, const RenderingDesc& desc);
/// Ends dynamic rendering.
void endRendering(CommandList& list);

} // namespace quokka::gpu
