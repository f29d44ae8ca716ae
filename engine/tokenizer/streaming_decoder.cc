// StreamingDecoder: incremental decoding that matches a one-shot Decode.
//
// Each step decodes a small window of ids twice: with and without the new ids; the
// difference is the new text (the idea of HF's DecodeStream and vLLM's detokenizer). The
// window starts at an already emitted, non-special token, so rules that depend on what
// precedes a token (SentencePiece's leading-space stripping, byte-fallback runs) see the
// same context as a full decode. Text ending in U+FFFD is held back until more ids arrive:
// it may be an incomplete UTF-8 sequence that the next token completes.
#include <algorithm>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/status_macros.h"

namespace hgeval {

absl::StatusOr<std::string> StreamingDecoder::DecodeRange(size_t begin, size_t end) const {
  return tokenizer_->Decode(absl::MakeConstSpan(ids_).subspan(begin, end - begin),
                            /*skip_special=*/true);
}

absl::StatusOr<std::string> StreamingDecoder::Push(int32_t id) {
  ids_.push_back(id);
  HG_ASSIGN_OR_RETURN(const std::string prefix, DecodeRange(prefix_offset_, read_offset_));
  HG_ASSIGN_OR_RETURN(const std::string full, DecodeRange(prefix_offset_, ids_.size()));
  if (full.ends_with(utf8::kReplacementChar) || utf8::IncompleteTailLength(full) > 0) {
    return std::string();  // maybe an incomplete character: wait for the next id
  }
  std::string fresh;
  if (full.starts_with(prefix)) {
    fresh = full.substr(prefix.size());
  } else {
    // The new ids changed already emitted text (only possible with HF's ByteFallback
    // decoder, which turns a whole byte run into U+FFFD once any byte in it is invalid).
    // Emitted text cannot be taken back: emit what follows the common prefix.
    const auto mismatch = std::mismatch(full.begin(), full.end(), prefix.begin(), prefix.end());
    size_t common = mismatch.first - full.begin();
    while (common > 0 && (static_cast<unsigned char>(full[common]) & 0xC0) == 0x80) --common;
    fresh = full.substr(common);
  }
  // Advance the window: the new context starts at the first non-special id among those
  // just emitted (a skipped special id must not start a window: the token after it would
  // be decoded as if it began the text).
  for (size_t i = read_offset_; i < ids_.size(); ++i) {
    if (!tokenizer_->IsSpecial(ids_[i])) {
      prefix_offset_ = i;
      break;
    }
  }
  read_offset_ = ids_.size();
  // Drop ids before the window so memory stays bounded on long generations.
  if (prefix_offset_ > 256) {
    ids_.erase(ids_.begin(), ids_.begin() + prefix_offset_);
    read_offset_ -= prefix_offset_;
    prefix_offset_ = 0;
  }
  emitted_bytes_ += fresh.size();
  return fresh;
}

absl::StatusOr<std::string> StreamingDecoder::Finish() {
  HG_ASSIGN_OR_RETURN(const std::string prefix, DecodeRange(prefix_offset_, read_offset_));
  HG_ASSIGN_OR_RETURN(const std::string full, DecodeRange(prefix_offset_, ids_.size()));
  std::string rest;
  if (full.starts_with(prefix)) {
    rest = full.substr(prefix.size());
  } else {
    const auto mismatch = std::mismatch(full.begin(), full.end(), prefix.begin(), prefix.end());
    size_t common = mismatch.first - full.begin();
    while (common > 0 && (static_cast<unsigned char>(full[common]) & 0xC0) == 0x80) --common;
    rest = full.substr(common);
  }
  rest = utf8::ToValidLossy(rest);
  ids_.clear();
  prefix_offset_ = read_offset_ = 0;
  emitted_bytes_ += rest.size();
  return rest;
}

}  // namespace hgeval
