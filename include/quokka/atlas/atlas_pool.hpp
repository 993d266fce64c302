// quokka/atlas/atlas_pool.hpp — textures packed into the pages of an atlas on the device, shared and evicted.
//
// An AtlasPool keeps, per format family (RGBA8 UNORM, RGBA8 sRGB), one 2D-array image whose layers are pages of
// `page_size` × `page_size` texels, each packed by a TexturePacking. An entry is one texture as one sampler's address
// mode sees it (its gutters depend on it): the texture's mip chain laid out in one rectangle — level 0 at the left,
// levels 1… stacked in a column to its right — each level surrounded by `gutter` texels that repeat what the address
// mode reads beyond its edge, so the hardware's bilinear filter at any level is the wrapped one. A compute kernel
// builds the levels (2 × 2 averages, in linear space for sRGB colour) and the gutters in a work buffer; a copy puts
// the rectangle into its page.
//
//   auto pool = atlas::AtlasPool::create(device, {}).value();
//   std::optional<atlas::Placement> p = pool->acquire(texture, sampler).value();   // refcount + 1
//   if (!p) …                              // no room even after evicting idle entries: draw the object otherwise
//   pool->upload(list);                    // before the draws: growth copies, new entries, transitions
//   … p->layer, p->level(l) …              // what a shader needs to sample the entry
//   pool->release(texture, sampler);       // refcount − 1: at 0 the entry stays, idle, until evicted
//
// Entries are shared by texture identity (the storage of its texels) and address mode, and refcounted. An idle entry
// (refcount 0) stays in its page — acquiring it again costs no upload — until evictIdle() or a placement that needs
// its room evicts it, least recently idle first; pinned entries are never evicted. When no page of a family has room,
// the family's image grows by layers (doubling, up to `max_layers`; the old layers are copied on the device, entries
// keep their places); when it cannot grow, acquire() answers nullopt — never an error, so the caller can draw the
// object another way (the heap's router sends it to the classic path). Owner thread only.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include <quokka/atlas/texture_packing.hpp>
#include <quokka/base/result.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/pipeline.hpp>
#include <quokka/scene/render_object.hpp>

namespace quokka::atlas
{

enum class Family : uint8_t
{
	Unorm, ///< VK_FORMAT_R8G8B8A8_UNORM
	Srgb,  ///< VK_FORMAT_R8G8B8A8_SRGB
};
constexpr uint32_t kFamilies = 2;

struct AtlasOptions
{
	uint32_t page_size = 2048; ///< texels per side of a page (clamped to the device's largest 2D image)
	uint32_t gutter = 2;       ///< texels around every mip level
	uint32_t first_layers = 1; ///< layers a family's image starts with
	uint32_t max_layers = 16;  ///< layers a family's image may grow to (clamped to the device's limit)
};

/// Where an entry lies in its family's image.
struct Placement
{
	Family family = Family::Unorm;
	uint32_t layer = 0;
	Rect rect;                      ///< the whole entry in its page, gutters included
	uint32_t width = 0, height = 0; ///< level 0
	uint32_t levels = 1;
	uint32_t gutter = 0;
	/// The texels of level `l` (< levels) in the page, inside its gutter.
	Rect level(uint32_t l) const;
};

/// The texel rectangle of an entry of `levels` levels of a `width` × `height` texture with `gutter`, and each
/// level's texels inside it (relative to its corner): the layout Placement::level() reads.
Rect entryExtent(uint32_t width, uint32_t height, uint32_t levels, uint32_t gutter);
Rect levelInEntry(uint32_t width, uint32_t height, uint32_t l, uint32_t gutter);

/// The CPU oracle of the build kernel: every level's padded texels (row-major, RGBA8 packed R in the low byte), as
/// the atlas holds them.
std::vector<std::vector<uint32_t>> referenceLevels(const scene::TextureData& texture, scene::AddressMode address,
                                                   uint32_t levels, uint32_t gutter);

struct AtlasStats
{
	uint32_t entries = 0; ///< held (in use or idle)
	uint32_t idle = 0;    ///< refcount 0, still placed
	uint32_t pinned = 0;
	uint64_t uploads = 0;   ///< entries built and copied so far
	uint64_t evictions = 0; ///< idle entries evicted so far
	uint64_t refused = 0;   ///< acquisitions answered nullopt so far
	uint32_t layers[kFamilies] = {0, 0};
	uint64_t bytes = 0; ///< device memory of the pages
};

class AtlasPool
{
public:
	/// Errors: InvalidArgument (a zero page size or layer count).
	static Result<std::unique_ptr<AtlasPool>> create(gpu::Device& device, AtlasOptions options = {});
	~AtlasPool();
	AtlasPool(const AtlasPool&) = delete;
	AtlasPool& operator=(const AtlasPool&) = delete;

