// gpu_derive.cpp — derived uniforms computed on the device (gpu_derive.hpp): records, constituents, the dispatches.
#include "gpu_derive.hpp"

#include "heap_internal.hpp"

#include <quokka/gpu/command_list.hpp>
#include <quokka/gpu/timing.hpp>

namespace quokka::heap::detail
{

void Constituent::inputChanged(AdaptiveObject*)
{
	if (!queued)
	{
		queued = true;
		derive->queue(this);
	}
}

GpuDerive::GpuDerive(HeapCore& core)
    : core_(core),
      precision_(core.options.force_df32 ? derived::Precision::Df32 : derived::precisionFor(core.context->device()))
{
}

GpuDerive::~GpuDerive() = default;

uint32_t GpuDerive::ruleIndex(const rules::Rule& rule)
{
	const std::pair<uint64_t, uint64_t> id{rule.id().hi, rule.id().lo};
	if (auto it = rule_index_.find(id); it != rule_index_.end())
		return it->second;
	const uint32_t index = uint32_t(rules_.size());
	rules_.push_back(rule);
	rule_index_.emplace(id, index);
	const uint32_t stride = derived::recordStride(uint32_t(rule.inputs().size()));
	if (stride > stride_)
		restride(stride);
	return index;
}

void GpuDerive::restride(uint32_t stride)
{
	stride_ = stride;
	for (uint32_t c = 0; c < chunks_.size(); ++c)
	{
		chunks_[c].words.words.assign(chunks_[c].info.size() * stride_, 0u);
		chunks_[c].words.touchAll();
		for (uint32_t i = 0; i < chunks_[c].info.size(); ++i)
			writeRecord(c, i);
	}
}

Result<void> GpuDerive::pack(Constituent& c)
{
	c.beginEvaluation();
	const UniformValue* value = nullptr;
	try
	{
		value = &c.node.getValue(Token{&c});
	}
	catch (const std::exception& e)
	{
		c.endEvaluation(false);
		return makeError(ErrorCode::InvalidArgument, std::string("an input of a derived uniform threw: ") + e.what());
	}
	c.endEvaluation(true);
	for (uint8_t half = 0; half < 2; ++half)
	{
		if (c.slot[half] == Constituent::kNone)
			continue;
		const std::optional<rules::Value> v = inputs::ruleInput(*value, {"", c.type, half == 1});
		if (!v)
			return makeError(ErrorCode::InvalidArgument, "an input of a derived uniform is read as " +
			                                                 fx::typeName(c.type) + " but its value is not");
		std::array<uint32_t, derived::kSlotWords> words;
		derived::packConstituent(*v, precision_, words);
		slots_.set(size_t(c.slot[half]) * derived::kSlotWords, words.data(), words.size());
		epochs_.set(c.slot[half], epoch_);
	}
	dirty_ = true;
	return {};
}

Result<uint32_t> GpuDerive::acquireSlot(const aval<UniformValue>& node, const rules::Input& input, Constituent*& out)
{
	auto [it, fresh] = constituents_.try_emplace(node.node().get());
	if (fresh)
	{
		it->second = adaptive::makeRef<Constituent>(*this, node);
		it->second->type = input.type;
	}
	Constituent& c = *it->second;
	if (c.type != input.type)
		return makeError(ErrorCode::InvalidArgument, "derived uniforms read the value of '" + input.name + "' as " +
		                                                 fx::typeName(c.type) + " and as " + fx::typeName(input.type));
	const uint8_t half = input.inverse ? 1 : 0;
	if (c.users[half]++ == 0)
	{
		if (!free_slots_.empty())
		{
			c.slot[half] = free_slots_.back();
			free_slots_.pop_back();
		}
		else
		{
			c.slot[half] = next_slot_++;
			slots_.resize(size_t(next_slot_) * derived::kSlotWords);
			epochs_.resize(next_slot_);
		}
		if (Result<void> r = pack(c); !r.ok())
		{
			releaseSlot(&c, half);
			return r.error();
		}
		++core_.stats->constituent_uploads;
	}
	out = &c;
	return c.slot[half];
}

void GpuDerive::releaseSlot(Constituent* c, uint8_t half)
{
	QUOKKA_ASSERT(c->users[half] > 0, "GpuDerive: a constituent released more often than acquired");
	if (--c->users[half] > 0)
		return;
	free_slots_.push_back(c->slot[half]);
	c->slot[half] = Constituent::kNone;
	if (c->users[0] == 0 && c->users[1] == 0)
		constituents_.erase(c->node.node().get()); // (a queued re-pack skips it: see refresh)
}

void GpuDerive::writeRecord(uint32_t chunk, uint32_t index)
{
	const RecordInfo& info = chunks_[chunk].info[index];
	const UniformEntry& e = *info.owner;
	std::array<uint32_t, derived::kRecordInputs + 16> words{};
	words[derived::kRecordRule] = e.rule;
	words[derived::kRecordOutput] = (e.ref + 16) / 4;
	words[derived::kRecordEpoch] = epoch_;
	for (size_t i = 0; i < info.inputs.size(); ++i)
		words[derived::kRecordInputs + i] = info.inputs[i].first->slot[info.inputs[i].second];
	chunks_[chunk].words.set(size_t(index) * stride_, words.data(), stride_);
}

Result<void> GpuDerive::add(UniformEntry& entry, const inputs::DerivedUniforms::Derivation& d)
{
	if (d.rule.inputs().size() > 16)
		return makeError(ErrorCode::InvalidArgument, "a derived uniform reads more than 16 inputs");
	RecordInfo info{&entry, {}, entry.data_bytes};
	for (size_t i = 0; i < d.inputs.size(); ++i)
	{
		Constituent* c = nullptr;
		Result<uint32_t> slot = acquireSlot(d.inputs[i], d.rule.inputs()[i], c);
		if (!slot)
		{
			for (const auto& [held, half] : info.inputs)
				releaseSlot(held, half);
			return slot.error();
		}
		info.inputs.emplace_back(c, uint8_t(d.rule.inputs()[i].inverse ? 1 : 0));
		info.value_bytes += 4 + 8 * d.rule.inputs()[i].type.rows * d.rule.inputs()[i].type.cols;
	}
	entry.rule = ruleIndex(d.rule);
	if (chunks_.size() <= entry.chunk)
		chunks_.resize(entry.chunk + 1);
	ChunkRecords& records = chunks_[entry.chunk];
	entry.record = uint32_t(records.info.size());
	value_bytes_ += info.value_bytes;
	records.info.push_back(std::move(info));
	records.words.resize(records.info.size() * stride_);
	writeRecord(entry.chunk, entry.record);
	++records_;
	dirty_ = true;
	return {};
}

void GpuDerive::remove(UniformEntry& entry)
{
	ChunkRecords& records = chunks_[entry.chunk];
	const uint32_t i = entry.record;
	for (const auto& [c, half] : records.info[i].inputs)
		releaseSlot(c, half);
	value_bytes_ -= records.info[i].value_bytes;
	const uint32_t last = uint32_t(records.info.size() - 1);
	if (i != last)
	{
		records.info[i] = std::move(records.info[last]);
		records.info[i].owner->record = i;
		writeRecord(entry.chunk, i);
	}
	records.info.pop_back();
	records.words.resize(records.info.size() * stride_);
	entry.record = UINT32_MAX;
	--records_;
	dirty_ = true;
}

void GpuDerive::moved(UniformEntry& entry)
{
	writeRecord(entry.chunk, entry.record);
	dirty_ = true;
}

Result<void> GpuDerive::refresh()
{
	std::vector<Ref<Constituent>> queued;
	queued.swap(queued_);
	for (const Ref<Constituent>& c : queued)
	{
		c->queued = false;
		if (c->users[0] == 0 && c->users[1] == 0)
			continue; // (released after it was queued; the queue's hold is dropped below)
		QUOKKA_TRY(pack(*c));
		++core_.stats->constituent_uploads;
	}
	return {};
}

Result<void> GpuDerive::upload(gpu::Device& device, gpu::StagingRing& staging, HeapStats& stats)
{
	if (!dirty_)
		return {};
	QUOKKA_TRY_ASSIGN(c, slots_.upload(device, staging));
	QUOKKA_TRY_ASSIGN(e, epochs_.upload(device, staging));
	stats.upload_bytes += c + e;
	for (ChunkRecords& r : chunks_)
	{
		if (r.info.empty())
			continue;
		QUOKKA_TRY_ASSIGN(w, r.words.upload(device, staging));
		stats.upload_bytes += w;
	}
	return {};
}

Result<void> GpuDerive::dispatch(gpu::CommandList& list, HeapStats& stats)
{
	if (!std::exchange(dirty_, false) || records_ == 0)
		return {};
	if (!kernel_ || kernel_rules_ != rules_.size())
	{
		QUOKKA_TRY_ASSIGN(k, derived::DeriveKernel::create(core_.context->device(), rules_, precision_));
		kernel_.emplace(std::move(k));
		kernel_rules_ = rules_.size();
	}
	// Earlier frames' draws read the outputs this dispatch overwrites (an execution dependency suffices); this frame's
	// arena copies and staged arrays were made visible to compute shaders by the barriers after them.
	list.memoryBarrier(VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
	                       VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT,
	                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
	if (timer)
		timer->begin(list);
	for (uint32_t c = 0; c < chunks_.size(); ++c)
	{
		const ChunkRecords& r = chunks_[c];
		if (r.info.empty() || c >= core_.chunks.size() || !core_.chunks[c]->buffer())
			continue;
		kernel_->dispatch(list, *slots_.buffer, *epochs_.buffer, *r.words.buffer, *core_.chunks[c]->buffer(), 0,
		                  uint32_t(r.info.size()), stride_, epoch_);
		++stats.derive_dispatches;
	}
	if (timer)
		timer->end(list);
	epoch_ = epoch_ == UINT32_MAX ? 1 : epoch_ + 1;
	// (The chunk is the draws' index buffer too.)
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
	                   VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
	                       VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT |
	                       VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT,
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT |
	                       VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_INDEX_READ_BIT);
	return {};
}

} // namespace quokka::heap::detail
