// serve's guardian and database lock, decisions only: the lock file's format, what serve does when
// the lock is busy (fail at once for a live serve, wait for a guardian, give a holder that has not
// written its name a moment), what the guardian does when its pipe ends (nothing after a clean
// exit, stand aside for a new serve, recover otherwise), the retry budget, and the recovery itself
// against an in-memory store and a fake agent. The system calls are a scripted fake with a
// virtual clock; the real ones are exercised by tests/privileged/guardian_test.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "app/guardian.h"
#include "tests/fakes/fail_schedule.h"
#include "tests/fakes/fake_agent.h"

namespace fabric_chaos::app {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;
using nlohmann::json;

// One lock file shared by "other processes" (scripted) and the code under test. Time is virtual:
// sleepMs advances it, and `script` changes the holder at given instants.
class FakeGuardianSys : public GuardianSys {
 public:
  struct Change {
    int64_t at_ms;
    bool held_by_other;
    std::string content;
  };

  int self_pid = 500;
  std::set<int> alive;         // pids processAlive says yes to
  std::vector<Change> script;  // applied in order as time passes
  bool held_by_other = false;  // another open file holds the lock
  std::string content;         // the lock file's text
  std::string path_opened;
  std::set<int> open_fds;
  int held_by_fd = -1;  // our fd holding the lock
  int64_t now_ms = 0;
  int sleeps = 0;
  fakes::FailSchedule open_failures, lock_failures;

  Result<int> openLockFile(const std::string& path) override {
    if (auto failure = open_failures.next()) return *failure;
    path_opened = path;
    const int fd = next_fd_++;
    open_fds.insert(fd);
    return fd;
  }
  Result<bool> tryLock(int fd) override {
    apply();
    if (auto failure = lock_failures.next()) return *failure;
    EXPECT_TRUE(open_fds.count(fd)) << "tryLock on a closed fd";
    if (held_by_other) return false;
    held_by_fd = fd;
    return true;
  }
  Result<std::string> readFile(int) override { return content; }
  Status writeFile(int fd, const std::string& text) override {
    EXPECT_EQ(fd, held_by_fd) << "writing the lock file without holding the lock";
    content = text;
    return Status::ok();
  }
  void closeFd(int fd) override {
    EXPECT_TRUE(open_fds.erase(fd)) << "closing fd " << fd << " twice";
    if (held_by_fd == fd) held_by_fd = -1;
  }
  bool processAlive(int pid) override { return alive.count(pid) > 0; }
  int selfPid() override { return self_pid; }
  int64_t nowMs() override { return now_ms; }
  void sleepMs(int ms) override {
    ++sleeps;
    now_ms += ms;
  }
  Result<std::string> readUntilEof(int) override { return std::string(); }

