#include "app/local_stack.h"

#include <pthread.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "core/command_line.h"
#include "core/log.h"

namespace fabric_chaos::app {

sigset_t blockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

std::string selfExePath() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).string();
}

std::vector<std::string> ibFaultTargets(const scenarios::Fabric& fabric) {
  std::vector<std::string> keys;
  const std::string netns = fabric.ib->simulator ? fabric.ib->simulator->netns : "";
  auto portKey = [&](const std::string& node, const std::string& port) {
    try {
      keys.push_back(
          injectors::lockKeys(injectors::IbPortTarget{node, std::stoi(port), netns}).front());
    } catch (const std::exception&) {
      // Not a port number: not an IB port this fabric could name.
    }
  };
  for (const auto& sw : fabric.switches) {
    for (const auto& port : sw.ports) portKey(sw.name, port);
  }
  for (const auto& link : fabric.links) {
    // A channel adapter's NIC is "port<N>" (lab/ib_lab_plan.h describeIbLab).
    const size_t digits = link.nic.find_first_of("0123456789");
    if (digits != std::string::npos) portKey(link.host, link.nic.substr(digits));
  }
  for (const auto& sm : fabric.ib->subnet_managers) {
    keys.push_back(injectors::lockKeys(injectors::SubnetManagerTarget{"", sm.host, netns}).front());
  }
  return keys;
}

std::vector<std::string> fabricFaultTargets(const std::vector<scenarios::Fabric>& fabrics) {
  std::set<std::string> names;
  auto add = [&](const std::string& netns, const std::string& ifname) {
    if (!ifname.empty()) names.insert(netns.empty() ? ifname : netns + "/" + ifname);
  };
  for (const auto& fabric : fabrics) {
    if (fabric.ib) {
      // An IB subnet's ports and SMs, by their lock keys: its "ports" are not interfaces.
      for (const std::string& key : ibFaultTargets(fabric)) names.insert(key);
      continue;
    }
    for (const auto& host : fabric.hosts) {
      if (!(host.agent.empty() || host.agent == "local")) continue;
      for (const auto& nic : host.nics) add(host.netns, nic.name);
    }
    // Switch ports are always driven by the embedded agent (the engine sends switch-side faults
    // to "local"); a real fabric's belong to the network, never to this host (its port names
    // could be this host's own NICs), and the engine refuses them.
    if (fabric.kind == "real") continue;
    for (const auto& sw : fabric.switches) {
      for (const auto& port : sw.ports) add(sw.netns, port);
    }
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> fabricNamespaces(const std::vector<scenarios::Fabric>& fabrics) {
  std::set<std::string> names{""};
  for (const auto& fabric : fabrics) {
    for (const auto& host : fabric.hosts) {
      if (host.agent.empty() || host.agent == "local") names.insert(host.netns);
    }
    for (const auto& sw : fabric.switches) names.insert(sw.netns);
  }
  return {names.begin(), names.end()};
}

core::Result<std::vector<std::string>> parseInterfaceList(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& item : core::splitCommaList(text)) {
    const size_t slash = item.find('/');
    const std::string netns = slash == std::string::npos ? "" : item.substr(0, slash);
    const std::string ifname = slash == std::string::npos ? item : item.substr(slash + 1);
    // IFNAMSIZ is 16 with the terminating NUL.
    if ((slash != std::string::npos && netns.empty()) || ifname.empty() || ifname.size() > 15 ||
        ifname.find('/') != std::string::npos || item.find(' ') != std::string::npos) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "--allow-interface: \"" + item +
                              "\" is not NS/IF or IF (an interface name of 1-15 characters, "
                              "optionally after a namespace and a slash)");
    }
    out.push_back(item);
  }
  return out;
}

std::vector<std::string> serveManagementInterfaces(const std::string& listen_address,
                                                   const std::string& proc_net_route,
                                                   const std::vector<agent::NetdevInfo>& netdevs) {
  std::set<std::string> names{"lo"};
  if (std::string route = agent::defaultRouteInterface(proc_net_route); !route.empty()) {
    names.insert(route);
  }
  const bool wildcard = listen_address.empty() || listen_address == "0.0.0.0" ||
                        listen_address == "::" || listen_address == "[::]";
  if (!wildcard) {
    for (const auto& dev : netdevs) {
      if (!dev.address.empty() && dev.address == listen_address) names.insert(dev.name);
    }
  }
  return {names.begin(), names.end()};
}

