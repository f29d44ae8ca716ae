#include "server/store/result_store.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/util/sha256.h"
#include "server/core/log.h"
#include "server/store/postgres_result_store.h"
#include "server/store/sqlite_result_store.h"

namespace hgeval::server {

bool IsPostgresStoreSpec(const std::string& spec) {
  return absl::StartsWith(spec, "postgresql://") || absl::StartsWith(spec, "postgres://");
}

std::string RedactedStoreSpec(const std::string& spec) {
  if (!IsPostgresStoreSpec(spec)) return spec;
  std::string out = spec;
  // postgresql://user:password@host/...
  const size_t scheme_end = out.find("://") + 3;
  const size_t at = out.find('@', scheme_end);
  const size_t colon = out.find(':', scheme_end);
  if (at != std::string::npos && colon != std::string::npos && colon < at) {
    out.replace(colon + 1, at - colon - 1, "***");
  }
  // ...?password=secret&...
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const size_t value = p + 9;
    const size_t end = std::min(out.find('&', value), out.size());
    out.replace(value, end - value, "***");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<ResultStore>> ResultStore::Open(const std::string& spec) {
  if (IsPostgresStoreSpec(spec)) return OpenPostgresResultStore(spec);
  return OpenSqliteResultStore(spec);
}

std::string ResultRowChecksum(const StoreKey& key, const std::string& response) {
  std::string canonical = absl::StrCat(key.model_hash, "\n", key.tokenizer_hash, "\n", key.kind,
                                       "\n", key.request_digest, "\n");
  canonical += response;
  return Sha256Hex(canonical).substr(0, 32);
}

std::optional<std::string> VerifiedResponse(const StoreKey& key, std::string response,
                                            const std::optional<std::string>& checksum,
                                            RowCheckCounts& counts) {
  if (!checksum.has_value()) {
    ++counts.unverifiable;  // written before checksums: recompute
    return std::nullopt;
  }
  if (*checksum != ResultRowChecksum(key, response)) {
    ++counts.damaged;
    LogWarning(
        "store_row_damaged",
        {{"kind", key.kind}, {"request_digest", key.request_digest}, {"action", "recomputed"}});
    return std::nullopt;
  }
  return response;
}

void LogUnverifiableRows(const RowCheckCounts& counts) {
  if (counts.unverifiable > 0) {
    LogInfo("store_rows_without_checksum",
            {{"rows", absl::StrCat(counts.unverifiable)}, {"action", "recomputed"}});
  }
}

}  // namespace hgeval::server
