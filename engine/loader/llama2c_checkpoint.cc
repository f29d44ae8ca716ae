#include "engine/loader/llama2c_checkpoint.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/loader/mapped_file.h"
#include "engine/loader/tensor_table.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

constexpr uint64_t kHeaderBytes = 7 * sizeof(int32_t);

// Float counts of the file's sections. Header fields are validated positive first; every
// product and sum is overflow-checked (a hostile header could claim 2^93 floats).
struct Sections {
  uint64_t embedding, norm_layers, wq, wkv, wo, ffn, rms_final, freq, wcls;
};

bool MulChecked(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool ComputeSections(const Llama2cHeader& h, Sections* s, uint64_t* total_floats) {
  const uint64_t dim = h.dim, hidden = h.hidden_dim, layers = h.n_layers;
  const uint64_t vocab = static_cast<uint64_t>(std::abs(static_cast<int64_t>(h.vocab_size)));
  const uint64_t head_size = dim / h.n_heads;
  const uint64_t kv_dim = head_size * h.n_kv_heads;
  uint64_t dd, kvd, hd;
  if (!MulChecked(vocab, dim, &s->embedding) || !MulChecked(layers, dim, &s->norm_layers) ||
      !MulChecked(dim, dim, &dd) || !MulChecked(layers, dd, &s->wq) ||
      !MulChecked(kv_dim, dim, &kvd) || !MulChecked(layers, kvd, &s->wkv) ||
      !MulChecked(hidden, dim, &hd) || !MulChecked(layers, hd, &s->ffn) ||
      !MulChecked(static_cast<uint64_t>(h.seq_len), head_size / 2, &s->freq)) {
    return false;
  }
  s->wo = s->wq;
  s->rms_final = dim;
  s->wcls = h.vocab_size < 0 ? s->embedding : 0;
  const uint64_t parts[] = {s->embedding, s->norm_layers, s->wq,   s->wkv, s->wkv,
                            s->wo,        s->norm_layers, s->ffn,  s->ffn, s->ffn,
                            s->rms_final, s->freq,        s->freq, s->wcls};
  uint64_t total = 0;
  for (uint64_t part : parts) {
    if (__builtin_add_overflow(total, part, &total)) return false;
  }
  // Bytes must fit too.
  uint64_t bytes;
  if (!MulChecked(total, sizeof(float), &bytes) || bytes > UINT64_MAX - kHeaderBytes) {
    return false;
  }
  *total_floats = total;
  return true;
}

std::vector<float> PermuteRows(absl::Span<const float> weight, int64_t n_heads, int64_t head_size,
                               int64_t cols, bool to_half_split) {
  std::vector<float> out(weight.size());
  const int64_t half = head_size / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t interleaved = h * head_size + 2 * i + j;
        const int64_t half_split = h * head_size + j * half + i;
        const int64_t src = to_half_split ? interleaved : half_split;
        const int64_t dst = to_half_split ? half_split : interleaved;
        std::memcpy(&out[dst * cols], &weight[src * cols], cols * sizeof(float));
      }
    }
  }
  return out;
}

}  // namespace

std::vector<float> InterleavedToHalfSplitRows(absl::Span<const float> weight, int64_t n_heads,
                                              int64_t head_size, int64_t cols) {
  return PermuteRows(weight, n_heads, head_size, cols, /*to_half_split=*/true);
}

std::vector<float> HalfSplitToInterleavedRows(absl::Span<const float> weight, int64_t n_heads,
                                              int64_t head_size, int64_t cols) {
  return PermuteRows(weight, n_heads, head_size, cols, /*to_half_split=*/false);
}

absl::StatusOr<Llama2cHeader> ParseLlama2cHeader(const std::string& file,
                                                 absl::Span<const uint8_t> contents) {
  const std::string where = absl::StrCat("llama2.c checkpoint ", file);
  if (contents.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(where, ": file is ", contents.size(),
                                            " bytes, shorter than the 28-byte header"));
  }
  int32_t fields[7];
  std::memcpy(fields, contents.data(), sizeof(fields));
  Llama2cHeader h{fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6]};
  const std::string values = absl::StrCat(
      "dim=", h.dim, " hidden_dim=", h.hidden_dim, " n_layers=", h.n_layers, " n_heads=", h.n_heads,
      " n_kv_heads=", h.n_kv_heads, " vocab_size=", h.vocab_size, " seq_len=", h.seq_len);
  if (h.dim <= 0 || h.hidden_dim <= 0 || h.n_layers <= 0 || h.n_heads <= 0 || h.n_kv_heads <= 0 ||
      h.vocab_size == 0 || h.vocab_size == INT32_MIN || h.seq_len <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": header has a non-positive size (", values, ")"));
  }
  if (h.dim % h.n_heads != 0 || (h.dim / h.n_heads) % 2 != 0 || h.n_heads % h.n_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where,
                     ": header is inconsistent: dim must be a multiple of n_heads with an even "
                     "head size, and n_heads a multiple of n_kv_heads (",
                     values, ")"));
  }
  Sections sections;
  uint64_t total_floats = 0;
  if (!ComputeSections(h, &sections, &total_floats)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": header implies an impossibly large file (", values, ")"));
  }
  const uint64_t expected = kHeaderBytes + total_floats * sizeof(float);
  if (contents.size() < expected) {
    return absl::DataLossError(absl::StrCat(where, ": file is ", contents.size(),
                                            " bytes but its header (", values, ") implies ",
                                            expected, "; truncated?"));
  }
  if (contents.size() > expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": file is ", contents.size(), " bytes but its header (", values,
                     ") implies ", expected, "; not a legacy (version 0) llama2.c export?"));
  }
  return h;
}

