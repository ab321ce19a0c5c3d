#pragma once
// The SQLite store: scenarios, runs, their state transitions, events, samples and the fault
// journal. WAL mode; writes go through one connection guarded by a mutex, reads through a small
// pool of read-only connections that never wait for a commit; any thread may call. Every write is
// a transaction and samples go in by batch. Schema changes are numbered migrations
// (PRAGMA user_version). Errors carry the SQLite result code as origin.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/sample.h"
#include "core/status.h"
#include "core/telemetry.h"

namespace fabric_chaos::store {

using nlohmann::json;

struct ScenarioRecord {
  std::string name;
  json document;  // the scenario as stored (v1 JSON)
  bool builtin = false;
  int64_t updated_ms = 0;  // wall clock
};

struct RunRecord {
  int64_t id = 0;
  std::string scenario_name;
  json scenario;  // the exact scenario the run executed (a snapshot, not a reference)
  std::string fabric;
  std::string state;  // queued, running, passed, failed, aborted, interrupted, error
  int64_t created_ms = 0;
  int64_t started_ms = 0;   // 0 = not yet
  int64_t finished_ms = 0;  // 0 = not yet
  std::optional<double> score;
  json result = json::object();      // analysis + gate verdicts
  json attributes = json::object();  // e.g. {"loss_backend": "nftables"}
  std::string error;
};

struct RunFilter {
  std::string scenario;  // "" = any
  std::string state;     // "" = any
  std::string fabric;    // "" = any
  int limit = 100;
};

struct EventRecord {
  int64_t run_id = 0;
  double t_ms = 0;      // run-relative, steady clock
  int64_t wall_ms = 0;  // wall clock, for display
  std::string kind;     // fault_applied, fault_reverted, rank_started, reconnect, ...
  json detail = json::object();
};

struct JournalEntry {
  int64_t id = 0;
  int64_t run_id = 0;  // 0 = not tied to a run
  json fault;          // injectors::toJson(Fault)
  json prior;          // what revert restores
  std::string state;   // intent, applied, reverted, failed
  int64_t intent_ms = 0;
  int64_t reverted_ms = 0;
};

// A named, ordered list of scenarios run one after the other with one verdict.
struct SuiteRecord {
  std::string name;
  json document;  // {"name", "description", "scenarios": [...], "fabric"?, "stop_on_failure"?}
  bool builtin = false;
  int64_t updated_ms = 0;
};

struct SuiteRunRecord {
  int64_t id = 0;
  std::string suite_name;
  json suite;  // snapshot of the suite document
  std::string fabric;
  std::string state;             // queued, running, passed, failed, aborted, interrupted, error
  std::vector<int64_t> run_ids;  // in order, as they were started
  int64_t created_ms = 0;
  int64_t finished_ms = 0;  // 0 = not yet
  std::string error;
};

// A cron schedule that starts a scenario or a suite.
struct ScheduleRecord {
  int64_t id = 0;
  std::string cron;      // 5-field cron expression, UTC
  std::string scenario;  // exactly one of scenario / suite is set
  std::string suite;
  std::string fabric;  // "" = the scenario's or server's default
  bool enabled = true;
  int64_t created_ms = 0;
  int64_t last_fired_ms = 0;  // 0 = never
  std::string last_result;    // "run 12", "suite run 3", or the error of the last attempt
};

enum class Role { kViewer = 0, kOperator = 1, kAdmin = 2 };

struct TokenRecord {
  int64_t id = 0;
  std::string name;  // who: "admin", "ci-pipeline", "alice"
  Role role = Role::kViewer;
  std::string secret_hash;  // hex SHA-256 of the secret; the secret itself is never stored
  int64_t created_ms = 0;
  int64_t revoked_ms = 0;    // 0 = active
  int64_t last_used_ms = 0;  // 0 = never
};

struct AuditRecord {
  int64_t id = 0;
  int64_t wall_ms = 0;
  std::string actor;  // token name, or "anonymous"
  std::string role;   // "viewer", "operator", "admin", "" when unauthenticated
  std::string method;
  std::string path;
  int status = 0;                // HTTP status answered
  json detail = json::object();  // e.g. {"run_id": 7}, {"token_id": 3}
};

// A sample and its place in the run's insertion order: seq grows with every sample stored (it is
// the row's SQLite rowid), so a reader that keeps the last seq it saw asks only for what came
// after it.
struct SampleRow {
  int64_t seq = 0;
  core::Sample sample;
};

struct SampleQuery {
  int64_t after_seq = 0;           // only rows stored after this one (0: from the first)
  std::optional<int> rank;         // only this rank's
  std::optional<double> after_ms;  // only those with start_ms > after_ms
  int limit = 0;                   // at most this many (0: all)
};

struct EventRow {
  int64_t seq = 0;
  EventRecord event;
};

// What pruneRun did to one run.
struct PruneReport {
  int64_t run_id = 0;
  int64_t samples_before = 0;
  int64_t samples_kept = 0;
  int64_t telemetry_before = 0;
  int64_t telemetry_kept = 0;
};

// Told of every write the store makes: which one (a fixed name such as "append_samples") and
// how long its caller waited, the store's lock and the commit included. Called on the writing
// thread, after the lock is released; it must be cheap.
using WriteObserver = std::function<void(std::string_view operation, double seconds)>;

// The newest scored run of a scenario.
struct ScenarioScore {
  std::string scenario;
  int64_t run_id = 0;
  double score = 0;
  int64_t finished_ms = 0;
};

class Store {
 public:
  // Opens (creating if needed) and migrates the database at path; ":memory:" for tests.
  static core::Result<std::unique_ptr<Store>> open(const std::string& path,
                                                   WriteObserver observer = {});
  virtual ~Store() = default;

