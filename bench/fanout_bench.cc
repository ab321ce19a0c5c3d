// Fault fan-out at fleet scale (issue 14 §5), printed as ratios measured in one run: one scenario
// applies a link_flap to a label selector matching every host of a fabric of N simulated agents
// (`fabric-chaos agent-sim`: the real agent API, leases and journal over pretend hosts, many per
// process, each on its own loopback port), with a two-host ring as the workload. For N = 10, 100
// and 1,250 (1,250 hosts of 8 GPUs: the 10,000-GPU target):
// - apply latency: from the scheduled instant to each agent's apply (the agents' own record,
//   CLOCK_MONOTONIC of this machine, against the run's origin and the step's scheduled_ms), p50,
//   p99 and max, and the skew between the first and the last agent; the same for the revert.
//   Remote agents get the fault ahead and apply it by their own clock (docs/agent.md, Scheduled
//   applies), so "confirmed" adds when serve had heard back from all of them;
// - goals: p99 <= 1 s and skew <= 200 ms at 1,250, printed as ratios to the goal (<= 1 meets it);
// - growth: p99 and skew at 100 over 10 and at 1,250 over 100;
// - lease renewals the agents received per agent per second while each held the fault, at
//   serve's default --agent-lease-ms of 5 s and, for the largest fleet, at 15 s;
// - serve's CPU (user + system, /proc/PID/stat) over the run, its peak RSS (VmHWM) and threads;
// - the submission: from POST to the run's first state past queued (capturing every target's
//   state and journaling it happen there, target by target).
// Needs the fabric-chaos binary (FC_BINARY, default ../app/fabric-chaos next to this program) and
// curl. Everything listens on 127.0.0.1; temporary directories are removed. Run:
//   ./build/bench/fanout_bench [N ...]      (default 10 100 1250)

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_proc.h"
#include "bench/bench_shell.h"

