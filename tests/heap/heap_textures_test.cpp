// Textures at scale on the heap: objects whose textures differ share a bucket and a draw through the atlas or the
// bindless table, sample as the classic path's bound textures do, fall back to bound textures when the atlas or table
// refuses theirs, and give their entries back when they change or go.
#include "heap_fixture.hpp"

#include <algorithm>
#include <cmath>

namespace quokka::heap::test
{
namespace
{

constexpr uint32_t kTexSize = 96; ///< framebuffer side: 8 × 8 cells of 12 pixels
/// Measured: 6 steps on lavapipe (whose LOD approximates the derivatives' lengths), where the atlas code computes
/// 0.5 · log2(max(|du/dx|², |du/dy|²)) exactly.
constexpr int kMipmappedSteps = 8;

/// Whether grid() gives object `i` a sampler with mipmaps.
bool mipmapped(uint32_t i)
{
	return i / 4 % 2 == 0;
}

/// The largest channel difference between `a` and `b` over grid() cells (and the background), separately for cells
/// whose sampler has mipmaps — there the hardware's LOD (an implementation may approximate the derivatives' lengths)
/// and the atlas code's exact one mix the levels with slightly different weights — and for the others.
struct Worst
{
	/// Cells without mipmaps, and the background: within one step (bilinear weights are rounded to the hardware's
	/// sub-texel precision at the texel's place in the page, not in the texture alone)
	int plain = 0;
	int mipmapped = 0; ///< minified cells with mipmaps: within a few steps
};
Worst compareCells(const Rgba8Image& a, const Rgba8Image& b, uint32_t count)
{
	Worst w;
	for (uint32_t y = 0; y < a.height; ++y)
		for (uint32_t x = 0; x < a.width; ++x)
		{
			const auto p = a.at(x, y), q = b.at(x, y);
			int d = 0;
			for (size_t c = 0; c < 4; ++c)
				d = std::max(d, std::abs(int(p[c]) - int(q[c])));
			const uint32_t cell = x / 12 + 8 * (y / 12);
			int& into = cell < count && mipmapped(cell) ? w.mipmapped : w.plain;
			into = std::max(into, d);
		}
	return w;
}

/// A smooth texture (neighbouring texels differ by a few steps: a sampler that picks the neighbour of a texel on a
/// boundary costs little), different for every seed.
scene::TextureData smoothTexture(uint32_t w, uint32_t h, uint32_t seed, bool srgb)
{
	auto texels = std::make_shared<std::vector<uint8_t>>(size_t(w) * h * 4);
	const float fx = 0.7f + 0.13f * float(seed % 7), fy = 0.5f + 0.11f * float(seed % 5);
	for (uint32_t y = 0; y < h; ++y)
		for (uint32_t x = 0; x < w; ++x)
		{
			const float u = float(x) / float(w), v = float(y) / float(h);
			uint8_t* p = &(*texels)[(size_t(y) * w + x) * 4];
			p[0] = uint8_t(127.5f + 120.0f * std::sin(6.2832f * fx * u + float(seed)));
			p[1] = uint8_t(127.5f + 120.0f * std::cos(6.2832f * fy * v + 0.5f * float(seed)));
			p[2] = uint8_t(std::fmod(37.0f * float(seed) + 90.0f * u + 60.0f * v, 256.0f));
			p[3] = 255;
		}
	return scene::TextureData{w, h, texels, srgb, nullptr};
}

class HeapTextureTest : public HeapRenderTest
{
protected:
	void SetUp() override
	{
		HeapRenderTest::SetUp();
		auto fb = runtime::createFramebuffer(device(), signature_, kTexSize, kTexSize);
		ASSERT_TRUE(fb.ok()) << fb.error().message;
		*fb_ = std::move(fb).value();
	}

