#include "gpu_fixture.hpp"

#include <cstring>

#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/grow_buffer.hpp>
#include <quokka/gpu/staging.hpp>

namespace quokka::gpu::test
{

using BufferTest = GpuTest;

TEST_F(BufferTest, UploadReadbackRoundTripsRandomDataFrom1ByteTo64MiB)
{
	const uint64_t sizes[] = {1, 3, 4, 255, 4096, 65536 + 7, 1u << 20, 17u << 20, 64u << 20};
	uint32_t seed = 1;
	for (uint64_t size : sizes)
	{
		SCOPED_TRACE(size);
		const auto data = randomBytes(size, seed++);
		auto buffer =
		    device().createBuffer({size, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
		                           MemoryDomain::DeviceLocal, "roundtrip"});
		ASSERT_TRUE(buffer.ok()) << buffer.error().message;
		EXPECT_EQ(buffer.value()->mapped(), nullptr);
		ASSERT_TRUE(device().uploadBuffer(*buffer.value(), 0, data.data(), size).ok());
		auto back = device().readBuffer(*buffer.value(), 0, size);
		ASSERT_TRUE(back.ok()) << back.error().message;
		ASSERT_EQ(back.value().size(), size);
		EXPECT_EQ(std::memcmp(back.value().data(), data.data(), size), 0);
	}
}

TEST_F(BufferTest, PartialRangesAndBadRangesAreHandled)
{
	auto buffer = device().createBuffer(
	    {1024, BufferUsage::TransferSrc | BufferUsage::TransferDst, MemoryDomain::DeviceLocal, "ranges"});
	ASSERT_TRUE(buffer.ok());
	const auto data = randomBytes(100, 7);
	ASSERT_TRUE(device().uploadBuffer(*buffer.value(), 900, data.data(), 100).ok());
	auto back = device().readBuffer(*buffer.value(), 900, 100);
	ASSERT_TRUE(back.ok());
	EXPECT_EQ(std::memcmp(back.value().data(), data.data(), 100), 0);

	auto too_far = device().uploadBuffer(*buffer.value(), 1000, data.data(), 100);
	ASSERT_FALSE(too_far.ok());
	EXPECT_EQ(too_far.error().code, ErrorCode::InvalidArgument);
	EXPECT_FALSE(device().readBuffer(*buffer.value(), 1020, 8).ok());
	auto empty = device().createBuffer({0, BufferUsage::Storage, MemoryDomain::DeviceLocal, "empty"});
	ASSERT_FALSE(empty.ok());
	EXPECT_EQ(empty.error().code, ErrorCode::InvalidArgument);
}

TEST_F(BufferTest, HostVisibleDomainsAreMappedAndAccounted)
{
	const uint64_t before = device().memoryStats().live_buffers;
	auto upload = device().createBuffer({256, BufferUsage::TransferSrc, MemoryDomain::Upload, "up"});
	auto readback = device().createBuffer({256, BufferUsage::TransferDst, MemoryDomain::Readback, "down"});
	ASSERT_TRUE(upload.ok() && readback.ok());
	EXPECT_NE(upload.value()->mapped(), nullptr);
	EXPECT_NE(readback.value()->mapped(), nullptr);
	EXPECT_NE(upload.value()->id(), readback.value()->id());
	EXPECT_EQ(device().memoryStats().live_buffers, before + 2);
	std::memset(upload.value()->mapped(), 0xab, 256);
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	copyBuffer(list->vk(), *upload.value(), 0, *readback.value(), 0, 256);
	list->memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT,
	                    VK_ACCESS_2_HOST_READ_BIT);
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	readback.value()->invalidate();
	for (int i = 0; i < 256; ++i)
		ASSERT_EQ(readback.value()->mapped()[i], std::byte(0xab));
}

