#pragma once
// A VM lab's fabric as the step-target tests see it: vm0..vm2, each with its own remote agent and
// one NIC eth0 cabled to sw0. Pure test data.

#include <string>

#include "scenarios/model.h"
#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {

inline Fabric vmFabric() {
  Fabric fabric;
  fabric.name = "vm-lab";
  fabric.kind = "vm";
  for (int i = 0; i < 3; ++i) {
    Host host;
    host.name = "vm" + std::to_string(i);
    host.agent = "http://127.0.0.1:710" + std::to_string(i);
    host.nics.push_back({"eth0", "10.201.0." + std::to_string(i + 1)});
    fabric.hosts.push_back(host);
    fabric.links.push_back(
        {host.name + "-sw0", host.name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  return fabric;
}

inline FaultStep step(const std::string& kind, TargetSelector target) {
  FaultStep s;
  s.kind = kind;
  s.target = std::move(target);
  return s;
}

}  // namespace fabric_chaos::scenarios
