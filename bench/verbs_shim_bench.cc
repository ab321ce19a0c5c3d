// The verbs fault library's cost when loaded but not armed (issue 13), printed as ratios measured
// in one run: unmodified perftest programs without and with LD_PRELOAD=libfabric-chaos-verbs.so
// (FABRIC_CHAOS_VERBS_DIR set, so the control server runs as in real use), server and client
// alike, alternated run by run for several rounds; the medians over rounds are compared:
// - ib_write_bw, 64 KiB for a fixed time: the client's average bandwidth (target: with / without
//   >= 0.98). Without --report_gbits: Gb/s has two decimals, too coarse at Soft-RoCE's rates;
// - ib_send_lat, 2 B ping-pong: the client's t_typical (perftest's median; target: added p50
//   <= 1 % or 100 ns, whichever is larger), with t_avg and the 99th percentile beside it.
// A preload that silently failed to load would fake a perfect ratio, so every run also looks, a
// second after the client starts, for the library in each end's /proc/PID/maps and for its
// control socket (<dir>/verbs-PID.sock): both ends must show both with the shim and neither
// without. The spread of the runs without the shim is printed too: it is what this setup
// resolves, and a difference smaller than it is noise.
//
// Where: one throw-away VM of the VM lab's kernel (deploy/vm/run-in-vm.sh; qemu TCG, one vCPU,
// rxe0 on eth0), both ends on its own address. With one vCPU the two busy-polling ends of
// ib_send_lat take turns at the scheduler's tick, so its p50 there is the tick (4 ms), not the
// data path; ib_write_bw's spinning client shares the vCPU with rxe's own work, and its rate moves
// by tens of % from run to run, so each round's with / without (neighbours share the moment's
// conditions) is printed beside the ratio of the medians. The host side starts the VM with this
// same program, which runs the guest side ($FC_GUEST=1). Needs the guest kernel
// (deploy/vm/fetch-kernel.sh), perftest, and the library (FC_VERBS_SHIM, default
// ../verbs_shim/libfabric-chaos-verbs.so next to this program: build target fabric-chaos-verbs).
// Then the wrapper's own cost, which those figures cannot resolve: bench/verbs_call_cost.cc polls
// an empty CQ of rxe0 2 million times, without and with the library, round by round; twice the
// added cost per call (one post, one poll) is what it adds to a ping-pong iteration.
// Exits 0 when every run gave its figures with the shim seen exactly where it belongs, whatever
// the ratios. Run: ./build/bench/verbs_shim_bench

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_shell.h"

