// The tensor-core chunkwise GLA kernels (bf16 mode, kernels_chunk_mma.h) against the
// float64 recurrence, on fresh random inputs shaped as HGRN2, GLA and TNL use them: single
// sequences across chunk boundaries, and ragged packs whose items continue from a state,
// fork it (final state elsewhere) or only read it; a packed sequence's output equals its
// output alone bitwise (batch invariance). Bound: bf16 operands, fp32 accumulation.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include "engine/cuda/kernels.h"
#include "engine/cuda/kernels_chunk_mma.h"
#include "engine/cuda/kernels_fused_gates.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"
#include "tests/cuda/gla_reference.h"

namespace hgeval::cuda {
namespace {

// ‖out − ref‖ / ‖ref‖ for bf16 operands with fp32 accumulation lands between 1e-3 and
// 1e-2 (docs/cuda.md, Precision modes).
constexpr double kBf16Bound = 1e-2;

enum class Decay {
  kData,      // GLA / HGRN2: per token and key, from strong (exp -3) to nearly none
  kStrong,    // HGRN2's small forget gates: down to exp(-20) per token
  kConstant,  // TNL: one log decay per head
  kSplit,     // kData on a head's first 32 keys, kStrong on the rest: the output kernel
              // factors the first key slice of a chunk and takes the per-key form for others
};

struct MmaCase {
  const char* family;
  int tokens, heads, dk, dv;
  Decay decay;
};

void PrintTo(const MmaCase& c, std::ostream* os) {
  *os << c.family << "_" << c.tokens << "x" << c.heads << "x" << c.dk << "x" << c.dv << "_d"
      << static_cast<int>(c.decay);
}

struct Inputs {
  int rows, heads, dk, dv;
  std::vector<float> q, k, g, v;
};

Inputs RandomInputs(int rows, int heads, int dk, int dv, Decay decay, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  Inputs in{rows, heads, dk, dv, {}, {}, {}, {}};
  const size_t nqk = static_cast<size_t>(rows) * heads * dk;
  in.q.resize(nqk);
  in.k.resize(nqk);
  in.g.resize(nqk);
  in.v.resize(static_cast<size_t>(rows) * heads * dv);
  for (auto& x : in.q) x = nd(rng);
  for (auto& x : in.k) x = nd(rng);
  for (auto& x : in.v) x = nd(rng);
  std::vector<float> head_decay(heads);
  for (auto& x : head_decay) x = -0.5f * ud(rng) - 1e-3f;
  for (size_t i = 0; i < nqk; ++i) {
    switch (decay) {
      case Decay::kData:
        in.g[i] = -3.0f * ud(rng) * (nd(rng) > 0 ? 1.0f : 0.01f);
        break;
      case Decay::kStrong:
        in.g[i] = -20.0f * ud(rng) * ud(rng);
        break;
      case Decay::kConstant:
        in.g[i] = head_decay[(i / dk) % heads];
        break;
      case Decay::kSplit:
        in.g[i] = static_cast<int>(i % dk) < 32 ? -3.0f * ud(rng) * (nd(rng) > 0 ? 1.0f : 0.01f)
                                                : -20.0f * ud(rng) * ud(rng);
        break;
    }
  }
  return in;
}

std::vector<float> Slice(const std::vector<float>& x, size_t from, size_t n) {
  return std::vector<float>(x.begin() + from, x.begin() + from + n);
}
std::vector<double> Slice(const std::vector<double>& x, size_t from, size_t n) {
  return std::vector<double>(x.begin() + from, x.begin() + from + n);
}

class ChunkMmaTest : public ::testing::TestWithParam<MmaCase> {};

TEST_P(ChunkMmaTest, SingleSequenceMatchesFloat64Recurrence) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const MmaCase c = GetParam();
  std::mt19937 rng(std::random_device{}());
  const Inputs in = RandomInputs(c.tokens, c.heads, c.dk, c.dv, c.decay, rng);
  const size_t ns = static_cast<size_t>(c.heads) * c.dk * c.dv;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> s0(ns);
  for (auto& x : s0) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
  std::vector<double> S(s0.begin(), s0.end()), o_ref(in.v.size());
  GlaReference(in.q, in.k, in.g, in.v, c.heads, c.dk, c.dv, 0, c.tokens, scale, S, o_ref);

