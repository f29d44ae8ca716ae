// Benchmarks the CUDA backend on random-weight 1.3B models (HGRN2 and LLaMA shapes from
// issue 6): scoring throughput, long-sequence prefill time and peak memory, greedy decode
// throughput. Writes JSON and prints a table; bench/peers/kernel_peer.py measures the PyTorch
// peers (fla, transformers) on the same shapes in the same device call and writes the one
// JSON with both and the ratios (--configs_out gives it the models' config.json files).
//
// Random weights are for timing only: the program refuses to run without
// --random_weights, and nothing it builds is ever saved or used for evaluation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/cuda/gpu_timeline.h"
#include "bench/cuda/random_checkpoint.h"
#include "bench/cuda/tool_main.h"
#include "engine/cuda/cuda_model.h"
#include "engine/cuda/cuda_models.h"
#include "engine/cuda/decode_attention_plan.h"
#include "engine/cuda/decode_gemm.h"
#include "engine/cuda/device.h"
#include "engine/cuda/flash_kernel_choice.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/kernels_chunk_mma.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(bool, random_weights, false,
          "required: acknowledge that the models get random weights (timing only)");
ABSL_FLAG(std::string, models, "hgrn2,llama", "comma-separated: hgrn2, llama, tnl, gla");
ABSL_FLAG(std::string, dtype, "bf16", "fp32 or bf16");
ABSL_FLAG(std::string, out, "", "JSON output path (default bench/results/<gpu>-<date>.json)");
ABSL_FLAG(int, layers, 24, "layers (24 for the 1.3B shapes; fewer for a quick look)");
ABSL_FLAG(int, repeats, 3, "timed repetitions per measurement (median reported)");
ABSL_FLAG(int, decode_steps, 64, "decode steps timed");
ABSL_FLAG(bool, skip_64k, false, "skip the 64K prefill");
ABSL_FLAG(bool, decode_only, false, "only the decode rows (b1 and b32)");
ABSL_FLAG(bool, micro_only, false, "only the kernel micro-benchmarks");
ABSL_FLAG(bool, micro, true, "also time the main kernels alone (GEMM shapes, chunkwise GLA)");
ABSL_FLAG(bool, prefill_16k_only, false,
          "per model only the 16K prefill (repeats + 1 passes): a short run for a per-kernel "
          "profiler (ncu --metrics gpu__time_duration.sum)");
ABSL_FLAG(bool, profile_passes, false,
          "per model only one 16K prefill and one 8x2048 scoring pass after one warm-up of "
          "each: the passes a per-kernel profiler times (ncu --metrics gpu__time_duration.sum)");
ABSL_FLAG(bool, timeline, false,
          "per model only GPU timelines (CUPTI) of an 8x2048 scoring pass, a 16K prefill and 16 "
          "b1 decode steps, each timed untraced first, then traced twice: the host's lead "
          "before the first GPU work, kernels by time, idle gaps, tail");
ABSL_FLAG(int, timeline_decode_batch, 1,
          "sequences a --timeline decode step runs (1 to 32): its 16 steps at that batch");
ABSL_FLAG(std::string, configs_out, "",
          "folder for each model's config.json as <family>_config.json (for the peer)");

