#pragma once
// In-memory sys::ProcessLauncher for code that starts ranks or tools: records every SpawnSpec
// and hands out FakeChildProcess objects that exit with a chosen code (or keep running until
// signalled). spawn() calls are counted for failOnCall(). Thread-safe.

#include <memory>
#include <mutex>
#include <vector>

#include "injectors/sys/process.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

// Exits with exit_code at the first wait(), or, when running, times out every wait() until
// signal() ends it with 128+signo.
class FakeChildProcess : public sys::ChildProcess {
 public:
  FakeChildProcess(pid_t pid, int exit_code, bool running)
      : pid_(pid), exit_code_(exit_code), running_(running) {}

  pid_t pid() const override { return pid_; }
  int stdoutFd() const override { return -1; }
  core::Status signal(int signo) override;
  core::Result<int> wait(int timeout_ms) override;
  std::vector<int> signals() const;

 private:
  mutable std::mutex mu_;
  pid_t pid_;
  int exit_code_;
  bool running_;
  std::vector<int> signals_;
};

class FakeProcessLauncher : public sys::ProcessLauncher {
 public:
  // The nth spawn() (1-based) fails with status.
  void failOnCall(int n, core::Status status);
  // Children spawned from now on exit with code / keep running until signalled.
  void setExitCode(int code);
  void setRunning(bool running);
  std::vector<sys::SpawnSpec> spawned() const;

  core::Result<std::unique_ptr<sys::ChildProcess>> spawn(const sys::SpawnSpec& spec) override;

 private:
  mutable std::mutex mu_;
  std::vector<sys::SpawnSpec> spawned_;
  FailSchedule schedule_;
  int exit_code_ = 0;
  bool running_ = false;
  pid_t next_pid_ = 10000;
};

}  // namespace fabric_chaos::fakes
