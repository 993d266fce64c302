// ModeKey (mode_key.hpp): the bit-packed encoding of a pipeline-state snapshot and its decoding.
#include <quokka/modes/mode_key.hpp>

#include <bit>
#include <cmath>

#include <absl/hash/hash.h>

namespace quokka::modes
{

namespace
{

/// Appends fields to key words, least significant bit first.
class BitWriter
{
public:
	explicit BitWriter(KeyWords& words) : words_(words) {}

	void put(uint64_t value, uint32_t bits)
	{
		for (uint32_t done = 0; done < bits;)
		{
			if (bits_ % 64 == 0)
				words_.push_back(0);
			const uint32_t at = bits_ % 64, n = std::min(bits - done, 64 - at);
			const uint64_t part = (value >> done) & (n == 64 ? ~0ull : (1ull << n) - 1);
			words_.back() |= part << at;
			done += n;
			bits_ += n;
		}
	}
	void flag(bool b) { put(b ? 1 : 0, 1); }
	/// An enum in `bits` bits; a value that needs more is the escape code (all ones) and its 32 bits.
	void enumeration(uint32_t value, uint32_t bits)
	{
		const uint32_t escape = (1u << bits) - 1;
		if (value < escape)
			return put(value, bits);
		put(escape, bits);
		put(value, 32);
	}
	/// A 32-bit value: a 0 bit and 8 bits below 256, else a 1 bit and 32 bits.
	void word(uint32_t value)
	{
		flag(value >= 256);
		put(value, value >= 256 ? 32 : 8);
	}
	/// A float as a value: a 0 bit for ±0, else a 1 bit and its bits (every NaN as the quiet NaN).
	void real(float f)
	{
		flag(f != 0.0f);
		if (f != 0.0f)
			put(std::isnan(f) ? 0x7fc00000u : std::bit_cast<uint32_t>(f), 32);
	}
	uint32_t bits() const { return bits_; }

private:
	KeyWords& words_;
	uint32_t bits_ = 0;
};

/// Reads what BitWriter wrote; reading past the end sets failed().
class BitReader
{
public:
	BitReader(const KeyWords& words, uint32_t bits)
	    : words_(words), bits_(uint32_t(std::min<uint64_t>(bits, words.size() * 64))), failed_(bits_ != bits)
	{
	}

