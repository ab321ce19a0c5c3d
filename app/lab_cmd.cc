#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <regex>

#include "app/cli.h"
#include "app/ib_lab_cmd.h"
#include "app/slurm_lab_cmd.h"
#include "core/command_line.h"
#include "injectors/model/pfc_watchdog_config.h"
#include "injectors/sys/command.h"
#include "injectors/sys/sysctl.h"
#include "lab/ecn_model.h"
#include "lab/netns_lab.h"
#include "lab/port_model.h"
#include "lab/vm_lab.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kLabUsage =
    R"(Usage: fabric-chaos lab <up|down|status> [--kind netns|vm|ib] [options]

  up       build the lab: N hosts cabled to one bridge switch, or a leaf-spine fabric
  down     remove everything the lab made
  status   show whether the lab is up

Kinds:
  netns    (default) hosts are network namespaces fcl-h0.. on this kernel
  vm       hosts are qemu VMs vm0.. running Debian's 6.12 kernel (netem, Soft-RoCE), cabled
           through taps to bridge br0 in namespace fcv-sw0, or with --topology leaf-spine to the
           leaves fcv-l0.. of a routed leaf-spine (one rail); each runs this binary as its agent,
           reachable on 127.0.0.1:7100+i. Needs deploy/vm/fetch-kernel.sh once. See docs/vm-lab.md.
  ib       a simulated InfiniBand subnet: ibsim runs a fat tree of IB switches and channel
           adapters h0.. in namespace fcib-subnet, and 1-3 OpenSM instances manage it, with
           priorities 14, 13, 12. Fabric "ib-lab". See docs/ib.md.

Options:
  --kind KIND        netns, vm or ib (default netns)
  --hosts N          number of hosts for `up` (netns: default 4, 2..64; vm: default 2, 2..32)
  --state-dir DIR    where the fabric description is written (default /run/fabric-chaos)