  virtual int schemaVersion() = 0;

  // Scenarios. put replaces; builtin ones are re-seeded at start-up and cannot be deleted.
  virtual core::Status putScenario(const std::string& name, const json& document, bool builtin) = 0;
  virtual core::Result<ScenarioRecord> getScenario(const std::string& name) = 0;
  virtual core::Result<std::vector<ScenarioRecord>> listScenarios() = 0;
  virtual core::Status deleteScenario(
      const std::string& name) = 0;  // kNotFound, kFailedPrecondition for builtin

  // Runs. Every state change is also recorded as a transition with its time.
  virtual core::Result<int64_t> createRun(const std::string& scenario_name, const json& scenario,
                                          const std::string& fabric) = 0;
  virtual core::Status setRunState(int64_t id, const std::string& state) = 0;
  virtual core::Status setRunAttribute(int64_t id, const std::string& key, const json& value) = 0;
  virtual core::Status finishRun(int64_t id, const std::string& state, std::optional<double> score,
                                 const json& result, const std::string& error) = 0;
  virtual core::Result<RunRecord> getRun(int64_t id) = 0;  // kNotFound
  virtual core::Result<std::vector<RunRecord>> listRuns(
      const RunFilter& filter) = 0;  // newest first
  // [{"state": "running", "wall_ms": ...}, ...] oldest first.
  virtual core::Result<json> runTransitions(int64_t id) = 0;
  // How many runs are in each state (states with none are absent).
  virtual core::Result<std::map<std::string, int64_t>> runCountsByState() = 0;
  // Each scenario's newest run that has a score, by scenario name.
  virtual core::Result<std::vector<ScenarioScore>> lastScores() = 0;
  // Runs left in a non-final state by a previous process (crash): marks them interrupted.
  virtual core::Result<std::vector<int64_t>> interruptUnfinishedRuns() = 0;

  // Samples and events.
  virtual core::Status appendSamples(int64_t run_id, const std::vector<core::Sample>& samples) = 0;
  virtual core::Result<std::vector<core::Sample>> samples(
      int64_t run_id) = 0;  // by rank, iteration
  // Incremental and bounded reads: each costs what it returns, not the run's size (an index
  // serves the cursor). By seq.
  virtual core::Result<std::vector<SampleRow>> sampleRows(int64_t run_id,
                                                          const SampleQuery& query) = 0;
  // The fastest and the slowest sample of each rank in each of `buckets` equal spans of start_ms
  // over the samples `query` selects (its after_seq and limit are not used), by rank and
  // start_ms: at most 2 x buckets per rank, and a stall keeps its slowest iteration.
  virtual core::Result<std::vector<SampleRow>> sampleEnvelope(int64_t run_id,
                                                              const SampleQuery& query,
                                                              int buckets) = 0;
  // The highest rank that reported, plus one; 0 without samples.
  virtual core::Result<int> sampleRankCount(int64_t run_id) = 0;
  virtual core::Result<std::vector<EventRow>> eventRows(int64_t run_id, int64_t after_seq,
                                                        int limit) = 0;  // by seq

