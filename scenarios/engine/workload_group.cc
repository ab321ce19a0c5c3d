#include "scenarios/engine/workload_group.h"

#include <map>
#include <string>
#include <thread>

namespace fabric_chaos::scenarios {
namespace {

// Several agents' workloads stopped together.
class CompositeWorkload : public agent::WorkloadHandle {
 public:
  void add(std::unique_ptr<agent::WorkloadHandle> part) { parts_.push_back(std::move(part)); }
  // In parallel: ranks on one agent must not outlive their peers on another by a grace period,
  // or they would log a spurious peer loss.
  void stop(int grace_ms) override {
    std::vector<std::thread> stoppers;
    for (auto& part : parts_) stoppers.emplace_back([&part, grace_ms] { part->stop(grace_ms); });
    for (auto& t : stoppers) t.join();
  }
  int runningRanks() const override {
    int running = 0;
    for (const auto& part : parts_) running += part->runningRanks();
    return running;
  }

 private:
  std::vector<std::unique_ptr<agent::WorkloadHandle>> parts_;
};

}  // namespace

core::Result<std::unique_ptr<agent::WorkloadHandle>> startWorkloadGroup(
    AgentDirectory& agents, const std::vector<PlannedRank>& ranks, int64_t origin_ns,
    agent::WorkloadListener* listener, int stop_grace_ms) {
  std::map<std::string, std::vector<agent::RankSpec>> by_agent;
  std::map<std::string, AgentRef> refs;
  for (const PlannedRank& rank : ranks) {
    by_agent[rank.agent.name].push_back(rank.spec);
    refs[rank.agent.name] = rank.agent;
  }
  auto composite = std::make_unique<CompositeWorkload>();
  for (const auto& [name, group] : by_agent) {
    auto agent = agents.agentFor(refs[name]);
    if (!agent.isOk()) {
      composite->stop(stop_grace_ms);
      return agent.status();
    }
    auto handle = (*agent)->startWorkload(group, origin_ns, listener);
    if (!handle.isOk()) {
      composite->stop(stop_grace_ms);
      return handle.status();
    }
    composite->add(std::move(handle.value()));
  }
  return std::unique_ptr<agent::WorkloadHandle>(std::move(composite));
}

}  // namespace fabric_chaos::scenarios
