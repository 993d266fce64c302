// quokka::gpu — BindlessTable (bindless.hpp).
#include <quokka/base/assert.hpp>
#include <quokka/gpu/bindless.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/device.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/gpu/pipeline.hpp>

#include "internal.hpp"

namespace quokka::gpu
{

Result<std::unique_ptr<BindlessTable>> BindlessTable::create(Device& device, uint32_t capacity, std::string name)
{
	if (!device.features().descriptor_indexing)
		return makeError(ErrorCode::MissingFeature,
		                 "bindless textures need descriptor indexing, which " + device.info().name + " lacks");
	if (capacity == 0 || capacity > device.info().max_bindless_textures)
		return makeError(ErrorCode::InvalidArgument, "a bindless table of " + std::to_string(capacity) +
		                                                 " textures (this device allows 1 to " +
		                                                 std::to_string(device.info().max_bindless_textures) + ")");
	std::unique_ptr<BindlessTable> t(new BindlessTable());
	t->device_ = &device;
	t->name_ = std::move(name);
	t->capacity_ = capacity;
	t->allocated_.assign(capacity, 0);
	const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, capacity};
	VkDescriptorPoolCreateInfo pool{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
	pool.flags = VK_DESCRIPTOR_POOL_CREATE_UPDATE_AFTER_BIND_BIT;
	pool.maxSets = 1;
	pool.poolSizeCount = 1;
	pool.pPoolSizes = &size;
	QUOKKA_VK_TRY(vkCreateDescriptorPool(device.vk(), &pool, nullptr, &t->pool_));
	VkDescriptorSetVariableDescriptorCountAllocateInfo count{
	    VK_STRUCTURE_TYPE_DESCRIPTOR_SET_VARIABLE_DESCRIPTOR_COUNT_ALLOCATE_INFO};
	count.descriptorSetCount = 1;
	count.pDescriptorCounts = &capacity;
	VkDescriptorSetLayout layout = device.bindlessLayout();
	VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
	alloc.pNext = &count;
	alloc.descriptorPool = t->pool_;
	alloc.descriptorSetCount = 1;
	alloc.pSetLayouts = &layout;
	QUOKKA_VK_TRY(vkAllocateDescriptorSets(device.vk(), &alloc, &t->set_));
	device.setDebugName(VK_OBJECT_TYPE_DESCRIPTOR_SET, uint64_t(t->set_), t->name_.c_str());
	return t;
}

BindlessTable::~BindlessTable()
{
	if (!pool_)
		return;
	VkDevice dev = device_->vk();
	VkDescriptorPool pool = pool_;
	device_->destroyLater([dev, pool] { vkDestroyDescriptorPool(dev, pool, nullptr); });
}

std::optional<uint32_t> BindlessTable::allocate()
{
	if (free_.empty() && next_unused_ == capacity_ && !retiring_.empty())
	{
		// (The device is asked only when nothing else is left: it polls the timeline.)
		const uint64_t done = device_->completedValue();
		size_t n = 0;
		while (n < retiring_.size() && retiring_[n].value <= done)
			free_.push_back(retiring_[n++].entry);
		retiring_.erase(retiring_.begin(), retiring_.begin() + ptrdiff_t(n));
	}
	uint32_t e;
	if (!free_.empty())
	{
		e = free_.back();
		free_.pop_back();
	}
	else if (next_unused_ < capacity_)
		e = next_unused_++;
	else
		return std::nullopt;
	allocated_[e] = 1;
	return e;
}

void BindlessTable::release(uint32_t entry)
{
	QUOKKA_ASSERT(entry < capacity_ && allocated_[entry], "a bindless entry released that is not allocated");
	allocated_[entry] = 0;
	retiring_.push_back({device_->lastSubmittedValue(), entry});
}

void BindlessTable::write(uint32_t entry, const Sampler& sampler, const Image& image)
{
	QUOKKA_ASSERT(entry < capacity_ && allocated_[entry], "a bindless entry written that is not allocated");
	const VkDescriptorImageInfo info{sampler.vk(), image.view(), VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
	VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
	w.dstSet = set_;
	w.dstBinding = 0;
	w.dstArrayElement = entry;
	w.descriptorCount = 1;
	w.descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
	w.pImageInfo = &info;
	vkUpdateDescriptorSets(device_->vk(), 1, &w, 0, nullptr);
}

void BindlessTable::bind(CommandList& list, const Pipeline& pipeline, uint32_t set) const
{
	QUOKKA_ASSERT(pipeline.setLayout(set) == device_->bindlessLayout(), "a pipeline without a bindless set bound");
	vkCmdBindDescriptorSets(list.vk(), pipeline.bindPoint(), pipeline.layout(), set, 1, &set_, 0, nullptr);
}

std::vector<std::string> BindlessTable::validate() const
{
	std::vector<std::string> problems;
	std::vector<uint8_t> seen(capacity_, 0);
	auto mark = [&](uint32_t e, const char* as)
	{
		if (e >= next_unused_)
			problems.push_back(name_ + ": entry " + std::to_string(e) + " is " + as + " but was never allocated");
		else if (seen[e]++)
			problems.push_back(name_ + ": entry " + std::to_string(e) + " is listed twice (" + as + ")");
		else if (allocated_[e])
			problems.push_back(name_ + ": entry " + std::to_string(e) + " is allocated and " + as);
	};
	for (uint32_t e : free_)
		mark(e, "free");
	for (const Retiring& r : retiring_)
		mark(r.entry, "retiring");
	for (size_t i = 1; i < retiring_.size(); ++i)
		if (retiring_[i].value < retiring_[i - 1].value)
			problems.push_back(name_ + ": retiring entries out of submission order");
	for (uint32_t e = 0; e < next_unused_; ++e)
		if (!seen[e] && !allocated_[e])
			problems.push_back(name_ + ": entry " + std::to_string(e) +
			                   " is lost (neither free, retiring nor allocated)");
	for (uint32_t e = next_unused_; e < capacity_; ++e)
		if (allocated_[e])
			problems.push_back(name_ + ": entry " + std::to_string(e) + " is allocated beyond the used range");
	return problems;
}

} // namespace quokka::gpu
