#include "scenarios/engine/fabric_agents.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <thread>
#include <variant>

#include "core/clock.h"
#include "scenarios/composition.h"

namespace fabric_chaos::scenarios {
namespace {

// Why an agent that reports `kinds` cannot run `kind`, as ": <reason>" (or "" when it gives
// none); nullopt when it can.
std::optional<std::string> whyCannotRun(const std::vector<injectors::KindInfo>& kinds,
                                        const std::string& kind) {
  auto it = std::find_if(kinds.begin(), kinds.end(),
                         [&](const injectors::KindInfo& k) { return k.kind == kind; });
  if (it == kinds.end()) return std::string(": its agent does not know this kind");
  if (!it->available) return it->reason.empty() ? std::string() : ": " + it->reason;
  return std::nullopt;
}

using core::Status;
using core::StatusCode;

// Whether a fault asks for RDMA on the hosts its agent acts for: a traffic kind with transport
// verbs (the generator's RC QPs need a device that carries the host's address).
bool needsRdma(const PlannedAction& action) {
  return std::holds_alternative<injectors::TrafficSetTarget>(action.target.target) &&
         action.params.is_object() && action.params.value("transport", "tcp") == "verbs";
}

bool hasActiveRdmaPort(const agent::AgentInfo& info) {
  for (const sys::RdmaDevice& device : info.rdma_devices) {
    for (const sys::RdmaPortState& port : device.ports) {
      if (port.state == "ACTIVE") return true;
    }
  }
  return false;
}

// Why an RDMA device kind cannot act on its port there: the agent lists no such device or port.
std::optional<std::string> missingRdmaPort(const PlannedAction& action,
                                           const agent::AgentInfo& info) {
  const auto* port = std::get_if<injectors::RdmaPortTarget>(&action.target.target);
  if (port == nullptr) return std::nullopt;
  std::string names;
  for (const sys::RdmaDevice& device : info.rdma_devices) {
    names += (names.empty() ? "" : ", ") + device.name;
    if (device.name != port->device) continue;
    for (const sys::RdmaPortState& state : device.ports) {
      if (state.port == port->port) return std::nullopt;
    }
    return "device " + port->device + " has no port " + std::to_string(port->port);
  }
  return "it has no RDMA device " + port->device +
         (names.empty() ? " (it has none)" : " (it has " + names + ")");
}

constexpr size_t kMaxCachedVerdicts = 1024;

int64_t realtimeNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Runs fn(0..n-1) on at most max_parallel threads; returns when every call has.
void forEachBounded(size_t n, int max_parallel, const std::function<void(size_t)>& fn) {
  const size_t threads = std::min(n, static_cast<size_t>(std::max(1, max_parallel)));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& worker : workers) worker.join();
}

std::string agentName(const AgentRef& ref) { return ref.isLocal() ? "local" : ref.name; }

}  // namespace

std::string describeHostAgent(const std::vector<std::string>& hosts, const AgentRef& ref) {
  std::string names;
  for (const auto& host : hosts) names += (names.empty() ? "" : ", ") + host;
  if (names.empty()) return "the controller's embedded agent";
  return std::string(hosts.size() == 1 ? "host " : "hosts ") + names + " (agent " + agentName(ref) +
         ")";
}

FabricAgents::FabricAgents(AgentDirectory& agents, FabricAgentsOptions options)
    : agents_(agents), options_(std::move(options)) {
  if (!options_.steady_now_ns) options_.steady_now_ns = core::steadyNowNs;
  if (!options_.realtime_now_ns) options_.realtime_now_ns = realtimeNowNs;
}

std::vector<FabricAgents::Group> FabricAgents::groupByAgent(const Fabric& fabric) {
  std::vector<Group> groups;
  for (const Host& host : fabric.hosts) {
    AgentRef ref{host.agent, host.agent_token_file};
    auto same = [&](const Group& g) { return agentName(g.ref) == agentName(ref); };
    if (auto it = std::find_if(groups.begin(), groups.end(), same); it != groups.end()) {
      it->hosts.push_back(host.name);
    } else {
      groups.push_back({ref, {host.name}});
    }
  }
  return groups;
}

