#include "lab/leaf_spine_switches.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "injectors/sys/flow_hash_reset.h"
#include "lab/leaf_spine_routing.h"

namespace fabric_chaos::lab {

using core::Status;
using core::StatusCode;

LeafSpineSwitches::LeafSpineSwitches(sys::CommandRunner& runner, sys::NetnsSysctls& sysctls,
                                     std::string prefix, LeafSpineShape shape,
                                     std::string routing_dir, IpErrorRules rules)
    : runner_(runner),
      sysctls_(sysctls),
      prefix_(std::move(prefix)),
      shape_(shape),
      routing_dir_(std::move(routing_dir)),
      rules_(rules) {}

Status LeafSpineSwitches::build(const LeafSpineBuild& plan, const Progress& progress) {
  progress("creating " + std::to_string(plan.namespaces.size()) + " namespaces: " +
           std::to_string(shape_.leaves) + " leaves, " + std::to_string(shape_.spines) + " spines" +
           (plan.namespaces.size() > static_cast<size_t>(shape_.leaves + shape_.spines)
                ? " and their hosts"
                : ""));
  FC_RETURN_IF_ERROR(addSwitchNamespace(runner_, plan.namespaces.front(), rules_));
  for (size_t i = 1; i < plan.namespaces.size(); ++i) {
    FC_RETURN_IF_ERROR(runIp(runner_, {"netns", "add", plan.namespaces[i]}, rules_));
  }
  progress("setting forwarding, ECMP hashing (five-tuple) and link-down detection on the switches");
  for (const NetnsSysctl& setting : plan.sysctls) {
    FC_RETURN_IF_ERROR(sysctls_.set(setting.netns, setting.key, setting.value));
  }
  progress("cabling, addressing and routing (" + std::to_string(plan.ip_commands.size()) +
           " ip commands)");
  for (const auto& command : plan.ip_commands) FC_RETURN_IF_ERROR(runIp(runner_, command, rules_));
  return startRouting(progress);
}

Status LeafSpineSwitches::ensureFiveTupleHashing(const Progress& progress) {
  const std::vector<NetnsPort> ports = leafHostPorts(prefix_, shape_);
  int added = 0;
  for (const NetnsPort& port : ports) {
    auto present = sys::hasFlowHashReset(port.netns, port.ifname);
    if (!present.isOk()) return present.status();
    if (*present) continue;
    FC_RETURN_IF_ERROR(sys::attachFlowHashReset(port.netns, port.ifname));
    ++added;
  }
  if (added == 0) return Status::ok();
  progress("flow-hash reset on " +
           (added == static_cast<int>(ports.size()) ? "all " : std::to_string(added) + " of ") +
           std::to_string(ports.size()) +
           " leaf host ports (tc ingress BPF): switches hash each flow's five-tuple, and without "
           "it a Linux sender's random socket hash would pick the spine");
  return Status::ok();
}

Status LeafSpineSwitches::startRouting(const Progress& progress) {
  auto version = runner_.run({"bird", "--version"});
  if (!version.isOk()) {
    return Status(StatusCode::kFailedPrecondition,
                  "the leaf-spine lab runs BGP with BIRD 2 on its switches, and `bird` cannot be "
                  "started here (" +
                      version.status().message() +
                      "); install Debian's bird2 package (deploy/install-deps.sh does)");
  }
  std::error_code ec;
  std::filesystem::create_directories(routing_dir_, ec);
  if (ec) {
    return Status(StatusCode::kInternal, "cannot create " + routing_dir_ + ": " + ec.message());
  }
  const std::vector<SwitchRouting> routing = leafSpineRouting(prefix_, shape_, routing_dir_);
  progress("starting BGP (BIRD) on " + std::to_string(routing.size()) + " switches");
  for (const SwitchRouting& sw : routing) {
    {
      std::ofstream out(sw.config_path);
      out << sw.config;
      if (!out) return Status(StatusCode::kInternal, "cannot write " + sw.config_path);
    }
    // bird daemonises once its configuration is read, so a bad one fails here with its reason.
    auto started = runner_.run({"ip", "netns", "exec", sw.netns, "bird", "-c", sw.config_path, "-s",
                                sw.socket_path, "-P", sw.pid_path});
    if (!started.isOk()) return started.status().withContext("starting BIRD on " + sw.netns);
    if (started->exit_code != 0) {
      return Status(StatusCode::kInternal, "BIRD did not start on " + sw.netns + " (exit " +
                                               std::to_string(started->exit_code) +
                                               "): " + started->err + started->out);
    }
  }
  return waitForConvergence(progress);
}

std::string LeafSpineSwitches::routingProblem() {
  std::string problem;
  for (const auto& sw : describeLeafSpine("", prefix_, shape_).switches) {
    auto pids = runner_.run({"ip", "netns", "pids", sw.netns});
    if (!pids.isOk() || pids->exit_code != 0 || pids->out.empty()) {
      problem += (problem.empty() ? "no BGP daemon in " : ", ") + sw.netns;
    }
  }
  if (!problem.empty()) return problem;
  return missingRoutes();
}

std::string LeafSpineSwitches::missingRoutes() {
  std::string missing;
  for (const LeafRoutes& leaf : expectedLeafRoutes(prefix_, shape_)) {
    auto routes = runner_.run({"ip", "-n", leaf.netns, "-j", "route", "show", "proto", "bird"});
    const nlohmann::json doc =
        routes.isOk() && routes->exit_code == 0
            ? nlohmann::json::parse(routes->out, nullptr, /*allow_exceptions=*/false)
            : nlohmann::json();
    for (const std::string& subnet : unconvergedSubnets(leaf, doc)) {
      missing += (missing.empty() ? "" : ", ") + leaf.netns + " -> " + subnet;
    }
  }
  return missing;
}

Status LeafSpineSwitches::waitForConvergence(const Progress& progress) {
  // Sessions come up within about a second; 30 s leaves room for a loaded machine.
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::seconds(30);
  for (std::string missing = missingRoutes(); !missing.empty(); missing = missingRoutes()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(StatusCode::kUnavailable,
                    "BGP did not converge within 30 s; still missing (or short of paths): " +
                        missing + "; see the BIRD logs in " + routing_dir_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  progress("BGP converged in " + std::to_string(ms) +
           " ms: every leaf reaches every other leaf's hosts through all " +
           std::to_string(shape_.spines) + " spines");
  return Status::ok();
}

}  // namespace fabric_chaos::lab
