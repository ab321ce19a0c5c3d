#include "lab/netns_lab.h"

#include <unistd.h>

#include <filesystem>

#include "injectors/sys/netns.h"
#include "lab/lab_common.h"

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;

std::string switchNs(const LabOptions& o) { return o.prefix + "-sw0"; }
std::string hostNs(const LabOptions& o, int i) { return o.prefix + "-h" + std::to_string(i); }

constexpr IpErrorRule kIpErrors[] = {{"Operation not permitted", StatusCode::kPermissionDenied},
                                     {"not supported", StatusCode::kNotSupported},
                                     {"Unknown device type", StatusCode::kNotSupported}};

}  // namespace

scenarios::Fabric describeLab(const LabOptions& options) {
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

std::vector<std::string> labNamespaces(const LabOptions& options) {
  std::vector<std::string> names{switchNs(options)};
  for (int i = 0; i < options.hosts; ++i) names.push_back(hostNs(options, i));
  return names;
}

NetnsLab::NetnsLab(sys::CommandRunner& runner, sys::Offloads& offloads, LabOptions options)
    : runner_(runner), offloads_(offloads), options_(std::move(options)) {}

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
  // The lab on disk knows its own size; `lab status` need not be told --hosts again.
  LabOptions expected = options_;
  expected.hosts = hostsInFabricFile(st.fabric_file, options_.hosts);
  for (const auto& ns : labNamespaces(expected)) {
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
  if (options_.hosts < 2 || options_.hosts > 64) {
    return Status(StatusCode::kInvalidArgument, "--hosts must be between 2 and 64");
  }
  auto current = status();
  if (!current.isOk()) return current.status();
  const scenarios::Fabric fabric = describeLab(options_);
  if (current->up) {
    // Same size and every namespace there: nothing to do. Another size is a different lab.
    auto present = listOwnNamespaces();
    if (present.isOk() && present->size() == labNamespaces(options_).size()) {
      progress("lab " + options_.name + " is already up with " + std::to_string(options_.hosts) +
               " hosts");
      // A lab made by an older version may still have offloads on.
      FC_RETURN_IF_ERROR(disableOffloads(progress));
      return fabric;
    }
  }
  if (!current->present_namespaces.empty() || current->up) {
    progress("removing a partial or different lab first");
    FC_RETURN_IF_ERROR(down([](const std::string&) {}));
  }

  const std::string sw = switchNs(options_);
  progress("creating switch namespace " + sw + " with bridge br0");
  FC_RETURN_IF_ERROR(addSwitchNamespace(runner_, sw, kIpErrors));
  auto build = [&]() -> Status {
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
      FC_RETURN_IF_ERROR(ip({"-n", host.netns, "link", "add", "eth0", "type", "veth", "peer",
                             "name", port, "netns", sw}));
      FC_RETURN_IF_ERROR(ip({"-n", sw, "link", "set", port, "master", "br0"}));
      FC_RETURN_IF_ERROR(ip({"-n", sw, "link", "set", port, "up"}));
      FC_RETURN_IF_ERROR(
          ip({"-n", host.netns, "addr", "add", host.nics[0].address + "/24", "dev", "eth0"}));
      FC_RETURN_IF_ERROR(ip({"-n", host.netns, "link", "set", "eth0", "up"}));
    }
    FC_RETURN_IF_ERROR(disableOffloads(progress));
    return writeFabricFile(options_.state_dir, options_.name, fabric);
  };
  if (Status s = build(); !s.isOk()) {
    // Never leave half a lab behind.
    (void)down([](const std::string&) {});
    return s;
  }
  progress("lab " + options_.name + " is up: " + std::to_string(options_.hosts) +
           " hosts on switch sw0 (" + fabricFile() + ")");
  return fabric;
}

// Without this a veth hands the qdisc or nftables hook of a fault one GSO super-packet of up to
// 64 KB where the wire carries ~45 frames, so "10 % loss" would drop 10 % of super-packets (and
// whole TCP windows with them). Both ends matter: the sender's TSO/GSO builds the super-packets,
// the receiver's GRO rebuilds them.
Status NetnsLab::disableOffloads(const Progress& progress) {
  const scenarios::Fabric fabric = describeLab(options_);
  const std::string sw = switchNs(options_);
  int nics = 0;
  for (int i = 0; i < options_.hosts; ++i) {
    const auto& host = fabric.hosts[static_cast<size_t>(i)];
    for (const auto& [netns, ifname] :
         {std::pair<std::string, std::string>{host.netns, "eth0"},
          std::pair<std::string, std::string>{sw, "p" + std::to_string(i)}}) {
      auto change = offloads_.disableSegmentation(netns, ifname);
      if (!change.isOk()) {
        return change.status().withContext("cannot turn segmentation offloads off on " + netns +
                                           "/" + ifname);
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
      ++nics;
    }
  }
  progress("segmentation offloads (TSO, GSO, GRO, ...) are off on all " + std::to_string(nics) +
           " lab NICs");
  return Status::ok();
}

Status NetnsLab::down(const Progress& progress) {
  auto present = listOwnNamespaces();
  if (!present.isOk()) return present.status();
  sys::releasePooledNetnsSockets();  // or the namespaces would outlive their deletion
  Status first_error;
  for (const auto& ns : *present) {
    progress("removing namespace " + ns);
    // Deleting a namespace destroys its veth ends (and so their peers), qdiscs and nft tables.
    if (Status s = ip({"netns", "del", ns}); !s.isOk() && first_error.isOk()) first_error = s;
  }
  std::error_code ec;
  std::filesystem::remove(fabricFile(), ec);
  if (first_error.isOk()) progress("lab " + options_.name + " is down");
  return first_error;
}

}  // namespace fabric_chaos::lab
