// The heap renderer against the classic path, pixel for pixel: seeded random scenes (random meshes, u16/u32/no
// indices, instancing, inactive objects, shared and private uniforms, converted attribute formats) drawn by classic,
// heap-indirect, heap-megacall and heap-auto, also forced across several chunks; incremental add/remove/edit against
// a classic render of the same set every frame; pooling (one allocation and one upload for 10^4 objects on one cval,
// an empty arena after removing everything); bad objects failing with one line.
#include "../gpu/gpu_fixture.hpp"
#include "../test_seed.hpp"
#include "heap/heap_test_access.hpp"

#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include <quokka/adaptive/aset.hpp>
#include <quokka/fx/stock.hpp>
#include <quokka/fx/uniform_scope.hpp>
#include <quokka/gpu/image_io.hpp>
#include <quokka/heap/heap_scene.hpp>
#include <quokka/runtime/runtime.hpp>

namespace quokka::heap::test
{
namespace
{

using adaptive::cval;
using gpu::Rgba8Image;
using math::V3f;
using math::V4f;
using scene::ArrayBuffer;
using scene::RenderObject;
using scene::RenderObjectPtr;
using scene::RenderTree;

constexpr uint32_t kSize = 48;

fx::Effect effectOf(std::vector<fx::StagePtr> stages)
{
	auto e = fx::composeEffect("heap-test", std::move(stages));
	EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
	return std::move(e).value();
}

/// Adds a per-instance offset to the positions (before the trafo).
fx::StagePtr instanceOffset()
{
	return std::make_shared<const fx::Stage>(fx::Stage::vertex("test.instanceOffset")
	                                             .reads({{"Positions", fx::V4f}, {"InstanceOffset", fx::V3f}})
	                                             .writes({{"Positions", fx::V4f}})
	                                             .glsl("s.Positions = vec4(s.Positions.xyz + s.InstanceOffset, "
	                                                   "s.Positions.w);"));
}

struct Effects
{
	fx::Effect constant = effectOf({fx::stock::trafo(), fx::stock::constantColor()});
	fx::Effect colors = effectOf({fx::stock::trafo(), fx::stock::vertexColors()});
	fx::Effect instanced = effectOf({instanceOffset(), fx::stock::trafo(), fx::stock::constantColor()});
	fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
};

V4f rgba(int r, int g, int b, int a = 255)
{
	return V4f(float(r) / 255.0f, float(g) / 255.0f, float(b) / 255.0f, float(a) / 255.0f);
}

/// A triangle with corners a, b, c facing the camera (normals (0, 0, −1)), in `color`, drawn with `effect`,
/// non-indexed.
RenderObject litTriangle(const fx::Effect& effect, V3f a, V3f b, V3f c, V4f color)
{
	RenderObject o;
	o.effect = effect;
	o.attributes["Positions"] = scene::BufferView::of(std::vector<V3f>{a, b, c}, VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
	o.uniforms["ConstantColor"] = scene::uniform(color);
	o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
	return o;
}

/// A random scene: every object a little random mesh at its own depth (no two objects share a depth, so the image
/// does not depend on draw order), with a random mix of the features the heap must reproduce.
struct RandomScene
{
	std::vector<RenderObjectPtr> objects;
	std::vector<cval<V4f>> shared_colors;
	std::vector<cval<bool>> actives;
	std::vector<cval<math::Trafo3d>> trafos;
	std::vector<cval<scene::DrawCall>> draws;
};

RenderObjectPtr randomObject(std::mt19937& rng, const Effects& fx, RandomScene& scene, uint32_t index)
{
	std::uniform_real_distribution<float> u(-1.0f, 1.0f);
	std::uniform_int_distribution<int> c(0, 255);
	const float depth = 0.05f + 0.9f * float(index % 997) / 997.0f + 0.0001f * float(index / 997);
	const uint32_t triangles = 1 + rng() % 6;
	std::vector<V3f> positions;
	const float cx = u(rng), cy = u(rng), r = 0.1f + 0.3f * (u(rng) + 1.0f) * 0.5f;
	for (uint32_t t = 0; t < triangles * 3; ++t)
		positions.push_back(V3f(cx + r * u(rng), cy + r * u(rng), 0.0f));
	const uint32_t vertices = uint32_t(positions.size());
	RenderObject o;
	// 0 constant colour, 1 vertex colours (UNORM8), 2 instanced, 3 shared colour, 4 per-instance uniforms (ModelTrafo
	// and ConstantColor, lit: NormalMatrix derived per instance)
	const int kind = int(rng() % 5);
	o.effect = kind == 1 ? fx.colors : kind == 2 ? fx.instanced : kind == 4 ? fx.lit : fx.constant;
	o.attributes["Positions"] = scene::BufferView::of(positions, VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Normals"] =
	    scene::BufferView::of(std::vector<V3f>(vertices, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
	if (kind == 1)
	{
		std::vector<uint8_t> colors;
		for (uint32_t v = 0; v < vertices; ++v)
			for (int k = 0; k < 4; ++k)
				colors.push_back(k == 3 ? 255 : uint8_t(c(rng)));
		o.attributes["Colors"] = scene::BufferView::of(colors, VK_FORMAT_R8G8B8A8_UNORM);
	}
	else if (kind == 3 && !scene.shared_colors.empty())
		o.uniforms["ConstantColor"] = scene::uniform(scene.shared_colors[rng() % scene.shared_colors.size()]);
	else
		o.uniforms["ConstantColor"] = scene::uniform(rgba(c(rng), c(rng), c(rng)));
	uint32_t instances = 1;
	if (kind == 2)
	{
		instances = 1 + rng() % 3;
		std::vector<V3f> offsets;
		for (uint32_t i = 0; i < 4; ++i) // room for edits up to 2 instances from first instance 1
			offsets.push_back(V3f(0.3f * u(rng), 0.3f * u(rng), 0.0f));
		o.attributes["InstanceOffset"] = scene::BufferView::of(offsets, VK_FORMAT_R32G32B32_SFLOAT, true);
	}
	if (kind == 4)
	{
		instances = 1 + rng() % 3;
		std::vector<math::M44f> trafos;
		std::vector<uint8_t> colors;
		for (uint32_t i = 0; i < 4; ++i)
		{
			// Shifted and squashed in its plane (so the normal matrix is not the identity), at the object's depth.
			const math::Trafo3d t = math::Trafo3d::translation(math::V3d(0.3 * u(rng), 0.3 * u(rng), depth)) *
			                        math::Trafo3d::scale(math::V3d(0.6 + 0.4 * (u(rng) + 1.0), 0.7, 1.0));
			trafos.push_back(math::M44f(t.forward));
			for (int k = 0; k < 4; ++k)
				colors.push_back(k == 3 ? 255 : uint8_t(c(rng)));
		}
		o.attributes["ModelTrafo"] = scene::BufferView::of(trafos, VK_FORMAT_R32G32B32A32_SFLOAT, true);
		o.attributes["ConstantColor"] = scene::BufferView::of(colors, VK_FORMAT_R8G8B8A8_UNORM, true);
	}
	scene::DrawCall d;
	d.instance_count = instances;
	d.first_instance = kind == 2 || kind == 4 ? rng() % 2 : 0;
	const int indexing = int(rng() % 3); // 0 none, 1 u16, 2 u32
	if (indexing == 0)
		d.count = vertices;
	else
	{
		// Reversed order (same triangles, other winding order in the buffer) through an index buffer, with a slice.
		std::vector<uint32_t> idx;
		for (uint32_t v = 0; v < vertices; ++v)
			idx.push_back(vertices - 1 - v);
		d.indexed = true;
		d.first = 3 * (rng() % triangles);
		d.count = vertices - d.first;
		if (indexing == 1)
			o.indices = scene::BufferView::of(std::vector<uint16_t>(idx.begin(), idx.end()), VK_FORMAT_R16_UINT);
		else
			o.indices = scene::BufferView::of(idx, VK_FORMAT_R32_UINT);
	}
	scene.draws.emplace_back(d);
	o.draw_call = scene.draws.back();
	scene.trafos.emplace_back(math::Trafo3d::translation(math::V3d(0.0, 0.0, depth)));
	o.uniforms["ModelTrafo"] = scene::uniform(scene.trafos.back());
	scene.actives.emplace_back(rng() % 10 != 0);
	o.active = scene.actives.back();
	return scene::makeRenderObject(std::move(o));
}

RandomScene randomScene(uint32_t seed, uint32_t count, const Effects& fx)
{
	std::mt19937 rng(seed);
	RandomScene s;
	for (int i = 0; i < 3; ++i)
		s.shared_colors.emplace_back(rgba(int(rng() % 256), int(rng() % 256), int(rng() % 256)));
	for (uint32_t i = 0; i < count; ++i)
		s.objects.push_back(randomObject(rng, fx, s, i));
	return s;
}

struct Mode
{
	const char* name;
	runtime::RenderOptions options;
};

/// The heap modes also cover both ways arena writes reach the chunks: heap-indirect copies every region with
/// vkCmdCopyBuffer, heap-megacall sends every short one through the arena scatter, heap-auto decides by count (the same
/// for the staging ring's headers and records).
std::vector<Mode> modes(uint64_t chunk_bytes = 0)
{
	auto heap = [&](DrawStrategy d, uint32_t scatter_above)
	{
		runtime::RenderOptions o;
		o.path = runtime::RenderPath::Heap;
		o.heap.draw = d;
		o.heap.max_chunk_bytes = chunk_bytes;
		o.heap.scatter_above = scatter_above;
		o.heap.ring_scatter_above =
		    scatter_above == 0 || scatter_above == UINT32_MAX ? scatter_above : HeapOptions{}.ring_scatter_above;
		return o;
	};
	const uint32_t by_count = HeapOptions{}.scatter_above;
	return {{"classic", {}},
	        {"heap-indirect", heap(DrawStrategy::Indirect, UINT32_MAX)},
	        {"heap-megacall", heap(DrawStrategy::Megacall, 0)},
	        {"heap-auto", heap(DrawStrategy::Auto, by_count)}};
}

class HeapRenderTest : public gpu::test::GpuTest
{
protected:
	void SetUp() override
	{
		GpuTest::SetUp();
		auto r = runtime::Runtime::create(device());
		ASSERT_TRUE(r.ok());
		runtime_ = std::move(r).value();
		auto fb = runtime::createFramebuffer(device(), signature_, kSize, kSize);
		ASSERT_TRUE(fb.ok()) << fb.error().message;
		fb_ = std::make_unique<runtime::Framebuffer>(std::move(fb).value());
	}
	void TearDown() override
	{
		fb_.reset();
		ASSERT_TRUE(device().waitIdle().ok());
		if (runtime_)
		{
			EXPECT_TRUE(runtime_->context().validate().ok());
		}
		runtime_.reset();
		GpuTest::TearDown();
	}

	std::unique_ptr<runtime::RenderTask> task(scene::RenderTreePtr tree, const runtime::RenderOptions& options)
	{
		adaptive::clist<scene::Command> commands;
		commands.append(scene::clearCommand(rgba(3, 5, 7)));
		commands.append(scene::RenderCommand{std::move(tree)});
		return runtime_->compile(signature_, commands, options);
	}

	/// Runs one frame of `t`; returns the error message or "".
	std::string frame(runtime::RenderTask& t)
	{
		auto list = device().beginCommands();
		if (!list.ok())
			return list.error().message;
		auto r = t.run(*list, *fb_);
		if (!r.ok())
			return r.error().message;
		auto s = device().submitAndWait(std::move(*list));
		return s.ok() ? "" : s.error().message;
	}

	Rgba8Image pixels()
	{
		auto img = gpu::readImageRgba8(device(), *fb_->output());
		EXPECT_TRUE(img.ok());
		return img.ok() ? std::move(img).value() : Rgba8Image{};
	}

	/// Pixels of one frame of `tree` in `options`.
	Rgba8Image render(scene::RenderTreePtr tree, const runtime::RenderOptions& options)
	{
		auto t = task(std::move(tree), options);
		EXPECT_EQ(frame(*t), "");
		return pixels();
	}

	static size_t differing(const Rgba8Image& a, const Rgba8Image& b)
	{
		size_t n = 0;
		for (uint32_t y = 0; y < kSize; ++y)
			for (uint32_t x = 0; x < kSize; ++x)
				n += a.at(x, y) != b.at(x, y);
		return n;
	}
	static size_t covered(const Rgba8Image& a)
	{
		size_t n = 0;
		for (uint32_t y = 0; y < kSize; ++y)
			for (uint32_t x = 0; x < kSize; ++x)
				n += a.at(x, y) != std::array<uint8_t, 4>{3, 5, 7, 255};
		return n;
	}

	scene::FramebufferSignature signature_;
	std::unique_ptr<runtime::Runtime> runtime_;
	std::unique_ptr<runtime::Framebuffer> fb_;
};

TEST_F(HeapRenderTest, RandomScenesMatchClassicInEveryStrategy)
{
	const Effects fx;
	const std::optional<uint32_t> env_seed = quokka::test::envTestSeed();
	for (uint32_t seed : env_seed ? std::vector<uint32_t>{*env_seed} : std::vector<uint32_t>{1, 2, 3})
	{
		RandomScene s = randomScene(seed, 80, fx);
		const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
		const Rgba8Image reference = render(tree, {});
		ASSERT_GT(covered(reference), kSize * kSize / 4) << "seed " << seed << ": the scene must cover the image";
		for (const Mode& m : modes())
		{
			const Rgba8Image img = render(tree, m.options);
			EXPECT_EQ(differing(img, reference), 0u) << m.name << ", seed " << seed;
		}
	}
}

TEST_F(HeapRenderTest, ScenesForcedAcrossSeveralChunksMatchClassic)
{
	const Effects fx;
	RandomScene s = randomScene(7, 120, fx);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(s.objects));
	const Rgba8Image reference = render(tree, {});
	for (const Mode& m : modes(2048))
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		auto t = task(tree, m.options);
		ASSERT_EQ(frame(*t), "") << m.name;
		EXPECT_EQ(differing(pixels(), reference), 0u) << m.name;
		const HeapStats& st = t->stats().heap;
		EXPECT_GT(st.chunks, 3u) << m.name << ": 2 KiB chunks must page";
		// Objects whose buffers no other object shares skip the chunks that certainly lack room for them.
		EXPECT_GT(st.chunks_skipped, 0u) << m.name;
		EXPECT_EQ(st.objects, 120u);
	}
}

TEST_F(HeapRenderTest, IncrementalEditsMatchAClassicRenderOfTheSameSet)
{
	const Effects fx;
	const uint32_t seed = quokka::test::testSeed(11);
	std::printf("random scene and edits seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
	RandomScene s = randomScene(seed, 60, fx);
	std::mt19937 rng(seed == 11 ? 5 : seed + 1);
	adaptive::cset<RenderObjectPtr> set(std::vector<RenderObjectPtr>(s.objects.begin(), s.objects.begin() + 40));
	const auto tree = RenderTree::ofObjects(set);
	for (const Mode& m : modes(4096))
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		auto classic = task(tree, {});
		auto heap = task(tree, m.options);
		for (int step = 0; step < 25; ++step)
		{
			{
				adaptive::Transaction tx;
				for (int op = 0; op < 4; ++op)
				{
					const size_t i = rng() % s.objects.size();
					switch (rng() % 5)
					{
					case 0:
						set.add(s.objects[i]);
						break;
					case 1:
						set.remove(s.objects[i]);
						break;
					case 2:
						s.actives[i].setValue(!s.actives[i].value());
						break;
					case 3:
						s.shared_colors[rng() % 3].setValue(rgba(int(rng() % 256), 0, int(rng() % 256)));
						break;
					default:
					{
						scene::DrawCall d = s.draws[i].value();
						d.instance_count = d.instance_count > 1 ? 1 : 2;
						if (!s.objects[i]->attributes.count("InstanceOffset"))
							d.instance_count = 1, d.count = d.count > 3 ? d.count - 3 : d.count;
						s.draws[i].setValue(d);
					}
					}
				}
			}
			ASSERT_EQ(frame(*classic), "");
			const Rgba8Image reference = pixels();
			ASSERT_EQ(frame(*heap), "");
			ASSERT_EQ(differing(pixels(), reference), 0u) << m.name << ", step " << step;
		}
	}
}

TEST_F(HeapRenderTest, RemovingExactlyTheNewestObjectsInOneFrameShrinksEveryArrayCleanly)
{
	// Adds append records and headers at the ends of their arrays; removing exactly those objects in the next frame
	// shrinks the arrays back below ranges the add frame had marked dirty (bench update's add-then-undo pattern).
	const Effects fx;
	RandomScene s = randomScene(13, 60, fx);
	for (const Mode& m : modes(8192))
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		adaptive::cset<RenderObjectPtr> set(std::vector<RenderObjectPtr>(s.objects.begin(), s.objects.begin() + 40));
		const auto tree = RenderTree::ofObjects(set);
		auto classic = task(tree, {});
		auto heap = task(tree, m.options);
		for (int round = 0; round < 3; ++round)
		{
			for (bool adding : {true, false})
			{
				{
					adaptive::Transaction tx;
					for (size_t i = 40; i < 60; ++i)
						if (adding)
							set.add(s.objects[i]);
						else
							set.remove(s.objects[i]);
				}
				ASSERT_EQ(frame(*classic), "");
				const Rgba8Image reference = pixels();
				ASSERT_EQ(frame(*heap), "");
				ASSERT_EQ(differing(pixels(), reference), 0u) << m.name << ", round " << round << ", adding " << adding;
				auto findings = heap->heapScenes().front()->validateHeap();
				ASSERT_TRUE(findings.ok()) << findings.error().message;
				EXPECT_TRUE(findings->empty()) << m.name << ": " << findings->front();
			}
		}
		EXPECT_EQ(heap->stats().heap.objects, 40u) << m.name;
	}
}

TEST_F(HeapRenderTest, TenThousandObjectsOnOneValueShareOneAllocationAndOneUpload)
{
	const Effects fx;
	cval<V4f> color(rgba(200, 10, 10));
	const auto shared = scene::uniform(color); // sharing is by aval identity: one node for every object
	const auto mesh = scene::BufferView::of(std::vector<V3f>{{-0.01f, -0.01f, 0}, {0.01f, -0.01f, 0}, {0, 0.01f, 0}},
	                                        VK_FORMAT_R32G32B32_SFLOAT);
	const auto normals = scene::BufferView::of(std::vector<V3f>(3, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> all;
	for (uint32_t i = 0; i < 10000; ++i)
	{
		RenderObject o;
		o.effect = fx.constant;
		o.attributes["Positions"] = mesh;
		o.attributes["Normals"] = normals;
		o.uniforms["ConstantColor"] = shared;
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(
		    math::V3d(-0.95 + 1.9 * double(i % 100) / 99.0, -0.95 + 1.9 * double(i / 100) / 99.0, 0.5)));
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		all.push_back(scene::makeRenderObject(std::move(o)));
	}
	set.unionWith(all);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::ofObjects(set), options);
	ASSERT_EQ(frame(*t), "");
	const HeapStats placed = t->stats().heap;
	EXPECT_EQ(placed.objects, 10000u);
	EXPECT_GE(placed.arena_capacity_bytes, placed.arena_bytes);
	EXPECT_GT(placed.arena_capacity_bytes, 0u);
	EXPECT_EQ(placed.buckets, 1u);
	EXPECT_EQ(placed.slots, 1u);
	EXPECT_EQ(pixels().at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{200, 10, 10, 255}));
	// The shared colour: one allocation (the trafos are private, the mesh shared): one upload per change.
	color.setValue(rgba(10, 200, 10));
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.uniform_uploads, 1u);
	EXPECT_EQ(t->stats().heap.refreshed, 0u);
	EXPECT_LT(t->stats().heap.upload_bytes, 1024u);
	EXPECT_EQ(pixels().at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{10, 200, 10, 255}));
	// Everything removed: no object, no bucket, an empty arena.
	set.clear();
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.objects, 0u);
	EXPECT_EQ(t->stats().heap.buckets, 0u);
	EXPECT_EQ(t->stats().heap.live_bytes, 0u);
	EXPECT_EQ(t->stats().heap.arena_bytes, 0u);
	EXPECT_EQ(t->stats().heap.arena_capacity_bytes, 0u) << "an emptied chunk gives its buffer back";
	EXPECT_EQ(t->stats().heap.removed, 10000u);
	// And takes a new one when objects come back.
	set.unionWith(all);
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.objects, 10000u);
	EXPECT_GT(t->stats().heap.arena_capacity_bytes, 0u);
	EXPECT_EQ(pixels().at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{10, 200, 10, 255}));
}

