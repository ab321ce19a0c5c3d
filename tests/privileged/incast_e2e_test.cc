// incast end to end on a namespace lab whose switch ports are modelled (`lab up --hosts 5
// --link-rate 100mbit --buffer 128k`), through serve's REST API. A 4-rank TCP ring runs on h0..h3
// while h0, h1, h2 and h4 send into h3. Observers from outside the product: `tc -s` on h3's switch
// port (the bytes its best-effort class sent, the drops of its buffer) and iperf3 (a third-party
// flow on the victim's path, before and during the incast). The run's own record (the generators'
// reports, the step's iteration times) is checked against them. Afterwards no generator process
// and no emitter record is left; bad targets are refused at submission.

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr double kRateMbit = 100;

json incastScenario(const std::string& name, json target, int64_t duration_ms) {
  return {{"version", 1},
          {"name", name},
          {"workload",
           {{"hosts", {"h0", "h1", "h2", "h3"}},
            {"message_bytes", 262144},
            {"compute_ms", 5},
            {"peer_timeout_ms", 30000}}},
          {"baseline_ms", 2000},
          {"steps",
           {{{"kind", "incast"},
             {"target", std::move(target)},
             {"at_ms", 0},
             {"duration_ms", duration_ms},
             {"params", {{"flows_per_source", 2}}}}}},
          {"recovery_ms", 3000},
          {"max_duration_ms", 120000}};
}

int generatorProcesses() {
  return std::atoi(runShell("pgrep -c -f '[t]raffic (source|sink) --' || true").out.c_str());
}

size_t emitterRecords(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/state/logs/emitters", ec)) {
    n += e.path().extension() == ".json";
  }
  return n;
}

class IncastOnAModelledLab : public LabFixture {
 protected:
  IncastOnAModelledLab() : LabFixture(/*needs_iperf3=*/true) {}
  void SetUp() override {
    LabFixture::SetUp();
    if (setUpFailed()) return;
    ASSERT_NO_FATAL_FAILURE(labUp("--hosts 5 --link-rate 100mbit --buffer 128k"));
    startServe();
  }

  // iperf3 from h2 to h3 (the ring's own hop into the victim) for `seconds`: Mbit/s received.
  double victimPathMbit(int server_port, int seconds) {
    startIperf3Server("fcl-h3", server_port);
    const CommandOutput out =
        runShell("ip netns exec fcl-h2 iperf3 -J -c 10.200.0.4 -p " + std::to_string(server_port) +
                 " -t " + std::to_string(seconds));
    const json doc = json::parse(out.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("end")) {
      ADD_FAILURE() << "iperf3: " << out.out;
      return 0;
    }
    return doc["end"]["sum_received"]["bits_per_second"].get<double>() / 1e6;
  }
};