  // Retention (store/retention.h). Finished runs whose samples and telemetry are still whole,
  // oldest first: those finished before `finished_before_ms` (0: none by age) and those after the
  // `keep_newest` newest finished runs (negative: none by count).
  virtual core::Result<std::vector<int64_t>> prunableRuns(int64_t finished_before_ms,
                                                          int keep_newest) = 0;
  // Cuts a run's samples down to their envelope (sampleEnvelope with `sample_buckets`) and each
  // of its telemetry series to about `telemetry_points` evenly spaced points, its first and last
  // kept, a few thousand rows per transaction so that the store's lock is never held for long;
  // then records what it did in the run's attributes as "retention". Its analysis, score and
  // events are untouched.
  virtual core::Result<PruneReport> pruneRun(int64_t run_id, int sample_buckets,
                                             int telemetry_points) = 0;
  // Hands the pages deletes freed back to the file system, where the database allows it
  // (auto_vacuum=INCREMENTAL, which the store sets on the databases it creates; an older file
  // keeps its size and reuses the pages). The number of pages released.
  virtual core::Result<int64_t> releaseFreePages() = 0;
  // Telemetry: appended in batches (one transaction each); read back ordered by source, metric
  // and time.
  virtual core::Status appendTelemetry(int64_t run_id,
                                       const std::vector<core::TelemetryPoint>& points) = 0;
  virtual core::Result<std::vector<core::TelemetryPoint>> telemetry(int64_t run_id) = 0;
  virtual core::Status appendEvent(const EventRecord& event) = 0;
  virtual core::Result<std::vector<EventRecord>> events(int64_t run_id) = 0;  // by t_ms

  // Fault journal: intent is written before a fault is applied, reverted after it is undone.
  virtual core::Result<int64_t> journalIntent(int64_t run_id, const json& fault,
                                              const json& prior) = 0;
  virtual core::Status journalMark(int64_t entry_id, const std::string& state) = 0;
  // Entries not marked reverted (intent, applied, failed), newest first: the order every
  // revert-all must take them back in.
  virtual core::Result<std::vector<JournalEntry>> unrevertedJournal() = 0;
  // Runs whose state is not final (queued or in progress), oldest first.
  virtual core::Result<std::vector<RunRecord>> unfinishedRuns() = 0;

  // Suites. Like scenarios: put replaces, builtin ones are re-seeded and cannot be deleted.
  virtual core::Status putSuite(const std::string& name, const json& document, bool builtin) = 0;
  virtual core::Result<SuiteRecord> getSuite(const std::string& name) = 0;  // kNotFound
  virtual core::Result<std::vector<SuiteRecord>> listSuites() = 0;
  virtual core::Status deleteSuite(const std::string& name) = 0;  // kNotFound, kFailedPrecondition

  // Suite runs.
  virtual core::Result<int64_t> createSuiteRun(const std::string& suite_name, const json& suite,
                                               const std::string& fabric) = 0;
  virtual core::Status setSuiteRunState(int64_t id, const std::string& state,
                                        const std::string& error) = 0;  // sets finished_ms if final
  virtual core::Status appendSuiteRunRun(int64_t id, int64_t run_id) = 0;
  virtual core::Result<SuiteRunRecord> getSuiteRun(int64_t id) = 0;                // kNotFound
  virtual core::Result<std::vector<SuiteRunRecord>> listSuiteRuns(int limit) = 0;  // newest first
  // Suite runs left unfinished by a previous process: marks them interrupted.
  virtual core::Result<std::vector<int64_t>> interruptUnfinishedSuiteRuns() = 0;

  // Schedules.
  virtual core::Result<int64_t> createSchedule(const ScheduleRecord& schedule) = 0;
  virtual core::Result<ScheduleRecord> getSchedule(int64_t id) = 0;  // kNotFound
  virtual core::Result<std::vector<ScheduleRecord>> listSchedules() = 0;
  virtual core::Status deleteSchedule(int64_t id) = 0;  // kNotFound
  virtual core::Status markScheduleFired(int64_t id, int64_t wall_ms,
                                         const std::string& result) = 0;

  // API tokens (secrets are stored as hashes only) and the audit log.
  virtual core::Result<int64_t> createToken(const std::string& name, Role role,
                                            const std::string& secret_hash) = 0;
  // kNotFound both for an unknown secret and for a revoked token (the message says which), so a
  // caller that only checks isOk() can never accept a revoked token.
  virtual core::Result<TokenRecord> tokenByHash(const std::string& secret_hash) = 0;
  virtual core::Result<std::vector<TokenRecord>> listTokens() = 0;
  virtual core::Status revokeToken(int64_t id) = 0;  // kNotFound; revoking twice is OK
  virtual core::Status touchToken(int64_t id, int64_t wall_ms) = 0;  // last_used_ms
  virtual core::Result<int64_t> countActiveTokens(Role at_least) = 0;
  virtual core::Result<int64_t> appendAudit(const AuditRecord& record) = 0;
  // Newest first; before_id = 0 for the newest page.
  virtual core::Result<std::vector<AuditRecord>> listAudit(int limit, int64_t before_id) = 0;
};

const char* roleName(Role role);                        // "viewer", "operator", "admin"
core::Result<Role> parseRole(const std::string& name);  // kInvalidArgument naming the choices

}  // namespace fabric_chaos::store
