#include "injectors/sys/process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "injectors/sys/proc_stat.h"

namespace fabric_chaos::sys {
namespace {

// What the child reports through the error pipe when it cannot reach execv.
struct ChildFailure {
  int stage;
  int err;
};
enum Stage : int { kStageSetns = 1, kStageStdout, kStageStderr, kStageExec };

void closeIfOpen(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Exit code in the shell's convention: the status, or 128+signal.
int decodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 128;
}

pid_t waitBlocking(pid_t pid, int* status) {
  pid_t r;
  do {
    r = ::waitpid(pid, status, 0);
  } while (r < 0 && errno == EINTR);
  return r;
}

class ForkExecChild : public ChildProcess {
 public:
  ForkExecChild(pid_t pid, int stdout_fd, int stderr_fd, bool group)
      : pid_(pid), stdout_fd_(stdout_fd), stderr_fd_(stderr_fd), group_(group) {}

  ~ForkExecChild() override {
    if (group_) ::kill(-pid_, SIGKILL);  // what the leader started, even after it exited
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      waitBlocking(pid_, &status);
    }
    closeIfOpen(stdout_fd_);
    closeIfOpen(stderr_fd_);
  }

  pid_t pid() const override { return pid_; }
  int stdoutFd() const override { return stdout_fd_; }
  int stderrFd() const override { return stderr_fd_; }

  core::Status signal(int signo) override {
    // A group outlives its leader while a member lives: signalled by its id, which stays
    // reserved as long as the group exists.
    if (group_ && ::kill(-pid_, signo) == 0) return core::Status::ok();
    if (reaped_) {
      return core::Status(core::StatusCode::kNotFound,
                          "process " + std::to_string(pid_) + " has already exited", ESRCH);
    }
    if (::kill(pid_, signo) != 0) {
      return core::errnoStatus(errno, "cannot signal process " + std::to_string(pid_));
    }
    return core::Status::ok();
  }

  // Polls with waitpid(WNOHANG) so a wait never blocks past its budget; a negative timeout
  // waits without limit. Once reaped, the exit code is remembered and returned again.
  core::Result<int> wait(int timeout_ms) override {
    if (reaped_) return exit_code_;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        exit_code_ = decodeWaitStatus(status);
        return exit_code_;
      }
      if (r < 0) {
        if (errno == EINTR) continue;
        return core::errnoStatus(errno, "cannot wait for process " + std::to_string(pid_));
      }
      const auto now = Clock::now();
      if (timeout_ms >= 0 && now >= deadline) {
        return core::Status(core::StatusCode::kTimeout, "process " + std::to_string(pid_) +
                                                            " still running after " +
                                                            std::to_string(timeout_ms) + " ms");
      }
      auto sleep_for = pause;
      if (timeout_ms >= 0) {
        sleep_for = std::min(sleep_for,
                             std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                                 std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(sleep_for);
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }

 private:
  pid_t pid_;
  int stdout_fd_;
  int stderr_fd_;
  bool group_;
  bool reaped_ = false;
  int exit_code_ = 0;
};

// Runs in the forked child of a possibly multithreaded parent: async-signal-safe calls only.
[[noreturn]] void childMain(pid_t parent, int netns_fd, int stdout_w, int stderr_fd, int error_w,
                            bool own_group, char* const* argv) {
  auto fail = [error_w](int stage) {
    ChildFailure failure{stage, errno};
    ssize_t ignored = ::write(error_w, &failure, sizeof(failure));
    (void)ignored;
    ::_exit(127);
  };
  // The death signal fires when the parent *thread* that forked exits; see spawn().
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (own_group) ::setpgid(0, 0);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
  // Do not inherit the forking thread's blocked signals or ignored SIGPIPE.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
  ::sigaction(SIGTERM, &dfl, nullptr);
  ::sigaction(SIGINT, &dfl, nullptr);
  // Descriptors other threads opened without O_CLOEXEC must not leak into the program.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) fail(kStageSetns);
  if (stdout_w >= 0) {
    if (stdout_w == STDOUT_FILENO) {
      if (::fcntl(STDOUT_FILENO, F_SETFD, 0) != 0) fail(kStageStdout);
    } else if (::dup2(stdout_w, STDOUT_FILENO) < 0) {
      fail(kStageStdout);
    }
  }
  if (stderr_fd >= 0 && ::dup2(stderr_fd, STDERR_FILENO) < 0) fail(kStageStderr);
  ::execv(argv[0], argv);
  fail(kStageExec);
  ::_exit(127);  // not reached
}

class ForkExecLauncher : public ProcessLauncher {
 public:
  // Children get SIGTERM when the thread that called spawn() exits (PR_SET_PDEATHSIG is tied
  // to the forking thread), so call spawn from a thread that lives as long as the children.
  core::Result<std::unique_ptr<ChildProcess>> spawn(const SpawnSpec& spec) override {
    if (spec.argv.empty() || spec.argv[0].empty()) {
      return core::Status(core::StatusCode::kInvalidArgument, "spawn: argv is empty");
    }
    const std::string& program = spec.argv[0];
    const std::string what = "cannot start " + program;

    if (spec.capture_stderr && !spec.stderr_path.empty()) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          what + ": stderr goes to a pipe or to a file, not both");
    }
    int netns_fd = -1, stderr_fd = -1, stdout_r = -1, stdout_w = -1, error_r = -1, error_w = -1;
    int stderr_r = -1;
    auto cleanup = [&] {
      for (int* fd : {&netns_fd, &stderr_fd, &stdout_r, &stdout_w, &error_r, &error_w, &stderr_r}) {
        closeIfOpen(*fd);
      }
    };

