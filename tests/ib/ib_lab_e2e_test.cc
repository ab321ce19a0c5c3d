// `fabric-chaos lab up|status|down --kind ib`, the real binary against the real ibsim, OpenSM and
// infiniband-diags. What the lab says is checked by the Debian tools run as separate processes
// from a node of the subnet (sminfo, smpquery, ibnetdiscover), by /proc and by iproute2, never by
// the lab's own reading: sm0 is master with priority 14, sm1 stands by, the registered fabric
// has the subnet's nodes, GUIDs and LIDs, a second `up` changes nothing, and `down` leaves no
// process, namespace, FIFO or file. Options it cannot build and missing tools are refused before
// anything starts.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "ib/sminfo.h"
#include "tests/ib/ib_tier.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::ib {
namespace {

using nlohmann::json;
using testing::runShell;

constexpr const char* kNetns = "fcib-subnet";

// The live processes in the lab's namespace, by command name.
std::multiset<std::string> namespaceProcesses() {
  std::multiset<std::string> names;
  std::istringstream pids(runShell(std::string("ip netns pids ") + kNetns + " 2>/dev/null").out);
  for (std::string pid; pids >> pid;) {
    const std::string stat = testing::readFile("/proc/" + pid + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat.size() < paren + 3 || stat[paren + 2] == 'Z') continue;
    std::string comm = testing::readFile("/proc/" + pid + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    names.insert(comm);
  }
  return names;
}

// Live ibsim or opensm processes anywhere whose command line names `dir`.
int daemonsUnder(const std::string& dir) {
  return std::atoi(runShell("for p in $(pgrep -x 'ibsim|opensm'); do "
                            "[ \"$(awk '{print $3}' /proc/$p/stat)\" = Z ] && continue; "
                            "tr '\\0' ' ' </proc/$p/cmdline | grep -qF '" +
                            dir + "' && echo $p; done | wc -l")
                       .out.c_str());
}

class IbLabCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0 ||
        !testing::missingIbTools({"sminfo", "smpquery", "ibnetdiscover"}).empty() ||
        std::getenv("FC_BINARY") == nullptr)
      return;
    binary_ = std::getenv("FC_BINARY");
    state_dir_ = testing::makeTempDir();
    // Fast timers, so that this lab is also the one the failover cases would use.
    up_ = runShell(binary_ + " lab up --kind ib --leaves 2 --spines 2 --hosts-per-leaf 2 " +
                   "--sm-polling-ms 1000 --sm-retries 2 --state-dir " + state_dir_ + " 2>&1");
  }
  static void TearDownTestSuite() {
    if (binary_.empty()) return;
    runShell(binary_ + " lab down --kind ib --state-dir " + state_dir_ + " >/dev/null 2>&1");
    std::filesystem::remove_all(state_dir_);
  }
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE_IB_TOOLS("sminfo", "smpquery", "ibnetdiscover");
    ASSERT_FALSE(binary_.empty()) << "FC_BINARY is not set (ctest sets it)";
    obs_dir_ = state_dir_ + "/observer";
    std::filesystem::create_directories(obs_dir_);
  }
  // A Debian tool run attached at `node`, from a directory of the test's own.
  testing::CommandOutput tool(const std::string& node, const std::string& command) {
    return testing::attachedTool(kNetns, obs_dir_, node, command);
  }
  json fabric() {
    return json::parse(testing::readFile(state_dir_ + "/fabrics/ib-lab.json"), nullptr, false);
  }

  static std::string binary_;
  static std::string state_dir_;
  static testing::CommandOutput up_;
  std::string obs_dir_;
};
std::string IbLabCli::binary_;
std::string IbLabCli::state_dir_;
testing::CommandOutput IbLabCli::up_;

