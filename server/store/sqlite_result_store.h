// The embedded result store backend: one SQLite file (one connection, one mutex; WAL
// journal, synchronous=NORMAL: durable across process crashes). Leases use this
// process's clock, so a file is meant for one server (or servers on one host).
#ifndef HGEVAL_SERVER_STORE_SQLITE_RESULT_STORE_H_
#define HGEVAL_SERVER_STORE_SQLITE_RESULT_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/store/result_store.h"

namespace hgeval::server {

// Opens (creating if needed) the database file. ":memory:" gives a private store.
// Before every write the file is checked: deleted, renamed or replaced by another file
// while the server runs is UNAVAILABLE saying so (and logged once as store_file_lost),
// because nothing written to the old file would survive a restart.
absl::StatusOr<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path);

// The status for SQLite's (extended) result code `code` after `what` failed with
// `detail`, with the diagnosis its cause calls for: a damaged file is DATA_LOSS; a full
// disk RESOURCE_EXHAUSTED (logged as store_disk_full); a read-only file or folder, a
// file moved away and I/O errors UNAVAILABLE; anything else INTERNAL.
absl::Status SqliteStatus(int code, const std::string& what, const std::string& detail);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_STORE_SQLITE_RESULT_STORE_H_
