#pragma once
// An agent that injects nothing: what `fabric-chaos agent-sim` serves, many per process, so that a
// controller can be measured against a fleet of 1,250 hosts on one machine (bench/fanout_bench).
// The protocol, leases and journal are the real AgentService's; only the host is pretend. Faults
// are checked by the real injectors' parameter rules and then recorded (when, which) instead of
// applied; workloads run on the real agent it is given (ring ranks on loopback addresses). Every
// simulated agent of a process records into one FanoutRecorder. Thread-safe.

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/agent_service.h"

namespace fabric_chaos::agent {

// What the simulated agents were asked to do, with CLOCK_MONOTONIC times (one machine: the same
// clock as the controller's, so latencies need no offset).
class FanoutRecorder {
 public:
  enum class Action { kApply, kRevert };
  struct Entry {
    int agent = 0;
    Action action = Action::kApply;
    std::string kind;
    int64_t steady_ns = 0;
  };
  void record(int agent, Action action, const std::string& kind);
  std::vector<Entry> entries() const;
  // {"entries": [{"agent", "action": "apply"|"revert", "kind", "steady_ns"}]}
  nlohmann::json toJson() const;

 private:
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

class SimulatedAgent : public Agent {
 public:
  // `real` validates parameters, lists the kinds and runs workloads; `recorder` outlives this.
  SimulatedAgent(int index, std::string hostname, std::string nic, std::string address, Agent& real,
                 FanoutRecorder& recorder);

  core::Result<AgentInfo> info() override;
  std::vector<injectors::KindInfo> capabilities() override;
  core::Status validateFault(const std::string& kind, const nlohmann::json& params) override;
  core::Result<nlohmann::json> captureFault(const injectors::Fault& fault) override;
  core::Status applyFault(const injectors::Fault& fault) override;
  core::Status revertFault(const injectors::Fault& fault, const nlohmann::json& prior) override;
  core::Result<nlohmann::json> observeFault(const injectors::Fault& fault) override;
  core::Result<std::vector<sys::RdmaPortCounters>> rdmaCounters() override;
  core::Result<std::unique_ptr<WorkloadHandle>> startWorkload(const std::vector<RankSpec>& ranks,
                                                              int64_t origin_ns,
                                                              WorkloadListener* listener) override;

 private:
  int index_;
  std::string hostname_;
  std::string nic_;
  std::string address_;
  Agent& real_;
  FanoutRecorder& recorder_;
};

// The simulated host as AgentService's /describe shows it: its name and one NIC, up.
class SimulatedHostProbe : public HostProbe {
 public:
  SimulatedHostProbe(std::string hostname, std::string nic, std::string address)
      : hostname_(std::move(hostname)), nic_(std::move(nic)), address_(std::move(address)) {}
  std::string hostname() override { return hostname_; }
  std::string kernelRelease() override { return "simulated"; }
  std::vector<NetdevInfo> netdevs() override;
  std::vector<RdmaPortInfo> rdmaPorts() override { return {}; }

 private:
  std::string hostname_;
  std::string nic_;
  std::string address_;
};

}  // namespace fabric_chaos::agent
