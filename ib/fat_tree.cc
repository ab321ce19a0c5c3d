#include "ib/fat_tree.h"

#include <sstream>

namespace fabric_chaos::ib {

using core::Status;
using core::StatusCode;

std::string leafName(int leaf) { return "l" + std::to_string(leaf); }
std::string spineName(int spine) { return "s" + std::to_string(spine); }
std::string hcaName(int host) { return "h" + std::to_string(host); }
int leafHostPort(const FatTreeShape&, int n) { return n + 1; }
int leafUplinkPort(const FatTreeShape& shape, int spine) {
  return shape.hosts_per_leaf + spine + 1;
}
int spineDownPort(int leaf) { return leaf + 1; }

Status checkFatTree(const FatTreeShape& shape) {
  auto invalid = [](const std::string& why) { return Status(StatusCode::kInvalidArgument, why); };
  if (shape.switch_ports < 2 || shape.switch_ports > 254) {
    return invalid("--switch-ports must be between 2 and 254 (ibsim's limit), not " +
                   std::to_string(shape.switch_ports));
  }
  if (shape.leaves < 1) return invalid("a fat tree needs at least one leaf (--leaves)");
  if (shape.spines < 1) {
    return invalid(
        "a fat tree needs at least one spine (--spines): its leaves would not reach "
        "each other");
  }
  if (shape.hosts_per_leaf < 1) return invalid("--hosts-per-leaf must be at least 1");
  const int leaf_cables = shape.hosts_per_leaf + shape.spines;
  if (leaf_cables > shape.switch_ports) {
    return invalid("a leaf needs " + std::to_string(leaf_cables) + " ports (" +
                   std::to_string(shape.hosts_per_leaf) + " hosts and " +
                   std::to_string(shape.spines) + " uplinks) but a switch has " +
                   std::to_string(shape.switch_ports) + " (--switch-ports)");
  }
  if (shape.leaves > shape.switch_ports) {
    return invalid("a spine needs a port per leaf (" + std::to_string(shape.leaves) +
                   ") but a switch has " + std::to_string(shape.switch_ports) +
                   " (--switch-ports)");
  }
  return Status::ok();
}

std::string ibsimNetFile(const FatTreeShape& shape) {
  std::ostringstream out;
  out << "# fabric-chaos IB lab: fat tree, " << shape.leaves << " leaves, " << shape.spines
      << " spines, " << shape.hosts_per_leaf << " HCAs per leaf, " << shape.switch_ports
      << "-port switches\n\n";
  auto quoted = [](const std::string& name) { return "\"" + name + "\""; };
  // HCAs first: ibsim's default attachment point is the first node.
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    for (int n = 0; n < shape.hosts_per_leaf; ++n) {
      out << "Hca 1 " << quoted(hcaName(leaf * shape.hosts_per_leaf + n)) << "\n"
          << "[1] " << quoted(leafName(leaf)) << "[" << leafHostPort(shape, n) << "]\n\n";
    }
  }
  for (int spine = 0; spine < shape.spines; ++spine) {
    out << "Switch " << shape.switch_ports << " " << quoted(spineName(spine)) << "\n";
    for (int leaf = 0; leaf < shape.leaves; ++leaf) {
      out << "[" << spineDownPort(leaf) << "] " << quoted(leafName(leaf)) << "["
          << leafUplinkPort(shape, spine) << "]\n";
    }
    out << "\n";
  }
  for (int leaf = 0; leaf < shape.leaves; ++leaf) {
    out << "Switch " << shape.switch_ports << " " << quoted(leafName(leaf)) << "\n";
    for (int n = 0; n < shape.hosts_per_leaf; ++n) {
      out << "[" << leafHostPort(shape, n) << "] "
          << quoted(hcaName(leaf * shape.hosts_per_leaf + n)) << "[1]\n";
    }
    for (int spine = 0; spine < shape.spines; ++spine) {
      out << "[" << leafUplinkPort(shape, spine) << "] " << quoted(spineName(spine)) << "["
          << spineDownPort(leaf) << "]\n";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace fabric_chaos::ib
