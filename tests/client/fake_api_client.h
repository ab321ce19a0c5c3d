#pragma once
// A scripted ApiClient for the follow-loop tests: per "METHOD target" a queue of replies (the last
// one repeats), every call recorded, and a FailSchedule that makes the Nth call "unreachable".
// Plus a FakeClock whose sleeps return at once with the time advanced. Single-threaded.

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "client/api_client.h"
#include "core/clock.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::testing {

class FakeApiClient : public client::ApiClient {
 public:
  struct Call {
    std::string method;
    std::string target;
    nlohmann::json body;
  };

  void script(const std::string& method, const std::string& target, int status,
              nlohmann::json body) {
    replies_[method + " " + target].push_back({status, std::move(body)});
  }
  fakes::FailSchedule& failures() { return failures_; }
  // Runs before every call is answered (e.g. to press Ctrl-C after the third poll).
  std::function<void(const Call&)> on_call;

  core::Result<client::ApiReply> call(const std::string& method, const std::string& target,
                                      const nlohmann::json* body) override {
    Call call{method, target, body != nullptr ? *body : nlohmann::json()};
    calls_.push_back(call);
    if (on_call) on_call(call);
    if (auto failure = failures_.next()) return *failure;
    auto it = replies_.find(method + " " + target);
    if (it == replies_.end() || it->second.empty()) {
      return client::ApiReply{
          404,
          {{"error",
            {{"code", "NOT_FOUND"},
             {"message", "fake: nothing scripted for " + method + " " + target}}}}};
    }
    client::ApiReply reply = it->second.front();
    if (it->second.size() > 1) it->second.pop_front();
    return reply;
  }

  std::string baseUrl() const override { return "http://fc.test:8080"; }

  const std::vector<Call>& calls() const { return calls_; }
  int count(const std::string& method, const std::string& target) const {
    int n = 0;
    for (const Call& c : calls_) n += (c.method == method && c.target == target) ? 1 : 0;
    return n;
  }

 private:
  std::map<std::string, std::deque<client::ApiReply>> replies_;
  std::vector<Call> calls_;
  fakes::FailSchedule failures_;
};

class FakeClock : public core::Clock {
 public:
  int64_t nowNs() override { return now_ns_; }
  bool sleepUntilNs(int64_t deadline_ns) override {
    ++sleeps_;
    if (deadline_ns > now_ns_) now_ns_ = deadline_ns;
    return true;
  }
  void wake() override {}
  void advanceMs(int64_t ms) { now_ns_ += ms * 1000000; }
  int sleeps() const { return sleeps_; }

 private:
  int64_t now_ns_ = 1000000000;
  int sleeps_ = 0;
};

}  // namespace fabric_chaos::testing
