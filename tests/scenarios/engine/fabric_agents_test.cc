// FabricAgents with fake agents: the kind catalog of a fabric comes from its hosts' agents (a kind
// only the VM guests can run validates for the VM fabric and is refused for the namespace lab),
// an unreachable agent is a named kUnavailable error, answers are cached for the TTL, and
// describe() reports every host even when one agent is down.

#include "scenarios/engine/fabric_agents.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scenarios/model.h"
#include "tests/fakes/fake_agent.h"
#include "tests/fakes/fake_agent_directory.h"

namespace fabric_chaos::scenarios {
namespace {

using ::testing::HasSubstr;

constexpr char kGuest0[] = "http://127.0.0.1:7100";
constexpr char kGuest1[] = "http://127.0.0.1:7101";

Fabric twoHostFabric(const std::string& name, const std::string& agent0,
                     const std::string& agent1) {
  Fabric fabric;
  fabric.name = name;
  fabric.kind = agent0 == "local" ? "netns" : "vm";
  Switch sw{"sw0", name + "-sw0", "br0", {"p0", "p1"}, {}, std::nullopt};
  fabric.switches.push_back(sw);
  for (int i = 0; i < 2; ++i) {
    Host host;
    host.name = "h" + std::to_string(i);
    host.netns = agent0 == "local" ? name + "-h" + std::to_string(i) : "";
    host.agent = i == 0 ? agent0 : agent1;
    host.nics.push_back({"eth0", "10.0.0." + std::to_string(i + 1)});
    fabric.hosts.push_back(host);
    fabric.links.push_back(
        {host.name + "-sw0", host.name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  return fabric;
}

Scenario netemScenario() {
  auto scenario = parseScenario(nlohmann::json::parse(R"({
    "version": 1,
    "name": "delay",
    "workload": {"transport": "tcp", "message_bytes": 65536, "compute_ms": 5},
    "baseline_ms": 1000,
    "steps": [{"kind": "netem", "target": {"host": "h0", "side": "host"}, "at_ms": 0,
               "duration_ms": 500, "params": {"delay_ms": 5}}],
    "recovery_ms": 1000
  })"));
  EXPECT_TRUE(scenario.isOk()) << scenario.status().toString();
  return *scenario;
}

class FabricAgentsTest : public ::testing::Test {
 protected:
  FabricAgentsTest() {
    // The controller's kernel has no sch_netem; the guests' kernels do.
    local_.kinds = {{"link_flap", "", true, "", "netlink"},
                    {"netem", "", false, "sch_netem is not in this kernel", "netem"}};
    for (auto* guest : {&guest0_, &guest1_}) {
      guest->kinds = {{"link_flap", "", true, "", "netlink"}, {"netem", "", true, "", "netem"}};
    }
    directory_.add("local", local_);
    directory_.add(kGuest0, guest0_);
    directory_.add(kGuest1, guest1_);
  }

  FabricAgents make() {
    FabricAgentsOptions options;
    options.cache_ttl_ms = 10000;
    options.steady_now_ns = [this] { return now_ns_; };
    return FabricAgents(directory_, options);
  }

  testing::FakeAgent local_;
  testing::FakeAgent guest0_;
  testing::FakeAgent guest1_;
  fakes::MapAgentDirectory directory_;
  int64_t now_ns_ = 1'000'000'000;
  const Fabric vm_ = twoHostFabric("vm-lab", kGuest0, kGuest1);
  const Fabric netns_ = twoHostFabric("netns-lab", "local", "local");
};

TEST_F(FabricAgentsTest, AKindOnlyTheGuestsCanRunValidatesForTheVmFabricAlone) {
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk()) << vm.status().toString();
  EXPECT_EQ(vm->kinds, (std::vector<std::string>{"link_flap", "netem"}));
  EXPECT_TRUE(vm->unavailable.empty());
  EXPECT_TRUE(validateForFabric(netemScenario(), vm_, *vm).isOk());
  EXPECT_GE(guest0_.validateCalls(), 1) << "parameters are checked by the first guest";
  EXPECT_EQ(local_.validateCalls(), 0) << "not by the controller";
  EXPECT_EQ(local_.infoCalls(), 0);

  auto netns = agents.kindCatalog(netns_);
  ASSERT_TRUE(netns.isOk()) << netns.status().toString();
  EXPECT_EQ(netns->kinds, (std::vector<std::string>{"link_flap"}));
  core::Status refused = validateForFabric(netemScenario(), netns_, *netns);
  EXPECT_EQ(refused.code(), core::StatusCode::kUnprocessable);
  EXPECT_THAT(refused.message(), HasSubstr("steps[0].kind"));
  EXPECT_THAT(refused.message(), HasSubstr("hosts h0, h1 (agent local)"));
  EXPECT_THAT(refused.message(), HasSubstr("sch_netem is not in this kernel"));
}

// A switch port of the VM lab lives in a namespace on the controller, so the controller's agent
// acts on it: a kind the guests can run but the controller's kernel cannot is refused for that
// target when the scenario is submitted, not when the run starts.
TEST_F(FabricAgentsTest, ASwitchPortFaultIsCheckedAgainstTheControllersAgent) {
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk()) << vm.status().toString();
  Scenario on_switch = netemScenario();
  on_switch.steps[0].target = parseScenario(nlohmann::json::parse(R"({
    "version": 1, "name": "s", "workload": {}, "baseline_ms": 1000, "recovery_ms": 1000,
    "steps": [{"kind": "netem", "target": {"host": "h1", "side": "switch"}, "at_ms": 0,
               "duration_ms": 500, "params": {"delay_ms": 5}}]})"))
                                  ->steps[0]
                                  .target;
  core::Status refused = validateForFabric(on_switch, vm_, *vm);
  EXPECT_EQ(refused.code(), core::StatusCode::kUnprocessable) << refused.toString();
  EXPECT_THAT(refused.message(), HasSubstr("steps[0].target"));
  EXPECT_THAT(refused.message(), HasSubstr("sw0/p1"));
  EXPECT_THAT(refused.message(), HasSubstr("the controller's embedded agent"));
  EXPECT_THAT(refused.message(), HasSubstr("sch_netem is not in this kernel"));
  EXPECT_EQ(local_.infoCalls(), 1) << "the controller's agent is asked for its own ports";

  // A kind the controller can run is accepted on the same port.
  on_switch.steps[0].kind = "link_flap";
  on_switch.steps[0].params = {{"down_ms", 100}, {"up_ms", 100}, {"count", 3}};
  EXPECT_TRUE(validateForFabric(on_switch, vm_, *vm).isOk())
      << validateForFabric(on_switch, vm_, *vm).toString();
}

// Verbs traffic needs an RDMA device on every host of the set: a host without one is refused at
// submission, naming it, for each part of a set cut across the guests' agents.
TEST_F(FabricAgentsTest, VerbsTrafficIsRefusedOnAHostWithoutAnActiveRdmaPort) {
  for (auto* agent : {&local_, &guest0_, &guest1_}) {
    agent->kinds.push_back({"incast", "", true, "", "tcp"});
  }
  guest1_.rdma_devices = {{"rxe0", {{1, "ACTIVE", 16}}}};
  guest0_.rdma_devices = {{"rxe0", {{1, "DOWN", 16}}}};
  auto scenario = parseScenario(nlohmann::json::parse(R"({
    "version": 1, "name": "roce", "workload": {}, "baseline_ms": 1000, "recovery_ms": 1000,
    "steps": [{"kind": "incast", "target": {"host": "h1", "sources": ["h0"]}, "at_ms": 0,
               "duration_ms": 500, "params": {"transport": "verbs"}}]})"));
  ASSERT_TRUE(scenario.isOk()) << scenario.status().toString();
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk()) << vm.status().toString();
  core::Status refused = validateForFabric(*scenario, vm_, *vm);
  EXPECT_EQ(refused.code(), core::StatusCode::kUnprocessable) << refused.toString();
  EXPECT_THAT(refused.message(), HasSubstr("steps[0].target"));
  EXPECT_THAT(refused.message(),
              HasSubstr("host h0 (agent http://127.0.0.1:7100) has no active port"));

  guest0_.rdma_devices[0].ports[0].state = "ACTIVE";
  agents.clearCache();
  vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk());
  EXPECT_TRUE(validateForFabric(*scenario, vm_, *vm).isOk())
      << validateForFabric(*scenario, vm_, *vm).toString();