Namespace lab topology (--kind netns; --topology, --leaves, --spines and --hosts-per-leaf are
also the VM lab's, whose guests have one data NIC: --rails 1):
  --topology T       star (default: hosts fcl-h0.. on bridge fcl-sw0) or leaf-spine (routed
                     leaves fcl-l0.. and spines fcl-s0.., ECMP over the spines; docs/lab.md)
  --name NAME        the lab's name and its fabric file's (default netns-lab)
  --prefix P         its namespaces' prefix, 1-8 lower-case letters, digits or '-' (default fcl)
  --subnet A.B.C     star: the hosts' /24, host i at A.B.C.(i+1) (default 10.200.0)
  --with-slurm       up, star: also a Slurm cluster made of the lab (nodes h0.., partition "lab"):
                     one munged, slurmctld in namespace <prefix>-slurmctl at A.B.C.250 on the
                     switch's bridge, one slurmd in each host namespace; its files in
                     <state-dir>/slurm/<name>/ (slurm.conf, logs), and the fabric file's "slurm"
                     names it. Submit from the controller namespace: SLURM_CONF=<that slurm.conf>
                     nsenter --net=/run/netns/fcl-slurmctl srun -N2 hostname. `lab down` always
                     removes the cluster; a plain `lab up` too. See docs/lab.md, "Slurm on the lab"
  --leaves L         leaf-spine: leaves (default 2, 2..32; a multiple of --rails)
  --spines S         leaf-spine: spines (default 2, 1..16)
  --hosts-per-leaf H leaf-spine: hosts in each leaf's group (default 2, 1..32)
  --rails R          leaf-spine: NICs per host, NIC r cabled to the rail-r leaf of its group
                     (default 1, 1..8); leaves L/R groups of R leaves
  --offloads on|off  off (default): segmentation offloads (TSO, GSO, GRO) off on every lab NIC
                     and switch port, so a packet a fault sees is one wire packet. on: the
                     kernel's defaults stay, for modelled rates of 1 Gbit/s and more on a small
                     machine (per-packet CPU caps the lab near 0.5 Gbit/s per flow otherwise); a
                     loss fault then drops super-packets of up to 64 KB. Not with --ecn or --pfc.
                     See docs/lab.md, "Port model".

Switch port model (either kind and topology; without it ports run as fast as the CPU):
  --link-rate R      every switch port sends at R (tc units: 100mbit, 1gbit, 25gbit)
  --buffer B         drop-tail buffer per traffic class and port (tc units: 64k, 512k, 2m;
                     default 256k)
  --lossless-dscp D  DSCP values of the lossless/RDMA class, e.g. 26 or 26,24 (default 26);
                     everything else is best effort. Each class gets half the rate, and all of it
                     when the other is idle. See docs/lab.md, "Port model".
  --ecn KMIN,KMAX,PMAX
                     mark ECT packets CE on every port (a BPF virtual-queue marker): none below
                     KMIN bytes of class backlog, rising to PMAX at KMAX, all above; e.g.
                     20k,80k,0.2. See docs/lab.md, "ECN marking".
  --pfc              every switch port honours 802.1Qbb PFC pause frames for the lossless class:
                     a port that receives one stops sending that priority for the pause time at
                     --link-rate, holding its frames, and sends them when the pause ends. A PFC
                     agent runs in each switch namespace; the VM lab's guests then segment to
                     their MTU themselves (no TSO towards the taps). See docs/lab.md, "PFC".
  --pfc-priority P   the 802.1p priority of the lossless class (0-7, default 3)
  --pfc-watchdog ACTION[:DETECT_MS[:RESTORE_MS]]
                     a PFC watchdog on every port, as SONiC's pfcwd: a priority paused for
                     DETECT_MS (default 200, 100-5000) is in a storm; drop discards its frames and
                     ignores its pauses, forward ignores its pauses, alert only counts; it ends
                     RESTORE_MS (default 200, 100-60000) after the last pause frame

IB lab (--kind ib; --topology fat-tree, the default):
  --leaves L, --spines S, --hosts-per-leaf H
                     the fat tree: every leaf cabled to every spine, H channel adapters per leaf
                     (defaults 2, 2, 2)
  --switch-ports P   ports per switch (default 36, 2..254)
  --subnet-managers N
                     OpenSM instances, 1-3 (default 2): sm0 on h0 is master, the others stand
                     by, each on a different leaf while there are leaves
  --sm-polling-ms MS, --sm-retries N
                     how often a standby polls the master and how many misses make it take over
                     (OpenSM's sminfo_polling_timeout and polling_retry_number; defaults 10000
                     and 4, OpenSM's own; 1000 and 2 fail over in about 3.5 s)
  --ready-timeout S  seconds the subnet may take to come up (default 60)

VM lab only:
  --cache-dir DIR    guest kernel and initramfs (default /var/cache/fabric-chaos/vm)
  --mem MB           memory per VM (default 768)
  --agent-command C  what each VM runs as its agent, through /bin/sh -c (default: this binary's
                     `agent --listen 0.0.0.0:7070 --token-file <state-dir>/vm/agent.token
                     --allow eth0 --mgmt-if eth1`, when it has an agent subcommand)
  --no-agent         boot the VMs without an agent
  --guest-init PATH  the guest's init script (default deploy/vm/guest-init.sh of this source tree)
  --boot-timeout S   seconds each VM may take to boot (default 180)
  --base-port P      VM i's agent is forwarded to 127.0.0.1:(P+i) (default 7100)
)";

core::FlagRules labFlagRules() {
  core::FlagRules rules{{"kind",
                         "hosts",
                         "state-dir",
                         "cache-dir",
                         "mem",
                         "agent-command",
                         "guest-init",
                         "boot-timeout",
                         "base-port",
                         "topology",
                         "leaves",
                         "spines",
                         "hosts-per-leaf",
                         "rails",
                         "link-rate",
                         "buffer",
                         "lossless-dscp",
                         "ecn",
                         "pfc-priority",
                         "pfc-watchdog",
                         "switch-ports",
                         "subnet-managers",
                         "sm-polling-ms",
                         "sm-retries",
                         "ready-timeout",
                         "name",
                         "prefix",
                         "subnet",
                         "offloads"},
                        {"help", "no-agent", "pfc", "with-slurm"}};
  rules.positional = true;  // the action
  return rules;
}

void print(const std::string& line) { std::cout << line << std::endl; }

// Any int is taken here: the labs check their own ranges and say them (--hosts 2..64 or 2..32).
bool parseInt(const Flags& flags, const std::string& name, int& out) {
  return readIntFlag(flags, "lab", name, out);
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// deploy/vm/guest-init.sh of the tree this binary was built from, else next to the binary.
std::string defaultGuestInit(const std::string& binary) {
  namespace fs = std::filesystem;
  const std::vector<fs::path> candidates = {
      // FC_DEFAULT_WEB_ROOT is <source>/web/dist.
      fs::path(FC_DEFAULT_WEB_ROOT).parent_path().parent_path() / "deploy/vm/guest-init.sh",
      fs::path(binary).parent_path().parent_path().parent_path() / "deploy/vm/guest-init.sh",
      "/usr/share/fabric-chaos/vm/guest-init.sh"};
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::exists(c, ec)) return c.lexically_normal().string();
  }
  return candidates[0].lexically_normal().string();
}

