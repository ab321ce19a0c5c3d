// `fabric-chaos agent-sim`: many simulated agents in one process (agent/simulated_agent.h), each
// the real AgentService behind its own HTTP listener on a loopback port, so that a controller can
// be driven against a fleet-sized fabric on one machine (bench/fanout_bench). It writes the
// fleet's inventory for `fabric import --inventory`, and on SIGTERM/SIGINT what each agent was
// asked to do and when.

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string_view>
#include <vector>

#include "agent/agent_service.h"
#include "agent/simulated_agent.h"
#include "app/cli.h"
#include "app/local_stack.h"
#include "app/version.h"
#include "core/log.h"
#include "server/http/server.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kAgentSimUsage =
    R"(Usage: fabric-chaos agent-sim --agents N --token-file PATH --inventory-out FILE
                          --record FILE [options]

Serves N simulated agents on 127.0.0.1:BASE .. BASE+N-1: each is the real agent API (leases,
journal, workload reports) over a pretend host that records faults instead of applying them and
runs workload ranks on its own loopback address (127.1.x.y). For measuring a controller against
a large fleet on one machine; nothing on this machine is faulted.

Options:
  --agents N           how many (1 to 5000)
  --base-port P        the first agent's port (default 17100)
  --token-file PATH    the agents' shared bearer token
  --inventory-out FILE writes the fleet as an inventory (`fabric import --inventory FILE`):
                       fabric NAME, hosts sim0000.. labelled pool=sim, one NIC eth0 each,
                       64 hosts per leaf
  --fabric NAME        the inventory's fabric name (default sim)
  --record FILE        on SIGTERM or SIGINT, writes {"entries": [{"agent", "action", "kind",
                       "steady_ns"}], "renewals"}: every apply and revert the agents were asked
                       for, with this machine's CLOCK_MONOTONIC, and how many lease renewals
                       they received
  --state-dir DIR      agent journals and rank logs (default /dev/shm/fabric-chaos-agent-sim:
                       one disk's fsyncs would serialize what a fleet does in parallel)
  --lease-check-ms MS  how often each agent looks for expired leases (default 500; the real
                       agent's 100 ms times N wake-ups would load the machine being measured)
)";

int usageError(const std::string& problem) {
  std::cerr << "fabric-chaos agent-sim: " << problem << "\n\n" << kAgentSimUsage;
  return 2;
}

std::string simHostName(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "sim%04d", i);
  return name;
}

// 127.1.0.1 .. : a loopback address per host, so that each rank listens on its own address.
std::string simAddress(int i) {
  return "127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
}

constexpr int kHostsPerLeaf = 64;

nlohmann::json inventory(const std::string& fabric, const std::string& token_file, int agents,
                         int base_port) {
  nlohmann::json leaves = nlohmann::json::array();
  for (int l = 0; l * kHostsPerLeaf < agents; ++l) {
    leaves.push_back({{"name", "leaf" + std::to_string(l)}, {"uplinks", nlohmann::json::array()}});
  }
  nlohmann::json hosts = nlohmann::json::array();
  for (int i = 0; i < agents; ++i) {
    hosts.push_back({{"name", simHostName(i)},
                     {"address", "127.0.0.1"},
                     {"agent", "http://127.0.0.1:" + std::to_string(base_port + i)},
                     {"labels", {{"pool", "sim"}}},
                     {"nics",
                      {{{"name", "eth0"},
                        {"address", simAddress(i)},
                        {"leaf", "leaf" + std::to_string(i / kHostsPerLeaf)},
                        {"port", "Ethernet" + std::to_string(i % kHostsPerLeaf)}}}}});
  }
  return {{"name", fabric},
          {"agent", {{"scheme", "http"}, {"token_file", token_file}}},
          {"spines", nlohmann::json::array()},
          {"leaves", leaves},
          {"hosts", hosts}};
}

struct SimulatedHost {
  std::unique_ptr<agent::SimulatedHostProbe> probe;
  std::unique_ptr<agent::SimulatedAgent> agent;
  std::unique_ptr<agent::AgentService> service;
  std::unique_ptr<http::Server> server;
};

}  // namespace

int agentSimMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv,
                                 {{"agents", "base-port", "token-file", "inventory-out", "fabric",
                                   "record", "state-dir", "lease-check-ms"},
                                  {"help"}});
  if (!flags.error.empty()) return usageError(flags.error);
  if (flags.has("help")) {
    std::cout << kAgentSimUsage;
    return 0;
  }
  for (const char* required : {"agents", "token-file", "inventory-out", "record"}) {
    if (!flags.has(required)) return usageError(std::string("--") + required + " is required");
  }
  int agents = 0;
  int base_port = 0;
  int lease_check_ms = 0;
  try {
    agents = std::stoi(*flags.get("agents"));
    base_port = std::stoi(flags.getOr("base-port", "17100"));
    lease_check_ms = std::stoi(flags.getOr("lease-check-ms", "500"));
  } catch (const std::exception&) {
    return usageError("--agents, --base-port and --lease-check-ms take numbers");
  }
  if (agents < 1 || agents > 5000) return usageError("--agents must be 1 to 5000");
  if (base_port < 1 || base_port + agents > 65536) {
    return usageError("the ports " + std::to_string(base_port) + ".." +
                      std::to_string(base_port + agents - 1) + " do not fit");
  }
  if (lease_check_ms < 10) return usageError("--lease-check-ms must be at least 10");
  const std::string token_file = *flags.get("token-file");
  std::ifstream token_in(token_file);
  std::string token;
  std::getline(token_in, token);
  if (token.empty()) return usageError("no token in " + token_file);
  const std::string state_dir = flags.getOr("state-dir", "/dev/shm/fabric-chaos-agent-sim");
  std::error_code ec;
  std::filesystem::create_directories(state_dir + "/journals", ec);
  std::filesystem::create_directories(state_dir + "/logs", ec);

  const sigset_t signals = blockStopSignals();
  // The one real agent: parameter checks, the kind list, and the ranks of the workload hosts.
  LocalStack stack(selfExePath(), state_dir + "/logs", {}, {}, {}, FABRIC_CHAOS_VERSION);
  agent::FanoutRecorder recorder;
  std::atomic<int64_t> renewals{0};  // lease renewals the controller sent, all agents together
  std::vector<SimulatedHost> hosts(static_cast<size_t>(agents));
  for (int i = 0; i < agents; ++i) {
    SimulatedHost& host = hosts[static_cast<size_t>(i)];
    const std::string name = simHostName(i);
    host.probe = std::make_unique<agent::SimulatedHostProbe>(name, "eth0", simAddress(i));
    host.agent = std::make_unique<agent::SimulatedAgent>(i, name, "eth0", simAddress(i),
                                                         stack.local_agent, recorder);
    agent::AgentServiceOptions options;
    options.token = token;
    options.agent_id = name;
    options.version = FABRIC_CHAOS_VERSION;
    options.journal_path = state_dir + "/journals/" + name + ".json";
    options.lease_check_ms = lease_check_ms;
    host.service = std::make_unique<agent::AgentService>(*host.agent, *host.probe, options);
    host.service->startLeaseThread();
    http::ServerOptions http_options;
    http_options.address = "127.0.0.1";
    http_options.port = static_cast<uint16_t>(base_port + i);
    http_options.threads = 1;
    auto* service = host.service.get();
    auto server =
        http::Server::start(http_options, [service, &renewals](const core::HttpRequest& request) {
          const std::string_view target = request.target;
          if (target.size() > 6 && target.substr(target.size() - 6) == "/renew") ++renewals;
          return service->handle(request);
        });
    if (!server.isOk()) {
      std::cerr << "fabric-chaos agent-sim: agent " << name << ": " << server.status().message()
                << "\n";
      for (auto& started : hosts) {
        if (started.server) started.server->stop();
        if (started.service) started.service->shutdown(0);
      }
      return 1;
    }
    host.server = std::move(server).value();
  }
  const std::string inventory_path = *flags.get("inventory-out");
  std::ofstream(inventory_path)
      << inventory(flags.getOr("fabric", "sim"), token_file, agents, base_port).dump(2) << "\n";
  std::cout << "fabric-chaos agent-sim: " << agents << " agents on 127.0.0.1:" << base_port << ".."
            << base_port + agents - 1 << ", inventory " << inventory_path << std::endl;

  int signo = 0;
  while (sigwait(&signals, &signo) != 0) {
  }
  for (auto& host : hosts) host.server->stop();
  for (auto& host : hosts) host.service->shutdown(0);
  const std::string record_path = *flags.get("record");
  nlohmann::json record = recorder.toJson();
  record["renewals"] = renewals.load();
  std::ofstream(record_path) << record.dump() << "\n";
  std::cout << "fabric-chaos agent-sim: wrote " << recorder.entries().size() << " actions to "
            << record_path << std::endl;
  return 0;
}

}  // namespace fabric_chaos::app
