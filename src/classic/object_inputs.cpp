// Object inputs shared by the classic and heap paths: uniform packing, format checks, state conversion, derived
// standard trafos.
#include <quokka/classic/object_inputs.hpp>
#include <quokka/fx/instancing.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

#include <absl/container/inlined_vector.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <smmintrin.h> // (SSE4.1 intrinsics; only the [[gnu::target("sse4.1")]] scan uses them)
#endif

namespace quokka::classic
{

using adaptive::aval;
using scene::UniformValue;

std::string objectName(const scene::RenderObject& o)
{
	return "render object #" + std::to_string(o.id);
}

namespace
{
uint32_t maxIndexPortable(const std::byte* data, bool u16, uint32_t count)
{
	// Every placement scans its draw's indices (the scalar loop was ~3.5 instructions per index, 3 % of an add in
	// `bench update`). SSE2 has only signed maxima, so the values are biased by the sign bit: unsigned order becomes
	// signed order. 8 u16 or 4 u32 per step; the tail is scalar.
	uint32_t m = 0;
	uint32_t k = 0;
#if defined(__SSE2__)
	if (u16)
	{
		const __m128i bias = _mm_set1_epi16(int16_t(0x8000));
		__m128i acc = bias; // biased 0
		for (; k + 8 <= count; k += 8)
		{
			const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 2ull * k));
			acc = _mm_max_epi16(acc, _mm_xor_si128(x, bias));
		}
		alignas(16) uint16_t lanes[8];
		_mm_store_si128(reinterpret_cast<__m128i*>(lanes), _mm_xor_si128(acc, bias));
		for (uint16_t lane : lanes)
			m = std::max<uint32_t>(m, lane);
	}
	else
	{
		const __m128i bias = _mm_set1_epi32(int32_t(0x80000000u));
		__m128i acc = bias; // biased 0
		for (; k + 4 <= count; k += 4)
		{
			const __m128i x = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 4ull * k)), bias);
			const __m128i greater = _mm_cmpgt_epi32(x, acc);
			acc = _mm_or_si128(_mm_and_si128(greater, x), _mm_andnot_si128(greater, acc));
		}
		alignas(16) uint32_t lanes[4];
		_mm_store_si128(reinterpret_cast<__m128i*>(lanes), _mm_xor_si128(acc, bias));
		for (uint32_t lane : lanes)
			m = std::max(m, lane);
	}
#endif
	if (u16)
		for (; k < count; ++k)
		{
			uint16_t x;
			std::memcpy(&x, data + 2ull * k, 2);
			m = std::max<uint32_t>(m, x);
		}
	else
		for (; k < count; ++k)
		{
			uint32_t x;
			std::memcpy(&x, data + 4ull * k, 4);
			m = std::max(m, x);
		}
	return m;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QUOKKA_INDEX_SCAN_SSE41 1
// SSE4.1's unsigned maxima straight from memory, two accumulators of 4 u32 (8 u16) each: a 165-index mesh takes ~120
// instructions instead of ~600 with SSE2's biased signed compares. Deliberately not AVX2: on the H200 host (Intel)
// a 256-bit scan made whole add frames 30–40 % slower — even with vzeroupper — though it ran fewer instructions;
// 128-bit code in the legacy encoding leaves the core's vector state and clock alone.
template <bool kU16>
[[gnu::target("sse4.1")]] inline __m128i maxLanes(__m128i a, __m128i b)
{
	if constexpr (kU16)
		return _mm_max_epu16(a, b);
	else
		return _mm_max_epu32(a, b);
}

template <bool kU16>
[[gnu::target("sse4.1")]] uint32_t maxIndexSse41(const std::byte* data, uint32_t count)
{
	constexpr uint32_t per = kU16 ? 8 : 4; // elements per 16-byte vector
	__m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
	uint32_t k = 0;
	const auto* v = reinterpret_cast<const __m128i*>(data); // vector i starts at element i · per
	for (; k + 2 * per <= count; k += 2 * per)
	{
		a = maxLanes<kU16>(a, _mm_loadu_si128(v + k / per));
		b = maxLanes<kU16>(b, _mm_loadu_si128(v + k / per + 1));
	}
	if (k + per <= count)
	{
		a = maxLanes<kU16>(a, _mm_loadu_si128(v + k / per));
		k += per;
	}
	a = maxLanes<kU16>(a, b);
	alignas(16) uint32_t lanes[4];
	_mm_store_si128(reinterpret_cast<__m128i*>(lanes), a);
	uint32_t m = 0;
	for (uint32_t lane : lanes)
		m = std::max(m, kU16 ? std::max(lane & 0xffffu, lane >> 16) : lane);
	// The tail (< one vector) through the portable scan.
	return std::max(m, maxIndexPortable(data + (kU16 ? 2 : 4) * size_t(k), kU16, count - k));
}
#endif
} // namespace

