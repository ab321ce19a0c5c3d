// ECN marking on the lab switch's modelled ports (`lab up --link-rate 100mbit --buffer 128k --ecn
// 20k,80k,1`, docs/lab.md "ECN marking") on the real kernel, judged from outside the marker: the
// sink namespace's IP counters (/proc/net/netstat IpExtInCEPkts, IpExtInNoECTPkts), `tc -s` drops
// at the sink's port and `tc filter show`. A 4->1 TCP incast (iperf3) with tcp_ecn=1 is marked
// instead of dropped: thousands of CE packets reach the sink and the port drops far less than the
// same incast through the same port without --ecn. Non-ECT traffic (tcp_ecn=0) is never marked.
// The marker's own counters (sys::readEcnMarks) agree with the sink's count.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "injectors/sys/ecn_marker.h"
#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr const char* kPort = "--hosts 5 --link-rate 100mbit --buffer 128k";
constexpr const char* kEcn = " --ecn 20k,80k,1";

// What one incast left behind, read by observers that are not the marker.
struct IncastResult {
  int64_t ce_packets = 0;       // IpExtInCEPkts at the sink (h0), during the incast
  int64_t not_ect_packets = 0;  // IpExtInNoECTPkts at the sink
  int64_t ect0_packets = 0;     // IpExtInECT0Pkts at the sink
  int64_t drops = 0;            // tc -s drops of sw0:p0 (both classes' bfifos)
  double received_mbit = 0;     // iperf3's four receivers together
};

class EcnMarker : public LabFixture {
 protected:
  EcnMarker() : LabFixture(/*needs_iperf3=*/true) {}

  // A fresh lab (the previous one removed) whose hosts negotiate ECN when tcp_ecn is 1.
  void up(const std::string& args, int tcp_ecn) {
    ASSERT_NO_FATAL_FAILURE(labUp(args));
    setTcpEcn(tcp_ecn);
  }

  static void setTcpEcn(int value) {
    for (int host = 0; host < 5; ++host) {
      const CommandOutput set =
          runShell("ip netns exec fcl-h" + std::to_string(host) +
                   " sysctl -qw net.ipv4.tcp_ecn=" + std::to_string(value) + " 2>&1");
      ASSERT_EQ(set.exit_code, 0) << set.out;
    }
  }

  // IpExt counters of host h0's namespace (/proc/net/netstat, read from inside it).
  static std::map<std::string, int64_t> sinkIpExt() {
    const std::string text = runShell("ip netns exec fcl-h0 cat /proc/net/netstat").out;
    std::istringstream lines(text);
    std::string names, values;
    std::map<std::string, int64_t> counters;
    while (std::getline(lines, names) && std::getline(lines, values)) {
      if (names.rfind("IpExt:", 0) != 0) continue;
      std::istringstream n(names), v(values);
      std::string name, value;
      n >> name;
      v >> value;
      while (n >> name && v >> value) counters["IpExt" + name] = std::stoll(value);
    }
    return counters;
  }

  // Drops of both classes' bfifos on sw0's port (tc -s -j qdisc).
  static int64_t portDrops(const std::string& port) {
    const json doc =
        json::parse(runShell("tc -n fcl-sw0 -s -j qdisc show dev " + port).out, nullptr, false);
    int64_t drops = 0;
    if (doc.is_array()) {
      for (const auto& entry : doc) {
        if (entry.value("kind", "") == "bfifo") drops += entry.value("drops", int64_t{0});
      }
    }
    return drops;
  }

