// Private to the heap: a scene's bindless textures — a gpu::BindlessTable whose entries are shared by the objects that
// sample the same texture with the same sampler (HeapOptions::textures = bindless).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include <quokka/adaptive/core.hpp>
#include <quokka/base/result.hpp>
#include <quokka/gpu/bindless.hpp>
#include <quokka/gpu/image.hpp>
#include <quokka/inputs/context.hpp>

namespace quokka::heap::detail
{

/// Entries keyed by (texture resource, sampler), refcounted by the objects that use them. An entry is written once its
/// texture has an image (Context::upload makes it after placement): sync(), before the frame's draws. A texture whose
/// image is replaced (a new size or format, a new renderTo image) has its entry rewritten in place, after waiting
/// for the frames in flight that read the old one (the objects' draw headers keep their entry: nothing re-placed).
/// A released entry goes back to the table, which hands it out again once the frames that may read it completed.
class BindlessTextures
{
public:
	/// Errors: as gpu::BindlessTable::create.
	static Result<std::unique_ptr<BindlessTextures>> create(inputs::Context& context, uint32_t capacity);

	/// The entry of (`texture`, `sampler`): shared with the objects that hold it, or a new one; std::nullopt when the
	/// table is full.
	std::optional<uint32_t> acquire(const adaptive::Ref<inputs::TextureResource>& texture,
	                                const gpu::SamplerHandle& sampler);
	void release(uint32_t entry);
	/// Writes the entries made since the last call and, when a texture's image changed since (Context::
	/// textureImageChanges), those whose image it was. Returns whether it waited for frames in flight. Errors: as
	/// Device::wait; a texture with no image (its upload failed: the frame fails anyway).
	Result<bool> sync();

	const gpu::BindlessTable& table() const { return *table_; }
	uint32_t entries() const { return uint32_t(by_key_.size()); }
	/// Holders of `entry` (0 when free).
	uint32_t refs(uint32_t entry) const { return entry < entries_.size() ? entries_[entry].refs : 0; }
	/// Table and refcount invariants; `uses` per entry as the objects count them (checked against the refcounts).
	std::vector<std::string> validate(const std::vector<uint32_t>& uses) const;

private:
	struct Entry
	{
		adaptive::Ref<inputs::TextureResource> texture;
		gpu::SamplerHandle sampler;
		const gpu::Image* written = nullptr; ///< the image the descriptor shows (null: not written yet)
		uint32_t refs = 0;
	};
	using Key = std::pair<const void*, const void*>;
	inputs::Context* context_ = nullptr;
	std::unique_ptr<gpu::BindlessTable> table_;
	std::vector<Entry> entries_; ///< by table entry
	absl::flat_hash_map<Key, uint32_t> by_key_;
	std::vector<uint32_t> unwritten_;
	uint64_t image_changes_seen_ = 0;
};

} // namespace quokka::heap::detail
