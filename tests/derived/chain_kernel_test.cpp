// The chain kernel on the device, as a specification: transform chains up to 16 deep, composed level by level, equal
// math::Trafo3d's products (forward P·L and backward L⁻¹·P⁻¹) — fp64 bit for bit, df32 within a bound stated here —
// and a dispatch at epoch E recomposes exactly the links below a value written at E.
#include "gpu_fixture.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <quokka/derived/derive_kernel.hpp>
#include <quokka/gpu/buffer.hpp>
#include <quokka/gpu/command_list.hpp>

#include "../test_seed.hpp"

namespace quokka::derived::test
{
namespace
{

using gpu::test::GpuTest;
using math::Trafo3d;
using math::V3d;
using rules::Value;
using ChainKernelTest = GpuTest;

/// A random forest of chains: node 0.. of each tree; a node's parent is an earlier node of its tree (or none: a
/// root), so depths reach `max_depth`. Packed slots: each node's local (forward, backward); computed slots: each
/// node that is not a root (forward, backward).
struct Forest
{
	struct Node
	{
		int parent = -1;
		uint32_t depth = 1;
		Trafo3d local;
		uint32_t local_slot[2] = {0, 0}; ///< packed
		uint32_t world_slot[2] = {0, 0}; ///< packed (a root: its local) or computed (kComputedSlot set)
		uint32_t link = kNoSlot;         ///< its record in its level
	};
	std::vector<Node> nodes;
	std::vector<std::vector<uint32_t>> levels; ///< node indices per level (depth − 2)
	uint32_t computed = 0;                     ///< computed slots

	Forest(std::mt19937_64& rng, uint32_t trees, uint32_t per_tree, uint32_t max_depth)
	{
		std::uniform_real_distribution<double> u(-1.0, 1.0);
		for (uint32_t t = 0; t < trees; ++t)
		{
			const size_t first = nodes.size();
			for (uint32_t i = 0; i < per_tree; ++i)
			{
				Node n;
				if (i > 0)
				{
					// Prefer the deepest so far, so that chains reach max_depth.
					size_t p = first + size_t((u(rng) * 0.5 + 0.5) * double(i));
					p = std::min(p, nodes.size() - 1);
					if (t == 0 || u(rng) > 0.0) // (tree 0: one chain, as deep as allowed)
						p = nodes.size() - 1;
					while (nodes[p].depth >= max_depth)
						p = size_t(nodes[p].parent);
					n.parent = int(p);
					n.depth = nodes[p].depth + 1;
				}
				// A root 10^7 m out; below it rotations, scales and translations of up to ±50 m.
				const V3d axis = glm::normalize(V3d(u(rng), u(rng), u(rng)) + V3d(0.0, 0.0, 1.5));
				n.local = Trafo3d::translation((i == 0 ? V3d(1e7, -2e6, 5e6) : V3d(0.0)) +
				                               50.0 * V3d(u(rng), u(rng), u(rng))) *
				          Trafo3d::rotation(axis, 3.0 * u(rng)) * Trafo3d::scale(V3d(1.0 + 0.25 * u(rng), 1.0, 0.8));
				nodes.push_back(n);
			}
		}
		for (uint32_t i = 0; i < nodes.size(); ++i)
		{
			Node& n = nodes[i];
			n.local_slot[0] = 2 * i;
			n.local_slot[1] = 2 * i + 1;
			if (n.parent < 0)
			{
				n.world_slot[0] = n.local_slot[0];
				n.world_slot[1] = n.local_slot[1];
				continue;
			}
			n.world_slot[0] = computed++ | kComputedSlot;
			n.world_slot[1] = computed++ | kComputedSlot;
			if (levels.size() < n.depth - 1)
				levels.resize(n.depth - 1);
			n.link = uint32_t(levels[n.depth - 2].size());
			levels[n.depth - 2].push_back(i);
		}
	}
	Trafo3d world(uint32_t i) const
	{
		const Node& n = nodes[i];
		return n.parent < 0 ? n.local : world(uint32_t(n.parent)) * n.local;
	}
	std::vector<uint32_t> packed(Precision precision) const
	{
		std::vector<uint32_t> words(nodes.size() * 2 * kSlotWords);
		for (const Node& n : nodes)
			for (int h = 0; h < 2; ++h)
				packConstituent(
				    Value::of(h ? n.local.backward : n.local.forward), precision,
				    std::span<uint32_t, kSlotWords>(words.data() + n.local_slot[h] * kSlotWords, kSlotWords));
		return words;
	}
	std::vector<uint32_t> links(uint32_t level, uint32_t epoch) const
	{
		std::vector<uint32_t> words;
		for (uint32_t i : levels[level])
		{
			const Node& n = nodes[i];
			const Node& p = nodes[size_t(n.parent)];
			const uint32_t row[kChainStride] = {epoch,           n.world_slot[0], n.world_slot[1], p.world_slot[0],
			                                    p.world_slot[1], n.local_slot[0], n.local_slot[1]};
			words.insert(words.end(), row, row + kChainStride);
		}
		return words;
	}
};

/// Device buffers of a forest and the level-by-level dispatch.
struct ChainRun
{
	gpu::Device& device;
	ChainKernel kernel;
	gpu::BufferHandle packed, epochs, computed, computed_epochs;
	std::vector<gpu::BufferHandle> levels;