// --link-rate, --buffer, --lossless-dscp and --ecn; nullopt without --link-rate.
core::Result<std::optional<scenarios::EgressModel>> egressFromFlags(const Flags& flags) {
  const auto rate = flags.get("link-rate");
  if (!rate) {
    for (const char* needs_rate :
         {"buffer", "lossless-dscp", "ecn", "pfc", "pfc-priority", "pfc-watchdog"}) {
      if (flags.has(needs_rate)) {
        return core::Status(
            core::StatusCode::kInvalidArgument,
            std::string("--") + needs_rate + " models a port: give --link-rate too");
      }
    }
    return std::optional<scenarios::EgressModel>();
  }
  scenarios::EgressModel model;
  auto bps = lab::parseLinkRate(*rate);
  if (!bps.isOk()) return bps.status();
  model.rate_bps = *bps;
  auto buffer = lab::parseBufferSize(flags.getOr("buffer", "256k"));
  if (!buffer.isOk()) return buffer.status();
  model.buffer_bytes = *buffer;
  auto dscp = lab::parseDscpList(flags.getOr("lossless-dscp", "26"));
  if (!dscp.isOk()) return dscp.status();
  model.lossless_dscp = *dscp;
  if (const auto ecn = flags.get("ecn")) {
    auto marking = lab::parseEcnMarking(*ecn);
    if (!marking.isOk()) return marking.status();
    model.ecn = *marking;
  }
  for (const char* needs_pfc : {"pfc-priority", "pfc-watchdog"}) {
    if (flags.has(needs_pfc) && !flags.has("pfc")) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          std::string("--") + needs_pfc + " needs --pfc");
    }
  }
  if (flags.has("pfc")) {
    auto priority =
        core::parseFlagInteger("--pfc-priority", flags.getOr("pfc-priority", "3"), 0, 7);
    if (!priority.isOk()) return priority.status();
    model.pfc = scenarios::PfcHonouring{static_cast<int>(*priority)};
    if (const auto watchdog = flags.get("pfc-watchdog")) {
      auto config = injectors::parsePfcWatchdog(*watchdog);
      if (!config.isOk()) return config.status();
      model.pfc->watchdog = *config;
    }
  }
  FC_RETURN_IF_ERROR(lab::checkEgressModel(model));
  FC_RETURN_IF_ERROR(lab::checkEcnMarking(model));
  return std::optional<scenarios::EgressModel>(model);
}