TEST_F(IncastOnAModelledLab, FourSourcesFillTheSinkPortSlowTheRingAndLeaveNothingBehind) {
  const double before_mbit = victimPathMbit(5401, 2);
  std::cout << "iperf3 h2 -> h3 before the incast: " << before_mbit << " Mbit/s\n";
  EXPECT_GE(before_mbit, 0.85 * kRateMbit);

  const json buffer_before = qdiscStats("fcl-sw0", "p3", "20:");
  ASSERT_FALSE(buffer_before.is_null()) << runShell("tc -n fcl-sw0 -s qdisc show dev p3").out;

  const int64_t id = startRun(
      port_,
      incastScenario("incast-e2e", {{"host", "h3"}, {"sources", {"h0", "h1", "h2", "h4"}}}, 6000));
  ASSERT_GT(id, 0);
  const std::string events_path = "/v1/runs/" + std::to_string(id) + "/events";
  auto seen = [&](const char* kind) {
    return waitFor(
        [&] {
          const json events = httpRequest(port_, "GET", events_path).json();
          return events.contains("events") && !eventsOfKind(events["events"], kind).empty();
        },
        60000);
  };
  // The port's best-effort bytes over the fault's window, as the API reports its ends (a few ms
  // late each: the window seen here is slightly shifted, not shortened).
  ASSERT_TRUE(seen("fault_applied")) << "the incast was never applied";
  const int64_t sent_at_apply = htbClassBytes("fcl-sw0", "p3", "1:20");
  ASSERT_GE(sent_at_apply, 0) << runShell("tc -n fcl-sw0 -s class show dev p3").out;
  EXPECT_EQ(generatorProcesses(), 5) << "one sink and four sources";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double during_mbit = victimPathMbit(5402, 2);
  std::cout << "iperf3 h2 -> h3 during the incast: " << during_mbit << " Mbit/s\n";
  EXPECT_LE(during_mbit, 0.5 * before_mbit) << "the victim's path did not congest";
  ASSERT_TRUE(seen("fault_reverted"));
  const int64_t sent = htbClassBytes("fcl-sw0", "p3", "1:20") - sent_at_apply;

  const json run = waitForFinalRun(port_, id, 120);
  ASSERT_TRUE(run.contains("state")) << run.dump(2);
  EXPECT_NE(run.value("state", ""), "error") << run.dump(2);
  const json buffer_after = qdiscStats("fcl-sw0", "p3", "20:");
  const int64_t drops =
      buffer_after.value("drops", int64_t{0}) - buffer_before.value("drops", int64_t{0});

  const json events = httpRequest(port_, "GET", events_path).json()["events"];
  const auto reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_EQ(reverted.size(), 1u) << events.dump(2);
  const json& observed = reverted[0]["detail"]["observed"];
  ASSERT_EQ(observed.value("running", false), true) << observed.dump(2);
  const int64_t sink_bytes = observed["sink"]["report"].value("bytes", int64_t{0});
  ASSERT_EQ(observed["sources"].size(), 4u);
  int64_t source_bytes = 0;
  for (const json& source : observed["sources"]) {
    source_bytes += source["report"].value("bytes", int64_t{0});
    EXPECT_GT(source["report"].value("bytes", int64_t{0}), 0) << source.dump();
  }
  const double jain = observed.value("jain_fairness", 0.0);
  const json& step = run["result"]["analysis"]["steps"][0];
  std::cout << "p3 best effort sent " << sent << " bytes during the incast (tc), dropped " << drops
            << "; the sink received " << sink_bytes << " bytes, the sources sent " << source_bytes
            << ", Jain fairness " << jain << "; ring p99 iteration "
            << step["baseline_iteration_ms"]["p99"] << " ms before, "
            << step["fault_iteration_ms"]["p99"] << " ms during (x" << step["p99_slowdown"]
            << "), retained " << step["retained"] << "\n";

  // 6 s of a 100 Mbit/s port is 75 MB; the incast keeps it busy nearly all that time.
  EXPECT_GT(sent, 0.8 * 75'000'000) << "the sink's port was not kept busy";
  EXPECT_LE(sent, 1.05 * 75'000'000) << "more than the line rate left the port";
  EXPECT_GT(drops, 0) << "eight flows into a 128 KiB buffer never overflowed it";
  // What the sink's generator counts is what crossed p3 for it: most of the port's bytes in the
  // window (the rest is the ring's hop and iperf3), give or take the window's ends.
  const double share = static_cast<double>(sink_bytes) / static_cast<double>(sent);
  std::cout << "the sink's generator counted " << share << " of the port's bytes\n";
  EXPECT_GE(share, 0.75);
  EXPECT_LE(share, 1.05);
  EXPECT_LE(sink_bytes, source_bytes) << "the sink cannot receive more than was sent";
  EXPECT_GE(jain, 0.25);
  EXPECT_LE(jain, 1.0);
  // The ring's hop into h3 crosses the congested port.
  ASSERT_FALSE(step["p99_slowdown"].is_null()) << step.dump(2);
  EXPECT_GT(step["p99_slowdown"].get<double>(), 1.5) << step.dump(2);
  EXPECT_LT(step["retained"].get<double>(), 0.9) << step.dump(2);

  // The step's aggressors are the incast's four sources, sharing about the port.
  ASSERT_TRUE(step["aggressors"].is_object()) << step.dump(2);
  EXPECT_EQ(step["aggressors"]["goodput_mbps"].size(), 4u);
  EXPECT_GT(step["aggressors"]["total_mbps"].get<double>(), 0.7 * kRateMbit);
  EXPECT_LE(step["aggressors"]["total_mbps"].get<double>(), 1.05 * kRateMbit);
  EXPECT_DOUBLE_EQ(step["aggressors"]["jain_fairness"].get<double>(), jain);

  // The run's own switch telemetry agrees with tc: the hottest queue of the step is h3's port,
  // with the drops tc counted (they all happened during the incast) and about the bytes tc saw
  // between the apply and revert events.
  ASSERT_TRUE(step["hottest_queue"].is_object()) << step.dump(2);
  const json& hottest = step["hottest_queue"];
  std::cout << "hottest queue (the run's telemetry): " << hottest.dump() << "\n";
  EXPECT_EQ(hottest["source"], "sw0/p3/best_effort");
  EXPECT_NEAR(hottest["drops"].get<double>(), static_cast<double>(drops), 0.1 * drops + 5);
  EXPECT_NEAR(hottest["tx_bytes"].get<double>(), static_cast<double>(sent), 0.1 * sent);
  EXPECT_GT(hottest["peak_backlog_bytes"].get<int64_t>(), 64 * 1024) << "the buffer never filled";
  EXPECT_LE(hottest["peak_backlog_bytes"].get<int64_t>(), 128 * 1024 + 1514);
  const json telemetry = httpRequest(port_, "GET",
                                     "/v1/runs/" + std::to_string(id) +
                                         "/telemetry?source=sw0/p3/best_effort&metric=tx_bytes")
                             .json();
  ASSERT_EQ(telemetry["series"].size(), 1u) << telemetry.dump();
  const json& tx = telemetry["series"][0];
  // Every 100 ms over baseline (2 s) + incast (6 s) + recovery (3 s), give or take a few ticks.
  EXPECT_GE(tx["t_ms"].size(), 90u);
  EXPECT_LE(tx["t_ms"].size(), 125u);

  // The generators' counters, stored once a second while the incast was in force: every source
  // and the sink, each only growing, never past the final report taken at the revert, and the
  // sink's last reading within 1.5 s of line rate of it (the health check runs once a second).
  const json traffic =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/telemetry").json();
  std::map<std::string, json> traffic_series;
  for (const json& s : traffic["series"]) {
    if (s.value("type", "") == "traffic") {
      traffic_series[s["source"].get<std::string>() + " " + s["metric"].get<std::string>()] = s;
    }
  }
  auto lastOf = [](const json& s) { return s["values"].back().get<int64_t>(); };
  auto nonDecreasing = [](const json& s) {
    for (size_t i = 1; i < s["values"].size(); ++i) {
      if (s["values"][i].get<int64_t>() < s["values"][i - 1].get<int64_t>()) return false;
    }
    return true;
  };
  const std::vector<std::string> source_hosts = {"h0", "h1", "h2", "h4"};  // the step's order
  for (size_t i = 0; i < source_hosts.size(); ++i) {
    const std::string& host = source_hosts[i];
    const json& sent_series = traffic_series["traffic/incast/" + host + " sent_bytes"];
    ASSERT_TRUE(sent_series.is_object())
        << "no traffic telemetry for " << host << ": " << traffic.dump().substr(0, 2000);
    EXPECT_EQ(sent_series["role"], "source");
    EXPECT_GE(sent_series["values"].size(), 3u) << "about one reading a second for 6 s";
    EXPECT_LE(sent_series["values"].size(), 8u);
    EXPECT_TRUE(nonDecreasing(sent_series)) << sent_series.dump();
    EXPECT_GT(lastOf(sent_series), 0);
    EXPECT_LE(lastOf(sent_series), observed["sources"][i]["report"].value("bytes", int64_t{0}));
  }
  const json& received = traffic_series["traffic/incast/h3/sink received_bytes"];
  ASSERT_TRUE(received.is_object()) << "no sink telemetry";
  EXPECT_TRUE(nonDecreasing(received)) << received.dump();
  EXPECT_LE(lastOf(received), sink_bytes);
  EXPECT_GE(lastOf(received), sink_bytes - static_cast<int64_t>(1.5 * kRateMbit * 1e6 / 8))
      << received.dump();
  std::cout << "sink telemetry: " << received["values"].size() << " readings, last "
            << lastOf(received) << " of the final " << sink_bytes << " bytes\n";

  EXPECT_TRUE(waitFor([] { return generatorProcesses() == 0; }, 5000))
      << runShell("pgrep -af '[t]raffic (source|sink)'").out;
  EXPECT_EQ(emitterRecords(dir_), 0u);
}

