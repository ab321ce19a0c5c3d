// The SQLite implementation of Store. One writer connection, every statement prepared once at
// open and reused; its mutex is held for the whole of each write method, which is also what makes
// the read-modify-write methods (setRunAttribute, journalMark) atomic with respect to other
// threads. Plain reads go through a pool of read-only connections (ConnectionPool), so that they
// never wait for a commit.

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/run_state.h"
#include "store/connection.h"
#include "store/connection_pool.h"
#include "store/group_commit.h"
#include "store/schema.h"
#include "store/statement.h"
#include "store/store.h"

namespace fabric_chaos::store {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;
using internal::ConnectionPool;
using internal::DbHandle;
using internal::migrate;
using internal::openReadConnection;
using internal::openWriteConnection;
using internal::pragmaText;
using internal::Query;
using internal::sqliteStatus;
using internal::Statement;
using internal::Transaction;

constexpr std::string_view kQueued = "queued";
constexpr std::string_view kInterrupted = "interrupted";
// Bound as parameters ?1..?5 of list_unfinished and prunable_runs, so this array is the one
// definition.
constexpr std::array<std::string_view, 5> kFinalStates = {"passed", "failed", "aborted",
                                                          kInterrupted, "error"};

// A suite run is queued, then running, then final like a run.
constexpr std::string_view kRunning = "running";

constexpr std::string_view kJournalIntent = "intent";
constexpr std::string_view kJournalReverted = "reverted";
constexpr std::array<std::string_view, 3> kJournalMarks = {"applied", kJournalReverted, "failed"};

bool isFinalState(std::string_view state) { return core::isFinalRunState(state); }

// error_handler_t::replace: a fault detail holding bytes that are not UTF-8 (an interface name
// read from the kernel, say) must still be stored rather than throw out of the store.
std::string dumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<json> parseJson(const std::string& text, const std::string& what) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return Status(StatusCode::kInternal, what + " holds invalid JSON");
  }
  return value;
}

// "run 7 not found", "suite run 3 not found", "journal entry 9 not found", ...
Status notFound(std::string_view noun, int64_t id) {
  return Status(StatusCode::kNotFound, std::string(noun) + " " + std::to_string(id) + " not found");
}

// Appends to a run's child table fail on the foreign key when the run is absent; say so plainly.
// Any other failure passes through as it is.
Status mapRunForeignKey(const Status& status, int64_t run_id) {
  if (status.origin() == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return Status(StatusCode::kNotFound, notFound("run", run_id).message(), status.origin());
  }
  return status;
}

// Parameter binding for execWith(): std::nullopt binds NULL.
template <typename T>
void bindParam(Query& q, int index, const T& value) {
  q.bind(index, value);
}
template <typename T>
void bindParam(Query& q, int index, const std::optional<T>& value) {
  if (value) {
    q.bind(index, *value);
  } else {
    q.bindNull(index);
  }
}

// Binds args to ?1..?N and runs a statement that returns no rows.
template <typename... Args>
Status execWith(Statement& stmt, const Args&... args) {
  Query q(stmt);
  int index = 1;
  (bindParam(q, index++, args), ...);
  return q.exec();
}

constexpr std::string_view kRunColumns =
    "id, scenario_name, scenario, fabric, state, created_ms, started_ms, finished_ms, score, "
    "result, attributes, error";

constexpr std::string_view kSuiteRunColumns =
    "id, suite_name, suite, fabric, state, created_ms, finished_ms, error";
constexpr std::string_view kScheduleColumns =
    "id, cron, scenario, suite, fabric, enabled, created_ms, last_fired_ms, last_result";
constexpr std::string_view kTokenColumns =
    "id, name, role, secret_hash, created_ms, revoked_ms, last_used_ms";

// A table of named JSON documents with a builtin flag: scenarios and suites are stored and
// guarded the same way, so one set of statements and methods serves both.
struct DocumentStatements {
  Statement get_builtin, put, get, list, remove;
};

// Every statement the store uses, prepared once at open.
struct Statements {
  Statement begin, commit, rollback;
  Statement savepoint, release, rollback_to;  // one batch of a group commit
  Statement user_version;

  DocumentStatements scenarios;

  Statement insert_run, insert_transition, get_run_state, set_run_state, get_run_attributes,
      set_run_attributes, finish_run, get_run, list_transitions, list_unfinished;
  // listRuns: one statement per filter combination, so each can use its index.
  Statement list_runs_all, list_runs_by_scenario, list_runs_by_state, list_runs_by_both;
  // With a fabric: through runs_by_fabric, the other filters optional (NULL: any).
  Statement list_runs_by_fabric;
  Statement count_runs_by_state, last_scores;

  Statement insert_sample, list_samples, insert_event, list_events;
  Statement sample_rows, sample_envelope, sample_rank_count, event_rows;
  Statement prunable_runs, count_run_samples, count_run_telemetry, sample_rowids_after,
      delete_sample, telemetry_to_thin, delete_telemetry, incremental_vacuum;
  Statement insert_telemetry, list_telemetry;

  Statement insert_journal, get_journal_state, mark_journal, list_unreverted;
  Statement list_unfinished_runs;

  DocumentStatements suites;
  Statement insert_suite_run, get_suite_run_state, set_suite_run_state, get_suite_run,
      list_suite_runs, list_suite_run_runs, insert_suite_run_run, list_unfinished_suite_runs;

  Statement insert_schedule, get_schedule, list_schedules, delete_schedule, mark_schedule_fired;

  Statement insert_token, get_token_by_hash, list_tokens, revoke_token, touch_token,
      count_active_tokens;
  Statement insert_audit, list_audit;
};

using StatementSql = std::vector<std::pair<Statement*, std::string>>;

// table is one of the compile-time table names above, never outside input.
void addDocumentSql(StatementSql& all, DocumentStatements& d, const std::string& table) {
  const std::string select = "SELECT name, document, builtin, updated_ms FROM " + table + " ";
  all.insert(all.end(),
             {
                 {&d.get_builtin, "SELECT builtin FROM " + table + " WHERE name = ?1"},
                 {&d.put, "INSERT INTO " + table +
                              " (name, document, builtin, updated_ms) VALUES (?1, ?2, ?3, ?4) "
                              "ON CONFLICT (name) DO UPDATE SET document = excluded.document, "
                              "builtin = excluded.builtin, updated_ms = excluded.updated_ms"},
                 {&d.get, select + "WHERE name = ?1"},
                 {&d.list, select + "ORDER BY name"},
                 {&d.remove, "DELETE FROM " + table + " WHERE name = ?1"},
             });
}

