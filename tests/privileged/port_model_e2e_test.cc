// The lab switch's port model on the real kernel (`lab up --link-rate 100mbit --buffer 64k`),
// measured from outside: iperf3 (a third-party program) for the rate a TCP flow gets through a
// port, `tc -s` in the switch namespace for classes, drops and backlog. Issue 10 §1: a single TCP
// flow reaches 90-100 % of the modelled rate; a 4->1 incast overflows the buffer and drops what
// the configuration says; DSCP 26 traffic is queued in the lossless class.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr double kRateMbit = 100;
constexpr int64_t kBufferBytes = 64 * 1024;

class PortModel : public LabFixture {
 protected:
  PortModel() : LabFixture(/*needs_iperf3=*/true) {}
  void SetUp() override {
    LabFixture::SetUp();
    if (setUpFailed()) return;
    labUp("--hosts 5 --link-rate 100mbit --buffer 64k");
  }

  void startServer(int host, int port) { startIperf3Server("fcl-h" + std::to_string(host), port); }

  // iperf3's JSON report of a client run from host `from`.
  json client(int from, const std::string& args) {
    const CommandOutput out =
        runShell("ip netns exec fcl-h" + std::to_string(from) + " iperf3 -J " + args);
    json doc = json::parse(out.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << out.out;
    return doc;
  }
};

TEST_F(PortModel, ATcpFlowGetsTheModelledRateAndDscp26IsQueuedAsLossless) {
  // What the kernel was given, read back by tc.
  const std::string classes = runShell("tc -n fcl-sw0 class show dev p1").out;
  EXPECT_NE(classes.find("class htb 1:1 root rate 100Mbit ceil 100Mbit"), std::string::npos)
      << classes;
  EXPECT_NE(classes.find("class htb 1:10 parent 1:1 leaf 10: prio 0 rate 50Mbit ceil 100Mbit"),
            std::string::npos)
      << classes;
  const std::string qdiscs = runShell("tc -n fcl-sw0 qdisc show dev p1").out;
  EXPECT_NE(qdiscs.find("qdisc bfifo 20: parent 1:20 limit 64Kb"), std::string::npos) << qdiscs;

  startServer(1, 5301);
  // -O 1: the first second (slow start) is left out; the model is about the steady rate.
  const json best_effort = client(0, "-c 10.200.0.2 -p 5301 -t 4 -O 1");
  const double mbit = best_effort["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6;
  std::cout << "TCP through a 100 Mbit/s port: " << mbit << " Mbit/s received (iperf3)\n";
  EXPECT_GE(mbit, 0.9 * kRateMbit);
  EXPECT_LE(mbit, 1.01 * kRateMbit) << "more than the line rate: the port is not shaped";
  EXPECT_GT(htbClassBytes("fcl-sw0", "p1", "1:20"), 40'000'000) << "best effort carried the flow";
  EXPECT_GE(htbClassBytes("fcl-sw0", "p1", "1:10"), 0);
  EXPECT_LT(htbClassBytes("fcl-sw0", "p1", "1:10"), 100'000)
      << "nothing marked went through the lossless class";

  // The same flow marked DSCP 26 (TOS 0x68) lands in the lossless class.
  startServer(1, 5302);
  const json lossless = client(0, "-c 10.200.0.2 -p 5302 -t 2 --tos 0x68");
  EXPECT_GE(lossless["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6,
            0.9 * kRateMbit);
  EXPECT_GT(htbClassBytes("fcl-sw0", "p1", "1:10"), 20'000'000)
      << "DSCP 26 went through the lossless class";
}

TEST_F(PortModel, AFourToOneIncastOverflowsTheBufferAndDropsAtThePort) {
  for (int port = 5401; port <= 5404; ++port) startServer(0, port);
  // Backlog of the sink's port, sampled while the incast runs.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> max_backlog{0};
  std::thread sampler([&] {
    while (!stop) {
      const int64_t backlog = qdiscStats("fcl-sw0", "p0", "20:").value("backlog", int64_t{0});
      max_backlog = std::max<int64_t>(max_backlog, backlog);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // Four senders at 50 Mbit/s each into one 100 Mbit/s port: half must be dropped there.
  std::vector<std::thread> senders;
  std::vector<json> reports(4);
  for (int i = 0; i < 4; ++i) {
    senders.emplace_back([&, i] {
      reports[static_cast<size_t>(i)] =
          client(i + 1, "-c 10.200.0.1 -p " + std::to_string(5401 + i) + " -u -b 50M -l 1400 -t 3");
    });
  }
  for (auto& sender : senders) sender.join();
  stop = true;
  sampler.join();

  double received_mbit = 0;
  for (const json& report : reports) {
    ASSERT_TRUE(report.contains("end")) << report.dump();
    received_mbit += report["end"]["sum"]["bits_per_second"].get<double>() *
                     (1.0 - report["end"]["sum"]["lost_percent"].get<double>() / 100.0) / 1e6;
  }
  const json sink_queue = qdiscStats("fcl-sw0", "p0", "20:");
  const int64_t drops = sink_queue.value("drops", int64_t{0});
  std::cout << "4x50 Mbit/s into 100 Mbit/s: received " << received_mbit
            << " Mbit/s in all, drops at sw0:p0 " << drops << ", max backlog seen " << max_backlog
            << " bytes (buffer " << kBufferBytes << ")\n";
  EXPECT_GT(drops, 10000) << sink_queue.dump();
  EXPECT_LE(max_backlog, kBufferBytes) << "drop-tail must hold the backlog within the buffer";
  EXPECT_GT(max_backlog, kBufferBytes / 2) << "the buffer filled while the port was oversubscribed";
  EXPECT_LE(received_mbit, 1.01 * kRateMbit);
  EXPECT_GE(received_mbit, 0.85 * kRateMbit) << "the port stayed busy";
  // The senders' own ports were not the bottleneck: nothing dropped on their way in.
  EXPECT_EQ(qdiscStats("fcl-sw0", "p1", "20:").value("drops", int64_t{0}), 0);
}

}  // namespace
}  // namespace fabric_chaos::testing