uint64_t Llama2cFileSize(const Llama2cHeader& header) {
  Sections sections;
  uint64_t total_floats = 0;
  if (!ComputeSections(header, &sections, &total_floats)) return 0;
  return kHeaderBytes + total_floats * sizeof(float);
}

absl::StatusOr<std::unique_ptr<Checkpoint>> OpenLlama2cCheckpoint(const std::string& bin_path) {
  HG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> mapped, MappedFile::Open(bin_path));
  HG_ASSIGN_OR_RETURN(Llama2cHeader h, ParseLlama2cHeader(bin_path, mapped->bytes()));
  const int64_t dim = h.dim, hidden = h.hidden_dim, layers = h.n_layers;
  const int64_t vocab = std::abs(static_cast<int64_t>(h.vocab_size));
  const int64_t head_size = dim / h.n_heads;
  const int64_t kv_dim = head_size * h.n_kv_heads;
  const bool shared_classifier = h.vocab_size > 0;

  nlohmann::json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", dim},
      {"intermediate_size", hidden},
      {"num_hidden_layers", layers},
      {"num_attention_heads", h.n_heads},
      {"num_key_value_heads", h.n_kv_heads},
      {"head_dim", head_size},
      {"vocab_size", vocab},
      {"max_position_embeddings", h.seq_len},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"hidden_act", "silu"},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
      {"tie_word_embeddings", shared_classifier},
      {"torch_dtype", "float32"},
  };
  std::string config_bytes = config.dump();
  auto table =
      std::make_unique<TensorTableCheckpoint>(std::move(config), std::move(config_bytes), bin_path);

  // Validated above: the file holds exactly these arrays, 4-byte aligned after the header.
  const uint8_t* cursor = mapped->bytes().data() + kHeaderBytes;
  auto take = [&cursor](int64_t floats) {
    absl::Span<const uint8_t> bytes(cursor, static_cast<size_t>(floats) * sizeof(float));
    cursor += bytes.size();
    return bytes;
  };
  auto add = [&](const std::string& name, std::vector<int64_t> shape,
                 absl::Span<const uint8_t> bytes) {
    TensorEntry entry;
    entry.info.name = name;
    entry.info.dtype = DType::kF32;
    entry.info.shape = std::move(shape);
    entry.info.file = bin_path;
    entry.bytes = bytes;
    table->AddTensor(std::move(entry));
  };
  auto layer_name = [](int64_t l, const char* suffix) {
    return absl::StrCat("model.layers.", l, ".", suffix);
  };
  // Per-layer slices of an [L, rows, cols] array.
  auto add_layers = [&](const char* suffix, int64_t rows, int64_t cols) {
    for (int64_t l = 0; l < layers; ++l) {
      add(layer_name(l, suffix),
          rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols},
          take(rows * cols));
    }
  };
  // q/k rows permuted into HF's rotate_half layout; the copies live in `permuted`.
  auto permuted = std::make_shared<std::vector<std::vector<float>>>();
  auto add_permuted_layers = [&](const char* suffix, int64_t heads) {
    for (int64_t l = 0; l < layers; ++l) {
      absl::Span<const uint8_t> bytes = take(heads * head_size * dim);
      std::vector<float> weight(bytes.size() / sizeof(float));
      std::memcpy(weight.data(), bytes.data(), bytes.size());
      permuted->push_back(InterleavedToHalfSplitRows(weight, heads, head_size, dim));
      const std::vector<float>& rows = permuted->back();
      add(layer_name(l, suffix), {heads * head_size, dim},
          {reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * sizeof(float)});
    }
  };

  permuted->reserve(2 * layers);
  absl::Span<const uint8_t> embedding = take(vocab * dim);
  add("model.embed_tokens.weight", {vocab, dim}, embedding);
  add_layers("input_layernorm.weight", 1, dim);
  add_permuted_layers("self_attn.q_proj.weight", h.n_heads);
  add_permuted_layers("self_attn.k_proj.weight", h.n_kv_heads);
  add_layers("self_attn.v_proj.weight", kv_dim, dim);
  add_layers("self_attn.o_proj.weight", dim, dim);
  add_layers("post_attention_layernorm.weight", 1, dim);
  add_layers("mlp.gate_proj.weight", hidden, dim);  // w1
  add_layers("mlp.down_proj.weight", dim, hidden);  // w2
  add_layers("mlp.up_proj.weight", hidden, dim);    // w3
  add("model.norm.weight", {dim}, take(dim));
  take(static_cast<int64_t>(h.seq_len) * head_size);  // freq_cis_real + freq_cis_imag
  add("lm_head.weight", {vocab, dim}, shared_classifier ? embedding : take(vocab * dim));

  table->KeepAlive(mapped);
  table->KeepAlive(permuted);
  return std::unique_ptr<Checkpoint>(std::move(table));
}

}  // namespace hgeval
