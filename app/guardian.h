#pragma once
// serve's guardian and its database lock. The guardian is a child forked before any thread
// exists that waits on a pipe only serve writes to: a clean exit sends one byte; EOF without it
// means serve died, and the guardian then takes the database lock (one serve or guardian per
// database, flock on <db>.lock), reverts the journal with start-up recovery's code
// (Engine::recoverAtStartup), marks unfinished runs interrupted, logs to <db>.guardian.log and
// exits — retrying failed reverts for ~10 s at most, then leaving the journal to the next serve.
// The decisions are pure over GuardianSys (faked in tests); startGuardian forks and the child
// never returns. Main thread only.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "net/http_client.h"
#include "scenarios/engine/agent_directory.h"
#include "scenarios/engine/engine.h"
#include "store/store.h"

namespace fabric_chaos::app {

// The byte serve writes to the guardian's pipe on a clean exit.
constexpr char kCleanExitByte = 'C';
// The byte serve writes while its engine makes progress: the embedded agent's faults' lease.
// Once the guardian has seen one, a silence of GuardianOptions::lease_ms means serve is wedged
// (alive but stuck: a deadlock, a SIGSTOP, a hung call); the guardian then kills it with SIGKILL
// and reverts its faults as after a crash.
constexpr char kHeartbeatByte = 'H';

// Who holds the database lock, as written into the lock file ("serve 123\n", "guardian 456\n").
enum class LockRole { kUnknown, kServe, kGuardian };
struct LockHolder {
  LockRole role = LockRole::kUnknown;
  int pid = 0;
};
std::string formatLockHolder(const LockHolder& holder);
// kUnknown for anything else: an empty file (the holder has not written yet), garbage.
LockHolder parseLockHolder(const std::string& text);

std::string databaseLockPath(const std::string& db_path);  // <db>.lock
std::string guardianLogPath(const std::string& db_path);   // <db>.guardian.log

// The system calls the lock and the guardian make (Envoy's OsSysCalls): one real implementation,
// fakes in tests/app.
class GuardianSys {
 public:
  virtual ~GuardianSys() = default;
  // open(O_RDWR | O_CREAT | O_CLOEXEC, 0644).
  virtual core::Result<int> openLockFile(const std::string& path) = 0;
  // flock(LOCK_EX | LOCK_NB): true = held now, false = another open file holds it.
  virtual core::Result<bool> tryLock(int fd) = 0;
  virtual core::Result<std::string> readFile(int fd) = 0;
  // Replaces the whole content.
  virtual core::Status writeFile(int fd, const std::string& text) = 0;
  virtual void closeFd(int fd) = 0;
  // Exists and is not a zombie.
  virtual bool processAlive(int pid) = 0;
  virtual int selfPid() = 0;
  virtual int64_t nowMs() = 0;  // steady clock
  virtual void sleepMs(int ms) = 0;
  // Everything read from fd until EOF (the guardian's pipe).
  virtual core::Result<std::string> readUntilEof(int fd) = 0;
};

std::unique_ptr<GuardianSys> makeSystemGuardianSys();

struct LockTimings {
  int guardian_wait_ms = 10000;   // serve waits this long for a guardian's recovery to end
  int transition_wait_ms = 2000;  // a holder that has not written its name yet, or a dead one
  int poll_ms = 20;
};

// serve's lock on db_path for its lifetime: the fd holding it (close it to release). A lock held
// by another serve fails at once (kFailedPrecondition, "another fabric-chaos serve (pid N) is
// using DB"); one held by a guardian is waited for up to guardian_wait_ms (kUnavailable after).
core::Result<int> acquireServeLock(GuardianSys& sys, const std::string& db_path,
                                   const LockTimings& timings = {});

// The guardian's lock after serve's pipe ended: the fd, or nullopt when the database is not its
// business any more (a new serve took it and does its own start-up recovery). Waits
// transition_wait_ms for the dead serve's lock to be released (its fds close one by one).
core::Result<std::optional<int>> takeLockAfterServe(GuardianSys& sys, const std::string& db_path,
                                                    int serve_pid, const LockTimings& timings = {});

struct RecoveryOutcome {
  int attempts = 0;
  int reverted = 0;                  // over all attempts
  int failed = 0;                    // still unreverted after the last attempt
  std::vector<int64_t> interrupted;  // runs marked interrupted
  std::string last_error;            // of the last attempt that failed as a whole
  bool complete() const { return failed == 0 && last_error.empty(); }
};

// Calls attempt until it reverts everything or budget_ms would pass, pausing pause_ms between
// attempts.
RecoveryOutcome recoverWithRetries(
    GuardianSys& sys, const std::function<core::Result<scenarios::StartupRecovery>()>& attempt,
    int budget_ms = 10000, int pause_ms = 1000);

// The guardian's recovery over its collaborators: Engine::recoverAtStartup (with retries), suite
// runs marked interrupted, and one "guardian_recovery" event per run it touched naming serve's
// pid and what was reverted. The real guardian passes the same wiring as serve.
struct GuardianRecoveryDeps {
  store::Store* store = nullptr;
  scenarios::AgentDirectory* agents = nullptr;
  scenarios::FabricCatalog* fabrics = nullptr;
  GuardianSys* sys = nullptr;
};
RecoveryOutcome runGuardianRecovery(const GuardianRecoveryDeps& deps, int serve_pid,
                                    int budget_ms = 10000, int pause_ms = 1000);

enum class GuardianAction { kCleanExit, kNewOwner, kRecovered, kIncomplete, kError };
struct GuardianReport {
  GuardianAction action = GuardianAction::kError;
  std::string summary;  // one line for the log
};

// What the guardian does once its pipe ended (`received`: every byte serve wrote): nothing after
// a clean exit; otherwise the lock, then recover() while holding it (the lock is released on
// return).
GuardianReport guardAfterPipeEnd(GuardianSys& sys, const std::string& received,
                                 const std::string& db_path, int serve_pid,
                                 const std::function<RecoveryOutcome()>& recover,
                                 const LockTimings& timings = {});

struct GuardianOptions {
  std::string db_path;
  std::string state_dir;           // serve's --state-dir: fabrics, rank logs
  std::string self_exe;            // the fabric-chaos binary
  int64_t lease_ms = 0;            // serve's --local-lease-ms; 0 = no lease (only death is watched)
  net::TlsOptions agent_tls = {};  // serve's --agent-ca/--agent-cert/--agent-key: remote reverts
};

// serve's end of the guardian. Destroying it (every orderly return of serveMain) sends the
// clean-exit byte and reaps the guardian; a serve that dies without that leaves the pipe at EOF.
class GuardianHandle {
 public:
  GuardianHandle(int write_fd, pid_t pid) : write_fd_(write_fd), pid_(pid) {}
  ~GuardianHandle();
  GuardianHandle(const GuardianHandle&) = delete;
  GuardianHandle& operator=(const GuardianHandle&) = delete;
  pid_t pid() const { return pid_; }
  // Renews the lease (one kHeartbeatByte; never blocks). Any thread.
  void heartbeat();

 private:
  int write_fd_;
  pid_t pid_;
};

// Forks the guardian. Call before any thread exists: the child runs on a copy of this process
// (setsid, named fc-guardian, every other fd closed, stdio on /dev/null) and never returns.
core::Result<std::unique_ptr<GuardianHandle>> startGuardian(const GuardianOptions& options);

}  // namespace fabric_chaos::app
