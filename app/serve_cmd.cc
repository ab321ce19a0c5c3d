// `fabric-chaos serve`: wires store, injectors, local agent, engine, API and HTTP transport,
// optionally brings up the namespace lab and runs one scenario with a progress display.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <sstream>

#include "agent/local_agent.h"
#include "agent/remote_agent.h"
#include "app/agent_directory.h"
#include "app/builtin_scenarios.h"
#include "app/cli.h"
#include "app/fabric_registrar.h"
#include "app/guardian.h"
#include "app/lease_heartbeat.h"
#include "app/local_stack.h"
#include "app/serve_metrics.h"
#include "app/version.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/periodic_task.h"
#include "core/run_state.h"
#include "core/steady_clock.h"
#include "injectors/sys/command.h"
#include "injectors/sys/process.h"
#include "lab/fabric_catalog.h"
#include "lab/netns_lab.h"
#include "lab/switch_telemetry.h"
#include "scenarios/engine/engine.h"
#include "scenarios/engine/fabric_agents.h"
#include "scenarios/schedule/scheduler.h"
#include "scenarios/schedule/suite_runner.h"
#include "server/api/api.h"
#include "server/auth/secret_file.h"
#include "server/auth/tokens.h"
#include "server/http/server.h"
#include "server/metrics/serve_metrics.h"
#include "store/retention.h"
#include "store/store.h"

namespace fabric_chaos::app {
namespace {

// How often retention looks for runs to prune (after a first look at start).
constexpr int64_t kRetentionPeriodMs = 3'600'000;

constexpr const char* kServeUsage = R"(Usage: fabric-chaos serve [options]

Options:
  --listen ADDR:PORT   where the REST API and dashboard listen (default 127.0.0.1:8080)
  --db PATH            SQLite database (default /var/lib/fabric-chaos/fabric-chaos.db)
  --state-dir DIR      runtime state: lab fabrics, rank logs (default /run/fabric-chaos)
  --web-root DIR       dashboard files (default: web/dist of the source tree, built by
                       `npm run build` in web/)
  --with-lab N         bring up an N-host namespace lab first; Ctrl-C removes it again
  --demo SCENARIO      run SCENARIO once with a progress display, print its score, keep serving
  --exit-after-demo    stop after the demo run (exit 0 if its gates passed, 1 if not)
  --admin-token-file PATH
                       where the first start writes the admin API token, mode 0600 (default:
                       admin.token next to --db)
  --no-auth            no API tokens: every caller is an anonymous admin (a trusted host only)
  --tls-cert PATH      serve HTTPS with this PEM certificate (chain); needs --tls-key
  --tls-key PATH       the PEM private key of --tls-cert
  --agent-ca PATH      the CA that signed the agents' certificates (https:// agent URLs);
                       default: the system's trusted CAs
  --agent-cert PATH    the controller's client certificate, for agents that verify their
                       clients (agent --tls-client-ca); needs --agent-key
  --agent-key PATH     the PEM private key of --agent-cert
  --agent-token-file PATH
                       the agents' shared token, for hosts that register themselves (agent
                       --register; default /etc/fabric-chaos/agent.token)
  --allow-interface NS/IF[,NS/IF]
                       also let faults target these interfaces ("IF" alone: the initial
                       namespace); every NIC and switch port of a registered fabric is allowed
  --allow-management-interface
                       let faults target the interfaces carrying this server's connections (lo,
                       the default route's, the --listen one) when allowed: dangerous
  --loss-backend netem|nftables
                       packet_loss's default backend (default: netem when the kernel has
                       sch_netem, else nftables); a fault's params.backend overrides it
  --local-lease-ms N   the embedded agent's faults' lease (default 15000; 0 = none): if a run
                       holding a fault shows no progress for this long (serve wedged, stopped,
                       deadlocked), the guardian kills serve and reverts its faults
  --agent-lease-ms N   the lease of faults on remote agents (default 5000, 1000 to 600000): an
                       agent whose controller stops renewing reverts them this long after the
                       last renewal. Renewals go every third of it, one request per fault: 0.6
                       per agent per second by default, 750/s for 1,250 agents; a longer lease
                       costs fewer, but a dead controller's faults outlive it longer
  --allow-exec         the embedded agent runs external workloads (docs/workloads.md): commands
                       a scenario names, run as serve's user; and workloads whose launcher is
                       "slurm" are submitted with srun. Off by default
  --retain-samples AGE keep the raw samples and telemetry of finished runs for AGE (30d, 12h,
                       90m, 3600s); older runs keep their score, analysis, events, a plot
                       envelope of their samples and thinned telemetry (docs/durability.md,
                       "Retention"). Checked at start and then hourly. Default: keep all
  --retain-runs N      the same for every finished run but the newest N
)";

