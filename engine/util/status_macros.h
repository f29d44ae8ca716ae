// Early-return helpers for absl::Status / absl::StatusOr.
#ifndef HGEVAL_ENGINE_UTIL_STATUS_MACROS_H_
#define HGEVAL_ENGINE_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HG_STATUS_CONCAT_INNER(a, b) a##b
#define HG_STATUS_CONCAT(a, b) HG_STATUS_CONCAT_INNER(a, b)

// Not const, so the early return moves the status rather than copying it.
#define HG_RETURN_IF_ERROR(expr)             \
  do {                                       \
    absl::Status hg_status_ = (expr);        \
    if (!hg_status_.ok()) return hg_status_; \
  } while (0)

#define HG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(*tmp)

// HG_ASSIGN_OR_RETURN(auto x, MakeX());
#define HG_ASSIGN_OR_RETURN(lhs, expr) \
  HG_ASSIGN_OR_RETURN_IMPL(HG_STATUS_CONCAT(hg_statusor_, __LINE__), lhs, expr)

#endif  // HGEVAL_ENGINE_UTIL_STATUS_MACROS_H_
