// Whole ranks as threads on 127.0.0.1: the report stream of a healthy ring, and what the ranks
// report when one of them resets its connections or hangs.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <thread>
#include <vector>

#include "tests/workload/test_support.h"
#include "workload/rank.h"
#include "workload/report.h"

namespace fabric_chaos::workload {
namespace {

using namespace std::chrono_literals;
using testing::decodeAll;
using testing::eventsOf;
using testing::freePorts;
using testing::LineSink;
using testing::RankRun;
using testing::RankThreads;
using testing::samplesAfter;
using testing::samplesOf;
using testing::waitFor;
using Type = ReportLine::Type;

constexpr auto kWaitLimit = 30s;  // generous: a missed condition is a failure, not a skip

class Ring : public RankThreads {
 public:
  // A loopback ring; `tweak` adjusts every rank's options before start().
  explicit Ring(int world, int64_t bytes = 256 * 1024) {
    auto ports = freePorts(world);
    EXPECT_EQ(static_cast<int>(ports.size()), world);
    for (int r = 0; r < world; ++r) {
      auto run = std::make_unique<RankRun>();
      run->options.rank = r;
      run->options.world = world;
      run->options.listen_port = ports.empty() ? 0 : ports[r];
      run->options.next_port = ports.empty() ? 0 : ports[(r + 1) % world];
      run->options.message_bytes = bytes;
      run->options.compute_ms = 1;
      run->options.peer_timeout_ms = 5000;
      run->options.reconnect_budget_ms = 10000;
      run->options.max_duration_ms = 60000;
      run->options.flush_interval_ms = 20;
      run->out = std::make_unique<std::ostream>(&run->sink);
      runs_.push_back(std::move(run));
    }
  }
};

size_t sampleCount(const RankRun& run) { return samplesOf(run.report()).size(); }

// Samples whose iteration is above `iteration`.
size_t samplesAfter(const RankRun& run, int64_t iteration) {
  return samplesAfter(run.report(), iteration);
}

// The invariants of every finished report stream.
void checkStream(const RankRun& run, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  auto lines = run.report();
  ASSERT_GE(lines.size(), 2u) << run.sink.text();
  EXPECT_EQ(lines.front().type, Type::kReady) << run.sink.text();
  EXPECT_EQ(lines.back().type, Type::kDone) << run.sink.text();
  EXPECT_TRUE(eventsOf(lines, "undecodable").empty()) << run.sink.text();
  for (const auto& l : lines) EXPECT_EQ(l.rank, rank);
  auto samples = samplesOf(lines);
  ASSERT_FALSE(samples.empty());
  // Iterations are 0, 1, 2, ...: an interrupted iteration is restarted under the same number.
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].iteration, static_cast<int64_t>(i));
    EXPECT_GT(samples[i].duration_ns, 0);
    EXPECT_GE(samples[i].start_ns, lines.front().t_ns);
    EXPECT_EQ(samples[i].bytes, run.options.message_bytes);
    if (i > 0) {
      EXPECT_GE(samples[i].start_ns, samples[i - 1].start_ns + samples[i - 1].duration_ns);
    }
  }
  EXPECT_EQ(lines.back().iterations, static_cast<int64_t>(samples.size()));
  EXPECT_TRUE(eventsOf(lines, kEventRankError).empty()) << run.sink.text();
  EXPECT_EQ(run.exit_code.load(), 0);
}

void printDurations(const char* label, const RankRun& run) {
  std::vector<double> ms;
  for (const auto& s : samplesOf(run.report())) ms.push_back(s.duration_ns / 1e6);
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  std::printf(
      "%s rank %d: %zu iterations of %lld bytes, min %.3f ms, median %.3f ms, p99 %.3f ms, "
      "max %.3f ms\n",
      label, run.options.rank, ms.size(), static_cast<long long>(run.options.message_bytes),
      ms.front(), ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], ms.back());
}

TEST(TcpRankTest, HealthyRingReportsSamplesLive) {
  Ring ring(3);
  ring.start();
  // Samples arrive while the ranks run (flush every 20 ms), not only at exit.
  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          if (sampleCount(ring.rank(r)) < 200) return false;
        }
        return true;
      },
      kWaitLimit));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ring.rank(r).exit_code.load(), -1) << "still running";
  ring.stopAll();
  for (int r = 0; r < 3; ++r) {
    checkStream(ring.rank(r), r);
    auto lines = ring.rank(r).report();
    EXPECT_TRUE(eventsOf(lines, kEventPeerLost).empty()) << ring.rank(r).sink.text();
    printDurations("healthy", ring.rank(r));
  }
}