void expectValidHeap(runtime::RenderTask& t)
{
	auto findings = t.heapScenes().front()->validateHeap();
	ASSERT_TRUE(findings.ok()) << findings.error().message;
	EXPECT_TRUE(findings->empty()) << (findings->empty() ? "" : findings->front());
}

TEST_F(HeapRenderTest, AChunkHoldingASharedUniformTakesItsNextUser)
{
	// Group-fit placement: an object reading a shared uniform goes to a chunk that already holds it (when it fits)
	// before the newest chunk — so the value stays one allocation and one upload per change. The placement index
	// lists the shared node when the second user asks for it, not when the first user made its entry.
	const Effects fx;
	cval<V4f> color(rgba(200, 10, 10));
	const auto shared = scene::uniform(color);
	const auto other = scene::uniform(rgba(10, 10, 200));
	auto object = [&](uint32_t i, const adaptive::aval<scene::UniformValue>& c)
	{
		std::vector<V3f> p;
		for (uint32_t t = 0; t < 5; ++t) // 15 vertices: five or so objects fill a 2 KiB chunk
			p.insert(p.end(), {V3f(-0.9f + 0.1f * float(i), -0.9f, 0.5f), V3f(-0.85f + 0.1f * float(i), -0.9f, 0.5f),
			                   V3f(-0.9f + 0.1f * float(i), -0.8f, 0.5f)});
		RenderObject o;
		o.effect = fx.constant;
		o.attributes["Positions"] = scene::BufferView::of(p, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] =
		    scene::BufferView::of(std::vector<V3f>(p.size(), V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = c;
		o.draw_call = adaptive::constant(scene::DrawCall{false, uint32_t(p.size())});
		return scene::makeRenderObject(std::move(o));
	};
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> fillers;
	const RenderObjectPtr first = object(0, shared); // the oldest id: placed first, in chunk 0
	for (uint32_t i = 1; i < 12; ++i)
		fillers.push_back(object(i, other));
	set.add(first);
	set.unionWith(fillers);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	options.heap.max_chunk_bytes = 2048;
	auto t = task(RenderTree::ofObjects(set), options);
	ASSERT_EQ(frame(*t), "");
	ASSERT_GE(t->stats().heap.chunks, 2u);
	// Room in chunk 0 (its first filler leaves), then a second user of the shared colour.
	set.remove(fillers[0]);
	const RenderObjectPtr second = object(20, shared);
	set.add(second);
	ASSERT_EQ(frame(*t), "");
	expectValidHeap(*t);
	color.setValue(rgba(10, 200, 10));
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(t->stats().heap.uniform_uploads, 1u) << "the second user went to another chunk";
	// The index lets the shared node go with its last entry.
	set.remove(first);
	set.remove(second);
	ASSERT_EQ(frame(*t), "");
	expectValidHeap(*t);
}

/// A buffer's storage is stored once per chunk however its users reach it — one view, or separate views (separate
/// avals) of one ArrayBuffer — and separate storage with equal bytes is stored twice. (The heap skips the pool lookup
/// for storage that only its aval holds: this pins that the skip never misses a holder.)
TEST_F(HeapRenderTest, BufferStorageIsStoredOnceWhateverViewsReachIt)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	const std::vector<V3f> corners{{-0.5f, -0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {-0.5f, 0.5f, 0.5f}};
	auto object = [&](const scene::BufferView& positions)
	{
		RenderObject o = litTriangle(lit, corners[0], corners[1], corners[2], rgba(200, 40, 40));
		o.attributes["Positions"] = positions;
		return scene::makeRenderObject(std::move(o));
	};
	auto liveBytes = [&](const scene::BufferView& first, const scene::BufferView& second)
	{
		auto t =
		    task(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{object(first), object(second)})),
		         modes()[1].options);
		EXPECT_EQ(frame(*t), "");
		EXPECT_EQ(t->stats().heap.objects, 2u);
		return t->stats().heap.live_bytes;
	};
	const scene::BufferView one = scene::BufferView::of(corners, VK_FORMAT_R32G32B32_SFLOAT);
	scene::BufferView other_aval = one; // another aval of the same storage
	other_aval.buffer = adaptive::constant(one.buffer.force());
	ASSERT_NE(other_aval.buffer.node(), one.buffer.node());
	const scene::BufferView copy = scene::BufferView::of(corners, VK_FORMAT_R32G32B32_SFLOAT); // equal bytes
	const uint64_t same_view = liveBytes(one, one);
	const uint64_t same_storage = liveBytes(one, other_aval);
	const uint64_t equal_bytes = liveBytes(one, copy);
	EXPECT_EQ(same_storage, same_view);
	// Equal bytes in other storage: one more allocation — the 16-byte header and three positions of 12 or 16 bytes
	// (the shader's type), rounded up to 16.
	ASSERT_GT(equal_bytes, same_view);
	const uint64_t positions = equal_bytes - same_view;
	EXPECT_GE(positions, 16u + 3u * 12u);
	EXPECT_LE(positions, 16u + 3u * 16u);
	// One view of storage that nothing else holds, read by both objects: one copy too (the first object's entry holds
	// the view's constant node, not the storage, so only the node's count tells the second object to look it up).
	const scene::BufferView sole = scene::BufferView::of(corners, VK_FORMAT_R32G32B32_SFLOAT);
	ASSERT_EQ(sole.buffer.force().bytes.use_count(), 1);
	EXPECT_EQ(liveBytes(sole, sole), same_view);
}

