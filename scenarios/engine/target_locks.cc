#include "scenarios/engine/target_locks.h"

#include <algorithm>

#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {

core::Result<std::set<std::string>> runTargets(const Scenario& scenario, const Fabric& fabric) {
  std::set<std::string> targets;
  const std::string prefix = fabric.name + "/";
  if (scenario.workload.hosts.empty()) {
    for (const auto& host : fabric.hosts) targets.insert(prefix + "host/" + host.name);
  } else {
    // Unknown names are held too: the run fails on them before touching anything.
    for (const auto& name : scenario.workload.hosts) targets.insert(prefix + "host/" + name);
  }
  auto plan = planFaults(scenario, fabric);
  if (!plan.isOk()) return plan.status();
  for (const auto& action : *plan) {
    if (!action.target.host.empty()) targets.insert(prefix + "host/" + action.target.host);
    for (const std::string& host : action.target.other_hosts)
      targets.insert(prefix + "host/" + host);
    for (const std::string& key : injectors::lockKeys(action.target.target)) {
      targets.insert(prefix + key);
    }
  }
  return targets;
}

void TargetLocks::enqueue(int64_t run_id, std::set<std::string> targets) {
  queue_.push_back({run_id, std::move(targets)});
}

bool TargetLocks::dequeue(int64_t run_id) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Entry& e) { return e.run_id == run_id; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  waiting_.erase(run_id);
  return true;
}

void TargetLocks::release(int64_t run_id) { running_.erase(run_id); }

std::vector<int64_t> TargetLocks::admit() {
  std::vector<int64_t> started;
  waiting_.clear();
  std::map<std::string, int64_t> held;
  for (const auto& [id, targets] : running_) {
    for (const auto& t : targets) held[t] = id;
  }
  // Targets wanted by earlier queued runs that could not start: a later run that wants any of
  // them waits behind them, which is what keeps a waiting run from starving.
  std::map<std::string, std::vector<int64_t>> reserved;
  for (auto it = queue_.begin(); it != queue_.end();) {
    std::set<int64_t> holders;
    std::set<int64_t> ahead;
    std::set<std::string> contended;
    for (const auto& t : it->targets) {
      if (auto h = held.find(t); h != held.end()) {
        holders.insert(h->second);
        contended.insert(t);
      }
      if (auto r = reserved.find(t); r != reserved.end()) {
        ahead.insert(r->second.begin(), r->second.end());
        contended.insert(t);
      }
    }
    const bool blocked = !holders.empty() || !ahead.empty();
    if (!blocked && running_.size() < static_cast<size_t>(max_running_)) {
      for (const auto& t : it->targets) held[t] = it->run_id;
      running_[it->run_id] = std::move(it->targets);
      started.push_back(it->run_id);
      it = queue_.erase(it);
      continue;
    }
    WaitReason reason;
    reason.holders.assign(holders.begin(), holders.end());
    reason.ahead.assign(ahead.begin(), ahead.end());
    reason.targets.assign(contended.begin(), contended.end());
    reason.capacity = !blocked;
    waiting_[it->run_id] = std::move(reason);
    for (const auto& t : it->targets) reserved[t].push_back(it->run_id);
    ++it;
  }
  return started;
}

std::vector<int64_t> TargetLocks::queued() const {
  std::vector<int64_t> ids;
  for (const auto& e : queue_) ids.push_back(e.run_id);
  return ids;
}

std::vector<int64_t> TargetLocks::running() const {
  std::vector<int64_t> ids;
  for (const auto& [id, targets] : running_) ids.push_back(id);
  return ids;
}

bool TargetLocks::isQueued(int64_t run_id) const {
  return std::any_of(queue_.begin(), queue_.end(),
                     [&](const Entry& e) { return e.run_id == run_id; });
}

}  // namespace fabric_chaos::scenarios