 private:
  void apply() {
    while (!script.empty() && script.front().at_ms <= now_ms) {
      held_by_other = script.front().held_by_other;
      content = script.front().content;
      script.erase(script.begin());
    }
  }
  int next_fd_ = 10;
};

constexpr const char* kDb = "/var/lib/fabric-chaos/fabric-chaos.db";

TEST(LockHolderText, RoundTripsAndRejectsAnythingElse) {
  EXPECT_EQ(formatLockHolder({LockRole::kServe, 123}), "serve 123\n");
  EXPECT_EQ(formatLockHolder({LockRole::kGuardian, 45}), "guardian 45\n");
  for (const auto& holder :
       {LockHolder{LockRole::kServe, 123}, LockHolder{LockRole::kGuardian, 7}}) {
    const LockHolder parsed = parseLockHolder(formatLockHolder(holder));
    EXPECT_EQ(parsed.role, holder.role);
    EXPECT_EQ(parsed.pid, holder.pid);
  }
  EXPECT_EQ(parseLockHolder("serve 9").pid, 9);  // no newline
  for (const char* text : {"", "\n", "serve", "serve 0\n", "serve -4\n", "serve 12 extra\n",
                           "agent 12\n", "serve 99999999999\n", "guardian x\n"}) {
    const LockHolder parsed = parseLockHolder(text);
    EXPECT_EQ(parsed.role, LockRole::kUnknown) << "\"" << text << "\"";
    EXPECT_EQ(parsed.pid, 0) << "\"" << text << "\"";
  }
}

TEST(LockHolderText, FilesLiveNextToTheDatabase) {
  EXPECT_EQ(databaseLockPath(kDb), std::string(kDb) + ".lock");
  EXPECT_EQ(guardianLogPath(kDb), std::string(kDb) + ".guardian.log");
}

TEST(ServeLock, AFreeLockIsTakenAndNamesThisServe) {
  FakeGuardianSys sys;
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_TRUE(fd.isOk()) << fd.status().toString();
  EXPECT_EQ(sys.path_opened, std::string(kDb) + ".lock");
  EXPECT_EQ(sys.held_by_fd, *fd);
  EXPECT_EQ(sys.content, "serve 500\n");
  EXPECT_EQ(sys.sleeps, 0);
}

TEST(ServeLock, ALiveServeMakesASecondOneFailAtOnceNamingItsPid) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "serve 77\n";
  sys.alive = {77};
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_FALSE(fd.isOk());
  EXPECT_EQ(fd.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(fd.status().message(),
            "another fabric-chaos serve (pid 77) is using /var/lib/fabric-chaos/fabric-chaos.db");
  EXPECT_EQ(sys.sleeps, 0);
  EXPECT_TRUE(sys.open_fds.empty()) << "the fd is closed again";
}

TEST(ServeLock, AGuardianDoingRecoveryIsWaitedForThenTheLockIsOurs) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "guardian 88\n";
  sys.alive = {88};
  sys.script = {{340, false, "guardian 88\n"}};  // the guardian exits (lock released) at 340 ms
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_TRUE(fd.isOk()) << fd.status().toString();
  EXPECT_EQ(sys.content, "serve 500\n");
  EXPECT_GE(sys.now_ms, 340);
  EXPECT_LT(sys.now_ms, 340 + 2 * LockTimings{}.poll_ms);
}

TEST(ServeLock, AGuardianThatNeverFinishesIsGivenUpOnAfterTenSeconds) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "guardian 88\n";
  sys.alive = {88};
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_FALSE(fd.isOk());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(fd.status().message().find("the guardian (pid 88) of a previous fabric-chaos serve "
                                       "still holds /var/lib/fabric-chaos/fabric-chaos.db after "
                                       "10 s"),
            std::string::npos)
      << fd.status().message();
  EXPECT_GE(sys.now_ms, 10000);
  EXPECT_LT(sys.now_ms, 10100);
  EXPECT_TRUE(sys.open_fds.empty());
}

TEST(ServeLock, AHolderThatHasNotWrittenItsNameYetIsReadAgain) {
  // The file is empty for 60 ms (the holder just took the lock), then names a live serve.
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "";
  sys.alive = {91};
  sys.script = {{60, true, "serve 91\n"}};
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_FALSE(fd.isOk());
  EXPECT_EQ(fd.status().message(),
            "another fabric-chaos serve (pid 91) is using /var/lib/fabric-chaos/fabric-chaos.db");
  EXPECT_GE(sys.now_ms, 60);
  EXPECT_LT(sys.now_ms, 100);
}

TEST(ServeLock, AFileNamingADeadServeMeansANewHolderIsAboutToWriteItsName) {
  // serve 70 died; its guardian took the lock and writes its own name 30 ms later, then
  // finishes its recovery at 400 ms.
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "serve 70\n";
  sys.alive = {71};
  sys.script = {{30, true, "guardian 71\n"}, {400, false, "guardian 71\n"}};
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_TRUE(fd.isOk()) << fd.status().toString();
  EXPECT_GE(sys.now_ms, 400);
  EXPECT_EQ(sys.content, "serve 500\n");
}

