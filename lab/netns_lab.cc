#include "lab/netns_lab.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "injectors/sys/netns.h"
#include "injectors/sys/process.h"
#include "lab/ecn_model.h"
#include "lab/lab_common.h"
#include "lab/leaf_spine_switches.h"
#include "lab/pfc_agent.h"
#include "lab/port_model.h"
#include "lab/slurm_lab_plan.h"

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;

std::string switchNs(const LabOptions& o) { return o.prefix + "-sw0"; }
std::string hostNs(const LabOptions& o, int i) { return o.prefix + "-h" + std::to_string(i); }

constexpr IpErrorRule kIpErrors[] = {{"Operation not permitted", StatusCode::kPermissionDenied},
                                     {"not supported", StatusCode::kNotSupported},
                                     {"Unknown device type", StatusCode::kNotSupported}};

// "4 hosts on switch sw0", "2 leaves, 2 spines, 4 hosts".
std::string summary(const scenarios::Fabric& fabric) {
  if (fabric.switch_links.empty()) {
    return std::to_string(fabric.hosts.size()) + " hosts on switch " +
           (fabric.switches.empty() ? std::string("-") : fabric.switches.front().name);
  }
  int leaves = 0;
  for (const auto& sw : fabric.switches)
    leaves += sw.labels.count("role") && sw.labels.at("role") == "leaf";
  return std::to_string(leaves) + " leaves, " +
         std::to_string(static_cast<int>(fabric.switches.size()) - leaves) + " spines, " +
         std::to_string(fabric.hosts.size()) + " hosts";
}

}  // namespace

