// The verbs ring over Soft-RoCE, run INSIDE one VM as root (tests/vm/CMakeLists.txt boots it with
// deploy/vm/run-in-vm.sh): three ranks on the guest's own address with distinct rdma_cm ports,
// looped back through one rxe device. Checks the allreduce numerically, the report stream of
// whole ranks (threads and `fabric-chaos workload` processes), and recovery when one rank's QPs
// die: the neighbours see a completion error, report it with its wc_status, and the ring re-forms.
// Prints the bus bandwidth it measured.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "tests/workload/test_support.h"
#include "workload/rank.h"
#include "workload/report.h"
#include "workload/ring.h"
#include "workload/sys/verbs_ring.h"

extern char** environ;

namespace fabric_chaos::workload {
namespace {

using namespace std::chrono_literals;
using testing::decodeAll;
using testing::eventsOf;
using testing::LineSink;
using testing::RankRun;
using testing::RankThreads;
using testing::samplesAfter;
using testing::samplesOf;
using testing::waitFor;
using Type = ReportLine::Type;

constexpr auto kWaitLimit = 90s;  // TCG is slow; a missed condition is a failure, not a skip

std::vector<std::string> rdmaDevices() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

// The first IPv4 address of an up, non-loopback interface, and that interface.
bool guestAddress(std::string* addr, std::string* ifname) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                sizeof(text));
    *addr = text;
    *ifname = i->ifa_name;
    found = true;
  }
  ::freeifaddrs(list);
  return found;
}

// The guest's address, with an RDMA device on its NIC; `problem` says what is missing instead.
struct Guest {
  std::string addr;
  std::string problem;
};

// Found (and rxe0 created if the boot did not) once, on first use.
const Guest& guest() {
  static const Guest g = [] {
    Guest out;
    std::string ifname;
    if (!guestAddress(&out.addr, &ifname)) {
      out.problem = "no up, non-loopback interface with an IPv4 address";
      return out;
    }
    if (rdmaDevices().empty() && std::getenv("FC_GUEST") == nullptr) {
      out.problem = "no RDMA device on this host (not inside a VM lab guest: FC_GUEST is unset)";
      return out;
    }
    if (rdmaDevices().empty()) {
      // run-in-vm.sh creates rxe0 unless --no-rxe; create it if the boot did not. Only ever in
      // a guest: the host's devices are not ours to change.
      const std::string cmd =
          "modprobe -a crc32_generic rdma_rxe >/dev/null 2>&1; rdma link add rxe0 type rxe "
          "netdev " +
          ifname;
      std::printf("creating Soft-RoCE: %s\n", cmd.c_str());
      if (std::system(cmd.c_str()) != 0 || rdmaDevices().empty()) {
        out.problem = "no RDMA device, and `" + cmd + "` failed (needs root and rdma_rxe)";
        return out;
      }
    }
    std::string devices;
    for (const auto& d : rdmaDevices()) devices += d + " ";
    std::printf("guest address %s on %s; RDMA devices: %s\n", out.addr.c_str(), ifname.c_str(),
                devices.c_str());
    return out;
  }();
  return g;
}

// Fails in CI and inside the VM (where the device must exist); skips elsewhere, saying why.
#define REQUIRE_RXE()                                                             \
  do {                                                                            \
    if (!guest().problem.empty()) {                                               \
      if (std::getenv("CI") != nullptr || std::getenv("FC_GUEST") != nullptr) {   \
        FAIL() << guest().problem;                                                \
      }                                                                           \
      GTEST_SKIP() << guest().problem << " (run it with deploy/vm/run-in-vm.sh)"; \
    }                                                                             \
  } while (0)

struct Bandwidth {
  double median_ms = 0;
  double algbw_mbps = 0;  // MB/s = 1e6 bytes per second
  double busbw_mbps = 0;
};

// nccl-tests' definition for allreduce: busbw = algbw * 2 (n - 1) / n.
Bandwidth bandwidth(std::vector<double> ms, int64_t bytes, int world) {
  Bandwidth b;
  if (ms.empty()) return b;
  std::sort(ms.begin(), ms.end());
  b.median_ms = ms[ms.size() / 2];
  b.algbw_mbps = static_cast<double>(bytes) / (b.median_ms / 1e3) / 1e6;
  b.busbw_mbps = b.algbw_mbps * 2.0 * (world - 1) / world;
  return b;
}

