#pragma once
// A small InfiniBand subnet answering SMPs by direct route, for the IB probe's route reading:
// the IB lab's default fat tree (two leaves, two spines, two HCAs per leaf), LIDs and LFTs as
// OpenSM's min-hop routing set them there (recorded with ibroute), and cables that can be cut.
// A query over a cut cable or an unknown port times out, as on a real subnet. PortInfo Sets of
// the physical state disable a cable (both ends) or let it come back (Polling, then usable).

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "workload/sys/ib_smp.h"

namespace fabric_chaos::workload::testing {

class FakeIbSubnet : public SmpReader, public SmpPortControl {
 public:
  struct Node {
    bool is_switch = false;
    uint64_t guid = 0;
    std::string name;
    int ports = 0;
    uint16_t lid = 0;                                  // port 0 of a switch, port 1 of an HCA
    std::map<int, std::pair<std::string, int>> cable;  // port -> (node name, port)
    std::vector<uint8_t> lft;                          // switches: LID -> port
  };

  // The lab's fat tree, seen from `self` (an HCA: "h0".."h3").
  explicit FakeIbSubnet(std::string self) : self_(std::move(self)) {
    addHca("h0", 0x100000, 1);
    addHca("h1", 0x100002, 5);
    addHca("h2", 0x100004, 7);
    addHca("h3", 0x100006, 8);
    addSwitch("s0", 0x200000, 2);
    addSwitch("s1", 0x200001, 3);
    addSwitch("l0", 0x200002, 4);
    addSwitch("l1", 0x200003, 6);
    cable("h0", 1, "l0", 1);
    cable("h1", 1, "l0", 2);
    cable("h2", 1, "l1", 1);
    cable("h3", 1, "l1", 2);
    cable("l0", 3, "s0", 1);
    cable("l0", 4, "s1", 1);
    cable("l1", 3, "s0", 2);
    cable("l1", 4, "s1", 2);
    minHopTables();
  }

  // The tables OpenSM's min-hop routing gives the healthy tree.
  void minHopTables() {
    // LID:           0  1  2  3  4  5  6  7  8
    nodes_["l0"].lft = {255, 1, 3, 4, 0, 2, 3, 3, 4};
    nodes_["l1"].lft = {255, 3, 3, 4, 4, 4, 0, 1, 2};
    nodes_["s0"].lft = {255, 1, 0, 1, 1, 1, 2, 2, 2};
    nodes_["s1"].lft = {255, 1, 1, 0, 1, 1, 2, 2, 2};
  }
  // Its re-route around a cut l0-s0: l0 sends everything up through s1, and l1 and s0 reach l0's
  // HCAs through s1. 8 entries differ from minHopTables(): l0's for LIDs 2, 6, 7, l1's for
  // LID 1, s0's for LIDs 1, 3, 4, 5.
  void tablesAroundL0S0() {
    nodes_["l0"].lft = {255, 1, 4, 4, 0, 2, 4, 4, 4};
    nodes_["l1"].lft = {255, 4, 3, 4, 4, 4, 0, 1, 2};
    nodes_["s0"].lft = {255, 2, 0, 2, 2, 2, 2, 2, 2};
  }

  Node& node(const std::string& name) { return nodes_.at(name); }
  void cut(const std::string& a, int port) {
    auto [b, b_port] = nodes_.at(a).cable.at(port);
    down_.insert({a, port});
    down_.insert({b, b_port});
  }
  void mend(const std::string& a, int port) {
    auto [b, b_port] = nodes_.at(a).cable.at(port);
    down_.erase({a, port});
    down_.erase({b, b_port});
  }
  int queries() const { return queries_; }
  int timeouts() const { return timeouts_; }

