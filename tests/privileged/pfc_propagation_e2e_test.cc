// Pause propagation on a leaf-spine lab whose switches honour PFC (`lab up --topology leaf-spine
// --leaves 2 --spines 1 --hosts-per-leaf 2 --link-rate 20mbit --buffer 128k --pfc`): h3 storms
// priority 3, so leaf l1 holds what a DSCP-26 UDP flood from h0 sends to h3; once that queue
// passes XOFF (half the buffer), l1 pauses its uplink, the spine's queue towards l1 fills in turn
// and pauses l0's uplink, and l0 pauses its host ports. Observers from outside the agents:
// - pings from h1 to h2 every 5 ms, DSCP 26 and best effort: h2 is on l1 but not h3's port, and
//   h1 sends nothing to h3, so only a pause that spread can stall them;
// - tshark on the spine's port towards l1 and on h0's NIC: the 802.1Qbb frames that crossed the
//   links, their class vector and pause time, XOFF first and XON last;
// - the agents' counters only as a cross-check (rx on one side = tx on the other).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/privileged/lab_fixture.h"
#include "tests/privileged/pfc_capture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr const char* kH2 = "10.210.1.1";
constexpr const char* kH3 = "10.210.1.2";

class PfcPropagationLab : public LabFixture {
 protected:
  PfcPropagationLab() : LabFixture(/*needs_iperf3=*/true) {}
  void SetUp() override {
    LabFixture::SetUp();
    if (setUpFailed()) return;
    ASSERT_EQ(runShell("command -v tshark").exit_code, 0)
        << "tshark is missing (deploy/install-deps.sh installs it)";
    ASSERT_NO_FATAL_FAILURE(
        labUp("--topology leaf-spine --leaves 2 --spines 1 --hosts-per-leaf 2 --link-rate 20mbit "
              "--buffer 128k --pfc"));
    // Routes and neighbours settled before anything is timed.
    ASSERT_EQ(runShell(std::string("ip netns exec fcl-h1 ping -n -c 3 -i 0.2 ") + kH2).exit_code,
              0);
    ASSERT_EQ(runShell(std::string("ip netns exec fcl-h0 ping -n -c 3 -i 0.2 ") + kH3).exit_code,
              0);
  }

  json counters(const std::string& netns, const std::string& port) {
    const json doc = json::parse(readFile(dir_ + "/state/pfc/" + netns + ".json"), nullptr, false);
    return doc.is_object() ? doc["ports"][port] : json();
  }
  int64_t counter(const std::string& netns, const std::string& port, const std::string& name) {
    const json c = counters(netns, port);
    return c.is_object() ? c.value(name, int64_t{-1}) : -1;
  }

  // Round-trip times (ms) of `file`'s replies, in sequence order.
  std::vector<double> rtts(const std::string& file) {
    std::vector<double> out;
    const std::string text = readFile(file);
    const std::regex reply(R"(time=([0-9.]+) ms)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), reply);
         it != std::sregex_iterator(); ++it) {
      out.push_back(std::stod((*it)[1]));
    }
    return out;
  }
  static double maxOf(const std::vector<double>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  }
};