// --- The ring itself: numeric results ------------------------------------------------------------

struct RingResult {
  std::string error;
  std::vector<double> ms;
  int64_t checked = 0;
};

// Three VerbsRings in threads, each running `iterations` allreduces of `count` floats and checking
// every element of every result.
void runVerbsAllreduce(int base_port, size_t count, size_t slot_bytes, uint32_t slots,
                       int iterations, std::vector<RingResult>* results) {
  constexpr int kWorld = 3;
  results->assign(kWorld, RingResult{});
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  // Small integers keep every partial sum exact whatever the order of the additions.
  auto value = [](int rank, size_t i, int iteration) {
    return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 13 + iteration) % 61);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      RingResult& result = (*results)[r];
      VerbsRingOptions o;
      o.rank = r;
      o.world = kWorld;
      o.listen_addr = guest().addr;
      o.listen_port = base_port + r;
      o.next_addr = guest().addr;
      o.next_port = base_port + (r + 1) % kWorld;
      o.peer_timeout_ms = 20000;
      o.slot_bytes = slot_bytes;
      o.slots = slots;
      o.stop = &stop;
      auto ring = VerbsRing::listen(o);
      if (!ring.isOk()) {
        result.error = ring.status().toString();
        stop = true;
        return;
      }
      auto formed = ring.value()->form(1, core::steadyNowNs() + 60'000'000'000);
      if (!formed.isOk()) {
        result.error = "form: " + formed.status().toString();
        stop = true;
        return;
      }
      RingAllreduce allreduce(r, kWorld, count);
      std::vector<float> in(count);
      std::vector<float> out(count);
      for (int it = 0; it < iterations && result.error.empty(); ++it) {
        for (size_t i = 0; i < count; ++i) in[i] = value(r, i, it);
        const int64_t t0 = core::steadyNowNs();
        core::Status s = allreduce.run(in.data(), out.data(), ring.value().get());
        const int64_t t1 = core::steadyNowNs();
        if (!s.isOk()) {
          result.error = "iteration " + std::to_string(it) + ": " + s.toString() + " (" +
                         ring.value()->lastFailure().reason + " " +
                         ring.value()->lastFailure().wc_status + ")";
          stop = true;
          break;
        }
        result.ms.push_back(static_cast<double>(t1 - t0) / 1e6);
        for (size_t i = 0; i < count; ++i) {
          const float want = value(0, i, it) + value(1, i, it) + value(2, i, it);
          if (out[i] != want) {
            result.error = "iteration " + std::to_string(it) + " element " + std::to_string(i) +
                           ": got " + std::to_string(out[i]) + ", want " + std::to_string(want);
            stop = true;
            break;
          }
          ++result.checked;
        }
      }
      // Nobody disconnects before every rank is done: a rank whose next rank has left fails its
      // step, over verbs as over TCP.
      ++finished;
      waitFor([&] { return finished.load() == kWorld || stop.load(); }, kWaitLimit);
      ring.value()->disconnect();
    });
  }
  for (auto& t : threads) t.join();
}

TEST(VerbsGuestTest, RingAllreduceSumsAreExact) {
  REQUIRE_RXE();
  // 65537 floats: chunks of 21846, 21846 and 21845 elements, one SEND per ring step.
  constexpr size_t kCount = 65537;
  const size_t slot = ringChunk(kCount, 3, 0).count * sizeof(float);
  std::vector<RingResult> results;
  runVerbsAllreduce(18600, kCount, slot, 4, 20, &results);
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(results[r].error, "");
    EXPECT_EQ(results[r].checked, static_cast<int64_t>(kCount) * 20);
    auto bw = bandwidth(results[r].ms, kCount * sizeof(float), 3);
    std::printf(
        "verbs ring rank %d: %zu x %zu bytes, median %.2f ms, algbw %.2f MB/s, busbw %.2f "
        "MB/s\n",
        r, results[r].ms.size(), kCount * sizeof(float), bw.median_ms, bw.algbw_mbps,
        bw.busbw_mbps);
    EXPECT_GT(bw.busbw_mbps, 0.0);
  }
}

