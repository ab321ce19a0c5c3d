#include "app/guardian.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "agent/remote_agent.h"
#include "app/agent_directory.h"
#include "app/local_stack.h"
#include "core/log.h"
#include "core/steady_clock.h"
#include "injectors/sys/proc_stat.h"
#include "lab/fabric_catalog.h"

namespace fabric_chaos::app {

using core::Result;
using core::Status;
using core::StatusCode;

std::string formatLockHolder(const LockHolder& holder) {
  const char* role = holder.role == LockRole::kServe      ? "serve"
                     : holder.role == LockRole::kGuardian ? "guardian"
                                                          : "unknown";
  return std::string(role) + " " + std::to_string(holder.pid) + "\n";
}

LockHolder parseLockHolder(const std::string& text) {
  std::istringstream in(text);
  std::string role;
  long long pid = 0;
  std::string rest;
  if (!(in >> role >> pid) || (in >> rest) || pid <= 0 || pid > 0x7fffffff) return {};
  if (role == "serve") return {LockRole::kServe, static_cast<int>(pid)};
  if (role == "guardian") return {LockRole::kGuardian, static_cast<int>(pid)};
  return {};
}

std::string databaseLockPath(const std::string& db_path) { return db_path + ".lock"; }

std::string guardianLogPath(const std::string& db_path) { return db_path + ".guardian.log"; }

namespace {

std::string describe(const LockHolder& holder) {
  switch (holder.role) {
    case LockRole::kServe:
      return "fabric-chaos serve (pid " + std::to_string(holder.pid) + ")";
    case LockRole::kGuardian:
      return "fabric-chaos guardian (pid " + std::to_string(holder.pid) + ")";
    case LockRole::kUnknown:
      break;
  }
  return "another process (its pid not written yet)";
}

// The holder as the lock file names it; kUnknown when it cannot be read.
LockHolder readHolder(GuardianSys& sys, int fd) {
  auto text = sys.readFile(fd);
  return text.isOk() ? parseLockHolder(*text) : LockHolder{};
}

// One non-blocking attempt at the lock on fd; when it succeeds, names this process as its holder.
// false = someone else holds it. On an error fd is closed.
Result<bool> tryClaim(GuardianSys& sys, int fd, LockRole role, const std::string& path) {
  auto locked = sys.tryLock(fd);
  if (!locked.isOk()) {
    sys.closeFd(fd);
    return locked.status().withContext("cannot lock " + path);
  }
  if (!*locked) return false;
  if (Status s = sys.writeFile(fd, formatLockHolder({role, sys.selfPid()})); !s.isOk()) {
    // The lock is ours either way; a missing name only makes a rival's message vaguer.
    core::logWarn("cannot write pid " + std::to_string(sys.selfPid()) + " into " + path + ": " +
                  s.toString());
  }
  return true;
}

}  // namespace

Result<int> acquireServeLock(GuardianSys& sys, const std::string& db_path,
                             const LockTimings& timings) {
  const std::string path = databaseLockPath(db_path);
  auto fd = sys.openLockFile(path);
  if (!fd.isOk()) return fd.status().withContext("cannot open the database lock " + path);
  int64_t guardian_since_ms = -1;  // when a live guardian was first seen holding the lock
  int64_t unknown_since_ms = -1;   // since when the holder has not been named (or is dead)
  int announced_guardian = 0;
  for (;;) {
    auto claimed = tryClaim(sys, *fd, LockRole::kServe, path);
    if (!claimed.isOk()) return claimed.status();
    if (*claimed) return *fd;
    const LockHolder holder = readHolder(sys, *fd);
    const bool alive = holder.role != LockRole::kUnknown && sys.processAlive(holder.pid);
    const int64_t now = sys.nowMs();
    if (holder.role == LockRole::kServe && alive) {
      sys.closeFd(*fd);
      return Status(StatusCode::kFailedPrecondition, "another fabric-chaos serve (pid " +
                                                         std::to_string(holder.pid) +
                                                         ") is using " + db_path);
    }
    if (holder.role == LockRole::kGuardian && alive) {
      // The guardian of a serve that died is reverting its faults: our own start-up recovery
      // comes after it.
      unknown_since_ms = -1;
      if (guardian_since_ms < 0) guardian_since_ms = now;
      if (announced_guardian != holder.pid) {
        core::logInfo("waiting for the guardian (pid " + std::to_string(holder.pid) +
                      ") of a previous serve to finish reverting its faults on " + db_path);
        announced_guardian = holder.pid;
      }
      if (now - guardian_since_ms >= timings.guardian_wait_ms) {
        sys.closeFd(*fd);
        return Status(StatusCode::kUnavailable,
                      "the guardian (pid " + std::to_string(holder.pid) +
                          ") of a previous fabric-chaos serve still holds " + db_path + " after " +
                          std::to_string(timings.guardian_wait_ms / 1000) +
                          " s; try again when it has exited");
      }
    } else {
      // The holder has just taken the lock and not written its name yet, or the file still
      // names a process that is gone: give it a moment to write.
      if (unknown_since_ms < 0) unknown_since_ms = now;
      if (now - unknown_since_ms >= timings.transition_wait_ms) {
        sys.closeFd(*fd);
        return Status(StatusCode::kFailedPrecondition,
                      (holder.role == LockRole::kUnknown
                           ? std::string("a process that did not write its pid")
                           : describe(holder) + ", no longer running according to the file,") +
                          " holds " + path + "; is another fabric-chaos serve using " + db_path +
                          "?");
      }
    }
    sys.sleepMs(timings.poll_ms);
  }
}

Result<std::optional<int>> takeLockAfterServe(GuardianSys& sys, const std::string& db_path,
                                              int serve_pid, const LockTimings& timings) {
  const std::string path = databaseLockPath(db_path);
  auto fd = sys.openLockFile(path);
  if (!fd.isOk()) return fd.status().withContext("cannot open the database lock " + path);
  const int64_t start_ms = sys.nowMs();
  for (;;) {
    auto claimed = tryClaim(sys, *fd, LockRole::kGuardian, path);
    if (!claimed.isOk()) return claimed.status();
    if (*claimed) return std::optional<int>(*fd);
    const LockHolder holder = readHolder(sys, *fd);
    const bool ours = holder.role == LockRole::kServe && holder.pid == serve_pid;
    if (!ours && holder.role != LockRole::kUnknown && sys.processAlive(holder.pid)) {
      // A new serve (or, oddly, another guardian) owns the database: its recovery, not ours.
      core::logInfo("guardian: " + describe(holder) + " already holds " + path +
                    " and does its own start-up recovery; nothing to do");
      sys.closeFd(*fd);
      return std::optional<int>();
    }
    // Our serve is still closing its fds, or the new holder has not written its name yet.
    if (sys.nowMs() - start_ms >= timings.transition_wait_ms) {
      core::logWarn("guardian: " + path + " is still held by " + describe(holder) + " after " +
                    std::to_string(timings.transition_wait_ms) +
                    " ms; leaving the journal to the next serve");
      sys.closeFd(*fd);
      return std::optional<int>();
    }
    sys.sleepMs(timings.poll_ms);
  }
}

RecoveryOutcome recoverWithRetries(
    GuardianSys& sys, const std::function<Result<scenarios::StartupRecovery>()>& attempt,
    int budget_ms, int pause_ms) {
  RecoveryOutcome outcome;
  const int64_t deadline_ms = sys.nowMs() + budget_ms;
  for (;;) {
    ++outcome.attempts;
    auto result = attempt();
    if (result.isOk()) {
      outcome.reverted += result->reverted;
      outcome.failed = result->failed;
      outcome.last_error.clear();
      outcome.interrupted.insert(outcome.interrupted.end(), result->interrupted.begin(),
                                 result->interrupted.end());
    } else {
      outcome.last_error = result.status().toString();
    }
    if (outcome.complete()) return outcome;
    if (sys.nowMs() + pause_ms > deadline_ms) return outcome;
    sys.sleepMs(pause_ms);
  }
}

RecoveryOutcome runGuardianRecovery(const GuardianRecoveryDeps& deps, int serve_pid, int budget_ms,
                                    int pause_ms) {
  // What the journal lists before we start, to tell each run afterwards what we did for it.
  std::vector<store::JournalEntry> before;
  if (auto entries = deps.store->unrevertedJournal(); entries.isOk()) before = *entries;

  core::SteadyClock clock;
  scenarios::Engine engine({deps.store, deps.agents, deps.fabrics, &clock}, {});
  RecoveryOutcome outcome = recoverWithRetries(
      *deps.sys,
      [&]() -> Result<scenarios::StartupRecovery> {
        auto report = engine.recoverAtStartup();
        // A suite run's worker thread died with serve: its verdict cannot come now.
        if (auto suites = deps.store->interruptUnfinishedSuiteRuns(); !suites.isOk()) {
          core::logWarn("guardian: " + suites.status().toString());
        } else if (!suites->empty()) {
          core::logInfo("guardian: " + std::to_string(suites->size()) +
                        " suite run(s) marked interrupted");
        }
        return report;
      },
      budget_ms, pause_ms);

  std::set<int64_t> still;
  if (auto entries = deps.store->unrevertedJournal(); entries.isOk()) {
    for (const auto& e : *entries) still.insert(e.id);
  }
  struct RunNote {
    store::json reverted = store::json::array();
    store::json not_reverted = store::json::array();
  };
  std::map<int64_t, RunNote> notes;
  for (const auto& e : before) {
    if (e.run_id == 0) continue;
    (still.count(e.id) ? notes[e.run_id].not_reverted : notes[e.run_id].reverted)
        .push_back(e.fault);
  }
  for (int64_t run : outcome.interrupted) notes[run];
  const std::string guardian_pid = std::to_string(deps.sys->selfPid());
  for (const auto& [run, note] : notes) {
    std::string reason = "serve (pid " + std::to_string(serve_pid) + ") died; its guardian (pid " +
                         guardian_pid + ") reverted " + std::to_string(note.reverted.size()) +
                         " fault(s) of this run";
    if (!note.not_reverted.empty()) {
      reason += " and could not revert " + std::to_string(note.not_reverted.size()) +
                " (left to the next serve's start-up recovery)";
    }
    bool interrupted = false;
    for (int64_t id : outcome.interrupted) interrupted = interrupted || id == run;
    if (interrupted) reason += "; the run is interrupted";
    store::json detail = {{"reason", reason},
                          {"serve_pid", serve_pid},
                          {"guardian_pid", deps.sys->selfPid()},
                          {"reverted", note.reverted}};
    if (!note.not_reverted.empty()) detail["not_reverted"] = note.not_reverted;
    if (Status s =
            deps.store->appendEvent({run, 0, core::wallNowMs(), "guardian_recovery", detail});
        !s.isOk()) {
      core::logWarn("guardian: cannot store the event of run " + std::to_string(run) + ": " +
                    s.toString());
    }
  }
  return outcome;
}

GuardianReport guardAfterPipeEnd(GuardianSys& sys, const std::string& received,
                                 const std::string& db_path, int serve_pid,
                                 const std::function<RecoveryOutcome()>& recover,
                                 const LockTimings& timings) {
  if (received.find(kCleanExitByte) != std::string::npos) {
    return {GuardianAction::kCleanExit, "serve exited cleanly; nothing to do"};
  }
  const std::string serve = "serve (pid " + std::to_string(serve_pid) + ")";
  auto fd = takeLockAfterServe(sys, db_path, serve_pid, timings);
  if (!fd.isOk()) {
    return {GuardianAction::kError, serve + " died, but " + fd.status().toString() +
                                        "; leaving the journal to the next serve"};
  }
  if (!fd->has_value()) {
    return {GuardianAction::kNewOwner,
            serve + " died; another process owns " + db_path + " now and recovers it itself"};
  }
  const RecoveryOutcome outcome = recover();
  sys.closeFd(**fd);
  std::string summary = serve + " died: reverted " + std::to_string(outcome.reverted) +
                        " fault(s) in " + std::to_string(outcome.attempts) + " attempt(s), " +
                        std::to_string(outcome.interrupted.size()) + " run(s) marked interrupted";
  if (outcome.complete()) return {GuardianAction::kRecovered, summary};
  if (outcome.failed > 0) {
    summary += ", " + std::to_string(outcome.failed) + " fault(s) could not be reverted";
  }
  if (!outcome.last_error.empty()) summary += ", last error: " + outcome.last_error;
  return {GuardianAction::kIncomplete, summary + "; the next serve retries them at start-up"};
}

// ---------------------------------------------------------------------------------------------
// The real system calls.

namespace {

class SystemGuardianSys : public GuardianSys {
 public:
  Result<int> openLockFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return core::errnoStatus(errno, "open " + path);
    return fd;
  }

