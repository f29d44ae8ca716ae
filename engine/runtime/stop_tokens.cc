#include "engine/runtime/stop_tokens.h"

#include <algorithm>

namespace hgeval {

std::vector<int32_t> GenerationStopTokens(const Tokenizer& tokenizer, int32_t model_eos) {
  std::vector<int32_t> stops;
  auto add = [&stops](int32_t id) {
    if (id >= 0 && std::find(stops.begin(), stops.end(), id) == stops.end()) stops.push_back(id);
  };
  add(tokenizer.eos_id());
  add(model_eos);
  if (tokenizer.kind() == "llama2c") add(tokenizer.bos_id());
  return stops;
}

}  // namespace hgeval