/// DeviceMapped: device-local memory the host writes in place. Where the device has it (lavapipe: all of its memory)
/// the buffer is mapped, the host's bytes reach the device without a staged copy, the device's writes are kept, and a
/// GrowBuffer in the domain grows into mapped buffers that keep the prefix; where it has none the creation is an error.
TEST_F(BufferTest, DeviceMappedBuffersAreWrittenInPlaceByTheHostAndReadByTheDevice)
{
	const DeviceInfo& info = device().info();
	auto buffer =
	    device().createBuffer({4096, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                           MemoryDomain::DeviceMapped, "mapped"});
	if (info.host_visible_device_local_bytes == 0)
	{
		ASSERT_FALSE(buffer.ok());
		EXPECT_EQ(buffer.error().code, ErrorCode::OutOfMemory);
		return;
	}
	ASSERT_TRUE(buffer.ok()) << buffer.error().message;
	EXPECT_EQ(buffer.value()->domain(), MemoryDomain::DeviceMapped);
	ASSERT_NE(buffer.value()->mapped(), nullptr);
	const auto data = randomBytes(4096, 11);
	std::memcpy(buffer.value()->mapped(), data.data(), data.size());
	auto back = device().readBuffer(*buffer.value(), 0, 4096); // (a device copy into a readback buffer)
	ASSERT_TRUE(back.ok()) << back.error().message;
	EXPECT_EQ(std::memcmp(back.value().data(), data.data(), data.size()), 0);
	// The device's writes stay when the host then writes other bytes in place.
	const auto more = randomBytes(1000, 12);
	ASSERT_TRUE(device().uploadBuffer(*buffer.value(), 2000, more.data(), more.size()).ok());
	std::memset(buffer.value()->mapped(), 0x5a, 16);
	back = device().readBuffer(*buffer.value(), 0, 4096);
	ASSERT_TRUE(back.ok());
	for (int i = 0; i < 16; ++i)
		ASSERT_EQ(back.value()[size_t(i)], std::byte(0x5a));
	EXPECT_EQ(std::memcmp(back.value().data() + 16, data.data() + 16, 2000 - 16), 0);
	EXPECT_EQ(std::memcmp(back.value().data() + 2000, more.data(), more.size()), 0);

	auto grow = GrowBuffer::create(
	    device(),
	    {.min_capacity = 256, .max_capacity = 1 << 16, .name = "mapped grow", .domain = MemoryDomain::DeviceMapped});
	ASSERT_TRUE(grow.ok()) << grow.error().message;
	GrowBuffer& g = grow.value();
	ASSERT_NE(g.buffer()->mapped(), nullptr);
	std::memcpy(g.buffer()->mapped(), data.data(), 256);
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	g.setUsed(256);
	ASSERT_TRUE(g.ensure(3000, list.value()).value());
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	EXPECT_EQ(g.buffer()->domain(), MemoryDomain::DeviceMapped);
	ASSERT_NE(g.buffer()->mapped(), nullptr);
	back = device().readBuffer(*g.buffer(), 0, 256);
	ASSERT_TRUE(back.ok());
	EXPECT_EQ(std::memcmp(back.value().data(), data.data(), 256), 0);
}