  Result<bool> tryLock(int fd) override {
    for (;;) {
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
      if (errno == EWOULDBLOCK) return false;
      if (errno != EINTR) return core::errnoStatus(errno, "flock");
    }
  }

  Result<std::string> readFile(int fd) override {
    char buffer[256];
    ssize_t n = ::pread(fd, buffer, sizeof(buffer), 0);
    if (n < 0) return core::errnoStatus(errno, "read the lock file");
    return std::string(buffer, static_cast<size_t>(n));
  }

  Status writeFile(int fd, const std::string& text) override {
    if (::ftruncate(fd, 0) != 0) return core::errnoStatus(errno, "truncate the lock file");
    ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
    if (n != static_cast<ssize_t>(text.size())) {
      return core::errnoStatus(n < 0 ? errno : EIO, "write the lock file");
    }
    return Status::ok();
  }

  void closeFd(int fd) override { ::close(fd); }

  bool processAlive(int pid) override { return sys::processAlive(pid); }

  int selfPid() override { return static_cast<int>(::getpid()); }

  int64_t nowMs() override { return core::steadyNowNs() / 1000000; }

  void sleepMs(int ms) override { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

  Result<std::string> readUntilEof(int fd) override {
    std::string out;
    char buffer[64];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n > 0) {
        out.append(buffer, static_cast<size_t>(n));
      } else if (n == 0) {
        return out;
      } else if (errno != EINTR) {
        return core::errnoStatus(errno, "read the guardian pipe");
      }
    }
  }
};

