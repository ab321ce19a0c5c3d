#pragma once
// The fabric a scenario runs on: hosts with NICs, switches with ports, links between them, and
// labels (rack, leaf, rail...) that selectors can match. Labs describe themselves with it; a real
// fabric would load it from a file. Pure data; safe from any thread.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/model/target.h"
#include "scenarios/model.h"

namespace fabric_chaos::scenarios {

struct Nic {
  std::string name;     // interface name inside the host, e.g. "eth0"
  std::string address;  // IPv4 address without prefix, e.g. "10.200.0.1"
};

struct Host {
  std::string name;   // "h0"
  std::string netns;  // network namespace holding the host ("" = the initial namespace)
  // "local" = the agent embedded in serve; otherwise the agent's base URL, e.g.
  // "http://127.0.0.1:7101" (VM lab: qemu forwards it to the guest's management NIC).
  std::string agent = "local";
  std::vector<Nic> nics;
  std::map<std::string, std::string> labels;
  std::string agent_token_file;  // where the remote agent's shared token is kept ("" for local)
};

struct Switch {
  std::string name;   // "sw0"
  std::string netns;  // namespace holding the bridge and its ports
  std::string bridge;
  std::vector<std::string> ports;  // interface names of the ports, e.g. "p0"
  std::map<std::string, std::string> labels;
};

struct Link {
  std::string id;  // "h0-sw0"
  std::string host;
  std::string nic;
  std::string switch_name;
  std::string port;
};

struct Fabric {
  std::string name;  // "netns-lab"
  std::string kind;  // "netns", "vm", "real"
  std::vector<Host> hosts;
  std::vector<Switch> switches;
  std::vector<Link> links;

  const Host* findHost(const std::string& name) const;
  const Switch* findSwitch(const std::string& name) const;
  const Link* findLink(const std::string& id) const;
};

core::Result<Fabric> fabricFromJson(const nlohmann::json& doc);
nlohmann::json toJson(const Fabric& fabric);

// One concrete thing a fault acts on, and where it sits in the fabric.
struct ResolvedTarget {
  // The fabric host it belongs to (the host whose link it is, for an interface); its agent acts
  // on host-side targets (scenarios/engine/agent_directory.h agentForTarget).
  std::string host;
  injectors::Target target;
  std::string link_id;  // "" when the selector named a host without links
  std::string side;     // "host" or "switch"
};

// Resolves a selector to interface targets (selectors name interfaces only, so far). A host
// selector means the host's first link. Fails with
// kUnprocessable naming the selector ("target host h9 is not in fabric netns-lab") when nothing
// matches.
core::Result<std::vector<ResolvedTarget>> resolveTargets(const TargetSelector& selector,
                                                         const Fabric& fabric);

}  // namespace fabric_chaos::scenarios
