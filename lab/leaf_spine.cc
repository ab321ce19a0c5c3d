#include "lab/leaf_spine.h"

#include "lab/lab_common.h"

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;

// Ports are named p<n>, up<j>, dn<i>, eth<r>: two digits at most, far inside IFNAMSIZ. Uplink
// addresses need 2 * spines <= 256 and leaves <= 256, host addresses hosts_per_leaf <= 253;
// these limits are what one machine builds in seconds and a test reads at a glance.
constexpr int kMaxLeaves = 32;
constexpr int kMaxSpines = 16;
constexpr int kMaxHostsPerLeaf = 32;
constexpr int kMaxRails = 8;
constexpr int kMaxHosts = 64;

struct Place {
  int group;
  int rail;
};

Place placeOfLeaf(const LeafSpineShape& shape, int leaf) {
  return {leaf / shape.rails, leaf % shape.rails};
}

int groups(const LeafSpineShape& shape) { return shape.leaves / shape.rails; }

std::string hostName(int host) { return "h" + std::to_string(host); }
std::string ns(const std::string& prefix, const std::string& name) { return prefix + "-" + name; }

std::string hostSubnetPrefix(Place place) {
  return "10." + std::to_string(210 + place.rail) + "." + std::to_string(place.group) + ".";
}
std::string hostAddress(Place place, int n) {
  return hostSubnetPrefix(place) + std::to_string(n + 1);
}
std::string gatewayAddress(Place place) { return hostSubnetPrefix(place) + "254"; }

Status outOfRange(const std::string& flag, int value, int min, int max) {
  return Status(StatusCode::kInvalidArgument, flag + " must be between " + std::to_string(min) +
                                                  " and " + std::to_string(max) + ", got " +
                                                  std::to_string(value));
}

}  // namespace

std::string leafSwitchName(int leaf) { return "l" + std::to_string(leaf); }
std::string spineSwitchName(int spine) { return "s" + std::to_string(spine); }

std::string leafHostSubnet(const LeafSpineShape& shape, int leaf) {
  return hostSubnetPrefix(placeOfLeaf(shape, leaf)) + "0/24";
}

std::string uplinkAddress(int leaf, int spine, bool spine_end) {
  return "10.250." + std::to_string(leaf) + "." + std::to_string(2 * spine + (spine_end ? 1 : 0));
}

Status checkLeafSpineShape(const LeafSpineShape& shape) {
  if (shape.rails < 1 || shape.rails > kMaxRails) {
    return outOfRange("--rails", shape.rails, 1, kMaxRails);
  }
  // Two leaves at least: with one, no traffic would ever cross a spine.
  if (shape.leaves < 2 || shape.leaves > kMaxLeaves) {
    return outOfRange("--leaves", shape.leaves, 2, kMaxLeaves);
  }
  if (shape.leaves % shape.rails != 0) {
    return Status(StatusCode::kInvalidArgument, "--leaves (" + std::to_string(shape.leaves) +
                                                    ") must be a multiple of --rails (" +
                                                    std::to_string(shape.rails) +
                                                    "): each group of hosts has one leaf per rail");
  }
  if (shape.spines < 1 || shape.spines > kMaxSpines) {
    return outOfRange("--spines", shape.spines, 1, kMaxSpines);
  }
  if (shape.hosts_per_leaf < 1 || shape.hosts_per_leaf > kMaxHostsPerLeaf) {
    return outOfRange("--hosts-per-leaf", shape.hosts_per_leaf, 1, kMaxHostsPerLeaf);
  }
  const int hosts = groups(shape) * shape.hosts_per_leaf;
  if (hosts < 2 || hosts > kMaxHosts) {
    return Status(StatusCode::kInvalidArgument,
                  "the fabric would have " + std::to_string(hosts) +
                      " hosts ((--leaves / --rails) * --hosts-per-leaf); it must have 2 to " +
                      std::to_string(kMaxHosts));
  }
  return Status::ok();
}

