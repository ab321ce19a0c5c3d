// The verbs fault library (libfabric-chaos-verbs.so) in unmodified perftest programs, run INSIDE
// one VM as root (tests/vm/CMakeLists.txt boots it with deploy/vm/run-in-vm.sh): both ends on the
// guest's own address, through rxe0. The faults are armed as the agent arms them, through the
// verbs kinds' injector and its control channel, in the running programs; the observer is
// perftest itself, which reports the error it met (the injected status, the failed post or
// registration) or the latency it measured, and exits by itself rather than crashing.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "injectors/sys/verbs_shim_channel.h"
#include "injectors/verbs/verbs_shim_fault.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

const std::string kShimLibrary = FC_VERBS_SHIM_PATH;
const std::string kForwardingLibrary = FC_VERBS_FORWARDING_PATH;
const std::string kNcclStyleOpen = FC_NCCL_STYLE_OPEN;
const std::string kRegMrPattern = FC_REG_MR_PATTERN;

// The first line of `out` that holds `needle`, printed for the log: what perftest said.
void showLine(const std::string& what, const std::string& out, const std::string& needle) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(needle) != std::string::npos) {
      std::cout << what << ": " << line << "\n";
      return;
    }
  }
}

// "exited with N" for an exit, "killed by signal N" for a signal: how perftest ended.
bool exitedByItself(int code) { return code >= 0 && code < 128; }

class VerbsShimGuest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/sys/class/infiniband/rxe0")) {
      FAIL() << "no rxe0 in this guest: run it with deploy/vm/run-in-vm.sh (which adds rxe0)";
    }
    ASSERT_TRUE(std::filesystem::exists(kShimLibrary)) << kShimLibrary;
    address_ = firstUpIpv4Address();
    ASSERT_FALSE(address_.empty()) << "the guest has no IPv4 address on an up interface";
    dir_ = makeTempDir();
    shim_dir_ = dir_ + "/verbs";
    std::filesystem::create_directories(shim_dir_);
    channel_ = sys::makeVerbsShimChannel(shim_dir_, 3000);  // a TCG guest answers slowly
    leases_ =
        std::make_shared<injectors::ShimLeaseKeeper>(*channel_, std::chrono::milliseconds(1000));
  }
  void TearDown() override {
    leases_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // A perftest program with the shim loaded: argv[0] a program in /usr/bin, `extra_env`
  // KEY=VALUE. Its stdout is line-buffered (stdbuf, which keeps our LD_PRELOAD beside its own), so
  // the test sees its table as it is printed, not when it exits.
  std::unique_ptr<ChildProcess> underShim(const std::vector<std::string>& argv,
                                          const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> full = {"/usr/bin/env", "LD_PRELOAD=" + kShimLibrary,
                                     "FABRIC_CHAOS_VERBS_DIR=" + shim_dir_};
    full.insert(full.end(), extra_env.begin(), extra_env.end());
    full.insert(full.end(), {"/usr/bin/stdbuf", "-oL", "-eL"});
    full.push_back("/usr/bin/" + argv[0]);
    full.insert(full.end(), argv.begin() + 1, argv.end());
    return std::make_unique<ChildProcess>(full);
  }

  // The shim-loaded programs the channel lists, once `count` of them have opened rxe0.
  std::vector<sys::ShimProcess> waitForShims(size_t count, int timeout_ms = 60000) {
    std::vector<sys::ShimProcess> found;
    waitFor(
        [&] {
          auto listed = channel_->list();
          found.clear();
          if (!listed.isOk()) return false;
          for (const auto& p : *listed) {
            if (!p.devices.empty()) found.push_back(p);
          }
          return found.size() >= count;
        },
        timeout_ms);
    return found;
  }

  injectors::VerbsShimFault injector(injectors::VerbsFaultKind kind) {
    return injectors::VerbsShimFault(kind, channel_.get(), leases_);
  }

  static injectors::Fault faultOn(const std::string& kind, pid_t pid, json params) {
    injectors::ProcessTarget target;
    target.pid = pid;
    return {kind, target, std::move(params)};
  }

  // An ib_write_bw pair (30 s of 4 KiB writes) under the shim; once the client prints its table
  // header (connected, measuring), the fault of `kind` is armed in the client through the
  // injector. Returns the client's output, after checking that it exited by itself, with an
  // error, and that reverting then (the program gone, its faults with it) succeeds.
  std::string writeBwClientUnder(injectors::VerbsFaultKind kind, const json& params) {
    auto server = underShim({"ib_write_bw", "-d", "rxe0", "-F", "-D", "30", "-s", "4096"});
    EXPECT_EQ(waitForShims(1).size(), 1u) << server->output();
    auto client =
        underShim({"ib_write_bw", "-d", "rxe0", "-F", "-D", "30", "-s", "4096", address_});
    EXPECT_EQ(waitForShims(2).size(), 2u) << client->output();
    EXPECT_TRUE(
        waitFor([&] { return client->output().find("#bytes") != std::string::npos; }, 60000))
        << client->output();
    auto fault = injector(kind);
    const injectors::Fault armed = faultOn(fault.spec().kind, client->pid(), params);
    EXPECT_TRUE(fault.validate(armed.params).isOk());
    auto prior = fault.capture(armed);
    EXPECT_TRUE(prior.isOk()) << prior.status().toString();
    EXPECT_TRUE(fault.apply(armed).isOk());
    const int client_exit = client->signalAndWait(0, 60000, true);
    const std::string out = client->output();
    EXPECT_TRUE(exitedByItself(client_exit)) << "exit " << client_exit << "\n" << out;
    EXPECT_NE(client_exit, 0) << out;
    if (prior.isOk()) {
      EXPECT_TRUE(fault.revert(armed, *prior).isOk());
    }
    server->signalAndWait(SIGTERM, 30000, true);
    return out;
  }

  std::string address_;
  std::string dir_;
  std::string shim_dir_;
  std::unique_ptr<sys::VerbsShimChannel> channel_;
  std::shared_ptr<injectors::ShimLeaseKeeper> leases_;
};

