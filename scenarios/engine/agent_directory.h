#pragma once
// Which agent acts on which part of a fabric. A fabric names an agent per host: "local" (the agent
// embedded in serve, which also owns the lab's switch namespaces) or a remote agent's URL with its
// token file. The engine asks the directory and never constructs agents itself. Thread-safe.

#include <string>

#include "agent/agent.h"
#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

struct AgentRef {
  std::string name = "local";  // "local" or a base URL such as "http://127.0.0.1:7100"
  std::string token_file;      // for remote agents

  bool isLocal() const { return name.empty() || name == "local"; }
};

class AgentDirectory {
 public:
  virtual ~AgentDirectory() = default;
  // The agent for `ref`; the pointer stays valid for the directory's lifetime.
  virtual core::Result<agent::Agent*> agentFor(const AgentRef& ref) = 0;
};

// Which agent acts on a target: a host's own NIC goes to that host's agent; switch ports live in
// the lab's switch namespaces on the controller's machine, so the local agent acts on them.
AgentRef agentForTarget(const Fabric& fabric, const ResolvedTarget& target);

// A directory with a single agent for every reference (tests, and hosts that all run locally).
class SingleAgentDirectory : public AgentDirectory {
 public:
  explicit SingleAgentDirectory(agent::Agent& agent) : agent_(agent) {}
  core::Result<agent::Agent*> agentFor(const AgentRef&) override { return &agent_; }

 private:
  agent::Agent& agent_;
};

}  // namespace fabric_chaos::scenarios
