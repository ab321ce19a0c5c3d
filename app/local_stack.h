#pragma once
// The real injector adapters, the fault registry over them and the LocalAgent that drives both:
// what `serve` and `agent` each run faults and ranks on this host with. Members are built in
// declaration order and destroyed in reverse, so the agent never outlives what it points at.
// Built once by the main thread; not movable. Also builds serve's blast-radius guard for the
// embedded agent (allowlist from the registered fabrics plus --allow-interface, management
// interfaces never); the guard's functions are pure except makeServeTargetGuard, which reads /proc.

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_service.h"
#include "agent/local_agent.h"
#include "injectors/registry.h"
#include "injectors/sys/command.h"
#include "injectors/sys/daemon_control.h"
#include "injectors/sys/dcb.h"
#include "injectors/sys/emitters.h"
#include "injectors/sys/forwarding.h"
#include "injectors/sys/ib_port_command.h"
#include "injectors/sys/ip_config.h"
#include "injectors/sys/links.h"
#include "injectors/sys/nftables.h"
#include "injectors/sys/pfc_switch_control.h"
#include "injectors/sys/process.h"
#include "injectors/sys/qdisc.h"
#include "injectors/sys/rdma_device_control.h"
#include "injectors/sys/rdma_devices.h"
#include "injectors/sys/verbs_shim_channel.h"
#include "scenarios/services.h"

namespace fabric_chaos::app {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts later) and
// ignores SIGPIPE; returns the blocked set for sigwait. Call from main before any thread starts.
sigset_t blockStopSignals();

// The running fabric-chaos binary (/proc/self/exe), or "" when it cannot be read.
std::string selfExePath();

// Every interface the embedded agent may fault on these fabrics, as "netns/ifname" ("ifname" in
// the initial namespace): each switch port, and each NIC of a host the local agent drives (a host
// with a remote agent URL is that agent's business: its "eth0" is not this machine's). An IB
// fabric (one with an "ib" section) contributes ibFaultTargets instead. Sorted, no duplicates.
std::vector<std::string> fabricFaultTargets(const std::vector<scenarios::Fabric>& fabrics);

// The lock keys (injectors/model/target.h) of an IB fabric's faultable things: every cabled port
// of its switches and channel adapters ("ib/<netns>/<node>/<port>") and every SM
// ("sm/node/<host>/<netns>"). `fabric.ib` must be set.
std::vector<std::string> ibFaultTargets(const scenarios::Fabric& fabric);

// The namespaces the embedded agent reports netdevs of: its own ("") plus those of the hosts it
// drives and of every switch (see fabricFaultTargets). Sorted, no duplicates.
std::vector<std::string> fabricNamespaces(const std::vector<scenarios::Fabric>& fabrics);

// --allow-interface's value: comma-separated "NS/IF" or "IF" (initial namespace). kInvalidArgument
// naming the bad entry.
core::Result<std::vector<std::string>> parseInterfaceList(const std::string& text);

// The initial-namespace interfaces that carry serve's own API and agent connections: lo, the
// default route's interface (from the text of /proc/net/route) and the one holding
// listen_address (lo for a loopback address; none more for a wildcard). Sorted, no duplicates.
std::vector<std::string> serveManagementInterfaces(const std::string& listen_address,
                                                   const std::string& proc_net_route,
                                                   const std::vector<agent::NetdevInfo>& netdevs);

struct ServeGuardOptions {
  std::string listen_address;              // serve's --listen address, without the port
  std::vector<std::string> extra_allowed;  // --allow-interface, parsed
  bool allow_management = false;           // --allow-management-interface
};

// Serve's guard: allowed = fabricFaultTargets(fabrics.list()) + extra_allowed, re-read on every
// check; management = serveManagementInterfaces from this host's /proc/net/route and netdevs, or
// none when allow_management (logged as a warning).
// `--loss-backend VALUE` of serve and agent: "netem" or "nftables"; nullopt (auto) when the flag
// is absent; kInvalidArgument for anything else.
core::Result<injectors::RegistryOptions> registryOptionsFromFlag(
    const std::optional<std::string>& loss_backend);