namespace {

constexpr int kRounds = 5;
constexpr int kBwSeconds = 4;
constexpr int kBwBytes = 64 * 1024;
// About 5 s per run on this VM, where the median round trip is a few ms (the scheduler's).
constexpr int kLatIterations = 1000;
constexpr int kLatBytes = 2;
constexpr int kPerftestPort = 18515;  // perftest's default, for both tools
// A run hung in the VM (perftest waits forever for a lost completion) is killed after this.
constexpr int kRunLimitSeconds = 90;

using fabric_chaos::bench::shell;

// bench/verbs_call_cost.cc, built beside this program.
const std::string kCallCost = FC_VERBS_CALL_COST;

// What one perftest run showed: the client's report, and how many of its two processes had the
// library mapped and their control socket open a second into the client's run.
struct Run {
  std::string client;
  std::string server;
  int shim_processes = 0;
  int sockets_left = 0;  // after both ended: the shim removes its own socket at exit
};

// Server and client of `tool` on the guest's own address; with a non-empty `shim` both are
// started with it preloaded and its control directory <dir>/ctl. The same steps run either way,
// so that the looking costs both sides alike. A bash script: popen's sh has no mapfile.
Run runPerftest(const std::string& tool, const std::string& flags, const std::string& address,
                const std::string& shim, const std::string& dir) {
  const std::string preload =
      shim.empty() ? "env" : "env LD_PRELOAD=" + shim + " FABRIC_CHAOS_VERBS_DIR=" + dir + "/ctl";
  const std::string port = std::to_string(kPerftestPort);
  std::ofstream(dir + "/run.sh")
      << "cd " << dir << " || exit 1\n"
      << "rm -rf ctl && mkdir ctl\n"
      << preload << " " << tool << " " << flags << " > server.txt 2>&1 & server=$!\n"
      << "for i in $(seq 100); do ss -ltn | grep -q ':" << port << " ' && break; sleep 0.1; done\n"
      << preload << " " << tool << " " << flags << " " << address
      << " > client.txt 2>&1 & client=$!\n"
      << "(sleep " << kRunLimitSeconds << "; kill $client $server) > /dev/null 2>&1 & watchdog=$!\n"
      << "sleep 1\n"
      << "seen=0\n"
      << "for pid in $server $client; do\n"
      << "  maps=(); mapfile -t maps 2>/dev/null < /proc/$pid/maps\n"
      << "  [[ \"${maps[*]}\" == *libfabric-chaos-verbs* && -S ctl/verbs-$pid.sock ]] && "
         "seen=$((seen + 1))\n"
      << "done\n"
      << "wait $client; wait $server; kill $watchdog 2>/dev/null\n"
      << "left=(ctl/*.sock); [[ -e ${left[0]} ]] && n=${#left[@]} || n=0\n"
      << "echo \"$seen $n\"\n";
  Run run;
  std::istringstream(shell("bash " + dir + "/run.sh")) >> run.shim_processes >> run.sockets_left;
  run.client = shell("cat " + dir + "/client.txt");
  run.server = shell("cat " + dir + "/server.txt");
  return run;
}

// The client's "BW average[MB/sec]" (0 when it did not run).
double bandwidth(const Run& run) {
  const std::regex row("(^|\\n)\\s*" + std::to_string(kBwBytes) +
                       "\\s+\\d+\\s+[0-9.]+\\s+([0-9.]+)\\s+[0-9.]+");
  std::smatch match;
  return std::regex_search(run.client, match, row) ? std::stod(match[2]) : 0;
}

// The client's latency row after the header that names t_typical: t_min, t_max, t_typical,
// t_avg, t_stdev, 99%, 99.9% (us), the columns after #bytes and #iterations. Empty when absent.
std::vector<double> latencies(const Run& run) {
  std::istringstream in(run.client);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("t_typical") == std::string::npos || !std::getline(in, line)) continue;
    std::istringstream fields(line);
    std::vector<double> values;
    for (double value; fields >> value;) values.push_back(value);
    if (values.size() < 9 || values[0] != kLatBytes || values[1] != kLatIterations) return {};
    return {values.begin() + 2, values.end()};
  }
  return {};
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// (max - min) / median, in %: how far apart runs of the same thing land here.
double spreadPercent(const std::vector<double>& values) {
  const double middle = median(values);
  if (middle <= 0) return 0;
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return (*high - *low) / middle * 100;
}

// Whether the run showed the shim exactly where it belongs; prints what went wrong otherwise.
bool shimAsExpected(const Run& run, bool with_shim, const char* what) {
  bool ok = run.shim_processes == (with_shim ? 2 : 0) && run.sockets_left == 0;
  for (const std::string* output : {&run.client, &run.server}) {
    // The shim's own complaints (a control server that did not start, an unwrapped context).
    std::istringstream in(*output);
    for (std::string line; std::getline(in, line);) {
      if (line.find("fabric-chaos verbs shim") == std::string::npos) continue;
      std::printf("    %s: %s\n", what, line.c_str());
      ok = false;
    }
  }
  if (!ok) {
    std::printf(
        "    %s %s the shim: %d of 2 processes with it mapped and a control socket, %d "
        "socket(s) left after exit\n",
        what, with_shim ? "with" : "without", run.shim_processes, run.sockets_left);
  }
  return ok;
}

void reportFailure(const char* what, const Run& run) {
  std::fprintf(stderr, "%s gave no result:\n--- client\n%s\n--- server\n%s\n", what,
               run.client.c_str(), run.server.c_str());
}

// verbs_call_cost's "ns_per_call X shim S": X, or -1 when it printed none or S is not `with`.
double callCost(const std::string& program, const std::string& shim, bool with) {
  const std::string out =
      shell((with ? "LD_PRELOAD=" + shim + " " : std::string()) + program + " 2000000 2>&1");
  std::smatch match;
  if (!std::regex_search(out, match, std::regex(R"(ns_per_call ([0-9.]+) shim ([01]))")) ||
      (match[2] == "1") != with) {
    std::fprintf(stderr, "verbs_call_cost %s the shim: %s\n", with ? "with" : "without",
                 out.c_str());
    return -1;
  }
  return std::stod(match[1]);
}

