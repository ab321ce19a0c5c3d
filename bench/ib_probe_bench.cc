// The IB probe's own resolution (issue 12 §5), printed as ratios measured in one run on the
// simulated IB lab (`fabric-chaos lab up --kind ib`, fast SM timers: 1000 ms x 2):
// - query rate: probe rounds per second at a 10 ms period (each round: the port's PortInfo, the
//   master's SMInfo and an SA PathRecord) against `sminfo` run back to back, one process per
//   query, as a script polling the subnet would;
// - takeover: after a kill -9 of the master SM, the takeover time the probe measures (its
//   sm_master_changed event) over the one the new master's own log gives ("Entering MASTER
//   state", microsecond timestamps), per trial; the target is 1.0 +- 0.05;
// - route reading: the same 100 ms probe for 6 s without and with --check-routes at the lab's
//   5 ms pace, one after the other: passes per second and their length (the route figures'
//   resolution), SA rounds per second and p99 iteration with over without (reading routes must
//   not delay the rounds: 1.0), and the CPU ibsim spent (what the reading costs the simulator
//   that also serves OpenSM).
// Root; needs ibsim, opensm, infiniband-diags and the fabric-chaos binary (FC_BINARY, default
// ../app/fabric-chaos next to this program). Builds and removes its lab (namespace fcib-subnet,
// state in a temporary directory). Run: ./build/bench/ib_probe_bench [trials]

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_shell.h"
#include "ib/opensm_log.h"

namespace {

using fabric_chaos::bench::shell;
using nlohmann::json;

constexpr const char* kUmad2sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

std::string g_binary;
std::string g_dir;

std::string attached(const std::string& node, const std::string& command) {
  return "ip netns exec fcib-subnet env -C " + g_dir + " SIM_HOST=" + node +
         " LD_PRELOAD=" + kUmad2sim + " " + command;
}

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

double wallMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool labUp() {
  shell(g_binary + " lab down --kind ib --state-dir " + g_dir + "/state >/dev/null 2>&1");
  const std::string out = shell(g_binary + " lab up --kind ib --sm-polling-ms 1000 " +
                                "--sm-retries 2 --state-dir " + g_dir + "/state 2>&1; echo rc=$?");
  if (out.find("rc=0") == std::string::npos) {
    std::fprintf(stderr, "lab up failed:\n%s", out.c_str());
    return false;
  }
  return true;
}

// Rounds per second of the probe at a 10 ms period, and sminfo processes per second.
void queryRates() {
  const int64_t start = monotonicNs();
  const std::string out =
      shell(attached("h3", g_binary + " ib-probe --period-ms 10 " + "--duration-s 3 2>/dev/null"));
  const double seconds = static_cast<double>(monotonicNs() - start) / 1e9;
  int64_t rounds = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const json doc = json::parse(line, nullptr, false);
    if (doc.is_object() && doc.value("type", "") == "done") rounds = doc.value("iterations", 0);
  }
  const int kSminfo = 40;
  const int64_t s0 = monotonicNs();
  shell("for i in $(seq " + std::to_string(kSminfo) + "); do " +
        attached("h3", "sminfo >/dev/null 2>&1") + "; done");
  const double sminfo_s = static_cast<double>(monotonicNs() - s0) / 1e9;
  const double probe_rate = static_cast<double>(rounds) / seconds;
  const double sminfo_rate = kSminfo / sminfo_s;
  std::printf(
      "query rate: probe %.0f rounds/s (5 MADs each: PortInfo twice, SMInfo, PathRecord; a 10 ms "
      "period, its floor), "
      "sminfo %.1f queries/s; ratio %.1f\n",
      probe_rate, sminfo_rate, probe_rate / sminfo_rate);
}

