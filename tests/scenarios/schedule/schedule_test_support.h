#pragma once
// Shared by the suite runner and scheduler tests: a RunService whose runs are real rows of a
// ":memory:" store (so the runner's polling of getRun sees them) and that the test finishes by
// hand, plus a valid scenario document for the fake netns lab. Thread-safe like the real engine.

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenarios/model.h"
#include "scenarios/services.h"
#include "scenarios/validate.h"
#include "store/store.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::scenarios::schedule::test_support {

using nlohmann::json;

class StoreBackedRunService : public RunService {
 public:
  explicit StoreBackedRunService(store::Store* store) : store_(store) {}

  core::Result<int64_t> submit(const Scenario& scenario, const std::string& fabric) override {
    std::lock_guard lock(mu_);
    if (auto failure = submit_failures_.next()) return *failure;
    auto id = store_->createRun(scenario.name, toJson(scenario), fabric);
    if (id.isOk()) submitted_.push_back({*id, scenario.name, fabric});
    return id;
  }

  core::Status abort(int64_t run_id) override {
    {
      std::lock_guard lock(mu_);
      aborts_.push_back(run_id);
    }
    return store_->finishRun(run_id, "aborted", std::nullopt, json::object(), "abort_request");
  }

  struct Submitted {
    int64_t id;
    std::string scenario;
    std::string fabric;
  };
  std::vector<Submitted> submitted() {
    std::lock_guard lock(mu_);
    return submitted_;
  }
  std::vector<int64_t> aborts() {
    std::lock_guard lock(mu_);
    return aborts_;
  }
  void failSubmitOn(int nth, core::Status status) {
    std::lock_guard lock(mu_);
    submit_failures_.failOn(nth, std::move(status));
  }

 private:
  store::Store* store_;
  std::mutex mu_;
  fakes::FailSchedule submit_failures_;
  std::vector<Submitted> submitted_;
  std::vector<int64_t> aborts_;
};

// A link_flap scenario on host h1 of FakeFabricCatalog::netnsLab().
inline json scenarioDoc(const std::string& name) {
  return json{{"version", 1},
              {"name", name},
              {"steps",
               {{{"kind", "link_flap"},
                 {"target", {{"host", "h1"}}},
                 {"at_ms", 0},
                 {"params", {{"down_ms", 100}}}}}}};
}

inline KindCatalog testKinds(const Fabric&) {
  KindCatalog catalog;
  catalog.kinds = {"link_flap", "packet_loss"};
  catalog.validate_params = [](const std::string&, const json&) { return core::Status::ok(); };
  return catalog;
}

}  // namespace fabric_chaos::scenarios::schedule::test_support
