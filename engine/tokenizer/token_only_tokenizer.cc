#include "engine/tokenizer/token_only_tokenizer.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace hgeval {
namespace {

constexpr char kNoText[] =
    "no tokenizer: this model takes token-level requests only (such as mqar's); give it a "
    "tokenizer for text";

class TokenOnlyTokenizer : public Tokenizer {
 public:
  explicit TokenOnlyTokenizer(int32_t vocab_size) : vocab_size_(vocab_size) {}

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view, bool) const override {
    return absl::FailedPreconditionError(kNoText);
  }
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t>, bool) const override {
    return absl::FailedPreconditionError(kNoText);
  }
  int32_t vocab_size() const override { return vocab_size_; }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return -1; }
  bool adds_bos() const override { return false; }
  std::string IdToPiece(int32_t id) const override { return "<" + std::to_string(id) + ">"; }
  std::string_view kind() const override { return "none"; }
  std::string ContentHash() const override { return "none"; }

 private:
  int32_t vocab_size_;
};

}  // namespace

std::unique_ptr<Tokenizer> MakeTokenOnlyTokenizer(int32_t vocab_size) {
  return std::make_unique<TokenOnlyTokenizer>(vocab_size);
}

}  // namespace hgeval
