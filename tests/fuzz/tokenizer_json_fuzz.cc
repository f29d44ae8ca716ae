// libFuzzer target: arbitrary bytes as tokenizer.json. Loading must either fail with a
// status or give a tokenizer that encodes, decodes and stream-decodes without crashing.
// Seed corpus: tests/fuzz/corpus/tokenizer_json/. Commands: docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto tokenizer = hgeval::LoadHfTokenizerFromJson(json);
  if (!tokenizer.ok()) return 0;
  const hgeval::Tokenizer& tok = **tokenizer;
  for (const bool add_special : {false, true}) {
    auto ids = tok.Encode("Hello  world <s>\n\tnaïve 😀 ab!c </s>", add_special);
    if (!ids.ok()) continue;
    for (const bool skip_special : {true, false}) (void)tok.Decode(*ids, skip_special);
    hgeval::StreamingDecoder stream(&tok);
    for (const int32_t id : *ids) (void)stream.Push(id);
    (void)stream.Finish();
  }
  // Every id the tokenizer claims must decode or fail cleanly.
  for (int32_t id = -1; id <= tok.vocab_size() && id < 4096; ++id) {
    const int32_t one[] = {id};
    (void)tok.Decode(one);
    (void)tok.IdToPiece(id);
    (void)tok.IsSpecial(id);
  }
  (void)tok.ContentHash();
  return 0;
}
