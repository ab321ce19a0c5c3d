#pragma once
// What the agents of a fabric's hosts say about themselves: shown by GET /v1/fabrics/{name} and
// used to validate a scenario for that fabric, so that a VM-lab scenario is checked against the
// guests' kernels rather than the controller's. Hosts sharing an agent (every namespace-lab host
// is "local") ask it once. Agents are asked concurrently, at most max_parallel at a time, each call
// bounded by the agent's own info timeout (a remote agent's is 2 s), so one dead host costs one
// timeout, not one per host. kindCatalog() keeps each agent's answer for cache_ttl_ms so that a
// burst of validations does not ask every agent every time; describe() always asks afresh.
// Thread-safe; the catalogs it returns may be used from any thread while this object lives.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/status.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/topology.h"
#include "scenarios/validate.h"

namespace fabric_chaos::scenarios {

struct HostAgentReport {
  std::string host;
  AgentRef agent;
  core::Status status;    // ok: the agent answered (reachable); else why not
  agent::AgentInfo info;  // when status is ok
  // Controller wall clock at the midpoint of the call minus the agent's realtime clock sample:
  // positive when the agent's clock is behind. Uncertain by up to half of round_trip_ms.
  double clock_offset_ms = 0;
  double round_trip_ms = 0;
};

struct FabricAgentsOptions {
  int64_t cache_ttl_ms = 10000;
  int max_parallel = 16;
  // Defaults: CLOCK_MONOTONIC and CLOCK_REALTIME; tests drive them by hand.
  std::function<int64_t()> steady_now_ns;
  std::function<int64_t()> realtime_now_ns;
};

class FabricAgents {
 public:
  explicit FabricAgents(AgentDirectory& agents, FabricAgentsOptions options = {});

  // One report per host of the fabric, in the fabric's order. Never fails as a whole: an agent
  // that cannot be asked is a report with its error.
  std::vector<HostAgentReport> describe(const Fabric& fabric);

  // Kinds available on every agent of the fabric's hosts; parameters checked by the first of
  // those agents (in host order) that can run the kind. A kind some agent knows but another
  // cannot run is listed in `unavailable` naming that host. An agent that cannot be asked makes
  // the catalog kUnavailable naming the host and agent (the caller answers 503). A fabric without
  // hosts (not registered yet) is checked against the controller's embedded agent ("local").
  // Its check_action asks the agent that will act on each planned fault's target (a lab switch
  // port: the controller's embedded agent, which no host names) whether it can run the kind
  // there: a VM-lab netem on a switch port is refused at submission when the controller's kernel
  // has no sch_netem, not when the run starts.
  core::Result<KindCatalog> kindCatalog(const Fabric& fabric);

  // Forgets every cached answer (tests; an operator who just fixed an agent).
  void clearCache();

 private:
  struct Group {
    AgentRef ref;
    std::vector<std::string> hosts;  // the fabric's hosts this agent drives
  };
  struct CachedInfo {
    int64_t fetched_ns = 0;
    agent::AgentInfo info;
  };

  static std::vector<Group> groupByAgent(const Fabric& fabric);
  // Asks the agent behind ref, timing the call for the clock offset.
  HostAgentReport ask(const AgentRef& ref);
  core::Result<agent::AgentInfo> cachedInfo(const Group& group);
  core::Status validateWith(const Group& group, const std::string& kind,
                            const nlohmann::json& params);
  // KindCatalog::check_action: the agent that acts on the action's target can run its kind.
  core::Status checkActingAgent(const Fabric& fabric, const PlannedAction& action);

  AgentDirectory& agents_;
  FabricAgentsOptions options_;

  std::mutex mu_;
  std::map<std::string, CachedInfo> infos_;  // by agent name
  struct CachedVerdict {
    int64_t fetched_ns = 0;
    core::Status status;
  };
  std::map<std::string, CachedVerdict> verdicts_;  // by agent, kind and params
};

// "host h1 (agent http://10.0.0.2:7100)": how errors and messages name where something is.
std::string describeHostAgent(const std::vector<std::string>& hosts, const AgentRef& ref);

}  // namespace fabric_chaos::scenarios
