// Atlas sampling conformance: an entry sampled by kAtlasSampleGlsl equals the hardware's sampling of the same texels
// (a mipmapped image holding the same levels) for clamp, repeat and mirrored repeat, nearest and linear filtering,
// at every mip level and between them, at coordinates inside and far outside [0, 1] — within 1 LSB per channel.
#include <quokka/atlas/atlas_sample.hpp>

#include <quokka/gpu/shader.hpp>

#include <random>

#include "gpu_fixture.hpp"

namespace quokka::atlas
{
namespace
{

using scene::AddressMode;

const char* kShader = R"glsl(#version 460
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform sampler2D reference;
layout(set = 0, binding = 1) uniform sampler2DArray pages;
layout(set = 0, binding = 2, std430) readonly buffer Points { vec4 points[]; };
layout(set = 0, binding = 3, std430) writeonly buffer Out { vec4 results[]; };
layout(push_constant) uniform Push { uvec4 entry; uint count; } pc;
%ATLAS%
void main()
{
	const uint i = gl_GlobalInvocationID.x;
	if (i >= pc.count)
		return;
	const vec4 p = points[i];
	results[2 * i] = textureLod(reference, p.xy, p.z);
	results[2 * i + 1] = quokkaAtlasSampleLod(pages, pc.entry, p.xy, p.z);
}
)glsl";

class AtlasSampleTest : public gpu::test::GpuTest
{
protected:
	/// A mipmapped image of `levels` holding the oracle's inner texels of each level.
	gpu::ImageHandle referenceImage(const scene::TextureData& t, const std::vector<std::vector<uint32_t>>& padded,
	                                uint32_t gutter)
	{
		gpu::ImageDesc desc;
		desc.width = t.width;
		desc.height = t.height;
		desc.format = t.srgb ? VK_FORMAT_R8G8B8A8_SRGB : VK_FORMAT_R8G8B8A8_UNORM;
		desc.usage = gpu::ImageUsage::Sampled | gpu::ImageUsage::TransferDst;
		desc.mip_levels = uint32_t(padded.size());
		desc.name = "reference texture";
		auto image = device().createImage(desc).value();
		std::vector<uint32_t> words;
		std::vector<VkBufferImageCopy> regions;
		for (uint32_t l = 0; l < padded.size(); ++l)
		{
			const uint32_t w = std::max(1u, t.width >> l), h = std::max(1u, t.height >> l), pw = w + 2 * gutter;
			VkBufferImageCopy r{};
			r.bufferOffset = words.size() * 4;
			r.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, l, 0, 1};
			r.imageExtent = {w, h, 1};
			regions.push_back(r);
			for (uint32_t y = 0; y < h; ++y)
				for (uint32_t x = 0; x < w; ++x)
					words.push_back(padded[l][(y + gutter) * pw + x + gutter]);
		}
		auto staging = device()
		                   .createBuffer({words.size() * 4, gpu::BufferUsage::TransferSrc, gpu::MemoryDomain::Upload,
		                                  "reference texels"})
		                   .value();
		std::memcpy(staging->mapped(), words.data(), words.size() * 4);
		staging->flush();
		auto list = device().beginCommands().value();
		gpu::transitionImage(list, *image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
		                     VK_ACCESS_2_TRANSFER_WRITE_BIT);
		vkCmdCopyBufferToImage(list.vk(), staging->vk(), image->vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
		                       uint32_t(regions.size()), regions.data());
		gpu::transitionImage(list, *image, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
		                     VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_SAMPLED_READ_BIT);
		list.keepAlive(staging);
		EXPECT_TRUE(device().submitAndWait(std::move(list)).ok());
		return image;
	}
};

