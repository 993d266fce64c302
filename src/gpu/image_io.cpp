// GPU readback to RGBA8 and PNG files through stb (image_io.hpp).
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/image_io.hpp>

#include <quokka/base/file_io.hpp>

#include <cstdlib>
#include <cstring>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STB_IMAGE_WRITE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#endif
#include <stb_image.h>
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace quokka::gpu
{

Result<Rgba8Image> readImageRgba8(Device& device, Image& image, uint32_t level)
{
	bool swizzle = false;
	switch (image.format())
	{
	case VK_FORMAT_R8G8B8A8_UNORM:
	case VK_FORMAT_R8G8B8A8_SRGB:
		break;
	case VK_FORMAT_B8G8R8A8_UNORM:
	case VK_FORMAT_B8G8R8A8_SRGB:
		swizzle = true;
		break;
	default:
		return makeError(ErrorCode::Unsupported, "readImageRgba8: format " + std::to_string(int(image.format())) +
		                                             " of '" + image.name() + "' is not an 8-bit RGBA/BGRA format");
	}
	if (image.samples() != VK_SAMPLE_COUNT_1_BIT)
		return makeError(ErrorCode::InvalidArgument,
		                 "readImageRgba8: '" + image.name() + "' is multisampled; resolve it first");
	if (level >= image.mipLevels())
	{
		std::string message = "readImageRgba8: level ";
		message.append(std::to_string(level)).append(" of '").append(image.name()).append("', which has ");
		message.append(std::to_string(image.mipLevels())).append(" mip levels");
		return makeError(ErrorCode::InvalidArgument, message);
	}

	const VkExtent2D extent = image.mipExtent(level);
	const uint64_t bytes = uint64_t(extent.width) * extent.height * 4;
	auto readback =
	    device.createBuffer({bytes, BufferUsage::TransferDst, MemoryDomain::Readback, "quokka.readback.image"});
	if (!readback.ok())
		return readback.error();
	auto list = device.beginCommands();
	if (!list.ok())
		return list.error();
	transitionImage(list.value(), image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
	                VK_ACCESS_2_TRANSFER_READ_BIT, true);
	VkBufferImageCopy region{};
	region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, level, 0, 1};
	region.imageExtent = {extent.width, extent.height, 1};
	vkCmdCopyImageToBuffer(list->vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback.value()->vk(), 1,
	                       &region);
	list->memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT,
	                    VK_ACCESS_2_HOST_READ_BIT);
	QUOKKA_TRY(device.submitAndWait(std::move(list.value())));
	readback.value()->invalidate();

	Rgba8Image out;
	out.width = extent.width;
	out.height = extent.height;
	out.pixels.resize(bytes);
	std::memcpy(out.pixels.data(), readback.value()->mapped(), bytes);
	if (swizzle)
		for (size_t i = 0; i < bytes; i += 4)
			std::swap(out.pixels[i], out.pixels[i + 2]);
	return out;
}

Result<void> writePng(const std::string& path, const Rgba8Image& image)
{
	if (image.width == 0 || image.height == 0 || image.pixels.size() != size_t(image.width) * image.height * 4)
		return makeError(ErrorCode::InvalidArgument, "writePng: image is empty or its pixel count is wrong");
	// Encoded in memory, then written completely or not at all (stbi_write_png ignores failed writes: a full disk
	// left a truncated file and reported success).
	int len = 0;
	unsigned char* png =
	    stbi_write_png_to_mem(image.pixels.data(), int(image.width * 4), int(image.width), int(image.height), 4, &len);
	if (!png)
		return makeError(ErrorCode::OutOfMemory, "cannot encode PNG '" + path + "': out of memory");
	Result<void> written = writeFileAtomically(path, std::span<const uint8_t>(png, size_t(len)));
	STBIW_FREE(png);
	return written;
}

Result<Rgba8Image> readPng(const std::string& path)
{
	int w = 0, h = 0, channels = 0;
	stbi_uc* data = stbi_load(path.c_str(), &w, &h, &channels, 4);
	if (!data)
		return makeError(ErrorCode::Io, "cannot read PNG '" + path + "': " + stbi_failure_reason());
	Rgba8Image out;
	out.width = uint32_t(w);
	out.height = uint32_t(h);
	out.pixels.assign(data, data + size_t(w) * size_t(h) * 4);
	stbi_image_free(data);
	return out;
}

} // namespace quokka::gpu
