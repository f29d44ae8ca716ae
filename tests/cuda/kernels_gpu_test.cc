// CUDA kernels against simple CPU references in double, on fresh random inputs, at the
// 1.3B head shapes the golden models do not reach (relative-error bounds for fp32 maths).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/decode_attention_plan.h"
#include "engine/cuda/flash_kernel_choice.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"
#include "tests/cuda/gla_reference.h"

namespace hgeval::cuda {

// gtest prints FlashKernel parameters by name (found by argument-dependent lookup, so
// outside the unnamed namespace).
void PrintTo(FlashKernel kernel, std::ostream* os) {
  *os << (kernel == FlashKernel::kWgmma ? "wgmma" : "mma.sync");
}

namespace {

struct GlaCase {
  int tokens, heads, dk, dv;
};

void PrintTo(const GlaCase& c, std::ostream* os) {
  *os << c.tokens << "x" << c.heads << "x" << c.dk << "x" << c.dv;
}

class ChunkGlaTest : public ::testing::TestWithParam<GlaCase> {};

TEST_P(ChunkGlaTest, MatchesNaiveRecurrence) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const GlaCase c = GetParam();
  std::mt19937 rng(c.tokens * 7 + c.dk);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-3.0f, 0.0f);
  const size_t nqk = static_cast<size_t>(c.tokens) * c.heads * c.dk;
  const size_t nv = static_cast<size_t>(c.tokens) * c.heads * c.dv;
  const size_t ns = static_cast<size_t>(c.heads) * c.dk * c.dv;
  std::vector<float> q(nqk), k(nqk), g(nqk), v(nv), s0(ns);
  for (auto& x : q) x = nd(rng);
  for (auto& x : k) x = nd(rng);
  // Log decays from strong to weak (exp in [0.05, 1]) so that long-range terms matter.
  for (auto& x : g) x = ud(rng) * (nd(rng) > 0 ? 1.0f : 0.01f);
  for (auto& x : v) x = nd(rng);
  for (auto& x : s0) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));

  // Reference (double).
  std::vector<double> S(s0.begin(), s0.end()), o_ref(nv);
  GlaReference(q, k, g, v, c.heads, c.dk, c.dv, 0, c.tokens, scale, S, o_ref);

  // Chunkwise (prefill) form.
  {
    Dev<float> dq(q), dk(k), dg(g), dv(v), ds(s0), dout(nv);
    Dev<float> dchunks(static_cast<size_t>((c.tokens + kGlaChunk - 1) / kGlaChunk) * ns);
    cudaStream_t s = nullptr;
    ASSERT_EQ(ChunkLocalCumsum(dg.get(), c.tokens, c.heads, c.dk, s), cudaSuccess);
    ASSERT_EQ(ChunkGlaStates(dk.get(), dg.get(), dv.get(), c.tokens, c.heads, c.dk, c.dv, ds.get(),
                             dchunks.get(), s),
              cudaSuccess);
    ASSERT_EQ(ChunkGlaOutput(dq.get(), dk.get(), dg.get(), dv.get(), dchunks.get(), c.tokens,
                             c.heads, c.dk, c.dv, scale, dout.get(), s),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(RelErr(dout.Get(), o_ref), 1e-5) << "output";
    EXPECT_LT(RelErr(ds.Get(), S), 1e-5) << "final state";
  }
  // One-step (decode) form, token by token, with a per-row state pointer.
  if (c.tokens <= 65) {
    Dev<float> ds(s0), dout(static_cast<size_t>(c.heads) * c.dv);
    float* host_ptr[1] = {ds.get()};
    Dev<float*> dptr(std::vector<float*>(host_ptr, host_ptr + 1));
    std::vector<float> o_all;
    for (int t = 0; t < c.tokens; ++t) {
      const size_t qo = static_cast<size_t>(t) * c.heads * c.dk;
      const size_t vo = static_cast<size_t>(t) * c.heads * c.dv;
      Dev<float> dq(std::vector<float>(q.begin() + qo, q.begin() + qo + c.heads * c.dk));
      Dev<float> dk(std::vector<float>(k.begin() + qo, k.begin() + qo + c.heads * c.dk));
      Dev<float> dg(std::vector<float>(g.begin() + qo, g.begin() + qo + c.heads * c.dk));
      Dev<float> dv(std::vector<float>(v.begin() + vo, v.begin() + vo + c.heads * c.dv));
      ASSERT_EQ(RecurrentGlaStep(dq.get(), dk.get(), dg.get(), dv.get(), 1, c.heads, c.dk, c.dv,
                                 scale, dptr.get(), 0, dout.get(), nullptr),
                cudaSuccess);
      const auto o = dout.Get();
      o_all.insert(o_all.end(), o.begin(), o.end());
    }
    EXPECT_LT(RelErr(o_all, o_ref), 1e-5) << "decode output";
    EXPECT_LT(RelErr(ds.Get(), S), 1e-5) << "decode state";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChunkGlaTest,
                         ::testing::Values(GlaCase{1, 2, 128, 128}, GlaCase{63, 2, 128, 128},
                                           GlaCase{64, 1, 128, 128}, GlaCase{65, 2, 128, 128},
                                           GlaCase{300, 2, 128, 128}, GlaCase{130, 2, 256, 80},
                                           GlaCase{65, 3, 16, 32}, GlaCase{200, 1, 40, 200}));

// Softmax attention in double of one query q[hd] (scaled dot products) over keys
// [0, nkeys) of K/V planes [keys][width], the KV head's values at columns [col, col + hd);
// the hd outputs go to out.
void AttendInDouble(const float* q, const float* kplane, const float* vplane, int64_t width,
                    int64_t col, int hd, int64_t nkeys, double scale, double* out) {
  std::vector<double> s(nkeys);
  double mx = -INFINITY;
  for (int64_t j = 0; j < nkeys; ++j) {
    double dot = 0;
    for (int d = 0; d < hd; ++d) dot += double(q[d]) * kplane[j * width + col + d];
    s[j] = dot * scale;
    mx = std::max(mx, s[j]);
  }
  double den = 0;
  for (int64_t j = 0; j < nkeys; ++j) den += std::exp(s[j] - mx);
  for (int d = 0; d < hd; ++d) {
    double num = 0;
    for (int64_t j = 0; j < nkeys; ++j) num += std::exp(s[j] - mx) * vplane[j * width + col + d];
    out[d] = num / den;
  }
}

// Decode attention over KV caches: rows at different positions (one key, a share
// boundary, thousands of keys), a padding row (null cache), GQA, head dims on the
// vectorised kernel (64, 128, 256) and off it (80), fp32 and bf16 caches. The
// reference reads the same (rounded) values in double.
struct DecodeCase {
  int heads, kv_heads, head_dim;
  bool bf16;
};

void PrintTo(const DecodeCase& c, std::ostream* os) {
  *os << c.heads << "/" << c.kv_heads << "x" << c.head_dim << (c.bf16 ? " bf16" : " fp32");
}

uint16_t ToBf16Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float FromBf16Bits(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// One decode attention call: rows' queries in qkv ([rows, (H + 2 Hkv) hd], floats as the
// kernel sees them), row r attending to caches[r] (nullptr: a padding row) of caps[r]
// positions a plane, `layers` layers, at positions[r]; returns o [rows, H hd] as floats
// (zero where not written).
struct DecodeCall {
  DecodeCase shape;
  int layers = 2, layer = 1;
  std::vector<float> qkv;
  std::vector<const std::vector<float>*> caches;
  std::vector<int64_t> caps, positions;
  // Each row's cache lineage (empty: nothing shared), and what the plan made of them.
  std::vector<KvLineage> lineages;
  mutable int shared_items = 0;
};

std::vector<float> RunDecodeAttention(const DecodeCall& call) {
  const DecodeCase& c = call.shape;
  const int H = c.heads, Hkv = c.kv_heads, hd = c.head_dim;
  const int rows = static_cast<int>(call.positions.size());
  const size_t elem = c.bf16 ? 2 : 4;
  auto upload = [&](const std::vector<float>& host) {
    void* dev = nullptr;
    EXPECT_EQ(cudaMalloc(&dev, host.size() * elem), cudaSuccess);
    if (c.bf16) {
      std::vector<uint16_t> bits(host.size());
      for (size_t i = 0; i < host.size(); ++i) bits[i] = ToBf16Bits(host[i]);
      EXPECT_EQ(cudaMemcpy(dev, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    } else {
      EXPECT_EQ(cudaMemcpy(dev, host.data(), host.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    }
    return dev;
  };
  void* dqkv = upload(call.qkv);
  std::vector<void*> cache_ptrs(rows);
  for (int r = 0; r < rows; ++r) {
    cache_ptrs[r] = call.caches[r] == nullptr ? nullptr : upload(*call.caches[r]);
  }
  Dev<void*> dptrs(cache_ptrs);
  Dev<int64_t> dcaps(call.caps), dpos(call.positions);
  std::vector<DecodeAttentionRow> plan_rows;
  int64_t max_windows = 1;
  for (int r = 0; r < rows; ++r) {
    if (call.caches[r] == nullptr) continue;
    const int64_t keys = call.positions[r] + 1;
    plan_rows.push_back({r, keys, call.lineages.empty() ? nullptr : &call.lineages[r]});
    max_windows = std::max(max_windows, DecodeWindows(keys));
  }
  std::vector<DecodeAttentionItem> items;
  PlanDecodeAttention(plan_rows, DecodeAttentionShareRows(c.bf16 ? Act::kBF16 : Act::kF32, hd),
                      &items);
  call.shared_items = static_cast<int>(
      std::count_if(items.begin(), items.end(), [](const auto& i) { return i.count > 1; }));
  std::vector<uint8_t> plan(DecodeAttentionPlanBytes(items.size()));
  WriteDecodeAttentionPlan(items, plan.data());
  Dev<uint8_t> dplan(plan);
  const int max_items = rows * static_cast<int>(max_windows);
  Dev<float> partial(DecodeAttentionScratchFloats(rows, H, hd, max_windows));
  const size_t out_n = static_cast<size_t>(rows) * H * hd;
  void* dout = nullptr;
  EXPECT_EQ(cudaMalloc(&dout, out_n * elem), cudaSuccess);
  EXPECT_EQ(cudaMemset(dout, 0, out_n * elem), cudaSuccess);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Twice: a second call on the same scratch gives the same bits.
  std::vector<float> out(out_n);
  for (int call_index = 0; call_index < 2; ++call_index) {
    EXPECT_EQ(DecodeAttention(dqkv, c.bf16 ? Act::kBF16 : Act::kF32, rows, H, Hkv, hd, dptrs.get(),
                              dcaps.get(), dpos.get(), call.layer, scale, dplan.get(), max_items,
                              static_cast<int>(max_windows), partial.get(), dout, nullptr),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(out_n);
    if (c.bf16) {
      std::vector<uint16_t> bits(out_n);
      EXPECT_EQ(cudaMemcpy(bits.data(), dout, out_n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < out_n; ++i) got[i] = FromBf16Bits(bits[i]);
    } else {
      EXPECT_EQ(cudaMemcpy(got.data(), dout, out_n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    if (call_index == 1) {
      EXPECT_EQ(std::memcmp(got.data(), out.data(), out_n * 4), 0) << "second call differs";
    }
    out = std::move(got);
  }
  cudaFree(dqkv);
  cudaFree(dout);
  for (void* p : cache_ptrs) cudaFree(p);
  return out;
}

// A decode call of random rows at `positions` (cache data of sd 2, queries of sd 1, both
// as the kernel sees them); padding_row gets no cache.
DecodeCall RandomDecodeCall(const DecodeCase& c, const std::vector<int64_t>& positions,
                            int padding_row, int layers, uint32_t seed,
                            std::vector<std::vector<float>>* caches) {
  const int rows = static_cast<int>(positions.size());
  const int64_t width = static_cast<int64_t>(c.kv_heads) * c.head_dim;
  const int64_t qkv_width = (c.heads + 2 * c.kv_heads) * c.head_dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto draw = [&](float sd) {
    const float x = sd * nd(rng);
    return c.bf16 ? FromBf16Bits(ToBf16Bits(x)) : x;
  };
  DecodeCall call;
  call.shape = c;
  call.layers = layers;
  call.layer = layers - 1;
  call.positions = positions;
  call.qkv.resize(static_cast<size_t>(rows) * qkv_width);
  for (auto& x : call.qkv) x = draw(1.0f);
  caches->assign(rows, {});
  call.caps.resize(rows);
  for (int r = 0; r < rows; ++r) {
    call.caps[r] = (positions[r] + 1 + 255) / 256 * 256;
    if (r == padding_row) {
      call.caches.push_back(nullptr);
      continue;
    }
    (*caches)[r].resize(static_cast<size_t>(layers) * 2 * call.caps[r] * width);
    for (auto& x : (*caches)[r]) x = draw(2.0f);
    call.caches.push_back(&(*caches)[r]);
  }
  return call;
}

// Each row's output against softmax attention in double; a padding row stays zero.
void ExpectMatchesDouble(const DecodeCall& call, const std::vector<float>& out) {
  const DecodeCase& c = call.shape;
  const int H = c.heads, Hkv = c.kv_heads, hd = c.head_dim;
  const int64_t width = static_cast<int64_t>(Hkv) * hd, qkv_width = (H + 2 * Hkv) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (size_t r = 0; r < call.positions.size(); ++r) {
    std::vector<float> got(out.begin() + static_cast<int64_t>(r) * H * hd,
                           out.begin() + static_cast<int64_t>(r + 1) * H * hd);
    if (call.caches[r] == nullptr) {
      for (float x : got) EXPECT_EQ(x, 0.0f) << "padding row written";
      continue;
    }
    std::vector<double> want(static_cast<size_t>(H) * hd);
    const int64_t nkeys = call.positions[r] + 1, cap = call.caps[r];
    for (int h = 0; h < H; ++h) {
      const int hk = h / (H / Hkv);
      const float* q = call.qkv.data() + r * qkv_width + h * hd;
      const float* kplane =
          call.caches[r]->data() + (static_cast<int64_t>(call.layer) * 2) * cap * width;
      AttendInDouble(q, kplane, kplane + cap * width, width, hk * hd, hd, nkeys, scale,
                     want.data() + static_cast<size_t>(h) * hd);
    }
    // bf16: the output's own rounding (2^-9 relative) dominates.
    EXPECT_LT(RelErr(got, want), c.bf16 ? 4e-3 : 1e-4)
        << "row " << r << " at " << call.positions[r];
  }
}

class DecodeAttentionTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeAttentionTest, MatchesSoftmaxAttentionInDouble) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  std::vector<std::vector<float>> caches;
  // Row 3 is a decode step's unused row: null cache, output untouched.
  const DecodeCall call =
      RandomDecodeCall(GetParam(), {0, 4099, 36, 1000, 127, 128, 5000}, 3, 2, 11, &caches);
  ExpectMatchesDouble(call, RunDecodeAttention(call));
}

// LLaMA-1.3B's heads (16 x 128, MHA) at 1 key, 1K keys and past 16K (67 windows of
// kDecodeWindowKeys), against double; and the long row decoded alone equals,
// bit for bit, the same row among short rows and padding (the NIAH grid's steps mix
// 1K-16K contexts).
class DecodeAttentionLongRowTest : public ::testing::TestWithParam<bool> {};

TEST_P(DecodeAttentionLongRowTest, MatchesDoubleAndItsBatchChangesNoBit) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const DecodeCase shape{16, 16, 128, GetParam()};
  const int64_t long_position = 16999;
  std::vector<std::vector<float>> caches;
  const DecodeCall mixed =
      RandomDecodeCall(shape, {0, 1023, 40, long_position, 3, 1999, 700, 9}, 6, 1, 5, &caches);
  const std::vector<float> out = RunDecodeAttention(mixed);
  ExpectMatchesDouble(mixed, out);

  const int long_row = 3, H = shape.heads, hd = shape.head_dim;
  const int64_t qkv_width = (H + 2 * shape.kv_heads) * hd;
  DecodeCall alone;
  alone.shape = shape;
  alone.layers = mixed.layers;
  alone.layer = mixed.layer;
  alone.qkv.assign(mixed.qkv.begin() + long_row * qkv_width,
                   mixed.qkv.begin() + (long_row + 1) * qkv_width);
  alone.caches = {mixed.caches[long_row]};
  alone.caps = {mixed.caps[long_row]};
  alone.positions = {long_position};
  const std::vector<float> out_alone = RunDecodeAttention(alone);
  ASSERT_EQ(out_alone.size(), static_cast<size_t>(H) * hd);
  EXPECT_EQ(std::memcmp(out_alone.data(), out.data() + static_cast<int64_t>(long_row) * H * hd,
                        out_alone.size() * sizeof(float)),
            0)
      << "the long row alone differs from the same row among short rows";
}

// The NIAH grid's decode: rows forked from snapshots of one haystack cache hold its
// keys bit for bit the same up to their fork points, and the plan reads such a window once
// for up to kDecodeShareRows rows. Eleven forks of one root at fork points 0..5,000 (some
// equal, so a window has more sharers than an item takes) and a row of another root:
// every row matches double, and each row alone, planned with no lineage, gives the same
// bits as among its sharers.
class DecodeAttentionSharedWindowsTest : public ::testing::TestWithParam<bool> {};

TEST_P(DecodeAttentionSharedWindowsTest, SharersReadOnceAndEachRowKeepsItsBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const DecodeCase shape{16, 16, 128, GetParam()};
  const int H = shape.heads, hd = shape.head_dim;
  const int64_t width = static_cast<int64_t>(shape.kv_heads) * hd;
  const int64_t qkv_width = (H + 2 * shape.kv_heads) * hd;
  const std::vector<int64_t> fork_points = {5000, 5000, 0,    300,  4096, 4096, 4096,
                                            4096, 4096, 4096, 4096, 2500, 777};
  const std::vector<int64_t> positions = {5100, 5031, 40,   9000, 4200, 4100, 4096,
                                          6000, 4500, 4300, 4150, 2600, 800};
  const int rows = static_cast<int>(positions.size());
  const int other_root = rows - 1;
  std::vector<std::vector<float>> caches;
  DecodeCall shared = RandomDecodeCall(shape, positions, -1, 1, 23, &caches);
  // The root's keys: each fork's cache holds them up to its fork point (the layer planes
  // are [cap][width], so a prefix is the first rows of each plane).
  const KvLineage root = KvLineage::Fresh();
  const std::vector<float>& root_cache = caches[3];  // row 3 is the longest: cap ≥ 9,001
  const int64_t root_cap = shared.caps[3];
  for (int r = 0; r < rows; ++r) {
    shared.lineages.push_back(r == other_root ? KvLineage::Fresh() : root.ForkAt(fork_points[r]));
    if (r == other_root || r == 3) continue;
    for (int plane = 0; plane < 2 * shared.layers; ++plane) {
      std::copy_n(root_cache.begin() + plane * root_cap * width, fork_points[r] * width,
                  caches[r].begin() + plane * shared.caps[r] * width);
    }
  }
  shared.lineages[3] = root.ForkAt(9000);  // the root itself, past every fork point
  const std::vector<float> out = RunDecodeAttention(shared);
  EXPECT_GT(shared.shared_items, 10) << "the plan read no window once for several rows";
  ExpectMatchesDouble(shared, out);
  for (int r = 0; r < rows; ++r) {
    DecodeCall alone;
    alone.shape = shape;
    alone.layers = shared.layers;
    alone.layer = shared.layer;
    alone.qkv.assign(shared.qkv.begin() + r * qkv_width, shared.qkv.begin() + (r + 1) * qkv_width);
    alone.caches = {shared.caches[r]};
    alone.caps = {shared.caps[r]};
    alone.positions = {positions[r]};
    const std::vector<float> out_alone = RunDecodeAttention(alone);
    EXPECT_EQ(alone.shared_items, 0);
    ASSERT_EQ(out_alone.size(), static_cast<size_t>(H) * hd);
    EXPECT_EQ(std::memcmp(out_alone.data(), out.data() + static_cast<int64_t>(r) * H * hd,
                          out_alone.size() * sizeof(float)),
              0)
        << "row " << r << " (fork at " << fork_points[r] << ") alone differs from among sharers";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DecodeAttentionSharedWindowsTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "bf16" : "fp32");
                         });

INSTANTIATE_TEST_SUITE_P(Dtypes, DecodeAttentionLongRowTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "bf16" : "fp32");
                         });

INSTANTIATE_TEST_SUITE_P(Shapes, DecodeAttentionTest,
                         ::testing::Values(DecodeCase{16, 16, 128, true},
                                           DecodeCase{16, 16, 128, false},
                                           DecodeCase{32, 8, 64, true}, DecodeCase{8, 8, 256, true},
                                           DecodeCase{4, 2, 80, true}, DecodeCase{4, 2, 80, false},
                                           DecodeCase{4, 4, 16, true}));

// Flash prefill attention (bf16 tensor cores) against double, on each kernel: query rows
// at pos0 + i attending to a cache that already holds pos0 keys, row counts that leave
// partial query and key tiles (and warps or warpgroups of a tile with no rows), diagonals
// off the key-tile grid, GQA, the head dims each kernel supports. The wgmma kernel's cases
// skip where it cannot run (a build without sm_90a, a GPU other than compute capability
// 9.0).
struct FlashCase {
  int rows, heads, kv_heads, head_dim;
  int64_t pos0;
  FlashKernel kernel = FlashKernel::kMmaSync;
};

void PrintTo(const FlashCase& c, std::ostream* os) {
  PrintTo(c.kernel, os);
  *os << " " << c.rows << " rows at " << c.pos0 << ", " << c.heads << "/" << c.kv_heads << "x"
      << c.head_dim;
}

std::vector<uint16_t> Bf16Bits(const std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = ToBf16Bits(v[i]);
  return b;
}

std::vector<float> FromBits(const std::vector<uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = FromBf16Bits(bits[i]);
  return f;
}

bool KernelRuns(FlashKernel kernel, int head_dim) {
  return kernel == FlashKernel::kMmaSync || ChosenFlashKernel(head_dim) == kernel;
}

class FlashPrefillTest : public ::testing::TestWithParam<FlashCase> {};

TEST_P(FlashPrefillTest, MatchesCausalSoftmaxAttentionInDouble) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const FlashCase c = GetParam();
  if (!KernelRuns(c.kernel, c.head_dim)) GTEST_SKIP() << "the wgmma kernel cannot run here";
  const int H = c.heads, Hkv = c.kv_heads, hd = c.head_dim, rows = c.rows;
  const int64_t keys = c.pos0 + rows, width = static_cast<int64_t>(Hkv) * hd;
  const int64_t qkv_width = (H + 2 * Hkv) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::mt19937 rng(13 + rows);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto draw = [&](float sd) { return FromBf16Bits(ToBf16Bits(sd * nd(rng))); };
  std::vector<float> qkv(static_cast<size_t>(rows) * qkv_width), kplane(keys * width),
      vplane(keys * width);
  for (auto& x : qkv) x = draw(1.0f);
  for (auto& x : kplane) x = draw(2.0f);
  for (auto& x : vplane) x = draw(1.0f);
  Dev<uint16_t> dqkv(Bf16Bits(qkv)), dk(Bf16Bits(kplane)), dv(Bf16Bits(vplane));
  Dev<uint16_t> dout(static_cast<size_t>(rows) * H * hd);
  ASSERT_EQ(FlashPrefillAttentionWith(c.kernel, dqkv.get(), rows, H, Hkv, hd, dk.get(), dv.get(),
                                      c.pos0, scale, dout.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = FromBits(dout.Get());
  std::vector<double> want(got.size());
  for (int i = 0; i < rows; ++i) {
    const int64_t nkeys = c.pos0 + i + 1;
    for (int h = 0; h < H; ++h) {
      const int hk = h / (H / Hkv);
      const float* q = qkv.data() + i * qkv_width + h * hd;
      AttendInDouble(q, kplane.data(), vplane.data(), width, hk * hd, hd, nkeys, scale,
                     want.data() + (static_cast<size_t>(i) * H + h) * hd);
    }
  }
  // bf16 probabilities in the P V product and a bf16 output: ~2^-8 relative.
  EXPECT_LT(RelErr(got, want), 8e-3);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashPrefillTest,
                         ::testing::Values(FlashCase{300, 16, 16, 128, 0},
                                           FlashCase{129, 16, 16, 128, 1000},
                                           FlashCase{70, 8, 2, 64, 63}, FlashCase{200, 4, 4, 32, 5},
                                           FlashCase{1, 16, 16, 128, 4096},
                                           FlashCase{517, 8, 2, 128, 77},
                                           FlashCase{300, 16, 16, 128, 0, FlashKernel::kWgmma},
                                           FlashCase{129, 16, 16, 128, 1000, FlashKernel::kWgmma},
                                           FlashCase{1, 16, 16, 128, 4096, FlashKernel::kWgmma},
                                           FlashCase{1, 4, 4, 128, 0, FlashKernel::kWgmma},
                                           FlashCase{63, 4, 4, 128, 0, FlashKernel::kWgmma},
                                           FlashCase{65, 4, 1, 128, 1, FlashKernel::kWgmma},
                                           FlashCase{127, 4, 2, 128, 129, FlashKernel::kWgmma},
                                           FlashCase{257, 2, 2, 128, 127, FlashKernel::kWgmma},
                                           FlashCase{517, 8, 2, 128, 77, FlashKernel::kWgmma},
                                           FlashCase{600, 2, 1, 128, 2047, FlashKernel::kWgmma}));

// The packed form on each kernel (head dim 128, GQA 4/2): sequences with cached prefixes
// (query rows from position > 0, keys from their own caches) of lengths that leave
// partial tiles. Each sequence's output is bitwise the same packed with the others, in
// two orders, as packed alone, and matches attention in double.
class FlashPackedTest : public ::testing::TestWithParam<FlashKernel> {};

TEST_P(FlashPackedTest, EachSequenceEqualsItselfAloneAndDouble) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const FlashKernel kernel = GetParam();
  const int H = 4, Hkv = 2, hd = 128, layers = 2, layer = 1;
  if (!KernelRuns(kernel, hd)) GTEST_SKIP() << "the wgmma kernel cannot run here";
  const std::vector<int> lengths = {1, 130, 64, 257, 7};
  const std::vector<int64_t> pos0s = {0, 3, 200, 129, 1000};
  const int n = static_cast<int>(lengths.size());
  const int64_t width = static_cast<int64_t>(Hkv) * hd, qkv_width = (H + 2 * Hkv) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto draw = [&](float sd) { return FromBf16Bits(ToBf16Bits(sd * nd(rng))); };
  // Per sequence: its query rows and its cache [layers][2][cap][Hkv][hd] (cap a few
  // positions past its last key).
  std::vector<std::vector<float>> q(n), cache(n);
  std::vector<int64_t> caps(n);
  std::vector<std::unique_ptr<Dev<uint16_t>>> dcache(n);
  std::vector<void*> cache_ptrs(n);
  for (int s = 0; s < n; ++s) {
    caps[s] = pos0s[s] + lengths[s] + 5;
    q[s].resize(static_cast<size_t>(lengths[s]) * qkv_width);
    cache[s].resize(static_cast<size_t>(layers) * 2 * caps[s] * width);
    for (auto& x : q[s]) x = draw(1.0f);
    for (auto& x : cache[s]) x = draw(2.0f);
    dcache[s] = std::make_unique<Dev<uint16_t>>(Bf16Bits(cache[s]));
    cache_ptrs[s] = dcache[s]->get();
  }
  // Runs the sequences `order` as one pack; returns each one's output rows (bf16 bits).
  auto run = [&](const std::vector<int>& order) {
    std::vector<float> qkv;
    std::vector<int32_t> seq_row0 = {0}, tile_seq, tile_q0;
    std::vector<int64_t> positions, pack_caps;
    std::vector<void*> ptrs;
    for (int k = 0; k < static_cast<int>(order.size()); ++k) {
      const int s = order[k];
      qkv.insert(qkv.end(), q[s].begin(), q[s].end());
      for (int i = 0; i < lengths[s]; ++i) positions.push_back(pos0s[s] + i);
      for (int q0 = 0; q0 < lengths[s]; q0 += kFlashTileRows) {
        tile_seq.push_back(k);
        tile_q0.push_back(q0);
      }
      seq_row0.push_back(seq_row0.back() + lengths[s]);
      pack_caps.push_back(caps[s]);
      ptrs.push_back(cache_ptrs[s]);
    }
    const int rows = seq_row0.back();
    Dev<uint16_t> dqkv(Bf16Bits(qkv)), dout(static_cast<size_t>(rows) * H * hd);
    Dev<int32_t> drow0(seq_row0), dtseq(tile_seq), dtq0(tile_q0);
    Dev<int64_t> dpos(positions), dcaps(pack_caps);
    Dev<void*> dptrs(ptrs);
    PackView pack;
    pack.rows = rows;
    pack.num_seqs = static_cast<int>(order.size());
    pack.num_tiles = static_cast<int>(tile_seq.size());
    pack.seq_row0 = drow0.get();
    pack.tile_seq = dtseq.get();
    pack.tile_q0 = dtq0.get();
    EXPECT_EQ(
        FlashPrefillAttentionPackedWith(kernel, dqkv.get(), pack, H, Hkv, hd, dptrs.get(),
                                        dcaps.get(), dpos.get(), layer, scale, dout.get(), nullptr),
        cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> out = dout.Get();
    std::vector<std::vector<uint16_t>> per_seq(n);
    for (int k = 0; k < static_cast<int>(order.size()); ++k) {
      per_seq[order[k]].assign(out.begin() + static_cast<int64_t>(seq_row0[k]) * H * hd,
                               out.begin() + static_cast<int64_t>(seq_row0[k + 1]) * H * hd);
    }
    return per_seq;
  };
  const auto forward = run({0, 1, 2, 3, 4});
  const auto backward = run({4, 3, 2, 1, 0});
  for (int s = 0; s < n; ++s) {
    const auto alone = run({s});
    EXPECT_EQ(forward[s], alone[s]) << "sequence " << s << " packed first to last";
    EXPECT_EQ(backward[s], alone[s]) << "sequence " << s << " packed last to first";
    std::vector<double> want(alone[s].size());
    const float* kplane = cache[s].data() + static_cast<int64_t>(layer) * 2 * caps[s] * width;
    for (int i = 0; i < lengths[s]; ++i) {
      for (int h = 0; h < H; ++h) {
        AttendInDouble(q[s].data() + i * qkv_width + h * hd, kplane, kplane + caps[s] * width,
                       width, (h / (H / Hkv)) * hd, hd, pos0s[s] + i + 1, scale,
                       want.data() + (static_cast<size_t>(i) * H + h) * hd);
      }
    }
    EXPECT_LT(RelErr(FromBits(alone[s]), want), 8e-3) << "sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, FlashPackedTest,
                         ::testing::Values(FlashKernel::kMmaSync, FlashKernel::kWgmma),
                         [](const ::testing::TestParamInfo<FlashKernel>& info) {
                           return std::string(info.param == FlashKernel::kWgmma ? "wgmma"
                                                                                : "mma_sync");
                         });

}  // namespace
}  // namespace hgeval::cuda

namespace hgeval::cuda {
namespace {

// A pinned (batch-invariant) algorithm exists for TNL's vocabulary head, N = 64000 and
// K = 2048: the heuristic's candidates for M = 16384 all needed a workspace or split-K,
// so the first TNL-1B-shaped model failed to score; the same algorithm then serves every M.
TEST(PinnedGemmTest, FindsAnAlgorithmForA64000TokenHead) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int64_t n = 64000, k = 2048;
  void *w = nullptr, *a = nullptr, *c = nullptr;
  ASSERT_EQ(cudaMalloc(&w, n * k * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&a, 512 * k * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&c, 512 * n * 4), cudaSuccess);
  cudaMemset(w, 0, n * k * 2);
  cudaMemset(a, 0, 512 * k * 2);
  auto gemm = PinnedGemm::Create(16384);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  for (int64_t m : {512, 1, 37}) {
    const absl::Status s = (*gemm)->Run(nullptr, m, n, k, MatRef{a, Act::kBF16, k},
                                        MatRef{w, Act::kBF16, k}, c, Act::kF32, n);
    EXPECT_TRUE(s.ok()) << "M=" << m << ": " << s;
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(w);
  cudaFree(a);
  cudaFree(c);
}

// Random inputs of a gated RMSNorm: x and gate [rows, width], weights [w_size] near one.
struct NormInputs {
  std::vector<float> x, gate, w;
};
NormInputs RandomNormInputs(int rows, int width, int w_size, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  NormInputs in{std::vector<float>(rows * width), std::vector<float>(rows * width),
                std::vector<float>(w_size)};
  for (auto& v : in.x) v = nd(rng);
  for (auto& v : in.w) v = 1.0f + 0.1f * nd(rng);
  for (auto& v : in.gate) v = nd(rng);
  return in;
}

// RmsNormGated in double: per row and group of `group` channels, x * rstd * w[c % group],
// times swish(gate) or gate (`gate` null: no gate).
std::vector<double> GatedRmsNormInDouble(const NormInputs& in, const std::vector<float>* gate,
                                         bool silu, int rows, int width, int group) {
  std::vector<double> want(static_cast<size_t>(rows) * width);
  for (int r = 0; r < rows; ++r) {
    for (int g0 = 0; g0 < width; g0 += group) {
      const size_t row0 = static_cast<size_t>(r) * width + g0;
      double ss = 0;
      for (int c = 0; c < group; ++c) ss += double(in.x[row0 + c]) * in.x[row0 + c];
      const double rstd = 1.0 / std::sqrt(ss / group + 1e-5);
      for (int c = 0; c < group; ++c) {
        const double gv = gate != nullptr ? (*gate)[row0 + c] : 1.0;
        const double gated = gate == nullptr ? 1.0 : silu ? gv / (1.0 + std::exp(-gv)) : gv;
        want[row0 + c] = in.x[row0 + c] * rstd * in.w[c] * gated;
      }
    }
  }
  return want;
}

// bf16 mode holds the recurrences' o as bf16. Groups of 256-multiples (HGRN2's, TNL's and
// GLA's g_norm) run a block a row: against double, with fp32 and bf16 gates and outputs,
// and each row alone bitwise as among the others. Other groups take the generic kernel,
// where a bf16 x gives bitwise what an fp32 x holding the same values gives.
TEST(RmsNormGatedTest, Bf16InputMatchesDoubleAndARowAloneItsBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int rows = 5, width = 2048;
  NormInputs in = RandomNormInputs(rows, width, width, 11);
  in.x = RoundedToBf16(in.x);
  in.gate = RoundedToBf16(in.gate);
  const std::vector<float>& x = in.x;
  const std::vector<float>& gate = in.gate;
  Dev<float> dx(x), dgate(gate), dw(in.w);
  Dev<uint16_t> dx16(RoundedBf16Bits(x)), dgate16(RoundedBf16Bits(gate));
  for (const int group : {512, 2048}) {
    for (const int gated : {0, 1, 2}) {  // none, fp32 gate, bf16 gate
      const void* g = gated == 0   ? nullptr
                      : gated == 1 ? static_cast<const void*>(dgate.get())
                                   : static_cast<const void*>(dgate16.get());
      const Act gate_act = gated == 2 ? Act::kBF16 : Act::kF32;
      Dev<float> all(rows * width), alone(width);
      ASSERT_EQ(RmsNormGated(dx16.get(), width, g, width, dw.get(), 1e-5f, rows, width, group,
                             all.get(), Act::kF32, width, nullptr, true, gate_act, Act::kBF16),
                cudaSuccess);
      const int r = 3;
      const void* g_row =
          g == nullptr ? nullptr : static_cast<const char*>(g) + r * width * ActSize(gate_act);
      ASSERT_EQ(
          RmsNormGated(dx16.get() + r * width, width, g_row, width, dw.get(), 1e-5f, 1, width,
                       group, alone.get(), Act::kF32, width, nullptr, true, gate_act, Act::kBF16),
          cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = all.Get(), got_alone = alone.Get();
      EXPECT_EQ(std::memcmp(got.data() + r * width, got_alone.data(), width * sizeof(float)), 0)
          << "group " << group << ", gate " << gated;
      const std::vector<double> want =
          GatedRmsNormInDouble(in, gated == 0 ? nullptr : &gate, true, rows, width, group);
      EXPECT_LT(RelErr(got, want), 1e-6) << "group " << group << ", gate " << gated;
    }
  }
  // Group 160: the generic kernel, bf16 x bitwise as fp32 x (bf16 output).
  const int group = 160, narrow = 1920;
  Dev<uint16_t> out32(rows * narrow), out16(rows * narrow);
  ASSERT_EQ(RmsNormGated(dx.get(), width, nullptr, 0, dw.get(), 1e-5f, rows, narrow, group,
                         out32.get(), Act::kBF16, narrow, nullptr),
            cudaSuccess);
  ASSERT_EQ(RmsNormGated(dx16.get(), width, nullptr, 0, dw.get(), 1e-5f, rows, narrow, group,
                         out16.get(), Act::kBF16, narrow, nullptr, true, Act::kF32, Act::kBF16),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out32.Get(), out16.Get());
}

// The gated RMSNorm against double, and with its gate held as bf16 (TNL's and GLA's output
// gate straight from a bf16 projection) bitwise what the fp32 gate holding the same values
// gives: swish gate and plain gate, two groups a row.
TEST(RmsNormGatedTest, Bf16GateGivesTheFloatGateBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int rows = 5, width = 512, group = 256;
  NormInputs in = RandomNormInputs(rows, width, group, 7);
  in.gate = RoundedToBf16(in.gate);
  const std::vector<float>& gate = in.gate;
  Dev<float> dx(in.x), dgate(gate), dw(in.w);
  Dev<uint16_t> dgate16(RoundedBf16Bits(gate));
  for (const bool silu : {true, false}) {
    Dev<float> out32(rows * width), out16(rows * width);
    ASSERT_EQ(RmsNormGated(dx.get(), width, dgate.get(), width, dw.get(), 1e-5f, rows, width, group,
                           out32.get(), Act::kF32, width, nullptr, silu),
              cudaSuccess);
    ASSERT_EQ(RmsNormGated(dx.get(), width, dgate16.get(), width, dw.get(), 1e-5f, rows, width,
                           group, out16.get(), Act::kF32, width, nullptr, silu, Act::kBF16),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = out32.Get();
    EXPECT_EQ(got, out16.Get()) << (silu ? "swish gate" : "plain gate");
    const std::vector<double> want = GatedRmsNormInDouble(in, &gate, silu, rows, width, group);
    EXPECT_LT(RelErr(got, want), 1e-5) << (silu ? "swish gate" : "plain gate");
  }
}

}  // namespace
}  // namespace hgeval::cuda