    if (!spec.netns.empty()) {
      if (spec.netns.find('/') != std::string::npos || spec.netns == "." || spec.netns == "..") {
        return core::Status(core::StatusCode::kInvalidArgument,
                            what + ": invalid network namespace name '" + spec.netns + "'");
      }
      netns_fd = ::open(("/run/netns/" + spec.netns).c_str(), O_RDONLY | O_CLOEXEC);
      if (netns_fd < 0) {
        int err = errno;
        if (err == ENOENT) {
          return core::Status(core::StatusCode::kNotFound,
                              what + ": network namespace " + spec.netns + " does not exist", err);
        }
        return core::errnoStatus(err, what + ": cannot open network namespace " + spec.netns);
      }
    }
    if (!spec.stderr_path.empty()) {
      stderr_fd = ::open(spec.stderr_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (stderr_fd < 0) {
        core::Status status = core::errnoStatus(errno, what + ": cannot open " + spec.stderr_path);
        cleanup();
        return status;
      }
    }
    if (spec.capture_stdout) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        core::Status status = core::errnoStatus(errno, what + ": cannot create a stdout pipe");
        cleanup();
        return status;
      }
      stdout_r = fds[0];
      stdout_w = fds[1];
    }
    if (spec.capture_stderr) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        core::Status status = core::errnoStatus(errno, what + ": cannot create a stderr pipe");
        cleanup();
        return status;
      }
      stderr_r = fds[0];
      stderr_fd = fds[1];  // the child's end, dup2'd onto its stderr like a file
    }
    {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        core::Status status = core::errnoStatus(errno, what + ": cannot create an error pipe");
        cleanup();
        return status;
      }
      error_r = fds[0];
      error_w = fds[1];
    }

    // Everything the child touches is prepared before fork: it must not allocate.
    std::vector<char*> argv;
    argv.reserve(spec.argv.size() + 1);
    for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();

    pid_t pid = ::fork();
    if (pid < 0) {
      core::Status status = core::errnoStatus(errno, what + ": fork failed");
      cleanup();
      return status;
    }
    if (pid == 0)
      childMain(parent, netns_fd, stdout_w, stderr_fd, error_w, spec.own_process_group,
                argv.data());

    // Also from this side, so that the group exists before spawn() returns (a signal sent at once
    // must reach it); EACCES once the child has exec'd means it did this itself.
    if (spec.own_process_group) ::setpgid(pid, pid);
    closeIfOpen(error_w);
    closeIfOpen(stdout_w);
    closeIfOpen(netns_fd);
    closeIfOpen(stderr_fd);

    // EOF on the error pipe means execv succeeded (the pipe was close-on-exec).
    ChildFailure failure{};
    ssize_t n;
    do {
      n = ::read(error_r, &failure, sizeof(failure));
    } while (n < 0 && errno == EINTR);
    closeIfOpen(error_r);
    if (n == static_cast<ssize_t>(sizeof(failure))) {
      int status = 0;
      waitBlocking(pid, &status);
      closeIfOpen(stdout_r);
      closeIfOpen(stderr_r);
      switch (failure.stage) {
        case kStageSetns:
          return core::errnoStatus(failure.err,
                                   what + ": cannot enter network namespace " + spec.netns);
        case kStageStdout:
          return core::errnoStatus(failure.err, what + ": cannot redirect stdout");
        case kStageStderr:
          return core::errnoStatus(failure.err, what + ": cannot redirect stderr");
        default:
          return core::errnoStatus(failure.err, what);
      }
    }
    return std::unique_ptr<ChildProcess>(
        std::make_unique<ForkExecChild>(pid, stdout_r, stderr_r, spec.own_process_group));
  }
};

}  // namespace

bool terminateProcess(pid_t pid, int grace_ms) {
  if (!processAlive(pid)) return true;
  ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (processAlive(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!processAlive(pid)) return true;
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && processAlive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return !processAlive(pid);
}

std::unique_ptr<ProcessLauncher> makeForkExecLauncher() {
  return std::make_unique<ForkExecLauncher>();
}

core::Status enterRealtimeScheduling(int priority) {
  sched_param param{};
  param.sched_priority = priority;
  if (::sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
    const int err = errno;
    if (err == EPERM) {
      return core::Status(core::StatusCode::kPermissionDenied,
                          "real-time scheduling needs CAP_SYS_NICE", err);
    }
    return core::errnoStatus(err, "sched_setscheduler SCHED_FIFO");
  }
  return core::Status::ok();
}

}  // namespace fabric_chaos::sys
