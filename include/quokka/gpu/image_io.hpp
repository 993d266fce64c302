// quokka/gpu/image_io.hpp — CPU-side RGBA8 pixels: GPU readback, PNG write and read (stb).
//
// Readback converts the image's format to tight RGBA8 rows (top row first): RGBA8/SRGB copy bytes as stored,
// BGRA8 swizzles. Other formats are an Unsupported error. Multisampled images must be resolved first.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <quokka/base/result.hpp>

namespace quokka::gpu
{

class Device;
class Image;

/// Tight RGBA8 pixels, row-major, top row first.
struct Rgba8Image
{
	uint32_t width = 0;
	uint32_t height = 0;
	std::vector<uint8_t> pixels; ///< width * height * 4 bytes

	std::array<uint8_t, 4> at(uint32_t x, uint32_t y) const
	{
		const uint8_t* p = &pixels[(size_t(y) * width + x) * 4];
		return {p[0], p[1], p[2], p[3]};
	}
};

/// Copies mip level `level` of `image` (single-sample colour, any layout) back to the host as RGBA8; the result has
/// that level's size (Image::mipExtent). Submits and waits; leaves the whole image in TRANSFER_SRC_OPTIMAL.
/// Errors: Unsupported (format), InvalidArgument (multisampled, or `level` ≥ mipLevels()), OutOfMemory.
Result<Rgba8Image> readImageRgba8(Device& device, Image& image, uint32_t level = 0);

/// Writes `image` as an 8-bit RGBA PNG. Errors: Io naming the path.
Result<void> writePng(const std::string& path, const Rgba8Image& image);

/// Reads any PNG as RGBA8. Errors: Io (missing/unreadable, with stb's reason).
Result<Rgba8Image> readPng(const std::string& path);

} // namespace quokka::gpu
