// Host-side launchers for the CUDA backend's kernels (implemented in kernels_*.cu).
// Activations are fp32 or bf16 (`Act`); recurrent states and accumulations are always
// fp32. Every launcher enqueues on `stream` and returns the launch error, if any.
//
// Row conventions: a "rows" buffer holds `num_seqs * seq_len` rows; row r belongs to
// sequence r / seq_len. The sequence path passes one sequence of T rows; the decode path
// passes many sequences of one row each. Per-sequence state lives at
// `state_ptrs[seq] + layer_offset` (floats); a null pointer marks a padding row, which
// kernels skip.
#ifndef HGEVAL_ENGINE_CUDA_KERNELS_H_
#define HGEVAL_ENGINE_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hgeval::cuda {

enum class Act { kF32, kBF16 };

// A packed batch of variable-length sequences, as device arrays (the layout of
// varlen kernels elsewhere: cu_seqlens plus chunk and tile tables built on the host).
// Sequence s owns rows [seq_row0[s], seq_row0[s+1]). The chunkwise kernels work on its
// chunks of kGlaChunk rows, counted from the sequence's own first row:
// [seq_chunk0[s], seq_chunk0[s+1]), chunk c starting at row chunk_row0[c] and belonging
// to sequence chunk_seq[c]. Flash-attention tiles of kFlashRows queries: tile t covers
// rows tile_q0[t].. of sequence tile_seq[t]. row_seq[r] is the sequence of row r.
// Sequences [0, state_seqs), whose chunks are [0, state_chunks), use the chunk states;
// the ones after them are one-chunk read-only forks (ChunkScanHasWork false) that read
// their start state in place and keep nothing, so the local-state and scan kernels skip
// them and the chunk states need no room for them. -1: every sequence.
// Null tables describe one sequence of `rows` rows (the single-sequence launchers).
struct PackView {
  int rows = 0;
  int num_seqs = 1;
  int num_chunks = 0;
  int num_tiles = 0;
  const int32_t* seq_row0 = nullptr;
  const int32_t* seq_chunk0 = nullptr;
  const int32_t* chunk_row0 = nullptr;
  const int32_t* chunk_seq = nullptr;
  const int32_t* row_seq = nullptr;
  const int32_t* tile_seq = nullptr;
  const int32_t* tile_q0 = nullptr;
  int state_seqs = -1;
  int state_chunks = -1;
};

inline int StateSeqs(const PackView& p) { return p.state_seqs >= 0 ? p.state_seqs : p.num_seqs; }
inline int StateChunks(const PackView& p) {
  return p.state_chunks >= 0 ? p.state_chunks : p.num_chunks;
}

// Whether a sequence of `chunks` chunks uses the chunk states (the scan has work for it):
// not when it keeps no final state and its only chunk reads its start state in place (a
// read-only fork that fits in one chunk).
__host__ __device__ inline bool ChunkScanHasWork(int chunks, bool keeps_final_state,
                                                 bool reads_start_in_place) {
  return keeps_final_state || chunks > (reads_start_in_place ? 1 : 0);
}

inline size_t ActSize(Act act) { return act == Act::kF32 ? 4 : 2; }

// ---- kernels_common.cu -----------------------------------------------------------

// h[r, :] = float(table[ids[r], :]).
cudaError_t EmbedRows(const void* table, Act table_act, const int32_t* ids, int rows, int dim,
                      float* h, cudaStream_t stream);

// If delta: h += delta (fp32). Then out = RMSNorm(h) * w, fp32 maths, stored as out_act.
cudaError_t AddRmsNorm(float* h, const float* delta, const float* w, float eps, int rows, int dim,
                       void* out, Act out_act, cudaStream_t stream);