core::FlagRules serveFlagRules() {
  return {{"listen", "db", "state-dir", "web-root", "with-lab", "demo", "admin-token-file",
           "allow-interface", "tls-cert", "tls-key", "agent-ca", "agent-cert", "agent-key",
           "agent-token-file", "loss-backend", "local-lease-ms", "agent-lease-ms", "retain-samples",
           "retain-runs"},
          {"help", "exit-after-demo", "allow-management-interface", "no-auth", "allow-exec"}};
}

// "SIGTERM from pid 1234 (fabric-chaos run ...)": who stopped us, for the log.
std::string describeStopSignal(const siginfo_t& info) {
  std::string out = info.si_signo == SIGINT ? "SIGINT" : "SIGTERM";
  if (info.si_code == SI_USER || info.si_code == SI_QUEUE) {
    out += " from pid " + std::to_string(info.si_pid);
    std::ifstream cmdline("/proc/" + std::to_string(info.si_pid) + "/cmdline");
    std::string command((std::istreambuf_iterator<char>(cmdline)), {});
    std::replace(command.begin(), command.end(), '\0', ' ');
    if (!command.empty()) out += " (" + command.substr(0, 200) + ")";
  } else if (info.si_code == SI_KERNEL) {
    out += " from the kernel (a terminal's Ctrl-C)";
  }
  return out;
}

