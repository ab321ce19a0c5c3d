#pragma once
// An in-memory Agent for engine tests. Its workload is a thread per rank that emits one sample
// every `period_ms`; while any fault is applied, iterations take `faulted_duration_ms` instead of
// `clean_duration_ms`, so the engine sees a real degradation and recovery. Faults can be told to
// fail on the Nth apply. Thread-safe.

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "core/clock.h"

namespace fabric_chaos::testing {

class FakeAgent : public agent::Agent {
 public:
  double clean_duration_ms = 2;
  double faulted_duration_ms = 40;
  int period_ms = 5;
  int fail_apply_on_call = 0;  // 1-based; 0 = never
  bool rank_dies_after_first_apply = false;

  std::vector<injectors::KindInfo> capabilities() override {
    return {{"link_flap", "fake link flap", true, "", "fake"},
            {"packet_loss", "fake loss", true, "", "fake-nftables"}};
  }
  core::Status validateFault(const std::string& kind, const nlohmann::json&) override {
    if (kind == "link_flap" || kind == "packet_loss") return core::Status::ok();
    return core::Status(core::StatusCode::kInvalidArgument, "unknown fault kind " + kind);
  }
  core::Result<nlohmann::json> captureFault(const injectors::Fault&) override {
    return nlohmann::json{{"admin_up", true}};
  }
  core::Status applyFault(const injectors::Fault& fault) override {
    std::lock_guard lock(mu_);
    ++apply_calls_;
    log_.push_back("apply " + fault.target.ifname);
    if (fail_apply_on_call == apply_calls_) {
      // Half-applied: the fault is partly in place when the error comes back.
      active_.insert(key(fault));
      return core::Status(core::StatusCode::kInternal, "injected failure");
    }
    active_.insert(key(fault));
    if (rank_dies_after_first_apply) kill_rank_ = true;
    return core::Status::ok();
  }
  core::Status revertFault(const injectors::Fault& fault, const nlohmann::json&) override {
    std::lock_guard lock(mu_);
    log_.push_back("revert " + fault.target.ifname);
    active_.erase(key(fault));
    return core::Status::ok();
  }
  core::Result<nlohmann::json> observeFault(const injectors::Fault&) override {
    return nlohmann::json{{"fake", true}};
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
  static std::string key(const injectors::Fault& f) {
    return f.kind + "/" + f.target.netns + "/" + f.target.ifname;
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
              listener->onRankExit(spec.rank, 1);
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

  std::mutex mu_;
  int apply_calls_ = 0;
  bool kill_rank_ = false;
  std::set<std::string> active_;
  std::vector<std::string> log_;
  std::vector<agent::RankSpec> started_ranks_;
};

}  // namespace fabric_chaos::testing