	/// One textured quad per cell of an 8 × 8 grid (`count` of them), texture coordinates −0.25…1.25 (every address
	/// mode shows), texture sizes 2…64 (magnified and minified, several LODs), both families, every sampler.
	std::vector<RenderObjectPtr> grid(uint32_t count, std::vector<cval<scene::TextureData>>* textures = nullptr)
	{
		std::vector<RenderObjectPtr> objects;
		const fx::Effect effect =
		    effectOf({fx::stock::trafo(), fx::stock::constantColor(), fx::stock::diffuseTexture()});
		for (uint32_t i = 0; i < count; ++i)
		{
			const float cell = 2.0f / 8.0f;
			const float x0 = -1.0f + cell * float(i % 8), y0 = -1.0f + cell * float(i / 8);
			const Quad q = quad(x0 + 0.01f, y0 + 0.01f, x0 + cell - 0.01f, y0 + cell - 0.01f, 0.5f);
			RenderObject o;
			o.effect = effect;
			o.attributes["Positions"] = scene::BufferView::of(q.positions, VK_FORMAT_R32G32B32_SFLOAT);
			o.attributes["Normals"] =
			    scene::BufferView::of(std::vector<V3f>(4, V3f(0, 0, -1)), VK_FORMAT_R32G32B32_SFLOAT);
			o.attributes["DiffuseColorCoordinates"] = scene::BufferView::of(
			    std::vector<math::V2f>{{-0.25f, -0.25f}, {1.25f, -0.25f}, {1.25f, 1.25f}, {-0.25f, 1.25f}},
			    VK_FORMAT_R32G32_SFLOAT);
			o.indices = scene::BufferView::of(q.indices, VK_FORMAT_R32_UINT);
			o.uniforms["ConstantColor"] = scene::uniform(V4f(1.0f));
			const uint32_t side = 2u << (i % 6);
			const uint32_t w = side, h = std::max(2u, side >> (i / 6 % 2));
			cval<scene::TextureData> texture{smoothTexture(w, h, i, i % 2 == 0)};
			if (textures)
				textures->push_back(texture);
			o.textures["DiffuseColorTexture"] = texture;
			const scene::AddressMode modes[] = {scene::AddressMode::ClampToEdge, scene::AddressMode::Repeat,
			                                    scene::AddressMode::MirroredRepeat};
			o.samplers["DiffuseColorTexture"] = scene::SamplerState{
			    i / 3 % 2 == 0 ? scene::Filter::Linear : scene::Filter::Nearest, modes[i % 3], mipmapped(i)};
			o.draw_call = adaptive::constant(scene::DrawCall{true, 6});
			objects.push_back(scene::makeRenderObject(std::move(o)));
		}
		return objects;
	}

	/// A copy of `o` moved to cell `i` of the 8 × 8 grid (a quad covering the whole cell).
	static RenderObjectPtr inCell(const RenderObjectPtr& o, uint32_t i)
	{
		RenderObject copy = *o;
		const float cell = 2.0f / 8.0f, x0 = -1.0f + cell * float(i % 8), y0 = -1.0f + cell * float(i / 8);
		const std::vector<V3f> p = {
		    {x0, y0, 0.5f}, {x0 + cell, y0, 0.5f}, {x0 + cell, y0 + cell, 0.5f}, {x0, y0 + cell, 0.5f}};
		copy.attributes["Positions"] = scene::BufferView::of(p, VK_FORMAT_R32G32B32_SFLOAT);
		return scene::makeRenderObject(std::move(copy));
	}

	/// trafo, constantColor and a stage that passes its texture to a function of its own (halving what it samples):
	/// an effect the atlas has no variant of.
	fx::Effect halfTextureEffect()
	{
		auto helper = std::make_shared<const fx::Stage>(
		    fx::Stage::fragment("test.halfTexture")
		        .reads({{"DiffuseColorCoordinates", fx::V2f}, {"Colors", fx::V4f}})
		        .writes({{"Colors", fx::V4f}})
		        .texture("DiffuseColorTexture")
		        .helpers("vec4 halfOf(sampler2D t, vec2 uv) { return 0.5 * texture(t, uv); }")
		        .glsl("\ts.Colors *= halfOf(DiffuseColorTexture, s.DiffuseColorCoordinates);"));
		return effectOf({fx::stock::trafo(), fx::stock::constantColor(), helper});
	}

