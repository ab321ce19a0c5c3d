// The simulated agents of `fabric-chaos agent-sim`: every kind of the real agent offered and
// checked by it, nothing applied but everything recorded, and the real AgentService protocol in
// front (leases, revert) working unchanged over them.

#include "agent/simulated_agent.h"

#include <gtest/gtest.h>

#include "agent/agent_service.h"
#include "tests/fakes/fake_agent.h"

namespace fabric_chaos::agent {
namespace {

using nlohmann::json;

injectors::Fault flapOf(const std::string& ifname) {
  injectors::Fault fault;
  fault.kind = "link_flap";
  fault.target = injectors::InterfaceTarget{"", ifname};
  fault.params = {{"down_ms", 1000}};
  return fault;
}

TEST(SimulatedAgent, OffersTheRealAgentsKindsAsAvailableAndLetsItCheckParameters) {
  testing::FakeAgent real;
  real.kinds = {{"link_flap", "flap", true, "", "netlink"},
                {"packet_loss", "loss", false, "no sch_netem", "netem"}};
  FanoutRecorder recorder;
  SimulatedAgent sim(3, "sim0003", "eth0", "127.1.0.4", real, recorder);
  const auto kinds = sim.capabilities();
  ASSERT_EQ(kinds.size(), 2u);
  for (const auto& kind : kinds) {
    EXPECT_TRUE(kind.available) << kind.kind;
    EXPECT_EQ(kind.backend, "simulated");
    EXPECT_TRUE(kind.reason.empty());
  }
  EXPECT_TRUE(sim.validateFault("link_flap", json::object()).isOk());
  EXPECT_FALSE(sim.validateFault("no_such_kind", json::object()).isOk());
  auto info = sim.info();
  ASSERT_TRUE(info.isOk());
  EXPECT_EQ(info->hostname, "sim0003");
  ASSERT_EQ(info->netdevs.size(), 1u);
  EXPECT_EQ(info->netdevs[0].name, "eth0");
  EXPECT_GT(info->clock.realtime_ns, 0);
}

TEST(SimulatedAgent, RecordsEveryApplyAndRevertInsteadOfActing) {
  testing::FakeAgent real;
  FanoutRecorder recorder;
  SimulatedAgent a(0, "sim0000", "eth0", "127.1.0.1", real, recorder);
  SimulatedAgent b(1, "sim0001", "eth0", "127.1.0.2", real, recorder);
  ASSERT_TRUE(a.applyFault(flapOf("eth0")).isOk());
  ASSERT_TRUE(b.applyFault(flapOf("eth0")).isOk());
  ASSERT_TRUE(a.revertFault(flapOf("eth0"), json::object()).isOk());
  EXPECT_TRUE(real.log().empty()) << "the real agent acted";

  const auto entries = recorder.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].agent, 0);
  EXPECT_EQ(entries[0].action, FanoutRecorder::Action::kApply);
  EXPECT_EQ(entries[1].agent, 1);
  EXPECT_EQ(entries[2].action, FanoutRecorder::Action::kRevert);
  EXPECT_EQ(entries[2].kind, "link_flap");
  EXPECT_LE(entries[0].steady_ns, entries[1].steady_ns);
  EXPECT_LE(entries[1].steady_ns, entries[2].steady_ns);
  const json doc = recorder.toJson();
  ASSERT_EQ(doc["entries"].size(), 3u);
  EXPECT_EQ(doc["entries"][2]["action"], "revert");
  EXPECT_EQ(doc["entries"][1]["agent"], 1);
}

TEST(SimulatedAgent, TheRealProtocolAppliesRenewsAndRevertsThroughIt) {
  testing::FakeAgent real;
  FanoutRecorder recorder;
  SimulatedAgent sim(7, "sim0007", "eth0", "127.1.0.8", real, recorder);
  SimulatedHostProbe probe("sim0007", "eth0", "127.1.0.8");
  AgentServiceOptions options;
  options.token = "sim-token-0123456789abcdef";
  AgentService service(sim, probe, options);
  auto call = [&](const std::string& method, const std::string& target, const json& body) {
    core::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers["authorization"] = "Bearer sim-token-0123456789abcdef";
    if (!body.is_null()) request.body = body.dump();
    return service.handle(request);
  };
  auto applied = call("POST", "/agent/v1/faults",
                      {{"fault", injectors::toJson(flapOf("eth0"))}, {"lease_ms", 5000}});
  ASSERT_EQ(applied.status, 201) << applied.body;
  const std::string id = json::parse(applied.body)["id"].get<std::string>();
  EXPECT_EQ(call("POST", "/agent/v1/faults/" + id + "/renew", json::object()).status, 200);
  EXPECT_EQ(call("DELETE", "/agent/v1/faults/" + id, nullptr).status, 200);
  const auto entries = recorder.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].agent, 7);
  EXPECT_EQ(entries[0].action, FanoutRecorder::Action::kApply);
  EXPECT_EQ(entries[1].action, FanoutRecorder::Action::kRevert);
  auto describe = call("GET", "/agent/v1/info", nullptr);
  EXPECT_EQ(describe.status, 200);
  EXPECT_NE(describe.body.find("sim0007"), std::string::npos) << describe.body;
  service.shutdown(0);
}

}  // namespace
}  // namespace fabric_chaos::agent