	static gpu::BufferHandle make(gpu::Device& device, const std::vector<uint32_t>& words, const char* name)
	{
		const auto usage = gpu::BufferUsage::Storage | gpu::BufferUsage::TransferSrc | gpu::BufferUsage::TransferDst;
		auto b =
		    device.createBuffer({std::max<size_t>(16, words.size() * 4), usage, gpu::MemoryDomain::DeviceLocal, name});
		EXPECT_TRUE(b.ok());
		if (!words.empty())
		{
			EXPECT_TRUE(device.uploadBuffer(*b.value(), 0, words.data(), words.size() * 4).ok());
		}
		return std::move(b.value());
	}
	void dispatch(uint32_t epoch)
	{
		auto list = device.beginCommands();
		ASSERT_TRUE(list.ok());
		for (size_t l = 0; l < levels.size(); ++l)
		{
			if (l > 0)
				list->memoryBarrier(VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
				                    VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
				                    VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
			kernel.dispatch(*list, {&*packed, &*epochs}, {&*computed, &*computed_epochs}, *levels[l], 0,
			                uint32_t(levels[l]->size() / 4 / kChainStride), epoch);
		}
		ASSERT_TRUE(device.submitAndWait(std::move(*list)).ok());
	}
	std::vector<uint32_t> read(const gpu::BufferHandle& b, size_t words)
	{
		auto bytes = device.readBuffer(*b, 0, words * 4);
		EXPECT_TRUE(bytes.ok());
		std::vector<uint32_t> out(words);
		std::memcpy(out.data(), bytes->data(), words * 4);
		return out;
	}
};

ChainRun start(gpu::Device& device, const Forest& f, Precision precision, uint32_t packed_epoch, uint32_t link_epoch)
{
	auto kernel = ChainKernel::create(device, precision);
	EXPECT_TRUE(kernel.ok()) << (kernel.ok() ? "" : kernel.error().message);
	ChainRun r{device, std::move(*kernel), {}, {}, {}, {}, {}};
	r.packed = ChainRun::make(device, f.packed(precision), "chain.packed");
	r.epochs = ChainRun::make(device, std::vector<uint32_t>(f.nodes.size() * 2, packed_epoch), "chain.epochs");
	r.computed = ChainRun::make(device, std::vector<uint32_t>(f.computed * kSlotWords, 0u), "chain.computed");
	r.computed_epochs = ChainRun::make(device, std::vector<uint32_t>(f.computed, 0u), "chain.computed_epochs");
	for (uint32_t l = 0; l < f.levels.size(); ++l)
		r.levels.push_back(ChainRun::make(device, f.links(l, link_epoch), "chain.links"));
	return r;
}

/// A computed slot's value as doubles (fp64: the doubles; df32: hi + lo).
std::array<double, 16> valueOf(const std::vector<uint32_t>& computed, uint32_t slot, Precision precision)
{
	std::array<double, 16> v{};
	const uint32_t* w = computed.data() + size_t(slot & ~kComputedSlot) * kSlotWords;
	for (uint32_t c = 0; c < 16; ++c)
		v[c] = precision == Precision::Fp64
		           ? std::bit_cast<double>(uint64_t(w[2 * c]) | uint64_t(w[2 * c + 1]) << 32)
		           : double(std::bit_cast<float>(w[2 * c])) + double(std::bit_cast<float>(w[2 * c + 1]));
	return v;
}

struct Compared
{
	size_t components = 0, exact = 0;
	double worst = 0.0; ///< the largest |gpu − cpu| relative to the largest component of its matrix (≥ 1)
};

Compared compare(ChainRun& r, const Forest& f, Precision precision)
{
	const std::vector<uint32_t> computed = r.read(r.computed, size_t(f.computed) * kSlotWords);
	Compared out;
	for (uint32_t i = 0; i < f.nodes.size(); ++i)
	{
		if (f.nodes[i].parent < 0)
			continue;
		const Trafo3d w = f.world(i);
		for (int h = 0; h < 2; ++h)
		{
			const std::array<double, 16> got = valueOf(computed, f.nodes[i].world_slot[h], precision);
			const math::M44d& m = h ? w.backward : w.forward;
			double big = 1.0;
			for (int c = 0; c < 16; ++c)
				big = std::max(big, std::abs(m[c / 4][c % 4]));
			for (int c = 0; c < 16; ++c)
			{
				const double want = m[c / 4][c % 4];
				++out.components;
				out.exact +=
				    std::bit_cast<uint64_t>(got[c]) == std::bit_cast<uint64_t>(want) || (got[c] == 0.0 && want == 0.0);
				out.worst = std::max(out.worst, std::abs(got[c] - want) / big);
			}
		}
	}
	return out;
}

TEST_F(ChainKernelTest, Fp64ChainsEqualTheCpuProductsBitForBit)
{
	if (!device().features().shader_float64)
		GTEST_SKIP() << "the device has no shaderFloat64";
	std::mt19937_64 rng(quokka::test::testSeed(40));
	const Forest f(rng, 12, 40, 16);
	ASSERT_EQ(f.levels.size(), 15u) << "the forest reaches depth 16";
	ChainRun r = start(device(), f, Precision::Fp64, 1, 1);
	r.dispatch(1);
	const Compared c = compare(r, f, Precision::Fp64);
	ASSERT_GT(c.components, 0u);
	EXPECT_EQ(c.exact, c.components) << "fp64 products in math::Trafo3d's order, uncontracted (worst " << c.worst
	                                 << ")";
}

TEST_F(ChainKernelTest, Df32ChainsAreWithinTheStatedBoundOfTheCpuProducts)
{
	std::mt19937_64 rng(quokka::test::testSeed(41));
	const Forest f(rng, 12, 40, 16);
	ChainRun r = start(device(), f, Precision::Df32, 1, 1);
	r.dispatch(1);
	const Compared c = compare(r, f, Precision::Df32);
	ASSERT_GT(c.components, 0u);
	// Each level adds the error of one df32 matrix product (~2^-46 of its operands); 15 levels with matrices of
	// magnitude up to 10^7 stay within 2^-40 of the largest component (measured on lavapipe: 2^-45).
	EXPECT_LT(c.worst, std::ldexp(1.0, -40)) << "worst relative difference " << c.worst;
	std::printf("df32 chains, 15 levels: worst |gpu - cpu| / max|component| = %.3g (2^%.1f)\n", c.worst,
	            std::log2(std::max(c.worst, 1e-300)));
}

TEST_F(ChainKernelTest, ADispatchRecomposesExactlyTheLinksBelowWhatChanged)
{
	std::mt19937_64 rng(quokka::test::testSeed(42));
	Forest f(rng, 4, 30, 8);
	// Everything composed at epoch 1; then one link's local (a middle node of tree 1) and tree 2's root change at 2.
	ChainRun r = start(device(), f, Precision::Df32, 1, 1);
	r.dispatch(1);
	uint32_t middle = 30 + 1;
	while (f.nodes[middle].depth < 3)
		++middle;
	const uint32_t root = 60;
	ASSERT_LT(f.nodes[root].parent, 0);
	f.nodes[middle].local = Trafo3d::translation(V3d(0.0, 7.0, 0.0)) * f.nodes[middle].local;
	f.nodes[root].local = Trafo3d::rotation(V3d(0.0, 0.0, 1.0), 0.5) * f.nodes[root].local;
	const std::vector<uint32_t> packed = f.packed(Precision::Df32);
	std::vector<uint32_t> epochs(f.nodes.size() * 2, 1u);
	for (uint32_t n : {middle, root})
		for (int h = 0; h < 2; ++h)
		{
			const uint32_t s = f.nodes[n].local_slot[h];
			ASSERT_TRUE(device()
			                .uploadBuffer(*r.packed, s * kSlotWords * 4, packed.data() + s * kSlotWords, kSlotWords * 4)
			                .ok());
			epochs[s] = 2;
		}
	ASSERT_TRUE(device().uploadBuffer(*r.epochs, 0, epochs.data(), epochs.size() * 4).ok());
	r.dispatch(2);
	const std::vector<uint32_t> stamped = r.read(r.computed_epochs, f.computed);
	auto below = [&](uint32_t i, uint32_t a)
	{
		for (int k = int(i); k >= 0; k = f.nodes[size_t(k)].parent)
			if (uint32_t(k) == a)
				return true;
		return false;
	};
	size_t recomposed = 0;
	for (uint32_t i = 0; i < f.nodes.size(); ++i)
	{
		if (f.nodes[i].parent < 0)
			continue;
		const bool changed = below(i, middle) || below(i, root);
		recomposed += changed;
		for (int h = 0; h < 2; ++h)
			EXPECT_EQ(stamped[f.nodes[i].world_slot[h] & ~kComputedSlot], changed ? 2u : 1u) << "node " << i;
	}
	EXPECT_GT(recomposed, 30u) << "tree 2 and the subtree of the middle node";
	EXPECT_LT(recomposed, f.nodes.size() - 4 - 30) << "not everything";
	EXPECT_LT(compare(r, f, Precision::Df32).worst, std::ldexp(1.0, -40)) << "the new values";
}

} // namespace
} // namespace quokka::derived::test