  // The namespace lab's hosts share the controller's agent, which has no RDMA device.
  auto netns = agents.kindCatalog(netns_);
  ASSERT_TRUE(netns.isOk());
  refused = validateForFabric(*scenario, netns_, *netns);
  EXPECT_EQ(refused.code(), core::StatusCode::kUnprocessable);
  EXPECT_THAT(refused.message(), HasSubstr("hosts h1, h0 (agent local) has none"));
}

TEST_F(FabricAgentsTest, AnRdmaDeviceStepNeedsThatDeviceAndPortOnItsHost) {
  for (auto* agent : {&local_, &guest0_, &guest1_}) {
    agent->kinds.push_back({"rdma_port_down", "", true, "", "rdma netlink"});
  }
  guest1_.rdma_devices = {{"rxe0", {{1, "ACTIVE", 16}}}};
  const auto scenarioOn = [](const std::string& target) {
    auto scenario = parseScenario(nlohmann::json::parse(
        R"({"version": 1, "name": "port", "workload": {"transport": "verbs"}, "baseline_ms": 1000,
            "recovery_ms": 1000, "steps": [{"kind": "rdma_port_down", "target": )" +
        target + R"(, "at_ms": 0, "duration_ms": 500}]})"));
    EXPECT_TRUE(scenario.isOk()) << scenario.status().toString();
    return *scenario;
  };
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk()) << vm.status().toString();
  EXPECT_TRUE(
      validateForFabric(scenarioOn(R"({"rank": 1, "rdma_device": "rxe0"})"), vm_, *vm).isOk());
  const core::Status other_device =
      validateForFabric(scenarioOn(R"({"rank": 1, "rdma_device": "mlx5_0"})"), vm_, *vm);
  EXPECT_EQ(other_device.code(), core::StatusCode::kUnprocessable);
  EXPECT_THAT(other_device.message(),
              HasSubstr("rdma_port_down on host h1 (agent http://127.0.0.1:7101): it has no RDMA "
                        "device mlx5_0 (it has rxe0)"));
  const core::Status other_port = validateForFabric(
      scenarioOn(R"({"host": "h1", "rdma_device": "rxe0", "rdma_port": 2})"), vm_, *vm);
  EXPECT_THAT(other_port.message(), HasSubstr("device rxe0 has no port 2"));
  const core::Status none =
      validateForFabric(scenarioOn(R"({"rank": 0, "rdma_device": "rxe0"})"), vm_, *vm);
  EXPECT_THAT(none.message(), HasSubstr("it has no RDMA device rxe0 (it has none)"));
}

TEST_F(FabricAgentsTest, AKindOneGuestLacksIsRefusedNamingThatGuest) {
  guest1_.kinds = {{"link_flap", "", true, "", "netlink"}};
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk());
  EXPECT_EQ(vm->kinds, (std::vector<std::string>{"link_flap"}));
  ASSERT_EQ(vm->unavailable.count("netem"), 1u);
  EXPECT_THAT(vm->unavailable.at("netem"), HasSubstr("host h1 (agent " + std::string(kGuest1)));
}

