// buckets.cpp — the bucket's texture key and slot routing (buckets.hpp).
#include "buckets.hpp"

#include "heap_internal.hpp"

namespace quokka::heap
{

Result<TextureKey> TextureKey::of(inputs::Context& context, const scene::RenderObject& object,
                                  std::span<const fx::TextureBinding> bindings)
{
	TextureKey key;
	QUOKKA_TRY(context.objectTextures(object, bindings, key.textures, key.samplers));
	key.words.reserve(2 * key.textures.size());
	for (size_t i = 0; i < key.textures.size(); ++i)
	{
		key.words.push_back(key.textures[i].get());
		key.words.push_back(key.samplers[i].get());
	}
	return key;
}

Result<Slot*> SlotRouting::route(Bucket& b, const scene::PipelineStateValues& state, bool indexed, bool& created)
{
	for (const Bucket::Known& k : b.known)
		if (k.indexed == indexed && k.state == state)
			return k.slot;
	QUOKKA_TRY_ASSIGN(slot, slotOf(b, state, indexed, created));
	b.known.push_back({state, indexed, slot});
	return slot;
}

Result<Slot*> SlotRouting::slotOf(Bucket& b, const scene::PipelineStateValues& state, bool indexed, bool& created)
{
	inputs::PipelineRequest req;
	req.effect = b.indirect_effect;
	req.topology = state.topology;
	for (const scene::ColorAttachment& c : signature_->colors)
	{
		req.color_formats.push_back(c.format);
		req.blend.push_back(inputs::toVk(state.blendFor(c.name)));
	}
	req.depth_format = signature_->depth_format;
	req.samples = signature_->samples;
	req.alpha_to_coverage = state.alpha_to_coverage;
	req.depth_clamp = state.depth_clamp;
	QUOKKA_TRY_ASSIGN(entry, context_->pipeline(req));
	const gpu::DynamicState dyn = inputs::dynamicState(state, signature_->hasDepth());
	for (const auto& s : b.slots)
		if (s->indirect_pipeline == entry && s->dyn == dyn && s->indexed == indexed)
			return s.get();
	auto s = std::make_unique<Slot>();
	s->bucket = &b;
	s->indirect_pipeline = entry;
	s->request = std::move(req);
	s->dyn = dyn;
	s->indexed = indexed;
	s->prim = primitiveVertices(state.topology);
	s->draw_count.words = {0};
	s->strategy = draw_ == DrawStrategy::Megacall ? DrawStrategy::Megacall : DrawStrategy::Indirect;
	b.slots.push_back(std::move(s));
	created = true;
	return b.slots.back().get();
}

} // namespace quokka::heap
