#pragma once
// An in-memory Agent for engine tests. Its workload is a thread per rank that emits one sample
// every `period_ms`; while any fault is applied, iterations take `faulted_duration_ms` instead of
// `clean_duration_ms`, so the engine sees a real degradation and recovery. Faults can be told to
// fail on the Nth apply and reverts on the Nth revert. capture() reports whether the target is
// faulted right now and revert() restores exactly that, as the real injectors do, so a revert
// with a prior captured mid-fault leaves the fault in place. Thread-safe.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "core/clock.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::testing {

class FakeAgent : public agent::Agent {
 public:
  double clean_duration_ms = 2;
  double faulted_duration_ms = 40;
  int period_ms = 5;
  int fail_apply_on_call = 0;  // 1-based; 0 = never
  // > 0: each apply waits (at most 2 s) until this many applies are in progress at once, so a
  // test can tell whether an instant's faults were sent together; maxApplyConcurrency() says.
  int apply_barrier = 0;
  bool rank_dies_after_first_apply = false;
  // With rank_dies_after_first_apply: rank 0 dies too, this many ms after rank 1, and each says
  // why in a rank_error event first, as a job's ranks do when one's error takes down its peers.
  // -1: rank 0 lives on until it is stopped, and rank 1 dies without a word.
  int rank0_follows_after_ms = -1;

  // Schedules revert call n (1-based, counted over the agent's life) to fail.
  void failRevertOn(int n, const std::string& message = "injected revert failure") {
    std::lock_guard lock(mu_);
    revert_failures_.failOn(n, core::Status(core::StatusCode::kUnavailable, message));
  }
  // Every revert succeeds from now on.
  void stopFailingReverts() {
    std::lock_guard lock(mu_);
    revert_failures_ = fakes::FailSchedule();
  }

  // What info() and capabilities() report; set before the agent is shared with other threads.
  std::vector<injectors::KindInfo> kinds = {
      {"link_flap", "fake link flap", true, "", "fake"},
      {"packet_loss", "fake loss", true, "", "fake-nftables"}};
  std::vector<agent::AgentNetdev> netdevs;
  std::vector<sys::RdmaDevice> rdma_devices;
  // What rdmaCounters() answers; every call adds `rdma_counter_step` to each counter, so that
  // consecutive readings grow as a busy port's do.
  std::vector<sys::RdmaPortCounters> rdma_counters;
  int64_t rdma_counter_step = 0;
  std::string hostname = "fake-host";
  std::string version = "fake-1";
  int64_t realtime_skew_ns = 0;  // added to the real wall clock in info()'s clock sample
  // info() and validateFault fail with kUnavailable, as a remote agent that does not answer.
  std::atomic<bool> unreachable{false};

  core::Result<agent::AgentInfo> info() override {
    info_calls_++;
    if (unreachable) {
      return core::Status(core::StatusCode::kUnavailable, "agent unreachable: connection refused");
    }
    agent::AgentInfo out;
    out.version = version;
    out.hostname = hostname;
    out.kinds = kinds;
    out.netdevs = netdevs;
    out.rdma_devices = rdma_devices;
    out.clock.steady_ns = core::steadyNowNs();
    out.clock.realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count() +
                            realtime_skew_ns;
    return out;
  }
  int infoCalls() const { return info_calls_; }

  core::Result<std::vector<sys::RdmaPortCounters>> rdmaCounters() override {
    rdma_counter_calls_++;
    if (unreachable) {
      return core::Status(core::StatusCode::kUnavailable, "agent unreachable: connection refused");
    }
    std::lock_guard lock(mu_);
    for (auto& port : rdma_counters) {
      for (auto& [name, value] : port.counters) value += rdma_counter_step;
    }
    return rdma_counters;
  }
  int rdmaCounterCalls() const { return rdma_counter_calls_; }
  int validateCalls() const { return validate_calls_; }