  core::Result<SmpNodeInfo> nodeInfo(const DirectRoute& route, int) override {
    auto at = walk(route);
    if (!at.isOk()) return at.status();
    const Node& n = nodes_.at(at->first);
    return SmpNodeInfo{n.is_switch, n.ports, n.guid, n.is_switch ? n.guid : n.guid + 1, at->second};
  }
  core::Result<std::string> nodeDescription(const DirectRoute& route, int) override {
    auto at = walk(route);
    if (!at.isOk()) return at.status();
    return at->first;
  }
  core::Result<SmpPortInfo> portInfo(const DirectRoute& route, int port, int) override {
    auto at = walk(route);
    if (!at.isOk()) return at.status();
    const Node& n = nodes_.at(at->first);
    if (port > n.ports) return timeout();
    SmpPortInfo info;
    info.lid = n.lid;
    if (port == 0) {
      info.state = IbPortState::kActive;
    } else if (n.cable.count(port) == 0 || down_.count({at->first, port})) {
      info.state = IbPortState::kDown;
    } else {
      info.state = IbPortState::kActive;
    }
    if (n.is_switch && port != 0) info.lid = 0;  // a switch's external ports have no LID
    if (physical_.count({at->first, port})) info.physical = physical_.at({at->first, port});
    return info;
  }
  core::Status setPhysicalState(const DirectRoute& route, int port, IbPhysicalState state,
                                int) override {
    auto at = walk(route);
    if (!at.isOk()) return at.status();
    if (nodes_.at(at->first).cable.count(port) == 0) return timeout();
    if (state == IbPhysicalState::kDisabled) {
      cut(at->first, port);
      // The answer goes back the way the Set came: through this very port, it is lost.
      if (at->second == port) return timeout();
    } else {
      mend(at->first, port);
    }
    physical_[{at->first, port}] = state;
    sets.push_back(at->first + "[" + std::to_string(port) + "] " + describe(state));
    return core::Status::ok();
  }
  std::vector<std::string> sets;  // "l0[3] disabled", in order
  core::Result<LftBlock> lftBlock(const DirectRoute& route, int block, int) override {
    auto at = walk(route);
    if (!at.isOk()) return at.status();
    const Node& n = nodes_.at(at->first);
    if (!n.is_switch) return timeout();
    LftBlock out;
    out.fill(255);
    for (size_t i = 0; i < out.size(); ++i) {
      const size_t lid = static_cast<size_t>(block) * out.size() + i;
      if (lid < n.lft.size()) out[i] = n.lft[lid];
    }
    return out;
  }

 private:
  void addHca(const std::string& name, uint64_t guid, uint16_t lid) {
    nodes_[name] = Node{false, guid, name, 1, lid, {}, {}};
  }
  void addSwitch(const std::string& name, uint64_t guid, uint16_t lid) {
    nodes_[name] = Node{true, guid, name, 36, lid, {}, {}};
  }
  void cable(const std::string& a, int a_port, const std::string& b, int b_port) {
    nodes_[a].cable[a_port] = {b, b_port};
    nodes_[b].cable[b_port] = {a, a_port};
  }
  core::Status timeout() {
    ++timeouts_;
    return core::Status(core::StatusCode::kTimeout, "no answer");
  }
  // The node a direct route ends at and the port the query entered it by.
  core::Result<std::pair<std::string, int>> walk(const DirectRoute& route) {
    ++queries_;
    std::string at = self_;
    int entered = 1;
    for (size_t hop = 0; hop < route.size(); ++hop) {
      const Node& n = nodes_.at(at);
      if (!n.is_switch && hop > 0) return timeout();  // a channel adapter does not forward
      const auto cable = n.cable.find(route[hop]);
      if (cable == n.cable.end() || down_.count({at, route[hop]})) return timeout();
      at = cable->second.first;
      entered = cable->second.second;
    }
    return std::make_pair(at, entered);
  }

  std::string self_;
  std::map<std::string, Node> nodes_;
  std::set<std::pair<std::string, int>> down_;
  std::map<std::pair<std::string, int>, IbPhysicalState> physical_;
  int queries_ = 0;
  int timeouts_ = 0;
};

}  // namespace fabric_chaos::workload::testing
