// hot_spot end to end on a leaf-spine namespace lab with modelled 100 Mbit/s ports (`lab up
// --topology leaf-spine --hosts-per-leaf 3 --link-rate 100mbit`), through serve's REST API.
// A 4-rank TCP ring runs on h0, h1 (leaf l0) and h3, h4 (leaf l1), so one ring hop (h1 -> h3)
// leaves l0 by one of its two uplinks. h2 sends elephants to h5, neither of them a ring member,
// pinned to one of l0's uplinks: `path: busiest` collides with the ring's hop, `path: idlest`
// takes the other spine. Observers from outside the product: the uplinks' transmit counters
// (`ip -s link` in the leaf) over the fault's window, and `ip route get` for the forwarding
// lookup the injector relies on. The ring must slow down in the collision and not in the lucky
// placement.

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "injectors/sys/forwarding.h"
#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr double kRateMbit = 100;
constexpr int64_t kFaultMs = 6000;

json hotSpotScenario(const std::string& name, const json& target, const json& params) {
  return {{"version", 1},
          {"name", name},
          {"workload",
           {{"hosts", {"h0", "h1", "h3", "h4"}},
            {"message_bytes", 262144},
            {"compute_ms", 5},
            {"peer_timeout_ms", 30000}}},
          {"baseline_ms", 3000},
          {"steps",
           {{{"kind", "hot_spot"},
             {"target", target},
             {"at_ms", 0},
             {"duration_ms", kFaultMs},
             {"params", params}}}},
          {"recovery_ms", 3000},
          {"max_duration_ms", 120000}};
}

const json kUplinksOfL0 = {
    {"labels", {{"tier", "uplink"}, {"leaf", "l0"}}}, {"sources", {"h2"}}, {"sink", "h5"}};

int generatorProcesses() {
  return std::atoi(runShell("pgrep -c -f '[t]raffic (source|sink) --' || true").out.c_str());
}

// What one run showed: the run's own record and the uplinks' counters over the fault window.
struct Observed {
  json observed;  // the fault_reverted event's observation
  json step;      // the analysis of the step
  std::string loaded_port;
  int64_t up0 = 0;
  int64_t up1 = 0;
};

class HotSpotOnALeafSpine : public LabFixture {
 protected:
  void SetUp() override {
    LabFixture::SetUp();
    if (setUpFailed()) return;
    labUp(
        "--topology leaf-spine --leaves 2 --spines 2 --hosts-per-leaf 3 --link-rate 100mbit "
        "--buffer 128k");
  }

  Observed runHotSpot(const std::string& path_choice) {
    Observed out;
    const int64_t id = startRun(
        port_, hotSpotScenario("hot-spot-" + path_choice, kUplinksOfL0,
                               {{"flows", 4}, {"path", path_choice}, {"sample_ms", 1000}}));
    EXPECT_GT(id, 0);
    const std::string events_path = "/v1/runs/" + std::to_string(id) + "/events";
    auto seen = [&](const char* kind) {
      return waitFor(
          [&] {
            const json events = httpRequest(port_, "GET", events_path).json();
            return events.contains("events") && !eventsOfKind(events["events"], kind).empty();
          },
          60000);
    };
    EXPECT_TRUE(seen("fault_applied")) << "the hot spot was never applied";
    const int64_t up0_at_apply = linkTxBytes("fcl-l0", "up0");
    const int64_t up1_at_apply = linkTxBytes("fcl-l0", "up1");
    EXPECT_EQ(generatorProcesses(), 2) << "one sink and one source";
    EXPECT_TRUE(seen("fault_reverted"));
    out.up0 = linkTxBytes("fcl-l0", "up0") - up0_at_apply;
    out.up1 = linkTxBytes("fcl-l0", "up1") - up1_at_apply;
    const json run = waitForFinalRun(port_, id, 120);
    EXPECT_NE(run.value("state", ""), "error") << run.dump(2);
    if (!run.contains("result")) ADD_FAILURE() << "no final run; serve said:\n" << serve_->output();
    const json events = httpRequest(port_, "GET", events_path).json()["events"];
    const auto reverted = eventsOfKind(events, "fault_reverted");
    if (reverted.size() == 1) out.observed = reverted[0]["detail"]["observed"];
    if (run.contains("result")) out.step = run["result"]["analysis"]["steps"][0];
    out.loaded_port = out.observed["path"].value("port", "");
    std::cout << path_choice << ": the product pinned to " << out.loaded_port << " ("
              << out.observed["path"].dump() << "); l0 sent " << out.up0 << " bytes by up0 and "
              << out.up1 << " by up1 during the fault; ring retained " << out.step["retained"]
              << ", p99 x" << out.step["p99_slowdown"] << "; aggressors "
              << out.step["aggressors"].dump() << "\n";
    EXPECT_TRUE(waitFor([] { return generatorProcesses() == 0; }, 5000))
        << runShell("pgrep -af '[t]raffic (source|sink)'").out;
    return out;
  }
};

