#pragma once
// Internal to store: RAII wrappers over the sqlite3 C API so that the store never leaks a
// statement, never leaves one mid-step (which would pin a read snapshot and stall WAL
// checkpoints) and never leaves a transaction open on an early return. Not thread-safe: the
// owning Store serialises every use behind its mutex.

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"

namespace fabric_chaos::store::internal {

// Maps a SQLite result code to a Status; `what` says which operation failed. The extended result
// code is kept as origin so that e.g. SQLITE_CONSTRAINT_FOREIGNKEY is distinguishable in logs.
core::Status sqliteStatus(sqlite3* db, int rc, const std::string& what);

// A statement prepared once and reused for the life of the connection.
class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept
      : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)) {}
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      db_ = std::exchange(other.db_, nullptr);
      stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
  }
  ~Statement() { sqlite3_finalize(stmt_); }

  // Prepares with SQLITE_PREPARE_PERSISTENT: these live as long as the connection.
  static core::Result<Statement> prepare(sqlite3* db, std::string_view sql);

  sqlite3* db() const { return db_; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// One use of a prepared Statement: bind, then step with next() or run exec(). The destructor
// resets the statement and clears its bindings so the next use starts clean, whatever path this
// one left by. A bind error is remembered and reported by next()/exec(), so call sites can chain
// binds without checking each one.
//
//   Query q(stmt);
//   q.bind(1, run_id);
//   while (q.next()) use(q.int64(0));
//   FC_RETURN_IF_ERROR(q.status());
class Query {
 public:
  explicit Query(Statement& statement) : statement_(statement) {}
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query() { reset(); }

  // Parameters are 1-based, as in sqlite3_bind_*.
  Query& bind(int index, int64_t value);
  Query& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Query& bind(int index, double value);
  Query& bind(int index, std::string_view value);
  Query& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Query& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Query& bindNull(int index);

  // Steps once: true when a row is available; false when done or on error (see status()).
  bool next();
  // Steps to completion, for statements that return no rows.
  core::Status exec();
  const core::Status& status() const { return status_; }

  // Column accessors for the current row; 0-based, as in sqlite3_column_*. NULL reads as 0 / "".
  bool isNull(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;

  // Ends this use early (e.g. before COMMIT), releasing the statement's read snapshot.
  void reset();

 private:
  void noteBind(int rc, int index);

  Statement& statement_;
  core::Status status_;
  bool done_ = false;
};

// BEGIN IMMEDIATE ... COMMIT around a scope; rolls back on destruction unless committed. IMMEDIATE
// takes the write lock up front, so a busy database fails at begin() (after busy_timeout) rather
// than part-way through, when another process holds it.
class Transaction {
 public:
  Transaction(Statement& begin, Statement& commit, Statement& rollback)
      : begin_(begin), commit_(commit), rollback_(rollback) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  core::Status begin();
  core::Status commit();

 private:
  Statement& begin_;
  Statement& commit_;
  Statement& rollback_;
  bool open_ = false;
};

}  // namespace fabric_chaos::store::internal
