// Detached daemons against the real kernel: double fork into an own session, cwd, environment,
// log, a FIFO as stdin, a throw-away named network namespace, errors that name what failed and
// leave nothing behind, and nothing of the caller's (descriptors, signal mask, ignored signals)
// carried over. Every observation is made independently (/proc read here, `ip netns identify`,
// the log file), not through the code under test; findProcesses is checked against the same
// observations. Needs root for the namespace; outside CI it skips without it, in CI it fails.

#include "injectors/sys/daemon.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/privileged/support.h"

extern char** environ;

namespace fabric_chaos::sys {
namespace {

using core::StatusCode;
namespace fs = std::filesystem;

// Runs cmd with /bin/sh, capturing stdout and stderr.
testing::CommandOutput sh(const std::string& cmd) { return testing::runShell(cmd + " 2>&1"); }

bool waitUntil(const std::function<bool()>& condition, int timeout_ms) {
  return testing::waitFor(condition, timeout_ms);
}

using testing::readFile;

std::string procPath(pid_t pid, const std::string& file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
}

// The report pipe closes (close-on-exec) part-way through execve, before the kernel has set the
// new program's name, arguments and environment block; a /proc read in that window sees an empty
// environ. Waits until the exec is complete as /proc shows it.
bool execCompleted(pid_t pid, const std::string& comm) {
  return waitUntil(
      [&] {
        return readFile(procPath(pid, "comm")) == comm + "\n" &&
               !readFile(procPath(pid, "cmdline")).empty() &&
               !readFile(procPath(pid, "environ")).empty();
      },
      2000);
}

std::vector<std::string> splitNul(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, '\0')) parts.push_back(part);
  return parts;
}

// Field n (1-based, n >= 3) of /proc/PID/stat, counted after the command name; "" when absent.
std::string statField(pid_t pid, int n) {
  const std::string line = readFile(procPath(pid, "stat"));
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream in(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= n; ++i) {
    if (!(in >> field)) return "";
  }
  return field;
}

// Exited: no /proc entry, or a zombie waiting for whoever its parent now is.
bool gone(pid_t pid) {
  const std::string state = statField(pid, 3);
  return state.empty() || state == "Z" || state == "X";
}

std::string linkTarget(const std::string& path) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(path, ec);
  return ec ? "" : target.string();
}

ino_t inodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

std::set<std::string> fdsOf(pid_t pid) {
  std::set<std::string> fds;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(procPath(pid, "fd"), ec)) {
    fds.insert(entry.path().filename().string());
  }
  return fds;
}

// A daemon whose descriptors can be listed without racing its start: right after exec the
// dynamic loader briefly holds descriptors of its own (ld.so.cache, libc), so the shell says
// "ready" once it runs its script, and stays (sleep is its child, not an exec).
std::vector<std::string> readyShell() { return {"sh", "-c", "echo ready; sleep 30"}; }

// The descriptors of pid once `log` says "ready", each but 0, 1, 2 with its target
// ("3 -> pipe:[1234]") so that a failure says what leaked.
std::set<std::string> fdsWhenReady(pid_t pid, const std::string& log) {
  if (!waitUntil([&] { return readFile(log) == "ready\n"; }, 2000)) return {"not ready"};
  std::set<std::string> described;
  for (const std::string& fd : fdsOf(pid)) {
    described.insert(
        fd.size() == 1 && fd[0] <= '2' ? fd : fd + " -> " + linkTarget(procPath(pid, "fd/" + fd)));
  }
  return described;
}