// --name, --prefix and --subnet: which namespace lab this is, so that several live side by side.
bool readLabNaming(const Flags& flags, lab::LabOptions& options) {
  options.name = flags.getOr("name", options.name);
  options.prefix = flags.getOr("prefix", options.prefix);
  options.subnet = flags.getOr("subnet", options.subnet);
  const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  const struct {
    const char* flag;
    const std::string& value;
    std::regex pattern;
    const char* what;
  } checks[] = {
      {"name", options.name, std::regex("[A-Za-z0-9][A-Za-z0-9._-]{0,62}"),
       "letters, digits, '.', '_' or '-' (at most 63, starting with a letter or digit)"},
      {"prefix", options.prefix, std::regex("[a-z0-9-]{1,8}"),
       "1-8 lower-case letters, digits or '-'"},
      {"subnet", options.subnet, std::regex(octet + "\\." + octet + "\\." + octet),
       "three octets such as 10.200.0"},
  };
  for (const auto& check : checks) {
    if (!std::regex_match(check.value, check.pattern)) {
      std::fprintf(stderr, "fabric-chaos lab: --%s must be %s, not \"%s\"\n", check.flag,
                   check.what, check.value.c_str());
      return false;
    }
  }
  return true;
}

// --topology and the flags that go with it: nullopt for the star, the shape for the leaf-spine;
// false, having said why, when they do not fit together.
bool readTopology(const Flags& flags, std::optional<lab::LeafSpineShape>& leaf_spine) {
  const std::string topology = flags.getOr("topology", "star");
  if (topology == "leaf-spine") {
    if (flags.has("subnet")) {
      std::fprintf(stderr,
                   "fabric-chaos lab: --subnet is for the star; a leaf-spine numbers each leaf's "
                   "hosts itself (docs/lab.md)\n");
      return false;
    }
    if (flags.has("hosts")) {
      std::fprintf(stderr,
                   "fabric-chaos lab: --hosts is for the star; a leaf-spine has "
                   "(--leaves / --rails) * --hosts-per-leaf hosts\n");
      return false;
    }
    lab::LeafSpineShape shape;
    if (!parseInt(flags, "leaves", shape.leaves) || !parseInt(flags, "spines", shape.spines) ||
        !parseInt(flags, "hosts-per-leaf", shape.hosts_per_leaf) ||
        !parseInt(flags, "rails", shape.rails)) {
      return false;
    }
    leaf_spine = shape;
    return true;
  }
  if (topology == "star") {
    for (const char* leaf_spine_only : {"leaves", "spines", "hosts-per-leaf", "rails"}) {
      if (flags.has(leaf_spine_only)) {
        std::fprintf(stderr, "fabric-chaos lab: --%s is for --topology leaf-spine\n",
                     leaf_spine_only);
        return false;
      }
    }
    return true;
  }
  std::fprintf(stderr, "fabric-chaos lab: --topology must be star or leaf-spine, not \"%s\"\n",
               topology.c_str());
  return false;
}