	/// Copies of `objects` drawn with `effect`.
	static std::vector<RenderObjectPtr> withEffect(const std::vector<RenderObjectPtr>& objects,
	                                               const fx::Effect& effect)
	{
		std::vector<RenderObjectPtr> out;
		for (const RenderObjectPtr& o : objects)
		{
			RenderObject copy = *o;
			copy.effect = effect;
			out.push_back(scene::makeRenderObject(std::move(copy)));
		}
		return out;
	}

	static runtime::RenderOptions heapOptions(DrawStrategy d)
	{
		runtime::RenderOptions options;
		options.path = runtime::RenderPath::Heap;
		options.heap.draw = d;
		options.heap.textures = heap::HeapTextures::Atlas;
		return options;
	}
};

/// 48 quads, each with its own texture and sampler, draw through one bucket and one draw call per strategy and match
/// the classic path's hardware sampling: within one step without mipmaps (every address mode, both filters, magnified
/// and minified), within kMipmappedSteps with them.
TEST_F(HeapTextureTest, ObjectsThatDifferOnlyInTheirTexturesShareOneDrawThroughTheAtlasAndMatchClassic)
{
	const auto objects = grid(48);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto classic = task(tree, classicOptions());
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	EXPECT_EQ(classic->stats().passes.draws, 48u);
	for (DrawStrategy d : {DrawStrategy::Indirect, DrawStrategy::Megacall})
	{
		auto heap = task(tree, heapOptions(d));
		ASSERT_EQ(frame(*heap), "");
		const Worst w = compareCells(pixels(), reference, 48);
		const heap::HeapStats& s = heap->stats().heap;
		EXPECT_EQ(s.atlas_objects, 48u);
		EXPECT_EQ(s.atlas_refused, 0u);
		EXPECT_EQ(s.atlas_entries, 48u);
		EXPECT_EQ(s.buckets, 1u);
		EXPECT_EQ(s.draw_calls, 1u) << strategyName(d);
		EXPECT_LE(w.plain, 1) << strategyName(d);
		EXPECT_LE(w.mipmapped, kMipmappedSteps) << strategyName(d);
		std::printf("%s: worst difference %d without mipmaps, %d with\n", strategyName(d), w.plain, w.mipmapped);
		expectValidHeap(*heap);
	}
}

/// An atlas with room for a few small textures only: the objects it refuses are drawn with their textures bound
/// (a bucket per texture), never dropped and never an error, with the classic path's pixels.
TEST_F(HeapTextureTest, ObjectsTheFullAtlasRefusesAreDrawnWithBoundTexturesAndTheSamePixels)
{
	const auto objects = grid(24);
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto classic = task(tree, classicOptions());
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	runtime::RenderOptions options = heapOptions(DrawStrategy::Indirect);
	options.heap.atlas_options.page_size = 64;
	options.heap.atlas_options.max_layers = 1;
	auto heap = task(tree, options);
	ASSERT_EQ(frame(*heap), "");
	const Worst w = compareCells(pixels(), reference, 24);
	const heap::HeapStats& s = heap->stats().heap;
	EXPECT_EQ(s.objects, 24u);
	EXPECT_GT(s.atlas_objects, 0u);
	EXPECT_GT(s.atlas_refused, 0u);
	EXPECT_EQ(s.atlas_objects + s.atlas_refused, 24u);
	EXPECT_EQ(s.buckets, 1 + s.atlas_refused); // (one for the atlas, one per bound texture)
	EXPECT_LE(w.plain, 1);
	EXPECT_LE(w.mipmapped, kMipmappedSteps);
	expectValidHeap(*heap);

	// Without the atlas, every texture set is its own bucket.
	options.heap.textures = heap::HeapTextures::Bound;
	auto bound = task(tree, options);
	ASSERT_EQ(frame(*bound), "");
	EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0); // (bound textures: the hardware's own sampling)
	EXPECT_EQ(bound->stats().heap.buckets, 24u);
	EXPECT_EQ(bound->stats().heap.atlas_objects, 0u);
}

/// An effect that uses a texture otherwise than by sampling it — passing it to a function of its own — has no atlas
/// variant: its objects bind their textures (counted as refused) with the classic path's pixels, while another
/// effect's objects in the same scene still share the atlas.
TEST_F(HeapTextureTest, AnEffectWithoutAnAtlasVariantBindsItsTexturesAndDrawsLikeClassic)
{
	const auto sampled = grid(16);
	const std::vector<RenderObjectPtr> halved = withEffect(sampled, halfTextureEffect());
	std::vector<RenderObjectPtr> objects = sampled;
	for (uint32_t i = 16; i < 24; ++i)
		objects.push_back(inCell(halved[i - 16], i));
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto classic = task(tree, classicOptions());
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	auto heap = task(tree, heapOptions(DrawStrategy::Indirect));
	ASSERT_EQ(frame(*heap), "");
	const Rgba8Image got = pixels();
	const Worst w = compareCells(got, reference, 16);
	EXPECT_LE(w.plain, 1);
	EXPECT_LE(w.mipmapped, kMipmappedSteps);
	// Cells 16…23 (rows 2 and 3 of the framebuffer's cells) bind their textures: the classic path's pixels exactly.
	size_t differing_bound = 0;
	for (uint32_t y = 24; y < 48; ++y)
		for (uint32_t x = 0; x < kTexSize; ++x)
			differing_bound += got.at(x, y) != reference.at(x, y);
	EXPECT_EQ(differing_bound, 0u);
	const heap::HeapStats& s = heap->stats().heap;
	EXPECT_EQ(s.atlas_objects, 16u);
	EXPECT_EQ(s.atlas_refused, 8u);
	EXPECT_EQ(s.buckets, 1u + 8u); // (the atlas's, and one per bound texture)
	expectValidHeap(*heap);
}

/// A stage that reads only a texture's size (textureSize) and its texels (texelFetch, at the coordinates' texel) gets
/// them from the atlas entry: the classic path's pixels exactly — and with the size alone no page is bound at all.
TEST_F(HeapTextureTest, TextureSizesAndTexelFetchesFromTheAtlasMatchClassic)
{
	const auto sampled = grid(12);
	for (const char* body : {"\ts.Colors = vec4(vec2(textureSize(DiffuseColorTexture, 0)) / 64.0, 0.5, 1.0);",
	                         "\tivec2 n = textureSize(DiffuseColorTexture, 0);\n"
	                         "\ts.Colors = texelFetch(DiffuseColorTexture, ivec2(fract(s.DiffuseColorCoordinates) * "
	                         "vec2(n)), 0);"})
	{
		auto stage = std::make_shared<const fx::Stage>(
		    fx::Stage::fragment(std::string("test.sizeOf") + (body[2] == 'i' ? "Fetch" : ""))
		        .reads({{"DiffuseColorCoordinates", fx::V2f}, {"Colors", fx::V4f}})
		        .writes({{"Colors", fx::V4f}})
		        .texture("DiffuseColorTexture")
		        .glsl(body));
		const fx::Effect effect = effectOf({fx::stock::trafo(), fx::stock::constantColor(), stage});
		const std::vector<RenderObjectPtr> objects = withEffect(sampled, effect);
		const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
		auto classic = task(tree, classicOptions());
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		auto heap = task(tree, heapOptions(DrawStrategy::Auto));
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0) << body;
		EXPECT_EQ(heap->stats().heap.atlas_objects, 12u) << body;
		EXPECT_EQ(heap->stats().heap.draw_calls, 1u) << body;
		expectValidHeap(*heap);
	}
}

