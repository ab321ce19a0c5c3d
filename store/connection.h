#pragma once
// Opening the store's SQLite connections: the writer (created if missing, WAL, synchronous=FULL,
// foreign keys on, incremental auto-vacuum on a new file; every setting checked) and the read-only
// connections beside it; and the schema's numbered migrations (PRAGMA user_version), applied
// under the write lock. Errors say what failed, with the errno where SQLite's code says too little.

#include <sqlite3.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fabric_chaos::store::internal {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

// The writer's connection to `path`; the caller adds the path as context.
core::Result<DbHandle> openWriteConnection(const std::string& path);
// A read-only connection to the file the writer opened (sqlite3_db_filename of its "main").
core::Result<DbHandle> openReadConnection(const std::string& file);
// Brings the schema to the latest version; fails on a file newer than this binary.
core::Status migrate(sqlite3* db);
// The first column of a PRAGMA's first row ("" when it has none).
core::Result<std::string> pragmaText(sqlite3* db, std::string_view sql);

}  // namespace fabric_chaos::store::internal
