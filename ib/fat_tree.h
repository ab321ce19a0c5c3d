#pragma once
// The simulated IB lab's topology (`lab up --kind ib --leaves L --spines S --hosts-per-leaf H`):
// a two-tier fat tree, every leaf cabled once to every spine, H channel adapters (one port each)
// per leaf, checked before anything starts, and written as an ibsim net file (the format
// ibnetdiscover prints, which ibsim reads). Node descriptions are the fabric's names: leaves
// l0.., spines s0.., HCAs h0.. (h0..h{H-1} on l0, and so on); ibsim assigns the GUIDs. Pure.

#include <string>

#include "core/status.h"

namespace fabric_chaos::ib {

struct FatTreeShape {
  int leaves = 2;
  int spines = 2;
  int hosts_per_leaf = 2;
  int switch_ports = 36;  // a 36-port switch ASIC; ibsim allows up to 254
};

// kInvalidArgument, one sentence naming what does not fit: no leaf or spine, no host, more
// cables than a switch has ports (a leaf needs H + S, a spine L), a radix ibsim cannot model.
core::Status checkFatTree(const FatTreeShape& shape);

// The ibsim net file: HCAs first (ibsim attaches a client that names no SIM_HOST to the first
// node, h0), then spines, then leaves, each with its cabled ports.
std::string ibsimNetFile(const FatTreeShape& shape);

// "l0", "s1", "h5".
std::string leafName(int leaf);
std::string spineName(int spine);
std::string hcaName(int host);
// A leaf's port for its n-th HCA is n + 1; its uplink to spine s is hosts_per_leaf + s + 1; a
// spine's port to leaf l is l + 1.
int leafHostPort(const FatTreeShape& shape, int n);
int leafUplinkPort(const FatTreeShape& shape, int spine);
int spineDownPort(int leaf);

}  // namespace fabric_chaos::ib
