// Gate kernels fused with the chunk-local cumsum (engine/cuda/kernels_fused_gates.h) against
// the unfused pair they replace (the gate kernel, then ChunkLocalCumsumPacked): in fp32,
// bitwise equal q, k, g, v over a pack of sequences whose chunks end short; with bf16
// operands (the fast gate maths), within the bound ExpectFastBf16Gates states of the fp32
// run.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <vector>

#include "engine/cuda/kernels.h"
#include "engine/cuda/kernels_chunk_mma.h"
#include "engine/cuda/kernels_fused_gates.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"

namespace hgeval::cuda {
namespace {

bool BitwiseEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// q, k, g, v of the unfused pair (0) and of the fused kernel (1), bitwise.
void ExpectSameGates(Dev<float>& q0, Dev<float>& k0, Dev<float>& g0, Dev<float>& v0, Dev<float>& q1,
                     Dev<float>& k1, Dev<float>& g1, Dev<float>& v1) {
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(BitwiseEqual(q0.Get(), q1.Get())) << "q";
  EXPECT_TRUE(BitwiseEqual(k0.Get(), k1.Get())) << "k";
  EXPECT_TRUE(BitwiseEqual(g0.Get(), g1.Get())) << "g";
  EXPECT_TRUE(BitwiseEqual(v0.Get(), v1.Get())) << "v";
}

// A fused kernel's run with bf16 operands (2) against its fp32 run (1). bf16 mode takes
// the fast gate maths (gate_maths.cuh: a few fp32 ulp, the log's error absolute), so q and
// k are the fp32 values rounded to bf16 up to that error (half a bf16 step, 2^-8
// relative, plus 1e-6), v is bitwise the rounded fp32 v, and each cumulative log gate is
// within 1e-6 per row summed (at most 64) plus 1e-6 relative of the fp32 one (TNL's,
// a sum of constants, is the same floats).
void ExpectFastBf16Gates(Dev<float>& q1, Dev<float>& k1, Dev<float>& g1, Dev<float>& v1,
                         Dev<uint16_t>& q2, Dev<uint16_t>& k2, Dev<float>& g2, Dev<uint16_t>& v2) {
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto expect_near_rounding = [](const std::vector<float>& exact, const std::vector<uint16_t>& bits,
                                 const char* what) {
    const std::vector<float> got = WidenedBf16(bits);
    size_t bad = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
      if (std::fabs(got[i] - exact[i]) > (0x1p-8f + 1e-6f) * std::fabs(exact[i])) ++bad;
    }
    EXPECT_EQ(bad, 0u) << what << ": values off the fp32 one's rounding";
  };
  expect_near_rounding(q1.Get(), q2.Get(), "bf16 q");
  expect_near_rounding(k1.Get(), k2.Get(), "bf16 k");
  const std::vector<float> g_exact = g1.Get(), g_fast = g2.Get();
  size_t bad = 0;
  for (size_t i = 0; i < g_exact.size(); ++i) {
    if (std::fabs(g_fast[i] - g_exact[i]) > 1e-6f * (64.0f + std::fabs(g_exact[i]))) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "g with bf16 operands";
  EXPECT_TRUE(v2.Get() == RoundedBf16Bits(v1.Get())) << "bf16 v";
}

// Three sequences of 100, 64 and 137 rows: chunks of 64 + 36, 64, 64 + 64 + 9.
struct TestPack {
  std::vector<int32_t> seq_row0 = {0, 100, 164, 301};
  std::vector<int32_t> seq_chunk0 = {0, 2, 3, 6};
  std::vector<int32_t> chunk_row0 = {0, 64, 100, 164, 228, 292};
  std::vector<int32_t> chunk_seq = {0, 0, 1, 2, 2, 2};
  Dev<int32_t> d_seq_row0{seq_row0}, d_seq_chunk0{seq_chunk0}, d_chunk_row0{chunk_row0},
      d_chunk_seq{chunk_seq};
  int rows() const { return seq_row0.back(); }
  PackView View() {
    PackView pack;
    pack.rows = rows();
    pack.num_seqs = 3;
    pack.num_chunks = static_cast<int>(chunk_row0.size());
    pack.seq_row0 = d_seq_row0.get();
    pack.seq_chunk0 = d_seq_chunk0.get();
    pack.chunk_row0 = d_chunk_row0.get();
    pack.chunk_seq = d_chunk_seq.get();
    return pack;
  }
};

struct TnlCase {
  int e, dk;
  bool lrpe;
};

// gtest would print the case's bytes (padding included) into the ctest name.
void PrintTo(const TnlCase& c, std::ostream* os) {
  *os << "e" << c.e << "_dk" << c.dk << (c.lrpe ? "_lrpe" : "");
}

class TnlGatesChunkCumsumTest : public ::testing::TestWithParam<TnlCase> {};

TEST_P(TnlGatesChunkCumsumTest, EqualsGatesThenCumsumBitwise) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const TnlCase c = GetParam();
  const int heads = 4, dim = heads * c.e;
  TestPack tp;
  const PackView pack = tp.View();
  const int rows = tp.rows();
  std::mt19937 rng(c.e * 3 + c.dk + c.lrpe);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> proj(static_cast<size_t>(rows) * 4 * dim), theta(dim), decay(heads);
  for (auto& x : proj) x = nd(rng);
  for (auto& x : theta) x = std::abs(nd(rng)) * 0.3f;
  for (int h = 0; h < heads; ++h) decay[h] = std::log(0.9f + 0.02f * h);
  std::vector<int64_t> positions(rows);
  for (int r = 0; r < rows; ++r) positions[r] = 5000 + 3 * r;  // large angles: LRPE's doubles