bool indexScanSupported(IndexScan scan)
{
	if (scan == IndexScan::Portable)
		return true;
#if defined(QUOKKA_INDEX_SCAN_SSE41)
	static const bool sse41 = __builtin_cpu_supports("sse4.1");
	return sse41;
#else
	return false;
#endif
}

uint32_t maxIndexWith(IndexScan scan, const std::byte* data, bool u16, uint32_t count)
{
#if defined(QUOKKA_INDEX_SCAN_SSE41)
	if (scan == IndexScan::Sse41)
	{
		QUOKKA_ASSERT(indexScanSupported(IndexScan::Sse41), "maxIndexWith: this CPU has no SSE4.1");
		return u16 ? maxIndexSse41<true>(data, count) : maxIndexSse41<false>(data, count);
	}
#else
	QUOKKA_ASSERT(scan == IndexScan::Portable, "maxIndexWith: SSE4.1 scan on a build without it");
#endif
	return maxIndexPortable(data, u16, count);
}

uint32_t maxIndex(const std::byte* data, bool u16, uint32_t count)
{
	return maxIndexWith(indexScanSupported(IndexScan::Sse41) ? IndexScan::Sse41 : IndexScan::Portable, data, u16,
	                    count);
}

namespace
{
math::Trafo3d asTrafo(const UniformValue& v)
{
	if (const auto* t = std::get_if<math::Trafo3d>(&v))
		return *t;
	if (const auto* m = std::get_if<math::M44f>(&v))
		return math::Trafo3d::fromMatrix(math::M44d(*m));
	return math::Trafo3d::identity();
}

} // namespace

PackedValue packUniform(const UniformValue& value)
{
	PackedValue p{};
	std::visit(
	    [&](const auto& v)
	    {
		    using T = std::decay_t<decltype(v)>;
		    if constexpr (std::is_same_v<T, float>)
		    {
			    p.type = fx::F32;
			    std::memcpy(p.f, &v, 4);
		    }
		    else if constexpr (std::is_same_v<T, int32_t>)
		    {
			    p.type = fx::I32;
			    std::memcpy(p.f, &v, 4);
		    }
		    else if constexpr (std::is_same_v<T, uint32_t>)
		    {
			    p.type = fx::U32;
			    std::memcpy(p.f, &v, 4);
		    }
		    else if constexpr (std::is_same_v<T, math::V2f>)
		    {
			    p.type = fx::V2f;
			    std::memcpy(p.f, &v, 8);
		    }
		    else if constexpr (std::is_same_v<T, math::V3f>)
		    {
			    p.type = fx::V3f;
			    std::memcpy(p.f, &v, 12);
		    }
		    else if constexpr (std::is_same_v<T, math::V4f>)
		    {
			    p.type = fx::V4f;
			    std::memcpy(p.f, &v, 16);
		    }
		    else if constexpr (std::is_same_v<T, math::M33f>)
		    {
			    p.type = fx::M33f;
			    std::memcpy(p.f, &v, 36);
		    }
		    else if constexpr (std::is_same_v<T, math::M44f>)
		    {
			    p.type = fx::M44f;
			    std::memcpy(p.f, &v, 64);
		    }
		    else
		    {
			    static_assert(std::is_same_v<T, math::Trafo3d>);
			    p.type = fx::M44f;
			    const math::M44f m = math::toFloat(v.forward);
			    std::memcpy(p.f, &m, 64);
		    }
	    },
	    value);
	return p;
}

