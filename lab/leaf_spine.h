#pragma once
// The namespace lab as a routed leaf-spine fabric, the way RoCEv2 AI fabrics are built: every
// leaf and every spine is a namespace, each leaf is cabled to every spine by a /31 point-to-point
// link, and a leaf reaches the other leaves through all spines at once (one multipath default
// route, hashed on the L4 five-tuple: fib_multipath_hash_policy=1). Hosts sit in a leaf's L2
// domain (bridge br0); each NIC holds its rail's whole /16 and the leaf answers ARP for the rest
// (proxy ARP), so no host route exists for a NIC flap to delete. With rails, each host has one NIC
// per rail, NIC r cabled to the rail-r leaf of its group, like 8-NIC GPU servers on a
// rail-optimised fabric. Each uplink holds its /31 itself (leaf up<j>, spine dn<i>; no bridge):
// BGP takes a path out when its link goes down (BIRD's check link, BFD for a silent peer) and
// puts it back with the link; until BGP acts, the kernel skips a next hop whose port is down or
// lost its carrier (ignore_routes_with_linkdown). Each leaf's host ports get a flow-hash reset on
// ingress (injectors/sys/flow_hash_reset.h) so that the five-tuple, not the sender's socket, picks
// the spine. Pure: the fabric description and the commands that build it, so that both are
// table-tested and NetnsLab only runs them.
//
// Names and addresses (g = group, r = rail, leaf index i = g * rails + r, spine j, host n of its
// group, host index k = g * hosts_per_leaf + n):
//   namespaces  <prefix>-l<i>, <prefix>-s<j>, <prefix>-h<k>
//   leaf ports  p<n> (to host n of its group, bridged in br0), up<j> (to spine j)
//   spine ports dn<i> (to leaf i)
//   host NIC    eth<r> = 10.(210+r).g.(n+1)/16; leaf br0 = 10.(210+r).g.254/24
//   uplink      leaf up<j> = 10.250.i.(2j)/31, spine dn<i> = 10.250.i.(2j+1)/31
//   links       h<k>-l<i> (labels tier=access, rail, leaf), l<i>-s<j> (tier=uplink, leaf, spine,
//               rail, pod)

#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct LeafSpineShape {
  int leaves = 2;
  int spines = 2;
  int hosts_per_leaf = 2;
  int rails = 1;  // leaves come in groups of `rails`; a host has one NIC per rail
};

// Limits that keep names within IFNAMSIZ, addresses within their octets and the lab within what
// one machine builds in seconds. kInvalidArgument naming the flag (--leaves, --spines,
// --hosts-per-leaf, --rails).
core::Status checkLeafSpineShape(const LeafSpineShape& shape);

// A sysctl to set inside a namespace (key as in `sysctl`, e.g. "net.ipv4.ip_forward").
struct NetnsSysctl {
  std::string netns;
  std::string key;
  std::string value;
  bool operator==(const NetnsSysctl&) const = default;
};

// Who cables the hosts. The namespace lab's hosts are namespaces the plan creates and cables by
// veth; the VM lab's are guests whose taps the VM lab moves into the leaves as their host ports
// (leafHostPort), so the plan builds the switches alone.
enum class HostCabling { kVethNamespaces, kByCaller };

// What LeafSpineSwitches runs, in this order: `ip netns add` of every namespace, the sysctls
// (before any interface exists, so that conf.default reaches every one of them), then the `ip`
// commands (arguments after "ip") that cable, address and route the fabric.
struct LeafSpineBuild {
  std::vector<std::string> namespaces;
  std::vector<NetnsSysctl> sysctls;
  std::vector<std::vector<std::string>> ip_commands;
};

// A switch port inside its namespace.
struct NetnsPort {
  std::string netns;
  std::string ifname;
  bool operator==(const NetnsPort&) const = default;
};

// Every leaf's ports to its hosts (p<n> of each leaf, on every rail), leaf by leaf: where
// NetnsLab attaches the flow-hash reset, since packets enter the fabric there.
std::vector<NetnsPort> leafHostPorts(const std::string& prefix, const LeafSpineShape& shape);

// Host `host`'s (0..) port on its rail-`rail` leaf, and the address its NIC there holds (without
// the /16): where the VM lab cables a guest and what the guest configures.
NetnsPort leafHostPort(const std::string& prefix, const LeafSpineShape& shape, int host, int rail);
std::string leafSpineHostAddress(const LeafSpineShape& shape, int host, int rail);

// The addressing plan above, shared with the routing configuration (lab/leaf_spine_routing.h).
std::string leafSwitchName(int leaf);                               // "l<i>"
std::string spineSwitchName(int spine);                             // "s<j>"
std::string leafHostSubnet(const LeafSpineShape& shape, int leaf);  // "10.(210+r).g.0/24"
std::string uplinkAddress(int leaf, int spine, bool spine_end);     // without the /31

// Both need a shape that passed checkLeafSpineShape.
scenarios::Fabric describeLeafSpine(const std::string& name, const std::string& prefix,
                                    const LeafSpineShape& shape);
LeafSpineBuild leafSpineBuild(const std::string& prefix, const LeafSpineShape& shape,
                              HostCabling cabling = HostCabling::kVethNamespaces);

}  // namespace fabric_chaos::lab
