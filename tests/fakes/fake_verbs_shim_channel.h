#pragma once
// In-memory sys::VerbsShimChannel: shim-loaded programs the test starts (addProcess) and ends
// (exit), what each has armed, and every request sent, in order ("arm 1234", "renew 1234",
// "disarm 1234"). Answers as the real shim does: a renew with nothing armed is refused
// (kFailedPrecondition), an exited program is kNotFound. arm, renew and disarm are counted for
// failOn(); refuseArm makes one program refuse every arm. Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "injectors/sys/verbs_shim_channel.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeVerbsShimChannel : public sys::VerbsShimChannel {
 public:
  explicit FakeVerbsShimChannel(std::string dir = "/run/fake-agent/verbs") : dir_(std::move(dir)) {}

  void addProcess(sys::ShimProcess process) {
    std::lock_guard lock(mu_);
    if (process.socket.empty()) {
      process.socket = dir_ + "/verbs-" + std::to_string(process.pid) + ".sock";
    }
    processes_[process.pid] = std::move(process);
  }
  // The program ends: its socket and what it had armed go with it.
  void exit(pid_t pid) {
    std::lock_guard lock(mu_);
    processes_.erase(pid);
    armed_.erase(pid);
  }
  // The program's lease ran out: its shim disarmed itself.
  void lapse(pid_t pid) {
    std::lock_guard lock(mu_);
    armed_.erase(pid);
  }
  void refuseArm(pid_t pid, core::Status status) {
    std::lock_guard lock(mu_);
    refusals_[pid] = std::move(status);
  }
  void failOn(int n, core::Status status) {
    std::lock_guard lock(mu_);
    schedule_.failOn(n, std::move(status));
  }
  void failList(core::Status status) {
    std::lock_guard lock(mu_);
    list_failure_ = std::move(status);
  }
  // What the program has armed now; empty when nothing.
  std::vector<verbs_shim::ShimFault> armedFaults(pid_t pid) {
    std::lock_guard lock(mu_);
    auto it = armed_.find(pid);
    return it == armed_.end() ? std::vector<verbs_shim::ShimFault>{} : it->second.faults;
  }
  std::optional<verbs_shim::ArmRequest> armRequest(pid_t pid) {
    std::lock_guard lock(mu_);
    auto it = armed_.find(pid);
    if (it == armed_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int count(const std::string& request) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const std::string& r : requests_) n += r == request ? 1 : 0;
    return n;
  }

  core::Result<std::vector<sys::ShimProcess>> list() override {
    std::lock_guard lock(mu_);
    if (!list_failure_.isOk()) return list_failure_;
    std::vector<sys::ShimProcess> out;
    for (const auto& [pid, process] : processes_) {
      sys::ShimProcess shown = process;
      shown.armed = nlohmann::json::array();
      if (auto it = armed_.find(pid); it != armed_.end()) {
        for (const verbs_shim::ShimFault& fault : it->second.faults) {
          shown.armed.push_back({{"kind", describe(fault.kind)}, {"seen", 0}, {"fired", 0}});
        }
      }
      out.push_back(std::move(shown));
    }
    return out;
  }
  core::Status arm(pid_t pid, const verbs_shim::ArmRequest& request) override {
    std::lock_guard lock(mu_);
    requests_.push_back("arm " + std::to_string(pid));
    if (auto failure = schedule_.next()) return *failure;
    if (processes_.count(pid) == 0) return gone(pid);
    if (auto it = refusals_.find(pid); it != refusals_.end()) return it->second;
    armed_[pid] = request;
    return core::Status::ok();
  }
  core::Status renew(pid_t pid) override {
    std::lock_guard lock(mu_);
    requests_.push_back("renew " + std::to_string(pid));
    if (auto failure = schedule_.next()) return *failure;
    if (processes_.count(pid) == 0) return gone(pid);
    if (armed_.count(pid) == 0) {
      return core::Status(core::StatusCode::kFailedPrecondition,
                          "the verbs shim of process " + std::to_string(pid) +
                              " refused: nothing is armed: the lease ran out or was never taken");
    }
    return core::Status::ok();
  }
  core::Status disarm(pid_t pid) override {
    std::lock_guard lock(mu_);
    requests_.push_back("disarm " + std::to_string(pid));
    if (auto failure = schedule_.next()) return *failure;
    if (processes_.count(pid) == 0) return gone(pid);
    armed_.erase(pid);
    return core::Status::ok();
  }
  std::string directory() const override { return dir_; }

 private:
  static core::Status gone(pid_t pid) {
    return core::Status(core::StatusCode::kNotFound,
                        "the verbs shim of process " + std::to_string(pid) + ": no such socket");
  }

  const std::string dir_;
  std::mutex mu_;
  std::map<pid_t, sys::ShimProcess> processes_;
  std::map<pid_t, verbs_shim::ArmRequest> armed_;
  std::map<pid_t, core::Status> refusals_;
  std::vector<std::string> requests_;
  FailSchedule schedule_;
  core::Status list_failure_;
};

}  // namespace fabric_chaos::fakes