scenarios::Fabric describeLeafSpine(const std::string& name, const std::string& prefix,
                                    const LeafSpineShape& shape) {
  scenarios::Fabric fabric;
  fabric.name = name;
  fabric.kind = "netns";
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    const Place place = placeOfLeaf(shape, leaf);
    scenarios::Switch sw;
    sw.name = leafSwitchName(leaf);
    sw.netns = ns(prefix, sw.name);
    sw.bridge = "br0";
    for (int n = 0; n < shape.hosts_per_leaf; ++n) sw.ports.push_back("p" + std::to_string(n));
    for (int spine = 0; spine < shape.spines; ++spine) {
      sw.ports.push_back("up" + std::to_string(spine));
    }
    sw.labels = {{"role", "leaf"},
                 {"rail", std::to_string(place.rail)},
                 {"group", "g" + std::to_string(place.group)},
                 {"pod", "p0"}};
    fabric.switches.push_back(std::move(sw));
  }
  for (int spine = 0; spine < shape.spines; ++spine) {
    scenarios::Switch sw;
    sw.name = spineSwitchName(spine);
    sw.netns = ns(prefix, sw.name);
    for (int leaf = 0; leaf < shape.leaves; ++leaf) sw.ports.push_back("dn" + std::to_string(leaf));
    sw.labels = {{"role", "spine"}, {"pod", "p0"}};
    fabric.switches.push_back(std::move(sw));
  }
  for (int group = 0; group < groups(shape); ++group) {
    for (int n = 0; n < shape.hosts_per_leaf; ++n) {
      scenarios::Host host;
      host.name = hostName(group * shape.hosts_per_leaf + n);
      host.netns = ns(prefix, host.name);
      host.agent = "local";
      host.labels = {{"rack", "r" + std::to_string(group)},
                     {"group", "g" + std::to_string(group)},
                     {"pod", "p0"}};
      if (shape.rails == 1) host.labels["leaf"] = leafSwitchName(group);
      for (int rail = 0; rail < shape.rails; ++rail) {
        const int leaf = group * shape.rails + rail;
        const std::string nic = "eth" + std::to_string(rail);
        host.nics.push_back({nic, hostAddress({group, rail}, n)});
        fabric.links.push_back(
            {host.name + "-" + leafSwitchName(leaf),
             host.name,
             nic,
             leafSwitchName(leaf),
             "p" + std::to_string(n),
             {{"tier", "access"}, {"rail", std::to_string(rail)}, {"leaf", leafSwitchName(leaf)}}});
      }
      fabric.hosts.push_back(std::move(host));
    }
  }
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    for (int spine = 0; spine < shape.spines; ++spine) {
      fabric.switch_links.push_back({leafSwitchName(leaf) + "-" + spineSwitchName(spine),
                                     leafSwitchName(leaf),
                                     "up" + std::to_string(spine),
                                     spineSwitchName(spine),
                                     "dn" + std::to_string(leaf),
                                     {{"tier", "uplink"},
                                      {"leaf", leafSwitchName(leaf)},
                                      {"spine", spineSwitchName(spine)},
                                      {"rail", std::to_string(placeOfLeaf(shape, leaf).rail)},
                                      {"pod", "p0"}}});
    }
  }
  return fabric;
}

NetnsPort leafHostPort(const std::string& prefix, const LeafSpineShape& shape, int host, int rail) {
  const int group = host / shape.hosts_per_leaf;
  return {ns(prefix, leafSwitchName(group * shape.rails + rail)),
          "p" + std::to_string(host % shape.hosts_per_leaf)};
}

std::string leafSpineHostAddress(const LeafSpineShape& shape, int host, int rail) {
  return hostAddress({host / shape.hosts_per_leaf, rail}, host % shape.hosts_per_leaf);
}

std::vector<NetnsPort> leafHostPorts(const std::string& prefix, const LeafSpineShape& shape) {
  std::vector<NetnsPort> ports;
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    for (int n = 0; n < shape.hosts_per_leaf; ++n) {
      ports.push_back({ns(prefix, leafSwitchName(leaf)), "p" + std::to_string(n)});
    }
  }
  return ports;
}