  Dev<float> dq(in.q), dk(in.k), dg(in.g), dv(in.v), ds(s0), dout(in.v.size());
  Dev<float> dchunks(static_cast<size_t>((c.tokens + kGlaChunk - 1) / kGlaChunk) * ns);
  ASSERT_EQ(ChunkLocalCumsum(dg.get(), c.tokens, c.heads, c.dk, nullptr), cudaSuccess);
  ASSERT_EQ(ChunkGlaStatesMma(dk.get(), dg.get(), dv.get(), c.tokens, c.heads, c.dk, c.dv, ds.get(),
                              dchunks.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(ChunkGlaOutputMma(dq.get(), dk.get(), dg.get(), dv.get(), dchunks.get(), c.tokens,
                              c.heads, c.dk, c.dv, scale, dout.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const double out_err = RelErr(dout.Get(), o_ref), state_err = RelErr(ds.Get(), S);
  EXPECT_LT(out_err, kBf16Bound) << "output";
  EXPECT_LT(state_err, kBf16Bound) << "final state";
  std::cout << "[ rel err ] output " << out_err << " final state " << state_err << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChunkMmaTest,
    ::testing::Values(
        // HGRN2 1.3B heads (dk = dv = expand_ratio 128), across chunk and sub-block edges.
        MmaCase{"hgrn2", 1, 2, 128, 128, Decay::kData},
        MmaCase{"hgrn2", 15, 2, 128, 128, Decay::kData},
        MmaCase{"hgrn2", 17, 2, 128, 128, Decay::kData},
        MmaCase{"hgrn2", 64, 2, 128, 128, Decay::kData},
        MmaCase{"hgrn2", 65, 2, 128, 128, Decay::kStrong},
        MmaCase{"hgrn2", 300, 2, 128, 128, Decay::kData},
        MmaCase{"hgrn2", 200, 2, 128, 128, Decay::kSplit},
        MmaCase{"hgrn2", 257, 2, 64, 64, Decay::kStrong},
        // GLA: dk 256 with dv 512, and a small model's 64 x 128.
        MmaCase{"gla", 130, 2, 256, 512, Decay::kData},
        MmaCase{"gla", 200, 3, 64, 128, Decay::kData},
        // TNL with LRPE: dk = 2 x 128, constant per-head decay.
        MmaCase{"tnl", 193, 2, 256, 128, Decay::kConstant},
        MmaCase{"tnl", 100, 2, 64, 64, Decay::kConstant},
        // Head dims no family uses at 1.3B (tiny test models): padding paths.
        MmaCase{"odd", 65, 3, 16, 32, Decay::kData}, MmaCase{"odd", 200, 1, 40, 200, Decay::kData},
        // dk and dv 4 mod 8: widths the bf16 kernels take (multiples of 4) that no other
        // case has.
        MmaCase{"odd", 70, 2, 36, 20, Decay::kData}));

// A ragged pack: sequence s is lens[s] rows from its own start state (a second layer's
// slot: layer_offset). fork: final states go to other buffers (the first chunk reads the
// start in place) and sequence 1 keeps none (a read-only start). qkv_act kBF16: q, k and v
// are passed as their values rounded to bf16 (what the gate kernels write in bf16 mode).
// two_pass: the states by the local-state kernel and the scan (ChunkGlaStatesPackedMmaTwoPass,
// fp32 chunk states, and the output form that reads them) instead of the one-kernel walk
// (bf16 chunk states); `chunks` (if given) receives the chunk states' room as floats.
// g_layout kPerHead: the walk and output read G once per (row, head), taken from key 0 of
// the cumulative per-key G (whose keys must agree: a constant decay a head). o_act kBF16:
// the output kernel stores o as bf16 (returned widened to fp32). values_in_place (bf16):
// v is read from the last third of rows 3 H dv wide (as HGRN2 reads i from q | f | i).
// How RunPack's bf16 q reaches the output kernel: packed (in.q rounded to bf16), or with
// in.q rounded to bf16 as the raw q columns of an HGRN2 projection ([rows, 3 H dk]):
// SiLU'd by HGRN2's gate kernel into a packed q, or read raw in place, the output kernel
// taking its SiLU.
// How the kernels take q (and k): packed from the inputs; as a gate kernel writes their
// SiLU from a raw projection (HGRN2's q | f | i, TNL's q | k | v | u without LRPE); read
// raw from that projection, the chunk kernels taking the SiLU (q alone: HGRN2's form; q
// and k: TNL's); or read in place as they are from a q | k | v | g projection (GLA's).
enum class QueryInput {
  kPacked,
  kGateKernelSilu,
  kRawInPlace,
  kTnlGateKernelSilu,
  kRawQueriesKeysInPlace,
  kQueriesKeysInPlace
};

void RunPack(const Inputs& in, const std::vector<int>& lens, const std::vector<float>& starts,
             bool fork, float scale, std::vector<float>& out, std::vector<float>& states,
             std::vector<float>& finals, Act qkv_act = Act::kF32, bool two_pass = false,
             std::vector<float>* chunks = nullptr, DecayLayout g_layout = DecayLayout::kPerKey,
             Act o_act = Act::kF32, bool values_in_place = false,
             QueryInput query_input = QueryInput::kPacked) {
  const int H = in.heads, dk = in.dk, dv = in.dv;
  const int64_t ns = static_cast<int64_t>(H) * dk * dv;
  const int num_seqs = static_cast<int>(lens.size());
  std::vector<int32_t> seq_row0{0}, seq_chunk0{0}, chunk_row0, chunk_seq;
  for (int s = 0; s < num_seqs; ++s) {
    for (int r = 0; r < lens[s]; r += kGlaChunk) {
      chunk_row0.push_back(seq_row0.back() + r);
      chunk_seq.push_back(s);
    }
    seq_row0.push_back(seq_row0.back() + lens[s]);
    seq_chunk0.push_back(static_cast<int32_t>(chunk_row0.size()));
  }
  const int rows = seq_row0.back();
  Dev<int32_t> d_seq_row0(seq_row0), d_seq_chunk0(seq_chunk0), d_chunk_row0(chunk_row0),
      d_chunk_seq(chunk_seq);
  PackView pack;
  pack.rows = rows;
  pack.num_seqs = num_seqs;
  pack.num_chunks = static_cast<int>(chunk_row0.size());
  pack.seq_row0 = d_seq_row0.get();
  pack.seq_chunk0 = d_seq_chunk0.get();
  pack.chunk_row0 = d_chunk_row0.get();
  pack.chunk_seq = d_chunk_seq.get();

  Dev<float> dq(in.q), dk_(in.k), dg(in.g), dv_(in.v);
  Dev<uint16_t> dq_bf16(RoundedBf16Bits(in.q)), dk_bf16(RoundedBf16Bits(in.k)),
      dv_bf16(RoundedBf16Bits(in.v));
  const bool bf16 = qkv_act == Act::kBF16;
  const void* q = bf16 ? static_cast<const void*>(dq_bf16.get()) : dq.get();
  const void* k = bf16 ? static_cast<const void*>(dk_bf16.get()) : dk_.get();
  const void* v = bf16 ? static_cast<const void*>(dv_bf16.get()) : dv_.get();
  const int64_t vw = static_cast<int64_t>(H) * dv;
  std::vector<uint16_t> wide;
  if (values_in_place) {
    const std::vector<uint16_t> packed = RoundedBf16Bits(in.v);
    wide.assign(packed.size() * 3, 0x7fc0);  // NaN elsewhere: a stray read shows
    for (size_t r = 0; r * vw < packed.size(); ++r) {
      std::memcpy(&wide[r * 3 * vw + 2 * vw], &packed[r * vw], vw * sizeof(uint16_t));
    }
  }
  Dev<uint16_t> dv_wide(wide);
  const int64_t v_ld = values_in_place ? 3 * vw : 0;
  if (values_in_place) v = dv_wide.get() + 2 * vw;
  const int64_t qw = static_cast<int64_t>(H) * dk;
  std::vector<uint16_t> qfi;
  if (query_input != QueryInput::kPacked) {
    const std::vector<uint16_t> raw = RoundedBf16Bits(in.q);
    qfi.assign(raw.size() * 3, 0);  // f and i columns: 0
    for (size_t r = 0; r * qw < raw.size(); ++r) {
      std::memcpy(&qfi[r * 3 * qw], &raw[r * qw], qw * sizeof(uint16_t));
    }
  }
  const bool tnl_form = query_input == QueryInput::kTnlGateKernelSilu ||
                        query_input == QueryInput::kRawQueriesKeysInPlace ||
                        query_input == QueryInput::kQueriesKeysInPlace;
  std::vector<uint16_t> qkvu;  // TNL's (GLA's) projection: raw q, k, then zeros
  if (tnl_form) {
    const std::vector<uint16_t> raw_q = RoundedBf16Bits(in.q), raw_k = RoundedBf16Bits(in.k);
    qkvu.assign(raw_q.size() * 4, 0);
    for (size_t r = 0; r * qw < raw_q.size(); ++r) {
      std::memcpy(&qkvu[r * 4 * qw], &raw_q[r * qw], qw * sizeof(uint16_t));
      std::memcpy(&qkvu[r * 4 * qw + qw], &raw_k[r * qw], qw * sizeof(uint16_t));
    }
  }
  Dev<uint16_t> dqfi(qfi), dqkvu(qkvu), dq_gate(static_cast<size_t>(rows) * qw),
      dk_gate(static_cast<size_t>(rows) * qw), dv_gate(static_cast<size_t>(rows) * qw);
  Dev<float> dg_gate(static_cast<size_t>(rows) * qw);
  RawQk raw;
  if (query_input == QueryInput::kRawInPlace) raw = RawQk{.q_ld = 3 * qw, .silu = true};
  Dev<float> dout(static_cast<size_t>(rows) * H * dv);
  Dev<uint16_t> dout16(static_cast<size_t>(rows) * H * dv);
  Dev<float> dstates(starts);  // [seq][2 layers][ns]; layer 1 used
  Dev<float> dfinals(static_cast<size_t>(num_seqs) * ns);
  Dev<float> dchunks(static_cast<size_t>(pack.num_chunks) * ns);
  std::vector<float*> sp(num_seqs), op(num_seqs);
  for (int s = 0; s < num_seqs; ++s) {
    sp[s] = dstates.get() + static_cast<int64_t>(s) * 2 * ns;
    op[s] = (s == 1) ? nullptr : dfinals.get() + s * ns - ns;  // + layer_offset = slot s
  }
  Dev<float*> dsp(sp), dop(op);
  float* const* out_ptrs = fork ? dop.get() : nullptr;
  ASSERT_EQ(ChunkLocalCumsumPacked(dg.get(), pack, H, dk, nullptr), cudaSuccess);
  std::vector<float> head_g(static_cast<size_t>(rows) * H);
  if (g_layout == DecayLayout::kPerHead) {
    const std::vector<float> full = dg.Get();
    for (size_t rh = 0; rh < head_g.size(); ++rh) {
      head_g[rh] = full[rh * dk];
      for (int key = 1; key < dk; ++key) {
        ASSERT_EQ(std::memcmp(&full[rh * dk + key], &head_g[rh], sizeof(float)), 0)
            << "the keys of a head decay differently";
      }
    }
  }
  Dev<float> dg_head(head_g);
  const float* G = g_layout == DecayLayout::kPerHead ? dg_head.get() : dg.get();
  if (query_input == QueryInput::kGateKernelSilu) {
    ASSERT_EQ(
        Hgrn2GatesChunkCumsum(dqfi.get(), pack, static_cast<int>(qw), nullptr, dq_gate.get(),
                              dk_gate.get(), dg_gate.get(), dv_gate.get(), Act::kBF16, nullptr),
        cudaSuccess);
    q = dq_gate.get();
  } else if (query_input == QueryInput::kRawInPlace) {
    q = dqfi.get();
  } else if (query_input == QueryInput::kTnlGateKernelSilu) {
    // No LRPE (theta null), g per head into a scratch (RunPack's G is used).
    Dev<float> log_decay(std::vector<float>(H, -0.1f));
    ASSERT_EQ(TnlGatesChunkCumsum(dqkvu.get(), pack, H, dk, dk, nullptr, nullptr, log_decay.get(),
                                  DecayLayout::kPerHead, dq_gate.get(), dk_gate.get(),
                                  dg_gate.get(), nullptr, Act::kBF16, nullptr),
              cudaSuccess);
    q = dq_gate.get();
    k = dk_gate.get();
  } else if (query_input == QueryInput::kRawQueriesKeysInPlace ||
             query_input == QueryInput::kQueriesKeysInPlace) {
    q = dqkvu.get();
    k = dqkvu.get() + qw;
    raw = RawQk{4 * qw, 4 * qw, query_input == QueryInput::kRawQueriesKeysInPlace};
  }
  if (two_pass) {
    ASSERT_EQ(ChunkGlaStatesPackedMmaTwoPass(k, dg.get(), v, qkv_act, pack, H, dk, dv, dsp.get(),
                                             out_ptrs, ns, dchunks.get(), nullptr),
              cudaSuccess);
    ASSERT_EQ(
        ChunkGlaOutputPackedMmaTwoPass(q, k, dg.get(), v, qkv_act, dchunks.get(), dsp.get(),
                                       out_ptrs, ns, pack, H, dk, dv, scale, dout.get(), nullptr),
        cudaSuccess);
  } else {
    ASSERT_EQ(ChunkGlaStatesPackedMma(k, G, g_layout, v, qkv_act, pack, H, dk, dv, dsp.get(),
                                      out_ptrs, ns, dchunks.get(), nullptr, v_ld, raw),
              cudaSuccess);
    void* o = o_act == Act::kBF16 ? static_cast<void*>(dout16.get()) : dout.get();
    ASSERT_EQ(
        ChunkGlaOutputPackedMma(q, k, G, g_layout, v, qkv_act, dchunks.get(), dsp.get(), out_ptrs,
                                ns, pack, H, dk, dv, scale, o, nullptr, o_act, v_ld, raw),
        cudaSuccess);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  out = o_act == Act::kBF16 ? WidenedBf16(dout16.Get()) : dout.Get();
  states = dstates.Get();
  finals = dfinals.Get();
  if (chunks != nullptr) *chunks = dchunks.Get();
}

// Whether two results hold the same bits.
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct PackCase {
  const char* family;
  int heads, dk, dv;
  Decay decay;
  bool fork;
};

void PrintTo(const PackCase& c, std::ostream* os) {
  *os << c.family << "_" << c.heads << "x" << c.dk << "x" << c.dv << (c.fork ? "_fork" : "");
}

class ChunkMmaPackTest : public ::testing::TestWithParam<PackCase> {};

// Random inputs of case c for sequences of `lens` rows, start states (two layer slots a
// sequence) and the scale.
struct PackInputs {
  Inputs in;
  std::vector<float> starts;
  float scale;
};
PackInputs RandomPack(const PackCase& c, const std::vector<int>& lens, std::mt19937& rng) {
  int rows = 0;
  for (int n : lens) rows += n;
  PackInputs p{RandomInputs(rows, c.heads, c.dk, c.dv, c.decay, rng), {}, 0.0f};
  std::normal_distribution<float> nd(0.0f, 1.0f);
  p.starts.resize(lens.size() * 2 * c.heads * c.dk * c.dv);
  for (auto& x : p.starts) x = nd(rng);
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.dk));
  return p;
}

TEST_P(ChunkMmaPackTest, RaggedPackMatchesFloat64AndEachSequenceAlone) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200};
  int rows = 0;
  for (int n : lens) rows += n;
  std::mt19937 rng(std::random_device{}());
  const Inputs in = RandomInputs(rows, c.heads, c.dk, c.dv, c.decay, rng);
  const int64_t ns = static_cast<int64_t>(c.heads) * c.dk * c.dv;
  const int num_seqs = static_cast<int>(lens.size());
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> starts(static_cast<size_t>(num_seqs) * 2 * ns);
  for (auto& x : starts) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.dk));