namespace {

using fabric_chaos::bench::cpuSecondsOf;
using fabric_chaos::bench::readFile;
using fabric_chaos::bench::shell;
using nlohmann::json;

std::string g_binary;

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Starts `command` in the background with its output in `log`; its pid.
pid_t startBackground(const std::string& command, const std::string& log) {
  const std::string out = shell("(" + command + " > " + log + " 2>&1 & echo $!)");
  return static_cast<pid_t>(std::atoi(out.c_str()));
}

bool waitForText(const std::string& log, const std::string& text, int timeout_s) {
  const int64_t deadline = monotonicNs() + int64_t{timeout_s} * 1'000'000'000;
  while (monotonicNs() < deadline) {
    if (readFile(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void stopProcess(pid_t pid, int timeout_s) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  const int64_t deadline = monotonicNs() + int64_t{timeout_s} * 1'000'000'000;
  while (monotonicNs() < deadline && ::kill(pid, 0) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
}

json httpJson(int port, const std::string& method, const std::string& target,
              const std::string& body_file = "") {
  std::string command =
      "curl -s -X " + method + " http://127.0.0.1:" + std::to_string(port) + target;
  if (!body_file.empty())
    command += " -H 'Content-Type: application/json' --data-binary @" + body_file;
  return json::parse(shell(command), nullptr, false);
}

// A /proc/PID/status field's number ("VmHWM:   12345 kB" -> 12345).
long statusField(pid_t pid, const std::string& name) {
  std::istringstream in(readFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + ":", 0) == 0) return std::atol(line.c_str() + name.size() + 1);
  }
  return -1;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(
      values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5));
  return values[index];
}

struct Spread {
  size_t agents = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  double skew_ms = 0;
};

// Latencies of the agents' `action` entries from `scheduled_ns`.
Spread spreadOf(const json& record, const std::string& action, int64_t scheduled_ns) {
  std::vector<double> latencies;
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  for (const json& e : record["entries"]) {
    if (e["action"] != action) continue;
    const int64_t t = e["steady_ns"].get<int64_t>();
    latencies.push_back(static_cast<double>(t - scheduled_ns) / 1e6);
    first = std::min(first, t);
    last = std::max(last, t);
  }
  Spread s;
  s.agents = latencies.size();
  if (latencies.empty()) return s;
  s.p50_ms = percentile(latencies, 0.5);
  s.p99_ms = percentile(latencies, 0.99);
  s.max_ms = *std::max_element(latencies.begin(), latencies.end());
  s.skew_ms = static_cast<double>(last - first) / 1e6;
  return s;
}

struct Result {
  int agents = 0;
  int64_t lease_ms = 0;
  bool ok = false;
  std::string error;
  Spread apply;
  Spread revert;
  double renewals_per_agent_s = 0;
  double serve_cpu_s = 0;
  double sim_cpu_s = 0;  // the simulated agents' process, over the same run
  double run_wall_s = 0;
  long serve_hwm_kb = 0;
  long serve_threads = 0;
  double submit_to_start_ms = 0;
  // From the scheduled instant until serve had every agent's confirmation (its fault_applied
  // events), and how many of them were delivered ahead and applied by the agent's clock.
  double confirmed_ms = 0;
  int scheduled_deliveries = 0;
  int late_deliveries = 0;  // reached their agent after the instant: applied on arrival
  int reverts_at_once = 0;  // not handed over ahead (or reverted by a retry)
  int revert_errors = 0;
  std::string first_revert_error;
  std::string state;
};

constexpr int kDownMs = 10000;             // two renewals at the long lease, six at the default
constexpr int64_t kDefaultLeaseMs = 5000;  // serve's default --agent-lease-ms
constexpr int64_t kLongLeaseMs = 15000;

// Mean time each agent held the fault: from its apply to its revert, by its own record.
double meanHeldSeconds(const json& record) {
  std::map<int, int64_t> applied;
  double held_ns = 0;
  int held = 0;
  for (const json& e : record["entries"]) {
    const int agent = e["agent"].get<int>();
    if (e["action"] == "apply") applied[agent] = e["steady_ns"].get<int64_t>();
    if (e["action"] == "revert" && applied.count(agent) > 0) {
      held_ns += static_cast<double>(e["steady_ns"].get<int64_t>() - applied[agent]);
      ++held;
    }
  }
  return held > 0 ? held_ns / held / 1e9 : 0;
}

Result measure(int agents, int64_t lease_ms) {
  Result result;
  result.agents = agents;
  result.lease_ms = lease_ms;
  char pattern[] = "/tmp/fc-fanout-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  if (made == nullptr) {
    result.error = "mkdtemp failed";
    return result;
  }
  const std::string dir = made;
  std::filesystem::create_directories(dir + "/state/fabrics");
  std::ofstream(dir + "/token") << "fanout-bench-token-0123456789abcdef\n";
  const pid_t sim = startBackground(
      g_binary + " agent-sim --agents " + std::to_string(agents) + " --token-file " + dir +
          "/token --inventory-out " + dir + "/inventory.json --record " + dir +
          "/record.json --state-dir /dev/shm/" + std::filesystem::path(dir).filename().string(),
      dir + "/sim.log");
  pid_t serve = 0;
  auto cleanup = [&] {
    stopProcess(serve, 20);
    stopProcess(sim, 20);
    std::filesystem::remove_all("/dev/shm/" + std::filesystem::path(dir).filename().string());
    std::filesystem::remove_all(dir);
  };
  if (!waitForText(dir + "/sim.log", "agents on", 60)) {
    result.error = "agent-sim did not start: " + readFile(dir + "/sim.log");
    cleanup();
    return result;
  }
  shell(g_binary + " fabric import --inventory " + dir + "/inventory.json --out " + dir +
        "/state/fabrics/sim.json 2>&1");
  serve = startBackground(g_binary + " serve --no-auth --listen 127.0.0.1:0 --db " + dir +
                              "/fc.db --state-dir " + dir + "/state --agent-lease-ms " +
                              std::to_string(lease_ms),
                          dir + "/serve.log");
  if (!waitForText(dir + "/serve.log", "serving on", 30)) {
    result.error = "serve did not start: " + readFile(dir + "/serve.log");
    cleanup();
    return result;
  }
  std::smatch port_match;
  const std::string serve_log = readFile(dir + "/serve.log");
  std::regex_search(serve_log, port_match, std::regex(R"(serving on http://127\.0\.0\.1:(\d+))"));
  const int port = std::stoi(port_match[1]);

  const json request = {
      {"fabric", "sim"},
      {"scenario",
       {{"version", 1},
        {"name", "fanout"},
        {"fabric", "sim"},
        {"workload",
         {{"hosts", {"sim0000", "sim0001"}}, {"message_bytes", 65536}, {"compute_ms", 5}}},
        {"baseline_ms", 2000},
        {"steps",
         {{{"kind", "link_flap"},
           {"target", {{"labels", {{"pool", "sim"}}}, {"side", "host"}}},
           {"at_ms", 0},
           {"params", {{"down_ms", kDownMs}}}}}},
        {"recovery_ms", 2000}}}};
  std::ofstream(dir + "/request.json") << request.dump();
  const double cpu_before = cpuSecondsOf(serve);
  const double sim_cpu_before = cpuSecondsOf(sim);
  const int64_t submitted_ns = monotonicNs();
  const json created = httpJson(port, "POST", "/v1/runs", dir + "/request.json");
  if (!created.contains("id")) {
    result.error = "POST /v1/runs: " + created.dump();
    cleanup();
    return result;
  }
  const std::string run_path = "/v1/runs/" + std::to_string(created["id"].get<int64_t>());
  json run;
  int64_t started_ns = 0;
  const int64_t deadline = submitted_ns + int64_t{600} * 1'000'000'000;
  while (monotonicNs() < deadline) {
    run = httpJson(port, "GET", run_path);
    const std::string state = run.value("state", "");
    if (started_ns == 0 && !state.empty() && state != "queued") started_ns = monotonicNs();
    if (state == "passed" || state == "failed" || state == "error" || state == "aborted") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  result.run_wall_s = static_cast<double>(monotonicNs() - submitted_ns) / 1e9;
  result.serve_cpu_s = cpuSecondsOf(serve) - cpu_before;
  result.sim_cpu_s = cpuSecondsOf(sim) - sim_cpu_before;
  result.serve_hwm_kb = statusField(serve, "VmHWM");
  result.serve_threads = statusField(serve, "Threads");
  result.submit_to_start_ms = static_cast<double>(started_ns - submitted_ns) / 1e6;
  result.state = run.value("state", "");
  const json events = httpJson(port, "GET", run_path + "/events");
  stopProcess(sim, 60);  // writes the record
  const json record = json::parse(readFile(dir + "/record.json"), nullptr, false);
  if (!run.contains("attributes") || !events.contains("events") || record.is_discarded()) {
    result.error = "no run, events or record: " + run.dump().substr(0, 500);
    cleanup();
    return result;
  }
  const int64_t origin_ns = run["attributes"].value("clock_origin_steady_ns", int64_t{0});
  double applied_ms = -1;
  double reverted_ms = -1;
  for (const json& e : events["events"]) {
    const json& detail = e["detail"];
    if (e["kind"] == "fault_applied") {
      if (applied_ms < 0) applied_ms = detail.value("scheduled_ms", -1.0);
      result.confirmed_ms = std::max(result.confirmed_ms, e.value("t_ms", 0.0) - applied_ms);
      if (detail.value("delivery", "") == "scheduled") ++result.scheduled_deliveries;
      if (detail.value("ahead_ms", 1.0) < 0) ++result.late_deliveries;
    }
    if (e["kind"] == "fault_reverted" && detail.value("delivery", "") == "at_once") {
      ++result.reverts_at_once;
    }
    if (e["kind"] == "revert_error") {
      ++result.revert_errors;
      if (result.first_revert_error.empty()) result.first_revert_error = detail.value("error", "");
    }
    if (e["kind"] == "fault_reverted" && reverted_ms < 0) {
      reverted_ms = detail.value("scheduled_ms", -1.0);
    }
  }
  if (origin_ns == 0 || applied_ms < 0 || reverted_ms < 0) {
    result.error = "the run has no scheduled apply and revert (state " + result.state + ", error " +
                   run.value("error", "") + ")";
    cleanup();
    return result;
  }
  result.apply = spreadOf(record, "apply", origin_ns + static_cast<int64_t>(applied_ms * 1e6));
  result.revert = spreadOf(record, "revert", origin_ns + static_cast<int64_t>(reverted_ms * 1e6));
  const double held_s = meanHeldSeconds(record);
  result.renewals_per_agent_s = held_s > 0 ? record.value("renewals", 0.0) / agents / held_s : 0;
  result.ok = result.apply.agents == static_cast<size_t>(agents) &&
              result.revert.agents == static_cast<size_t>(agents);
  if (!result.ok) {
    result.error = std::to_string(result.apply.agents) + " applies and " +
                   std::to_string(result.revert.agents) + " reverts recorded of " +
                   std::to_string(agents);
  }
  cleanup();
  return result;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

int main(int argc, char** argv) {
  const char* binary = std::getenv("FC_BINARY");
  g_binary = binary != nullptr
                 ? binary
                 : (std::filesystem::path(argv[0]).parent_path() / "../app/fabric-chaos").string();
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {10, 100, 1250};

  std::vector<Result> results;
  for (int n : sizes) {
    std::printf("fanout_bench: %d agents ...\n", n);
    std::fflush(stdout);
    results.push_back(measure(n, kDefaultLeaseMs));
    const Result& r = results.back();
    if (!r.error.empty()) std::printf("  %s\n", r.error.c_str());
    if (r.reverts_at_once > 0 || r.revert_errors > 0) {
      std::printf("  %d reverts made at once, %d revert errors (first: %s)\n", r.reverts_at_once,
                  r.revert_errors, r.first_revert_error.c_str());
    }
  }
  // The largest fleet once more with a three times longer lease: a third of the renewals.
  std::printf("fanout_bench: %d agents, lease %lld ms ...\n", sizes.back(),
              static_cast<long long>(kLongLeaseMs));
  std::fflush(stdout);
  const Result long_lease = measure(sizes.back(), kLongLeaseMs);
  if (!long_lease.error.empty()) std::printf("  %s\n", long_lease.error.c_str());

  std::printf(
      "\nlink_flap on every host of the fabric (label selector), %d ms down; times from the "
      "scheduled instant to each agent's own record\n",
      kDownMs);
  std::printf(
      "%7s %6s %6s | %9s %9s %9s %9s %9s %6s | %9s %9s %9s | %10s | %8s %9s %8s %7s | %9s | "
      "%8s\n",
      "agents", "lease", "state", "apply p50", "p99", "max", "skew", "confirmed", "late",
      "revert p50", "p99", "skew", "renew/ag/s", "serve cpu", "cpu/run s", "HWM MiB", "threads",
      "submit ms", "sim cpu");
  std::vector<const Result*> rows;
  for (const Result& r : results) rows.push_back(&r);
  rows.push_back(&long_lease);
  for (const Result* row : rows) {
    const Result& r = *row;
    std::printf(
        "%7d %5llds %6s | %9.1f %9.1f %9.1f %9.1f %9.1f %6d | %9.1f %9.1f %9.1f | %10.3f | %8.2fs "
        "%9.3f %8.1f %7ld | %9.0f | %7.2fs\n",
        r.agents, static_cast<long long>(r.lease_ms / 1000), r.state.c_str(), r.apply.p50_ms,
        r.apply.p99_ms, r.apply.max_ms, r.apply.skew_ms, r.confirmed_ms, r.late_deliveries,
        r.revert.p50_ms, r.revert.p99_ms, r.revert.skew_ms, r.renewals_per_agent_s, r.serve_cpu_s,
        ratio(r.serve_cpu_s, r.run_wall_s), static_cast<double>(r.serve_hwm_kb) / 1024,
        r.serve_threads, r.submit_to_start_ms, r.sim_cpu_s);
  }
  if (long_lease.ok && results.back().ok) {
    std::printf("\nrenewals per agent per second, lease %llds over %llds: %.3f (1/3 expected)\n",
                static_cast<long long>(kLongLeaseMs / 1000),
                static_cast<long long>(kDefaultLeaseMs / 1000),
                ratio(long_lease.renewals_per_agent_s, results.back().renewals_per_agent_s));
  }
  const Result* largest = nullptr;
  for (const Result& r : results) {
    if (r.ok && (largest == nullptr || r.agents > largest->agents)) largest = &r;
  }
  if (largest != nullptr) {
    std::printf(
        "\nat %d agents: apply p99 / 1000 ms goal = %.3f, all confirmed / 1000 ms = %.3f, apply "
        "skew / 200 ms goal = %.3f, revert p99 / 1000 ms = %.3f, revert skew / 200 ms = %.3f (<= 1 "
        "meets the goal); %d of %d deliveries reached their agent after the instant\n",
        largest->agents, largest->apply.p99_ms / 1000, largest->confirmed_ms / 1000,
        largest->apply.skew_ms / 200, largest->revert.p99_ms / 1000, largest->revert.skew_ms / 200,
        largest->late_deliveries, largest->scheduled_deliveries);
  }
  for (size_t i = 1; i < results.size(); ++i) {
    const Result& a = results[i - 1];
    const Result& b = results[i];
    if (!a.ok || !b.ok) continue;
    std::printf(
        "growth %d -> %d agents (x%.1f): apply p99 x%.2f, apply skew x%.2f, serve CPU "
        "x%.2f, peak RSS x%.2f\n",
        a.agents, b.agents, ratio(b.agents, a.agents), ratio(b.apply.p99_ms, a.apply.p99_ms),
        ratio(b.apply.skew_ms, a.apply.skew_ms), ratio(b.serve_cpu_s, a.serve_cpu_s),
        ratio(static_cast<double>(b.serve_hwm_kb), static_cast<double>(a.serve_hwm_kb)));
  }
  bool all_ok = long_lease.ok;
  for (const Result& r : results) all_ok = all_ok && r.ok;
  return all_ok ? 0 : 1;
}
