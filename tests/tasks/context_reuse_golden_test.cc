// Shared-context reuse gives the same per-request log-likelihoods as scoring every
// request from scratch, for every task's real requests, on real models: the golden HGRN2
// (with the tok512 tokenizer), the golden LLaMA and stories260K. Also checks that
// reuse feeds fewer tokens for the multiple-choice tasks.
//
// Tolerance: exact equality (stricter than the 1e-5): every CPU product is
// row-invariant (engine/cpu/row_invariant_linear.h) and the recurrences run token by token,
// so a fork computes bit for bit what scratch computes.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks {
namespace {

struct Case {
  std::string model;
  std::string task;
};

// gtest prints a parameter into the ctest name; its bytes would hold pointers that change
// from run to run.
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << "/" << c.task; }

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.model + "_" + info.param.task;
}

class ContextReuseTest : public ::testing::TestWithParam<Case> {};

TEST_P(ContextReuseTest, SameLoglikelihoodsAsFromScratch) {
  const Case& c = GetParam();
  auto loaded = hgeval::testing::LoadFixtureModel(c.model);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto tokenizer = hgeval::testing::LoadTok512();
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto task = CreateTask(c.task);
  ASSERT_TRUE(task.ok());
  auto docs = (*task)->LoadDocs(hgeval::testing::SourcePath("data"));
  ASSERT_TRUE(docs.ok()) << docs.status();
  const size_t n_docs = c.task == "wikitext" ? 1 : 12;
  std::vector<Request> requests;
  for (size_t d = 0; d < n_docs && d < docs->size(); ++d) {
    auto doc_requests = (*task)->Requests((*docs)[d]);
    ASSERT_TRUE(doc_requests.ok());
    requests.insert(requests.end(), doc_requests->begin(), doc_requests->end());
  }

  EngineLanguageModelOptions options;
  options.bos_regime = BosRegime::kTokenizer;
  options.max_batch_tokens = 512;
  if (c.task == "wikitext") options.max_length = 128;  // several windows
  options.context_reuse = true;
  EngineLanguageModel reuse(loaded->model.get(), tokenizer->get(), options);
  options.context_reuse = false;
  EngineLanguageModel scratch(loaded->model.get(), tokenizer->get(), options);

  if ((*task)->output_type() == RequestType::kLoglikelihoodRolling) {
    std::vector<RollingRequest> batch;
    for (const auto& r : requests) batch.push_back({r.context});
    auto a = reuse.LoglikelihoodRolling(batch);
    auto b = scratch.LoglikelihoodRolling(batch);
    ASSERT_TRUE(a.ok() && b.ok());
    for (size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ((*a)[i].logprob, (*b)[i].logprob);
      EXPECT_EQ((*a)[i].n_tokens, (*b)[i].n_tokens);
    }
    return;
  }
  std::vector<LoglikelihoodRequest> batch;
  for (const auto& r : requests) batch.push_back({r.context, r.continuation});
  auto a = reuse.Loglikelihood(batch);
  auto b = scratch.Loglikelihood(batch);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ((*a)[i].logprob, (*b)[i].logprob) << "request " << i;
    EXPECT_EQ((*a)[i].is_greedy, (*b)[i].is_greedy) << "request " << i;
    EXPECT_EQ((*a)[i].n_tokens, (*b)[i].n_tokens);
  }
  EXPECT_EQ(reuse.stats().tokens_scored <= scratch.stats().tokens_scored, true);
  if (c.task.rfind("lambada", 0) != 0) {
    // Every multiple-choice doc shares its context between choices.
    EXPECT_LT(reuse.stats().tokens_fed, scratch.stats().tokens_fed);
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  std::vector<std::string> models = {"hgrn2"};
  models.push_back("llama");
  models.push_back("stories260K");
  for (const auto& model : models) {
    for (const char* task :
         {"piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge", "openbookqa", "boolq",
          "social_iqa", "lambada_openai", "lambada_standard", "wikitext"}) {
      cases.push_back({model, task});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllTasks, ContextReuseTest, ::testing::ValuesIn(Cases()), CaseName);

}  // namespace
}  // namespace hgeval::tasks