// The unarmed wrapper's own cost, which perftest's figures cannot resolve on one vCPU: ibv_poll_cq
// on an empty CQ, 2 million times, without and with the library, round by round. A ping-pong
// iteration has one post and one successful poll on its critical path, so twice the added cost
// per call is what the library adds to its latency.
bool printCallCost(const std::string& program, const std::string& shim) {
  std::vector<double> cost[2];
  for (int round = 0; round < kRounds; ++round) {
    for (int with = 0; with < 2; ++with) cost[with].push_back(callCost(program, shim, with == 1));
  }
  if (std::find_if(cost[0].begin(), cost[0].end(), [](double v) { return v < 0; }) !=
          cost[0].end() ||
      std::find_if(cost[1].begin(), cost[1].end(), [](double v) { return v < 0; }) !=
          cost[1].end()) {
    return false;
  }
  std::printf("  ibv_poll_cq on an empty CQ of rxe0, 2000000 calls: ns per call\n");
  std::printf("    round   without      with\n");
  for (int round = 0; round < kRounds; ++round) {
    std::printf("    %5d  %8.2f  %8.2f\n", round + 1, cost[0][round], cost[1][round]);
  }
  const double added = median(cost[1]) - median(cost[0]);
  std::printf(
      "    added per call (medians)         %+.2f ns  (%.2f -> %.2f ns; a post costs the same "
      "test)\n",
      added, median(cost[0]), median(cost[1]));
  std::printf(
      "    added to a ping-pong's latency   %+.2f ns  (one post and one poll; target <= 100 ns: "
      "%s)\n",
      2 * added, 2 * added <= 100 ? "met" : "NOT met");
  return true;
}

