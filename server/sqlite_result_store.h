// The embedded result store backend: one SQLite file (one connection, one mutex; WAL
// journal, synchronous=NORMAL: durable across process crashes). Leases use this
// process's clock, so a file is meant for one server (or servers on one host).
#ifndef HGEVAL_SERVER_SQLITE_RESULT_STORE_H_
#define HGEVAL_SERVER_SQLITE_RESULT_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/result_store.h"

namespace hgeval::server {

// Opens (creating if needed) the database file. ":memory:" gives a private store.
absl::StatusOr<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_SQLITE_RESULT_STORE_H_
