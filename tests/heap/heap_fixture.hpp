// heap_fixture.hpp — what the heap's GPU tests share: seeded random scenes, the render modes (classic and every heap
// strategy, optionally forced across chunks), and a fixture that renders a tree in a mode and compares pixels.
#pragma once

#include "../gpu/gpu_fixture.hpp"
#include "../test_seed.hpp"

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

using adaptive::cval;
using gpu::Rgba8Image;
using math::V3f;
using math::V4f;
using scene::ArrayBuffer;
using scene::RenderObject;
using scene::RenderObjectPtr;
using scene::RenderTree;

inline constexpr uint32_t kSize = 48;

inline fx::Effect effectOf(std::vector<fx::StagePtr> stages)
{
	auto e = fx::composeEffect("heap-test", std::move(stages));
	EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
	return std::move(e).value();
}

/// Positions = ModelViewProjTrafo · Positions in a constant colour: an effect whose every object reads a value derived
/// from its own trafo and the camera.
inline fx::Effect modelViewProjEffect()
{
	return effectOf({std::make_shared<const fx::Stage>(fx::Stage::vertex("test.mvp")
	                                                       .reads({{"Positions", fx::V4f}})
	                                                       .writes({{"Positions", fx::V4f}})
	                                                       .uniforms({"ModelViewProjTrafo"})
	                                                       .glsl("s.Positions = ModelViewProjTrafo * s.Positions;")),
	                 fx::stock::constantColor()});
}

/// Adds a per-instance offset to the positions (before the trafo).
inline fx::StagePtr instanceOffset()
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

inline V4f rgba(int r, int g, int b, int a = 255)
{
	return V4f(float(r) / 255.0f, float(g) / 255.0f, float(b) / 255.0f, float(a) / 255.0f);
}

/// A triangle with corners a, b, c facing the camera (normals (0, 0, −1)), in `color`, drawn with `effect`,
/// non-indexed.
inline RenderObject litTriangle(const fx::Effect& effect, V3f a, V3f b, V3f c, V4f color)
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

/// `max_triangles`: each object has 1 … max_triangles triangles.
inline RenderObjectPtr randomObject(std::mt19937& rng, const Effects& fx, RandomScene& scene, uint32_t index,
                                    uint32_t max_triangles = 6)
{
	std::uniform_real_distribution<float> u(-1.0f, 1.0f);
	std::uniform_int_distribution<int> c(0, 255);
	const float depth = 0.05f + 0.9f * float(index % 997) / 997.0f + 0.0001f * float(index / 997);
	const uint32_t triangles = 1 + rng() % max_triangles;
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

inline RandomScene randomScene(uint32_t seed, uint32_t count, const Effects& fx, uint32_t max_triangles = 6)
{
	std::mt19937 rng(seed);
	RandomScene s;
	for (int i = 0; i < 3; ++i)
		s.shared_colors.emplace_back(rgba(int(rng() % 256), int(rng() % 256), int(rng() % 256)));
	for (uint32_t i = 0; i < count; ++i)
		s.objects.push_back(randomObject(rng, fx, s, i, max_triangles));
	return s;
}

struct Mode
{
	const char* name;
	runtime::RenderOptions options;
};

/// The classic path's options: the reference the heap's pixels are compared with (the default path is the heap router).
inline runtime::RenderOptions classicOptions()
{
	return runtime::RenderOptions::classic();
}

/// The heap modes also cover every way a frame's writes reach the GPU: heap-indirect stages them and copies every
/// region with vkCmdCopyBuffer, heap-megacall stages them and sends every short one through the arena scatter (the
/// same for the staging ring's headers and records), heap-auto writes in place where it can (HeapTuning::
/// write_in_place: lavapipe's memory is all device-local and host-visible) and decides by count for the rest.
inline std::vector<Mode> modes(uint64_t chunk_bytes = 0)
{
	auto heap = [&](DrawStrategy d, uint32_t scatter_above)
	{
		runtime::RenderOptions o;
		o.path = runtime::RenderPath::Heap;
		o.heap.draw = d;
		o.heap.max_chunk_bytes = chunk_bytes;
		o.heap.tuning.scatter_above = scatter_above;
		o.heap.tuning.ring_scatter_above =
		    scatter_above == 0 || scatter_above == UINT32_MAX ? scatter_above : HeapTuning{}.ring_scatter_above;
		o.heap.tuning.write_in_place = d == DrawStrategy::Auto;
		return o;
	};
	const uint32_t by_count = HeapTuning{}.scatter_above;
	return {{"classic", classicOptions()},
	        {"heap-indirect", heap(DrawStrategy::Indirect, UINT32_MAX)},
	        {"heap-megacall", heap(DrawStrategy::Megacall, 0)},
	        {"heap-auto", heap(DrawStrategy::Auto, by_count)}};
}

/// modes() and, for mode rules, heap-indirect and heap-megacall with the rules evaluated on the CPU (objects moved
/// between slots by value) next to the default GPU routing.
inline std::vector<Mode> routingModes()
{
	std::vector<Mode> all = modes();
	Mode cpu = all[1];
	cpu.name = "heap-indirect-cpu-routing";
	cpu.options.heap.gpu_routing = false;
	Mode cpu_mega = all[2];
	cpu_mega.name = "heap-megacall-cpu-routing";
	cpu_mega.options.heap.gpu_routing = false;
	all.push_back(cpu);
	all.push_back(cpu_mega);
	return all;
}

/// derivedModes()' paged mode's chunk size.
inline constexpr uint64_t kPagedChunkBytes = 4096;

/// modes() and, for derived uniforms, df32, CPU-derived and paged (small chunks) variants of heap-indirect.
inline std::vector<Mode> derivedModes()
{
	std::vector<Mode> all = modes();
	Mode df32 = all[1];
	df32.name = "heap-indirect-df32";
	df32.options.heap.force_df32 = true;
	Mode cpu = all[1];
	cpu.name = "heap-indirect-cpu-derived";
	cpu.options.heap.gpu_derived = false;
	// Small chunks: the records of one frame live in several chunks, derived by one dispatch each.
	Mode paged = all[1];
	paged.name = "heap-indirect-paged";
	paged.options.heap.max_chunk_bytes = kPagedChunkBytes;
	all.push_back(df32);
	all.push_back(cpu);
	all.push_back(paged);
	return all;
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

inline void expectValidHeap(runtime::RenderTask& t)
{
	auto findings = t.heapScenes().front()->validateHeap();
	ASSERT_TRUE(findings.ok()) << findings.error().message;
	EXPECT_TRUE(findings->empty()) << (findings->empty() ? "" : findings->front());
}

/// A quad [x0,x1]×[y0,y1] at depth z as 4 vertices + 6 indices (both windings drawn unless culled).
struct Quad
{
	std::vector<V3f> positions;
	std::vector<uint32_t> indices = {0, 1, 2, 0, 2, 3};
};
inline Quad quad(float x0, float y0, float x1, float y1, float z)
{
	return {{{x0, y0, z}, {x1, y0, z}, {x1, y1, z}, {x0, y1, z}}};
}

} // namespace quokka::heap::test
