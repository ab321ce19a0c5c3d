#pragma once
// Helpers shared by the store's test files: a scratch directory per test, an independent raw
// SQLite connection to check (or prepare) what is really in the file, and opening a store with
// the failure reported. Single-threaded, like the tests that use them.

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <system_error>

#include "store/store.h"

namespace fabric_chaos::store::test_support {

// A fresh directory per test, removed afterwards with everything SQLite left in it (-wal, -shm).
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fc_store_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    if (made == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A second, independent connection: sees only what the store really committed to the file.
// With create = true it may also build a database from scratch (e.g. an old schema version).
class RawDb {
 public:
  explicit RawDb(const std::string& path, bool create = false) {
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr), SQLITE_OK);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // First column of the first row, as text; "" when there is no row.
  std::string scalar(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return out;
  }

  // EXPLAIN QUERY PLAN's steps for sql, joined by " | ": "SEARCH samples USING INDEX ...".
  std::string queryPlan(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    const std::string explain = "EXPLAIN QUERY PLAN " + sql;
    EXPECT_EQ(sqlite3_prepare_v2(db_, explain.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
    std::string out;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* detail = sqlite3_column_text(stmt, 3);
      if (detail == nullptr) continue;
      out += (out.empty() ? "" : " | ") + std::string(reinterpret_cast<const char*>(detail));
    }
    sqlite3_finalize(stmt);
    return out;
  }

  // Runs a script of several statements; fails the test with SQLite's message on error.
  void exec(const std::string& sql) {
    char* error = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "") << "\n" << sql;
    sqlite3_free(error);
  }

 private:
  sqlite3* db_ = nullptr;
};

// Each name is a table in the database behind raw.
inline void expectTables(RawDb& raw, std::initializer_list<const char*> tables) {
  for (const char* table : tables) {
    EXPECT_EQ(raw.scalar(std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                     "AND name = '") +
                         table + "'"),
              "1")
        << table;
  }
}

inline std::unique_ptr<Store> openOrDie(const std::string& path) {
  auto store = Store::open(path);
  EXPECT_TRUE(store.isOk()) << store.status().toString();
  return store.isOk() ? std::move(store).value() : nullptr;
}

}  // namespace fabric_chaos::store::test_support
