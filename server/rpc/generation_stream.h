// Streams a running generation to its Generate caller: the text as it is decoded (held
// back while it may still become part of a stop string), the token ids as they come, and
// the ends a stream can have (client cancel, deadline, the client gone, the server's
// shutdown grace run out: each cancels the work).
#ifndef HGEVAL_SERVER_RPC_GENERATION_STREAM_H_
#define HGEVAL_SERVER_RPC_GENERATION_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizer/tokenizer.h"
#include "hgeval/v1/models.grpc.pb.h"
#include "server/core/result_codec.h"
#include "server/exec/executor.h"
#include "server/exec/scheduler.h"
#include "server/rpc/generate_request.h"

namespace hgeval::server {

// A generation streamed to its end: the last chunk (the rest of the text and ids,
// finished, the finish reason and counts), not yet written, and the whole generation as
// the store keeps it.
struct StreamedGeneration {
  hgeval::v1::GenerateResponse last;
  Generation whole;
};

// Writes `work`'s chunks to `writer` while it runs (`work` was submitted for `plan`).
// The service's text is the exact continuation (engine/tokenizer/continuation_text.h);
// lm-eval's mode decodes the completion alone, its rule.
absl::StatusOr<StreamedGeneration> StreamGeneration(
    GenerateWork& work, const GenerationPlan& plan, const Tokenizer& tokenizer,
    grpc::ServerContext* context, const CallControl& control,
    const std::atomic<bool>& server_stopping, const std::string& model_name,
    grpc::ServerWriter<hgeval::v1::GenerateResponse>* writer);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RPC_GENERATION_STREAM_H_