/// A texture that changes re-places its object with the new texture's entry; objects that go release theirs (idle
/// entries stay until evicted); the heap's checks — the atlas's packings and refcounts among them — stay clean.
TEST_F(HeapTextureTest, ChangedTexturesAndRemovedObjectsGiveTheirEntriesBack)
{
	std::vector<cval<scene::TextureData>> textures;
	const auto objects = grid(16, &textures);
	adaptive::cset<RenderObjectPtr> set(objects);
	const auto tree = RenderTree::ofObjects(set);
	auto classic = task(tree, classicOptions());
	auto heap = task(tree, heapOptions(DrawStrategy::Auto));
	auto compare = [&](const char* what)
	{
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		const Worst w = compareCells(pixels(), reference, 16);
		EXPECT_LE(w.plain, 1) << what;
		EXPECT_LE(w.mipmapped, kMipmappedSteps) << what;
		expectValidHeap(*heap);
	};
	compare("first frame");
	EXPECT_EQ(heap->stats().heap.atlas_entries, 16u);

	// Five objects get new textures (two share one): the old entries go idle, three new ones are made.
	// (Entries are shared by texels, address mode and mipmaps: objects 0 and 3 clamp with mipmaps, objects 5 and 14
	// mirror without.)
	const scene::TextureData shared = smoothTexture(16, 16, 99, true);
	textures[0].setValue(shared);
	textures[3].setValue(shared);
	textures[1].setValue(smoothTexture(8, 32, 98, false));
	textures[2].setValue(smoothTexture(32, 8, 97, true));
	textures[14].setValue(textures[5].getValue(adaptive::Token{}));
	compare("after the texture changes");
	EXPECT_EQ(heap->stats().heap.rebuilt, 5u);
	EXPECT_EQ(heap->stats().heap.atlas_uploads, 3u);
	EXPECT_EQ(heap->stats().heap.atlas_entries, 16u + 3u); // (the replaced entries stay, idle)
	EXPECT_EQ(heap->stats().heap.atlas_objects, 16u);

	// Half the objects go; the rest still draw as the classic path does.
	for (size_t i = 0; i < objects.size(); i += 2)
		set.remove(objects[i]);
	compare("after removing half");
	EXPECT_EQ(heap->stats().heap.atlas_objects, 8u);
	EXPECT_EQ(heap->stats().heap.atlas_uploads, 0u);
	for (size_t i = 1; i < objects.size(); i += 2)
		set.remove(objects[i]);
	compare("after removing all");
	EXPECT_EQ(heap->stats().heap.atlas_objects, 0u);
}