TEST_F(PfcPropagationLab, AStormSpreadsThroughTheSpineToAFlowThatNeverCrossesTheStormedPort) {
  PfcCapture at_spine(dir_, "fcl-s0", "dn1");  // what l1 sends up to the spine
  PfcCapture at_h0(dir_, "fcl-h0", "eth0");    // what l0 sends down to a host
  ASSERT_TRUE(at_spine.started() && at_h0.started()) << "tshark did not start";
  ASSERT_NO_FATAL_FAILURE(startIperf3Server("fcl-h3", 5201));
  for (const auto& [tos, name] : {std::pair{"104", "lossless"}, std::pair{"0", "best-effort"}}) {
    runShell("ip netns exec fcl-h1 ping -n -Q " + std::string(tos) + " -i 0.005 -W 5 -c 700 " +
             kH2 + " > " + dir_ + "/victim-" + name + " 2>&1 &");
  }
  // The flood alone (15 of 20 Mbit/s) pauses nothing: the control.
  runShell("ip netns exec fcl-h0 iperf3 -c " + std::string(kH3) +
           " -u -b 15M -t 3 -S 104 -p 5201 > " + dir_ + "/flood.txt 2>&1 &");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const int64_t tx_before_storm = counter("fcl-l1", "up0", "tx_prio3_pause");
  const double victim_before_storm = maxOf(rtts(dir_ + "/victim-lossless"));
  runShell("ip netns exec fcl-h3 timeout -s TERM 1.5 " + binary_ +
           " pfc-emit --ifname eth0 --priorities 3 --quanta 65535 --continuous --link-mbps 1000"
           " --xon-on-stop >/dev/null 2>&1");
  ASSERT_TRUE(waitFor([&] { return runShell("pgrep -f '[p]ing -n -Q'").exit_code != 0; }, 30000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  at_spine.stop();
  at_h0.stop();

  const auto victim = rtts(dir_ + "/victim-lossless");
  const auto best_effort = rtts(dir_ + "/victim-best-effort");
  const auto up_frames = at_spine.frames();
  const auto down_frames = at_h0.frames();
  std::cout << "propagation: h1->h2 DSCP-26 ping max " << maxOf(victim) << " ms (" << victim.size()
            << "/700 replies; before the storm " << victim_before_storm << " ms), best effort max "
            << maxOf(best_effort) << " ms (" << best_effort.size() << "/700); tshark saw "
            << up_frames.size() << " PFC frames l1->s0 and " << down_frames.size()
            << " l0->h0; counters: l1/up0 tx " << counter("fcl-l1", "up0", "tx_prio3_pause")
            << ", s0/dn1 rx " << counter("fcl-s0", "dn1", "rx_prio3_pause") << " paused "
            << counter("fcl-s0", "dn1", "rx_prio3_pause_duration") << " us, s0/dn0 tx "
            << counter("fcl-s0", "dn0", "tx_prio3_pause") << ", l0/up0 rx "
            << counter("fcl-l0", "up0", "rx_prio3_pause") << ", l0/p0 tx "
            << counter("fcl-l0", "p0", "tx_prio3_pause") << "\n";

  EXPECT_EQ(tx_before_storm, 0) << "the flood alone made l1 pause its uplink";
  EXPECT_LT(victim_before_storm, 100) << "the victim was slow before the storm";
  // The victim stood still for most of the 1.5 s storm, the best-effort ping beside it did not.
  EXPECT_GE(maxOf(victim), 1000) << "the pause did not spread to h1->h2";
  EXPECT_LE(maxOf(victim), 1800);
  EXPECT_EQ(best_effort.size(), 700u);
  EXPECT_LT(maxOf(best_effort), 50) << "best effort was held too";

  // l1 -> spine: XOFF on priority 3 for 65535 quanta, refreshed, and an XON at the end.
  ASSERT_GE(up_frames.size(), 2u);
  EXPECT_EQ(up_frames.front().class_enable, 0x08);
  EXPECT_EQ(up_frames.front().pause_c3, 65535);
  EXPECT_EQ(up_frames.back().pause_c3, 0) << "the last frame is not an XON";
  // And onwards, spine -> l0 -> the hosts feeding l0's paused uplink.
  ASSERT_GE(down_frames.size(), 2u);
  EXPECT_EQ(down_frames.front().pause_c3, 65535);
  EXPECT_EQ(down_frames.back().pause_c3, 0);
  // The agents agree with the wire: what one side sent, the other received.
  EXPECT_EQ(counter("fcl-l1", "up0", "tx_prio3_pause"), static_cast<int64_t>(up_frames.size()));
  EXPECT_EQ(counter("fcl-s0", "dn1", "rx_prio3_pause"), static_cast<int64_t>(up_frames.size()));
  EXPECT_EQ(counter("fcl-s0", "dn0", "tx_prio3_pause"), counter("fcl-l0", "up0", "rx_prio3_pause"));
  EXPECT_EQ(counter("fcl-l0", "p0", "tx_prio3_pause"), static_cast<int64_t>(down_frames.size()));
  EXPECT_EQ(counter("fcl-l0", "p1", "tx_prio3_pause"), counter("fcl-l0", "p0", "tx_prio3_pause"))
      << "h1 fed l0's paused uplink too (its pings)";
  // Nothing stays paused after the XONs.
  EXPECT_TRUE(counters("fcl-s0", "dn1")["paused_priorities"].empty());
  EXPECT_TRUE(counters("fcl-l1", "up0")["pausing_priorities"].empty());
}

// Each port carries the ingress tagger beside the gate, and an agent that stops takes both off
// (a tagger left behind would keep marking frames after the agent is gone).
TEST_F(PfcPropagationLab, AStoppedAgentTakesItsIngressTaggerOffEveryPort) {
  for (const std::string port : {"dn0", "dn1"}) {
    EXPECT_NE(
        runShell("tc -n fcl-s0 filter show dev " + port + " ingress").out.find("fc_pfc_ingress"),
        std::string::npos)
        << port;
  }
  EXPECT_NE(runShell("tc -n fcl-l0 filter show dev p0 ingress").out.find("fc_pfc_ingress"),
            std::string::npos);
  // The spine's agent only (BIRD runs in the namespace too).
  const std::string agent_pid_line =
      runShell(
          "for p in $(ip netns pids fcl-s0); do tr '\\0' ' ' < /proc/$p/cmdline | "
          "grep -q pfc-switch && echo $p; done")
          .out;
  const std::string agent_pid = agent_pid_line.substr(0, agent_pid_line.find('\n'));
  ASSERT_FALSE(agent_pid.empty()) << "no PFC agent in fcl-s0";
  ASSERT_EQ(runShell("kill -TERM " + agent_pid).exit_code, 0);
  // Gone, or a zombie not reaped yet (a daemon's parent is whoever adopted it).
  ASSERT_TRUE(waitFor(
      [&] {
        return runShell("grep -qs '^State:[[:space:]]*[^Z]' /proc/" + agent_pid + "/status")
                   .exit_code != 0;
      },
      10000))
      << "the spine's agent did not stop";
  for (const std::string port : {"dn0", "dn1"}) {
    for (const char* direction : {"ingress", "egress"}) {
      const std::string filters =
          runShell("tc -n fcl-s0 filter show dev " + port + " " + direction).out;
      EXPECT_EQ(filters.find("fc_pfc_"), std::string::npos) << port << " " << direction << ":\n"
                                                            << filters;
    }
  }
}

}  // namespace
}  // namespace fabric_chaos::testing