TEST_F(HeapRenderTest, StorageThatOnlyLaterGainsASecondObjectIsCopiedOnceForAllLaterUsers)
{
	// An object whose buffers nothing else holds places them in its private block (no pool entry). A view of that
	// storage copied into an object of a later frame finds no pooled copy: it makes one, which every later user shares,
	// while the first object keeps its own — at most one extra copy. Each object leaves with exactly its own bytes.
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto object = [&](std::optional<scene::BufferView> positions, double dx, V4f color)
	{
		RenderObject o = litTriangle(lit, V3f(-0.25f, -0.25f, 0), V3f(0.25f, -0.25f, 0), V3f(0, 0.3f, 0), color);
		if (positions)
			o.attributes["Positions"] = *positions; // (else the triangle's own storage)
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(dx, 0.1 * dx, 0.3)));
		return scene::makeRenderObject(std::move(o));
	};
	const RenderObjectPtr a = object(std::nullopt, -0.6, rgba(230, 60, 40));
	ASSERT_EQ(a->attributes.at("Positions").buffer.force().bytes.use_count(), 1);
	adaptive::cset<RenderObjectPtr> set, reference_set;
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto heap = task(RenderTree::ofObjects(set), options);
	auto classic = task(RenderTree::ofObjects(reference_set), {});
	auto step = [&](const char* name)
	{
		if (::testing::Test::HasFatalFailure())
			return uint64_t(0);
		EXPECT_EQ(frame(*classic), "") << name;
		const Rgba8Image reference = pixels();
		EXPECT_EQ(frame(*heap), "") << name;
		EXPECT_EQ(differing(pixels(), reference), 0u) << name;
		expectValidHeap(*heap);
		return heap->stats().heap.live_bytes;
	};
	// The classic reference draws objects of their own storage (its caches must not count as holders).
	const RenderObjectPtr ref_a = object(std::nullopt, -0.6, rgba(230, 60, 40));
	set.add(a);
	reference_set.add(ref_a);
	const uint64_t only_a = step("a alone");
	const RenderObjectPtr b = object(a->attributes.at("Positions"), 0.0, rgba(40, 200, 90));
	set.add(b);
	reference_set.add(object(std::nullopt, 0.0, rgba(40, 200, 90)));
	const uint64_t with_b = step("b reads a's positions");
	const RenderObjectPtr c = object(a->attributes.at("Positions"), 0.6, rgba(60, 90, 230));
	set.add(c);
	reference_set.add(object(std::nullopt, 0.6, rgba(60, 90, 230)));
	const uint64_t with_c = step("c reads them too");
	// b copied the positions (three vec4 and the 16-byte header); c shares b's copy, so it adds that much less.
	const uint64_t positions = (with_b - only_a) - (with_c - with_b);
	EXPECT_EQ(positions, 16u + 3u * 16u);
	set.remove(a);
	reference_set.remove(ref_a);
	const uint64_t without_a = step("a left");
	EXPECT_EQ(with_c - without_a, with_b - only_a) << "a leaves with its own bytes, as many as b brought";
	set.remove(b);
	set.remove(c);
	ASSERT_EQ(frame(*heap), "");
	EXPECT_EQ(heap->stats().heap.live_bytes, 0u);
	expectValidHeap(*heap);
}

TEST_F(HeapRenderTest, ASharedVertexBufferThatChangesIsReadAgainByEveryUser)
{
	// Three objects share one position buffer (a cval); it changes twice — to other triangles of the same size, then
	// to a longer buffer — and every frame must match a classic render of the same objects (no user keeps the old
	// bytes), with the arena holding one copy of the buffer.
	const Effects fx;
	auto triangles = [](float size, uint32_t count)
	{
		std::vector<V3f> p;
		for (uint32_t t = 0; t < count; ++t)
		{
			const float x = -0.9f + 0.6f * float(t);
			p.insert(p.end(), {V3f(x, -size, 0), V3f(x + size, -size, 0), V3f(x, size, 0)});
		}
		return ArrayBuffer::of(p);
	};
	cval<ArrayBuffer> positions(triangles(0.2f, 1));
	std::vector<cval<scene::DrawCall>> draws;
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 3; ++i)
	{
		RenderObject o;
		o.effect = fx.constant;
		scene::BufferView view;
		view.buffer = positions;
		view.format = VK_FORMAT_R32G32B32_SFLOAT;
		o.attributes["Positions"] = view;
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(9, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(60 * (i + 1), 40, 200 - 50 * i));
		o.uniforms["ModelTrafo"] =
		    scene::uniform(math::Trafo3d::translation(math::V3d(0.0, -0.6 + 0.6 * i, 0.2 + 0.1 * i)));
		draws.emplace_back(scene::DrawCall{false, 3});
		o.draw_call = draws.back();
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	for (const Mode& m : modes())
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		adaptive::transact(
		    [&]
		    {
			    positions.setValue(triangles(0.2f, 1));
			    for (auto& d : draws)
				    d.setValue(scene::DrawCall{false, 3});
		    });
		auto t = task(tree, m.options);
		auto classic = task(tree, {});
		auto both = [&](const char* step)
		{
			ASSERT_EQ(frame(*classic), "") << step;
			const Rgba8Image want = pixels();
			ASSERT_EQ(frame(*t), "") << m.name << ", " << step;
			EXPECT_GT(covered(want), 0u) << step;
			EXPECT_EQ(differing(pixels(), want), 0u) << m.name << ", " << step;
		};
		both("first frame");
		adaptive::transact([&] { positions.setValue(triangles(0.35f, 1)); });
		both("same size, other triangles");
		const uint64_t live = t->stats().heap.live_bytes;
		adaptive::transact(
		    [&]
		    {
			    positions.setValue(triangles(0.25f, 3));
			    for (auto& d : draws)
				    d.setValue(scene::DrawCall{false, 9});
		    });
		both("three triangles");
		// One copy of the buffer, grown by 6 vertices × 16 bytes (stored as V4).
		EXPECT_EQ(t->stats().heap.live_bytes, live + 6 * 16) << m.name;
		auto findings = t->heapScenes().front()->validateHeap();
		ASSERT_TRUE(findings.ok()) << findings.error().message;
		EXPECT_TRUE(findings->empty()) << m.name << ": " << (findings->empty() ? "" : findings->front());
	}
}

