// gpu_derive.cpp — derived uniforms computed on the device (gpu_derive.hpp): records, constituents, the dispatches.
#include "gpu_derive.hpp"

#include "heap_internal.hpp"

#include <quokka/base/host_bytes.hpp>
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

size_t GpuDerive::hostBytes() const
{
	size_t bytes = flatTableBytes(constituents_) + queued_.capacity() * sizeof(queued_[0]) + slots_.hostBytes() +
	               epochs_.hostBytes() + free_slots_.capacity() * sizeof(uint32_t) +
	               free_computed_.capacity() * sizeof(uint32_t) + chunks_.capacity() * sizeof(ChunkRecords) +
	               levels_.capacity() * sizeof(Level);
	for (const auto& [node, c] : constituents_)
		bytes += sizeof(Constituent) + c->inputCount() * adaptive::edgeBytes();
	for (const ChunkRecords& r : chunks_)
		bytes += r.words.hostBytes() + r.info.capacity() * sizeof(RecordInfo);
	for (const Level& l : levels_)
		bytes += l.words.hostBytes() + l.owner.capacity() * sizeof(Constituent*);
	return bytes;
}

void GpuDerive::adoptJobs()
{
	if (kernel_job_ && kernel_job_->ready())
	{
		if (!kernel_ || kernel_job_->rules > kernel_rules_)
		{
			kernel_.emplace(std::move(*kernel_job_->kernel));
			kernel_rules_ = kernel_job_->rules;
		}
		kernel_job_.reset();
	}
	if (chain_job_ && chain_job_->ready())
	{
		if (!chain_kernel_)
			chain_kernel_.emplace(std::move(*chain_job_->kernel));
		chain_job_.reset();
	}
}

namespace
{

/// A job of `context` (at once, or on a worker) that stores what `make` creates in the job's `kernel`.
template <typename Job, typename Make>
std::shared_ptr<Job> startKernelJob(inputs::Context& context, Make make)
{
	auto job = std::make_shared<Job>();
	context.runJob(job,
	               [job, make = std::move(make)]() -> Result<void>
	               {
		               QUOKKA_TRY_ASSIGN(k, make());
		               job->kernel.emplace(std::move(k));
		               return {};
	               });
	return job;
}

} // namespace

bool GpuDerive::kernelsReady(const inputs::DerivedUniforms::Derivation& d)
{
	inputs::Context& context = *core_.context;
	if (!context.backgroundPipelines())
		return true;
	adoptJobs();
	bool ready = true;
	if (ruleIndex(d.rule) >= kernel_rules_ || !kernel_)
	{
		ready = false;
		// (A failed job stays: its error fails the frames — Context::pipelineErrors — until the heap goes.)
		if (!kernel_job_ || (kernel_job_->pending() && kernel_job_->rules < rules_.size()))
		{
			kernel_job_ =
			    startKernelJob<DeriveJob>(context, [&device = context.device(), rules = rules_, precision = precision_]
			                              { return derived::DeriveKernel::create(device, rules, precision); });
			kernel_job_->rules = rules_.size(); // (read by this thread only)
		}
	}
	if (!chain_kernel_)
		for (const aval<UniformValue>& node : d.inputs)
			if (scene::TrafoChain::of(node.node().get()).depth() >= 2)
			{
				ready = false;
				if (!chain_job_)
				{
					chain_job_ = startKernelJob<ChainJob>(context, [&device = context.device(), precision = precision_]
					                                      { return derived::ChainKernel::create(device, precision); });
				}
				break;
			}
	return ready;
}

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
		slots_.write(size_t(c.slot[half]) * derived::kSlotWords, words.data(), words.size());
		epochs_.set(c.slot[half], epoch_);
	}
	markReaders(c);
	dirty_ = true;
	return {};
}