HostAgentReport FabricAgents::ask(const AgentRef& ref) {
  HostAgentReport report;
  report.agent = ref;
  auto agent = agents_.agentFor(ref);
  if (!agent.isOk()) {
    report.status = agent.status();
    return report;
  }
  const int64_t sent = options_.realtime_now_ns();
  auto info = (*agent)->info();
  const int64_t received = options_.realtime_now_ns();
  if (!info.isOk()) {
    report.status = info.status();
    return report;
  }
  report.info = std::move(*info);
  const int64_t midpoint = sent + (received - sent) / 2;
  report.clock_offset_ms = static_cast<double>(midpoint - report.info.clock.realtime_ns) / 1e6;
  report.round_trip_ms = static_cast<double>(received - sent) / 1e6;
  return report;
}

std::vector<HostAgentReport> FabricAgents::describe(const Fabric& fabric) {
  const std::vector<Group> groups = groupByAgent(fabric);
  std::vector<HostAgentReport> answers(groups.size());
  forEachBounded(groups.size(), options_.max_parallel,
                 [&](size_t i) { answers[i] = ask(groups[i].ref); });
  std::vector<HostAgentReport> reports;
  for (const Host& host : fabric.hosts) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const auto& hosts = groups[i].hosts;
      if (std::find(hosts.begin(), hosts.end(), host.name) == hosts.end()) continue;
      HostAgentReport report = answers[i];
      report.host = host.name;
      reports.push_back(std::move(report));
      break;
    }
  }
  return reports;
}

core::Result<agent::AgentInfo> FabricAgents::cachedInfo(const Group& group) {
  const std::string key = agentName(group.ref);
  {
    std::lock_guard lock(mu_);
    auto it = infos_.find(key);
    if (it != infos_.end() &&
        options_.steady_now_ns() - it->second.fetched_ns < options_.cache_ttl_ms * 1000000) {
      return it->second.info;
    }
  }
  // Asked without the lock: a slow agent must not hold up validations for other fabrics.
  HostAgentReport report = ask(group.ref);
  if (!report.status.isOk()) return report.status;
  std::lock_guard lock(mu_);
  infos_[key] = {options_.steady_now_ns(), report.info};
  return report.info;
}

core::Result<KindCatalog> FabricAgents::kindCatalog(const Fabric& fabric) {
  std::vector<Group> groups = groupByAgent(fabric);
  if (groups.empty()) groups.push_back({AgentRef{}, {}});
  std::vector<core::Result<agent::AgentInfo>> infos(groups.size(),
                                                    Status(StatusCode::kInternal, "not asked"));
  forEachBounded(groups.size(), options_.max_parallel,
                 [&](size_t i) { infos[i] = cachedInfo(groups[i]); });

  std::string failures;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (infos[i].isOk()) continue;
    failures += (failures.empty() ? "" : "; ") + describeHostAgent(groups[i].hosts, groups[i].ref) +
                ": " + infos[i].status().message();
  }
  if (!failures.empty()) {
    return Status(StatusCode::kUnavailable,
                  "cannot validate against fabric " + fabric.name +
                      ": its agents must say which fault kinds they can run, and " + failures);
  }

  std::set<std::string> known;
  for (const auto& info : infos) {
    for (const auto& kind : info->kinds) known.insert(kind.kind);
  }
  KindCatalog catalog;
  // For each kind, the first group (in host order) that can run it validates its parameters.
  std::map<std::string, size_t> validator;
  for (const std::string& kind : known) {
    std::string why;
    for (size_t i = 0; i < groups.size() && why.empty(); ++i) {
      if (auto cannot = whyCannotRun(infos[i]->kinds, kind)) {
        why = "on " + describeHostAgent(groups[i].hosts, groups[i].ref) + *cannot;
      } else if (validator.count(kind) == 0) {
        validator[kind] = i;
      }
    }
    if (why.empty()) {
      catalog.kinds.push_back(kind);
    } else {
      catalog.unavailable[kind] = why;
    }
  }
  catalog.check_action = [this, fabric](const PlannedAction& action) -> Status {
    return checkActingAgent(fabric, action);
  };
  catalog.validate_params = [this, groups, validator](const std::string& kind,
                                                      const nlohmann::json& params) {
    auto it = validator.find(kind);
    if (it == validator.end()) {
      return Status(StatusCode::kInvalidArgument, "no agent of this fabric can run " + kind);
    }
    return validateWith(groups[it->second], kind, params);
  };
  return catalog;
}