TEST_F(HeapRenderTest, DerivedUniformsOfRemovedObjectsAreCollectedUnderChurn)
{
	// Each object's own ModelTrafo interns its own ModelViewProjTrafo (a value of two inputs, which the heap does not
	// pool by recipe); ten rounds replace all 100 objects. Without collection ~10× the first frame's count would pile
	// up.
	const fx::Effect lit =
	    effectOf({std::make_shared<const fx::Stage>(fx::Stage::vertex("test.mvp")
	                                                    .reads({{"Positions", fx::V4f}})
	                                                    .writes({{"Positions", fx::V4f}})
	                                                    .uniforms({"ModelViewProjTrafo"})
	                                                    .glsl("s.Positions = ModelViewProjTrafo * s.Positions;")),
	              fx::stock::constantColor()});
	auto make = [&](int i)
	{
		RenderObject o;
		o.effect = lit;
		const float x = -0.9f + 0.018f * float(i % 100);
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(x, -0.5f, 0), V3f(x + 0.1f, -0.5f, 0), V3f(x, 0.5f, 0)}, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(200, 40, 40));
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0.0, 0.0, 0.5)));
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		return scene::makeRenderObject(std::move(o));
	};
	adaptive::cset<RenderObjectPtr> set;
	std::vector<RenderObjectPtr> live;
	for (int i = 0; i < 100; ++i)
		live.push_back(make(i));
	set.unionWith(live);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::ofObjects(set), options);
	ASSERT_EQ(frame(*t), "");
	const uint32_t first = t->stats().heap.derived_uniforms;
	EXPECT_GE(first, 100u);
	uint32_t most = 0;
	for (int round = 1; round <= 10; ++round)
	{
		std::vector<RenderObjectPtr> next;
		for (int i = 0; i < 100; ++i)
			next.push_back(make(round * 100 + i));
		adaptive::transact(
		    [&]
		    {
			    for (const auto& o : live)
				    set.remove(o);
			    set.unionWith(next);
		    });
		live = std::move(next);
		ASSERT_EQ(frame(*t), "") << "round " << round;
		EXPECT_EQ(t->stats().heap.removed, 100u);
		most = std::max(most, t->stats().heap.derived_uniforms);
	}
	EXPECT_LE(most, 3 * first) << "derived uniforms of removed objects must not pile up";
	EXPECT_GT(covered(pixels()), 0u);
}

/// Objects without trafos of their own share the derived ones (one identity stands for every absent trafo), in both
/// paths: 100 lit objects intern one NormalMatrix, one ViewProjTrafo and one LightLocation, not one of each per object.
TEST_F(HeapRenderTest, ObjectsWithoutTrafosShareTheirDerivedUniforms)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 100; ++i)
	{
		const float x = -0.9f + 0.018f * float(i);
		objects.push_back(scene::makeRenderObject(
		    litTriangle(lit, V3f(x, -0.5f, 0.5f), V3f(x + 0.1f, -0.5f, 0.5f), V3f(x, 0.5f, 0.5f), rgba(200, 40, 40))));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	runtime::RenderOptions heap;
	heap.path = runtime::RenderPath::Heap;
	auto classic = task(tree, {});
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	EXPECT_GT(covered(reference), 0u);
	EXPECT_LE(classic->stats().passes.derived_uniforms, 3u);
	auto t = task(tree, heap);
	ASSERT_EQ(frame(*t), "");
	EXPECT_EQ(differing(pixels(), reference), 0u);
	EXPECT_LE(t->stats().heap.derived_uniforms, 3u);
}

/// On the heap a NormalMatrix derived from an object's own ModelTrafo is pooled by (ModelTrafo, recipe, chunk) — no
/// derived node per object — and follows its ModelTrafo's edits: 40 lit objects whose rotations change match classic
/// (which derives through nodes, with the same arithmetic) before and after, and the heap interns only the shared
/// values (ViewProjTrafo, LightLocation).
TEST_F(HeapRenderTest, NormalMatricesArePooledByTheirModelTrafoAndFollowItsEdits)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	std::vector<cval<math::Trafo3d>> trafos;
	trafos.reserve(40);
	for (int i = 0; i < 40; ++i)
	{
		RenderObject o;
		o.effect = lit;
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(-0.1f, -0.1f, 0), V3f(0.1f, -0.1f, 0), V3f(0, 0.12f, 0)}, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] =
		    scene::BufferView::of(std::vector<V3f>(3, glm::normalize(V3f(0.5f, 0.2f, -1))), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(230, 190, 60));
		trafos.emplace_back(
		    math::Trafo3d::translation(math::V3d(-0.8 + 0.27 * (i % 7), -0.8 + 0.3 * (i / 7), 0.1 + 0.02 * i)) *
		    math::Trafo3d::rotation(math::V3d(0, 1, 0), 0.1 * i));
		o.uniforms["ModelTrafo"] = scene::uniform(trafos.back());
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto classic = task(tree, {});
	for (const Mode& m : modes())
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		auto heap = task(tree, m.options);
		for (int round = 0; round < 3; ++round)
		{
			if (round > 0)
				adaptive::transact(
				    [&]
				    {
					    for (size_t i = size_t(round); i < trafos.size(); i += 3)
						    trafos[i].setValue(trafos[i].value() * math::Trafo3d::rotation(math::V3d(1, 0, 0), 0.4));
				    });
			ASSERT_EQ(frame(*classic), "");
			const Rgba8Image reference = pixels();
			ASSERT_GT(covered(reference), 100u);
			ASSERT_EQ(frame(*heap), "");
			EXPECT_EQ(differing(pixels(), reference), 0u) << m.name << " round " << round;
			EXPECT_LE(heap->stats().heap.derived_uniforms, 2u) << m.name;
			auto findings = heap->heapScenes().front()->validateHeap();
			ASSERT_TRUE(findings.ok()) << findings.error().message;
			EXPECT_TRUE(findings->empty()) << m.name << ": " << (findings->empty() ? "" : findings->front());
		}
		// The last frame's edits (objects 2, 5, …, 38) re-packed 2 entries each: the ModelTrafo and its NormalMatrix.
		EXPECT_EQ(heap->stats().heap.uniform_uploads, 2u * 13u) << m.name;
	}
}

/// An object's own ModelTrafo (a node nothing else reads when it is placed, so the heap skips the pool search for it)
/// must still be found by a second object reading the same node later: the trafo stays one ModelTrafo and one
/// NormalMatrix allocation (one upload each per edit) whichever object came first, and either object may leave first.
TEST_F(HeapRenderTest, AnObjectsOwnTrafoIsSharedWhenASecondObjectReadsIt)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	cval<math::Trafo3d> trafo(math::Trafo3d::translation(math::V3d(-0.3, 0, 0.2)));
	// Sharing is by aval identity. The classic reference reads its own aval of the same cval: were it to read the heap
	// objects' aval, that node would have a reader before the heap's first entry and the skip would never be taken.
	const auto shared = scene::uniform(trafo);
	const auto reference_trafo = scene::uniform(trafo);
	auto object = [&](float dx, const adaptive::aval<scene::UniformValue>& model)
	{
		RenderObject o;
		o.effect = lit;
		o.attributes["Positions"] = scene::BufferView::of(
		    std::vector<V3f>{V3f(dx - 0.2f, -0.2f, 0), V3f(dx + 0.2f, -0.2f, 0), V3f(dx, 0.25f, 0)},
		    VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] =
		    scene::BufferView::of(std::vector<V3f>(3, glm::normalize(V3f(0.5f, 0.2f, -1))), VK_FORMAT_R32G32B32_SFLOAT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(230, 190, 60));
		o.uniforms["ModelTrafo"] = model;
		o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
		return scene::makeRenderObject(std::move(o));
	};
	const RenderObjectPtr a = object(0.0f, shared);
	const RenderObjectPtr b = object(0.6f, shared);
	const RenderObjectPtr ref_a = object(0.0f, reference_trafo);
	const RenderObjectPtr ref_b = object(0.6f, reference_trafo);
	adaptive::cset<RenderObjectPtr> set, reference_set;
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto heap = task(RenderTree::ofObjects(set), options);
	auto classic = task(RenderTree::ofObjects(reference_set), {});
	auto add = [&](const RenderObjectPtr& o, const RenderObjectPtr& ref)
	{
		set.add(o);
		reference_set.add(ref);
	};
	auto remove = [&](const RenderObjectPtr& o, const RenderObjectPtr& ref)
	{
		set.remove(o);
		reference_set.remove(ref);
	};
	auto matchesClassic = [&](const char* step)
	{
		ASSERT_EQ(frame(*classic), "") << step;
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "") << step;
		EXPECT_EQ(differing(pixels(), reference), 0u) << step;
		expectValidHeap(*heap);
	};
	auto turn = [&]
	{
		trafo.setValue(trafo.value() * math::Trafo3d::rotation(math::V3d(1, 0, 0), 0.3));
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.uniform_uploads, 2u) << "ModelTrafo and NormalMatrix, once each";
	};
	// The first reader alone (its pool search skipped), then a second reader in a later frame.
	add(a, ref_a);
	matchesClassic("a alone");
	add(b, ref_b);
	matchesClassic("a and b");
	turn();
	matchesClassic("a and b, turned");
	// The first leaves first, then the second; then both come back in one frame.
	remove(a, ref_a);
	matchesClassic("b alone");
	turn();
	remove(b, ref_b);
	ASSERT_EQ(frame(*heap), "");
	EXPECT_EQ(heap->stats().heap.live_bytes, 0u);
	expectValidHeap(*heap);
	add(a, ref_a);
	add(b, ref_b);
	matchesClassic("both again");
	turn();
	matchesClassic("both again, turned");
}

/// UNORM8 vertex colours anywhere between 0 and 255: the heap converts them at ingest on the CPU, the classic path in
/// the driver's vertex fetch, and the two must give the same floats — a grid of quads with random per-vertex colours,
/// interpolated across each quad, matches classic pixel for pixel. (With the exact quotient c / 255 instead of Mesa's
/// c × (1/255), 252 of the 2,304 pixels differed by 1–2 LSB.)
TEST_F(HeapRenderTest, IntermediateUnorm8VertexColoursMatchClassic)
{
	const Effects fx;
	std::mt19937 rng(5);
	std::vector<RenderObjectPtr> quads;
	constexpr int kCells = 12;
	for (int y = 0; y < kCells; ++y)
		for (int x = 0; x < kCells; ++x)
		{
			const float x0 = -1.0f + 2.0f * float(x) / kCells, y0 = -1.0f + 2.0f * float(y) / kCells;
			const float x1 = x0 + 2.0f / kCells, y1 = y0 + 2.0f / kCells;
			RenderObject o;
			o.effect = fx.colors;
			o.attributes["Positions"] = scene::BufferView::of(
			    std::vector<V3f>{V3f(x0, y0, 0.5f), V3f(x1, y0, 0.5f), V3f(x1, y1, 0.5f), V3f(x0, y1, 0.5f)},
			    VK_FORMAT_R32G32B32_SFLOAT);
			std::vector<uint8_t> colors;
			for (int v = 0; v < 4; ++v)
				for (int k = 0; k < 4; ++k)
					colors.push_back(k == 3 ? 255 : uint8_t(40 + rng() % 200));
			o.attributes["Colors"] = scene::BufferView::of(colors, VK_FORMAT_R8G8B8A8_UNORM);
			o.indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2, 0, 2, 3}, VK_FORMAT_R32_UINT);
			o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
			quads.push_back(scene::makeRenderObject(std::move(o)));
		}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(quads));
	const Rgba8Image reference = render(tree, {});
	ASSERT_EQ(covered(reference), kSize * kSize) << "the quads tile the image";
	for (const Mode& m : modes())
		EXPECT_EQ(differing(render(tree, m.options), reference), 0u) << m.name;
}