namespace {

scenarios::Fabric describeTopology(const LabOptions& options) {
  if (options.topology == LabTopology::kLeafSpine) {
    return describeLeafSpine(options.name, options.prefix, options.leaf_spine);
  }
  scenarios::Fabric fabric;
  fabric.name = options.name;
  fabric.kind = "netns";
  scenarios::Switch sw;
  sw.name = "sw0";
  sw.netns = switchNs(options);
  sw.bridge = "br0";
  sw.labels = {{"role", "leaf"}};
  for (int i = 0; i < options.hosts; ++i) {
    scenarios::Host host;
    host.name = "h" + std::to_string(i);
    host.netns = hostNs(options, i);
    host.agent = "local";
    host.nics.push_back({"eth0", options.subnet + "." + std::to_string(i + 1)});
    host.labels = {{"rack", "r" + std::to_string(i / std::max(1, options.hosts_per_rack))},
                   {"leaf", "sw0"}};
    fabric.hosts.push_back(host);
    const std::string port = "p" + std::to_string(i);
    sw.ports.push_back(port);
    fabric.links.push_back({host.name + "-sw0", host.name, "eth0", "sw0", port, {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

}  // namespace

scenarios::Fabric describeLab(const LabOptions& options) {
  scenarios::Fabric fabric = describeTopology(options);
  for (auto& sw : fabric.switches) sw.egress = options.egress;
  fabric.segmentation_offloads = options.segmentation_offloads;
  return fabric;
}

std::vector<std::string> labNamespaces(const LabOptions& options) {
  const scenarios::Fabric fabric = describeLab(options);
  std::vector<std::string> names;
  for (const auto& sw : fabric.switches) names.push_back(sw.netns);
  for (const auto& host : fabric.hosts) names.push_back(host.netns);
  return names;
}

NetnsLab::NetnsLab(sys::CommandRunner& runner, sys::Offloads& offloads, sys::NetnsSysctls& sysctls,
                   LabOptions options)
    : runner_(runner), offloads_(offloads), sysctls_(sysctls), options_(std::move(options)) {}

std::string NetnsLab::fabricFile() const {
  return fabricFilePath(options_.state_dir, options_.name);
}

Status NetnsLab::ip(const std::vector<std::string>& args) {
  return runIp(runner_, args, kIpErrors);
}

core::Result<std::vector<std::string>> NetnsLab::listOwnNamespaces() {
  return namespacesWithPrefix(runner_, options_.prefix + "-");
}

core::Result<LabStatus> NetnsLab::status() {
  auto present = listOwnNamespaces();
  if (!present.isOk()) return present.status();
  LabStatus st;
  st.fabric_file = fabricFile();
  // The lab on disk knows its own shape; `lab status` need not be told it again.
  const std::vector<std::string> expected =
      namespacesInFabricFile(st.fabric_file).value_or(labNamespaces(options_));
  for (const auto& ns : expected) {
    bool found = false;
    for (const auto& p : *present) found = found || p == ns;
    (found ? st.present_namespaces : st.missing_namespaces).push_back(ns);
  }
  st.up = st.missing_namespaces.empty() && std::filesystem::exists(st.fabric_file);
  return st;
}

core::Result<scenarios::Fabric> NetnsLab::up(const Progress& progress) {
  if (geteuid() != 0) {
    return Status(StatusCode::kPermissionDenied,
                  "lab up needs root to create network namespaces; run it as root (sudo)");
  }
  if (!std::filesystem::exists("/proc/self/ns/net")) {
    return Status(StatusCode::kNotSupported,
                  "this kernel has no network namespace support (/proc/self/ns/net is missing)");
  }
  if (options_.topology == LabTopology::kStar && (options_.hosts < 2 || options_.hosts > 64)) {
    return Status(StatusCode::kInvalidArgument, "--hosts must be between 2 and 64");
  }
  if (options_.topology == LabTopology::kLeafSpine) {
    FC_RETURN_IF_ERROR(checkLeafSpineShape(options_.leaf_spine));
  }
  if (options_.egress) FC_RETURN_IF_ERROR(checkEgressModel(*options_.egress));
  if (options_.egress) FC_RETURN_IF_ERROR(checkEcnMarking(*options_.egress));
  if (options_.segmentation_offloads && options_.egress &&
      (options_.egress->pfc || options_.egress->ecn)) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("--offloads on cannot go with ") +
                      (options_.egress->pfc ? "--pfc" : "--ecn") +
                      ": the PFC agent and the ECN marker act on wire frames, and with offloads "
                      "on a port hands them super-packets of up to 64 KB");
  }
  if (options_.egress && options_.egress->pfc && options_.binary.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "a lab that honours PFC needs the fabric-chaos binary to run its PFC agent");
  }
  auto current = status();
  if (!current.isOk()) return current.status();
  const scenarios::Fabric fabric = describeLab(options_);
  // A Slurm cluster on the lab (`lab up --with-slurm`, lab/slurm_lab.h) is not another lab: its
  // "slurm" object and controller namespace are left out of the comparison, and left alone.
  std::optional<nlohmann::json> on_disk = readFabricFile(fabricFile());
  if (on_disk && on_disk->is_object()) on_disk->erase("slurm");
  if (current->up && on_disk == scenarios::toJson(fabric)) {
    // The same description and every namespace there: nothing to do. Another size or topology
    // is a different lab.
    auto present = listOwnNamespaces();
    if (present.isOk()) {
      const std::string controller = slurmControllerNamespace(options_.prefix);
      present->erase(std::remove(present->begin(), present->end(), controller), present->end());
    }
    // A leaf-spine whose routing daemons died (killed, or a crash) cannot route around a fault:
    // rebuild it.
    const std::string missing =
        options_.topology == LabTopology::kLeafSpine ? leafSpine().routingProblem() : std::string();
    if (!missing.empty()) progress("its BGP routing is broken (" + missing + "): rebuilding");
    if (present.isOk() && present->size() == labNamespaces(options_).size() && missing.empty()) {
      progress("lab " + options_.name + " is already up (" + summary(fabric) + ")");
      // A lab made by an older version may still have offloads on, or lack the hash reset.
      FC_RETURN_IF_ERROR(settleOffloads(progress));
      if (options_.topology == LabTopology::kLeafSpine) {
        FC_RETURN_IF_ERROR(leafSpine().ensureFiveTupleHashing(progress));
      }
      FC_RETURN_IF_ERROR(ensurePfcAgents(fabric, progress));
      return fabric;
    }
  }
  if (!current->present_namespaces.empty() || current->up) {
    progress("removing a partial or different lab first");
    FC_RETURN_IF_ERROR(down([](const std::string&) {}));
  }
  auto build = [&]() -> Status {
    FC_RETURN_IF_ERROR(options_.topology == LabTopology::kLeafSpine ? buildLeafSpine(progress)
                                                                    : buildStar(fabric, progress));
    FC_RETURN_IF_ERROR(settleOffloads(progress));
    FC_RETURN_IF_ERROR(applyEgress(fabric, progress));
    return writeFabricFile(options_.state_dir, options_.name, fabric);
  };
  if (Status s = build(); !s.isOk()) {
    // Never leave half a lab behind.
    (void)down([](const std::string&) {});
    return s;
  }
  progress("lab " + options_.name + " is up: " + summary(fabric) + " (" + fabricFile() + ")");
  return fabric;
}

Status NetnsLab::applyEgress(const scenarios::Fabric& fabric, const Progress& progress) {
  if (!options_.egress) return Status::ok();
  auto ports = modelEverySwitchPort(runner_, fabric, *options_.egress, kIpErrors);
  if (!ports.isOk()) return ports.status();
  progress("modelled egress on all " + std::to_string(*ports) +
           " switch ports: " + describeEgress(*options_.egress));
  FC_RETURN_IF_ERROR(ensurePfcAgents(fabric, progress));
  if (options_.egress->ecn) {
    progress("ECN marking on every port: " + describeEcn(*options_.egress->ecn));
    // Marks only reach senders that asked for ECN: Linux's default (2) accepts it but never asks.
    for (const auto& host : fabric.hosts) {
      FC_RETURN_IF_ERROR(sysctls_.set(host.netns, "net.ipv4.tcp_ecn", "1"));
    }
    progress("net.ipv4.tcp_ecn=1 in every host namespace: their TCP flows negotiate ECN");
  }
  return Status::ok();
}

Status NetnsLab::ensurePfcAgents(const scenarios::Fabric& fabric, const Progress& progress) {
  if (!options_.egress || !options_.egress->pfc) return Status::ok();
  for (const auto& sw : fabric.switches) {
    auto running = pfcAgentRunning(runner_, sw.netns);
    if (!running.isOk()) return running.status();
    if (*running) continue;
    FC_RETURN_IF_ERROR(startPfcAgent(runner_, options_.binary, sw, options_.state_dir));
  }
  progress(describePfc(*options_.egress,
                       pfcStatsFile(options_.state_dir, fabric.switches.front().netns)));
  return Status::ok();
}

Status NetnsLab::buildStar(const scenarios::Fabric& fabric, const Progress& progress) {
  const std::string sw = switchNs(options_);
  progress("creating switch namespace " + sw + " with bridge br0");
  FC_RETURN_IF_ERROR(addSwitchNamespace(runner_, sw, kIpErrors));
  FC_RETURN_IF_ERROR(addSwitchBridge(runner_, sw, kIpErrors));
  for (int i = 0; i < options_.hosts; ++i) {
    const auto& host = fabric.hosts[static_cast<size_t>(i)];
    const std::string port = "p" + std::to_string(i);
    progress("cabling host " + host.name + " (" + host.netns + ", " + host.nics[0].address +
             ") to sw0:" + port);
    FC_RETURN_IF_ERROR(ip({"netns", "add", host.netns}));
    FC_RETURN_IF_ERROR(ip({"-n", host.netns, "link", "set", "lo", "up"}));
    // Both ends are created directly inside their namespaces, and the command itself runs in
    // the host's: nothing ever appears in the initial namespace, so no name can clash with the
    // machine's own interfaces (Debian's 6.12 kernel checks "eth0" against the namespace the
    // request comes from, so `ip link add eth0 netns ...` fails on a machine with an eth0).
    FC_RETURN_IF_ERROR(ip({"-n", host.netns, "link", "add", "eth0", "type", "veth", "peer", "name",
                           port, "netns", sw}));
    FC_RETURN_IF_ERROR(ip({"-n", sw, "link", "set", port, "master", "br0"}));
    FC_RETURN_IF_ERROR(ip({"-n", sw, "link", "set", port, "up"}));
    FC_RETURN_IF_ERROR(
        ip({"-n", host.netns, "addr", "add", host.nics[0].address + "/24", "dev", "eth0"}));
    FC_RETURN_IF_ERROR(ip({"-n", host.netns, "link", "set", "eth0", "up"}));
  }
  return Status::ok();
}

LeafSpineSwitches NetnsLab::leafSpine() {
  return LeafSpineSwitches(runner_, sysctls_, options_.prefix, options_.leaf_spine, routingDir(),
                           kIpErrors);
}

Status NetnsLab::buildLeafSpine(const Progress& progress) {
  LeafSpineSwitches switches = leafSpine();
  FC_RETURN_IF_ERROR(
      switches.build(leafSpineBuild(options_.prefix, options_.leaf_spine), progress));
  return switches.ensureFiveTupleHashing(progress);
}

std::string NetnsLab::routingDir() const { return options_.state_dir + "/lab/" + options_.name; }

Status NetnsLab::settleOffloads(const Progress& progress) {
  if (!options_.segmentation_offloads) return disableOffloads(progress);
  progress(
      "segmentation offloads stay on (--offloads on): a loss fault drops GSO super-packets of up "
      "to 64 KB, not single wire packets");
  return Status::ok();
}

// Without this a veth hands the qdisc or nftables hook of a fault one GSO super-packet of up to
// 64 KB where the wire carries ~45 frames, so "10 % loss" would drop 10 % of super-packets (and
// whole TCP windows with them). Both ends matter: the sender's TSO/GSO builds the super-packets,
// the receiver's GRO rebuilds them.
Status NetnsLab::disableOffloads(const Progress& progress) {
  const scenarios::Fabric fabric = describeLab(options_);
  std::vector<std::pair<std::string, std::string>> nics;  // netns, ifname
  for (const auto& host : fabric.hosts) {
    for (const auto& nic : host.nics) nics.emplace_back(host.netns, nic.name);
  }
  for (const auto& sw : fabric.switches) {
    for (const auto& port : sw.ports) nics.emplace_back(sw.netns, port);
  }
  for (const auto& [netns, ifname] : nics) {
    auto change = offloads_.disableSegmentation(netns, ifname);
    if (!change.isOk()) {
      return change.status().withContext("cannot turn segmentation offloads off on " + netns + "/" +
                                         ifname);
    }
    if (!change->still_on.empty()) {
      std::string stuck;
      for (const auto& [feature, why] : change->still_on) {
        stuck += (stuck.empty() ? "" : ", ") + feature + " (" + why + ")";
      }
      return Status(StatusCode::kFailedPrecondition,
                    "cannot turn segmentation offloads off on " + netns + "/" + ifname + ": " +
                        stuck + " stayed on, so a loss fault would drop super-packets");
    }
  }
  progress("segmentation offloads (TSO, GSO, GRO, ...) are off on all " +
           std::to_string(nics.size()) + " lab NICs and switch ports");
  return Status::ok();
}

Status NetnsLab::down(const Progress& progress) {
  auto present = listOwnNamespaces();
  if (!present.isOk()) return present.status();
  sys::releasePooledNetnsSockets();  // or the namespaces would outlive their deletion
  Status first_error;
  for (const auto& ns : *present) {
    // A process still inside would keep running, unreachable, after its namespace is gone.
    if (Status s = stopProcessesInNetns(runner_, ns, progress); !s.isOk() && first_error.isOk())
      first_error = s;
  }
  for (const auto& ns : *present) {
    progress("removing namespace " + ns);
    // Deleting a namespace destroys its veth ends (and so their peers), qdiscs and nft tables.
    if (Status s = ip({"netns", "del", ns}); !s.isOk() && first_error.isOk()) first_error = s;
  }
  std::error_code ec;
  std::filesystem::remove(fabricFile(), ec);
  std::filesystem::remove_all(routingDir(), ec);
  if (first_error.isOk()) progress("lab " + options_.name + " is down");
  return first_error;
}

}  // namespace fabric_chaos::lab
