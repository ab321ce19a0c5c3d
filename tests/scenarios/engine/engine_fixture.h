#pragma once
// Shared by the engine tests: a one-fabric catalog, a fixture with a real in-memory store, the
// fake agent (synthetic workload that slows down while a fault is applied) and the real clock,
// and helpers to build short scenarios and wait for states.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/steady_clock.h"
#include "lab/netns_lab.h"
#include "scenarios/engine/engine.h"
#include "tests/fakes/fake_agent.h"

namespace fabric_chaos::scenarios {

class StaticCatalog : public FabricCatalog {
 public:
  explicit StaticCatalog(Fabric fabric) : fabric_(std::move(fabric)) {}
  std::vector<Fabric> list() override { return {fabric_}; }
  core::Result<Fabric> get(const std::string& name) override {
    if (name == fabric_.name) return fabric_;
    return core::Status(core::StatusCode::kNotFound, "fabric " + name + " is not registered");
  }

 private:
  Fabric fabric_;
};

// A link flap of h1's switch port: `count` phases of 200 ms down / 200 ms up after 500 ms of
// baseline, 600 ms of recovery.
inline Scenario flapScenario(int count = 2) {
  auto parsed = parseScenario(
      nlohmann::json{{"version", 1},
                     {"name", "engine-flap"},
                     {"workload", {{"message_bytes", 65536}, {"compute_ms", 1}}},
                     {"baseline_ms", 500},
                     {"steps",
                      {{{"kind", "link_flap"},
                        {"target", {{"host", "h1"}}},
                        {"at_ms", 0},
                        {"params", {{"down_ms", 200}, {"up_ms", 200}, {"count", count}}}}}},
                     {"recovery_ms", 600},
                     {"recovered_after", 3},
                     {"gates", {{"require_survival", true}}}});
  EXPECT_TRUE(parsed.isOk()) << parsed.status().toString();
  return parsed.value();
}

// A workload on `hosts` with one link_flap of `down_ms` on `fault_host`'s switch port.
inline Scenario hostsScenario(std::vector<std::string> hosts, const std::string& fault_host,
                              int down_ms) {
  Scenario s = flapScenario(1);
  s.name = "engine-" + fault_host;
  s.workload.hosts = std::move(hosts);
  s.steps[0].target.host = fault_host;
  s.steps[0].params = {{"down_ms", down_ms}};
  return s;
}

inline const std::vector<std::string> kFinalStates{"passed", "failed", "aborted", "error",
                                                   "interrupted"};

class EngineFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::Store::open(":memory:");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(opened.value());
    lab::LabOptions lab_options;
    lab_options.hosts = 4;
    catalog_ = std::make_unique<StaticCatalog>(lab::describeLab(lab_options));
    engine_ = std::make_unique<Engine>(EngineDeps{store_.get(), &agents_, catalog_.get(), &clock_},
                                       options());
  }

  virtual EngineOptions options() { return EngineOptions{5000, 17000, 1000}; }

  std::string waitForState(int64_t id, const std::vector<std::string>& states, int timeout_ms) {
    const int64_t deadline = core::steadyNowNs() + int64_t{timeout_ms} * 1000000;
    std::string state;
    while (core::steadyNowNs() < deadline) {
      auto run = store_->getRun(id);
      if (run.isOk()) state = run->state;
      for (const auto& s : states) {
        if (state == s) return state;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return state;
  }

  // Waits until the fake agent has `n` faults applied; false on timeout.
  bool waitForActiveFaults(size_t n, int timeout_ms) {
    const int64_t deadline = core::steadyNowNs() + int64_t{timeout_ms} * 1000000;
    while (core::steadyNowNs() < deadline) {
      if (agent_.activeFaults() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return agent_.activeFaults() == n;
  }

  // Wall time (ms) of the run's first transition into `state`; 0 when it never got there.
  int64_t transitionMs(int64_t id, const std::string& state) {
    auto transitions = store_->runTransitions(id);
    if (!transitions.isOk()) return 0;
    for (const auto& t : *transitions) {
      if (t["state"] == state) return t["wall_ms"].get<int64_t>();
    }
    return 0;
  }

  std::vector<store::EventRecord> eventsOfKind(int64_t id, const std::string& kind) {
    std::vector<store::EventRecord> out;
    auto events = store_->events(id);
    if (!events.isOk()) return out;
    for (const auto& e : *events) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }

  testing::FakeAgent agent_;
  SingleAgentDirectory agents_{agent_};
  core::SteadyClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<StaticCatalog> catalog_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace fabric_chaos::scenarios
