// `quokka info [--json]`: the device, driver and the features and limits that shape the design.
#include "commands.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace quokka::app
{

int runInfo(const InfoOptions& options)
{
	auto desc = options.device.desc();
	if (!desc.ok())
		return fail(desc.error());
	auto device = gpu::Device::create(desc.value());
	if (!device.ok())
		return fail(device.error());
	const gpu::DeviceInfo& i = device.value()->info();
	const gpu::DeviceFeatures& f = device.value()->features();

	nlohmann::ordered_json j;
	j["device"] = i.name;
	j["type"] = i.is_cpu ? "cpu" : "gpu";
	j["device_type"] = i.type;
	j["driver"] = i.driver_name;
	j["driver_info"] = i.driver_info;
	j["api_version"] = i.apiVersionString();
	j["vendor_id"] = i.vendor_id;
	j["device_id"] = i.device_id;
	j["device_local_bytes"] = i.device_local_bytes;
	j["host_visible_device_local_bytes"] = i.host_visible_device_local_bytes;
	j["limits"] = {
	    {"max_storage_buffer_range", i.max_storage_buffer_range},
	    {"max_push_constants_size", i.max_push_constants_size},
	    {"max_compute_work_group_count",
	     {i.max_compute_work_group_count[0], i.max_compute_work_group_count[1], i.max_compute_work_group_count[2]}},
	    {"max_draw_indirect_count", i.max_draw_indirect_count},
	    {"max_image_dimension_2d", i.max_image_dimension_2d},
	    {"max_memory_allocation_count", i.max_memory_allocation_count},
	    {"max_push_descriptors", i.max_push_descriptors},
	    {"max_bindless_textures", i.max_bindless_textures},
	    {"timestamp_period_ns", i.timestamp_period_ns},
	    {"timestamp_valid_bits", i.timestamp_valid_bits},
	};
	j["features"] = {
	    {"draw_indirect_count", f.draw_indirect_count},
	    {"multi_draw_indirect", f.multi_draw_indirect},
	    {"descriptor_indexing", f.descriptor_indexing},
	    {"mesh_shader", f.mesh_shader},
	    {"shader_float64", f.shader_float64},
	    {"shader_int64", f.shader_int64},
	    {"buffer_device_address", f.buffer_device_address},
	    {"timestamps", f.timestamps},
	    {"gpu_timestamps_reliable", i.gpu_timestamps_reliable},
	};

	if (options.json)
	{
		std::printf("%s\n", j.dump(2).c_str());
		return 0;
	}
	std::printf("device       %s (%s)\n", i.name.c_str(), i.type.c_str());
	std::printf("driver       %s — %s\n", i.driver_name.c_str(), i.driver_info.c_str());
	std::printf("api          Vulkan %s\n", i.apiVersionString().c_str());
	std::printf("memory       %.1f GiB device-local, %.1f GiB of it host-visible\n",
	            double(i.device_local_bytes) / double(1ull << 30),
	            double(i.host_visible_device_local_bytes) / double(1ull << 30));
	std::printf("limits\n");
	for (auto& [key, value] : j["limits"].items())
		std::printf("  %-30s %s\n", key.c_str(), value.dump().c_str());
	std::printf("features\n");
	for (auto& [key, value] : j["features"].items())
		std::printf("  %-30s %s\n", key.c_str(), value.get<bool>() ? "yes" : "no");
	return 0;
}

} // namespace quokka::app
