// atlas_pool.cpp — the atlas's pages on the device (atlas_pool.hpp): entries, refcounts, eviction, growth, the build
// kernel's jobs and the copies into the pages.
#include <quokka/atlas/atlas_pool.hpp>

#include "atlas_shaders.hpp"

#include <quokka/base/assert.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quokka::atlas
{

namespace
{

uint32_t half(uint32_t n, uint32_t l)
{
	return std::max(1u, n >> l);
}

VkFormat formatOf(Family f)
{
	return f == Family::Srgb ? VK_FORMAT_R8G8B8A8_SRGB : VK_FORMAT_R8G8B8A8_UNORM;
}

/// The build kernel's job (shaders/atlas/atlas_build.comp).
struct Job
{
	uint32_t src_offset, src_row, src_w, src_h;
	uint32_t dst_offset, dst_row, w, h;
	uint32_t gutter, address, flags, pad;
};
static_assert(sizeof(Job) == 48);

int wrapped(int i, int n, scene::AddressMode address)
{
	switch (address)
	{
	case scene::AddressMode::ClampToEdge:
		return std::clamp(i, 0, n - 1);
	case scene::AddressMode::Repeat:
		return ((i % n) + n) % n;
	default:
	{
		const int m = ((i % (2 * n)) + 2 * n) % (2 * n);
		return m < n ? m : 2 * n - 1 - m;
	}
	}
}

uint32_t addressCode(scene::AddressMode address)
{
	return address == scene::AddressMode::ClampToEdge ? 0u : address == scene::AddressMode::Repeat ? 1u : 2u;
}

float toLinear(float c)
{
	return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

float toSrgb(float c)
{
	return c <= 0.0031308f ? c * 12.92f : 1.055f * std::pow(c, 1.0f / 2.4f) - 0.055f;
}

} // namespace

Rect entryExtent(uint32_t width, uint32_t height, uint32_t levels, uint32_t gutter)
{
	const uint32_t g2 = 2 * gutter;
	uint32_t column = 0;
	for (uint32_t l = 1; l < levels; ++l)
		column += half(height, l) + g2;
	const uint32_t w = width + g2 + (levels > 1 ? half(width, 1) + g2 : 0);
	return {0, 0, int32_t(w), int32_t(std::max(height + g2, column))};
}

Rect levelInEntry(uint32_t width, uint32_t height, uint32_t l, uint32_t gutter)
{
	if (l == 0)
		return {int32_t(gutter), int32_t(gutter), int32_t(width), int32_t(height)};
	uint32_t y = gutter;
	for (uint32_t k = 1; k < l; ++k)
		y += half(height, k) + 2 * gutter;
	return {int32_t(width + 3 * gutter), int32_t(y), int32_t(half(width, l)), int32_t(half(height, l))};
}

Rect Placement::level(uint32_t l) const
{
	const Rect r = levelInEntry(width, height, l, gutter);
	return {rect.x + r.x, rect.y + r.y, r.w, r.h};
}

std::vector<std::vector<uint32_t>> referenceLevels(const scene::TextureData& texture, scene::AddressMode address,
                                                   uint32_t levels, uint32_t gutter)
{
	// The inner texels of every level first, then each padded by the address mode.
	std::vector<std::vector<uint32_t>> inner(levels);
	inner[0].resize(size_t(texture.width) * texture.height);
	std::memcpy(inner[0].data(), texture.rgba8->data(), inner[0].size() * 4);
	for (uint32_t l = 1; l < levels; ++l)
	{
		const uint32_t pw = half(texture.width, l - 1), ph = half(texture.height, l - 1);
		const uint32_t w = half(texture.width, l), h = half(texture.height, l);
		inner[l].resize(size_t(w) * h);
		for (uint32_t y = 0; y < h; ++y)
			for (uint32_t x = 0; x < w; ++x)
			{
				const uint32_t x0 = 2 * x, x1 = std::min(x0 + 1, pw - 1), y0 = 2 * y, y1 = std::min(y0 + 1, ph - 1);
				const uint32_t t[4] = {inner[l - 1][y0 * pw + x0], inner[l - 1][y0 * pw + x1],
				                       inner[l - 1][y1 * pw + x0], inner[l - 1][y1 * pw + x1]};
				uint32_t out = 0;
				for (int c = 0; c < 4; ++c)
				{
					uint32_t v;
					auto ch = [&](int i) { return (t[i] >> (8 * c)) & 0xffu; };
					if (texture.srgb && c < 3)
					{
						const float lin = (toLinear(float(ch(0)) / 255.0f) + toLinear(float(ch(1)) / 255.0f) +
						                   toLinear(float(ch(2)) / 255.0f) + toLinear(float(ch(3)) / 255.0f)) *
						                  0.25f;
						v = uint32_t(std::clamp(std::floor(toSrgb(lin) * 255.0f + 0.5f), 0.0f, 255.0f));
					}
					else
						v = (ch(0) + ch(1) + ch(2) + ch(3) + 2) >> 2;
					out |= v << (8 * c);
				}
				inner[l][y * w + x] = out;
			}
	}
	std::vector<std::vector<uint32_t>> padded(levels);
	for (uint32_t l = 0; l < levels; ++l)
	{
		const int w = int(half(texture.width, l)), h = int(half(texture.height, l)), g = int(gutter);
		padded[l].resize(size_t(w + 2 * g) * size_t(h + 2 * g));
		for (int py = 0; py < h + 2 * g; ++py)
			for (int px = 0; px < w + 2 * g; ++px)
				padded[l][size_t(py) * size_t(w + 2 * g) + size_t(px)] =
				    inner[l][size_t(wrapped(py - g, h, address)) * size_t(w) + size_t(wrapped(px - g, w, address))];
	}
	return padded;
}

Result<std::unique_ptr<AtlasPool>> AtlasPool::create(gpu::Device& device, AtlasOptions options)
{
	if (options.page_size == 0 || options.first_layers == 0 || options.max_layers == 0)
		return makeError(ErrorCode::InvalidArgument, "atlas: page size and layer counts must be positive");
	options.page_size = std::min(options.page_size, device.info().max_image_dimension_2d);
	options.max_layers = std::min(options.max_layers, 256u); // (Vulkan's guaranteed maxImageArrayLayers)
	options.first_layers = std::min(options.first_layers, options.max_layers);
	QUOKKA_TRY_ASSIGN(kernel,
	                  device.createComputePipeline({.spirv = shaders::kAtlasBuildComp.span(), .name = "atlas build"}));
	return std::unique_ptr<AtlasPool>(new AtlasPool(device, options, std::move(kernel)));
}

AtlasPool::AtlasPool(gpu::Device& device, AtlasOptions options, gpu::PipelineHandle kernel)
    : device_(&device), options_(options), kernel_(std::move(kernel))
{
}

AtlasPool::~AtlasPool() = default;

AtlasPool::Key AtlasPool::keyOf(const scene::TextureData& texture, const scene::SamplerState& sampler)
{
	return {texture.rgba8.get(),      texture.width,  texture.height, texture.srgb,
	        uint8_t(sampler.address), sampler.mipmaps};
}

Result<std::optional<Placement>> AtlasPool::acquire(const scene::TextureData& texture,
                                                    const scene::SamplerState& sampler)
{
	if (texture.image || !texture.rgba8)
	{
		++counters_.refused; // (a GPU image is sampled as it is)
		return std::optional<Placement>();
	}
	if (texture.width == 0 || texture.height == 0 ||
	    texture.rgba8->size() != size_t(texture.width) * texture.height * 4)
		return makeError(ErrorCode::InvalidArgument,
		                 "atlas: a " + std::to_string(texture.width) + "x" + std::to_string(texture.height) +
		                     " texture needs " + std::to_string(size_t(texture.width) * texture.height * 4) +
		                     " bytes of RGBA8 texels, it has " + std::to_string(texture.rgba8->size()));
	const Key key = keyOf(texture, sampler);
	if (auto it = entries_.find(key); it != entries_.end())
	{
		Entry& e = it->second;
		if (e.refs++ == 0)
			idle_.erase(e.idle);
		return std::optional<Placement>(e.placement);
	}
	const uint32_t levels = sampler.mipmaps ? gpu::fullMipChain(texture.width, texture.height) : 1;
	const Rect extent = entryExtent(texture.width, texture.height, levels, options_.gutter);
	const Family family = texture.srgb ? Family::Srgb : Family::Unorm;
	const uint64_t id = next_id_++;
	std::optional<Placement> placed = place(family, id, uint32_t(extent.w), uint32_t(extent.h));
	if (!placed)
	{
		++counters_.refused;
		return std::optional<Placement>();
	}
	placed->width = texture.width;
	placed->height = texture.height;
	placed->levels = levels;
	placed->gutter = options_.gutter;
	Entry& e = entries_[key];
	e.placement = *placed;
	e.texels = texture.rgba8;
	e.address = sampler.address;
	e.id = id;
	e.refs = 1;
	by_id_.emplace(id, key);
	queued_.push_back(key);
	return placed;
}

std::optional<Placement> AtlasPool::place(Family family, uint64_t id, uint32_t w, uint32_t h)
{
	const uint32_t size = options_.page_size;
	if (w > size || h > size)
		return std::nullopt;
	FamilyPages& f = families_[size_t(family)];
	auto tryPages = [&]() -> std::optional<Placement>
	{
		for (uint32_t layer = 0; layer < f.pages.size(); ++layer)
			if (std::optional<Rect> r = f.pages[layer].tryAdd(id, int32_t(w), int32_t(h)))
			{
				Placement p;
				p.family = family;
				p.layer = layer;
				p.rect = *r;
				return p;
			}
		return std::nullopt;
	};
	if (std::optional<Placement> p = tryPages())
		return p;
	// Room made by evicting this family's idle entries, least recently idle first, one at a time.
	std::vector<Key> candidates;
	for (const Key& k : idle_)
		if (entries_.at(k).placement.family == family && entries_.at(k).pins == 0)
			candidates.push_back(k);
	for (const Key& k : candidates)
	{
		evict(k);
		if (std::optional<Placement> p = tryPages())
			return p;
	}
	// More layers: doubling (the image grows in upload()).
	if (f.pages.size() < options_.max_layers)
	{
		const size_t target =
		    std::min<size_t>(options_.max_layers, f.pages.empty() ? options_.first_layers : 2 * f.pages.size());
		while (f.pages.size() < target)
			f.pages.emplace_back(int32_t(size), int32_t(size));
		return tryPages();
	}
	return std::nullopt;
}

bool AtlasPool::release(const scene::TextureData& texture, const scene::SamplerState& sampler)
{
	const Key key = keyOf(texture, sampler);
	auto it = entries_.find(key);
	if (it == entries_.end() || it->second.refs == 0)
		return false;
	Entry& e = it->second;
	if (--e.refs == 0)
		e.idle = idle_.insert(idle_.end(), key);
	return true;
}

bool AtlasPool::pin(const scene::TextureData& texture, const scene::SamplerState& sampler)
{
	auto it = entries_.find(keyOf(texture, sampler));
	if (it == entries_.end())
		return false;
	++it->second.pins;
	return true;
}

bool AtlasPool::unpin(const scene::TextureData& texture, const scene::SamplerState& sampler)
{
	auto it = entries_.find(keyOf(texture, sampler));
	if (it == entries_.end() || it->second.pins == 0)
		return false;
	--it->second.pins;
	return true;
}

void AtlasPool::evict(const Key& key)
{
	auto it = entries_.find(key);
	QUOKKA_ASSERT(it != entries_.end() && it->second.refs == 0, "evicting an entry in use");
	Entry& e = it->second;
	families_[size_t(e.placement.family)].pages[e.placement.layer].remove(e.id);
	idle_.erase(e.idle);
	by_id_.erase(e.id);
	if (!e.uploaded)
		std::erase(queued_, key);
	entries_.erase(it);
	++counters_.evictions;
}

size_t AtlasPool::evictIdle(size_t max)
{
	std::vector<Key> victims;
	for (const Key& k : idle_)
	{
		if (victims.size() >= max)
			break;
		if (entries_.at(k).pins == 0)
			victims.push_back(k);
	}
	for (const Key& k : victims)
		evict(k);
	return victims.size();
}

Result<void> AtlasPool::grow(gpu::CommandList& list, Family family)
{
	FamilyPages& f = families_[size_t(family)];
	const uint32_t layers = uint32_t(f.pages.size());
	gpu::ImageDesc desc;
	desc.width = desc.height = options_.page_size;
	desc.format = formatOf(family);
	desc.usage = gpu::ImageUsage::Sampled | gpu::ImageUsage::TransferDst | gpu::ImageUsage::TransferSrc;
	desc.name = family == Family::Srgb ? "atlas pages (sRGB)" : "atlas pages";
	desc.array_layers = layers;
	QUOKKA_TRY_ASSIGN(image, device_->createImage(desc));
	gpu::transitionImage(list, *image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_TRANSFER_BIT,
	                     VK_ACCESS_2_TRANSFER_WRITE_BIT);
	if (f.image)
	{
		// The old layers, copied on the device (entries keep their places); the old image lives until the copy ran.
		gpu::transitionImage(list, *f.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_2_TRANSFER_BIT,
		                     VK_ACCESS_2_TRANSFER_READ_BIT);
		VkImageCopy region{};
		region.srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, f.image->arrayLayers()};
		region.dstSubresource = region.srcSubresource;
		region.extent = {options_.page_size, options_.page_size, 1};
		vkCmdCopyImage(list.vk(), f.image->vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, image->vk(),
		               VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
		list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_COPY_BIT,
		                   VK_ACCESS_2_TRANSFER_WRITE_BIT); // (this frame's entries may land in the copied layers)
		list.keepAlive(f.image);
	}
	f.image = std::move(image);
	return {};
}

Result<void> AtlasPool::build(gpu::CommandList& list, std::span<Entry* const> entries)
{
	// The textures' texels in one host-visible buffer, each entry's image in a device work buffer; per level, one
	// dispatch over every entry that has it.
	uint64_t source_words = 0, work_words = 0;
	uint32_t max_levels = 0;
	for (const Entry* e : entries)
	{
		source_words += uint64_t(e->placement.width) * e->placement.height;
		work_words += uint64_t(e->placement.rect.area());
		max_levels = std::max(max_levels, e->placement.levels);
	}
	QUOKKA_TRY_ASSIGN(source, device_->createBuffer({source_words * 4, gpu::BufferUsage::Storage,
	                                                 gpu::MemoryDomain::Upload, "atlas sources"}));
	QUOKKA_TRY_ASSIGN(work, device_->createBuffer({work_words * 4,
	                                               gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc |
	                                                   gpu::BufferUsage::TransferDst,
	                                               gpu::MemoryDomain::DeviceLocal, "atlas work"}));
	std::vector<std::vector<Job>> jobs(max_levels);
	std::vector<uint64_t> work_at;
	uint64_t src = 0, dst = 0;
	auto* mapped = reinterpret_cast<uint8_t*>(source->mapped());
	for (const Entry* e : entries)
	{
		const Placement& p = e->placement;
		std::memcpy(mapped + src * 4, e->texels->data(), e->texels->size());
		const uint32_t row = uint32_t(p.rect.w), g = p.gutter;
		const uint32_t flags = p.family == Family::Srgb ? 1u : 0u;
		work_at.push_back(dst);
		for (uint32_t l = 0; l < p.levels; ++l)
		{
			const Rect in = levelInEntry(p.width, p.height, l, g);
			Job j{};
			if (l == 0)
			{
				j.src_offset = uint32_t(src);
				j.src_row = p.width;
				j.flags = flags | 2u;
			}
			else
			{
				const Rect prev = levelInEntry(p.width, p.height, l - 1, g);
				j.src_offset = uint32_t(dst + uint64_t(prev.y) * row + uint32_t(prev.x));
				j.src_row = row;
				j.flags = flags;
			}
			j.src_w = half(p.width, l == 0 ? 0 : l - 1);
			j.src_h = half(p.height, l == 0 ? 0 : l - 1);
			j.dst_offset = uint32_t(dst + uint64_t(in.y - int32_t(g)) * row + uint32_t(in.x - int32_t(g)));
			j.dst_row = row;
			j.w = uint32_t(in.w);
			j.h = uint32_t(in.h);
			j.gutter = g;
			j.address = addressCode(e->address);
			jobs[l].push_back(j);
		}
		src += uint64_t(p.width) * p.height;
		dst += uint64_t(p.rect.area());
	}
	source->flush();
	size_t job_count = 0;
	for (const auto& level : jobs)
		job_count += level.size();
	QUOKKA_TRY_ASSIGN(table, device_->createBuffer({job_count * sizeof(Job), gpu::BufferUsage::Storage,
	                                                gpu::MemoryDomain::Upload, "atlas jobs"}));
	std::vector<uint64_t> level_at;
	uint64_t at = 0;
	for (const auto& level : jobs)
	{
		level_at.push_back(at);
		std::memcpy(reinterpret_cast<uint8_t*>(table->mapped()) + at, level.data(), level.size() * sizeof(Job));
		at += level.size() * sizeof(Job);
	}
	table->flush();
	for (const gpu::BufferHandle* b : {&source, &work, &table})
		list.keepAlive(*b);
	// (Texels outside the levels' padded rectangles are never sampled; zeroed so pages hold no stale bytes.)
	vkCmdFillBuffer(list.vk(), work->vk(), 0, VK_WHOLE_SIZE, 0);
	list.memoryBarrier(VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT | VK_PIPELINE_STAGE_2_HOST_BIT,
	                   VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_HOST_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
	kernel_->bind(list);
	for (uint32_t l = 0; l < max_levels; ++l)
	{
		if (l > 0)
			list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
		uint32_t texels = 0;
		for (const Job& j : jobs[l])
			texels = std::max(texels, (j.w + 2 * j.gutter) * (j.h + 2 * j.gutter));
		// (At most 65,535 jobs per dispatch: the device's guaranteed row of workgroups along y.)
		for (size_t first = 0; first < jobs[l].size(); first += 65535)
		{
			const uint32_t n = uint32_t(std::min<size_t>(65535, jobs[l].size() - first));
			gpu::pushStorageBuffers(
			    list, *kernel_,
			    {{table.get(), level_at[l] + first * sizeof(Job), n * sizeof(Job)}, {source.get()}, {work.get()}});
			vkCmdDispatch(list.vk(), (texels + 255) / 256, n, 1);
		}
	}
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
	for (size_t i = 0; i < entries.size(); ++i)
	{
		const Placement& p = entries[i]->placement;
		gpu::Image& image = *families_[size_t(p.family)].image;
		gpu::transitionImage(list, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
		                     VK_ACCESS_2_TRANSFER_WRITE_BIT);
		VkBufferImageCopy region{};
		region.bufferOffset = work_at[i] * 4;
		region.bufferRowLength = uint32_t(p.rect.w);
		region.bufferImageHeight = uint32_t(p.rect.h);
		region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, p.layer, 1};
		region.imageOffset = {p.rect.x, p.rect.y, 0};
		region.imageExtent = {uint32_t(p.rect.w), uint32_t(p.rect.h), 1};
		vkCmdCopyBufferToImage(list.vk(), work->vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
	}
	return {};
}

Result<void> AtlasPool::upload(gpu::CommandList& list)
{
	for (uint32_t f = 0; f < kFamilies; ++f)
	{
		const FamilyPages& pages = families_[f];
		if (!pages.pages.empty() && (!pages.image || pages.image->arrayLayers() < pages.pages.size()))
			QUOKKA_TRY(grow(list, Family(f)));
	}
	std::vector<Entry*> fresh;
	for (const Key& k : queued_)
		if (auto it = entries_.find(k); it != entries_.end() && !it->second.uploaded)
			fresh.push_back(&it->second);
	queued_.clear();
	// In batches whose texels and work images each fit one storage buffer binding (and stay a modest allocation).
	const uint64_t cap = std::min<uint64_t>(device_->info().max_storage_buffer_range, 256ull << 20);
	for (size_t first = 0; first < fresh.size();)
	{
		uint64_t source = 0, work = 0;
		size_t end = first;
		for (; end < fresh.size(); ++end)
		{
			const Placement& p = fresh[end]->placement;
			const uint64_t s = 4ull * p.width * p.height, w = 4ull * uint64_t(p.rect.area());
			if (end > first && (source + s > cap || work + w > cap))
				break;
			source += s;
			work += w;
		}
		const std::span<Entry* const> batch(fresh.data() + first, end - first);
		QUOKKA_TRY(build(list, batch));
		for (Entry* e : batch)
			e->uploaded = true;
		counters_.uploads += batch.size();
		first = end;
	}
	for (FamilyPages& f : families_)
		if (f.image)
			gpu::transitionImage(list, *f.image, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
			                     VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT | VK_PIPELINE_STAGE_2_COPY_BIT,
			                     VK_ACCESS_2_SHADER_SAMPLED_READ_BIT | VK_ACCESS_2_TRANSFER_READ_BIT);
	return {};
}

uint64_t AtlasPool::deviceBytes() const
{
	uint64_t bytes = 0;
	for (const FamilyPages& f : families_)
		if (f.image)
			bytes += uint64_t(f.image->arrayLayers()) * options_.page_size * options_.page_size * 4;
	return bytes;
}

AtlasStats AtlasPool::stats() const
{
	AtlasStats s = counters_;
	s.entries = uint32_t(entries_.size());
	s.idle = uint32_t(idle_.size());
	for (const auto& [key, e] : entries_)
		s.pinned += e.pins > 0;
	for (uint32_t f = 0; f < kFamilies; ++f)
	{
		s.layers[f] = families_[f].image ? families_[f].image->arrayLayers() : 0;
		s.bytes += uint64_t(s.layers[f]) * options_.page_size * options_.page_size * 4;
	}
	return s;
}

std::vector<std::string> AtlasPool::validate() const
{
	std::vector<std::string> out;
	size_t placed = 0;
	for (uint32_t f = 0; f < kFamilies; ++f)
		for (uint32_t layer = 0; layer < families_[f].pages.size(); ++layer)
		{
			const TexturePacking& page = families_[f].pages[layer];
			placed += page.count();
			for (const std::string& problem : page.validate())
				out.push_back("family " + std::to_string(f) + " layer " + std::to_string(layer) + ": " + problem);
			for (const auto& [id, rect] : page.entries())
			{
				auto it = by_id_.find(id);
				const Entry* e = it == by_id_.end() ? nullptr : &entries_.at(it->second);
				if (!e || e->placement.rect != rect || e->placement.layer != layer ||
				    uint32_t(e->placement.family) != f)
					out.push_back("packed entry " + std::to_string(id) + " " + rect.describe() + " has no entry there");
			}
		}
	if (placed != entries_.size())
		out.push_back(std::to_string(placed) + " packed rectangles for " + std::to_string(entries_.size()) +
		              " entries");
	size_t idle = 0;
	for (const auto& [key, e] : entries_)
		idle += e.refs == 0;
	if (idle != idle_.size())
		out.push_back(std::to_string(idle_.size()) + " entries listed idle, " + std::to_string(idle) + " have no user");
	for (const Key& k : idle_)
		if (auto it = entries_.find(k); it == entries_.end() || it->second.refs != 0)
			out.push_back("the idle list holds an entry in use or gone");
	return out;
}

} // namespace quokka::atlas
