// buckets.cpp — the bucket's texture key and slot routing (buckets.hpp), and HeapCore's bucket and slot upkeep:
// finding or making an object's bucket, its slot through the routing, the per-slot strategy choice and the sweep of
// emptied slots and buckets.
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
	if (b.last.slot && b.last.indexed == indexed && b.last.state == state)
		return b.last.slot;
	QUOKKA_TRY_ASSIGN(key, modes::ModeKey::encode(state, attachments_));
	auto [it, fresh] = b.known.try_emplace({std::move(key), indexed}, nullptr);
	if (!fresh)
	{
		b.last = {state, indexed, it->second};
		return it->second;
	}
	Result<Slot*> slot = slotOf(b, state, indexed, created);
	if (!slot)
	{
		b.known.erase(it);
		return slot.error();
	}
	it->second = *slot;
	b.last = {state, indexed, *slot};
	return *slot;
}

Result<SlotRouting::Pipeline> SlotRouting::pipelineOf(const Bucket& b, const scene::PipelineStateValues& state)
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
	return Pipeline{entry, inputs::dynamicState(state, signature_->hasDepth()), std::move(req)};
}

Result<Slot*> SlotRouting::slotOf(Bucket& b, const scene::PipelineStateValues& state, bool indexed, bool& created)
{
	QUOKKA_TRY_ASSIGN(made, pipelineOf(b, state));
	const inputs::PipelineEntry* entry = made.entry;
	const gpu::DynamicState dyn = made.dyn;
	for (const auto& s : b.slots)
		if (!s->route && s->indirect_pipeline == entry && s->dyn == dyn && s->indexed == indexed)
			return s.get();
	auto s = std::make_unique<Slot>();
	s->bucket = &b;
	s->indirect_pipeline = entry;
	s->request = std::move(made.request);
	s->dyn = dyn;
	s->indexed = indexed;
	s->prim = primitiveVertices(state.topology);
	s->draw_count.words = {0};
	s->strategy = draw_ == DrawStrategy::Megacall ? DrawStrategy::Megacall : DrawStrategy::Indirect;
	b.slots.push_back(std::move(s));
	created = true;
	return b.slots.back().get();
}

void DeclaredReader::read(std::span<const scene::ModeRule> rules, scene::PipelineStateValues& values)
{
	queued = false;
	beginEvaluation();
	for (const scene::ModeRule& m : rules)
		if (m.rule.input("declared") >= 0)
		{
			modes::readDeclared(leaves, m.axis, adaptive::Token{this}, values);
			const adaptive::AdaptiveObject* leaf = modes::declaredLeaf(leaves, m.axis);
			if (leaf && !leaf->isConstant() && std::find(tracked.begin(), tracked.end(), leaf) == tracked.end())
				tracked.push_back(const_cast<adaptive::AdaptiveObject*>(leaf));
		}
	endEvaluation(true);
}

void DeclaredReader::detach()
{
	for (adaptive::AdaptiveObject* node : tracked)
		removeInput(node);
	tracked.clear();
}

std::string SlotRouting::groupKey(const scene::RenderObject& o)
{
	std::string key;
	for (const scene::ModeRule& m : o.mode_rules)
	{
		key.push_back(char(m.axis));
		key.append(reinterpret_cast<const char*>(&m.rule.id()), sizeof(fx::Hash128));
		key.push_back(char(m.blends.size()));
		for (const scene::BlendState& b : m.blends)
			key.append(reinterpret_cast<const char*>(&b), sizeof b);
		if (m.rule.input("declared") < 0)
			continue;
		const adaptive::AdaptiveObject* leaf = modes::declaredLeaf(o.state, m.axis);
		if (leaf && !leaf->isConstant())
		{
			key.push_back('n');
			key.append(reinterpret_cast<const char*>(&leaf), sizeof leaf);
		}
		else
		{
			scene::PipelineStateValues v;
			modes::readDeclared(o.state, m.axis, adaptive::Token{}, v);
			const uint32_t value = modes::axisValue(v, m.axis);
			key.push_back('v');
			key.append(reinterpret_cast<const char*>(&value), sizeof value);
		}
	}
	return key;
}

Result<void> SlotRouting::specialise(const Bucket& b, RouteGroup& group, std::span<const scene::ModeRule> rules,
                                     const scene::PipelineStateValues& declared)
{
	QUOKKA_TRY_ASSIGN(spec, modes::RouteSpec::make(rules, declared));
	std::vector<RouteGroup::Draw> draws;
	for (uint32_t k = 0; k < spec.slots(); ++k)
	{
		QUOKKA_TRY_ASSIGN(p, pipelineOf(b, spec.state(k, declared)));
		draws.push_back({p.entry, p.dyn, std::move(p.request), nullptr});
	}
	group.spec = std::move(spec);
	group.draws = std::move(draws);
	group.declared = declared;
	return {};
}