TEST_F(IncastOnAModelledLab, BadTargetsAndParametersAreRefusedAtSubmission) {
  auto submit = [&](const json& target) {
    return httpRequest(port_, "POST", "/v1/runs",
                       json{{"scenario", incastScenario("incast-bad", target, 1000)}}.dump());
  };
  HttpReply reply = submit({{"host", "h3"}, {"sources", {"h0", "h3"}}});
  EXPECT_EQ(reply.status, 422) << reply.body;
  EXPECT_NE(reply.body.find("sources[1]: host h3 is the sink"), std::string::npos) << reply.body;
  reply = submit({{"host", "h3"}, {"sources", {"h9"}}});
  EXPECT_EQ(reply.status, 422) << reply.body;
  EXPECT_NE(reply.body.find("sources[0]: host h9 is not in fabric"), std::string::npos)
      << reply.body;
  reply = submit({{"labels", {{"rack", "r0"}}}});
  EXPECT_EQ(reply.status, 422) << reply.body;
  EXPECT_NE(reply.body.find("incast has one sink"), std::string::npos) << reply.body;

  // A rate out of its range is a 422, a rate that is not a number a 400; both name the field.
  json slow = incastScenario("incast-rate", {{"host", "h3"}, {"sources", {"h0"}}}, 1000);
  slow["steps"][0]["params"]["rate_mbps"] = 0;
  reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", slow}}.dump());
  EXPECT_EQ(reply.status, 422) << reply.body;
  EXPECT_NE(reply.body.find("steps[0].params: rate_mbps: must be an integer in 1..400000"),
            std::string::npos)
      << reply.body;
  slow["steps"][0]["params"]["rate_mbps"] = "fast";
  reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", slow}}.dump());
  EXPECT_EQ(reply.status, 400) << reply.body;
  EXPECT_NE(reply.body.find("rate_mbps: must be an integer"), std::string::npos) << reply.body;

  json flap = incastScenario("flap-with-sources", {{"host", "h3"}, {"sources", {"h0"}}}, 0);
  flap["steps"][0] = {{"kind", "link_flap"},
                      {"target", {{"host", "h3"}, {"sources", {"h0"}}}},
                      {"params", {{"down_ms", 100}}}};
  reply = httpRequest(port_, "POST", "/v1/runs", json{{"scenario", flap}}.dump());
  EXPECT_EQ(reply.status, 400) << reply.body;
  EXPECT_NE(reply.body.find("only traffic kinds (incast, hot_spot) take sources"),
            std::string::npos)
      << reply.body;
  EXPECT_EQ(generatorProcesses(), 0);
}

}  // namespace
}  // namespace fabric_chaos::testing