	uint64_t get(uint32_t bits)
	{
		if (at_ + bits > bits_)
		{
			failed_ = true;
			return 0;
		}
		uint64_t value = 0;
		for (uint32_t done = 0; done < bits;)
		{
			const uint32_t in = at_ % 64, n = std::min(bits - done, 64 - in);
			const uint64_t part = (words_[at_ / 64] >> in) & (n == 64 ? ~0ull : (1ull << n) - 1);
			value |= part << done;
			done += n;
			at_ += n;
		}
		return value;
	}
	bool flag() { return get(1) != 0; }
	uint32_t enumeration(uint32_t bits)
	{
		const uint32_t v = uint32_t(get(bits));
		return v == (1u << bits) - 1 ? uint32_t(get(32)) : v;
	}
	uint32_t word() { return uint32_t(get(flag() ? 32 : 8)); }
	float real() { return flag() ? std::bit_cast<float>(uint32_t(get(32))) : 0.0f; }
	/// Every bit read, none past the end.
	bool complete() const { return !failed_ && at_ == bits_; }

private:
	const KeyWords& words_;
	uint32_t bits_; ///< (at most the words' bits: a shorter key fails instead of reading past them)
	bool failed_;
	uint32_t at_ = 0;
};

// Field widths: each holds the core values of its enum (and the escape code).
constexpr uint32_t kTopologyBits = 4, kFactorBits = 5, kBlendOpBits = 3, kWriteMaskBits = 5;
constexpr uint32_t kCullBits = 3, kFrontFaceBits = 2, kCompareBits = 4, kStencilOpBits = 4, kCountBits = 8;

void putBlend(BitWriter& w, const scene::BlendState& b)
{
	w.flag(b.enabled);
	w.enumeration(uint32_t(b.src_color), kFactorBits);
	w.enumeration(uint32_t(b.dst_color), kFactorBits);
	w.enumeration(uint32_t(b.color_op), kBlendOpBits);
	w.enumeration(uint32_t(b.src_alpha), kFactorBits);
	w.enumeration(uint32_t(b.dst_alpha), kFactorBits);
	w.enumeration(uint32_t(b.alpha_op), kBlendOpBits);
	w.enumeration(uint32_t(b.write_mask), kWriteMaskBits);
}

scene::BlendState getBlend(BitReader& r)
{
	scene::BlendState b;
	b.enabled = r.flag();
	b.src_color = VkBlendFactor(r.enumeration(kFactorBits));
	b.dst_color = VkBlendFactor(r.enumeration(kFactorBits));
	b.color_op = VkBlendOp(r.enumeration(kBlendOpBits));
	b.src_alpha = VkBlendFactor(r.enumeration(kFactorBits));
	b.dst_alpha = VkBlendFactor(r.enumeration(kFactorBits));
	b.alpha_op = VkBlendOp(r.enumeration(kBlendOpBits));
	b.write_mask = VkColorComponentFlags(r.enumeration(kWriteMaskBits));
	return b;
}

float canonicalZero(float f)
{
	return f == 0.0f ? 0.0f : f;
}

} // namespace

Result<ModeKey> ModeKey::encode(const scene::PipelineStateValues& v, std::span<const std::string> attachments)
{
	if (attachments.size() > kMaxAttachments)
		return makeError(ErrorCode::InvalidArgument, "mode key: " + std::to_string(attachments.size()) +
		                                                 " colour attachments (at most " +
		                                                 std::to_string(kMaxAttachments) + ")");
	ModeKey k;
	k.attachments_ = uint32_t(attachments.size());
	BitWriter p(k.pipeline_);
	p.put(attachments.size(), kCountBits);
	p.enumeration(uint32_t(v.topology), kTopologyBits);
	p.flag(v.depth_clamp);
	p.flag(v.alpha_to_coverage);
	for (const std::string& name : attachments)
		putBlend(p, v.blendFor(name));
	k.pipeline_bits_ = p.bits();

	BitWriter d(k.dynamic_);
	d.enumeration(uint32_t(v.cull_mode), kCullBits);
	d.enumeration(uint32_t(v.front_face), kFrontFaceBits);
	d.flag(v.depth_test);
	d.flag(v.depth_write);
	d.enumeration(uint32_t(v.depth_compare), kCompareBits);
	d.flag(v.depth_bias.enabled);
	d.real(v.depth_bias.constant);
	d.real(v.depth_bias.slope);
	d.real(v.depth_bias.clamp);
	const scene::StencilState& s = v.stencil;
	d.flag(s.enabled);
	d.enumeration(uint32_t(s.fail), kStencilOpBits);
	d.enumeration(uint32_t(s.pass), kStencilOpBits);
	d.enumeration(uint32_t(s.depth_fail), kStencilOpBits);
	d.enumeration(uint32_t(s.compare), kCompareBits);
	d.word(s.reference);
	d.word(s.compare_mask);
	d.word(s.write_mask);
	k.dynamic_bits_ = d.bits();
	return k;
}

Result<scene::PipelineStateValues> ModeKey::decode(std::span<const std::string> attachments) const
{
	if (attachments.size() != attachments_)
		return makeError(ErrorCode::InvalidArgument, "mode key: encoded for " + std::to_string(attachments_) +
		                                                 " colour attachments, decoded for " +
		                                                 std::to_string(attachments.size()));
	scene::PipelineStateValues v;
	BitReader p(pipeline_, pipeline_bits_);
	const bool count_matches = p.get(kCountBits) == attachments_;
	v.topology = VkPrimitiveTopology(p.enumeration(kTopologyBits));
	v.depth_clamp = p.flag();
	v.alpha_to_coverage = p.flag();
	for (const std::string& name : attachments)
		v.blend[name] = getBlend(p);

	BitReader d(dynamic_, dynamic_bits_);
	v.cull_mode = VkCullModeFlags(d.enumeration(kCullBits));
	v.front_face = VkFrontFace(d.enumeration(kFrontFaceBits));
	v.depth_test = d.flag();
	v.depth_write = d.flag();
	v.depth_compare = VkCompareOp(d.enumeration(kCompareBits));
	v.depth_bias.enabled = d.flag();
	v.depth_bias.constant = d.real();
	v.depth_bias.slope = d.real();
	v.depth_bias.clamp = d.real();
	scene::StencilState& s = v.stencil;
	s.enabled = d.flag();
	s.fail = VkStencilOp(d.enumeration(kStencilOpBits));
	s.pass = VkStencilOp(d.enumeration(kStencilOpBits));
	s.depth_fail = VkStencilOp(d.enumeration(kStencilOpBits));
	s.compare = VkCompareOp(d.enumeration(kCompareBits));
	s.reference = d.word();
	s.compare_mask = d.word();
	s.write_mask = d.word();
	if (!count_matches || !p.complete() || !d.complete() || (pipeline_bits_ + 63) / 64 != pipeline_.size() ||
	    (dynamic_bits_ + 63) / 64 != dynamic_.size())
		return makeError(ErrorCode::InvalidArgument, "mode key: the words are not a key's (truncated or altered)");
	return v;
}

scene::PipelineStateValues ModeKey::canonical(const scene::PipelineStateValues& values,
                                              std::span<const std::string> attachments)
{
	scene::PipelineStateValues v = values;
	v.default_blend = scene::BlendState{};
	v.blend.clear();
	for (const std::string& name : attachments)
		v.blend[name] = values.blendFor(name);
	v.depth_bias.constant = canonicalZero(v.depth_bias.constant);
	v.depth_bias.slope = canonicalZero(v.depth_bias.slope);
	v.depth_bias.clamp = canonicalZero(v.depth_bias.clamp);
	return v;
}

size_t ModeKey::hash() const
{
	return absl::HashOf(*this);
}

} // namespace quokka::modes