TEST_F(IbLabCli, UpBringsTheSubnetUpWithAMasterAndAStandbySeenFromAnotherNode) {
  ASSERT_EQ(up_.exit_code, 0) << up_.out;
  std::cout << up_.out;
  EXPECT_NE(up_.out.find("subnet up after"), std::string::npos) << up_.out;
  // One ibsim and two OpenSMs in the namespace.
  const std::multiset<std::string> processes = namespaceProcesses();
  EXPECT_EQ(processes.count("ibsim"), 1u) << up_.out;
  EXPECT_EQ(processes.count("opensm"), 2u);

  const json doc = fabric();
  ASSERT_TRUE(doc.is_object()) << "no fabric file";
  ASSERT_EQ(doc["ib"]["subnet_managers"].size(), 2u) << doc.dump(1);
  const json& sm0 = doc["ib"]["subnet_managers"][0];
  const json& sm1 = doc["ib"]["subnet_managers"][1];
  EXPECT_EQ(sm0["host"], "h0");
  EXPECT_EQ(sm1["host"], "h2");  // the first host of the other leaf

  // sminfo from h3, which runs no SM: the master is sm0's port with priority 14.
  const auto master = tool("h3", "sminfo");
  ASSERT_EQ(master.exit_code, 0) << master.out;
  auto reply = parseSminfo(master.out);
  ASSERT_TRUE(reply.isOk()) << master.out;
  EXPECT_EQ(reply->state, SmState::kMaster);
  EXPECT_EQ(reply->priority, 14);
  EXPECT_EQ(reply->guid, std::stoull(sm0["port_guid"].get<std::string>(), nullptr, 16));

  // sm1's port LID, as the fabric registered it, answers SMInfo as a standby with priority 13.
  std::string sm1_lid;
  for (const json& link : doc["links"]) {
    if (link["host"] == "h2") sm1_lid = link["labels"]["lid"];
  }
  ASSERT_FALSE(sm1_lid.empty()) << doc.dump(1);
  const auto standby = tool("h3", "sminfo " + sm1_lid);
  auto standby_reply = parseSminfo(standby.out);
  ASSERT_TRUE(standby_reply.isOk()) << standby.out;
  EXPECT_EQ(standby_reply->state, SmState::kStandby);
  EXPECT_EQ(standby_reply->priority, 13);

  // Every node the fabric registered answers at its LID, with its GUID and description, as
  // smpquery (an SMP to that LID, routed by the switches' tables) reads them.
  std::map<std::string, std::pair<std::string, std::string>> by_lid;  // lid -> (guid, name)
  for (const json& sw : doc["switches"]) {
    by_lid[sw["labels"]["lid"]] = {sw["labels"]["guid"], sw["name"]};
  }
  for (const json& link : doc["links"]) {
    const json* host = nullptr;
    for (const json& h : doc["hosts"]) {
      if (h["name"] == link["host"]) host = &h;
    }
    ASSERT_NE(host, nullptr);
    by_lid[link["labels"]["lid"]] = {(*host)["labels"]["guid"], link["host"]};
  }
  EXPECT_EQ(by_lid.size(), 8u);
  for (const auto& [lid, node] : by_lid) {
    const auto info = tool("h3", "smpquery nodeinfo " + lid);
    EXPECT_NE(info.out.find("Guid:" + std::string(28, '.') + node.first + "\n"), std::string::npos)
        << "LID " << lid << " should be " << node.second << " " << node.first << ":\n"
        << info.out;
    const auto description = tool("h3", "smpquery nodedesc " + lid);
    EXPECT_NE(description.out.find("." + node.second + "\n"), std::string::npos)
        << "LID " << lid << ": " << description.out;
  }
  // Every cable as ibnetdiscover sees it: 4 HCA links and 4 uplinks.
  EXPECT_EQ(doc["links"].size(), 4u);
  EXPECT_EQ(doc["switch_links"].size(), 4u);
}

