#pragma once
// What an InfiniBand fabric adds to its description (JSON "ib", docs/ib.md): its subnet managers,
// where each runs and with which priority, and, on the simulated lab, how to reach the simulator.
// The sm_failover kind and the IB probe read it; a fabric without it has no IB faults. Pure data
// and its codec; safe from any thread.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::scenarios {

// One OpenSM instance of the subnet.
struct SubnetManagerInstance {
  std::string name;       // "sm0": what selectors and messages call it
  std::string host;       // the fabric host (a channel adapter) it binds to: "h0"
  int priority = 0;       // OpenSM's sm_priority, 0-15: the highest live one is master
  std::string port_guid;  // the port it binds to, "0x0000000000100001" ("" until discovered)
  std::string config;     // its OpenSM configuration file (-F); "" = OpenSM's default
  bool operator==(const SubnetManagerInstance&) const = default;
};

// The simulated lab's subnet: ibsim in `netns`, its command console, and the preload through
// which libibumad programs (OpenSM, infiniband-diags, the probe) attach to a simulated node.
struct IbSimulator {
  std::string netns;    // "fcib-subnet"
  std::string console;  // ibsim's console FIFO
  std::string preload;  // libumad2sim.so
  std::string dir;      // the lab's working directory (configurations, logs, caches)
  bool operator==(const IbSimulator&) const = default;
};

struct IbFabric {
  std::vector<SubnetManagerInstance> subnet_managers;
  std::optional<IbSimulator> simulator;  // nullopt on a real subnet
  const SubnetManagerInstance* findSubnetManager(const std::string& name) const;
  bool operator==(const IbFabric&) const = default;
};

// {"subnet_managers": [{"name", "host", "priority", "port_guid"?, "config"?}],
//  "simulator"?: {"netns", "console", "preload", "dir"}}. Strict: unknown fields, duplicate SM
// names or hosts, a priority outside 0-15 are kInvalidArgument naming the field under "ib".
core::Result<IbFabric> ibFabricFromJson(const nlohmann::json& doc);
nlohmann::json toJson(const IbFabric& ib);

}  // namespace fabric_chaos::scenarios