Status prepareAll(sqlite3* db, Statements& s) {
  const std::string run_select = "SELECT " + std::string(kRunColumns) + " FROM runs ";
  const std::string suite_run_select =
      "SELECT " + std::string(kSuiteRunColumns) + " FROM suite_runs ";
  const std::string schedule_select =
      "SELECT " + std::string(kScheduleColumns) + " FROM schedules ";
  const std::string token_select = "SELECT " + std::string(kTokenColumns) + " FROM tokens ";
  StatementSql all = {
      {&s.begin, "BEGIN IMMEDIATE"},
      {&s.commit, "COMMIT"},
      {&s.rollback, "ROLLBACK"},
      {&s.savepoint, "SAVEPOINT batch"},
      {&s.release, "RELEASE batch"},
      {&s.rollback_to, "ROLLBACK TO batch"},
      {&s.user_version, "PRAGMA user_version"},

      {&s.insert_run,
       "INSERT INTO runs (scenario_name, scenario, fabric, state, created_ms) "
       "VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&s.insert_transition,
       "INSERT INTO run_transitions (run_id, state, wall_ms) VALUES (?1, ?2, ?3)"},
      {&s.get_run_state, "SELECT state FROM runs WHERE id = ?1"},
      {&s.set_run_state,
       "UPDATE runs SET state = ?2, "
       "started_ms = CASE WHEN started_ms = 0 AND ?2 <> ?4 THEN ?3 ELSE started_ms END "
       "WHERE id = ?1"},
      {&s.get_run_attributes, "SELECT attributes FROM runs WHERE id = ?1"},
      {&s.set_run_attributes, "UPDATE runs SET attributes = ?2 WHERE id = ?1"},
      {&s.finish_run,
       "UPDATE runs SET state = ?2, finished_ms = ?3, score = ?4, result = ?5, error = ?6 "
       "WHERE id = ?1"},
      {&s.get_run, run_select + "WHERE id = ?1"},
      {&s.list_transitions,
       "SELECT state, wall_ms FROM run_transitions WHERE run_id = ?1 ORDER BY rowid"},
      {&s.list_unfinished,
       "SELECT id, state FROM runs WHERE state NOT IN (?1, ?2, ?3, ?4, ?5) ORDER BY id"},
      {&s.list_runs_all, run_select + "ORDER BY id DESC LIMIT ?1"},
      {&s.list_runs_by_scenario, run_select + "WHERE scenario_name = ?2 ORDER BY id DESC LIMIT ?1"},
      {&s.list_runs_by_state, run_select + "WHERE state = ?2 ORDER BY id DESC LIMIT ?1"},
      {&s.list_runs_by_both,
       run_select + "WHERE scenario_name = ?2 AND state = ?3 ORDER BY id DESC LIMIT ?1"},
      {&s.list_runs_by_fabric, run_select +
                                   "WHERE fabric = ?2 AND (?3 IS NULL OR scenario_name = ?3) "
                                   "AND (?4 IS NULL OR state = ?4) ORDER BY id DESC LIMIT ?1"},
      {&s.count_runs_by_state, "SELECT state, COUNT(*) FROM runs GROUP BY state ORDER BY state"},
      // SQLite's bare-column rule: with MAX(id), the other columns come from that row.
      {&s.last_scores,
       "SELECT scenario_name, MAX(id), score, finished_ms FROM runs WHERE score IS NOT NULL "
       "GROUP BY scenario_name ORDER BY scenario_name"},

      {&s.insert_sample,
       "INSERT INTO samples (run_id, rank, iteration, start_ms, duration_ms, bytes) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
      {&s.list_samples,
       "SELECT rank, iteration, start_ms, duration_ms, bytes FROM samples WHERE run_id = ?1 "
       "ORDER BY rank, iteration, rowid"},
      // The cursor reads (issue 15). Unbound optional filters are NULL. LIMIT -1 is no limit.
      {&s.sample_rows,
       "SELECT rowid, rank, iteration, start_ms, duration_ms, bytes FROM samples "
       "WHERE run_id = ?1 AND rowid > ?2 AND (?3 IS NULL OR rank = ?3) "
       "AND (?4 IS NULL OR start_ms > ?4) ORDER BY rowid LIMIT ?5"},
      // Per rank and bucket, the rows with the smallest and with the largest duration (SQLite's
      // bare-column rule: with MIN() or MAX() the other columns come from that row).
      {&s.sample_envelope,
       "WITH chosen AS (SELECT rowid AS seq, rank, iteration, start_ms, duration_ms, bytes "
       "FROM samples WHERE run_id = ?1 AND (?2 IS NULL OR rank = ?2) "
       "AND (?3 IS NULL OR start_ms > ?3)), "
       "span AS (SELECT MIN(start_ms) AS lo, MAX(start_ms) - MIN(start_ms) AS width FROM chosen), "
       "bucketed AS (SELECT chosen.*, CASE WHEN span.width > 0 THEN "
       "MIN(?4 - 1, CAST((start_ms - span.lo) * ?4 / span.width AS INTEGER)) ELSE 0 END AS bucket "
       "FROM chosen, span) "
       "SELECT seq, rank, iteration, start_ms, MIN(duration_ms), bytes FROM bucketed "
       "GROUP BY rank, bucket "
       "UNION ALL "
       "SELECT seq, rank, iteration, start_ms, MAX(duration_ms), bytes FROM bucketed "
       "GROUP BY rank, bucket"},
      {&s.sample_rank_count, "SELECT MAX(rank) FROM samples WHERE run_id = ?1"},
      {&s.event_rows,
       "SELECT rowid, run_id, t_ms, wall_ms, kind, detail FROM events "
       "WHERE run_id = ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3"},
      // Retention. ?1..?5 are the final states (bindFinalStates).
      {&s.prunable_runs,
       "SELECT id FROM runs WHERE finished_ms > 0 AND state IN (?1, ?2, ?3, ?4, ?5) "
       "AND json_extract(attributes, '$.retention') IS NULL "
       "AND ((?6 > 0 AND finished_ms < ?6) OR (?7 >= 0 AND id NOT IN (SELECT id FROM runs "
       "WHERE finished_ms > 0 AND state IN (?1, ?2, ?3, ?4, ?5) "
       "ORDER BY finished_ms DESC, id DESC LIMIT ?7))) "
       "ORDER BY finished_ms, id"},
      {&s.count_run_samples, "SELECT COUNT(*) FROM samples WHERE run_id = ?1"},
      {&s.count_run_telemetry, "SELECT COUNT(*) FROM telemetry WHERE run_id = ?1"},
      {&s.sample_rowids_after,
       "SELECT rowid FROM samples WHERE run_id = ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3"},
      {&s.delete_sample, "DELETE FROM samples WHERE rowid = ?1"},
      // Per series, every k-th point by time (k = ceil(count / points)) and the last.
      {&s.telemetry_to_thin,
       "SELECT rowid FROM (SELECT rowid, "
       "ROW_NUMBER() OVER (PARTITION BY source, metric ORDER BY t_ms, rowid) AS n, "
       "COUNT(*) OVER (PARTITION BY source, metric) AS c FROM telemetry WHERE run_id = ?1) "
       "WHERE c > ?2 AND n <> c AND (n - 1) % ((c + ?2 - 1) / ?2) <> 0"},
      {&s.delete_telemetry, "DELETE FROM telemetry WHERE rowid = ?1"},
      {&s.incremental_vacuum, "PRAGMA incremental_vacuum"},
      {&s.insert_telemetry,
       "INSERT INTO telemetry (run_id, t_ms, source, metric, value) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&s.list_telemetry,
       "SELECT t_ms, source, metric, value FROM telemetry WHERE run_id = ?1 "
       "ORDER BY source, metric, t_ms"},
      {&s.insert_event,
       "INSERT INTO events (run_id, t_ms, wall_ms, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&s.list_events,
       "SELECT run_id, t_ms, wall_ms, kind, detail FROM events WHERE run_id = ?1 "
       "ORDER BY t_ms, rowid"},

      {&s.insert_journal,
       "INSERT INTO journal (run_id, fault, prior, state, intent_ms) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&s.get_journal_state, "SELECT state FROM journal WHERE id = ?1"},
      {&s.mark_journal,
       "UPDATE journal SET state = ?2, "
       "reverted_ms = CASE WHEN ?2 = ?4 THEN ?3 ELSE reverted_ms END WHERE id = ?1"},
      {&s.list_unreverted,
       "SELECT id, run_id, fault, prior, state, intent_ms, reverted_ms FROM journal "
       "WHERE state <> 'reverted' ORDER BY id DESC"},
      {&s.list_unfinished_runs, run_select + "WHERE state NOT IN (?1, ?2, ?3, ?4, ?5) ORDER BY id"},

      {&s.insert_suite_run,
       "INSERT INTO suite_runs (suite_name, suite, fabric, state, created_ms) "
       "VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&s.get_suite_run_state, "SELECT state FROM suite_runs WHERE id = ?1"},
      {&s.set_suite_run_state,
       "UPDATE suite_runs SET state = ?2, finished_ms = ?3, error = ?4 WHERE id = ?1"},
      {&s.get_suite_run, suite_run_select + "WHERE id = ?1"},
      {&s.list_suite_runs, suite_run_select + "ORDER BY id DESC LIMIT ?1"},
      {&s.list_suite_run_runs,
       "SELECT run_id FROM suite_run_runs WHERE suite_run_id = ?1 ORDER BY position"},
      // The position is computed inside the INSERT, under the store's write transaction.
      {&s.insert_suite_run_run,
       "INSERT INTO suite_run_runs (suite_run_id, position, run_id) VALUES "
       "(?1, (SELECT count(*) FROM suite_run_runs WHERE suite_run_id = ?1), ?2)"},
      {&s.list_unfinished_suite_runs,
       "SELECT id, state FROM suite_runs WHERE state NOT IN (?1, ?2, ?3, ?4, ?5) ORDER BY id"},

      {&s.insert_schedule,
       "INSERT INTO schedules (cron, scenario, suite, fabric, enabled, created_ms) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"},
      {&s.get_schedule, schedule_select + "WHERE id = ?1"},
      {&s.list_schedules, schedule_select + "ORDER BY id"},
      {&s.delete_schedule, "DELETE FROM schedules WHERE id = ?1"},
      {&s.mark_schedule_fired,
       "UPDATE schedules SET last_fired_ms = ?2, last_result = ?3 WHERE id = ?1"},

      {&s.insert_token,
       "INSERT INTO tokens (name, role, secret_hash, created_ms) VALUES (?1, ?2, ?3, ?4)"},
      {&s.get_token_by_hash, token_select + "WHERE secret_hash = ?1"},
      {&s.list_tokens, token_select + "ORDER BY id"},
      // Revoking twice keeps the first time.
      {&s.revoke_token,
       "UPDATE tokens SET revoked_ms = CASE WHEN revoked_ms = 0 THEN ?2 ELSE revoked_ms END "
       "WHERE id = ?1"},
      {&s.touch_token, "UPDATE tokens SET last_used_ms = ?2 WHERE id = ?1"},
      {&s.count_active_tokens,
       "SELECT count(*) FROM tokens WHERE revoked_ms = 0 AND role IN (?1, ?2, ?3)"},

      {&s.insert_audit,
       "INSERT INTO audit (wall_ms, actor, role, method, path, status, detail) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&s.list_audit,
       "SELECT id, wall_ms, actor, role, method, path, status, detail FROM audit "
       "WHERE id < ?2 ORDER BY id DESC LIMIT ?1"},
  };
  addDocumentSql(all, s.scenarios, "scenarios");
  addDocumentSql(all, s.suites, "suites");
  for (const auto& [target, sql] : all) {
    auto stmt = Statement::prepare(db, sql);
    if (!stmt.isOk()) return stmt.status();
    *target = std::move(stmt).value();
  }
  return Status::ok();
}

// Row readers: each takes the columns in its SELECT's order.

// Columns: name, document, builtin, updated_ms. noun ("scenario", "suite") names the row in errors.
template <typename Record>
Result<Record> readDocument(const Query& q, std::string_view noun) {
  Record r;
  r.name = q.text(0);
  auto document = parseJson(q.text(1), std::string(noun) + " " + r.name);
  if (!document.isOk()) return document.status();
  r.document = std::move(document).value();
  r.builtin = q.int64(2) != 0;
  r.updated_ms = q.int64(3);
  return r;
}

Result<ScenarioRecord> readScenario(const Query& q) {
  return readDocument<ScenarioRecord>(q, "scenario");
}
Result<SuiteRecord> readSuite(const Query& q) { return readDocument<SuiteRecord>(q, "suite"); }

// Columns in kRunColumns order.
Result<RunRecord> readRun(const Query& q) {
  RunRecord r;
  r.id = q.int64(0);
  const std::string name = "run " + std::to_string(r.id);
  r.scenario_name = q.text(1);
  auto scenario = parseJson(q.text(2), name + " scenario");
  if (!scenario.isOk()) return scenario.status();
  r.scenario = std::move(scenario).value();
  r.fabric = q.text(3);
  r.state = q.text(4);
  r.created_ms = q.int64(5);
  r.started_ms = q.int64(6);
  r.finished_ms = q.int64(7);
  if (!q.isNull(8)) r.score = q.real(8);
  auto result = parseJson(q.text(9), name + " result");
  if (!result.isOk()) return result.status();
  r.result = std::move(result).value();
  auto attributes = parseJson(q.text(10), name + " attributes");
  if (!attributes.isOk()) return attributes.status();
  r.attributes = std::move(attributes).value();
  r.error = q.text(11);
  return r;
}

// Columns in kSuiteRunColumns order; run_ids are loaded separately.
Result<SuiteRunRecord> readSuiteRun(const Query& q) {
  SuiteRunRecord r;
  r.id = q.int64(0);
  r.suite_name = q.text(1);
  auto suite = parseJson(q.text(2), "suite run " + std::to_string(r.id) + " suite");
  if (!suite.isOk()) return suite.status();
  r.suite = std::move(suite).value();
  r.fabric = q.text(3);
  r.state = q.text(4);
  r.created_ms = q.int64(5);
  r.finished_ms = q.int64(6);
  r.error = q.text(7);
  return r;
}

// Columns in kScheduleColumns order.
Result<ScheduleRecord> readSchedule(const Query& q) {
  ScheduleRecord r;
  r.id = q.int64(0);
  r.cron = q.text(1);
  r.scenario = q.text(2);
  r.suite = q.text(3);
  r.fabric = q.text(4);
  r.enabled = q.int64(5) != 0;
  r.created_ms = q.int64(6);
  r.last_fired_ms = q.int64(7);
  r.last_result = q.text(8);
  return r;
}

// Columns in kTokenColumns order.
Result<TokenRecord> readToken(const Query& q) {
  TokenRecord r;
  r.id = q.int64(0);
  r.name = q.text(1);
  auto role = parseRole(q.text(2));
  if (!role.isOk()) {
    return Status(StatusCode::kInternal,
                  "token " + std::to_string(r.id) + " has an unknown role " + q.text(2));
  }
  r.role = *role;
  r.secret_hash = q.text(3);
  r.created_ms = q.int64(4);
  r.revoked_ms = q.int64(5);
  r.last_used_ms = q.int64(6);
  return r;
}

// Columns: id, wall_ms, actor, role, method, path, status, detail.
Result<AuditRecord> readAudit(const Query& q) {
  AuditRecord r;
  r.id = q.int64(0);
  r.wall_ms = q.int64(1);
  r.actor = q.text(2);
  r.role = q.text(3);
  r.method = q.text(4);
  r.path = q.text(5);
  r.status = static_cast<int>(q.int64(6));
  auto detail = parseJson(q.text(7), "audit entry " + std::to_string(r.id) + " detail");
  if (!detail.isOk()) return detail.status();
  r.detail = std::move(detail).value();
  return r;
}

// Every remaining row of q through read; the first unreadable row or step error ends the list.
template <typename Record>
Result<std::vector<Record>> readAll(Query& q, Result<Record> (*read)(const Query&),
                                    const std::string& what) {
  std::vector<Record> out;
  while (q.next()) {
    auto record = read(q);
    if (!record.isOk()) return record.status();
    out.push_back(std::move(record).value());
  }
  FC_RETURN_IF_ERROR(q.status().withContext(what));
  return out;
}

// The one row stmt finds for key, or not_found.
template <typename Record, typename Key>
Result<Record> readOne(Statement& stmt, const Key& key, Result<Record> (*read)(const Query&),
                       const std::string& what, const Status& not_found) {
  Query q(stmt);
  q.bind(1, key);
  if (!q.next()) {
    FC_RETURN_IF_ERROR(q.status().withContext(what));
    return not_found;
  }
  return read(q);
}

// seq, rank, iteration, start_ms, duration_ms, bytes: the columns of the cursor reads.
SampleRow sampleRowFrom(const Query& q) {
  SampleRow row;
  row.seq = q.int64(0);
  row.sample.rank = static_cast<int>(q.int64(1));
  row.sample.iteration = q.int64(2);
  row.sample.start_ms = q.real(3);
  row.sample.duration_ms = q.real(4);
  row.sample.bytes = q.int64(5);
  return row;
}

// Read connections beside the writer: as many as reads may run at once before one waits for
// another. serve's 4 API handlers and 2 bulk readers (server/http/server.h) each hold at most
// one at a time, and the engine's threads read too.
constexpr int kReadConnections = 8;

// A read-only connection of the pool with its own statements; one thread uses it at a time.
struct ReadConnection {
  DbHandle db;  // declared before st, so that the statements are finalized first
  Statements st;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(DbHandle db, WriteObserver observer)
      : db_(std::move(db)), observer_(std::move(observer)) {}

  // Prepares the writer's statements and opens `readers` read-only connections beside it; an
  // in-memory database (nothing another connection could open) has none, and reads then take
  // the writer's connection under its lock.
  Status init(const std::string& path, int readers) {
    FC_RETURN_IF_ERROR(prepareAll(db_.get(), st_));
    const char* file = sqlite3_db_filename(db_.get(), "main");
    if (file == nullptr || file[0] == '\0') return Status::ok();
    for (int i = 0; i < readers; ++i) {
      auto db = openReadConnection(file);
      if (!db.isOk()) return db.status().withContext("open read connection to " + path);
      auto connection = std::make_unique<ReadConnection>();
      connection->db = std::move(db).value();
      FC_RETURN_IF_ERROR(prepareAll(connection->db.get(), connection->st));
      readers_.add(std::move(connection));
    }
    return Status::ok();
  }

  int schemaVersion() override {
    std::lock_guard lock(mu_);
    Query q(st_.user_version);
    // The signature has no room for an error; -1 cannot be mistaken for a real version.
    if (!q.next()) return -1;
    return static_cast<int>(q.int64(0));
  }

  Status putScenario(const std::string& name, const json& document, bool builtin) override {
    const auto timed = timeWrite("put_scenario");
    return putDocument(st_.scenarios, "scenario", name, document, builtin);
  }

  Result<ScenarioRecord> getScenario(const std::string& name) override {
    return getDocument(&Statements::scenarios, "scenario", name, readScenario);
  }

  Result<std::vector<ScenarioRecord>> listScenarios() override {
    return listDocuments(&Statements::scenarios, "scenarios", readScenario);
  }

  Status deleteScenario(const std::string& name) override {
    const auto timed = timeWrite("delete_scenario");
    return deleteDocument(st_.scenarios, "scenario", name);
  }

  Result<int64_t> createRun(const std::string& scenario_name, const json& scenario,
                            const std::string& fabric) override {
    const auto timed = timeWrite("create_run");
    std::lock_guard lock(mu_);
    const std::string what = "create run of " + scenario_name;
    const int64_t now_ms = now();
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    FC_RETURN_IF_ERROR(
        execWith(st_.insert_run, scenario_name, dumpJson(scenario), fabric, kQueued, now_ms)
            .withContext(what));
    const int64_t id = sqlite3_last_insert_rowid(db_.get());
    FC_RETURN_IF_ERROR(addTransition(id, kQueued, now_ms).withContext(what));
    FC_RETURN_IF_ERROR(txn.commit().withContext(what));
    return id;
  }

  Status setRunState(int64_t id, const std::string& state) override {
    const auto timed = timeWrite("set_run_state");
    if (state.empty()) return Status(StatusCode::kInvalidArgument, "run state is empty");
    // Only finishRun may enter a final state, so that finished_ms, score and result are always
    // set together with it.
    if (isFinalState(state)) {
      return Status(StatusCode::kInvalidArgument,
                    "run state " + state + " is final: use finishRun");
    }
    std::lock_guard lock(mu_);
    const std::string what = "set run " + std::to_string(id) + " state to " + state;
    const int64_t now_ms = now();
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    FC_RETURN_IF_ERROR(requireUnfinished(st_.get_run_state, "run", id, what));
    FC_RETURN_IF_ERROR(execWith(st_.set_run_state, id, state, now_ms, kQueued).withContext(what));
    FC_RETURN_IF_ERROR(addTransition(id, state, now_ms).withContext(what));
    return txn.commit().withContext(what);
  }

  Status setRunAttribute(int64_t id, const std::string& key, const json& value) override {
    const auto timed = timeWrite("set_run_attribute");
    if (key.empty()) return Status(StatusCode::kInvalidArgument, "run attribute key is empty");
    std::lock_guard lock(mu_);
    const std::string what = "set run " + std::to_string(id) + " attribute " + key;
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    json attributes;
    {
      Query q(st_.get_run_attributes);
      q.bind(1, id);
      if (!q.next()) {
        FC_RETURN_IF_ERROR(q.status().withContext(what));
        return notFound("run", id);
      }
      auto parsed = parseJson(q.text(0), "run " + std::to_string(id) + " attributes");
      if (!parsed.isOk()) return parsed.status();
      attributes = std::move(parsed).value();
    }
    if (!attributes.is_object()) attributes = json::object();
    attributes[key] = value;
    FC_RETURN_IF_ERROR(
        execWith(st_.set_run_attributes, id, dumpJson(attributes)).withContext(what));
    return txn.commit().withContext(what);
  }

  Status finishRun(int64_t id, const std::string& state, std::optional<double> score,
                   const json& result, const std::string& error) override {
    const auto timed = timeWrite("finish_run");
    if (!isFinalState(state)) {
      return Status(StatusCode::kInvalidArgument, "run state " + state +
                                                      " is not final (passed, failed, aborted, "
                                                      "interrupted or error)");
    }
    std::lock_guard lock(mu_);
    const std::string what = "finish run " + std::to_string(id) + " as " + state;
    const int64_t now_ms = now();
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    FC_RETURN_IF_ERROR(requireUnfinished(st_.get_run_state, "run", id, what));
    FC_RETURN_IF_ERROR(finish(id, state, now_ms, score, result, error).withContext(what));
    return txn.commit().withContext(what);
  }

  Result<RunRecord> getRun(int64_t id) override {
    return read([&](Statements& st) -> Result<RunRecord> {
      return readOne(st.get_run, id, readRun, "get run " + std::to_string(id), notFound("run", id));
    });
  }

  Result<std::vector<RunRecord>> listRuns(const RunFilter& filter) override {
    if (filter.limit <= 0) {
      return Status(StatusCode::kInvalidArgument,
                    "run list limit must be positive, got " + std::to_string(filter.limit));
    }
    return read([&](Statements& st) -> Result<std::vector<RunRecord>> {
      if (!filter.fabric.empty()) {
        Query q(st.list_runs_by_fabric);
        q.bind(1, filter.limit).bind(2, filter.fabric);
        if (!filter.scenario.empty()) q.bind(3, filter.scenario);
        if (!filter.state.empty()) q.bind(4, filter.state);
        return readAll(q, readRun, "list runs of fabric " + filter.fabric);
      }
      Statement* stmt = &st.list_runs_all;
      if (!filter.scenario.empty() && !filter.state.empty()) {
        stmt = &st.list_runs_by_both;
      } else if (!filter.scenario.empty()) {
        stmt = &st.list_runs_by_scenario;
      } else if (!filter.state.empty()) {
        stmt = &st.list_runs_by_state;
      }
      Query q(*stmt);
      q.bind(1, filter.limit);
      int next_param = 2;
      if (!filter.scenario.empty()) q.bind(next_param++, filter.scenario);
      if (!filter.state.empty()) q.bind(next_param++, filter.state);
      return readAll(q, readRun, "list runs");
    });
  }

  Result<json> runTransitions(int64_t id) override {
    return read([&](Statements& st) -> Result<json> {
      const std::string what = "list transitions of run " + std::to_string(id);
      json out = json::array();
      {
        Query q(st.list_transitions);
        q.bind(1, id);
        while (q.next()) out.push_back({{"state", q.text(0)}, {"wall_ms", q.int64(1)}});
        FC_RETURN_IF_ERROR(q.status().withContext(what));
      }
      // Every run has at least its "queued" transition, so an empty list means no such run.
      if (out.empty()) return notFound("run", id);
      return out;
    });
  }

  Result<std::map<std::string, int64_t>> runCountsByState() override {
    return read([&](Statements& st) -> Result<std::map<std::string, int64_t>> {
      std::map<std::string, int64_t> counts;
      Query q(st.count_runs_by_state);
      while (q.next()) counts[q.text(0)] = q.int64(1);
      FC_RETURN_IF_ERROR(q.status().withContext("count runs by state"));
      return counts;
    });
  }

  Result<std::vector<ScenarioScore>> lastScores() override {
    return read([&](Statements& st) -> Result<std::vector<ScenarioScore>> {
      std::vector<ScenarioScore> scores;
      Query q(st.last_scores);
      while (q.next()) scores.push_back({q.text(0), q.int64(1), q.real(2), q.int64(3)});
      FC_RETURN_IF_ERROR(q.status().withContext("read the last score of each scenario"));
      return scores;
    });
  }

  Result<std::vector<int64_t>> interruptUnfinishedRuns() override {
    const auto timed = timeWrite("interrupt_runs");
    return interruptUnfinished(st_.list_unfinished, "interrupt unfinished runs",
                               [this](int64_t id, const std::string& state, int64_t now_ms) {
                                 return finish(id, std::string(kInterrupted), now_ms, std::nullopt,
                                               json::object(),
                                               "serve stopped while the run was " + state);
                               });
  }

  Status appendSamples(int64_t run_id, const std::vector<core::Sample>& samples) override {
    const auto timed = timeWrite("append_samples");
    if (samples.empty()) return Status::ok();
    // Ranks flushing at the same time share one transaction (one fsync); each batch is still
    // stored whole or not at all, so a workload may simply resend a batch that failed.
    return sample_commits_.submit(SampleBatch{run_id, &samples},
                                  [this](SampleCommits::Group& group) { commitSamples(group); });
  }

  Status appendTelemetry(int64_t run_id, const std::vector<core::TelemetryPoint>& points) override {
    const auto timed = timeWrite("append_telemetry");
    if (points.empty()) return Status::ok();
    std::lock_guard lock(mu_);
    const std::string what = "append telemetry to run " + std::to_string(run_id);
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    for (const core::TelemetryPoint& p : points) {
      Status status = execWith(st_.insert_telemetry, run_id, p.t_ms, p.source, p.metric, p.value);
      if (!status.isOk()) return mapRunForeignKey(status.withContext(what), run_id);
    }
    return txn.commit().withContext(what);
  }

  Result<std::vector<core::TelemetryPoint>> telemetry(int64_t run_id) override {
    return read([&](Statements& st) -> Result<std::vector<core::TelemetryPoint>> {
      std::vector<core::TelemetryPoint> out;
      Query q(st.list_telemetry);
      q.bind(1, run_id);
      while (q.next()) {
        core::TelemetryPoint p;
        p.t_ms = q.real(0);
        p.source = q.text(1);
        p.metric = q.text(2);
        p.value = q.int64(3);
        out.push_back(std::move(p));
      }
      FC_RETURN_IF_ERROR(q.status().withContext("read telemetry of run " + std::to_string(run_id)));
      return out;
    });
  }

  Result<std::vector<core::Sample>> samples(int64_t run_id) override {
    return read([&](Statements& st) -> Result<std::vector<core::Sample>> {
      std::vector<core::Sample> out;
      Query q(st.list_samples);
      q.bind(1, run_id);
      while (q.next()) {
        core::Sample s;
        s.rank = static_cast<int>(q.int64(0));
        s.iteration = q.int64(1);
        s.start_ms = q.real(2);
        s.duration_ms = q.real(3);
        s.bytes = q.int64(4);
        out.push_back(s);
      }
      FC_RETURN_IF_ERROR(q.status().withContext("read samples of run " + std::to_string(run_id)));
      return out;
    });
  }

  Result<std::vector<SampleRow>> sampleRows(int64_t run_id, const SampleQuery& query) override {
    return read([&](Statements& st) -> Result<std::vector<SampleRow>> {
      Query q(st.sample_rows);
      q.bind(1, run_id).bind(2, query.after_seq);
      if (query.rank) q.bind(3, *query.rank);
      if (query.after_ms) q.bind(4, *query.after_ms);
      q.bind(5, query.limit > 0 ? int64_t{query.limit} : int64_t{-1});
      std::vector<SampleRow> out;
      while (q.next()) out.push_back(sampleRowFrom(q));
      FC_RETURN_IF_ERROR(q.status().withContext("read samples of run " + std::to_string(run_id)));
      return out;
    });
  }

  Result<std::vector<SampleRow>> sampleEnvelope(int64_t run_id, const SampleQuery& query,
                                                int buckets) override {
    if (buckets < 1) {
      return Status(StatusCode::kInvalidArgument, "sample envelope: buckets must be at least 1");
    }
    return read([&](Statements& st) -> Result<std::vector<SampleRow>> {
      Query q(st.sample_envelope);
      q.bind(1, run_id);
      if (query.rank) q.bind(2, *query.rank);
      if (query.after_ms) q.bind(3, *query.after_ms);
      q.bind(4, int64_t{buckets});
      std::map<int64_t, SampleRow> by_seq;  // a bucket's fastest and slowest may be one sample
      while (q.next()) {
        SampleRow row = sampleRowFrom(q);
        by_seq.emplace(row.seq, row);
      }
      FC_RETURN_IF_ERROR(
          q.status().withContext("read the sample envelope of run " + std::to_string(run_id)));
      std::vector<SampleRow> out;
      out.reserve(by_seq.size());
      for (auto& [seq, row] : by_seq) out.push_back(row);
      std::sort(out.begin(), out.end(), [](const SampleRow& a, const SampleRow& b) {
        if (a.sample.rank != b.sample.rank) return a.sample.rank < b.sample.rank;
        if (a.sample.start_ms != b.sample.start_ms) return a.sample.start_ms < b.sample.start_ms;
        return a.seq < b.seq;
      });
      return out;
    });
  }

  Result<int> sampleRankCount(int64_t run_id) override {
    return read([&](Statements& st) -> Result<int> {
      Query q(st.sample_rank_count);
      q.bind(1, run_id);
      const bool row = q.next();
      FC_RETURN_IF_ERROR(q.status().withContext("read the ranks of run " + std::to_string(run_id)));
      if (!row || q.isNull(0)) return 0;
      return static_cast<int>(q.int64(0)) + 1;
    });
  }

  Result<std::vector<EventRow>> eventRows(int64_t run_id, int64_t after_seq, int limit) override {
    return read([&](Statements& st) -> Result<std::vector<EventRow>> {
      Query q(st.event_rows);
      q.bind(1, run_id).bind(2, after_seq).bind(3, limit > 0 ? int64_t{limit} : int64_t{-1});
      std::vector<EventRow> out;
      while (q.next()) {
        EventRow row;
        row.seq = q.int64(0);
        row.event.run_id = q.int64(1);
        row.event.t_ms = q.real(2);
        row.event.wall_ms = q.int64(3);
        row.event.kind = q.text(4);
        auto detail = parseJson(q.text(5), "event detail of run " + std::to_string(run_id));
        if (!detail.isOk()) return detail.status();
        row.event.detail = std::move(detail).value();
        out.push_back(std::move(row));
      }
      FC_RETURN_IF_ERROR(q.status().withContext("read events of run " + std::to_string(run_id)));
      return out;
    });
  }

  Result<std::vector<int64_t>> prunableRuns(int64_t finished_before_ms, int keep_newest) override {
    std::lock_guard lock(mu_);
    Query q(st_.prunable_runs);
    bindFinalStates(q);
    q.bind(6, finished_before_ms).bind(7, int64_t{keep_newest});
    std::vector<int64_t> out;
    while (q.next()) out.push_back(q.int64(0));
    FC_RETURN_IF_ERROR(q.status().withContext("list the runs retention may prune"));
    return out;
  }

  Result<PruneReport> pruneRun(int64_t run_id, int sample_buckets, int telemetry_points) override {
    if (sample_buckets < 1 || telemetry_points < 2) {
      return Status(StatusCode::kInvalidArgument,
                    "prune: at least 1 sample bucket and 2 telemetry points");
    }
    const std::string what = "prune run " + std::to_string(run_id);
    PruneReport report;
    report.run_id = run_id;
    auto samples_before = countOf(st_.count_run_samples, run_id);
    if (!samples_before) return samples_before.status().withContext(what);
    auto telemetry_before = countOf(st_.count_run_telemetry, run_id);
    if (!telemetry_before) return telemetry_before.status().withContext(what);
    report.samples_before = *samples_before;
    report.telemetry_before = *telemetry_before;

    auto envelope = sampleEnvelope(run_id, SampleQuery{}, sample_buckets);
    if (!envelope) return envelope.status().withContext(what);
    std::vector<int64_t> kept;
    for (const SampleRow& row : *envelope) kept.push_back(row.seq);
    std::sort(kept.begin(), kept.end());
    // The rows to go, a page at a time by cursor; each page's deletes are one transaction.
    for (int64_t after = 0;;) {
      std::vector<int64_t> page;
      {
        std::lock_guard lock(mu_);
        Query q(st_.sample_rowids_after);
        q.bind(1, run_id).bind(2, after).bind(3, int64_t{kPruneBatch});
        while (q.next()) page.push_back(q.int64(0));
        FC_RETURN_IF_ERROR(q.status().withContext(what));
      }
      if (page.empty()) break;
      after = page.back();
      std::vector<int64_t> doomed;
      for (int64_t rowid : page) {
        if (!std::binary_search(kept.begin(), kept.end(), rowid)) doomed.push_back(rowid);
      }
      FC_RETURN_IF_ERROR(deleteRows(st_.delete_sample, doomed, "prune_samples").withContext(what));
    }
    std::vector<int64_t> thinned;
    {
      std::lock_guard lock(mu_);
      Query q(st_.telemetry_to_thin);
      q.bind(1, run_id).bind(2, int64_t{telemetry_points});
      while (q.next()) thinned.push_back(q.int64(0));
      FC_RETURN_IF_ERROR(q.status().withContext(what));
    }
    for (size_t from = 0; from < thinned.size(); from += kPruneBatch) {
      const size_t to = std::min(thinned.size(), from + kPruneBatch);
      const std::vector<int64_t> batch(thinned.begin() + static_cast<ptrdiff_t>(from),
                                       thinned.begin() + static_cast<ptrdiff_t>(to));
      FC_RETURN_IF_ERROR(
          deleteRows(st_.delete_telemetry, batch, "prune_telemetry").withContext(what));
    }
    auto samples_after = countOf(st_.count_run_samples, run_id);
    if (!samples_after) return samples_after.status().withContext(what);
    auto telemetry_after = countOf(st_.count_run_telemetry, run_id);
    if (!telemetry_after) return telemetry_after.status().withContext(what);
    report.samples_kept = *samples_after;
    report.telemetry_kept = *telemetry_after;
    FC_RETURN_IF_ERROR(setRunAttribute(run_id, "retention",
                                       json{{"pruned_ms", core::wallNowMs()},
                                            {"samples_before", report.samples_before},
                                            {"samples_kept", report.samples_kept},
                                            {"telemetry_before", report.telemetry_before},
                                            {"telemetry_kept", report.telemetry_kept}}));
    return report;
  }

  Result<int64_t> releaseFreePages() override {
    const auto timed = timeWrite("release_free_pages");
    std::lock_guard lock(mu_);
    auto before = pragmaText(db_.get(), "PRAGMA freelist_count");
    if (!before) return before.status();
    Query q(st_.incremental_vacuum);
    while (q.next()) {
    }
    FC_RETURN_IF_ERROR(q.status().withContext("incremental vacuum"));
    q.reset();
    auto after = pragmaText(db_.get(), "PRAGMA freelist_count");
    if (!after) return after.status();
    return std::max<int64_t>(0, std::atoll(before->c_str()) - std::atoll(after->c_str()));
  }

  Status appendEvent(const EventRecord& event) override {
    const auto timed = timeWrite("append_event");
    std::lock_guard lock(mu_);
    const std::string what =
        "append event " + event.kind + " to run " + std::to_string(event.run_id);
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    Status status = execWith(st_.insert_event, event.run_id, event.t_ms, event.wall_ms, event.kind,
                             dumpJson(event.detail));
    if (!status.isOk()) return mapRunForeignKey(status.withContext(what), event.run_id);
    return txn.commit().withContext(what);
  }

  Result<std::vector<EventRecord>> events(int64_t run_id) override {
    return read([&](Statements& st) -> Result<std::vector<EventRecord>> {
      std::vector<EventRecord> out;
      Query q(st.list_events);
      q.bind(1, run_id);
      while (q.next()) {
        EventRecord e;
        e.run_id = q.int64(0);
        e.t_ms = q.real(1);
        e.wall_ms = q.int64(2);
        e.kind = q.text(3);
        auto detail = parseJson(q.text(4), "event detail of run " + std::to_string(run_id));
        if (!detail.isOk()) return detail.status();
        e.detail = std::move(detail).value();
        out.push_back(std::move(e));
      }
      FC_RETURN_IF_ERROR(q.status().withContext("read events of run " + std::to_string(run_id)));
      return out;
    });
  }

  Result<int64_t> journalIntent(int64_t run_id, const json& fault, const json& prior) override {
    const auto timed = timeWrite("journal_intent");
    std::lock_guard lock(mu_);
    const std::string what = "write journal intent for run " + std::to_string(run_id);
    auto id = insertOne(st_.insert_journal, what,
                        run_id == 0 ? std::nullopt : std::optional<int64_t>(run_id),
                        dumpJson(fault), dumpJson(prior), kJournalIntent, now());
    if (!id.isOk()) return mapRunForeignKey(id.status(), run_id);
    return id;
  }

  Status journalMark(int64_t entry_id, const std::string& state) override {
    const auto timed = timeWrite("journal_mark");
    bool known = false;
    for (std::string_view s : kJournalMarks) known = known || s == state;
    if (!known) {
      return Status(StatusCode::kInvalidArgument,
                    "journal state " + state + " is not applied, reverted or failed");
    }
    std::lock_guard lock(mu_);
    const std::string name = "journal entry " + std::to_string(entry_id);
    const std::string what = "mark " + name + " " + state;
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    auto current = stateOf(st_.get_journal_state, "journal entry", entry_id, what);
    if (!current.isOk()) return current.status();
    if (*current == kJournalReverted) {
      // Reverting twice is the normal outcome of a retried revert; keep the first time.
      if (state == kJournalReverted) return Status::ok();
      return Status(StatusCode::kFailedPrecondition, name + " is already reverted");
    }
    FC_RETURN_IF_ERROR(
        execWith(st_.mark_journal, entry_id, state, now(), kJournalReverted).withContext(what));
    return txn.commit().withContext(what);
  }

  Result<std::vector<JournalEntry>> unrevertedJournal() override {
    std::lock_guard lock(mu_);
    std::vector<JournalEntry> out;
    Query q(st_.list_unreverted);
    while (q.next()) {
      JournalEntry e;
      e.id = q.int64(0);
      e.run_id = q.int64(1);  // NULL reads as 0: not tied to a run
      const std::string name = "journal entry " + std::to_string(e.id);
      auto fault = parseJson(q.text(2), name + " fault");
      if (!fault.isOk()) return fault.status();
      auto prior = parseJson(q.text(3), name + " prior");
      if (!prior.isOk()) return prior.status();
      e.fault = std::move(fault).value();
      e.prior = std::move(prior).value();
      e.state = q.text(4);
      e.intent_ms = q.int64(5);
      e.reverted_ms = q.int64(6);
      out.push_back(std::move(e));
    }
    FC_RETURN_IF_ERROR(q.status().withContext("read unreverted journal"));
    return out;
  }

  Result<std::vector<RunRecord>> unfinishedRuns() override {
    std::lock_guard lock(mu_);
    Query q(st_.list_unfinished_runs);
    bindFinalStates(q);
    return readAll(q, readRun, "list unfinished runs");
  }

  // --- Suites ---

  Status putSuite(const std::string& name, const json& document, bool builtin) override {
    const auto timed = timeWrite("put_suite");
    return putDocument(st_.suites, "suite", name, document, builtin);
  }

  Result<SuiteRecord> getSuite(const std::string& name) override {
    return getDocument(&Statements::suites, "suite", name, readSuite);
  }

  Result<std::vector<SuiteRecord>> listSuites() override {
    return listDocuments(&Statements::suites, "suites", readSuite);
  }

  Status deleteSuite(const std::string& name) override {
    const auto timed = timeWrite("delete_suite");
    return deleteDocument(st_.suites, "suite", name);
  }

  // --- Suite runs ---

  Result<int64_t> createSuiteRun(const std::string& suite_name, const json& suite,
                                 const std::string& fabric) override {
    const auto timed = timeWrite("create_suite_run");
    if (suite_name.empty()) return Status(StatusCode::kInvalidArgument, "suite name is empty");
    std::lock_guard lock(mu_);
    return insertOne(st_.insert_suite_run, "create suite run of " + suite_name, suite_name,
                     dumpJson(suite), fabric, kQueued, now());
  }

  Status setSuiteRunState(int64_t id, const std::string& state, const std::string& error) override {
    const auto timed = timeWrite("set_suite_run_state");
    const bool final_state = isFinalState(state);
    if (!final_state && state != kQueued && state != kRunning) {
      return Status(StatusCode::kInvalidArgument,
                    "suite run state " + state +
                        " is not one of queued, running, passed, failed, aborted, interrupted, "
                        "error");
    }
    std::lock_guard lock(mu_);
    const std::string what = "set suite run " + std::to_string(id) + " state to " + state;
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    // A final verdict is never overwritten: an abort racing the worker's own verdict loses
    // cleanly instead of flipping a finished suite run.
    FC_RETURN_IF_ERROR(requireUnfinished(st_.get_suite_run_state, "suite run", id, what));
    FC_RETURN_IF_ERROR(
        execWith(st_.set_suite_run_state, id, state, final_state ? now() : int64_t{0}, error)
            .withContext(what));
    return txn.commit().withContext(what);
  }

  Status appendSuiteRunRun(int64_t id, int64_t run_id) override {
    const auto timed = timeWrite("append_suite_run_run");
    std::lock_guard lock(mu_);
    const std::string what =
        "add run " + std::to_string(run_id) + " to suite run " + std::to_string(id);
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    auto current = stateOf(st_.get_suite_run_state, "suite run", id, what);
    if (!current.isOk()) return current.status();
    // The suite run exists (checked above), so a foreign-key failure is the run.
    Status status = execWith(st_.insert_suite_run_run, id, run_id);
    if (!status.isOk()) return mapRunForeignKey(status.withContext(what), run_id);
    return txn.commit().withContext(what);
  }

  Result<SuiteRunRecord> getSuiteRun(int64_t id) override {
    std::lock_guard lock(mu_);
    auto record = readOne(st_.get_suite_run, id, readSuiteRun,
                          "get suite run " + std::to_string(id), notFound("suite run", id));
    if (!record.isOk()) return record.status();
    FC_RETURN_IF_ERROR(loadSuiteRunRuns(*record));
    return record;
  }

  Result<std::vector<SuiteRunRecord>> listSuiteRuns(int limit) override {
    if (limit <= 0) {
      return Status(StatusCode::kInvalidArgument,
                    "suite run list limit must be positive, got " + std::to_string(limit));
    }
    std::lock_guard lock(mu_);
    Result<std::vector<SuiteRunRecord>> out = [&] {
      Query q(st_.list_suite_runs);
      q.bind(1, limit);
      return readAll(q, readSuiteRun, "list suite runs");
    }();
    if (!out.isOk()) return out.status();
    for (SuiteRunRecord& record : *out) FC_RETURN_IF_ERROR(loadSuiteRunRuns(record));
    return out;
  }

  Result<std::vector<int64_t>> interruptUnfinishedSuiteRuns() override {
    const auto timed = timeWrite("interrupt_suite_runs");
    return interruptUnfinished(st_.list_unfinished_suite_runs, "interrupt unfinished suite runs",
                               [this](int64_t id, const std::string& state, int64_t now_ms) {
                                 return execWith(st_.set_suite_run_state, id, kInterrupted, now_ms,
                                                 "serve stopped while the suite run was " + state);
                               });
  }

  // --- Schedules ---

  Result<int64_t> createSchedule(const ScheduleRecord& schedule) override {
    const auto timed = timeWrite("create_schedule");
    if (schedule.cron.empty()) {
      return Status(StatusCode::kInvalidArgument, "schedule cron is empty");
    }
    if (schedule.scenario.empty() == schedule.suite.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "schedule needs exactly one of scenario and suite");
    }
    std::lock_guard lock(mu_);
    return insertOne(st_.insert_schedule, "create schedule " + schedule.cron, schedule.cron,
                     schedule.scenario, schedule.suite, schedule.fabric, schedule.enabled ? 1 : 0,
                     schedule.created_ms > 0 ? schedule.created_ms : now());
  }

  Result<ScheduleRecord> getSchedule(int64_t id) override {
    std::lock_guard lock(mu_);
    return readOne(st_.get_schedule, id, readSchedule, "get schedule " + std::to_string(id),
                   notFound("schedule", id));
  }

  Result<std::vector<ScheduleRecord>> listSchedules() override {
    std::lock_guard lock(mu_);
    Query q(st_.list_schedules);
    return readAll(q, readSchedule, "list schedules");
  }

  Status deleteSchedule(int64_t id) override {
    const auto timed = timeWrite("delete_schedule");
    std::lock_guard lock(mu_);
    return updateOne(st_.delete_schedule, "delete schedule " + std::to_string(id),
                     notFound("schedule", id), id);
  }

  Status markScheduleFired(int64_t id, int64_t wall_ms, const std::string& result) override {
    const auto timed = timeWrite("mark_schedule_fired");
    std::lock_guard lock(mu_);
    return updateOne(st_.mark_schedule_fired, "mark schedule " + std::to_string(id) + " fired",
                     notFound("schedule", id), id, wall_ms, result);
  }

  // --- Tokens ---

  Result<int64_t> createToken(const std::string& name, Role role,
                              const std::string& secret_hash) override {
    const auto timed = timeWrite("create_token");
    if (name.empty()) return Status(StatusCode::kInvalidArgument, "token name is empty");
    if (secret_hash.empty()) {
      return Status(StatusCode::kInvalidArgument, "token secret hash is empty");
    }
    std::lock_guard lock(mu_);
    const std::string what = "create token " + name;
    auto id = insertOne(st_.insert_token, what, name, roleName(role), secret_hash, now());
    if (!id.isOk() && id.status().origin() == SQLITE_CONSTRAINT_UNIQUE) {
      return Status(StatusCode::kAlreadyExists, what + ": a token with this secret exists",
                    id.status().origin());
    }
    return id;
  }

  Result<TokenRecord> tokenByHash(const std::string& secret_hash) override {
    return read([&](Statements& st) -> Result<TokenRecord> {
      auto token = readOne(st.get_token_by_hash, secret_hash, readToken, "look up token",
                           Status(StatusCode::kNotFound, "no token has this secret"));
      if (!token.isOk()) return token.status();
      // Same code as an unknown secret, so a caller that only checks isOk() can never accept a
      // revoked token; the message still says what happened.
      if (token->revoked_ms != 0) {
        return Status(StatusCode::kNotFound, "token " + std::to_string(token->id) + " (" +
                                                 token->name + ") has been revoked");
      }
      return token;
    });
  }

  Result<std::vector<TokenRecord>> listTokens() override {
    return read([&](Statements& st) -> Result<std::vector<TokenRecord>> {
      Query q(st.list_tokens);
      return readAll(q, readToken, "list tokens");
    });
  }

  Status revokeToken(int64_t id) override {
    const auto timed = timeWrite("revoke_token");
    std::lock_guard lock(mu_);
    return updateOne(st_.revoke_token, "revoke token " + std::to_string(id), notFound("token", id),
                     id, now());
  }

  Status touchToken(int64_t id, int64_t wall_ms) override {
    const auto timed = timeWrite("touch_token");
    std::lock_guard lock(mu_);
    return updateOne(st_.touch_token, "touch token " + std::to_string(id), notFound("token", id),
                     id, wall_ms);
  }

  Result<int64_t> countActiveTokens(Role at_least) override {
    return read([&](Statements& st) -> Result<int64_t> {
      Query q(st.count_active_tokens);
      // Roles below at_least bind as "" and match nothing.
      int param = 1;
      for (Role role : {Role::kViewer, Role::kOperator, Role::kAdmin}) {
        q.bind(param++, role >= at_least ? roleName(role) : "");
      }
      if (!q.next()) {
        FC_RETURN_IF_ERROR(q.status().withContext("count active tokens"));
        return int64_t{0};
      }
      return q.int64(0);
    });
  }

  // --- Audit ---

  Result<int64_t> appendAudit(const AuditRecord& record) override {
    const auto timed = timeWrite("append_audit");
    std::lock_guard lock(mu_);
    return insertOne(st_.insert_audit, "append audit entry " + record.method + " " + record.path,
                     record.wall_ms > 0 ? record.wall_ms : now(), record.actor, record.role,
                     record.method, record.path, record.status, dumpJson(record.detail));
  }

  Result<std::vector<AuditRecord>> listAudit(int limit, int64_t before_id) override {
    if (limit <= 0) {
      return Status(StatusCode::kInvalidArgument,
                    "audit list limit must be positive, got " + std::to_string(limit));
    }
    if (before_id < 0) {
      return Status(StatusCode::kInvalidArgument,
                    "audit before id must not be negative, got " + std::to_string(before_id));
    }
    return read([&](Statements& st) -> Result<std::vector<AuditRecord>> {
      Query q(st.list_audit);
      q.bind(1, limit).bind(2, before_id == 0 ? std::numeric_limits<int64_t>::max() : before_id);
      return readAll(q, readAudit, "list audit");
    });
  }

 private:
  static int64_t now() { return core::wallNowMs(); }

  Transaction transaction() { return Transaction(st_.begin, st_.commit, st_.rollback); }

  static Status documentNotFound(std::string_view noun, const std::string& name) {
    return Status(StatusCode::kNotFound, std::string(noun) + " " + name + " not found");
  }

  // `docs` names the table's statements (&Statements::scenarios or ::suites) on whichever
  // connection serves the read.
  template <typename Record>
  Result<Record> getDocument(DocumentStatements Statements::*docs, std::string_view noun,
                             const std::string& name, Result<Record> (*read_row)(const Query&)) {
    return read([&](Statements& st) -> Result<Record> {
      return readOne((st.*docs).get, name, read_row, "get " + std::string(noun) + " " + name,
                     documentNotFound(noun, name));
    });
  }

  template <typename Record>
  Result<std::vector<Record>> listDocuments(DocumentStatements Statements::*docs,
                                            std::string_view table,
                                            Result<Record> (*read_row)(const Query&)) {
    return read([&](Statements& st) -> Result<std::vector<Record>> {
      Query q((st.*docs).list);
      return readAll(q, read_row, "list " + std::string(table));
    });
  }

  Status putDocument(DocumentStatements& st, std::string_view noun, const std::string& name,
                     const json& document, bool builtin) {
    const std::string label = std::string(noun) + " " + name;
    if (name.empty()) {
      return Status(StatusCode::kInvalidArgument, std::string(noun) + " name is empty");
    }
    std::lock_guard lock(mu_);
    const std::string what = "put " + label;
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    {
      // Start-up re-seeds builtins over whatever is stored, so a user's edit of one would be
      // silently lost at the next restart: refuse it now instead.
      Query q(st.get_builtin);
      q.bind(1, name);
      if (q.next() && q.int64(0) != 0 && !builtin) {
        return Status(StatusCode::kFailedPrecondition,
                      label + " is builtin and cannot be replaced");
      }
      FC_RETURN_IF_ERROR(q.status().withContext(what));
    }
    FC_RETURN_IF_ERROR(
        execWith(st.put, name, dumpJson(document), builtin ? 1 : 0, now()).withContext(what));
    return txn.commit().withContext(what);
  }

  Status deleteDocument(DocumentStatements& st, std::string_view noun, const std::string& name) {
    std::lock_guard lock(mu_);
    const std::string label = std::string(noun) + " " + name;
    const std::string what = "delete " + label;
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    {
      Query q(st.get_builtin);
      q.bind(1, name);
      if (!q.next()) {
        FC_RETURN_IF_ERROR(q.status().withContext(what));
        return documentNotFound(noun, name);
      }
      if (q.int64(0) != 0) {
        return Status(StatusCode::kFailedPrecondition, label + " is builtin and cannot be deleted");
      }
    }
    FC_RETURN_IF_ERROR(execWith(st.remove, name).withContext(what));
    return txn.commit().withContext(what);
  }

  // Inside a transaction: the state column get_state reads for id, or notFound(noun, id).
  Result<std::string> stateOf(Statement& get_state, std::string_view noun, int64_t id,
                              const std::string& what) {
    Query q(get_state);
    q.bind(1, id);
    if (!q.next()) {
      FC_RETURN_IF_ERROR(q.status().withContext(what));
      return notFound(noun, id);
    }
    return q.text(0);
  }

  // Inside a transaction: kNotFound, or kFailedPrecondition when the run (or suite run) is
  // already final.
  Status requireUnfinished(Statement& get_state, std::string_view noun, int64_t id,
                           const std::string& what) {
    auto state = stateOf(get_state, noun, id, what);
    if (!state.isOk()) return state.status();
    if (isFinalState(*state)) {
      return Status(StatusCode::kFailedPrecondition, std::string(noun) + " " + std::to_string(id) +
                                                         " already finished (" + *state + ")");
    }
    return Status::ok();
  }

  // list_unfinished is "SELECT id, state ... WHERE state NOT IN (final states)"; interrupt(id,
  // state, now_ms) marks one row interrupted. All in one transaction; returns the ids.
  template <typename Interrupt>
  Result<std::vector<int64_t>> interruptUnfinished(Statement& list_unfinished,
                                                   const std::string& what, Interrupt interrupt) {
    std::lock_guard lock(mu_);
    const int64_t now_ms = now();
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    std::vector<std::pair<int64_t, std::string>> unfinished;
    {
      Query q(list_unfinished);
      bindFinalStates(q);
      while (q.next()) unfinished.emplace_back(q.int64(0), q.text(1));
      FC_RETURN_IF_ERROR(q.status().withContext(what));
    }
    std::vector<int64_t> ids;
    ids.reserve(unfinished.size());
    for (const auto& [id, state] : unfinished) {
      FC_RETURN_IF_ERROR(interrupt(id, state, now_ms).withContext(what));
      ids.push_back(id);
    }
    FC_RETURN_IF_ERROR(txn.commit().withContext(what));
    return ids;
  }

  Status addTransition(int64_t id, std::string_view state, int64_t wall_ms) {
    return execWith(st_.insert_transition, id, state, wall_ms);
  }

  Status finish(int64_t id, const std::string& state, int64_t now_ms, std::optional<double> score,
                const json& result, const std::string& error) {
    FC_RETURN_IF_ERROR(execWith(st_.finish_run, id, state, now_ms, score, dumpJson(result), error));
    return addTransition(id, state, now_ms);
  }

  static void bindFinalStates(Query& q) {
    for (size_t i = 0; i < kFinalStates.size(); ++i) {
      q.bind(static_cast<int>(i) + 1, kFinalStates[i]);
    }
  }

  // One INSERT in its own transaction; the new row's id.
  template <typename... Args>
  Result<int64_t> insertOne(Statement& stmt, const std::string& what, const Args&... args) {
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    FC_RETURN_IF_ERROR(execWith(stmt, args...).withContext(what));
    const int64_t id = sqlite3_last_insert_rowid(db_.get());
    FC_RETURN_IF_ERROR(txn.commit().withContext(what));
    return id;
  }

  // One statement "... WHERE id = ?1" (args bind ?1..?N, the id first) in its own transaction;
  // not_found when it matched no row.
  template <typename... Args>
  Status updateOne(Statement& stmt, const std::string& what, const Status& not_found,
                   const Args&... args) {
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin().withContext(what));
    FC_RETURN_IF_ERROR(execWith(stmt, args...).withContext(what));
    if (sqlite3_changes(db_.get()) == 0) return not_found;
    return txn.commit().withContext(what);
  }

  Status loadSuiteRunRuns(SuiteRunRecord& record) {
    Query q(st_.list_suite_run_runs);
    q.bind(1, record.id);
    while (q.next()) record.run_ids.push_back(q.int64(0));
    return q.status().withContext("read runs of suite run " + std::to_string(record.id));
  }

  // Times one write for the observer: declared before the method's lock, so it covers the wait
  // for the lock, the statements and the commit, and reports after the lock is released.
  class WriteTimer {
   public:
    WriteTimer(const WriteObserver& observer, std::string_view operation)
        : observer_(observer), operation_(operation), started_ns_(core::steadyNowNs()) {}
    WriteTimer(const WriteTimer&) = delete;
    WriteTimer& operator=(const WriteTimer&) = delete;
    ~WriteTimer() {
      if (observer_) {
        observer_(operation_, static_cast<double>(core::steadyNowNs() - started_ns_) / 1e9);
      }
    }

   private:
    const WriteObserver& observer_;
    std::string_view operation_;
    int64_t started_ns_;
  };
  WriteTimer timeWrite(std::string_view operation) const { return {observer_, operation}; }

  struct SampleBatch {
    int64_t run_id;
    const std::vector<core::Sample>* samples;
  };
  using SampleCommits = GroupCommit<SampleBatch>;

  // One transaction for the group, one savepoint per batch: a batch that fails (its run gone)
  // is rolled back alone and its caller told; a failed COMMIT fails every batch.
  void commitSamples(SampleCommits::Group& group) {
    std::lock_guard lock(mu_);
    Transaction txn = transaction();
    if (Status begun = txn.begin(); !begun.isOk()) {
      for (auto* pending : group) pending->status = begun.withContext("append samples");
      return;
    }
    for (auto* pending : group) pending->status = insertSampleBatch(*pending->batch);
    Status committed = txn.commit();
    if (!committed.isOk()) {
      for (auto* pending : group) {
        pending->status = committed.withContext("append samples to run " +
                                                std::to_string(pending->batch->run_id));
      }
    }
  }

  Status insertSampleBatch(const SampleBatch& batch) {
    const std::string what = "append samples to run " + std::to_string(batch.run_id);
    FC_RETURN_IF_ERROR(execWith(st_.savepoint).withContext(what));
    for (const core::Sample& s : *batch.samples) {
      Status status = execWith(st_.insert_sample, batch.run_id, s.rank, s.iteration, s.start_ms,
                               s.duration_ms, s.bytes);
      if (!status.isOk()) {
        (void)execWith(st_.rollback_to);
        (void)execWith(st_.release);
        return mapRunForeignKey(status.withContext(what), batch.run_id);
      }
    }
    return execWith(st_.release).withContext(what);
  }

  // Rows a prune deletes per transaction: short holds of the lock the ranks' samples wait on.
  static constexpr int kPruneBatch = 5000;

  Result<int64_t> countOf(Statement& statement, int64_t run_id) {
    std::lock_guard lock(mu_);
    Query q(statement);
    q.bind(1, run_id);
    const bool row = q.next();
    FC_RETURN_IF_ERROR(q.status());
    return row ? q.int64(0) : 0;
  }

  // Deletes the rows by rowid in one transaction.
  Status deleteRows(Statement& statement, const std::vector<int64_t>& rowids,
                    std::string_view operation) {
    if (rowids.empty()) return Status::ok();
    const auto timed = timeWrite(operation);
    std::lock_guard lock(mu_);
    Transaction txn = transaction();
    FC_RETURN_IF_ERROR(txn.begin());
    for (int64_t rowid : rowids) FC_RETURN_IF_ERROR(execWith(statement, rowid));
    return txn.commit();
  }

  // A read: on a connection of the pool, or on the writer's under its lock when there is none.
  template <typename F>
  auto read(F&& f) -> decltype(f(std::declval<Statements&>())) {
    if (readers_.empty()) {
      std::lock_guard lock(mu_);
      return f(st_);
    }
    return readers_.with([&](ReadConnection& reader) { return f(reader.st); });
  }

  // The writer: every write, and the reads that are part of one, under mu_.
  std::mutex mu_;
  // Declared before st_ so that the statements are finalized before the connection closes.
  DbHandle db_;
  WriteObserver observer_;
  Statements st_;
  SampleCommits sample_commits_;
  ConnectionPool<ReadConnection>
      readers_;  // declared last: closed before the writer, which then checkpoints the WAL
};

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::string& path, WriteObserver observer) {
  const std::string what = "open store " + path;
  auto db = openWriteConnection(path);
  if (!db.isOk()) return db.status().withContext(what);
  FC_RETURN_IF_ERROR(migrate(db->get()).withContext(what));
  auto store = std::make_unique<SqliteStore>(std::move(db).value(), std::move(observer));
  FC_RETURN_IF_ERROR(store->init(path, kReadConnections).withContext(what));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace fabric_chaos::store