  std::vector<float> out, states, finals;
  RunPack(in, lens, starts, c.fork, scale, out, states, finals);
  if (HasFatalFailure()) return;
  int r0 = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const size_t slot = (static_cast<size_t>(s) * 2 + 1) * ns;
    std::vector<double> S(starts.begin() + slot, starts.begin() + slot + ns);
    std::vector<double> o_ref(in.v.size());
    GlaReference(in.q, in.k, in.g, in.v, c.heads, c.dk, c.dv, r0, lens[s], scale, S, o_ref);
    const size_t vo = static_cast<size_t>(r0) * c.heads * c.dv;
    const size_t nv = static_cast<size_t>(lens[s]) * c.heads * c.dv;
    EXPECT_LT(RelErr(Slice(out, vo, nv), Slice(o_ref, vo, nv)), kBf16Bound) << "output of " << s;
    const std::vector<float> start_after = Slice(states, slot, ns);
    if (!c.fork) {
      EXPECT_LT(RelErr(start_after, S), kBf16Bound) << "final state of " << s;
    } else {
      EXPECT_EQ(0, std::memcmp(start_after.data(), starts.data() + slot, ns * sizeof(float)))
          << "a forked start state changed: " << s;
      if (s != 1) {
        EXPECT_LT(RelErr(Slice(finals, static_cast<size_t>(s) * ns, ns), S), kBf16Bound)
            << "forked final state of " << s;
      }
    }
    // Batch invariance: the same sequence alone gives the same bits.
    Inputs alone{lens[s],
                 c.heads,
                 c.dk,
                 c.dv,
                 Slice(in.q, static_cast<size_t>(r0) * c.heads * c.dk,
                       static_cast<size_t>(lens[s]) * c.heads * c.dk),
                 Slice(in.k, static_cast<size_t>(r0) * c.heads * c.dk,
                       static_cast<size_t>(lens[s]) * c.heads * c.dk),
                 Slice(in.g, static_cast<size_t>(r0) * c.heads * c.dk,
                       static_cast<size_t>(lens[s]) * c.heads * c.dk),
                 Slice(in.v, vo, nv)};
    // Sequence 1's slot layout is kept: a one-sequence pack still reads slot 0's layer 1,
    // and its read-only role belongs to index 1, so only sequences other than 1 compare.
    if (s != 1) {
      std::vector<float> one_start(starts.begin() + slot - ns, starts.begin() + slot + ns);
      std::vector<float> out1, states1, finals1;
      RunPack(alone, {lens[s]}, one_start, c.fork, scale, out1, states1, finals1);
      if (HasFatalFailure()) return;
      EXPECT_EQ(0, std::memcmp(out1.data(), out.data() + vo, nv * sizeof(float)))
          << "sequence " << s << " alone differs from its packed output";
    }
    r0 += lens[s];
  }
}

