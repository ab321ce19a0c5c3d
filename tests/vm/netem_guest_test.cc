// The netem injector against a real sch_netem, measured rather than just configured. Meant to run
// as root INSIDE the VM lab's guest (deploy/vm/run-in-vm.sh; its kernel has sch_netem), where it
// builds two network namespaces joined by a veth pair and sends real traffic through the netem
// the injector attaches: ping RTT for delay, counted datagrams for loss / duplication / bursts /
// reordering, a TCP transfer for rate, and `tc qdisc show` before and after for revert. Without
// root or sch_netem it skips, except in the guest (FC_GUEST=1) or CI (CI=true), where it fails.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "injectors/netem/netem.h"
#include "injectors/sys/netns.h"
#include "injectors/sys/qdisc.h"

namespace fabric_chaos::injectors {
namespace {

using Clock = std::chrono::steady_clock;

struct Shell {
  int exit_code = -1;
  std::string out;
};

Shell sh(const std::string& command) {
  Shell result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

bool envIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

// "" when this process can run the tests.
std::string missingPrerequisite() {
  if (::geteuid() != 0) return "needs root (run it through deploy/vm/run-in-vm.sh)";
  core::Status netem = sys::makeNetlinkQdiscs()->probeKind("netem");
  if (!netem.isOk()) return "needs sch_netem: " + netem.toString();
  if (sh("ip -V").exit_code != 0 || sh("tc -V").exit_code != 0 || sh("ping -V").exit_code != 0) {
    return "needs ip, tc and ping (iproute2, iputils-ping)";
  }
  return "";
}

#define FC_REQUIRE_GUEST()                                                  \
  do {                                                                      \
    static const std::string missing = missingPrerequisite();               \
    if (!missing.empty()) {                                                 \
      if (envIs("FC_GUEST", "1") || envIs("CI", "true")) FAIL() << missing; \
      GTEST_SKIP() << missing;                                              \
    }                                                                       \
  } while (0)

void report(const std::string& what) {
  std::cout << "[ measured ] " << what << std::endl;
  ::testing::Test::RecordProperty("measured", what);
}

// One binomial count's acceptance band: mean +- 4 sigma (inflated for correlated processes).
struct Band {
  double low;
  double high;
};
Band band(double n, double p, double inflation = 1.0) {
  double mean = n * p;
  double sigma = std::sqrt(n * p * (1 - p) * inflation);
  return {mean - 4 * sigma, mean + 4 * sigma};
}

class NetemGuestTest : public ::testing::Test {
 protected:
  static constexpr const char* kAddrA = "10.77.0.1";
  static constexpr const char* kAddrB = "10.77.0.2";

  static void SetUpTestSuite() {
    if (!missingPrerequisite().empty()) return;
    const std::string pid = std::to_string(::getpid());
    ns_a_ = new std::string("fcnt-a-" + pid);
    ns_b_ = new std::string("fcnt-b-" + pid);
    // Three `ip -batch` runs: every exec costs a few hundred ms under TCG.
    const std::string a = *ns_a_, b = *ns_b_;
    auto batch = [](const std::string& options, const std::vector<std::string>& lines) {
      std::string command = "printf '%s\\n'";
      for (const std::string& line : lines) command += " '" + line + "'";
      return command + " | ip " + options + "-batch -";
    };
    const std::vector<std::string> steps = {
        batch("", {"netns add " + a, "netns add " + b,
                   "link add vA netns " + a + " type veth peer name vB netns " + b}),
        batch("-n " + a + " ", {std::string("addr add ") + kAddrA + "/24 dev vA", "link set lo up",
                                "link set vA up"}),
        batch("-n " + b + " ", {std::string("addr add ") + kAddrB + "/24 dev vB", "link set lo up",
                                "link set vB up"})};
    for (const std::string& step : steps) {
      Shell setup = sh(step);
      if (setup.exit_code != 0) {
        std::cerr << "namespace setup failed: " << step << ": " << setup.out << std::endl;
      }
    }
  }

  static void TearDownTestSuite() {
    if (ns_a_ == nullptr) return;
    sh("ip netns del " + *ns_a_ + "; ip netns del " + *ns_b_);
    delete ns_a_;
    delete ns_b_;
    ns_a_ = ns_b_ = nullptr;
  }

  void SetUp() override {
    FC_REQUIRE_GUEST();
    ASSERT_NE(ns_a_, nullptr);
    Shell link = sh("ip -n " + *ns_a_ + " -o addr show dev vA");
    ASSERT_NE(link.out.find(kAddrA), std::string::npos) << "the veth pair is missing: " << link.out;
    qdiscs_ = sys::makeNetlinkQdiscs();
    netem_ = std::make_unique<Netem>(qdiscs_.get(), true, "");
  }

  void TearDown() override {
    if (ns_a_ != nullptr) sh("tc -n " + *ns_a_ + " qdisc del dev vA root");
  }

  Fault fault(json params) const {
    return Fault{"netem", InterfaceTarget{*ns_a_, "vA"}, std::move(params)};
  }

  std::string tcShow(const std::string& netns, const std::string& dev,
                     const std::string& flags = "") const {
    std::string command = "tc ";
    if (!netns.empty()) command += "-n " + netns + " ";
    return sh(command + flags + "qdisc show dev " + dev).out;
  }

  struct Rtt {
    double min = 0, avg = 0, max = 0, mdev = 0;
    int received = 0;
  };
  // 20 pings 50 ms apart from A to B.
  Rtt ping(int count = 20) const {
    Shell out = sh("ip netns exec " + *ns_a_ + " ping -n -q -c " + std::to_string(count) +
                   " -i 0.05 -W 2 " + kAddrB);
    Rtt rtt;
    std::smatch m;
    static const std::regex kRtt(R"(= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms)");
    static const std::regex kReceived(R"(([0-9]+) received)");
    if (std::regex_search(out.out, m, kRtt)) {
      rtt.min = std::stod(m[1]);
      rtt.avg = std::stod(m[2]);
      rtt.max = std::stod(m[3]);
      rtt.mdev = std::stod(m[4]);
    }
    if (std::regex_search(out.out, m, kReceived)) rtt.received = std::stoi(m[1]);
    return rtt;
  }

  json observe() {
    auto observed = netem_->observe(fault(json::object()));
    EXPECT_TRUE(observed.isOk()) << observed.status().toString();
    return observed.isOk() ? *observed : json();
  }

  // A socket opened inside netns (it stays bound to that namespace).
  static int socketIn(const std::string& netns, int type) {
    int fd = -1;
    core::Status status = sys::runInNetns(netns, [&]() -> core::Status {
      fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
      return fd < 0 ? core::errnoStatus(errno, "socket") : core::Status::ok();
    });
    EXPECT_TRUE(status.isOk()) << status.toString();
    return fd;
  }

  static sockaddr_in addressOf(const char* ip, int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, ip, &addr.sin_addr);
    return addr;
  }

  static int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
  }

