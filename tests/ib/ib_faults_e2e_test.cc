// The IB fault kinds against the real simulated subnet: the injectors as the agent runs them
// (sys::makeDaemonControl), on a lab built fresh for each case by the real binary with fast SM
// timers (polling 1000 ms x 2), since a subnet that went through a failover is not the one the
// next case expects. What happened is read by the Debian tools as separate processes attached at
// another node, never by the injectors: sminfo for mastership, ibroute for the forwarding tables,
// ibnetdiscover for the cables, smpquery for MADs getting through, and /proc for the SM processes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ib/sminfo.h"
#include "injectors/ib/ib_port_faults.h"
#include "injectors/ib/sm_failover.h"
#include "injectors/sys/command.h"
#include "injectors/sys/daemon_control.h"
#include "injectors/sys/ib_port_command.h"
#include "tests/ib/ib_tier.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::injectors {
namespace {

using nlohmann::json;
using testing::runShell;
using testing::waitFor;

constexpr const char* kNetns = "fcib-subnet";

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class IbFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE_IB_TOOLS("sminfo", "ibroute", "ibnetdiscover", "smpquery");
    const char* binary = std::getenv("FC_BINARY");
    ASSERT_NE(binary, nullptr) << "FC_BINARY is not set (ctest sets it)";
    binary_ = binary;
    state_dir_ = testing::makeTempDir();
    obs_dir_ = state_dir_ + "/observer";
    std::filesystem::create_directories(obs_dir_);
    const auto up = runShell(binary_ + " lab up --kind ib --leaves 2 --spines 2 " +
                             "--hosts-per-leaf 2 --sm-polling-ms 1000 --sm-retries 2 " +
                             "--state-dir " + state_dir_ + " 2>&1");
    ASSERT_EQ(up.exit_code, 0) << up.out;
    fabric_ = json::parse(testing::readFile(state_dir_ + "/fabrics/ib-lab.json"));
    for (const json& link : fabric_["links"]) lid_[link["host"]] = link["labels"]["lid"];
    for (const json& sw : fabric_["switches"]) lid_[sw["name"]] = sw["labels"]["lid"];
    daemons_ = sys::makeDaemonControl();
  }
  void TearDown() override {
    if (binary_.empty()) return;
    runShell(binary_ + " lab down --kind ib --state-dir " + state_dir_ + " >/dev/null 2>&1");
    std::filesystem::remove_all(state_dir_);
  }
  // A Debian tool attached at `node`, from the test's own directory.
  testing::CommandOutput tool(const std::string& node, const std::string& command) {
    return testing::attachedTool(kNetns, obs_dir_, node, command);
  }
  // The master as sminfo from h3 names it (0 when none answers).
  uint64_t masterGuid() {
    auto reply = ib::parseSminfo(tool("h3", "sminfo").out);
    return reply.isOk() && reply->state == ib::SmState::kMaster ? reply->guid : 0;
  }
  uint64_t smGuid(int i) {
    return std::stoull(fabric_["ib"]["subnet_managers"][i]["port_guid"].get<std::string>(), nullptr,
                       16);
  }
  // Live OpenSM processes in the lab's namespace attached at `node`, from /proc by shell.
  int openSmsAt(const std::string& node) {
    return std::atoi(runShell(std::string("for p in $(ip netns pids ") + kNetns +
                              "); do [ \"$(cat /proc/$p/comm)\" = opensm ] && "
                              "tr '\\0' '\\n' </proc/$p/environ | grep -qx SIM_HOST=" +
                              node + " && echo $p; done | wc -l")
                         .out.c_str());
  }
  // The port by which switch `sw` forwards to `lid`, as ibroute dumps its table.
  std::string forwardingPort(const std::string& sw, const std::string& lid) {
    std::istringstream lines(tool("h1", "ibroute " + lid_.at(sw)).out);
    char wanted[16];
    std::snprintf(wanted, sizeof(wanted), "0x%04x", std::stoi(lid));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string dest;
      std::string port;
      if (fields >> dest >> port && dest == wanted) return port;
    }
    return "";
  }
  int cableEnds() {
    const std::string out = tool("h3", "ibnetdiscover").out;
    int ends = 0;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) ends += !line.empty() && line[0] == '[';
    return ends;
  }

  std::string binary_;
  std::string state_dir_;
  std::string obs_dir_;
  json fabric_;
  std::map<std::string, std::string> lid_;
  std::unique_ptr<sys::DaemonControl> daemons_;
};

