// RunRecorder against a real in-memory store: everything posted is stored, in posting order,
// by the time flush() returns, and from several posting threads; the destructor flushes.

#include "scenarios/engine/run_recorder.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

class RunRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::Store::open(":memory:");
    ASSERT_TRUE(opened.isOk());
    store_ = std::move(opened.value());
    auto run = store_->createRun("r", nlohmann::json::object(), "f");
    ASSERT_TRUE(run.isOk());
    run_ = *run;
  }
  std::unique_ptr<store::Store> store_;
  int64_t run_ = 0;
};

TEST_F(RunRecorderTest, FlushReturnsWithEverythingPostedStoredInOrder) {
  auto entry = store_->journalIntent(run_, {{"kind", "link_flap"}}, nlohmann::json::object());
  ASSERT_TRUE(entry.isOk());
  RunRecorder recorder(*store_);
  for (int i = 0; i < 200; ++i) {
    recorder.event({run_, static_cast<double>(i), 0, "e", {{"i", i}}});
  }
  recorder.journalMark(*entry, "applied");
  recorder.journalMark(*entry, "reverted");
  recorder.flush();
  auto events = store_->events(run_);
  ASSERT_TRUE(events.isOk());
  ASSERT_EQ(events->size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ((*events)[static_cast<size_t>(i)].detail["i"], i);
  // Marks applied in order: applied then reverted (the reverse would be refused by the store).
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
}

// The engine posts state changes here (the first fault of a run waited ~100 ms for the commit
// of "injecting" when it met a WAL checkpoint): stored in order, each with its transition.
TEST_F(RunRecorderTest, RunStatesAreStoredInOrderWithTheirTransitions) {
  RunRecorder recorder(*store_);
  for (const char* state : {"preparing", "baseline", "injecting"}) {
    recorder.runState(run_, state);
    recorder.event({run_, 0, 0, "state", {{"state", state}}});
  }
  recorder.flush();
  auto run = store_->getRun(run_);
  ASSERT_TRUE(run.isOk());
  EXPECT_EQ(run->state, "injecting");
  auto transitions = store_->runTransitions(run_);
  ASSERT_TRUE(transitions.isOk());
  std::vector<std::string> states;
  for (const auto& t : *transitions) states.push_back(t["state"].get<std::string>());
  const std::vector<std::string> tail(states.end() - 3, states.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"preparing", "baseline", "injecting"}));
}

TEST_F(RunRecorderTest, PostsFromSeveralThreadsAreAllStoredAndTheDestructorFlushes) {
  {
    RunRecorder recorder(*store_);
    std::vector<std::thread> posters;
    for (int t = 0; t < 4; ++t) {
      posters.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) recorder.event({run_, t * 100.0 + i, 0, "e", {}});
      });
    }
    for (auto& p : posters) p.join();
  }
  EXPECT_EQ(store_->events(run_)->size(), 200u);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