int vmLabMain(const Flags& flags, const std::string& action) {
  if (flags.has("offloads")) {
    std::fprintf(stderr,
                 "fabric-chaos lab: --offloads is for the namespace lab (--kind netns); the VM "
                 "lab's guests keep their virtio NICs' offloads, and segment to their MTU with "
                 "--pfc\n");
    return 2;
  }
  lab::VmLabOptions options;
  if (!readTopology(flags, options.leaf_spine)) return 2;
  if (auto egress = egressFromFlags(flags); !egress.isOk()) {
    std::fprintf(stderr, "fabric-chaos lab: %s\n", egress.status().message().c_str());
    return 2;
  } else {
    options.egress = *egress;
  }
  options.state_dir = absolute(flags.getOr("state-dir", options.state_dir));
  options.cache_dir = absolute(flags.getOr("cache-dir", options.cache_dir));
  if ((!options.leaf_spine && !parseInt(flags, "hosts", options.hosts)) ||
      !parseInt(flags, "mem", options.mem_mb) ||
      !parseInt(flags, "boot-timeout", options.boot_timeout_s) ||
      !parseInt(flags, "base-port", options.base_agent_port)) {
    return 2;
  }
  std::error_code ec;
  options.binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  options.guest_init = absolute(flags.getOr("guest-init", defaultGuestInit(options.binary)));
  auto runner = sys::makeCommandRunner();
  auto sysctls = sys::makeProcSysctls();

  if (action == "up") {
    if (flags.has("agent-command") && flags.has("no-agent")) {
      std::fprintf(stderr,
                   "fabric-chaos lab up: --agent-command and --no-agent exclude each other\n");
      return 2;
    }
    if (flags.has("agent-command")) {
      options.agent_command = flags.getOr("agent-command", "");
    } else if (!flags.has("no-agent")) {
      // The agent subcommand is new: a binary without it still gets a lab, without agents.
      auto probe = runner->run({options.binary, "agent", "--help"}, 10000);
      if (probe.isOk() && probe->exit_code == 0) {
        options.agent_command = lab::defaultAgentCommand(options);
      } else {
        print("this fabric-chaos has no `agent` subcommand: the VMs boot without agents");
      }
    }
    lab::VmLab vm_lab(*runner, *sysctls, options);
    auto fabric = vm_lab.up(print);
    if (!fabric.isOk()) return labOutcome("up", fabric.status());
    for (const auto& host : fabric->hosts) {
      std::cout << "  " << host.name << "  " << host.nics[0].name << " " << host.nics[0].address
                << "  agent " << host.agent << "  rack " << host.labels.at("rack") << "\n";
    }
    std::cout << "  consoles: " << lab::vmDir(options) << "/vmN.console.log\n";
    return 0;
  }
  lab::VmLab vm_lab(*runner, *sysctls, options);
  if (action == "down") {
    auto status = vm_lab.down(print);
    return labOutcome("down", status);
  }
  auto status = vm_lab.status();
  if (!status.isOk()) return labOutcome("status", status.status());
  std::cout << (status->up ? "up" : "down") << " (" << status->running_vms.size() << " of "
            << status->hosts << " VMs running; switch namespaces "
            << (status->switch_present ? "present" : "absent") << "; fabric file "
            << status->fabric_file << "; consoles in " << lab::vmDir(options) << ")\n";
  return status->up ? 0 : 3;
}