namespace
{
uint32_t componentClass(VkFormat format)
{
	// 0 = float-like (SFLOAT/UNORM/SNORM), 1 = signed int, 2 = unsigned int, 3 = unknown
	switch (format)
	{
	case VK_FORMAT_R32_SFLOAT:
	case VK_FORMAT_R32G32_SFLOAT:
	case VK_FORMAT_R32G32B32_SFLOAT:
	case VK_FORMAT_R32G32B32A32_SFLOAT:
	case VK_FORMAT_R8_UNORM:
	case VK_FORMAT_R8G8_UNORM:
	case VK_FORMAT_R8G8B8A8_UNORM:
	case VK_FORMAT_R16_UNORM:
		return 0;
	case VK_FORMAT_R16_SINT:
	case VK_FORMAT_R32_SINT:
	case VK_FORMAT_R32G32_SINT:
	case VK_FORMAT_R32G32B32_SINT:
	case VK_FORMAT_R32G32B32A32_SINT:
		return 1;
	case VK_FORMAT_R8_UINT:
	case VK_FORMAT_R8G8B8A8_UINT:
	case VK_FORMAT_R16_UINT:
	case VK_FORMAT_R16G16_UINT:
	case VK_FORMAT_R16G16B16A16_UINT:
	case VK_FORMAT_R32_UINT:
	case VK_FORMAT_R32G32_UINT:
	case VK_FORMAT_R32G32B32_UINT:
	case VK_FORMAT_R32G32B32A32_UINT:
		return 2;
	default:
		return 3;
	}
}

uint32_t typeClass(fx::Type t)
{
	switch (t.scalar)
	{
	case fx::Scalar::F32:
		return 0;
	case fx::Scalar::I32:
		return 1;
	default:
		return 2;
	}
}

} // namespace

bool formatFeeds(VkFormat format, fx::Type type)
{
	return componentClass(format) == typeClass(type);
}

VkPipelineColorBlendAttachmentState toVk(const scene::BlendState& b)
{
	VkPipelineColorBlendAttachmentState s{};
	s.blendEnable = b.enabled;
	s.srcColorBlendFactor = b.src_color;
	s.dstColorBlendFactor = b.dst_color;
	s.colorBlendOp = b.color_op;
	s.srcAlphaBlendFactor = b.src_alpha;
	s.dstAlphaBlendFactor = b.dst_alpha;
	s.alphaBlendOp = b.alpha_op;
	s.colorWriteMask = b.write_mask;
	return s;
}

gpu::DynamicState dynamicState(const scene::PipelineStateValues& v, bool has_depth)
{
	gpu::DynamicState d;
	d.cull_mode = v.cull_mode;
	d.front_face = v.front_face;
	d.depth_test = has_depth && v.depth_test;
	d.depth_write = has_depth && v.depth_write;
	d.depth_compare = v.depth_compare;
	d.depth_bias = v.depth_bias.enabled;
	d.depth_bias_constant = v.depth_bias.constant;
	d.depth_bias_slope = v.depth_bias.slope;
	d.stencil_test = v.stencil.enabled;
	d.stencil_fail = v.stencil.fail;
	d.stencil_pass = v.stencil.pass;
	d.stencil_depth_fail = v.stencil.depth_fail;
	d.stencil_compare = v.stencil.compare;
	d.stencil_reference = v.stencil.reference;
	d.stencil_compare_mask = v.stencil.compare_mask;
	d.stencil_write_mask = v.stencil.write_mask;
	return d;
}

namespace
{
aval<UniformValue> trafoInput(const scene::RenderObject& object, const char* name, const aval<UniformValue>& identity)
{
	if (auto it = object.uniforms.find(name); it != object.uniforms.end())
		return it->second;
	return identity;
}

} // namespace

size_t DerivedUniforms::collect()
{
	size_t dropped = 0;
	// A derived node holds its inputs (ModelViewProj holds ViewProj): repeat until nothing more is free.
	for (bool again = true; again;)
	{
		again = false;
		for (auto it = derived_.begin(); it != derived_.end();)
			if (it->second.node()->refCount() == 1)
			{
				derived_.erase(it++); // (absl: erase leaves the other iterators valid)
				++dropped;
				again = true;
			}
			else
				++it;
	}
	return dropped;
}

std::vector<std::string> perInstanceUniforms(const scene::RenderObject& object)
{
	std::vector<std::string> names;
	for (const auto& [name, view] : object.attributes)
		if (view.per_instance && fx::readsUniform(object.effect, name))
			names.push_back(name);
	return names;
}

