// `fabric-chaos traffic` on the real kernel, between two namespaces of a star lab (fct-*, its own
// prefix) whose switch ports model 100 Mbit/s, checked by observers that are not the generator:
// iperf3 (a third-party program) on the same path for the goodput it should match, and `tc -s
// class` in the switch namespace for the rate and the DSCP class that the wire saw. Also: the
// source survives its sink going away and coming back, and both roles stop on SIGTERM with a
// final report.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "injectors/sys/command.h"
#include "injectors/sys/offloads.h"
#include "injectors/sys/sysctl.h"
#include "lab/netns_lab.h"
#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr int64_t kRateBps = 100'000'000;
constexpr double kRateMbit = 100;
const char* const kSinkNs = "fct-h1";
const char* const kSourceNs = "fct-h0";
const char* const kSinkAddress = "10.200.0.2";
const char* const kSinkPort = "p1";  // the switch port towards the sink: the data's egress

// Every JSON report line of a traffic process's output (stderr lines are mixed in and skipped).
std::vector<json> reports(const std::string& output) {
  std::vector<json> out;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
    json doc = json::parse(line, nullptr, false);
    if (!doc.is_discarded() && doc.contains("role")) out.push_back(std::move(doc));
  }
  return out;
}

// Mbit/s between the first report at or after from_ms and the last at or before to_ms, from their
// byte totals: the sink's own goodput over a window, independent of the interval lengths.
double windowMbit(const std::vector<json>& lines, int64_t from_ms, int64_t to_ms) {
  const json* first = nullptr;
  const json* last = nullptr;
  for (const json& line : lines) {
    const int64_t t = line["t_ms"].get<int64_t>();
    if (first == nullptr && t >= from_ms) first = &line;
    if (t <= to_ms) last = &line;
  }
  if (first == nullptr || last == nullptr) return 0;
  const int64_t ms = (*last)["t_ms"].get<int64_t>() - (*first)["t_ms"].get<int64_t>();
  if (ms <= 0) return 0;
  const int64_t bytes = (*last)["bytes"].get<int64_t>() - (*first)["bytes"].get<int64_t>();
  return static_cast<double>(bytes) * 8 / static_cast<double>(ms) / 1000;
}

// t_ms of the first report with bytes > 0; -1 when none.
int64_t firstBytesMs(const std::vector<json>& lines) {
  for (const json& line : lines) {
    if (line["bytes"].get<int64_t>() > 0) return line["t_ms"].get<int64_t>();
  }
  return -1;
}

class TrafficE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE_IPERF3();
    const char* binary = std::getenv("FC_BINARY");
    ASSERT_NE(binary, nullptr) << "FC_BINARY is not set";
    binary_ = binary;
    ASSERT_TRUE(namespacesWithPrefix("fct-").empty()) << "a traffic test lab is already up";
    dir_ = makeTempDir();
    ASSERT_FALSE(dir_.empty());
    runner_ = sys::makeCommandRunner();
    offloads_ = sys::makeEthtoolOffloads();
    sysctls_ = sys::makeProcSysctls();
    lab::LabOptions options;
    options.hosts = 2;
    options.prefix = "fct";
    options.name = "traffic-e2e";
    options.state_dir = dir_ + "/state";
    options.egress = scenarios::EgressModel{kRateBps, 256 * 1024, {26}};
    lab_ = std::make_unique<lab::NetnsLab>(*runner_, *offloads_, *sysctls_, options);
    auto up = lab_->up([](const std::string&) {});
    ASSERT_TRUE(up.isOk()) << up.status().toString();
  }

  void TearDown() override {
    children_.clear();  // SIGKILLs and reaps what is still running
    if (!dir_.empty()) runShell("pkill -f '[i]perf3 .*--logfile " + dir_ + "'");
    if (lab_) {
      auto down = lab_->down([](const std::string&) {});
      EXPECT_TRUE(down.isOk()) << down.toString();
    }
    EXPECT_TRUE(namespacesWithPrefix("fct-").empty()) << "the lab left namespaces";
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `fabric-chaos traffic ARGS` in namespace ns; owned by the test (killed in TearDown).
  ChildProcess& traffic(const std::string& ns, const std::string& args) {
    children_.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        "/bin/sh", "-c", "exec ip netns exec " + ns + " " + binary_ + " traffic " + args}));
    return *children_.back();
  }

  ChildProcess& sink(const std::string& extra = "") {
    ChildProcess& child =
        traffic(kSinkNs, std::string("sink --listen ") + kSinkAddress + ":6000 " + extra);
    EXPECT_TRUE(waitFor([&] { return !reports(child.output()).empty(); }, 5000))
        << "the sink printed no first report: " << child.output();
    return child;
  }

  ChildProcess& source(const std::string& extra) {
    ChildProcess& child =
        traffic(kSourceNs, std::string("source --connect ") + kSinkAddress + ":6000 " + extra);
    EXPECT_TRUE(waitFor([&] { return !reports(child.output()).empty(); }, 5000))
        << "the source printed no first report: " << child.output();
    return child;
  }

  // SIGTERM: exit 0, and the last line is the final report.
  static void stopCleanly(ChildProcess& child, const std::string& what) {
    EXPECT_EQ(child.signalAndWait(SIGTERM, 3000, true), 0) << what << ": " << child.output();
    ASSERT_TRUE(waitFor(
        [&] {
          const auto lines = reports(child.output());
          return !lines.empty() && lines.back().value("final", false);
        },
        2000))
        << what << " printed no final report: " << child.output();
  }

  static json lastReport(ChildProcess& child) {
    const auto lines = reports(child.output());
    return lines.empty() ? json() : lines.back();
  }

  // iperf3 over the same path, h0 -> h1, 4 s without the first (slow-start) second.
  double iperf3Mbit() {
    const CommandOutput started =
        runShell(std::string("ip netns exec ") + kSinkNs + " iperf3 -s -D -1 -p 5301 --logfile " +
                 dir_ + "/iperf3.log");
    EXPECT_EQ(started.exit_code, 0) << started.out;
    EXPECT_TRUE(waitFor(
        [&] {
          return runShell(std::string("ip netns exec ") + kSinkNs + " ss -ltn 'sport = :5301'")
                     .out.find("LISTEN") != std::string::npos;
        },
        5000));
    const CommandOutput out = runShell(std::string("ip netns exec ") + kSourceNs +
                                       " iperf3 -J -c " + kSinkAddress + " -p 5301 -t 4 -O 1");
    const json doc = json::parse(out.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("end")) {
      ADD_FAILURE() << "iperf3: " << out.out;
      return 0;
    }
    return doc["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6;
  }

  std::string binary_;
  std::string dir_;
  std::unique_ptr<sys::CommandRunner> runner_;
  std::unique_ptr<sys::Offloads> offloads_;
  std::unique_ptr<sys::NetnsSysctls> sysctls_;
  std::unique_ptr<lab::NetnsLab> lab_;
  std::vector<std::unique_ptr<ChildProcess>> children_;
};

