#pragma once
// What a fault acts on: a small tagged union of interface, RDMA port, subnet manager, process or
// workload rank, and traffic set. Target locks, allowlists, agent routing and the journal all key
// on it, through describe(), lockKeys() and the JSON codec here, so that no caller assumes "the
// target is an interface". Pure data and pure functions: no system calls; safe from any thread.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::injectors {

struct InterfaceTarget {
  std::string netns;  // "" = the acting agent's own namespace
  std::string ifname;
  bool operator==(const InterfaceTarget&) const = default;
};

// One port of an RDMA device, as libibverbs numbers it (ports start at 1).
struct RdmaPortTarget {
  std::string device;  // "rxe0", "mlx5_0"
  int port = 1;
  int gid_index = 0;
  bool operator==(const RdmaPortTarget&) const = default;
};

// One subnet manager instance, named by exactly one of its port GUID or its node name.
struct SubnetManagerTarget {
  std::string port_guid;  // "0x0002c903000a1b2c"
  std::string node;       // the SM's node description, e.g. "sm1"
  // The simulated subnet's namespace, where the SM runs attached to `node` (the IB lab); "" = an
  // OpenSM on the acting agent's own host.
  std::string netns = {};
  bool operator==(const SubnetManagerTarget&) const = default;
};

// One port of an InfiniBand node (a switch or a channel adapter), named by its node description
// and port number as ibnetdiscover prints them.
struct IbPortTarget {
  std::string node;  // "l0", "s1", "h3"
  int port = 1;      // 1-254
  // The simulated subnet's namespace, where ibsim models the port (the IB lab); "" = a real
  // subnet.
  std::string netns;
  bool operator==(const IbPortTarget&) const = default;
};

// The processes of the acting agent's host a fault acts on, named by at most one of: its pid,
// its workload rank, or its name (/proc/PID/comm, at most 15 characters: "ib_write_bw"; every
// process so named). None of them: every process the kind can act on there (the verbs kinds:
// every shim-loaded process the agent sees).
struct ProcessTarget {
  std::optional<int64_t> pid;
  std::optional<int> rank;
  std::string name = {};
  bool operator==(const ProcessTarget&) const = default;
};

// Linux's TASK_COMM_LEN less its terminating NUL: the longest name /proc/PID/comm shows.
inline constexpr size_t kMaxProcessNameLength = 15;

// Whether the target names no process in particular (every process).
bool isEveryProcess(const ProcessTarget& target);

// Where ECMP must send a source's flows: at the switch in `netns` (the source's leaf), flows
// arriving on `ingress` (the leaf's interface towards its hosts) must leave by `egress` (the
// uplink to the chosen spine). The hot_spot fault picks source ports that the switch hashes so.
struct EcmpSteer {
  std::string netns;
  std::string ingress;
  std::string egress;
  bool operator==(const EcmpSteer&) const = default;
};

// One way through the fabric a traffic set can be pinned to: the switch port it loads, and for
// each source (in the order of sources) the steer that gets its flows there.
struct TrafficPath {
  InterfaceTarget port;
  std::vector<EcmpSteer> steers;
  bool operator==(const TrafficPath&) const = default;
};

// Which generators of a traffic set one agent runs. kWhole: one agent reaches every endpoint
// (the namespace lab). When the endpoints sit behind different agents (a VM lab, real hosts),
// the set is cut into parts, one per agent: the sink's agent runs kSink, and each other agent
// runs kSources for the sources it reaches, sending to `sink_address`, which it cannot read.
enum class TrafficPart { kWhole, kSink, kSources };
std::string_view trafficPartName(TrafficPart part);  // "whole", "sink", "sources"

// The endpoints of multi-host traffic (incast, hot spots): each side is a list of interfaces.
// `paths`: the ways the traffic may be pinned to (hot_spot on a switch link; the injector uses
// one of them); empty: the fabric routes it as it likes. A kSink part has no sources; a kSources
// part names the sink it sends to and carries its address.
struct TrafficSetTarget {
  std::vector<InterfaceTarget> sources;
  std::vector<InterfaceTarget> sinks;
  std::vector<TrafficPath> paths = {};
  TrafficPart part = TrafficPart::kWhole;
  std::string sink_address = "";  // numeric; kSources only
  bool operator==(const TrafficSetTarget&) const = default;
};

// The endpoints the acting agent itself touches: every one of a whole set, the sink of a kSink
// part, the sources of a kSources part (its sink is another host's).
std::vector<InterfaceTarget> localEndpoints(const TrafficSetTarget& set);

using Target = std::variant<InterfaceTarget, RdmaPortTarget, SubnetManagerTarget, ProcessTarget,
                            TrafficSetTarget, IbPortTarget>;

enum class TargetType { kInterface, kRdmaPort, kSubnetManager, kProcess, kTrafficSet, kIbPort };

TargetType typeOf(const Target& target);
// The JSON "type" tag: "interface", "rdma_port", "subnet_manager", "process", "traffic_set",
// "ib_port".
std::string toString(TargetType type);
std::optional<TargetType> parseTargetType(std::string_view name);

// {"type": "interface", "netns": .., "ifname": ..}, {"type": "rdma_port", "device": ..,
// "port": .., "gid_index": ..}, {"type": "subnet_manager", "port_guid"|"node": .., "netns"?},
// {"type": "ib_port", "node", "port", "netns"?},
// {"type": "process", "pid"|"rank"|"name": ..} (none: every process), {"type": "traffic_set",
// "sources": [..], "sinks": [..], "paths"?: [{"port": {..}, "steers": [{"netns", "ingress",
// "egress"}]}]} (endpoints as
// {"netns", "ifname"}; paths only when there are some, each with one steer per source; "part"
// ("sink" | "sources") and "sink_address" only on a part).
nlohmann::json toJson(const Target& target);
// Strict: unknown fields are refused. A target without "type" is an interface, the only form the
// previous version wrote, so its journals stay revertible after an upgrade. Errors are
// kInvalidArgument naming the field under `path` ("target.ifname: required").
core::Result<Target> targetFromJson(const nlohmann::json& doc, const std::string& path = "target");

// For messages: "fcl-sw0/p1", "eth0", "RDMA port rxe0:1 (gid 0)", "subnet manager 0x..",
// "IB port l0[3]",
// "process 1234", "workload rank 3", "processes named ib_write_bw", "every shim-loaded
// process", "traffic from h0/eth0 to h1/eth0, h2/eth0" (with paths:
// "... via fcl-l0/up1" or "... via fcl-l0/up0 or fcl-l0/up1"; parts: "traffic sink eth0" and
// "traffic from eth0 to 10.201.0.2 (eth0)").
std::string describe(const Target& target);

// What the target occupies, for target locks and composition: "if/<netns>/<ifname>",
// "rdma/<device>/<port>", "sm/guid/<guid>" or "sm/node/<node>" (with "/<netns>" when set),
// "ib/<netns>/<node>/<port>", "process/pid/<pid>", "process/rank/<rank>" or
// "process/name/<name>", each followed by "process/*", which is every process target's and the
// only key of an every-process target (target.cc says why); a traffic set occupies each of its
// local endpoints (listed once).
std::vector<std::string> lockKeys(const Target& target);

// The interface, when the target is one; nullptr otherwise.
const InterfaceTarget* interfaceOf(const Target& target);

// For the kinds that act on one interface: the interface, or kInvalidArgument naming the kind and
// the target type ("link_flap acts on an interface, not on an rdma_port").
core::Result<InterfaceTarget> requireInterface(std::string_view kind, const Target& target);

}  // namespace fabric_chaos::injectors