// bf16 mode's gate kernels write q, k and v as bf16 (kernels_fused_gates.h): the kernels
// widen bf16 q and k exactly and stage fp32 v as bf16 with the same rounding, so with q and
// k that bf16 holds exactly (v as drawn) outputs, final states and forked finals keep
// every bit.
TEST_P(ChunkMmaPackTest, Bf16OperandsGiveTheFloatOperandsBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200};
  std::mt19937 rng(c.dk * 7 + c.dv + c.fork);
  auto [in, starts, scale] = RandomPack(c, lens, rng);
  in.q = RoundedToBf16(in.q);
  in.k = RoundedToBf16(in.k);
  std::vector<float> out32, states32, finals32, out16, states16, finals16;
  RunPack(in, lens, starts, c.fork, scale, out32, states32, finals32, Act::kF32);
  if (HasFatalFailure()) return;
  RunPack(in, lens, starts, c.fork, scale, out16, states16, finals16, Act::kBF16);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(SameBits(out32, out16)) << "output";
  EXPECT_TRUE(SameBits(states32, states16)) << "states";
  EXPECT_TRUE(SameBits(finals32, finals16)) << "forked finals";
}

// The layouts G may take for case c: per key always, per head where a head's keys share
// their decay (TNL's constant decay).
std::vector<DecayLayout> DecayLayoutsOf(const PackCase& c) {
  if (c.decay == Decay::kConstant) return {DecayLayout::kPerKey, DecayLayout::kPerHead};
  return {DecayLayout::kPerKey};
}