agent::TargetGuard makeServeTargetGuard(scenarios::FabricCatalog& fabrics,
                                        const ServeGuardOptions& options) {
  agent::TargetGuard guard;
  // The list is asked for inside every fault apply, concurrently for the ports of one instant, so
  // it is kept until the catalog's version moves: building it from list() copied every fabric.
  struct CachedAllowlist {
    std::mutex mu;
    std::optional<uint64_t> version;
    std::vector<std::string> names;
  };
  auto cache = std::make_shared<CachedAllowlist>();
  guard.allowed = [&fabrics, cache, extra = options.extra_allowed] {
    const std::optional<uint64_t> version = fabrics.version();
    std::lock_guard lock(cache->mu);
    if (!version || version != cache->version) {
      std::vector<std::string> allowed = fabricFaultTargets(fabrics.list());
      for (const auto& name : extra) {
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
          allowed.push_back(name);
        }
      }
      cache->names = std::move(allowed);
      cache->version = version;
    }
    return cache->names;
  };
  if (options.allow_management) {
    core::logWarn(
        "serve: --allow-management-interface: faults MAY TARGET THE INTERFACES CARRYING THIS "
        "SERVER'S OWN API AND AGENT CONNECTIONS (lo, the default route's) when they are on the "
        "allowlist; a fault there can cut this server off");
    return guard;
  }
  std::ifstream route_file("/proc/net/route");
  std::ostringstream route;
  route << route_file.rdbuf();
  auto probe = agent::makeSystemHostProbe();
  guard.management =
      serveManagementInterfaces(options.listen_address, route.str(), probe->netdevs());
  return guard;
}

core::Result<injectors::RegistryOptions> registryOptionsFromFlag(
    const std::optional<std::string>& loss_backend) {
  injectors::RegistryOptions options;
  if (!loss_backend) return options;
  options.loss_backend = injectors::parseLossBackend(*loss_backend);
  if (!options.loss_backend) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "--loss-backend must be netem or nftables, got '" + *loss_backend + "'");
  }
  return options;
}

namespace {

injectors::RegistryOptions withSelfExe(injectors::RegistryOptions options,
                                       const std::string& self_exe) {
  if (options.self_exe.empty()) options.self_exe = self_exe;
  return options;
}

}  // namespace

std::string prepareVerbsShimDir(const std::string& state_dir) {
  const std::string dir = state_dir + "/verbs";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec) std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  if (ec) {
    core::logWarn("cannot create " + dir + " (" + ec.message() +
                  "); the verbs_* fault kinds are left out");
    return "";
  }
  return dir;
}

std::string verbsShimLibraryFor(const std::string& self_exe) {
  const std::filesystem::path above = std::filesystem::path(self_exe).parent_path().parent_path();
  for (const auto& library : {above / "verbs_shim" / "libfabric-chaos-verbs.so",
                              above / "lib" / "fabric-chaos" / "libfabric-chaos-verbs.so"}) {
    std::error_code ec;
    if (std::filesystem::exists(library, ec)) return library.lexically_normal().string();
  }
  return "";
}

LocalStack::LocalStack(const std::string& self_exe, const std::string& log_dir,
                       agent::TargetGuard guard, const injectors::RegistryOptions& registry_options,
                       std::function<std::vector<std::string>()> netdev_namespaces,
                       const std::string& version, const std::string& verbs_dir, bool allow_exec)
    : links(sys::makeNetlinkLinkControl()),
      nftables(sys::makeLibNftables()),
      qdiscs(sys::makeNetlinkQdiscs()),
      emitters(sys::makeProcessEmitters(log_dir + "/emitters", sys::makeForkExecLauncher())),
      forwarding(sys::makeKernelForwarding()),
      dcb(sys::makeKernelDcb()),
      pfc_switches(sys::makeProcessPfcSwitchControl()),
      daemons(sys::makeDaemonControl()),
      commands(sys::makeCommandRunner()),
      ib_ports(sys::makeIbPortCommand(commands.get(), self_exe)),
      verbs_shims(verbs_dir.empty() ? nullptr : sys::makeVerbsShimChannel(verbs_dir)),
      rdma_control(sys::makeNetlinkRdmaDeviceControl()),
      ip_config(sys::makeNetlinkIpConfig()),
      registry(injectors::makeRegistry(
          {links.get(), nftables.get(), qdiscs.get(), emitters.get(), forwarding.get(), dcb.get(),
           pfc_switches.get(), daemons.get(), ib_ports.get(), verbs_shims.get(), rdma_control.get(),
           ip_config.get()},
          withSelfExe(registry_options, self_exe))),
      launcher(sys::makeForkExecLauncher()),
      rdma(sys::makeSysfsRdmaDevices()),
      local_agent(
          *registry, *launcher,
          {self_exe, log_dir, std::move(guard), version, agent::makeSystemHostProbe()->hostname(),
           links.get(), rdma.get(), std::move(netdev_namespaces),
           verbs_dir.empty() ? "" : verbsShimLibraryFor(self_exe), verbs_dir, verbs_shims.get(),
           allow_exec}) {
  if (const int strays = emitters->stopRecorded(1000); strays > 0) {
    core::logWarn("stopped " + std::to_string(strays) +
                  " fault emitter(s) a previous run of this program left running (" + log_dir +
                  "/emitters)");
  }
}

}  // namespace fabric_chaos::app