int guestSide(const std::string& shim) {
  const std::string address =
      shell("ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1 | tr -d '\\n'");
  char dir_template[] = "/tmp/fc-shim-bench-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  std::printf(
      "verbs_shim_bench: one VM (%s vCPU), rxe0 on eth0 %s; %s loaded, not armed, control "
      "server on\n",
      shell("nproc | tr -d '\\n'").c_str(), address.c_str(), shim.c_str());
  std::printf("  %d rounds, each run without the shim then with it\n", kRounds);
  std::fflush(stdout);
  bool ok = true;

  const std::string bw_flags = "-d rxe0 -F -D " + std::to_string(kBwSeconds) + " -s " +
                               std::to_string(kBwBytes) + " -p " + std::to_string(kPerftestPort);
  std::vector<double> bw[2];
  std::printf("  ib_write_bw, %d KiB, %d s: client's BW average, MB/s (perftest's: 2^20 B)\n",
              kBwBytes / 1024, kBwSeconds);
  std::printf("    round   without      with   shim seen (of 2 processes) without / with\n");
  for (int round = 1; round <= kRounds; ++round) {
    int seen[2] = {0, 0};
    for (int with = 0; with < 2; ++with) {
      const Run run = runPerftest("ib_write_bw", bw_flags, address, with ? shim : "", dir);
      const double value = bandwidth(run);
      if (value <= 0) {
        reportFailure(with ? "ib_write_bw with the shim" : "ib_write_bw without the shim", run);
        ok = false;
      }
      ok = shimAsExpected(run, with == 1, "ib_write_bw") && ok;
      bw[with].push_back(value);
      seen[with] = run.shim_processes;
    }
    std::printf("    %5d  %8.2f  %8.2f   %d / %d\n", round, bw[0].back(), bw[1].back(), seen[0],
                seen[1]);
    std::fflush(stdout);
  }

  const std::string lat_flags = "-d rxe0 -F -n " + std::to_string(kLatIterations) + " -s " +
                                std::to_string(kLatBytes) + " -p " + std::to_string(kPerftestPort);
  // [without, with][round]: t_typical, t_avg, 99 % (us)
  std::vector<double> p50[2];
  std::vector<double> avg[2];
  std::vector<double> p99[2];
  std::printf("  ib_send_lat, %d B, %d iterations: client's figures, us\n", kLatBytes,
              kLatIterations);
  std::printf(
      "    round   p50 without      with   avg without      with   p99 without      with   "
      "seen\n");
  for (int round = 1; round <= kRounds; ++round) {
    int seen[2] = {0, 0};
    for (int with = 0; with < 2; ++with) {
      const Run run = runPerftest("ib_send_lat", lat_flags, address, with ? shim : "", dir);
      const std::vector<double> values = latencies(run);
      if (values.size() < 7) {
        reportFailure(with ? "ib_send_lat with the shim" : "ib_send_lat without the shim", run);
        ok = false;
      }
      ok = shimAsExpected(run, with == 1, "ib_send_lat") && ok;
      p50[with].push_back(values.size() >= 7 ? values[2] : 0);
      avg[with].push_back(values.size() >= 7 ? values[3] : 0);
      p99[with].push_back(values.size() >= 7 ? values[5] : 0);
      seen[with] = run.shim_processes;
    }
    std::printf("    %5d  %12.2f  %8.2f  %12.2f  %8.2f  %12.2f  %8.2f   %d / %d\n", round,
                p50[0].back(), p50[1].back(), avg[0].back(), avg[1].back(), p99[0].back(),
                p99[1].back(), seen[0], seen[1]);
    std::fflush(stdout);
  }

  const double bw_ratio = median(bw[0]) > 0 ? median(bw[1]) / median(bw[0]) : 0;
  const double p50_without_ns = median(p50[0]) * 1000;
  const double added_ns = median(p50[1]) * 1000 - p50_without_ns;
  const double added_percent = p50_without_ns > 0 ? added_ns / p50_without_ns * 100 : 0;
  const double allowed_ns = std::max(p50_without_ns / 100, 100.0);
  std::printf("  medians over %d rounds, with the shim against without:\n", kRounds);
  std::printf("    bandwidth with / without         %.4f  (%.2f / %.2f MB/s; target >= 0.98: %s)\n",
              bw_ratio, median(bw[1]), median(bw[0]), bw_ratio >= 0.98 ? "met" : "NOT met");
  std::printf(
      "    p50 latency added                %+.0f ns, %+.2f %%  (%.2f -> %.2f us; target <= %.0f "
      "ns: %s)\n",
      added_ns, added_percent, median(p50[0]), median(p50[1]), allowed_ns,
      added_ns <= allowed_ns ? "met" : "NOT met");
  // Runs side by side share the host's load of the moment, which drifts over a run.
  std::vector<double> paired;
  for (int round = 0; round < kRounds; ++round) {
    if (bw[0][round] > 0) paired.push_back(bw[1][round] / bw[0][round]);
  }
  std::printf(
      "    bandwidth, round by round        %.4f  (median of each round's with / without)\n",
      median(paired));
  std::printf("    avg latency with / without       %.4f\n",
              median(avg[0]) > 0 ? median(avg[1]) / median(avg[0]) : 0);
  std::printf("    p99 latency with / without       %.4f\n",
              median(p99[0]) > 0 ? median(p99[1]) / median(p99[0]) : 0);
  std::printf(
      "  spread of the runs without the shim ((max - min) / median, what this setup resolves):\n"
      "    bandwidth %.1f %%, p50 latency %.1f %%\n",
      spreadPercent(bw[0]), spreadPercent(p50[0]));
  ok = printCallCost(kCallCost, shim) && ok;
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path self = std::filesystem::absolute(argv[0]);
  const std::string shim =
      std::filesystem::absolute(std::getenv("FC_VERBS_SHIM") != nullptr
                                    ? std::filesystem::path(std::getenv("FC_VERBS_SHIM"))
                                    : self.parent_path().parent_path() / "verbs_shim" /
                                          "libfabric-chaos-verbs.so")
          .lexically_normal()
          .string();
  if (std::getenv("FC_GUEST") != nullptr) {
    // Inside the VM: the host asked for the report in its shared directory.
    if (argc == 3 && std::string(argv[1]) == "--report" &&
        std::freopen(argv[2], "w", stdout) == nullptr) {
      return 2;
    }
    return guestSide(shim);
  }
  if (::geteuid() != 0 || shell("command -v ib_write_bw").empty()) {
    std::fprintf(stderr, "verbs_shim_bench: needs root and perftest (apt-get install perftest)\n");
    return 2;
  }
  if (!std::filesystem::exists(shim)) {
    std::fprintf(stderr,
                 "verbs_shim_bench: no %s (build the fabric-chaos-verbs target, or set "
                 "FC_VERBS_SHIM)\n",
                 shim.c_str());
    return 2;
  }
  // The VM sees the host's file tree read-only, this program and the library included; the
  // report comes back through a shared directory (the console is kept quiet).
  char dir_template[] = "/tmp/fc-shim-bench-host-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string command =
      std::string(FC_SOURCE_DIR) + "/deploy/vm/run-in-vm.sh --timeout 480 --quiet --share " + dir +
      " -- env FC_VERBS_SHIM=" + shim + " " + self.string() + " --report " + dir + "/report.txt";
  const int rc = std::system(command.c_str());
  std::printf("%s", shell("cat " + dir + "/report.txt").c_str());
  std::filesystem::remove_all(dir);
  return rc == 0 ? 0 : 1;
}
