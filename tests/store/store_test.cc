#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using core::StatusCode;

using test_support::openOrDie;
using test_support::RawDb;
using test_support::TempDir;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("fc.db");
    store_ = openOrDie(path_);
    ASSERT_NE(store_, nullptr);
  }

  int64_t newRun(const std::string& scenario = "link-flap") {
    auto id = store_->createRun(scenario, json{{"name", scenario}}, "netns");
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, MigratesOnceAndKeepsDataAcrossReopen) {
  EXPECT_EQ(store_->schemaVersion(), 5);
  ASSERT_TRUE(store_->putScenario("flap", json{{"steps", 3}}, false).isOk());
  int64_t run = newRun("flap");
  ASSERT_TRUE(store_->appendSamples(run, {{0, 1, 10.0, 2.5, 1024}}).isOk());
  store_.reset();

  store_ = openOrDie(path_);
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(store_->schemaVersion(), 5);
  auto scenario = store_->getScenario("flap");
  ASSERT_TRUE(scenario.isOk()) << scenario.status().toString();
  EXPECT_EQ(scenario->document, (json{{"steps", 3}}));
  auto got = store_->getRun(run);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(got->scenario_name, "flap");
  auto samples = store_->samples(run);
  ASSERT_TRUE(samples.isOk());
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].bytes, 1024);
}

TEST_F(StoreTest, FileIsInWalModeWithTheSchemaInPlace) {
  RawDb raw(path_);
  EXPECT_EQ(raw.scalar("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.scalar("PRAGMA user_version"), "5");
  test_support::expectTables(
      raw, {"scenarios", "runs", "run_transitions", "events", "samples", "journal"});
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                       "AND name = 'samples_by_run'"),
            "1");
}

TEST_F(StoreTest, RefusesASchemaNewerThanTheBinary) {
  store_.reset();
  {
    RawDb raw(path_);
    raw.scalar("PRAGMA user_version = 99");
  }
  auto store = Store::open(path_);
  ASSERT_FALSE(store.isOk());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("99"), std::string::npos) << store.status().message();
}

TEST(StoreMemoryTest, OpensInMemory) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.isOk()) << store.status().toString();
  EXPECT_EQ((*store)->schemaVersion(), 5);
}

