// `fabric-chaos traffic --transport verbs`, run INSIDE one VM as root (tests/vm/CMakeLists.txt
// boots it with deploy/vm/run-in-vm.sh): sink and source on the guest's own address, looped back
// through rxe0. Observed from outside the generator: the rxe port's packet counters in sysfs (the
// kernel's), and the two ends' reports against each other. Checks that the sink counts what the
// source wrote, that --rate-mbps holds, that a source outlives its sink and reconnects, and that
// an address without an RDMA device is refused at start.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

const std::string kBinary = FC_BINARY_PATH;

// rxe0 port 1's counter NAME, read by the shell: the kernel's own count of what the device did.
int64_t rxeCounter(const std::string& name) {
  const CommandOutput out =
      runShell("cat /sys/class/infiniband/rxe0/ports/1/hw_counters/" + name + " 2>/dev/null");
  return out.exit_code == 0 && !out.out.empty() ? std::stoll(out.out) : -1;
}

// The report lines a generator printed, parsed; lines that are not JSON are left out.
std::vector<json> reports(const std::string& output) {
  std::vector<json> out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    json doc = json::parse(line, nullptr, false);
    if (doc.is_object() && doc.contains("role")) out.push_back(std::move(doc));
  }
  return out;
}

json lastReport(ChildProcess& child) {
  auto all = reports(child.output());
  return all.empty() ? json::object() : all.back();
}

