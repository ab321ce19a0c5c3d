#pragma once
// The VM lab's plan, pure: its options, the fabric it describes, each VM's qemu command line and
// kernel command line, and where each VM's files and switch port are. lab/vm_lab.h runs it.

#include <optional>
#include <string>
#include <vector>

#include "lab/leaf_spine.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct VmLabOptions {
  int hosts = 2;  // the star's; a leaf-spine has (leaves / rails) * hosts_per_leaf
  std::string name = "vm-lab";
  std::string prefix = "fcv";  // switch namespace fcv-sw0, taps fcv-tap0.., qemu -name fcv-vm0..
  std::string subnet = "10.201.0";  // star: VM i gets <subnet>.(i+1)/24 on its data NIC eth0
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
  // The switches: nullopt is the star, one bridge br0 in <prefix>-sw0 with the taps as its ports.
  // A shape is the routed leaf-spine of lab/leaf_spine.h, the namespace lab's: VM k's tap becomes
  // port p<n> of its group's leaf and its eth0 holds the leaf-spine address of host k. One rail
  // only (a guest has one data NIC).
  std::optional<LeafSpineShape> leaf_spine;
  int boot_timeout_s = 180;   // per VM, from its start to FC_GUEST_READY (TCG is slow)
  int agent_timeout_s = 120;  // from FC_GUEST_READY to an answer on the agent port
};

// Pure: for a path the guests cannot see (under /tmp, /run or /var/tmp), the directory to share so
// that they can: "/tmp/ci-clone/build/app/fabric-chaos" -> "/tmp/ci-clone". "" when visible.
std::string guestShareRoot(const std::string& path);

// Pure: `<binary> agent --listen 0.0.0.0:7070 --token-file <state_dir>/vm/agent.token --allow
// eth0`.
std::string defaultAgentCommand(const VmLabOptions& options);

// The number of VMs: options.hosts for the star, the leaf-spine's host count otherwise.
int vmCount(const VmLabOptions& options);

// Pure: the fabric a VM lab with these options describes: hosts vm0.. (netns "", agent
// http://127.0.0.1:710i with the shared token file). Star: switch sw0 in <prefix>-sw0 with ports
// <prefix>-tapI, links vmI-sw0. Leaf-spine: describeLeafSpine's switches, links and labels, with
// its hosts h<k> as the VMs vm<k> (links vm<k>-l<i>).
scenarios::Fabric describeVmLab(const VmLabOptions& options);

// Where VM `index`'s tap ends up: the star's bridge port <prefix>-tapI in <prefix>-sw0, or port
// p<n> of its leaf; and the address its eth0 holds, with the prefix length ("10.201.0.1/24",
// "10.210.1.1/16").
NetnsPort vmSwitchPort(const VmLabOptions& options, int index);
std::string vmDataAddress(const VmLabOptions& options, int index);

// The tap qemu creates for VM `index` in the initial namespace (<prefix>-tapI), before the lab
// moves it into its switch.
std::string vmTapName(const VmLabOptions& options, int index);

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

// Pure: the directory the guests mount private tmpfs on ("/tmp", "/run", "/var/tmp") when `path`
// lies below it, so that they cannot see it; "" otherwise.
std::string hiddenInGuest(const std::string& path);

}  // namespace fabric_chaos::lab
