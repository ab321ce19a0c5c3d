// `fabric-chaos lab up|status|down --kind vm` with real qemu VMs (TCG) on Debian's 6.12 kernel:
// both VMs boot and report ready, reach each other over the tap bridge (ping, and an RDMA RC
// ping-pong over Soft-RoCE), the agents answer through qemu's port forwards, up is idempotent,
// and down leaves no qemu, namespace or tap behind. On the routed leaf-spine the guests reach
// each other across the spines, ECMP spreads their flows over both and moves them off a downed
// uplink, and a partial lab is rebuilt.
//
// The guests run a self-test next to their agent (given with --agent-command) and print markers
// on their consoles, which the test reads: the lab has no other way in yet.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/privileged/support.h"
#include "tests/vm/vm_support.h"

namespace fabric_chaos::testing {
namespace {

// What the VM tier needs, or "": the lab's prerequisites and what ctest passes.
std::string missingPrerequisite() {
  if (std::string missing = missingVmPrerequisite(); !missing.empty()) return missing;
  for (const char* var : {"FC_BINARY", "FC_SOURCE_DIR"}) {
    const char* value = std::getenv(var);
    if (value == nullptr || !std::filesystem::exists(value)) {
      return std::string(var) + " must be set (ctest sets it)";
    }
  }
  return "";
}

#define FC_REQUIRE_VM() FC_REQUIRE(missingPrerequisite())

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Whether a line of `text` starts with `marker`. Only a line the guest printed counts: the guest
// init echoes the whole agent command ("fc-guest: starting agent: ... echo FC_...") first, so a
// marker anywhere in the text proves nothing.
bool printedLine(const std::string& text, const std::string& marker) {
  for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return true;
  }
  return false;
}

// Waits until the guest printed a line starting with `marker` or one of `failures` on the
// console at `path`; returns what it found or "".
std::string waitForMarker(const std::string& path, const std::string& marker,
                          const std::vector<std::string>& failures, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = readFile(path);
    if (printedLine(text, marker)) return marker;
    for (const auto& f : failures) {
      if (printedLine(text, f)) return f;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return "";
}

// GET with a bearer token on 127.0.0.1; returns the raw response ("" on failure).
std::string httpGet(int port, const std::string& target, const std::string& token) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + target +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                "Authorization: Bearer " +
                                token + "\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) > 0) {
      char buffer[4096];
      pollfd p{fd, POLLIN, 0};
      while (poll(&p, 1, 10000) == 1) {
        ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        response.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  return response;
}

// qemu processes named fcv-vmN that are running. Zombies do not count: a daemonized qemu is
// reaped by init a moment after it exits. (Not pgrep -f: it would match the shell running it.)
int runningLabQemus() {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string raw = readFile("/proc/" + pid + "/cmdline");
    std::vector<std::string> args;
    std::istringstream in(raw);
    for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
    if (args.empty() || args[0].find("qemu-system") == std::string::npos) continue;
    bool ours = false;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      ours = ours || (args[i] == "-name" && args[i + 1].rfind("fcv-vm", 0) == 0);
    }
    const std::string stat = readFile("/proc/" + pid + "/stat");
    const auto paren = stat.rfind(')');
    if (ours && paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z') {
      ++count;
    }
  }
  return count;
}

class VmLabCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_VM();
    dir_ = makeTempDir();
    binary_ = std::getenv("FC_BINARY");
    source_ = std::getenv("FC_SOURCE_DIR");
    has_agent_ = runShell(binary_ + " agent --help >/dev/null 2>&1").exit_code == 0;
  }
  void TearDown() override {
    if (!binary_.empty()) {
      auto down = lab("down");
      if (HasFailure()) {
        // The consoles are the only window into a guest: show them when something failed.
        for (int i = 0; i < 2; ++i) {
          std::cerr << "---- vm" << i << " console ----\n"
                    << readFile(dir_ + "/vm/vm" + std::to_string(i) + ".console.log");
        }
      }
      EXPECT_EQ(down.exit_code, 0) << down.out;
      EXPECT_TRUE(namespacesWithPrefix("fcv-").empty());
      EXPECT_EQ(runningLabQemus(), 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  CommandOutput lab(const std::string& args) {
    return runShell(binary_ + " lab " + args + " --kind vm --state-dir " + dir_ + " --cache-dir " +
                    vmCache() + " --guest-init " + source_ + "/deploy/vm/guest-init.sh 2>&1");
  }
  // Each guest pings its peer until it answers, then vm1 serves and vm0 runs an RDMA RC
  // ping-pong over rxe0; meanwhile the real agent (or, without one, a stand-in HTTP server)
  // answers on the forwarded port.
  // What answers on each guest's agent port: the real agent, or a stand-in HTTP server.
  std::string agentCommand() const {
    return has_agent_ ? binary_ + " agent --listen 0.0.0.0:7070 --token-file " + dir_ +
                            "/vm/agent.token --allow eth0 --mgmt-if eth1"
                      : "busybox httpd -f -p 7070 -h /tmp";
  }
  std::string selfTestAgentCommand() const {
    const std::string agent = agentCommand();
    return "case $(hostname) in vm0) peer=10.201.0.2;; *) peer=10.201.0.1;; esac; "
           "(ok=0; for i in $(seq 1 120); do ping -c 1 -W 1 $peer >/dev/null 2>&1 && "
           "{ ok=1; break; }; sleep 1; done; "
           "[ $ok = 1 ] && echo FC_SELFTEST_PING_OK || echo FC_SELFTEST_PING_FAILED; "
           "if [ $(hostname) = vm1 ]; then timeout 150 ibv_rc_pingpong -d rxe0 -g 1 -n 5; "
           "else sleep 3; timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n 5 $peer && "
           "echo FC_SELFTEST_RDMA_OK || echo FC_SELFTEST_RDMA_FAILED; fi) & exec " +
           agent;
  }
  std::string dir_;
  std::string binary_;
  std::string source_;
  bool has_agent_ = false;
};

TEST_F(VmLabCommand, UpBootsTwoVmsThatReachEachOtherAndDownRemovesEverything) {
  const auto start = std::chrono::steady_clock::now();
  auto up = lab("up --hosts 2 --agent-command " + shellQuote(selfTestAgentCommand()));
  const auto boot_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_EQ(up.exit_code, 0) << up.out;
  std::cout << "[ timing ] lab up --kind vm --hosts 2: " << boot_s << " s\n";
  EXPECT_NE(up.out.find("vm0: ready"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("vm1: ready"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("vm1: agent answering on 127.0.0.1:7101"), std::string::npos) << up.out;

  // The fabric file, the token and the processes.
  auto fabric = nlohmann::json::parse(readFile(dir_ + "/fabrics/vm-lab.json"), nullptr, false);
  ASSERT_FALSE(fabric.is_discarded());
  EXPECT_EQ(fabric["kind"], "vm");
  ASSERT_EQ(fabric["hosts"].size(), 2u);
  EXPECT_EQ(fabric["hosts"][1]["agent"], "http://127.0.0.1:7101");
  struct stat token_stat {};
  ASSERT_EQ(stat((dir_ + "/vm/agent.token").c_str(), &token_stat), 0);
  EXPECT_EQ(token_stat.st_mode & 0777, 0600u);
  EXPECT_EQ(runningLabQemus(), 2);

  // Both taps are bridge ports in the switch namespace, none is left in this one.
  auto ports = runShell("ip -n fcv-sw0 -o link show master br0");
  EXPECT_NE(ports.out.find("fcv-tap0"), std::string::npos) << ports.out;
  EXPECT_NE(ports.out.find("fcv-tap1"), std::string::npos) << ports.out;
  EXPECT_EQ(runShell("ip -o link show | grep -c fcv-tap").out, "0\n");

  // vm0 and vm1 reach each other through the bridge, by IP and by RDMA over rxe.
  const std::string console0 = dir_ + "/vm/vm0.console.log";
  const std::string console1 = dir_ + "/vm/vm1.console.log";
  EXPECT_EQ(waitForMarker(console0, "FC_SELFTEST_PING_OK", {"FC_SELFTEST_PING_FAILED"}, 150),
            "FC_SELFTEST_PING_OK");
  EXPECT_EQ(waitForMarker(console1, "FC_SELFTEST_PING_OK", {"FC_SELFTEST_PING_FAILED"}, 150),
            "FC_SELFTEST_PING_OK");
  EXPECT_EQ(waitForMarker(console0, "FC_SELFTEST_RDMA_OK", {"FC_SELFTEST_RDMA_FAILED"}, 150),
            "FC_SELFTEST_RDMA_OK");
  auto rx = runShell("ip netns exec fcv-sw0 cat /sys/class/net/fcv-tap0/statistics/rx_packets");
  auto tx = runShell("ip netns exec fcv-sw0 cat /sys/class/net/fcv-tap1/statistics/tx_packets");
  EXPECT_GT(std::atoi(rx.out.c_str()), 5) << rx.out;
  EXPECT_GT(std::atoi(tx.out.c_str()), 5) << tx.out;
  EXPECT_NE(readFile(console0).find("kernel 6.12."), std::string::npos);

  if (has_agent_) {
    // The agent answers through qemu's forward with the lab's token and runs the guest kernel.
    const std::string token = readFile(dir_ + "/vm/agent.token");
    auto info = httpGet(7100, "/agent/v1/info", token.substr(0, token.find('\n')));
    EXPECT_NE(info.find(" 200 "), std::string::npos) << info;
    EXPECT_NE(info.find("\"kernel\":\"6.12."), std::string::npos) << info;
    EXPECT_NE(info.find("rxe0"), std::string::npos) << info;
  }

  auto status = lab("status");
  EXPECT_EQ(status.exit_code, 0) << status.out;
  EXPECT_NE(status.out.find("2 of 2 VMs running"), std::string::npos) << status.out;

  auto again = lab("up --hosts 2 --no-agent");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("already up"), std::string::npos) << again.out;

  auto down = lab("down");
  EXPECT_EQ(down.exit_code, 0) << down.out;
  EXPECT_EQ(runningLabQemus(), 0);
  EXPECT_TRUE(namespacesWithPrefix("fcv-").empty());
  EXPECT_EQ(runShell("ip -o link show | grep -c fcv-").out, "0\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/fabrics/vm-lab.json"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/vm/agent.token"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/vm/vm0.pid"));
  EXPECT_TRUE(std::filesystem::exists(console0)) << "console logs stay for the post-mortem";
  auto status_down = lab("status");
  EXPECT_EQ(status_down.exit_code, 3) << status_down.out;

  auto down_again = lab("down");
  EXPECT_EQ(down_again.exit_code, 0) << down_again.out;
}

// rx_bytes of `ifname` in namespace `netns`, read by the kernel's own counters.
uint64_t rxBytes(const std::string& netns, const std::string& ifname) {
  const auto out =
      runShell("ip netns exec " + netns + " cat /sys/class/net/" + ifname + "/statistics/rx_bytes");
  return std::strtoull(out.out.c_str(), nullptr, 10);
}

// The next hops leaf fcv-l0 has for vm1's subnet, as `ip -j route` lists them.
size_t pathsFromLeaf0ToLeaf1() {
  const auto out = runShell("ip -n fcv-l0 -j route show 10.210.1.0/24");
  const auto routes = nlohmann::json::parse(out.out, nullptr, false);
  if (!routes.is_array() || routes.empty()) return 0;
  const auto& route = routes[0];
  return route.contains("nexthops") ? route["nexthops"].size() : 1;
}

// Polls until pathsFromLeaf0ToLeaf1() is `paths`; whether it got there within timeout_s.
bool waitForPaths(size_t paths, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (pathsFromLeaf0ToLeaf1() != paths) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

// The VM lab on the namespace lab's routed leaf-spine (2 leaves, 2 spines, one VM per leaf), with
// the port model on every switch port. Observed from outside the product: tc on the ports, BGP's
// routes in the leaves' tables, the spines' port counters, and the guests' own ping, RDMA
// ping-pong and iperf3 (16 flows, whose five-tuples the leaves hash over both spines). With leaf
// l0's uplink to s0 down, every flow takes s1. Then the same uplink cut by link_flap through
// serve under the product's ring. Then a lab with a VM killed is partial, and is rebuilt.
TEST_F(VmLabCommand, LeafSpineRoutesGuestsOverBothSpinesAndAPartialLabIsRebuilt) {
  const std::string agent = agentCommand();
  // vm1 serves iperf3 and the ping-pong; vm0 runs the ping-pong, then 16 flows twice, 25 s apart
  // (the test takes an uplink down in between).
  const std::string self_test =
      "case $(hostname) in vm0) peer=10.210.1.1;; *) peer=10.210.0.1;; esac; "
      "(ok=0; for i in $(seq 1 120); do ping -c 1 -W 1 $peer >/dev/null 2>&1 && "
      "{ ok=1; break; }; sleep 1; done; "
      "[ $ok = 1 ] && echo FC_SELFTEST_PING_OK || echo FC_SELFTEST_PING_FAILED; "
      "if [ $(hostname) = vm1 ]; then iperf3 -s -D; timeout 150 ibv_rc_pingpong -d rxe0 -g 1 -n 5; "
      "else sleep 3; timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n 5 $peer && "
      "echo FC_SELFTEST_RDMA_OK || echo FC_SELFTEST_RDMA_FAILED; sleep 10; "
      "iperf3 -c $peer -P 16 -t 5 >/dev/null && echo FC_ECMP_A_DONE || echo FC_ECMP_A_FAILED; "
      "sleep 25; "
      "iperf3 -c $peer -P 16 -t 5 >/dev/null && echo FC_ECMP_B_DONE || echo FC_ECMP_B_FAILED; "
      "fi) & exec " +
      agent;
  const std::string shape =
      "--topology leaf-spine --leaves 2 --spines 2 --hosts-per-leaf 1 --link-rate 100mbit "
      "--buffer 128k";
  auto up = lab("up " + shape + " --agent-command " + shellQuote(self_test));
  ASSERT_EQ(up.exit_code, 0) << up.out;
  EXPECT_NE(up.out.find("BGP converged"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("is up: 2 VMs on 2 leaves and 2 spines"), std::string::npos) << up.out;

  // Each VM's tap is its leaf's host port p0; nothing is left in this namespace.
  for (const char* leaf : {"fcv-l0", "fcv-l1"}) {
    const std::string ports =
        runShell(std::string("ip -n ") + leaf + " -o link show master br0").out;
    EXPECT_NE(ports.find(" p0:"), std::string::npos) << leaf << ": " << ports;
  }
  EXPECT_EQ(runShell("ip -o link show | grep -c fcv-tap").out, "0\n");
  // The port model on every switch port: the hosts' ports, the uplinks and the spines' ports.
  for (const auto& [netns, port] : std::vector<std::pair<std::string, std::string>>{
           {"fcv-l0", "p0"}, {"fcv-l0", "up1"}, {"fcv-l1", "p0"}, {"fcv-s0", "dn1"}}) {
    const std::string classes = runShell("tc -n " + netns + " class show dev " + port).out;
    EXPECT_NE(classes.find("class htb 1:1 root rate 100Mbit ceil 100Mbit"), std::string::npos)
        << netns << "/" << port << ":\n"
        << classes;
  }
  auto fabric = nlohmann::json::parse(readFile(dir_ + "/fabrics/vm-lab.json"), nullptr, false);
  ASSERT_FALSE(fabric.is_discarded());
  EXPECT_EQ(fabric["kind"], "vm");
  EXPECT_EQ(fabric["hosts"][1]["nics"][0]["address"], "10.210.1.1");
  EXPECT_EQ(fabric["switch_links"].size(), 4u);
  EXPECT_EQ(pathsFromLeaf0ToLeaf1(), 2u) << "BGP: both spines";

  // Across the routed fabric, by IP and by RoCEv2 over rxe.
  const std::string console0 = dir_ + "/vm/vm0.console.log";
  EXPECT_EQ(waitForMarker(console0, "FC_SELFTEST_PING_OK", {"FC_SELFTEST_PING_FAILED"}, 150),
            "FC_SELFTEST_PING_OK");
  ASSERT_EQ(waitForMarker(console0, "FC_SELFTEST_RDMA_OK", {"FC_SELFTEST_RDMA_FAILED"}, 150),
            "FC_SELFTEST_RDMA_OK");

  // ECMP: vm0's flows enter the spines on their ports from l0 (dn0).
  const uint64_t s0_before = rxBytes("fcv-s0", "dn0");
  const uint64_t s1_before = rxBytes("fcv-s1", "dn0");
  ASSERT_EQ(waitForMarker(console0, "FC_ECMP_A_DONE", {"FC_ECMP_A_FAILED"}, 120), "FC_ECMP_A_DONE");
  const double s0_both = static_cast<double>(rxBytes("fcv-s0", "dn0") - s0_before);
  const double s1_both = static_cast<double>(rxBytes("fcv-s1", "dn0") - s1_before);
  std::cout << "[ ecmp ] 16 flows, both uplinks: s0 " << s0_both / 1e6 << " MB, s1 "
            << s1_both / 1e6 << " MB\n";
  EXPECT_GT(s0_both + s1_both, 10e6) << "iperf3 moved too little to judge";
  EXPECT_GT(s0_both, 0.1 * (s0_both + s1_both)) << "ECMP left spine s0 idle";
  EXPECT_GT(s1_both, 0.1 * (s0_both + s1_both)) << "ECMP left spine s1 idle";

  // l0's uplink to s0 down: BGP takes the path out, and every flow crosses s1.
  ASSERT_EQ(runShell("ip -n fcv-l0 link set up0 down").exit_code, 0);
  EXPECT_TRUE(waitForPaths(1, 10)) << runShell("ip -n fcv-l0 route").out;
  const uint64_t s0_cut = rxBytes("fcv-s0", "dn0");
  const uint64_t s1_cut = rxBytes("fcv-s1", "dn0");
  EXPECT_EQ(waitForMarker(console0, "FC_ECMP_B_DONE", {"FC_ECMP_B_FAILED"}, 120), "FC_ECMP_B_DONE");
  const double s0_one = static_cast<double>(rxBytes("fcv-s0", "dn0") - s0_cut);
  const double s1_one = static_cast<double>(rxBytes("fcv-s1", "dn0") - s1_cut);
  std::cout << "[ ecmp ] 16 flows, l0-s0 down: s0 " << s0_one / 1e6 << " MB, s1 " << s1_one / 1e6
            << " MB\n";
  EXPECT_EQ(s0_one, 0) << "a downed port carries nothing";
  EXPECT_GT(s1_one, 10e6) << "the flows moved to s1";
  ASSERT_EQ(runShell("ip -n fcv-l0 link set up0 up").exit_code, 0);
  EXPECT_TRUE(waitForPaths(2, 20)) << "BGP puts the path back with the link";

  // The same cut through the product: serve runs its ring between the guests (their agents answer
  // on the forwarded ports) and link_flap takes l0's uplink to s0 down for 3 s. Seen from outside:
  // the port's admin state, BGP's paths in l0's table, and spine s1's port counters while s0 is
  // cut off: the ring's traffic crosses s1.
  {
    const std::string serve_dir = makeTempDir();
    std::filesystem::create_directory_symlink(dir_, serve_dir + "/state");
    ServeProcess serve({}, serve_dir);
    const int port = serve.waitForPort(30000);
    ASSERT_GT(port, 0) << serve.output();
    const nlohmann::json scenario = {
        {"version", 1},
        {"name", "vm-uplink-l0-s0-cut"},
        {"fabric", "vm-lab"},
        {"workload", {{"message_bytes", 65536}, {"compute_ms", 5}, {"peer_timeout_ms", 20000}}},
        {"baseline_ms", 3000},
        {"steps",
         {{{"kind", "link_flap"},
           {"target", {{"labels", {{"tier", "uplink"}, {"leaf", "l0"}, {"spine", "s0"}}}}},
           {"at_ms", 0},
           {"params", {{"down_ms", 3000}, {"up_ms", 500}, {"count", 1}}}}}},
        {"recovery_ms", 5000},
        {"gates", {{"require_survival", true}}}};
    LinkObserver up0("fcv-l0", "up0");
    const int64_t id = startRun(port, scenario);
    ASSERT_GT(id, 0) << serve.output();
    EXPECT_TRUE(waitForPaths(1, 120)) << "the fault never took l0's uplink to s0 out";
    const auto crossingS1 = [] { return rxBytes("fcv-s1", "dn0") + rxBytes("fcv-s1", "dn1"); };
    const uint64_t s1_cut = crossingS1();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const double s1_during = static_cast<double>(crossingS1() - s1_cut);
    const nlohmann::json run = waitForFinalRun(port, id, 240);
    std::vector<bool> states;
    for (const auto& change : up0.stop()) {
      if (states.empty() || states.back() != change.admin_up) states.push_back(change.admin_up);
    }
    EXPECT_EQ(states, (std::vector<bool>{true, false, true})) << "up, down, up again";
    ASSERT_EQ(run.value("state", ""), "passed") << run.dump(2) << "\n" << serve.output();
    const nlohmann::json& step = run["result"]["analysis"]["steps"][0];
    std::cout << "[ serve ] link_flap l0-s0 for 3 s: s1 carried " << s1_during / 1e6
              << " MB in 1.5 s of it; step " << step.dump() << "\n";
    EXPECT_GT(s1_during, 200e3) << "the ring's traffic did not cross s1 while s0 was cut";
    // The ring kept going through the cut and after it. Not "recovered" (5 consecutive
    // iterations back within the baseline's tolerance): under TCG, beside the other VM tests, the
    // ring's iterations are too noisy for that (CI saw a baseline p99 of 5x its p50 and no such
    // run within the 5 s window).
    EXPECT_TRUE(step["survived"].get<bool>()) << step.dump(2);
    EXPECT_TRUE(step["time_to_first_progress_ms"].is_number()) << step.dump(2);
    EXPECT_TRUE(adminUp("fcv-l0", "up0"));
    EXPECT_TRUE(waitForPaths(2, 20)) << "BGP puts the path back after the revert";
    const nlohmann::json faults = httpRequest(port, "GET", "/v1/faults").json();
    EXPECT_TRUE(faults.value("faults", nlohmann::json::array()).empty()) << faults.dump(2);
    EXPECT_EQ(serve.stop(20000), 0);
    std::filesystem::remove_all(serve_dir);  // the link, not the lab's directory behind it
  }

  // A VM gone makes the lab partial; up rebuilds it whole.
  runShell("kill -9 $(cat " + dir_ + "/vm/vm1.pid)");
  for (int i = 0; i < 50 && runningLabQemus() != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto status = lab("status");
  EXPECT_EQ(status.exit_code, 3) << status.out;
  EXPECT_NE(status.out.find("1 of 2 VMs running"), std::string::npos) << status.out;
  auto rebuilt = lab("up " + shape + " --no-agent");
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.out;
  EXPECT_NE(rebuilt.out.find("removing a partial or different VM lab first"), std::string::npos)
      << rebuilt.out;
  EXPECT_EQ(runningLabQemus(), 2);
  EXPECT_EQ(lab("status").exit_code, 0);
  EXPECT_NE(runShell("tc -n fcv-l1 class show dev p0").out.find("rate 100Mbit"), std::string::npos)
      << "the rebuilt lab's ports are modelled too";
  EXPECT_EQ(pathsFromLeaf0ToLeaf1(), 2u);

  // down: no BGP daemon, leaf, spine or tap outlives the lab.
  auto down = lab("down");
  EXPECT_EQ(down.exit_code, 0) << down.out;
  EXPECT_TRUE(namespacesWithPrefix("fcv-").empty());
  EXPECT_EQ(runShell("pgrep -fc 'bir[d] -c " + dir_ + "'").out, "0\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/lab/vm-lab"));
}

TEST_F(VmLabCommand, MissingKernelAndBadSizesAreOneClearSentence) {
  auto no_kernel = runShell(binary_ + " lab up --kind vm --no-agent --state-dir " + dir_ +
                            " --cache-dir " + dir_ + "/no-cache 2>&1");
  EXPECT_EQ(no_kernel.exit_code, 1);
  EXPECT_NE(no_kernel.out.find("no guest kernel in " + dir_ +
                               "/no-cache; run "
                               "deploy/vm/fetch-kernel.sh"),
            std::string::npos)
      << no_kernel.out;
  auto one_host = lab("up --hosts 1 --no-agent");
  EXPECT_EQ(one_host.exit_code, 1);
  EXPECT_NE(one_host.out.find("--hosts must be between 2 and 32"), std::string::npos)
      << one_host.out;
  auto bad_kind = runShell(binary_ + " lab up --kind kvm 2>&1");
  EXPECT_EQ(bad_kind.exit_code, 2);
  EXPECT_NE(bad_kind.out.find("--kind must be netns, vm or ib"), std::string::npos) << bad_kind.out;
  EXPECT_EQ(runningLabQemus(), 0);
}

}  // namespace
}  // namespace fabric_chaos::testing
