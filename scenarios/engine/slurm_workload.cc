#include "scenarios/engine/slurm_workload.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "agent/exec_rank_args.h"
#include "agent/local_agent.h"
#include "core/clock.h"
#include "core/line_reader.h"
#include "workload/slurm/srun_output.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;

constexpr size_t kStderrTailLines = 20;
constexpr int kPollSliceMs = 100;
// After a plain scancel, how long slurmstepd gets to end the tasks (SIGTERM, then SIGKILL after
// slurm.conf's KillWait) before srun itself is killed.
constexpr int kCancelWaitMs = 10000;

class SlurmWorkload : public agent::WorkloadHandle {
 public:
  // srun has started: the workload owns it from here.
  SlurmWorkload(SlurmSubmitter& submitter, SlurmCluster cluster, workload::SrunStep step,
                std::string job_name, int world, int64_t origin_ns,
                agent::WorkloadListener* listener, std::unique_ptr<sys::ChildProcess> srun)
      : submitter_(submitter),
        cluster_(std::move(cluster)),
        step_(std::move(step)),
        job_name_(std::move(job_name)),
        world_(world),
        origin_ns_(origin_ns),
        // The tasks report on CLOCK_REALTIME: seen from the engine's monotonic clock, the
        // origin is this far on.
        wall_origin_ns_(origin_ns + (core::wallNowNs() - core::steadyNowNs())),
        listener_(listener),
        srun_(std::move(srun)) {
    reader_ = std::thread([this] { readLoop(); });
  }

  ~SlurmWorkload() override { stop(0); }

  void stop(int grace_ms) override {
    std::lock_guard lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    if (!srun_exited_) {
      // Each task's exec-rank ends its command and writes its last samples and done line.
      const Status signalled = submitter_.scancel(cluster_, job_name_, "TERM");
      if (!signalled.isOk()) noteProblem("stopping the step: " + signalled.message());
      if (!waitForSrun(grace_ms)) {
        const Status cancelled = submitter_.scancel(cluster_, job_name_, std::nullopt);
        if (!cancelled.isOk()) noteProblem("cancelling the step: " + cancelled.message());
        if (!waitForSrun(kCancelWaitMs)) (void)srun_->signal(SIGKILL);
      }
    }
    if (reader_.joinable()) reader_.join();
    submitter_.forget(step_);
  }

  int runningRanks() const override {
    std::lock_guard lock(mu_);
    return world_ - static_cast<int>(ended_.size());
  }

