#include "store/statement.h"

namespace fabric_chaos::store::internal {

using core::Status;
using core::StatusCode;

Status sqliteStatus(sqlite3* db, int rc, const std::string& what) {
  StatusCode code = StatusCode::kInternal;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = StatusCode::kUnavailable;
      break;
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
        code = StatusCode::kAlreadyExists;
      } else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
        code = StatusCode::kUnprocessable;
      }
      // NOT NULL and CHECK failures mean the store built a bad row: kInternal.
      break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      code = StatusCode::kPermissionDenied;
      break;
    default:
      break;
  }
  // sqlite3_errmsg() describes the connection's most recent failure, which carries detail such as
  // the table name; fall back to the generic text when that failure is not this one.
  const char* detail = (db != nullptr && sqlite3_extended_errcode(db) == rc) ? sqlite3_errmsg(db)
                                                                             : sqlite3_errstr(rc);
  std::string message = what.empty() ? std::string(detail) : what + ": " + detail;
  return Status(code, std::move(message), rc);
}

core::Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return sqliteStatus(db, rc, "prepare \"" + std::string(sql) + "\"");
  }
  return Statement(db, stmt);
}

void Query::noteBind(int rc, int index) {
  if (rc != SQLITE_OK && status_.isOk()) {
    status_ = sqliteStatus(statement_.db(), rc, "bind parameter " + std::to_string(index));
  }
}

Query& Query::bind(int index, int64_t value) {
  noteBind(sqlite3_bind_int64(statement_.get(), index, value), index);
  return *this;
}

Query& Query::bind(int index, double value) {
  noteBind(sqlite3_bind_double(statement_.get(), index, value), index);
  return *this;
}

Query& Query::bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies the text, so the caller's buffer may die before step().
  noteBind(sqlite3_bind_text64(statement_.get(), index, value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8),
           index);
  return *this;
}

Query& Query::bindNull(int index) {
  noteBind(sqlite3_bind_null(statement_.get(), index), index);
  return *this;
}

bool Query::next() {
  if (!status_.isOk() || done_) return false;
  int rc = sqlite3_step(statement_.get());
  if (rc == SQLITE_ROW) return true;
  done_ = true;
  if (rc != SQLITE_DONE) status_ = sqliteStatus(statement_.db(), rc, "");
  return false;
}

Status Query::exec() {
  while (next()) {
  }
  return status_;
}

bool Query::isNull(int column) const {
  return sqlite3_column_type(statement_.get(), column) == SQLITE_NULL;
}

int64_t Query::int64(int column) const { return sqlite3_column_int64(statement_.get(), column); }

double Query::real(int column) const { return sqlite3_column_double(statement_.get(), column); }

std::string Query::text(int column) const {
  // Order matters: column_text() may convert the value, and column_bytes() then measures the
  // converted text.
  const unsigned char* data = sqlite3_column_text(statement_.get(), column);
  int size = sqlite3_column_bytes(statement_.get(), column);
  if (data == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(size));
}

void Query::reset() {
  // The return value repeats the last step()'s error, which status_ already holds.
  sqlite3_reset(statement_.get());
  sqlite3_clear_bindings(statement_.get());
  done_ = true;
}

Transaction::~Transaction() {
  // A failed statement may already have rolled the transaction back (SQLITE_FULL, IOERR, ...); a
  // second ROLLBACK would only fail with "no transaction is active".
  if (open_ && sqlite3_get_autocommit(rollback_.db()) == 0) {
    Query rollback(rollback_);
    (void)rollback.exec();
  }
}

Status Transaction::begin() {
  Query q(begin_);
  Status status = q.exec();
  open_ = status.isOk();
  return status.withContext("begin transaction");
}

Status Transaction::commit() {
  Query q(commit_);
  Status status = q.exec();
  if (status.isOk()) open_ = false;
  return status.withContext("commit");
}

}  // namespace fabric_chaos::store::internal