TEST(TcpRankTest, AbortedConnectionsAreReformedAndSamplesContinue) {
  Ring ring(3, 64 * 1024);
  ring.start();
  ASSERT_TRUE(waitFor([&] { return sampleCount(ring.rank(1)) >= 10; }, kWaitLimit));
  ring.rank(1).abort_flag = true;  // rank 1 resets both of its ring connections

  // Every rank notices, re-forms and completes iterations past the one that was interrupted.
  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          auto lines = ring.rank(r).report();
          auto lost = eventsOf(lines, kEventPeerLost);
          if (lost.empty() || eventsOf(lines, kEventReconnected).empty()) return false;
          if (samplesAfter(ring.rank(r), lost.back().detail["iteration"].get<int64_t>()) < 10) {
            return false;
          }
        }
        return true;
      },
      kWaitLimit))
      << ring.rank(0).sink.text() << ring.rank(1).sink.text() << ring.rank(2).sink.text();
  ring.stopAll();

  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    checkStream(ring.rank(r), r);
    auto lines = ring.rank(r).report();
    auto lost = eventsOf(lines, kEventPeerLost);
    auto back = eventsOf(lines, kEventReconnected);
    auto stalls = eventsOf(lines, kEventStall);
    ASSERT_FALSE(lost.empty());
    ASSERT_EQ(back.size(), lost.size());
    ASSERT_EQ(stalls.size(), lost.size());
    const std::string reason = lost.front().detail["reason"];
    if (r == 1) {
      EXPECT_EQ(reason, "aborted");
    } else {
      EXPECT_TRUE(reason == "connection_reset" || reason == "broken_pipe" || reason == "eof")
          << reason;
    }
    EXPECT_GE(back.front().detail["epoch"].get<int64_t>(), 2);
    EXPECT_GE(back.front().detail["after_ms"].get<double>(), 0.0);
    // The stall covers the interrupted attempt; the iteration is then reported once, restarted.
    const int64_t stalled = stalls.front().detail["iteration"];
    EXPECT_EQ(stalled, lost.front().detail["iteration"].get<int64_t>());
    const int64_t stall_start = stalls.front().detail["start_ns"];
    EXPECT_GT(stalls.front().detail["duration_ms"].get<double>(), 0.0);
    auto samples = samplesOf(lines);
    ASSERT_GT(static_cast<int64_t>(samples.size()), stalled);
    EXPECT_GT(samples[stalled].start_ns, stall_start);
    EXPECT_GE(samples[stalled].start_ns, back.front().t_ns);
    // Events are in time order with the samples around them.
    EXPECT_LE(lost.front().t_ns, back.front().t_ns);
  }
}

TEST(TcpRankTest, HungRankIsDroppedAfterThePeerTimeoutAndRejoins) {
  Ring ring(3, 64 * 1024);
  for (int r = 0; r < 3; ++r) {
    ring.rank(r).options.peer_timeout_ms = 300;
    ring.rank(r).options.reconnect_budget_ms = 20000;
  }
  // Rank 2 hangs before iteration 10 until the test releases it.
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  ring.rank(2).hooks.before_iteration = [&](int64_t iteration) {
    if (iteration != 10) return;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return released; });
  };
  auto release = [&] {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  };
  struct Releaser {
    std::function<void()> f;
    ~Releaser() { f(); }
  } releaser{release};
  ring.start();

  // Its neighbours give up on it: somebody times out, and both 0 and 1 tear down.
  ASSERT_TRUE(waitFor(
      [&] {
        return !eventsOf(ring.rank(0).report(), kEventPeerLost).empty() &&
               !eventsOf(ring.rank(1).report(), kEventPeerLost).empty();
      },
      kWaitLimit))
      << ring.rank(0).sink.text() << ring.rank(1).sink.text();
  EXPECT_TRUE(eventsOf(ring.rank(2).report(), kEventPeerLost).empty());
  release();

  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          if (eventsOf(ring.rank(r).report(), kEventReconnected).empty()) return false;
          if (samplesAfter(ring.rank(r), 10) < 5) return false;
        }
        return true;
      },
      kWaitLimit))
      << ring.rank(0).sink.text() << ring.rank(1).sink.text() << ring.rank(2).sink.text();
  ring.stopAll();

  std::set<std::string> neighbour_reasons;
  for (int r = 0; r < 3; ++r) {
    checkStream(ring.rank(r), r);
    for (const auto& e : eventsOf(ring.rank(r).report(), kEventPeerLost)) {
      if (r != 2) neighbour_reasons.insert(e.detail["reason"].get<std::string>());
      // Nobody reports the hung iteration as a sample of its own stall: iteration 10 is
      // restarted after the ring is back.
      EXPECT_EQ(e.detail["iteration"].get<int64_t>(), 10) << ring.rank(r).sink.text();
    }
  }
  EXPECT_EQ(neighbour_reasons.count("timeout"), 1u) << "reasons of ranks 0 and 1";
  // Rank 2 finds its connections closed when it wakes up.
  auto lost2 = eventsOf(ring.rank(2).report(), kEventPeerLost);
  ASSERT_FALSE(lost2.empty());
  const std::string reason2 = lost2.front().detail["reason"];
  EXPECT_TRUE(reason2 == "eof" || reason2 == "connection_reset" || reason2 == "broken_pipe")
      << reason2;
}