// bf16 mode holds o as bf16 (as fla does): the output kernel's bf16 o is its fp32 o
// rounded to nearest, bit for bit, per key or (a constant decay) per head, and nothing
// else moves.
TEST_P(ChunkMmaPackTest, Bf16OutputIsTheFloatOutputRounded) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200};
  std::mt19937 rng(c.dk * 13 + c.dv + c.fork);
  const auto [in, starts, scale] = RandomPack(c, lens, rng);
  for (const DecayLayout g_layout : DecayLayoutsOf(c)) {
    std::vector<float> out32, states32, finals32, out16, states16, finals16;
    RunPack(in, lens, starts, c.fork, scale, out32, states32, finals32, Act::kBF16, false, nullptr,
            g_layout, Act::kF32);
    if (HasFatalFailure()) return;
    RunPack(in, lens, starts, c.fork, scale, out16, states16, finals16, Act::kBF16, false, nullptr,
            g_layout, Act::kBF16);
    if (HasFatalFailure()) return;
    const char* layout = g_layout == DecayLayout::kPerKey ? "per key" : "per head";
    EXPECT_TRUE(SameBits(RoundedToBf16(out32), out16)) << "output, " << layout;
    EXPECT_TRUE(SameBits(states32, states16)) << "states, " << layout;
    EXPECT_TRUE(SameBits(finals32, finals16)) << "forked finals, " << layout;
  }
}

// v as a projection leaves it (TNL's v columns): the walk and the output kernel read it in
// place from wider rows (v_ld; here 3 H dv) and give the bits of v packed, per key or per
// head.
TEST_P(ChunkMmaPackTest, ValuesReadInPlaceGiveThePackedBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  if (!ChunkMmaTakesBf16Values(c.dk, c.dv)) GTEST_SKIP() << "the fp32 kernels run these dims";
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200};
  std::mt19937 rng(c.dk * 17 + c.dv + c.fork);
  const auto [in, starts, scale] = RandomPack(c, lens, rng);
  for (const DecayLayout g_layout : DecayLayoutsOf(c)) {
    std::vector<float> out1, states1, finals1, chunks1, out2, states2, finals2, chunks2;
    RunPack(in, lens, starts, c.fork, scale, out1, states1, finals1, Act::kBF16, false, &chunks1,
            g_layout, Act::kBF16);
    if (HasFatalFailure()) return;
    RunPack(in, lens, starts, c.fork, scale, out2, states2, finals2, Act::kBF16, false, &chunks2,
            g_layout, Act::kBF16, /*values_in_place=*/true);
    if (HasFatalFailure()) return;
    const char* layout = g_layout == DecayLayout::kPerKey ? "per key" : "per head";
    EXPECT_TRUE(SameBits(out1, out2)) << "output, " << layout;
    EXPECT_TRUE(SameBits(states1, states2)) << "states, " << layout;
    EXPECT_TRUE(SameBits(finals1, finals2)) << "forked finals, " << layout;
    EXPECT_TRUE(SameBits(chunks1, chunks2)) << "chunk states, " << layout;
  }
}

// HGRN2's bf16 packs read q raw in place from the projection (stride 3 H dk) and the
// output kernel takes its SiLU: the bits of the q HGRN2's gate kernel writes, packed (g per
// key, as HGRN2 holds it). A raw q with the fp32 kernels, with g per head, or with a stride
// that breaks 16-byte rows, is refused.
TEST_P(ChunkMmaPackTest, RawQueriesReadInPlaceGiveTheGateKernelsBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  if (!ChunkMmaTakesBf16Values(c.dk, c.dv)) GTEST_SKIP() << "the fp32 kernels run these dims";
  if (c.heads * c.dk % 8 != 0) GTEST_SKIP() << "3 H dk bf16 values are not 16-byte rows";
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200};
  std::mt19937 rng(c.dk * 19 + c.dv + c.fork);
  const auto [in, starts, scale] = RandomPack(c, lens, rng);
  std::vector<float> out1, states1, finals1, out2, states2, finals2;
  RunPack(in, lens, starts, c.fork, scale, out1, states1, finals1, Act::kBF16, false, nullptr,
          DecayLayout::kPerKey, Act::kBF16, /*values_in_place=*/true, QueryInput::kGateKernelSilu);
  if (HasFatalFailure()) return;
  RunPack(in, lens, starts, c.fork, scale, out2, states2, finals2, Act::kBF16, false, nullptr,
          DecayLayout::kPerKey, Act::kBF16, /*values_in_place=*/true, QueryInput::kRawInPlace);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(SameBits(out1, out2)) << "output";
  EXPECT_TRUE(SameBits(states1, states2)) << "states";
  EXPECT_TRUE(SameBits(finals1, finals2)) << "forked finals";
  // Refused: raw q with fp32 operands, with g per head, and with a stride of bf16 rows not
  // 16-byte aligned.
  const int64_t qw = static_cast<int64_t>(c.heads) * c.dk;
  PackView empty_pack;
  empty_pack.num_chunks = 1;  // past the early return of an empty pack; nothing launches
  Dev<float> f(16);
  EXPECT_EQ(
      ChunkGlaOutputPackedMma(f.get(), f.get(), f.get(), DecayLayout::kPerKey, f.get(), Act::kF32,
                              f.get(), nullptr, nullptr, 0, empty_pack, c.heads, c.dk, c.dv, 1.0f,
                              f.get(), nullptr, Act::kF32, 0, RawQk{.q_ld = qw, .silu = true}),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      ChunkGlaOutputPackedMma(f.get(), f.get(), f.get(), DecayLayout::kPerKey, f.get(), Act::kBF16,
                              f.get(), nullptr, nullptr, 0, empty_pack, c.heads, c.dk, c.dv, 1.0f,
                              f.get(), nullptr, Act::kBF16, 0, RawQk{.q_ld = qw + 4, .silu = true}),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      ChunkGlaOutputPackedMma(f.get(), f.get(), f.get(), DecayLayout::kPerHead, f.get(), Act::kBF16,
                              f.get(), nullptr, nullptr, 0, empty_pack, c.heads, c.dk, c.dv, 1.0f,
                              f.get(), nullptr, Act::kBF16, 0, RawQk{.q_ld = qw, .silu = true}),
      cudaErrorInvalidValue);
  // q alone as it is: no such form.
  EXPECT_EQ(
      ChunkGlaOutputPackedMma(f.get(), f.get(), f.get(), DecayLayout::kPerKey, f.get(), Act::kBF16,
                              f.get(), nullptr, nullptr, 0, empty_pack, c.heads, c.dk, c.dv, 1.0f,
                              f.get(), nullptr, Act::kBF16, 0, RawQk{.q_ld = qw}),
      cudaErrorInvalidValue);
}

