// RopeKvWrite (RoPE and the KV-cache write in one kernel) against ApplyRope followed by
// KvWrite: q in qkv, the caches (rows written and rows left alone) and the k of a row
// without a cache bitwise equal, for both activation types, GQA, head widths on the
// 16-byte vector path and off it, a misaligned qkv, and positions near 64K.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <sstream>
#include <vector>

#include "engine/cuda/kernels.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"

namespace hgeval::cuda {
namespace {

struct RopeKvCase {
  Act act;
  int heads, kv_heads, head_dim;
  double theta;
  int qkv_offset;  // elements: 1 puts qkv off 16-byte alignment (the element path)
};

void PrintTo(const RopeKvCase& c, std::ostream* os) {
  *os << (c.act == Act::kF32 ? "f32" : "bf16") << "_h" << c.heads << "_kv" << c.kv_heads << "_d"
      << c.head_dim << "_theta" << static_cast<int64_t>(c.theta) << "_off" << c.qkv_offset;
}

class RopeKvWriteTest : public ::testing::TestWithParam<RopeKvCase> {};

// Three sequences: two with caches, one without (a decode step's padding rows): rows
// [0, 128), [128, 278), [278, 300). The second sits near position 64K; its cache pointer
// is moved back by its first position (as the layer-major path moves a one-layer cache),
// so that a cache of 160 positions holds its rows.
constexpr int kRows = 300, kLayers = 3, kLayer = 1;
constexpr int kSeqRow0[] = {0, 128, 278, 300};
constexpr int64_t kSeqPos0[] = {0, 65536 - 160, 5};
constexpr int64_t kCaps[] = {192, 160, 0};

// One side of the comparison: its qkv (qkv_offset elements into the buffer) and caches,
// poisoned alike, so rows neither side writes must stay equal too.
struct Side {
  Side(size_t qkv_bytes, size_t cache0_bytes, size_t cache1_bytes)
      : qkv(qkv_bytes), cache0(cache0_bytes), cache1(cache1_bytes), ptrs(3) {}
  Dev<uint8_t> qkv, cache0, cache1;
  Dev<void*> ptrs;
};

TEST_P(RopeKvWriteTest, GivesApplyRopeThenKvWritesBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const RopeKvCase c = GetParam();
  const size_t es = ActSize(c.act);
  const int64_t row_width = static_cast<int64_t>(c.heads + 2 * c.kv_heads) * c.head_dim;
  const int64_t kv_width = static_cast<int64_t>(c.kv_heads) * c.head_dim;
  const size_t qkv_elems = static_cast<size_t>(kRows) * row_width;

  std::mt19937 rng(c.head_dim * 31 + c.heads + static_cast<int>(c.act));
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> values(qkv_elems);
  for (float& v : values) v = nd(rng);
  std::vector<uint8_t> qkv(qkv_elems * es);
  if (c.act == Act::kF32) {
    std::memcpy(qkv.data(), values.data(), qkv.size());
  } else {
    std::memcpy(qkv.data(), RoundedBf16Bits(values).data(), qkv.size());
  }
  std::vector<int64_t> positions(kRows);
  std::vector<int32_t> row_seq(kRows);
  for (int s = 0; s < 3; ++s) {
    for (int r = kSeqRow0[s]; r < kSeqRow0[s + 1]; ++r) {
      row_seq[r] = s;
      positions[r] = kSeqPos0[s] + (r - kSeqRow0[s]);
    }
  }
  Dev<int64_t> d_positions(positions), d_caps(std::vector<int64_t>(kCaps, kCaps + 3));
  Dev<int32_t> d_row_seq(row_seq);

  const size_t cache_bytes[2] = {kLayers * 2 * kCaps[0] * kv_width * es,
                                 kLayers * 2 * kCaps[1] * kv_width * es};
  Side ref((qkv_elems + c.qkv_offset) * es, cache_bytes[0], cache_bytes[1]);
  Side fused((qkv_elems + c.qkv_offset) * es, cache_bytes[0], cache_bytes[1]);
  for (Side* side : {&ref, &fused}) {
    ASSERT_EQ(cudaMemcpy(side->qkv.get() + c.qkv_offset * es, qkv.data(), qkv.size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    const uintptr_t moved = reinterpret_cast<uintptr_t>(side->cache1.get()) -
                            static_cast<uintptr_t>(kSeqPos0[1] * kv_width * es);
    side->ptrs.Put({side->cache0.get(), reinterpret_cast<void*>(moved), nullptr});
  }
  void* ref_qkv = ref.qkv.get() + c.qkv_offset * es;
  void* fused_qkv = fused.qkv.get() + c.qkv_offset * es;
  ASSERT_EQ(ApplyRope(ref_qkv, c.act, kRows, c.heads, c.kv_heads, c.head_dim, d_positions.get(),
                      c.theta, nullptr),
            cudaSuccess);
  ASSERT_EQ(KvWrite(ref_qkv, c.act, kRows, d_row_seq.get(), c.heads, c.kv_heads, c.head_dim,
                    ref.ptrs.get(), d_caps.get(), d_positions.get(), kLayer, nullptr),
            cudaSuccess);
  ASSERT_EQ(RopeKvWrite(fused_qkv, c.act, kRows, c.heads, c.kv_heads, c.head_dim, d_positions.get(),
                        c.theta, d_row_seq.get(), fused.ptrs.get(), d_caps.get(), kLayer, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const std::vector<uint8_t> ref_rows = ref.qkv.Get(), fused_rows = fused.qkv.Get();
  const size_t row_bytes = row_width * es, q_bytes = c.heads * c.head_dim * es;
  int differing_rows = 0;
  for (int r = 0; r < kRows; ++r) {
    const size_t at = (c.qkv_offset + static_cast<size_t>(r) * row_width) * es;
    // q always; the whole row where no cache takes k (v is never written).
    const size_t bytes = row_seq[r] == 2 ? row_bytes : q_bytes;
    if (std::memcmp(ref_rows.data() + at, fused_rows.data() + at, bytes) != 0) ++differing_rows;
  }
  EXPECT_EQ(differing_rows, 0) << "rows whose q (or uncached k) differ";
  // Row 1 (position 1; position 0 rotates by nothing) was rotated, so the test would
  // notice a kernel that did nothing.
  EXPECT_NE(std::memcmp(ref_rows.data() + (c.qkv_offset + row_width) * es,
                        qkv.data() + row_width * es, q_bytes),
            0);
  const std::vector<uint8_t> ref_cache0 = ref.cache0.Get();
  EXPECT_NE(ref_cache0, std::vector<uint8_t>(ref_cache0.size(), 0xff)) << "nothing written";
  EXPECT_TRUE(ref_cache0 == fused.cache0.Get()) << "cache of sequence 0";
  EXPECT_TRUE(ref.cache1.Get() == fused.cache1.Get()) << "cache of sequence 1";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeKvWriteTest,
    ::testing::Values(RopeKvCase{Act::kBF16, 16, 16, 128, 10000.0, 0},  // LLaMA-1.3B
                      RopeKvCase{Act::kF32, 16, 16, 128, 10000.0, 0},
                      RopeKvCase{Act::kBF16, 8, 2, 64, 500000.0, 0},  // GQA
                      RopeKvCase{Act::kF32, 8, 2, 64, 500000.0, 0},
                      RopeKvCase{Act::kBF16, 4, 4, 32, 10000.0, 0},
                      RopeKvCase{Act::kBF16, 6, 3, 48, 10000.0, 0},  // bf16 vectors of 8
                      RopeKvCase{Act::kF32, 6, 3, 20, 10000.0, 0},   // off the vector path
                      RopeKvCase{Act::kBF16, 6, 3, 20, 10000.0, 0},
                      RopeKvCase{Act::kBF16, 16, 16, 128, 10000.0, 1},  // misaligned qkv
                      RopeKvCase{Act::kF32, 8, 2, 64, 10000.0, 1}),
    [](const ::testing::TestParamInfo<RopeKvCase>& info) {
      std::ostringstream os;
      PrintTo(info.param, &os);
      return os.str();
    });

}  // namespace
}  // namespace hgeval::cuda