constexpr int kPipeFd = 3;  // where the child keeps its end of the pipe

// Leaves only the pipe (moved to kPipeFd) and stdio on /dev/null: serve's lock fd, sockets and
// whatever its parent leaked must not live on in the guardian (the lock would outlive serve).
void isolateFds(int read_fd) {
  if (read_fd != kPipeFd) {
    ::dup2(read_fd, kPipeFd);
    ::close(read_fd);
  }
  int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null_fd, fd);
    if (null_fd > kPipeFd) ::close(null_fd);
  }
  if (::close_range(kPipeFd + 1, ~0U, 0) != 0) {
    rlimit limit{};
    const int max_fd = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                           ? static_cast<int>(limit.rlim_cur)
                           : 65536;
    for (int fd = kPipeFd + 1; fd < max_fd; ++fd) ::close(fd);
  }
}

// What the pipe said: every byte but heartbeats, and whether serve stopped renewing its lease.
struct PipeWatch {
  std::string bytes;
  core::Status error;
  bool wedged = false;
  int64_t silent_ms = 0;  // when wedged: how long serve had been silent
};

// Reads the pipe until EOF. With a lease, once serve has sent its first heartbeat (start-up,
// whose recovery may take seconds, renews nothing), a silence of lease_ms ends the watch as
// wedged. Stops at the clean-exit byte.
PipeWatch watchPipe(int fd, int64_t lease_ms) {
  PipeWatch watch;
  int64_t last_beat_ms = -1;
  char buffer[256];
  for (;;) {
    int timeout = -1;
    if (lease_ms > 0 && last_beat_ms >= 0) {
      const int64_t silent = core::steadyNowNs() / 1000000 - last_beat_ms;
      if (silent >= lease_ms) {
        watch.wedged = true;
        watch.silent_ms = silent;
        return watch;
      }
      timeout = static_cast<int>(lease_ms - silent);
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      watch.error = core::errnoStatus(errno, "poll the guardian pipe");
      return watch;
    }
    if (ready == 0) continue;  // the silence is measured above
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return watch;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      watch.error = core::errnoStatus(errno, "read the guardian pipe");
      return watch;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == kHeartbeatByte) {
        last_beat_ms = core::steadyNowNs() / 1000000;
      } else {
        watch.bytes.push_back(buffer[i]);
      }
    }
    if (watch.bytes.find(kCleanExitByte) != std::string::npos) return watch;
  }
}

