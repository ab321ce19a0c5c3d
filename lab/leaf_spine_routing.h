#pragma once
// BGP on the leaf-spine lab's switches, as RFC 7938 builds data-centre fabrics: eBGP on every
// leaf-spine link, a private AS per leaf (65101 + i) and one AS for all spines (65000); each leaf
// announces its hosts' subnets and installs what it learns with every equal path (ECMP). The
// daemon is BIRD 2 (Debian's bird2), one per switch namespace.
//
// Why a routing daemon: with static routes, a spine whose link to leaf A failed would keep
// attracting A's traffic from every other leaf and drop it (nothing tells them), and the kernel
// deletes a static route for good when its interface is set down. BGP withdraws the route and
// puts it back, which is what a fabric does and what a fault test must measure.
// Timers: a link that goes down ends its session at once (check link), a silent peer (a grey
// failure: the link up, its packets lost) after 3 x 100 ms of missing BFD, else after the 3 s
// hold time; a session is retried every second.
// Pure: configurations and the convergence check, so that both are table-tested.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lab/leaf_spine.h"

namespace fabric_chaos::lab {

struct SwitchRouting {
  std::string switch_name;  // "l0", "s1"
  std::string netns;
  std::string config;       // bird.conf text
  std::string config_path;  // <run_dir>/bird-<switch>.conf
  std::string socket_path;  // <run_dir>/bird-<switch>.ctl (birdc -s)
  std::string pid_path;     // <run_dir>/bird-<switch>.pid
  std::string log_path;     // <run_dir>/bird-<switch>.log
};

// One entry per switch (leaves, then spines). run_dir holds every file the daemons use.
std::vector<SwitchRouting> leafSpineRouting(const std::string& prefix, const LeafSpineShape& shape,
                                            const std::string& run_dir);

// What a converged leaf holds: a route for every other leaf's host subnet, through every spine.
struct LeafRoutes {
  std::string netns;
  std::vector<std::string> remote_subnets;  // "10.210.1.0/24"
  int paths = 0;                            // next hops each must have (the spines)
};
std::vector<LeafRoutes> expectedLeafRoutes(const std::string& prefix, const LeafSpineShape& shape);

// Subnets of `expected` missing from `ip -j route show` output `routes`, or present with fewer
// next hops than expected.paths; empty when the leaf has converged.
std::vector<std::string> unconvergedSubnets(const LeafRoutes& expected,
                                            const nlohmann::json& routes);

}  // namespace fabric_chaos::lab