UniformValue deriveValue(DerivedRecipe recipe, const UniformValue& input)
{
	switch (recipe)
	{
	case DerivedRecipe::NormalMatrix:
		return UniformValue(math::toFloat(asTrafo(input).normalMatrix()));
	case DerivedRecipe::Inverse:
		return UniformValue(asTrafo(input).inverse());
	case DerivedRecipe::None:
		break;
	}
	return input;
}

PackedValue packDerived(DerivedRecipe recipe, const UniformValue& input)
{
	return recipe == DerivedRecipe::None ? packUniform(input) : packUniform(deriveValue(recipe, input));
}

UniformPlan::Rule UniformPlan::parse(std::string_view name, bool& inverse)
{
	auto trafo = [](std::string_view n) -> std::optional<Rule>
	{
		if (n == "ModelTrafo")
			return Rule::Model;
		if (n == "ViewTrafo")
			return Rule::View;
		if (n == "ProjTrafo")
			return Rule::Proj;
		if (n == "ViewProjTrafo")
			return Rule::ViewProj;
		if (n == "ModelViewTrafo")
			return Rule::ModelView;
		if (n == "ModelViewProjTrafo")
			return Rule::ModelViewProj;
		return std::nullopt;
	};
	inverse = false;
	if (auto r = trafo(name))
		return *r;
	if (name.size() > 3 && name.ends_with("Inv"))
		if (auto r = trafo(name.substr(0, name.size() - 3)))
		{
			inverse = true;
			return *r;
		}
	if (name == "NormalMatrix")
		return Rule::Normal;
	if (name == "CameraLocation" || name == "LightLocation")
		return Rule::Camera;
	return Rule::Missing;
}

UniformPlan::UniformPlan(std::span<const std::string> names)
{
	fetch_.assign(names.begin(), names.end());
	for (const char* t : {"ModelTrafo", "ViewTrafo", "ProjTrafo"})
		fetch_.emplace_back(t);
	std::sort(fetch_.begin(), fetch_.end());
	fetch_.erase(std::unique(fetch_.begin(), fetch_.end()), fetch_.end());
	auto index = [&](std::string_view name)
	{ return uint32_t(std::lower_bound(fetch_.begin(), fetch_.end(), name) - fetch_.begin()); };
	model_ = index("ModelTrafo");
	view_ = index("ViewTrafo");
	proj_ = index("ProjTrafo");
	members_.reserve(names.size());
	for (const std::string& name : names)
	{
		Member m{index(name), Rule::Missing, false};
		m.rule = parse(name, m.inverse);
		members_.push_back(m);
	}
}

aval<UniformValue> DerivedUniforms::derive(UniformPlan::Rule rule, bool inverse, const aval<UniformValue>& model,
                                           const aval<UniformValue>& view, const aval<UniformValue>& proj)
{
	using Rule = UniformPlan::Rule;
	// Standard derived trafos, shared by every object with the same input nodes.
	enum Recipe
	{
		ViewProj,
		ModelView,
		ModelViewProj,
		Normal,
		Camera,
		Inverse,
	};
	auto intern = [&](Recipe r, const aval<UniformValue>& a, const aval<UniformValue>& b, auto make)
	{
		const auto key = std::make_tuple(int(r), static_cast<const void*>(a.node().get()),
		                                 static_cast<const void*>(b ? b.node().get() : nullptr));
		auto it = derived_.find(key);
		if (it == derived_.end())
			it = derived_.emplace(key, make()).first;
		return it->second;
	};
	auto product = [](const aval<UniformValue>& outer, const aval<UniformValue>& inner)
	{
		return adaptive::map2(outer, inner,
		                      [](const UniformValue& o, const UniformValue& i)
		                      { return UniformValue(asTrafo(o) * asTrafo(i)); });
	};
	const aval<UniformValue> none;
	auto viewProj = [&] { return intern(ViewProj, proj, view, [&] { return product(proj, view); }); };
	aval<UniformValue> base;
	switch (rule)
	{
	case Rule::Model:
		base = model;
		break;
	case Rule::View:
		base = view;
		break;
	case Rule::Proj:
		base = proj;
		break;
	case Rule::ViewProj:
		base = viewProj();
		break;
	case Rule::ModelView:
		base = intern(ModelView, view, model, [&] { return product(view, model); });
		break;
	case Rule::ModelViewProj:
	{
		const auto vp = viewProj();
		base = intern(ModelViewProj, vp, model, [&] { return product(vp, model); });
		break;
	}
	case Rule::Normal:
		return intern(Normal, model, none,
		              [&] {
			              return adaptive::map(model, [](const UniformValue& v)
			                                   { return deriveValue(DerivedRecipe::NormalMatrix, v); });
		              });
	case Rule::Camera:
		return intern(Camera, view, none,
		              [&]
		              {
			              return adaptive::map(
			                  view, [](const UniformValue& x)
			                  { return UniformValue(math::V3f(asTrafo(x).inverse().transformPos(math::V3d(0.0)))); });
		              });
	case Rule::Missing:
		QUOKKA_ASSERT(false, "DerivedUniforms::derive: a name without a standard meaning");
		return model;
	}
	if (!inverse)
		return base;
	return intern(
	    Inverse, base, none,
	    [&]
	    { return adaptive::map(base, [](const UniformValue& v) { return deriveValue(DerivedRecipe::Inverse, v); }); });
}

