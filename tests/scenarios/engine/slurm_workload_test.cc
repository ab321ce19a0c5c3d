// A run's ranks as one Slurm job step, against a fake submitter whose "srun" is a pair of pipes
// this test writes to: what the step is told (nodes through the fabric's map, the task arguments
// exec-rank will read), task output read back per rank (framed lines joined, report times moved
// from CLOCK_REALTIME to the engine's clock), srun's verdicts as rank exits, srun's own failure as
// rank errors with its words, and the stop sequence (scancel TERM, then a plain scancel).

#include "scenarios/engine/slurm_workload.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "workload/exec_rank_options.h"
#include "workload/report.h"
#include "workload/slurm/srun_output.h"

namespace fabric_chaos::scenarios {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// srun as two pipes: the test writes its stdout and stderr, and ends it with exit(code).
class FakeSrun : public sys::ChildProcess {
 public:
  FakeSrun() {
    ::pipe2(out_, O_CLOEXEC);
    ::pipe2(err_, O_CLOEXEC);
  }
  ~FakeSrun() override {
    closeWriters();
    ::close(out_[0]);
    ::close(err_[0]);
  }
  pid_t pid() const override { return 4242; }
  int stdoutFd() const override { return out_[0]; }
  int stderrFd() const override { return err_[0]; }
  core::Status signal(int signo) override {
    signals.push_back(signo);
    if (signo == SIGKILL) exit(128 + SIGKILL);
    return core::Status::ok();
  }
  core::Result<int> wait(int timeout_ms) override {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms < 0 ? 60000 : timeout_ms),
                      [this] { return code_ >= 0; })) {
      return core::Status(core::StatusCode::kTimeout, "running");
    }
    return code_;
  }
  void out(const std::string& line) { write(out_[1], line); }
  void err(const std::string& line) { write(err_[1], line); }
  void exit(int code) {
    closeWriters();
    std::lock_guard lock(mu_);
    code_ = code;
    cv_.notify_all();
  }
  std::vector<int> signals;

 private:
  static void write(int fd, const std::string& line) {
    const std::string text = line + "\n";
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void closeWriters() {
    std::lock_guard lock(writers_mu_);
    for (int* fd : {&out_[1], &err_[1]}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }
  int out_[2] = {-1, -1};
  int err_[2] = {-1, -1};
  std::mutex writers_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  int code_ = -1;
};

class FakeSubmitter : public SlurmSubmitter {
 public:
  core::Result<std::unique_ptr<sys::ChildProcess>> start(const SlurmCluster& cluster,
                                                         const workload::SrunStep& step) override {
    if (!start_error.isOk()) return start_error;
    started_cluster = cluster;
    started = step;
    auto srun = std::make_unique<FakeSrun>();
    srun_ = srun.get();
    return std::unique_ptr<sys::ChildProcess>(std::move(srun));
  }
  core::Status scancel(const SlurmCluster&, const std::string& job_name,
                       std::optional<std::string> signal_name) override {
    scancels.push_back(job_name + (signal_name ? " --signal=" + *signal_name : " (cancel)"));
    if (signal_name ? exit_on_term : exit_on_cancel) srun_->exit(signal_name ? 143 : 137);
    return core::Status::ok();
  }
  void forget(const workload::SrunStep& step) override { forgotten.push_back(step.argv.back()); }
  std::string stepDir() const override { return "/run/fabric-chaos/slurm-steps"; }

  FakeSrun& srun() { return *srun_; }
  core::Status start_error = core::Status::ok();
  bool exit_on_term = true;
  bool exit_on_cancel = true;
  std::optional<SlurmCluster> started_cluster;
  std::optional<workload::SrunStep> started;
  std::vector<std::string> scancels;
  std::vector<std::string> forgotten;

 private:
  FakeSrun* srun_ = nullptr;
};

class RecordingListener : public agent::WorkloadListener {
 public:
  void onSamples(const std::vector<core::Sample>& samples) override {
    std::lock_guard lock(mu_);
    for (const auto& s : samples) this->samples.push_back(s);
    cv_.notify_all();
  }
  void onEvent(int rank, double, const std::string& kind, const nlohmann::json& detail) override {
    std::lock_guard lock(mu_);
    events.push_back({rank, kind, detail});
    cv_.notify_all();
  }
  void onRankExit(int rank, int code) override {
    std::lock_guard lock(mu_);
    exits.push_back({rank, code});
    cv_.notify_all();
  }
  bool waitFor(const std::function<bool()>& done) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), done);
  }
  struct Event {
    int rank;
    std::string kind;
    nlohmann::json detail;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<core::Sample> samples;
  std::vector<Event> events;
  std::vector<std::pair<int, int>> exits;
};

SlurmCluster lab() {
  SlurmCluster cluster;
  cluster.conf = "/run/fabric-chaos/slurm/netns-lab/slurm.conf";
  cluster.submit_netns = "fcl-slurmctl";
  cluster.partition = "lab";
  cluster.nodes = {{"h1", "node-b"}};
  return cluster;
}

