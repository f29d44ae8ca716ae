#include "tasks/niah/context.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/util/status_macros.h"

namespace hgeval::niah {
namespace {

constexpr char kQuestion[] =
    "What is the best thing to do in San Francisco? Answer: The best thing to do in San "
    "Francisco is";
constexpr char kAnswerSentence[] =
    "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a "
    "sunny day.";

}  // namespace

absl::StatusOr<NiahMode> ParseNiahMode(std::string_view name) {
  if (name == "easy") return NiahMode::kEasy;
  if (name == "standard") return NiahMode::kStandard;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown NIAH mode '", std::string(name), "' (easy, standard)"));
}

std::string_view NiahModeName(NiahMode mode) {
  return mode == NiahMode::kEasy ? "easy" : "standard";
}

std::string FoxPromptSuffix(std::string_view retrieval_question) {
  return absl::StrCat(
      "\n\nThere is an important piece of information hidden inside the above document. Now "
      "that you've read the document, I will quiz you about it. Answer the following "
      "question: ",
      std::string(retrieval_question));
}

NiahTexts DefaultNiahTexts(NiahMode mode) {
  NiahTexts texts;
  texts.needle =
      mode == NiahMode::kEasy
          ? absl::StrCat(
                "\nWhat is the best thing to do in San Francisco? Answer: ", kAnswerSentence, "\n")
          : absl::StrCat("\n", kAnswerSentence, "\n");
  texts.retrieval_question = kQuestion;
  texts.prompt_suffix = FoxPromptSuffix(kQuestion);
  texts.expected_answer = "eat a sandwich and sit in Dolores Park on a sunny day.";
  texts.key_phrases = {"sandwich", "Dolores Park"};
  return texts;
}

absl::StatusOr<NiahContextBuilder> NiahContextBuilder::Create(const Tokenizer& tokenizer,
                                                              absl::Span<const int32_t> haystack,
                                                              const NiahTexts& texts,
                                                              int64_t buffer_tokens) {
  if (buffer_tokens < 0) return absl::InvalidArgumentError("NIAH buffer must be >= 0");
  NiahContextBuilder b;
  b.buffer_tokens_ = buffer_tokens;
  if (tokenizer.adds_bos() && tokenizer.bos_id() >= 0) b.bos_.push_back(tokenizer.bos_id());
  b.bos_and_haystack_ = b.bos_;
  b.bos_and_haystack_.insert(b.bos_and_haystack_.end(), haystack.begin(), haystack.end());
  HG_ASSIGN_OR_RETURN(b.needle_, tokenizer.Encode(texts.needle, /*add_special=*/false));
  HG_ASSIGN_OR_RETURN(b.suffix_, tokenizer.Encode(texts.prompt_suffix, /*add_special=*/false));
  if (b.needle_.empty()) return absl::InvalidArgumentError("NIAH needle encodes to nothing");
  for (int32_t token : haystack) {
    if (b.sentence_end_.contains(token)) continue;
    // A lone byte-fallback token may not decode on its own; it is no sentence end.
    absl::StatusOr<std::string> piece =
        tokenizer.Decode(absl::MakeConstSpan(&token, 1), /*skip_special=*/true);
    if (!piece.ok()) {
      b.sentence_end_[token] = false;
      continue;
    }
    std::string_view text = *piece;
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
                             text.front() == '\r')) {
      text.remove_prefix(1);
    }
    b.sentence_end_[token] = text == ".";
  }
  return b;
}

bool NiahContextBuilder::IsSentenceEnd(int32_t token) const {
  auto it = sentence_end_.find(token);
  return it != sentence_end_.end() && it->second;
}

absl::StatusOr<NiahCellLayout> NiahContextBuilder::Layout(int64_t length, double depth) const {
  if (!(depth >= 0 && depth <= 100)) {
    return absl::InvalidArgumentError(absl::StrFormat("NIAH depth %g outside [0, 100]", depth));
  }
  const int64_t needle_size = static_cast<int64_t>(needle_.size());
  NiahCellLayout layout;
  layout.length = length;
  layout.depth = depth;
  int64_t n = std::min(length, haystack_size());
  if (n + needle_size > length - buffer_tokens_) n = length - buffer_tokens_ - needle_size;
  if (n < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NIAH length %d leaves no room for the %d-token needle after the %d-token buffer", length,
        needle_size, buffer_tokens_));
  }
  layout.context_tokens = n;
  if (depth == 100) {
    layout.target_insertion = n;
    layout.insertion_point = n;
    return layout;
  }
  // Kamradt: int(len(tokens_context) * (depth_percent / 100)).
  layout.target_insertion = static_cast<int64_t>(static_cast<double>(n) * (depth / 100.0));
  int64_t ip = layout.target_insertion;
  const int32_t* hay = bos_and_haystack_.data() + prefix_offset();
  while (ip > 0 && !IsSentenceEnd(hay[ip - 1])) --ip;
  layout.insertion_point = ip;
  return layout;
}

std::vector<int32_t> NiahContextBuilder::PrefixTokens(int64_t insertion_point) const {
  return std::vector<int32_t>(bos_and_haystack_.begin(),
                              bos_and_haystack_.begin() + prefix_offset() + insertion_point);
}

std::vector<int32_t> NiahContextBuilder::RestTokens(const NiahCellLayout& layout) const {
  std::vector<int32_t> rest = needle_;
  const auto hay = bos_and_haystack_.begin() + prefix_offset();
  rest.insert(rest.end(), hay + layout.insertion_point, hay + layout.context_tokens);
  rest.insert(rest.end(), suffix_.begin(), suffix_.end());
  return rest;
}

std::vector<int32_t> NiahContextBuilder::PromptTokens(const NiahCellLayout& layout) const {
  std::vector<int32_t> prompt = PrefixTokens(layout.insertion_point);
  std::vector<int32_t> rest = RestTokens(layout);
  prompt.insert(prompt.end(), rest.begin(), rest.end());
  return prompt;
}

}  // namespace hgeval::niah