namespace
{
Error missingUniform(const scene::RenderObject& object, std::string_view name)
{
	return makeError(ErrorCode::InvalidArgument, objectName(object) + ": effect needs the uniform '" +
	                                                 std::string(name) + "', which the object does not provide");
}
} // namespace

Result<aval<UniformValue>> DerivedUniforms::resolve(const scene::RenderObject& object, const std::string& name)
{
	if (auto it = object.uniforms.find(name); it != object.uniforms.end())
		return it->second;
	bool inverse = false;
	const UniformPlan::Rule rule = UniformPlan::parse(name, inverse);
	if (rule == UniformPlan::Rule::Missing)
		return missingUniform(object, name);
	return derive(rule, inverse, trafoInput(object, "ModelTrafo", identity_),
	              trafoInput(object, "ViewTrafo", identity_), trafoInput(object, "ProjTrafo", identity_));
}

Result<void> DerivedUniforms::resolve(const scene::RenderObject& object, const UniformPlan& plan,
                                      std::span<aval<UniformValue>> out, std::span<DerivedRecipe> pooled)
{
	QUOKKA_ASSERT(out.size() == plan.size() && (pooled.empty() || pooled.size() == plan.size()),
	              "DerivedUniforms::resolve: one output per planned name");
	// The object's values of the planned names: one merge walk over both sorted lists when the object's map is not
	// much longer than the plan, else a lookup per name.
	const std::vector<std::string>& names = plan.fetch_;
	absl::InlinedVector<const aval<UniformValue>*, 16> found(names.size(), nullptr);
	if (object.uniforms.size() <= 2 * names.size() + 8)
	{
		auto it = object.uniforms.begin();
		for (size_t f = 0; f < names.size() && it != object.uniforms.end();)
		{
			const int c = it->first.compare(names[f]);
			if (c < 0)
				++it;
			else if (c > 0)
				++f;
			else
				found[f++] = &(it++)->second;
		}
	}
	else
		for (size_t f = 0; f < names.size(); ++f)
			if (auto it = object.uniforms.find(names[f]); it != object.uniforms.end())
				found[f] = &it->second;
	auto input = [&](uint32_t f) -> const aval<UniformValue>& { return found[f] ? *found[f] : identity_; };
	const aval<UniformValue>& model = input(plan.model_);
	for (size_t i = 0; i < plan.members_.size(); ++i)
	{
		const UniformPlan::Member& m = plan.members_[i];
		DerivedRecipe recipe = DerivedRecipe::None;
		if (!found[m.own] && !pooled.empty())
			recipe = m.rule == UniformPlan::Rule::Normal               ? DerivedRecipe::NormalMatrix
			         : m.rule == UniformPlan::Rule::Model && m.inverse ? DerivedRecipe::Inverse
			                                                           : DerivedRecipe::None;
		if (!pooled.empty())
			pooled[i] = recipe;
		if (found[m.own])
			out[i] = *found[m.own];
		else if (recipe != DerivedRecipe::None)
			out[i] = model;
		else if (m.rule == UniformPlan::Rule::Missing)
			return missingUniform(object, names[m.own]);
		else
			out[i] = derive(m.rule, m.inverse, model, input(plan.view_), input(plan.proj_));
	}
	return {};
}

} // namespace quokka::classic