/// Asking for bindless textures on a device without descriptor indexing fails the frame with a clear error (the
/// default, auto, takes the atlas there).
TEST_F(HeapTextureTest, BindlessTexturesOnADeviceWithoutDescriptorIndexingAreAClearError)
{
	if (device().features().descriptor_indexing)
		GTEST_SKIP() << device().info().name << " has descriptor indexing";
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(grid(4)));
	runtime::RenderOptions options = heapOptions(DrawStrategy::Auto);
	options.heap.textures = HeapTextures::Bindless;
	auto heap = task(tree, options);
	const std::string error = frame(*heap);
	EXPECT_NE(error.find("descriptor indexing"), std::string::npos) << error;
	options.heap.textures = HeapTextures::Auto;
	auto fallback = task(tree, options);
	ASSERT_EQ(frame(*fallback), "");
	EXPECT_EQ(fallback->stats().heap.texture_path, HeapTextures::Atlas);
	EXPECT_EQ(fallback->stats().heap.atlas_objects, 4u);
}

/// The bindless table (HeapOptions::textures = bindless): the tests run where the device has descriptor indexing —
/// the H200, and lavapipe from Mesa 23 on (scripts/test runs them on bookworm-backports' lavapipe).
class HeapBindlessTest : public HeapTextureTest
{
protected:
	void SetUp() override
	{
		HeapTextureTest::SetUp();
		if (gpu::test::skipWithoutBindless(device()))
			GTEST_SKIP() << device().info().name << " has no descriptor indexing (bindless textures)";
	}
	static runtime::RenderOptions bindlessOptions(DrawStrategy d)
	{
		runtime::RenderOptions options = heapOptions(d);
		options.heap.textures = HeapTextures::Bindless;
		return options;
	}
};

