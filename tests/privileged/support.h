#pragma once
// Shared helpers for the privileged tier: the root check (a failure in CI, a skip elsewhere), a
// tiny HTTP/1.1 client for 127.0.0.1, child processes (`fabric-chaos serve` among them), and
// independent observers of links and loss faults that poll `ip`, `nft` and `tc` (never the
// injector's own code).

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace fabric_chaos::testing {

// Returns a reason to skip (outside CI) or "" when the tier can run. Call through
// FC_REQUIRE_ROOT(), which fails the test in CI.
std::string missingPrivilegedPrerequisite();

#define FC_REQUIRE_ROOT()                                                           \
  do {                                                                              \
    std::string missing = ::fabric_chaos::testing::missingPrivilegedPrerequisite(); \
    if (!missing.empty()) {                                                         \
      const char* ci = std::getenv("CI");                                           \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << missing;            \
      GTEST_SKIP() << missing;                                                      \
    }                                                                               \
  } while (0)

struct CommandOutput {
  int exit_code = -1;
  std::string out;
};
CommandOutput runShell(const std::string& command);

struct HttpReply {
  int status = 0;            // 0: no HTTP reply; body then says what the connection saw
  std::string content_type;  // the Content-Type header, "" when there is none
  std::string body;
  nlohmann::json json() const;
};
// Sends `Authorization: Bearer <defaultBearerToken()>` when that is set (ServeProcess sets it to
// the admin token of the serve it started), so tests written before authentication still work.
HttpReply httpRequest(int port, const std::string& method, const std::string& target,
                      const std::string& body = "");
// The same with an explicit Authorization header value; "" sends no Authorization header.
HttpReply httpRequestWithAuthorization(int port, const std::string& method,
                                       const std::string& target, const std::string& body,
                                       const std::string& authorization);
// The token httpRequest sends by default; "" = none. Process-wide: the tests of one executable
// run one after the other.
void setDefaultBearerToken(const std::string& token);
const std::string& defaultBearerToken();

int64_t steadyNowNs();

// A child process (argv[0] a path) with its stdout and stderr collected by a reader thread.
// Destroying it kills (SIGKILL) and reaps a child still running. One test thread at a time.
class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> args);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Polls the output every poll_ms for `pattern` and returns its first group as a number; 0 when
  // the child exits first or timeout_ms passes.
  int waitForPort(const std::regex& pattern, int timeout_ms, int poll_ms);
  // Sends signo (0: none) and waits for the exit; returns the exit code (128+signal when killed).
  // On timeout: SIGKILL and reap when kill_on_timeout, else -1 and the child is left running.
  int signalAndWait(int signo, int timeout_ms, bool kill_on_timeout);
  // Sends `signo` and reaps the process, however long it takes.
  void killAndReap(int signo);
  std::string output();

 private:
  int reaped(int status);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::string output_;
};

// `fabric-chaos serve` with its own database, state directory and admin token file (dir/fc.db,
// dir/state, dir/admin.token), its stdout collected.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& extra_args, const std::string& dir);
  ~ServeProcess();
  // Waits for "serving on http://127.0.0.1:PORT"; returns the port or 0. Then reads the admin
  // token file (written on the first start, kept on later ones) into token() and makes it the
  // default bearer token of httpRequest; with --no-auth there is none and the default is cleared.
  int waitForPort(int timeout_ms);
  const std::string& token() const { return token_; }
  std::string tokenFile() const { return token_file_; }
  // SIGINT and wait; returns the exit code.
  int stop(int timeout_ms);
  // Sends `signo` (e.g. SIGKILL to simulate a crash) and reaps the process.
  void kill(int signo);
  std::string output();

 private:
  std::string token_file_;
  std::string token_;
  ChildProcess child_;
};

// Polls `ip -n NETNS -o link show IFNAME` and records every admin-state change with the steady
// clock time it was first seen.
class LinkObserver {
 public:
  struct Change {
    int64_t t_ns;
    bool admin_up;
  };
  LinkObserver(std::string netns, std::string ifname, int period_ms = 5);
  ~LinkObserver();
  std::vector<Change> stop();

 private:
  std::string netns_;
  std::string ifname_;
  int period_ms_;
  std::atomic<bool> stopping_{false};
  std::vector<Change> changes_;
  std::thread thread_;
};

// Whether a packet_loss fault is in force on NETNS/PORT, seen by independent tools whichever
// backend applied it: the nftables backend's table (`ip netns exec NETNS nft list table netdev
// fc_loss_<port>` succeeds) or the netem backend's root qdisc (`tc -n NETNS qdisc show dev PORT`
// shows a netem). False when neither is there, and when the namespace or the port is gone.
bool lossFaultInForce(const std::string& netns, const std::string& port);

// How much slower than this host the machine under test may be: FC_TIMING_SCALE (default 1).
// Timing bounds that state what the product promises on a real machine are multiplied by it;
// the VM tier sets it for a qemu TCG guest (one emulated vCPU shared with the workload ranks),
// where the same checks still prove order and outcome, but not host-speed latency.
double timingScale();

