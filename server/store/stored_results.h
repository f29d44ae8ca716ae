// "Look in the store, compute the rest": the one lookup every route that keeps results
// uses (scoring pairs, LRA classification, generations over RPC and in jobs). A stored
// row that does not decode (server/core/result_codec) counts as missing, so it is recomputed
// and rewritten rather than served.
#ifndef HGEVAL_SERVER_STORE_STORED_RESULTS_H_
#define HGEVAL_SERVER_STORE_STORED_RESULTS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/result_codec.h"
#include "server/store/result_store.h"

namespace hgeval::server {

// Which keys were found: found[i] when out[i] holds the stored result of keys[i], marked
// cached. A null store finds nothing.
template <typename Result>
absl::StatusOr<std::vector<bool>> LookUpStored(ResultStore* store,
                                               const std::vector<StoreKey>& keys,
                                               std::vector<Result>* out) {
  out->assign(keys.size(), Result{});
  std::vector<bool> found(keys.size(), false);
  if (store == nullptr || keys.empty()) return found;
  absl::StatusOr<std::vector<std::optional<std::string>>> stored = store->GetMany(keys);
  if (!stored.ok()) return stored.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    found[i] = (*stored)[i].has_value() && DecodeStored(*(*stored)[i], &(*out)[i]).ok();
    if (found[i]) {
      (*out)[i].cached = true;
    } else {
      (*out)[i] = Result{};
    }
  }
  return found;
}

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_STORE_STORED_RESULTS_H_
