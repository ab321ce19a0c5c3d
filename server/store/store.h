#pragma once
// The SQLite store: scenarios, runs, their state transitions, events, samples and the fault
// journal. One connection in WAL mode guarded by a mutex, so any thread may call; every write is a
// transaction and samples go in by batch. Schema changes are numbered migrations
// (PRAGMA user_version). Errors carry the SQLite result code as origin.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sample.h"
#include "core/status.h"

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
  int limit = 100;
};

struct EventRecord {
  int64_t run_id = 0;
  double t_ms = 0;          // run-relative, steady clock
  int64_t wall_ms = 0;      // wall clock, for display
  std::string kind;         // fault_applied, fault_reverted, rank_started, reconnect, ...
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

class Store {
 public:
  // Opens (creating if needed) and migrates the database at path; ":memory:" for tests.
  static core::Result<std::unique_ptr<Store>> open(const std::string& path);
  virtual ~Store() = default;

  virtual int schemaVersion() = 0;

  // Scenarios. put replaces; builtin ones are re-seeded at start-up and cannot be deleted.
  virtual core::Status putScenario(const std::string& name, const json& document,
                                   bool builtin) = 0;
  virtual core::Result<ScenarioRecord> getScenario(const std::string& name) = 0;
  virtual core::Result<std::vector<ScenarioRecord>> listScenarios() = 0;
  virtual core::Status deleteScenario(const std::string& name) = 0;  // kNotFound, kFailedPrecondition for builtin

  // Runs. Every state change is also recorded as a transition with its time.
  virtual core::Result<int64_t> createRun(const std::string& scenario_name, const json& scenario,
                                          const std::string& fabric) = 0;
  virtual core::Status setRunState(int64_t id, const std::string& state) = 0;
  virtual core::Status setRunAttribute(int64_t id, const std::string& key, const json& value) = 0;
  virtual core::Status finishRun(int64_t id, const std::string& state, std::optional<double> score,
                                 const json& result, const std::string& error) = 0;
  virtual core::Result<RunRecord> getRun(int64_t id) = 0;  // kNotFound
  virtual core::Result<std::vector<RunRecord>> listRuns(const RunFilter& filter) = 0;  // newest first
  // [{"state": "running", "wall_ms": ...}, ...] oldest first.
  virtual core::Result<json> runTransitions(int64_t id) = 0;
  // Runs left in a non-final state by a previous process (crash): marks them interrupted.
  virtual core::Result<std::vector<int64_t>> interruptUnfinishedRuns() = 0;

  // Samples and events.
  virtual core::Status appendSamples(int64_t run_id, const std::vector<core::Sample>& samples) = 0;
  virtual core::Result<std::vector<core::Sample>> samples(int64_t run_id) = 0;  // by rank, iteration
  virtual core::Status appendEvent(const EventRecord& event) = 0;
  virtual core::Result<std::vector<EventRecord>> events(int64_t run_id) = 0;  // by t_ms

  // Fault journal: intent is written before a fault is applied, reverted after it is undone.
  virtual core::Result<int64_t> journalIntent(int64_t run_id, const json& fault,
                                              const json& prior) = 0;
  virtual core::Status journalMark(int64_t entry_id, const std::string& state) = 0;
  virtual core::Result<std::vector<JournalEntry>> unrevertedJournal() = 0;
};

}  // namespace fabric_chaos::store
