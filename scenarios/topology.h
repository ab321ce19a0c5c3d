#pragma once
// The fabric a scenario runs on: hosts with NICs, switches with ports, links between them, and
// labels (rack, leaf, rail...) that selectors can match. Labs describe themselves with it; a real
// fabric would load it from a file. Pure data; safe from any thread.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/model/pfc_watchdog_config.h"
#include "injectors/model/target.h"
#include "scenarios/ib_fabric.h"
#include "scenarios/model.h"
#include "scenarios/slurm_fabric.h"

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

// How a lab switch port sends, when the lab models it (docs/lab.md, "Port model"): a line rate,
// and per traffic class a finite drop-tail buffer. Packets whose DSCP is in lossless_dscp go to
// the lossless/RDMA class, the rest to best effort; each class is guaranteed half the rate and
// may borrow the whole of it when the other is idle, as ETS shares a port.
// ECN marking on a modelled port (lab/ecn_model.h, docs/lab.md "ECN marking"): ECT packets are
// marked CE with probability 0 below kmin_bytes of backlog in their class, rising linearly to pmax
// at kmax_bytes, and 1 above it.
struct EcnMarking {
  int64_t kmin_bytes = 0;
  int64_t kmax_bytes = 0;
  double pmax = 0;
  bool operator==(const EcnMarking&) const = default;
};

// The lab switch's PFC watchdog (injectors/model/pfc_watchdog_config.h).
using injectors::PfcWatchdogAction;
using injectors::PfcWatchdogConfig;

// The switch honours 802.1Qbb PFC (docs/lab.md, "PFC"): each port pauses its egress on the pause
// frames it receives, through the switch's PFC agent. The lossless class has `priority`. JSON
// "watchdog": nullopt, none.
struct PfcHonouring {
  int priority = 3;
  std::optional<PfcWatchdogConfig> watchdog = std::nullopt;
  bool operator==(const PfcHonouring&) const = default;
};

struct EgressModel {
  int64_t rate_bps = 0;
  int64_t buffer_bytes = 0;  // per class
  std::vector<int> lossless_dscp;
  // JSON "ecn"; nullopt: no marking, drop-tail only. Defaulted, so {rate, buffer, dscp} still
  // initialises a model without -Wmissing-field-initializers.
  std::optional<EcnMarking> ecn = std::nullopt;
  // JSON "pfc"; nullopt: pause frames pause nothing (a Linux bridge drops them).
  std::optional<PfcHonouring> pfc = std::nullopt;
  bool operator==(const EgressModel&) const = default;
};

struct Switch {
  std::string name;   // "sw0"
  std::string netns;  // namespace holding the bridge and its ports
  std::string bridge;
  std::vector<std::string> ports;  // interface names of the ports, e.g. "p0"
  std::map<std::string, std::string> labels;
  // Every port's egress, when modelled (JSON "egress"); nullopt: as fast as the CPU goes.
  std::optional<EgressModel> egress;
};

// A host's NIC cabled to a switch port.
struct Link {
  std::string id;  // "h0-sw0"
  std::string host;
  std::string nic;
  std::string switch_name;
  std::string port;
  // The link's own labels (a rail-optimised host's NICs sit on different rails and leaves). A
  // label selector matches them over its host's labels: the link's value wins.
  std::map<std::string, std::string> labels;
};

// Two switch ports cabled together: on a leaf-spine fabric, a leaf's uplink to a spine. The first
// end is the lower tier (LinkSide::kSwitch), the second the upper one (LinkSide::kPeer).
struct SwitchLink {
  std::string id;  // "l0-s1"
  std::string switch_name;
  std::string port;
  std::string peer_switch;
  std::string peer_port;
  std::map<std::string, std::string> labels;  // e.g. tier=uplink, leaf=l0, spine=s1
};

struct Fabric {
  std::string name;  // "netns-lab"
  std::string kind;  // "netns", "vm", "real"
  std::vector<Host> hosts;
  std::vector<Switch> switches;
  std::vector<Link> links;
  std::vector<SwitchLink> switch_links;  // JSON "switch_links"; empty on a single-switch fabric
  // JSON "ib": an InfiniBand subnet's managers (scenarios/ib_fabric.h); nullopt elsewhere. Its
  // hosts are the subnet's channel adapters, its switches the IB switches.
  std::optional<IbFabric> ib;
  // JSON "slurm": the Slurm cluster whose nodes the hosts are (scenarios/slurm_fabric.h), for
  // workloads launched through srun; nullopt elsewhere.
  std::optional<SlurmCluster> slurm;
  // JSON "segmentation_offloads": true on a namespace lab made with `lab up --offloads on`: its
  // NICs and switch ports hand each hook GSO super-packets of up to 64 KB, so a loss percentage
  // counts those, not wire packets. Absent (false) elsewhere.
  bool segmentation_offloads = false;

  const Host* findHost(const std::string& name) const;
  const Switch* findSwitch(const std::string& name) const;
  const Link* findLink(const std::string& id) const;
  const SwitchLink* findSwitchLink(const std::string& id) const;
};

core::Result<Fabric> fabricFromJson(const nlohmann::json& doc);
nlohmann::json toJson(const Fabric& fabric);

// One concrete thing a fault acts on, and where it sits in the fabric.
struct ResolvedTarget {
  // The fabric host it belongs to (the host whose link it is, for an interface; "" on a link
  // between switches); its agent acts on host-side targets (scenarios/engine/agent_directory.h
  // agentForTarget). Switch ports are the embedded agent's.
  std::string host;
  injectors::Target target;
  std::string link_id;  // "" when the selector named a host without links
  LinkSide side = LinkSide::kSwitch;
  // The other fabric hosts the target occupies: a traffic set's sources when `host` is its sink, a
  // sources part's further sources (scenarios/step_targets.h trafficHostsOf).
  std::vector<std::string> other_hosts = {};
};

// Resolves a selector to interface targets (selectors name interfaces only, so far):
// - host: the host's first link;
// - link: the host link or switch link with that id;
// - labels: every host link whose labels (over its host's) contain them, then every switch link
//   whose labels do, in fabric order.
// The side must exist on each link selected: kHost on a host link, kPeer on a switch link,
// kSwitch on both. Fails with kUnprocessable naming the selector ("target host h9 is not in
// fabric netns-lab") when nothing matches or a side does not apply.
core::Result<std::vector<ResolvedTarget>> resolveTargets(const TargetSelector& selector,
                                                         const Fabric& fabric);

}  // namespace fabric_chaos::scenarios