// Case c's pack run twice as the bf16 model path runs it (v in place, o bf16, g as
// g_layout), taking q and k as `a` and as `b`: outputs, states, forked finals and every
// chunk state bit for bit equal.
void ExpectSameBitsForQueryInputs(const PackCase& c, unsigned seed, DecayLayout g_layout,
                                  QueryInput a, QueryInput b) {
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200};
  std::mt19937 rng(seed);
  const auto [in, starts, scale] = RandomPack(c, lens, rng);
  std::vector<float> out1, states1, finals1, chunks1, out2, states2, finals2, chunks2;
  RunPack(in, lens, starts, c.fork, scale, out1, states1, finals1, Act::kBF16, false, &chunks1,
          g_layout, Act::kBF16, /*values_in_place=*/true, a);
  if (::testing::Test::HasFatalFailure()) return;
  RunPack(in, lens, starts, c.fork, scale, out2, states2, finals2, Act::kBF16, false, &chunks2,
          g_layout, Act::kBF16, /*values_in_place=*/true, b);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_TRUE(SameBits(out1, out2)) << "output";
  EXPECT_TRUE(SameBits(states1, states2)) << "states";
  EXPECT_TRUE(SameBits(finals1, finals2)) << "forked finals";
  EXPECT_TRUE(SameBits(chunks1, chunks2)) << "chunk states";
}

// TNL's layers without LRPE: q and k read raw from the projection, the states and output
// kernels taking their SiLU, give bit for bit what the q and k TNL's gate kernel writes
// give (outputs, states, forked finals, every chunk state), with g per head and v in place
// as the model runs them; the refusals of raw k outside that form.
TEST_P(ChunkMmaPackTest, RawQueriesAndKeysReadInPlaceGiveTnlsGateKernelBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  if (c.decay != Decay::kConstant) GTEST_SKIP() << "g per head needs one decay a head";
  if (!ChunkMmaTakesBf16Values(c.dk, c.dv)) GTEST_SKIP() << "the fp32 kernels run these dims";
  if (c.heads * c.dk % 8 != 0) GTEST_SKIP() << "4 H dk bf16 values are not 16-byte rows";
  if (c.heads * c.dv % 8 != 0) GTEST_SKIP() << "3 H dv bf16 values are not 16-byte rows";
  ExpectSameBitsForQueryInputs(c, c.dk * 23 + c.dv + c.fork, DecayLayout::kPerHead,
                               QueryInput::kTnlGateKernelSilu, QueryInput::kRawQueriesKeysInPlace);
  if (HasFatalFailure()) return;
  // Refused: raw k's SiLU with g per key, with fp32 operands, without raw q or at another
  // stride than q's, and with rows not 16-byte aligned.
  const int64_t ld = 4 * static_cast<int64_t>(c.heads) * c.dk;
  PackView empty_pack;
  empty_pack.num_chunks = 1;  // past the early return of an empty pack; nothing launches
  empty_pack.num_seqs = 1;
  Dev<float> f(16);
  auto states = [&](DecayLayout layout, Act act, int64_t k_ld) {
    return ChunkGlaStatesPackedMma(f.get(), f.get(), layout, f.get(), act, empty_pack, c.heads,
                                   c.dk, c.dv, nullptr, nullptr, 0, f.get(), nullptr, 0,
                                   RawQk{k_ld, k_ld, /*silu=*/true});
  };
  EXPECT_EQ(states(DecayLayout::kPerKey, Act::kBF16, ld), cudaErrorInvalidValue);
  EXPECT_EQ(states(DecayLayout::kPerHead, Act::kF32, ld), cudaErrorInvalidValue);
  EXPECT_EQ(states(DecayLayout::kPerHead, Act::kBF16, ld + 4), cudaErrorInvalidValue);
  EXPECT_EQ(ChunkGlaStatesPackedMma(f.get(), f.get(), DecayLayout::kPerHead, f.get(), Act::kBF16,
                                    empty_pack, c.heads, c.dk, c.dv, nullptr, nullptr, 0, f.get(),
                                    nullptr, 0, RawQk{.k_ld = ld, .silu = true}),
            cudaErrorInvalidValue);
  auto output = [&](DecayLayout layout, int64_t q_ld, int64_t k_ld) {
    return ChunkGlaOutputPackedMma(f.get(), f.get(), f.get(), layout, f.get(), Act::kBF16, f.get(),
                                   nullptr, nullptr, 0, empty_pack, c.heads, c.dk, c.dv, 1.0f,
                                   f.get(), nullptr, Act::kBF16, 0, RawQk{q_ld, k_ld, true});
  };
  EXPECT_EQ(output(DecayLayout::kPerKey, ld, ld), cudaErrorInvalidValue);
  EXPECT_EQ(output(DecayLayout::kPerHead, 0, ld), cudaErrorInvalidValue);
  EXPECT_EQ(output(DecayLayout::kPerHead, ld, ld + 8), cudaErrorInvalidValue);
  EXPECT_EQ(output(DecayLayout::kPerHead, ld + 4, ld + 4), cudaErrorInvalidValue);
}

