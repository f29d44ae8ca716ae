// vLLM's tokenizer endpoints, which lm-evaluation-harness's `tokenizer_backend=remote` (the
// `auto` default of local-completions in recent versions) probes and uses, so that lm-eval
// needs no local copy of the model's tokenizer:
//   GET  /tokenizer_info  {"model", "bos_token", "eos_token", "pad_token", "max_model_len"}
//   POST /tokenize        {"model"?, "prompt", "add_special_tokens"?} -> {"tokens", "count",
//                                                                         "max_model_len"}
//   POST /detokenize      {"model"?, "tokens"} -> {"prompt"}
// translated onto the Tokenize/Detokenize/ListModels RPCs. Requests that name no model use
// the server's only model (vLLM serves one). Under /models/<name>/ the routes serve that
// model (a base_url that names the model, for servers with several).
#ifndef HGEVAL_SERVER_HTTP_REMOTE_TOKENIZER_H_
#define HGEVAL_SERVER_HTTP_REMOTE_TOKENIZER_H_

#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hgeval/v1/models.grpc.pb.h"
#include "server/http/http_gateway.h"

namespace hgeval::server {

class RemoteTokenizerGateway {
 public:
  // `bos_models`: models whose /tokenize always adds the special tokens (the tokenizer BOS
  // regime for lm-eval, which asks for none; server flag --http_tokenizer_bos).
  explicit RemoteTokenizerGateway(hgeval::v1::ModelService::StubInterface* stub,
                                  JsonLimits json_limits = {},
                                  absl::flat_hash_set<std::string> bos_models = {})
      : stub_(stub), json_limits_(json_limits), bos_models_(std::move(bos_models)) {}

  // `model` may be empty (the only model). Bodies are the JSON responses above.
  absl::StatusOr<std::string> Info(const std::string& model,
                                   const std::string& authorization) const;
  // A prompt that is exactly the BOS or EOS token's text (as Info names them) encodes to
  // that token, as Hugging Face tokenizers parse special tokens in text: lm-eval's remote
  // tokenizer finds bos_token_id / eos_token_id that way.
  // `path_model`: the model a model-scoped path (/models/<name>/tokenize) names.
  absl::StatusOr<std::string> Tokenize(std::string_view body, const std::string& authorization,
                                       const std::string& path_model = "") const;
  absl::StatusOr<std::string> Detokenize(std::string_view body, const std::string& authorization,
                                         const std::string& path_model = "") const;

 private:
  struct Special {
    std::string model;
    int64_t max_model_len = 0;
    int32_t bos_id = -1, eos_id = -1;
    std::string bos_text, eos_text;  // empty when the id is -1
  };
  // The model (named, or the only one), loaded, with its special tokens' texts.
  absl::StatusOr<Special> Describe(const std::string& model,
                                   const std::string& authorization) const;

  hgeval::v1::ModelService::StubInterface* stub_;
  const JsonLimits json_limits_;
  const absl::flat_hash_set<std::string> bos_models_;
  // model -> (tokenizer hash, its description), for loaded models.
  mutable absl::Mutex cache_mu_;
  mutable absl::flat_hash_map<std::string, std::pair<std::string, Special>> cache_
      ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_HTTP_REMOTE_TOKENIZER_H_