/// One textured scene — 48 quads, each with its own texture and sampler (every address mode, both filters, mipmaps
/// or not, magnified and minified) — renders the same on the classic path, the heap with its atlas and the heap with
/// its bindless table: bindless pixel for pixel (the hardware samples the same images with the same samplers), the
/// atlas within its bound; both in one bucket and one draw per strategy.
TEST_F(HeapBindlessTest, OneTexturedSceneRendersTheSameOnClassicHeapAtlasAndHeapBindless)
{
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(grid(48)));
	auto classic = task(tree, classicOptions());
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();
	for (DrawStrategy d : {DrawStrategy::Indirect, DrawStrategy::Megacall})
	{
		auto bindless = task(tree, bindlessOptions(d));
		ASSERT_EQ(frame(*bindless), "");
		EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0) << strategyName(d);
		const heap::HeapStats& s = bindless->stats().heap;
		EXPECT_EQ(s.texture_path, HeapTextures::Bindless);
		EXPECT_EQ(s.bindless_objects, 48u);
		EXPECT_EQ(s.bindless_refused, 0u);
		EXPECT_EQ(s.bindless_entries, 48u);
		EXPECT_EQ(s.atlas_objects, 0u);
		EXPECT_EQ(s.buckets, 1u);
		EXPECT_EQ(s.draw_calls, 1u) << strategyName(d);
		expectValidHeap(*bindless);

		auto atlas = task(tree, heapOptions(d));
		ASSERT_EQ(frame(*atlas), "");
		const Worst w = compareCells(pixels(), reference, 48);
		EXPECT_LE(w.plain, 1) << strategyName(d);
		EXPECT_LE(w.mipmapped, kMipmappedSteps) << strategyName(d);
		EXPECT_EQ(atlas->stats().heap.atlas_objects, 48u);
		EXPECT_EQ(atlas->stats().heap.draw_calls, 1u);
	}
	// auto takes the bindless table where the device has it.
	auto automatic = task(tree,
	                      []
	                      {
		                      runtime::RenderOptions o = heapOptions(DrawStrategy::Auto);
		                      o.heap.textures = HeapTextures::Auto;
		                      return o;
	                      }());
	ASSERT_EQ(frame(*automatic), "");
	EXPECT_EQ(automatic->stats().heap.texture_path, HeapTextures::Bindless);
	EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0);
}

