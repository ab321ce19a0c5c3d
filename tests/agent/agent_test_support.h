#pragma once
// Shared by the agent tests: an in-memory injector whose state is one "up" flag per interface, a
// host probe with fixed answers, and a listener that records what it is told. Thread-safe.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent.h"
#include "agent/agent_service.h"
#include "injectors/injector.h"

namespace fabric_chaos::agent::testing {

// "fake_down": apply takes the interface down, revert restores prior.up (default: up). Unknown
// interfaces start up. validate() accepts {"down_ms": 1..600000} only.
class RecordingInjector : public injectors::Injector {
 public:
  static constexpr const char* kKind = "fake_down";

  const injectors::KindSpec& spec() const override {
    static const injectors::KindSpec spec = [] {
      injectors::KindSpec s;
      s.kind = kKind;
      s.summary = "takes an interface down (test double)";
      s.resource = "link_state";
      s.params = {{"down_ms",
                   injectors::ParamType::kInteger,
                   "ms",
                   1,
                   false,
                   600000,
                   {},
                   false,
                   nullptr,
                   "how long"}};
      return s;
    }();
    return spec;
  }
  injectors::KindInfo info() const override { return {kKind, spec().summary, true, "", "memory"}; }
  core::Status validate(const nlohmann::json& params) const override {
    return injectors::checkParams(spec(), params);
  }
  core::Result<nlohmann::json> capture(const injectors::Fault& fault) override {
    std::lock_guard lock(mu_);
    calls_.push_back("capture " + name(fault));
    return nlohmann::json{{"up", upLocked(fault)}};
  }
  core::Status apply(const injectors::Fault& fault) override {
    std::lock_guard lock(mu_);
    calls_.push_back("apply " + name(fault));
    if (fail_apply_) return {core::StatusCode::kInternal, "injected apply failure"};
    up_[name(fault)] = false;
    return core::Status::ok();
  }
  core::Status revert(const injectors::Fault& fault, const nlohmann::json& prior) override {
    std::lock_guard lock(mu_);
    calls_.push_back("revert " + name(fault) + " " + prior.dump());
    if (fail_revert_) return {core::StatusCode::kUnavailable, "injected revert failure"};
    up_[name(fault)] = prior.is_object() ? prior.value("up", true) : true;
    return core::Status::ok();
  }
  core::Result<nlohmann::json> observe(const injectors::Fault& fault) override {
    std::lock_guard lock(mu_);
    calls_.push_back("observe " + name(fault));
    return nlohmann::json{{"up", upLocked(fault)}};
  }

  bool up(const std::string& netns_ifname) {
    std::lock_guard lock(mu_);
    auto it = up_.find(netns_ifname);
    return it == up_.end() || it->second;
  }
  void setUp(const std::string& netns_ifname, bool up) {
    std::lock_guard lock(mu_);
    up_[netns_ifname] = up;
  }
  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  // Calls that change something (apply / revert).
  int mutations() {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& c : calls_) n += (c.rfind("apply", 0) == 0 || c.rfind("revert", 0) == 0);
    return n;
  }
  void failApply(bool fail) {
    std::lock_guard lock(mu_);
    fail_apply_ = fail;
  }
  void failRevert(bool fail) {
    std::lock_guard lock(mu_);
    fail_revert_ = fail;
  }

  // "eth0" or "ns/eth0"
  static std::string name(const injectors::Fault& fault) {
    return injectors::describe(fault.target);
  }

 private:
  bool upLocked(const injectors::Fault& fault) {
    auto it = up_.find(name(fault));
    return it == up_.end() || it->second;
  }

  std::mutex mu_;
  std::map<std::string, bool> up_;
  std::vector<std::string> calls_;
  bool fail_apply_ = false;
  bool fail_revert_ = false;
};

class FixedHostProbe : public HostProbe {
 public:
  std::string hostname() override { return "vm-test-1"; }
  std::string kernelRelease() override { return "6.12.0-test"; }
  std::vector<NetdevInfo> netdevs() override {
    return {{"eth0", "10.0.2.15", "52:54:00:12:34:56", "up", 1500},
            {"eth1", "192.168.50.2", "52:54:00:12:34:57", "up", 9000}};
  }
  std::vector<RdmaPortInfo> rdmaPorts() override {
    return {{"rxe0", 1, "4: ACTIVE", "fe80:0000:0000:0000:5054:00ff:fe12:3457", "eth1"}};
  }
};

class RecordingListener : public WorkloadListener {
 public:
  struct Event {
    int rank;
    double t_ms;
    std::string kind;
    nlohmann::json detail;
  };
  void onSamples(const std::vector<core::Sample>& samples) override {
    std::lock_guard lock(mu);
    this->samples.insert(this->samples.end(), samples.begin(), samples.end());
    cv.notify_all();
  }
  void onEvent(int rank, double t_ms, const std::string& kind,
               const nlohmann::json& detail) override {
    std::lock_guard lock(mu);
    events.push_back({rank, t_ms, kind, detail});
    cv.notify_all();
  }
  void onRankExit(int rank, int exit_code) override {
    std::lock_guard lock(mu);
    exits.emplace_back(rank, exit_code);
    cv.notify_all();
  }
  template <typename Pred>
  bool waitFor(int timeout_ms, Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return pred(*this); });
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<core::Sample> samples;
  std::vector<Event> events;
  std::vector<std::pair<int, int>> exits;
};

inline injectors::Fault fakeFault(const std::string& ifname, const std::string& netns = "",
                                  nlohmann::json params = {{"down_ms", 1000}}) {
  injectors::Fault fault;
  fault.kind = RecordingInjector::kKind;
  fault.target = injectors::InterfaceTarget{netns, ifname};
  fault.params = std::move(params);
  return fault;
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fc_agent") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One request to `service` as the controller sends it: the bearer `token` unless `authorization`
// is given ("-" sends no header at all).
inline core::HttpResponse callService(AgentService& service, const std::string& token,
                                      const std::string& method, const std::string& target,
                                      const nlohmann::json& body = nullptr,
                                      const std::string& authorization = "") {
  core::HttpRequest request;
  request.method = method;
  request.target = target;
  request.headers["authorization"] =
      authorization.empty() ? std::string("Bearer ") + token : authorization;
  if (authorization == "-") request.headers.clear();
  if (!body.is_null()) request.body = body.dump();
  return service.handle(request);
}

// An answer's JSON body; every answer carries the agent's clock.
inline nlohmann::json parseAnswer(const core::HttpResponse& response) {
  nlohmann::json doc = nlohmann::json::parse(response.body, nullptr, false);
  EXPECT_TRUE(doc.is_object()) << response.body;
  EXPECT_TRUE(doc.contains("agent_now_ns")) << response.body;
  return doc;
}

}  // namespace fabric_chaos::agent::testing
