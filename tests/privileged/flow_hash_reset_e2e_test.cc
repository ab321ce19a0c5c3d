// The leaf-spine lab's flow-hash reset (injectors/sys/flow_hash_reset.h, docs/lab.md "Five-tuple
// hashing") on the real kernel. `lab up --topology leaf-spine` puts it on every leaf host port's
// ingress (`tc filter show`). Then TCP flows that differ only in their source port go up the
// uplink the leaf's routing table names for their five-tuple (`ip route get ... iif br0 ipproto
// tcp sport S dport D`), seen by the leaf's uplink tx byte counters (`ip -s -j link`), and the
// flows use both uplinks. Without the reset a sender's random socket hash picks the uplink, and
// about half the flows take the other one. A lab that lost the reset gets it back from `lab up`
// ("already up"), and the ECN marker on the same port's egress neither displaces it when attached
// nor removes it when detached.

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "injectors/sys/ecn_marker.h"
#include "injectors/sys/flow_hash_reset.h"
#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr const char* kLab =
    "up --topology leaf-spine --leaves 2 --spines 2 --hosts-per-leaf 2 --link-rate 100mbit";
constexpr const char* kSender = "fcl-h0";  // 10.210.0.1, behind fcl-l0:p0
constexpr const char* kSenderAddress = "10.210.0.1";
constexpr const char* kReceiver = "fcl-h2";  // 10.210.1.1, behind fcl-l1:p0
constexpr const char* kReceiverAddress = "10.210.1.1";
constexpr int kServerPort = 5201;
// Below the ephemeral range (32768...), so no other socket holds one of them.
constexpr int kFirstSourcePort = 20001;
constexpr int kFlows = 12;

class FlowHashReset : public LabFixture {
 protected:
  FlowHashReset() : LabFixture(/*needs_iperf3=*/true) {}
  void TearDown() override {
    if (server_) {
      server_->signalAndWait(SIGTERM, 2000, /*kill_on_timeout=*/true);
      server_.reset();
    }
    if (lab_up_) {
      // Nothing the test started still runs in the hosts (lab down would end it silently).
      for (const char* host : {kSender, kReceiver}) {
        EXPECT_EQ(runShell(std::string("ip netns pids ") + host).out, "") << "left in " << host;
      }
    }
    LabFixture::TearDown();
  }

  void up(const std::string& args) {
    const CommandOutput out = lab(args);
    ASSERT_EQ(out.exit_code, 0) << out.out;
    lab_up_ = true;
    std::cout << out.out;
    up_output_ = out.out;
  }

  static std::string ingressFilters(const std::string& netns, const std::string& port) {
    return runShell("tc -n " + netns + " filter show dev " + port + " ingress").out;
  }
  static std::string egressFilters(const std::string& netns, const std::string& port) {
    return runShell("tc -n " + netns + " filter show dev " + port + " egress").out;
  }
  static bool hasResetFilter(const std::string& filters) {
    return filters.find("fc_hash_reset") != std::string::npos &&
           filters.find("direct-action") != std::string::npos;
  }

  // The uplink fcl-l0's routing table picks for a TCP flow from the sender's port `sport`, as if
  // its packet came in from the hosts' bridge.
  static std::string predictedUplink(int sport) {
    const CommandOutput out =
        runShell(std::string("ip -n fcl-l0 -j route get ") + kReceiverAddress + " from " +
                 kSenderAddress + " iif br0 ipproto tcp sport " + std::to_string(sport) +
                 " dport " + std::to_string(kServerPort));
    const json doc = json::parse(out.out, nullptr, false);
    if (out.exit_code != 0 || !doc.is_array() || doc.empty() || !doc[0].contains("dev")) {
      return "unreadable: " + out.out;
    }
    return doc[0]["dev"].get<std::string>();
  }

  std::string up_output_;
  std::unique_ptr<ChildProcess> server_;
};