  std::vector<injectors::KindInfo> capabilities() override { return kinds; }
  core::Status validateFault(const std::string& kind, const nlohmann::json&) override {
    validate_calls_++;
    if (unreachable) {
      return core::Status(core::StatusCode::kUnavailable, "agent unreachable: connection refused");
    }
    for (const auto& info : kinds) {
      if (info.kind == kind) return core::Status::ok();
    }
    return core::Status(core::StatusCode::kInvalidArgument, "unknown fault kind " + kind);
  }
  core::Result<nlohmann::json> captureFault(const injectors::Fault& fault) override {
    std::lock_guard lock(mu_);
    return nlohmann::json{{"admin_up", active_.count(key(fault)) == 0}};
  }
  core::Status applyFault(const injectors::Fault& fault) override {
    std::unique_lock lock(mu_);
    ++in_flight_;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    barrier_cv_.notify_all();
    if (apply_barrier > 0) {
      barrier_cv_.wait_for(lock, std::chrono::seconds(2),
                           [&] { return max_in_flight_ >= apply_barrier; });
    }
    --in_flight_;
    ++apply_calls_;
    log_.push_back("apply " + ifnameOf(fault));
    if (fail_apply_on_call == apply_calls_) {
      // Half-applied: the fault is partly in place when the error comes back.
      active_.insert(key(fault));
      return core::Status(core::StatusCode::kInternal, "injected failure");
    }
    active_.insert(key(fault));
    if (rank_dies_after_first_apply) kill_rank_ = true;
    return core::Status::ok();
  }
  core::Status revertFault(const injectors::Fault& fault, const nlohmann::json& prior) override {
    std::lock_guard lock(mu_);
    if (auto failure = revert_failures_.next()) {
      log_.push_back("revert-failed " + ifnameOf(fault));
      return *failure;
    }
    log_.push_back("revert " + ifnameOf(fault));
    // Restores what capture() saw: a prior taken while faulted puts the fault back.
    if (prior.is_object() && prior.value("admin_up", true) == false) {
      active_.insert(key(fault));
    } else {
      active_.erase(key(fault));
    }
    return core::Status::ok();
  }
  core::Result<nlohmann::json> observeFault(const injectors::Fault& fault) override {
    std::lock_guard lock(mu_);
    ++observe_calls_;
    if (observe_hook) return observe_hook(fault, observe_calls_);
    return nlohmann::json{{"fake", true}};
  }
  // What observeFault answers, given the fault and the 1-based call count (set before the run).
  std::function<nlohmann::json(const injectors::Fault&, int)> observe_hook;