int netnsLabMain(const Flags& flags, const std::string& action) {
  for (const char* vm_only : {"cache-dir", "mem", "agent-command", "no-agent", "guest-init",
                              "boot-timeout", "base-port"}) {
    if (flags.has(vm_only)) {
      std::fprintf(stderr, "fabric-chaos lab: --%s is for the VM lab only (--kind vm)\n", vm_only);
      return 2;
    }
  }
  lab::LabOptions options;
  options.state_dir = flags.getOr("state-dir", options.state_dir);
  if (!readLabNaming(flags, options)) return 2;
  const std::string keep_offloads = flags.getOr("offloads", "off");
  if (keep_offloads != "on" && keep_offloads != "off") {
    std::fprintf(stderr, "fabric-chaos lab: --offloads must be on or off, not \"%s\"\n",
                 keep_offloads.c_str());
    return 2;
  }
  options.segmentation_offloads = keep_offloads == "on";
  std::optional<lab::LeafSpineShape> leaf_spine;
  if (!readTopology(flags, leaf_spine)) return 2;
  if (leaf_spine) {
    if (flags.has("with-slurm")) {
      std::fprintf(stderr,
                   "fabric-chaos lab: --with-slurm needs the star topology, where the Slurm "
                   "controller joins the hosts' bridge\n");
      return 2;
    }
    options.topology = lab::LabTopology::kLeafSpine;
    options.leaf_spine = *leaf_spine;
  } else if (!parseInt(flags, "hosts", options.hosts)) {
    return 2;
  }
  if (auto egress = egressFromFlags(flags); !egress.isOk()) {
    std::fprintf(stderr, "fabric-chaos lab: %s\n", egress.status().message().c_str());
    return 2;
  } else {
    options.egress = *egress;
  }
  std::error_code binary_error;
  options.binary = std::filesystem::read_symlink("/proc/self/exe", binary_error).string();
  auto runner = sys::makeCommandRunner();
  auto offloads = sys::makeEthtoolOffloads();
  auto sysctls = sys::makeProcSysctls();
  lab::NetnsLab lab(*runner, *offloads, *sysctls, options);
  LabSlurm slurm(*runner, options);
  if (action == "up") {
    auto fabric = [&]() -> core::Result<scenarios::Fabric> {
      if (flags.has("with-slurm")) return slurm.upWithLab(lab, print);
      // A Slurm cluster an earlier `--with-slurm` left goes: this lab has none.
      FC_RETURN_IF_ERROR(slurm.down(print));
      return lab.up(print);
    }();
    if (!fabric.isOk()) return labOutcome("up", fabric.status());
    for (const auto& host : fabric->hosts) {
      std::cout << "  " << host.name << "  netns " << host.netns;
      for (const auto& nic : host.nics) std::cout << "  " << nic.name << " " << nic.address;
      std::cout << "  rack " << host.labels.at("rack") << "\n";
    }
    return 0;
  }
  if (action == "down") {
    // Slurm first, while its nodes' namespaces are still there, and even when that fails.
    const core::Status slurm_down = slurm.down(print);
    const core::Status lab_down = lab.down(print);
    return labOutcome("down", slurm_down.isOk() ? lab_down : slurm_down);
  }
  auto status = lab.status();
  if (!status.isOk()) return labOutcome("status", status.status());
  std::cout << (status->up ? "up" : "down") << " (" << status->present_namespaces.size()
            << " namespaces present";
  if (!status->missing_namespaces.empty() && !status->present_namespaces.empty()) {
    std::cout << ", " << status->missing_namespaces.size() << " missing";
  }
  std::cout << "; fabric file " << status->fabric_file << ")\n";
  std::cout << slurm.statusLine() << "\n";
  return status->up ? 0 : 3;
}

}  // namespace

int labMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv, labFlagRules());
  if (!flags.error.empty()) {
    std::fprintf(stderr, "fabric-chaos lab: %s\n\n%s", flags.error.c_str(), kLabUsage);
    return 2;
  }
  if (flags.has("help") || flags.positional.empty()) {
    std::fputs(kLabUsage, flags.has("help") ? stdout : stderr);
    return flags.has("help") ? 0 : 2;
  }
  if (flags.positional.size() > 1) {
    std::fprintf(stderr, "fabric-chaos lab: unexpected argument \"%s\"\n\n%s",
                 flags.positional[1].c_str(), kLabUsage);
    return 2;
  }
  const std::string& action = flags.positional[0];
  if (action != "up" && action != "down" && action != "status") {
    std::fprintf(stderr, "fabric-chaos lab: unknown action \"%s\"\n\n%s", action.c_str(),
                 kLabUsage);
    return 2;
  }
  const std::string kind = flags.getOr("kind", "netns");
  if (kind == "vm" || kind == "ib") {
    for (const char* netns_only : {"with-slurm", "name", "prefix", "subnet"}) {
      if (flags.has(netns_only)) {
        std::fprintf(stderr, "fabric-chaos lab: --%s is for the namespace lab (--kind netns)\n",
                     netns_only);
        return 2;
      }
    }
  }
  if (kind == "vm" || kind == "netns") {
    for (const char* ib_only : kIbLabOnlyFlags) {
      if (flags.has(ib_only)) {
        std::fprintf(stderr, "fabric-chaos lab: --%s is for the IB lab only (--kind ib)\n",
                     ib_only);
        return 2;
      }
    }
  }
  if (kind == "vm") return vmLabMain(flags, action);
  if (kind == "netns") return netnsLabMain(flags, action);
  if (kind == "ib") return ibLabMain(flags, action);
  std::fprintf(stderr, "fabric-chaos lab: --kind must be netns, vm or ib, not \"%s\"\n",
               kind.c_str());
  return 2;
}

}  // namespace fabric_chaos::app