/// A removal and an addition in one frame that read the same ModelTrafo: the removed object's own entries die with
/// it (their pool erasures are batched after the frame's removals), and the added object must not pick one of them
/// up — it gets entries of its own, the image matches classic, the validators stay clean and an edit re-packs once.
TEST_F(HeapRenderTest, AnObjectAddedInTheFrameThatRemovesTheOwnerOfItsTrafoGetsLiveEntries)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	cval<math::Trafo3d> trafo(math::Trafo3d::translation(math::V3d(-0.3, 0, 0.2)));
	const auto model = scene::uniform(trafo);
	const auto reference_model = scene::uniform(trafo);
	auto object = [&](float dx, const adaptive::aval<scene::UniformValue>& m)
	{
		RenderObject o =
		    litTriangle(lit, V3f(dx - 0.2f, -0.2f, 0), V3f(dx + 0.2f, -0.2f, 0), V3f(dx, 0.25f, 0), rgba(230, 190, 60));
		o.uniforms["ModelTrafo"] = m;
		return scene::makeRenderObject(std::move(o));
	};
	for (const Mode& mode : modes())
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		const RenderObjectPtr a = object(0.0f, model), b = object(0.5f, model);
		const RenderObjectPtr ref_b = object(0.5f, reference_model);
		adaptive::cset<RenderObjectPtr> set, reference_set;
		auto heap = task(RenderTree::ofObjects(set), mode.options);
		auto classic = task(RenderTree::ofObjects(reference_set), {});
		set.add(a);
		ASSERT_EQ(frame(*heap), "");
		adaptive::transact(
		    [&]
		    {
			    set.remove(a);
			    set.add(b);
		    });
		reference_set.add(ref_b);
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.removed, 1u);
		EXPECT_EQ(heap->stats().heap.added, 1u);
		expectValidHeap(*heap);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), reference), 0u);
		trafo.setValue(trafo.value() * math::Trafo3d::rotation(math::V3d(1, 0, 0), 0.3));
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.uniform_uploads, 2u) << "ModelTrafo and NormalMatrix, once each";
		expectValidHeap(*heap);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image turned = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), turned), 0u);
	}
}

/// A placement that fails after its inputs were staged (here: a draw reading more vertices than the object has) frees
/// its blocks again, and the next object of the frame is handed the same bytes: the frame then wrote them twice, and
/// the later write must win. (The failing frame reports the bad object and uploads nothing; its writes go up with the
/// next frame's.)
TEST_F(HeapRenderTest, BytesWrittenTwiceInOneFrameKeepTheLaterWrite)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto object = [&](float dx, V4f color, uint32_t count, const adaptive::aval<scene::UniformValue>& model)
	{
		RenderObject o = litTriangle(lit, V3f(dx - 0.2f, -0.2f, 0), V3f(dx + 0.2f, -0.2f, 0), V3f(dx, 0.25f, 0), color);
		o.uniforms["ModelTrafo"] = model;
		o.draw_call = adaptive::constant(scene::DrawCall{false, count});
		return scene::makeRenderObject(std::move(o));
	};
	auto model = [](double z) { return scene::uniform(math::Trafo3d::translation(math::V3d(0, 0, z))); };
	for (const Mode& mode : modes())
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		const RenderObjectPtr a = object(-0.5f, rgba(230, 190, 60), 3, model(0.3));
		const RenderObjectPtr bad = object(0.0f, rgba(20, 200, 90), 6, model(0.2)); // (3 vertices, the draw reads 6)
		const RenderObjectPtr b = object(0.5f, rgba(40, 90, 220), 3, model(0.4));
		adaptive::cset<RenderObjectPtr> set;
		auto heap = task(RenderTree::ofObjects(set), mode.options);
		set.add(a);
		ASSERT_EQ(frame(*heap), "");
		adaptive::transact(
		    [&]
		    {
			    set.add(bad);
			    set.add(b);
		    });
		EXPECT_NE(frame(*heap).find("holds 3 elements but the draw reads 6"), std::string::npos);
		ASSERT_EQ(frame(*heap), "");
		EXPECT_GT(heap->stats().heap.overlapping_writes, 0u) << "the bad object's bytes were handed to the next one";
		expectValidHeap(*heap);
		const Rgba8Image img = pixels();
		EXPECT_EQ(differing(img, render(RenderTree::ofObjects(adaptive::asetOf(std::vector{a, b})), {})), 0u);
	}
}

TEST_F(HeapRenderTest, ObjectsPlacedSideBySideUploadAsOneCopyRegion)
{
	// Every block is staged whole (its padding to 16 bytes too), so blocks the bump cursor places side by side — each
	// object's private parts (36-byte positions and normals, its own trafos), and the objects one after another —
	// continue one write: a frame placing 300 objects into an empty heap records one copy region, not one per part.
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 300; ++i)
	{
		const float x = -0.9f + 1.8f * float(i % 20) / 19.0f, y = -0.9f + 1.8f * float(i / 20) / 14.0f;
		RenderObject o =
		    litTriangle(lit, V3f(x - 0.05f, y - 0.05f, 0), V3f(x + 0.05f, y - 0.05f, 0), V3f(x, y + 0.06f, 0),
		                rgba(40, 90, 220)); // (one pooled colour: the blocks below are private)
		o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0, 0, 0.001 * i)));
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	for (const Mode& mode : modes())
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		adaptive::cset<RenderObjectPtr> set;
		auto heap = task(RenderTree::ofObjects(set), mode.options);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& o : objects)
				    set.add(o);
		    });
		ASSERT_EQ(frame(*heap), "");
		const HeapStats& st = heap->stats().heap;
		EXPECT_EQ(st.added, 300u);
		EXPECT_EQ(st.chunks, 1u);
		EXPECT_EQ(st.copy_regions, 1u);
		EXPECT_EQ(st.scatters, mode.options.heap.scatter_above == 0 ? 1u : 0u); // (one region: copied unless forced)
		EXPECT_GE(st.upload_bytes, st.arena_bytes); // (every block staged whole, plus the draw headers and records)
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), render(RenderTree::ofObjects(adaptive::asetOf(objects)), {})), 0u);
		// Every other object leaves and comes back: each returns to a hole of its size, one region per hole.
		for (bool adding : {false, true})
		{
			adaptive::transact(
			    [&]
			    {
				    for (size_t i = 0; i < objects.size(); i += 2)
					    adding ? set.add(objects[i]) : set.remove(objects[i]);
			    });
			ASSERT_EQ(frame(*heap), "");
		}
		EXPECT_EQ(heap->stats().heap.copy_regions, 150u);
		EXPECT_EQ(heap->stats().heap.scatters, mode.options.heap.scatter_above < 150 ? 1u : 0u);
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), render(RenderTree::ofObjects(adaptive::asetOf(objects)), {})), 0u);
	}
}

/// Removals move a slot's last records into the holes they leave, one record (and draw header) region each in the
/// context's staging ring: spread over a large slot they are many short regions, which the ring sends through its
/// scatter copy when HeapOptions::ring_scatter_above says so — and the image is the same either way.
TEST_F(HeapRenderTest, SpreadRemovalsStageTheirMovedRecordsThroughTheRingsScatterWhenAsked)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	std::vector<RenderObjectPtr> objects;
	for (int i = 0; i < 2400; ++i)
	{
		// A 60 × 40 grid of small triangles that do not overlap (the image does not depend on draw order).
		const float x = -0.95f + 1.9f * float(i % 60) / 59.0f, y = -0.95f + 1.9f * float(i / 60) / 39.0f;
		objects.push_back(
		    scene::makeRenderObject(litTriangle(lit, V3f(x - 0.01f, y - 0.01f, 0), V3f(x + 0.01f, y - 0.01f, 0),
		                                        V3f(x, y + 0.015f, 0), rgba(i % 200, 120, 200))));
	}
	std::vector<RenderObjectPtr> kept;
	for (size_t i = 0; i < objects.size(); ++i)
		if (i % 8 != 3)
			kept.push_back(objects[i]);
	const uint32_t forced[] = {0u, UINT32_MAX};
	for (const uint32_t ring_above : forced)
	{
		SCOPED_TRACE("ring_scatter_above " + std::to_string(ring_above));
		runtime::RenderOptions o;
		o.path = runtime::RenderPath::Heap;
		o.heap.draw = DrawStrategy::Indirect;
		o.heap.ring_scatter_above = ring_above;
		adaptive::cset<RenderObjectPtr> set;
		auto heap = task(RenderTree::ofObjects(set), o);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& obj : objects)
				    set.add(obj);
		    });
		ASSERT_EQ(frame(*heap), "");
		// Every eighth object leaves: 300 holes spread over the slot, each refilled from its end.
		adaptive::transact(
		    [&]
		    {
			    for (size_t i = 3; i < objects.size(); i += 8)
				    set.remove(objects[i]);
		    });
		ASSERT_EQ(frame(*heap), "");
		const gpu::StagingFlushStats& ring = heap->stats().staging;
		EXPECT_GT(ring.regions + ring.scattered, 200u);
		if (ring_above == 0)
		{
			EXPECT_GE(ring.scatters, 1u);
			EXPECT_GT(ring.scattered, 200u);
		}
		else
		{
			EXPECT_EQ(ring.scatters, 0u);
		}
		expectValidHeap(*heap);
		EXPECT_EQ(differing(pixels(), render(RenderTree::ofObjects(adaptive::asetOf(kept)), {})), 0u);
	}
}

