#pragma once
// The namespace lab: a test fabric on one Linux machine, in one of two topologies.
// - star (the default, the quick demo): each host is a network namespace with one veth "NIC"
//   (eth0) cabled to a port of a bridge in one "switch" namespace;
// - leaf-spine: routed leaves and spines with ECMP, optionally rail-optimised (lab/leaf_spine.h).
// Everything it makes lives inside namespaces named <prefix>-*, so `down` removes every link,
// qdisc and nft table with them. Lab NICs and switch ports have segmentation offloads off (one
// skb = one wire packet); leaf-spine leaves hash each flow's five-tuple, whatever hash its packets
// arrive with (injectors/sys/flow_hash_reset.h). up and down are idempotent. The fabric description
// is written to <state_dir>/fabrics/<name>.json, where `serve` finds it. Not thread-safe: one
// caller at a time.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "injectors/sys/offloads.h"
#include "injectors/sys/sysctl.h"
#include "lab/leaf_spine.h"
#include "lab/leaf_spine_switches.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

enum class LabTopology { kStar, kLeafSpine };

struct LabOptions {
  LabTopology topology = LabTopology::kStar;
  int hosts = 4;  // star only
  std::string name = "netns-lab";
  std::string prefix = "fcl";       // namespace names: fcl-sw0, fcl-h0, fcl-h1...
  std::string subnet = "10.200.0";  // host i gets <subnet>.(i+1)/24, inside its namespace only
  int hosts_per_rack = 2;           // star: rack labels r0, r1... for selectors
  LeafSpineShape leaf_spine;        // leaf-spine only
  // Every switch port's modelled egress (lab/port_model.h); nullopt: ports as fast as the CPU.
  std::optional<scenarios::EgressModel> egress;
  std::string state_dir = "/run/fabric-chaos";
  // The fabric-chaos binary, run as each switch's PFC agent when egress->pfc is set.
  std::string binary;
  // `--offloads on`: NICs and switch ports keep the kernel's segmentation offloads (veth: TSO and
  // GSO on, GRO off). Per-packet cost then no longer caps the lab: on 2 cores, four 1 Gbit/s
  // flows at once get 0.95 of the line instead of 0.5. The price: a loss fault drops GSO
  // super-packets of up to 64 KB, so its percentage is not one of wire packets; and the ECN
  // marker and the PFC agent, which act per wire frame, are refused with it.
  bool segmentation_offloads = false;
};

// Pure: the fabric a lab with these options describes.
scenarios::Fabric describeLab(const LabOptions& options);

// The namespace names a lab with these options owns.
std::vector<std::string> labNamespaces(const LabOptions& options);

struct LabStatus {
  bool up = false;  // every namespace present and the fabric file written
  std::vector<std::string> present_namespaces;
  std::vector<std::string> missing_namespaces;
  std::string fabric_file;
};

class NetnsLab {
 public:
  using Progress = std::function<void(const std::string& line)>;

  // offloads: every lab NIC and switch port gets its segmentation offloads (TSO/GSO/GRO and kin,
  // see sys::isSegmentationOffload) turned off, so that a packet a fault sees is one packet on
  // the wire. sysctls: the leaf-spine's forwarding, hashing and link-down settings.
  NetnsLab(sys::CommandRunner& runner, sys::Offloads& offloads, sys::NetnsSysctls& sysctls,
           LabOptions options);

  // Checks root, namespace support and the options first, each failure one clear sentence. A lab
  // that is already up with the same description is left as it is; a partial or different one
  // (another size or topology) is removed and rebuilt.
  core::Result<scenarios::Fabric> up(const Progress& progress);
  // Removes every namespace with the lab's prefix and the fabric file. OK when nothing is there.
  core::Status down(const Progress& progress);
  // up() calls this: disableOffloads, unless the options keep them (segmentation_offloads),
  // which it says.
  core::Status settleOffloads(const Progress& progress);
  // Turns segmentation offloads off on every lab NIC and switch port (idempotent). A feature the
  // driver will not turn off is kFailedPrecondition naming NIC and feature.
  core::Status disableOffloads(const Progress& progress);
  core::Result<LabStatus> status();

  std::string fabricFile() const;

 private:
  core::Status ip(const std::vector<std::string>& args);
  core::Result<std::vector<std::string>> listOwnNamespaces();
  // Starts the PFC agent of every switch that has none running (egress->pfc only).
  core::Status ensurePfcAgents(const scenarios::Fabric& fabric, const Progress& progress);
  core::Status buildStar(const scenarios::Fabric& fabric, const Progress& progress);
  // The switches, namespaces and hosts of the leaf-spine, routed and hashing five-tuples.
  core::Status buildLeafSpine(const Progress& progress);
  // The egress model on every switch port of the fabric (lab/port_model.h).
  core::Status applyEgress(const scenarios::Fabric& fabric, const Progress& progress);
  LeafSpineSwitches leafSpine();
  // Where the routing daemons' configurations, sockets, pid files and logs live.
  std::string routingDir() const;

  sys::CommandRunner& runner_;
  sys::Offloads& offloads_;
  sys::NetnsSysctls& sysctls_;
  LabOptions options_;
};

}  // namespace fabric_chaos::lab