// Per row and per group of `group` channels: y = RMSNorm(x) * w[c % group]
// (* swish(gate), or * gate when !gate_silu, when gate != null; gate held as gate_act);
// x held as x_act; fp32 maths, stored as out_act. A bf16 x (the bf16 packs' o) whose
// groups are multiples of 256 channels runs a block a row, each thread 8 channels, its
// sums of squares in another fixed order than fp32 x's (so bits differ in the last place);
// otherwise a bf16 x is widened exactly and gives the results of an fp32 x holding the
// same values. x_rows (device, `rows` entries): out's row r from x's and gate's row
// x_rows[r] (the rows gathered as they are read), not row r.
cudaError_t RmsNormGated(const void* x, int64_t x_ld, const void* gate, int64_t gate_ld,
                         const float* w, float eps, int rows, int width, int group, void* out,
                         Act out_act, int64_t out_ld, cudaStream_t stream, bool gate_silu = true,
                         Act gate_act = Act::kF32, Act x_act = Act::kF32,
                         const int32_t* x_rows = nullptr);

// out[r, c] = silu(gu[r, c]) * gu[r, inter + c] (gu[r, c] * gu[r, inter + c] when !silu:
// TNL's GLU); gu is [rows, 2*inter] of `act`, out's rows out_ld apart (0: inter). out may
// be gu itself with out_ld = 2*inter (in place, over the g half).
cudaError_t SwiGlu(const void* gu, int rows, int inter, void* out, Act act, cudaStream_t stream,
                   bool silu = true, int64_t out_ld = 0);

// x[r, c] += bias[c] on an fp32 [rows, width] buffer with leading dimension ld.
cudaError_t AddBias(float* x, int64_t ld, const float* bias, int rows, int width,
                    cudaStream_t stream);

// dst[i, :] = src[idx[i], :], `act` elements of width dim.
cudaError_t GatherRows(const void* src, const int32_t* idx, int n, int dim, void* dst, Act act,
                       cudaStream_t stream);

// Per row: lse = logsumexp(logits[r]); logprob[r] = logits[r][target[r]] - lse (0 if
// target < 0); argmax[r] = the lowest index of the maximum. When `normalize`, logits[r]
// is overwritten with log_softmax. Deterministic per row.
cudaError_t LogSoftmaxGather(float* logits, int rows, int vocab, const int32_t* targets,
                             float* logprob, int32_t* argmax, bool normalize, cudaStream_t stream);

// ---- kernels_gates.cu -------------------------------------------------------------

// HGRN2 gates from the fused projection qfi [rows, 3*D] (fp32: q | f | i):
// q = swish(q); k = (1-lb)*sigmoid(-f); g = log(lb + (1-lb)*sigmoid(f)) (lb = 0 when
// lower_bound is null); v = i. Outputs are fp32 [rows, D].
cudaError_t Hgrn2Gates(const float* qfi, int rows, int dim, const float* lower_bound, float* q,
                       float* k, float* g, float* v, cudaStream_t stream);

// TNL token-mixer inputs from proj [rows, 4*D] fp32 (q | k | v | u, D = heads * e):
// q = silu(q), k = silu(k), with LRPE when theta != null ([heads * e], position from
// positions[row]): q' = [q cos, q sin] (likewise k), dk = 2e; without it q' = q (zero
// padded to dk); g = log_decay[head] on every key channel; v as is. Writes q, k, g
// ([rows, heads, dk]) and v ([rows, heads, e]) for the GLA recurrences.
cudaError_t TnlGates(const float* proj, int rows, int heads, int e, int dk, const float* theta,
                     const int64_t* positions, const float* log_decay, float* q, float* k, float* g,
                     float* v, cudaStream_t stream);

// GLA gates. proj [rows, proj_ld] fp32 holds q (Dk) | k (Dk/G) | v (Dv/G) | out gate (Dv)
// at the given column offsets; gk [rows, Dk/G] fp32 is gk_proj's output (bias included).
// Writes q, k, g ([rows, H, dk]) and v ([rows, H, dv]), repeating kv heads for GQA, with
// g = logsigmoid(gk) / normalizer, clamped below at clamp_min when has_clamp.
cudaError_t GlaGates(const float* proj, int64_t proj_ld, int64_t k_off, int64_t v_off,
                     const float* gk, int rows, int heads, int kv_heads, int dk, int dv,
                     float normalizer, bool has_clamp, float clamp_min, float* q, float* k,
                     float* g, float* v, cudaStream_t stream);