// GLA's packs (its k heads unshared): q and k read in place as they are from the q | k
// | v | g projection give bit for bit what the packed copies give (outputs, states,
// forked finals, every chunk state), with g per key and v in place; q and k as they are
// with g per head (no such form) are refused.
TEST_P(ChunkMmaPackTest, QueriesKeysReadInPlaceGiveThePackedBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  if (!ChunkMmaTakesBf16Values(c.dk, c.dv)) GTEST_SKIP() << "the fp32 kernels run these dims";
  if (c.heads * c.dk % 8 != 0) GTEST_SKIP() << "4 H dk bf16 values are not 16-byte rows";
  if (c.heads * c.dv % 8 != 0) GTEST_SKIP() << "3 H dv bf16 values are not 16-byte rows";
  ExpectSameBitsForQueryInputs(c, c.dk * 29 + c.dv + c.fork, DecayLayout::kPerKey,
                               QueryInput::kPacked, QueryInput::kQueriesKeysInPlace);
  if (HasFatalFailure()) return;
  const int64_t ld = 4 * static_cast<int64_t>(c.heads) * c.dk;
  PackView empty_pack;
  empty_pack.num_chunks = 1;  // past the early return of an empty pack; nothing launches
  Dev<float> f(16);
  EXPECT_EQ(
      ChunkGlaOutputPackedMma(f.get(), f.get(), f.get(), DecayLayout::kPerHead, f.get(), Act::kBF16,
                              f.get(), nullptr, nullptr, 0, empty_pack, c.heads, c.dk, c.dv, 1.0f,
                              f.get(), nullptr, Act::kBF16, 0, RawQk{ld, ld, /*silu=*/false}),
      cudaErrorInvalidValue);
  EXPECT_EQ(ChunkGlaStatesPackedMma(f.get(), f.get(), DecayLayout::kPerHead, f.get(), Act::kBF16,
                                    empty_pack, c.heads, c.dk, c.dv, nullptr, nullptr, 0, f.get(),
                                    nullptr, 0, RawQk{ld, ld, /*silu=*/false}),
            cudaErrorInvalidValue);
}

// The walk's bf16 chunk states as the bf16 bits of the two-pass form's fp32 ones (each
// chunk of ns states).
bool SameBf16States(const std::vector<float>& walk, const std::vector<float>& two_pass,
                    size_t chunk, size_t ns) {
  const std::vector<uint16_t> want = RoundedBf16Bits(
      std::vector<float>(two_pass.begin() + chunk * ns, two_pass.begin() + (chunk + 1) * ns));
  return std::memcmp(reinterpret_cast<const uint16_t*>(walk.data()) + chunk * ns, want.data(),
                     ns * sizeof(uint16_t)) == 0;
}

// The one-kernel state walk keeps the two-pass pair's bits: every chunk state the output
// kernel reads (bf16: the pair's fp32 one rounded, as the output kernel rounds it), the
// outputs, and the final states in place, forked or none, with fp32 and bf16 q, k, v. The
// outputs also hold the pipelined output kernel (bf16 S_c; with bf16 operands its tiles
// copied by cp.async) to the unpipelined one the two-pass form runs. (A forked
// sequence's first slot is not read, so neither form need fill it: the walk leaves it,
// the local-state kernel leaves U_0 there.)
TEST_P(ChunkMmaPackTest, OneKernelStateWalkGivesTheTwoPassBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200, 1000};
  std::mt19937 rng(c.dk * 5 + c.dv + c.fork);
  const auto [in, starts, scale] = RandomPack(c, lens, rng);
  const size_t ns = static_cast<size_t>(c.heads) * c.dk * c.dv;
  for (const Act qkv_act : {Act::kF32, Act::kBF16}) {
    std::vector<float> out1, states1, finals1, chunks1, out2, states2, finals2, chunks2;
    RunPack(in, lens, starts, c.fork, scale, out1, states1, finals1, qkv_act, false, &chunks1);
    if (HasFatalFailure()) return;
    RunPack(in, lens, starts, c.fork, scale, out2, states2, finals2, qkv_act, true, &chunks2);
    if (HasFatalFailure()) return;
    const char* act = qkv_act == Act::kF32 ? "fp32 q, k, v" : "bf16 q, k, v";
    ASSERT_EQ(out1.size(), out2.size());
    EXPECT_EQ(0, std::memcmp(out1.data(), out2.data(), out1.size() * sizeof(float)))
        << "output, " << act;
    EXPECT_EQ(0, std::memcmp(states1.data(), states2.data(), states1.size() * sizeof(float)))
        << "states, " << act;
    EXPECT_EQ(0, std::memcmp(finals1.data(), finals2.data(), finals1.size() * sizeof(float)))
        << "forked finals, " << act;
    int chunk = 0;
    int compared = 0;
    for (size_t s = 0; s < lens.size(); ++s) {
      const int seq_chunks = (lens[s] + kGlaChunk - 1) / kGlaChunk;
      for (int x = 0; x < seq_chunks; ++x, ++chunk) {
        if (c.fork && x == 0) continue;
        EXPECT_TRUE(SameBf16States(chunks1, chunks2, chunk, ns))
            << "chunk state " << x << " of sequence " << s << ", " << act;
        ++compared;
      }
    }
    EXPECT_GE(compared, 20);
  }
}

// TNL's decay is one constant a head: G held once per (row, head) gives bitwise what G
// repeated over the keys gives (outputs, states in place or forked, every chunk state),
// with bf16 q, k, v as the model runs them.
TEST_P(ChunkMmaPackTest, PerHeadDecayGivesThePerKeyBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const PackCase c = GetParam();
  if (c.decay != Decay::kConstant) GTEST_SKIP() << "the keys of a head decay differently";
  const std::vector<int> lens = {130, 1, 64, 17, 65, 200, 1000};
  std::mt19937 rng(c.dk * 11 + c.dv + c.fork);
  const auto [in, starts, scale] = RandomPack(c, lens, rng);
  std::vector<float> out1, states1, finals1, chunks1, out2, states2, finals2, chunks2;
  RunPack(in, lens, starts, c.fork, scale, out1, states1, finals1, Act::kBF16, false, &chunks1,
          DecayLayout::kPerKey);
  if (HasFatalFailure()) return;
  RunPack(in, lens, starts, c.fork, scale, out2, states2, finals2, Act::kBF16, false, &chunks2,
          DecayLayout::kPerHead);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(SameBits(out1, out2)) << "output";
  EXPECT_TRUE(SameBits(states1, states2)) << "states";
  EXPECT_TRUE(SameBits(finals1, finals2)) << "forked finals";
  EXPECT_TRUE(SameBits(chunks1, chunks2)) << "chunk states";
}

