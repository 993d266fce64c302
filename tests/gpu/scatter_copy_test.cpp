// ScatterCopy on the device: random tables of regions (including more than twice as many regions as one dispatch
// has workgroups) copied from a source range at a non-zero offset into a target; every target
// word read back against a CPU replay — copied words exact, untouched words unchanged.
#include "gpu_fixture.hpp"

#include <cstring>
#include <random>

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/scatter_copy.hpp>

namespace quokka::gpu
{
namespace
{

using test::GpuTest;

constexpr uint32_t kUntouched = 0xA5A5A5A5u;

class ScatterCopyTest : public GpuTest
{
protected:
	BufferHandle buffer(uint64_t bytes)
	{
		auto created =
		    device().createBuffer({bytes, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
		                           MemoryDomain::DeviceLocal, "scatter test"});
		EXPECT_TRUE(created.ok()) << created.error().message;
		return created.ok() ? created.value() : nullptr;
	}
	void upload(const Buffer& dst, std::span<const uint32_t> words)
	{
		auto uploaded = device().uploadBuffer(dst, 0, words.data(), words.size_bytes());
		ASSERT_TRUE(uploaded.ok()) << uploaded.error().message;
	}
	std::vector<uint32_t> read(const Buffer& src)
	{
		auto data = device().readBuffer(src, 0, src.size());
		EXPECT_TRUE(data.ok()) << data.error().message;
		std::vector<uint32_t> words(src.size() / 4);
		if (data.ok())
			std::memcpy(words.data(), data.value().data(), words.size() * 4);
		return words;
	}

	/// Scatters `count` random disjoint regions of 1..max_words words and checks the whole target.
	void scatterAndCheck(uint32_t count, uint32_t max_words, uint32_t seed)
	{
		auto scatter = ScatterCopy::create(device());
		ASSERT_TRUE(scatter.ok()) << scatter.error().message;
		std::mt19937 rng(seed);
		// Disjoint target runs with random gaps, in shuffled order (the heap's tables are in target order; nothing
		// may depend on that).
		std::vector<ScatterRegion> regions;
		uint32_t source_words = 0, target_words = 0;
		for (uint32_t i = 0; i < count; ++i)
		{
			const uint32_t words = 1 + rng() % max_words;
			target_words += rng() % 3;
			regions.push_back({source_words, target_words, words, 0});
			source_words += words + rng() % 2;
			target_words += words;
		}
		std::shuffle(regions.begin(), regions.end(), rng);
		// The source range starts at a non-zero, aligned offset of its buffer; the words before it must not be read.
		const uint64_t source_offset = scatter->offsetAlignment() * 3;
		std::vector<uint32_t> source(source_offset / 4 + source_words);
		for (uint32_t& w : source)
			w = rng();
		auto src = buffer(source.size() * 4);
		auto dst = buffer(uint64_t(target_words + 16) * 4);
		auto table = buffer(regions.size() * sizeof(ScatterRegion));
		ASSERT_TRUE(src && dst && table);
		upload(*src, source);
		upload(*dst, std::vector<uint32_t>(dst->size() / 4, kUntouched));
		std::vector<uint32_t> table_words(regions.size() * 4);
		std::memcpy(table_words.data(), regions.data(), table_words.size() * 4);
		upload(*table, table_words);

		auto list = device().beginCommands();
		ASSERT_TRUE(list.ok());
		list->memoryBarrier(VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
		                    VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                    VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
		scatter->record(list.value(), {src.get(), source_offset, uint64_t(source_words) * 4},
		                {dst.get(), 0, dst->size()}, {table.get(), 0, table->size()}, count);
		list->memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
		                    VK_PIPELINE_STAGE_2_TRANSFER_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
		ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());

		std::vector<uint32_t> expected(dst->size() / 4, kUntouched);
		for (const ScatterRegion& r : regions)
			for (uint32_t w = 0; w < r.words; ++w)
				expected[r.dst + w] = source[source_offset / 4 + r.src + w];
		const std::vector<uint32_t> got = read(*dst);
		ASSERT_EQ(got.size(), expected.size());
		size_t wrong = 0, first = 0;
		for (size_t i = 0; i < got.size(); ++i)
			if (got[i] != expected[i] && wrong++ == 0)
				first = i;
		EXPECT_EQ(wrong, 0u) << "first differing word " << first << ": " << got[first] << " instead of "
		                     << expected[first];
	}
};

TEST_F(ScatterCopyTest, CopiesEveryRegionExactlyAndNothingElse)
{
	scatterAndCheck(1, 1, 1);
	scatterAndCheck(777, 200, 2); // regions longer than a workgroup (64 words) loop
}

TEST_F(ScatterCopyTest, MoreRegionsThanWorkgroupsLoopOverTheTable)
{
	// More regions than maxComputeWorkGroupCount[0] (65,535 on lavapipe, and the least Vulkan allows): each workgroup
	// takes every (groups)-th region.
	scatterAndCheck(140000, 6, 3);
}

} // namespace
} // namespace quokka::gpu