// HGRN1 gates from ifg [rows, 3*E] fp32 (i | f | g): f' = logsigmoid(f), or
// log(lb + (1-lb) sigmoid(f)) when lower_bound; i' = silu(i) * (1 - exp(f')).
// Writes i' and f' into the i and f slots in place.
cudaError_t HgrnGates(float* ifg, int rows, int width, const float* lower_bound,
                      cudaStream_t stream);

// ---- kernels_chunk_gla.cu ---------------------------------------------------------

// Chunk size of the chunkwise GLA form.
constexpr int kGlaChunk = 64;
// Query rows per flash-attention tile.
constexpr int kFlashTileRows = 128;

// Packed forms of the three chunkwise launchers below: every sequence of the pack at
// once, each chunk counted from its own sequence's start, so a sequence's arithmetic is
// the same alone or packed. Sequence s starts from state_ptrs[s] + layer_offset and
// writes its final state to out_ptrs[s] + layer_offset (out_ptrs null: back to
// state_ptrs[s]; a null entry: nowhere, a read-only start). The output launcher takes the
// same pointers: a sequence whose final state goes elsewhere or nowhere has its first
// chunk read the start state in place (the states launcher does not copy it).
cudaError_t ChunkLocalCumsumPacked(float* g, const PackView& pack, int heads, int dk,
                                   cudaStream_t stream);
cudaError_t ChunkGlaStatesPacked(const float* k, const float* G, const float* v,
                                 const PackView& pack, int heads, int dk, int dv,
                                 float* const* state_ptrs, float* const* out_ptrs,
                                 int64_t layer_offset, float* chunk_states, cudaStream_t stream);
cudaError_t ChunkGlaOutputPacked(const float* q, const float* k, const float* G, const float* v,
                                 const float* chunk_states, float* const* state_ptrs,
                                 float* const* out_ptrs, int64_t layer_offset, const PackView& pack,
                                 int heads, int dk, int dv, float scale, float* o,
                                 cudaStream_t stream);

// In place: g (fp32 [T, H, K]) becomes its inclusive cumulative sum inside each chunk of
// kGlaChunk tokens.
cudaError_t ChunkLocalCumsum(float* g, int tokens, int heads, int dk, cudaStream_t stream);

// Chunk states of one sequence. state [H, K, V] fp32 is the state before token 0 and
// receives the state after the last token. chunk_states [ceil(T/C), H, K, V] receives the
// state before each chunk. G is the chunk-local cumsum of the log decay.
cudaError_t ChunkGlaStates(const float* k, const float* G, const float* v, int tokens, int heads,
                           int dk, int dv, float* state, float* chunk_states, cudaStream_t stream);

// o [T, H, V] fp32 = scale * (inter-chunk term from chunk_states + intra-chunk term).
cudaError_t ChunkGlaOutput(const float* q, const float* k, const float* G, const float* v,
                           const float* chunk_states, int tokens, int heads, int dk, int dv,
                           float scale, float* o, cudaStream_t stream);

// ---- kernels_hgrn_scan.cu ---------------------------------------------------------

// HGRN1 scan: h_t = exp(f_t) h_{t-1} + i_t; o_t = h_t. ifg as left by HgrnGates
// ([rows, 3E]); state [E] per sequence; o fp32 [rows, E]. Sequence s owns rows
// [seq_row0[s], seq_row0[s+1]) (device array of num_seqs + 1 offsets).
// Sequence s reads its state at state_ptrs[s] and writes it back to out_ptrs[s] (as for
// the chunkwise launchers; the same below for Mamba).
cudaError_t HgrnScan(const float* ifg, const int32_t* seq_row0, int num_seqs, int width,
                     float* const* state_ptrs, float* const* out_ptrs, int64_t layer_offset,
                     float* o, cudaStream_t stream);

