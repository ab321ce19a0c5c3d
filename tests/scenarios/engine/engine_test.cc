// The engine against a fake agent (synthetic workload that slows down while a fault is applied)
// and a real in-memory store: the run lifecycle, journaling before acting, abort, half-applied
// faults, rank death and start-up recovery.

#include "scenarios/engine/engine.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/steady_clock.h"
#include "lab/netns_lab.h"
#include "tests/fakes/fake_agent.h"
#include "tests/scenarios/engine/engine_fixture.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;
using testing::FakeAgent;

class EngineTest : public EngineFixture {};

const std::vector<std::string>& kFinal = kFinalStates;

TEST_F(EngineTest, ARunGoesThroughEveryStateAndRevertsEveryPhase) {
  engine_->start();
  auto id = engine_->submit(flapScenario(), "netns-lab");
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  EXPECT_EQ(waitForState(*id, kFinal, 15000), "passed");

  auto run = store_->getRun(*id);
  ASSERT_TRUE(run.isOk());
  ASSERT_TRUE(run->score.has_value());
  EXPECT_GT(*run->score, 0);
  EXPECT_LT(*run->score, 100);  // the fake workload slows down 20x while faulted
  EXPECT_EQ(run->attributes["backends"]["link_flap"], "fake");

  auto transitions = store_->runTransitions(*id);
  ASSERT_TRUE(transitions.isOk());
  std::vector<std::string> states;
  for (const auto& t : *transitions) states.push_back(t["state"]);
  EXPECT_EQ(states, (std::vector<std::string>{"queued", "preparing", "baseline", "injecting",
                                              "recovering", "analysing", "passed"}));

  // Two phases, each applied then reverted, on the switch port of h1.
  EXPECT_EQ(agent_.log(),
            (std::vector<std::string>{"apply p1", "revert p1", "apply p1", "revert p1"}));
  EXPECT_EQ(agent_.activeFaults(), 0u);
  auto unreverted = store_->unrevertedJournal();
  ASSERT_TRUE(unreverted.isOk());
  EXPECT_TRUE(unreverted->empty());

  // One rank per host, each pointing at the next host's address.
  auto ranks = agent_.startedRanks();
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(ranks[0].netns, "fcl-h0");
  EXPECT_EQ(ranks[0].next_addr, "10.200.0.2");
  EXPECT_EQ(ranks[3].next_addr, "10.200.0.1");

  // The analysis saw the fault window at the scheduled place: 200 ms down, 200 up, 200 down.
  const auto& step = run->result["analysis"]["steps"][0];
  EXPECT_NEAR(step["fault_end_ms"].get<double>() - step["fault_start_ms"].get<double>(), 600, 30);
  EXPECT_TRUE(step["recovered"].get<bool>());

  auto events = store_->events(*id);
  ASSERT_TRUE(events.isOk());
  int applied = 0;
  int reverted = 0;
  for (const auto& e : *events) {
    applied += e.kind == "fault_applied";
    reverted += e.kind == "fault_reverted";
  }
  EXPECT_EQ(applied, 2);
  EXPECT_EQ(reverted, 2);
}

