// ExecRankReporter (workload/exec_rank.h) on a scripted clock: which report lines an external
// rank's output becomes, decoded back with workload/report.h, and its command line
// (workload/exec_rank_options.h).

#include "workload/exec_rank.h"

#include <gtest/gtest.h>

#include "workload/exec_rank_options.h"

namespace fabric_chaos::workload {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStart = 5'000 * kMs;  // the command started 5 s after boot

class Reporter : public ::testing::Test {
 protected:
  void start(ExecRankOptions options, StepParserSpec parser = {}) {
    reporter_ = std::make_unique<ExecRankReporter>(
        options, std::move(makeStepParser(parser).value()), [this](const std::string& line) {
          auto decoded = decodeReportLine(line);
          ASSERT_TRUE(decoded.isOk()) << line;
          lines_.push_back(decoded.value());
        });
    reporter_->started(kStart, {/*monotonic_ns=*/0, /*wall_ns=*/-1'700'000'000'000 * kMs});
  }
  std::vector<RawSample> samples() const {
    std::vector<RawSample> all;
    for (const auto& l : lines_) {
      if (l.type == ReportLine::Type::kSamples)
        all.insert(all.end(), l.samples.begin(), l.samples.end());
    }
    return all;
  }
  std::vector<ReportLine::Type> types() const {
    std::vector<ReportLine::Type> t;
    for (const auto& l : lines_) t.push_back(l.type);
    return t;
  }

  std::unique_ptr<ExecRankReporter> reporter_;
  std::vector<ReportLine> lines_;
};

using Type = ReportLine::Type;

TEST_F(Reporter, TheFirstStepMakesTheRankReadyAndStepsAreFlushedInBatches) {
  start({.rank = 2, .world = 4, .flush_ms = 100});
  reporter_->stdoutLine("loading model...", kStart + 10 * kMs);
  EXPECT_TRUE(lines_.empty()) << "ready before any step";
  reporter_->stdoutLine(R"({"step": 0, "duration_ms": 20})", kStart + 50 * kMs);
  ASSERT_EQ(types(), std::vector<Type>{Type::kReady});
  EXPECT_EQ(lines_[0].rank, 2);
  EXPECT_EQ(lines_[0].t_ns, kStart + 50 * kMs);
  reporter_->stdoutLine(R"({"duration_ms": 20})", kStart + 70 * kMs);
  EXPECT_EQ(lines_.size(), 1u) << "flushed before flush_ms";
  EXPECT_FALSE(reporter_->tick(kStart + 160 * kMs));
  ASSERT_EQ(types(), (std::vector<Type>{Type::kReady, Type::kSamples}));
  const auto all = samples();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].iteration, 0);
  EXPECT_EQ(all[1].iteration, 1) << "a step without a number follows the last one";
  // Without a time of its own, a step ended when its line arrived.
  EXPECT_EQ(all[0].start_ns, kStart + 30 * kMs);
  EXPECT_EQ(all[0].duration_ns, 20 * kMs);
}

TEST_F(Reporter, AStepsOwnTimeIsBelievedOnlyWhenItIsOnThisClock) {
  start({.rank = 0, .world = 2, .flush_ms = 0});
  // Monotonic seconds inside the rank's life: taken as given.
  reporter_->stdoutLine(R"({"t_start": 5.2, "duration_ms": 10})", kStart + 300 * kMs);
  // Unix seconds in t_wall: converted with the clock offset.
  reporter_->stdoutLine(R"({"t_wall": 1700000005.4, "duration_ms": 10})", kStart + 500 * kMs);
  // A Unix time given as t_start is another clock: the arrival is used instead.
  reporter_->stdoutLine(R"({"t_start": 1700000005.6, "duration_ms": 10})", kStart + 700 * kMs);
  const auto all = samples();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].start_ns, 5'200 * kMs);
  EXPECT_EQ(all[1].start_ns, 5'400 * kMs);
  EXPECT_EQ(all[2].start_ns, kStart + 690 * kMs);
}