  // Numbered UDP datagrams from A to B, paced (20 every 10 ms) so that netem's queue and the
  // receiver never overflow: whatever is missing was dropped by netem.
  struct Datagrams {
    int sent = 0;
    std::vector<int> copies;                // per sequence number
    std::vector<int64_t> first_arrival_ns;  // one-way delay of the first copy, -1 when lost
    std::vector<int> arrival_order;         // sequence numbers as they arrived
  };
  struct Payload {
    uint32_t magic;
    uint32_t seq;
    int64_t sent_ns;
    char pad[48];
  };

  Datagrams blast(int n, int settle_ms) {
    static int port = 40000;
    ++port;
    Datagrams result;
    result.copies.assign(n, 0);
    result.first_arrival_ns.assign(n, -1);
    int rx = socketIn(*ns_b_, SOCK_DGRAM);
    int tx = socketIn(*ns_a_, SOCK_DGRAM);
    if (rx < 0 || tx < 0) return result;
    int big = 16 << 20;
    ::setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
    sockaddr_in to = addressOf(kAddrB, port);
    EXPECT_EQ(::bind(rx, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0) << strerror(errno);
    EXPECT_EQ(::connect(tx, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0) << strerror(errno);
    std::atomic<bool> stop{false};
    std::thread receiver([&] {
      Payload p{};
      while (true) {
        pollfd pfd{rx, POLLIN, 0};
        int ready = ::poll(&pfd, 1, 50);
        if (ready <= 0) {
          if (stop.load()) break;
          continue;
        }
        ssize_t got = ::recv(rx, &p, sizeof(p), 0);
        if (got != static_cast<ssize_t>(sizeof(p)) || p.magic != 0xfc0fc0u ||
            p.seq >= result.copies.size()) {
          continue;
        }
        if (result.copies[p.seq]++ == 0) result.first_arrival_ns[p.seq] = nowNs() - p.sent_ns;
        result.arrival_order.push_back(static_cast<int>(p.seq));
      }
    });
    for (int i = 0; i < n; ++i) {
      Payload p{};
      p.magic = 0xfc0fc0u;
      p.seq = static_cast<uint32_t>(i);
      p.sent_ns = nowNs();
      if (::send(tx, &p, sizeof(p), 0) == static_cast<ssize_t>(sizeof(p))) ++result.sent;
      if (i % 20 == 19) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    stop = true;
    receiver.join();
    ::close(tx);
    ::close(rx);
    return result;
  }

  static std::string* ns_a_;
  static std::string* ns_b_;
  std::unique_ptr<sys::Qdiscs> qdiscs_;
  std::unique_ptr<Netem> netem_;
};

std::string* NetemGuestTest::ns_a_ = nullptr;
std::string* NetemGuestTest::ns_b_ = nullptr;

TEST_F(NetemGuestTest, DelayShowsInPingRtt) {
  Rtt base = ping();
  ASSERT_EQ(base.received, 20);
  Fault f = fault({{"delay_ms", 50}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(netem_->apply(f).isOk());
  Rtt delayed = ping();
  ASSERT_EQ(delayed.received, 20);
  const double added = delayed.avg - base.avg;
  report("delay 50 ms: baseline RTT avg " + std::to_string(base.avg) + " ms, with netem avg " +
         std::to_string(delayed.avg) + " ms (min " + std::to_string(delayed.min) + "), added " +
         std::to_string(added) + " ms");
  EXPECT_NEAR(added, 50.0, 5.0) << "within 10%";
  json observed = observe();
  EXPECT_EQ(observed["kind"], "netem");
  EXPECT_GE(observed["packets"].get<uint64_t>(), 20u) << observed.dump();
  EXPECT_EQ(observed["options"]["delay_ms"], 50.0);

  // Jitter shaped by iproute2's normal table, changed in place on the same qdisc.
  const std::string handle = observed["handle"];
  Fault jittered = fault({{"delay_ms", 50}, {"jitter_ms", 10}, {"distribution", "normal"}});
  core::Status jitter_applied = netem_->apply(jittered);
  ASSERT_TRUE(jitter_applied.isOk()) << jitter_applied.toString();
  EXPECT_EQ(observe()["handle"], handle) << "a change keeps the qdisc";
  Rtt spread = ping(40);
  report("delay 50 ms jitter 10 ms normal: RTT avg " + std::to_string(spread.avg) + " ms, mdev " +
         std::to_string(spread.mdev) + " ms, min " + std::to_string(spread.min) + ", max " +
         std::to_string(spread.max));
  EXPECT_NEAR(spread.avg - base.avg, 50.0, 10.0);
  EXPECT_GT(spread.mdev, 3.0) << "jitter shows as RTT spread";
  // Back to uniform jitter: the normal table must not linger, so a fresh netem replaces it.
  ASSERT_TRUE(netem_->apply(fault({{"delay_ms", 50}, {"jitter_ms", 10}})).isOk());
  EXPECT_NE(observe()["handle"], handle);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
  Rtt after = ping();
  report("after revert: RTT avg " + std::to_string(after.avg) + " ms");
  EXPECT_LT(after.avg, base.avg + 5.0);
}

TEST_F(NetemGuestTest, LossShowsInCountedDrops) {
  Fault f = fault({{"loss_percent", 10}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_->apply(f).isOk());
  const int n = 2000;
  Datagrams d = blast(n, 300);
  ASSERT_EQ(d.sent, n);
  int lost = static_cast<int>(std::count(d.copies.begin(), d.copies.end(), 0));
  json observed = observe();
  const uint64_t drops = observed["drops"];
  Band b = band(n, 0.10);
  report("loss 10%: " + std::to_string(lost) + " of " + std::to_string(n) +
         " datagrams missing, netem drops " + std::to_string(drops) + ", band [" +
         std::to_string(b.low) + ", " + std::to_string(b.high) + "]");
  EXPECT_GE(lost, b.low);
  EXPECT_LE(lost, b.high);
  EXPECT_NEAR(static_cast<double>(drops), lost, 2) << "every missing datagram is a netem drop";
  EXPECT_EQ(observed["options"]["loss_percent"], 10.0);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
}

TEST_F(NetemGuestTest, GilbertElliottLossComesInBursts) {
  // Simple Gilbert: p = 5% good->bad, r = 50% bad->good, everything lost while bad. Loss rate
  // p/(p+r) = 9.1%, mean burst 1/r = 2 packets (independent 9% loss would give 1.1).
  Fault f =
      fault({{"loss_model", {{"gilbert_elliott", {{"p", 5}, {"r", 50}, {"h", 0}, {"k", 100}}}}}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_->apply(f).isOk());
  const int n = 4000;
  Datagrams d = blast(n, 300);
  ASSERT_EQ(d.sent, n);
  int lost = 0, bursts = 0;
  for (int i = 0; i < n; ++i) {
    if (d.copies[i] != 0) continue;
    ++lost;
    if (i == 0 || d.copies[i - 1] != 0) ++bursts;
  }
  const double pi_bad = 5.0 / 55.0;
  const double rho = 1.0 - 0.05 - 0.50;  // lag-1 autocorrelation of the two-state chain
  Band b = band(n, pi_bad, (1 + rho) / (1 - rho));
  const double mean_burst = bursts == 0 ? 0 : static_cast<double>(lost) / bursts;
  report("Gilbert-Elliott p 5% r 50%: " + std::to_string(lost) + " of " + std::to_string(n) +
         " lost in " + std::to_string(bursts) + " bursts (mean burst " +
         std::to_string(mean_burst) + ", expected 2.0), band [" + std::to_string(b.low) + ", " +
         std::to_string(b.high) + "]");
  EXPECT_GE(lost, b.low);
  EXPECT_LE(lost, b.high);
  EXPECT_GE(mean_burst, 1.5);
  EXPECT_EQ(observe()["options"]["loss_model"]["gilbert_elliott"]["r"], 50.0);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
}

TEST_F(NetemGuestTest, DelayLossDuplicateCombinedInOneQdisc) {
  Fault f = fault(
      {{"delay_ms", 20}, {"loss_percent", 20}, {"duplicate_percent", 20}, {"corrupt_percent", 5}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_->apply(f).isOk());
  const std::string shown = tcShow(*ns_a_, "vA");
  EXPECT_NE(shown.find("delay 20ms"), std::string::npos) << shown;
  EXPECT_NE(shown.find("loss 20%"), std::string::npos) << shown;
  EXPECT_NE(shown.find("duplicate 20%"), std::string::npos) << shown;
  EXPECT_NE(shown.find("corrupt 5%"), std::string::npos) << shown;
  ASSERT_TRUE(
      netem_->apply(fault({{"delay_ms", 20}, {"loss_percent", 20}, {"duplicate_percent", 20}}))
          .isOk());
  EXPECT_EQ(tcShow(*ns_a_, "vA").find("corrupt"), std::string::npos) << "a change clears it";

  const int n = 2000;
  Datagrams d = blast(n, 400);
  ASSERT_EQ(d.sent, n);
  // A duplicate is re-enqueued at the root, so the copy meets the loss test again:
  // P(none) = (1 - d) l = 0.16, P(two) = d (1 - l)^2 = 0.128.
  int missing = 0, doubled = 0;
  std::vector<int64_t> delays;
  for (int i = 0; i < n; ++i) {
    if (d.copies[i] == 0) ++missing;
    if (d.copies[i] >= 2) ++doubled;
    if (d.first_arrival_ns[i] >= 0) delays.push_back(d.first_arrival_ns[i]);
  }
  std::sort(delays.begin(), delays.end());
  const double median_ms = delays.empty() ? 0 : delays[delays.size() / 2] / 1e6;
  Band miss_band = band(n, 0.16);
  Band dup_band = band(n, 0.128);
  report("delay 20 ms + loss 20% + duplicate 20%: median one-way delay " +
         std::to_string(median_ms) + " ms, " + std::to_string(missing) + " missing (band [" +
         std::to_string(miss_band.low) + ", " + std::to_string(miss_band.high) + "]), " +
         std::to_string(doubled) + " duplicated (band [" + std::to_string(dup_band.low) + ", " +
         std::to_string(dup_band.high) + "])");
  EXPECT_GE(median_ms, 19.0);
  EXPECT_LE(median_ms, 25.0);
  EXPECT_GE(missing, miss_band.low);
  EXPECT_LE(missing, miss_band.high);
  EXPECT_GE(doubled, dup_band.low);
  EXPECT_LE(doubled, dup_band.high);
  json options = observe()["options"];
  EXPECT_EQ(options["delay_ms"], 20.0);
  EXPECT_EQ(options["loss_percent"], 20.0);
  EXPECT_EQ(options["duplicate_percent"], 20.0);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
}

TEST_F(NetemGuestTest, ReorderWithGap) {
  Fault f = fault({{"delay_ms", 10}, {"reorder_percent", 25}, {"reorder_gap", 5}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_->apply(f).isOk());
  Datagrams d = blast(1000, 200);
  int inversions = 0, highest = -1;
  for (int seq : d.arrival_order) {
    if (seq < highest) ++inversions;
    highest = std::max(highest, seq);
  }
  json observed = observe();
  report("reorder 25% gap 5 (delay 10 ms): " + std::to_string(inversions) +
         " datagrams arrived after a later one; netem requeues " + observed["requeues"].dump());
  EXPECT_GT(inversions, 0);
  EXPECT_GT(observed["requeues"].get<uint64_t>(), 0u) << "netem counts reordered packets";
  EXPECT_EQ(observed["options"]["reorder_gap"], 5);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
}

TEST_F(NetemGuestTest, RateShowsInThroughput) {
  Fault f = fault({{"rate_kbit", 8000}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_->apply(f).isOk());

  int server = socketIn(*ns_b_, SOCK_STREAM);
  int client = socketIn(*ns_a_, SOCK_STREAM);
  ASSERT_GE(server, 0);
  ASSERT_GE(client, 0);
  int one = 1;
  ::setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = addressOf(kAddrB, 45001);
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  ASSERT_EQ(::listen(server, 1), 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << strerror(errno);
  int conn = ::accept(server, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    std::vector<char> chunk(64 * 1024, 'x');
    while (!stop.load()) {
      if (::send(client, chunk.data(), chunk.size(), MSG_NOSIGNAL) <= 0) break;
    }
  });
  // Measure 2.5 s of the steady state, after the first 256 KB and 0.3 s of ramp-up.
  std::vector<char> buffer(256 * 1024);
  uint64_t total = 0, window_start_bytes = 0;
  Clock::time_point window_start{}, window_end{};
  Clock::time_point ramp_done{};
  bool measuring = false;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    ssize_t got = ::recv(conn, buffer.data(), buffer.size(), 0);
    if (got <= 0) break;
    total += static_cast<uint64_t>(got);
    auto now = Clock::now();
    if (ramp_done == Clock::time_point{} && total >= 256 * 1024) ramp_done = now;
    if (!measuring && ramp_done != Clock::time_point{} &&
        now - ramp_done >= std::chrono::milliseconds(300)) {
      measuring = true;
      window_start = now;
      window_start_bytes = total;
    }
    if (measuring && now - window_start >= std::chrono::milliseconds(2500)) {
      window_end = now;
      break;
    }
  }
  stop = true;
  ::shutdown(client, SHUT_RDWR);
  ::shutdown(conn, SHUT_RDWR);
  sender.join();
  ::close(client);
  ::close(conn);
  ::close(server);
  ASSERT_NE(window_end, Clock::time_point{}) << "the transfer stalled after " << total << " bytes";
  const double seconds = std::chrono::duration<double>(window_end - window_start).count();
  const double mbit = static_cast<double>(total - window_start_bytes) * 8 / seconds / 1e6;
  report("rate 8 mbit: TCP goodput " + std::to_string(mbit) + " Mbit/s over " +
         std::to_string(seconds) + " s (wire rate incl. headers is 8; goodput ~7.65)");
  EXPECT_GE(mbit, 6.0);
  EXPECT_LE(mbit, 10.0);
  EXPECT_EQ(observe()["options"]["rate_kbit"], 8000.0);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
}

TEST_F(NetemGuestTest, RevertLeavesTheDefaultQdiscExactlyAsItWas) {
  const std::string before = tcShow(*ns_a_, "vA");
  const std::string before_detail = tcShow(*ns_a_, "vA", "-d ");
  Fault f = fault({{"delay_ms", 5}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ((*prior)["default"], true) << prior->dump();
  ASSERT_TRUE(netem_->apply(f).isOk());
  ASSERT_TRUE(netem_->apply(fault({{"loss_percent", 1}})).isOk());
  EXPECT_NE(tcShow(*ns_a_, "vA"), before);
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
  report("default qdisc before/after revert: " + before);
  EXPECT_EQ(tcShow(*ns_a_, "vA"), before);
  EXPECT_EQ(tcShow(*ns_a_, "vA", "-d "), before_detail);

  // The guest's eth0 has a real default qdisc (fq_codel with handle 0), not noqueue.
  if (sh("ip link show eth0").exit_code != 0) GTEST_SKIP() << "no eth0 in this guest";
  const std::string eth_before = tcShow("", "eth0");
  Fault eth{"netem", InterfaceTarget{"", "eth0"}, {{"delay_ms", 1}}};
  auto eth_prior = netem_->capture(eth);
  ASSERT_TRUE(eth_prior.isOk());
  ASSERT_TRUE(netem_->apply(eth).isOk());
  ASSERT_TRUE(netem_->revert(eth, *eth_prior).isOk());
  report("eth0 default qdisc before/after revert: " + eth_before);
  EXPECT_EQ(tcShow("", "eth0"), eth_before);
}

TEST_F(NetemGuestTest, RevertRestoresTheUsersTbfWithIdenticalOptions) {
  Shell added =
      sh("tc -n " + *ns_a_ + " qdisc add dev vA root tbf rate 100mbit burst 32kb latency 50ms");
  ASSERT_EQ(added.exit_code, 0) << added.out;
  const std::string before = tcShow(*ns_a_, "vA");
  const std::string before_detail = tcShow(*ns_a_, "vA", "-d ");
  Fault f = fault({{"delay_ms", 10}, {"loss_percent", 5}});
  auto prior = netem_->capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["kind"], "tbf");
  ASSERT_TRUE(netem_->apply(f).isOk());
  EXPECT_NE(tcShow(*ns_a_, "vA").find("netem"), std::string::npos);
  ASSERT_TRUE(netem_->apply(fault({{"delay_ms", 30}})).isOk());
  ASSERT_TRUE(netem_->revert(f, *prior).isOk());
  ASSERT_TRUE(netem_->revert(f, *prior).isOk()) << "idempotent";
  report("user's tbf before/after revert: " + before);
  EXPECT_EQ(tcShow(*ns_a_, "vA"), before);
  EXPECT_EQ(tcShow(*ns_a_, "vA", "-d "), before_detail);
  // It still shapes: ping works through it.
  EXPECT_EQ(ping(5).received, 5);
}

TEST_F(NetemGuestTest, RefusesAnHtbTreeItCouldNotRebuild) {
  ASSERT_EQ(sh("tc -n " + *ns_a_ + " qdisc add dev vA root handle 1: htb default 10 && tc -n " +
               *ns_a_ + " class add dev vA parent 1: classid 1:10 htb rate 10mbit")
                .exit_code,
            0);
  const std::string before = tcShow(*ns_a_, "vA");
  Fault f = fault({{"delay_ms", 10}});
  auto prior = netem_->capture(f);
  EXPECT_EQ(prior.status().code(), core::StatusCode::kFailedPrecondition)
      << prior.status().toString();
  EXPECT_EQ(netem_->apply(f).code(), core::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tcShow(*ns_a_, "vA"), before);
}

TEST_F(NetemGuestTest, MissingDeviceRevertsCleanly) {
  Fault gone{"netem", InterfaceTarget{*ns_a_, "nosuch0"}, {{"delay_ms", 1}}};
  EXPECT_EQ(netem_->capture(gone).status().code(), core::StatusCode::kNotFound);
  EXPECT_TRUE(netem_->revert(gone, json{{"default", true}}).isOk());
}

}  // namespace
}  // namespace fabric_chaos::injectors
