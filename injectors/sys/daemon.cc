#include "injectors/sys/daemon.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "injectors/sys/proc_stat.h"

namespace fabric_chaos::sys {
namespace {

// The steps between fork and exec that can fail; the caller turns one into a description.
enum Stage : int {
  kStageFork = 1,
  kStageSetsid,
  kStageSetns,
  kStageChdir,
  kStageStdin,
  kStageLog,
  kStageExec
};
enum ReportKind : int { kReportPid = 1, kReportFailure };

// What the intermediate child (the daemon's pid) and the daemon (a failure before exec) tell the
// caller through one pipe. A record is far below PIPE_BUF, so the two writers never interleave.
struct Report {
  int kind;
  int stage;
  int err;
  pid_t pid;
};

// Everything the children use, built before fork: after fork in a multithreaded caller only
// async-signal-safe calls are allowed, so nothing may allocate.
struct ChildPlan {
  char* const* argv;
  char* const* envp;       // nullptr: inherit this process's environment
  const char* netns_path;  // nullptr: stay in the caller's namespace
  const char* cwd;
  const char* stdin_path;
  int stdin_flags;
  const char* log_path;
  int report_r;
  int report_w;
  int max_fd;  // for the descriptor sweep when close_range is missing
};

void closeIfOpen(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Async-signal-safe.
void sendReport(int fd, const Report& report) {
  ssize_t n;
  do {
    n = ::write(fd, &report, sizeof(report));
  } while (n < 0 && errno == EINTR);
}

// The daemon itself, in its own session: everything it needs, then exec. Async-signal-safe.
[[noreturn]] void daemonMain(const ChildPlan& plan) {
  auto fail = [&plan](int stage) {
    sendReport(plan.report_w, Report{kReportFailure, stage, errno, 0});
    ::_exit(127);
  };
  // Handlers the caller installed would run here on a signal; ignored signals would stay
  // ignored across exec. Everything back to default while all signals are still blocked (the
  // caller blocked them around fork), then unblocked at once, so that a daemon stuck before exec
  // can still be ended with SIGTERM.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int signo = 1; signo < NSIG; ++signo) {
    ::sigaction(signo, &dfl, nullptr);  // fails harmlessly for SIGKILL, SIGSTOP, glibc's own
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Its own session and process group: no controlling terminal, and the caller's terminal or
  // process-group signals (^C to `lab up`) never reach it.
  if (::setsid() < 0) fail(kStageSetsid);
  if (plan.netns_path != nullptr) {
    const int ns_fd = ::open(plan.netns_path, O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) fail(kStageSetns);
    if (::setns(ns_fd, CLONE_NEWNET) != 0) fail(kStageSetns);
    ::close(ns_fd);
  }
  if (::chdir(plan.cwd) != 0) fail(kStageChdir);
  // O_NOCTTY: a session leader opening a terminal would otherwise make it its controlling one.
  int in = ::open(plan.stdin_path, plan.stdin_flags | O_NOCTTY | O_CLOEXEC);
  if (in < 0) fail(kStageStdin);
  // O_NONBLOCK: a FIFO without a reader as the log fails (ENXIO) instead of blocking the open,
  // and the caller with it, for ever. The daemon then writes in blocking mode as usual.
  int out = ::open(plan.log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
                   0644);
  if (out < 0) fail(kStageLog);
  const int out_flags = ::fcntl(out, F_GETFL);
  if (out_flags < 0 || ::fcntl(out, F_SETFL, out_flags & ~O_NONBLOCK) != 0) fail(kStageLog);
  // A caller without 0, 1 or 2 open hands out those numbers to open(); move the descriptors above
  // 2 first so that the dup2s below cannot overwrite one another.
  if (in < 3 && (in = ::fcntl(in, F_DUPFD_CLOEXEC, 3)) < 0) fail(kStageStdin);
  if (out < 3 && (out = ::fcntl(out, F_DUPFD_CLOEXEC, 3)) < 0) fail(kStageLog);
  if (::dup2(in, STDIN_FILENO) < 0) fail(kStageStdin);  // dup2 clears FD_CLOEXEC on the copy
  if (::dup2(out, STDOUT_FILENO) < 0 || ::dup2(out, STDERR_FILENO) < 0) fail(kStageLog);
  ::close(in);
  ::close(out);
  // Descriptors other threads opened without O_CLOEXEC must not live on in the daemon; the
  // report pipe is close-on-exec already and stays usable until exec.
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < plan.max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  // execvpe looks argv[0] up in this process's PATH, not in the one given to the daemon.
  if (plan.envp != nullptr) {
    ::execvpe(plan.argv[0], plan.argv, plan.envp);
  } else {
    ::execvp(plan.argv[0], plan.argv);
  }
  fail(kStageExec);
  ::_exit(127);  // not reached
}

// The caller's child: forks the daemon and exits at once, so that the daemon is reparented (to
// init or a subreaper) and is nobody's child here. Async-signal-safe: _Fork, not fork, because
// fork's atfork handlers may take locks that other threads of the caller held at the first fork.
[[noreturn]] void intermediateMain(const ChildPlan& plan) {
  ::close(plan.report_r);
  const pid_t pid = ::_Fork();
  if (pid < 0) {
    sendReport(plan.report_w, Report{kReportFailure, kStageFork, errno, 0});
    ::_exit(1);
  }
  if (pid == 0) daemonMain(plan);
  sendReport(plan.report_w, Report{kReportPid, 0, 0, pid});
  ::_exit(0);
}

// fd moved to a number above 2 (still close-on-exec): the daemon's dup2 onto 0, 1 and 2 must not
// hit the report pipe when the caller runs with one of those closed.
bool moveAboveStdio(int& fd) {
  if (fd > 2) return true;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return false;
  ::close(fd);
  fd = moved;
  return true;
}

bool validNetnsName(const std::string& netns) {
  return netns.find('/') == std::string::npos && netns != "." && netns != "..";
}

// The whole of a /proc file; nullopt (errno set) when it cannot be opened or read.
std::optional<std::string> readProcFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      errno = err;
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

// "a\0b\0" -> {"a", "b"}: the trailing NUL ends the last element, it does not start a new one.
std::vector<std::string> splitNul(const std::string& text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

std::optional<std::string> readLink(const std::string& path) {
  std::string target(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return std::nullopt;
    if (static_cast<size_t>(n) < target.size()) {
      target.resize(static_cast<size_t>(n));
      return target;
    }
    target.resize(target.size() * 2);  // possibly truncated: try again with more room
  }
}

std::optional<uint64_t> inodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.st_ino);
}

// A file of a process that is there but that this caller may not read (another user's environ,
// cwd or namespace without root) leaves a field empty; any other failure means the process went.
bool deniedNotGone(int err) { return err == EACCES || err == EPERM; }

// What /proc says about pid if it is a live process named comm; nullopt otherwise, or when it
// exits (or its pid is reused) while being read.
std::optional<ProcessInfo> readProcess(pid_t pid, const std::string& comm) {
  const std::string dir = "/proc/" + std::to_string(pid);
  auto name = readProcFile(dir + "/comm");
  if (!name) return std::nullopt;
  if (!name->empty() && name->back() == '\n') name->pop_back();
  if (*name != comm) return std::nullopt;
  const auto before = readProcessStat(pid);
  if (!before || before->zombie()) return std::nullopt;

  ProcessInfo info;
  info.pid = pid;
  info.comm = std::move(*name);
  info.start_time = before->start_time;
  const auto cmdline = readProcFile(dir + "/cmdline");
  if (!cmdline) return std::nullopt;
  info.argv = splitNul(*cmdline);
  if (const auto environment = readProcFile(dir + "/environ")) {
    info.env = splitNul(*environment);
  } else if (!deniedNotGone(errno)) {
    return std::nullopt;
  }
  if (const auto cwd = readLink(dir + "/cwd")) {
    info.cwd = *cwd;
  } else if (!deniedNotGone(errno)) {
    return std::nullopt;
  }
  info.netns_inode = inodeOf(dir + "/ns/net");
  if (!info.netns_inode && !deniedNotGone(errno)) return std::nullopt;

  // A process that exited part-way reads as empty files rather than errors; one whose pid was
  // taken by a new process mixes two. Both show here.
  const auto after = readProcessStat(pid);
  if (!after || after->zombie() || after->start_time != before->start_time) return std::nullopt;
  return info;
}

}  // namespace

core::Result<pid_t> startDaemon(const DaemonSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return core::Status(core::StatusCode::kInvalidArgument, "startDaemon: argv is empty");
  }
  const std::string& program = spec.argv[0];
  if (!spec.netns.empty() && !validNetnsName(spec.netns)) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        program + ": invalid network namespace name '" + spec.netns + "'");
  }

  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(spec.env.size() + 1);
  for (const std::string& var : spec.env) envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);
  const std::string netns_path = spec.netns.empty() ? "" : "/run/netns/" + spec.netns;
  const std::string cwd = spec.cwd.empty() ? "/" : spec.cwd;
  const std::string stdin_path = spec.stdin_path.empty() ? "/dev/null" : spec.stdin_path;
  const std::string log_path = spec.log_path.empty() ? "/dev/null" : spec.log_path;
  const long open_max = ::sysconf(_SC_OPEN_MAX);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return core::errnoStatus(errno, program + ": cannot create a pipe");
  }
  int report_r = fds[0];
  int report_w = fds[1];
  if (!moveAboveStdio(report_r) || !moveAboveStdio(report_w)) {
    const core::Status status = core::errnoStatus(errno, program + ": cannot create a pipe");
    closeIfOpen(report_r);
    closeIfOpen(report_w);
    return status;
  }

  ChildPlan plan{};
  plan.argv = argv.data();
  plan.envp = spec.env.empty() ? nullptr : envp.data();
  plan.netns_path = spec.netns.empty() ? nullptr : netns_path.c_str();
  plan.cwd = cwd.c_str();
  plan.stdin_path = stdin_path.c_str();
  // Read-write so that a FIFO always has a writer: the daemon never reads an end of file.
  plan.stdin_flags = spec.stdin_path.empty() ? O_RDONLY : O_RDWR;
  plan.log_path = log_path.c_str();
  plan.report_r = report_r;
  plan.report_w = report_w;
  plan.max_fd = open_max > 0 && open_max < (1 << 20) ? static_cast<int>(open_max) : (1 << 20);

  // No signal may run one of this process's handlers in a child before the daemon has reset
  // them; the daemon clears the mask itself once it has.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t child = ::fork();
  const int fork_errno = errno;
  if (child == 0) intermediateMain(plan);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  closeIfOpen(report_w);
  if (child < 0) {
    closeIfOpen(report_r);
    return core::errnoStatus(fork_errno, program + ": fork");
  }

  // End of file once the intermediate child has exited and the daemon has exec'd (the pipe is
  // close-on-exec) or exited after a failure.
  std::string received;
  char buf[sizeof(Report) * 4];
  for (;;) {
    const ssize_t n = ::read(report_r, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received.append(buf, static_cast<size_t>(n));
  }
  closeIfOpen(report_r);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }

  pid_t daemon_pid = 0;
  std::optional<Report> failure;
  for (size_t at = 0; at + sizeof(Report) <= received.size(); at += sizeof(Report)) {
    Report report;
    std::memcpy(&report, received.data() + at, sizeof(report));
    if (report.kind == kReportPid) daemon_pid = report.pid;
    if (report.kind == kReportFailure) failure = report;
  }
  if (failure) {
    std::string what;
    switch (failure->stage) {
      case kStageFork:
        what = "fork";
        break;
      case kStageSetsid:
        what = "setsid";
        break;
      case kStageSetns:
        what = "setns " + spec.netns;
        break;
      case kStageChdir:
        what = "chdir " + cwd;
        break;
      case kStageStdin:
        what = "open " + stdin_path;
        break;
      case kStageLog:
        what = "open " + log_path;
        break;
      default:
        what = std::string(spec.env.empty() ? "execvp " : "execvpe ") + program;
        break;
    }
    return core::errnoStatus(failure->err, program + ": " + what);
  }
  if (daemon_pid <= 0) {
    return core::Status(core::StatusCode::kInternal,
                        program + ": the intermediate child exited without starting the daemon");
  }
  return daemon_pid;
}

std::optional<std::string> ProcessInfo::envValue(const std::string& name) const {
  const std::string prefix = name + "=";
  for (const std::string& var : env) {
    if (var.compare(0, prefix.size(), prefix) == 0) return var.substr(prefix.size());
  }
  return std::nullopt;
}

std::vector<ProcessInfo> findProcesses(const std::string& comm) {
  std::vector<ProcessInfo> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string_view name = entry->d_name;
    pid_t pid = 0;
    const auto parsed = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (parsed.ec != std::errc() || parsed.ptr != name.data() + name.size() || pid <= 0) continue;
    if (auto info = readProcess(pid, comm)) {
      found.push_back(std::move(*info));
    }
  }
  ::closedir(proc);
  std::sort(found.begin(), found.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
  return found;
}

std::optional<uint64_t> netnsInode(const std::string& netns) {
  if (netns.empty()) return inodeOf("/proc/self/ns/net");
  if (!validNetnsName(netns)) return std::nullopt;
  return inodeOf("/run/netns/" + netns);
}

}  // namespace fabric_chaos::sys
