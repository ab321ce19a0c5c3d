#include "store/connection.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "store/schema.h"
#include "store/statement.h"

namespace fabric_chaos::store::internal {

using core::Result;
using core::Status;
using core::StatusCode;

namespace {

int latestVersion() { return static_cast<int>(schemaMigrations().size()); }

Status execScript(sqlite3* db, std::string_view sql, const std::string& what) {
  char* error = nullptr;
  int rc = sqlite3_exec(db, std::string(sql).c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);  // the same text is still available from sqlite3_errmsg()
  if (rc != SQLITE_OK) return sqliteStatus(db, rc, what);
  return Status::ok();
}

// Why sqlite3_open_v2() failed, as an errno. sqlite3_system_errno() alone misleads: after
// O_CREAT fails with EACCES, SQLite retries read-only and reports that attempt's ENOENT.
int openErrno(const std::string& path, sqlite3* db) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) {
    return db ? sqlite3_system_errno(db) : 0;
  }
  std::string dir = ".";
  if (size_t slash = path.find_last_of('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  if (::access(path.c_str(), F_OK) == 0) {
    if (::access(path.c_str(), R_OK | W_OK) != 0) return errno;
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return errno;
  }
  return db ? sqlite3_system_errno(db) : 0;
}

Result<int> userVersion(sqlite3* db) {
  auto text = pragmaText(db, "PRAGMA user_version");
  if (!text.isOk()) return text.status();
  return std::atoi(text->c_str());
}

}  // namespace

// Statements that run once at open, before the schema is known to exist.
Result<std::string> pragmaText(sqlite3* db, std::string_view sql) {
  auto stmt = Statement::prepare(db, sql);
  if (!stmt.isOk()) return stmt.status();
  Query q(*stmt);
  if (!q.next()) {
    if (!q.status().isOk()) return q.status().withContext(std::string(sql));
    return std::string();
  }
  std::string value = q.text(0);
  FC_RETURN_IF_ERROR(q.exec().withContext(std::string(sql)));
  return value;
}

// Opens the file and sets the connection up; the caller adds the path as context.
Result<DbHandle> openWriteConnection(const std::string& path) {
  sqlite3* raw = nullptr;
  // NOMUTEX: SqliteStore's own mutex serialises every use of the connection.
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK) {
    // "unable to open database file" alone does not say whether the directory is missing or not
    // writable; the errno does.
    Status status = sqliteStatus(db.get(), rc, "");
    int err = openErrno(path, db.get());
    if (err == 0) return status;
    Status from_errno = core::errnoStatus(err, status.message());
    StatusCode code =
        from_errno.code() == StatusCode::kInternal ? status.code() : from_errno.code();
    return Status(code, from_errno.message(), rc);
  }
  sqlite3_extended_result_codes(db.get(), 1);
  // READWRITE silently degrades to read-only when the file is not writable; fail now rather
  // than at the first write, long after start-up.
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    return Status(StatusCode::kPermissionDenied, "database file is not writable", SQLITE_READONLY);
  }

  // Before anything else, so that even the switch to WAL waits for another process's lock.
  rc = sqlite3_busy_timeout(db.get(), 5000);
  if (rc != SQLITE_OK) return sqliteStatus(db.get(), rc, "set busy_timeout");

  // Only a database without tables takes this (an older file keeps "none", and reuses the pages
  // deletes free instead of giving them back): retention then returns what it frees
  // (releaseFreePages). Not VACUUM, which would renumber the samples' rowids, their cursors.
  auto vacuum = pragmaText(db.get(), "PRAGMA auto_vacuum=INCREMENTAL");
  if (!vacuum.isOk()) return vacuum.status();

  auto mode = pragmaText(db.get(), "PRAGMA journal_mode=WAL");
  if (!mode.isOk()) return mode.status();
  // An in-memory or temporary database has no file name and reports "memory"; any file-backed
  // database must really be in WAL mode (it can fail on file systems without shared memory).
  const char* file = sqlite3_db_filename(db.get(), "main");
  bool has_file = file != nullptr && file[0] != '\0';
  if (has_file && *mode != "wal") {
    return Status(StatusCode::kNotSupported,
                  "cannot enable WAL journal mode (got \"" + *mode + "\")");
  }

  // FULL, not NORMAL: in WAL mode NORMAL skips the fsync at commit, so a power loss can drop the
  // last transactions. Samples and journal entries are acknowledged to workloads and agents once
  // committed, and a lost journal intent means a fault nobody reverts.
  auto sync = pragmaText(db.get(), "PRAGMA synchronous=FULL");
  if (!sync.isOk()) return sync.status();

  // Per connection and off by default; read back because a build without foreign-key support
  // ignores the PRAGMA silently.
  auto fk = pragmaText(db.get(), "PRAGMA foreign_keys=ON");
  if (!fk.isOk()) return fk.status();
  auto fk_on = pragmaText(db.get(), "PRAGMA foreign_keys");
  if (!fk_on.isOk()) return fk_on.status();
  if (*fk_on != "1") {
    return Status(StatusCode::kNotSupported, "this SQLite build does not enforce foreign keys");
  }
  return db;
}

// A read-only connection to the file the writer opened: the pool's (ConnectionPool). Same busy
// timeout; no pragmas to set, WAL being a property of the file.
Result<DbHandle> openReadConnection(const std::string& file) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK) return sqliteStatus(db.get(), rc, "");
  sqlite3_extended_result_codes(db.get(), 1);
  const int busy = sqlite3_busy_timeout(db.get(), 5000);
  if (busy != SQLITE_OK) return sqliteStatus(db.get(), busy, "set busy_timeout");
  return db;
}

Status migrate(sqlite3* db) {
  auto begin = Statement::prepare(db, "BEGIN IMMEDIATE");
  auto commit = Statement::prepare(db, "COMMIT");
  auto rollback = Statement::prepare(db, "ROLLBACK");
  for (auto* s : {&begin, &commit, &rollback}) {
    if (!s->isOk()) return s->status();
  }
  for (int version = 1; version <= latestVersion(); ++version) {
    Transaction txn(*begin, *commit, *rollback);
    FC_RETURN_IF_ERROR(txn.begin());
    // Read under the write lock: two processes opening a fresh file at once must not both run
    // the same migration.
    auto current = userVersion(db);
    if (!current.isOk()) return current.status();
    if (*current >= version) continue;
    std::string what = "apply migration " + std::to_string(version);
    FC_RETURN_IF_ERROR(execScript(db, schemaMigrations()[version - 1], what));
    // PRAGMA takes no bound parameters; version is a loop counter bounded by latestVersion(),
    // never outside input.
    FC_RETURN_IF_ERROR(execScript(db, "PRAGMA user_version = " + std::to_string(version), what));
    FC_RETURN_IF_ERROR(txn.commit().withContext(what));
  }
  auto current = userVersion(db);
  if (!current.isOk()) return current.status();
  if (*current > latestVersion()) {
    return Status(StatusCode::kFailedPrecondition, "schema version " + std::to_string(*current) +
                                                       " is newer than this binary supports (" +
                                                       std::to_string(latestVersion()) +
                                                       "); upgrade fabric-chaos");
  }
  return Status::ok();
}

}  // namespace fabric_chaos::store::internal