TEST(VerbsGuestTest, ChunksLargerThanASlotAreSegmentedUnderTightCredits) {
  REQUIRE_RXE();
  // 4 KiB slots and a window of 2: every step is ~7 SENDs paced by credits.
  constexpr size_t kCount = 20000;
  std::vector<RingResult> results;
  runVerbsAllreduce(18610, kCount, 4096, 2, 10, &results);
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(results[r].error, "");
    EXPECT_EQ(results[r].checked, static_cast<int64_t>(kCount) * 10);
  }
}

TEST(VerbsGuestTest, DataSentBeforeADisconnectIsDeliveredThenEof) {
  REQUIRE_RXE();
  // Rank 0 sends one chunk and leaves at once; rank 1 only asks for it later. As with TCP (data,
  // then EOF), rank 1 gets every byte and only its next step fails.
  constexpr size_t kBytes = 200 * 1024;
  std::vector<uint8_t> payload(kBytes);
  for (size_t i = 0; i < kBytes; ++i) payload[i] = static_cast<uint8_t>(i * 31 + 7);
  std::atomic<bool> stop{false};
  std::string error0;
  std::string error1;
  std::vector<uint8_t> got(kBytes);
  std::string second_reason;
  std::string second_message;
  std::atomic<bool> formed0{false};
  std::atomic<bool> formed1{false};
  auto options = [&](int r) {
    VerbsRingOptions o;
    o.rank = r;
    o.world = 2;
    o.listen_addr = guest().addr;
    o.listen_port = 18670 + r;
    o.next_addr = guest().addr;
    o.next_port = 18670 + (r + 1) % 2;
    o.slot_bytes = 64 * 1024;
    o.slots = 4;
    o.stop = &stop;
    return o;
  };
  std::thread t0([&] {
    auto ring = VerbsRing::listen(options(0));
    if (!ring.isOk()) {
      error0 = ring.status().toString();
      return;
    }
    auto formed = ring.value()->form(1, core::steadyNowNs() + 60'000'000'000);
    if (!formed.isOk()) {
      error0 = formed.status().toString();
      return;
    }
    formed0 = true;
    waitFor([&] { return formed1.load(); }, kWaitLimit);
    core::Status s = ring.value()->sendRecv(payload.data(), kBytes, nullptr, 0);
    if (!s.isOk()) error0 = s.toString();
    ring.value()->disconnect();  // right away: the SENDs may still be in flight
  });
  std::thread t1([&] {
    auto ring = VerbsRing::listen(options(1));
    if (!ring.isOk()) {
      error1 = ring.status().toString();
      return;
    }
    auto formed = ring.value()->form(1, core::steadyNowNs() + 60'000'000'000);
    if (!formed.isOk()) {
      error1 = formed.status().toString();
      return;
    }
    formed1 = true;
    waitFor([&] { return formed0.load(); }, kWaitLimit);
    std::this_thread::sleep_for(500ms);  // rank 0 has long disconnected
    core::Status s = ring.value()->sendRecv(nullptr, 0, got.data(), kBytes);
    if (!s.isOk()) error1 = s.toString();
    uint8_t more = 0;
    core::Status next = ring.value()->sendRecv(nullptr, 0, &more, 1);
    second_reason = ring.value()->lastFailure().reason;
    second_message = next.toString();
  });
  t0.join();
  t1.join();
  EXPECT_EQ(error0, "");
  EXPECT_EQ(error1, "");
  EXPECT_TRUE(got == payload) << "the chunk sent before the disconnect was not delivered intact";
  EXPECT_EQ(second_reason, "eof") << second_message;
  std::printf("after the data: %s\n", second_message.c_str());
}

// --- Whole ranks in threads ----------------------------------------------------------------------

class Ring : public RankThreads {
 public:
  Ring(int world, int base_port, int64_t bytes) {
    for (int r = 0; r < world; ++r) {
      auto run = std::make_unique<RankRun>();
      run->options.transport = "verbs";
      run->options.rank = r;
      run->options.world = world;
      run->options.listen_addr = guest().addr;
      run->options.listen_port = base_port + r;
      run->options.next_addr = guest().addr;
      run->options.next_port = base_port + (r + 1) % world;
      run->options.message_bytes = bytes;
      run->options.compute_ms = 1;
      run->options.peer_timeout_ms = 10000;
      run->options.reconnect_budget_ms = 60000;
      run->options.max_duration_ms = 300000;
      run->options.flush_interval_ms = 50;
      run->out = std::make_unique<std::ostream>(&run->sink);
      runs_.push_back(std::move(run));
    }
  }
};

// The invariants of every finished report stream (as for TCP, tests/workload/tcp_rank_test.cc).
void checkStream(const RankRun& run, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  auto lines = run.report();
  ASSERT_GE(lines.size(), 2u) << run.sink.text();
  EXPECT_EQ(lines.front().type, Type::kReady) << run.sink.text();
  EXPECT_EQ(lines.back().type, Type::kDone) << run.sink.text();
  EXPECT_TRUE(eventsOf(lines, "undecodable").empty()) << run.sink.text();
  auto samples = samplesOf(lines);
  ASSERT_FALSE(samples.empty());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].iteration, static_cast<int64_t>(i));
    EXPECT_GT(samples[i].duration_ns, 0);
    EXPECT_EQ(samples[i].bytes, run.options.message_bytes);
    if (i > 0) {
      EXPECT_GE(samples[i].start_ns, samples[i - 1].start_ns + samples[i - 1].duration_ns);
    }
  }
  EXPECT_EQ(lines.back().iterations, static_cast<int64_t>(samples.size()));
  EXPECT_TRUE(eventsOf(lines, kEventRankError).empty()) << run.sink.text();
  EXPECT_EQ(run.exit_code.load(), 0);
}

