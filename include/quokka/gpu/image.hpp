// quokka/gpu/image.hpp — 2D images (colour, depth, MSAA, mip chains), layout transitions, clears, texture upload
// with mip generation, samplers and dynamic-rendering helpers.
//
// An Image tracks the layout its last helper transition left it in (one layout for all its mip levels), so helpers
// can fill barriers; code that records its own barriers updates it with setLayout(). Colour formats RGBA8
// (UNORM/SRGB) and depth D32 are the ones the renderer uses; others work where the device supports them.
// Readback to RGBA8 lives in image_io.hpp.
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

/// What Device::createImage makes. Fields after `name` were added later: positional initialisers stay valid.
struct ImageDesc
{
	uint32_t width = 0;  ///< pixels, 1 … maxImageDimension2D
	uint32_t height = 0; ///< pixels, 1 … maxImageDimension2D
	VkFormat format = VK_FORMAT_R8G8B8A8_UNORM;
	VkSampleCountFlagBits samples = VK_SAMPLE_COUNT_1_BIT; ///< must be in framebufferColorSampleCounts
	ImageUsage usage = ImageUsage::ColorAttachment | ImageUsage::TransferSrc | ImageUsage::TransferDst;
	std::string name;
	/// Mip levels, 1 … fullMipChain(width, height); 0 means the full chain. Multisampled images must have 1.
	/// uploadImage/recordImageUpload build levels 1… from level 0 by blits, which needs TransferSrc usage.
	uint32_t mip_levels = 1;
	/// 0: a plain 2D image. n ≥ 1: a 2D array of n layers, its view VK_IMAGE_VIEW_TYPE_2D_ARRAY (even for one
	/// layer: a shader's sampler2DArray); the whole-image helpers and barriers cover every layer.
	uint32_t array_layers = 0;
};

/// Levels of a full mip chain down to 1×1: floor(log2(max(width, height))) + 1 (300×20 → 9). 0 for a 0 size.
uint32_t fullMipChain(uint32_t width, uint32_t height);

class Image
{
public:
	~Image();
	Image(const Image&) = delete;
	Image& operator=(const Image&) = delete;

	VkImage vk() const { return image_; }
	/// The view over every level; VK_NULL_HANDLE for transfer-only images (no sampled/storage/attachment usage).
	VkImageView view() const { return view_; }
	VkFormat format() const { return format_; }
	uint32_t width() const { return width_; }
	uint32_t height() const { return height_; }
	VkExtent2D extent() const { return {width_, height_}; }
	/// Number of mip levels (1 unless ImageDesc::mip_levels said otherwise); view() covers all of them.
	uint32_t mipLevels() const { return mip_levels_; }
	/// Layers: 1 for a plain 2D image, ImageDesc::array_layers for an array.
	uint32_t arrayLayers() const { return layers_; }
	bool isArray() const { return array_; }
	/// Size of mip level `level` (< mipLevels()): each side halves, rounding down, and stops at 1.
	VkExtent2D mipExtent(uint32_t level) const
	{
		return {width_ >> level ? width_ >> level : 1u, height_ >> level ? height_ >> level : 1u};
	}
	ImageUsage usage() const { return usage_; }
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
	uint32_t mip_levels_ = 1;
	uint32_t layers_ = 1;
	bool array_ = false;
	ImageUsage usage_ = ImageUsage::None;
	VkSampleCountFlagBits samples_ = VK_SAMPLE_COUNT_1_BIT;
	VkImageAspectFlags aspect_ = VK_IMAGE_ASPECT_COLOR_BIT;
	VkImageLayout layout_ = VK_IMAGE_LAYOUT_UNDEFINED;
	uint64_t id_ = 0;
	std::string name_;
};

using ImageHandle = std::shared_ptr<Image>;

/// Texture sampling state. Fields after `name` were added later: positional initialisers stay valid.
struct SamplerDesc
{
	VkFilter filter = VK_FILTER_LINEAR; ///< magnification and minification filter
	VkSamplerAddressMode address = VK_SAMPLER_ADDRESS_MODE_REPEAT;
	std::string name;
	/// True: linear filtering between mip levels over the image's whole chain (maxLod = VK_LOD_CLAMP_NONE).
	/// False: level 0 only (maxLod = 0), whatever the image's mip count.
	bool mipmaps = false;
	/// Anisotropic filtering, 1 = off. Clamped to maxSamplerAnisotropy; stays off on devices without the
	/// samplerAnisotropy feature (it is a quality hint, so that is not an error).
	float max_anisotropy = 1.0f;
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
/// single-sample `image` (TransferDst + Sampled usage), builds levels 1… by linear 2:1 blits when the image has
/// more than one mip level (then TransferSrc usage is needed too), and leaves it in SHADER_READ_ONLY_OPTIMAL.
/// Submits and waits: for set-up and tests; per-frame uploads use recordImageUpload. Errors: InvalidArgument (size,
/// sample-count or usage mismatch), Unsupported (other formats, or a format the device cannot blit with linear
/// filtering when levels must be generated), OutOfMemory.
Result<void> uploadImage(Device& device, Image& image, const void* texels, uint64_t size);

/// As uploadImage, but records into `list` instead of submitting: a host-visible staging buffer is filled now, and
/// the copy into level 0, the mip blits and the transition of all levels to SHADER_READ_ONLY_OPTIMAL (visible to
/// fragment and compute shader sampling) are recorded. The staging buffer stays alive, through list.keepAlive(),
/// until the list's submission completed. Errors as uploadImage; on error nothing was recorded.
/// - `list`: recording, from the Device that created `image`; the upload is ordered after earlier work on `image` in
/// the queue.
/// - `texels`: width × height × 4 bytes (`size`), copied before returning; the caller keeps ownership.
/// Threading: the thread recording `list`. `image` must outlive the list's submission (keep it alive as usual).
Result<void> recordImageUpload(CommandList& list, Image& image, const void* texels, uint64_t size);

/// True for depth(/stencil) formats.
bool isDepthFormat(VkFormat format);

/// A filled VkImageMemoryBarrier2 for the whole image (all mip levels), from its tracked layout to `new_layout`.
VkImageMemoryBarrier2 imageBarrier(const Image& image, VkImageLayout new_layout, VkPipelineStageFlags2 src_stages,
                                   VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                   VkAccessFlags2 dst_access);

/// Transitions `image` to `new_layout` with a conservative barrier (all prior writes → `dst_stages`/`dst_access`)
/// and records the new layout. No-op when already in that layout and `force` is false.
void transitionImage(CommandList& list, Image& image, VkImageLayout new_layout,
                     VkPipelineStageFlags2 dst_stages = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                     VkAccessFlags2 dst_access = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT,
                     bool force = false);

/// Clears a colour image (any sample count, all mip levels) to `rgba` (linear values; sRGB formats encode on write).
void clearColorImage(CommandList& list, Image& image, const float rgba[4]);
/// Clears a depth image (all mip levels) to `depth`.
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
