// scene_pass_internal.hpp — ScenePass's internal types (classic module only): the pass's state (ScenePass::Impl) and
// the prepared object. scene_pass.cpp holds the walkers and the pass; prepared_object.cpp the prepared object.
#pragma once

#include <quokka/classic/scene_pass.hpp>

#include <quokka/inputs/derived_uniforms.hpp>
#include <quokka/inputs/object_inputs.hpp>
#include <quokka/modes/mode_rules.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace quokka::classic
{

using adaptive::AdaptiveObject;
using adaptive::aval;
using adaptive::Ref;
using adaptive::Token;
using scene::RenderObjectPtr;
using scene::RenderTree;
using scene::RenderTreePtr;
using scene::UniformValue;

/// With background pipelines: the milliseconds of a frame's update after which objects whose effect became ready wait
/// for the next frame (as the heap's HeapTuning::placement_budget_ms).
inline constexpr double kPrepareBudgetMs = 8.0;

// ---- the pass ---------------------------------------------------------------------------------------------------

class PreparedObject;
class WalkerNode;

struct ScenePass::Impl
{
	inputs::Context* context;
	scene::FramebufferSignature signature;
	fx::FragmentOutputs outputs;
	RenderTreePtr tree;
	PassStats* stats;

	std::unique_ptr<struct Walker> root;
	std::vector<Ref<PreparedObject>> dirty_objects;
	/// Objects waiting for their effect (compiled in the background), and the context's compilesDone() when they were
	/// last looked at: once it changed, update() prepares them again.
	std::vector<Ref<PreparedObject>> waiting;
	uint64_t waiting_since = 0;
	bool waiting_retry = false; ///< some waiting objects' effect is ready: prepared next frame (preparation budget)
	/// Effects seen compiling in the background, with the context's compilesDone() then (no request hashed per
	/// waiting object).
	std::map<fx::Hash128, uint64_t> pending_effects;
	std::vector<Ref<WalkerNode>> dirty_walkers;
	std::vector<PreparedObject*> emitted;
	bool order_dirty = true;
	size_t live_objects = 0;
	size_t released_since_collect = 0; ///< derived uniforms are collected when this passes half their count
	inputs::DerivedUniforms derived;

	Result<std::unique_ptr<Walker>> build(const RenderTreePtr& tree);
	void rebuildOrder();
};

// ---- prepared objects -------------------------------------------------------------------------------------------

/// One leaf ready to draw. Reads exactly the inputs its compiled effect needs; inputChanged() tells it which.
class PreparedObject final : public inputs::ObjectNode
{
public:
	PreparedObject(ScenePass::Impl& pass, RenderObjectPtr object) : pass_(&pass), object_(std::move(object))
	{
		++pass_->live_objects;
	}
	~PreparedObject() override
	{
		pass_->context->uniformArena().release(ubo);
		--pass_->live_objects;
	}

	Result<void> prepare();
	Result<void> refresh();
	void detach()
	{
		dead = true;
		++pass_->stats->released;
	}

	const scene::RenderObject& object() const { return *object_; }

	// What encode() reads.
	const inputs::PipelineEntry* pipeline = nullptr;
	gpu::DynamicState dyn;
	std::vector<Ref<inputs::BufferResource>> vertex_buffers;
	std::vector<uint64_t> vertex_offsets; ///< view offsets
	Ref<inputs::BufferResource> index_buffer;
	uint64_t index_offset = 0;
	VkIndexType index_type = VK_INDEX_TYPE_UINT32;
	inputs::BufferArena::Range ubo;
	uint32_t ubo_size = 0;
	std::vector<Ref<inputs::TextureResource>> textures;
	std::vector<gpu::SamplerHandle> samplers;
	std::vector<uint32_t> texture_bindings;
	scene::DrawCall draw;
	bool active = true;
	bool queued = false;
	bool dead = false;
	bool prepared = false;
	bool waiting = false; ///< its effect compiles in the background (Impl::waiting): not drawn yet

	/// Queues a refresh (a waiting object's effect may be ready).
	void requeue()
	{
		if (!queued && !dead)
		{
			queued = true;
			pass_->dirty_objects.emplace_back(this);
		}
	}

	void inputChanged(AdaptiveObject* input) override
	{
		dirty_inputs_.push_back(input);
		if (!queued && !dead)
		{
			queued = true;
			pass_->dirty_objects.emplace_back(this);
		}
	}

private:
	enum Role : uint32_t
	{
		kUniform,
		kState,
		kDraw,
		kActive,
		kBuffer,
	};
	struct Input
	{
		AdaptiveObject* node;
		Role role;
		uint32_t index;
	};

	Result<void> readUniform(uint32_t i);
	Result<void> readState();
	Result<void> readBuffer(uint32_t i);
	Result<void> validateDraw();
	Result<void> uploadUniforms();
	Error fail(const std::string& what) const
	{
		return makeError(ErrorCode::InvalidArgument, inputs::objectName(*object_) + ": " + what);
	}
	void track(AdaptiveObject* node, Role role, uint32_t index)
	{
		if (node && !node->isConstant())
			inputs_.push_back({node, role, index});
	}

	ScenePass::Impl* pass_;
	RenderObjectPtr object_;
	fx::CompiledEffectPtr effect_;
	std::vector<Input> inputs_;
	std::vector<AdaptiveObject*> dirty_inputs_;
	std::vector<aval<UniformValue>> uniform_values_;
	std::vector<std::byte> ubo_bytes_;
	bool ubo_dirty_ = false;
	scene::PipelineStateValues state_;
	modes::ModeInputs modes_; ///< the inputs of the object's mode rules (none without rules)
	// Buffers in the order: attributes (iface order), then the index buffer.
	struct BufferInput
	{
		const scene::BufferView* view;
		fx::Type type;
		std::string name;
		uint64_t bytes = 0; ///< size of the current host value
	};
	std::vector<BufferInput> buffers_;
};

} // namespace quokka::classic