void GpuDerive::markReaders(const Constituent& c)
{
	for (uint64_t bits = c.chunks & ~(uint64_t(1) << 63); bits != 0; bits &= bits - 1)
		if (const size_t chunk = size_t(std::countr_zero(bits)); chunk < chunks_.size())
			chunks_[chunk].dirty = true;
	if (c.chunks >> 63)
		for (size_t chunk = 63; chunk < chunks_.size(); ++chunk)
			chunks_[chunk].dirty = true;
}

std::shared_ptr<void> GpuDerive::releaseHostArrays()
{
	struct Arrays
	{
		decltype(constituents_) constituents;
		std::vector<std::vector<RecordInfo>> info;
		std::vector<std::vector<uint32_t>> words;
		std::vector<std::vector<Constituent*>> owners;
	};
	auto a = std::make_shared<Arrays>();
	a->constituents = std::move(constituents_);
	constituents_ = {};
	drain_cursor_.reset();
	for (ChunkRecords& r : chunks_)
	{
		a->info.push_back(std::move(r.info));
		a->words.push_back(std::move(r.words.words));
		r.info.clear();
		r.words.words.clear();
	}
	for (Level& l : levels_)
	{
		a->owners.push_back(std::move(l.owner));
		a->words.push_back(std::move(l.words.words));
		l.owner.clear();
		l.words.words.clear();
	}
	return a;
}

Result<Constituent*> GpuDerive::acquire(const aval<UniformValue>& node, fx::Type type, uint8_t half)
{
	auto [it, fresh] = constituents_.try_emplace(node.node().get());
	if (fresh)
	{
		it->second = adaptive::makeRef<Constituent>(*this, node);
		it->second->type = type;
		if (!node.isConstant())
			if (scene::TrafoChain chain = scene::TrafoChain::of(node.node().get()); chain.depth() >= 2)
			{
				it->second->chain = std::move(chain);
				it->second->level = it->second->chain.depth() - 2;
			}
	}
	Ref<Constituent> c = it->second; // (held: a failed acquisition below may erase it from the table)
	if (c->type != type)
	{
		if (c->users[0] + c->users[1] == 0)
			constituents_.erase(node.node().get());
		return makeError(ErrorCode::InvalidArgument, "derived uniforms read the value as " + fx::typeName(c->type) +
		                                                 " and as " + fx::typeName(type));
	}
	if (c->users[half]++ > 0)
		return c.get();
	Result<void> r = c->isLink() ? acquireLink(*c, half) : Result<void>();
	if (r.ok() && !c->isLink())
	{
		if (!free_slots_.empty())
		{
			c->slot[half] = free_slots_.back();
			free_slots_.pop_back();
		}
		else
		{
			c->slot[half] = next_slot_++;
			slots_.words = size_t(next_slot_) * derived::kSlotWords;
			epochs_.resize(next_slot_);
		}
		r = pack(*c);
		if (r.ok())
			++core_.stats->constituent_uploads;
	}
	if (!r.ok())
	{
		if (c->slot[half] != Constituent::kNone)
			releaseSlot(c.get(), half);
		else if (--c->users[half] == 0 && c->users[1 - half] == 0)
			constituents_.erase(node.node().get());
		return r.error();
	}
	return c.get();
}

Result<void> GpuDerive::acquireLink(Constituent& c, uint8_t half)
{
	if (c.type != fx::M44f)
		return makeError(ErrorCode::InvalidArgument,
		                 "a transform chain is read as " + fx::typeName(c.type) + " (it is a 4x4 trafo)");
	QUOKKA_TRY_ASSIGN(parent, acquire(c.chain.parent().world(), fx::M44f, half));
	Result<Constituent*> local = acquire(c.chain.localUniform(), fx::M44f, half);
	if (!local)
	{
		releaseSlot(parent, half);
		return local.error();
	}
	c.parent = parent;
	c.local = *local;
	if (!free_computed_.empty())
	{
		c.slot[half] = free_computed_.back() | derived::kComputedSlot;
		free_computed_.pop_back();
	}
	else
		c.slot[half] = next_computed_++ | derived::kComputedSlot;
	++link_halves_;
	if (c.link == Constituent::kNone)
	{
		if (levels_.size() <= c.level)
			levels_.resize(c.level + 1);
		Level& level = levels_[c.level];
		c.link = uint32_t(level.owner.size());
		level.owner.push_back(&c);
		level.words.resize(level.owner.size() * derived::kChainStride);
		++links_;
	}
	writeLink(c);
	return {};
}

