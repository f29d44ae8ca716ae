// llama2.c's legacy ("version 0") checkpoint export, exposed as a Hugging Face LLaMA
// checkpoint. Layout: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len; a negative vocab_size means a separate classifier), then float32 arrays
// token_embedding [V,D], rms_att [L,D], wq [L,D,D], wk [L,KV,D], wv [L,KV,D], wo [L,D,D],
// rms_ffn [L,D], w1 [L,H,D], w2 [L,D,H], w3 [L,H,D], rms_final [D],
// freq_cis_real/imag [seq_len, head_size/2] each (unused), and wcls [V,D] if not shared.
// KV = n_kv_heads * head_size, head_size = D / n_heads.
#ifndef HGEVAL_ENGINE_LOADER_LLAMA2C_CHECKPOINT_H_
#define HGEVAL_ENGINE_LOADER_LLAMA2C_CHECKPOINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"

namespace hgeval {

struct Llama2cHeader {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // negative: the classifier is stored separately (not tied)
  int32_t seq_len = 0;
};

// The header and the file size it implies, validated (positive sizes, divisibility).
// `file` is used in messages only.
absl::StatusOr<Llama2cHeader> ParseLlama2cHeader(const std::string& file,
                                                 absl::Span<const uint8_t> contents);
// The exact file size the header implies, in bytes.
uint64_t Llama2cFileSize(const Llama2cHeader& header);

// llama2.c rotates interleaved pairs (2i, 2i+1) of each head; HF LLaMA rotates (i, i+hs/2).
// This reorders the rows of a [n_heads * head_size, cols] q or k projection like
// transformers' convert_llama_weights_to_hf `permute`: within each head, new row
// j * head_size/2 + i is old row 2i + j.
std::vector<float> InterleavedToHalfSplitRows(absl::Span<const float> weight, int64_t n_heads,
                                              int64_t head_size, int64_t cols);
// The inverse of InterleavedToHalfSplitRows.
std::vector<float> HalfSplitToInterleavedRows(absl::Span<const float> weight, int64_t n_heads,
                                              int64_t head_size, int64_t cols);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_LLAMA2C_CHECKPOINT_H_
