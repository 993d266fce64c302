// 2D images, samplers, texture upload with mip generation, barriers, clears and dynamic rendering (image.hpp).
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>

#include "internal.hpp"

#include <algorithm>

namespace quokka::gpu
{

uint32_t fullMipChain(uint32_t width, uint32_t height)
{
	uint32_t levels = 0;
	for (uint32_t side = width > height ? width : height; side; side >>= 1)
		++levels;
	return levels;
}

bool isDepthFormat(VkFormat format)
{
	switch (format)
	{
	case VK_FORMAT_D16_UNORM:
	case VK_FORMAT_X8_D24_UNORM_PACK32:
	case VK_FORMAT_D32_SFLOAT:
	case VK_FORMAT_D16_UNORM_S8_UINT:
	case VK_FORMAT_D24_UNORM_S8_UINT:
	case VK_FORMAT_D32_SFLOAT_S8_UINT:
		return true;
	default:
		return false;
	}
}

namespace
{
bool hasStencil(VkFormat format)
{
	return format == VK_FORMAT_D16_UNORM_S8_UINT || format == VK_FORMAT_D24_UNORM_S8_UINT ||
	       format == VK_FORMAT_D32_SFLOAT_S8_UINT;
}

VkImageUsageFlags toVk(ImageUsage usage)
{
	VkImageUsageFlags flags = 0;
	if (hasFlag(usage, ImageUsage::ColorAttachment))
		flags |= VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
	if (hasFlag(usage, ImageUsage::DepthAttachment))
		flags |= VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT;
	if (hasFlag(usage, ImageUsage::Sampled))
		flags |= VK_IMAGE_USAGE_SAMPLED_BIT;
	if (hasFlag(usage, ImageUsage::Storage))
		flags |= VK_IMAGE_USAGE_STORAGE_BIT;
	if (hasFlag(usage, ImageUsage::TransferSrc))
		flags |= VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
	if (hasFlag(usage, ImageUsage::TransferDst))
		flags |= VK_IMAGE_USAGE_TRANSFER_DST_BIT;
	return flags;
}
} // namespace

Result<ImageHandle> Device::createImage(const ImageDesc& desc)
{
	const std::string label = "image '" + desc.name + "'";
	if (desc.width == 0 || desc.height == 0 || desc.width > info_.max_image_dimension_2d ||
	    desc.height > info_.max_image_dimension_2d)
		return makeError(ErrorCode::InvalidArgument, label + ": size " + std::to_string(desc.width) + "x" +
		                                                 std::to_string(desc.height) + " is outside 1…" +
		                                                 std::to_string(info_.max_image_dimension_2d));
	if (!(info_.framebuffer_color_sample_counts & desc.samples))
		return makeError(ErrorCode::InvalidArgument, label + ": " + std::to_string(int(desc.samples)) +
		                                                 " samples are not supported by " + info_.name);
	const uint32_t full_chain = fullMipChain(desc.width, desc.height);
	const uint32_t mip_levels = desc.mip_levels == 0 ? full_chain : desc.mip_levels;
	if (mip_levels > full_chain)
		return makeError(ErrorCode::InvalidArgument, label + ": " + std::to_string(mip_levels) + " mip levels, but a " +
		                                                 std::to_string(desc.width) + "x" +
		                                                 std::to_string(desc.height) + " image has at most " +
		                                                 std::to_string(full_chain));
	if (mip_levels != 1 && desc.samples != VK_SAMPLE_COUNT_1_BIT)
		return makeError(ErrorCode::InvalidArgument,
		                 label + ": a multisampled image must have 1 mip level, not " + std::to_string(mip_levels));
	const VkImageUsageFlags usage = toVk(desc.usage);
	VkImageFormatProperties format_props;
	VkResult supported = vkGetPhysicalDeviceImageFormatProperties(physical_, desc.format, VK_IMAGE_TYPE_2D,
	                                                              VK_IMAGE_TILING_OPTIMAL, usage, 0, &format_props);
	if (desc.array_layers > 1 && desc.samples != VK_SAMPLE_COUNT_1_BIT)
		return makeError(ErrorCode::InvalidArgument, label + ": a multisampled image must have one layer");
	if (supported == VK_SUCCESS && desc.array_layers > format_props.maxArrayLayers)
		return makeError(ErrorCode::InvalidArgument, label + ": " + std::to_string(desc.array_layers) +
		                                                 " layers, but " + info_.name + " allows " +
		                                                 std::to_string(format_props.maxArrayLayers));
	if (supported != VK_SUCCESS || !(format_props.sampleCounts & desc.samples) ||
	    format_props.maxMipLevels < mip_levels)
		return makeError(ErrorCode::Unsupported, label + ": format " + std::to_string(int(desc.format)) +
		                                             " with these usages/samples/mip levels is not supported by " +
		                                             info_.name);

	std::shared_ptr<Image> image(new Image());
	image->device_ = this;
	image->format_ = desc.format;
	image->width_ = desc.width;
	image->height_ = desc.height;
	image->mip_levels_ = mip_levels;
	image->layers_ = std::max(1u, desc.array_layers);
	image->array_ = desc.array_layers > 0;
	image->usage_ = desc.usage;
	image->samples_ = desc.samples;
	image->name_ = desc.name;
	image->id_ = nextGpuObjectId();
	image->aspect_ = isDepthFormat(desc.format)
	                     ? VkImageAspectFlags(VK_IMAGE_ASPECT_DEPTH_BIT |
	                                          (hasStencil(desc.format) ? VK_IMAGE_ASPECT_STENCIL_BIT : 0))
	                     : VkImageAspectFlags(VK_IMAGE_ASPECT_COLOR_BIT);

	VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
	info.imageType = VK_IMAGE_TYPE_2D;
	info.format = desc.format;
	info.extent = {desc.width, desc.height, 1};
	info.mipLevels = mip_levels;
	info.arrayLayers = image->layers_;
	info.samples = desc.samples;
	info.tiling = VK_IMAGE_TILING_OPTIMAL;
	info.usage = usage;
	info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
	QUOKKA_VK_TRY(vkCreateImage(device_, &info, nullptr, &image->image_));

	VkMemoryRequirements req;
	vkGetImageMemoryRequirements(device_, image->image_, &req);
	const uint32_t type = findMemoryType(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
	VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
	alloc.allocationSize = req.size;
	alloc.memoryTypeIndex = type;
	VkResult result = type == UINT32_MAX ? VK_ERROR_OUT_OF_DEVICE_MEMORY
	                                     : vkAllocateMemory(device_, &alloc, nullptr, &image->memory_);
	if (result != VK_SUCCESS)
	{
		vkDestroyImage(device_, image->image_, nullptr);
		image->image_ = VK_NULL_HANDLE;
		return makeError(ErrorCode::OutOfMemory, "cannot allocate " + std::to_string(req.size) + " bytes for " + label);
	}
	image->bytes_ = req.size;
	account(false, 1, int64_t(req.size));
	// Some drivers (lavapipe) only reserve the memory when it is bound: out of memory shows here.
	if (VkResult bound = vkBindImageMemory(device_, image->image_, image->memory_, 0); bound != VK_SUCCESS)
		return makeError(bound == VK_ERROR_OUT_OF_DEVICE_MEMORY || bound == VK_ERROR_OUT_OF_HOST_MEMORY
		                     ? ErrorCode::OutOfMemory
		                     : ErrorCode::Vulkan,
		                 "cannot allocate " + std::to_string(req.size) + " bytes for " + label + ": " +
		                     (bound == VK_ERROR_OUT_OF_HOST_MEMORY     ? "out of host memory"
		                      : bound == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "out of device memory"
		                                                               : vkResultName(bound)));

	// Transfer-only images (copy targets, readback staging) get no view: Vulkan forbids views of them.
	if (hasFlag(desc.usage, ImageUsage::Sampled) || hasFlag(desc.usage, ImageUsage::Storage) ||
	    hasFlag(desc.usage, ImageUsage::ColorAttachment) || hasFlag(desc.usage, ImageUsage::DepthAttachment))
	{
		VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
		view.image = image->image_;
		view.viewType = image->array_ ? VK_IMAGE_VIEW_TYPE_2D_ARRAY : VK_IMAGE_VIEW_TYPE_2D;
		view.format = desc.format;
		view.subresourceRange = {image->aspect_, 0, mip_levels, 0, image->layers_};
		QUOKKA_VK_TRY(vkCreateImageView(device_, &view, nullptr, &image->view_));
	}
	setDebugName(VK_OBJECT_TYPE_IMAGE, uint64_t(image->image_), desc.name.c_str());
	return ImageHandle(std::move(image));
}

Image::~Image()
{
	if (!device_ || !image_)
		return;
	if (memory_)
		device_->account(false, -1, -int64_t(bytes_));
	VkDevice dev = device_->vk();
	VkImage image = image_;
	VkImageView view = view_;
	VkDeviceMemory memory = memory_;
	device_->destroyLater(
	    [dev, image, view, memory]
	    {
		    if (view)
			    vkDestroyImageView(dev, view, nullptr);
		    vkDestroyImage(dev, image, nullptr);
		    if (memory)
			    vkFreeMemory(dev, memory, nullptr);
	    });
}

Result<SamplerHandle> Device::createSampler(const SamplerDesc& desc)
{
	std::shared_ptr<Sampler> sampler(new Sampler());
	sampler->device_ = this;
	VkSamplerCreateInfo info{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
	info.magFilter = desc.filter;
	info.minFilter = desc.filter;
	info.mipmapMode = desc.mipmaps ? VK_SAMPLER_MIPMAP_MODE_LINEAR : VK_SAMPLER_MIPMAP_MODE_NEAREST;
	info.addressModeU = desc.address;
	info.addressModeV = desc.address;
	info.addressModeW = desc.address;
	info.maxLod = desc.mipmaps ? VK_LOD_CLAMP_NONE : 0.0f;
	if (desc.max_anisotropy > 1.0f)
	{
		// Device creation enables samplerAnisotropy exactly when the device has it, so the supported bit says
		// whether it is on.
		VkPhysicalDeviceFeatures features;
		vkGetPhysicalDeviceFeatures(physical_, &features);
		VkPhysicalDeviceProperties props;
		vkGetPhysicalDeviceProperties(physical_, &props);
		if (features.samplerAnisotropy)
		{
			info.anisotropyEnable = VK_TRUE;
			info.maxAnisotropy = std::min(desc.max_anisotropy, props.limits.maxSamplerAnisotropy);
		}
	}
	QUOKKA_VK_TRY(vkCreateSampler(device_, &info, nullptr, &sampler->sampler_));
	setDebugName(VK_OBJECT_TYPE_SAMPLER, uint64_t(sampler->sampler_), desc.name.c_str());
	return SamplerHandle(std::move(sampler));
}

Sampler::~Sampler()
{
	if (!device_ || !sampler_)
		return;
	VkDevice dev = device_->vk();
	VkSampler sampler = sampler_;
	device_->destroyLater([dev, sampler] { vkDestroySampler(dev, sampler, nullptr); });
}

namespace
{
/// The checks shared by uploadImage and recordImageUpload; nothing recorded.
Result<void> checkUpload(Device& device, const Image& image, uint64_t size)
{
	if (image.samples() != VK_SAMPLE_COUNT_1_BIT || image.isDepth())
		return makeError(ErrorCode::InvalidArgument, "uploadImage: '" + image.name() + "' is multisampled or depth");
	const VkFormat f = image.format();
	const bool rgba8 = f == VK_FORMAT_R8G8B8A8_UNORM || f == VK_FORMAT_R8G8B8A8_SRGB || f == VK_FORMAT_B8G8R8A8_UNORM ||
	                   f == VK_FORMAT_B8G8R8A8_SRGB;
	if (!rgba8)
		return makeError(ErrorCode::Unsupported, "uploadImage: only 8-bit RGBA/BGRA formats are supported");
	if (size != uint64_t(image.width()) * image.height() * 4)
		return makeError(ErrorCode::InvalidArgument, "uploadImage: " + std::to_string(size) + " bytes for a " +
		                                                 std::to_string(image.width()) + "x" +
		                                                 std::to_string(image.height()) + " RGBA8 image");
	if (!hasFlag(image.usage(), ImageUsage::TransferDst))
		return makeError(ErrorCode::InvalidArgument, "uploadImage: '" + image.name() + "' lacks TransferDst usage");
	if (image.mipLevels() == 1)
		return {};
	if (!hasFlag(image.usage(), ImageUsage::TransferSrc))
	{
		std::string message = "uploadImage: '";
		message.append(image.name()).append("' has ").append(std::to_string(image.mipLevels()));
		message.append(" mip levels, and building them by blits needs TransferSrc usage");
		return makeError(ErrorCode::InvalidArgument, message);
	}
	// vkCmdBlitImage with VK_FILTER_LINEAR needs all three (VUID-vkCmdBlitImage-filter-02001, -srcImage-01999,
	// -dstImage-02000); every device has them for RGBA8 UNORM, but not for every format we may accept later.
	constexpr VkFormatFeatureFlags kBlit = VK_FORMAT_FEATURE_BLIT_SRC_BIT | VK_FORMAT_FEATURE_BLIT_DST_BIT |
	                                       VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT;
	VkFormatProperties props;
	vkGetPhysicalDeviceFormatProperties(device.physicalDevice(), f, &props);
	if ((props.optimalTilingFeatures & kBlit) != kBlit)
		return makeError(ErrorCode::Unsupported, "uploadImage: format " + std::to_string(int(f)) +
		                                             " cannot be blitted with linear filtering on " +
		                                             device.info().name + ", so its mip levels cannot be built");
	return {};
}

/// A barrier on mip levels [first, first + count) between two explicit layouts (the tracked layout is for the whole
/// image and does not apply while levels differ).
VkImageMemoryBarrier2 levelBarrier(const Image& image, uint32_t first, uint32_t count, VkImageLayout old_layout,
                                   VkImageLayout new_layout, VkPipelineStageFlags2 src_stages,
                                   VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                   VkAccessFlags2 dst_access)
{
	VkImageMemoryBarrier2 b = imageBarrier(image, new_layout, src_stages, src_access, dst_stages, dst_access);
	b.oldLayout = old_layout;
	b.subresourceRange.baseMipLevel = first;
	b.subresourceRange.levelCount = count;
	return b;
}
} // namespace

Result<void> recordImageUpload(CommandList& list, Image& image, const void* texels, uint64_t size)
{
	Device& device = list.device();
	QUOKKA_TRY(checkUpload(device, image, size));
	auto staging = createUploadBuffer(device, texels, size, BufferUsage::TransferSrc, "quokka.upload.image");
	if (!staging.ok())
		return staging.error();

	// Every level is overwritten, but the transition still starts from the tracked layout: its barrier also orders
	// this upload after earlier reads and writes of the image (a per-frame re-upload of a sampled texture). Level 0
	// is written by the copy, the others by blits, so both stages wait on it.
	constexpr VkPipelineStageFlags2 kTransfer = VK_PIPELINE_STAGE_2_COPY_BIT | VK_PIPELINE_STAGE_2_BLIT_BIT;
	transitionImage(list, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, kTransfer, VK_ACCESS_2_TRANSFER_WRITE_BIT, true);
	VkBufferImageCopy region{};
	region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
	region.imageExtent = {image.width(), image.height(), 1};
	vkCmdCopyBufferToImage(list.vk(), staging.value()->vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
	                       &region);

	// Level k is built from level k − 1 by a linear 2:1 blit (an exact 2×2 box average where sides are even). Before
	// each blit the source level turns TRANSFER_DST → TRANSFER_SRC, after its copy or blit wrote it.
	const uint32_t levels = image.mipLevels();
	for (uint32_t level = 1; level < levels; ++level)
	{
		const VkImageMemoryBarrier2 to_src = levelBarrier(
		    image, level - 1, 1, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, kTransfer,
		    VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_BLIT_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
		list.barrier(nullptr, 0, nullptr, 0, &to_src, 1);
		const VkExtent2D src = image.mipExtent(level - 1), dst = image.mipExtent(level);
		VkImageBlit blit{};
		blit.srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, level - 1, 0, 1};
		blit.srcOffsets[1] = {int32_t(src.width), int32_t(src.height), 1};
		blit.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, level, 0, 1};
		blit.dstOffsets[1] = {int32_t(dst.width), int32_t(dst.height), 1};
		vkCmdBlitImage(list.vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, image.vk(),
		               VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &blit, VK_FILTER_LINEAR);
	}

	// All levels to SHADER_READ_ONLY: levels 0 … n−2 were blit sources, the last one was only written.
	constexpr VkPipelineStageFlags2 kSampling =
	    VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
	VkImageMemoryBarrier2 to_read[2];
	uint32_t count = 0;
	if (levels > 1)
		to_read[count++] = levelBarrier(image, 0, levels - 1, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
		                                VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, VK_PIPELINE_STAGE_2_BLIT_BIT,
		                                VK_ACCESS_2_NONE, kSampling, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);
	to_read[count++] = levelBarrier(image, levels - 1, 1, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
	                                VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, kTransfer, VK_ACCESS_2_TRANSFER_WRITE_BIT,
	                                kSampling, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);
	list.barrier(nullptr, 0, nullptr, 0, to_read, count);
	image.setLayout(VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
	list.keepAlive(staging.value());
	return {};
}

Result<void> uploadImage(Device& device, Image& image, const void* texels, uint64_t size)
{
	QUOKKA_TRY(checkUpload(device, image, size)); // before beginCommands: a refused upload records nothing
	auto list = device.beginCommands();
	if (!list.ok())
		return list.error();
	QUOKKA_TRY(recordImageUpload(list.value(), image, texels, size));
	return device.submitAndWait(std::move(list.value()));
}

VkImageMemoryBarrier2 imageBarrier(const Image& image, VkImageLayout new_layout, VkPipelineStageFlags2 src_stages,
                                   VkAccessFlags2 src_access, VkPipelineStageFlags2 dst_stages,
                                   VkAccessFlags2 dst_access)
{
	VkImageMemoryBarrier2 b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2};
	b.srcStageMask = src_stages;
	b.srcAccessMask = src_access;
	b.dstStageMask = dst_stages;
	b.dstAccessMask = dst_access;
	b.oldLayout = image.layout();
	b.newLayout = new_layout;
	b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
	b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
	b.image = image.vk();
	b.subresourceRange = {image.aspect(), 0, image.mipLevels(), 0, image.arrayLayers()};
	return b;
}

void transitionImage(CommandList& list, Image& image, VkImageLayout new_layout, VkPipelineStageFlags2 dst_stages,
                     VkAccessFlags2 dst_access, bool force)
{
	if (image.layout() == new_layout && !force)
		return;
	VkImageMemoryBarrier2 b = imageBarrier(image, new_layout, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	                                       VK_ACCESS_2_MEMORY_WRITE_BIT, dst_stages, dst_access);
	list.barrier(nullptr, 0, nullptr, 0, &b, 1);
	image.setLayout(new_layout);
}

void clearColorImage(CommandList& list, Image& image, const float rgba[4])
{
	transitionImage(list, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_CLEAR_BIT,
	                VK_ACCESS_2_TRANSFER_WRITE_BIT, /*force*/ true);
	VkClearColorValue value{};
	for (int i = 0; i < 4; ++i)
		value.float32[i] = rgba[i];
	VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, image.mipLevels(), 0, 1};
	vkCmdClearColorImage(list.vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &value, 1, &range);
}

void clearDepthImage(CommandList& list, Image& image, float depth)
{
	transitionImage(list, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_CLEAR_BIT,
	                VK_ACCESS_2_TRANSFER_WRITE_BIT, /*force*/ true);
	VkClearDepthStencilValue value{depth, 0};
	VkImageSubresourceRange range{image.aspect(), 0, image.mipLevels(), 0, 1};
	vkCmdClearDepthStencilImage(list.vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &value, 1, &range);
}

void beginRendering(CommandList& list, const RenderingDesc& desc)
{
	constexpr VkPipelineStageFlags2 kColorStages = VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT;
	constexpr VkAccessFlags2 kColorAccess =
	    VK_ACCESS_2_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_2_COLOR_ATTACHMENT_WRITE_BIT;
	constexpr VkPipelineStageFlags2 kDepthStages =
	    VK_PIPELINE_STAGE_2_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_2_LATE_FRAGMENT_TESTS_BIT;
	constexpr VkAccessFlags2 kDepthAccess =
	    VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_2_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;

	VkRenderingAttachmentInfo color{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
	VkRenderingAttachmentInfo depth{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
	VkRenderingInfo info{VK_STRUCTURE_TYPE_RENDERING_INFO};
	info.layerCount = 1;
	VkExtent2D extent{};
	if (desc.color)
	{
		// Force the barrier even when the layout is unchanged: it also orders this pass after earlier writes.
		transitionImage(list, *desc.color, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, kColorStages, kColorAccess, true);
		color.imageView = desc.color->view();
		color.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
		color.loadOp = desc.clear_color ? VK_ATTACHMENT_LOAD_OP_CLEAR : VK_ATTACHMENT_LOAD_OP_LOAD;
		color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
		for (int i = 0; i < 4; ++i)
			color.clearValue.color.float32[i] = desc.clear_rgba[i];
		if (desc.resolve)
		{
			transitionImage(list, *desc.resolve, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, kColorStages, kColorAccess,
			                true);
			color.resolveMode = VK_RESOLVE_MODE_AVERAGE_BIT;
			color.resolveImageView = desc.resolve->view();
			color.resolveImageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
		}
		info.colorAttachmentCount = 1;
		info.pColorAttachments = &color;
		extent = desc.color->extent();
	}
	if (desc.depth)
	{
		transitionImage(list, *desc.depth, VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL, kDepthStages, kDepthAccess, true);
		depth.imageView = desc.depth->view();
		depth.imageLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL;
		depth.loadOp = desc.clear_depth ? VK_ATTACHMENT_LOAD_OP_CLEAR : VK_ATTACHMENT_LOAD_OP_LOAD;
		depth.storeOp = desc.store_depth ? VK_ATTACHMENT_STORE_OP_STORE : VK_ATTACHMENT_STORE_OP_DONT_CARE;
		depth.clearValue.depthStencil = {desc.clear_depth_value, 0};
		info.pDepthAttachment = &depth;
		if (!desc.color)
			extent = desc.depth->extent();
	}
	info.renderArea = {{0, 0}, extent};
	vkCmdBeginRendering(list.vk(), &info);
	VkViewport viewport{0.0f, 0.0f, float(extent.width), float(extent.height), 0.0f, 1.0f};
	VkRect2D scissor{{0, 0}, extent};
	vkCmdSetViewport(list.vk(), 0, 1, &viewport);
	vkCmdSetScissor(list.vk(), 0, 1, &scissor);
}

void endRendering(CommandList& list)
{
	vkCmdEndRendering(list.vk());
}

} // namespace quokka::gpu