void GpuDerive::writeLink(const Constituent& c)
{
	const bool f = c.slot[0] != Constituent::kNone, b = c.slot[1] != Constituent::kNone;
	const uint32_t none = derived::kNoSlot;
	const uint32_t words[derived::kChainStride] = {epoch_,
	                                               f ? c.slot[0] : none,
	                                               b ? c.slot[1] : none,
	                                               f ? c.parent->slot[0] : none,
	                                               b ? c.parent->slot[1] : none,
	                                               f ? c.local->slot[0] : none,
	                                               b ? c.local->slot[1] : none};
	levels_[c.level].words.set(size_t(c.link) * derived::kChainStride, words, derived::kChainStride);
	dirty_ = true;
}

void GpuDerive::removeLink(Constituent& c)
{
	Level& level = levels_[c.level];
	const uint32_t last = uint32_t(level.owner.size() - 1);
	if (c.link != last)
	{
		level.owner[c.link] = level.owner[last];
		level.owner[c.link]->link = c.link;
		writeLink(*level.owner[c.link]);
	}
	level.owner.pop_back();
	level.words.resize(level.owner.size() * derived::kChainStride);
	c.link = Constituent::kNone;
	--links_;
	while (!levels_.empty() && levels_.back().owner.empty())
		levels_.pop_back();
	dirty_ = true;
}

void GpuDerive::releaseSlot(Constituent* c, uint8_t half)
{
	QUOKKA_ASSERT(c->users[half] > 0, "GpuDerive: a constituent released more often than acquired");
	if (--c->users[half] > 0)
		return;
	if (c->isLink())
	{
		free_computed_.push_back(c->slot[half] & ~derived::kComputedSlot);
		c->slot[half] = Constituent::kNone;
		--link_halves_;
		releaseSlot(c->parent, half);
		releaseSlot(c->local, half);
		if (c->users[1 - half] == 0)
			removeLink(*c);
		else
			writeLink(*c);
	}
	else
	{
		free_slots_.push_back(c->slot[half]);
		c->slot[half] = Constituent::kNone;
	}
	if (c->users[0] == 0 && c->users[1] == 0)
		constituents_.erase(c->node.node().get()); // (a queued re-pack skips it: see refresh)
}

void GpuDerive::writeRecord(uint32_t chunk, uint32_t index)
{
	const RecordInfo& info = chunks_[chunk].info[index];
	const DerivedEntry& e = *info.owner;
	std::array<uint32_t, derived::kRecordInputs + 16> words{};
	words[derived::kRecordRule] = e.rule;
	words[derived::kRecordOutput] = (e.ref + 16) / 4;
	words[derived::kRecordEpoch] = epoch_;
	for (size_t i = 0; i < info.inputs.size(); ++i)
		words[derived::kRecordInputs + i] = info.inputs[i].first->slot[info.inputs[i].second];
	chunks_[chunk].words.set(size_t(index) * stride_, words.data(), stride_);
	chunks_[chunk].dirty = true;
}

