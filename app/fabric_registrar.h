#pragma once
// serve's side of agent registration (POST /v1/agents/register, docs/deployment.md): applies a
// registration to its real fabric and writes the fabric to <state-dir>/fabrics/<fabric>.json
// atomically, where the catalog (and so the engine, the guard and the API) picks it up.
// Registrations are serialized; thread-safe.

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "scenarios/registration.h"
#include "scenarios/services.h"

namespace fabric_chaos::app {

class FabricRegistrar {
 public:
  // agent_token_file: where serve keeps the fleet's agent token (serve --agent-token-file).
  FabricRegistrar(scenarios::FabricCatalog& catalog, std::string state_dir,
                  std::string agent_token_file)
      : catalog_(catalog),
        state_dir_(std::move(state_dir)),
        agent_token_file_(std::move(agent_token_file)) {}

  // {"fabric", "host", "created": whether the host is new, "hosts": the fabric's host count}.
  core::Result<nlohmann::json> record(const scenarios::AgentRegistration& registration);

 private:
  scenarios::FabricCatalog& catalog_;
  const std::string state_dir_;
  const std::string agent_token_file_;
  std::mutex mu_;
};

}  // namespace fabric_chaos::app
