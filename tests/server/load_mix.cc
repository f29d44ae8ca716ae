#include "tests/server/load_mix.h"

#include <random>

#include "absl/strings/str_cat.h"

namespace hgeval::testing {
namespace v1 = ::hgeval::v1;

namespace {

const char* const kTexts[] = {
    "Once upon a time, there was a little girl named Lily.",
    "She loved to play outside in the park.",
    "One day, she saw a big, red ball.",
    "Tom and his dog went to the beach to find shells.",
    "The sun was hot and the sky was blue.",
    "Mom said, \"Let's go home.\"",
};

}  // namespace

LoadRequest MakeLoadRequest(const std::string& model, int client, int index) {
  std::mt19937 rng(static_cast<uint32_t>(client * 7919 + index * 104729 + 1));
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  LoadRequest r;
  const int kind = (client + index) % 8;
  if (kind < 4) {
    r.kind = LoadRequest::kLoglikelihood;
    r.loglikelihood.set_model(model);
    r.loglikelihood.set_no_cache(true);
    r.loglikelihood.set_return_token_logprobs(true);
    const int pairs = uniform(1, 4);
    for (int p = 0; p < pairs; ++p) {
      v1::LoglikelihoodPair* pair = r.loglikelihood.add_pairs();
      if (uniform(0, 1) == 0) {
        pair->set_context(kTexts[uniform(0, 5)]);
        pair->set_continuation(std::string(" ") + kTexts[uniform(0, 5)]);
        r.tokens += 30;
      } else {
        const int n = uniform(1, 48), m = uniform(1, 16);
        for (int i = 0; i < n; ++i) pair->add_context_ids(uniform(3, 511));
        for (int i = 0; i < m; ++i) pair->add_continuation_ids(uniform(3, 511));
        r.tokens += n + m - 1;
      }
    }
  } else if (kind < 6) {
    r.kind = LoadRequest::kGenerate;
    r.generate.set_model(model);
    r.generate.set_no_cache(true);
    r.generate.set_prompt(kTexts[uniform(0, 5)]);
    r.generate.set_max_tokens(uniform(4, 24));
    r.generate.set_ignore_eos(true);
    if (uniform(0, 1) == 1) {
      r.generate.set_temperature(0.8f);
      r.generate.set_top_p(0.9f);
      r.generate.set_seed(static_cast<uint64_t>(client * 1000 + index));
    }
    r.tokens += r.generate.max_tokens() + 12;
  } else if (kind == 6) {
    r.kind = LoadRequest::kRolling;
    r.rolling.set_model(model);
    r.rolling.set_no_cache(true);
    r.rolling.set_max_length(uniform(8, 64));
    r.rolling.add_inputs()->set_text(
        absl::StrCat(kTexts[uniform(0, 5)], " ", kTexts[uniform(0, 5)]));
    r.tokens += 30;
  } else {
    r.kind = LoadRequest::kTokenize;
    r.tokenize.set_model(model);
    r.tokenize.set_text(kTexts[uniform(0, 5)]);
  }
  return r;
}

absl::StatusOr<std::string> RunLoadRequest(client::Client& client, const LoadRequest& request) {
  std::string out;
  switch (request.kind) {
    case LoadRequest::kLoglikelihood: {
      auto response = client.Loglikelihood(request.loglikelihood);
      if (!response.ok()) return response.status();
      for (const auto& r : response->results()) {
        absl::StrAppend(&out, r.logprob(), "/", r.is_greedy(), "/", r.context_tokens(), "/",
                        r.continuation_tokens(), ":");
        for (float lp : r.token_logprobs()) absl::StrAppend(&out, lp, ",");
        out += ";";
      }
      // Doubles printed with full precision too.
      for (const auto& r : response->results()) {
        double v = r.logprob();
        out.append(reinterpret_cast<const char*>(&v), sizeof(v));
      }
      return out;
    }
    case LoadRequest::kRolling: {
      auto response = client.LoglikelihoodRolling(request.rolling);
      if (!response.ok()) return response.status();
      for (const auto& r : response->results()) {
        double v = r.logprob();
        out.append(reinterpret_cast<const char*>(&v), sizeof(v));
        absl::StrAppend(&out, "/", r.tokens(), "/", r.windows(), ";");
      }
      return out;
    }
    case LoadRequest::kGenerate: {
      auto response = client.Generate(request.generate);
      if (!response.ok()) return response.status();
      for (int32_t id : response->token_ids()) absl::StrAppend(&out, id, ",");
      absl::StrAppend(&out, "|", response->text(), "|", response->finish_reason());
      return out;
    }
    case LoadRequest::kTokenize: {
      auto response = client.Tokenize(request.tokenize);
      if (!response.ok()) return response.status();
      for (int32_t id : response->ids()) absl::StrAppend(&out, id, ",");
      return out;
    }
  }
  return out;
}

}  // namespace hgeval::testing
