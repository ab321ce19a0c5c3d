#pragma once
// A real fabric from an operator's inventory file (docs/deployment.md, "Inventory"): hosts with
// their management address and NICs, each NIC's rail and the leaf port it is cabled to, and the
// leaves' uplinks to the spines. The result is an ordinary Fabric of kind "real", whose hosts are
// driven by `fabric-chaos agent` at https://<address>:<port> and whose labels (rail, leaf, spine,
// pod, rack, role) are what selectors match. Pure.

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

// Every problem is kInvalidArgument naming the field ("hosts[3].nics[1].leaf: no leaf \"l9\"").
core::Result<Fabric> fabricFromInventory(const nlohmann::json& inventory);

}  // namespace fabric_chaos::scenarios