// ---- kernels_mamba_scan.cu --------------------------------------------------------

// Mamba causal depthwise conv + bias + silu over the x half of xz ([rows, 2E] fp32).
// The conv state per sequence holds the previous (Kc-1) inputs of each channel:
// [E, Kc-1] at state_ptrs[seq] + layer_offset. out: [rows, E] of `act`.
cudaError_t MambaConv(const float* xz, const int32_t* seq_row0, int num_seqs, int inner, int kconv,
                      const float* conv_w, const float* conv_b, float* const* state_ptrs,
                      float* const* out_ptrs, int64_t layer_offset, void* out, Act act,
                      cudaStream_t stream);

// Mamba selective scan. x [rows, E] (fp32), dt_raw [rows, E] fp32 (dt_proj without
// bias), xdbc [rows, xdbc_ld] (fp32) holding B at column bc_off and C at bc_off + N,
// z = xz[:, E:2E] (fp32). State [E, N] at state_ptrs[seq] + layer_offset. y: [rows, E].
cudaError_t MambaScan(const float* x, const float* dt_raw, const float* dt_bias, const float* xdbc,
                      int64_t xdbc_ld, int bc_off, const float* xz, const float* a_neg,
                      const float* d_skip, const int32_t* seq_row0, int num_seqs, int inner,
                      int nstate, float* const* state_ptrs, float* const* out_ptrs,
                      int64_t layer_offset, void* y, Act act, cudaStream_t stream);

// ---- kernels_recurrent_step.cu --------------------------------------------------

// One recurrent step per row (decode): S = diag(exp g) S + k v^T; o = scale S^T q.
// Row r uses state_ptrs[r] + layer_offset ([H, K, V]); null rows are skipped.
cudaError_t RecurrentGlaStep(const float* q, const float* k, const float* g, const float* v,
                             int rows, int heads, int dk, int dv, float scale,
                             float* const* state_ptrs, int64_t layer_offset, float* o,
                             cudaStream_t stream);

// HGRN2 decode: the one-step recurrence with the gate maths fused in, straight from the
// fused projection qfi [rows, 3D] (q | f | i), K = V = head_dim.
cudaError_t Hgrn2DecodeStep(const float* qfi, const float* lower_bound, int rows, int heads,
                            int head_dim, float scale, float* const* state_ptrs,
                            int64_t layer_offset, float* o, cudaStream_t stream);

// HGRN2 decode with g_norm: Hgrn2DecodeStep's step, then out = RMSNorm over the D
// channels of the row's output times norm_w (out_act, [rows, D]). In one kernel (the
// heads of a row as one thread-block cluster) when `fuse` and
// Hgrn2DecodeStepNormFused(heads); else the step into o_scratch ([rows, D] fp32), then
// RmsNormGated.
bool Hgrn2DecodeStepNormFused(int heads);
cudaError_t Hgrn2DecodeStepNorm(const float* qfi, const float* lower_bound, int rows, int heads,
                                int head_dim, float scale, float* const* state_ptrs,
                                int64_t layer_offset, const float* norm_w, float eps, bool fuse,
                                float* o_scratch, void* out, Act out_act, cudaStream_t stream);

// ---- kernels_attention.cu -----------------------------------------------------------

// RoPE (rotate_half) in place on the q and k heads of qkv [rows, (H + 2*Hkv) * hd]
// (`act`), using positions[r]; angles in double, rotation in fp32.
cudaError_t ApplyRope(void* qkv, Act act, int rows, int heads, int kv_heads, int head_dim,
                      const int64_t* positions, double theta, cudaStream_t stream);