  // true: behaves as a remote agent, which is handed its faults ahead of their instant and applies
  // them by its own clock. Here awaitScheduled() waits for the instant, applies, and says when.
  bool applies_on_schedule = false;
  struct Delivery {
    std::string ifname;
    int64_t delivered_ns = 0;
    int64_t at_ns = 0;
  };
  // With applies_on_schedule: scheduleFault refuses, as an agent of an older version does.
  bool refuse_schedules = false;
  bool appliesOnSchedule() const override { return applies_on_schedule; }
  core::Status scheduleFault(const injectors::Fault& fault, int64_t at_ns) override {
    if (refuse_schedules) {
      return core::Status(core::StatusCode::kInvalidArgument, "unknown field apply_at_ns");
    }
    std::lock_guard lock(mu_);
    log_.push_back("schedule " + ifnameOf(fault));
    deliveries_.push_back({ifnameOf(fault), core::steadyNowNs(), at_ns});
    scheduled_[key(fault)] = at_ns;
    return core::Status::ok();
  }
  core::Result<int64_t> awaitScheduled(const injectors::Fault& fault, int64_t) override {
    int64_t at_ns = 0;
    {
      std::lock_guard lock(mu_);
      auto it = scheduled_.find(key(fault));
      if (it == scheduled_.end()) {
        return core::Status(core::StatusCode::kFailedPrecondition, "not scheduled");
      }
      at_ns = it->second;
      scheduled_.erase(it);
    }
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at_ns)));
    const int64_t applied_ns = core::steadyNowNs();
    if (core::Status s = applyFault(fault); !s.isOk()) return s;
    return applied_ns;
  }
  core::Status scheduleRevert(const injectors::Fault& fault, int64_t at_ns) override {
    std::lock_guard lock(mu_);
    log_.push_back("schedule-revert " + ifnameOf(fault));
    revert_at_[key(fault)] = at_ns;
    return core::Status::ok();
  }
  core::Result<RevertedFault> awaitReverted(const injectors::Fault& fault, int64_t) override {
    int64_t at_ns = 0;
    {
      std::lock_guard lock(mu_);
      auto it = revert_at_.find(key(fault));
      if (it == revert_at_.end()) {
        return core::Status(core::StatusCode::kFailedPrecondition, "no revert scheduled");
      }
      at_ns = it->second;
      revert_at_.erase(it);
    }
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at_ns)));
    const int64_t reverted_ns = core::steadyNowNs();
    if (core::Status s = revertFault(fault, nlohmann::json::object()); !s.isOk()) return s;
    return RevertedFault{reverted_ns, nlohmann::json{{"fake", true}}};
  }
  std::vector<Delivery> deliveries() {
    std::lock_guard lock(mu_);
    return deliveries_;
  }

  core::Result<std::unique_ptr<agent::WorkloadHandle>> startWorkload(
      const std::vector<agent::RankSpec>& ranks, int64_t origin_ns,
      agent::WorkloadListener* listener) override {
    {
      std::lock_guard lock(mu_);
      started_ranks_ = ranks;
    }
    return std::unique_ptr<agent::WorkloadHandle>(
        std::make_unique<Workload>(*this, ranks, origin_ns, listener));
  }

  int maxApplyConcurrency() {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }
  size_t activeFaults() {
    std::lock_guard lock(mu_);
    return active_.size();
  }
  std::vector<std::string> log() {
    std::lock_guard lock(mu_);
    return log_;
  }
  std::vector<agent::RankSpec> startedRanks() {
    std::lock_guard lock(mu_);
    return started_ranks_;
  }

 private:
  static std::string key(const injectors::Fault& f) { return injectors::faultKey(f); }
  // The log names interfaces by their ifname, which is what the tests' scenarios target.
  static std::string ifnameOf(const injectors::Fault& f) {
    const injectors::InterfaceTarget* interface = injectors::interfaceOf(f.target);
    return interface != nullptr ? interface->ifname : injectors::describe(f.target);
  }

  class Workload : public agent::WorkloadHandle {
   public:
    Workload(FakeAgent& agent, std::vector<agent::RankSpec> ranks, int64_t origin_ns,
             agent::WorkloadListener* listener)
        : agent_(agent) {
      for (const auto& spec : ranks) {
        threads_.emplace_back([this, spec, origin_ns, listener] {
          auto ms = [&](int64_t t) { return static_cast<double>(t - origin_ns) / 1e6; };
          listener->onEvent(spec.rank, ms(core::steadyNowNs()), "rank_ready", {});
          int64_t iteration = 0;
          while (!stop_) {
            bool faulted;
            bool die;
            {
              std::lock_guard lock(agent_.mu_);
              faulted = !agent_.active_.empty();
              die = agent_.kill_rank_ && spec.rank == 1;
            }
            if (die) {
              if (agent_.rank0_follows_after_ms >= 0) {
                exitSaying(listener, spec.rank, ms(core::steadyNowNs()),
                           "RuntimeError: Connection closed by peer");
              } else {
                listener->onRankExit(spec.rank, 1);
              }
              std::lock_guard lock(agent_.mu_);
              agent_.rank1_died_ns_ = core::steadyNowNs();
              return;
            }
            if (followsIntoDeath(spec.rank)) {
              exitSaying(listener, spec.rank, ms(core::steadyNowNs()),
                         "RuntimeError: Timed out waiting 8000ms");
              return;
            }
            const int64_t start = core::steadyNowNs();
            const double duration = faulted ? agent_.faulted_duration_ms : agent_.clean_duration_ms;
            std::this_thread::sleep_for(
                std::chrono::microseconds(static_cast<int64_t>(duration * 1000)));
            listener->onSamples(
                {{spec.rank, iteration++, ms(start), duration, spec.message_bytes}});
            std::this_thread::sleep_for(std::chrono::milliseconds(agent_.period_ms));
          }
          listener->onRankExit(spec.rank, 0);
        });
      }
    }
    ~Workload() override { stop(0); }
    // A rank's command exiting with code 1, its last stderr line `last_words`, as an exec rank
    // reports it: rank_error, then the exit.
    static void exitSaying(agent::WorkloadListener* listener, int rank, double t_ms,
                           const std::string& last_words) {
      listener->onEvent(rank, t_ms, "rank_error",
                        {{"reason", "exited"},
                         {"message", "the command exited with code 1"},
                         {"stderr_tail", {last_words}}});
      listener->onRankExit(rank, 1);
    }
    bool followsIntoDeath(int rank) {
      std::lock_guard lock(agent_.mu_);
      return rank == 0 && agent_.rank0_follows_after_ms >= 0 && agent_.rank1_died_ns_ > 0 &&
             core::steadyNowNs() - agent_.rank1_died_ns_ >=
                 int64_t{agent_.rank0_follows_after_ms} * 1000000;
    }
    void stop(int) override {
      stop_ = true;
      for (auto& t : threads_) {
        if (t.joinable()) t.join();
      }
    }
    int runningRanks() const override { return stop_ ? 0 : static_cast<int>(threads_.size()); }

   private:
    FakeAgent& agent_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
  };

  std::atomic<int> info_calls_{0};
  std::atomic<int> rdma_counter_calls_{0};
  std::atomic<int> validate_calls_{0};
  std::mutex mu_;
  fakes::FailSchedule revert_failures_;
  std::condition_variable barrier_cv_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  int apply_calls_ = 0;
  int observe_calls_ = 0;
  bool kill_rank_ = false;
  int64_t rank1_died_ns_ = 0;  // when rank 1 died (kill_rank_)
  std::set<std::string> active_;
  std::vector<std::string> log_;
  std::vector<agent::RankSpec> started_ranks_;
  std::map<std::string, int64_t> scheduled_;  // fault key -> instant
  std::map<std::string, int64_t> revert_at_;  // fault key -> revert instant
  std::vector<Delivery> deliveries_;
};

}  // namespace fabric_chaos::testing