TEST_F(EngineTest, AbortRevertsAnActiveFaultAtOnce) {
  auto scenario = flapScenario(1);
  scenario.steps[0].params = {{"down_ms", 20000}};
  scenario.max_duration_ms = 600000;
  engine_->start();
  auto id = engine_->submit(scenario, "netns-lab");
  ASSERT_TRUE(id.isOk());
  const int64_t deadline = core::steadyNowNs() + 10'000'000'000;
  while (agent_.activeFaults() == 0 && core::steadyNowNs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(agent_.activeFaults(), 1u);
  const int64_t abort_at = core::steadyNowNs();
  ASSERT_TRUE(engine_->abort(*id).isOk());
  while (agent_.activeFaults() != 0 && core::steadyNowNs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double revert_ms = static_cast<double>(core::steadyNowNs() - abort_at) / 1e6;
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_LT(revert_ms, 1000);
  EXPECT_EQ(waitForState(*id, kFinal, 5000), "aborted");
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  auto run = store_->getRun(*id);
  const json& stop = run->result["stop"];
  EXPECT_EQ(stop["reason"], "abort_request") << run->result.dump(2);
  EXPECT_EQ(run->error, "aborted on request");
  EXPECT_GE(stop["time_to_revert_ms"].get<double>(), 0);
  EXPECT_LT(stop["time_to_revert_ms"].get<double>(), 1000);
  EXPECT_EQ(stop["faults_reverted"], 1);
  EXPECT_FALSE(run->result["passed"].get<bool>());
  // With a baseline behind it, what was measured is kept.
  EXPECT_TRUE(run->result.contains("analysis")) << run->result.dump(2);
  EXPECT_FALSE(run->score.has_value());
  // A finished run cannot be aborted again.
  EXPECT_EQ(engine_->abort(*id).code(), core::StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine_->abort(999).code(), core::StatusCode::kNotFound);
}

TEST_F(EngineTest, AHalfAppliedFaultIsRevertedAndTheRunEndsInError) {
  agent_.fail_apply_on_call = 2;
  engine_->start();
  auto id = engine_->submit(flapScenario(), "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinal, 15000), "error");
  EXPECT_EQ(agent_.activeFaults(), 0u);
  EXPECT_EQ(agent_.log(),
            (std::vector<std::string>{"apply p1", "revert p1", "apply p1", "revert p1"}));
  auto run = store_->getRun(*id);
  EXPECT_NE(run->error.find("injected failure"), std::string::npos) << run->error;
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
}

TEST_F(EngineTest, WithoutTheRankDeathStopConditionADeadRankFailsTheSurvivalGate) {
  agent_.rank_dies_after_first_apply = true;
  engine_->start();
  Scenario scenario = flapScenario(1);
  scenario.stop_conditions.on_rank_death = false;
  auto id = engine_->submit(scenario, "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinal, 15000), "failed");
  auto run = store_->getRun(*id);
  bool survival_gate_failed = false;
  for (const auto& gate : run->result["gates"]) {
    if (gate["gate"] == "require_survival") survival_gate_failed = !gate["passed"].get<bool>();
  }
  EXPECT_TRUE(survival_gate_failed) << run->result.dump(2);
}

TEST_F(EngineTest, AQueuedRunCanBeAbortedBeforeItStarts) {
  // Not started: the run stays queued.
  auto id = engine_->submit(flapScenario(), "netns-lab");
  ASSERT_TRUE(id.isOk());
  EXPECT_TRUE(engine_->abort(*id).isOk());
  EXPECT_EQ(store_->getRun(*id)->state, "aborted");
  EXPECT_TRUE(agent_.log().empty());
}

TEST_F(EngineTest, StartUpRecoveryRevertsJournaledFaultsAndInterruptsRuns) {
  auto run_id = store_->createRun("engine-flap", toJson(flapScenario()), "netns-lab");
  ASSERT_TRUE(run_id.isOk());
  ASSERT_TRUE(store_->setRunState(*run_id, "injecting").isOk());
  injectors::Fault fault{
      "link_flap", injectors::InterfaceTarget{"fcl-sw0", "p1"}, {{"down_ms", 100}}};
  auto entry = store_->journalIntent(*run_id, injectors::toJson(fault), {{"admin_up", true}});
  ASSERT_TRUE(entry.isOk());
  ASSERT_TRUE(store_->journalMark(*entry, "applied").isOk());

  auto recovery = engine_->recoverAtStartup();
  ASSERT_TRUE(recovery.isOk()) << recovery.status().toString();
  EXPECT_EQ(recovery->reverted, 1);
  EXPECT_EQ(recovery->failed, 0);
  EXPECT_EQ(recovery->interrupted, std::vector<int64_t>{*run_id});
  EXPECT_EQ(agent_.log(), std::vector<std::string>{"revert p1"});
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  EXPECT_EQ(store_->getRun(*run_id)->state, "interrupted");
}

TEST_F(EngineTest, AnUnknownFabricEndsTheRunInErrorWithoutTouchingAnything) {
  engine_->start();
  auto id = engine_->submit(flapScenario(), "no-such-fabric");
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(waitForState(*id, kFinal, 5000), "error");
  EXPECT_NE(store_->getRun(*id)->error.find("no-such-fabric"), std::string::npos);
  EXPECT_TRUE(agent_.log().empty());
}

// Routes each agent name to its own fake, recording which names were asked for.
class MapDirectory : public AgentDirectory {
 public:
  core::Result<agent::Agent*> agentFor(const AgentRef& ref) override {
    std::lock_guard lock(mu_);
    asked_.push_back(ref.name);
    return &agents_[ref.isLocal() ? "local" : ref.name];
  }
  FakeAgent& get(const std::string& name) { return agents_[name]; }

 private:
  std::mutex mu_;
  std::map<std::string, FakeAgent> agents_;
  std::vector<std::string> asked_;
};

TEST(EngineRouting, HostSideFaultsGoToTheHostsAgentAndSwitchPortsToTheLocalOne) {
  auto store = store::Store::open(":memory:");
  ASSERT_TRUE(store.isOk());
  lab::LabOptions lab_options;
  lab_options.hosts = 2;
  Fabric fabric = lab::describeLab(lab_options);
  fabric.hosts[0].agent = "http://127.0.0.1:7100";
  fabric.hosts[1].agent = "http://127.0.0.1:7101";
  StaticCatalog catalog(fabric);
  MapDirectory agents;
  core::SteadyClock clock;
  Engine engine({store->get(), &agents, &catalog, &clock}, EngineOptions{5000, 17000, 1000});
  engine.start();

  Scenario scenario = flapScenario(1);
  scenario.steps[0].target.side = LinkSide::kHost;  // h1's own NIC: h1's agent
  FaultStep port_step = scenario.steps[0];
  port_step.target.side = LinkSide::kSwitch;  // sw0:p1 lives in the controller's namespace: local
  port_step.at_ms = 300;
  scenario.steps.push_back(port_step);
  auto id = engine.submit(scenario, "netns-lab");
  ASSERT_TRUE(id.isOk());
  const int64_t deadline = core::steadyNowNs() + 15'000'000'000;
  std::string state;
  while (core::steadyNowNs() < deadline) {
    state = (*store)->getRun(*id)->state;
    if (state == "passed" || state == "failed" || state == "error") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state, "passed") << (*store)->getRun(*id)->error;
  EXPECT_EQ(agents.get("http://127.0.0.1:7101").log(),
            (std::vector<std::string>{"apply eth0", "revert eth0"}));
  EXPECT_EQ(agents.get("local").log(), (std::vector<std::string>{"apply p1", "revert p1"}));
  // One rank on each host's agent.
  EXPECT_EQ(agents.get("http://127.0.0.1:7100").startedRanks().size(), 1u);
  EXPECT_EQ(agents.get("http://127.0.0.1:7101").startedRanks().size(), 1u);
  EXPECT_TRUE(agents.get("local").startedRanks().empty());
}

TEST(EngineRouting, StartUpRecoveryAsksTheAgentThatAppliedTheFault) {
  auto store = store::Store::open(":memory:");
  ASSERT_TRUE(store.isOk());
  lab::LabOptions lab_options;
  StaticCatalog catalog(lab::describeLab(lab_options));
  MapDirectory agents;
  core::SteadyClock clock;
  Engine engine({store->get(), &agents, &catalog, &clock}, {});
  injectors::Fault fault{"link_flap", injectors::InterfaceTarget{"", "eth0"}, {{"down_ms", 100}}};
  json doc = injectors::toJson(fault);
  doc["agent"] = {{"name", "http://127.0.0.1:7101"}, {"token_file", "/run/x"}};
  auto entry = (*store)->journalIntent(0, doc, json::object());
  ASSERT_TRUE(entry.isOk());
  auto recovery = engine.recoverAtStartup();
  ASSERT_TRUE(recovery.isOk()) << recovery.status().toString();
  EXPECT_EQ(recovery->reverted, 1);
  EXPECT_EQ(agents.get("http://127.0.0.1:7101").log(), std::vector<std::string>{"revert eth0"});
  EXPECT_TRUE(agents.get("local").log().empty());
}

}  // namespace
}  // namespace fabric_chaos::scenarios