TEST_F(BufferTest, GrowBufferKeepsItsLivePrefixAcrossDoublingsAndFiresListeners)
{
	auto grow = GrowBuffer::create(device(), {.min_capacity = 200, .max_capacity = 1 << 16, .name = "grow"});
	ASSERT_TRUE(grow.ok()) << grow.error().message;
	GrowBuffer& g = grow.value();
	EXPECT_EQ(g.capacity(), 256u); // rounded up to a power of two

	std::vector<std::pair<uint64_t, uint64_t>> events;
	const uint32_t id = g.addListener([&](const BufferHandle& old_buffer, const BufferHandle& new_buffer)
	                                  { events.emplace_back(old_buffer->size(), new_buffer->size()); });

	const auto prefix = randomBytes(200, 3);
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	ASSERT_FALSE(g.ensure(200, list.value()).value()); // fits: no growth
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	ASSERT_TRUE(device().uploadBuffer(*g.buffer(), 0, prefix.data(), prefix.size()).ok());

	// Three doublings and a jump, each in its own frame; the prefix must survive all of them.
	const uint64_t requests[] = {300, 600, 1100, 9000};
	const uint64_t expected_capacity[] = {512, 1024, 2048, 16384};
	for (int i = 0; i < 4; ++i)
	{
		auto frame = device().beginCommands();
		ASSERT_TRUE(frame.ok());
		auto grew = g.ensure(requests[i], frame.value());
		ASSERT_TRUE(grew.ok()) << grew.error().message;
		EXPECT_TRUE(grew.value());
		EXPECT_EQ(g.capacity(), expected_capacity[i]);
		EXPECT_EQ(g.used(), requests[i]);
		ASSERT_TRUE(device().submitAndWait(std::move(frame.value())).ok());
	}
	ASSERT_EQ(events.size(), 4u);
	EXPECT_EQ(events[0], std::make_pair(uint64_t(256), uint64_t(512)));
	EXPECT_EQ(events[3], std::make_pair(uint64_t(2048), uint64_t(16384)));
	EXPECT_EQ(g.growCount(), 4u);
	auto back = device().readBuffer(*g.buffer(), 0, prefix.size());
	ASSERT_TRUE(back.ok());
	EXPECT_EQ(std::memcmp(back.value().data(), prefix.data(), prefix.size()), 0);

	// Beyond the maximum: a clear error and the buffer unchanged.
	g.removeListener(id);
	auto frame = device().beginCommands();
	ASSERT_TRUE(frame.ok());
	auto refused = g.ensure((1 << 16) + 1, frame.value());
	ASSERT_FALSE(refused.ok());
	EXPECT_EQ(refused.error().code, ErrorCode::OutOfMemory);
	EXPECT_NE(refused.error().message.find("grow"), std::string::npos);
	EXPECT_EQ(g.capacity(), 16384u);
	// A growth after removeListener() does not reach the removed listener.
	ASSERT_TRUE(g.ensure(20000, frame.value()).ok());
	EXPECT_EQ(events.size(), 4u);
	ASSERT_TRUE(device().submitAndWait(std::move(frame.value())).ok());
}

TEST_F(BufferTest, GrowBufferRejectsAMinimumAboveItsMaximum)
{
	auto bad = GrowBuffer::create(device(), {.min_capacity = 4096, .max_capacity = 1024, .name = "bad"});
	ASSERT_FALSE(bad.ok());
	EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);
}