/// A frame's additions are placed phase by phase over batches of objects (read, acquire, attach): the arena, the
/// chunks, the buckets and the pixels must come out exactly as when the same objects arrive one per frame — across
/// several chunks, over more than one batch, and with objects whose draw fails in the middle of a batch (their blocks
/// are given back before the batch's later objects acquire theirs, as one at a time).
TEST_F(HeapRenderTest, AdditionsPlacedInOneFrameMatchAdditionsOneFrameAtATime)
{
	const Effects fx;
	std::mt19937 rng(quokka::test::testSeed(5));
	RandomScene s;
	for (int i = 0; i < 3; ++i)
		s.shared_colors.emplace_back(rgba(int(rng() % 256), int(rng() % 256), int(rng() % 256)));
	std::vector<size_t> bad;
	for (uint32_t i = 0; i < 90; ++i)
	{
		s.objects.push_back(randomObject(rng, fx, s, i));
		if (i == 20 || i == 45 || i == 77)
		{
			// The draw reads more than the object holds: it fails when placed.
			scene::DrawCall d = s.draws.back().value();
			d.count = 3000;
			s.draws.back().setValue(d);
			bad.push_back(i);
		}
	}
	for (const Mode& m : modes(4096))
	{
		if (m.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(m.name);
		adaptive::cset<RenderObjectPtr> together, apart;
		auto a = task(RenderTree::ofObjects(together), m.options);
		auto b = task(RenderTree::ofObjects(apart), m.options);
		adaptive::transact(
		    [&]
		    {
			    for (const RenderObjectPtr& o : s.objects)
				    together.add(o);
		    });
		EXPECT_NE(frame(*a).find("but the draw reads 3000"), std::string::npos);
		ASSERT_EQ(frame(*a), "");
		const Rgba8Image once = pixels();
		size_t failed = 0;
		for (const RenderObjectPtr& o : s.objects) // (in creation order, which is id order)
		{
			apart.add(o);
			failed += !frame(*b).empty();
		}
		EXPECT_EQ(failed, bad.size());
		ASSERT_EQ(frame(*b), "");
		EXPECT_EQ(differing(once, pixels()), 0u);
		EXPECT_GT(covered(once), 0u);
		const HeapStats& x = a->stats().heap;
		const HeapStats& y = b->stats().heap;
		EXPECT_GT(x.chunks, 2u);
		EXPECT_EQ(x.objects, y.objects);
		EXPECT_EQ(x.chunks, y.chunks);
		EXPECT_EQ(x.arena_bytes, y.arena_bytes);
		EXPECT_EQ(x.live_bytes, y.live_bytes);
		EXPECT_EQ(x.buckets, y.buckets);
		EXPECT_EQ(x.slots, y.slots);
		expectValidHeap(*a);
		expectValidHeap(*b);
	}
}

/// reader left and can change), and no allocator reports a leak.
/// Closing a heap scene drops its objects, entries, blocks and buckets whole instead of removing each object: the
/// scene's nodes must still lose every edge to it (no adaptive node of the heap survives, the shared trafo has no
/// reader left and can change), and no allocator reports a leak.
TEST_F(HeapRenderTest, DestroyingAHeapTaskLeavesNoNodeNoEdgeAndNoLeakReport)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	cval<math::Trafo3d> shared_trafo(math::Trafo3d::translation(math::V3d(0, 0, 0.5)));
	const auto shared = scene::uniform(shared_trafo);
	std::vector<RenderObjectPtr> objects;
	std::vector<adaptive::aval<scene::UniformValue>> own;
	for (int i = 0; i < 40; ++i)
	{
		const float x = -0.9f + 0.045f * float(i);
		RenderObject o =
		    litTriangle(lit, V3f(x, -0.1f, 0), V3f(x + 0.04f, -0.1f, 0), V3f(x, 0.1f, 0), rgba(230, 190, 60));
		if (i % 2 == 0)
			o.uniforms["ModelTrafo"] = shared;
		else
		{
			own.push_back(scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.4)))));
			o.uniforms["ModelTrafo"] = own.back();
		}
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	for (const Mode& mode : modes(64 << 10)) // (small chunks: several chunks, buckets and pools)
	{
		if (mode.options.path != runtime::RenderPath::Heap)
			continue;
		SCOPED_TRACE(mode.name);
		const int64_t before = adaptive::liveObjectCount();
		auto heap = task(tree, mode.options);
		ASSERT_EQ(frame(*heap), "");
		ASSERT_EQ(heap->stats().heap.objects, 40u);
		EXPECT_GT(shared.node()->outputCount(), 0u);
		testing::internal::CaptureStderr();
		heap.reset();
		const std::string said = testing::internal::GetCapturedStderr();
		EXPECT_EQ(said, "");
		EXPECT_EQ(shared.node()->outputCount(), 0u);
		for (const auto& u : own)
			EXPECT_EQ(u.node()->outputCount(), 0u);
		EXPECT_LE(adaptive::liveObjectCount(), before) << "adaptive nodes of the heap outlived it";
		shared_trafo.setValue(math::Trafo3d::translation(math::V3d(0, 0, 0.6))); // (no reader left to tell)
	}
}

/// What placing an object costs in adaptive nodes: the heap object itself and one pool entry per uniform it owns
/// (its ModelTrafo and the NormalMatrix pooled by that ModelTrafo); its vertex buffers' entries are plain records, not
/// nodes, and a constant colour equal across objects is one shared entry. Counted as the difference between a scene of
/// 40 and one of 20 objects, each placed by a fresh heap task, so fixed per-task nodes cancel.
/// Objects added in one frame are placed — and so drawn — in id order, not in the order of their addresses (which the
/// set's delta is sorted by): of two coplanar triangles covering the same pixels, the one made later is drawn on top
/// (LESS_OR_EQUAL depth) on every path, even when it sits at a lower address than the earlier one.
TEST_F(HeapRenderTest, ObjectsAddedInOneFrameAreDrawnInIdOrderWhateverTheirAddresses)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto make = [&](uint32_t k)
	{
		// A colour of its own per object (k < 800 never repeats one).
		const V4f color = rgba(uint8_t(40 + (k * 67) % 200), uint8_t(200 - (k * 29) % 160), 120);
		RenderObject o =
		    litTriangle(lit, V3f(-0.8f, -0.8f, 0.0f), V3f(0.8f, -0.8f, 0.0f), V3f(-0.8f, 0.8f, 0.0f), color);
		o.uniforms["ModelTrafo"] = scene::uniform(adaptive::constant(math::Trafo3d::translation(math::V3d(0, 0, 0.5))));
		return scene::makeRenderObject(std::move(o));
	};
	// A later object at a lower address than an earlier one, whatever the allocator does: the objects kept alive
	// either already have an address below an earlier one's, or their addresses only grew — and then the objects made
	// after half of a batch is freed reuse that lower memory. (Looking for it in one made-free-made sequence failed
	// once in a while: the result depended on what earlier tests had left in malloc's caches.)
	std::vector<RenderObjectPtr> made;
	RenderObjectPtr first, later;
	uint32_t serial = 0;
	for (uint32_t round = 0; round < 30 && !later; ++round)
	{
		std::vector<RenderObjectPtr> batch;
		for (int i = 0; i < 16; ++i)
			batch.push_back(make(serial++));
		batch.erase(batch.begin(), batch.begin() + 8);
		for (int i = 0; i < 8; ++i)
			batch.push_back(make(serial++));
		made.insert(made.end(), batch.begin(), batch.end());
		for (size_t i = 0; i < made.size() && !later; ++i)
			for (size_t j = 0; j < made.size() && !later; ++j)
				if (made[i]->id < made[j]->id && std::less<>()(made[j].get(), made[i].get()))
				{
					first = made[i];
					later = made[j];
				}
	}
#if defined(__SANITIZE_ADDRESS__)
	if (!later)
		GTEST_SKIP() << "ASan's allocator quarantines freed memory: addresses only grew among " << made.size();
#endif
	ASSERT_TRUE(later) << "no later object at a lower address among " << made.size();
	ASSERT_LT(first->id, later->id);
	for (const Mode& m : modes())
	{
		const Rgba8Image both =
		    render(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{first, later})), m.options);
		const Rgba8Image on_top =
		    render(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{later})), m.options);
		const Rgba8Image under =
		    render(RenderTree::ofObjects(adaptive::asetOf(std::vector<RenderObjectPtr>{first})), m.options);
		ASSERT_GT(covered(on_top), kSize * kSize / 4) << m.name;
		ASSERT_GT(differing(on_top, under), kSize * kSize / 4) << m.name << ": the two colours must differ";
		EXPECT_EQ(differing(both, on_top), 0u) << m.name << ": the later object is not drawn last";
	}
}

TEST_F(HeapRenderTest, PlacingAnObjectCreatesOneAdaptiveNodeItselfWhateverItsOwnUniforms)
{
	const fx::Effect lit = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::simpleLighting()});
	auto nodesPlacing = [&](int count) -> int64_t
	{
		std::vector<RenderObjectPtr> objects;
		for (int i = 0; i < count; ++i)
		{
			const float x = -0.9f + 0.045f * float(i);
			RenderObject o =
			    litTriangle(lit, V3f(x, -0.1f, 0), V3f(x + 0.04f, -0.1f, 0), V3f(x, 0.1f, 0), rgba(230, 190, 60));
			o.indices = scene::BufferView::of(std::vector<uint32_t>{0, 1, 2}, VK_FORMAT_R32_UINT);
			o.uniforms["ModelTrafo"] =
			    scene::uniform(cval<math::Trafo3d>(math::Trafo3d::translation(math::V3d(0, 0, 0.5))));
			o.draw_call = adaptive::constant(scene::DrawCall{true, 3});
			objects.push_back(scene::makeRenderObject(std::move(o)));
		}
		const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
		const int64_t before = adaptive::liveObjectCount();
		auto heap = task(tree, modes()[1].options);
		EXPECT_EQ(frame(*heap), "");
		EXPECT_EQ(heap->stats().heap.objects, uint32_t(count));
		return adaptive::liveObjectCount() - before;
	};
	const int64_t twenty = nodesPlacing(20), forty = nodesPlacing(40);
	// The HeapObject alone: its own ModelTrafo and the NormalMatrix derived from it are parts of its private block,
	// re-packed by the object itself (no pool entry, which would be an adaptive node each).
	EXPECT_EQ(forty - twenty, 20 * 1) << "nodes per placed object: " << double(forty - twenty) / 20.0;
}

/// Strip topologies are not heap-drawable: on the heap path the runtime's heap scene reads the whole set and skips
/// them (HeapOptions::skip_ineligible) while the classic pass draws them — through adds and removes of both kinds —
/// and a HeapScene without that option fails with one line instead of drawing them wrongly.
TEST_F(HeapRenderTest, ObjectsTheHeapCannotDrawGoToTheClassicPassThroughAddsAndRemoves)
{
	const Effects fx;
	RandomScene s = randomScene(23, 24, fx);
	std::vector<RenderObjectPtr> strips;
	for (size_t i = 0; i < 4; ++i)
	{
		RenderObject o = *s.objects[i];
		o.state.topology = adaptive::constant(VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP);
		strips.push_back(scene::makeRenderObject(std::move(o)));
	}
	std::vector<RenderObjectPtr> all(s.objects.begin() + 4, s.objects.end());
	all.insert(all.end(), strips.begin(), strips.end());
	adaptive::cset<RenderObjectPtr> set(all);
	const auto tree = RenderTree::ofObjects(set);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto classic = task(tree, {});
	auto heap = task(tree, options);
	for (int step = 0; step < 4; ++step)
	{
		if (step == 1)
		{
			adaptive::Transaction tx;
			set.remove(strips[0]);
			set.remove(strips[1]);
			set.remove(s.objects[5]);
		}
		if (step == 2)
		{
			adaptive::Transaction tx;
			set.add(strips[0]);
			set.add(s.objects[0]);
		}
		if (step == 3)
		{
			adaptive::Transaction tx;
			for (const RenderObjectPtr& x : strips)
				set.remove(x);
		}
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), reference), 0u) << "step " << step;
		EXPECT_GT(covered(reference), 0u);
	}
	// Every strip shows: the image with them differs from the image without them.
	{
		adaptive::Transaction tx;
		set.add(strips[2]);
	}
	ASSERT_EQ(frame(*heap), "");
	const Rgba8Image with_strip = pixels();
	{
		adaptive::Transaction tx;
		set.remove(strips[2]);
	}
	ASSERT_EQ(frame(*heap), "");
	EXPECT_GT(differing(with_strip, pixels()), 0u);

	// The heap scene itself: the strips are skipped with the option and an error without it.
	adaptive::cset<RenderObjectPtr> mixed(std::vector<RenderObjectPtr>{s.objects[6], strips[3]});
	HeapOptions skip;
	skip.skip_ineligible = true;
	HeapScene skipping(runtime_->context(), signature_, mixed, skip);
	ASSERT_TRUE(skipping.update().ok());
	EXPECT_EQ(skipping.objectCount(), 1u);
	// What it skipped is listed for another pass, and leaves the list when it leaves the set.
	EXPECT_EQ(skipping.skipped().force().size(), 1u);
	EXPECT_TRUE(skipping.skipped().force().contains(strips[3]));
	{
		adaptive::Transaction tx;
		mixed.remove(strips[3]);
		mixed.remove(s.objects[6]);
		mixed.add(strips[2]);
	}
	ASSERT_TRUE(skipping.update().ok());
	EXPECT_EQ(skipping.objectCount(), 0u);
	EXPECT_EQ(skipping.skipped().force().size(), 1u);
	EXPECT_TRUE(skipping.skipped().force().contains(strips[2]));
	{
		adaptive::Transaction tx;
		mixed.remove(strips[2]);
		mixed.add(strips[3]);
	}
	HeapScene strict(runtime_->context(), signature_, mixed, HeapOptions{});
	const auto r = strict.update();
	ASSERT_FALSE(r.ok());
	EXPECT_NE(r.error().message.find("render object #" + std::to_string(strips[3]->id)), std::string::npos)
	    << r.error().message;
	EXPECT_NE(r.error().message.find("topology"), std::string::npos) << r.error().message;
	EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
}