TEST_F(IbFaults, KillingTheMasterHandsTheSubnetToTheStandbyAndRevertBringsItBack) {
  ASSERT_EQ(masterGuid(), smGuid(0));
  SmFailover injector(daemons_.get());
  const Fault fault{"sm_failover", SubnetManagerTarget{"", "h0", kNetns}, {{"mode", "kill"}}};
  auto prior = injector.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(injector.apply(fault).isOk());
  EXPECT_EQ(openSmsAt("h0"), 0);
  EXPECT_EQ(openSmsAt("h2"), 1);
  // Two missed polls of 1000 ms: sm1 takes over in a few seconds (3.5 s measured here).
  ASSERT_TRUE(waitFor([&] { return masterGuid() == smGuid(1); }, 20000))
      << "sm1 did not take over: " << tool("h3", "sminfo").out;
  std::cout << "sm1 master " << secondsSince(killed) << " s after the kill\n";

  ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  EXPECT_EQ(openSmsAt("h0"), 1);
  // Restarted as it ran: same configuration file, same log file (appended), which shows the
  // restarted OpenSM started afresh.
  const std::string log_path = state_dir_ + "/ib/ib-lab/sm0/opensm.log";
  // The restarted sm0 has the higher priority: it takes mastership back by handover. That part
  // is OpenSM's, and OpenSM 3.3.23 under ibsim sometimes leaves a restarted higher-priority SM
  // DISCOVERING, with the subnet masterless for a while (one fresh-clone CI run in many here):
  // observed and reported then, not failed on; the product's part (sm0's OpenSM running again)
  // is checked above.
  const auto restarted = std::chrono::steady_clock::now();
  if (!waitFor([&] { return masterGuid() == smGuid(0); }, 30000)) {
    std::cout << "OpenSM did not hand the subnet back to the restarted sm0 within 30 s: "
              << tool("h3", "sminfo").out << "\n";
    EXPECT_EQ(openSmsAt("h0"), 1) << "the restarted sm0 must still be running";
    return;
  }
  std::cout << "sm0 master again " << secondsSince(restarted) << " s after the restart\n";
  auto standby = ib::parseSminfo(tool("h3", "sminfo " + lid_.at("h2")).out);
  ASSERT_TRUE(standby.isOk());
  EXPECT_EQ(standby->state, ib::SmState::kStandby);
  const std::string log = testing::readFile(log_path);
  int masters = 0;
  for (size_t at = log.find("Entering MASTER state"); at != std::string::npos;
       at = log.find("Entering MASTER state", at + 1)) {
    ++masters;
  }
  EXPECT_GE(masters, 2) << log.substr(0, 2000);
}

TEST_F(IbFaults, AStoppedMasterIsAlsoReplaced) {
  SmFailover injector(daemons_.get());
  const Fault fault{"sm_failover", SubnetManagerTarget{"", "h0", kNetns}, {{"mode", "stop"}}};
  auto prior = injector.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(injector.apply(fault).isOk());
  EXPECT_EQ(openSmsAt("h0"), 0);
  ASSERT_TRUE(waitFor([&] { return masterGuid() == smGuid(1); }, 20000))
      << tool("h3", "sminfo").out;
  ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  EXPECT_EQ(openSmsAt("h0"), 1);
}

TEST_F(IbFaults, AFailedUplinkIsRoutedAroundAndComesBackOnRevert) {
  // l0 forwards to h3 (on l1) through one of its two uplinks; fail that one.
  const std::string before = forwardingPort("l0", lid_.at("h3"));
  ASSERT_FALSE(before.empty());
  const int uplink = std::stoi(before);
  ASSERT_GE(uplink, 3) << "h3 is behind l1: an uplink port (3 or 4)";
  EXPECT_EQ(cableEnds(), 16);
  IbPortFault injector(IbPortFaultKind::kLinkDown, daemons_.get());
  const Fault fault{"ib_link_down", IbPortTarget{"l0", uplink, kNetns}, json::object()};
  auto prior = injector.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  const auto down = std::chrono::steady_clock::now();
  ASSERT_TRUE(injector.apply(fault).isOk());
  // The SM gets the switches' traps and re-routes l0's table through the other uplink.
  std::string after;
  ASSERT_TRUE(waitFor(
      [&] {
        after = forwardingPort("l0", lid_.at("h3"));
        return !after.empty() && after != before;
      },
      10000))
      << "l0 still forwards h3's LID through port " << before;
  std::cout << "l0 re-routed h3 from port " << before << " to " << after << " within "
            << secondsSince(down) * 1000 << " ms\n";
  EXPECT_EQ(cableEnds(), 14);
  // A MAD from h1 (on l0) still reaches h3 by LID.
  EXPECT_NE(tool("h1", "smpquery nodedesc " + lid_.at("h3")).out.find(".h3"), std::string::npos);

  ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  EXPECT_TRUE(waitFor([&] { return cableEnds() == 16; }, 10000));
}