[[noreturn]] void guardianMain(int read_fd, int serve_pid, const GuardianOptions& options) {
  // Its own session: a terminal's Ctrl-C (SIGINT to serve's process group) must not reach it.
  ::setsid();
  ::prctl(PR_SET_NAME, "fc-guardian", 0, 0, 0);
  // A service manager that SIGTERMs what is left of serve's cgroup is exactly when the guardian
  // must finish its job; it exits on its own within seconds.
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(signo, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  isolateFds(read_fd);

  auto sys = makeSystemGuardianSys();
  PipeWatch watch = watchPipe(kPipeFd, options.lease_ms);
  if (watch.bytes.find(kCleanExitByte) != std::string::npos) ::_exit(0);
  if (watch.wedged) {
    // Alive but stuck: its faults would stay forever. Kill it, then recover as after a crash;
    // its pipe ends when the kernel has closed its fds (and so released the database lock).
    ::kill(serve_pid, SIGKILL);
    auto rest = sys->readUntilEof(kPipeFd);
    if (rest.isOk()) watch.bytes += *rest;
  }
  core::Result<std::string> received = watch.error.isOk() ? core::Result<std::string>(watch.bytes)
                                                          : core::Result<std::string>(watch.error);
  const std::string bytes = watch.bytes;

  // serve is gone and our stderr with it: log next to the database.
  const std::string log_path = guardianLogPath(options.db_path);
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (log_fd >= 0) {
    ::dup2(log_fd, 2);
    ::close(log_fd);
  }
  core::logWarn("guardian (pid " + std::to_string(sys->selfPid()) + "): serve (pid " +
                std::to_string(serve_pid) + ") " +
                (watch.wedged
                     ? "stopped renewing its lease of " + std::to_string(options.lease_ms) +
                           " ms (silent for " + std::to_string(watch.silent_ms) +
                           " ms): it is wedged; killed it with SIGKILL, and"
                     : "ended without a clean exit") +
                (received.isOk() ? "" : " (" + received.status().toString() + ")") +
                "; reverting its faults");
  GuardianReport report = guardAfterPipeEnd(*sys, bytes, options.db_path, serve_pid, [&] {
    auto store = store::Store::open(options.db_path);
    if (!store.isOk()) {
      RecoveryOutcome failed;
      failed.attempts = 1;
      failed.last_error =
          "cannot open the database " + options.db_path + ": " + store.status().toString();
      return failed;
    }
    // The same wiring as serve, without its blast-radius guard: revert never checks one.
    LocalStack stack(options.self_exe, options.state_dir + "/logs");
    AppAgentDirectory agents(stack.local_agent, remoteAgentFactory(options.agent_tls));
    lab::DirectoryFabricCatalog catalog(options.state_dir);
    return runGuardianRecovery({store->get(), &agents, &catalog, sys.get()}, serve_pid);
  });
  core::log(
      report.action == GuardianAction::kRecovered || report.action == GuardianAction::kNewOwner
          ? core::LogLevel::kInfo
          : core::LogLevel::kError,
      "guardian: " + report.summary);
  ::_exit(report.action == GuardianAction::kRecovered || report.action == GuardianAction::kNewOwner
              ? 0
              : 1);
}

}  // namespace