// CPU seconds (user + system) the lab's ibsim has used so far.
double ibsimCpuSeconds() {
  const std::string pid = shell(
      "for p in $(ip netns pids fcib-subnet); do [ \"$(cat /proc/$p/comm)\" = ibsim ] && echo $p; "
      "done | head -1");
  std::ifstream stat("/proc/" + std::to_string(std::atoi(pid.c_str())) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt: fields 3-13
  double utime = 0;
  double stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct ProbeRun {
  double rounds_per_s = 0;
  double p99_ms = 0;
  double ibsim_cpu_s = 0;
  json routes;  // the routes_summary event's detail, when routes were read
};

ProbeRun probeRun(const std::string& flags) {
  const double cpu0 = ibsimCpuSeconds();
  const int64_t start = monotonicNs();
  const std::string out = shell(attached(
      "h3", g_binary + " ib-probe --period-ms 100 --duration-s 6 " + flags + " 2>/dev/null"));
  ProbeRun run;
  run.ibsim_cpu_s = ibsimCpuSeconds() - cpu0;
  const double seconds = static_cast<double>(monotonicNs() - start) / 1e9;
  std::vector<double> durations;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const json doc = json::parse(line, nullptr, false);
    if (!doc.is_object()) continue;
    if (doc.value("type", "") == "samples") {
      for (const json& s : doc["samples"]) durations.push_back(s[2].get<double>() / 1e6);
    }
    if (doc.value("kind", "") == "routes_summary") run.routes = doc["detail"];
  }
  run.rounds_per_s = static_cast<double>(durations.size()) / seconds;
  if (!durations.empty()) {
    std::sort(durations.begin(), durations.end());
    run.p99_ms = durations[std::min(durations.size() - 1, durations.size() * 99 / 100)];
  }
  return run;
}

void routeReadingCost() {
  const ProbeRun without = probeRun("");
  const ProbeRun with = probeRun("--check-routes --routes-period-ms 5");
  const double passes = with.routes.value("passes", 0.0);
  std::printf(
      "route reading: %.0f passes/s, mean pass %.2f ms (max %.2f); SA rounds/s with/without "
      "%.1f/%.1f = %.3f; p99 iteration with/without %.1f/%.1f ms = %.3f; ibsim CPU over 6 s "
      "with/without %.2f/%.2f s\n",
      passes / 6.0, with.routes.value("mean_pass_ms", 0.0), with.routes.value("max_pass_ms", 0.0),
      with.rounds_per_s, without.rounds_per_s, with.rounds_per_s / without.rounds_per_s,
      with.p99_ms, without.p99_ms, with.p99_ms / without.p99_ms, with.ibsim_cpu_s,
      without.ibsim_cpu_s);
}

// One kill of the master under a probe at h3: {probe takeover ms, log takeover ms}.
std::optional<std::pair<double, double>> takeoverTrial() {
  const std::string events = g_dir + "/probe.out";
  shell("(" + attached("h3", g_binary + " ib-probe --period-ms 100 --duration-s 12") + " > " +
        events + " 2>/dev/null &)");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::string pid = shell(
      "for p in $(ip netns pids fcib-subnet); do [ \"$(cat /proc/$p/comm)\" = opensm ] && "
      "tr '\\0' '\\n' </proc/$p/environ | grep -qx SIM_HOST=h0 && echo $p; done");
  const double kill_wall = wallMs();
  const int64_t kill_ns = monotonicNs();
  shell("kill -9 " + pid);
  std::this_thread::sleep_for(std::chrono::seconds(11));
  std::optional<double> probe_ms;
  std::ifstream in(events);
  for (std::string line; std::getline(in, line);) {
    const json doc = json::parse(line, nullptr, false);
    if (doc.is_object() && doc.value("kind", "") == "sm_master_changed" && !probe_ms) {
      probe_ms = static_cast<double>(doc["t_ns"].get<int64_t>() - kill_ns) / 1e6;
    }
  }
  std::ifstream log(g_dir + "/state/ib/ib-lab/sm1/opensm.log");
  const std::string log_text((std::istreambuf_iterator<char>(log)),
                             std::istreambuf_iterator<char>());
  const auto logged = fabric_chaos::ib::enteredMasterAtMs(log_text, kill_wall);
  if (!probe_ms || !logged) return std::nullopt;
  return std::make_pair(*probe_ms, *logged - kill_wall);
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const char* binary = std::getenv("FC_BINARY");
  g_binary = binary != nullptr
                 ? binary
                 : (std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() /
                    "app/fabric-chaos")
                       .string();
  char dir_template[] = "/tmp/fc-ibbench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return 1;
  g_dir = dir_template;
  if (!labUp()) return 1;
  queryRates();
  routeReadingCost();
  std::vector<double> ratios;
  for (int i = 0; i < trials; ++i) {
    if (i > 0 && !labUp()) return 1;
    const auto trial = takeoverTrial();
    if (!trial) {
      std::printf("takeover trial %d: no measurement (no master change seen)\n", i + 1);
      continue;
    }
    ratios.push_back(trial->first / trial->second);
    std::printf("takeover trial %d: probe %.1f ms, OpenSM log %.1f ms, ratio %.3f\n", i + 1,
                trial->first, trial->second, ratios.back());
  }
  shell(g_binary + " lab down --kind ib --state-dir " + g_dir + "/state >/dev/null 2>&1");
  std::filesystem::remove_all(g_dir);
  if (ratios.empty()) return 1;
  double low = ratios.front();
  double high = ratios.front();
  double sum = 0;
  for (double r : ratios) {
    low = std::min(low, r);
    high = std::max(high, r);
    sum += r;
  }
  std::printf(
      "takeover ratio probe/log: mean %.3f (%.3f-%.3f over %zu trials; target 1.0 +- "
      "0.05)\n",
      sum / static_cast<double>(ratios.size()), low, high, ratios.size());
  return 0;
}
