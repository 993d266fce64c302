#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/timing.hpp>

namespace quokka::gpu
{

const char* timingSourceName(TimingSource source)
{
	return source == TimingSource::Gpu ? "gpu" : "wall";
}

FrameTimer::FrameTimer(Device& device) : device_(&device)
{
	reliable_ = device.info().gpu_timestamps_reliable;
	if (device.features().timestamps)
	{
		VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
		info.queryType = VK_QUERY_TYPE_TIMESTAMP;
		info.queryCount = 2;
		if (vkCreateQueryPool(device.vk(), &info, nullptr, &pool_) != VK_SUCCESS)
		{
			pool_ = VK_NULL_HANDLE;
			reliable_ = false;
		}
	}
}

FrameTimer::~FrameTimer()
{
	if (pool_)
	{
		VkDevice dev = device_->vk();
		VkQueryPool pool = pool_;
		device_->destroyLater([dev, pool] { vkDestroyQueryPool(dev, pool, nullptr); });
	}
}

void FrameTimer::begin(CommandList& list)
{
	wall_start_ = std::chrono::steady_clock::now();
	recorded_ = pool_ != VK_NULL_HANDLE;
	if (!recorded_)
		return;
	vkCmdResetQueryPool(list.vk(), pool_, 0, 2);
	vkCmdWriteTimestamp2(list.vk(), VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, pool_, 0);
}

void FrameTimer::end(CommandList& list)
{
	wall_start_ = std::chrono::steady_clock::now();
	if (recorded_)
		vkCmdWriteTimestamp2(list.vk(), VK_PIPELINE_STAGE_2_BOTTOM_OF_PIPE_BIT, pool_, 1);
}

Result<FrameTiming> FrameTimer::resolve()
{
	FrameTiming t;
	t.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start_).count();
	if (recorded_)
	{
		uint64_t stamps[2] = {0, 0};
		VkResult r = vkGetQueryPoolResults(device_->vk(), pool_, 0, 2, sizeof(stamps), stamps, sizeof(uint64_t),
		                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
		QUOKKA_VK_TRY(r);
		const uint32_t bits = device_->info().timestamp_valid_bits;
		const uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
		const uint64_t ticks = (stamps[1] - stamps[0]) & mask;
		t.gpu_ms = double(ticks) * double(device_->info().timestamp_period_ns) * 1e-6;
	}
	t.source = source();
	t.ms = t.source == TimingSource::Gpu ? t.gpu_ms : t.wall_ms;
	return t;
}

} // namespace quokka::gpu
