// The IB lab's fat tree against the real tools: ibsim (ibsim-utils) runs the net file
// ibsimNetFile writes, OpenSM (Debian's 3.3.23) brings the subnet up from h0, and
// infiniband-diags, run as separate processes from another node, observe it: sminfo names the
// master, ibnetdiscover's output, read by our parser, has the nodes, roles and cables the shape
// asks for. Everything runs inside a network namespace of its own: ibsim's sockets are abstract
// unix sockets, which are per namespace, so nothing else on the machine can meet them.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "ib/fat_tree.h"
#include "ib/ibnetdiscover.h"
#include "tests/ib/ib_tier.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::ib {
namespace {

using testing::runShell;
using testing::waitFor;

class IbsimSubnet : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE_IB_TOOLS("sminfo", "ibnetdiscover");
    dir_ = testing::makeTempDir();
    ASSERT_FALSE(dir_.empty());
    netns_ = "fcib-t" + std::to_string(::getpid());
    ASSERT_EQ(runShell("ip netns add " + netns_).exit_code, 0);
  }
  void TearDown() override {
    if (!netns_.empty()) {
      runShell("ip netns pids " + netns_ + " | xargs -r kill -KILL; ip netns del " + netns_);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Starts ibsim on `net` with a FIFO as its console, held open read-write so that it never
  // reads an end of file (it busy-loops on one), and waits for its prompt.
  void startIbsim(const std::string& net) {
    std::ofstream(dir_ + "/net") << net;
    ASSERT_EQ(runShell("mkfifo " + dir_ + "/console").exit_code, 0);
    runShell("cd " + dir_ + " && ip netns exec " + netns_ + " sh -c 'exec ibsim -s net " +
             "<>console >ibsim.log 2>&1' &");
    ASSERT_TRUE(waitFor(
        [&] { return testing::readFile(dir_ + "/ibsim.log").find("sim>") != std::string::npos; },
        10000))
        << testing::readFile(dir_ + "/ibsim.log");
  }
  // A libibumad program attached at `node`, in a directory of its own (umad2sim makes its fake
  // sysfs, ./sys-PID, in the working directory).
  std::string attached(const std::string& node, const std::string& command) {
    const std::string where = dir_ + "/at-" + node;
    std::filesystem::create_directories(where);
    return "cd " + where + " && ip netns exec " + netns_ + " env SIM_HOST=" + node +
           " OSM_TMP_DIR=" + where + " OSM_CACHE_DIR=" + where +
           " LD_PRELOAD=" + testing::kUmad2sim + " " + command;
  }

  std::string dir_;
  std::string netns_;
};

TEST_F(IbsimSubnet, OpenSmBringsUpTheFatTreeAndIbnetdiscoverSeesItsShape) {
  const FatTreeShape shape{2, 2, 2, 8};
  ASSERT_TRUE(checkFatTree(shape).isOk());
  ASSERT_NO_FATAL_FAILURE(startIbsim(ibsimNetFile(shape)));
  runShell(attached("h0", "opensm -p 10 -f " + dir_ + "/at-h0/osm.log -e >/dev/null 2>&1 &"));
  // Up once another node sees a master (sminfo, from h3).
  testing::CommandOutput sminfo;
  ASSERT_TRUE(waitFor(
      [&] {
        sminfo = runShell(attached("h3", "sminfo 2>&1"));
        return sminfo.out.find("SMINFO_MASTER") != std::string::npos;
      },
      30000))
      << sminfo.out << testing::readFile(dir_ + "/at-h0/osm.log").substr(0, 4000);
  std::cout << "sminfo from h3: " << sminfo.out;
  EXPECT_EQ(sminfo.exit_code, 0);
  EXPECT_NE(sminfo.out.find("SMINFO_MASTER"), std::string::npos);
  EXPECT_NE(sminfo.out.find("priority 10"), std::string::npos);

  // Every cable listed and every port with its LID: OpenSM's first sweep is over.
  testing::CommandOutput discovered;
  core::Result<IbSubnet> subnet = core::Status(core::StatusCode::kInternal, "not run");
  auto everyPortHasALid = [&] {
    if (!subnet.isOk() || subnet->links.size() != 8u) return false;
    for (const IbLink& link : subnet->links) {
      if (link.a.lid.value_or(0) == 0 || link.b.lid.value_or(0) == 0) return false;
    }
    return true;
  };
  ASSERT_TRUE(waitFor(
      [&] {
        discovered = runShell(attached("h3", "ibnetdiscover 2>/dev/null"));
        subnet = parseIbnetdiscover(discovered.out);
        return discovered.exit_code == 0 && everyPortHasALid();
      },
      15000))
      << subnet.status().toString() << "\n"
      << discovered.out;
  std::map<std::string, std::string> roles;
  for (const IbNode& node : subnet->nodes) roles[node.description] = describe(node.role);
  const std::map<std::string, std::string> expected = {
      {"l0", "leaf"}, {"l1", "leaf"}, {"s0", "spine"}, {"s1", "spine"},
      {"h0", "hca"},  {"h1", "hca"},  {"h2", "hca"},   {"h3", "hca"}};
  EXPECT_EQ(roles, expected) << discovered.out;
  // 4 HCA cables and a cable from each leaf to each spine, on the ports the shape assigns.
  ASSERT_EQ(subnet->links.size(), 8u) << discovered.out;
  for (const IbLink& link : subnet->links) {
    const IbNode* a = findNode(*subnet, link.a.node_guid);
    const IbNode* b = findNode(*subnet, link.b.node_guid);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    if (a->role == IbRole::kSpine || b->role == IbRole::kSpine) {
      const IbEnd& spine_end = a->role == IbRole::kSpine ? link.a : link.b;
      const IbEnd& leaf_end = a->role == IbRole::kSpine ? link.b : link.a;
      const IbNode* leaf = findNode(*subnet, leaf_end.node_guid);
      const IbNode* spine = findNode(*subnet, spine_end.node_guid);
      const int leaf_index = std::stoi(leaf->description.substr(1));
      const int spine_index = std::stoi(spine->description.substr(1));
      EXPECT_EQ(spine_end.port, spineDownPort(leaf_index)) << spine->description;
      EXPECT_EQ(leaf_end.port, leafUplinkPort(shape, spine_index)) << leaf->description;
    }
  }
  std::cout << "ibnetdiscover from h3: " << subnet->nodes.size() << " nodes, "
            << subnet->links.size() << " links\n";
}

}  // namespace
}  // namespace fabric_chaos::ib