TEST_F(HeapRenderTest, BadObjectsFailWithOneLineNamingThem)
{
	const Effects fx;
	RenderObject o;
	o.effect = fx.colors; // needs Colors, which the object lacks
	o.attributes["Positions"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0)), VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Normals"] = o.attributes["Positions"];
	o.draw_call = adaptive::constant(scene::DrawCall{false, 3});
	const auto bad = scene::makeRenderObject(std::move(o));
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::leafOf(bad), options);
	const std::string error = frame(*t);
	EXPECT_NE(error.find("render object #" + std::to_string(bad->id)), std::string::npos) << error;
	EXPECT_NE(error.find("Colors"), std::string::npos) << error;
	EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

/// Bad per-instance uniforms fail with one line naming the object and the uniform, in both paths: fewer values than
/// the draw's instances, and a bool uniform (no vertex attribute can carry it).
TEST_F(HeapRenderTest, BadPerInstanceUniformsFailWithOneLineNamingThem)
{
	const Effects fx;
	ASSERT_TRUE(fx::UniformScope::declare("TestInstanceFlag", fx::Bool).ok());
	const fx::Effect flagged =
	    effectOf({fx::stock::trafo(),
	              std::make_shared<const fx::Stage>(fx::Stage::fragment("test.flag")
	                                                    .writes({{"Colors", fx::V4f}})
	                                                    .uniforms({"TestInstanceFlag"})
	                                                    .glsl("s.Colors = vec4(TestInstanceFlag ? 1.0 : 0.0);"))});
	auto object = [&](const fx::Effect& effect, const std::string& per_instance, uint32_t values)
	{
		RenderObject o;
		o.effect = effect;
		o.attributes["Positions"] = scene::BufferView::of(std::vector<V3f>(3, V3f(0)), VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = o.attributes["Positions"];
		o.attributes[per_instance] =
		    scene::BufferView::of(std::vector<V4f>(values, V4f(1.0f)), VK_FORMAT_R32G32B32A32_SFLOAT, true);
		scene::DrawCall d{false, 3};
		d.instance_count = 3;
		o.draw_call = adaptive::constant(d);
		return scene::makeRenderObject(std::move(o));
	};
	const auto short_colors = object(fx.constant, "ConstantColor", 2);
	const auto bool_flag = object(flagged, "TestInstanceFlag", 3);
	for (const Mode& m : modes())
	{
		for (const auto& [bad, words] :
		     {std::pair{short_colors, std::vector<std::string>{"ConstantColor", "3 instances"}},
		      std::pair{bool_flag, std::vector<std::string>{"TestInstanceFlag", "bool"}}})
		{
			auto t = task(RenderTree::leafOf(bad), m.options);
			const std::string error = frame(*t);
			EXPECT_NE(error.find("render object #" + std::to_string(bad->id)), std::string::npos) << m.name << error;
			for (const std::string& w : words)
				EXPECT_NE(error.find(w), std::string::npos) << m.name << ": " << error;
			EXPECT_EQ(error.find('\n'), std::string::npos) << error;
		}
	}
}

TEST_F(HeapRenderTest, ValidatorsStayCleanThroughTenThousandRandomOperations)
{
	const Effects fx;
	const uint32_t seed = quokka::test::testSeed(21);
	std::printf("random scene and operations seed %u (QUOKKA_TEST_SEED to replay)\n", seed);
	RandomScene s = randomScene(seed, 300, fx);
	std::mt19937 rng(seed == 21 ? 9 : seed + 1);
	for (DrawStrategy d : {DrawStrategy::Megacall, DrawStrategy::Indirect})
	{
		adaptive::cset<RenderObjectPtr> set;
		runtime::RenderOptions options;
		options.path = runtime::RenderPath::Heap;
		options.heap.draw = d;
		options.heap.max_chunk_bytes = 8192;
		auto t = task(RenderTree::ofObjects(set), options);
		for (int step = 0; step < 50; ++step)
		{
			{
				adaptive::Transaction tx;
				for (int op = 0; op < 100; ++op)
				{
					const size_t i = rng() % s.objects.size();
					switch (rng() % 5)
					{
					case 0:
						set.add(s.objects[i]);
						break;
					case 1:
						set.remove(s.objects[i]);
						break;
					case 2:
						s.actives[i].setValue(!s.actives[i].value());
						break;
					case 3:
						// A private trafo: its derived uniforms sit side by side and re-pack as one staged run.
						s.trafos[i].setValue(s.trafos[i].value() *
						                     math::Trafo3d::translation({0.001 * double(rng() % 9), 0.0, 0.0}));
						break;
					default:
						s.shared_colors[rng() % 3].setValue(rgba(int(rng() % 256), 0, 0));
					}
				}
			}
			ASSERT_EQ(frame(*t), "") << step;
			if (step % 10 == 9)
			{
				auto findings = t->heapScenes().front()->validateHeap();
				ASSERT_TRUE(findings.ok()) << findings.error().message;
				EXPECT_TRUE(findings->empty()) << strategyName(d) << " step " << step << ": " << findings->front();
			}
		}
		EXPECT_GT(t->stats().heap.chunks, 1u);
	}
}

TEST_F(HeapRenderTest, CompactionLeavesTheImageUnchanged)
{
	const Effects fx;
	RandomScene s = randomScene(13, 200, fx);
	adaptive::cset<RenderObjectPtr> set(s.objects);
	const auto tree = RenderTree::ofObjects(set);
	for (DrawStrategy d : {DrawStrategy::Indirect, DrawStrategy::Megacall})
	{
		runtime::RenderOptions options;
		options.path = runtime::RenderPath::Heap;
		options.heap.draw = d;
		options.heap.compaction_floor = 1024;
		auto heap = task(tree, options);
		auto classic = task(tree, {});
		ASSERT_EQ(frame(*heap), "");
		// Remove every other object from the front half: holes below live blocks, waste over the floor.
		{
			adaptive::Transaction tx;
			for (size_t i = 0; i < 160; ++i)
				if (i % 5 != 0)
					set.remove(s.objects[i]);
		}
		ASSERT_EQ(frame(*heap), "");
		const uint64_t before = heap->stats().heap.arena_bytes;
		ASSERT_EQ(frame(*heap), ""); // compacts at the start of this update
		EXPECT_EQ(heap->stats().heap.compactions, 1u) << strategyName(d);
		EXPECT_LT(heap->stats().heap.arena_bytes, before) << strategyName(d);
		EXPECT_EQ(heap->stats().heap.arena_bytes, heap->stats().heap.live_bytes);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), reference), 0u) << strategyName(d);
		auto findings = heap->heapScenes().front()->validateHeap();
		ASSERT_TRUE(findings.ok());
		EXPECT_TRUE(findings->empty()) << findings->front();
		// Put them back (reusing the compacted chunk) and compare again.
		set.unionWith(s.objects);
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image full = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(differing(pixels(), full), 0u) << strategyName(d);
	}
}

/// A quad [x0,x1]×[y0,y1] at depth z as 4 vertices + 6 indices (both windings drawn unless culled).
struct Quad
{
	std::vector<V3f> positions;
	std::vector<uint32_t> indices = {0, 1, 2, 0, 2, 3};
};
Quad quad(float x0, float y0, float x1, float y1, float z)
{
	return {{{x0, y0, z}, {x1, y0, z}, {x1, y1, z}, {x0, y1, z}}};
}

