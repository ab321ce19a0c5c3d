// Retention in the real `fabric-chaos serve` (FC_BINARY): on a database holding three finished
// runs, `--retain-runs 1` prunes the two older ones at start, oldest first, and says so in its
// log; the sqlite3 tool then counts what is left of each run and sees the file give its pages
// back, and the API still serves a pruned run's stall, score and retention note. Bad flag values
// stop serve before it serves. Applies no fault and needs no root.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::store {
namespace {

using fabric_chaos::testing::ChildProcess;
using fabric_chaos::testing::httpRequest;
using fabric_chaos::testing::runShell;
using nlohmann::json;

constexpr int kIterations = 20000;  // per rank, two ranks

class RetentionProcessTest : public fabric_chaos::testing::BinaryProcessTest {
 protected:
  std::vector<std::string> serveArgs(std::vector<std::string> extra) {
    std::vector<std::string> out{binary_,       "serve",         "--listen",
                                 "127.0.0.1:0", "--db",          dir_ + "/fc.db",
                                 "--state-dir", dir_ + "/state", "--no-auth"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  // What the sqlite3 tool reads from the database serve has open (WAL: readers do not block).
  std::string sql(const std::string& query) {
    auto out = runShell("sqlite3 -readonly '" + dir_ + "/fc.db' \"" + query + "\" 2>&1");
    EXPECT_EQ(out.exit_code, 0) << out.out;
    std::string text = out.out;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  int64_t count(const std::string& table, int64_t run) {
    return std::stoll(
        sql("SELECT COUNT(*) FROM " + table + " WHERE run_id = " + std::to_string(run)));
  }
};

// Three finished runs (ids 1, 2, 3, finished in that order), each 2 x kIterations samples with a
// 700 ms stall on rank 1 halfway, and two telemetry series of kIterations points.
void seedRuns(const std::string& path) {
  auto store = Store::open(path);
  ASSERT_TRUE(store.isOk()) << store.status().toString();
  for (int n = 0; n < 3; ++n) {
    auto id = (*store)->createRun("link-flap", json{{"name", "link-flap"}}, "netns-lab");
    ASSERT_TRUE(id.isOk());
    std::vector<core::Sample> samples;
    std::vector<core::TelemetryPoint> points;
    for (int i = 0; i < kIterations; ++i) {
      for (int rank = 0; rank < 2; ++rank) {
        const bool stall = rank == 1 && i == kIterations / 2;
        samples.push_back({rank, i, i * 3.0, stall ? 700.0 : 3.0, 1 << 20});
      }
      points.push_back({i * 2.0, "sw0/p1/lossless", "tx_bytes", int64_t{i} * 1500});
      points.push_back({i * 2.0, "sw0/p1/lossless", "drops", i / 100});
    }
    ASSERT_TRUE((*store)->appendSamples(*id, samples).isOk());
    ASSERT_TRUE((*store)->appendTelemetry(*id, points).isOk());
    ASSERT_TRUE((*store)->finishRun(*id, "passed", 80.0 + n, json{{"score", 80.0 + n}}, "").isOk());
  }
}

TEST_F(RetentionProcessTest, KeepingTheNewestRunPrunesTheOlderOnesAtStart) {
  ASSERT_NO_FATAL_FAILURE(seedRuns(dir_ + "/fc.db"));
  ASSERT_EQ(runShell("command -v sqlite3 >/dev/null").exit_code, 0) << "sqlite3 is needed";
  const int64_t pages_before = std::stoll(sql("PRAGMA page_count"));

  ChildProcess serve(serveArgs({"--retain-runs", "1"}));
  const int port =
      serve.waitForPort(std::regex(R"(serving on http://127\.0\.0\.1:(\d+))"), 30000, 20);
  ASSERT_GT(port, 0) << serve.output();
  ASSERT_TRUE(fabric_chaos::testing::waitFor(
      [&] { return serve.output().find("database pages given back") != std::string::npos; }, 30000))
      << serve.output();
  const std::string log = serve.output();
  const auto line1 = log.find("retention: run 1: samples 40000 -> ");
  const auto line2 = log.find("retention: run 2: samples 40000 -> ");
  ASSERT_NE(line1, std::string::npos) << log;
  ASSERT_NE(line2, std::string::npos) << log;
  EXPECT_LT(line1, line2) << "oldest first";
  EXPECT_EQ(log.find("retention: run 3"), std::string::npos) << log;
  std::cout << log.substr(line1, log.find("given back", line2) - line1 + 10) << "\n";

  // What the file holds now: the envelope (per rank at most two samples in each of 1000
  // buckets) and about 1000 points per series of the pruned runs; the newest run whole.
  for (int64_t run : {1, 2}) {
    EXPECT_LE(count("samples", run), 2 * 2 * 1000) << run;
    EXPECT_GE(count("samples", run), 2 * 1000) << run;
    EXPECT_LE(count("telemetry", run), 2 * 1001) << run;
    EXPECT_GE(count("telemetry", run), 2 * 900) << run;
    EXPECT_EQ(sql("SELECT COUNT(*) FROM samples WHERE run_id = " + std::to_string(run) +
                  " AND rank = 1 AND duration_ms = 700"),
              "1")
        << "the stall of run " << run << " stays";
  }
  EXPECT_EQ(count("samples", 3), 2 * kIterations);
  EXPECT_EQ(count("telemetry", 3), 2 * kIterations);
  EXPECT_EQ(sql("PRAGMA freelist_count"), "0");
  EXPECT_LT(std::stoll(sql("PRAGMA page_count")), pages_before);

  // Through the API: the pruned run's note, score, and the stall in what /samples serves.
  auto run = httpRequest(port, "GET", "/v1/runs/1");
  ASSERT_EQ(run.status, 200) << run.body;
  const json retention = run.json()["attributes"]["retention"];
  EXPECT_EQ(retention["samples_before"], 2 * kIterations) << run.body;
  EXPECT_EQ(retention["samples_kept"], count("samples", 1)) << run.body;
  EXPECT_EQ(run.json()["score"], 80.0) << run.body;
  auto samples = httpRequest(port, "GET", "/v1/runs/1/samples");
  ASSERT_EQ(samples.status, 200);
  const json served = samples.json()["samples"];
  EXPECT_EQ(static_cast<int64_t>(served.size()), count("samples", 1));
  EXPECT_TRUE(std::any_of(served.begin(), served.end(), [](const json& s) {
    return s["rank"] == 1 && s["duration_ms"] == 700.0;
  }));
  EXPECT_EQ(serve.signalAndWait(SIGINT, 20000, true), 0) << serve.output();

  // A restart prunes nothing more: every older run is pruned once.
  ChildProcess again(serveArgs({"--retain-runs", "1"}));
  ASSERT_GT(again.waitForPort(std::regex(R"(serving on http://127\.0\.0\.1:(\d+))"), 30000, 20), 0)
      << again.output();
  EXPECT_EQ(again.signalAndWait(SIGINT, 20000, true), 0);
  EXPECT_EQ(again.output().find("retention: run"), std::string::npos) << again.output();
  EXPECT_EQ(count("samples", 3), 2 * kIterations);
}

TEST_F(RetentionProcessTest, ABadRetentionValueStopsServeBeforeItServes) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--retain-samples", "3w"}, "--retain-samples: retention age \"3w\""},
      {{"--retain-samples", "0d"}, "--retain-samples: retention age \"0d\""},
      {{"--retain-runs", "-1"}, "--retain-runs: a whole number of runs >= 0, got \"-1\""},
  };
  for (const auto& [flags, message] : cases) {
    ChildProcess serve(serveArgs(flags));
    EXPECT_EQ(serve.signalAndWait(0, 20000, true), 2) << flags[1];
    EXPECT_NE(serve.output().find(message), std::string::npos) << serve.output();
    EXPECT_EQ(serve.output().find("serving on"), std::string::npos) << serve.output();
  }
}

}  // namespace
}  // namespace fabric_chaos::store