TEST_F(FlowHashReset, EveryTcpFlowTakesTheUplinkItsFiveTupleHashesTo) {
  ASSERT_NO_FATAL_FAILURE(up(kLab));
  EXPECT_NE(up_output_.find("flow-hash reset on all 4 leaf host ports"), std::string::npos);
  // On every leaf host port's ingress, attached by a process that has exited; not on uplinks.
  for (const char* leaf : {"fcl-l0", "fcl-l1"}) {
    for (const char* port : {"p0", "p1"}) {
      const std::string filters = ingressFilters(leaf, port);
      EXPECT_TRUE(hasResetFilter(filters)) << leaf << ":" << port << "\n" << filters;
    }
    EXPECT_FALSE(hasResetFilter(ingressFilters(leaf, "up0"))) << leaf;
  }
  EXPECT_FALSE(hasResetFilter(ingressFilters("fcl-s0", "dn0")));

  server_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/env", "ip", "netns", "exec", kReceiver, "iperf3", "-s",
                               "-p", std::to_string(kServerPort)});
  ASSERT_TRUE(waitFor(
      [&] {
        return runShell(std::string("ip netns exec ") + kReceiver +
                        " ss -ltn 'sport = :" + std::to_string(kServerPort) + "'")
                   .out.find("LISTEN") != std::string::npos;
      },
      5000))
      << server_->output();

  int via_up0 = 0;
  int via_up1 = 0;
  std::cout << "sport  predicted  up0 tx bytes  up1 tx bytes  iperf3 received bytes\n";
  for (int sport = kFirstSourcePort; sport < kFirstSourcePort + kFlows; ++sport) {
    const std::string predicted = predictedUplink(sport);
    const int64_t up0_before = linkTxBytes("fcl-l0", "up0");
    const int64_t up1_before = linkTxBytes("fcl-l0", "up1");
    const CommandOutput client = runShell(
        std::string("ip netns exec ") + kSender + " iperf3 -J -c " + kReceiverAddress + " -p " +
        std::to_string(kServerPort) + " --cport " + std::to_string(sport) + " -t 1");
    const int64_t up0 = linkTxBytes("fcl-l0", "up0") - up0_before;
    const int64_t up1 = linkTxBytes("fcl-l0", "up1") - up1_before;
    const json report = json::parse(client.out, nullptr, false);
    ASSERT_EQ(client.exit_code, 0) << client.out;
    ASSERT_TRUE(report.contains("end")) << client.out;
    // What reached the server during the test crossed fcl-l0's uplinks: a lower bound of the
    // flow's bytes there (what the client wrote may still have been queued when the test ended).
    const auto received = report["end"]["sum_received"]["bytes"].get<int64_t>();
    std::printf("%5d  %9s  %12lld  %12lld  %21lld\n", sport, predicted.c_str(),
                static_cast<long long>(up0), static_cast<long long>(up1),
                static_cast<long long>(received));
    ASSERT_GT(received, 1000000) << "about a second at 100 Mbit/s";
    // The flow's bytes (and their headers) went up one uplink; the other carried only BGP, BFD
    // and iperf3's control connection (another source port, hashed on its own).
    const std::string observed = up0 > up1 ? "up0" : "up1";
    EXPECT_GE(std::max(up0, up1), received) << "sport " << sport;
    EXPECT_LT(std::min(up0, up1) * 20, received) << "sport " << sport << ": split across uplinks";
    EXPECT_EQ(observed, predicted) << "sport " << sport;
    (observed == "up0" ? via_up0 : via_up1)++;
  }
  std::cout << via_up0 << " flows via up0, " << via_up1 << " via up1\n";
  // One uplink for every flow would prove nothing about the hashing.
  EXPECT_GT(via_up0, 0);
  EXPECT_GT(via_up1, 0);
}

TEST_F(FlowHashReset, LabUpRestoresAMissingResetAndTheEcnMarkerLeavesItAlone) {
  // With ECN marking, the marker sits on the same ports' egress (same clsact qdisc).
  const std::string args = std::string(kLab) + " --ecn 20k,80k,1";
  ASSERT_NO_FATAL_FAILURE(up(args));
  EXPECT_TRUE(hasResetFilter(ingressFilters("fcl-l0", "p0")));
  EXPECT_NE(egressFilters("fcl-l0", "p0").find("fc_ecn_marker"), std::string::npos);

  // One port as a lab built before the reset existed has it: nothing on its ingress.
  ASSERT_EQ(runShell("tc -n fcl-l1 filter del dev p1 ingress pref 2").exit_code, 0);
  ASSERT_FALSE(hasResetFilter(ingressFilters("fcl-l1", "p1")));
  auto missing = sys::hasFlowHashReset("fcl-l1", "p1");
  ASSERT_TRUE(missing.isOk()) << missing.status().toString();
  EXPECT_FALSE(*missing);
  ASSERT_NO_FATAL_FAILURE(up(args));
  EXPECT_NE(up_output_.find("is already up"), std::string::npos) << "kept, not rebuilt";
  EXPECT_NE(up_output_.find("flow-hash reset on 1 of 4 leaf host ports"), std::string::npos);
  EXPECT_TRUE(hasResetFilter(ingressFilters("fcl-l1", "p1")));
  auto restored = sys::hasFlowHashReset("fcl-l1", "p1");
  ASSERT_TRUE(restored.isOk()) << restored.status().toString();
  EXPECT_TRUE(*restored);

  // Re-attaching the marker replaces the marker only; detaching it removes the marker only.
  sys::EcnMarkerConfig marker;
  marker.rate_bps = 100'000'000;
  marker.buffer_bytes = 256 * 1024;
  marker.kmin_bytes = 20 * 1024;
  marker.kmax_bytes = 80 * 1024;
  marker.pmax = sys::kEcnProbabilityOne;
  ASSERT_TRUE(sys::attachEcnMarker("fcl-l0", "p0", marker).isOk());
  EXPECT_TRUE(hasResetFilter(ingressFilters("fcl-l0", "p0")));
  ASSERT_TRUE(sys::detachEcnMarker("fcl-l0", "p0").isOk());
  EXPECT_EQ(egressFilters("fcl-l0", "p0").find("fc_ecn_marker"), std::string::npos);
  EXPECT_TRUE(hasResetFilter(ingressFilters("fcl-l0", "p0")))
      << "detaching the marker took the reset";
  auto kept = sys::hasFlowHashReset("fcl-l0", "p0");
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  EXPECT_TRUE(*kept);
  EXPECT_TRUE(sys::detachEcnMarker("fcl-l0", "p0").isOk()) << "idempotent";

  // An uplink never has one; a missing port is kNotFound.
  auto uplink = sys::hasFlowHashReset("fcl-l0", "up0");
  ASSERT_TRUE(uplink.isOk()) << uplink.status().toString();
  EXPECT_FALSE(*uplink);
  EXPECT_EQ(sys::hasFlowHashReset("fcl-l0", "nosuchport").status().code(),
            core::StatusCode::kNotFound);
}

}  // namespace
}  // namespace fabric_chaos::testing