LeafSpineBuild leafSpineBuild(const std::string& prefix, const LeafSpineShape& shape,
                              HostCabling cabling) {
  LeafSpineBuild build;
  const scenarios::Fabric fabric = describeLeafSpine("", prefix, shape);
  const bool veth_hosts = cabling == HostCabling::kVethNamespaces;
  for (const auto& sw : fabric.switches) build.namespaces.push_back(sw.netns);
  if (veth_hosts) {
    for (const auto& host : fabric.hosts) build.namespaces.push_back(host.netns);
  }

  for (const auto& netns : build.namespaces) {
    // IPv6 off: its router solicitations and neighbour discovery would be counted by every port
    // counter a test or a fault reads, and nothing in the lab speaks it.
    build.sysctls.push_back({netns, "net.ipv6.conf.all.disable_ipv6", "1"});
    build.sysctls.push_back({netns, "net.ipv6.conf.default.disable_ipv6", "1"});
    // Multi-NIC hosts and ECMP both see replies on another interface than the route back.
    build.sysctls.push_back({netns, "net.ipv4.conf.all.rp_filter", "0"});
    build.sysctls.push_back({netns, "net.ipv4.conf.default.rp_filter", "0"});
  }
  for (const auto& sw : fabric.switches) {
    build.sysctls.push_back({sw.netns, "net.ipv4.ip_forward", "1"});
    // Hash on the five-tuple, as switches hash RoCEv2 flows: two flows between the same hosts can
    // take different spines, and an unlucky pair can share one.
    build.sysctls.push_back({sw.netns, "net.ipv4.fib_multipath_hash_policy", "1"});
    // A next hop whose link lost its carrier (the far end went down) is skipped at once, as a
    // switch's link-down detection would; without this only an administratively down port is.
    build.sysctls.push_back({sw.netns, "net.ipv4.conf.all.ignore_routes_with_linkdown", "1"});
    build.sysctls.push_back({sw.netns, "net.ipv4.conf.default.ignore_routes_with_linkdown", "1"});
  }
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    // Hosts hold their rail's whole /16 as connected (routes a host NIC's flap would delete are
    // never needed); the leaf answers ARP for the addresses it routes elsewhere.
    build.sysctls.push_back(
        {ns(prefix, leafSwitchName(leaf)), "net.ipv4.conf.default.proxy_arp", "1"});
  }

  auto ip = [&](std::vector<std::string> args) { build.ip_commands.push_back(std::move(args)); };
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    const std::string leaf_ns = ns(prefix, leafSwitchName(leaf));
    for (auto& command : switchBridgeCommands(leaf_ns)) ip(std::move(command));
    ip({"-n", leaf_ns, "addr", "add", gatewayAddress(placeOfLeaf(shape, leaf)) + "/24", "dev",
        "br0"});
  }
  for (int spine = 0; spine < shape.spines; ++spine) {
    ip({"-n", ns(prefix, spineSwitchName(spine)), "link", "set", "lo", "up"});
  }
  for (int group = 0; veth_hosts && group < groups(shape); ++group) {
    for (int n = 0; n < shape.hosts_per_leaf; ++n) {
      const std::string host_ns = ns(prefix, hostName(group * shape.hosts_per_leaf + n));
      ip({"-n", host_ns, "link", "set", "lo", "up"});
      for (int rail = 0; rail < shape.rails; ++rail) {
        const Place place{group, rail};
        const std::string leaf_ns = ns(prefix, leafSwitchName(group * shape.rails + rail));
        const std::string nic = "eth" + std::to_string(rail);
        const std::string port = "p" + std::to_string(n);
        // Created inside the host's namespace with the peer placed straight into the leaf's:
        // nothing appears in the initial namespace (see NetnsLab::up).
        ip({"-n", host_ns, "link", "add", nic, "type", "veth", "peer", "name", port, "netns",
            leaf_ns});
        ip({"-n", leaf_ns, "link", "set", port, "master", "br0"});
        ip({"-n", leaf_ns, "link", "set", port, "up"});
        ip({"-n", host_ns, "addr", "add", hostAddress(place, n) + "/16", "dev", nic});
        ip({"-n", host_ns, "link", "set", nic, "up"});
      }
    }
  }
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    const std::string leaf_ns = ns(prefix, leafSwitchName(leaf));
    for (int spine = 0; spine < shape.spines; ++spine) {
      const std::string spine_ns = ns(prefix, spineSwitchName(spine));
      const std::string up = "up" + std::to_string(spine);
      const std::string dn = "dn" + std::to_string(leaf);
      ip({"-n", leaf_ns, "link", "add", up, "type", "veth", "peer", "name", dn, "netns", spine_ns});
      ip({"-n", leaf_ns, "addr", "add", uplinkAddress(leaf, spine, false) + "/31", "dev", up});
      ip({"-n", spine_ns, "addr", "add", uplinkAddress(leaf, spine, true) + "/31", "dev", dn});
      ip({"-n", leaf_ns, "link", "set", up, "up"});
      ip({"-n", spine_ns, "link", "set", dn, "up"});
    }
  }
  // No static route between switches: each switch runs BGP (lab/leaf_spine_routing.h), which
  // puts the multipath routes in and takes them out when a link or a peer goes.
  return build;
}

}  // namespace fabric_chaos::lab