// The adapter the injector steers with, against iproute2 asking the same kernel.
TEST_F(HotSpotOnALeafSpine, ForwardingLookupAgreesWithIpRouteGet) {
  auto forwarding = sys::makeKernelForwarding();
  std::vector<int> ports;
  for (int port = 20000; port < 20032; ++port) ports.push_back(port);
  auto egress =
      forwarding->egressInterfaces("fcl-l0", {"br0", "10.210.0.3", "10.210.1.3", 7720}, ports);
  ASSERT_TRUE(egress.isOk()) << egress.status().toString();
  ASSERT_EQ(egress->size(), ports.size());
  int up1 = 0;
  for (size_t i = 0; i < ports.size(); ++i) {
    const CommandOutput route =
        runShell("ip -n fcl-l0 -j route get 10.210.1.3 from 10.210.0.3 iif br0 ipproto tcp sport " +
                 std::to_string(ports[i]) + " dport 7720");
    const json doc = json::parse(route.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << route.out;
    EXPECT_EQ((*egress)[i], doc[0].value("dev", "")) << "sport " << ports[i];
    up1 += (*egress)[i] == "up1";
  }
  std::cout << up1 << " of " << ports.size() << " source ports hash onto up1\n";
  EXPECT_GT(up1, 0);
  EXPECT_LT(up1, static_cast<int>(ports.size())) << "both uplinks are equal-cost paths";

  // No route: a destination no leaf announces.
  auto none =
      forwarding->egressInterfaces("fcl-l0", {"br0", "10.210.0.3", "10.99.0.1", 7720}, {20000});
  EXPECT_FALSE(none.isOk());
  auto missing =
      forwarding->egressInterfaces("fcl-l0", {"nope0", "10.210.0.3", "10.210.1.3", 1}, {20000});
  EXPECT_EQ(missing.status().code(), core::StatusCode::kNotFound);
}

TEST_F(HotSpotOnALeafSpine, TheBusiestUplinkCollidesWithTheRingTheIdlestSparesIt) {
  startServe();
  const Observed busiest = runHotSpot("busiest");
  const Observed idlest = runHotSpot("idlest");

  for (const Observed* run : {&busiest, &idlest}) {
    ASSERT_TRUE(run->observed.contains("path")) << run->observed.dump(2);
    ASSERT_TRUE(run->loaded_port == "fcl-l0/up0" || run->loaded_port == "fcl-l0/up1")
        << run->loaded_port;
    // The counters agree with the product: the elephants (4 flows from h2) kept the chosen
    // uplink busy for the window (75 MB at 100 Mbit/s in 6 s; the window seen here starts and
    // ends with the API's events, polled, so it is up to a second short).
    const bool on_up1 = run->loaded_port == "fcl-l0/up1";
    const int64_t loaded = on_up1 ? run->up1 : run->up0;
    EXPECT_GT(loaded, 0.65 * kRateMbit / 8 * 1e6 * kFaultMs / 1000);
    EXPECT_LE(loaded, 1.05 * kRateMbit / 8 * 1e6 * kFaultMs / 1000);
    EXPECT_EQ(run->observed["path"]["sources"][0]["source_ports"].size(), 4u);
    EXPECT_EQ(run->observed["path"]["sources"][0]["egress"], on_up1 ? "up1" : "up0");
    ASSERT_TRUE(run->step["aggressors"].is_object()) << run->step.dump(2);
    EXPECT_GT(run->step["aggressors"]["total_mbps"].get<double>(), 0.2 * kRateMbit);
  }
  // Each run has its own ring, whose hop h1 -> h3 hashes onto either uplink: what each choice
  // took is judged against the counters it sampled, not against the other run.
  for (const auto& [run, busiest_wanted] : {std::pair{&busiest, true}, std::pair{&idlest, false}}) {
    const json& sampled = run->observed["path"]["candidates"];
    ASSERT_EQ(sampled.size(), 2u);
    const bool first_hotter =
        sampled[0]["tx_bytes"].get<double>() > sampled[1]["tx_bytes"].get<double>();
    const json& expected = sampled[first_hotter == busiest_wanted ? 0 : 1];
    EXPECT_EQ(run->loaded_port, expected["port"].get<std::string>()) << sampled.dump();
  }
  // In the collision the other uplink saw none of the elephants (nor the ring's data).
  const int64_t busiest_other = busiest.loaded_port == "fcl-l0/up1" ? busiest.up0 : busiest.up1;
  const int64_t busiest_loaded = busiest.loaded_port == "fcl-l0/up1" ? busiest.up1 : busiest.up0;
  EXPECT_LT(busiest_other, 0.05 * busiest_loaded);
  // Before each apply the ring's hop h1 -> h3 made one uplink far busier than the other (its
  // data against the acknowledgements of h4 -> h0's).
  const json& candidates = busiest.observed["path"]["candidates"];
  ASSERT_EQ(candidates.size(), 2u);
  const double hot =
      std::max(candidates[0]["tx_bytes"].get<double>(), candidates[1]["tx_bytes"].get<double>());
  const double cold =
      std::min(candidates[0]["tx_bytes"].get<double>(), candidates[1]["tx_bytes"].get<double>());
  EXPECT_GT(hot, 5 * cold) << candidates.dump();

  // The collision costs the ring far more than the other placement. That one is not always free:
  // the acknowledgements of the ring's hop h4 -> h0 leave l0 by whichever uplink their own
  // five-tuple hashes to, and when that is the "idlest" one they queue behind the elephants
  // (measured: retained 0.98-1.00 when they did not, 0.58 when they did).
  const double retained_busiest = busiest.step["retained"].get<double>();
  const double retained_idlest = idlest.step["retained"].get<double>();
  EXPECT_LT(retained_busiest, 0.7) << busiest.step.dump(2);
  EXPECT_GT(retained_idlest, retained_busiest + 0.2) << idlest.step.dump(2);
  EXPECT_GT(busiest.step["p99_slowdown"].get<double>(), 1.3) << busiest.step.dump(2);
  EXPECT_GT(busiest.step["p99_slowdown"].get<double>(), idlest.step["p99_slowdown"].get<double>());

  // Bad targets are refused at submission, naming the field.
  json bad = kUplinksOfL0;
  bad["sink"] = "h1";
  HttpReply reply =
      httpRequest(port_, "POST", "/v1/runs",
                  json{{"scenario", hotSpotScenario("hot-spot-bad", bad, json::object())}}.dump());
  EXPECT_EQ(reply.status, 422) << reply.body;
  EXPECT_NE(reply.body.find("sink: host h1 sits on l0 with the sources"), std::string::npos)
      << reply.body;
  EXPECT_EQ(generatorProcesses(), 0);
}

}  // namespace
}  // namespace fabric_chaos::testing
