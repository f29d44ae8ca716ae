// Thin wrapper around libsentencepiece with a plain-C++ interface.
//
// Why a separate unit: sentencepiece_processor.h declares `namespace absl { using
// std::string_view; }`, which clashes with Debian's Abseil (built with its own
// absl::string_view class). Only sentencepiece_backend.cc includes that header, and it
// includes no Abseil header.
#ifndef HGEVAL_ENGINE_TOKENIZER_SENTENCEPIECE_BACKEND_H_
#define HGEVAL_ENGINE_TOKENIZER_SENTENCEPIECE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hgeval {

class SentencePieceBackend {
 public:
  virtual ~SentencePieceBackend() = default;

  // Parses a serialized ModelProto (the bytes of tokenizer.model). On failure returns
  // nullptr and sets *error.
  static std::unique_ptr<SentencePieceBackend> Load(std::string_view serialized,
                                                    std::string* error);

  // Returns false and sets *error on failure.
  virtual bool Encode(std::string_view text, std::vector<int32_t>* ids,
                      std::string* error) const = 0;
  virtual bool Decode(const std::vector<int32_t>& ids, std::string* text,
                      std::string* error) const = 0;
  virtual int32_t piece_size() const = 0;
  virtual std::string IdToPiece(int32_t id) const = 0;
  virtual int32_t PieceToId(std::string_view piece) const = 0;
  virtual bool IsControl(int32_t id) const = 0;
  virtual bool IsUnknown(int32_t id) const = 0;
  virtual bool IsByte(int32_t id) const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  virtual int32_t unk_id() const = 0;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_SENTENCEPIECE_BACKEND_H_