TEST_F(VerbsShimGuest, UnarmedPerftestRunsCleanAndTheShimShowsItself) {
  auto server = underShim({"ib_write_bw", "-d", "rxe0", "-F", "-D", "3", "-s", "65536"});
  ASSERT_TRUE(waitFor([&] { return !waitForShims(1, 1000).empty(); }, 30000)) << server->output();
  auto client = underShim({"ib_write_bw", "-d", "rxe0", "-F", "-D", "3", "-s", "65536", address_});
  const auto shims = waitForShims(2);
  ASSERT_EQ(shims.size(), 2u) << client->output() << server->output();
  for (const auto& shim : shims) {
    EXPECT_EQ(shim.comm, "ib_write_bw");
    EXPECT_EQ(shim.devices, (std::vector<std::string>{"rxe0"}));
    EXPECT_TRUE(shim.armed.empty()) << shim.armed.dump();
    EXPECT_TRUE(std::filesystem::exists(shim.socket)) << shim.socket;
  }
  const int client_exit = client->signalAndWait(0, 120000, true);
  const int server_exit = server->signalAndWait(0, 60000, true);
  const std::string out = client->output();
  EXPECT_EQ(client_exit, 0) << out;
  EXPECT_EQ(server_exit, 0) << server->output();
  // perftest's result row: bytes, iterations, peak and average bandwidth.
  std::smatch row;
  ASSERT_TRUE(std::regex_search(out, row, std::regex(R"(\n\s*65536\s+\d+\s+[0-9.]+\s+([0-9.]+))")))
      << out;
  EXPECT_GT(std::stod(row[1]), 0.0) << out;
  // Each shim removed its socket when its program ended.
  EXPECT_TRUE(std::filesystem::is_empty(shim_dir_));
}

TEST_F(VerbsShimGuest, AnArmedCqeErrorIsTheStatusPerftestReportsAndItExitsByItself) {
  const std::string out = writeBwClientUnder(injectors::VerbsFaultKind::kCqeError,
                                             {{"status", "retry_exc_err"}, {"count", 1}});
  showLine("verbs_cqe_error, perftest", out, "status 12");
  EXPECT_NE(out.find("status 12"), std::string::npos) << "perftest names retry_exc_err (12)\n"
                                                      << out;
}

TEST_F(VerbsShimGuest, AFailedPostIsWhatPerftestReports) {
  const std::string out = writeBwClientUnder(injectors::VerbsFaultKind::kPostFail,
                                             {{"op", "send"}, {"errno", "ENOMEM"}});
  showLine("verbs_post_fail, perftest", out, "Couldn't post send");
  EXPECT_NE(out.find("Couldn't post send"), std::string::npos) << out;
}

TEST_F(VerbsShimGuest, AQpErrorBreaksTheConnectionPerftestRuns) {
  const std::string out = writeBwClientUnder(injectors::VerbsFaultKind::kQpError, {{"count", 1}});
  showLine("verbs_qp_error, perftest", out, "status 5");
  showLine("verbs_qp_error, perftest", out, "Couldn't post send");
  // The QP in error flushes what was outstanding (wr_flush_err, 5), or refuses the next post.
  EXPECT_TRUE(out.find("status 5") != std::string::npos ||
              out.find("Couldn't post send") != std::string::npos)
      << out;
}