namespace hgeval {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::vector<int32_t> RandomTokens(std::mt19937& rng, int n, int vocab) {
  std::uniform_int_distribution<int> d(3, vocab - 1);
  std::vector<int32_t> out(n);
  for (auto& t : out) t = d(rng);
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `call`; where `timeline` is given, under the CUPTI tracer, its summary kept there.
void RunTimed(const std::function<void()>& call, bench::TimelineSummary* timeline) {
#if HGEVAL_HAVE_CUPTI
  if (timeline != nullptr) {
    auto traced = bench::TraceCall(call);
    if (!traced.ok()) {
      std::fprintf(stderr, "timeline: %s\n", std::string(traced.status().message()).c_str());
      return;
    }
    *timeline = *std::move(traced);
    return;
  }
#endif
  call();
}

// Scoring: batch x len tokens, every position scored (next-token targets). `timeline`:
// the last repeat traced.
double ScoreTokPerSec(Model& m, int batch, int len, int repeats, std::mt19937& rng,
                      bench::TimelineSummary* timeline = nullptr) {
  const int vocab = static_cast<int>(m.info().vocab_size);
  std::vector<std::vector<int32_t>> toks(batch), tg(batch);
  for (int b = 0; b < batch; ++b) {
    toks[b] = RandomTokens(rng, len, vocab);
    tg[b] = RandomTokens(rng, len, vocab);
  }
  std::vector<double> times;
  for (int r = 0; r < repeats + 1; ++r) {
    std::vector<std::unique_ptr<SequenceState>> states;
    std::vector<ForwardItem> items(batch);
    for (int b = 0; b < batch; ++b) {
      states.push_back(m.NewState());
      items[b].tokens = toks[b];
      items[b].targets = tg[b];
      items[b].state = states[b].get();
    }
    std::vector<ForwardOutput> outs(batch);
    const auto t0 = Clock::now();
    absl::Status st;
    RunTimed([&] { st = m.Forward(items, absl::MakeSpan(outs)); },
             r == repeats ? timeline : nullptr);
    const auto t1 = Clock::now();
    if (!st.ok()) {
      std::fprintf(stderr, "score failed: %s\n", std::string(st.message()).c_str());
      return 0;
    }
    if (r > 0) times.push_back(Seconds(t0, t1));
  }
  return static_cast<double>(batch) * len / Median(times);
}

struct PrefillResult {
  double ms = 0;
  double peak_gib = 0;
};

// A prefill of `len` tokens from an empty state; `keep_state` false: a scoring-only pass
// (ForwardItem::fresh_start), which keeps no state (a LLaMA longer than one pack holds one
// layer's keys and values at a time).
PrefillResult Prefill(cuda::CudaModel& m, int len, int repeats, std::mt19937& rng,
                      bool keep_state = true, bench::TimelineSummary* timeline = nullptr) {
  const auto toks = RandomTokens(rng, len, static_cast<int>(m.info().vocab_size));
  std::vector<double> times;
  PrefillResult res;
  for (int r = 0; r < repeats + 1; ++r) {
    m.ResetPeakDeviceBytes();
    std::unique_ptr<SequenceState> state = keep_state ? m.NewState() : nullptr;
    ForwardItem item;
    item.tokens = toks;
    item.state = state.get();
    item.fresh_start = !keep_state;
    item.want_last_logprobs = true;
    std::vector<ForwardOutput> outs(1);
    const auto t0 = Clock::now();
    absl::Status st;
    RunTimed([&] { st = m.Forward(absl::MakeConstSpan(&item, 1), absl::MakeSpan(outs)); },
             r == repeats ? timeline : nullptr);
    const auto t1 = Clock::now();
    if (!st.ok()) {
      std::fprintf(stderr, "prefill failed: %s\n", std::string(st.message()).c_str());
      return res;
    }
    if (r > 0) times.push_back(Seconds(t0, t1));
    res.peak_gib = std::max(res.peak_gib, m.peak_device_bytes() / double(1ull << 30));
  }
  res.ms = Median(times) * 1e3;
  return res;
}

// Greedy decode after a 512-token prompt: tok/s over `steps` one-token steps.
double DecodeTokPerSec(Model& m, int batch, int steps, std::mt19937& rng,
                       bench::TimelineSummary* timeline = nullptr) {
  const int vocab = static_cast<int>(m.info().vocab_size);
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<int32_t> next(batch);
  for (int b = 0; b < batch; ++b) {
    states.push_back(m.NewState());
    const auto prompt = RandomTokens(rng, 512, vocab);
    ForwardItem item;
    item.tokens = prompt;
    item.state = states[b].get();
    item.want_last_logprobs = true;
    std::vector<ForwardOutput> outs(1);
    if (!m.Forward(absl::MakeConstSpan(&item, 1), absl::MakeSpan(outs)).ok()) return 0;
    next[b] = static_cast<int32_t>(
        std::max_element(outs[0].last_logprobs.begin(), outs[0].last_logprobs.end()) -
        outs[0].last_logprobs.begin());
  }
  std::vector<int32_t> zero(batch, 0);
  auto step = [&]() -> bool {
    std::vector<ForwardItem> items(batch);
    for (int b = 0; b < batch; ++b) {
      items[b].tokens = absl::MakeConstSpan(&next[b], 1);
      items[b].targets = absl::MakeConstSpan(&zero[b], 1);  // any target: we read argmax
      items[b].state = states[b].get();
    }
    std::vector<ForwardOutput> outs(batch);
    if (!m.Forward(items, absl::MakeSpan(outs)).ok()) return false;
    for (int b = 0; b < batch; ++b) next[b] = outs[b].argmax[0];
    return true;
  };
  for (int i = 0; i < 3; ++i) {
    if (!step()) return 0;  // warm-up (and graph capture)
  }
  const auto t0 = Clock::now();
  bool ok = true;
  RunTimed(
      [&] {
        for (int i = 0; i < steps && ok; ++i) ok = step();
      },
      timeline);
  const auto t1 = Clock::now();
  if (!ok) return 0;
  return static_cast<double>(batch) * steps / Seconds(t0, t1);
}

// Kernel micro-benchmarks on random data: what each piece costs alone.
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t s) : s_(s) {
    cudaEventCreate(&a_);
    cudaEventCreate(&b_);
  }
  ~EventTimer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  template <typename F>
  double Ms(F&& f, int reps) {
    f();  // warm-up
    cudaEventRecord(a_, s_);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(b_, s_);
    cudaEventSynchronize(b_);
    float ms = 0;
    cudaEventElapsedTime(&ms, a_, b_);
    return ms / reps;
  }

 private:
  cudaStream_t s_;
  cudaEvent_t a_, b_;
};