/// A lazy GrowBuffer holds no memory until its first ensure(); with caller barriers the growth copy is recorded bare
/// (the caller's barriers order it, as the heap's arena does for all its chunks at once) and still keeps the prefix;
/// release() gives the memory back and a later ensure() starts again at the minimum. A maximum that is no power of
/// two caps the capacity exactly.
TEST_F(BufferTest, ALazyGrowBufferStartsEmptyGrowsUnderTheCallersBarriersAndReleases)
{
	auto grow = GrowBuffer::create(
	    device(), {.min_capacity = 256, .max_capacity = 3000, .name = "lazy", .lazy = true, .caller_barriers = true});
	ASSERT_TRUE(grow.ok()) << grow.error().message;
	GrowBuffer& g = grow.value();
	EXPECT_EQ(g.capacity(), 0u);
	EXPECT_EQ(g.buffer(), nullptr);
	std::vector<std::pair<bool, uint64_t>> events; // (had an old buffer, new size)
	g.addListener([&](const BufferHandle& old_buffer, const BufferHandle& new_buffer)
	              { events.emplace_back(old_buffer != nullptr, new_buffer->size()); });

	auto first = device().beginCommands();
	ASSERT_TRUE(first.ok());
	ASSERT_TRUE(g.ensure(100, first.value()).value());
	EXPECT_EQ(g.capacity(), 256u) << "the minimum, rounded to a power of two";
	ASSERT_TRUE(device().submitAndWait(std::move(first.value())).ok());
	const auto prefix = randomBytes(256, 11);
	ASSERT_TRUE(device().uploadBuffer(*g.buffer(), 0, prefix.data(), prefix.size()).ok());

	auto grow_list = device().beginCommands();
	ASSERT_TRUE(grow_list.ok());
	g.setUsed(g.capacity());
	grow_list->memoryBarrier(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
	                         VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_READ_BIT);
	ASSERT_TRUE(g.ensure(2500, grow_list.value()).value());
	grow_list->memoryBarrier(VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
	                         VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_READ_BIT);
	EXPECT_EQ(g.capacity(), 3000u) << "4096 capped at the maximum";
	ASSERT_TRUE(device().submitAndWait(std::move(grow_list.value())).ok());
	auto back = device().readBuffer(*g.buffer(), 0, prefix.size());
	ASSERT_TRUE(back.ok());
	EXPECT_EQ(std::memcmp(back->data(), prefix.data(), prefix.size()), 0);

	auto release = device().beginCommands();
	ASSERT_TRUE(release.ok());
	g.release(release.value());
	EXPECT_EQ(g.capacity(), 0u);
	EXPECT_EQ(g.used(), 0u);
	ASSERT_TRUE(g.ensure(10, release.value()).value());
	EXPECT_EQ(g.capacity(), 256u);
	ASSERT_TRUE(device().submitAndWait(std::move(release.value())).ok());
	ASSERT_EQ(events.size(), 3u);
	EXPECT_EQ(events[0], std::make_pair(false, uint64_t(256)));
	EXPECT_EQ(events[1], std::make_pair(true, uint64_t(3000)));
	EXPECT_EQ(events[2], std::make_pair(false, uint64_t(256)));
}

TEST_F(BufferTest, TenThousandScatteredStagingWritesEqualACpuModel)
{
	constexpr uint64_t kSize = 1 << 20;
	auto a = device().createBuffer({kSize, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                                MemoryDomain::DeviceLocal, "staged.a"});
	auto b = device().createBuffer({kSize, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                                MemoryDomain::DeviceLocal, "staged.b"});
	ASSERT_TRUE(a.ok() && b.ok());
	std::vector<std::byte> model_a = randomBytes(kSize, 11), model_b = randomBytes(kSize, 12);
	ASSERT_TRUE(device().uploadBuffer(*a.value(), 0, model_a.data(), kSize).ok());
	ASSERT_TRUE(device().uploadBuffer(*b.value(), 0, model_b.data(), kSize).ok());

	StagingRing ring(device(), 64 << 10); // small chunks: the first frame spans several, then the ring adapts
	std::mt19937 rng(2024);
	for (int frame = 0; frame < 4; ++frame)
	{
		for (int i = 0; i < 10000; ++i)
		{
			const bool to_a = rng() % 4 != 0;
			const uint64_t size = 1 + rng() % 64;
			// Clustered offsets make overlapping and adjacent writes common (the later write must win).
			const uint64_t offset = (rng() % 2 ? rng() % 4096 : rng() % (kSize - size));
			const auto data = randomBytes(size, rng());
			auto& model = to_a ? model_a : model_b;
			std::memcpy(model.data() + offset, data.data(), size);
			ASSERT_TRUE(ring.write(to_a ? a.value() : b.value(), offset, data.data(), size).ok());
		}
		auto list = device().beginCommands();
		ASSERT_TRUE(list.ok());
		const StagingFlushStats stats = ring.flush(list.value());
		// The first frame spans several chunks and sizes the next ones to fit a whole frame. The second starts in the
		// largest chunk it has (a small frame after a large one makes no chunk of the large frame's size), overflows it
		// once and makes one of the new size; from the third on: one copy command per destination buffer.
		if (frame == 0)
		{
			EXPECT_GT(stats.destinations, 2u);
		}
		else if (frame == 1)
		{
			EXPECT_LE(stats.destinations, 4u);
		}
		else
		{
			EXPECT_EQ(stats.destinations, 2u);
		}
		EXPECT_LE(stats.regions, 10000u);
		EXPECT_EQ(ring.pendingBytes(), 0u);
		ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		auto back_a = device().readBuffer(*a.value(), 0, kSize);
		auto back_b = device().readBuffer(*b.value(), 0, kSize);
		ASSERT_TRUE(back_a.ok() && back_b.ok());
		ASSERT_EQ(std::memcmp(back_a.value().data(), model_a.data(), kSize), 0) << "frame " << frame;
		ASSERT_EQ(std::memcmp(back_b.value().data(), model_b.data(), kSize), 0) << "frame " << frame;
	}
	// ~10k writes × (32.5 B + alignment) ≈ 0.4 MiB per frame: chunks grew to 512 KiB and are recycled, not re-made.
	EXPECT_EQ(ring.chunkBytes(), 512u << 10);
	EXPECT_LE(ring.stagingBytes(), 2u * ring.chunkBytes());
}