Bandwidth rankBandwidth(const RankRun& run) {
  std::vector<double> ms;
  for (const auto& s : samplesOf(run.report())) ms.push_back(s.duration_ns / 1e6);
  return bandwidth(ms, run.options.message_bytes, run.options.world);
}

TEST(VerbsGuestTest, HealthyRanksReportSamplesWithPositiveBusBandwidth) {
  REQUIRE_RXE();
  Ring ring(3, 18620, 256 * 1024);
  ring.start();
  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          if (samplesOf(ring.rank(r).report()).size() < 40) return false;
        }
        return true;
      },
      kWaitLimit))
      << ring.rank(0).sink.text();
  ring.stopAll();
  for (int r = 0; r < 3; ++r) {
    checkStream(ring.rank(r), r);
    EXPECT_TRUE(eventsOf(ring.rank(r).report(), kEventPeerLost).empty())
        << ring.rank(r).sink.text();
    auto bw = rankBandwidth(ring.rank(r));
    std::printf(
        "verbs rank %d (runRank, 256 KiB, 3 ranks over one rxe): %zu samples, median "
        "%.2f ms, algbw %.2f MB/s, busbw %.2f MB/s\n",
        r, samplesOf(ring.rank(r).report()).size(), bw.median_ms, bw.algbw_mbps, bw.busbw_mbps);
    EXPECT_GT(bw.busbw_mbps, 0.0);
  }
}