Result<Slot*> SlotRouting::routeGroup(Bucket& b, const scene::PipelineStateValues& declared, bool indexed,
                                      const scene::RenderObject& o, const std::string& group_key,
                                      std::vector<Slot*>& queue, bool& created)
{
	QUOKKA_TRY_ASSIGN(key, modes::ModeKey::encode(declared, attachments_));
	auto [it, fresh] = b.routed.try_emplace({std::move(key), indexed, group_key}, nullptr);
	if (!fresh)
		return it->second;
	auto s = std::make_unique<Slot>();
	auto group = std::make_unique<RouteGroup>();
	group->reader = adaptive::makeRef<DeclaredReader>(s.get(), &queue, o.state);
	scene::PipelineStateValues values = declared;
	group->reader->read(o.mode_rules, values);
	if (Result<void> made = specialise(b, *group, o.mode_rules, values); !made.ok())
	{
		b.routed.erase(it);
		return made.error();
	}
	s->bucket = &b;
	s->indirect_pipeline = group->draws.front().pipeline; // (the carrier draws through the group's draws)
	s->dyn = group->draws.front().dyn;
	s->indexed = indexed;
	s->prim = primitiveVertices(values.topology);
	s->draw_count.words = {0};
	s->strategy = draw_ == DrawStrategy::Megacall ? DrawStrategy::Megacall : DrawStrategy::Indirect;
	s->route = std::move(group);
	b.slots.push_back(std::move(s));
	created = true;
	it->second = b.slots.back().get();
	return it->second;
}

Result<bool> SlotRouting::respecialise(Slot& carrier)
{
	RouteGroup& g = *carrier.route;
	const scene::RenderObject& first = carrier.records.front()->object();
	scene::PipelineStateValues values = g.declared;
	g.reader->read(first.mode_rules, values);
	if (values == g.declared)
		return false;
	// The layout of a record's packed inputs: per axis, the inputs its folded rule kept.
	auto layout = [](const modes::RouteSpec& spec)
	{
		std::vector<std::pair<uint32_t, std::string>> l;
		for (const modes::RouteAxis& ax : spec.axes())
			for (size_t k = 0; k < ax.sources.size(); ++k)
				l.emplace_back(ax.sources[k], fx::typeName(ax.rule.inputs()[k].type));
		return l;
	};
	const auto before = layout(g.spec);
	const uint32_t slots = g.spec.slots();
	RouteGroup::Specialised now{g.declared, g.spec, g.draws, g.kernel};
	auto hit = std::find_if(g.kept.begin(), g.kept.end(),
	                        [&](const RouteGroup::Specialised& k) { return k.declared == values; });
	if (hit != g.kept.end())
	{
		g.declared = hit->declared;
		g.spec = std::move(hit->spec);
		g.draws = std::move(hit->draws);
		g.kernel = hit->kernel;
		g.kept.erase(hit);
	}
	else
	{
		QUOKKA_TRY(specialise(*carrier.bucket, g, first.mode_rules, values));
		g.kernel = nullptr; // (the caller finds it)
	}
	g.kept.push_back(std::move(now));
	if (g.kept.size() > RouteGroup::kKept)
		g.kept.erase(g.kept.begin());
	carrier.indirect_pipeline = g.draws.front().pipeline;
	carrier.dyn = g.draws.front().dyn;
	if (g.spec.slots() != slots)
		g.capacity = 0; // (its regions are re-made for the new number of combinations)
	return layout(g.spec) != before;
}

Result<Bucket*> detail::HeapCore::bucketFor(const scene::RenderObject& o, const fx::Effect& source,
                                            const fx::CompiledEffectPtr& effect, uint32_t chunk)
{
	// An atlas or bindless variant samples the atlas's pages or the scene's table: the object's textures are in its
	// draw header, not in the key.
	const bool atlas = fx::isAtlasVariant(effect->path);
	const bool shared = fx::textureHeaderWords(effect->path) != 0;
	TextureKey textures;
	if (!shared)
	{
		Result<TextureKey> bound = TextureKey::of(*context, o, effect->iface.textures);
		if (!bound.ok())
			return bound.error();
		textures = std::move(bound.value());
	}
	BucketKey key{effect->key, chunk, std::move(textures.words)};
	auto it = buckets.find(key);
	if (it != buckets.end())
		return it->second.get();
	auto b = std::make_unique<Bucket>();
	sweep_pending = true; // dropped again if placement fails before it is used
	b->chunk = chunk;
	b->effect = source;
	b->indirect_effect = effect;
	b->header_words = effect->iface.header_words;
	b->atlas = atlas;
	b->bindless = fx::isBindlessVariant(effect->path);
	b->textures = std::move(textures.textures);
	b->samplers = std::move(textures.samplers);
	if (!shared)
		for (const fx::TextureBinding& t : effect->iface.textures)
			b->texture_bindings.push_back(t.binding);
	b->serial = next_bucket_serial++;
	Bucket* raw = b.get();
	buckets.emplace(std::move(key), std::move(b));
	bucket_order.push_back(raw);
	return raw;
}