TEST(ServeLock, AHolderThatNeverNamesItselfFailsAfterTheTransitionWait) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "something else\n";
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_FALSE(fd.isOk());
  EXPECT_EQ(fd.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fd.status().message().find("a process that did not write its pid holds "
                                       "/var/lib/fabric-chaos/fabric-chaos.db.lock; is another "
                                       "fabric-chaos serve using"),
            std::string::npos)
      << fd.status().message();
  EXPECT_GE(sys.now_ms, LockTimings{}.transition_wait_ms);
  EXPECT_LT(sys.now_ms, LockTimings{}.transition_wait_ms + 100);

  FakeGuardianSys dead;
  dead.held_by_other = true;
  dead.content = "serve 70\n";
  auto again = acquireServeLock(dead, kDb);
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.status().message().find("fabric-chaos serve (pid 70), no longer running"),
            std::string::npos)
      << again.status().message();
}

TEST(ServeLock, SystemCallFailuresNameTheLockFile) {
  FakeGuardianSys sys;
  sys.open_failures.failOn(1, Status(StatusCode::kPermissionDenied, "permission denied", 13));
  auto fd = acquireServeLock(sys, kDb);
  ASSERT_FALSE(fd.isOk());
  EXPECT_EQ(fd.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(fd.status().message(),
            "cannot open the database lock /var/lib/fabric-chaos/fabric-chaos.db.lock: permission "
            "denied");

  FakeGuardianSys locking;
  locking.lock_failures.failOn(1, Status(StatusCode::kNotSupported, "flock: not supported", 95));
  auto locked = acquireServeLock(locking, kDb);
  ASSERT_FALSE(locked.isOk());
  EXPECT_EQ(locked.status().message(),
            "cannot lock /var/lib/fabric-chaos/fabric-chaos.db.lock: flock: not supported");
  EXPECT_TRUE(locking.open_fds.empty());
}

TEST(GuardianLock, AFreeLockIsTakenAndNamesTheGuardian) {
  FakeGuardianSys sys;
  sys.self_pid = 601;
  auto fd = takeLockAfterServe(sys, kDb, 600);
  ASSERT_TRUE(fd.isOk()) << fd.status().toString();
  ASSERT_TRUE(fd->has_value());
  EXPECT_EQ(sys.held_by_fd, **fd);
  EXPECT_EQ(sys.content, "guardian 601\n");
}

TEST(GuardianLock, ItsOwnServeStillClosingItsFdsIsWaitedFor) {
  // The pipe's EOF can come before the dead serve's lock fd is closed.
  FakeGuardianSys sys;
  sys.self_pid = 601;
  sys.held_by_other = true;
  sys.content = "serve 600\n";
  sys.alive = {600};  // not reaped yet
  sys.script = {{40, false, "serve 600\n"}};
  auto fd = takeLockAfterServe(sys, kDb, 600);
  ASSERT_TRUE(fd.isOk() && fd->has_value());
  EXPECT_EQ(sys.content, "guardian 601\n");
  EXPECT_GE(sys.now_ms, 40);
}

TEST(GuardianLock, ANewServeOwningTheDatabaseMakesTheGuardianStandAside) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "serve 650\n";
  sys.alive = {650};
  auto fd = takeLockAfterServe(sys, kDb, 600);
  ASSERT_TRUE(fd.isOk());
  EXPECT_FALSE(fd->has_value());
  EXPECT_EQ(sys.sleeps, 0);
  EXPECT_TRUE(sys.open_fds.empty());
  EXPECT_EQ(sys.content, "serve 650\n");  // untouched
}

TEST(GuardianLock, ALockNeverReleasedIsLeftToTheNextServe) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "serve 600\n";
  sys.alive = {600};
  auto fd = takeLockAfterServe(sys, kDb, 600);
  ASSERT_TRUE(fd.isOk());
  EXPECT_FALSE(fd->has_value());
  EXPECT_GE(sys.now_ms, LockTimings{}.transition_wait_ms);
  EXPECT_LT(sys.now_ms, LockTimings{}.transition_wait_ms + 100);
  EXPECT_TRUE(sys.open_fds.empty());
}

