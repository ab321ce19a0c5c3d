#pragma once
// The store's SQL schema as numbered migrations. Each entry is applied once, in its own
// transaction, and bumps PRAGMA user_version to its 1-based position (store/sqlite_store.cc).
// Never edit a released entry: append a new one.

#include <string_view>
#include <vector>

namespace fabric_chaos::store {

const std::vector<std::string_view>& schemaMigrations();

}  // namespace fabric_chaos::store