void* DeviceRandom(size_t bytes, float amplitude, bool bf16, bool negative = false) {
  void* p = nullptr;
  cudaMalloc(&p, bytes);
  const size_t n = bf16 ? bytes / 2 : bytes / 4;
  std::vector<float> host(n);
  bench::FillRandom(host, amplitude, n);
  if (negative) {
    for (float& x : host) x = -std::fabs(x);
  }
  if (bf16) {
    std::vector<uint16_t> h16(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, &host[i], 4);
      h16[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    (void)cuda::CopyToDevice(p, h16.data(), bytes);
  } else {
    (void)cuda::CopyToDevice(p, host.data(), bytes);
  }
  return p;
}

constexpr char kMicroRow[] = "HGRN2-1.3B shape (random)";

nlohmann::json Micro(cuda::DeviceContext* ctx) {
  nlohmann::json out;
  EventTimer timer(ctx->stream());
  struct Shape {
    int64_t m, n, k;
    bool out_f32;
  };
  for (const Shape sh :
       {Shape{2048, 6144, 2048, true}, Shape{2048, 11264, 2048, false},
        Shape{2048, 2048, 5632, true}, Shape{2048, 2048, 2048, true},
        Shape{2048, 32000, 2048, true}, Shape{64, 6144, 2048, true}, Shape{64, 11264, 2048, false},
        Shape{64, 32000, 2048, true},
        // The decode step's padded 32 rows (cublasGemmEx, as the step).
        Shape{32, 6144, 2048, true}, Shape{32, 2048, 2048, true}, Shape{32, 11264, 2048, false},
        Shape{32, 2048, 5632, true}, Shape{32, 32000, 2048, true}}) {
    void* a = DeviceRandom(sh.m * sh.k * 2, 1.0f, true);
    void* w = DeviceRandom(sh.n * sh.k * 2, 0.02f, true);
    void* c = nullptr;
    cudaMalloc(&c, sh.m * sh.n * 4);
    const double ms = timer.Ms(
        [&] {
          (void)cuda::GemmNT(ctx->cublas(), sh.m, sh.n, sh.k, {a, cuda::Act::kBF16, sh.k},
                             {w, cuda::Act::kBF16, sh.k}, c,
                             sh.out_f32 ? cuda::Act::kF32 : cuda::Act::kBF16, sh.n);
        },
        20);
    const double tflops = 2.0 * sh.m * sh.n * sh.k / (ms * 1e-3) / 1e12;
    const double gbs = (sh.n * sh.k * 2.0) / (ms * 1e-3) / 1e9;
    const std::string key = absl::StrCat("gemm_bf16_", sh.m, "x", sh.n, "x", sh.k);
    out[key] = {{"ms", ms}, {"tflops", tflops}, {"weight_gb_s", gbs}};
    std::fprintf(stderr, "[micro] %-28s %8.3f ms %7.1f TFLOP/s %7.0f GB/s(weights)\n", key.c_str(),
                 ms, tflops, gbs);
    if (sh.m == cuda::kDecodeGemmMaxRows) {
      // The same shape through the skinny decode GEMM (decode_gemm.h), for comparison, at
      // the padded 32 rows and at 1 and 8 live rows (it skips 8-row tiles of padding).
      for (const int64_t dm : {sh.m, int64_t{8}, int64_t{1}}) {
        const double dms = timer.Ms(
            [&] {
              (void)cuda::DecodeGemmNT(ctx->stream(), dm, sh.n, sh.k, {a, cuda::Act::kBF16, sh.k},
                                       {w, cuda::Act::kBF16, sh.k}, c,
                                       sh.out_f32 ? cuda::Act::kF32 : cuda::Act::kBF16, sh.n);
            },
            20);
        const double dgbs = (sh.n * sh.k * 2.0) / (dms * 1e-3) / 1e9;
        const std::string dkey = absl::StrCat("decode_gemm_bf16_", dm, "x", sh.n, "x", sh.k);
        out[dkey] = {{"ms", dms}, {"weight_gb_s", dgbs}};
        std::fprintf(stderr, "[micro] %-28s %8.3f ms %7.0f GB/s(weights)\n", dkey.c_str(), dms,
                     dgbs);
      }
    }
    cudaFree(a);
    cudaFree(w);
    cudaFree(c);
  }
  {
    const int T = 16384, H = 16, K = 128, V = 128;
    const size_t n = static_cast<size_t>(T) * H * K;
    float* q = static_cast<float*>(DeviceRandom(n * 4, 1.0f, false));
    float* k = static_cast<float*>(DeviceRandom(n * 4, 1.0f, false));
    float* g = static_cast<float*>(DeviceRandom(n * 4, 0.1f, false, true));
    float* v = static_cast<float*>(DeviceRandom(n * 4, 1.0f, false));
    float* o = static_cast<float*>(DeviceRandom(n * 4, 1.0f, false));
    float* st = static_cast<float*>(DeviceRandom(H * K * V * 4, 1.0f, false));
    float* cs =
        static_cast<float*>(DeviceRandom(static_cast<size_t>(T / 64) * H * K * V * 4, 1.0f, false));
    cudaStream_t s = ctx->stream();
    const double cum = timer.Ms([&] { cuda::ChunkLocalCumsum(g, T, H, K, s); }, 1);
    const double states =
        timer.Ms([&] { cuda::ChunkGlaStates(k, g, v, T, H, K, V, st, cs, s); }, 10);
    const double outk =
        timer.Ms([&] { cuda::ChunkGlaOutput(q, k, g, v, cs, T, H, K, V, 0.088f, o, s); }, 10);
    // bf16 mode's tensor-core kernels (kernels_chunk_mma.h) and the fp32 scan alone.
    cuda::PackView pack;
    pack.rows = T;
    pack.num_chunks = T / cuda::kGlaChunk;
    const double scan = timer.Ms(
        [&] { cuda::ChunkStateScan(g, pack, H, K, V, nullptr, nullptr, 0, st, cs, s); }, 10);
    const double states_mma =
        timer.Ms([&] { cuda::ChunkGlaStatesMmaTwoPass(k, g, v, T, H, K, V, st, cs, s); }, 10);
    // The one-kernel walk that replaced the local states + scan pair; and both as the
    // model runs them: the packed form with bf16 k and v, the state advanced in place.
    const double states_walk =
        timer.Ms([&] { cuda::ChunkGlaStatesMma(k, g, v, T, H, K, V, st, cs, s); }, 10);
    void* v16 = DeviceRandom(static_cast<size_t>(T) * H * V * 2, 1.0f, true);
    void* k16 = DeviceRandom(n * 2, 1.0f, true);
    float** st_ptrs = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&st_ptrs), sizeof(float*));
    cudaMemcpy(st_ptrs, &st, sizeof(float*), cudaMemcpyHostToDevice);
    const double states_pair_bf16 = timer.Ms(
        [&] {
          cuda::ChunkGlaStatesPackedMmaTwoPass(k16, g, v16, cuda::Act::kBF16, pack, H, K, V,
                                               st_ptrs, nullptr, 0, cs, s);
        },
        10);
    const double states_walk_bf16 = timer.Ms(
        [&] {
          cuda::ChunkGlaStatesPackedMma(k16, g, cuda::DecayLayout::kPerKey, v16, cuda::Act::kBF16,
                                        pack, H, K, V, st_ptrs, nullptr, 0, cs, s);
        },
        10);
    cudaFree(v16);
    cudaFree(k16);
    cudaFree(st_ptrs);
    const double out_mma =
        timer.Ms([&] { cuda::ChunkGlaOutputMma(q, k, g, v, cs, T, H, K, V, 0.088f, o, s); }, 10);
    // Products as the kernels compute them: local states 2TKV per head; output 2TKV
    // (q S) + 2T·64·(K + V) (the intra-chunk matrix and A v over whole 64-row blocks).
    const double local_flop = 2.0 * T * H * K * V;
    const double out_flop = 2.0 * T * H * (K * V + 64.0 * (K + V));
    const double local_mma = states_mma - scan;
    out["chunk_gla_16k_h16_k128"] = {{"cumsum_ms", cum},
                                     {"states_ms", states},
                                     {"output_ms", outk},
                                     {"scan_ms", scan},
                                     {"states_mma_ms", states_mma},
                                     {"states_walk_mma_ms", states_walk},
                                     {"states_mma_bf16_ms", states_pair_bf16},
                                     {"states_walk_mma_bf16_ms", states_walk_bf16},
                                     {"local_states_mma_ms", local_mma},
                                     {"output_mma_ms", out_mma},
                                     {"local_states_mma_tflops", local_flop / local_mma / 1e9},
                                     {"output_mma_tflops", out_flop / out_mma / 1e9}};
    std::fprintf(stderr,
                 "[micro] chunk GLA 16K tokens, 16 heads, K=V=128, one layer: cumsum %.3f ms, "
                 "states %.3f ms, output %.3f ms; bf16 mma: states %.3f ms (scan %.3f, local "
                 "%.3f = %.1f TFLOP/s), one-kernel walk %.3f ms (bf16 k, v: pair %.3f, walk "
                 "%.3f), output %.3f ms (%.1f TFLOP/s)\n",
                 cum, states, outk, states_mma, scan, local_mma, local_flop / local_mma / 1e9,
                 states_walk, states_pair_bf16, states_walk_bf16, out_mma,
                 out_flop / out_mma / 1e9);
    for (void* p : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(g),
                    static_cast<void*>(v), static_cast<void*>(o), static_cast<void*>(st),
                    static_cast<void*>(cs)}) {
      cudaFree(p);
    }
  }
  // HGRN2-1.3B's decode recurrence per layer (16 heads of 128, 32 padded rows, 1 or 32 of
  // them live): the fused step + g_norm against the step, then g_norm.
  for (const int live : {1, 32}) {
    const int rows = cuda::kDecodeRows, H = 16, K = 128, D = H * K;
    float* qfi = static_cast<float*>(DeviceRandom(rows * 3 * D * 4, 1.0f, false));
    float* lb = static_cast<float*>(DeviceRandom(D * 4, 0.5f, false));
    float* w = static_cast<float*>(DeviceRandom(D * 4, 1.0f, false));
    float* o = static_cast<float*>(DeviceRandom(rows * D * 4, 1.0f, false));
    void* normed = DeviceRandom(rows * D * 2, 1.0f, true);
    float* states = static_cast<float*>(DeviceRandom(size_t{32} * H * K * K * 4, 0.1f, false));
    std::vector<float*> host_ptrs(rows, nullptr);
    for (int r = 0; r < live; ++r) host_ptrs[r] = states + static_cast<size_t>(r) * H * K * K;
    float** ptrs = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&ptrs), rows * sizeof(float*));
    (void)cuda::CopyToDevice(ptrs, host_ptrs.data(), rows * sizeof(float*));
    cudaStream_t s = ctx->stream();
    const double fused = timer.Ms(
        [&] {
          cuda::Hgrn2DecodeStepNorm(qfi, lb, rows, H, K, 0.088f, ptrs, 0, w, 1e-5f, true, o, normed,
                                    cuda::Act::kBF16, s);
        },
        50);
    const double pair = timer.Ms(
        [&] {
          cuda::Hgrn2DecodeStep(qfi, lb, rows, H, K, 0.088f, ptrs, 0, o, s);
          cuda::RmsNormGated(o, D, nullptr, 0, w, 1e-5f, rows, D, D, normed, cuda::Act::kBF16, D,
                             s);
        },
        50);
    const std::string key = absl::StrCat("hgrn2_decode_step_live", live);
    out[key] = {{"fused_ms", fused}, {"step_then_norm_ms", pair}};
    std::fprintf(stderr, "[micro] %-28s fused %.4f ms, step + g_norm %.4f ms\n", key.c_str(), fused,
                 pair);
    for (void* p :
         {static_cast<void*>(qfi), static_cast<void*>(lb), static_cast<void*>(w),
          static_cast<void*>(o), normed, static_cast<void*>(states), static_cast<void*>(ptrs)}) {
      cudaFree(p);
    }
  }
  // LLaMA-1.3B decode attention (bf16, 16 heads of 128) for a step of 8 rows: the NIAH
  // grid's decode shape, with each row's keys its own and with the rows forks of one
  // cache (every full window read once for the 8; the timing does not look at values).
  // Bandwidth counts the K and V rows as each row sees them.
  for (const int64_t keys : {int64_t{4096}, int64_t{16384}}) {
    for (const bool forks : {false, true}) {
      const int rows = 8, H = 16, hd = 128;
      const int64_t width = H * hd, qkv_width = 3 * width;
      void* qkv = DeviceRandom(rows * qkv_width * 2, 1.0f, true);
      std::vector<void*> caches(rows);
      for (auto& c : caches) c = DeviceRandom(2 * keys * width * 2, 1.0f, true);
      const cuda::KvLineage root = cuda::KvLineage::Fresh();
      std::vector<cuda::KvLineage> lineages(rows);
      std::vector<cuda::DecodeAttentionRow> plan_rows;
      for (int r = 0; r < rows; ++r) {
        lineages[r] = forks ? root.ForkAt(keys - 1) : cuda::KvLineage::Fresh();
        plan_rows.push_back({r, keys, &lineages[r]});
      }
      std::vector<cuda::DecodeAttentionItem> items;
      cuda::PlanDecodeAttention(plan_rows, cuda::kDecodeShareRows, &items);
      std::vector<uint8_t> plan(cuda::DecodeAttentionPlanBytes(items.size()));
      cuda::WriteDecodeAttentionPlan(items, plan.data());
      const int max_windows = static_cast<int>(cuda::DecodeWindows(keys));
      void** dptrs = nullptr;
      int64_t *dcaps = nullptr, *dpos = nullptr;
      float* partial = nullptr;
      void *o = nullptr, *dplan = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&dptrs), rows * sizeof(void*));
      cudaMalloc(reinterpret_cast<void**>(&dcaps), rows * sizeof(int64_t));
      cudaMalloc(reinterpret_cast<void**>(&dpos), rows * sizeof(int64_t));
      cudaMalloc(reinterpret_cast<void**>(&partial),
                 cuda::DecodeAttentionScratchFloats(rows, H, hd, max_windows) * sizeof(float));
      cudaMalloc(&o, rows * width * 2);
      cudaMalloc(&dplan, plan.size());
      const std::vector<int64_t> caps(rows, keys), positions(rows, keys - 1);
      (void)cuda::CopyToDevice(dptrs, caches.data(), rows * sizeof(void*));
      (void)cuda::CopyToDevice(dcaps, caps.data(), rows * sizeof(int64_t));
      (void)cuda::CopyToDevice(dpos, positions.data(), rows * sizeof(int64_t));
      (void)cuda::CopyToDevice(dplan, plan.data(), plan.size());
      const double ms = timer.Ms(
          [&] {
            (void)cuda::DecodeAttention(qkv, cuda::Act::kBF16, rows, H, H, hd, dptrs, dcaps, dpos,
                                        0, 0.088f, dplan, rows * max_windows, max_windows, partial,
                                        o, ctx->stream());
          },
          20);
      const double gbs = rows * 2.0 * keys * width * 2 / (ms * 1e-3) / 1e9;
      const std::string key =
          absl::StrCat("decode_attention_8x", keys, "_h16_d128", forks ? "_forks" : "");
      out[key] = {{"ms", ms}, {"kv_gb_s", gbs}};
      std::fprintf(stderr, "[micro] %-28s %8.3f ms %7.0f GB/s(KV)\n", key.c_str(), ms, gbs);
      cudaFree(dplan);
      for (void* c : caches) cudaFree(c);
      for (void* p : {qkv, static_cast<void*>(dptrs), static_cast<void*>(dcaps),
                      static_cast<void*>(dpos), static_cast<void*>(partial), o}) {
        cudaFree(p);
      }
    }
  }
  // LLaMA-1.3B flash prefill attention (bf16, 16 heads of 128): a 16K segment from the
  // start and the last 16K segment of a 64K prefill (keys 0..64K), on each kernel that
  // runs here (the wgmma one on an sm_90a build on compute capability 9.0; the key without
  // a kernel name is the one FlashPrefillAttention picks). FLOPs count the causal half (QK^T
  // and PV, 4 * hd per visible query-key pair).
  for (const int64_t pos0 : {int64_t{0}, int64_t{49152}}) {
    const int rows = 16384, H = 16, hd = 128;
    const int64_t keys = pos0 + rows, width = H * hd;
    void* qkv = DeviceRandom(static_cast<size_t>(rows) * 3 * width * 2, 1.0f, true);
    void* kp = DeviceRandom(static_cast<size_t>(keys) * width * 2, 1.0f, true);
    void* vp = DeviceRandom(static_cast<size_t>(keys) * width * 2, 1.0f, true);
    void* o = nullptr;
    cudaMalloc(&o, static_cast<size_t>(rows) * width * 2);
    const double pairs = static_cast<double>(rows) * pos0 + 0.5 * rows * (rows + 1.0);
    for (const cuda::FlashKernel kernel :
         {cuda::FlashKernel::kMmaSync, cuda::FlashKernel::kWgmma}) {
      if (kernel == cuda::FlashKernel::kWgmma && cuda::ChosenFlashKernel(hd) != kernel) continue;
      const double ms = timer.Ms(
          [&] {
            (void)cuda::FlashPrefillAttentionWith(kernel, qkv, rows, H, H, hd, kp, vp, pos0, 0.088f,
                                                  o, ctx->stream());
          },
          5);
      const double tflops = 4.0 * hd * H * pairs / (ms * 1e-3) / 1e12;
      const bool wgmma = kernel == cuda::FlashKernel::kWgmma;
      const std::string key =
          absl::StrCat("flash_prefill_16k_at_", pos0, "_h16_d128", wgmma ? "_wgmma" : "_mma_sync");
      out[key] = {{"ms", ms}, {"tflops", tflops}};
      if (kernel == cuda::ChosenFlashKernel(hd)) {
        out[absl::StrCat("flash_prefill_16k_at_", pos0, "_h16_d128")] = out[key];
      }
      std::fprintf(stderr, "[micro] %-38s %8.3f ms %7.1f TFLOP/s\n", key.c_str(), ms, tflops);
    }
    for (void* p : {qkv, kp, vp, o}) cudaFree(p);
  }
  return out;
}

