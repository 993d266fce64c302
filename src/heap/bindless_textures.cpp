// BindlessTextures (bindless_textures.hpp).
#include "bindless_textures.hpp"

#include <quokka/base/assert.hpp>
#include <quokka/gpu/device.hpp>

namespace quokka::heap::detail
{

Result<std::unique_ptr<BindlessTextures>> BindlessTextures::create(inputs::Context& context, uint32_t capacity)
{
	auto t = std::make_unique<BindlessTextures>();
	t->context_ = &context;
	QUOKKA_TRY_ASSIGN(table, gpu::BindlessTable::create(context.device(), capacity, "heap bindless textures"));
	t->table_ = std::move(table);
	t->image_changes_seen_ = context.textureImageChanges();
	return t;
}

std::optional<uint32_t> BindlessTextures::acquire(const adaptive::Ref<inputs::TextureResource>& texture,
                                                  const gpu::SamplerHandle& sampler)
{
	const Key key{texture.get(), sampler.get()};
	if (auto it = by_key_.find(key); it != by_key_.end())
	{
		++entries_[it->second].refs;
		return it->second;
	}
	const std::optional<uint32_t> e = table_->allocate();
	if (!e)
		return std::nullopt;
	if (*e >= entries_.size())
		entries_.resize(*e + 1);
	entries_[*e] = {texture, sampler, nullptr, 1};
	by_key_.emplace(key, *e);
	unwritten_.push_back(*e);
	return e;
}

void BindlessTextures::release(uint32_t entry)
{
	QUOKKA_ASSERT(entry < entries_.size() && entries_[entry].refs > 0, "a bindless entry released too often");
	Entry& e = entries_[entry];
	if (--e.refs > 0)
		return;
	by_key_.erase(Key{e.texture.get(), e.sampler.get()});
	e = Entry{}; // (the texture and sampler go: the descriptor is not read again — the table retires the entry)
	table_->release(entry);
}

Result<bool> BindlessTextures::sync()
{
	bool waited = false;
	auto write = [&](uint32_t i) -> Result<void>
	{
		Entry& e = entries_[i];
		const gpu::ImageHandle& image = e.texture->image();
		if (!image)
			return makeError(ErrorCode::InvalidArgument,
			                 "a bindless texture has no image when the frame is drawn (its upload failed)");
		if (e.written == image.get())
			return {};
		if (e.written && !waited)
		{
			// The entry's old image may be sampled by frames in flight: an entry they use cannot be rewritten.
			QUOKKA_TRY(context_->device().wait(context_->device().lastSubmittedValue()));
			waited = true;
		}
		table_->write(i, *e.sampler, *image);
		e.written = image.get();
		return {};
	};
	if (context_->textureImageChanges() != image_changes_seen_)
	{
		image_changes_seen_ = context_->textureImageChanges();
		for (uint32_t i = 0; i < entries_.size(); ++i)
			if (entries_[i].refs)
				QUOKKA_TRY(write(i));
	}
	for (uint32_t i : unwritten_)
		if (i < entries_.size() && entries_[i].refs)
			QUOKKA_TRY(write(i));
	unwritten_.clear();
	return waited;
}

std::vector<std::string> BindlessTextures::validate(const std::vector<uint32_t>& uses) const
{
	std::vector<std::string> problems = table_->validate();
	uint32_t held = 0;
	for (uint32_t i = 0; i < entries_.size(); ++i)
	{
		const Entry& e = entries_[i];
		const uint32_t used = i < uses.size() ? uses[i] : 0;
		if (e.refs != used)
			problems.push_back("bindless entry " + std::to_string(i) + " counts " + std::to_string(e.refs) +
			                   " holders, the objects " + std::to_string(used));
		if (!e.refs)
			continue;
		++held;
		auto it = by_key_.find(Key{e.texture.get(), e.sampler.get()});
		if (it == by_key_.end() || it->second != i)
			problems.push_back("bindless entry " + std::to_string(i) + " is not found by its texture and sampler");
		if (e.written && e.written != e.texture->image().get())
			problems.push_back("bindless entry " + std::to_string(i) + " shows an image its texture replaced");
	}
	for (size_t i = entries_.size(); i < uses.size(); ++i)
		if (uses[i])
			problems.push_back("objects use bindless entry " + std::to_string(i) + ", which the table never made");
	if (held != by_key_.size())
		problems.push_back("the bindless key map holds " + std::to_string(by_key_.size()) + " entries, " +
		                   std::to_string(held) + " are held");
	if (held != table_->used() - table_->retiring())
		problems.push_back("the bindless table has " + std::to_string(table_->used() - table_->retiring()) +
		                   " entries allocated, the scene holds " + std::to_string(held));
	return problems;
}

} // namespace quokka::heap::detail
