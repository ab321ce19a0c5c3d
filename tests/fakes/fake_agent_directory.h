#pragma once
// An AgentDirectory over agents the test owns, by name ("local" or a URL); an unknown name is
// kNotFound, as the app's directory answers a token file it cannot read. Thread-safe once filled.

#include <map>
#include <string>

#include "scenarios/engine/agent_directory.h"

namespace fabric_chaos::fakes {

class MapAgentDirectory : public scenarios::AgentDirectory {
 public:
  void add(const std::string& name, agent::Agent& agent) { agents_[name] = &agent; }

  core::Result<agent::Agent*> agentFor(const scenarios::AgentRef& ref) override {
    auto it = agents_.find(ref.isLocal() ? "local" : ref.name);
    if (it == agents_.end()) {
      return core::Status(core::StatusCode::kNotFound, "no agent " + ref.name);
    }
    return it->second;
  }

 private:
  std::map<std::string, agent::Agent*> agents_;
};

}  // namespace fabric_chaos::fakes
