// quokka/classic/scene_pass.hpp — the classic per-object renderer: a persistent, delta-driven walker over a RenderTree.
//
// A ScenePass is built once per (tree, framebuffer signature). Its walker mirrors the tree: static groups are walked
// as they are, adaptive parts (an aval of a tree, an alist, an aset) hold readers and are re-pulled only when the
// adaptive graph marked them. Each leaf becomes a PreparedObject — an adaptive node that reads exactly the inputs its
// compiled effect uses (attributes, uniforms, textures, pipeline-state leaves, draw call, active flag) and is told by
// the graph which of them changed. A frame therefore costs O(changes) in update() plus O(emitted leaves) in encode():
//  - a changed uniform re-packs and re-uploads that object's uniform block only; a changed buffer or texture is
//    re-uploaded once for all its users (Context);
//  - pipelines are looked up by state *values*; cull mode, front face, depth test/write/compare, depth bias and stencil
//    are Vulkan 1.3 dynamic state, so flipping them creates no pipeline and re-sorts nothing;
//  - unordered parts are sorted by (pipeline, textures, object id) to minimise pipeline binds and descriptor pushes;
//    ordered parts keep their order.
// Uniforms an object does not define are derived when they are standard trafos (ModelViewProjTrafo, ViewProjTrafo,
// ModelViewTrafo, NormalMatrix, the *Inv variants, CameraLocation; LightLocation defaults to the camera) from its
// ModelTrafo/ViewTrafo/ProjTrafo, CPU-side in double precision; derived values are shared by every object with the same
// inputs. Bad objects (a missing attribute or uniform, a type mismatch, a draw reading past a buffer) make update()
// fail with one line naming the object. Owner thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <quokka/base/result.hpp>
#include <quokka/gpu/command_list.hpp>
#include <quokka/inputs/context.hpp>
#include <quokka/scene/framebuffer_signature.hpp>
#include <quokka/scene/render_tree.hpp>

namespace quokka::classic
{

/// Counters of the last update() + encode().
struct PassStats
{
	uint32_t prepared = 0;        ///< leaves prepared for the first time (update)
	uint32_t released = 0;        ///< prepared objects dropped (update)
	uint32_t refreshed = 0;       ///< prepared objects re-read because an input changed (update)
	uint32_t uniform_uploads = 0; ///< uniform blocks re-uploaded (update)
	uint32_t resorts = 0;         ///< draw-order rebuilds (update)
	uint32_t draws = 0;           ///< draw commands recorded (encode)
	uint32_t skipped = 0;         ///< inactive or empty objects (encode)
	uint32_t waiting = 0;         ///< objects not drawn: their pipeline is still being created (encode)
	uint32_t pipeline_binds = 0;  ///< (encode)
	uint32_t descriptor_pushes = 0;
	uint32_t vertex_binds = 0;
	uint32_t dynamic_state_sets = 0;
	uint32_t derived_uniforms = 0; ///< derived uniform nodes interned after the update (collected under churn)
	double update_ms = 0.0;        ///< CPU time of update()
	double encode_ms = 0.0;        ///< CPU time of encode()

	/// Sums counters and times (a task over several passes).
	PassStats& operator+=(const PassStats& o)
	{
		prepared += o.prepared;
		released += o.released;
		refreshed += o.refreshed;
		uniform_uploads += o.uniform_uploads;
		resorts += o.resorts;
		draws += o.draws;
		skipped += o.skipped;
		waiting += o.waiting;
		pipeline_binds += o.pipeline_binds;
		descriptor_pushes += o.descriptor_pushes;
		vertex_binds += o.vertex_binds;
		dynamic_state_sets += o.dynamic_state_sets;
		derived_uniforms += o.derived_uniforms;
		update_ms += o.update_ms;
		encode_ms += o.encode_ms;
		return *this;
	}
};

class ScenePass
{
public:
	/// Builds the walker (nothing is read or prepared until the first update()).
	ScenePass(inputs::Context& context, scene::FramebufferSignature signature, scene::RenderTreePtr tree);
	~ScenePass();
	ScenePass(const ScenePass&) = delete;
	ScenePass& operator=(const ScenePass&) = delete;

	/// Pulls what changed since the last update: walker deltas, prepared objects' changed inputs. Uniform uploads go
	/// into the context's staging ring; new or changed buffers and textures are queued in the context. Call
	/// Context::upload() afterwards, then encode(). Errors: one line naming the offending object.
	Result<void> update();
	/// Records the draws into `list`, inside dynamic rendering with attachments matching the signature and viewport and
	/// scissor already set.
	void encode(gpu::CommandList& list);

	const PassStats& stats() const { return stats_; }
	const scene::FramebufferSignature& signature() const { return signature_; }
	/// Live prepared objects.
	size_t objectCount() const;
	/// Emitted objects in draw order (after update()), by RenderObject id — for tests.
	std::vector<uint64_t> drawOrder() const;

	struct Impl;

private:
	std::unique_ptr<Impl> impl_;
	scene::FramebufferSignature signature_;
	PassStats stats_;
};

} // namespace quokka::classic
