// SentencePiece tokenizer.model through libsentencepiece.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/tokenizer/sentencepiece_backend.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_config.h"
#include "engine/tokenizer/tokenizer_factories.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/sha256.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(std::unique_ptr<SentencePieceBackend> backend, bool add_bos, bool add_eos,
                         std::string hash)
      : backend_(std::move(backend)), add_bos_(add_bos), add_eos_(add_eos), hash_(std::move(hash)) {
    // A piece that decodes to a lone ASCII letter: used as left context when decoding a
    // run that does not start the output (libsentencepiece strips a leading space there).
    const int32_t a = backend_->PieceToId("a");
    if (a >= 0 && a != backend_->unk_id()) {
      std::string text, error;
      if (backend_->Decode({a}, &text, &error) && text == "a") context_piece_ = a;
    }
  }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool add_special) const override {
    if (const size_t bad = utf8::FirstInvalidOffset(text); bad != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("text is not valid UTF-8 (byte offset ", bad, ")"));
    }
    std::vector<int32_t> body;
    std::string error;
    if (!backend_->Encode(text, &body, &error)) {
      return absl::InternalError(absl::StrCat("sentencepiece encode: ", error));
    }
    if (!add_special) return body;
    std::vector<int32_t> ids;
    ids.reserve(body.size() + 2);
    if (add_bos_ && bos_id() >= 0) ids.push_back(bos_id());
    ids.insert(ids.end(), body.begin(), body.end());
    if (add_eos_ && eos_id() >= 0) ids.push_back(eos_id());
    return ids;
  }

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special) const override {
    for (const int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("token id ", id, " out of range [0, ", vocab_size(), ")"));
      }
    }
    std::string out;
    std::vector<int32_t> run;
    bool at_start = true;
    auto flush = [&]() -> absl::Status {
      if (run.empty()) return absl::OkStatus();
      std::string text, error;
      const bool with_context = !at_start && context_piece_ >= 0;
      if (with_context) run.insert(run.begin(), context_piece_);
      if (!backend_->Decode(run, &text, &error)) {
        return absl::InternalError(absl::StrCat("sentencepiece decode: ", error));
      }
      out.append(with_context ? text.substr(1) : text);
      run.clear();
      at_start = false;
      return absl::OkStatus();
    };
    for (const int32_t id : ids) {
      if (backend_->IsControl(id)) {
        if (skip_special) continue;
        HG_RETURN_IF_ERROR(flush());
        out.append(backend_->IdToPiece(id));
        at_start = false;
        continue;
      }
      run.push_back(id);
    }
    HG_RETURN_IF_ERROR(flush());
    return out;
  }

  int32_t vocab_size() const override { return backend_->piece_size(); }
  int32_t bos_id() const override { return backend_->bos_id(); }
  int32_t eos_id() const override { return backend_->eos_id(); }
  bool adds_bos() const override { return add_bos_ && bos_id() >= 0; }
  std::string IdToPiece(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return "";
    return backend_->IdToPiece(id);
  }
  std::string_view kind() const override { return "sentencepiece"; }
  std::string ContentHash() const override { return hash_; }
  bool IsSpecial(int32_t id) const override {
    return id >= 0 && id < vocab_size() && backend_->IsControl(id);
  }

 private:
  std::unique_ptr<SentencePieceBackend> backend_;
  bool add_bos_;
  bool add_eos_;
  std::string hash_;
  int32_t context_piece_ = -1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeSentencePieceTokenizer(
    std::string_view model_bytes, std::string_view config_json) {
  std::string error;
  auto backend = SentencePieceBackend::Load(model_bytes, &error);
  if (backend == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid SentencePiece model: ", error));
  }
  HG_ASSIGN_OR_RETURN(const TokenizerConfig config, ParseTokenizerConfig(config_json));
  // The model itself has no add-BOS flag; Llama/Mistral-style models (bos_id defined) are
  // used with BOS, as their transformers tokenizers do. tokenizer_config.json overrides.
  const bool add_bos = config.add_bos_token.value_or(backend->bos_id() >= 0);
  const bool add_eos = config.add_eos_token.value_or(false);
  Sha256 hash;
  hash.Update("sentencepiece");
  hash.Update(std::string_view("\0", 1));
  hash.Update(model_bytes);
  hash.Update(absl::StrCat("|bos=", add_bos ? "1" : "0", "|eos=", add_eos ? "1" : "0"));
  return std::unique_ptr<Tokenizer>(
      new SentencePieceTokenizer(std::move(backend), add_bos, add_eos, hash.HexDigest()));
}

}  // namespace hgeval