TEST(VerbsGuestTest, DeadQpsSurfaceAsCompletionErrorsAndTheRingReforms) {
  REQUIRE_RXE();
  Ring ring(3, 18630, 64 * 1024);
  for (int r = 0; r < 3; ++r) {
    // ACK timeout 2^15 * 4.096 us = 134 ms, 7 tries: a dead QP fails a send in ~0.94 s.
    ring.rank(r).options.peer_timeout_ms = 2000;
    ring.rank(r).options.reconnect_budget_ms = 60000;
  }
  ring.start();
  ASSERT_TRUE(waitFor([&] { return samplesOf(ring.rank(1).report()).size() >= 10; }, kWaitLimit))
      << ring.rank(1).sink.text();
  const int64_t t_abort = core::steadyNowNs();
  ring.rank(1).abort_flag = true;  // rank 1's QPs stop answering, as if its host died

  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          auto lines = ring.rank(r).report();
          auto lost = eventsOf(lines, kEventPeerLost);
          if (lost.empty() || eventsOf(lines, kEventReconnected).empty()) return false;
          if (samplesAfter(lines, lost.back().detail["iteration"].get<int64_t>()) < 5) {
            return false;
          }
        }
        return true;
      },
      kWaitLimit))
      << ring.rank(0).sink.text() << ring.rank(1).sink.text() << ring.rank(2).sink.text();
  ring.stopAll();

  std::set<std::string> neighbour_wc;
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    checkStream(ring.rank(r), r);
    auto lines = ring.rank(r).report();
    auto lost = eventsOf(lines, kEventPeerLost);
    auto back = eventsOf(lines, kEventReconnected);
    ASSERT_FALSE(lost.empty());
    ASSERT_EQ(back.size(), lost.size());
    ASSERT_EQ(eventsOf(lines, kEventStall).size(), lost.size());
    for (const auto& e : lost) {
      std::printf("rank %d peer_lost %.0f ms after the abort: %s\n", r, (e.t_ns - t_abort) / 1e6,
                  e.detail.dump().c_str());
    }
    std::printf("rank %d reconnected: %s\n", r, back.front().detail.dump().c_str());
    EXPECT_GE(back.front().detail["epoch"].get<int64_t>(), 2);
    if (r == 1) {
      EXPECT_EQ(lost.front().detail["reason"], "aborted");
    } else {
      // The neighbours learn it from the transport: a failed completion, with its status.
      ASSERT_TRUE(lost.front().detail.contains("wc_status")) << lost.front().detail.dump();
      neighbour_wc.insert(lost.front().detail["wc_status"].get<std::string>());
      const std::string reason = lost.front().detail["reason"];
      EXPECT_TRUE(reason == "timeout" || reason == "eof") << reason;
    }
  }
  // Rank 0 sends to the dead QPs: its SENDs go unanswered until the retries run out.
  EXPECT_EQ(neighbour_wc.count("transport retry counter exceeded"), 1u)
      << "neighbour wc statuses: " << ::testing::PrintToString(neighbour_wc);
}

TEST(VerbsGuestTest, SlowPeerWithinTheTimeoutIsASlowSampleNotALoss) {
  REQUIRE_RXE();
  Ring ring(3, 18680, 64 * 1024);
  for (int r = 0; r < 3; ++r) ring.rank(r).options.peer_timeout_ms = 5000;
  // Rank 2 stalls 1.5 s before iteration 5: its neighbours wait, probing it every ACK timeout
  // (268 ms); its NIC answers, so nobody is lost.
  ring.rank(2).hooks.before_iteration = [](int64_t iteration) {
    if (iteration == 5) std::this_thread::sleep_for(1500ms);
  };
  ring.start();
  ASSERT_TRUE(waitFor(
      [&] {
        for (int r = 0; r < 3; ++r) {
          if (samplesOf(ring.rank(r).report()).size() < 10) return false;
        }
        return true;
      },
      kWaitLimit));
  ring.stopAll();
  int64_t slowest_iteration5 = 0;
  for (int r = 0; r < 3; ++r) {
    checkStream(ring.rank(r), r);
    auto lines = ring.rank(r).report();
    EXPECT_TRUE(eventsOf(lines, kEventPeerLost).empty()) << ring.rank(r).sink.text();
    slowest_iteration5 = std::max(slowest_iteration5, samplesOf(lines)[5].duration_ns);
  }
  EXPECT_GE(slowest_iteration5, 1'000'000'000);
}

TEST(VerbsGuestTest, ReconnectBudgetExhaustedIsARankError) {
  REQUIRE_RXE();
  Ring ring(2, 18640, 4096);
  ring.rank(0).options.reconnect_budget_ms = 1500;
  ring.start();
  ASSERT_TRUE(waitFor([&] { return samplesOf(ring.rank(0).report()).size() >= 5; }, kWaitLimit));
  ring.rank(1).stop = true;  // rank 1 leaves for good
  ring.rank(1).thread.join();
  ASSERT_TRUE(waitFor([&] { return ring.rank(0).exit_code.load() != -1; }, kWaitLimit));
  EXPECT_EQ(ring.rank(0).exit_code.load(), 1);
  auto lines = ring.rank(0).report();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().type, Type::kDone);
  ASSERT_EQ(eventsOf(lines, kEventPeerLost).size(), 1u) << ring.rank(0).sink.text();
  auto errors = eventsOf(lines, kEventRankError);
  ASSERT_EQ(errors.size(), 1u) << ring.rank(0).sink.text();
  EXPECT_EQ(errors[0].detail["reason"], "reconnect_budget_exhausted");
  EXPECT_EQ(errors[0].detail["budget_ms"], 1500);
  EXPECT_EQ(ring.rank(1).exit_code.load(), 0);
}