TEST_F(FabricAgentsTest, AnUnreachableAgentIsANamedUnavailableErrorNotAFallback) {
  guest1_.unreachable = true;
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_FALSE(vm.isOk());
  EXPECT_EQ(vm.status().code(), core::StatusCode::kUnavailable);
  EXPECT_THAT(vm.status().message(), HasSubstr("host h1 (agent " + std::string(kGuest1) + ")"));
  EXPECT_THAT(vm.status().message(), HasSubstr("connection refused"));
  EXPECT_EQ(local_.infoCalls(), 0) << "the controller's kernel is not asked instead";

  // It is not cached: once the agent answers again, so does the catalog.
  guest1_.unreachable = false;
  EXPECT_TRUE(agents.kindCatalog(vm_).isOk());
}

TEST_F(FabricAgentsTest, AnAgentThatFailsWhileCheckingParametersIsNamed) {
  FabricAgents agents = make();
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm.isOk());
  guest0_.unreachable = true;
  core::Status status = vm->validate_params("netem", {{"delay_ms", 5}});
  EXPECT_EQ(status.code(), core::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("host h0 (agent " + std::string(kGuest0) + ")"));
}

TEST_F(FabricAgentsTest, AnswersAreCachedForTheTtl) {
  FabricAgents agents = make();
  ASSERT_TRUE(agents.kindCatalog(vm_).isOk());
  ASSERT_TRUE(agents.kindCatalog(vm_).isOk());
  EXPECT_EQ(guest0_.infoCalls(), 1);
  EXPECT_EQ(guest1_.infoCalls(), 1);
  auto vm = agents.kindCatalog(vm_);
  ASSERT_TRUE(vm->validate_params("netem", {{"delay_ms", 5}}).isOk());
  ASSERT_TRUE(vm->validate_params("netem", {{"delay_ms", 5}}).isOk());
  EXPECT_EQ(guest0_.validateCalls(), 1);

  now_ns_ += 10'000'000'001;
  auto later = agents.kindCatalog(vm_);
  ASSERT_TRUE(later.isOk());
  EXPECT_EQ(guest0_.infoCalls(), 2);
  ASSERT_TRUE(later->validate_params("netem", {{"delay_ms", 5}}).isOk());
  EXPECT_EQ(guest0_.validateCalls(), 2);
}