	/// The entry of `texture` (host texels, not a GPU image) as `sampler` addresses it, refcount + 1; made — placed,
	/// its upload queued for upload() — on first use. nullopt when it cannot be placed: larger than a page, a texture
	/// on the GPU already, or no room in its family even after evicting idle entries and growing to max_layers.
	/// Errors: InvalidArgument (texels missing or not width × height × 4 bytes), OutOfMemory (growing).
	Result<std::optional<Placement>> acquire(const scene::TextureData& texture, const scene::SamplerState& sampler);
	/// Refcount − 1 of an entry acquire() placed; at 0 it becomes idle (the most recently idle). False when there
	/// is no such entry in use.
	bool release(const scene::TextureData& texture, const scene::SamplerState& sampler);
	/// While pinned (counted: pins nest) an entry is never evicted. False when there is no such entry.
	bool pin(const scene::TextureData& texture, const scene::SamplerState& sampler);
	bool unpin(const scene::TextureData& texture, const scene::SamplerState& sampler);
	/// Evicts up to `max` idle, unpinned entries, least recently idle first; returns how many.
	size_t evictIdle(size_t max = SIZE_MAX);
	/// Records what the frame's acquisitions need, before the draws that sample the pages: layers added (old ones
	/// copied), new entries built and copied into their pages, and every page left in SHADER_READ_ONLY_OPTIMAL
	/// (visible to fragment shaders). Errors: OutOfMemory.
	Result<void> upload(gpu::CommandList& list);

	/// The family's image (a 2D array; null before its first entry). Its layers change only in upload().
	const gpu::ImageHandle& page(Family family) const { return families_[size_t(family)].image; }
	const AtlasOptions& options() const { return options_; }
	AtlasStats stats() const; ///< O(entries)
	uint32_t entryCount() const { return uint32_t(entries_.size()); }
	uint64_t uploadCount() const { return counters_.uploads; }
	uint64_t deviceBytes() const;
	/// Checks the packings, the refcounts and the idle list; one line per violation, none when sound.
	std::vector<std::string> validate() const;

private:
	struct Key
	{
		const void* texels;
		uint32_t width, height;
		bool srgb;
		uint8_t address;
		bool mipmaps;
		bool operator==(const Key&) const = default;
		template <typename H>
		friend H AbslHashValue(H h, const Key& k)
		{
			return H::combine(std::move(h), k.texels, k.width, k.height, k.srgb, k.address, k.mipmaps);
		}
	};
	struct Entry
	{
		Placement placement;
		std::shared_ptr<const std::vector<uint8_t>> texels; ///< held: its address is the key
		scene::AddressMode address = scene::AddressMode::Repeat;
		uint64_t id = 0; ///< in its page's packing
		uint32_t refs = 0, pins = 0;
		bool uploaded = false;
		std::list<Key>::iterator idle; ///< its place in idle_ while refs == 0
	};
	struct FamilyPages
	{
		gpu::ImageHandle image;
		std::vector<TexturePacking> pages; ///< one per layer the image has or will have after upload()
	};
	AtlasPool(gpu::Device& device, AtlasOptions options, gpu::PipelineHandle kernel);
	static Key keyOf(const scene::TextureData& texture, const scene::SamplerState& sampler);
	std::optional<Placement> place(Family family, uint64_t id, uint32_t w, uint32_t h);
	void evict(const Key& key);
	Result<void> grow(gpu::CommandList& list, Family family);
	Result<void> build(gpu::CommandList& list, std::span<Entry* const> entries);

	gpu::Device* device_;
	AtlasOptions options_;
	gpu::PipelineHandle kernel_;
	FamilyPages families_[kFamilies];
	absl::flat_hash_map<Key, Entry> entries_;
	absl::flat_hash_map<uint64_t, Key> by_id_; ///< packing ids → keys
	uint64_t next_id_ = 1;
	std::list<Key> idle_;     ///< least recently idle first
	std::vector<Key> queued_; ///< placed, not uploaded yet
	AtlasStats counters_;
};

} // namespace quokka::atlas
