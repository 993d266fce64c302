// quokka/gpu/bindless.hpp — a table of textures that shaders index (bindless textures).
//
// A BindlessTable is one descriptor set of the device's bindless layout (Device::bindlessLayout(): binding 0, an array
// of combined image samplers) with room for `capacity` entries. Shaders declare it as an unsized array in a set other
// than 0 and index it with the entry number, non-uniformly:
//
//   #extension GL_EXT_nonuniform_qualifier : require
//   layout(set = 1, binding = 0) uniform sampler2D textures[];
//   ... texture(textures[nonuniformEXT(entry)], uv) ...
//
// so draws whose textures differ need no descriptor change between them. Entries are allocated and released here:
// a released entry is handed out again only once every submission made before its release completed (work in flight
// may still read it), and entries are written while earlier frames that use the set are pending (the layout is
// update-after-bind and updatable while unused). Entries never written may stay so (partially bound): what a shader
// reads must have been written. Needs DeviceFeatures::descriptor_indexing; capacity ≤
// DeviceInfo::max_bindless_textures.
//
//   auto table = gpu::BindlessTable::create(device, 4096, "scene textures");
//   uint32_t e = *table->allocate();                      // std::nullopt when all are in use
//   table->write(e, *sampler, *image);                    // image in SHADER_READ_ONLY_OPTIMAL when drawn
//   table->bind(list, pipeline, 1);                       // after the pipeline's set 0 is bound or pushed
//   table->release(e);                                    // reused after the frames in flight retire
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/vk.hpp>

namespace quokka::gpu
{

class Device;
class CommandList;
class Pipeline;
class Image;
class Sampler;

class BindlessTable
{
public:
	/// Errors: MissingFeature without DeviceFeatures::descriptor_indexing; InvalidArgument for a capacity of 0 or above
	/// DeviceInfo::max_bindless_textures; OutOfMemory when the driver refuses the pool.
	static Result<std::unique_ptr<BindlessTable>> create(Device& device, uint32_t capacity, std::string name);
	/// The descriptor pool is destroyed once the work submitted so far completed.
	~BindlessTable();
	BindlessTable(const BindlessTable&) = delete;
	BindlessTable& operator=(const BindlessTable&) = delete;

	uint32_t capacity() const { return capacity_; }
	VkDescriptorSet set() const { return set_; }
	/// Entries allocated and not released (released ones count until they are free again).
	uint32_t used() const { return next_unused_ - uint32_t(free_.size()); }
	/// Released entries waiting for the submissions that may read them.
	uint32_t retiring() const { return uint32_t(retiring_.size()); }

	/// A free entry, or std::nullopt when every entry is in use or still retiring.
	std::optional<uint32_t> allocate();
	/// Gives `entry` back: free again once every submission made so far completed.
	void release(uint32_t entry);
	/// Writes `entry` (allocated): `sampler` over `image`'s view, sampled in SHADER_READ_ONLY_OPTIMAL.
	void write(uint32_t entry, const Sampler& sampler, const Image& image);
	/// Binds the set as set `set` of `pipeline`'s layout (whose set `set` is the bindless layout).
	void bind(CommandList& list, const Pipeline& pipeline, uint32_t set) const;

	/// Invariant violations, empty when consistent: every entry is exactly one of never used, free, retiring or
	/// allocated.
	std::vector<std::string> validate() const;

private:
	BindlessTable() = default;

	struct Retiring
	{
		uint64_t value; ///< the device's last submitted timeline value at the release
		uint32_t entry;
	};
	Device* device_ = nullptr;
	std::string name_;
	uint32_t capacity_ = 0;
	VkDescriptorPool pool_ = VK_NULL_HANDLE;
	VkDescriptorSet set_ = VK_NULL_HANDLE;
	uint32_t next_unused_ = 0;       ///< entries [next_unused_, capacity_) were never allocated
	std::vector<uint32_t> free_;     ///< released entries whose submissions completed
	std::vector<Retiring> retiring_; ///< in release order (non-decreasing value)
	std::vector<uint8_t> allocated_; ///< per entry: 1 while allocated (for validate() and release checks)
};

} // namespace quokka::gpu
