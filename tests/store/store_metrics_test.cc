// What GET /metrics reads from the store: runs by state, each scenario's newest scored run, and
// the write observer's report of every write.

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/store/store_test_support.h"

namespace fabric_chaos::store {
namespace {

using test_support::TempDir;

TEST(StoreMetrics, CountsRunsByStateAndKeepsTheNewestScoreOfEachScenario) {
  TempDir dir;
  auto opened = Store::open(dir.file("fc.db"));
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  Store& store = **opened;
  EXPECT_TRUE(store.runCountsByState()->empty());
  EXPECT_TRUE(store.lastScores()->empty());

  auto run = [&](const std::string& scenario) {
    return store.createRun(scenario, json{{"name", scenario}}, "netns-lab").value();
  };
  const int64_t a1 = run("flap");
  const int64_t b1 = run("loss");
  const int64_t a2 = run("flap");
  const int64_t a3 = run("flap");  // newest of flap, but unscored
  const int64_t b2 = run("loss");  // still running
  ASSERT_TRUE(store.finishRun(a1, "passed", 91.5, json::object(), "").isOk());
  ASSERT_TRUE(store.finishRun(b1, "failed", 12.25, json::object(), "").isOk());
  ASSERT_TRUE(store.finishRun(a2, "failed", 40, json::object(), "").isOk());
  ASSERT_TRUE(store.finishRun(a3, "error", std::nullopt, json::object(), "no lab").isOk());
  ASSERT_TRUE(store.setRunState(b2, "running").isOk());

  auto counts = store.runCountsByState();
  ASSERT_TRUE(counts.isOk()) << counts.status().toString();
  EXPECT_EQ(*counts, (std::map<std::string, int64_t>{
                         {"error", 1}, {"failed", 2}, {"passed", 1}, {"running", 1}}));

  auto scores = store.lastScores();
  ASSERT_TRUE(scores.isOk()) << scores.status().toString();
  ASSERT_EQ(scores->size(), 2u);
  EXPECT_EQ((*scores)[0].scenario, "flap");
  EXPECT_EQ((*scores)[0].run_id, a2) << "the newest run of flap with a score";
  EXPECT_DOUBLE_EQ((*scores)[0].score, 40);
  EXPECT_GT((*scores)[0].finished_ms, 0);
  EXPECT_EQ((*scores)[1].scenario, "loss");
  EXPECT_EQ((*scores)[1].run_id, b1);
  EXPECT_DOUBLE_EQ((*scores)[1].score, 12.25);
}

TEST(StoreMetrics, TheWriteObserverHearsOfEveryWriteByNameAndNotOfReads) {
  TempDir dir;
  std::mutex mu;
  std::vector<std::pair<std::string, double>> writes;
  auto opened = Store::open(dir.file("fc.db"), [&](std::string_view operation, double seconds) {
    std::lock_guard lock(mu);
    writes.emplace_back(std::string(operation), seconds);
  });
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  Store& store = **opened;
  writes.clear();  // opening writes nothing through the observer, but be sure

  const int64_t id = store.createRun("flap", json::object(), "netns-lab").value();
  ASSERT_TRUE(store.appendSamples(id, {{0, 1, 10.0, 2.5, 1024}}).isOk());
  ASSERT_TRUE(store.appendEvent({id, 1.0, 0, "state", json::object()}).isOk());
  ASSERT_TRUE(store.finishRun(id, "passed", 80, json::object(), "").isOk());
  ASSERT_TRUE(store.getRun(id).isOk());
  ASSERT_TRUE(store.samples(id).isOk());
  ASSERT_TRUE(store.runCountsByState().isOk());
  // A refused write is still a write its caller waited for.
  EXPECT_FALSE(store.setRunState(id, "running").isOk());

  std::vector<std::string> names;
  for (const auto& [name, seconds] : writes) {
    names.push_back(name);
    EXPECT_GE(seconds, 0);
    EXPECT_LT(seconds, 60);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"create_run", "append_samples", "append_event",
                                             "finish_run", "set_run_state"}));
}

}  // namespace
}  // namespace fabric_chaos::store