agent::TargetGuard makeServeTargetGuard(scenarios::FabricCatalog& fabrics,
                                        const ServeGuardOptions& options);

// <state_dir>/verbs, where shim-loaded RDMA programs (FABRIC_CHAOS_VERBS_DIR) put their control
// sockets and the verbs kinds arm them through, made mode 0700: whoever can reach a socket can
// fault that program, so only the agent's user may (the programs must run as that user, or as
// root). "" (and a warning) when it cannot be made: the verbs kinds are then left out.
std::string prepareVerbsShimDir(const std::string& state_dir);

// The verbs fault library that belongs to this program, which workload ranks load when a
// scenario arms verbs faults: <dir of self_exe>/../verbs_shim/libfabric-chaos-verbs.so in the
// build tree, <prefix>/lib/fabric-chaos/libfabric-chaos-verbs.so when installed (self_exe in
// <prefix>/bin); "" when neither is there.
std::string verbsShimLibraryFor(const std::string& self_exe);

struct LocalStack {
  // `self_exe` is started as `self_exe workload ...`; rank logs go to `log_dir`. Without a guard
  // the agent faults any interface (agent mode, where AgentService checks first).
  // registry_options: `--loss-backend`.
  // netdev_namespaces: the namespaces whose netdevs the agent reports besides its own (serve:
  // fabricNamespaces of the registered fabrics); version: what the agent reports as its own.
  // verbs_dir: where shim-loaded programs put their control sockets (FABRIC_CHAOS_VERBS_DIR);
  // "" leaves the verbs kinds out. allow_exec: --allow-exec (agent::LocalAgentOptions).
  LocalStack(const std::string& self_exe, const std::string& log_dir, agent::TargetGuard guard = {},
             const injectors::RegistryOptions& registry_options = {},
             std::function<std::vector<std::string>()> netdev_namespaces = {},
             const std::string& version = "", const std::string& verbs_dir = "",
             bool allow_exec = false);
  LocalStack(const LocalStack&) = delete;
  LocalStack& operator=(const LocalStack&) = delete;

  std::unique_ptr<sys::LinkControl> links;
  std::unique_ptr<sys::Nftables> nftables;
  std::unique_ptr<sys::Qdiscs> qdiscs;
  // Long-running faults' processes, recorded in log_dir/emitters; the ones a crashed incarnation
  // left are stopped when the stack is built.
  std::unique_ptr<sys::Emitters> emitters;
  // What a leaf's FIB does with a flow (hot_spot's ECMP steering).
  std::unique_ptr<sys::Forwarding> forwarding;
  // pfc_config's backends: NICs' DCB, and the PFC agents of lab switches.
  std::unique_ptr<sys::Dcb> dcb;
  std::unique_ptr<sys::PfcSwitchControl> pfc_switches;
  std::unique_ptr<sys::DaemonControl> daemons;
  std::unique_ptr<sys::CommandRunner> commands;
  std::unique_ptr<sys::IbPortCommand> ib_ports;  // this program's `ib-port`, through `commands`
  std::unique_ptr<sys::VerbsShimChannel> verbs_shims;  // null without a verbs_dir
  // The rdma_* device kinds' RDMA netlink and the IP configuration of their netdevs.
  std::unique_ptr<sys::RdmaDeviceControl> rdma_control;
  std::unique_ptr<sys::IpConfig> ip_config;
  std::unique_ptr<injectors::Registry> registry;
  std::unique_ptr<sys::ProcessLauncher> launcher;
  std::unique_ptr<sys::RdmaDevices> rdma;
  agent::LocalAgent local_agent;
};

}  // namespace fabric_chaos::app
