#pragma once
// Agents that register themselves (`agent --register URL`, docs/deployment.md): what an agent
// says about itself, and the real fabric that results. A registration names its fabric, its host
// (the agent id), the URL the controller reaches it at, its labels (rail, leaf, rack...) and its
// fabric NICs. Into a fabric from an inventory it updates the host's agent URL and labels and
// keeps the inventory's cabling; a host the fabric does not know is added with one link per NIC
// to the switch "unmapped", so host-side selectors reach it. Lab fabrics are never changed. Pure.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

struct AgentRegistration {
  std::string fabric;  // default "registered"
  std::string host;
  std::string agent_url;  // http:// or https://
  std::map<std::string, std::string> labels;
  std::vector<Nic> nics;
};

core::Result<AgentRegistration> registrationFromJson(const nlohmann::json& doc);
nlohmann::json toJson(const AgentRegistration& registration);

// The fabric with the registration applied; existing = nullopt creates it. agent_token_file is
// where the controller keeps the fleet's agent token. kFailedPrecondition for a fabric that is not
// "real".
core::Result<Fabric> applyRegistration(std::optional<Fabric> existing,
                                       const AgentRegistration& registration,
                                       const std::string& agent_token_file);

// The switch that registered hosts' links end at when no inventory says where they are cabled.
inline constexpr const char* kUnmappedSwitch = "unmapped";

}  // namespace fabric_chaos::scenarios