// A frame far larger than the chunk size: the chunks it opens grow with what it staged so far, so 4 MiB in 4 KiB writes
// through a 64 KiB ring takes a handful of chunks (one copy command each) instead of 64, and the bytes arrive intact.
TEST_F(BufferTest, ALargeFrameOpensGeometricallyGrowingChunks)
{
	constexpr uint64_t kSize = 4 << 20, kWrite = 4 << 10;
	auto dst = device().createBuffer({kSize, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                                  MemoryDomain::DeviceLocal, "staged.large"});
	ASSERT_TRUE(dst.ok());
	const std::vector<std::byte> model = randomBytes(kSize, 31);
	StagingRing ring(device(), 64 << 10);
	ring.setScatterAbove(UINT32_MAX); // copies only: this test counts copy commands
	// Descending offsets: no two writes merge on the destination side, so each chunk is one copy command.
	for (uint64_t offset = kSize; offset > 0; offset -= kWrite)
		ASSERT_TRUE(ring.write(dst.value(), offset - kWrite, model.data() + offset - kWrite, kWrite).ok());
	auto list = device().beginCommands();
	ASSERT_TRUE(list.ok());
	const StagingFlushStats stats = ring.flush(list.value());
	ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	EXPECT_LE(stats.destinations, 8u); // 64 + 64 + 128 + … KiB: 7 chunks (the old ring: 64)
	EXPECT_GE(stats.destinations, 2u);
	EXPECT_EQ(stats.bytes, kSize);
	EXPECT_EQ(ring.chunkBytes(), 4u << 20); // the next frame of this volume fits one chunk
	auto back = device().readBuffer(*dst.value(), 0, kSize);
	ASSERT_TRUE(back.ok());
	EXPECT_EQ(std::memcmp(back.value().data(), model.data(), kSize), 0);
}

