#pragma once
// The VM lab: a test fabric whose hosts are qemu VMs running Debian's full 6.12 kernel (netem,
// Soft-RoCE), for faults and workloads the host kernel cannot do. Each VM sees the host's file
// tree read-only over virtio-9p and runs this very binary as its agent; its data NIC is a tap
// cabled to bridge br0 in switch namespace <prefix>-sw0, its management NIC is qemu user-net
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
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct VmLabOptions {
  int hosts = 2;
  std::string name = "vm-lab";
  std::string prefix = "fcv";  // switch namespace fcv-sw0, taps fcv-tap0.., qemu -name fcv-vm0..
  std::string subnet = "10.201.0";  // VM i gets <subnet>.(i+1)/24 on its data NIC eth0
  int hosts_per_rack = 2;           // rack labels r0, r1... as in the namespace lab
  int mem_mb = 768;
  std::string cache_dir = "/var/cache/fabric-chaos/vm";  // deploy/vm/fetch-kernel.sh fills it
  std::string state_dir = "/run/fabric-chaos";  // vm/ (pid files, consoles, token), fabrics/
  int base_agent_port = 7100;                   // VM i's agent: 127.0.0.1:(base + i)
  int guest_agent_port = 7070;                  // where the agent listens inside the guest
  std::string binary;                           // the fabric-chaos the guests run
  std::string guest_init;                       // deploy/vm/guest-init.sh of the same tree
  // Host directories mounted read-only at the same path in every guest. The guests put private
  // tmpfs on /tmp, /run and /var/tmp, so a tree checked out below them (a CI clone in /tmp) is
  // shared this way; up() adds what the binary needs.
  std::vector<std::string> shares;
  // What each guest runs as its agent (through /bin/sh -c). "" = none: the VMs boot and report
  // ready without an agent. defaultAgentCommand() gives the standard one.
  std::string agent_command;
  std::string qemu = "qemu-system-x86_64";
  // Every switch port's modelled egress (lab/port_model.h), as in the namespace lab.
  std::optional<scenarios::EgressModel> egress;
  int boot_timeout_s = 180;   // per VM, from its start to FC_GUEST_READY (TCG is slow)
  int agent_timeout_s = 120;  // from FC_GUEST_READY to an answer on the agent port
};

// Pure: for a path the guests cannot see (under /tmp, /run or /var/tmp), the directory to share so
// that they can: "/tmp/ci-clone/build/app/fabric-chaos" -> "/tmp/ci-clone". "" when visible.
std::string guestShareRoot(const std::string& path);

// Pure: `<binary> agent --listen 0.0.0.0:7070 --token-file <state_dir>/vm/agent.token --allow
// eth0`.
std::string defaultAgentCommand(const VmLabOptions& options);

// Pure: the fabric a VM lab with these options describes: hosts vm0.. (netns "", agent
// http://127.0.0.1:710i with the shared token file), switch sw0 in <prefix>-sw0 with ports
// <prefix>-tapI, links vmI-sw0.
scenarios::Fabric describeVmLab(const VmLabOptions& options);

// Pure: the daemonizing qemu command line of VM `index` (TCG, never KVM).
std::vector<std::string> qemuArgv(const VmLabOptions& options, int index);

// Pure: the kernel command line of VM `index` (read by the initramfs and guest-init.sh).
std::string kernelCommandLine(const VmLabOptions& options, int index);

// Pure: RFC 4648 base64, no line breaks (fc.agent= on the kernel command line).
std::string base64Encode(const std::string& data);

// Where the lab keeps VM `index`'s files.
std::string vmName(int index);  // "vm0"
std::string vmDir(const VmLabOptions& options);
std::string vmPidFile(const VmLabOptions& options, int index);
std::string vmConsoleLog(const VmLabOptions& options, int index);
std::string vmTokenFile(const VmLabOptions& options);

struct VmLabStatus {
  bool up = false;  // switch namespace present, every VM running, fabric file written
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

  VmLab(sys::CommandRunner& runner, VmLabOptions options, PortProbe probe = {});

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
  bool switchPresent();
  std::vector<pid_t> labProcesses();

  sys::CommandRunner& runner_;
  VmLabOptions options_;
  PortProbe probe_;
};

// The real probe: connects to 127.0.0.1:port, sends a GET and waits up to timeout_ms for bytes.
bool httpAnswers(int port, int timeout_ms = 2000);

}  // namespace fabric_chaos::lab