 private:
  bool waitForSrun(int timeout_ms) {
    const int64_t deadline = core::steadyNowNs() + int64_t{timeout_ms} * 1'000'000;
    while (!srun_exited_ && core::steadyNowNs() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return srun_exited_;
  }

  void noteProblem(const std::string& what) {
    listener_->onEvent(-1, msNow(), "slurm_problem", {{"job", job_name_}, {"message", what}});
  }

  double msNow() const { return static_cast<double>(core::steadyNowNs() - origin_ns_) / 1e6; }

  void onStdout(const std::string& physical) {
    auto labelled = workload::parseLabelledLine(physical);
    if (!labelled || labelled->task < 0 || labelled->task >= world_) {
      stderr_tail_.push_back(physical);  // not a task's: srun's own, kept for the error
      if (stderr_tail_.size() > kStderrTailLines) stderr_tail_.pop_front();
      return;
    }
    auto line = joiners_[labelled->task].add(labelled->text);
    if (line) agent::deliverReportLine(*line, labelled->task, wall_origin_ns_, *listener_);
  }

  void onStderr(const std::string& line) {
    if (auto end = workload::parseTaskEnd(line); end && end->task >= 0 && end->task < world_) {
      rankEnded(end->task, end->exit_code);
      return;
    }
    stderr_tail_.push_back(line);
    if (stderr_tail_.size() > kStderrTailLines) stderr_tail_.pop_front();
  }

  void rankEnded(int rank, int exit_code) {
    {
      std::lock_guard lock(mu_);
      if (!ended_.insert(rank).second) return;
    }
    listener_->onRankExit(rank, exit_code);
  }

  // Reads both pipes until srun has closed them, then reaps srun and ends the ranks it did not
  // report on: with its exit code, and the tail of what it said when that was not 0.
  void readLoop() {
    core::LineReader out_reader, err_reader;
    bool out_open = srun_->stdoutFd() >= 0, err_open = srun_->stderrFd() >= 0;
    while (out_open || err_open) {
      pollfd fds[2] = {{out_open ? srun_->stdoutFd() : -1, POLLIN, 0},
                       {err_open ? srun_->stderrFd() : -1, POLLIN, 0}};
      if (::poll(fds, 2, kPollSliceMs) <= 0) continue;
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        out_open = !out_reader.readFrom(fds[0].fd, [this](const std::string& l) { onStdout(l); });
      }
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        err_open = !err_reader.readFrom(fds[1].fd, [this](const std::string& l) { onStderr(l); });
      }
    }
    auto code = srun_->wait(kCancelWaitMs);
    if (!code.isOk()) {
      (void)srun_->signal(SIGKILL);
      code = srun_->wait(5000);
    }
    const int srun_code = code.isOk() ? code.value() : 128 + SIGKILL;
    // Reaped: from here a stop() needs no scancel. Set before the ranks' exits are delivered, or a
    // listener that stops the workload on the last exit would cancel a step that has ended.
    srun_exited_ = true;
    std::string said;
    for (const std::string& line : stderr_tail_) said += (said.empty() ? "" : " | ") + line;
    for (int rank = 0; rank < world_; ++rank) {
      bool ended = false;
      {
        std::lock_guard lock(mu_);
        ended = ended_.count(rank) != 0;
      }
      if (ended) continue;
      if (srun_code != 0 && !stopped_) {
        listener_->onEvent(rank, msNow(), "rank_error",
                           {{"reason", "srun"},
                            {"message", "srun exited with code " + std::to_string(srun_code) +
                                            (said.empty() ? "" : ": " + said)},
                            {"job", job_name_}});
      }
      rankEnded(rank, srun_code);
    }
  }

  SlurmSubmitter& submitter_;
  const SlurmCluster cluster_;
  const workload::SrunStep step_;
  const std::string job_name_;
  const int world_;
  const int64_t origin_ns_;
  const int64_t wall_origin_ns_;
  agent::WorkloadListener* listener_;
  std::unique_ptr<sys::ChildProcess> srun_;
  std::thread reader_;
  std::map<int, workload::LineJoiner> joiners_;  // reader thread only
  std::deque<std::string> stderr_tail_;          // reader thread only
  mutable std::mutex mu_;
  std::set<int> ended_;
  std::atomic<bool> srun_exited_{false};
  std::mutex stop_mu_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

core::Result<std::unique_ptr<agent::WorkloadHandle>> startSlurmWorkload(
    SlurmSubmitter& submitter, const SlurmCluster& cluster, const SlurmStepPlan& plan,
    const std::vector<PlannedRank>& ranks, int64_t origin_ns, agent::WorkloadListener* listener) {
  workload::SrunStepSpec spec;
  spec.job_name = plan.job_name;
  spec.partition = plan.launch.partition.empty() ? cluster.partition : plan.launch.partition;
  spec.reservation = plan.launch.reservation;
  spec.wait_s = plan.launch.wait_s;
  spec.extra_args = plan.launch.srun_args;
  spec.multi_prog_path = submitter.stepDir() + "/" + plan.job_name + ".conf";
  const agent::ExecRankReporting reporting{true, workload::kSrunLineBytes};
  for (const PlannedRank& rank : ranks) {
    if (rank.spec.transport != "exec") {
      return Status(StatusCode::kInvalidArgument,
                    "rank " + std::to_string(rank.spec.rank) +
                        ": only an external workload (exec, pytorch-ddp) runs through Slurm");
    }
    spec.tasks.push_back({cluster.nodeOf(rank.host), plan.program, "exec-rank",
                          agent::execRankArguments(rank.spec, {}, reporting)});
  }
  auto step = workload::buildSrunStep(spec);
  if (!step.isOk()) return step.status();
  auto srun = submitter.start(cluster, *step);
  if (!srun.isOk()) {
    submitter.forget(*step);
    return srun.status().withContext("starting Slurm job step " + plan.job_name);
  }
  return std::unique_ptr<agent::WorkloadHandle>(std::make_unique<SlurmWorkload>(
      submitter, cluster, *step, plan.job_name, static_cast<int>(ranks.size()), origin_ns, listener,
      std::move(srun.value())));
}

}  // namespace fabric_chaos::scenarios