TEST_F(HeapRenderTest, TexturesBlendingInterleavingBaseVertexInstanceTrafosAndCullFlipsMatchClassic)
{
	const Effects fx;
	std::vector<RenderObjectPtr> objects;
	// 1. A textured quad (nearest 2×2 texture), indexed.
	{
		auto texels = std::make_shared<std::vector<uint8_t>>(
		    std::vector<uint8_t>{255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255});
		RenderObject o;
		o.effect = effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::diffuseTexture()});
		const Quad q = quad(-1, -1, 0, 0, 0.5f);
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["DiffuseColorCoordinates"] =
		    scene::BufferView::of(std::vector<math::V2f>{{0, 0}, {1, 0}, {1, 1}, {0, 1}}, VK_FORMAT_R32G32_SFLOAT);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(V4f(1.0f));
		o.textures["DiffuseColorTexture"] = adaptive::constant(scene::TextureData{2, 2, texels, false, nullptr});
		o.samplers["DiffuseColorTexture"] =
		    scene::SamplerState{scene::Filter::Nearest, scene::AddressMode::ClampToEdge, false};
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	// 2. Interleaved positions + normals in one buffer, drawn through indices with a base vertex (the first 4
	//    vertices of the buffer are decoys far away).
	{
		std::vector<float> interleaved;
		const Quad decoy = quad(5, 5, 6, 6, 0.5f), q = quad(0.1f, -1, 1, -0.1f, 0.4f);
		for (const auto* qq : {&decoy, &q})
			for (const V3f& p : qq->positions)
				for (float x : {p.x, p.y, p.z, 0.0f, 0.0f, -1.0f})
					interleaved.push_back(x);
		const auto buffer = adaptive::constant(ArrayBuffer::of(interleaved));
		RenderObject o;
		o.effect = fx.constant;
		o.attributes["Positions"] = scene::BufferView{buffer, VK_FORMAT_R32G32B32_SFLOAT, 0, 24};
		o.attributes["Normals"] = scene::BufferView{buffer, VK_FORMAT_R32G32B32_SFLOAT, 12, 24};
		o.indices =
		    scene::BufferView::of(std::vector<uint16_t>(q.indices.begin(), q.indices.end()), VK_FORMAT_R16_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(20, 220, 90));
		scene::DrawCall d{true, 6};
		d.base_vertex = 4;
		o.draw_call = adaptive::constant(d);
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	// 3. Instance trafos (a per-instance M44f attribute): three small quads.
	{
		RenderObject o;
		o.effect = effectOf({fx::stock::instanceTrafo(), fx::stock::trafo(), fx::stock::constantColor()});
		const Quad q = quad(-0.1f, -0.1f, 0.1f, 0.1f, 0.3f);
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		std::vector<math::M44f> trafos;
		for (int i = 0; i < 3; ++i)
		{
			math::M44f m(1.0f);
			m[3] = math::V4f(-0.8f + 0.3f * float(i), 0.6f, 0.0f, 1.0f);
			trafos.push_back(m);
		}
		o.attributes["InstanceTrafo"] = scene::BufferView::of(trafos, VK_FORMAT_R32G32B32A32_SFLOAT, true);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(250, 200, 0));
		scene::DrawCall d{true, 6};
		d.instance_count = 3;
		o.draw_call = adaptive::constant(d);
		objects.push_back(scene::makeRenderObject(std::move(o)));
	}
	// 4. A blended quad over the others, and 5. a quad whose cull mode flips (CW as given: culled by BACK).
	cval<VkCullModeFlags> cull{VkCullModeFlags(VK_CULL_MODE_NONE)};
	{
		RenderObject o;
		o.effect = fx.constant;
		const Quad q = quad(-0.6f, -0.6f, 0.6f, 0.6f, 0.1f);
		o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
		o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
		o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(0, 0, 255, 102));
		o.state.default_blend = adaptive::constant(scene::BlendState::alpha());
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(o)));
		RenderObject c;
		c.effect = fx.constant;
		const Quad cq = quad(0.2f, 0.2f, 0.9f, 0.9f, 0.2f);
		c.attributes["Positions"] = scene::BufferView::of(cq.positions, VK_FORMAT_R32G32B32_SFLOAT);
		c.attributes["Normals"] = o.attributes["Normals"];
		c.indices = scene::BufferView::of(cq.indices, VK_FORMAT_R32_UINT);
		c.uniforms["ConstantColor"] = scene::uniform(rgba(255, 0, 255));
		c.state.cull_mode = cull;
		c.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		objects.push_back(scene::makeRenderObject(std::move(c)));
	}
	// Opaque first, the blended quad last, in both paths (the heap draws in bucket order; an ordered list keeps the
	// classic order): the opaque parts do not overlap, so only the blend's order matters.
	for (VkSampleCountFlagBits samples : {VK_SAMPLE_COUNT_1_BIT, VK_SAMPLE_COUNT_4_BIT})
	{
		signature_.samples = samples;
		auto fb = runtime::createFramebuffer(device(), signature_, kSize, kSize);
		ASSERT_TRUE(fb.ok());
		*fb_ = std::move(fb).value();
		const auto opaque = RenderTree::ofObjects(
		    adaptive::asetOf(std::vector<RenderObjectPtr>{objects[0], objects[1], objects[2], objects[4]}));
		adaptive::clist<scene::Command> cmds;
		cmds.append(scene::clearCommand(rgba(3, 5, 7)));
		cmds.append(scene::RenderCommand{opaque});
		cmds.append(scene::RenderCommand{RenderTree::leafOf(objects[3])});
		auto classic = runtime_->compile(signature_, cmds, {});
		for (DrawStrategy d : {DrawStrategy::Indirect, DrawStrategy::Megacall})
		{
			runtime::RenderOptions options;
			options.path = runtime::RenderPath::Heap;
			options.heap.draw = d;
			auto heap = runtime_->compile(signature_, cmds, options);
			for (VkCullModeFlags c : {VkCullModeFlags(VK_CULL_MODE_NONE), VkCullModeFlags(VK_CULL_MODE_BACK_BIT),
			                          VkCullModeFlags(VK_CULL_MODE_FRONT_BIT)})
			{
				cull.setValue(c);
				ASSERT_EQ(frame(*classic), "");
				const Rgba8Image reference = pixels();
				ASSERT_GT(covered(reference), kSize * kSize / 3);
				ASSERT_EQ(frame(*heap), "");
				EXPECT_EQ(differing(pixels(), reference), 0u)
				    << strategyName(d) << " samples " << samples << " cull " << c;
			}
			EXPECT_EQ(heap->stats().heap.objects, 5u); // summed over both Render commands' heap scenes
		}
	}
}

/// Per-instance uniforms draw what separate objects with those values as uniforms draw: three lit instances whose
/// ModelTrafo (NormalMatrix derived from it per instance) and ConstantColor (UNORM8, read by the fragment stage) come
/// from per-instance views starting at first_instance 1, against three objects with the same values as uniforms
/// (derived on the CPU in double precision: lighting may differ by one step), in classic and every heap strategy
/// (those pixel for pixel).
TEST_F(HeapRenderTest, PerInstanceUniformsDrawLikeSeparateObjectsInEveryPath)
{
	const Effects fx;
	const Quad q = quad(-0.25f, -0.25f, 0.25f, 0.25f, 0.0f);
	const auto positions = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
	const auto normals =
	    scene::BufferView::of(std::vector<V3f>(4, glm::normalize(V3f(0.4f, 0.3f, -1.0f))), VK_FORMAT_R32G32B32_SFLOAT);
	const auto indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
	const std::vector<math::Trafo3d> trafos = {
	    math::Trafo3d::translation(math::V3d(-0.5, -0.4, 0.3)) * math::Trafo3d::scale(math::V3d(1.5, 0.8, 1.0)),
	    math::Trafo3d::translation(math::V3d(0.45, -0.3, 0.5)) * math::Trafo3d::rotation(math::V3d(0, 0, 1), 0.5),
	    math::Trafo3d::translation(math::V3d(0.0, 0.5, 0.7)) * math::Trafo3d::scale(math::V3d(0.7, 1.6, 1.0))};
	const std::vector<std::array<uint8_t, 4>> colors = {{250, 40, 40, 255}, {40, 250, 60, 255}, {60, 80, 250, 255}};

	std::vector<math::M44f> trafo_data = {math::M44f(0.0f)}; // element 0 is skipped by first_instance = 1
	std::vector<uint8_t> color_data = {0, 0, 0, 0};
	for (size_t i = 0; i < trafos.size(); ++i)
	{
		trafo_data.push_back(math::M44f(trafos[i].forward));
		color_data.insert(color_data.end(), colors[i].begin(), colors[i].end());
	}
	RenderObject inst;
	inst.effect = fx.lit;
	inst.attributes["Positions"] = positions;
	inst.attributes["Normals"] = normals;
	inst.attributes["ModelTrafo"] = scene::BufferView::of(trafo_data, VK_FORMAT_R32G32B32A32_SFLOAT, true);
	inst.attributes["ConstantColor"] = scene::BufferView::of(color_data, VK_FORMAT_R8G8B8A8_UNORM, true);
	inst.uniforms["ConstantColor"] = scene::uniform(V4f(1.0f)); // shadowed by the per-instance view
	inst.indices = indices;
	scene::DrawCall d{true, 6};
	d.instance_count = 3;
	d.first_instance = 1;
	inst.draw_call = adaptive::constant(d);
	const auto instanced = RenderTree::leafOf(scene::makeRenderObject(std::move(inst)));

	std::vector<RenderObjectPtr> separate;
	for (size_t i = 0; i < trafos.size(); ++i)
	{
		RenderObject o;
		o.effect = fx.lit;
		o.attributes["Positions"] = positions;
		o.attributes["Normals"] = normals;
		o.indices = indices;
		o.uniforms["ModelTrafo"] = scene::uniform(trafos[i]);
		o.uniforms["ConstantColor"] = scene::uniform(rgba(colors[i][0], colors[i][1], colors[i][2]));
		o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
		separate.push_back(scene::makeRenderObject(std::move(o)));
	}
	const Rgba8Image reference = render(RenderTree::ofObjects(adaptive::asetOf(separate)), {});
	ASSERT_GT(covered(reference), kSize * kSize / 5);
	const Rgba8Image classic = render(instanced, {});
	size_t far = 0;
	for (uint32_t y = 0; y < kSize; ++y)
		for (uint32_t x = 0; x < kSize; ++x)
			for (int k = 0; k < 4; ++k)
				far += std::abs(int(classic.at(x, y)[k]) - int(reference.at(x, y)[k])) > 1;
	EXPECT_EQ(far, 0u) << "instanced differs from separate objects by more than one step";
	EXPECT_EQ(covered(classic), covered(reference));
	for (const Mode& m : modes())
		EXPECT_EQ(differing(render(instanced, m.options), classic), 0u) << m.name;
}

/// Scalar uniforms and attributes (float, uint) are loaded from the arena as classic binds them.
TEST_F(HeapRenderTest, ScalarUniformsAndAttributesMatchClassic)
{
	const Effects fx;
	ASSERT_TRUE(fx::UniformScope::declare("TestGreen", fx::F32).ok());
	ASSERT_TRUE(fx::UniformScope::declare("TestBlue", fx::U32).ok());
	const fx::Effect effect = effectOf(
	    {fx::stock::trafo(),
	     std::make_shared<const fx::Stage>(fx::Stage::vertex("test.scalars")
	                                           .reads({{"Red", fx::F32}, {"Alpha", fx::U32}})
	                                           .writes({{"Colors", fx::V4f}})
	                                           .uniforms({"TestGreen", "TestBlue"})
	                                           .glsl("s.Colors = vec4(s.Red, TestGreen, float(TestBlue) / 255.0, "
	                                                 "float(s.Alpha) / 255.0);")),
	     fx::stock::vertexColors()});
	const Quad q = quad(-0.5f, -0.5f, 0.5f, 0.5f, 0.5f);
	RenderObject o;
	o.effect = effect;
	o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Normals"] = scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
	o.attributes["Red"] = scene::BufferView::of(std::vector<float>(4, 0.6f), VK_FORMAT_R32_SFLOAT);
	o.attributes["Alpha"] = scene::BufferView::of(std::vector<uint32_t>(4, 255u), VK_FORMAT_R32_UINT);
	o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
	o.uniforms["ModelTrafo"] = scene::uniform(math::Trafo3d::translation(math::V3d(0.0)));
	o.uniforms["TestGreen"] = scene::uniform(0.2f);
	o.uniforms["TestBlue"] = scene::uniform(uint32_t(90));
	o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
	const auto tree = RenderTree::leafOf(scene::makeRenderObject(std::move(o)));
	const Rgba8Image reference = render(tree, {});
	EXPECT_EQ(reference.at(kSize / 2, kSize / 2), (std::array<uint8_t, 4>{153, 51, 90, 255}));
	for (const Mode& m : modes())
	{
		if (m.options.path == runtime::RenderPath::Classic)
			continue;
		EXPECT_EQ(differing(render(tree, m.options), reference), 0u) << m.name;
	}
}

TEST_F(HeapRenderTest, ValidatorReportsACorruptedDrawHeader)
{
	const Effects fx;
	RandomScene s = randomScene(4, 20, fx);
	runtime::RenderOptions options;
	options.path = runtime::RenderPath::Heap;
	auto t = task(RenderTree::ofObjects(adaptive::asetOf(s.objects)), options);
	ASSERT_EQ(frame(*t), "");
	HeapScene& heap = *t->heapScenes().front();
	auto clean = heap.validateHeap();
	ASSERT_TRUE(clean.ok());
	EXPECT_TRUE(clean->empty()) << clean->front();
	ASSERT_TRUE(detail::HeapTestAccess::corruptDrawHeader(heap, 0, 0x7FFFFFF0u).ok());
	auto corrupt = heap.validateHeap();
	ASSERT_TRUE(corrupt.ok());
	ASSERT_FALSE(corrupt->empty());
	EXPECT_NE(corrupt->front().find("header"), std::string::npos) << corrupt->front();
}

} // namespace
} // namespace quokka::heap::test