TEST_F(TrafficE2e, UnlimitedGoodputMatchesIperf3OnTheSamePath) {
  ChildProcess& receiver = sink();
  ChildProcess& sender = source("--duration-s 5");
  EXPECT_EQ(sender.signalAndWait(0, 10000, true), 0)
      << "--duration-s 5 ends the source: " << sender.output();
  const json last_sent = lastReport(sender);
  EXPECT_EQ(last_sent.value("final", false), true) << sender.output();
  // Everything the source's sockets accepted reaches the sink once their buffers drain (the
  // source closed cleanly).
  EXPECT_TRUE(waitFor([&] { return lastReport(receiver)["bytes"] == last_sent["bytes"]; }, 3000))
      << "sent " << last_sent["bytes"] << ", received " << lastReport(receiver)["bytes"];
  stopCleanly(receiver, "sink");
  const auto lines = reports(receiver.output());
  const int64_t started_ms = firstBytesMs(lines);
  ASSERT_GE(started_ms, 0) << receiver.output();
  // Seconds 1-4 of the flow: slow start left out, as iperf3's -O 1 does.
  const double ours = windowMbit(lines, started_ms + 1000, started_ms + 4000);

  const double iperf3 = iperf3Mbit();
  std::cout << "through a 100 Mbit/s port: fabric-chaos traffic " << ours << " Mbit/s, iperf3 "
            << iperf3 << " Mbit/s, ratio " << (iperf3 > 0 ? ours / iperf3 : 0) << "\n";
  EXPECT_GE(ours, 0.85 * kRateMbit);
  EXPECT_LE(ours, 1.01 * kRateMbit) << "more than the line rate: the port is not shaped";
  EXPECT_NEAR(ours / iperf3, 1.0, 0.10);
}