// The same for single sequences (the single-sequence forms: the state advanced in place).
TEST_P(ChunkMmaTest, OneKernelStateWalkGivesTheTwoPassBits) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const MmaCase c = GetParam();
  std::mt19937 rng(c.tokens * 3 + c.dk + c.dv);
  const Inputs in = RandomInputs(c.tokens, c.heads, c.dk, c.dv, c.decay, rng);
  const size_t ns = static_cast<size_t>(c.heads) * c.dk * c.dv;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> s0(ns);
  for (auto& x : s0) x = nd(rng);
  const size_t nchunks = static_cast<size_t>((c.tokens + kGlaChunk - 1) / kGlaChunk);
  Dev<float> dg(in.g), dk(in.k), dv(in.v);
  ASSERT_EQ(ChunkLocalCumsum(dg.get(), c.tokens, c.heads, c.dk, nullptr), cudaSuccess);
  Dev<float> ds1(s0), ds2(s0), dchunks1(nchunks * ns), dchunks2(nchunks * ns);
  ASSERT_EQ(ChunkGlaStatesMma(dk.get(), dg.get(), dv.get(), c.tokens, c.heads, c.dk, c.dv,
                              ds1.get(), dchunks1.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(ChunkGlaStatesMmaTwoPass(dk.get(), dg.get(), dv.get(), c.tokens, c.heads, c.dk, c.dv,
                                     ds2.get(), dchunks2.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> s1 = ds1.Get(), s2 = ds2.Get(), ch1 = dchunks1.Get(),
                           ch2 = dchunks2.Get();
  EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), ns * sizeof(float))) << "final state";
  for (size_t x = 0; x < nchunks; ++x) {
    EXPECT_TRUE(SameBf16States(ch1, ch2, x, ns)) << "chunk state " << x;
  }
  EXPECT_NE(0, std::memcmp(s1.data(), s0.data(), ns * sizeof(float))) << "state not advanced";
}

// Both packed launchers refuse these operands and this G layout at head dims dk x dv with
// cudaErrorInvalidValue, before anything is read or launched (every pointer is null).
void ExpectRefused(DecayLayout g_layout, Act qkv_act, int dk, int dv) {
  PackView pack;
  pack.rows = 70;
  pack.num_seqs = 1;
  pack.num_chunks = 2;
  EXPECT_EQ(ChunkGlaStatesPackedMma(nullptr, nullptr, g_layout, nullptr, qkv_act, pack, 1, dk, dv,
                                    nullptr, nullptr, 0, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(ChunkGlaOutputPackedMma(nullptr, nullptr, nullptr, g_layout, nullptr, qkv_act, nullptr,
                                    nullptr, nullptr, 0, pack, 1, dk, dv, 1.0f, nullptr, nullptr),
            cudaErrorInvalidValue);
}

// Head dims the tensor-core kernels do not run take fp32 q, k, v only (their fp32
// fallback): bf16 operands are refused.
TEST(ChunkMmaValuesTest, Bf16ValuesRefusedWhereTheFp32KernelsRun) {
  EXPECT_TRUE(ChunkMmaTakesBf16Values(128, 128));
  EXPECT_FALSE(ChunkMmaTakesBf16Values(6, 128));
  EXPECT_FALSE(ChunkMmaTakesBf16Values(128, 6));
  ExpectRefused(DecayLayout::kPerKey, Act::kBF16, 6, 8);
}

// v read in place (another row stride) runs in the bf16 model path only: with fp32
// operands it is refused, as is a stride narrower than a packed row.
TEST(ChunkMmaValuesTest, StridedValuesRefusedOutsideTheBf16Path) {
  PackView pack;
  pack.rows = 70;
  pack.num_seqs = 1;
  pack.num_chunks = 2;
  for (const auto [act, ld] : {std::pair{Act::kF32, 3 * 128}, std::pair{Act::kBF16, 64}}) {
    EXPECT_EQ(ChunkGlaStatesPackedMma(nullptr, nullptr, DecayLayout::kPerKey, nullptr, act, pack, 1,
                                      128, 128, nullptr, nullptr, 0, nullptr, nullptr, ld),
              cudaErrorInvalidValue);
    EXPECT_EQ(ChunkGlaOutputPackedMma(nullptr, nullptr, nullptr, DecayLayout::kPerKey, nullptr, act,
                                      nullptr, nullptr, nullptr, 0, pack, 1, 128, 128, 1.0f,
                                      nullptr, nullptr, Act::kF32, ld),
              cudaErrorInvalidValue);
  }
}

// o is held as bf16 in the bf16 model path only: with fp32 operands it is refused.
TEST(ChunkMmaValuesTest, Bf16OutputRefusedWithFloatOperands) {
  PackView pack;
  pack.rows = 70;
  pack.num_seqs = 1;
  pack.num_chunks = 2;
  EXPECT_EQ(ChunkGlaOutputPackedMma(nullptr, nullptr, nullptr, DecayLayout::kPerKey, nullptr,
                                    Act::kF32, nullptr, nullptr, nullptr, 0, pack, 1, 128, 128,
                                    1.0f, nullptr, nullptr, Act::kBF16),
            cudaErrorInvalidValue);
}

// G per head runs in the bf16 model path only: with fp32 operands it is refused.
TEST(ChunkMmaValuesTest, PerHeadDecayRefusedWithFloatOperands) {
  ExpectRefused(DecayLayout::kPerHead, Act::kF32, 128, 128);
}

INSTANTIATE_TEST_SUITE_P(Packs, ChunkMmaPackTest,
                         ::testing::Values(PackCase{"hgrn2", 2, 128, 128, Decay::kData, false},
                                           PackCase{"hgrn2", 2, 128, 128, Decay::kStrong, true},
                                           PackCase{"hgrn2", 2, 128, 128, Decay::kSplit, false},
                                           PackCase{"gla", 2, 256, 512, Decay::kData, true},
                                           PackCase{"tnl", 2, 256, 128, Decay::kConstant, false},
                                           PackCase{"tnl", 2, 128, 128, Decay::kConstant, true},
                                           PackCase{"odd", 3, 40, 200, Decay::kData, true},
                                           PackCase{"odd", 2, 36, 20, Decay::kData, true}));

}  // namespace
}  // namespace hgeval::cuda
