#include "tests/fakes/fake_process.h"

#include <cerrno>

namespace fabric_chaos::fakes {

core::Status FakeChildProcess::signal(int signo) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!running_) {
    return core::Status(core::StatusCode::kNotFound,
                        "process " + std::to_string(pid_) + " has already exited", ESRCH);
  }
  signals_.push_back(signo);
  if (signo != 0) {
    running_ = false;
    exit_code_ = 128 + signo;
  }
  return core::Status::ok();
}

core::Result<int> FakeChildProcess::wait(int timeout_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) {
    return core::Status(core::StatusCode::kTimeout, "process " + std::to_string(pid_) +
                                                        " still running after " +
                                                        std::to_string(timeout_ms) + " ms");
  }
  return exit_code_;
}

std::vector<int> FakeChildProcess::signals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return signals_;
}

void FakeProcessLauncher::failOnCall(int n, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  schedule_.failOn(n, std::move(status));
}

void FakeProcessLauncher::setExitCode(int code) {
  std::lock_guard<std::mutex> lock(mu_);
  exit_code_ = code;
}

void FakeProcessLauncher::setRunning(bool running) {
  std::lock_guard<std::mutex> lock(mu_);
  running_ = running;
}

std::vector<sys::SpawnSpec> FakeProcessLauncher::spawned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spawned_;
}

core::Result<std::unique_ptr<sys::ChildProcess>> FakeProcessLauncher::spawn(
    const sys::SpawnSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  spawned_.push_back(spec);
  if (auto failure = schedule_.next()) return *failure;
  if (spec.argv.empty()) {
    return core::Status(core::StatusCode::kInvalidArgument, "spawn: argv is empty");
  }
  return std::unique_ptr<sys::ChildProcess>(
      std::make_unique<FakeChildProcess>(next_pid_++, exit_code_, running_));
}

}  // namespace fabric_chaos::fakes
