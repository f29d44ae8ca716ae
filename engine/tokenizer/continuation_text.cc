#include "engine/tokenizer/continuation_text.h"

#include <utility>

#include "engine/util/status_macros.h"

namespace hgeval {

absl::StatusOr<StreamingDecoder> DecoderAfter(const Tokenizer& tokenizer,
                                              absl::Span<const int32_t> prompt) {
  StreamingDecoder decoder(&tokenizer);
  for (int32_t id : prompt) HG_RETURN_IF_ERROR(decoder.Push(id).status());
  return decoder;
}

absl::StatusOr<std::string> ContinuationText(const Tokenizer& tokenizer,
                                             absl::Span<const int32_t> prompt,
                                             absl::Span<const int32_t> completion) {
  HG_ASSIGN_OR_RETURN(StreamingDecoder decoder, DecoderAfter(tokenizer, prompt));
  std::string text;
  for (int32_t id : completion) {
    HG_ASSIGN_OR_RETURN(std::string piece, decoder.Push(id));
    text += piece;
  }
  HG_ASSIGN_OR_RETURN(std::string rest, decoder.Finish());
  return text + rest;
}

}  // namespace hgeval