class VerbsTrafficGuest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/sys/class/infiniband/rxe0")) {
      FAIL() << "no rxe0 in this guest: run it with deploy/vm/run-in-vm.sh (which adds rxe0)";
    }
    address_ = firstUpIpv4Address();
    ASSERT_FALSE(address_.empty()) << "the guest has no IPv4 address on an up interface";
  }

  std::vector<std::string> sink(int port) {
    return {kBinary,
            "traffic",
            "sink",
            "--transport",
            "verbs",
            "--listen",
            address_ + ":" + std::to_string(port),
            "--report-ms",
            "200"};
  }
  std::vector<std::string> source(int port, std::vector<std::string> extra) {
    std::vector<std::string> args{kBinary,
                                  "traffic",
                                  "source",
                                  "--transport",
                                  "verbs",
                                  "--connect",
                                  address_ + ":" + std::to_string(port),
                                  "--report-ms",
                                  "200"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // Waits until the sink has printed its first report (it is listening).
  bool listening(ChildProcess& sink_process) {
    return waitFor([&] { return !reports(sink_process.output()).empty(); }, 30000);
  }

  std::string address_;
};

TEST_F(VerbsTrafficGuest, TheSinkCountsWhatTheSourceWroteAndTheDeviceCarriedIt) {
  ChildProcess sink_process(sink(7731));
  ASSERT_TRUE(listening(sink_process)) << sink_process.output();
  const int64_t sent_before = rxeCounter("sent_pkts");
  const int64_t rcvd_before = rxeCounter("rcvd_pkts");
  ASSERT_GE(sent_before, 0) << "rxe0 has no hw_counters/sent_pkts";

  ChildProcess source_process(
      source(7731, {"--flows", "2", "--message-bytes", "65536", "--duration-s", "3"}));
  ASSERT_EQ(source_process.signalAndWait(0, 60000, true), 0) << source_process.output();
  const json sent = lastReport(source_process);
  ASSERT_TRUE(sent.value("final", false)) << source_process.output();
  EXPECT_EQ(sent["connected"], 2);
  EXPECT_EQ(sent["reconnects"], 0);

  // The source disconnected on exit: each flow is listed closed, with what it carried, in the
  // report that saw it close. The two can close in different report periods, so gather them by
  // peer over all reports; the sink's byte total is cumulative.
  std::map<std::string, int64_t> closed_flows;
  int64_t arrived = 0;
  ASSERT_TRUE(waitFor(
      [&] {
        closed_flows.clear();
        for (const json& r : reports(sink_process.output())) {
          for (const json& f : r["flows"])
            if (f["open"] == false) closed_flows[f["peer"].get<std::string>()] = f["bytes"];
          if (closed_flows.size() == 2) {
            arrived = r["bytes"].get<int64_t>();
            return true;
          }
        }
        return false;
      },
      20000))
      << sink_process.output();
  ASSERT_EQ(sink_process.signalAndWait(SIGTERM, 20000, true), 0);
  const int64_t acked = sent["bytes"].get<int64_t>();
  ASSERT_GT(acked, 10 << 20) << "less than 10 MiB in 3 s";
  // Every acknowledged byte arrived; at most the writes still in flight at exit (2 flows x 16 x
  // 64 KiB) arrived unacknowledged.
  EXPECT_GE(arrived, acked);
  EXPECT_LE(arrived - acked, 2 * 16 * 65536);
  // Per flow, too: the sink's two flows are the source's two.
  std::vector<int64_t> at_sink;
  for (const auto& [peer, bytes] : closed_flows) at_sink.push_back(bytes);
  std::vector<int64_t> at_source;
  for (const json& f : sent["flows"]) at_source.push_back(f["bytes"]);
  std::sort(at_sink.begin(), at_sink.end());
  std::sort(at_source.begin(), at_source.end());
  ASSERT_EQ(at_sink.size(), 2u);
  ASSERT_EQ(at_source.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GE(at_sink[i], at_source[i]);
    EXPECT_LE(at_sink[i] - at_source[i], 16 * 65536);
  }

  // The device sent and received them: at the port MTU (1024 bytes on a 1500-byte netdev, 4096
  // at most) every 64 KiB write is 16-64 packets, plus the ACKs that rcvd/sent also count.
  const int64_t sent_pkts = rxeCounter("sent_pkts") - sent_before;
  const int64_t rcvd_pkts = rxeCounter("rcvd_pkts") - rcvd_before;
  std::printf("verbs traffic: %lld bytes acked, %lld arrived, rxe0 sent %lld / rcvd %lld packets\n",
              static_cast<long long>(acked), static_cast<long long>(arrived),
              static_cast<long long>(sent_pkts), static_cast<long long>(rcvd_pkts));
  EXPECT_GE(sent_pkts, arrived / 4096);
  EXPECT_GE(rcvd_pkts, arrived / 4096);
  EXPECT_LE(sent_pkts, 3 * (arrived / 1024 + 1000)) << "far more packets than the data needs";
}

TEST_F(VerbsTrafficGuest, APacedSourceHoldsItsRateAndSharesItOverItsFlows) {
  ChildProcess sink_process(sink(7732));
  ASSERT_TRUE(listening(sink_process)) << sink_process.output();
  ChildProcess source_process(source(
      7732, {"--flows", "2", "--rate-mbps", "40", "--duration-s", "4", "--report-ms", "1000"}));
  ASSERT_EQ(source_process.signalAndWait(0, 60000, true), 0) << source_process.output();
  const json sent = lastReport(source_process);
  ASSERT_TRUE(sent.contains("bytes")) << source_process.output();
  // Over the whole run (connection set-up included), 40 Mbit/s is 20 MB in 4 s.
  const double mbps = sent["bytes"].get<double>() * 8 / 4e6;
  EXPECT_GT(mbps, 34) << source_process.output();
  EXPECT_LT(mbps, 42) << source_process.output();
  // The share is judged from the first report in which both flows had moved data: the second
  // QP's connection can come up half a second after the first (one run here: 2.3 MB apart over
  // the whole run, all of it before flow 1 was connected).
  json both_up;
  for (const json& report : reports(source_process.output())) {
    if (report.contains("flows") && report["flows"].size() == 2 &&
        report["flows"][0].value("bytes", 0) > 0 && report["flows"][1].value("bytes", 0) > 0) {
      both_up = report;
      break;
    }
  }
  ASSERT_TRUE(both_up.is_object()) << source_process.output();
  const int64_t flow0 =
      sent["flows"][0].value("bytes", int64_t{0}) - both_up["flows"][0].value("bytes", int64_t{0});
  const int64_t flow1 =
      sent["flows"][1].value("bytes", int64_t{0}) - both_up["flows"][1].value("bytes", int64_t{0});
  ASSERT_GT(flow0 + flow1, 0) << "no report after both flows were up:\n" << source_process.output();
  EXPECT_LT(std::abs(flow0 - flow1), (flow0 + flow1) / 10) << "the tokens go round robin";
  // Every acknowledged byte reaches the sink's count, at the latest in a report after the
  // source is gone (its receive completions may wait for the sink's next poll).
  const int64_t acked = sent["bytes"].get<int64_t>();
  EXPECT_TRUE(
      waitFor([&] { return lastReport(sink_process)["bytes"].get<int64_t>() >= acked; }, 5000))
      << "the sink counted " << lastReport(sink_process)["bytes"] << " of " << acked
      << " acknowledged bytes";
  ASSERT_EQ(sink_process.signalAndWait(SIGTERM, 20000, true), 0);
  EXPECT_GE(lastReport(sink_process)["bytes"].get<int64_t>(), acked);
}

TEST_F(VerbsTrafficGuest, ASourceOutlivesItsSinkAndReconnectsWhenItComesBack) {
  ChildProcess source_process(source(7733, {"--flows", "1", "--rate-mbps", "20"}));
  // No sink yet: the flow is refused and retried.
  ASSERT_TRUE(waitFor(
      [&] {
        const json r = lastReport(source_process);
        return r.value("reconnects", 0) >= 2 && r["flows"][0].contains("error");
      },
      30000))
      << source_process.output();

  auto sink_process = std::make_unique<ChildProcess>(sink(7733));
  ASSERT_TRUE(listening(*sink_process)) << sink_process->output();
  ASSERT_TRUE(waitFor(
      [&] {
        const json r = lastReport(source_process);
        return r.value("connected", 0) == 1 && r.value("bytes", 0) > 0;
      },
      30000))
      << source_process.output();

  // The sink dies without a word: the flow fails (its writes go unanswered or the peer's
  // kernel disconnects it) and is retried.
  sink_process->killAndReap(SIGKILL);
  ASSERT_TRUE(waitFor([&] { return lastReport(source_process).value("connected", 1) == 0; }, 30000))
      << source_process.output();
  const int64_t bytes_while_down = lastReport(source_process)["bytes"];

  sink_process = std::make_unique<ChildProcess>(sink(7733));
  ASSERT_TRUE(listening(*sink_process)) << sink_process->output();
  ASSERT_TRUE(waitFor(
      [&] {
        const json r = lastReport(source_process);
        return r.value("connected", 0) == 1 && r["bytes"].get<int64_t>() > bytes_while_down;
      },
      30000))
      << source_process.output();
  EXPECT_EQ(source_process.signalAndWait(SIGTERM, 20000, true), 0);
  EXPECT_TRUE(lastReport(source_process).value("final", false)) << source_process.output();
}

TEST_F(VerbsTrafficGuest, AnAddressWithoutAnRdmaDeviceIsRefusedAtStart) {
  // No interface of the guest has this address, so no RDMA device carries it. (Loopback would
  // not do: rdma_cm binds 127.0.0.1 to whichever device it finds.)
  ChildProcess sink_process(
      {kBinary, "traffic", "sink", "--transport", "verbs", "--listen", "10.255.0.1:7734"});
  EXPECT_EQ(sink_process.signalAndWait(0, 30000, true), 1);
  EXPECT_NE(sink_process.output().find("no RDMA device carries 10.255.0.1"), std::string::npos)
      << sink_process.output();
}

}  // namespace
}  // namespace fabric_chaos::testing