// A rank srun launched reports on CLOCK_REALTIME: the same steps land on Unix time, both a
// monotonic t_start and a t_wall.
TEST_F(Reporter, OnTheWallClockStepTimesAreMovedToUnixTime) {
  constexpr int64_t kWallMinusSteady = 1'700'000'000'000 * kMs;
  reporter_ = std::make_unique<ExecRankReporter>(
      ExecRankOptions{.rank = 0, .world = 2, .flush_ms = 0}, std::move(makeStepParser({}).value()),
      [this](const std::string& line) {
        auto decoded = decodeReportLine(line);
        ASSERT_TRUE(decoded.isOk()) << line;
        lines_.push_back(decoded.value());
      });
  const int64_t wall_start = kStart + kWallMinusSteady;
  reporter_->started(wall_start, {/*monotonic_ns=*/kWallMinusSteady, /*wall_ns=*/0});
  reporter_->stdoutLine(R"({"t_start": 5.2, "duration_ms": 10})", wall_start + 300 * kMs);
  reporter_->stdoutLine(R"({"t_wall": 1700000005.4, "duration_ms": 10})", wall_start + 500 * kMs);
  const auto all = samples();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].start_ns, kWallMinusSteady + 5'200 * kMs);
  EXPECT_EQ(all[1].start_ns, kWallMinusSteady + 5'400 * kMs);
}

TEST_F(Reporter, NcclTestsBusbwIsKeptThroughTheRunsBusFactor) {
  start({.rank = 0, .world = 4, .flush_ms = 0}, {StepFormat::kNcclTests});
  reporter_->stdoutLine(
      "#       size         count      type   redop    root     time   algbw   "
      "busbw #wrong     time   algbw   busbw #wrong",
      kStart + kMs);
  reporter_->stdoutLine(
      "   268435456      67108864     float     sum      -1   2000.0  134.22  "
      "234.88      0   1990.0  134.89  236.06      0",
      kStart + 2 * kMs);
  const auto all = samples();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].duration_ns, 2 * kMs);
  // busbw = bytes / 2 ms * 2(4-1)/4 must give back nccl-tests' 234.88 GB/s.
  const double busbw = static_cast<double>(all[0].bytes) / 2e-3 / 1e9 * 1.5;
  EXPECT_NEAR(busbw, 234.88, 1e-3);
}