// perftest's latency table row: bytes, iterations, t_min, t_max, t_typical (µs) ...
struct LatencyRow {
  double t_min = -1, t_max = -1, t_typical = -1;
};
LatencyRow latencyRow(const std::string& out) {
  std::smatch row;
  LatencyRow r;
  if (std::regex_search(out, row,
                        std::regex(R"(\n\s*2\s+\d+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+))"))) {
    r = {std::stod(row[1]), std::stod(row[2]), std::stod(row[3])};
  }
  return r;
}

TEST_F(VerbsShimGuest, ACompletionDelayIsTheStallPerftestMeasures) {
  const std::vector<std::string> lat = {"ib_send_lat", "-d", "rxe0", "-F", "-n", "4000", "-s", "2"};
  auto server = underShim(lat);
  ASSERT_EQ(waitForShims(1).size(), 1u) << server->output();
  std::vector<std::string> client_argv = lat;
  client_argv.push_back(address_);
  auto client = underShim(client_argv);
  const auto shims = waitForShims(2);
  ASSERT_EQ(shims.size(), 2u) << client->output();
  // Armed as soon as the client has opened its device: the 4000 round trips take seconds under
  // TCG, and the stalls come after 200 of them, three times.
  auto fault = injector(injectors::VerbsFaultKind::kCompletionDelay);
  const injectors::Fault armed = faultOn("verbs_completion_delay", client->pid(),
                                         {{"delay_ms", 300}, {"every_nth", 200}, {"count", 3}});
  auto prior = fault.capture(armed);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(fault.apply(armed).isOk());
  json observed;
  waitFor(
      [&] {
        auto o = fault.observe(armed);
        if (!o.isOk() || (*o)["processes"].empty()) return false;
        observed = *o;
        return (*o)["processes"][0]["armed"][0].value("fired", 0) >= 3;
      },
      60000);
  const int client_exit = client->signalAndWait(0, 120000, true);
  const std::string out = client->output();
  EXPECT_EQ(client_exit, 0) << out;
  EXPECT_EQ(observed["processes"][0]["armed"][0].value("fired", 0), 3) << observed.dump();
  const LatencyRow row = latencyRow(out);
  std::cout << "verbs_completion_delay 300 ms x3, ib_send_lat: t_min " << row.t_min << " us, t_max "
            << row.t_max << " us, t_typical " << row.t_typical << " us\n";
  ASSERT_GT(row.t_max, 0) << out;
  // A stalled completion is a stalled round trip, and ib_send_lat reports half of each round
  // trip: the worst took half the delay or more, the typical one did not.
  EXPECT_GE(row.t_max, 150000.0) << out;
  EXPECT_LT(row.t_typical, 150000.0) << out;
  EXPECT_TRUE(fault.revert(armed, *prior).isOk());
  server->signalAndWait(0, 60000, true);
}

TEST_F(VerbsShimGuest, FaultsArmedAtLoadFailTheFirstRegistration) {
  // perftest registers its buffer once connected, so a server is there to connect to; the
  // client is started with the fault armed from its first moment.
  auto server = underShim({"ib_write_bw", "-d", "rxe0", "-F", "-s", "4096", "-D", "2"});
  ASSERT_EQ(waitForShims(1).size(), 1u) << server->output();
  auto client =
      underShim({"ib_write_bw", "-d", "rxe0", "-F", "-s", "4096", "-D", "2", address_},
                {R"(FABRIC_CHAOS_VERBS_FAULTS=[{"kind": "reg_mr_fail", "errno": "ENOMEM"}])"});
  const int exit_code = client->signalAndWait(0, 60000, true);
  const std::string out = client->output();
  EXPECT_TRUE(exitedByItself(exit_code)) << "exit " << exit_code << "\n" << out;
  EXPECT_NE(exit_code, 0) << out;
  showLine("verbs_reg_mr_fail at load, perftest", out, "MR");
  EXPECT_NE(out.find("MR"), std::string::npos) << "perftest says its registration failed\n" << out;
  server->signalAndWait(SIGTERM, 30000, true);
  // A malformed variable arms nothing and says why; the program runs as without the shim.
  auto refused = underShim({"ib_write_bw", "-d", "rxe0", "-F", "-s", "4096", "-D", "1"},
                           {R"(FABRIC_CHAOS_VERBS_FAULTS=[{"kind": "reg_mr_fial"}])"});
  ASSERT_EQ(waitForShims(1).size(), 1u) << refused->output();
  EXPECT_NE(refused->output().find("FABRIC_CHAOS_VERBS_FAULTS[0].kind: must be"), std::string::npos)
      << refused->output();
  refused->signalAndWait(SIGTERM, 30000, true);
}