std::vector<PlannedRank> twoExecRanks() {
  std::vector<PlannedRank> ranks(2);
  for (int i = 0; i < 2; ++i) {
    ranks[i].host = "h" + std::to_string(i);
    ranks[i].spec.rank = i;
    ranks[i].spec.world = 2;
    ranks[i].spec.transport = "exec";
    ranks[i].spec.listen_addr = "10.200.0." + std::to_string(i + 1);
    ranks[i].spec.exec.command = {"python3", "train.py"};
    ranks[i].spec.exec.master_addr = "10.200.0.1";
    ranks[i].spec.exec.master_port = 29500;
    ranks[i].spec.exec.ifname = "eth0";
  }
  return ranks;
}

SlurmStepPlan plan() { return {"fabric-chaos-run-9", "/usr/bin/fabric-chaos", {}}; }

TEST(SlurmWorkloadTest, TasksRunOnTheirHostsNodesWithArgumentsExecRankReads) {
  FakeSubmitter submitter;
  RecordingListener listener;
  auto workload =
      startSlurmWorkload(submitter, lab(), plan(), twoExecRanks(), core::steadyNowNs(), &listener);
  ASSERT_TRUE(workload.isOk()) << workload.status().toString();
  ASSERT_TRUE(submitter.started.has_value());
  const workload::SrunStep& step = *submitter.started;
  EXPECT_EQ(step.hostfile, "h0\nnode-b\n");
  EXPECT_THAT(step.argv, ::testing::Contains("--partition=lab"));
  EXPECT_THAT(step.argv, ::testing::Contains("--job-name=fabric-chaos-run-9"));
  EXPECT_EQ(step.argv.back(), "/run/fabric-chaos/slurm-steps/fabric-chaos-run-9.conf");

  // Task 1's line, read back as exec-rank will read it on the node.
  const std::string line1 = step.multi_prog.substr(step.multi_prog.find('\n') + 1);
  const std::string prefix = "1 /usr/bin/fabric-chaos exec-rank --args-hex ";
  ASSERT_EQ(line1.rfind(prefix, 0), 0u) << line1;
  auto parsed = workload::parseExecRankArgs(
      {"--args-hex", line1.substr(prefix.size(), line1.size() - prefix.size() - 1)});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->rank.rank, 1);
  EXPECT_EQ(parsed->rank.world, 2);
  EXPECT_EQ(parsed->host_addr, "10.200.0.2");
  EXPECT_EQ(parsed->master_addr, "10.200.0.1");
  EXPECT_TRUE(parsed->wall_clock);
  EXPECT_EQ(parsed->max_line_bytes, workload::kSrunLineBytes);
  EXPECT_THAT(parsed->command, ElementsAre("python3", "train.py"));

  submitter.srun().exit(0);
  ASSERT_TRUE(listener.waitFor([&] { return listener.exits.size() == 2; }));
  (*workload)->stop(1000);
  EXPECT_TRUE(submitter.scancels.empty()) << "a step that ended needs no scancel";
  EXPECT_THAT(submitter.forgotten, ElementsAre(step.argv.back()));
}

