// The three routes of an lm-eval run, for tests that compare them: in process (what
// hgeval-eval runs), as a server job (hgeval run) and per request over RPCs from the
// client (hgeval run --local). Each returns the run's results JSON with its per-sample
// records under "samples" (null after a failure, which is reported to gtest).
#ifndef HGEVAL_TESTS_SERVER_LM_EVAL_ROUTES_H_
#define HGEVAL_TESTS_SERVER_LM_EVAL_ROUTES_H_

#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "nlohmann/json.hpp"
#include "tasks/models/engine_language_model.h"

namespace hgeval::testing {

// The checkpoint opened in this process, its content hash recorded. `bos` unset: the
// evaluator's default; `max_length` 0: the evaluator's (the model's lm_eval_max_length).
nlohmann::json RunInProcess(const std::string& model_path, const std::string& tokenizer_path,
                            const std::vector<std::string>& task_names, int limit,
                            std::optional<tasks::BosRegime> bos = std::nullopt,
                            int64_t max_length = 0);

// A job on the server's model `model`, watched to its end. `bos` unset: left unset.
nlohmann::json RunAsJob(client::Client& client, const std::string& model,
                        const std::vector<std::string>& task_names, int limit,
                        std::optional<v1::BosMode> bos = std::nullopt);

// The tasks evaluated here on a RemoteLanguageModel. `bos` unset: its default.
nlohmann::json RunPerRequest(client::Client& client, const std::string& model,
                             const std::vector<std::string>& task_names, int limit,
                             std::optional<v1::BosMode> bos = std::nullopt);

// For each task: every per-sample record (doc, arguments, responses bit for bit, filtered
// responses, metrics), the aggregated results, and the task's config, version, n-shot,
// higher_is_better and n-samples are equal.
void ExpectSameTaskResults(const nlohmann::json& got, const nlohmann::json& want,
                           const std::vector<std::string>& task_names);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_LM_EVAL_ROUTES_H_