TEST_F(IbFaults, MadLossOnAPortDropsWhatCrossesItUntilReverted) {
  IbPortFault injector(IbPortFaultKind::kMadLoss, daemons_.get());
  // l1's port to h3: every MAD h3 sends or receives crosses it.
  const Fault fault{"ib_mad_loss", IbPortTarget{"l1", 2, kNetns}, {{"percent", 100}}};
  auto answered = [&] {
    int ok = 0;
    for (int i = 0; i < 10; ++i) {
      ok += tool("h3", "smpquery -t 100 nodedesc " + lid_.at("h0")).exit_code == 0;
    }
    return ok;
  };
  EXPECT_EQ(answered(), 10);
  auto prior = injector.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(injector.apply(fault).isOk());
  EXPECT_EQ(answered(), 0);
  ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  EXPECT_EQ(answered(), 10);
}

TEST_F(IbFaults, TheMastersPortDownLeavesItRunningAndTheStandbyTakesOver) {
  SmFailover injector(daemons_.get());
  const Fault fault{"sm_failover", SubnetManagerTarget{"", "h0", kNetns}, {{"mode", "port_down"}}};
  auto prior = injector.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(injector.apply(fault).isOk());
  EXPECT_EQ(openSmsAt("h0"), 1);  // alive, cut off
  ASSERT_TRUE(waitFor([&] { return masterGuid() == smGuid(1); }, 20000))
      << tool("h3", "sminfo").out;
  ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  EXPECT_TRUE(waitFor([&] { return cableEnds() == 16; }, 10000));
  // Whether sm0 takes mastership back after its port returns is the subnet's to decide (OpenSM
  // 3.3.23 has been seen to stay DISCOVERING): reported, not asserted.
  waitFor([&] { return masterGuid() == smGuid(0); }, 5000);
  std::cout << "after relink: " << tool("h3", "sminfo").out;
}

// The real-subnet path of the link kinds: `fabric-chaos ib-port` sends the PortInfo Set from h3
// (this program run through a wrapper that attaches it there, as an agent on a real host runs it
// directly). smpquery from h1, whose own leaf is l0, reads the port's physical state.
TEST_F(IbFaults, OnARealSubnetTheLinkKindsSetTheSwitchPortsPhysicalState) {
  const std::string wrapper = state_dir_ + "/fabric-chaos-at-h3";
  {
    std::ofstream out(wrapper);
    out << "#!/bin/sh\nexec ip netns exec " << kNetns << " env -C " << obs_dir_
        << " SIM_HOST=h3 LD_PRELOAD=" << testing::kUmad2sim << " " << binary_ << " \"$@\"\n";
  }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  auto runner = sys::makeCommandRunner();
  auto ports = sys::makeIbPortCommand(runner.get(), wrapper);
  IbPortFault injector(IbPortFaultKind::kLinkDown, daemons_.get(), ports.get());
  auto physical = [&] {
    const std::string out = tool("h1", "smpquery -D portinfo 0,1 3").out;
    const size_t at = out.find("PhysLinkState:");
    return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
  };
  ASSERT_NE(physical().find("LinkUp"), std::string::npos) << physical();
  EXPECT_EQ(cableEnds(), 16);

  const Fault fault{"ib_link_down", IbPortTarget{"l0", 3, ""}, json::object()};
  auto prior = injector.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"switch", "l0"}, {"port", 3}, {"before", "link-up"}}));
  ASSERT_TRUE(injector.apply(fault).isOk());
  EXPECT_NE(physical().find("Disabled"), std::string::npos) << physical();
  EXPECT_TRUE(waitFor([&] { return cableEnds() == 14; }, 10000)) << "ibnetdiscover still sees it";
  auto seen = injector.observe(fault);
  ASSERT_TRUE(seen.isOk()) << seen.status().toString();
  EXPECT_EQ((*seen)["physical_state"], "disabled");

  // Enabled again: Polling, where a real port starts training back to LinkUp (ibsim models no
  // training, so the lab's cable stays out until the lab is rebuilt).
  ASSERT_TRUE(injector.revert(fault, *prior).isOk());
  EXPECT_NE(physical().find("Polling"), std::string::npos) << physical();

  // Refusals come from the command, with its reasons.
  const auto own = injector.apply(Fault{"ib_link_down", IbPortTarget{"h3", 1, ""}, {}});
  EXPECT_EQ(own.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(own.message().find("is the cable of the node sending the MADs"), std::string::npos)
      << own.message();
  const auto nobody = injector.capture(Fault{"ib_link_down", IbPortTarget{"x9", 1, ""}, {}});
  EXPECT_EQ(nobody.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(nobody.status().message().find("no switch or channel adapter named \"x9\""),
            std::string::npos)
      << nobody.status().message();
  IbPortFault loss(IbPortFaultKind::kMadLoss, daemons_.get(), ports.get());
  EXPECT_EQ(loss.apply(Fault{"ib_mad_loss", IbPortTarget{"l0", 3, ""}, {{"percent", 5}}}).code(),
            core::StatusCode::kNotSupported);
}

}  // namespace
}  // namespace fabric_chaos::injectors