TEST(SlurmWorkloadTest, OutputIsEachRanksReportsAndSrunVerdictsAreItsExits) {
  FakeSubmitter submitter;
  RecordingListener listener;
  const int64_t origin = core::steadyNowNs();
  auto workload = startSlurmWorkload(submitter, lab(), plan(), twoExecRanks(), origin, &listener);
  ASSERT_TRUE(workload.isOk()) << workload.status().toString();
  FakeSrun& srun = submitter.srun();

  // Rank 1's samples on the wall clock, 2 s after the origin; enough of them to be framed.
  const int64_t wall_origin = origin + (core::wallNowNs() - core::steadyNowNs());
  std::vector<workload::RawSample> raw;
  for (int i = 0; i < 60; ++i) raw.push_back({i, wall_origin + 2'000'000'000LL + i, 5'000'000, 0});
  const std::string samples = workload::encodeSamples(1, raw);
  const auto pieces = workload::frameLine(samples, workload::kSrunLineBytes);
  ASSERT_GT(pieces.size(), 1u);
  srun.out("0: " + workload::encodeReady(0, wall_origin + 1'000'000'000LL));
  for (const auto& piece : pieces) srun.out("1: " + piece);
  srun.err("0: [rank0] some warning from python");
  srun.err("srun: error: h0: task 0: Exited with exit code 3");
  ASSERT_TRUE(listener.waitFor([&] { return listener.samples.size() == 60; }));
  ASSERT_TRUE(listener.waitFor([&] { return listener.exits.size() == 1; }));
  {
    std::lock_guard lock(listener.mu_);
    EXPECT_EQ(listener.samples.front().rank, 1);
    // Moved onto the engine's clock: within 50 ms of what was written (the two clocks are read
    // at slightly different instants).
    EXPECT_NEAR(listener.samples.front().start_ms, 2000.0, 50.0);
    EXPECT_DOUBLE_EQ(listener.samples.front().duration_ms, 5.0);
    EXPECT_EQ(listener.events.front().kind, "rank_ready");
    EXPECT_EQ(listener.events.front().rank, 0);
    EXPECT_EQ(listener.exits.front(), (std::pair<int, int>{0, 3}));
  }
  srun.exit(1);  // srun's own code after a task failed
  ASSERT_TRUE(listener.waitFor([&] { return listener.exits.size() == 2; }));
  std::lock_guard lock(listener.mu_);
  EXPECT_EQ(listener.exits.back(), (std::pair<int, int>{1, 1}));
}

TEST(SlurmWorkloadTest, SrunThatCannotRunTheStepFailsEveryRankWithItsWords) {
  FakeSubmitter submitter;
  RecordingListener listener;
  auto workload =
      startSlurmWorkload(submitter, lab(), plan(), twoExecRanks(), core::steadyNowNs(), &listener);
  ASSERT_TRUE(workload.isOk()) << workload.status().toString();
  submitter.srun().err(
      "srun: error: Unable to allocate resources: Invalid partition name specified");
  submitter.srun().exit(1);
  ASSERT_TRUE(listener.waitFor([&] { return listener.exits.size() == 2; }));
  std::lock_guard lock(listener.mu_);
  ASSERT_EQ(listener.events.size(), 2u);
  for (const auto& event : listener.events) {
    EXPECT_EQ(event.kind, "rank_error");
    EXPECT_THAT(event.detail.value("message", ""), HasSubstr("Invalid partition name"));
  }
  EXPECT_THAT(listener.exits, ElementsAre(std::pair<int, int>{0, 1}, std::pair<int, int>{1, 1}));
}

TEST(SlurmWorkloadTest, StopSignalsTheStepThenCancelsIt) {
  {
    FakeSubmitter submitter;  // the tasks end on SIGTERM: one scancel
    RecordingListener listener;
    auto workload = startSlurmWorkload(submitter, lab(), plan(), twoExecRanks(),
                                       core::steadyNowNs(), &listener);
    ASSERT_TRUE(workload.isOk());
    (*workload)->stop(2000);
    EXPECT_THAT(submitter.scancels, ElementsAre("fabric-chaos-run-9 --signal=TERM"));
    EXPECT_EQ((*workload)->runningRanks(), 0);
    std::lock_guard lock(listener.mu_);
    EXPECT_TRUE(listener.events.empty()) << "a stop is not a rank error";
  }
  {
    FakeSubmitter submitter;  // a task ignores SIGTERM: the step is cancelled after the grace
    submitter.exit_on_term = false;
    RecordingListener listener;
    auto workload = startSlurmWorkload(submitter, lab(), plan(), twoExecRanks(),
                                       core::steadyNowNs(), &listener);
    ASSERT_TRUE(workload.isOk());
    const auto before = std::chrono::steady_clock::now();
    (*workload)->stop(300);
    EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(300));
    EXPECT_THAT(submitter.scancels,
                ElementsAre("fabric-chaos-run-9 --signal=TERM", "fabric-chaos-run-9 (cancel)"));
    EXPECT_TRUE(submitter.srun().signals.empty()) << "srun ended without being killed";
  }
}

TEST(SlurmWorkloadTest, RefusesWhatCannotRunThroughSlurmAndStartsNothing) {
  FakeSubmitter submitter;
  RecordingListener listener;
  auto ranks = twoExecRanks();
  ranks[1].spec.transport = "tcp";
  auto refused =
      startSlurmWorkload(submitter, lab(), plan(), ranks, core::steadyNowNs(), &listener);
  ASSERT_FALSE(refused.isOk());
  EXPECT_THAT(refused.status().message(), HasSubstr("external workload"));
  SlurmStepPlan taking_over = plan();
  taking_over.launch.srun_args = {"--nodelist=h3"};
  refused = startSlurmWorkload(submitter, lab(), taking_over, twoExecRanks(), core::steadyNowNs(),
                               &listener);
  ASSERT_FALSE(refused.isOk());
  EXPECT_THAT(refused.status().message(), HasSubstr("--nodelist"));
  submitter.start_error = core::Status(core::StatusCode::kNotFound, "srun: not found");
  refused =
      startSlurmWorkload(submitter, lab(), plan(), twoExecRanks(), core::steadyNowNs(), &listener);
  ASSERT_FALSE(refused.isOk());
  EXPECT_THAT(refused.status().message(), HasSubstr("fabric-chaos-run-9"));
  EXPECT_FALSE(submitter.started.has_value());
  EXPECT_EQ(submitter.forgotten.size(), 1u) << "the files of a step that did not start";
}

}  // namespace
}  // namespace fabric_chaos::scenarios
