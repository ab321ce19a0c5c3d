#pragma once
// The VM lab: a test fabric whose hosts are qemu VMs running Debian's full 6.12 kernel (netem,
// Soft-RoCE), for faults and workloads the host kernel cannot do. Each VM sees the host's file
// tree read-only over virtio-9p and runs this very binary as its agent; its data NIC is a tap
// cabled to bridge br0 in switch namespace <prefix>-sw0 (the star) or to a leaf of the routed
// leaf-spine (lab/leaf_spine_switches.h, the namespace lab's), its management NIC is qemu user-net
// with the agent forwarded to 127.0.0.1:<base_agent_port + i>. up and down are idempotent; a
// failed or partial up is torn down. qemu runs daemonized, so the lab outlives `lab up`; `down`
// finds its VMs by pid file and by qemu's -name. Not thread-safe: one caller at a time.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "injectors/sys/sysctl.h"
#include "lab/leaf_spine_switches.h"
#include "lab/vm_lab_plan.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct VmLabStatus {
  bool up = false;  // switch namespaces present, every VM running, fabric file written
  int hosts = 0;    // from the fabric file, else from the options
  std::vector<std::string> running_vms;
  std::vector<std::string> missing_vms;
  bool switch_present = false;
  std::string fabric_file;
};

class VmLab {
 public:
  using Progress = std::function<void(const std::string& line)>;
  // True when something answers HTTP on 127.0.0.1:port. qemu's user-net accepts connections
  // on a forwarded port even when nothing listens in the guest, so a bare connect proves nothing.
  using PortProbe = std::function<bool(int port)>;

  // sysctls: the leaf-spine switches' forwarding, hashing and link-down settings.
  VmLab(sys::CommandRunner& runner, sys::NetnsSysctls& sysctls, VmLabOptions options,
        PortProbe probe = {});

  // Checks root, /dev/net/tun, qemu, the kernel and initramfs first (each failure one sentence
  // naming what to run). Boots every VM in parallel and waits until each prints FC_GUEST_READY
  // and, with an agent command, until each agent answers.
  core::Result<scenarios::Fabric> up(const Progress& progress);
  // Kills every qemu of the lab (SIGTERM, SIGKILL after 5 s), removes the switch namespace (and
  // with it the taps), the pid files, the token and the fabric file. Console logs stay.
  core::Status down(const Progress& progress);
  core::Result<VmLabStatus> status();

  std::string fabricFile() const;

 private:
  core::Status ip(const std::vector<std::string>& args);
  core::Status makeVisibleToGuests();
  core::Status checkPrerequisites();
  core::Status bootVm(int index, const Progress& progress);
  core::Status waitReady(const Progress& progress);
  core::Status writeToken();
  core::Status writeFabric(const scenarios::Fabric& fabric);
  // The star's switch, or the leaves and spines with BGP until every leaf has every path.
  core::Status buildSwitches(const Progress& progress);
  // The modelled egress (and ECN marker) on every switch port; the PFC agent on the star's.
  core::Status applyEgress(const scenarios::Fabric& fabric, const Progress& progress);
  // Every switch namespace of a VM lab with this prefix that exists, whatever its topology.
  std::vector<std::string> ownSwitchNamespaces();
  // Whether every switch namespace of the lab on disk (else of these options) exists.
  bool switchesPresent();
  LeafSpineSwitches leafSpine();
  std::string routingDir() const;
  std::string shapeText() const;
  std::vector<pid_t> labProcesses();

  sys::CommandRunner& runner_;
  sys::NetnsSysctls& sysctls_;
  VmLabOptions options_;
  PortProbe probe_;
};

// The real probe: connects to 127.0.0.1:port, sends a GET and waits up to timeout_ms for bytes.
bool httpAnswers(int port, int timeout_ms = 2000);

}  // namespace fabric_chaos::lab