Result<void> GpuDerive::add(DerivedEntry& entry, const inputs::DerivedUniforms::Derivation& d)
{
	if (d.rule.inputs().size() > 16)
		return makeError(ErrorCode::InvalidArgument, "a derived uniform reads more than 16 inputs");
	RecordInfo info{&entry, {}, entry.data_bytes};
	for (size_t i = 0; i < d.inputs.size(); ++i)
	{
		const rules::Input& input = d.rule.inputs()[i];
		Result<Constituent*> c = acquire(d.inputs[i], input.type, input.inverse ? 1 : 0);
		if (!c)
		{
			for (const auto& [held, half] : info.inputs)
				releaseSlot(held, half);
			return makeError(c.error().code, "its input '" + input.name + "': " + c.error().message);
		}
		info.inputs.emplace_back(*c, uint8_t(input.inverse ? 1 : 0));
		info.value_bytes += 4 + 8 * d.rule.inputs()[i].type.rows * d.rule.inputs()[i].type.cols;
	}
	for (const auto& [c, half] : info.inputs)
		c->chunks |= uint64_t(1) << std::min<uint32_t>(entry.chunk, 63);
	entry.rule = ruleIndex(d.rule);
	needed_rules_ = std::max<size_t>(needed_rules_, entry.rule + 1);
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

void GpuDerive::remove(DerivedEntry& entry)
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

void GpuDerive::moved(DerivedEntry& entry)
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

Result<void> GpuDerive::reserveComputed(gpu::Device& device)
{
	if (next_computed_ <= computed_capacity_)
		return {};
	const uint32_t capacity = uint32_t(gpu::nextPowerOfTwo(std::max<uint64_t>(64, next_computed_)));
	QUOKKA_TRY_ASSIGN(values,
	                  device.createBuffer({uint64_t(capacity) * derived::kSlotWords * 4, gpu::BufferUsage::Storage,
	                                       gpu::MemoryDomain::DeviceLocal, "heap chain values"}));
	QUOKKA_TRY_ASSIGN(epochs, device.createBuffer({uint64_t(capacity) * 4, gpu::BufferUsage::Storage,
	                                               gpu::MemoryDomain::DeviceLocal, "heap chain epochs"}));
	computed_ = std::move(values);
	computed_epochs_ = std::move(epochs);
	computed_capacity_ = capacity;
	// The new buffers hold nothing yet: every link is recomputed in this epoch (growth doubles: amortised O(1)).
	for (const Level& level : levels_)
		for (const Constituent* c : level.owner)
			writeLink(*c);
	return {};
}

Result<void> GpuDerive::upload(gpu::Device& device, gpu::StagingRing& staging, gpu::CommandList& list, HeapStats& stats,
                               WritePath& path)
{
	if (!dirty_)
	{
		slots_.trim(); // (a frame without writes: the log of a large one goes back)
		return {};
	}
	QUOKKA_TRY(reserveComputed(device));
	if (slots_.needsGrowth())
		QUOKKA_TRY(slots_.grow(device, list, path.domain));
	QUOKKA_TRY_ASSIGN(c, slots_.upload(staging, path));
	QUOKKA_TRY_ASSIGN(e, epochs_.upload(device, staging, path));
	stats.upload_bytes += c + e;
	for (ChunkRecords& r : chunks_)
	{
		if (r.info.empty())
			continue;
		QUOKKA_TRY_ASSIGN(w, r.words.upload(device, staging, path));
		stats.upload_bytes += w;
	}
	for (Level& level : levels_)
	{
		if (level.owner.empty())
			continue;
		QUOKKA_TRY_ASSIGN(w, level.words.upload(device, staging, path));
		stats.upload_bytes += w;
	}
	return {};
}

Result<void> GpuDerive::dispatch(gpu::CommandList& list, HeapStats& stats)
{
	if (!dirty_)
		return {};
	if (records_ == 0 && links_ == 0)
	{
		dirty_ = false;
		return {};
	}
	// (The flag is cleared only once the dispatches are recorded: a kernel that failed to compile fails this frame and
	// is tried again in the next, which then computes what this one left out.)
	// With background pipelines the objects whose kernels were not ready waited (kernelsReady), so these compile only
	// when background pipelines are off (or were turned on after the records were made).
	adoptJobs();
	if (records_ > 0 && (!kernel_ || kernel_rules_ < needed_rules_))
	{
		QUOKKA_TRY_ASSIGN(k, derived::DeriveKernel::create(core_.context->device(), rules_, precision_));
		kernel_.emplace(std::move(k));
		kernel_rules_ = rules_.size();
	}
	if (links_ > 0 && !chain_kernel_)
	{
		QUOKKA_TRY_ASSIGN(k, derived::ChainKernel::create(core_.context->device(), precision_));
		chain_kernel_.emplace(std::move(k));
	}
	// Earlier frames' draws read the outputs this dispatch overwrites, and their derive dispatches the computed slots
	// (an execution dependency suffices) — unless every earlier list of the scene had completed when this frame began
	// (HeapCore::frame_alone): then they are done before this list starts. This frame's arena copies and staged arrays
	// were made visible to compute shaders by the barriers after them.
	if (!core_.frame_alone)
		list.memoryBarrier(VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
		                       VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT,
		                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_INDEX_READ_BIT,
		                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
		                   VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
	if (timer)
		timer->begin(list);
	const derived::Slots packed{&*slots_.buffer, &*epochs_.buffer};
	const derived::Slots computed = computed_ ? derived::Slots{&*computed_, &*computed_epochs_} : packed;
	// The chains level by level (a level reads what the one before wrote), then the records reading them.
	if (!levels_.empty())
	{
		absl::InlinedVector<derived::LinkLevel, 16> levels;
		for (const Level& level : levels_)
			levels.push_back({level.owner.empty() ? nullptr : &*level.words.buffer, uint32_t(level.owner.size())});
		stats.chain_dispatches += chain_kernel_->dispatchLevels(list, packed, computed, levels, epoch_);
	}
	if (records_ > 0)
	{
		if (!levels_.empty())
			list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
			                   VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
		// Only the chunks with something to compute in this epoch: an edit of one object dispatches over its chunk's
		// records, not over every record of the scene. (With transform chains every chunk: which links the chain
		// dispatch recomputes is known on the device only.)
		absl::InlinedVector<derived::RecordBatch, 16> batches;
		for (uint32_t c = 0; c < chunks_.size(); ++c)
		{
			const ChunkRecords& r = chunks_[c];
			if (r.info.empty() || c >= core_.chunks.size() || !core_.chunks[c]->buffer() || !(r.dirty || links_ > 0))
				continue;
			batches.push_back({&*r.words.buffer, &*core_.chunks[c]->buffer(), uint32_t(r.info.size())});
		}
		if (!batches.empty())
			stats.derive_dispatches += kernel_->dispatchAll(list, packed, computed, batches, stride_, epoch_);
		for (ChunkRecords& r : chunks_)
			r.dirty = false;
	}
	if (timer)
		timer->end(list);
	epoch_ = epoch_ == UINT32_MAX ? 1 : epoch_ + 1;
	// (The chunk is the draws' index buffer too.) Where the host writes the scene's buffers in place, the same barrier
	// makes this list's device writes so far — the upload's copies, the ring's, these kernels' — available to the host
	// (HeapCore::host_barrier_due).
	const bool mapped = core_.domain == gpu::MemoryDomain::DeviceMapped;
	list.memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | (mapped ? VK_PIPELINE_STAGE_2_TRANSFER_BIT : 0),
	                   VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | (mapped ? VK_ACCESS_2_TRANSFER_WRITE_BIT : 0),
	                   VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT |
	                       VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_TRANSFER_BIT |
	                       VK_PIPELINE_STAGE_2_INDEX_INPUT_BIT | (mapped ? VK_PIPELINE_STAGE_2_HOST_BIT : 0),
	                   VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT |
	                       VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT | VK_ACCESS_2_INDEX_READ_BIT |
	                       (mapped ? VK_ACCESS_2_HOST_WRITE_BIT : 0));
	core_.host_barrier_due = false;
	dirty_ = false;
	return {};
}

} // namespace quokka::heap::detail
