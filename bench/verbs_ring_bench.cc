// The verbs ring against perftest (issue 10 §4), printed as ratios measured in one run: the
// workload's 2-rank ring over RC QPs (`fabric-chaos workload --transport verbs`, 256 KiB, so each
// step is one 128 KiB SEND) and `ib_write_bw` with 128 KiB messages, one-way and bidirectional
// (-b: both directions at once, perftest reports their sum), on the same Soft-RoCE device.
//
// A 2-rank ring sends in both directions at once: every iteration each rank sends its peer the
// message once (busbw = bytes * 2(n-1)/n / time = bytes / time), so the link carries 2 x busbw.
// Compared with one-way ib_write_bw the ring looks twice as slow as it is; the like-for-like
// figure is 2 x busbw over bidirectional ib_write_bw.
//
// Soft-RoCE is software: every byte costs the vCPU a copy and a CRC at each end, and the vCPU is
// busy throughout every one of the three runs. So the bench also reads the guest's CPU time
// (/proc/stat) in the steady part of each run and prints bytes moved per busy CPU-second: that
// ratio, ring against one-way ib_write_bw, is what the probe itself costs beyond the transport,
// whatever the direction of the traffic.
//
// Where: one throw-away VM of the VM lab's kernel (deploy/vm/run-in-vm.sh; qemu TCG, one vCPU,
// rxe0 on eth0), both ends on its own address, so one vCPU does both ends' work for perftest and
// the ring alike. The host side starts the VM with this same program, which runs the guest side
// ($FC_GUEST=1). Needs the guest kernel (deploy/vm/fetch-kernel.sh), perftest, and the
// fabric-chaos binary (FC_BINARY, default ../app/fabric-chaos next to this program).
// Run: ./build/bench/verbs_ring_bench

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_shell.h"

namespace {

using nlohmann::json;

constexpr int kSeconds = 6;
constexpr int kRingBytes = 256 * 1024;
constexpr int kMessageBytes = kRingBytes / 2;

using fabric_chaos::bench::shell;

// The guest's CPU time so far, in USER_HZ ticks: busy (everything but idle and iowait) and total.
struct CpuTicks {
  double busy = 0;
  double total = 0;
};

CpuTicks cpuTicks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;  // "cpu": the sum over every CPU
  CpuTicks ticks;
  double field = 0;
  for (int i = 0; i < 8 && in >> field; ++i) {
    ticks.total += field;
    if (i != 3 && i != 4) ticks.busy += field;  // 3 idle, 4 iowait
  }
  return ticks;
}

// One measured run: its figure in MB/s (0 when it failed, having said why on stderr) and the
// fraction of the guest's CPU that was busy while data moved.
struct Measured {
  double mb_per_s = 0;
  double busy_fraction = 0;
};

// The CPU is read in the steady part of the run only, from 2 s to 6 s after it starts: before
// that perftest's server waits a second for its client and both connect, and the ring's ranks
// form their ring; every run lasts at least 7 s.
template <typename Run>
Measured measured(Run run) {
  Measured out;
  std::thread sampler([&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const CpuTicks from = cpuTicks();
    std::this_thread::sleep_for(std::chrono::seconds(4));
    const CpuTicks to = cpuTicks();
    const double total = to.total - from.total;
    out.busy_fraction = total > 0 ? (to.busy - from.busy) / total : 0;
  });
  const double mb_per_s = run();
  sampler.join();
  out.mb_per_s = mb_per_s;
  return out;
}

// MB moved per busy CPU-second.
double perCpuSecond(double mb_per_s, const Measured& run) {
  return run.busy_fraction > 0 ? mb_per_s / run.busy_fraction : 0;
}

// a / b, or "n/a" when either side failed (its reason is printed above).
std::string ratio(double a, double b) {
  if (!(a > 0) || !(b > 0)) return "n/a (a run failed; see above)";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", a / b);
  return text;
}

// The client's "BW average[Gb/sec]" in MB/s (0 when it did not run).
double ibWriteBw(const std::string& address, bool bidirectional, const std::string& dir) {
  const std::string flags = " -d rxe0 -F --report_gbits -D " + std::to_string(kSeconds) + " -s " +
                            std::to_string(kMessageBytes) + (bidirectional ? " -b" : "");
  shell("ib_write_bw" + flags + " > " + dir + "/perftest-server.txt 2>&1 & sleep 1; ib_write_bw" +
        flags + " " + address + " > " + dir + "/perftest-client.txt 2>&1; wait");
  std::ifstream in(dir + "/perftest-client.txt");
  std::string line;
  const std::regex row("^\\s*" + std::to_string(kMessageBytes) +
                       "\\s+\\d+\\s+[0-9.]+\\s+([0-9.]+)\\s+[0-9.]+");
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, row)) return std::stod(match[1]) * 1e9 / 8 / 1e6;
  }
  std::fprintf(
      stderr, "ib_write_bw%s gave no result:\n%s\n", bidirectional ? " -b" : "",
      shell("cat " + dir + "/perftest-client.txt " + dir + "/perftest-server.txt").c_str());
  return 0;
}