// Waits up to timeout_ms (< 0: for ever) for SIGINT/SIGTERM (blocked in every thread); true when
// one arrived, with who sent it in *why. An interruption by another signal is not a stop.
bool waitForSignal(int timeout_ms, std::string* why = nullptr) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const int64_t deadline_ns =
      timeout_ms < 0 ? -1 : core::steadyNowNs() + int64_t{timeout_ms} * 1'000'000;
  while (true) {
    siginfo_t info{};
    int64_t left_ns = deadline_ns < 0 ? -1 : deadline_ns - core::steadyNowNs();
    if (deadline_ns >= 0 && left_ns < 0) left_ns = 0;
    timespec ts{static_cast<time_t>(left_ns / 1'000'000'000),
                static_cast<long>(left_ns % 1'000'000'000)};
    const int signo = sigtimedwait(&set, &info, left_ns < 0 ? nullptr : &ts);
    if (signo > 0) {
      if (why != nullptr) *why = describeStopSignal(info);
      return true;
    }
    if (errno != EINTR || (deadline_ns >= 0 && core::steadyNowNs() >= deadline_ns)) return false;
  }
}

std::string fmt(double value, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << value;
  return out.str();
}

std::string msText(const nlohmann::json& value) {
  if (value.is_null()) return "n/a";
  return fmt(value.get<double>(), 0) + " ms";
}

void printRunSummary(store::Store& store, int64_t run_id, const std::string& base_url,
                     const std::string& db_path) {
  auto run = store.getRun(run_id);
  if (!run.isOk()) {
    std::cout << "run " << run_id << ": " << run.status().message() << "\n";
    return;
  }
  std::cout << "\nrun " << run_id << " (" << run->scenario_name << " on " << run->fabric
            << "): " << run->state;
  if (run->score) std::cout << ", resilience score " << fmt(*run->score, 1) << "/100";
  std::cout << "\n";
  if (!run->error.empty()) std::cout << "  error: " << run->error << "\n";
  const auto& analysis = run->result.value("analysis", nlohmann::json::object());
  if (analysis.contains("baseline_busbw_gbps")) {
    std::cout << "  baseline busbw " << fmt(analysis["baseline_busbw_gbps"].get<double>(), 3)
              << " GB/s over " << analysis.value("baseline_iterations", 0) << " iterations\n";
  }
  for (const auto& step : analysis.value("steps", nlohmann::json::array())) {
    std::cout << "  step " << step.value("step", 0) << ": detect "
              << msText(step.value("time_to_detect_ms", nlohmann::json())) << ", recover "
              << msText(step.value("time_to_recover_ms", nlohmann::json())) << ", retained "
              << fmt(100 * step.value("retained", 0.0), 0) << "%, worst busbw "
              << fmt(step.value("worst_busbw_gbps", 0.0), 3) << " GB/s, longest stall "
              << fmt(step.value("longest_stall_ms", 0.0), 0) << " ms, step score "
              << fmt(step.value("score", 0.0), 1) << "\n";
  }
  for (const auto& gate : run->result.value("gates", nlohmann::json::array())) {
    std::cout << "  gate " << gate.value("gate", "") << ": "
              << (gate.value("passed", false) ? "passed" : "FAILED") << " ("
              << gate.value("detail", "") << ")\n";
  }
  if (run->attributes.contains("loss_backend")) {
    std::cout << "  packet loss backend: " << run->attributes["loss_backend"].get<std::string>()
              << "\n";
  }
  std::cout << "Where to look:\n"
            << "  run        " << base_url << "/v1/runs/" << run_id << "\n"
            << "  samples    " << base_url << "/v1/runs/" << run_id << "/samples\n"
            << "  events     " << base_url << "/v1/runs/" << run_id << "/events\n"
            << "  dashboard  " << base_url << "/\n"
            << "  database   " << db_path << "\n";
}

// Follows a run until it ends: one rewritten line on a terminal, plain lines otherwise.
// Returns false when interrupted by a signal.
bool followRun(scenarios::Engine& engine, store::Store& store, int64_t run_id) {
  const bool tty = isatty(STDOUT_FILENO);
  std::string last_state;
  int64_t last_plain_print_ms = 0;
  for (;;) {
    if (waitForSignal(200)) return false;
    auto run = store.getRun(run_id);
    if (!run.isOk()) return true;
    if (core::isFinalRunState(run->state)) {
      if (tty) std::cout << "\n";
      return true;
    }
    auto live = engine.live(run_id);
    std::string state = live ? live->state : run->state;
    std::ostringstream line;
    line << "[run " << run_id << "] " << std::left << std::setw(10) << state;
    if (live) {
      line << " " << std::right << std::setw(6) << fmt(live->elapsed_ms / 1000, 1) << " s"
           << "  busbw " << fmt(live->last_busbw_gbps, 3) << " GB/s"
           << "  ranks ready " << live->ready_ranks << "  faults active " << live->active_faults
           << "  samples " << live->samples;
    }
    const int64_t now_ms = core::wallNowMs();
    if (tty) {
      std::cout << "\r\033[K" << line.str() << std::flush;
    } else if (state != last_state || now_ms - last_plain_print_ms >= 2000) {
      std::cout << line.str() << std::endl;
      last_plain_print_ms = now_ms;
    }
    last_state = state;
  }
}

// First start: creates the admin token and writes its secret to token_file (0600). A token
// whose secret could not be written is revoked again, or nobody could ever use it and no later
// start would create another.
core::Status provideAdminToken(store::Store& store, const std::string& token_file) {
  auto secret = auth::ensureAdminToken(store);
  if (!secret.isOk()) return secret.status();
  if (!secret->has_value()) return core::Status::ok();
  if (core::Status written = auth::writeSecretFile(token_file, **secret); !written.isOk()) {
    if (auto hash = auth::sha256Hex(**secret); hash.isOk()) {
      if (auto token = store.tokenByHash(*hash); token.isOk()) (void)store.revokeToken(token->id);
    }
    return written.withContext("cannot write the admin token file (--admin-token-file)");
  }
  std::cout << "admin token written to " << token_file << " (shown once)" << std::endl;
  return core::Status::ok();
}

}  // namespace

int serveMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv, serveFlagRules());
  if (!flags.error.empty()) {
    std::cerr << "fabric-chaos serve: " << flags.error << "\n\n" << kServeUsage;
    return 2;
  }
  if (flags.has("help")) {
    std::cout << kServeUsage;
    return 0;
  }
  const std::string listen = flags.getOr("listen", "127.0.0.1:8080");
  auto registry_options = registryOptionsFromFlag(flags.get("loss-backend"));
  if (!registry_options.isOk()) {
    std::cerr << "fabric-chaos serve: " << registry_options.status().message() << "\n";
    return 2;
  }
  int64_t local_lease_ms = 15000;
  try {
    size_t used = 0;
    const std::string text = flags.getOr("local-lease-ms", "15000");
    local_lease_ms = std::stoll(text, &used);
    if (used != text.size() || local_lease_ms < 0) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    std::cerr << "fabric-chaos serve: --local-lease-ms must be a whole number of ms >= 0\n";
    return 2;
  }
  int64_t agent_lease_ms = 5000;
  try {
    size_t used = 0;
    const std::string text = flags.getOr("agent-lease-ms", "5000");
    agent_lease_ms = std::stoll(text, &used);
    if (used != text.size() || agent_lease_ms < 1000 || agent_lease_ms > 600000) {
      throw std::invalid_argument(text);
    }
  } catch (const std::exception&) {
    std::cerr << "fabric-chaos serve: --agent-lease-ms must be a whole number of ms from 1000 to "
                 "600000 (the agents' own limit)\n";
    return 2;
  }
  auto retention_policy =
      store::retentionPolicyFromFlags(flags.get("retain-samples"), flags.get("retain-runs"));
  if (!retention_policy.isOk()) {
    std::cerr << "fabric-chaos serve: " << retention_policy.status().message() << "\n";
    return 2;
  }
  const std::string db_path = flags.getOr("db", "/var/lib/fabric-chaos/fabric-chaos.db");
  const std::string state_dir = flags.getOr("state-dir", "/run/fabric-chaos");
  const std::string web_root = flags.getOr("web-root", FC_DEFAULT_WEB_ROOT);
  http::ServerOptions http_options;
  {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      std::cerr << "fabric-chaos serve: --listen must be ADDR:PORT, got " << listen << "\n";
      return 2;
    }
    http_options.address = listen.substr(0, colon);
    try {
      http_options.port = static_cast<uint16_t>(std::stoi(listen.substr(colon + 1)));
    } catch (const std::exception&) {
      std::cerr << "fabric-chaos serve: bad port in --listen " << listen << "\n";
      return 2;
    }
  }
  http_options.web_root = web_root;
  http_options.is_bulk = api::isBulkRead;
  http_options.tls_cert_file = flags.getOr("tls-cert", "");
  http_options.tls_key_file = flags.getOr("tls-key", "");
  if (http_options.tls_cert_file.empty() != http_options.tls_key_file.empty()) {
    std::cerr << "fabric-chaos serve: --tls-cert and --tls-key go together (HTTPS needs both)\n";
    return 2;
  }

  net::TlsOptions agent_tls;
  agent_tls.ca_file = flags.getOr("agent-ca", "");
  agent_tls.cert_file = flags.getOr("agent-cert", "");
  agent_tls.key_file = flags.getOr("agent-key", "");
  if (agent_tls.cert_file.empty() != agent_tls.key_file.empty()) {
    std::cerr << "fabric-chaos serve: --agent-cert and --agent-key go together\n";
    return 2;
  }
  for (const std::string* file : {&agent_tls.ca_file, &agent_tls.cert_file, &agent_tls.key_file}) {
    if (!file->empty() && !std::ifstream(*file)) {
      std::cerr << "fabric-chaos serve: cannot read " << *file << ": " << std::strerror(errno)
                << "\n";
      return 2;
    }
  }

  // One serve per database; then the guardian, forked while no thread exists yet, reverts the
  // embedded agent's faults if this process dies (app/guardian.h). Declared before everything
  // they outlive: the lock is released and the clean-exit byte sent after the engine has shut down.
  std::error_code db_dir_ec;
  if (auto parent = std::filesystem::path(db_path).parent_path(); !parent.empty()) {
    std::filesystem::create_directories(parent, db_dir_ec);
  }
  auto guardian_sys = makeSystemGuardianSys();
  auto db_lock = acquireServeLock(*guardian_sys, db_path);
  if (!db_lock.isOk()) {
    std::cerr << "fabric-chaos serve: " << db_lock.status().message() << "\n";
    return 1;
  }
  struct LockRelease {
    int fd;
    ~LockRelease() { close(fd); }
  } db_lock_release{*db_lock};
  auto guardian = startGuardian({db_path, state_dir, selfExePath(), local_lease_ms, agent_tls});
  if (!guardian.isOk()) {
    std::cerr << "fabric-chaos serve: cannot start the guardian that reverts faults if serve "
                 "dies: "
              << guardian.status().message() << "\n";
    return 1;
  }

  // Signals are taken synchronously by the main thread; block them before any thread starts.
  blockStopSignals();

  std::error_code ec;
  if (auto parent = std::filesystem::path(db_path).parent_path(); !parent.empty()) {
    std::filesystem::create_directories(parent, ec);
  }
  std::filesystem::create_directories(state_dir + "/logs", ec);
  // GET /metrics: measured as requests and store writes happen, the rest read at scrape time
  // from sources filled in below, once they exist (the server starts after that).
  MetricsSources metric_sources;
  metrics::ServeMetrics serve_metrics(FABRIC_CHAOS_VERSION, [&metric_sources] {
    return metric_sources.engine != nullptr ? gatherMetrics(metric_sources)
                                            : metrics::MetricsSnapshot{};
  });
  auto store_result =
      store::Store::open(db_path, [&serve_metrics](std::string_view operation, double seconds) {
        serve_metrics.observeStoreWrite(operation, seconds);
      });
  if (!store_result.isOk()) {
    std::cerr << "fabric-chaos serve: cannot open the database " << db_path << ": "
              << store_result.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<store::Store> store = std::move(store_result.value());
  const bool require_auth = !flags.has("no-auth");
  if (require_auth) {
    const std::string token_file =
        flags.getOr("admin-token-file",
                    (std::filesystem::path(db_path).parent_path() / "admin.token").string());
    if (core::Status s = provideAdminToken(*store, token_file); !s.isOk()) {
      std::cerr << "fabric-chaos serve: " << s.message() << "\n";
      return 1;
    }
  } else {
    std::cout << "WARNING: authentication is OFF (--no-auth): every API caller is an anonymous "
                 "admin"
              << std::endl;
  }
  for (const auto& builtin : builtinScenarios()) {
    auto doc = nlohmann::json::parse(builtin.json, nullptr, false);
    if (core::Status s = store->putScenario(builtin.name, doc, true); !s.isOk()) {
      core::logError("cannot seed built-in scenario " + builtin.name + ": " + s.toString());
    }
  }
  for (const auto& builtin : builtinSuites()) {
    auto doc = nlohmann::json::parse(builtin.json, nullptr, false);
    if (core::Status s = store->putSuite(builtin.name, doc, true); !s.isOk()) {
      core::logError("cannot seed built-in suite " + builtin.name + ": " + s.toString());
    }
  }

  lab::DirectoryFabricCatalog catalog(state_dir);
  // Blast radius: the embedded agent faults only the registered fabrics' interfaces and these.
  auto extra_allowed = parseInterfaceList(flags.getOr("allow-interface", ""));
  if (!extra_allowed.isOk()) {
    std::cerr << "fabric-chaos serve: " << extra_allowed.status().message() << "\n";
    return 2;
  }
  LocalStack stack(
      selfExePath(), state_dir + "/logs",
      makeServeTargetGuard(
          catalog, {http_options.address, *extra_allowed, flags.has("allow-management-interface")}),
      *registry_options, [&catalog] { return fabricNamespaces(catalog.list()); },
      FABRIC_CHAOS_VERSION, prepareVerbsShimDir(state_dir), flags.has("allow-exec"));
  agent::LocalAgent& local_agent = stack.local_agent;
  core::SteadyClock clock;
  // Hosts that name an agent URL (the VM lab, real hosts) are driven over HTTP.
  AppAgentDirectory agents(local_agent, remoteAgentFactory(agent_tls, agent_lease_ms));
  // Every modelled lab switch's queues (and PFC agent), read every 100 ms during a run.
  const auto switch_telemetry = lab::makeKernelSwitchTelemetry(state_dir);
  // Slurm job steps (workload.launcher "slurm") run the scenario's command on the cluster: only
  // with --allow-exec, like the agents' ranks.
  const auto processes = sys::makeForkExecLauncher();
  const auto commands = sys::makeCommandRunner();
  const auto slurm =
      flags.has("allow-exec")
          ? scenarios::makeSlurmSubmitter(*processes, *commands, state_dir + "/slurm-steps")
          : nullptr;
  scenarios::EngineOptions engine_options;
  engine_options.self_exe = selfExePath();
  scenarios::Engine engine(
      {store.get(), &agents, &catalog, &clock, switch_telemetry.get(), slurm.get()},
      engine_options);
  // Scenarios are validated against the agents of the fabric they target, not this kernel.
  scenarios::FabricAgents fabric_agents(agents);

  auto recovery = engine.recoverAtStartup();
  if (!recovery.isOk()) {
    std::cerr << "fabric-chaos serve: start-up recovery failed: " << recovery.status().message()
              << "\n";
    return 1;
  }
  if (recovery->reverted + recovery->failed > 0 || !recovery->interrupted.empty()) {
    core::logWarn("start-up recovery: reverted " + std::to_string(recovery->reverted) +
                  " leftover fault(s), " + std::to_string(recovery->failed) +
                  " could not be reverted, " + std::to_string(recovery->interrupted.size()) +
                  " run(s) marked interrupted");
  }
  // A suite run's worker thread died with the previous process: its verdict cannot come now.
  if (auto suite_runs = store->interruptUnfinishedSuiteRuns(); !suite_runs.isOk()) {
    core::logWarn("start-up recovery: " + suite_runs.status().toString());
  } else if (!suite_runs->empty()) {
    core::logWarn("start-up recovery: " + std::to_string(suite_runs->size()) +
                  " suite run(s) marked interrupted");
  }

  std::unique_ptr<sys::CommandRunner> runner;
  std::unique_ptr<sys::Offloads> offloads;
  std::unique_ptr<sys::NetnsSysctls> sysctls;
  std::unique_ptr<lab::NetnsLab> lab;
  if (flags.has("with-lab")) {
    lab::LabOptions lab_options;
    lab_options.state_dir = state_dir;
    try {
      lab_options.hosts = std::stoi(flags.getOr("with-lab", "4"));
    } catch (const std::exception&) {
      std::cerr << "fabric-chaos serve: --with-lab needs a number of hosts\n";
      return 2;
    }
    runner = sys::makeCommandRunner();
    offloads = sys::makeEthtoolOffloads();
    sysctls = sys::makeProcSysctls();
    lab = std::make_unique<lab::NetnsLab>(*runner, *offloads, *sysctls, lab_options);
    auto fabric =
        lab->up([](const std::string& line) { std::cout << "lab: " << line << std::endl; });
    if (!fabric.isOk()) {
      std::cerr << "fabric-chaos serve: " << fabric.status().message() << "\n";
      return 1;
    }
  }

  api::ApiDeps deps;
  deps.store = store.get();
  deps.runs = &engine;
  deps.faults = &engine;
  deps.fabrics = &catalog;
  deps.capabilities = [&] { return local_agent.capabilities(); };
  deps.kinds = [&fabric_agents](const scenarios::Fabric& fabric) {
    return fabric_agents.kindCatalog(fabric);
  };
  deps.fabric_agents = [&fabric_agents](const scenarios::Fabric& fabric) {
    return fabric_agents.describe(fabric);
  };
  deps.version = FABRIC_CHAOS_VERSION;
  deps.require_auth = require_auth;
  // Agents started with --register join a real fabric in the state directory.
  FabricRegistrar registrar(catalog, state_dir,
                            flags.getOr("agent-token-file", "/etc/fabric-chaos/agent.token"));
  deps.register_agent = [&registrar](const scenarios::AgentRegistration& registration) {
    return registrar.record(registration);
  };
  deps.live = [&engine](int64_t run_id) -> nlohmann::json {
    auto live = engine.live(run_id);
    if (!live) return nullptr;
    return {{"state", live->state},
            {"elapsed_ms", live->elapsed_ms},
            {"last_busbw_gbps", live->last_busbw_gbps},
            {"samples", live->samples},
            {"active_faults", live->active_faults},
            {"ready_ranks", live->ready_ranks}};
  };
  metric_sources = {store.get(), &engine, &catalog, &fabric_agents};
  deps.metrics_text = [&serve_metrics] { return serve_metrics.text(); };
  deps.observe_request = [&serve_metrics](const std::string& method, const std::string& route,
                                          int status, double seconds) {
    serve_metrics.observeRequest(method, route, status, seconds);
  };
  scenarios::schedule::SubmitDeps submit_deps{store.get(), &engine, &catalog, deps.kinds,
                                              deps.default_fabric};
  scenarios::schedule::SuiteRunner suite_runner(submit_deps);
  deps.suites = &suite_runner;
  scenarios::schedule::Scheduler scheduler({submit_deps, &suite_runner, nullptr});
  api::Api api(deps);
  auto server = http::Server::start(
      http_options, [&](const api::Request& request) { return api.handle(request); },
      [&](const api::Request& request, api::Response* refusal) {
        return api.openStream(request, refusal);
      });
  int exit_code = 0;
  std::optional<core::PeriodicTask> retention;  // started below, once serving
  auto cleanup = [&] {
    // Schedules and suites first, so that nothing submits a run to an engine shutting down.
    if (retention) retention->stop();
    scheduler.shutdown();
    suite_runner.shutdown();
    engine.shutdown();  // reverts any fault still in force
    if (server.isOk()) server.value()->stop();
    api.flushRefusalSummaries();  // the open windows' counts of refused requests
    if (lab) {
      (void)lab->down([](const std::string& line) { std::cout << "lab: " << line << std::endl; });
    }
  };
  if (!server.isOk()) {
    std::cerr << "fabric-chaos serve: " << server.status().message() << "\n";
    cleanup();
    return 1;
  }
  const std::string base_url = (http_options.tls_cert_file.empty() ? "http://" : "https://") +
                               http_options.address + ":" + std::to_string(server.value()->port());
  engine.start();
  scheduler.start();
  // The embedded agent's lease: renewed while no run holding a fault is stuck. Destroyed before
  // the guardian's handle (declared earlier), so the clean-exit byte follows the last beat.
  std::optional<LeaseHeartbeat> lease;
  if (local_lease_ms > 0) {
    GuardianHandle* handle = guardian->get();
    lease.emplace(
        std::max<int64_t>(local_lease_ms / 5, 1),
        [&engine, local_lease_ms] { return !engine.holdsFaultsWithoutProgress(local_lease_ms); },
        [handle] { handle->heartbeat(); });
  }
  // Retention: a pass at start, then hourly, on its own thread; deletes go a few thousand rows per
  // transaction, so that the runs in progress keep writing.
  if (retention_policy->enabled()) {
    retention.emplace(kRetentionPeriodMs, [&store, policy = *retention_policy] {
      auto pass = store::runRetentionPass(*store, policy, core::wallNowMs());
      if (!pass.isOk()) {
        std::cerr << "retention: " << pass.status().message() << std::endl;
        return;
      }
      for (const store::PruneReport& pruned : pass->pruned) {
        std::cout << "retention: " << store::describePrune(pruned) << std::endl;
      }
      if (pass->pages_released > 0) {
        std::cout << "retention: " << pass->pages_released << " database pages given back"
                  << std::endl;
      }
    });
  }
  std::cout << "fabric-chaos " << FABRIC_CHAOS_VERSION << " serving on " << base_url
            << " (database " << db_path << ")" << std::endl;

  bool interrupted = false;
  if (auto demo = flags.get("demo")) {
    auto record = store->getScenario(*demo);
    auto scenario = record.isOk() ? scenarios::parseScenario(record->document)
                                  : core::Result<scenarios::Scenario>(record.status());
    auto run_id =
        scenario.isOk()
            ? engine.submit(*scenario, scenario->fabric.empty() ? "netns-lab" : scenario->fabric)
            : core::Result<int64_t>(scenario.status());
    if (!run_id.isOk()) {
      std::cerr << "fabric-chaos serve: cannot start scenario " << *demo << ": "
                << run_id.status().message() << "\n";
      exit_code = 1;
    } else {
      std::cout << "running scenario " << *demo << " as run " << *run_id << std::endl;
      interrupted = !followRun(engine, *store, *run_id);
      if (!interrupted) {
        printRunSummary(*store, *run_id, base_url, db_path);
        auto run = store->getRun(*run_id);
        exit_code = run.isOk() && run->state == "passed" ? 0 : 1;
      }
    }
  }
  if (!interrupted && !flags.has("exit-after-demo")) {
    std::cout << "Serving until Ctrl-C" << (lab ? " (which also removes the lab)" : "") << "."
              << std::endl;
    std::string why;
    waitForSignal(-1, &why);
    std::cout << "\n" << why << ": shutting down" << std::endl;
  } else {
    std::cout << "\nshutting down" << std::endl;
  }
  cleanup();
  return exit_code;
}

}  // namespace fabric_chaos::app