TEST_F(TrafficE2e, RateMbpsPacesTheSourceSeenBySinkAndSwitchPort) {
  ChildProcess& receiver = sink();
  ChildProcess& sender = source("--rate-mbps 30 --flows 4");
  ASSERT_TRUE(waitFor([&] { return lastReport(receiver).value("bytes", int64_t{0}) > 0; }, 5000))
      << sender.output();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t class_before = htbClassBytes("fct-sw0", kSinkPort, "1:1");
  const int64_t t_before = steadyNowNs();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const int64_t class_after = htbClassBytes("fct-sw0", kSinkPort, "1:1");
  const int64_t t_after = steadyNowNs();
  stopCleanly(sender, "source");
  stopCleanly(receiver, "sink");

  const auto lines = reports(receiver.output());
  const int64_t started_ms = firstBytesMs(lines);
  const double sink_mbit = windowMbit(lines, started_ms + 1000, started_ms + 4000);
  ASSERT_GE(class_before, 0);
  // The wire's count includes the Ethernet, IP and TCP headers (about 4.5 % at 1500 bytes).
  const double wire_mbit = static_cast<double>(class_after - class_before) * 8 * 1000 /
                           static_cast<double>(t_after - t_before);
  std::vector<double> interval_mbit;
  for (const json& line : lines) {
    const int64_t t = line["t_ms"].get<int64_t>();
    if (t > started_ms + 1000 && t <= started_ms + 4000) {
      interval_mbit.push_back(line["mbps"].get<double>());
    }
  }
  ASSERT_FALSE(interval_mbit.empty());
  std::sort(interval_mbit.begin(), interval_mbit.end());
  const double median = interval_mbit[interval_mbit.size() / 2];
  std::cout << "--rate-mbps 30: sink " << sink_mbit << " Mbit/s (100 ms reports: min "
            << interval_mbit.front() << ", median " << median << ", max " << interval_mbit.back()
            << "), switch port class 1:1 " << wire_mbit << " Mbit/s\n";
  EXPECT_NEAR(sink_mbit, 30, 4.5);
  EXPECT_NEAR(median, 30, 4.5);
  EXPECT_NEAR(wire_mbit, 30, 4.5);
  // Four flows shared it: each one carried some of it.
  for (const json& flow : lines.back()["flows"]) EXPECT_GT(flow["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(lines.back()["flows"].size(), 4u) << lines.back().dump();
}

TEST_F(TrafficE2e, Dscp26LandsInTheLosslessClass) {
  const int64_t lossless_before = htbClassBytes("fct-sw0", kSinkPort, "1:10");
  const int64_t best_effort_before = htbClassBytes("fct-sw0", kSinkPort, "1:20");
  ASSERT_GE(lossless_before, 0);
  ASSERT_GE(best_effort_before, 0);
  ChildProcess& receiver = sink();
  ChildProcess& sender = source("--dscp 26 --rate-mbps 40 --duration-s 2");
  EXPECT_EQ(sender.signalAndWait(0, 6000, true), 0) << sender.output();
  stopCleanly(receiver, "sink");
  const int64_t received = lastReport(receiver)["bytes"].get<int64_t>();
  const int64_t lossless = htbClassBytes("fct-sw0", kSinkPort, "1:10") - lossless_before;
  const int64_t best_effort = htbClassBytes("fct-sw0", kSinkPort, "1:20") - best_effort_before;
  std::cout << "--dscp 26: sink received " << received << " bytes; switch port class 1:10 "
            << lossless << " bytes, 1:20 " << best_effort << " bytes\n";
  EXPECT_GT(received, 5'000'000);
  EXPECT_GE(lossless, received) << "the data (plus headers) went through the lossless class";
  EXPECT_LT(best_effort, lossless / 100) << "best effort did not carry the flow";
}

TEST_F(TrafficE2e, TheSourceSurvivesItsSinkGoingAwayAndReconnects) {
  ChildProcess* receiver = &sink();
  ChildProcess& sender = source("--rate-mbps 30 --flows 2");
  ASSERT_TRUE(
      waitFor([&] { return lastReport(*receiver).value("bytes", int64_t{0}) > 200'000; }, 5000))
      << sender.output();
  receiver->killAndReap(SIGKILL);
  // The source sees its flows reset, retries every 100 ms against a closed port, and lives.
  ASSERT_TRUE(waitFor(
      [&] {
        const json last = lastReport(sender);
        return last.value("connected", -1) == 0 && last.value("reconnects", 0) >= 4;
      },
      5000))
      << sender.output();
  EXPECT_TRUE(sender.running());
  const json down = lastReport(sender);
  EXPECT_TRUE(down["flows"][0].contains("error")) << down.dump();
  const int64_t bytes_while_down = down["bytes"].get<int64_t>();

  receiver = &sink();
  ASSERT_TRUE(
      waitFor([&] { return lastReport(*receiver).value("bytes", int64_t{0}) > 200'000; }, 5000))
      << "no bytes reached the restarted sink: " << sender.output();
  const json up = lastReport(sender);
  std::cout << "after the sink's restart: " << up.dump() << "\n";
  EXPECT_EQ(up["connected"], 2);
  EXPECT_GT(up["reconnects"].get<int64_t>(), 0);
  EXPECT_GT(up["bytes"].get<int64_t>(), bytes_while_down);
  EXPECT_EQ(lastReport(*receiver)["flows"].size(), 2u);
  stopCleanly(sender, "source");
  stopCleanly(*receiver, "sink");

  // What is fatal: a sink that cannot listen (no such address in its namespace) exits 1 and
  // says why on stderr.
  ChildProcess& lost = traffic(kSinkNs, "sink --listen 10.9.9.9:6000");
  EXPECT_EQ(lost.signalAndWait(0, 3000, true), 1) << lost.output();
  EXPECT_NE(lost.output().find("cannot listen: bind 10.9.9.9:6000"), std::string::npos)
      << lost.output();
}

}  // namespace
}  // namespace fabric_chaos::testing