  // Four TCP senders (h1..h4) into h0 for `seconds`, through sw0:p0. Cubic, whatever the
  // machine's default: BBR (v1) ignores CE marks, while cubic reduces its window once per RTT on
  // an ECN echo, as RFC 3168 asks.
  IncastResult incast(int base_port, int seconds) {
    for (int i = 0; i < 4; ++i) startIperf3Server("fcl-h0", base_port + i);
    const auto before = sinkIpExt();
    const int64_t drops_before = portDrops("p0");
    std::vector<std::thread> senders;
    std::vector<json> reports(4);
    for (int i = 0; i < 4; ++i) {
      senders.emplace_back([&, i] {
        const CommandOutput out =
            runShell("ip netns exec fcl-h" + std::to_string(i + 1) +
                     " iperf3 -J -C cubic -c 10.200.0.1 -p " + std::to_string(base_port + i) +
                     " -t " + std::to_string(seconds));
        reports[static_cast<size_t>(i)] = json::parse(out.out, nullptr, false);
      });
    }
    for (auto& sender : senders) sender.join();
    const auto after = sinkIpExt();
    IncastResult result;
    result.ce_packets = after.at("IpExtInCEPkts") - before.at("IpExtInCEPkts");
    result.not_ect_packets = after.at("IpExtInNoECTPkts") - before.at("IpExtInNoECTPkts");
    result.ect0_packets = after.at("IpExtInECT0Pkts") - before.at("IpExtInECT0Pkts");
    result.drops = portDrops("p0") - drops_before;
    for (const json& report : reports) {
      EXPECT_TRUE(report.contains("end")) << report.dump();
      if (report.contains("end")) {
        result.received_mbit +=
            report["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6;
      }
    }
    return result;
  }
};

TEST_F(EcnMarker, AnEcnIncastIsMarkedInsteadOfDropped) {
  // The same incast through the same port, first drop-tail only.
  ASSERT_NO_FATAL_FAILURE(up(kPort, 1));
  const IncastResult plain = incast(5501, 5);
  std::cout << "without --ecn: CE at the sink " << plain.ce_packets << ", ECT(0) "
            << plain.ect0_packets << ", drops at sw0:p0 " << plain.drops << ", received "
            << plain.received_mbit << " Mbit/s\n";
  EXPECT_EQ(plain.ce_packets, 0) << "nothing marks without --ecn";
  EXPECT_GT(plain.ect0_packets, 10000) << "the senders negotiated ECN (tcp_ecn=1)";
  EXPECT_GE(plain.drops, 20) << "four TCP flows overflow a 128 KiB drop-tail buffer";

  ASSERT_NO_FATAL_FAILURE(up(std::string(kPort) + kEcn, 1));
  // The marker is a bpf filter on the port's egress, attached by a process that has exited.
  const std::string filters = runShell("tc -n fcl-sw0 filter show dev p0 egress").out;
  EXPECT_NE(filters.find("bpf"), std::string::npos) << filters;
  EXPECT_NE(filters.find("fc_ecn_marker"), std::string::npos) << filters;
  EXPECT_NE(filters.find("direct-action"), std::string::npos) << filters;
  EXPECT_NE(runShell("tc -n fcl-sw0 qdisc show dev p3").out.find("qdisc clsact"), std::string::npos)
      << "every port has the marker";

  const IncastResult marked = incast(5601, 5);
  auto marks = sys::readEcnMarks("fcl-sw0", "p0");
  ASSERT_TRUE(marks.isOk()) << marks.status().toString();
  std::cout << "with --ecn 20k,80k,1: CE at the sink " << marked.ce_packets << ", ECT(0) "
            << marked.ect0_packets << ", drops at sw0:p0 " << marked.drops << ", received "
            << marked.received_mbit << " Mbit/s; marker: best effort " << marks->best_effort.marked
            << " marked of " << marks->best_effort.ect << " ECT / " << marks->best_effort.packets
            << " packets, lossless " << marks->lossless.marked << " of " << marks->lossless.packets
            << "\n";
  EXPECT_GT(marked.ce_packets, 500) << "the sink saw CE marks";
  EXPECT_LE(marked.drops * 5, plain.drops) << "marking keeps the queue below the buffer";
  EXPECT_GE(marked.received_mbit, 80) << "TCP still fills the port";
  // The marker's count and the sink's agree to within a factor of two (a marked packet can still
  // be dropped by the bfifo, and the sink counts only what arrived).
  const auto counted = static_cast<int64_t>(marks->marked());
  EXPECT_GE(counted * 2, marked.ce_packets);
  EXPECT_LE(counted, marked.ce_packets * 2);
  EXPECT_EQ(marks->lossless.marked, 0u) << "nothing was DSCP 26";
  EXPECT_GT(marks->best_effort.ect, marks->best_effort.marked);

  // The senders' ports carry ACKs only: no backlog, no marks.
  auto sender_marks = sys::readEcnMarks("fcl-sw0", "p1");
  ASSERT_TRUE(sender_marks.isOk()) << sender_marks.status().toString();
  EXPECT_GT(sender_marks->best_effort.packets, 1000u);
  EXPECT_EQ(sender_marks->marked(), 0u);
}

TEST_F(EcnMarker, NonEctTrafficIsNeverMarked) {
  ASSERT_NO_FATAL_FAILURE(up(std::string(kPort) + kEcn, 0));
  const IncastResult result = incast(5701, 5);
  auto marks = sys::readEcnMarks("fcl-sw0", "p0");
  ASSERT_TRUE(marks.isOk()) << marks.status().toString();
  std::cout << "tcp_ecn=0 through --ecn: CE at the sink " << result.ce_packets << ", not-ECT "
            << result.not_ect_packets << ", drops " << result.drops << "; marker saw "
            << marks->best_effort.packets << " packets, " << marks->best_effort.ect << " ECT\n";
  EXPECT_EQ(result.ce_packets, 0);
  EXPECT_GT(result.not_ect_packets, 10000);
  EXPECT_EQ(marks->marked(), 0u);
  EXPECT_EQ(marks->best_effort.ect, 0u);
  EXPECT_GT(marks->best_effort.packets, 10000u) << "the marker saw the traffic";
  EXPECT_GE(result.drops, 5) << "without ECN the drop-tail buffer still drops";
}

TEST_F(EcnMarker, ReadingAPortWithoutAMarkerIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(up(kPort, 1));
  auto marks = sys::readEcnMarks("fcl-sw0", "p0");
  EXPECT_EQ(marks.status().code(), core::StatusCode::kNotFound) << marks.status().toString();
  auto missing = sys::readEcnMarks("fcl-sw0", "nosuchport");
  EXPECT_EQ(missing.status().code(), core::StatusCode::kNotFound);
  // detach is idempotent: OK on a port without a marker. It removes the marker's filter only.
  EXPECT_TRUE(sys::detachEcnMarker("fcl-sw0", "p0").isOk());
}

}  // namespace
}  // namespace fabric_chaos::testing
