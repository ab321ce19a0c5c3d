#include "injectors/sys/daemon_control.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>
#include <thread>

#include "injectors/sys/proc_stat.h"
#include "injectors/sys/process.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;

class RealDaemonControl : public DaemonControl {
 public:
  core::Result<pid_t> start(const DaemonSpec& spec) override { return startDaemon(spec); }
  std::vector<ProcessInfo> find(const std::string& comm) override { return findProcesses(comm); }
  std::optional<uint64_t> netnsInode(const std::string& netns) override {
    return sys::netnsInode(netns);
  }
  bool alive(pid_t pid) override { return processAlive(pid); }
  Status signal(pid_t pid, int signo) override {
    if (::kill(pid, signo) == 0) return Status::ok();
    const int err = errno;
    if (err == ESRCH) {
      return Status(StatusCode::kNotFound, "no process " + std::to_string(pid), err);
    }
    return Status(StatusCode::kInternal, "kill " + std::to_string(pid), err);
  }
  bool waitGone(pid_t pid, int timeout_ms) override {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (processAlive(pid)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  bool terminate(pid_t pid, int grace_ms) override { return terminateProcess(pid, grace_ms); }
  std::string commandName(pid_t pid) override {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
  }
  std::string descriptorTarget(pid_t pid, int fd) override {
    const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    char target[PATH_MAX];
    const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    return n < 0 ? std::string() : std::string(target, static_cast<size_t>(n));
  }
  Status writeLine(const std::string& path, const std::string& line) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      // A FIFO with no reader refuses a non-blocking writer with ENXIO.
      return Status(err == ENXIO ? StatusCode::kUnavailable : StatusCode::kInternal,
                    err == ENXIO ? path + " has no reader" : "open " + path, err);
    }
    const std::string text = line + "\n";
    const ssize_t written = ::write(fd, text.data(), text.size());
    const int err = errno;
    ::close(fd);
    if (written != static_cast<ssize_t>(text.size())) {
      return Status(StatusCode::kInternal, "write " + path, written < 0 ? err : 0);
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<DaemonControl> makeDaemonControl() { return std::make_unique<RealDaemonControl>(); }

}  // namespace fabric_chaos::sys
