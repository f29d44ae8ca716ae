// No Abseil headers in this file: see sentencepiece_backend.h.
#include "engine/tokenizer/sentencepiece_backend.h"

#include <sentencepiece_processor.h>

namespace hgeval {
namespace {

class LibSentencePiece final : public SentencePieceBackend {
 public:
  bool Init(std::string_view serialized, std::string* error) {
    const auto status = processor_.LoadFromSerializedProto(serialized);
    if (!status.ok()) {
      *error = status.ToString();
      return false;
    }
    return true;
  }

  bool Encode(std::string_view text, std::vector<int32_t>* ids, std::string* error) const override {
    std::vector<int> out;
    const auto status = processor_.Encode(text, &out);
    if (!status.ok()) {
      *error = status.ToString();
      return false;
    }
    ids->assign(out.begin(), out.end());
    return true;
  }

  bool Decode(const std::vector<int32_t>& ids, std::string* text,
              std::string* error) const override {
    const std::vector<int> in(ids.begin(), ids.end());
    const auto status = processor_.Decode(in, text);
    if (!status.ok()) {
      *error = status.ToString();
      return false;
    }
    return true;
  }

  int32_t piece_size() const override { return processor_.GetPieceSize(); }
  std::string IdToPiece(int32_t id) const override { return processor_.IdToPiece(id); }
  int32_t PieceToId(std::string_view piece) const override { return processor_.PieceToId(piece); }
  bool IsControl(int32_t id) const override { return processor_.IsControl(id); }
  bool IsUnknown(int32_t id) const override { return processor_.IsUnknown(id); }
  bool IsByte(int32_t id) const override { return processor_.IsByte(id); }
  int32_t bos_id() const override { return processor_.bos_id(); }
  int32_t eos_id() const override { return processor_.eos_id(); }
  int32_t unk_id() const override { return processor_.unk_id(); }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace

std::unique_ptr<SentencePieceBackend> SentencePieceBackend::Load(std::string_view serialized,
                                                                 std::string* error) {
  auto backend = std::make_unique<LibSentencePiece>();
  if (!backend->Init(serialized, error)) return nullptr;
  return backend;
}

}  // namespace hgeval