// After a frame far larger than the chunk size (placing a scene), small frames make no chunk of that frame's size — the
// staging ring reuses a chunk it has (a driver allocation of hundreds of MiB of host-visible memory stalled the frame
// after placing 10^6 objects by 100 ms on an NVIDIA driver) — and the chunk size halves per frame back to what the
// small frames need, giving the large chunks back.
TEST_F(BufferTest, SmallFramesAfterALargeOneMakeNoChunkAndTheRingShrinksBack)
{
	constexpr uint64_t kSize = 4 << 20, kWrite = 4 << 10;
	auto dst = device().createBuffer({kSize, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                                  MemoryDomain::DeviceLocal, "staged.shrink"});
	ASSERT_TRUE(dst.ok());
	std::vector<std::byte> model = randomBytes(kSize, 41);
	StagingRing ring(device(), 64 << 10);
	auto frame = [&]
	{
		auto list = device().beginCommands();
		ASSERT_TRUE(list.ok());
		ring.flush(list.value());
		ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
	};
	for (uint64_t offset = 0; offset < kSize; offset += kWrite)
		ASSERT_TRUE(ring.write(dst.value(), offset, model.data() + offset, kWrite).ok());
	frame();
	ASSERT_EQ(ring.chunkBytes(), 4u << 20);
	const uint64_t after_large = ring.stagingBytes();
	const uint64_t created = device().memoryStats().buffers_created;
	std::mt19937 rng(5);
	for (int f = 0; f < 10; ++f)
	{
		for (int i = 0; i < 16; ++i) // 1 KiB per frame
		{
			const uint64_t offset = (rng() % (kSize / 64)) * 64;
			std::vector<std::byte> bytes = randomBytes(64, uint32_t(rng()));
			std::memcpy(model.data() + offset, bytes.data(), 64);
			ASSERT_TRUE(ring.write(dst.value(), offset, bytes.data(), 64).ok());
		}
		frame();
		EXPECT_EQ(device().memoryStats().buffers_created, created) << "frame " << f << " made a staging chunk";
		EXPECT_EQ(ring.chunkBytes(), std::max<uint64_t>(64 << 10, (4u << 20) >> (f + 1))) << "frame " << f;
	}
	EXPECT_LT(ring.stagingBytes(), after_large);
	auto back = device().readBuffer(*dst.value(), 0, kSize);
	ASSERT_TRUE(back.ok());
	EXPECT_EQ(std::memcmp(back.value().data(), model.data(), kSize), 0);
}

// Ascending writes take the append path: contiguous ones (16-byte sizes keep the staging side contiguous too) merge
// into one region, gaps start new ones; a write behind the last one then switches to the overlap-resolving path and
// must still win over the older bytes it covers.
TEST_F(BufferTest, AscendingStagingWritesMergeAndALaterOverlapStillWins)
{
	constexpr uint64_t kSize = 64 << 10;
	auto a = device().createBuffer({kSize, BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst,
	                                MemoryDomain::DeviceLocal, "staged.ascending"});
	ASSERT_TRUE(a.ok());
	std::vector<std::byte> model(kSize, std::byte{0});
	ASSERT_TRUE(device().uploadBuffer(*a.value(), 0, model.data(), kSize).ok());
	StagingRing ring(device());
	auto write = [&](uint64_t offset, uint64_t size, uint32_t seed)
	{
		const auto data = randomBytes(size, seed);
		std::memcpy(model.data() + offset, data.data(), size);
		ASSERT_TRUE(ring.write(a.value(), offset, data.data(), size).ok());
	};
	for (int frame = 0; frame < 2; ++frame)
	{
		// 100 contiguous 16-byte writes, a gap, 100 more: two regions.
		for (uint32_t i = 0; i < 100; ++i)
			write(1024 + 16 * i, 16, 100 * frame + i);
		for (uint32_t i = 0; i < 100; ++i)
			write(8192 + 16 * i, 16, 1000 + 100 * frame + i);
		if (frame == 1)
			write(1024 + 40, 100, 7); // behind the last write, overlapping the first run
		auto list = device().beginCommands();
		ASSERT_TRUE(list.ok());
		const StagingFlushStats stats = ring.flush(list.value());
		EXPECT_EQ(stats.destinations, 1u);
		// Frame 1: the first run splits around the overlapping write (before, the write, after) and the second run
		// stays whole; pieces adjacent in both buffers merge again, so at most 4 regions.
		EXPECT_EQ(stats.regions, frame == 0 ? 2u : 4u) << "frame " << frame;
		EXPECT_EQ(stats.bytes, 3200u) << "frame " << frame; // the late write covers bytes already staged
		ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
		auto back = device().readBuffer(*a.value(), 0, kSize);
		ASSERT_TRUE(back.ok());
		ASSERT_EQ(std::memcmp(back.value().data(), model.data(), kSize), 0) << "frame " << frame;
	}
}