std::unique_ptr<GuardianSys> makeSystemGuardianSys() {
  return std::make_unique<SystemGuardianSys>();
}

void GuardianHandle::heartbeat() {
  if (write_fd_ < 0) return;
  ssize_t ignored = ::write(write_fd_, &kHeartbeatByte, 1);  // O_NONBLOCK: a full pipe drops it
  (void)ignored;
}

GuardianHandle::~GuardianHandle() {
  if (write_fd_ >= 0) {
    ssize_t ignored = ::write(write_fd_, &kCleanExitByte, 1);
    (void)ignored;
    ::close(write_fd_);
  }
  // Reap it so that a clean shutdown leaves no process behind; it exits as soon as it reads.
  const int64_t deadline_ns = core::steadyNowNs() + int64_t{2000} * 1000000;
  while (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0 && core::steadyNowNs() < deadline_ns) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<std::unique_ptr<GuardianHandle>> startGuardian(const GuardianOptions& options) {
  int fds[2];
  // O_CLOEXEC: the workload ranks and every other child serve execs must not hold the write end,
  // or serve's death would not be seen until they exit.
  if (::pipe2(fds, O_CLOEXEC) != 0) return core::errnoStatus(errno, "guardian pipe");
  const int serve_pid = static_cast<int>(::getpid());
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return core::errnoStatus(err, "fork the guardian");
  }
  if (pid == 0) {
    ::close(fds[1]);
    guardianMain(fds[0], serve_pid, options);
  }
  ::close(fds[0]);
  // Heartbeats must never block serve: a guardian that is slow to read drops beats, not serve.
  ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  return std::make_unique<GuardianHandle>(fds[1], pid);
}

}  // namespace fabric_chaos::app