// Polls `condition` every 10 ms until it holds or timeout_ms passes; its last value.
bool waitFor(const std::function<bool()>& condition, int timeout_ms);

// Whether `ip -n NETNS -o link show dev IFNAME` shows the UP flag (administratively up); false
// when the namespace or the interface cannot be read.
bool adminUp(const std::string& netns, const std::string& ifname);
// A switch port of the namespace lab: adminUp("fcl-sw0", port).
inline bool portAdminUp(const std::string& port) { return adminUp("fcl-sw0", port); }

// Every loss fault in NETNS, in words, "" when there is none: nft tables named fc_loss_* and netem
// qdiscs on any interface. For the checks that nothing is left; a failing `nft`/`tc` is reported
// too (an unreadable namespace proves nothing).
std::string lossFaultsIn(const std::string& netns);

// Namespaces of the given prefix still present.
std::vector<std::string> namespacesWithPrefix(const std::string& prefix);

std::string makeTempDir();

// The IPv4 address of the first interface that is up and not loopback ("" when none): a
// guest's own eth0 address, where a test runs both ends of an RDMA connection through rxe0.
std::string firstUpIpv4Address();

// The whole file, or "" when it cannot be read.
std::string readFile(const std::string& path);

// Live (not zombie) fc-guardian processes (app/guardian.h) whose command line — serve's, inherited
// by the fork — mentions `dir`: only the guardians of one test's serves, whatever else runs here.
std::vector<int> guardiansOf(const std::string& dir);

// A modelled lab port's counters as tc reports them (independent of the product's code):
// `tc -s -j qdisc show` of one qdisc by handle ("20:"), null when absent; the bytes an htb class
// sent, from `tc -s class` (iproute2 6.1 prints htb classes as text only), -1 when absent.
// Bytes the interface sent since it was created (`ip -s -j link show`, stats64.tx.bytes); -1 when
// unreadable.
int64_t linkTxBytes(const std::string& netns, const std::string& ifname);

nlohmann::json qdiscStats(const std::string& netns, const std::string& port,
                          const std::string& handle);
int64_t htbClassBytes(const std::string& netns, const std::string& port,
                      const std::string& classid);

// POST /v1/runs {"scenario": scenario} on serve at port; expects 202 and returns the run's id (0
// when it was refused).
int64_t startRun(int port, const nlohmann::json& scenario);
// Polls GET /v1/runs/{id} until the run is final (passed, failed, error, aborted, interrupted) or
// timeout_s passes; returns the last body read.
nlohmann::json waitForFinalRun(int port, int64_t id, int timeout_s);
// The events (GET /v1/runs/{id}/events "events" entries) whose "kind" is kind.
std::vector<nlohmann::json> eventsOfKind(const nlohmann::json& events, const std::string& kind);

// For tests that start the real binary on loopback and need no root (they run in the unit tier):
// binary_ is FC_BINARY, dir_ a fresh temporary directory that TearDown removes. Without the
// binary SetUp fails in CI and skips elsewhere; a derived SetUp calls this one first and returns
// when IsSkipped() or HasFatalFailure().
class BinaryProcessTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::string binary_;
  std::string dir_;
};

// A test against `fabric-chaos serve --with-lab HOSTS` in a fresh temporary directory dir_.
// SetUp (after FC_REQUIRE_ROOT) starts it and waits for port_; TearDown stops it with SIGINT,
// checks that the lab went with it (no fcl-* namespace left) and removes dir_. A derived SetUp
// calls this one first and returns when IsSkipped() or HasFatalFailure().
class ServeWithLabTest : public ::testing::Test {
 protected:
  explicit ServeWithLabTest(int hosts, std::vector<std::string> extra_args = {})
      : hosts_(hosts), extra_args_(std::move(extra_args)) {}
  void SetUp() override;
  void TearDown() override;

  int64_t startRun(const nlohmann::json& scenario) {
    return ::fabric_chaos::testing::startRun(port_, scenario);
  }

  std::string dir_;
  std::unique_ptr<ServeProcess> serve_;
  int port_ = 0;

 private:
  int hosts_;
  std::vector<std::string> extra_args_;  // more serve flags
};

// A `fabric-chaos serve --with-lab 4` that the test starts (start()), may kill, and starts again
// on the same database in dir_: for crash and restart tests. SetUp requires root; TearDown kills a
// serve still running, brings the lab down, checks no fcl-* namespace is left and removes dir_.
class RestartableServeTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Starts serve (the lab is brought up, or found up) and returns its port, 0 on failure.
  int start();

  std::string dir_;
  std::unique_ptr<ServeProcess> serve_;
};

// A test with its own `fabric-chaos lab up --hosts 2` (none may be up already: it would share
// the fcl-* names) with its state in a fresh temporary directory dir_; binary_ is FC_BINARY.
// TearDown brings the lab down, checks no fcl-* namespace is left and removes dir_; a derived
// TearDown stops its own processes first, then calls this one.
class OwnLabTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::string dir_;
  std::string binary_;
};

}  // namespace fabric_chaos::testing
