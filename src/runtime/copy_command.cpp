// copy_command.cpp — scene::CopyCommand: image and buffer copies between the framebuffer's attachments and the
// application's images and buffers.
#include "copy_command.hpp"

#include <string>

#include <quokka/gpu/image.hpp>

namespace quokka::runtime::detail
{

namespace
{

Error bad(const std::string& what)
{
	return makeError(ErrorCode::InvalidArgument, "copy command: " + what);
}

/// Bytes per texel of the uncompressed colour and depth formats a copy to or from a buffer handles; 0 otherwise.
uint32_t texelBytes(VkFormat f)
{
	switch (f)
	{
	case VK_FORMAT_R8_UNORM:
	case VK_FORMAT_R8_UINT:
	case VK_FORMAT_R8_SRGB:
		return 1;
	case VK_FORMAT_R8G8_UNORM:
	case VK_FORMAT_R16_SFLOAT:
	case VK_FORMAT_R16_UNORM:
	case VK_FORMAT_R16_UINT:
	case VK_FORMAT_D16_UNORM:
		return 2;
	case VK_FORMAT_R8G8B8A8_UNORM:
	case VK_FORMAT_R8G8B8A8_SRGB:
	case VK_FORMAT_B8G8R8A8_UNORM:
	case VK_FORMAT_B8G8R8A8_SRGB:
	case VK_FORMAT_A2B10G10R10_UNORM_PACK32:
	case VK_FORMAT_R16G16_SFLOAT:
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32_UINT:
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_D32_SFLOAT:
	case VK_FORMAT_B10G11R11_UFLOAT_PACK32:
		return 4;
	case VK_FORMAT_R16G16B16A16_SFLOAT:
	case VK_FORMAT_R16G16B16A16_UNORM:
	case VK_FORMAT_R32G32_SFLOAT:
		return 8;
	case VK_FORMAT_R32G32B32A32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_UINT:
		return 16;
	default:
		return 0;
	}
}

/// A buffer region resolved: the buffer, its first byte and its bytes.
struct Span
{
	gpu::BufferHandle buffer;
	uint64_t offset = 0, size = 0;
};

Result<Span> spanOf(const scene::BufferRegion& r, const char* role)
{
	gpu::BufferHandle b = r.buffer.node() ? r.buffer.force() : gpu::BufferHandle();
	if (!b)
		return bad(std::string("no ") + role + " buffer");
	if (r.offset > b->size() || (r.size && r.size > b->size() - r.offset))
		return bad(std::string("the ") + role + " region (" + std::to_string(r.offset) + " + " +
		           std::to_string(r.size) + " bytes) lies outside its buffer of " + std::to_string(b->size()) +
		           " bytes");
	return Span{b, r.offset, r.size ? r.size : b->size() - r.offset};
}

/// Level 0 of `image` as a tightly packed buffer copy region at `offset`.
VkBufferImageCopy imageRegion(const gpu::Image& image, uint64_t offset)
{
	VkBufferImageCopy region{};
	region.bufferOffset = offset;
	region.imageSubresource = {image.aspect() & ~VK_IMAGE_ASPECT_STENCIL_BIT, 0, 0, 1};
	region.imageExtent = {image.width(), image.height(), 1};
	return region;
}

/// The bytes of level 0 of `image` in a buffer; errors when its format has no known texel size.
Result<uint64_t> imageBytes(const gpu::Image& image)
{
	const uint32_t texel = texelBytes(image.format());
	if (texel == 0)
		return bad("image format " + std::to_string(int(image.format())) + " has no texel size for a buffer copy");
	return uint64_t(image.width()) * image.height() * texel;
}

} // namespace

Result<void> recordCopy(gpu::CommandList& list, const Framebuffer& fb, const scene::CopyCommand& copy)
{
	// The source.
	gpu::ImageHandle src_image;
	Span src_span;
	if (const auto* a = std::get_if<scene::AttachmentRef>(&copy.source))
	{
		src_image = fb.output(a->name);
		if (!src_image)
			return bad("no colour attachment '" + a->name + "'");
	}
	else if (const auto* i = std::get_if<adaptive::aval<gpu::ImageHandle>>(&copy.source))
	{
		src_image = i->node() ? i->force() : gpu::ImageHandle();
		if (!src_image)
			return bad("no source image");
	}
	else
	{
		QUOKKA_TRY_ASSIGN(s, spanOf(std::get<scene::BufferRegion>(copy.source), "source"));
		src_span = s;
	}
	// The destination.
	gpu::ImageHandle dst_image;
	Span dst_span;
	if (const auto* i = std::get_if<adaptive::aval<gpu::ImageHandle>>(&copy.destination))
	{
		dst_image = i->node() ? i->force() : gpu::ImageHandle();
		if (!dst_image)
			return bad("no destination image");
	}
	else
	{
		QUOKKA_TRY_ASSIGN(d, spanOf(std::get<scene::BufferRegion>(copy.destination), "destination"));
		dst_span = d;
	}
	if (src_image && dst_image && src_image == dst_image)
		return bad("the source and the destination are the same image");
	if (src_image && dst_image &&
	    (dst_image->width() != src_image->width() || dst_image->height() != src_image->height() ||
	     dst_image->format() != src_image->format()))
		return bad("the destination must match the source's size and format (" + std::to_string(src_image->width()) +
		           "x" + std::to_string(src_image->height()) + ", format " + std::to_string(int(src_image->format())) +
		           ")");
	// Sizes of buffer ends.
	uint64_t bytes = 0;
	if (src_image && dst_span.buffer)
	{
		QUOKKA_TRY_ASSIGN(n, imageBytes(*src_image));
		bytes = n;
		if (dst_span.size < bytes)
			return bad("the destination region holds " + std::to_string(dst_span.size) + " bytes, the image " +
			           std::to_string(bytes));
	}
	else if (src_span.buffer && dst_image)
	{
		QUOKKA_TRY_ASSIGN(n, imageBytes(*dst_image));
		bytes = n;
		if (src_span.size < bytes)
			return bad("the source region holds " + std::to_string(src_span.size) + " bytes, the image needs " +
			           std::to_string(bytes));
	}
	else if (src_span.buffer && dst_span.buffer)
	{
		bytes = src_span.size;
		if (dst_span.size < bytes)
			return bad("the destination region holds " + std::to_string(dst_span.size) + " bytes, the source " +
			           std::to_string(bytes));
		if (src_span.buffer == dst_span.buffer && src_span.offset < dst_span.offset + bytes &&
		    dst_span.offset < src_span.offset + bytes)
			return bad("the source and destination regions overlap");
	}

	// Everything earlier in the frame (draws, other copies, custom commands) before the copy reads or writes.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT | VK_ACCESS_2_MEMORY_READ_BIT,
	                   VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT);
	if (src_image)
		gpu::transitionImage(list, *src_image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
		                     VK_ACCESS_2_TRANSFER_READ_BIT, true);
	if (dst_image)
		gpu::transitionImage(list, *dst_image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
		                     VK_ACCESS_2_TRANSFER_WRITE_BIT, true);
	if (src_image && dst_image)
	{
		VkImageCopy region{};
		region.srcSubresource = {src_image->aspect() & ~VK_IMAGE_ASPECT_STENCIL_BIT, 0, 0, 1};
		region.dstSubresource = region.srcSubresource;
		region.extent = {src_image->width(), src_image->height(), 1};
		vkCmdCopyImage(list.vk(), src_image->vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst_image->vk(),
		               VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
	}
	else if (src_image)
	{
		const VkBufferImageCopy region = imageRegion(*src_image, dst_span.offset);
		vkCmdCopyImageToBuffer(list.vk(), src_image->vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, dst_span.buffer->vk(),
		                       1, &region);
	}
	else if (dst_image)
	{
		const VkBufferImageCopy region = imageRegion(*dst_image, src_span.offset);
		vkCmdCopyBufferToImage(list.vk(), src_span.buffer->vk(), dst_image->vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
		                       1, &region);
	}
	else if (bytes > 0)
	{
		const VkBufferCopy region{src_span.offset, dst_span.offset, bytes};
		vkCmdCopyBuffer(list.vk(), src_span.buffer->vk(), dst_span.buffer->vk(), 1, &region);
	}
	// What reads the destination later — in this frame or the application's own work after it — sees the copy.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	                   VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
	for (const gpu::ImageHandle* i : {&src_image, &dst_image})
		if (*i)
			list.keepAlive(*i);
	for (const gpu::BufferHandle* b : {&src_span.buffer, &dst_span.buffer})
		if (*b)
			list.keepAlive(*b);
	return {};
}

} // namespace quokka::runtime::detail