scenarios::StartupRecovery recovery(int reverted, int failed, std::vector<int64_t> runs = {}) {
  scenarios::StartupRecovery r;
  r.reverted = reverted;
  r.failed = failed;
  r.interrupted = std::move(runs);
  return r;
}

TEST(RecoveryRetries, OneCleanAttemptIsEnough) {
  FakeGuardianSys sys;
  int calls = 0;
  auto outcome = recoverWithRetries(sys, [&]() -> core::Result<scenarios::StartupRecovery> {
    ++calls;
    return recovery(2, 0, {4, 5});
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(outcome.complete());
  EXPECT_EQ(outcome.attempts, 1);
  EXPECT_EQ(outcome.reverted, 2);
  EXPECT_EQ(outcome.interrupted, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(sys.sleeps, 0);
}

TEST(RecoveryRetries, FailedRevertsAreRetriedUntilTheyGoThrough) {
  FakeGuardianSys sys;
  std::vector<core::Result<scenarios::StartupRecovery>> answers{
      recovery(1, 2, {9}), Status(StatusCode::kInternal, "database is locked"), recovery(1, 1),
      recovery(1, 0)};
  size_t next = 0;
  auto outcome = recoverWithRetries(
      sys, [&]() -> core::Result<scenarios::StartupRecovery> { return answers.at(next++); });
  EXPECT_TRUE(outcome.complete());
  EXPECT_EQ(outcome.attempts, 4);
  EXPECT_EQ(outcome.reverted, 3);
  EXPECT_EQ(outcome.failed, 0);
  EXPECT_EQ(outcome.interrupted, std::vector<int64_t>{9});
  EXPECT_EQ(sys.now_ms, 3000);  // three pauses of 1 s
}

TEST(RecoveryRetries, TheGuardianGivesUpWithinItsBudget) {
  FakeGuardianSys sys;
  int calls = 0;
  auto outcome = recoverWithRetries(sys, [&]() -> core::Result<scenarios::StartupRecovery> {
    ++calls;
    return recovery(0, 1);
  });
  EXPECT_FALSE(outcome.complete());
  EXPECT_EQ(outcome.failed, 1);
  EXPECT_EQ(calls, 11);  // at 0, 1, ..., 10 s
  EXPECT_LE(sys.now_ms, 10000);

  FakeGuardianSys broken;
  auto error = recoverWithRetries(
      broken,
      []() -> core::Result<scenarios::StartupRecovery> {
        return Status(StatusCode::kInternal, "disk I/O error");
      },
      2500, 1000);
  EXPECT_FALSE(error.complete());
  EXPECT_EQ(error.attempts, 3);
  EXPECT_EQ(error.last_error, "INTERNAL: disk I/O error");
}

TEST(GuardAfterPipeEnd, ACleanExitByteMeansNothingToDo) {
  FakeGuardianSys sys;
  bool recovered = false;
  auto report = guardAfterPipeEnd(sys, std::string(1, kCleanExitByte), kDb, 600, [&] {
    recovered = true;
    return RecoveryOutcome{};
  });
  EXPECT_EQ(report.action, GuardianAction::kCleanExit);
  EXPECT_FALSE(recovered);
  EXPECT_TRUE(sys.path_opened.empty()) << "the lock is not even opened";
}

TEST(GuardAfterPipeEnd, EndWithoutTheByteRecoversWhileHoldingTheLock) {
  FakeGuardianSys sys;
  sys.self_pid = 601;
  bool held_during_recovery = false;
  auto report = guardAfterPipeEnd(sys, "", kDb, 600, [&] {
    held_during_recovery = sys.held_by_fd >= 0 && sys.content == "guardian 601\n";
    RecoveryOutcome outcome;
    outcome.attempts = 1;
    outcome.reverted = 2;
    outcome.interrupted = {3};
    return outcome;
  });
  EXPECT_TRUE(held_during_recovery);
  EXPECT_EQ(report.action, GuardianAction::kRecovered);
  EXPECT_EQ(report.summary,
            "serve (pid 600) died: reverted 2 fault(s) in 1 attempt(s), 1 run(s) marked "
            "interrupted");
  EXPECT_EQ(sys.held_by_fd, -1) << "released afterwards";
  EXPECT_TRUE(sys.open_fds.empty());
}

TEST(GuardAfterPipeEnd, ANewServeOnTheDatabaseMeansTheGuardianLeavesItAlone) {
  FakeGuardianSys sys;
  sys.held_by_other = true;
  sys.content = "serve 650\n";
  sys.alive = {650};
  bool recovered = false;
  auto report = guardAfterPipeEnd(sys, "", kDb, 600, [&] {
    recovered = true;
    return RecoveryOutcome{};
  });
  EXPECT_EQ(report.action, GuardianAction::kNewOwner);
  EXPECT_FALSE(recovered);
}

TEST(GuardAfterPipeEnd, AnIncompleteRecoverySaysWhatIsLeftForTheNextServe) {
  FakeGuardianSys sys;
  auto report = guardAfterPipeEnd(sys, "", kDb, 600, [] {
    RecoveryOutcome outcome;
    outcome.attempts = 11;
    outcome.reverted = 1;
    outcome.failed = 1;
    return outcome;
  });
  EXPECT_EQ(report.action, GuardianAction::kIncomplete);
  EXPECT_NE(report.summary.find("1 fault(s) could not be reverted; the next serve retries them at "
                                "start-up"),
            std::string::npos)
      << report.summary;

  FakeGuardianSys no_lock;
  no_lock.open_failures.failOn(1, Status(StatusCode::kPermissionDenied, "read-only", 30));
  auto error = guardAfterPipeEnd(no_lock, "", kDb, 600, [] { return RecoveryOutcome{}; });
  EXPECT_EQ(error.action, GuardianAction::kError);
  EXPECT_NE(error.summary.find("read-only"), std::string::npos) << error.summary;
}

// runGuardianRecovery over an in-memory store: the same journal rows start-up recovery reverts.

// A fake agent whose first `fail_reverts` reverts fail.
class FlakyAgent : public testing::FakeAgent {
 public:
  int fail_reverts = 0;
  int revert_calls = 0;
  Status revertFault(const injectors::Fault& fault, const nlohmann::json& prior) override {
    if (++revert_calls <= fail_reverts) {
      return Status(StatusCode::kUnavailable, "netlink busy");
    }
    return FakeAgent::revertFault(fault, prior);
  }
};

class OneAgent : public scenarios::AgentDirectory {
 public:
  explicit OneAgent(agent::Agent& agent) : agent_(agent) {}
  core::Result<agent::Agent*> agentFor(const scenarios::AgentRef&) override { return &agent_; }

 private:
  agent::Agent& agent_;
};

class NoFabrics : public scenarios::FabricCatalog {
 public:
  std::vector<scenarios::Fabric> list() override { return {}; }
  core::Result<scenarios::Fabric> get(const std::string& name) override {
    return Status(StatusCode::kNotFound, "no fabric " + name);
  }
};

class GuardianRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::Store::open(":memory:");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(opened.value());
    auto run = store_->createRun("flap", json::object(), "netns-lab");
    ASSERT_TRUE(run.isOk());
    run_ = *run;
    ASSERT_TRUE(store_->setRunState(run_, "injecting").isOk());
    injectors::Fault fault{
        "link_flap", injectors::InterfaceTarget{"fcl-sw0", "p1"}, {{"down_ms", 20000}}};
    auto entry = store_->journalIntent(run_, injectors::toJson(fault), {{"admin_up", true}});
    ASSERT_TRUE(entry.isOk());
    ASSERT_TRUE(store_->journalMark(*entry, "applied").isOk());
    sys_.self_pid = 601;
  }

  RecoveryOutcome recover(int budget_ms = 10000) {
    return runGuardianRecovery({store_.get(), &agents_, &fabrics_, &sys_}, 600, budget_ms, 1000);
  }

  json guardianEvent() {
    auto events = store_->events(run_);
    EXPECT_TRUE(events.isOk());
    for (const auto& e : *events) {
      if (e.kind == "guardian_recovery") return e.detail;
    }
    return nullptr;
  }

  std::unique_ptr<store::Store> store_;
  int64_t run_ = 0;
  FlakyAgent agent_;
  OneAgent agents_{agent_};
  NoFabrics fabrics_;
  FakeGuardianSys sys_;
};

TEST_F(GuardianRecovery, RevertsTheJournalInterruptsTheRunAndSaysSoOnIt) {
  auto outcome = recover();
  EXPECT_TRUE(outcome.complete()) << outcome.last_error;
  EXPECT_EQ(outcome.reverted, 1);
  EXPECT_EQ(outcome.interrupted, std::vector<int64_t>{run_});
  EXPECT_EQ(agent_.log(), std::vector<std::string>{"revert p1"});
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  EXPECT_EQ(store_->getRun(run_)->state, "interrupted");
  const json detail = guardianEvent();
  ASSERT_TRUE(detail.is_object()) << "no guardian_recovery event";
  EXPECT_EQ(detail["reason"],
            "serve (pid 600) died; its guardian (pid 601) reverted 1 fault(s) of this run; the "
            "run is interrupted");
  EXPECT_EQ(detail["serve_pid"], 600);
  EXPECT_EQ(detail["guardian_pid"], 601);
  ASSERT_EQ(detail["reverted"].size(), 1u);
  EXPECT_EQ(detail["reverted"][0]["target"]["ifname"], "p1");
  EXPECT_FALSE(detail.contains("not_reverted"));
}

TEST_F(GuardianRecovery, ARevertThatFailsTwiceIsRetried) {
  agent_.fail_reverts = 2;
  auto outcome = recover();
  EXPECT_TRUE(outcome.complete());
  EXPECT_EQ(outcome.attempts, 3);
  EXPECT_EQ(agent_.revert_calls, 3);
  EXPECT_TRUE(store_->unrevertedJournal()->empty());
  EXPECT_EQ(outcome.interrupted, std::vector<int64_t>{run_}) << "marked on the first attempt";
}

TEST_F(GuardianRecovery, ARevertThatKeepsFailingIsLeftInTheJournalForTheNextServe) {
  agent_.fail_reverts = 1000;
  auto outcome = recover(3000);
  EXPECT_FALSE(outcome.complete());
  EXPECT_EQ(outcome.failed, 1);
  EXPECT_EQ(outcome.attempts, 4);
  EXPECT_EQ(store_->unrevertedJournal()->size(), 1u);
  EXPECT_EQ(store_->getRun(run_)->state, "interrupted");
  const json detail = guardianEvent();
  ASSERT_TRUE(detail.is_object());
  EXPECT_EQ(detail["reverted"].size(), 0u);
  EXPECT_EQ(detail["not_reverted"].size(), 1u);
  EXPECT_NE(detail["reason"].get<std::string>().find(
                "could not revert 1 (left to the next serve's start-up recovery)"),
            std::string::npos)
      << detail.dump();
}

TEST_F(GuardianRecovery, AFinishedRunGetsNoEvent) {
  auto entries = store_->unrevertedJournal();
  ASSERT_TRUE(entries.isOk());
  ASSERT_TRUE(store_->journalMark(entries->at(0).id, "reverted").isOk());
  ASSERT_TRUE(store_->finishRun(run_, "passed", 80.0, json::object(), "").isOk());
  auto outcome = recover();
  EXPECT_TRUE(outcome.complete());
  EXPECT_EQ(outcome.reverted, 0);
  EXPECT_TRUE(outcome.interrupted.empty());
  EXPECT_TRUE(guardianEvent().is_null());
  EXPECT_TRUE(agent_.log().empty());
}

}  // namespace
}  // namespace fabric_chaos::app