TEST_F(IbLabCli, ASecondUpLeavesTheRunningSubnetAsItIs) {
  ASSERT_EQ(up_.exit_code, 0) << up_.out;
  const std::string pids_before = runShell(std::string("ip netns pids ") + kNetns).out;
  const auto again = runShell(binary_ + " lab up --kind ib --leaves 2 --spines 2 " +
                              "--hosts-per-leaf 2 --sm-polling-ms 1000 --sm-retries 2 " +
                              "--state-dir " + state_dir_ + " 2>&1");
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("already up"), std::string::npos) << again.out;
  EXPECT_EQ(runShell(std::string("ip netns pids ") + kNetns).out, pids_before);
  const auto status = runShell(binary_ + " lab status --kind ib --state-dir " + state_dir_);
  EXPECT_EQ(status.exit_code, 0) << status.out;
  EXPECT_NE(status.out.find("up (namespace present, 3 processes"), std::string::npos) << status.out;
}

TEST_F(IbLabCli, OptionsItCannotBuildAreRefusedBeforeAnythingStarts) {
  const std::string dir = state_dir_ + "/refused";
  struct Case {
    std::string flags;
    const char* says;
  };
  const Case cases[] = {
      {"--spines 0", "at least one spine"},
      {"--hosts-per-leaf 40", "a leaf needs 42 ports"},
      {"--subnet-managers 4", "--subnet-managers must be 1, 2 or 3"},
      {"--leaves 1 --hosts-per-leaf 2 --subnet-managers 2", "2 SMs on 2 hosts"},
      {"--topology leaf-spine", "fat-tree"},
      {"--link-rate 1gbit", "not for the IB lab"},
  };
  for (const Case& c : cases) {
    const auto out =
        runShell(binary_ + " lab up --kind ib " + c.flags + " --state-dir " + dir + " 2>&1");
    EXPECT_EQ(out.exit_code, 2) << c.flags << ": " << out.out;
    EXPECT_NE(out.out.find(c.says), std::string::npos) << c.flags << ": " << out.out;
    EXPECT_FALSE(std::filesystem::exists(dir + "/ib")) << c.flags;
  }
  const auto netns_flag = runShell(binary_ + " lab up --subnet-managers 2 2>&1");
  EXPECT_EQ(netns_flag.exit_code, 2);
  EXPECT_NE(netns_flag.out.find("--subnet-managers is for the IB lab only"), std::string::npos)
      << netns_flag.out;
}

TEST_F(IbLabCli, MissingToolsAreNamedWithTheirPackages) {
  // A PATH without /usr/sbin (opensm) and /usr/bin (ibsim, the diags): nothing starts.
  const std::string dir = state_dir_ + "/no-tools";
  const auto out = runShell("env PATH=/nonexistent " + binary_ + " lab up --kind ib --state-dir " +
                            dir + " 2>&1");
  EXPECT_EQ(out.exit_code, 1) << out.out;
  EXPECT_NE(out.out.find("the IB lab needs ibsim (ibsim-utils), opensm (opensm)"),
            std::string::npos)
      << out.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/ib"));
}

// Last (gtest runs a suite's tests in the order written): down removes everything.
TEST_F(IbLabCli, DownLeavesNoProcessNamespaceFifoOrFile) {
  ASSERT_EQ(up_.exit_code, 0) << up_.out;
  const std::string lab_dir = state_dir_ + "/ib/ib-lab";
  ASSERT_TRUE(std::filesystem::is_fifo(lab_dir + "/console"));
  ASSERT_EQ(daemonsUnder(lab_dir), 3);
  const auto down = runShell(binary_ + " lab down --kind ib --state-dir " + state_dir_ + " 2>&1");
  ASSERT_EQ(down.exit_code, 0) << down.out;
  std::cout << down.out;
  EXPECT_EQ(daemonsUnder(lab_dir), 0);
  EXPECT_TRUE(testing::namespacesWithPrefix(kNetns).empty());
  EXPECT_FALSE(std::filesystem::exists(lab_dir));
  EXPECT_FALSE(std::filesystem::exists(state_dir_ + "/fabrics/ib-lab.json"));
  const auto status = runShell(binary_ + " lab status --kind ib --state-dir " + state_dir_);
  EXPECT_EQ(status.exit_code, 3) << status.out;
  // And again: nothing there is fine.
  EXPECT_EQ(runShell(binary_ + " lab down --kind ib --state-dir " + state_dir_).exit_code, 0);
}

}  // namespace
}  // namespace fabric_chaos::ib