TEST(TcpRankTest, SlowPeerWithinTheTimeoutIsASlowSampleNotALoss) {
  Ring ring(3, 64 * 1024);
  // Rank 2 stalls 500 ms before iteration 5, well inside the 5 s peer timeout.
  ring.rank(2).hooks.before_iteration = [](int64_t iteration) {
    if (iteration == 5) std::this_thread::sleep_for(500ms);
  };
  ring.start();
  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          if (sampleCount(ring.rank(r)) < 10) return false;
        }
        return true;
      },
      kWaitLimit));
  ring.stopAll();
  int64_t slowest_iteration5 = 0;
  for (int r = 0; r < 3; ++r) {
    checkStream(ring.rank(r), r);
    auto lines = ring.rank(r).report();
    EXPECT_TRUE(eventsOf(lines, kEventPeerLost).empty()) << ring.rank(r).sink.text();
    EXPECT_TRUE(eventsOf(lines, kEventStall).empty());
    slowest_iteration5 = std::max(slowest_iteration5, samplesOf(lines)[5].duration_ns);
  }
  // Ranks 0 and 1 waited for rank 2 inside iteration 5: that wait is the measured signal.
  EXPECT_GE(slowest_iteration5, 250'000'000);
}

TEST(TcpRankTest, ReconnectBudgetExhaustedIsARankError) {
  Ring ring(2, 4096);
  ring.rank(0).options.reconnect_budget_ms = 300;
  ring.start();
  ASSERT_TRUE(waitFor([&] { return sampleCount(ring.rank(0)) >= 5; }, kWaitLimit));
  ring.rank(1).stop = true;  // rank 1 leaves for good
  ring.rank(1).thread.join();
  ASSERT_TRUE(waitFor([&] { return ring.rank(0).exit_code.load() != -1; }, kWaitLimit));
  EXPECT_NE(ring.rank(0).exit_code.load(), 0);
  auto lines = ring.rank(0).report();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().type, Type::kDone);
  ASSERT_EQ(eventsOf(lines, kEventPeerLost).size(), 1u) << ring.rank(0).sink.text();
  auto errors = eventsOf(lines, kEventRankError);
  ASSERT_EQ(errors.size(), 1u) << ring.rank(0).sink.text();
  EXPECT_EQ(errors[0].detail["reason"], "reconnect_budget_exhausted");
  EXPECT_EQ(errors[0].detail["budget_ms"], 300);
  EXPECT_EQ(eventsOf(lines, kEventReconnected).size(), 0u);
  EXPECT_EQ(ring.rank(1).exit_code.load(), 0);
}

TEST(TcpRankTest, RingThatNeverFormsIsARankError) {
  Ring ring(2, 4096);
  ring.rank(0).options.reconnect_budget_ms = 200;
  RankRun& only = ring.rank(0);
  const int code = runRank(only.options, *only.out, only.stop);
  EXPECT_EQ(code, 1);
  auto lines = only.report();
  ASSERT_EQ(lines.size(), 2u) << only.sink.text();
  EXPECT_EQ(lines[0].kind, kEventRankError);
  EXPECT_EQ(lines[0].detail["reason"], "ring_not_formed");
  EXPECT_EQ(lines[1].type, Type::kDone);
}

TEST(TcpRankTest, WorldOfOneIsATimedCopy) {
  RankRun run;
  run.options.world = 1;
  run.options.message_bytes = 4096;
  run.options.compute_ms = 1;
  run.options.max_duration_ms = 200;  // ends by itself
  run.out = std::make_unique<std::ostream>(&run.sink);
  EXPECT_EQ(runRank(run.options, *run.out, run.stop), 0);
  run.exit_code = 0;
  checkStream(run, 0);
  EXPECT_GT(sampleCount(run), 10u);
}

TEST(TcpRankTest, StopBeforeTheRingFormsEndsCleanly) {
  Ring ring(2, 4096);
  RankRun& only = ring.rank(0);
  only.stop = true;
  EXPECT_EQ(runRank(only.options, *only.out, only.stop), 0);
  auto lines = only.report();
  ASSERT_EQ(lines.size(), 1u) << only.sink.text();
  EXPECT_EQ(lines[0].type, Type::kDone);
  EXPECT_EQ(lines[0].iterations, 0);
}

TEST(TcpRankTest, InvalidOptionsAreReportedNotThrown) {
  RankRun run;
  run.options.world = 2;
  run.options.rank = 5;
  run.out = std::make_unique<std::ostream>(&run.sink);
  EXPECT_EQ(runRank(run.options, *run.out, run.stop), 2);
  auto lines = run.report();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].detail["reason"], "invalid_options");
  EXPECT_EQ(lines[1].type, Type::kDone);
}

}  // namespace
}  // namespace fabric_chaos::workload
