// AtlasPool as a spec, on the device: every level of every entry, gutters included, holds exactly what the CPU
// oracle (referenceLevels) computes — for clamp, repeat and mirrored repeat, odd and thin sizes, UNORM and sRGB —
// read back from the pages; entries are shared and refcounted, idle ones evicted least recently idle first unless
// pinned, re-acquired without a new upload while they stay; pages grow by layers without moving or changing what
// they hold; when nothing can make room the answer is nullopt, never an error; validation stays quiet.
#include <quokka/atlas/atlas_pool.hpp>

#include <random>

#include "gpu_fixture.hpp"

namespace quokka::atlas
{
namespace
{

using scene::AddressMode;

scene::TextureData texture(uint32_t w, uint32_t h, bool srgb, uint32_t seed)
{
	std::mt19937 rng(seed);
	auto texels = std::make_shared<std::vector<uint8_t>>(size_t(w) * h * 4);
	for (uint8_t& b : *texels)
		b = uint8_t(rng());
	scene::TextureData t;
	t.width = w;
	t.height = h;
	t.rgba8 = std::move(texels);
	t.srgb = srgb;
	return t;
}

scene::SamplerState sampler(AddressMode address, bool mipmaps = true)
{
	scene::SamplerState s;
	s.address = address;
	s.mipmaps = mipmaps;
	return s;
}

class AtlasPoolTest : public gpu::test::GpuTest
{
protected:
	std::unique_ptr<AtlasPool> pool(AtlasOptions options)
	{
		auto p = AtlasPool::create(device(), options);
		EXPECT_TRUE(p.ok()) << p.error().message;
		return p.ok() ? std::move(*p) : nullptr;
	}
	void upload(AtlasPool& pool)
	{
		auto list = device().beginCommands().value();
		const Result<void> r = pool.upload(list);
		ASSERT_TRUE(r.ok()) << r.error().message;
		ASSERT_TRUE(device().submitAndWait(std::move(list)).ok());
	}
	/// The texels of `rect` in layer `layer` of the family's pages.
	std::vector<uint32_t> read(AtlasPool& pool, Family family, uint32_t layer, const Rect& rect)
	{
		gpu::Image& image = *pool.page(family);
		auto buffer = device()
		                  .createBuffer({uint64_t(rect.area()) * 4, gpu::BufferUsage::TransferDst,
		                                 gpu::MemoryDomain::Readback, "atlas readback"})
		                  .value();
		auto list = device().beginCommands().value();
		gpu::transitionImage(list, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_2_COPY_BIT,
		                     VK_ACCESS_2_TRANSFER_READ_BIT);
		VkBufferImageCopy region{};
		region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, layer, 1};
		region.imageOffset = {rect.x, rect.y, 0};
		region.imageExtent = {uint32_t(rect.w), uint32_t(rect.h), 1};
		vkCmdCopyImageToBuffer(list.vk(), image.vk(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer->vk(), 1, &region);
		list.memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT,
		                   VK_ACCESS_2_HOST_READ_BIT);
		EXPECT_TRUE(device().submitAndWait(std::move(list)).ok());
		buffer->invalidate();
		std::vector<uint32_t> out(size_t(rect.area()));
		std::memcpy(out.data(), buffer->mapped(), out.size() * 4);
		return out;
	}
	/// Every level of the entry, gutters included, against the oracle (sRGB colour within 1 of it: pow differs).
	void expectEntry(AtlasPool& pool, const Placement& p, const scene::TextureData& t, AddressMode address)
	{
		const auto want = referenceLevels(t, address, p.levels, p.gutter);
		for (uint32_t l = 0; l < p.levels; ++l)
		{
			const Rect in = p.level(l);
			const Rect padded{in.x - int32_t(p.gutter), in.y - int32_t(p.gutter), in.w + 2 * int32_t(p.gutter),
			                  in.h + 2 * int32_t(p.gutter)};
			const auto got = read(pool, p.family, p.layer, padded);
			ASSERT_EQ(got.size(), want[l].size());
			size_t wrong = 0;
			for (size_t i = 0; i < got.size(); ++i)
				for (int c = 0; c < 4; ++c)
				{
					const int a = int((got[i] >> (8 * c)) & 0xff), b = int((want[l][i] >> (8 * c)) & 0xff);
					const int tolerance = t.srgb && c < 3 && l > 0 ? 1 : 0;
					wrong += std::abs(a - b) > tolerance;
				}
			EXPECT_EQ(wrong, 0u) << t.width << "x" << t.height << (t.srgb ? " sRGB" : "") << " level " << l
			                     << " address " << int(address);
		}
	}
	void expectSound(const AtlasPool& pool)
	{
		const auto problems = pool.validate();
		EXPECT_TRUE(problems.empty()) << problems.front();
	}
};

TEST_F(AtlasPoolTest, EveryLevelAndGutterHoldsWhatTheOracleComputesForEveryAddressMode)
{
	auto p = pool({.page_size = 256, .gutter = 2});
	ASSERT_TRUE(p);
	struct Case
	{
		scene::TextureData t;
		AddressMode address;
		bool mipmaps;
	};
	std::vector<Case> cases;
	uint32_t seed = 1;
	for (AddressMode address : {AddressMode::ClampToEdge, AddressMode::Repeat, AddressMode::MirroredRepeat})
		for (auto [w, h] : {std::pair{16u, 16u}, {13u, 5u}, {1u, 7u}, {33u, 2u}})
			for (bool srgb : {false, true})
				cases.push_back({texture(w, h, srgb, seed++), address, true});
	cases.push_back({texture(9, 9, false, seed++), AddressMode::Repeat, false}); // (one level)
	std::vector<Placement> placed;
	for (const Case& c : cases)
	{
		auto got = p->acquire(c.t, sampler(c.address, c.mipmaps));
		ASSERT_TRUE(got.ok()) << got.error().message;
		ASSERT_TRUE(got->has_value());
		placed.push_back(**got);
	}
	upload(*p);
	EXPECT_EQ(p->stats().uploads, cases.size());
	for (size_t i = 0; i < cases.size(); ++i)
	{
		SCOPED_TRACE("case " + std::to_string(i));
		EXPECT_EQ(placed[i].levels, cases[i].mipmaps ? gpu::fullMipChain(cases[i].t.width, cases[i].t.height) : 1u);
		expectEntry(*p, placed[i], cases[i].t, cases[i].address);
	}
	expectSound(*p);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

TEST_F(AtlasPoolTest, EntriesAreSharedRefcountedAndEvictedLeastRecentlyIdleFirstUnlessPinned)
{
	auto p = pool({.page_size = 64, .gutter = 1, .first_layers = 1, .max_layers = 1});
	ASSERT_TRUE(p);
	// 30 × 30 without mips: 32 × 32 with gutters — four fill the page.
	std::vector<scene::TextureData> t;
	for (uint32_t i = 0; i < 6; ++i)
		t.push_back(texture(30, 30, false, 100 + i));
	const auto flat = sampler(AddressMode::ClampToEdge, false);
	for (int i = 0; i < 4; ++i)
		ASSERT_TRUE(p->acquire(t[size_t(i)], flat).value());
	const Placement shared = *p->acquire(t[0], flat).value(); // (the same entry, refcount 2)
	EXPECT_EQ(p->stats().entries, 4u);
	upload(*p);
	EXPECT_EQ(p->stats().uploads, 4u);
	EXPECT_FALSE(p->acquire(t[4], flat).value()) << "full, every entry in use: nullopt, not an error";
	EXPECT_EQ(p->stats().refused, 1u);

	// Idle order: 2, then 1; 3 pinned and idle; 0 still in use once.
	EXPECT_TRUE(p->release(t[0], flat));
	EXPECT_TRUE(p->pin(t[3], flat));
	EXPECT_TRUE(p->release(t[3], flat));
	EXPECT_TRUE(p->release(t[2], flat));
	EXPECT_TRUE(p->release(t[1], flat));
	EXPECT_FALSE(p->release(t[1], flat)) << "not in use any more";
	EXPECT_EQ(p->stats().idle, 3u);
	expectSound(*p);
	// A new entry takes the room of the least recently idle unpinned one (2), and the next of 1.
	const Placement four = *p->acquire(t[4], flat).value();
	EXPECT_EQ(p->stats().evictions, 1u);
	const Placement five = *p->acquire(t[5], flat).value();
	EXPECT_EQ(p->stats().evictions, 2u);
	EXPECT_NE(four.rect, five.rect);
	EXPECT_FALSE(p->acquire(t[6 - 5], flat).value()) << "1 was evicted; 0 in use, 3 pinned: no room";
	// The pinned idle entry is re-acquired where it was, without an upload.
	upload(*p);
	const uint64_t uploads = p->stats().uploads;
	const auto again = p->acquire(t[3], flat).value();
	ASSERT_TRUE(again);
	upload(*p);
	EXPECT_EQ(p->stats().uploads, uploads);
	expectEntry(*p, *again, t[3], AddressMode::ClampToEdge);
	expectEntry(*p, shared, t[0], AddressMode::ClampToEdge);
	expectEntry(*p, five, t[5], AddressMode::ClampToEdge);
	// Unpinned and idle, 3 goes with evictIdle; everything released and evicted leaves an empty pool.
	EXPECT_TRUE(p->unpin(t[3], flat));
	for (int i : {0, 3, 4, 5})
		EXPECT_TRUE(p->release(t[size_t(i)], flat));
	EXPECT_EQ(p->evictIdle(), 4u);
	EXPECT_EQ(p->stats().entries, 0u);
	expectSound(*p);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

TEST_F(AtlasPoolTest, PagesGrowByLayersKeepingWhatTheyHoldAndRefuseOnlyPastTheirLimit)
{
	auto p = pool({.page_size = 64, .gutter = 1, .first_layers = 1, .max_layers = 4});
	ASSERT_TRUE(p);
	const auto wrap = sampler(AddressMode::Repeat, false);
	std::vector<scene::TextureData> t;
	std::vector<Placement> placed;
	for (uint32_t i = 0; i < 16; ++i)
	{
		t.push_back(texture(30, 30, true, 200 + i));
		const auto got = p->acquire(t.back(), wrap).value();
		ASSERT_TRUE(got) << "entry " << i;
		placed.push_back(*got);
		if (i == 3 || i == 5 || i == 11)
			upload(*p); // (grown across several uploads: 1 → 2 → 4 layers, earlier layers copied)
	}
	upload(*p);
	EXPECT_EQ(p->stats().layers[size_t(Family::Srgb)], 4u);
	EXPECT_EQ(p->stats().layers[size_t(Family::Unorm)], 0u);
	EXPECT_EQ(placed[15].layer, 3u);
	for (size_t i = 0; i < t.size(); ++i)
	{
		SCOPED_TRACE("entry " + std::to_string(i));
		expectEntry(*p, placed[i], t[i], AddressMode::Repeat);
	}
	EXPECT_FALSE(p->acquire(texture(30, 30, true, 999), wrap).value()) << "4 layers full, all in use";
	EXPECT_FALSE(p->acquire(texture(100, 10, false, 998), wrap).value()) << "wider than a page";
	scene::TextureData broken = texture(4, 4, false, 997);
	broken.width = 5;
	const auto bad = p->acquire(broken, wrap);
	ASSERT_FALSE(bad.ok());
	EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);
	expectSound(*p);
	EXPECT_EQ(device().validationErrorCount(), 0u);
}

} // namespace
} // namespace quokka::atlas