TEST_F(StoreTest, ScenariosCrudAndBuiltinProtection) {
  ASSERT_TRUE(store_->putScenario("b-user", json{{"v", 1}}, false).isOk());
  ASSERT_TRUE(store_->putScenario("a-builtin", json{{"v", 1}}, true).isOk());
  ASSERT_TRUE(store_->putScenario("b-user", json{{"v", 2}}, false).isOk());  // put replaces

  auto list = store_->listScenarios();
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a-builtin");
  EXPECT_TRUE((*list)[0].builtin);
  EXPECT_EQ((*list)[1].name, "b-user");
  EXPECT_FALSE((*list)[1].builtin);
  EXPECT_EQ((*list)[1].document, (json{{"v", 2}}));
  EXPECT_GT((*list)[1].updated_ms, 0);

  auto missing = store_->getScenario("nope");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  EXPECT_EQ(store_->deleteScenario("nope").code(), StatusCode::kNotFound);
  core::Status builtin_delete = store_->deleteScenario("a-builtin");
  EXPECT_EQ(builtin_delete.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(builtin_delete.message().find("builtin"), std::string::npos);
  // A user edit of a builtin would be undone by the next start-up's re-seed.
  EXPECT_EQ(store_->putScenario("a-builtin", json{{"v", 9}}, false).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->putScenario("a-builtin", json{{"v", 3}}, true).isOk());  // re-seed
  EXPECT_EQ(store_->getScenario("a-builtin")->document, (json{{"v", 3}}));

  ASSERT_TRUE(store_->deleteScenario("b-user").isOk());
  EXPECT_EQ(store_->getScenario("b-user").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->listScenarios()->size(), 1u);

  EXPECT_EQ(store_->putScenario("", json::object(), false).code(), StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, StoresJsonThatIsNotValidUtf8) {
  ASSERT_TRUE(store_->putScenario("odd", json{{"ifname", "eth\xff"}}, false).isOk());
  auto got = store_->getScenario("odd");
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_TRUE(got->document.contains("ifname"));
}

TEST_F(StoreTest, RunLifecycleRecordsTransitionsInOrder) {
  int64_t id = newRun("link-flap");
  auto queued = store_->getRun(id);
  ASSERT_TRUE(queued.isOk());
  EXPECT_EQ(queued->state, "queued");
  EXPECT_EQ(queued->scenario, (json{{"name", "link-flap"}}));
  EXPECT_EQ(queued->fabric, "netns");
  EXPECT_GT(queued->created_ms, 0);
  EXPECT_EQ(queued->started_ms, 0);
  EXPECT_EQ(queued->finished_ms, 0);
  EXPECT_FALSE(queued->score.has_value());

  ASSERT_TRUE(store_->setRunState(id, "running").isOk());
  int64_t started = store_->getRun(id)->started_ms;
  EXPECT_GE(started, queued->created_ms);
  ASSERT_TRUE(store_->setRunState(id, "recovering").isOk());
  EXPECT_EQ(store_->getRun(id)->started_ms, started);  // only the first non-queued state

  ASSERT_TRUE(store_->setRunAttribute(id, "loss_backend", "nftables").isOk());
  ASSERT_TRUE(store_->setRunAttribute(id, "ranks", 4).isOk());
  json result = {{"score", 87.5}, {"gates", {{"p99", "pass"}}}};
  ASSERT_TRUE(store_->finishRun(id, "passed", 87.5, result, "").isOk());

  auto run = store_->getRun(id);
  ASSERT_TRUE(run.isOk());
  EXPECT_EQ(run->state, "passed");
  EXPECT_GE(run->finished_ms, started);
  ASSERT_TRUE(run->score.has_value());
  EXPECT_DOUBLE_EQ(*run->score, 87.5);
  EXPECT_EQ(run->result, result);
  EXPECT_EQ(run->attributes, (json{{"loss_backend", "nftables"}, {"ranks", 4}}));
  EXPECT_EQ(run->error, "");

  auto transitions = store_->runTransitions(id);
  ASSERT_TRUE(transitions.isOk()) << transitions.status().toString();
  ASSERT_EQ(transitions->size(), 4u);
  std::vector<std::string> states;
  int64_t last = 0;
  for (const json& t : *transitions) {
    states.push_back(t.at("state").get<std::string>());
    EXPECT_GE(t.at("wall_ms").get<int64_t>(), last);
    last = t.at("wall_ms").get<int64_t>();
  }
  EXPECT_EQ(states, (std::vector<std::string>{"queued", "running", "recovering", "passed"}));

  // A finished run stays finished.
  EXPECT_EQ(store_->finishRun(id, "failed", std::nullopt, json::object(), "x").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->setRunState(id, "running").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->runTransitions(id)->size(), 4u);
}

TEST_F(StoreTest, RunStateErrors) {
  int64_t id = newRun();
  EXPECT_EQ(store_->setRunState(id, "passed").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->setRunState(id, "").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->finishRun(id, "running", std::nullopt, json::object(), "").code(),
            StatusCode::kInvalidArgument);

  auto missing = store_->getRun(42);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "run 42 not found");
  EXPECT_EQ(store_->setRunState(42, "running").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->setRunAttribute(42, "k", 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->finishRun(42, "error", std::nullopt, json::object(), "boom").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store_->runTransitions(42).status().code(), StatusCode::kNotFound);

  // Aborted before it started: no start time, no score.
  ASSERT_TRUE(store_->finishRun(id, "aborted", std::nullopt, json::object(), "cancelled").isOk());
  auto run = store_->getRun(id);
  EXPECT_EQ(run->started_ms, 0);
  EXPECT_GT(run->finished_ms, 0);
  EXPECT_FALSE(run->score.has_value());
  EXPECT_EQ(run->error, "cancelled");
}

TEST_F(StoreTest, ListRunsFiltersNewestFirst) {
  int64_t a1 = newRun("a");
  int64_t b1 = newRun("b");
  int64_t a2 = newRun("a");
  int64_t a3 = newRun("a");
  ASSERT_TRUE(store_->setRunState(a2, "running").isOk());
  ASSERT_TRUE(store_->setRunState(b1, "running").isOk());

  auto filter = [](std::string scenario, std::string state, int limit = 100) {
    RunFilter f;
    f.scenario = std::move(scenario);
    f.state = std::move(state);
    f.limit = limit;
    return f;
  };
  auto ids = [](const std::vector<RunRecord>& runs) {
    std::vector<int64_t> out;
    for (const RunRecord& r : runs) out.push_back(r.id);
    return out;
  };
  auto all = store_->listRuns({});
  ASSERT_TRUE(all.isOk()) << all.status().toString();
  EXPECT_EQ(ids(*all), (std::vector<int64_t>{a3, a2, b1, a1}));
  EXPECT_EQ(ids(*store_->listRuns(filter("a", ""))), (std::vector<int64_t>{a3, a2, a1}));
  EXPECT_EQ(ids(*store_->listRuns(filter("", "running"))), (std::vector<int64_t>{a2, b1}));
  EXPECT_EQ(ids(*store_->listRuns(filter("a", "running"))), (std::vector<int64_t>{a2}));
  EXPECT_EQ(ids(*store_->listRuns(filter("a", "", 2))), (std::vector<int64_t>{a3, a2}));
  EXPECT_TRUE(store_->listRuns(filter("zzz", ""))->empty());
  EXPECT_EQ(store_->listRuns(filter("", "", 0)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, TelemetryRoundTripsOrderedBySourceMetricAndTime) {
  int64_t run = newRun();
  std::vector<core::TelemetryPoint> batch;
  for (int tick = 9; tick >= 0; --tick) {
    for (const char* source : {"sw0/p3/best_effort", "sw0/p1/lossless"}) {
      batch.push_back({tick * 100.0, source, "tx_bytes", int64_t{tick} * 12'500'000});
      batch.push_back({tick * 100.0, source, "backlog_bytes", tick % 3});
    }
  }
  ASSERT_TRUE(store_->appendTelemetry(run, batch).isOk());
  ASSERT_TRUE(store_->appendTelemetry(run, {}).isOk());
  auto got = store_->telemetry(run);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_EQ(got->size(), batch.size());
  EXPECT_EQ((*got)[0].source, "sw0/p1/lossless");
  EXPECT_EQ((*got)[0].metric, "backlog_bytes");
  EXPECT_DOUBLE_EQ((*got)[0].t_ms, 0);
  EXPECT_DOUBLE_EQ((*got)[9].t_ms, 900);
  EXPECT_EQ((*got)[10].metric, "tx_bytes");
  EXPECT_EQ(got->back().source, "sw0/p3/best_effort");
  EXPECT_EQ(got->back().value, 112'500'000);
  EXPECT_EQ(store_->appendTelemetry(run + 100, batch).code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->telemetry(run + 100)->empty());
}

TEST_F(StoreTest, SamplesRoundTripOrderedByRankAndIteration) {
  int64_t run = newRun();
  constexpr int kRanks = 8;
  constexpr int kIterations = 1250;  // 10,000 samples
  std::vector<core::Sample> batch;
  for (int rank = 0; rank < kRanks; ++rank) {
    for (int64_t it = 0; it < kIterations; ++it) {
      batch.push_back({rank, it, it * 1.5 + rank, 0.25 * (it % 7) + 1, 1 << 20});
    }
  }
  std::shuffle(batch.begin(), batch.end(), std::mt19937(7));
  ASSERT_TRUE(store_->appendSamples(run, batch).isOk());

  auto got = store_->samples(run);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_EQ(got->size(), static_cast<size_t>(kRanks * kIterations));
  size_t i = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    for (int64_t it = 0; it < kIterations; ++it, ++i) {
      const core::Sample& s = (*got)[i];
      ASSERT_EQ(s.rank, rank);
      ASSERT_EQ(s.iteration, it);
      ASSERT_DOUBLE_EQ(s.start_ms, it * 1.5 + rank);
      ASSERT_DOUBLE_EQ(s.duration_ms, 0.25 * (it % 7) + 1);
      ASSERT_EQ(s.bytes, 1 << 20);
    }
  }

  EXPECT_TRUE(store_->samples(newRun())->empty());
  EXPECT_TRUE(store_->appendSamples(run, {}).isOk());
  core::Status orphan = store_->appendSamples(999, {{0, 0, 0, 1, 1}});
  EXPECT_EQ(orphan.code(), StatusCode::kNotFound) << orphan.toString();
  EXPECT_EQ(orphan.message(), "run 999 not found");
}

TEST_F(StoreTest, EventsOrderedByRunTime) {
  int64_t run = newRun();
  int64_t other = newRun();
  ASSERT_TRUE(store_->appendEvent({run, 300.5, 1003, "fault_reverted", {{"id", 1}}}).isOk());
  ASSERT_TRUE(store_->appendEvent({run, 100.25, 1001, "rank_started", {{"rank", 0}}}).isOk());
  ASSERT_TRUE(store_->appendEvent({other, 150, 1002, "rank_started", json::object()}).isOk());
  ASSERT_TRUE(store_->appendEvent({run, 200, 1002, "fault_applied", {{"id", 1}}}).isOk());

  auto events = store_->events(run);
  ASSERT_TRUE(events.isOk()) << events.status().toString();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].kind, "rank_started");
  EXPECT_DOUBLE_EQ((*events)[0].t_ms, 100.25);
  EXPECT_EQ((*events)[0].wall_ms, 1001);
  EXPECT_EQ((*events)[0].detail, (json{{"rank", 0}}));
  EXPECT_EQ((*events)[1].kind, "fault_applied");
  EXPECT_EQ((*events)[2].kind, "fault_reverted");
  EXPECT_EQ((*events)[2].run_id, run);

  EXPECT_EQ(store_->appendEvent({999, 1, 1, "x", json::object()}).code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, JournalIntentAppliedReverted) {
  int64_t run = newRun();
  json fault = {{"kind", "link_down"}, {"target", "h1:eth0"}};
  json prior = {{"up", true}};
  auto first = store_->journalIntent(run, fault, prior);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  auto second = store_->journalIntent(0, {{"kind", "loss"}}, json::object());
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  auto third = store_->journalIntent(run, {{"kind", "rate"}}, json::object());
  ASSERT_TRUE(third.isOk());

  auto pending = store_->unrevertedJournal();
  ASSERT_TRUE(pending.isOk()) << pending.status().toString();
  ASSERT_EQ(pending->size(), 3u);
  // Newest first: reverting in this order unwinds stacked faults in reverse order of application.
  EXPECT_EQ((*pending)[0].id, *third);
  EXPECT_EQ((*pending)[1].id, *second);
  EXPECT_EQ((*pending)[1].run_id, 0);
  const auto& oldest = (*pending)[2];
  EXPECT_EQ(oldest.id, *first);
  EXPECT_EQ(oldest.run_id, run);
  EXPECT_EQ(oldest.fault, fault);
  EXPECT_EQ(oldest.prior, prior);
  EXPECT_EQ(oldest.state, "intent");
  EXPECT_GT(oldest.intent_ms, 0);
  EXPECT_EQ(oldest.reverted_ms, 0);

  ASSERT_TRUE(store_->journalMark(*first, "applied").isOk());
  EXPECT_EQ((*store_->unrevertedJournal())[2].state, "applied");
  ASSERT_TRUE(store_->journalMark(*first, "reverted").isOk());
  ASSERT_TRUE(store_->journalMark(*first, "reverted").isOk());  // a retried revert
  ASSERT_TRUE(store_->journalMark(*third, "failed").isOk());    // failed is still unreverted

  pending = store_->unrevertedJournal();
  ASSERT_TRUE(pending.isOk());
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_EQ((*pending)[0].id, *third);
  EXPECT_EQ((*pending)[0].state, "failed");
  EXPECT_EQ((*pending)[1].id, *second);

  RawDb raw(path_);
  EXPECT_EQ(raw.scalar("SELECT state FROM journal WHERE id = " + std::to_string(*first)),
            "reverted");
  EXPECT_GT(std::stoll(
                raw.scalar("SELECT reverted_ms FROM journal WHERE id = " + std::to_string(*first))),
            0);

  EXPECT_EQ(store_->journalMark(*first, "applied").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->journalMark(12345, "applied").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->journalMark(*second, "intent").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->journalIntent(999, fault, prior).status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, UnrevertedJournalSurvivesReopen) {
  auto id = store_->journalIntent(0, {{"kind", "link_down"}}, json::object());
  ASSERT_TRUE(id.isOk());
  store_.reset();
  store_ = openOrDie(path_);
  ASSERT_NE(store_, nullptr);
  auto pending = store_->unrevertedJournal();
  ASSERT_TRUE(pending.isOk());
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].id, *id);
}

TEST_F(StoreTest, InterruptUnfinishedRuns) {
  int64_t queued = newRun();
  int64_t running = newRun();
  int64_t passed = newRun();
  ASSERT_TRUE(store_->setRunState(running, "running").isOk());
  ASSERT_TRUE(store_->finishRun(passed, "passed", 100.0, json::object(), "").isOk());

  auto interrupted = store_->interruptUnfinishedRuns();
  ASSERT_TRUE(interrupted.isOk()) << interrupted.status().toString();
  EXPECT_EQ(*interrupted, (std::vector<int64_t>{queued, running}));

  auto r = store_->getRun(running);
  EXPECT_EQ(r->state, "interrupted");
  EXPECT_EQ(r->error, "serve stopped while the run was running");
  EXPECT_GT(r->finished_ms, 0);
  EXPECT_EQ(store_->getRun(queued)->error, "serve stopped while the run was queued");
  EXPECT_EQ(store_->getRun(passed)->state, "passed");
  EXPECT_EQ(store_->getRun(passed)->error, "");
  EXPECT_EQ(store_->runTransitions(running)->back().at("state"), "interrupted");

  EXPECT_TRUE(store_->interruptUnfinishedRuns()->empty());
}

TEST(StoreOpenTest, UnwritablePathNamesThePath) {
  TempDir dir;
  // A regular file where a directory should be: fails even for root.
  std::string blocker = dir.file("not-a-dir");
  std::ofstream(blocker) << "x";
  for (const std::string& path : {blocker + "/fc.db", dir.file("missing/sub/fc.db")}) {
    auto store = Store::open(path);
    ASSERT_FALSE(store.isOk()) << path;
    EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status().toString();
    EXPECT_NE(store.status().origin(), 0);
  }
}

// Runs `open` in a forked child that has dropped root (if it had it), since permission bits do not
// stop root; the child exits 0 when the open fails with kPermissionDenied naming `path`.
void expectPermissionDenied(const std::string& path) {
  EXPECT_EXIT(
      {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
          fprintf(stderr, "cannot drop root\n");
          _exit(2);
        }
        auto store = Store::open(path);
        fprintf(stderr, "%s\n", store.status().toString().c_str());
        bool ok = !store.isOk() && store.status().code() == StatusCode::kPermissionDenied &&
                  store.status().message().find(path) != std::string::npos;
        _exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "PERMISSION_DENIED");
}

TEST(StoreOpenTest, NotWritableIsPermissionDenied) {
  TempDir dir;
  namespace fs = std::filesystem;
  const fs::perms read_only = fs::perms::owner_read | fs::perms::owner_exec |
                              fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec;
  // The unprivileged child must be able to reach into the test directory.
  fs::permissions(fs::path(dir.file("")).parent_path(), read_only | fs::perms::owner_write);

  // A directory the store cannot create its file in.
  std::string locked = dir.file("locked");
  fs::create_directory(locked);
  fs::permissions(locked, read_only);
  expectPermissionDenied(locked + "/fc.db");

  // An existing database file that is not writable: SQLite would open it read-only without a word.
  std::string existing = dir.file("existing.db");
  ASSERT_NE(openOrDie(existing), nullptr);
  fs::permissions(existing, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  expectPermissionDenied(existing);
}

TEST_F(StoreTest, ConcurrentAppendSamplesLosesNothing) {
  int64_t run = newRun();
  constexpr int kThreads = 4;
  constexpr int kBatches = 50;
  constexpr int kPerBatch = 100;
  std::vector<std::thread> threads;
  std::vector<core::Status> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<core::Sample> batch;
        for (int i = 0; i < kPerBatch; ++i) {
          int64_t it = int64_t{b} * kPerBatch + i;
          batch.push_back({t, it, static_cast<double>(it), 1.0, 64});
        }
        core::Status status = store_->appendSamples(run, batch);
        if (!status.isOk()) {
          failures[t] = status;
          return;
        }
        // Interleave reads and other writes with the batches.
        if (b % 10 == 0) {
          (void)store_->appendEvent({run, static_cast<double>(b), 0, "tick", json::object()});
          (void)store_->getRun(run);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const core::Status& s : failures) EXPECT_TRUE(s.isOk()) << s.toString();

  auto got = store_->samples(run);
  ASSERT_TRUE(got.isOk());
  ASSERT_EQ(got->size(), static_cast<size_t>(kThreads * kBatches * kPerBatch));
  size_t i = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int64_t it = 0; it < kBatches * kPerBatch; ++it, ++i) {
      ASSERT_EQ((*got)[i].rank, t);
      ASSERT_EQ((*got)[i].iteration, it);
    }
  }
  EXPECT_EQ(store_->events(run)->size(), static_cast<size_t>(kThreads * kBatches / 10));
}

}  // namespace
}  // namespace fabric_chaos::store
