// ConcurrentCalls: the calls of one instant run at the same time on threads started beforehand,
// their results come back in order, and a throwing call or more calls than workers still end.

#include "scenarios/engine/concurrent_calls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;

TEST(ConcurrentCalls, ResultsComeBackInTheOrderOfTheCalls) {
  ConcurrentCalls pool;
  std::vector<std::function<Status()>> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back([i] {
      return i % 2 == 0 ? Status::ok() : Status(StatusCode::kNotFound, "call " + std::to_string(i));
    });
  }
  const std::vector<Status> results = pool.run(calls);
  ASSERT_EQ(results.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(results[i].isOk(), i % 2 == 0) << i;
    if (i % 2 == 1) {
      EXPECT_EQ(results[i].message(), "call " + std::to_string(i));
    }
  }
  EXPECT_TRUE(pool.run({}).empty());
}

// Every call waits until all of them have started: made one after the other they could not
// finish, and each would report that it waited in vain.
TEST(ConcurrentCalls, TheCallsOfOneBatchRunAtTheSameTime) {
  ConcurrentCalls pool;
  pool.reserve(16);
  EXPECT_EQ(pool.workers(), 15u) << "the caller's thread makes the sixteenth call";
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> started{0};
    std::vector<std::function<Status()>> calls(16, [&started] {
      ++started;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < 16) {
        if (std::chrono::steady_clock::now() > give_up) {
          return Status(StatusCode::kTimeout, "the other calls never started");
        }
        std::this_thread::yield();
      }
      return Status::ok();
    });
    for (const Status& s : pool.run(calls)) EXPECT_TRUE(s.isOk()) << s.message();
  }
  EXPECT_EQ(pool.workers(), 15u) << "the same workers serve every instant";
}

TEST(ConcurrentCalls, AThrowingCallIsAnErrorAndMoreCallsThanWorkersAllRun) {
  ConcurrentCalls pool;
  std::atomic<int> made{0};
  std::vector<std::function<Status()>> calls(ConcurrentCalls::kMaxWorkers * 2, [&made] {
    ++made;
    return Status::ok();
  });
  calls[3] = []() -> Status { throw std::runtime_error("boom"); };
  const std::vector<Status> results = pool.run(calls);
  EXPECT_EQ(made.load(), static_cast<int>(calls.size()) - 1);
  EXPECT_LE(pool.workers(), ConcurrentCalls::kMaxWorkers);
  EXPECT_EQ(results[3].code(), StatusCode::kInternal);
  EXPECT_NE(results[3].message().find("boom"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
