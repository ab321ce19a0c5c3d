#include "agent/local_agent.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#include "agent/agent_service.h"
#include "core/clock.h"
#include "core/log.h"
#include "workload/report.h"

namespace fabric_chaos::agent {
namespace {

using core::Status;
using core::StatusCode;

double toRunMs(int64_t t_ns, int64_t origin_ns) {
  return static_cast<double>(t_ns - origin_ns) / 1e6;
}

// One rank process and the thread that reads its reports.
struct RankProcess {
  int rank = 0;
  std::unique_ptr<sys::ChildProcess> child;
  std::thread reader;
  std::atomic<bool> exited{false};
};

class LocalWorkload : public WorkloadHandle {
 public:
  LocalWorkload(int64_t origin_ns, WorkloadListener* listener)
      : origin_ns_(origin_ns), listener_(listener) {}
  ~LocalWorkload() override { stop(0); }

  void add(int rank, std::unique_ptr<sys::ChildProcess> child) {
    auto process = std::make_unique<RankProcess>();
    process->rank = rank;
    process->child = std::move(child);
    RankProcess* raw = process.get();
    processes_.push_back(std::move(process));
    raw->reader = std::thread([this, raw] { readLoop(*raw); });
  }

  void stop(int grace_ms) override {
    std::lock_guard lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& p : processes_) {
      if (!p->exited) (void)p->child->signal(SIGTERM);
    }
    const int64_t deadline = core::steadyNowNs() + int64_t{grace_ms} * 1000000;
    for (auto& p : processes_) {
      while (!p->exited && core::steadyNowNs() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!p->exited) (void)p->child->signal(SIGKILL);
    }
    for (auto& p : processes_) {
      if (p->reader.joinable()) p->reader.join();
    }
  }

  int runningRanks() const override {
    int running = 0;
    for (const auto& p : processes_) running += p->exited ? 0 : 1;
    return running;
  }

 private:
  void readLoop(RankProcess& p) {
    const int fd = p.child->stdoutFd();
    std::string pending;
    char buffer[65536];
    while (fd >= 0) {
      ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buffer, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl = pending.find('\n'); nl != std::string::npos;
           nl = pending.find('\n', start)) {
        deliverReportLine(pending.substr(start, nl - start), p.rank, origin_ns_, *listener_);
        start = nl + 1;
      }
      pending.erase(0, start);
    }
    // stdout closed: the rank has exited or is about to; reap it.
    auto code = p.child->wait(5000);
    if (!code.isOk()) {
      (void)p.child->signal(SIGKILL);
      code = p.child->wait(5000);
    }
    p.exited = true;
    listener_->onRankExit(p.rank, code.isOk() ? code.value() : -1);
  }