Result<Slot*> detail::HeapCore::slotFor(Bucket& b, const scene::PipelineStateValues& state, bool indexed)
{
	bool created = false;
	QUOKKA_TRY_ASSIGN(slot, routing->route(b, state, indexed, created));
	if (created)
	{
		sweep_pending = true; // dropped again if placement fails before it is used
		shape_changed = true;
	}
	return slot;
}

Result<const RouteKernelJob*> detail::HeapCore::routeKernel(const modes::RouteSpec& spec)
{
	auto [it, fresh] = route_kernels.try_emplace(spec.kernelSource());
	if (fresh)
	{
		auto job = std::make_shared<RouteKernelJob>();
		it->second = job;
		context->runJob(job,
		                [job, &device = context->device(), spec]() -> Result<void>
		                {
			                QUOKKA_TRY_ASSIGN(k, modes::RouteKernel::create(device, spec));
			                job->kernel.emplace(std::move(k));
			                return {};
		                });
		if (job->failed() && !context->backgroundPipelines())
		{
			route_kernels.erase(it); // (made at once: tried again by the next group that needs it)
			return job->error;
		}
	}
	return it->second.get();
}

Result<Slot*> detail::HeapCore::routedSlotFor(Bucket& b, const scene::PipelineStateValues& declared, bool indexed,
                                              const scene::RenderObject& o)
{
	bool created = false;
	Result<Slot*> slot =
	    routing->routeGroup(b, declared, indexed, o, SlotRouting::groupKey(o), respecialise_queue, created);
	if (!slot)
		return makeError(slot.error().code, inputs::objectName(o) + ": " + slot.error().message);
	if (created)
	{
		sweep_pending = true; // dropped again if placement fails before it is used
		shape_changed = true;
		RouteGroup& g = *(*slot)->route;
		QUOKKA_TRY_ASSIGN(kernel, routeKernel(g.spec));
		g.kernel = kernel;
		g.routed = false;
	}
	return slot;
}

Result<void> detail::HeapCore::respecialiseGroups()
{
	std::vector<Slot*> queue;
	queue.swap(respecialise_queue);
	for (Slot* s : queue)
	{
		if (s->records.empty())
			continue; // (swept with its group)
		QUOKKA_TRY_ASSIGN(relayout, routing->respecialise(*s));
		RouteGroup& g = *s->route;
		if (!g.kernel)
		{
			QUOKKA_TRY_ASSIGN(kernel, routeKernel(g.spec));
			g.kernel = kernel;
		}
		g.routed = false;
		if (relayout)
		{
			g.inputs.resize(s->records.size() * g.spec.inputWords());
			for (HeapObject* h : s->records)
				h->writeRouteInputs();
		}
		markSlot(s);
		++stats->respecialised;
	}
	return {};
}

void detail::HeapCore::chooseStrategy(Slot& s)
{
	if (options.draw != DrawStrategy::Auto || s.records.empty())
		return;
	// Mean vertices emitted per record, with a ±25 % band so a slot hovering at the crossover does not flip every
	// frame (a flip re-uploads the slot's whole array).
	const double mean = double(s.emit_sum) / double(s.records.size());
	const double t = options.tuning.megacall_below;
	DrawStrategy want = s.strategy;
	if (s.strategy == DrawStrategy::Indirect && mean < t * 0.75)
		want = DrawStrategy::Megacall;
	else if (s.strategy == DrawStrategy::Megacall && mean > t * 1.25)
		want = DrawStrategy::Indirect;
	if (want == s.strategy)
		return;
	s.strategy = want;
	shape_changed = true;
	(want == DrawStrategy::Megacall ? s.mrecords : s.commands).touchAll();
	s.draw_count.touchAll();
	s.scan_dirty = true;
}

void detail::HeapCore::sweep()
{
	// Only a frame that emptied a slot or a bucket has anything to drop: other frames skip the O(buckets) walk.
	if (!std::exchange(sweep_pending, false))
		return;
	shape_changed = true;
	std::erase_if(dirty_slots, [](const Slot* s) { return s->records.empty(); });
	std::erase_if(route_checks, [](const Slot* s) { return s->records.empty(); });
	std::erase_if(respecialise_queue, [](const Slot* s) { return s->records.empty(); });
	for (Bucket* b : bucket_order)
	{
		absl::erase_if(b->known, [](const auto& k) { return k.second->records.empty(); });
		absl::erase_if(b->routed, [](const auto& k) { return k.second->records.empty(); });
		if (b->last.slot && b->last.slot->records.empty())
			b->last.slot = nullptr;
		std::erase_if(b->slots, [](const std::unique_ptr<Slot>& s) { return s->records.empty(); });
	}
	std::erase_if(dirty_headers, [](const Bucket* b) { return b->objects == 0; });
	std::erase_if(bucket_order, [](const Bucket* b) { return b->objects == 0; });
	std::erase_if(buckets, [](const auto& kv) { return kv.second->objects == 0; });
}

} // namespace quokka::heap
