// The shared result store backend: PostgreSQL through libpq, for a fleet of servers.
// Schema created (and migrated) at open under an advisory lock, so replicas starting
// together do not race; results upserted in transactions (two servers computing the same
// request keep one row); shards claimed with FOR UPDATE SKIP LOCKED; leases on the
// database's clock, so replicas' clocks need not agree.
#ifndef HGEVAL_SERVER_STORE_POSTGRES_RESULT_STORE_H_
#define HGEVAL_SERVER_STORE_POSTGRES_RESULT_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/store/result_store.h"

namespace hgeval::server {

// `uri`: a libpq connection URI, postgresql://user@host:port/dbname?options.
absl::StatusOr<std::unique_ptr<ResultStore>> OpenPostgresResultStore(const std::string& uri);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_STORE_POSTGRES_RESULT_STORE_H_
