// Results in their wire form: the RPC edge's replies and (through server/core/result_codec)
// the stored form. The one place a result type meets its v1 message.
#ifndef HGEVAL_SERVER_CORE_WIRE_RESULTS_H_
#define HGEVAL_SERVER_CORE_WIRE_RESULTS_H_

#include <optional>

#include "hgeval/v1/models.pb.h"
#include "server/core/result_codec.h"

namespace hgeval::server {

// Every field of the score (token_logprobs and top_k included); continuation_ids empty.
hgeval::v1::LoglikelihoodResult ToWire(const PairScore& score);
hgeval::v1::ClassifyResult ToWire(const Classification& classification);
// The whole generation as one (last) message: finished, all text and ids.
hgeval::v1::GenerateResponse ToWire(const Generation& generation);
// kCancelled has no wire value (UNSPECIFIED): a cancelled generation is not answered.
hgeval::v1::FinishReason ToWire(FinishReason reason);

PairScore FromWire(const hgeval::v1::LoglikelihoodResult& wire);
Classification FromWire(const hgeval::v1::ClassifyResult& wire);
Generation FromWire(const hgeval::v1::GenerateResponse& wire);
// UNSPECIFIED (rows stored before the reason was kept) and unknown values: nullopt.
std::optional<FinishReason> FromWire(hgeval::v1::FinishReason reason);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_CORE_WIRE_RESULTS_H_
