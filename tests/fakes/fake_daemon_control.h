#pragma once
// In-memory sys::DaemonControl: a process table the test fills (addProcess), namespaces with
// inodes, signals that end a process (SIGKILL, SIGTERM) or are ignored (ignoreSignals), starts
// that add a process from the spec (and call the onStart hook), and every line written to a
// console. start() and writeLine() are counted for failOn(). Thread-safe.

#include <signal.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "injectors/sys/daemon_control.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeDaemonControl : public sys::DaemonControl {
 public:
  struct Written {
    std::string path;
    std::string line;
  };

  void addNamespace(const std::string& netns, uint64_t inode) {
    std::lock_guard<std::mutex> lock(mu_);
    namespaces_[netns] = inode;
  }
  // A live process; its netns_inode should be one of addNamespace's.
  pid_t addProcess(sys::ProcessInfo process) {
    std::lock_guard<std::mutex> lock(mu_);
    if (process.pid == 0) process.pid = next_pid_++;
    processes_[process.pid] = process;
    return process.pid;
  }
  void setDescriptorTarget(pid_t pid, int fd, const std::string& target) {
    std::lock_guard<std::mutex> lock(mu_);
    descriptors_[{pid, fd}] = target;
  }
  // Signals are delivered but the process does not end (a hung OpenSM).
  void ignoreSignals(bool ignore) {
    std::lock_guard<std::mutex> lock(mu_);
    ignore_signals_ = ignore;
  }
  // Called (outside the lock) with each spec start() accepts, after its process exists: a test
  // can play the daemon's part (write the log it would write).
  void onStart(std::function<void(const sys::DaemonSpec&, pid_t)> hook) {
    std::lock_guard<std::mutex> lock(mu_);
    on_start_ = std::move(hook);
  }
  void failOn(int n, core::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    schedule_.failOn(n, std::move(status));
  }
  std::vector<std::pair<pid_t, int>> signalsSent() {
    std::lock_guard<std::mutex> lock(mu_);
    return signals_;
  }
  std::vector<sys::DaemonSpec> started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::vector<Written> written() {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

  core::Result<pid_t> start(const sys::DaemonSpec& spec) override {
    pid_t pid = 0;
    std::function<void(const sys::DaemonSpec&, pid_t)> hook;
    {
      auto started = startLocked(spec);
      if (!started.isOk()) return started;
      pid = *started;
      std::lock_guard<std::mutex> lock(mu_);
      hook = on_start_;
    }
    if (hook) hook(spec, pid);
    return pid;
  }
  core::Result<pid_t> startLocked(const sys::DaemonSpec& spec) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto failure = schedule_.next()) return *failure;
    started_.push_back(spec);
    sys::ProcessInfo process;
    process.pid = next_pid_++;
    process.comm = spec.argv.empty() ? "" : spec.argv[0];
    process.argv = spec.argv;
    process.env = spec.env;
    process.cwd = spec.cwd;
    auto ns = namespaces_.find(spec.netns);
    if (ns != namespaces_.end()) process.netns_inode = ns->second;
    processes_[process.pid] = process;
    return process.pid;
  }
  std::vector<sys::ProcessInfo> find(const std::string& comm) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<sys::ProcessInfo> out;
    for (const auto& [pid, process] : processes_) {
      if (process.comm == comm) out.push_back(process);
    }
    return out;
  }
  std::optional<uint64_t> netnsInode(const std::string& netns) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = namespaces_.find(netns);
    if (it == namespaces_.end()) return std::nullopt;
    return it->second;
  }
  bool alive(pid_t pid) override {
    std::lock_guard<std::mutex> lock(mu_);
    return processes_.count(pid) != 0;
  }
  core::Status signal(pid_t pid, int signo) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (processes_.count(pid) == 0) {
      return core::Status(core::StatusCode::kNotFound, "no process " + std::to_string(pid));
    }
    signals_.push_back({pid, signo});
    if (!ignore_signals_ && (signo == SIGKILL || signo == SIGTERM)) processes_.erase(pid);
    return core::Status::ok();
  }
  bool waitGone(pid_t pid, int) override { return !alive(pid); }
  bool terminate(pid_t pid, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    signals_.push_back({pid, SIGTERM});
    if (ignore_signals_) return false;
    processes_.erase(pid);
    return true;
  }
  std::string commandName(pid_t pid) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(pid);
    return it == processes_.end() ? "" : it->second.comm;
  }
  std::string descriptorTarget(pid_t pid, int fd) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = descriptors_.find({pid, fd});
    return it == descriptors_.end() ? "" : it->second;
  }
  core::Status writeLine(const std::string& path, const std::string& line) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto failure = schedule_.next()) return *failure;
    written_.push_back({path, line});
    return core::Status::ok();
  }

 private:
  std::mutex mu_;
  std::map<std::string, uint64_t> namespaces_;
  std::map<pid_t, sys::ProcessInfo> processes_;
  std::map<std::pair<pid_t, int>, std::string> descriptors_;
  std::vector<std::pair<pid_t, int>> signals_;
  std::vector<sys::DaemonSpec> started_;
  std::vector<Written> written_;
  FailSchedule schedule_;
  bool ignore_signals_ = false;
  std::function<void(const sys::DaemonSpec&, pid_t)> on_start_;
  pid_t next_pid_ = 1000;
};

}  // namespace fabric_chaos::fakes