// "SigBlk:\t0000000000000000" -> "0000000000000000".
std::string statusLine(pid_t pid, const std::string& key) {
  std::istringstream in(readFile(procPath(pid, "status")));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      const size_t value = line.find_first_not_of(" \t", key.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

// The open flags of a descriptor of pid (/proc/PID/fdinfo/FD, octal); -1 when unreadable.
long fdFlags(pid_t pid, int fd) {
  const std::string fdinfo = readFile(procPath(pid, "fdinfo/" + std::to_string(fd)));
  const size_t flags = fdinfo.find("flags:");
  if (flags == std::string::npos) return -1;
  return std::stol(fdinfo.substr(flags + 6), nullptr, 8);
}

std::optional<ProcessInfo> findByPid(const std::string& comm, pid_t pid) {
  for (ProcessInfo& info : findProcesses(comm)) {
    if (info.pid == pid) return std::move(info);
  }
  return std::nullopt;
}

std::string ourComm() {
  std::string comm = readFile("/proc/self/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// Whether this process has a child left to reap (a zombie intermediate child, say): none at all
// gives ECHILD, running ones 0.
bool hasNoExitedChild() {
  int status = 0;
  const pid_t r = ::waitpid(-1, &status, WNOHANG);
  return r == 0 || (r == -1 && errno == ECHILD);
}

// Kills a daemon (and its process group: it leads its own) however the test ends.
class DaemonGuard {
 public:
  explicit DaemonGuard(pid_t pid) : pid_(pid) {}
  ~DaemonGuard() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    waitUntil([this] { return gone(pid_); }, 2000);
  }
  DaemonGuard(const DaemonGuard&) = delete;
  DaemonGuard& operator=(const DaemonGuard&) = delete;

 private:
  pid_t pid_;
};

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    std::string tmpl = (fs::temp_directory_path() / "fcd-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl).string();  // what /proc/PID/cwd shows
  }

  void TearDown() override {
    if (!netns_.empty()) sh("ip netns del " + netns_);
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  // Processes with this test program's name working in dir_: a child that failed before exec
  // and is still around (only ours chdir to dir_, whatever else runs here).
  std::vector<pid_t> leftoversInDir() {
    std::vector<pid_t> pids;
    for (const ProcessInfo& info : findProcesses(ourComm())) {
      if (info.cwd == dir_) pids.push_back(info.pid);
    }
    return pids;
  }

  std::string dir_;
  std::string netns_;
};

TEST_F(DaemonTest, StartsDetachedInItsOwnSessionWithCwdEnvAndLog) {
  DaemonSpec spec;
  spec.argv = {"sh", "-c", "echo started; exec sleep 30"};  // found through PATH
  spec.env = {"FCD_MARK=one", "FCD_WORDS=two words", "PATH=/usr/bin:/bin"};
  spec.cwd = dir_;
  spec.log_path = dir_ + "/daemon.log";
  auto pid = startDaemon(spec);
  ASSERT_TRUE(pid.isOk()) << pid.status().toString();
  DaemonGuard guard(*pid);
  ASSERT_GT(*pid, 0);

  EXPECT_TRUE(waitUntil([&] { return readFile(spec.log_path) == "started\n"; }, 2000))
      << readFile(spec.log_path);
  // sh has exec'd sleep in the same process.
  ASSERT_TRUE(waitUntil([&] { return readFile(procPath(*pid, "comm")) == "sleep\n"; }, 2000));

  // Nobody's child here, and the leader of its own session and process group.
  EXPECT_NE(statField(*pid, 4), std::to_string(::getpid())) << "ppid";
  EXPECT_EQ(statField(*pid, 5), std::to_string(*pid)) << "process group";
  EXPECT_EQ(statField(*pid, 6), std::to_string(*pid)) << "session";
  EXPECT_NE(statField(*pid, 6), std::to_string(::getsid(0)));
  EXPECT_EQ(linkTarget(procPath(*pid, "cwd")), dir_);
  EXPECT_EQ(linkTarget(procPath(*pid, "fd/0")), "/dev/null");
  EXPECT_EQ(linkTarget(procPath(*pid, "fd/1")), spec.log_path);
  EXPECT_EQ(linkTarget(procPath(*pid, "fd/2")), spec.log_path);
  const long log_flags = fdFlags(*pid, 1);
  EXPECT_EQ(log_flags & (O_ACCMODE | O_APPEND | O_NONBLOCK), O_WRONLY | O_APPEND)
      << std::oct << log_flags;
  // The shell may add variables of its own (dash exports PWD); ours are all there.
  const std::vector<std::string> env = splitNul(readFile(procPath(*pid, "environ")));
  for (const std::string& var : spec.env) {
    EXPECT_NE(std::find(env.begin(), env.end(), var), env.end()) << var;
  }
  for (const std::string& var : env) {
    EXPECT_NE(var.rfind("HOME=", 0), 0u) << "the test's own environment leaked: " << var;
  }
  // The intermediate child was reaped.
  EXPECT_TRUE(hasNoExitedChild());

  const auto info = findByPid("sleep", *pid);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->comm, "sleep");
  EXPECT_EQ(info->argv, (std::vector<std::string>{"sleep", "30"}));
  EXPECT_EQ(info->env, env);
  EXPECT_EQ(info->cwd, dir_);
  EXPECT_EQ(info->envValue("FCD_MARK"), "one");
  EXPECT_EQ(info->envValue("FCD_WORDS"), "two words");
  EXPECT_EQ(info->envValue("FCD"), std::nullopt) << "a prefix is not a name";
  EXPECT_EQ(info->envValue("FCD_NONE"), std::nullopt);
  EXPECT_EQ(std::to_string(info->start_time), statField(*pid, 22));
  EXPECT_EQ(info->netns_inode, inodeOf("/proc/self/ns/net"));
  EXPECT_EQ(netnsInode(""), inodeOf("/proc/self/ns/net"));

  ASSERT_EQ(::kill(*pid, SIGTERM), 0);
  EXPECT_TRUE(waitUntil([&] { return gone(*pid); }, 2000));
  EXPECT_FALSE(findByPid("sleep", *pid).has_value());
  // Not ours to reap: whoever adopted it does.
  errno = 0;
  EXPECT_EQ(::waitpid(*pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_TRUE(hasNoExitedChild());
}

TEST_F(DaemonTest, EnvironmentIsExactlyTheGivenOneOrElseOurs) {
  DaemonSpec spec;
  spec.argv = {"sleep", "30"};                            // no shell in between to add variables
  spec.env = {"FCD_ONLY=1", "FCD_EMPTY=", "FCD_EQ=a=b"};  // no PATH: looked up in ours
  auto given = startDaemon(spec);
  ASSERT_TRUE(given.isOk()) << given.status().toString();
  DaemonGuard given_guard(*given);
  ASSERT_TRUE(execCompleted(*given, "sleep"));
  EXPECT_EQ(splitNul(readFile(procPath(*given, "environ"))), spec.env);
  const auto info = findByPid("sleep", *given);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->env, spec.env);
  EXPECT_EQ(info->envValue("FCD_EMPTY"), "");
  EXPECT_EQ(info->envValue("FCD_EQ"), "a=b");
  EXPECT_EQ(info->cwd, "/");

  // No environment given: ours. The shell stays (sleep is its child) with an empty last
  // argument, which findProcesses must keep.
  spec.env.clear();
  spec.argv = {"sh", "-c", "sleep 30; :", ""};
  auto inherited = startDaemon(spec);
  ASSERT_TRUE(inherited.isOk()) << inherited.status().toString();
  DaemonGuard inherited_guard(*inherited);
  ASSERT_TRUE(execCompleted(*inherited, "sh"));
  std::vector<std::string> ours;
  for (char** var = environ; *var != nullptr; ++var) ours.emplace_back(*var);
  EXPECT_EQ(splitNul(readFile(procPath(*inherited, "environ"))), ours);
  const auto shell = findByPid("sh", *inherited);
  ASSERT_TRUE(shell.has_value());
  EXPECT_EQ(shell->argv, spec.argv);
  EXPECT_EQ(shell->env, ours);
}

TEST_F(DaemonTest, RunsInsideTheNamedNamespace) {
  netns_ = "fcd-t" + std::to_string(::getpid());
  const testing::CommandOutput add = sh("ip netns add " + netns_);
  ASSERT_EQ(add.exit_code, 0) << add.out;

  DaemonSpec spec;
  spec.argv = {"sleep", "30"};
  spec.netns = netns_;
  auto pid = startDaemon(spec);
  ASSERT_TRUE(pid.isOk()) << pid.status().toString();
  DaemonGuard guard(*pid);
  ASSERT_TRUE(execCompleted(*pid, "sleep"));

  EXPECT_EQ(sh("ip netns identify " + std::to_string(*pid)).out, netns_ + "\n");
  EXPECT_EQ(inodeOf(procPath(*pid, "ns/net")), inodeOf("/run/netns/" + netns_));
  const auto inode = netnsInode(netns_);
  ASSERT_TRUE(inode.has_value());
  EXPECT_EQ(*inode, inodeOf("/run/netns/" + netns_));
  EXPECT_NE(inode, netnsInode(""));
  const auto info = findByPid("sleep", *pid);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->netns_inode, inode);
  EXPECT_NE(info->netns_inode, netnsInode(""));

  EXPECT_EQ(netnsInode("fcd-no-such-ns"), std::nullopt);
  EXPECT_EQ(netnsInode("../../proc/self/ns/net"), std::nullopt) << "a name, not a path";
}

TEST_F(DaemonTest, FifoStdinNeverReachesEndOfFile) {
  const std::string fifo = dir_ + "/console";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  DaemonSpec spec;
  spec.argv = {"sh", "-c", "while read l; do echo \"got $l\"; done; echo eof"};
  spec.stdin_path = fifo;
  spec.log_path = dir_ + "/console.log";
  auto pid = startDaemon(spec);
  ASSERT_TRUE(pid.isOk()) << pid.status().toString();
  DaemonGuard guard(*pid);
  EXPECT_EQ(linkTarget(procPath(*pid, "fd/0")), fifo);
  EXPECT_EQ(fdFlags(*pid, 0) & O_ACCMODE, O_RDWR);

  for (const std::string line : {"one", "two"}) {
    // Opening for writing does not block: the daemon holds a reader. Closing leaves no writer
    // but the daemon's own, so its read goes on waiting instead of returning end of file.
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string text = line + "\n";
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    EXPECT_TRUE(waitUntil(
        [&] { return readFile(spec.log_path).find("got " + line + "\n") != std::string::npos; },
        2000))
        << readFile(spec.log_path);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(gone(*pid));
  EXPECT_EQ(readFile(spec.log_path), "got one\ngot two\n");
}

TEST_F(DaemonTest, MissingProgramIsNotFoundAndLeavesNothing) {
  DaemonSpec spec;
  spec.argv = {"fcdnoprog", "--flag"};
  spec.cwd = dir_;  // a child that failed after chdir would show up in leftoversInDir()
  auto pid = startDaemon(spec);
  ASSERT_FALSE(pid.isOk());
  EXPECT_EQ(pid.status().code(), StatusCode::kNotFound) << pid.status().toString();
  EXPECT_EQ(pid.status().origin(), ENOENT);
  EXPECT_EQ(pid.status().message(), "fcdnoprog: execvp fcdnoprog: No such file or directory");
  EXPECT_TRUE(findProcesses("fcdnoprog").empty());
  EXPECT_TRUE(leftoversInDir().empty());
  EXPECT_TRUE(hasNoExitedChild());

  spec.env = {"A=1"};
  pid = startDaemon(spec);
  EXPECT_EQ(pid.status().message(), "fcdnoprog: execvpe fcdnoprog: No such file or directory");

  spec.argv.clear();
  EXPECT_EQ(startDaemon(spec).status().code(), StatusCode::kInvalidArgument);
  spec.argv = {""};
  EXPECT_EQ(startDaemon(spec).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DaemonTest, WhatCannotBeEnteredOrOpenedIsNamed) {
  const std::string missing = dir_ + "/missing";
  struct Case {
    const char* name;
    std::function<void(DaemonSpec&)> change;
    StatusCode code;
    std::string message;
  };
  const std::string plain = dir_ + "/plain";
  std::ofstream(plain) << "not a program\n";
  ASSERT_EQ(::chmod(plain.c_str(), 0644), 0);
  const std::string fifo = dir_ + "/log.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<Case> cases = {
      {"netns", [](DaemonSpec& s) { s.netns = "fcd-no-such-ns"; }, StatusCode::kNotFound,
       "sleep: setns fcd-no-such-ns: No such file or directory"},
      {"netns path", [](DaemonSpec& s) { s.netns = "../x"; }, StatusCode::kInvalidArgument,
       "sleep: invalid network namespace name '../x'"},
      {"cwd", [&](DaemonSpec& s) { s.cwd = missing; }, StatusCode::kNotFound,
       "sleep: chdir " + missing + ": No such file or directory"},
      {"stdin", [&](DaemonSpec& s) { s.stdin_path = missing; }, StatusCode::kNotFound,
       "sleep: open " + missing + ": No such file or directory"},
      {"log", [&](DaemonSpec& s) { s.log_path = missing + "/log"; }, StatusCode::kNotFound,
       "sleep: open " + missing + "/log: No such file or directory"},
      // Opening a FIFO that nobody reads for writing would block for ever.
      {"log fifo", [&](DaemonSpec& s) { s.log_path = fifo; }, StatusCode::kNotFound,
       "sleep: open " + fifo + ": No such device or address"},
      // No execute bit: EACCES even for root.
      {"not executable", [&](DaemonSpec& s) { s.argv = {plain}; }, StatusCode::kPermissionDenied,
       plain + ": execvp " + plain + ": Permission denied"},
  };
  for (const Case& c : cases) {
    DaemonSpec spec;
    spec.argv = {"sleep", "30"};
    spec.cwd = dir_;
    c.change(spec);
    auto pid = startDaemon(spec);
    if (pid.isOk()) {
      DaemonGuard started_by_mistake(*pid);
    }
    ASSERT_FALSE(pid.isOk()) << c.name;
    EXPECT_EQ(pid.status().code(), c.code) << c.name << ": " << pid.status().toString();
    EXPECT_EQ(pid.status().message(), c.message) << c.name;
  }
  EXPECT_TRUE(leftoversInDir().empty());
  EXPECT_TRUE(hasNoExitedChild());
  EXPECT_FALSE(fs::exists(missing)) << "nothing was created on the way";
}

// Restores this thread's signal mask and two dispositions the test changes.
class SignalStateGuard {
 public:
  SignalStateGuard() {
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
    ::sigaction(SIGPIPE, nullptr, &pipe_);
    ::sigaction(SIGHUP, nullptr, &hup_);
  }
  ~SignalStateGuard() {
    ::sigaction(SIGHUP, &hup_, nullptr);
    ::sigaction(SIGPIPE, &pipe_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
  }

 private:
  sigset_t mask_;
  struct sigaction pipe_ {};
  struct sigaction hup_ {};
};

TEST_F(DaemonTest, InheritsNoDescriptorsSignalMaskOrIgnoredSignals) {
  // What other threads of a real caller leave around: descriptors without O_CLOEXEC, blocked
  // signals, ignored SIGPIPE.
  const int file = ::open((dir_ + "/leak").c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(file, 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  SignalStateGuard signal_state;
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, nullptr), 0);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);

  DaemonSpec spec;
  spec.argv = {"sleep", "30"};  // no shell in between to change signal dispositions
  auto pid = startDaemon(spec);
  spec.argv = readyShell();
  spec.log_path = dir_ + "/shell.log";
  auto shell = startDaemon(spec);
  ::close(file);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ASSERT_TRUE(pid.isOk()) << pid.status().toString();
  DaemonGuard guard(*pid);
  ASSERT_TRUE(shell.isOk()) << shell.status().toString();
  DaemonGuard shell_guard(*shell);

  EXPECT_EQ(statusLine(*pid, "SigBlk"), "0000000000000000");
  EXPECT_EQ(statusLine(*pid, "SigIgn"), "0000000000000000");
  EXPECT_EQ(fdsWhenReady(*shell, spec.log_path), (std::set<std::string>{"0", "1", "2"}));
  // And the caller got its own mask back.
  sigset_t now;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &now), 0);
  EXPECT_TRUE(sigismember(&now, SIGTERM));
  EXPECT_FALSE(sigismember(&now, SIGINT));
}

TEST_F(DaemonTest, StartsFromSeveralThreadsAtOnce) {
  constexpr int kThreads = 4;
  std::vector<core::Result<pid_t>> results(kThreads, core::Status(StatusCode::kInternal, "unset"));
  const auto logOf = [this](int i) { return dir_ + "/" + std::to_string(i) + ".log"; };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&results, &logOf, i] {
      DaemonSpec spec;
      spec.argv = readyShell();
      spec.env = {"FCD_INDEX=" + std::to_string(i)};
      spec.log_path = logOf(i);
      results[i] = startDaemon(spec);
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::unique_ptr<DaemonGuard>> guards;
  std::set<pid_t> pids;
  for (const auto& result : results) {
    if (result.isOk()) guards.push_back(std::make_unique<DaemonGuard>(*result));
  }
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(results[i].isOk()) << results[i].status().toString();
    const pid_t pid = *results[i];
    pids.insert(pid);
    ASSERT_TRUE(execCompleted(pid, "sh"));
    EXPECT_EQ(splitNul(readFile(procPath(pid, "environ"))),
              std::vector<std::string>{"FCD_INDEX=" + std::to_string(i)});
    EXPECT_EQ(fdsWhenReady(pid, logOf(i)), (std::set<std::string>{"0", "1", "2"}))
        << "a report pipe of another start leaked";
  }
  EXPECT_EQ(pids.size(), static_cast<size_t>(kThreads));
  EXPECT_TRUE(hasNoExitedChild());
}

}  // namespace
}  // namespace fabric_chaos::sys