// --- `fabric-chaos workload --transport verbs` processes -----------------------------------------

TEST(VerbsGuestTest, WorkloadProcessesOverVerbs) {
  REQUIRE_RXE();
  const std::string binary = FC_BINARY_PATH;
  ASSERT_TRUE(std::filesystem::exists(binary)) << binary;
  constexpr int kWorld = 3;
  constexpr int kBase = 18650;
  const std::string dir = "/tmp/verbs_guest_test." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::vector<pid_t> pids;
  for (int r = 0; r < kWorld; ++r) {
    std::vector<std::string> args = {
        binary,         "workload",
        "--transport",  "verbs",
        "--rank",       std::to_string(r),
        "--world",      std::to_string(kWorld),
        "--listen",     guest().addr + ":" + std::to_string(kBase + r),
        "--next",       guest().addr + ":" + std::to_string(kBase + (r + 1) % kWorld),
        "--bytes",      "64K",
        "--compute-ms", "1",
        "--flush-ms",   "50",
        "--duration-s", "120"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = dir + "/rank" + std::to_string(r) + ".out";
    const std::string err = dir + "/rank" + std::to_string(r) + ".err";
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << std::strerror(rc);
    pids.push_back(pid);
  }
  struct Reaper {
    std::vector<pid_t>* pids;
    ~Reaper() {
      for (pid_t p : *pids) {
        if (p > 0 && ::kill(p, SIGKILL) == 0) ::waitpid(p, nullptr, 0);
      }
    }
  } reaper{&pids};
  auto read = [&](int r, const char* ext) {
    std::ifstream in(dir + "/rank" + std::to_string(r) + ext);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  auto lines = [&](int r) {
    std::vector<std::string> out;
    std::stringstream ss(read(r, ".out"));
    for (std::string line; std::getline(ss, line);) out.push_back(line);
    return decodeAll(out);
  };
  const bool enough = waitFor(
      [&] {
        for (int r = 0; r < kWorld; ++r) {
          if (samplesOf(lines(r)).size() < 30) return false;
        }
        return true;
      },
      kWaitLimit);
  for (pid_t p : pids) ::kill(p, SIGTERM);
  std::vector<int> codes;
  for (pid_t& p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    p = -1;
  }
  ASSERT_TRUE(enough) << read(0, ".out") << read(0, ".err");
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    auto l = lines(r);
    ASSERT_GE(l.size(), 2u) << read(r, ".err");
    EXPECT_EQ(l.front().type, Type::kReady);
    EXPECT_EQ(l.back().type, Type::kDone) << "SIGTERM ends a rank cleanly";
    EXPECT_TRUE(eventsOf(l, kEventRankError).empty()) << read(r, ".out");
    EXPECT_EQ(codes[r], 0) << read(r, ".err");
    std::vector<double> ms;
    for (const auto& s : samplesOf(l)) ms.push_back(s.duration_ns / 1e6);
    auto bw = bandwidth(ms, 64 * 1024, kWorld);
    std::printf(
        "fabric-chaos workload --transport verbs rank %d (64 KiB): %zu samples, median "
        "%.2f ms, busbw %.2f MB/s\n",
        r, ms.size(), bw.median_ms, bw.busbw_mbps);
    EXPECT_GT(bw.busbw_mbps, 0.0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fabric_chaos::workload