/// Objects sharing a texture and sampler share an entry. A texture's new value of the same size keeps its entry and
/// re-places nothing; a new size replaces the image, and the entry is rewritten once the frames in flight retired;
/// objects that go give their entries back. Every frame matches the classic path exactly and the checks stay clean.
TEST_F(HeapBindlessTest, TextureChangesKeepTheirEntriesAndRemovedObjectsGiveThemBack)
{
	std::vector<cval<scene::TextureData>> textures;
	std::vector<RenderObjectPtr> objects = grid(16, &textures);
	// Objects 16…19 share object 0's texture (and sampler): one entry more is not needed.
	for (uint32_t i = 16; i < 20; ++i)
		objects.push_back(inCell(objects[0], i));
	adaptive::cset<RenderObjectPtr> set(objects);
	const auto tree = RenderTree::ofObjects(set);
	auto classic = task(tree, classicOptions());
	auto heap = task(tree, bindlessOptions(DrawStrategy::Auto));
	auto compare = [&](const char* what)
	{
		ASSERT_EQ(frame(*classic), "");
		const Rgba8Image reference = pixels();
		ASSERT_EQ(frame(*heap), "");
		EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0) << what;
		expectValidHeap(*heap);
	};
	compare("first frame");
	EXPECT_EQ(heap->stats().heap.bindless_objects, 20u);
	EXPECT_EQ(heap->stats().heap.bindless_entries, 16u);

	// New texels of the same size: the same images, re-uploaded; nothing re-placed, no entry touched.
	textures[0].setValue(smoothTexture(2, 2, 50, true));
	textures[7].setValue(smoothTexture(4, 2, 51, false));
	compare("same-size changes");
	EXPECT_EQ(heap->stats().heap.rebuilt, 0u);
	EXPECT_EQ(heap->stats().heap.bindless_waits, 0u);
	EXPECT_EQ(heap->stats().heap.bindless_entries, 16u);

	// A new size: a new image, the entry rewritten after the frames in flight (still nothing re-placed).
	textures[3].setValue(smoothTexture(64, 16, 52, false));
	compare("a new size");
	EXPECT_EQ(heap->stats().heap.rebuilt, 0u);
	EXPECT_EQ(heap->stats().heap.bindless_waits, 1u);
	compare("the frame after");
	EXPECT_EQ(heap->stats().heap.bindless_waits, 0u);

	// Objects go: their entries with them (object 0's stays while its sharers draw).
	for (uint32_t i = 0; i < 8; ++i)
		set.remove(objects[i]);
	compare("after removing eight");
	EXPECT_EQ(heap->stats().heap.bindless_objects, 12u);
	EXPECT_EQ(heap->stats().heap.bindless_entries, 8u + 1u);
	for (uint32_t i = 16; i < 20; ++i)
		set.remove(objects[i]);
	compare("after removing the sharers");
	EXPECT_EQ(heap->stats().heap.bindless_entries, 8u);
	// Added back: entries again (the released ones reused once their frames retired).
	for (uint32_t i = 0; i < 8; ++i)
		set.add(objects[i]);
	compare("after adding them back");
	EXPECT_EQ(heap->stats().heap.bindless_entries, 16u);
}

/// A table with room for 4 entries: the objects it cannot take are drawn with their textures bound (a bucket per
/// texture), never dropped and never an error, with the classic path's pixels. An effect that passes its texture to a
/// function of its own (which the atlas refuses) samples the table like any other.
TEST_F(HeapBindlessTest, AFullTableBindsTheRestAndTexturesPassedToFunctionsStayBindless)
{
	const std::vector<RenderObjectPtr> objects = withEffect(grid(12), halfTextureEffect());
	const auto tree = RenderTree::ofObjects(adaptive::asetOf(objects));
	auto classic = task(tree, classicOptions());
	ASSERT_EQ(frame(*classic), "");
	const Rgba8Image reference = pixels();

	auto roomy = task(tree, bindlessOptions(DrawStrategy::Indirect));
	ASSERT_EQ(frame(*roomy), "");
	EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0);
	EXPECT_EQ(roomy->stats().heap.bindless_objects, 12u);
	EXPECT_EQ(roomy->stats().heap.draw_calls, 1u);

	runtime::RenderOptions options = bindlessOptions(DrawStrategy::Indirect);
	options.heap.bindless_capacity = 4;
	auto full = task(tree, options);
	ASSERT_EQ(frame(*full), "");
	EXPECT_EQ(compareCells(pixels(), reference, 0).plain, 0);
	const heap::HeapStats& s = full->stats().heap;
	EXPECT_EQ(s.bindless_objects, 4u);
	EXPECT_EQ(s.bindless_refused, 8u);
	EXPECT_EQ(s.bindless_entries, 4u);
	EXPECT_EQ(s.buckets, 1u + 8u); // (the table's, and one per bound texture)
	expectValidHeap(*full);
}

} // namespace
} // namespace quokka::heap::test