int ToolMain(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_random_weights)) {
    std::fprintf(stderr,
                 "cuda_bench builds random-weight models for timing only; pass "
                 "--random_weights to acknowledge.\n");
    return 2;
  }
#if !HGEVAL_HAVE_CUPTI
  if (absl::GetFlag(FLAGS_timeline)) {
    std::fprintf(stderr, "cuda_bench: --timeline needs a build with CUPTI\n");
    return 2;
  }
#endif
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "cuda_bench: no CUDA GPU visible\n");
    return 1;
  }
  if (absl::GetFlag(FLAGS_micro_only)) {
    auto ctx = cuda::DeviceContext::Create(0);
    if (!ctx.ok()) return 1;
    std::printf("%s\n", Micro(ctx->get()).dump(2).c_str());
    return 0;
  }
  const int repeats = absl::GetFlag(FLAGS_repeats);
  nlohmann::json report;
  std::string gpu;
  std::mt19937 rng(7);
  for (const std::string& family :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_models), ','))) {
    const nlohmann::json cfg_json = bench::RandomModelConfig(family, absl::GetFlag(FLAGS_layers));
    auto config = ParseModelConfig(cfg_json);
    if (!config.ok()) {
      std::fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
      return 1;
    }
    if (const std::string dir = absl::GetFlag(FLAGS_configs_out); !dir.empty()) {
      std::ofstream(absl::StrCat(dir, "/", family, "_config.json")) << cfg_json.dump(2) << "\n";
    }
    const auto tb = std::chrono::steady_clock::now();
    std::unique_ptr<cuda::CudaModel> model;
    {
      auto ckpt = MakeMemoryCheckpoint(cfg_json, bench::RandomWeights(family, *config));
      auto built = cuda::CudaModel::Build(
          *ckpt, *config, 0,
          absl::GetFlag(FLAGS_dtype) == "fp32" ? cuda::Act::kF32 : cuda::Act::kBF16);
      if (!built.ok()) {
        std::fprintf(stderr, "build failed: %s\n", std::string(built.status().message()).c_str());
        return 1;
      }
      model = std::move(*built);
    }
    gpu = model->device_name();
    std::fprintf(stderr, "[%s] built in %.1f s, %.2f GiB on device, %lld params\n", family.c_str(),
                 Seconds(tb, std::chrono::steady_clock::now()),
                 model->device_bytes_in_use() / double(1ull << 30),
                 static_cast<long long>(model->info().num_parameters));
    nlohmann::json r;
    r["params"] = model->info().num_parameters;
    if (absl::GetFlag(FLAGS_profile_passes)) {
      // Prefill first, then scoring: a profiler's kernel list splits at the second pass's
      // first kernel (the warm-ups are each pass's first run).
      r["prefill_16k_ms"] = Prefill(*model, 16384, 1, rng).ms;
      r["score_8x2048_tok_s"] = ScoreTokPerSec(*model, 8, 2048, 1, rng);
      std::fprintf(stderr, "[%s] profile passes: prefill 16K %.1f ms, score 8x2048 %.0f tok/s\n",
                   family.c_str(), r["prefill_16k_ms"].get<double>(),
                   r["score_8x2048_tok_s"].get<double>());
      report["models"][family] = r;
      continue;
    }
#if HGEVAL_HAVE_CUPTI
    if (absl::GetFlag(FLAGS_timeline)) {
      // Each pass untraced first (its wall time without the tracer), then traced twice.
      const double score_tok_s = ScoreTokPerSec(*model, 8, 2048, 3, rng);
      const double prefill_ms = Prefill(*model, 16384, 3, rng).ms;
      const int batch = std::clamp(absl::GetFlag(FLAGS_timeline_decode_batch), 1, 32);
      const std::string decode_key = absl::StrCat("decode_b", batch, "_16_steps");
      const double decode_ms = 16e3 * batch / DecodeTokPerSec(*model, batch, 16, rng);
      r["untraced"] = {{"score_8x2048_ms", 16384e3 / score_tok_s},
                       {"prefill_16k_ms", prefill_ms},
                       {decode_key + "_ms", decode_ms}};
      std::fprintf(stderr,
                   "[%s] untraced: score 8x2048 %.3f ms, prefill 16K %.3f ms, decode b%d 16 "
                   "steps %.3f ms\n",
                   family.c_str(), 16384e3 / score_tok_s, prefill_ms, batch, decode_ms);
      for (int pass = 0; pass < 2; ++pass) {
        bench::TimelineSummary score, prefill, decode;
        ScoreTokPerSec(*model, 8, 2048, 1, rng, &score);
        Prefill(*model, 16384, 1, rng, true, &prefill);
        DecodeTokPerSec(*model, batch, 16, rng, &decode);
        r["timeline"].push_back({{"score_8x2048", score.ToJson()},
                                 {"prefill_16k", prefill.ToJson()},
                                 {decode_key, decode.ToJson()}});
        std::fprintf(stderr,
                     "[%s] timeline %d, score 8x2048: %s[%s] timeline %d, prefill 16K: %s"
                     "[%s] timeline %d, decode b%d, 16 steps: %s",
                     family.c_str(), pass, score.ToText().c_str(), family.c_str(), pass,
                     prefill.ToText().c_str(), family.c_str(), pass, batch,
                     decode.ToText().c_str());
      }
      report["models"][family] = r;
      continue;
    }
#endif
    if (absl::GetFlag(FLAGS_prefill_16k_only)) {
      const auto p16 = Prefill(*model, 16384, repeats, rng);
      r["prefill_16k_ms"] = p16.ms;
      std::fprintf(stderr, "[%s] prefill 16K: %.1f ms\n", family.c_str(), p16.ms);
      report["models"][family] = r;
      continue;
    }
    const bool decode_only = absl::GetFlag(FLAGS_decode_only);
    if (!decode_only) {
      r["score_8x2048_tok_s"] = ScoreTokPerSec(*model, 8, 2048, repeats, rng);
      std::fprintf(stderr, "[%s] score 8x2048: %.0f tok/s\n", family.c_str(),
                   r["score_8x2048_tok_s"].get<double>());
      r["score_32x512_tok_s"] = ScoreTokPerSec(*model, 32, 512, repeats, rng);
      std::fprintf(stderr, "[%s] score 32x512: %.0f tok/s\n", family.c_str(),
                   r["score_32x512_tok_s"].get<double>());
      const auto p16 = Prefill(*model, 16384, repeats, rng);
      r["prefill_16k_ms"] = p16.ms;
      r["prefill_16k_peak_gib"] = p16.peak_gib;
      std::fprintf(stderr, "[%s] prefill 16K: %.1f ms, %.2f GiB\n", family.c_str(), p16.ms,
                   p16.peak_gib);
      if (!absl::GetFlag(FLAGS_skip_64k)) {
        const auto p64 =
            Prefill(*model, 65536, bench::RandomModelHasKvCache(family) ? 1 : repeats, rng);
        r["prefill_64k_ms"] = p64.ms;
        r["prefill_64k_peak_gib"] = p64.peak_gib;
        std::fprintf(stderr, "[%s] prefill 64K: %.1f ms, %.2f GiB\n", family.c_str(), p64.ms,
                     p64.peak_gib);
        const auto s64 =
            Prefill(*model, 65536, bench::RandomModelHasKvCache(family) ? 1 : repeats, rng,
                    /*keep_state=*/false);
        r["prefill_64k_scoring_ms"] = s64.ms;
        r["prefill_64k_scoring_peak_gib"] = s64.peak_gib;
        std::fprintf(stderr, "[%s] prefill 64K, scoring only (no state kept): %.1f ms, %.2f GiB\n",
                     family.c_str(), s64.ms, s64.peak_gib);
      }
    }
    const int steps = absl::GetFlag(FLAGS_decode_steps);
    r["decode_b1_tok_s"] = DecodeTokPerSec(*model, 1, steps, rng);
    r["decode_b32_tok_s"] = DecodeTokPerSec(*model, 32, steps, rng);
    std::fprintf(stderr, "[%s] decode: %.0f tok/s (b1), %.0f tok/s (b32)\n", family.c_str(),
                 r["decode_b1_tok_s"].get<double>(), r["decode_b32_tok_s"].get<double>());
    // The micro-benchmarks time HGRN2-1.3B's kernel shapes: once, beside that row.
    if (absl::GetFlag(FLAGS_micro) && bench::RandomModelLabel(family) == kMicroRow) {
      r["micro"] = Micro(model->context());
    }
    report["models"][family] = r;
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  report["gpu"] = gpu;
  report["date"] = date;
  report["dtype"] = absl::GetFlag(FLAGS_dtype);
  report["layers"] = absl::GetFlag(FLAGS_layers);
  report["weights"] = "random (timing only)";
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::string g = gpu;
    for (char& ch : g) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '-';
    }
    out = absl::StrCat("bench/results/", g, "-", date, ".json");
  }
  std::ofstream(out) << report.dump(2) << "\n";

  std::printf("\nGPU: %s, dtype %s, random weights (peers: bench/peers/kernel_peer.py).\n",
              gpu.c_str(), absl::GetFlag(FLAGS_dtype).c_str());
  std::vector<std::string> families;
  for (const auto& [fam, r] : report["models"].items()) families.push_back(fam);
  std::printf("%-34s", "");
  for (const auto& fam : families) std::printf(" %14s", fam.c_str());
  std::printf("\n");
  auto row = [&](const char* name, const char* key, const char* fmt) {
    std::printf("%-34s", name);
    for (const auto& fam : families) {
      char a[32] = "-";
      if (report["models"][fam].contains(key)) {
        std::snprintf(a, sizeof(a), fmt, report["models"][fam][key].get<double>());
      }
      std::printf(" %14s", a);
    }
    std::printf("\n");
  };
  row("scoring 8x2048 (tok/s)", "score_8x2048_tok_s", "%.0f");
  row("scoring 32x512 (tok/s)", "score_32x512_tok_s", "%.0f");
  row("prefill 16K (ms)", "prefill_16k_ms", "%.1f");
  row("prefill 16K peak (GiB)", "prefill_16k_peak_gib", "%.2f");
  row("prefill 64K (ms)", "prefill_64k_ms", "%.1f");
  row("prefill 64K peak (GiB)", "prefill_64k_peak_gib", "%.2f");
  row("prefill 64K scoring only (ms)", "prefill_64k_scoring_ms", "%.1f");
  row("prefill 64K scoring only peak (GiB)", "prefill_64k_scoring_peak_gib", "%.2f");
  row("greedy decode b1 (tok/s)", "decode_b1_tok_s", "%.0f");
  row("greedy decode b32 (tok/s)", "decode_b32_tok_s", "%.0f");
  std::printf("JSON: %s\n", out.c_str());
  return 0;
}

}  // namespace
}  // namespace hgeval

int main(int argc, char** argv) {
  return hgeval::bench::RunToolMain("cuda_bench", [&] { return hgeval::ToolMain(argc, argv); });
}