TEST_F(FabricAgentsTest, HostsSharingAnAgentAskItOnce) {
  FabricAgents agents = make();
  ASSERT_TRUE(agents.kindCatalog(netns_).isOk());
  EXPECT_EQ(local_.infoCalls(), 1);
  EXPECT_EQ(agents.describe(netns_).size(), 2u);
  EXPECT_EQ(local_.infoCalls(), 2);
}

TEST_F(FabricAgentsTest, AFabricWithoutHostsIsCheckedAgainstTheEmbeddedAgent) {
  Fabric unregistered;
  unregistered.name = "not-up-yet";
  FabricAgents agents = make();
  auto catalog = agents.kindCatalog(unregistered);
  ASSERT_TRUE(catalog.isOk());
  EXPECT_EQ(catalog->kinds, (std::vector<std::string>{"link_flap"}));
  EXPECT_EQ(local_.infoCalls(), 1);
}

TEST_F(FabricAgentsTest, DescribeReportsEveryHostEvenWithOneAgentDown) {
  guest0_.hostname = "vm0";
  guest0_.version = "0.9.0";
  guest0_.netdevs = {{"eth0", "", "up", "52:54:00:00:00:01"}};
  guest0_.rdma_devices = {{"rxe0", {{1, "ACTIVE", 16}}}};
  guest0_.realtime_skew_ns = -5'000'000'000;  // the guest's clock is 5 s behind ours
  guest1_.unreachable = true;
  FabricAgents agents = make();
  auto reports = agents.describe(vm_);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].host, "h0");
  ASSERT_TRUE(reports[0].status.isOk()) << reports[0].status.toString();
  EXPECT_EQ(reports[0].agent.name, kGuest0);
  EXPECT_EQ(reports[0].info.hostname, "vm0");
  EXPECT_EQ(reports[0].info.version, "0.9.0");
  ASSERT_EQ(reports[0].info.rdma_devices.size(), 1u);
  EXPECT_EQ(reports[0].info.rdma_devices[0].ports[0].gid_table_size, 16);
  EXPECT_NEAR(reports[0].clock_offset_ms, 5000, 50);
  EXPECT_EQ(reports[1].host, "h1");
  EXPECT_EQ(reports[1].status.code(), core::StatusCode::kUnavailable);
}

TEST(DescribeHostAgent, NamesTheHostsAndTheAgent) {
  EXPECT_EQ(describeHostAgent({"h1"}, AgentRef{kGuest1, ""}),
            "host h1 (agent http://127.0.0.1:7101)");
  EXPECT_EQ(describeHostAgent({"h0", "h1"}, AgentRef{}), "hosts h0, h1 (agent local)");
  EXPECT_EQ(describeHostAgent({}, AgentRef{}), "the controller's embedded agent");
}

}  // namespace
}  // namespace fabric_chaos::scenarios