  int64_t origin_ns_;
  WorkloadListener* listener_;
  std::vector<std::unique_ptr<RankProcess>> processes_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace

bool deliverReportLine(const std::string& line, int rank, int64_t origin_ns,
                       WorkloadListener& listener) {
  if (line.empty()) return true;
  auto decoded = workload::decodeReportLine(line);
  if (!decoded.isOk()) {
    listener.onEvent(rank, toRunMs(core::steadyNowNs(), origin_ns), "bad_report",
                     {{"line", line.substr(0, 200)}, {"error", decoded.status().message()}});
    return false;
  }
  const auto& report = decoded.value();
  using Type = workload::ReportLine::Type;
  switch (report.type) {
    case Type::kSamples: {
      std::vector<core::Sample> samples;
      samples.reserve(report.samples.size());
      for (const auto& raw : report.samples) {
        samples.push_back({rank, raw.iteration, toRunMs(raw.start_ns, origin_ns),
                           static_cast<double>(raw.duration_ns) / 1e6, raw.bytes});
      }
      listener.onSamples(samples);
      break;
    }
    case Type::kReady:
      listener.onEvent(rank, toRunMs(report.t_ns, origin_ns), "rank_ready", report.detail);
      break;
    case Type::kEvent:
      listener.onEvent(rank, toRunMs(report.t_ns, origin_ns), report.kind, report.detail);
      break;
    case Type::kDone:
      listener.onEvent(rank, toRunMs(report.t_ns, origin_ns), "rank_done",
                       {{"iterations", report.iterations}});
      break;
  }
  return true;
}

LocalAgent::LocalAgent(injectors::Registry& registry, sys::ProcessLauncher& launcher,
                       LocalAgentOptions options)
    : registry_(registry), launcher_(launcher), options_(std::move(options)) {}

core::Result<AgentInfo> LocalAgent::info() {
  AgentInfo out;
  out.clock.steady_ns = core::steadyNowNs();
  out.clock.realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  out.version = options_.version;
  out.hostname = options_.hostname;
  out.kinds = registry_.capabilities();
  if (options_.links != nullptr) {
    std::vector<std::string> namespaces{""};
    if (options_.netdev_namespaces) {
      namespaces = options_.netdev_namespaces();
      std::sort(namespaces.begin(), namespaces.end());
      namespaces.erase(std::unique(namespaces.begin(), namespaces.end()), namespaces.end());
    }
    for (const std::string& netns : namespaces) {
      auto links = options_.links->listLinks(netns);
      if (!links.isOk()) {
        // The namespace went away between the fabric list and now: nothing to report there.
        if (links.status().code() == StatusCode::kNotFound) continue;
        return links.status().withContext("listing the netdevs of this host");
      }
      for (const auto& link : *links) {
        out.netdevs.push_back({link.ifname, netns, link.operstate, link.mac});
      }
    }
  }
  if (options_.rdma != nullptr) out.rdma_devices = options_.rdma->list();
  if (options_.verbs_shims != nullptr) {
    // A directory that cannot be read lists nothing: info() is about the host, not about it.
    auto shims = options_.verbs_shims->list();
    if (shims.isOk()) out.verbs_shims = std::move(*shims);
  }
  return out;
}

std::vector<injectors::KindInfo> LocalAgent::capabilities() { return registry_.capabilities(); }

core::Result<injectors::Injector*> LocalAgent::find(const std::string& kind) {
  injectors::Injector* injector = registry_.find(kind);
  if (injector == nullptr) {
    std::string valid;
    for (const auto& k : registry_.kinds()) valid += (valid.empty() ? "" : ", ") + k;
    return Status(StatusCode::kInvalidArgument,
                  "unknown fault kind \"" + kind + "\"; valid kinds: " + valid);
  }
  if (!injector->info().available) {
    return Status(StatusCode::kNotSupported,
                  "fault kind " + kind + " is not available here: " + injector->info().reason);
  }
  return injector;
}

Status LocalAgent::validateFault(const std::string& kind, const nlohmann::json& params) {
  injectors::Injector* injector = registry_.find(kind);
  if (injector == nullptr) return find(kind).status();
  return injector->validate(params);
}

Status LocalAgent::checkTarget(const injectors::Target& target) const {
  if (!options_.guard.allowed) return Status::ok();
  return checkTargetAllowed(target, options_.guard.allowed(), options_.guard.management,
                            /*empty_allows_any=*/false,
                            "add it with --allow-interface or register a fabric that contains it");
}

core::Result<nlohmann::json> LocalAgent::captureFault(const injectors::Fault& fault) {
  // The engine captures before it journals and applies: refusing here leaves no journal entry.
  if (Status s = checkTarget(fault.target); !s.isOk()) {
    core::logWarn("local agent: refused " + fault.kind + ": " + s.message());
    return s;
  }
  auto injector = find(fault.kind);
  if (!injector.isOk()) return injector.status();
  return (*injector)->capture(fault);
}

Status LocalAgent::applyFault(const injectors::Fault& fault) {
  // Checked again: the list may have shrunk (a lab went down) since the capture.
  if (Status s = checkTarget(fault.target); !s.isOk()) {
    core::logWarn("local agent: refused " + fault.kind + ": " + s.message());
    return s;
  }
  auto injector = find(fault.kind);
  if (!injector.isOk()) return injector.status();
  return (*injector)->apply(fault);
}

Status LocalAgent::revertFault(const injectors::Fault& fault, const nlohmann::json& prior) {
  // Reverting must work even for a kind that became unavailable: look it up without the check.
  injectors::Injector* injector = registry_.find(fault.kind);
  if (injector == nullptr) return find(fault.kind).status();
  return injector->revert(fault, prior);
}

core::Result<nlohmann::json> LocalAgent::observeFault(const injectors::Fault& fault) {
  injectors::Injector* injector = registry_.find(fault.kind);
  if (injector == nullptr) return find(fault.kind).status();
  return injector->observe(fault);
}

core::Result<std::vector<sys::RdmaPortCounters>> LocalAgent::rdmaCounters() {
  if (options_.rdma == nullptr) return std::vector<sys::RdmaPortCounters>{};
  return options_.rdma->hwCounters();
}

std::vector<std::string> LocalAgent::rankArgv(const std::string& self_exe, const RankSpec& spec,
                                              const VerbsShimLoad& shim) {
  if (spec.transport == "ib_probe") {
    std::vector<std::string> argv;
    if (!spec.ib_node.empty()) {
      // Attached at its simulated node: umad2sim carries its MADs to the lab's ibsim.
      argv = {"/usr/bin/env", "-C", spec.ib_dir.empty() ? "/" : spec.ib_dir,
              "SIM_HOST=" + spec.ib_node, "LD_PRELOAD=" + spec.ib_preload};
    }
    const std::vector<std::string> probe = {
        self_exe,       "ib-probe",
        "--rank",       std::to_string(spec.rank),
        "--peer-guid",  spec.next_addr,
        "--duration-s", std::to_string((spec.max_duration_ms + 999) / 1000)};
    argv.insert(argv.end(), probe.begin(), probe.end());
    if (spec.rank == 0) {
      // One rank reads the switches' routes for the whole subnet. In the simulated lab a pass
      // costs under a millisecond, so it runs every 5 ms: OpenSM mends a cut in 10-30 ms there.
      argv.push_back("--check-routes");
      if (!spec.ib_node.empty()) argv.insert(argv.end(), {"--routes-period-ms", "5"});
    }
    return argv;
  }
  if (spec.transport == "exec") {
    std::vector<std::string> argv = {self_exe, "exec-rank"};
    const std::vector<std::string> args = execRankArguments(spec, shim);
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::vector<std::string> argv;
  if (spec.verbs_shim) {
    argv = {"/usr/bin/env", "LD_PRELOAD=" + shim.library, "FABRIC_CHAOS_VERBS_DIR=" + shim.dir,
            "FABRIC_CHAOS_RANK=" + std::to_string(spec.rank)};
  }
  const std::vector<std::string> workload = {self_exe,
                                             "workload",
                                             "--rank",
                                             std::to_string(spec.rank),
                                             "--world",
                                             std::to_string(spec.world),
                                             "--listen",
                                             spec.listen_addr + ":" + std::to_string(spec.port),
                                             "--next",
                                             spec.next_addr + ":" + std::to_string(spec.next_port),
                                             "--bytes",
                                             std::to_string(spec.message_bytes),
                                             "--compute-ms",
                                             std::to_string(spec.compute_ms),
                                             "--peer-timeout-ms",
                                             std::to_string(spec.peer_timeout_ms),
                                             "--reconnect-budget-ms",
                                             std::to_string(spec.reconnect_budget_ms),
                                             "--duration-s",
                                             std::to_string((spec.max_duration_ms + 999) / 1000),
                                             "--transport",
                                             spec.transport,
                                             "--dscp",
                                             std::to_string(spec.dscp)};
  argv.insert(argv.end(), workload.begin(), workload.end());
  return argv;
}

core::Result<std::unique_ptr<WorkloadHandle>> LocalAgent::startWorkload(
    const std::vector<RankSpec>& ranks, int64_t origin_ns, WorkloadListener* listener) {
  for (const auto& spec : ranks) {
    if (spec.transport == "exec" && !options_.allow_exec) {
      return Status(StatusCode::kPermissionDenied,
                    "rank " + std::to_string(spec.rank) +
                        " is an external workload (a command run as this agent's user), and this "
                        "agent does not run commands for its controller: start it with "
                        "--allow-exec (serve --allow-exec for the embedded agent)");
    }
    if (spec.verbs_shim && options_.verbs_shim_library.empty()) {
      return Status(StatusCode::kFailedPrecondition,
                    "rank " + std::to_string(spec.rank) +
                        " must load the verbs fault library (the scenario arms verbs faults), and "
                        "this agent was not given one (agent --verbs-shim)");
    }
  }
  auto workload = std::make_unique<LocalWorkload>(origin_ns, listener);
  const VerbsShimLoad shim{options_.verbs_shim_library, options_.verbs_shim_dir};
  for (const auto& spec : ranks) {
    sys::SpawnSpec spawn;
    spawn.argv = rankArgv(options_.self_exe, spec, shim);
    spawn.netns = spec.netns;
    spawn.capture_stdout = true;
    if (!options_.log_dir.empty()) {
      spawn.stderr_path = options_.log_dir + "/rank-" + std::to_string(spec.rank) + ".log";
    }
    auto child = launcher_.spawn(spawn);
    if (!child.isOk()) {
      workload->stop(1000);  // the ranks already started must not linger
      return child.status().withContext("starting workload rank " + std::to_string(spec.rank) +
                                        " in " + (spec.netns.empty() ? "this host" : spec.netns));
    }
    workload->add(spec.rank, std::move(child.value()));
  }
  return std::unique_ptr<WorkloadHandle>(std::move(workload));
}

}  // namespace fabric_chaos::agent
