#pragma once
// The simulated IB lab's plan, before and after it runs (lab/ib_lab.h): the options checked as
// one sentence each, where each subnet manager runs and with which priority, its OpenSM
// configuration, the command line that attaches a libibumad program to a simulated node, and the
// fabric description built from the discovered subnet. Pure; safe from any thread.

#include <string>
#include <vector>

#include "core/status.h"
#include "ib/fat_tree.h"
#include "ib/subnet.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct IbLabOptions {
  std::string name = "ib-lab";
  std::string prefix = "fcib";  // the subnet's namespace is <prefix>-subnet
  ib::FatTreeShape shape;
  int subnet_managers = 2;  // 1-3
  // OpenSM's standby polling of the master: sminfo_polling_timeout and polling_retry_number. The
  // defaults are OpenSM's own (a standby takes over about a minute after the master dies);
  // 1000 ms x 2 is the "fast timers" configuration (3.5 s here).
  int sm_polling_timeout_ms = 10000;
  int sm_polling_retries = 4;
  std::string state_dir = "/run/fabric-chaos";
  int ready_timeout_ms = 60000;  // until the subnet is up, or `up` fails saying what it saw
  std::string preload = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
};

// kInvalidArgument, one sentence: a shape checkFatTree refuses, an SM count outside 1-3, fewer
// channel adapters than SMs plus one observer, timers outside OpenSM's ranges, a name or prefix
// that is not [a-z0-9-].
core::Status checkIbLabOptions(const IbLabOptions& options);

// The SMs of the lab: sm0 with priority 14 (the master), sm1 with 13, sm2 with 12, each on the
// first channel adapter of a different leaf while there are leaves (h0, then l1's first...), so
// that a leaf failure cannot take them all.
std::vector<scenarios::SubnetManagerInstance> placeSubnetManagers(const IbLabOptions& options);

// The node from which the lab watches the subnet (sminfo, ibnetdiscover): the last channel
// adapter, which runs no SM.
std::string observerNode(const IbLabOptions& options);

std::string subnetNamespace(const IbLabOptions& options);  // "fcib-subnet"
std::string labDirectory(const IbLabOptions& options);     // <state_dir>/ib/<name>

// The simulator section of the fabric: namespace, console FIFO, preload and directory.
scenarios::IbSimulator simulatorOf(const IbLabOptions& options);

// An OpenSM configuration file: its priority, the polling timers, and its log, cache and dump
// files inside `sm_dir`. Every other setting is OpenSM's default.
std::string openSmConfig(const IbLabOptions& options, const scenarios::SubnetManagerInstance& sm,
                         const std::string& sm_dir);

// Where a program attached at `node` runs: <dir>/at/<node>. umad2sim creates its fake sysfs
// (sys-PID) in the working directory, so each node's programs get their own.
std::string nodeDirectory(const scenarios::IbSimulator& sim, const std::string& node);

// The command that runs `argv` attached at simulated node `node`: `ip netns exec <netns> env -C
// <node dir> SIM_HOST=<node> LD_PRELOAD=<preload> argv...`.
std::vector<std::string> attachedArgv(const scenarios::IbSimulator& sim, const std::string& node,
                                      const std::vector<std::string>& argv);

// The environment of a daemon attached at `node` (OpenSM): PATH, SIM_HOST, LD_PRELOAD, and OpenSM's
// OSM_TMP_DIR/OSM_CACHE_DIR in `dir`.
std::vector<std::string> attachedEnvironment(const scenarios::IbSimulator& sim,
                                             const std::string& node, const std::string& dir);

// The fabric the lab registers, from its discovered subnet: channel adapters as hosts (in the
// subnet's namespace, one NIC "port1" without an IP address), IB switches as switches with their
// cabled ports ("1".."36"), HCA cables as links ("h0-l0"), leaf-spine cables as switch links
// ("l0-s1", labels tier=uplink, leaf, spine), and the "ib" section with the SMs and their port
// GUIDs. Labels carry role (hca/leaf/spine), guid, lid, leaf, and sm on an SM's host.
// kFailedPrecondition when the discovered subnet lacks a node the SMs need.
core::Result<scenarios::Fabric> describeIbLab(const IbLabOptions& options,
                                              const ib::IbSubnet& subnet);

}  // namespace fabric_chaos::lab