// The 2-rank verbs ring's busbw in MB/s: the median over iterations 2.. of rank 0's samples.
double ringBusbw(const std::string& binary, const std::string& address, const std::string& dir) {
  std::string launch;
  for (int rank = 0; rank < 2; ++rank) {
    launch += binary + " workload --transport verbs --rank " + std::to_string(rank) +
              " --world 2 --listen " + address + ":" + std::to_string(7600 + rank) + " --next " +
              address + ":" + std::to_string(7600 + (rank + 1) % 2) + " --bytes " +
              std::to_string(kRingBytes) + " --compute-ms 0 --duration-s " +
              std::to_string(kSeconds + 2) + " > " + dir + "/rank" + std::to_string(rank) +
              ".out 2>&1 & ";
  }
  shell(launch + "wait");
  std::vector<double> busbw;
  std::ifstream in(dir + "/rank0.out");
  std::string line;
  while (std::getline(in, line)) {
    const json doc = json::parse(line, nullptr, false);
    if (doc.is_discarded() || doc.value("type", "") != "samples") continue;
    for (const auto& sample : doc["samples"]) {
      // [iteration, start_ns, duration_ns, bytes]
      if (sample[0].get<int64_t>() < 2) continue;
      busbw.push_back(sample[3].get<double>() / (sample[2].get<double>() / 1e9) / 1e6);
    }
  }
  if (busbw.empty()) {
    std::fprintf(stderr, "the ring gave no samples:\n%s\n",
                 shell("tail -5 " + dir + "/rank0.out " + dir + "/rank1.out").c_str());
    return 0;
  }
  std::sort(busbw.begin(), busbw.end());
  return busbw[busbw.size() / 2];
}

int guestSide(const std::string& binary) {
  const std::string address =
      shell("ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1 | tr -d '\\n'");
  char dir_template[] = "/tmp/fc-verbs-bench-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const Measured one_way = measured([&] { return ibWriteBw(address, false, dir); });
  const Measured both_ways = measured([&] { return ibWriteBw(address, true, dir); });
  const Measured ring = measured([&] { return ringBusbw(binary, address, dir); });
  // What each run moved over the link, in MB/s: the ring both ways.
  const double ring_traffic = 2 * ring.mb_per_s;
  std::printf("verbs_ring_bench: one VM (%s vCPU), rxe0 on eth0 %s, %d s each\n",
              shell("nproc | tr -d '\\n'").c_str(), address.c_str(), kSeconds);
  std::printf("  ib_write_bw, %d KiB, one way          %8.1f MB/s, CPU busy %.2f\n",
              kMessageBytes / 1024, one_way.mb_per_s, one_way.busy_fraction);
  std::printf("  ib_write_bw, %d KiB, both ways (-b)   %8.1f MB/s (sum of both), CPU busy %.2f\n",
              kMessageBytes / 1024, both_ways.mb_per_s, both_ways.busy_fraction);
  std::printf(
      "  verbs ring, 2 ranks, %d KiB          %8.1f MB/s busbw (%.1f MB/s on the link, "
      "both ways), CPU busy %.2f\n",
      kRingBytes / 1024, ring.mb_per_s, ring_traffic, ring.busy_fraction);
  std::printf("  MB moved per busy CPU-second: one-way %.1f, both ways %.1f, ring %.1f\n",
              perCpuSecond(one_way.mb_per_s, one_way), perCpuSecond(both_ways.mb_per_s, both_ways),
              perCpuSecond(ring_traffic, ring));
  std::printf("  ring busbw / one-way ib_write_bw               %s (the pattern differs)\n",
              ratio(ring.mb_per_s, one_way.mb_per_s).c_str());
  std::printf("  ring traffic / bidirectional ib_write_bw       %s (target >= 0.8)\n",
              ratio(ring_traffic, both_ways.mb_per_s).c_str());
  std::printf(
      "  ring / one-way ib_write_bw, per CPU-second     %s (target >= 0.8: the probe's "
      "own cost)\n",
      ratio(perCpuSecond(ring_traffic, ring), perCpuSecond(one_way.mb_per_s, one_way)).c_str());
  std::filesystem::remove_all(dir);
  return one_way.mb_per_s > 0 && both_ways.mb_per_s > 0 && ring.mb_per_s > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path self = std::filesystem::absolute(argv[0]);
  const std::string binary =
      std::getenv("FC_BINARY") != nullptr
          ? std::getenv("FC_BINARY")
          : (self.parent_path().parent_path() / "app" / "fabric-chaos").string();
  if (std::getenv("FC_GUEST") != nullptr) {
    // Inside the VM: the host asked for the report in its shared directory. The console is
    // quiet, so what went wrong (stderr) goes into the report too.
    if (argc == 3 && std::string(argv[1]) == "--report") {
      if (std::freopen(argv[2], "w", stdout) == nullptr) return 2;
      std::setvbuf(stdout, nullptr, _IOLBF, 0);
      if (::dup2(::fileno(stdout), STDERR_FILENO) < 0) return 2;
    }
    return guestSide(binary);
  }
  if (::geteuid() != 0 || shell("command -v ib_write_bw").empty()) {
    std::fprintf(stderr, "verbs_ring_bench: needs root and perftest (apt-get install perftest)\n");
    return 2;
  }
  // The VM sees the host's file tree read-only, this program and the binary included; the report
  // comes back through a shared directory (the console is kept quiet).
  char dir_template[] = "/tmp/fc-verbs-bench-host-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string command =
      std::string(FC_SOURCE_DIR) + "/deploy/vm/run-in-vm.sh --timeout 300 --quiet --share " + dir +
      " -- env FC_BINARY=" + binary + " " + self.string() + " --report " + dir + "/report.txt";
  const int rc = std::system(command.c_str());
  std::printf("%s", shell("cat " + dir + "/report.txt").c_str());
  std::filesystem::remove_all(dir);
  return rc == 0 ? 0 : 1;
}