// Writes the k and v heads of qkv rows into the per-sequence KV caches. Row r belongs to
// sequence row_seq[r]; cache of sequence s: cache_ptrs[s], layout
// [L][2][cap[s]][Hkv][hd] of `act`; row r goes to position positions[r] of layer `layer`.
cudaError_t KvWrite(const void* qkv, Act act, int rows, const int32_t* row_seq, int heads,
                    int kv_heads, int head_dim, void* const* cache_ptrs, const int64_t* caps,
                    const int64_t* positions, int layer, cudaStream_t stream);

// Causal softmax over score tiles: scores [nh, tq, tk] fp32 (already scaled), query i of
// the tile sits at position q_pos0 + i, key j at position j. Writes probabilities of
// `act` to probs [nh, tq, tk] (masked entries 0).
cudaError_t CausalSoftmax(const float* scores, int nh, int tq, int tk, int64_t q_pos0, void* probs,
                          Act act, cudaStream_t stream);

// Flash-style causal prefill attention on tensor cores (bf16 only; head_dim 32, 64 or
// 128, else cudaErrorNotSupported): query row i of qkv sits at position pos0 + i and
// attends to keys [0, pos0 + i] of one sequence's cache planes k_plane / v_plane
// ([cap][Hkv][hd]). Online softmax in fp32; o [rows, H*hd] bf16.
cudaError_t FlashPrefillAttention(const void* qkv, int rows, int heads, int kv_heads, int head_dim,
                                  const void* k_plane, const void* v_plane, int64_t pos0,
                                  float scale, void* o, cudaStream_t stream);
// The same over a packed batch: every tile of pack.tile_* at once, tile t attending to
// the cache of its sequence (cache_ptrs / caps as for KvWrite, layer `layer`, whose keys
// were written already); row r's query sits at positions[r].
cudaError_t FlashPrefillAttentionPacked(const void* qkv, const PackView& pack, int heads,
                                        int kv_heads, int head_dim, void* const* cache_ptrs,
                                        const int64_t* caps, const int64_t* positions, int layer,
                                        float scale, void* o, cudaStream_t stream);

// Decode attention: one query row per sequence (row r = sequence r) at positions[r],
// attending to cache positions [0, positions[r]]. q from qkv; o [rows, H*hd] of `act`.
// Pass 1 runs the items of `plan` (device: a DecodeAttentionPlanHeader, then its items;
// decode_attention_plan.h), at most `max_items` of them, each a key window of one row or
// of rows whose caches hold its keys the same; pass 2 merges each row's windows in order.
// `partial` is scratch of DecodeAttentionScratchFloats(rows, heads, head_dim,
// max_windows) floats, max_windows ≥ DecodeWindows(positions[r] + 1) for every row.
inline int64_t DecodeAttentionScratchFloats(int64_t rows, int64_t heads, int64_t head_dim,
                                            int64_t max_windows) {
  return rows * heads * max_windows * (head_dim + 2);
}
// Rows a plan's items may share for this shape (PlanDecodeAttention's max_share): bf16 at
// head dims 32, 64 and 128 runs on tensor cores (16 rows), other vectorisable shapes on
// CUDA cores (8), the generic kernel a row at a time (1).
int DecodeAttentionShareRows(Act act, int head_dim);
cudaError_t DecodeAttention(const void* qkv, Act act, int rows, int heads, int kv_heads,
                            int head_dim, void* const* cache_ptrs, const int64_t* caps,
                            const int64_t* positions, int layer, float scale, const void* plan,
                            int max_items, int max_windows, float* partial, void* o,
                            cudaStream_t stream);

// ---- kernels_rope_kv.cu --------------------------------------------------------------

// ApplyRope then KvWrite in one pass (the same bits): q heads of qkv rotated in place,
// k heads rotated into the cache and v copied there (a row without a cache keeps its
// rotated k in qkv). qkv's k is not kept otherwise: attention reads keys from the caches.
cudaError_t RopeKvWrite(void* qkv, Act act, int rows, int heads, int kv_heads, int head_dim,
                        const int64_t* positions, double theta, const int32_t* row_seq,
                        void* const* cache_ptrs, const int64_t* caps, int layer,
                        cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KERNELS_H_