TEST_F(AtlasSampleTest, AnEntrySamplesAsTheHardwareSamplesTheTextureAlone)
{
	std::string glsl = kShader;
	glsl.replace(glsl.find("%ATLAS%"), 7, kAtlasSampleGlsl);
	auto spirv = device().shaderCompiler().compile({glsl, gpu::ShaderStage::Compute, "atlas sample test"});
	ASSERT_TRUE(spirv.ok()) << spirv.error().message;
	auto kernel = device().createComputePipeline({.spirv = **spirv, .name = "atlas sample test"}).value();
	auto pool = AtlasPool::create(device(), {.page_size = 256, .gutter = 2}).value();
	gpu::SamplerDesc page_sampler;
	page_sampler.filter = VK_FILTER_LINEAR;
	page_sampler.address = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
	auto pages_sampler = device().createSampler(page_sampler).value();

	// Sample points: coordinates in [-1.3, 2.3], LODs below 0 (magnification), on levels and between them, past the
	// last level.
	std::mt19937 rng(5);
	std::uniform_real_distribution<float> coord(-1.3f, 2.3f);
	const float lods[] = {-1.0f, 0.0f, 0.25f, 1.0f, 1.5f, 2.0f, 2.75f, 3.0f, 4.0f, 9.0f};
	std::vector<float> points;
	for (float lod : lods)
		for (int k = 0; k < 200; ++k)
			points.insert(points.end(), {coord(rng), coord(rng), lod, 0.0f});
	const uint32_t count = uint32_t(points.size() / 4);
	auto in = device()
	              .createBuffer({points.size() * 4, gpu::BufferUsage::Storage, gpu::MemoryDomain::Upload, "points"})
	              .value();
	std::memcpy(in->mapped(), points.data(), points.size() * 4);
	in->flush();
	auto out =
	    device()
	        .createBuffer({uint64_t(count) * 32, gpu::BufferUsage::Storage, gpu::MemoryDomain::Readback, "results"})
	        .value();

	uint32_t seed = 11;
	for (bool srgb : {false, true})
		for (AddressMode address : {AddressMode::ClampToEdge, AddressMode::Repeat, AddressMode::MirroredRepeat})
			for (scene::Filter filter : {scene::Filter::Nearest, scene::Filter::Linear})
			{
				const std::string name = std::string(srgb ? "sRGB" : "UNORM") +
				                         (address == AddressMode::ClampToEdge ? " clamp"
				                          : address == AddressMode::Repeat    ? " repeat"
				                                                              : " mirror") +
				                         (filter == scene::Filter::Linear ? " linear" : " nearest");
				SCOPED_TRACE(name);
				scene::TextureData t;
				t.width = 13;
				t.height = 7;
				t.srgb = srgb;
				auto texels = std::make_shared<std::vector<uint8_t>>(13 * 7 * 4);
				std::mt19937 fill(seed++);
				for (uint8_t& b : *texels)
					b = uint8_t(fill());
				t.rgba8 = texels;
				scene::SamplerState s;
				s.address = address;
				s.filter = filter;
				s.mipmaps = true;
				const Placement p = *pool->acquire(t, s).value();
				{
					auto list = device().beginCommands().value();
					ASSERT_TRUE(pool->upload(list).ok());
					ASSERT_TRUE(device().submitAndWait(std::move(list)).ok());
				}
				auto reference = referenceImage(t, referenceLevels(t, address, p.levels, p.gutter), p.gutter);
				gpu::SamplerDesc ref_sampler;
				ref_sampler.filter = filter == scene::Filter::Linear ? VK_FILTER_LINEAR : VK_FILTER_NEAREST;
				ref_sampler.address = address == AddressMode::ClampToEdge ? VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE
				                      : address == AddressMode::Repeat    ? VK_SAMPLER_ADDRESS_MODE_REPEAT
				                                                          : VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT;
				ref_sampler.mipmaps = true;
				auto sampler = device().createSampler(ref_sampler).value();

				auto list = device().beginCommands().value();
				kernel->bind(list);
				const VkDescriptorImageInfo images[2] = {
				    {sampler->vk(), reference->view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL},
				    {pages_sampler->vk(), pool->page(p.family)->view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL}};
				const VkDescriptorBufferInfo buffers[2] = {{in->vk(), 0, VK_WHOLE_SIZE}, {out->vk(), 0, VK_WHOLE_SIZE}};
				VkWriteDescriptorSet writes[4];
				for (uint32_t b = 0; b < 4; ++b)
				{
					writes[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
					writes[b].dstBinding = b;
					writes[b].descriptorCount = 1;
					writes[b].descriptorType =
					    b < 2 ? VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
					if (b < 2)
						writes[b].pImageInfo = &images[b];
					else
						writes[b].pBufferInfo = &buffers[b - 2];
				}
				kernel->pushDescriptors(list, writes);
				struct
				{
					std::array<uint32_t, 4> entry;
					uint32_t count;
				} push{packEntry(p, s), count};
				kernel->pushConstants(list, &push, sizeof(push));
				vkCmdDispatch(list.vk(), (count + 63) / 64, 1, 1);
				list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
				                   VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
				list.keepAlive(reference);
				list.keepAlive(sampler);
				ASSERT_TRUE(device().submitAndWait(std::move(list)).ok());
				out->invalidate();
				std::vector<float> r(size_t(count) * 8);
				std::memcpy(r.data(), out->mapped(), r.size() * 4);
				int worst = 0;
				size_t over = 0;
				for (uint32_t i = 0; i < count; ++i)
					for (int c = 0; c < 4; ++c)
					{
						const int hw = int(std::lround(r[8 * i + c] * 255.0f));
						const int at = int(std::lround(r[8 * i + 4 + c] * 255.0f));
						worst = std::max(worst, std::abs(hw - at));
						if (std::abs(hw - at) > 1)
						{
							if (over++ < 3)
								ADD_FAILURE()
								    << "point (" << points[4 * i] << ", " << points[4 * i + 1] << ") lod "
								    << points[4 * i + 2] << " channel " << c << ": hardware " << hw << ", atlas " << at;
						}
					}
				EXPECT_EQ(over, 0u);
				std::printf("  %-22s worst difference %d LSB over %u points\n", name.c_str(), worst, count);
				EXPECT_TRUE(pool->release(t, s));
			}
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

} // namespace
} // namespace quokka::atlas