Status FabricAgents::checkActingAgent(const Fabric& fabric, const PlannedAction& action) {
  Group group{agentForTarget(fabric, action.target), {}};
  if (action.target.side == LinkSide::kHost) group.hosts.push_back(action.target.host);
  auto info = cachedInfo(group);
  const std::string where = describeTarget(action.target) + ", where " +
                            (group.hosts.empty() ? std::string("the controller's embedded agent")
                                                 : describeHostAgent(group.hosts, group.ref)) +
                            " acts";
  if (!info.isOk()) {
    return Status(StatusCode::kUnavailable, "cannot check fault kind " + action.kind + " on " +
                                                where + ": " + info.status().message());
  }
  if (auto cannot = whyCannotRun(info->kinds, action.kind)) {
    return Status(StatusCode::kUnprocessable,
                  "fault kind " + action.kind + " is not available on " + where + *cannot);
  }
  if (needsRdma(action) && !hasActiveRdmaPort(*info)) {
    std::vector<std::string> hosts{action.target.host};
    hosts.insert(hosts.end(), action.target.other_hosts.begin(), action.target.other_hosts.end());
    return Status(StatusCode::kUnprocessable,
                  "params.transport: verbs traffic needs an RDMA device with an active port, and " +
                      describeHostAgent(hosts, group.ref) +
                      (info->rdma_devices.empty() ? " has none" : " has no active port"));
  }
  if (auto missing = missingRdmaPort(action, *info)) {
    return Status(StatusCode::kUnprocessable,
                  "target: " + action.kind + " on " +
                      describeHostAgent({action.target.host}, group.ref) + ": " + *missing);
  }
  return Status::ok();
}

Status FabricAgents::validateWith(const Group& group, const std::string& kind,
                                  const nlohmann::json& params) {
  const std::string key = agentName(group.ref) + "\n" + kind + "\n" + params.dump();
  {
    std::lock_guard lock(mu_);
    auto it = verdicts_.find(key);
    if (it != verdicts_.end() &&
        options_.steady_now_ns() - it->second.fetched_ns < options_.cache_ttl_ms * 1000000) {
      return it->second.status;
    }
  }
  auto agent = agents_.agentFor(group.ref);
  Status verdict = agent.isOk() ? (*agent)->validateFault(kind, params) : agent.status();
  if (verdict.code() == StatusCode::kUnavailable || !agent.isOk()) {
    // Not the parameters' fault: say which host could not be asked, and ask again next time.
    return Status(StatusCode::kUnavailable, "cannot check the parameters on " +
                                                describeHostAgent(group.hosts, group.ref) + ": " +
                                                verdict.message());
  }
  std::lock_guard lock(mu_);
  if (verdicts_.size() >= kMaxCachedVerdicts) verdicts_.clear();
  verdicts_[key] = {options_.steady_now_ns(), verdict};
  return verdict;
}

void FabricAgents::clearCache() {
  std::lock_guard lock(mu_);
  infos_.clear();
  verdicts_.clear();
}

}  // namespace fabric_chaos::scenarios
