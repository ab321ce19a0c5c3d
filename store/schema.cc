#include "store/schema.h"

namespace fabric_chaos::store {

const std::vector<std::string_view>& schemaMigrations() {
  static const std::vector<std::string_view> migrations = {
      // 1: initial schema.
      R"sql(
CREATE TABLE scenarios (
  name TEXT PRIMARY KEY NOT NULL,
  document TEXT NOT NULL,
  builtin INTEGER NOT NULL DEFAULT 0,
  updated_ms INTEGER NOT NULL
);

-- AUTOINCREMENT: a run id appears in URLs and CI logs, so it is never reused.
-- scenario_name is deliberately not a foreign key: a run keeps its own snapshot of the scenario
-- and outlives the scenario's deletion.
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scenario_name TEXT NOT NULL,
  scenario TEXT NOT NULL,
  fabric TEXT NOT NULL,
  state TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  score REAL,
  result TEXT NOT NULL DEFAULT '{}',
  attributes TEXT NOT NULL DEFAULT '{}',
  error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_scenario ON runs(scenario_name, id);
CREATE INDEX runs_by_state ON runs(state, id);

CREATE TABLE run_transitions (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  state TEXT NOT NULL,
  wall_ms INTEGER NOT NULL
);
-- The rowid is implicitly the last index column, so "WHERE run_id = ? ORDER BY rowid" is a scan.
CREATE INDEX run_transitions_by_run ON run_transitions(run_id);

CREATE TABLE events (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ms REAL NOT NULL,
  wall_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_run ON events(run_id, t_ms);

-- Not unique on (run_id, rank, iteration): a rank that restarts its numbering after a reconnect
-- must not lose or overwrite measurements; analysis decides what duplicates mean.
CREATE TABLE samples (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  start_ms REAL NOT NULL,
  duration_ms REAL NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE INDEX samples_by_run ON samples(run_id, rank, iteration);

-- run_id is NULL for a fault not tied to a run. No ON DELETE CASCADE: a journal entry that has
-- not been reverted must survive anything done to its run.
CREATE TABLE journal (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER REFERENCES runs(id),
  fault TEXT NOT NULL,
  prior TEXT NOT NULL,
  state TEXT NOT NULL,
  intent_ms INTEGER NOT NULL,
  reverted_ms INTEGER NOT NULL DEFAULT 0
);
-- Start-up asks for the unreverted entries, a handful among a history that only grows.
CREATE INDEX journal_unreverted ON journal(id) WHERE state <> 'reverted';
)sql",
      // 2: suites, suite runs, schedules, API tokens and the audit log (issue 4).
      R"sql(
CREATE TABLE suites (
  name TEXT PRIMARY KEY NOT NULL,
  document TEXT NOT NULL,
  builtin INTEGER NOT NULL DEFAULT 0,
  updated_ms INTEGER NOT NULL
);

-- Like runs: a suite run keeps a snapshot of its suite and outlives the suite's deletion.
CREATE TABLE suite_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  suite_name TEXT NOT NULL,
  suite TEXT NOT NULL,
  fabric TEXT NOT NULL,
  state TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX suite_runs_by_state ON suite_runs(state, id);

-- A join table rather than a JSON array: appending is one INSERT, and the index on run_id answers
-- "which suite run started this run" for a run summary.
CREATE TABLE suite_run_runs (
  suite_run_id INTEGER NOT NULL REFERENCES suite_runs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  PRIMARY KEY (suite_run_id, position)
);
CREATE INDEX suite_run_runs_by_run ON suite_run_runs(run_id);

CREATE TABLE schedules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  cron TEXT NOT NULL,
  scenario TEXT NOT NULL DEFAULT '',
  suite TEXT NOT NULL DEFAULT '',
  fabric TEXT NOT NULL DEFAULT '',
  enabled INTEGER NOT NULL DEFAULT 1,
  created_ms INTEGER NOT NULL,
  last_fired_ms INTEGER NOT NULL DEFAULT 0,
  last_result TEXT NOT NULL DEFAULT '',
  CHECK ((scenario = '') <> (suite = ''))
);

-- Only the SHA-256 of a secret is stored. Revoked tokens stay, so that the audit log's actor
-- names keep meaning something.
CREATE TABLE tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  secret_hash TEXT NOT NULL UNIQUE,
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER NOT NULL DEFAULT 0,
  last_used_ms INTEGER NOT NULL DEFAULT 0
);

-- Append-only; paged newest first by id.
CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  wall_ms INTEGER NOT NULL,
  actor TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT '',
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  detail TEXT NOT NULL DEFAULT '{}'
);
)sql",
      // 3: switch telemetry (issue 10): one row per counter reading of a run's switch queues or
      // RDMA ports, in the run's clock.
      R"sql(
CREATE TABLE telemetry (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ms REAL NOT NULL,
  source TEXT NOT NULL,
  metric TEXT NOT NULL,
  value INTEGER NOT NULL
);
CREATE INDEX telemetry_by_run ON telemetry(run_id, source, metric, t_ms);
)sql",
      // 4: cursors (issue 15): a run's samples and events in the order they were stored, from
      // any point. An index on run_id alone ends in the rowid, so "run_id = ? AND rowid > ?
      // ORDER BY rowid" is one seek and a range scan, whatever the run's size.
      R"sql(
CREATE INDEX samples_by_run_seq ON samples(run_id);
CREATE INDEX events_by_run_seq ON events(run_id);
)sql",
      // 5: GET /v1/runs?fabric= (issue 15) reads a fabric's newest runs through an index
      // instead of every run.
      R"sql(
CREATE INDEX runs_by_fabric ON runs(fabric, id);
)sql",
  };
  return migrations;
}

}  // namespace fabric_chaos::store
