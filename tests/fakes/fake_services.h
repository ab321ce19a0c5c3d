#pragma once
// Header-only fakes of scenarios::RunService, SuiteService and FabricCatalog for API tests. All
// record what they were asked and can be told to fail on the Nth call (1-based, counted from
// construction) through FailSchedule. Thread-safe, as the real ones are.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "scenarios/services.h"
#include "scenarios/topology.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

// What FakeRunService and FakeSuiteService share: submissions recorded with ids counting up from
// 1, the Nth submit failing on demand, aborts recorded and answered. Submission has an `id` field.
template <typename Submission>
class FakeSubmissions {
 public:
  // --- test controls ---
  // The nth submit (1-based, counted from construction) returns `status` and records nothing.
  void failSubmitOn(int nth_call, core::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    submit_failures_.failOn(nth_call, std::move(status));
  }
  void setAbortResult(int64_t id, core::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    abort_results_[id] = std::move(status);
  }
  void setNextId(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    next_id_ = id;
  }
  std::vector<Submission> submissions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submissions_;
  }
  std::vector<int64_t> abortCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return abort_calls_;
  }
  int submitCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submit_failures_.calls();
  }

 protected:
  // noun names an unknown id in abort's kNotFound: "run 7 not found".
  explicit FakeSubmissions(std::string noun) : noun_(std::move(noun)) {}

  // Stores submission under the next id, unless this submit is scheduled to fail.
  core::Result<int64_t> recordSubmit(Submission submission) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto failure = submit_failures_.next()) return *failure;
    submission.id = next_id_++;
    submissions_.push_back(std::move(submission));
    return submissions_.back().id;
  }

  // Submitted ids abort with OK unless told otherwise; unknown ids are kNotFound.
  core::Status recordAbort(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    abort_calls_.push_back(id);
    if (auto it = abort_results_.find(id); it != abort_results_.end()) return it->second;
    for (const Submission& s : submissions_) {
      if (s.id == id) return core::Status::ok();
    }
    return core::Status(core::StatusCode::kNotFound,
                        noun_ + " " + std::to_string(id) + " not found");
  }

 private:
  const std::string noun_;
  mutable std::mutex mu_;
  int64_t next_id_ = 1;
  FailSchedule submit_failures_;
  std::vector<Submission> submissions_;
  std::map<int64_t, core::Status> abort_results_;
  std::vector<int64_t> abort_calls_;
};

struct RunSubmission {
  int64_t id = 0;
  scenarios::Scenario scenario;
  std::string fabric;
};

class FakeRunService : public scenarios::RunService, public FakeSubmissions<RunSubmission> {
 public:
  using Submission = RunSubmission;

  FakeRunService() : FakeSubmissions("run") {}

  core::Result<int64_t> submit(const scenarios::Scenario& scenario,
                               const std::string& fabric) override {
    return recordSubmit({0, scenario, fabric});
  }
  core::Status abort(int64_t run_id) override { return recordAbort(run_id); }
};

struct SuiteSubmission {
  int64_t id = 0;
  std::string suite_name;
  nlohmann::json suite;
  std::string fabric;
};

class FakeSuiteService : public scenarios::SuiteService, public FakeSubmissions<SuiteSubmission> {
 public:
  using Submission = SuiteSubmission;

  FakeSuiteService() : FakeSubmissions("suite run") {}

  core::Result<int64_t> submitSuite(const std::string& suite_name, const nlohmann::json& suite,
                                    const std::string& fabric) override {
    return recordSubmit({0, suite_name, suite, fabric});
  }
  core::Status abortSuite(int64_t suite_run_id) override { return recordAbort(suite_run_id); }
};

class FakeFabricCatalog : public scenarios::FabricCatalog {
 public:
  FakeFabricCatalog() = default;
  explicit FakeFabricCatalog(std::vector<scenarios::Fabric> fabrics)
      : fabrics_(std::move(fabrics)) {}

  std::vector<scenarios::Fabric> list() override {
    std::lock_guard<std::mutex> lock(mu_);
    return fabrics_;
  }

  core::Result<scenarios::Fabric> get(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto failure = get_failures_.next()) return *failure;
    for (const scenarios::Fabric& fabric : fabrics_) {
      if (fabric.name == name) return fabric;
    }
    return core::Status(core::StatusCode::kNotFound, "fabric " + name + " is not registered");
  }

  // --- test controls ---
  void add(scenarios::Fabric fabric) {
    std::lock_guard<std::mutex> lock(mu_);
    fabrics_.push_back(std::move(fabric));
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    fabrics_.clear();
  }
  // The nth get() (1-based, counted from construction) returns `status`.
  void failGetOn(int nth_call, core::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    get_failures_.failOn(nth_call, std::move(status));
  }
  int getCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return get_failures_.calls();
  }

  // h0..h(n-1) in namespaces fc-hN, each with eth0 10.200.0.(N+1) on a link hN-sw0 to port pN of
  // bridge br0 in fc-sw0; hosts are labelled rack=r(N/2), rail=0.
  static scenarios::Fabric netnsLab(int hosts = 4, const std::string& name = "netns-lab") {
    scenarios::Fabric fabric;
    fabric.name = name;
    fabric.kind = "netns";
    scenarios::Switch sw;
    sw.name = "sw0";
    sw.netns = "fc-sw0";
    sw.bridge = "br0";
    sw.labels = {{"role", "leaf"}};
    for (int i = 0; i < hosts; ++i) {
      const std::string n = std::to_string(i);
      scenarios::Host host;
      host.name = "h" + n;
      host.netns = "fc-h" + n;
      host.nics.push_back({"eth0", "10.200.0." + std::to_string(i + 1)});
      host.labels = {{"rack", "r" + std::to_string(i / 2)}, {"rail", "0"}};
      fabric.hosts.push_back(host);
      sw.ports.push_back("p" + n);
      fabric.links.push_back({"h" + n + "-sw0", host.name, "eth0", "sw0", "p" + n, {}});
    }
    fabric.switches.push_back(sw);
    return fabric;
  }

 private:
  mutable std::mutex mu_;
  std::vector<scenarios::Fabric> fabrics_;
  FailSchedule get_failures_;
};

// Records revertNow calls and answers them as told (OK by default); runs listed with
// setRunning() own their faults.
class FakeFaultService : public scenarios::FaultService {
 public:
  void setRevertResult(int64_t journal_id, core::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    results_[journal_id] = std::move(status);
  }
  void setRunning(int64_t run_id) {
    std::lock_guard<std::mutex> lock(mu_);
    running_.push_back(run_id);
  }
  std::vector<int64_t> revertCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  core::Status revertNow(int64_t journal_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(journal_id);
    auto it = results_.find(journal_id);
    return it == results_.end() ? core::Status::ok() : it->second;
  }
  bool ownedByRunningRun(int64_t run_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t id : running_) {
      if (id == run_id) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::map<int64_t, core::Status> results_;
  std::vector<int64_t> running_;
  std::vector<int64_t> calls_;
};

}  // namespace fabric_chaos::fakes
