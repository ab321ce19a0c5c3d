#include "agent/simulated_agent.h"

#include "core/clock.h"

namespace fabric_chaos::agent {

using nlohmann::json;

void FanoutRecorder::record(int agent, Action action, const std::string& kind) {
  const int64_t now = core::steadyNowNs();
  std::lock_guard lock(mu_);
  entries_.push_back({agent, action, kind, now});
}

std::vector<FanoutRecorder::Entry> FanoutRecorder::entries() const {
  std::lock_guard lock(mu_);
  return entries_;
}

json FanoutRecorder::toJson() const {
  json entries = json::array();
  for (const Entry& e : this->entries()) {
    entries.push_back({{"agent", e.agent},
                       {"action", e.action == Action::kApply ? "apply" : "revert"},
                       {"kind", e.kind},
                       {"steady_ns", e.steady_ns}});
  }
  return {{"entries", entries}};
}

SimulatedAgent::SimulatedAgent(int index, std::string hostname, std::string nic,
                               std::string address, Agent& real, FanoutRecorder& recorder)
    : index_(index),
      hostname_(std::move(hostname)),
      nic_(std::move(nic)),
      address_(std::move(address)),
      real_(real),
      recorder_(recorder) {}

core::Result<AgentInfo> SimulatedAgent::info() {
  AgentInfo info;
  info.version = "simulated";
  info.hostname = hostname_;
  info.kinds = capabilities();
  info.netdevs = {{nic_, "", "up", ""}};
  info.clock = {core::steadyNowNs(), core::wallNowNs()};
  return info;
}

std::vector<injectors::KindInfo> SimulatedAgent::capabilities() {
  // Every kind the real agent declares, available here: nothing is applied.
  std::vector<injectors::KindInfo> kinds = real_.capabilities();
  for (auto& kind : kinds) {
    kind.available = true;
    kind.reason.clear();
    kind.backend = "simulated";
  }
  return kinds;
}

core::Status SimulatedAgent::validateFault(const std::string& kind, const json& params) {
  return real_.validateFault(kind, params);
}

core::Result<json> SimulatedAgent::captureFault(const injectors::Fault&) { return json::object(); }

core::Status SimulatedAgent::applyFault(const injectors::Fault& fault) {
  recorder_.record(index_, FanoutRecorder::Action::kApply, fault.kind);
  return core::Status::ok();
}

core::Status SimulatedAgent::revertFault(const injectors::Fault& fault, const json&) {
  recorder_.record(index_, FanoutRecorder::Action::kRevert, fault.kind);
  return core::Status::ok();
}

core::Result<json> SimulatedAgent::observeFault(const injectors::Fault&) { return json::object(); }

core::Result<std::vector<sys::RdmaPortCounters>> SimulatedAgent::rdmaCounters() {
  return std::vector<sys::RdmaPortCounters>{};
}

core::Result<std::unique_ptr<WorkloadHandle>> SimulatedAgent::startWorkload(
    const std::vector<RankSpec>& ranks, int64_t origin_ns, WorkloadListener* listener) {
  return real_.startWorkload(ranks, origin_ns, listener);
}

std::vector<NetdevInfo> SimulatedHostProbe::netdevs() { return {{nic_, address_, "", "up", 1500}}; }

}  // namespace fabric_chaos::agent
