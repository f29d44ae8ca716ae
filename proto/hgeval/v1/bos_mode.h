// The one reading of the wire's BosMode, for the server and the clients alike:
// BOS_MODE_UNSPECIFIED (0, a field left unset) is lm-eval >= 0.4.9.2's rule, the
// tokenizer's own special tokens, as BOS_MODE_TOKENIZER; BOS_MODE_NONE is
// lm-eval <= 0.4.9.1's "no special tokens".
#ifndef HGEVAL_PROTO_HGEVAL_V1_BOS_MODE_H_
#define HGEVAL_PROTO_HGEVAL_V1_BOS_MODE_H_

#include "hgeval/v1/models.pb.h"

namespace hgeval::v1 {

// Whether text is encoded with the tokenizer's special tokens.
inline bool AddsSpecialTokens(BosMode mode) { return mode != BOS_MODE_NONE; }

}  // namespace hgeval::v1

#endif  // HGEVAL_PROTO_HGEVAL_V1_BOS_MODE_H_