TEST_F(Reporter, SilenceIsWatchedOnlyAfterTheFirstStep) {
  start({.rank = 0, .world = 2, .silence_ms = 1000});
  EXPECT_FALSE(reporter_->tick(kStart + 60'000 * kMs)) << "start-up is the engine's to time";
  reporter_->stdoutLine(R"({"duration_ms": 1})", kStart + 60'000 * kMs);
  EXPECT_FALSE(reporter_->tick(kStart + 61'000 * kMs));
  EXPECT_TRUE(reporter_->tick(kStart + 61'001 * kMs));
}

TEST_F(Reporter, ARankThatPrintsNoStepsIsReadyAtOnceAndNeverSilent) {
  start({.rank = 3, .world = 4, .silence_ms = 10, .reports_steps = false});
  EXPECT_EQ(types(), std::vector<Type>{Type::kReady});
  EXPECT_FALSE(reporter_->tick(kStart + 3'600'000 * kMs));
}

TEST_F(Reporter, AnEndSaysWhyWithTheEndOfStderr) {
  start({.rank = 1, .world = 2, .stderr_tail_lines = 2});
  reporter_->stdoutLine(R"({"duration_ms": 1})", kStart + kMs);
  for (const char* line : {"Traceback (most recent call last):", "  File \"x.py\"",
                           "RuntimeError: Timed out waiting 20000ms for recv operation"}) {
    reporter_->stderrLine(line);
  }
  EXPECT_EQ(reporter_->finish(ExecRankEnd::kExited, 1, "the command exited with code 1",
                              kStart + 2 * kMs),
            1);
  ASSERT_EQ(types(), (std::vector<Type>{Type::kReady, Type::kSamples, Type::kEvent, Type::kDone}));
  const auto& event = lines_[2];
  EXPECT_EQ(event.kind, kEventRankError);
  EXPECT_EQ(event.detail["reason"], "exited");
  EXPECT_EQ(event.detail["exit_code"], 1);
  EXPECT_EQ(event.detail["iteration"], 1);
  EXPECT_EQ(event.detail["stderr_tail"],
            (nlohmann::json{"  File \"x.py\"",
                            "RuntimeError: Timed out waiting 20000ms for recv operation"}));
  EXPECT_FALSE(event.detail.contains("last_stdout_line")) << "it printed steps";
  EXPECT_EQ(lines_[3].iterations, 1);
}

TEST_F(Reporter, AStopIsACleanEndAndAnExitWithZeroIsStillADeath) {
  start({.rank = 0, .world = 2});
  EXPECT_EQ(reporter_->finish(ExecRankEnd::kStopped, 143, "", kStart), 0);
  EXPECT_EQ(types(), std::vector<Type>{Type::kDone});
  lines_.clear();
  start({.rank = 0, .world = 2});
  reporter_->stdoutLine("usage: train.py [-h]", kStart);
  EXPECT_EQ(reporter_->finish(ExecRankEnd::kExited, 0, "the command exited with code 0", kStart),
            1);
  ASSERT_EQ(types(), (std::vector<Type>{Type::kEvent, Type::kDone}));
  EXPECT_EQ(lines_[0].detail["last_stdout_line"], "usage: train.py [-h]");
  EXPECT_EQ(lines_[0].detail["stdout_lines"], 1);
}

TEST(ExecRankOptions, ParsesTheAgentsCommandLineAndBuildsTheEnvironment) {
  auto parsed = parseExecRankArgs({"--rank",      "1",           "--world",
                                   "4",           "--master",    "10.0.0.1:29500",
                                   "--host-addr", "10.0.0.2",    "--ifname",
                                   "eth0",        "--env",       "GLOO_SOCKET_IFNAME=eth0",
                                   "--script",    "pytorch-ddp", "--silence-ms",
                                   "0",           "--",          "/usr/bin/python3",
                                   "{script}",    "--timeout-s", "20"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->rank.silence_ms, 0);
  EXPECT_EQ(
      execRankArgv(*parsed, "/proc/9/fd/3"),
      (std::vector<std::string>{
          "/usr/bin/env", "--", "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=0", "MASTER_ADDR=10.0.0.1",
          "MASTER_PORT=29500", "FABRIC_CHAOS_HOST_ADDR=10.0.0.2", "FABRIC_CHAOS_IFNAME=eth0",
          "GLOO_SOCKET_IFNAME=eth0", "/usr/bin/python3", "/proc/9/fd/3", "--timeout-s", "20"}));
  auto v6 = parseExecRankArgs(
      {"--rank", "0", "--world", "2", "--master", "[fd00::1]:29500", "--", "true"});
  ASSERT_TRUE(v6.isOk());
  EXPECT_EQ(v6->master_addr, "fd00::1");
}

TEST(ExecRankOptions, RefusesWhatCannotRun) {
  const std::vector<std::vector<std::string>> bad = {
      {"--rank", "0", "--world", "2", "--master", "h:1"},  // no command
      {"--rank", "0", "--world", "2", "--", "true"},       // no master
      {"--rank", "0", "--world", "2", "--master", "h:0", "--", "true"},
      {"--rank", "0", "--world", "2", "--master", "h:1", "--env", "1X=2", "--", "true"},
      {"--rank", "0", "--world", "2", "--master", "h:1", "--format", "csv", "--", "true"},
      {"--rank", "0", "--world", "2", "--master", "h:1", "--script", "pytorch-ddp", "--", "true"},
      {"--rank", "0", "--world", "2", "--master", "h:1", "--", "python3", "{script}"},
  };
  for (const auto& args : bad) {
    EXPECT_EQ(parseExecRankArgs(args).status().code(), core::StatusCode::kInvalidArgument)
        << ::testing::PrintToString(args);
  }
}

}  // namespace
}  // namespace fabric_chaos::workload