// Word-aligned scattered writes — the heap's records and headers — go through the scatter copy past scatterAbove():
// the bytes equal a CPU model whichever path a group takes (all copied, all scattered, the default), a destination
// without Storage usage is always copied, writes longer than 64 KiB stay copies next to a scatter, and a frame that
// spans several staging chunks scatters once per (destination, chunk).
TEST_F(BufferTest, ScatteredWordWritesScatterPastTheThresholdAndEqualACpuModel)
{
	constexpr uint64_t kSize = 1 << 20;
	const BufferUsage storage = BufferUsage::Storage | BufferUsage::TransferSrc | BufferUsage::TransferDst;
	auto a = device().createBuffer({kSize, storage, MemoryDomain::DeviceLocal, "scattered.a"});
	auto b = device().createBuffer({kSize, storage, MemoryDomain::DeviceLocal, "scattered.b"});
	auto c = device().createBuffer(
	    {kSize, BufferUsage::TransferSrc | BufferUsage::TransferDst, MemoryDomain::DeviceLocal, "scattered.c"});
	ASSERT_TRUE(a.ok() && b.ok() && c.ok());
	const BufferHandle dst[3] = {a.value(), b.value(), c.value()};
	std::vector<std::byte> model[3];
	for (int d = 0; d < 3; ++d)
	{
		model[d] = randomBytes(kSize, 40 + d);
		ASSERT_TRUE(device().uploadBuffer(*dst[d], 0, model[d].data(), kSize).ok());
	}
	std::mt19937 rng(77);
	for (const uint64_t chunk : {uint64_t(4) << 20, uint64_t(64) << 10})
		for (const uint32_t above : {0u, 32u, UINT32_MAX})
		{
			SCOPED_TRACE("chunk " + std::to_string(chunk) + ", scatter above " + std::to_string(above));
			StagingRing ring(device(), chunk);
			ring.setScatterAbove(above);
			for (int i = 0; i < 3000; ++i)
			{
				const int d = int(rng() % 3);
				// Mostly 1–64 words; now and then a write longer than 64 KiB (copied even in a scattered group).
				const uint64_t size = rng() % 500 == 0 ? (80u << 10) : 4 * (1 + rng() % 64);
				const uint64_t offset = 4 * (rng() % ((kSize - size) / 4));
				const auto data = randomBytes(size, rng());
				std::memcpy(model[d].data() + offset, data.data(), size);
				ASSERT_TRUE(ring.write(dst[d], offset, data.data(), size).ok());
			}
			auto list = device().beginCommands();
			ASSERT_TRUE(list.ok());
			const StagingFlushStats stats = ring.flush(list.value());
			ASSERT_TRUE(device().submitAndWait(std::move(list.value())).ok());
			if (above == UINT32_MAX)
			{
				EXPECT_EQ(stats.scatters, 0u);
			}
			else
			{
				// a and b scatter (once per staging chunk their writes landed in); c never does.
				EXPECT_GE(stats.scatters, 2u);
				EXPECT_GT(stats.scattered, 1000u);
				EXPECT_GE(stats.destinations, 1u); // c, and the long writes
			}
			if (chunk == (uint64_t(64) << 10) && above != UINT32_MAX)
			{
				EXPECT_GT(stats.scatters, 2u) << "writes spanning chunks scatter once per chunk";
			}
			for (int d = 0; d < 3; ++d)
			{
				auto back = device().readBuffer(*dst[d], 0, kSize);
				ASSERT_TRUE(back.ok());
				ASSERT_EQ(std::memcmp(back.value().data(), model[d].data(), kSize), 0) << "buffer " << d;
			}
		}
}

TEST_F(BufferTest, StagingWriteOutsideTheBufferIsAnError)
{
	auto a = device().createBuffer({64, BufferUsage::TransferDst, MemoryDomain::DeviceLocal, "small"});
	ASSERT_TRUE(a.ok());
	StagingRing ring(device());
	const uint32_t x = 1;
	auto r = ring.write(a.value(), 62, &x, 4);
	ASSERT_FALSE(r.ok());
	EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
	EXPECT_EQ(ring.pendingBytes(), 0u);
}

} // namespace quokka::gpu::test