// libibverbs' ibv_reg_mr reaches the library twice (itself, then ibv_reg_mr_iova2 through
// libibverbs' PLT), yet every second registration is refused, not every call: one registration is
// one event for every_nth and count.
TEST_F(VerbsShimGuest, OneRegistrationIsOneEventForTheTriggers) {
  const auto every_second =
      runShell(R"(FABRIC_CHAOS_VERBS_FAULTS='[{"kind": "reg_mr_fail", "errno": "EFAULT",)"
               R"( "trigger": {"every_nth": 2}}]')"
               " LD_PRELOAD=" +
               kShimLibrary + " " + kRegMrPattern + " 6 2>&1");
  EXPECT_EQ(every_second.exit_code, 0) << every_second.out;
  EXPECT_NE(every_second.out.find("pattern ynynyn\nerrno 14\n"), std::string::npos)
      << every_second.out;
  const auto first_two =
      runShell(R"(FABRIC_CHAOS_VERBS_FAULTS='[{"kind": "reg_mr_fail", "trigger": {"count": 2}}]')"
               " LD_PRELOAD=" +
               kShimLibrary + " " + kRegMrPattern + " 4 2>&1");
  EXPECT_NE(first_two.out.find("pattern nnyy\n"), std::string::npos) << first_two.out;
  std::cout << "reg_mr_fail every_nth 2 over 6 registrations: " << every_second.out
            << "count 2 over 4: " << first_two.out;
}

TEST_F(VerbsShimGuest, ATargetThatMatchesNoShimLoadedProcessFailsAndArmsNothing) {
  auto server = underShim({"ib_write_bw", "-d", "rxe0", "-F", "-s", "4096"});
  const auto shims = waitForShims(1);
  ASSERT_EQ(shims.size(), 1u) << server->output();
  auto fault = injector(injectors::VerbsFaultKind::kCqeError);
  injectors::ProcessTarget nccl;
  nccl.name = "all_reduce_perf";
  const injectors::Fault none{"verbs_cqe_error", nccl, json::object()};
  auto capture = fault.capture(none);
  ASSERT_FALSE(capture.isOk());
  EXPECT_NE(capture.status().message().find("no shim-loaded process matches"), std::string::npos)
      << capture.status().message();
  EXPECT_NE(capture.status().message().find("ib_write_bw"), std::string::npos)
      << "it lists what is there: " << capture.status().message();
  EXPECT_FALSE(fault.apply(none).isOk());
  const auto after = waitForShims(1);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(after[0].armed.empty()) << after[0].armed.dump();
  server->signalAndWait(SIGTERM, 30000, true);
}

// NCCL opens libibverbs with dlopen and finds each function with dlvsym(..., "IBVERBS_1.1"),
// which a preloaded library's unversioned functions do not satisfy: the forwarding form is what
// reaches it (NCCL_IBVERBS_LIB). nccl_style_open registers memory that way on rxe0.
TEST_F(VerbsShimGuest, TheForwardingFormReachesAProgramThatOpensLibibverbsAsNcclDoes) {
  const std::string fail_registration =
      R"(FABRIC_CHAOS_VERBS_FAULTS='[{"kind": "reg_mr_fail", "errno": "ENOMEM"}]')";
  const auto forwarded =
      runShell(fail_registration + " " + kNcclStyleOpen + " " + kForwardingLibrary + " 2>&1");
  EXPECT_EQ(forwarded.exit_code, 0) << forwarded.out;
  std::cout << "forwarding form, reg_mr_fail armed: " << forwarded.out;
  EXPECT_NE(forwarded.out.find("\"device\": \"rxe0\", \"registered\": false, \"errno\": 12"),
            std::string::npos)
      << "the fault reached the registration\n"
      << forwarded.out;
  EXPECT_NE(forwarded.out.find("\"same_as_real\": false"), std::string::npos) << forwarded.out;
  // Unarmed, it forwards: the registration goes through to rxe0.
  const auto clean = runShell(kNcclStyleOpen + " " + kForwardingLibrary + " 2>&1");
  EXPECT_NE(clean.out.find("\"registered\": true"), std::string::npos) << clean.out;
  // The LD_PRELOAD form does not reach it: dlvsym finds the real library's ibv_open_device, so
  // the contexts it opens are never held and their posts and completions never seen. (Calls that
  // libibverbs makes to itself through its PLT, such as ibv_reg_mr's to ibv_reg_mr_iova2, still
  // meet the preloaded functions: registrations prove nothing either way.)
  const auto preloaded = runShell(fail_registration + " LD_PRELOAD=" + kShimLibrary + " " +
                                  kNcclStyleOpen + " libibverbs.so.1 2>&1");
  EXPECT_NE(preloaded.out.find("\"same_as_real\": true"), std::string::npos) << preloaded.out;
}

}  // namespace
}  // namespace fabric_chaos::testing