  // Values bf16 holds exactly: the bf16 runs read proj as bf16 (the projection's output in
  // bf16 mode) and must see what the fp32 runs see.
  proj = RoundedToBf16(proj);
  Dev<float> dproj(proj), dtheta(theta), ddecay(decay);
  Dev<uint16_t> dproj16(RoundedBf16Bits(proj));
  Dev<int64_t> dpos(positions);
  const size_t nqk = static_cast<size_t>(rows) * heads * c.dk;
  const size_t nv = static_cast<size_t>(rows) * dim;
  const float* th = c.lrpe ? dtheta.get() : nullptr;

  Dev<float> q0(nqk), k0(nqk), g0(nqk), v0(nv), q1(nqk), k1(nqk), g1(nqk), v1(nv);
  ASSERT_EQ(TnlGates(dproj.get(), rows, heads, c.e, c.dk, th, dpos.get(), ddecay.get(), q0.get(),
                     k0.get(), g0.get(), v0.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(ChunkLocalCumsumPacked(g0.get(), pack, heads, c.dk, nullptr), cudaSuccess);
  ASSERT_EQ(TnlGatesChunkCumsum(dproj.get(), pack, heads, c.e, c.dk, th, dpos.get(), ddecay.get(),
                                DecayLayout::kPerKey, q1.get(), k1.get(), g1.get(), v1.get(),
                                Act::kF32, nullptr),
            cudaSuccess);
  ExpectSameGates(q0, k0, g0, v0, q1, k1, g1, v1);
  Dev<float> g2(nqk);
  Dev<uint16_t> q2(nqk), k2(nqk), v2(nv);
  ASSERT_EQ(TnlGatesChunkCumsum(dproj16.get(), pack, heads, c.e, c.dk, th, dpos.get(), ddecay.get(),
                                DecayLayout::kPerKey, q2.get(), k2.get(), g2.get(), v2.get(),
                                Act::kBF16, nullptr),
            cudaSuccess);
  ExpectFastBf16Gates(q1, k1, g1, v1, q2, k2, g2, v2);
  const std::vector<float> g_fused = g1.Get();
  // The sum restarts at each chunk: a chunk's first row holds the decay itself.
  EXPECT_EQ(g_fused[static_cast<size_t>(100) * heads * c.dk], decay[0]);

  // g per head: one value a (row, head), the one every key of the head holds above; q, k,
  // v as in the per-key run.
  Dev<float> g3(static_cast<size_t>(rows) * heads);
  Dev<uint16_t> q3(nqk), k3(nqk), v3(nv);
  ASSERT_EQ(TnlGatesChunkCumsum(dproj16.get(), pack, heads, c.e, c.dk, th, dpos.get(), ddecay.get(),
                                DecayLayout::kPerHead, q3.get(), k3.get(), g3.get(), v3.get(),
                                Act::kBF16, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(q3.Get() == q2.Get() && k3.Get() == k2.Get() && v3.Get() == v2.Get())
      << "q, k, v with g per head";
  const std::vector<float> g_head = g3.Get();
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int key = 0; key < c.dk; ++key) {
        const float want = g_fused[(static_cast<size_t>(r) * heads + h) * c.dk + key];
        ASSERT_EQ(std::memcmp(&want, &g_head[static_cast<size_t>(r) * heads + h], sizeof(float)), 0)
            << "row " << r << " head " << h << " key " << key;
      }
    }
  }

  // q and k null (the chunk kernels read them raw): the same g per head and v, nothing
  // else written; only without LRPE, with g per head, and q and k together.
  Dev<float> g4(static_cast<size_t>(rows) * heads);
  Dev<uint16_t> v4(nv);
  auto raw_run = [&](const float* theta, DecayLayout layout, void* q, void* k, void* v) {
    return TnlGatesChunkCumsum(dproj16.get(), pack, heads, c.e, c.dk, theta, dpos.get(),
                               ddecay.get(), layout, q, k, g4.get(), v, Act::kBF16, nullptr);
  };
  if (!c.lrpe) {
    ASSERT_EQ(raw_run(nullptr, DecayLayout::kPerHead, nullptr, nullptr, v4.get()), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(BitwiseEqual(g4.Get(), g_head)) << "g with q and k read raw";
    EXPECT_TRUE(v4.Get() == v3.Get()) << "v with q and k read raw";
    ASSERT_EQ(raw_run(nullptr, DecayLayout::kPerHead, nullptr, nullptr, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(BitwiseEqual(g4.Get(), g_head)) << "g alone";
  }
  EXPECT_EQ(raw_run(dtheta.get(), DecayLayout::kPerHead, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(raw_run(nullptr, DecayLayout::kPerKey, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(raw_run(nullptr, DecayLayout::kPerHead, nullptr, k3.get(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(raw_run(nullptr, DecayLayout::kPerHead, q3.get(), nullptr, nullptr),
            cudaErrorInvalidValue);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TnlGatesChunkCumsumTest,
                         ::testing::Values(TnlCase{128, 128, false}, TnlCase{128, 256, false},
                                           TnlCase{128, 256, true}, TnlCase{64, 128, true},
                                           TnlCase{48, 48, false}));

// dim 320: not a multiple of the kernel's 128 channels (pairs of channels a thread); 161:
// odd (one channel a thread).
class Hgrn2GatesChunkCumsumTest : public ::testing::TestWithParam<int> {};

TEST_P(Hgrn2GatesChunkCumsumTest, EqualsGatesThenCumsumBitwise) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  TestPack tp;
  const PackView pack = tp.View();
  const int rows = tp.rows(), dim = GetParam();
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::uniform_real_distribution<float> ud(0.0f, 0.99f);
  std::vector<float> qfi(static_cast<size_t>(rows) * 3 * dim), lb(dim);
  for (auto& x : qfi) x = nd(rng);
  for (auto& x : lb) x = ud(rng);
  // Values bf16 holds exactly: the bf16 run reads qfi as bf16 (the projection's output in
  // bf16 mode) and must see what the fp32 runs see.
  qfi = RoundedToBf16(qfi);
  Dev<float> dqfi(qfi), dlb(lb);
  Dev<uint16_t> dqfi16(RoundedBf16Bits(qfi));
  const size_t n = static_cast<size_t>(rows) * dim;
  for (const bool with_lb : {true, false}) {
    const float* lower = with_lb ? dlb.get() : nullptr;
    Dev<float> q0(n), k0(n), g0(n), v0(n), q1(n), k1(n), g1(n), v1(n), g2(n);
    Dev<uint16_t> q2(n), k2(n), v2(n);
    ASSERT_EQ(
        Hgrn2Gates(dqfi.get(), rows, dim, lower, q0.get(), k0.get(), g0.get(), v0.get(), nullptr),
        cudaSuccess);
    ASSERT_EQ(ChunkLocalCumsumPacked(g0.get(), pack, /*heads=*/1, dim, nullptr), cudaSuccess);
    ASSERT_EQ(Hgrn2GatesChunkCumsum(dqfi.get(), pack, dim, lower, q1.get(), k1.get(), g1.get(),
                                    v1.get(), Act::kF32, nullptr),
              cudaSuccess);
    ASSERT_EQ(Hgrn2GatesChunkCumsum(dqfi16.get(), pack, dim, lower, q2.get(), k2.get(), g2.get(),
                                    v2.get(), Act::kBF16, nullptr),
              cudaSuccess);
    // q and v null (HGRN2's bf16 packs, whose chunk kernels read them in place): the same
    // k and g bits, and neither q nor v written (they keep their poison). Only one of them
    // null is refused.
    Dev<uint16_t> q3(n), k3(n), v3(n);
    Dev<float> g3(n);
    ASSERT_EQ(Hgrn2GatesChunkCumsum(dqfi16.get(), pack, dim, lower, nullptr, k3.get(), g3.get(),
                                    nullptr, Act::kBF16, nullptr),
              cudaSuccess);
    EXPECT_EQ(Hgrn2GatesChunkCumsum(dqfi16.get(), pack, dim, lower, q3.get(), k3.get(), g3.get(),
                                    nullptr, Act::kBF16, nullptr),
              cudaErrorInvalidValue);
    SCOPED_TRACE(with_lb ? "lower bounds" : "no lower bounds");
    ExpectSameGates(q0, k0, g0, v0, q1, k1, g1, v1);
    ExpectFastBf16Gates(q1, k1, g1, v1, q2, k2, g2, v2);
    EXPECT_EQ(q3.Get(), std::vector<uint16_t>(n, 0xffff));
    EXPECT_EQ(k3.Get(), k2.Get());
    EXPECT_TRUE(BitwiseEqual(g3.Get(), g2.Get()));
    EXPECT_EQ(v3.Get(), std::vector<uint16_t>(n, 0xffff));
  }
}

INSTANTIATE_TEST_SUITE_P(Dims, Hgrn2GatesChunkCumsumTest, ::testing::Values(320, 161));

struct GlaCase {
  int heads, kv_heads, dk, dv;
  bool clamp;
};

void PrintTo(const GlaCase& c, std::ostream* os) {
  *os << "h" << c.heads << "_kv" << c.kv_heads << "_dk" << c.dk << "_dv" << c.dv
      << (c.clamp ? "_clamp" : "");
}

// A GLA case's projection layout (q | k | v | 16 spare columns a row) and random proj, gk
// and gk bias for `rows` rows.
struct GlaInputs {
  int64_t key_dim, k_off, v_off, ld, kvk;
  std::vector<float> proj, gk, bias;
};

GlaInputs RandomGlaInputs(const GlaCase& c, int rows, unsigned seed) {
  GlaInputs in;
  const int group = c.heads / c.kv_heads;
  in.key_dim = static_cast<int64_t>(c.heads) * c.dk;
  in.k_off = in.key_dim;
  in.v_off = in.k_off + in.key_dim / group;
  in.ld = in.v_off + static_cast<int64_t>(c.heads) * c.dv / group + 16;
  in.kvk = static_cast<int64_t>(c.kv_heads) * c.dk;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  in.proj.resize(static_cast<size_t>(rows) * in.ld);
  in.gk.resize(rows * in.kvk);
  in.bias.resize(in.kvk);
  for (auto& x : in.proj) x = nd(rng);
  for (auto& x : in.gk) x = nd(rng);
  for (auto& x : in.bias) x = nd(rng);
  return in;
}

class GlaGatesChunkCumsumTest : public ::testing::TestWithParam<GlaCase> {};

TEST_P(GlaGatesChunkCumsumTest, EqualsBiasGatesThenCumsumBitwise) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const GlaCase c = GetParam();
  TestPack tp;
  const PackView pack = tp.View();
  const int rows = tp.rows();
  const GlaInputs in = RandomGlaInputs(c, rows, c.dk + c.dv + c.clamp);
  const int64_t key_dim = in.key_dim, k_off = in.k_off, v_off = in.v_off, ld = in.ld;
  const int64_t kvk = in.kvk;
  const std::vector<float>& gk = in.gk;
  Dev<float> dproj(in.proj), dgk0(gk), dgk1(gk), dbias(in.bias);
  const size_t nqk = static_cast<size_t>(rows) * key_dim;
  const size_t nv = static_cast<size_t>(rows) * c.heads * c.dv;
  Dev<float> q0(nqk), k0(nqk), g0(nqk), v0(nv), q1(nqk), k1(nqk), g1(nqk), v1(nv);
  const float clamp_min = -0.05f;
  ASSERT_EQ(AddBias(dgk0.get(), kvk, dbias.get(), rows, static_cast<int>(kvk), nullptr),
            cudaSuccess);
  ASSERT_EQ(
      GlaGates(dproj.get(), ld, k_off, v_off, dgk0.get(), rows, c.heads, c.kv_heads, c.dk, c.dv,
               16.0f, c.clamp, clamp_min, q0.get(), k0.get(), g0.get(), v0.get(), nullptr),
      cudaSuccess);
  ASSERT_EQ(ChunkLocalCumsumPacked(g0.get(), pack, c.heads, c.dk, nullptr), cudaSuccess);
  ASSERT_EQ(GlaGatesChunkCumsum(dproj.get(), Act::kF32, ld, k_off, v_off, dgk1.get(), dbias.get(),
                                pack, c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, clamp_min,
                                q1.get(), k1.get(), g1.get(), v1.get(), Act::kF32, nullptr),
            cudaSuccess);
  ExpectSameGates(q0, k0, g0, v0, q1, k1, g1, v1);
  EXPECT_TRUE(BitwiseEqual(dgk1.Get(), gk));  // gk is only read
  Dev<float> g2(nqk);
  Dev<uint16_t> q2(nqk), k2(nqk), v2(nv);
  ASSERT_EQ(GlaGatesChunkCumsum(dproj.get(), Act::kF32, ld, k_off, v_off, dgk1.get(), dbias.get(),
                                pack, c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, clamp_min,
                                q2.get(), k2.get(), g2.get(), v2.get(), Act::kBF16, nullptr),
            cudaSuccess);
  ExpectFastBf16Gates(q1, k1, g1, v1, q2, k2, g2, v2);

  // q and k null (the chunk kernels read them in place): the same g and v; and with v
  // null too, the decays alone (GlaDecayChunkCumsumKernel: rows in flight, then the sum
  // down the rows) the same g. One of q and k null alone is refused.
  Dev<float> g3(nqk), v3(nv), g4(nqk);
  ASSERT_EQ(GlaGatesChunkCumsum(dproj.get(), Act::kF32, ld, k_off, v_off, dgk1.get(), dbias.get(),
                                pack, c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, clamp_min,
                                nullptr, nullptr, g3.get(), v3.get(), Act::kF32, nullptr),
            cudaSuccess);
  ASSERT_EQ(GlaGatesChunkCumsum(dproj.get(), Act::kF32, ld, k_off, v_off, dgk1.get(), dbias.get(),
                                pack, c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, clamp_min,
                                nullptr, nullptr, g4.get(), nullptr, Act::kF32, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(BitwiseEqual(g3.Get(), g1.Get())) << "g with q and k in place";
  EXPECT_TRUE(BitwiseEqual(v3.Get(), v1.Get())) << "v with q and k in place";
  EXPECT_TRUE(BitwiseEqual(g4.Get(), g1.Get())) << "g alone";
  EXPECT_EQ(GlaGatesChunkCumsum(dproj.get(), Act::kF32, ld, k_off, v_off, dgk1.get(), dbias.get(),
                                pack, c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, clamp_min,
                                q1.get(), nullptr, g3.get(), v3.get(), Act::kF32, nullptr),
            cudaErrorInvalidValue);
}

// GLA's bf16 packs hold proj as bf16 (the projection GEMM's output rounded): the kernel
// reading those bf16 values gives the bits it gives for fp32 proj holding the same values,
// and with v null (the chunk kernels then read v in place) writes no v.
TEST_P(GlaGatesChunkCumsumTest, Bf16ProjGivesTheBitsOfTheSameValuesInFp32) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const GlaCase c = GetParam();
  TestPack tp;
  const PackView pack = tp.View();
  const int rows = tp.rows();
  const GlaInputs in = RandomGlaInputs(c, rows, c.dk * 3 + c.dv + c.clamp);
  const int64_t key_dim = in.key_dim, k_off = in.k_off, v_off = in.v_off, ld = in.ld;
  const std::vector<float> proj = RoundedToBf16(in.proj);
  Dev<float> dproj(proj), dgk(in.gk), dbias(in.bias);
  Dev<uint16_t> dproj16(RoundedBf16Bits(proj));
  const size_t nqk = static_cast<size_t>(rows) * key_dim;
  const size_t nv = static_cast<size_t>(rows) * c.heads * c.dv;
  Dev<uint16_t> q0(nqk), k0(nqk), v0(nv), q1(nqk), k1(nqk), v1(nv), q2(nqk), k2(nqk), v2(nv);
  Dev<float> g0(nqk), g1(nqk), g2(nqk);
  auto run = [&](const void* p, Act proj_act, Dev<uint16_t>& q, Dev<uint16_t>& k, Dev<float>& g,
                 uint16_t* v) {
    ASSERT_EQ(GlaGatesChunkCumsum(p, proj_act, ld, k_off, v_off, dgk.get(), dbias.get(), pack,
                                  c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, -0.05f, q.get(),
                                  k.get(), g.get(), v, Act::kBF16, nullptr),
              cudaSuccess);
  };
  run(dproj.get(), Act::kF32, q0, k0, g0, v0.get());
  run(dproj16.get(), Act::kBF16, q1, k1, g1, v1.get());
  run(dproj16.get(), Act::kBF16, q2, k2, g2, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(q1.Get(), q0.Get());
  EXPECT_EQ(k1.Get(), k0.Get());
  EXPECT_TRUE(BitwiseEqual(g1.Get(), g0.Get()));
  EXPECT_EQ(v1.Get(), v0.Get());
  EXPECT_EQ(q2.Get(), q0.Get());
  EXPECT_EQ(k2.Get(), k0.Get());
  EXPECT_TRUE(BitwiseEqual(g2.Get(), g0.Get()));
  EXPECT_EQ(v2.Get(), std::vector<uint16_t>(nv, 0xffff));
  // bf16 proj with fp32 outputs is refused.
  Dev<float> qf(nqk), kf(nqk), gf(nqk), vf(nv);
  EXPECT_EQ(GlaGatesChunkCumsum(dproj16.get(), Act::kBF16, ld, k_off, v_off, dgk.get(), dbias.get(),
                                pack, c.heads, c.kv_heads, c.dk, c.dv, 16.0f, c.clamp, -0.05f,
                                qf.get(), kf.get(), gf.get(), vf.get(), Act::kF32, nullptr),
            cudaErrorInvalidValue);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GlaGatesChunkCumsumTest,
                         ::testing::Values(GlaCase{4, 4, 256, 512, false},
                                           GlaCase{4, 2, 64, 96, true},
                                           GlaCase{2, 1, 160, 32, false},
                                           GlaCase{3, 3, 37, 40, true}));  // odd dk

}  // namespace
}  // namespace hgeval::cuda
