// The one codec between results and the bytes the result store keeps. Routes and jobs
// work on these engine-side types; only this file (and the RPC edge, for replies) knows
// the wire messages. Scores, classifications and generations are stored as their v1 wire
// messages, so stores written by earlier versions stay readable; NIAH cells as JSON.
#ifndef HGEVAL_SERVER_CORE_RESULT_CODEC_H_
#define HGEVAL_SERVER_CORE_RESULT_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "tasks/niah/sweep.h"

namespace hgeval::server {

// One scored (context, continuation) pair.
struct PairScore {
  ScoreResult score;  // token_logprobs always filled; top_k when asked
  int32_t context_tokens = 0;
  int32_t continuation_tokens = 0;
  bool cached = false;  // answered from the store (not stored)
};

// One classified LRA example.
struct Classification {
  std::vector<float> logits;
  int32_t predicted = 0;
  bool cached = false;  // not stored
};

// One finished generation.
struct Generation {
  std::string text;  // cut before the first stop string
  std::vector<int32_t> token_ids;
  // Unknown for rows stored before the reason was kept.
  std::optional<FinishReason> finish_reason;
  int32_t prompt_tokens = 0;
  bool cached = false;  // not stored
};

std::string EncodeStored(const PairScore& score);
std::string EncodeStored(const Classification& classification);
std::string EncodeStored(const Generation& generation);
std::string EncodeStored(const niah::NiahCellResult& cell);

// DATA_LOSS when `bytes` is not a stored form of the type.
absl::Status DecodeStored(std::string_view bytes, PairScore* score);
absl::Status DecodeStored(std::string_view bytes, Classification* classification);
absl::Status DecodeStored(std::string_view bytes, Generation* generation);
// Fills the cell's generation and marks it ran.
absl::Status DecodeStored(std::string_view bytes, niah::NiahCellResult* cell);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_CORE_RESULT_CODEC_H_
