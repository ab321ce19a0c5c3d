// `fabric-chaos agent`: the per-host agent a remote controller drives over HTTP (docs/agent.md).
// Wires the real injector adapters and a LocalAgent behind an AgentService, serves it with the
// Beast transport, and on SIGTERM/SIGINT reverts every fault it holds before exiting.

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "agent/agent_service.h"
#include "agent/local_agent.h"
#include "agent/registration_client.h"
#include "app/cli.h"
#include "app/local_stack.h"
#include "app/version.h"
#include "core/command_line.h"
#include "core/log.h"
#include "core/text.h"
#include "server/http/server.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kAgentUsage =
    R"(Usage: fabric-chaos agent (--token T | --token-file PATH) [options]

Runs the per-host agent: an authenticated HTTP API (docs/agent.md) through which a controller
applies and reverts faults on this host and runs workload ranks here. Every fault holds a lease:
if the controller stops renewing it, the agent reverts it on its own. On start-up the agent
reverts what a previous agent process left applied; on SIGTERM or SIGINT it reverts every fault
it holds and exits (0 when every revert succeeded).

Options:
  --listen ADDR:PORT   where the API listens (default 0.0.0.0:7100; port 0 picks a free one)
  --token T            the shared bearer token (visible in `ps`; prefer --token-file)
  --token-file PATH    a file holding the token (surrounding whitespace is ignored)
  --allow IF,IF        the only interfaces faults may target: "eth0" in this host's namespace,
                       "ns/eth0" in namespace ns (default: any interface but the management one)
  --mgmt-if IF,IF      interfaces never touched because they carry the controller's connection
                       (default: the interface of the default route, plus the one holding the
                       --listen address when it is a specific address)
  --state-dir DIR      the fault journal lives here (default /run/fabric-chaos-agent), and
                       the verbs shims' control sockets in DIR/verbs (FABRIC_CHAOS_VERBS_DIR)
  --log-dir DIR        workload rank logs (default <state-dir>/logs)
  --agent-id ID        the name reported in /agent/v1/info (default: the hostname)
  --loss-backend netem|nftables
                       packet_loss's default backend (default: netem when the kernel has
                       sch_netem, else nftables); a fault's params.backend overrides it
  --tls-cert PATH      serve HTTPS with this PEM certificate (chain); needs --tls-key
  --tls-key PATH       the PEM private key of --tls-cert
  --tls-client-ca PATH only clients presenting a certificate this CA signed get in (the
                       controller's --agent-cert); needs --tls-cert
  --register URL       register with the controller at URL (serve's base URL) now and every
                       30 s: it records this host, its NICs and --labels in a real fabric, so
                       a fleet needs no hand-written host list (docs/deployment.md)
  --register-token-file PATH
                       an operator token of that controller (needed with --register)
  --register-ca PATH   the CA that signed the controller's certificate (default: the system's)
  --advertise URL      where the controller reaches this agent (default: http(s)://<hostname>:
                       <port>, https when --tls-cert is given)
  --fabric NAME        the fabric to register into (default registered)
  --labels K=V,K=V     this host's labels in that fabric, e.g. rail=3,leaf=leaf07,rack=r12
  --allow-exec         run external workloads (docs/workloads.md): commands the controller
                       names, run as this agent's user. Off by default: without it such ranks
                       are refused
)";

core::FlagRules agentFlagRules() {
  return {
      {"listen", "token", "token-file", "allow", "mgmt-if", "state-dir", "log-dir", "agent-id",
       "loss-backend", "tls-cert", "tls-key", "tls-client-ca", "register", "register-token-file",
       "register-ca", "advertise", "fabric", "labels", "register-interval-ms"},
      {"help", "allow-exec"}};
}

std::string readFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::ostringstream out;
  if (in) out << in.rdbuf();
  return out.str();
}

int usageError(const std::string& problem) {
  std::cerr << "fabric-chaos agent: " << problem << "\n\n" << kAgentUsage;
  return 2;
}

}  // namespace

int agentMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv, agentFlagRules());
  if (!flags.error.empty()) return usageError(flags.error);
  if (flags.has("help")) {
    std::cout << kAgentUsage;
    return 0;
  }

  auto registry_options = registryOptionsFromFlag(flags.get("loss-backend"));
  if (!registry_options.isOk()) return usageError(registry_options.status().message());
  http::ServerOptions http_options;
  const std::string listen = flags.getOr("listen", "0.0.0.0:7100");
  {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return usageError("--listen must be ADDR:PORT, got " + listen);
    http_options.address = listen.substr(0, colon);
    if (http_options.address.size() > 2 && http_options.address.front() == '[' &&
        http_options.address.back() == ']') {
      http_options.address = http_options.address.substr(1, http_options.address.size() - 2);
    }
    try {
      const int port = std::stoi(listen.substr(colon + 1));
      if (port < 0 || port > 65535) throw std::out_of_range("port");
      http_options.port = static_cast<uint16_t>(port);
    } catch (const std::exception&) {
      return usageError("bad port in --listen " + listen);
    }
  }
  // Long polls hold a worker each while they wait.
  http_options.threads = 8;
  http_options.tls_cert_file = flags.getOr("tls-cert", "");
  http_options.tls_key_file = flags.getOr("tls-key", "");
  http_options.tls_client_ca_file = flags.getOr("tls-client-ca", "");
  if (http_options.tls_cert_file.empty() != http_options.tls_key_file.empty()) {
    return usageError("--tls-cert and --tls-key go together (HTTPS needs both)");
  }
  if (!http_options.tls_client_ca_file.empty() && http_options.tls_cert_file.empty()) {
    return usageError("--tls-client-ca needs HTTPS: give --tls-cert and --tls-key too");
  }
  for (const char* needs_register :
       {"register-token-file", "register-ca", "advertise", "fabric", "labels"}) {
    if (flags.has(needs_register) && !flags.has("register")) {
      return usageError(std::string("--") + needs_register + " goes with --register URL");
    }
  }
  std::map<std::string, std::string> labels;
  for (const std::string& pair : core::splitCommaList(flags.getOr("labels", ""))) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return usageError("--labels takes K=V pairs separated by commas, got " + pair);
    }
    labels[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  std::string register_token;
  if (flags.has("register")) {
    if (!flags.has("register-token-file")) {
      return usageError("--register needs --register-token-file (an operator token of serve)");
    }
    bool ok = false;
    register_token = core::trimWhitespace(readFile(*flags.get("register-token-file"), &ok));
    if (!ok || register_token.empty()) {
      std::cerr << "fabric-chaos agent: cannot read a token from "
                << *flags.get("register-token-file") << "\n";
      return 1;
    }
  }
  int register_interval_ms = 30000;
  try {
    register_interval_ms = std::stoi(flags.getOr("register-interval-ms", "30000"));
    if (register_interval_ms < 100) throw std::out_of_range("interval");
  } catch (const std::exception&) {
    return usageError("--register-interval-ms must be a number of ms >= 100");
  }

  std::string token;
  if (flags.has("token") == flags.has("token-file")) {
    return usageError("give the shared token with exactly one of --token and --token-file");
  }
  if (auto path = flags.get("token-file")) {
    bool ok = false;
    token = core::trimWhitespace(readFile(*path, &ok));
    if (!ok) {
      std::cerr << "fabric-chaos agent: cannot read the token file " << *path << "\n";
      return 1;
    }
  } else {
    token = core::trimWhitespace(flags.getOr("token", ""));
  }
  if (token.empty()) return usageError("the token is empty");
  if (token.size() < 16) core::logWarn("agent: the token is shorter than 16 characters");

  const std::string state_dir = flags.getOr("state-dir", "/run/fabric-chaos-agent");
  const std::string log_dir = flags.getOr("log-dir", state_dir + "/logs");
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  std::filesystem::create_directories(state_dir, ec);
  if (ec || !std::filesystem::is_directory(state_dir)) {
    std::cerr << "fabric-chaos agent: cannot create the state directory " << state_dir << ": "
              << ec.message() << "\n";
    return 1;
  }

  const std::string verbs_dir = prepareVerbsShimDir(state_dir);

  // Signals are taken synchronously by the main thread; block them before any thread starts.
  const sigset_t signals = blockStopSignals();

  LocalStack stack(selfExePath(), log_dir, {}, *registry_options, {}, FABRIC_CHAOS_VERSION,
                   verbs_dir, flags.has("allow-exec"));
  agent::LocalAgent& local_agent = stack.local_agent;
  auto probe = agent::makeSystemHostProbe();

  agent::AgentServiceOptions options;
  options.token = token;
  options.agent_id = flags.getOr("agent-id", "");
  options.version = FABRIC_CHAOS_VERSION;
  options.allowed_interfaces = core::splitCommaList(flags.getOr("allow", ""));
  options.journal_path = state_dir + "/agent-journal.json";
  options.rdma_netdev = [&control = *stack.rdma_control](
                            const injectors::RdmaPortTarget& port) -> core::Result<std::string> {
    auto link = control.port(port.device, port.port);
    if (!link.isOk()) return link.status();
    return link->netdev;
  };
  if (auto mgmt = flags.get("mgmt-if")) {
    options.management_interfaces = core::splitCommaList(*mgmt);
  } else {
    bool ok = false;
    const std::string route = agent::defaultRouteInterface(readFile("/proc/net/route", &ok));
    if (!route.empty()) options.management_interfaces.push_back(route);
  }
  const std::string& address = http_options.address;
  const bool wildcard =
      address == "0.0.0.0" || address == "::" || address.rfind("127.", 0) == 0 || address == "::1";
  if (!wildcard) {
    for (const auto& dev : probe->netdevs()) {
      if (dev.address == address &&
          std::find(options.management_interfaces.begin(), options.management_interfaces.end(),
                    dev.name) == options.management_interfaces.end()) {
        options.management_interfaces.push_back(dev.name);
      }
    }
  }
  if (options.management_interfaces.empty()) {
    core::logWarn(
        "agent: no management interface known (no default route and no --mgmt-if); faults may "
        "target any interface, including the one the controller reaches this agent through");
  }

  agent::AgentService service(local_agent, *probe, options);
  const auto recovery = service.recoverJournal();
  if (recovery.reverted + recovery.failed > 0) {
    core::logWarn("agent: start-up recovery reverted " + std::to_string(recovery.reverted) +
                  " fault(s) a previous agent left applied; " + std::to_string(recovery.failed) +
                  " could not be reverted (retrying)");
  }
  service.startLeaseThread();

  auto server = http::Server::start(
      http_options, [&](const core::HttpRequest& request) { return service.handle(request); });
  if (!server.isOk()) {
    std::cerr << "fabric-chaos agent: " << server.status().message() << "\n";
    service.shutdown(1000);
    return 1;
  }
  std::string allowed;
  for (const auto& name : options.allowed_interfaces)
    allowed += (allowed.empty() ? "" : ",") + name;
  std::string mgmt;
  for (const auto& name : options.management_interfaces) mgmt += (mgmt.empty() ? "" : ",") + name;
  core::logInfo("agent: allowlist " + (allowed.empty() ? "(any)" : allowed) +
                ", management interface(s) " + (mgmt.empty() ? "(none)" : mgmt) + ", journal " +
                options.journal_path);
  std::cout << "fabric-chaos agent listening on " << address << ":" << server.value()->port()
            << (http_options.tls_cert_file.empty() ? " (http)"
                : http_options.tls_client_ca_file.empty()
                    ? " (https)"
                    : " (https, client certificates signed by " + http_options.tls_client_ca_file +
                          ")")
            << std::endl;

  std::unique_ptr<agent::RegistrationClient> registration;
  if (auto controller = flags.get("register")) {
    const std::string scheme = http_options.tls_cert_file.empty() ? "http" : "https";
    const bool any_address = address == "0.0.0.0" || address == "::";
    const std::string host = any_address                              ? probe->hostname()
                             : address.find(':') != std::string::npos ? "[" + address + "]"
                                                                      : address;
    agent::RegistrationClientOptions client;
    client.controller_url = *controller;
    client.token = register_token;
    client.tls.ca_file = flags.getOr("register-ca", "");
    client.interval_ms = register_interval_ms;
    nlohmann::json nics = nlohmann::json::array();
    for (const auto& dev : agent::registrationNics(probe->netdevs(), options.allowed_interfaces,
                                                   options.management_interfaces)) {
      nics.push_back({{"name", dev.name}, {"address", dev.address}});
    }
    client.registration = {
        {"fabric", flags.getOr("fabric", "registered")},
        {"host", options.agent_id.empty() ? probe->hostname() : options.agent_id},
        {"agent", flags.getOr("advertise", scheme + "://" + host + ":" +
                                               std::to_string(server.value()->port()))},
        {"labels", labels},
        {"nics", nics}};
    registration = std::make_unique<agent::RegistrationClient>(std::move(client));
  }

  int signo = 0;
  while (sigwait(&signals, &signo) != 0) {
  }
  registration.reset();
  core::logInfo(std::string("agent: ") + (signo == SIGTERM ? "SIGTERM" : "SIGINT") +
                ": reverting " + std::to_string(service.activeFaults()) + " active fault(s)");
  const int failed = service.shutdown(2000);
  server.value()->stop();
  if (failed > 0) {
    std::cerr << "fabric-chaos agent: " << failed
              << " fault(s) could not be reverted; the next start retries them\n";
    return 1;
  }
  return 0;
}

}  // namespace fabric_chaos::app
