#include "lab/vm_lab_plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>

namespace fabric_chaos::lab {
namespace {

std::string starSwitchNamespace(const VmLabOptions& options) { return options.prefix + "-sw0"; }

std::string macAddress(const char* prefix, int i) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%s:%02x", prefix, i & 0xff);
  return buffer;
}

}  // namespace

std::string hiddenInGuest(const std::string& path) {
  for (const char* dir : {"/tmp", "/run", "/var/tmp"}) {
    const std::string d = dir;
    if (path == d || path.rfind(d + "/", 0) == 0) return d;
  }
  return "";
}

std::string guestShareRoot(const std::string& path) {
  const std::string hidden = hiddenInGuest(path);
  if (hidden.empty() || path.size() <= hidden.size() + 1) return "";
  const size_t end = path.find('/', hidden.size() + 1);
  return end == std::string::npos ? path : path.substr(0, end);
}

std::string base64Encode(const std::string& data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(data[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(data[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(data[i + 2])};
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(data[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<unsigned char>(data[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string vmName(int index) { return "vm" + std::to_string(index); }
std::string vmDir(const VmLabOptions& options) { return options.state_dir + "/vm"; }
std::string vmPidFile(const VmLabOptions& options, int index) {
  return vmDir(options) + "/" + vmName(index) + ".pid";
}
std::string vmConsoleLog(const VmLabOptions& options, int index) {
  return vmDir(options) + "/" + vmName(index) + ".console.log";
}
std::string vmTokenFile(const VmLabOptions& options) { return vmDir(options) + "/agent.token"; }

std::string defaultAgentCommand(const VmLabOptions& options) {
  return options.binary + " agent --listen 0.0.0.0:" + std::to_string(options.guest_agent_port) +
         " --token-file " + vmTokenFile(options) + " --allow eth0 --mgmt-if eth1";
}

int vmCount(const VmLabOptions& options) {
  if (!options.leaf_spine) return options.hosts;
  const LeafSpineShape& shape = *options.leaf_spine;
  return shape.leaves / std::max(1, shape.rails) * shape.hosts_per_leaf;
}

std::string vmTapName(const VmLabOptions& options, int index) {
  return options.prefix + "-tap" + std::to_string(index);
}

NetnsPort vmSwitchPort(const VmLabOptions& options, int index) {
  if (options.leaf_spine) return leafHostPort(options.prefix, *options.leaf_spine, index, 0);
  return {starSwitchNamespace(options), vmTapName(options, index)};
}

std::string vmDataAddress(const VmLabOptions& options, int index) {
  if (options.leaf_spine) return leafSpineHostAddress(*options.leaf_spine, index, 0) + "/16";
  return options.subnet + "." + std::to_string(index + 1) + "/24";
}

namespace {

// The star: one switch sw0 whose ports are the taps.
scenarios::Fabric describeStar(const VmLabOptions& options) {
  scenarios::Fabric fabric;
  fabric.name = options.name;
  scenarios::Switch sw;
  sw.name = "sw0";
  sw.netns = starSwitchNamespace(options);
  sw.bridge = "br0";
  sw.labels = {{"role", "leaf"}};
  for (int i = 0; i < options.hosts; ++i) {
    scenarios::Host host;
    host.name = vmName(i);
    host.nics.push_back({"eth0", options.subnet + "." + std::to_string(i + 1)});
    host.labels = {{"rack", "r" + std::to_string(i / std::max(1, options.hosts_per_rack))},
                   {"leaf", "sw0"}};
    fabric.hosts.push_back(host);
    const std::string port = vmTapName(options, i);
    sw.ports.push_back(port);
    fabric.links.push_back({host.name + "-sw0", host.name, "eth0", "sw0", port, {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

// The leaf-spine of the namespace lab, its hosts h<k> renamed vm<k>.
scenarios::Fabric describeLeafSpineOfVms(const VmLabOptions& options) {
  scenarios::Fabric fabric = describeLeafSpine(options.name, options.prefix, *options.leaf_spine);
  std::map<std::string, std::string> renamed;
  for (size_t k = 0; k < fabric.hosts.size(); ++k) {
    renamed[fabric.hosts[k].name] = vmName(static_cast<int>(k));
    fabric.hosts[k].name = vmName(static_cast<int>(k));
  }
  for (auto& link : fabric.links) {
    const std::string vm = renamed.at(link.host);
    link.id = vm + link.id.substr(link.host.size());
    link.host = vm;
  }
  return fabric;
}

}  // namespace

scenarios::Fabric describeVmLab(const VmLabOptions& options) {
  scenarios::Fabric fabric =
      options.leaf_spine ? describeLeafSpineOfVms(options) : describeStar(options);
  fabric.kind = "vm";
  for (size_t i = 0; i < fabric.hosts.size(); ++i) {
    scenarios::Host& host = fabric.hosts[i];
    host.netns = "";  // the guest's initial namespace: rxe only works there
    host.agent =
        "http://127.0.0.1:" + std::to_string(options.base_agent_port + static_cast<int>(i));
    host.agent_token_file = vmTokenFile(options);
  }
  for (auto& sw : fabric.switches) sw.egress = options.egress;
  return fabric;
}

std::string kernelCommandLine(const VmLabOptions& options, int index) {
  // quiet and the timer/uart options shave ~1.5 s off a TCG boot; mitigations are pointless in a
  // throw-away test guest. panic=-1 with qemu's -no-reboot turns a panic into a qemu exit.
  std::string line =
      "console=ttyS0 panic=-1 quiet mitigations=off tsc=reliable no_timer_check "
      "8250.nr_uarts=1";
  line += " fc.init=" + options.guest_init;
  line += " fc.name=" + vmName(index);
  line += " fc.ip=" + vmDataAddress(options, index);
  line += " fc.rxe=1";
  line += " fc.shares=fcstate:" + vmDir(options);
  for (size_t i = 0; i < options.shares.size(); ++i) {
    line += ",fcshare" + std::to_string(i) + ":" + options.shares[i];
  }
  if (!options.agent_command.empty()) line += " fc.agent=" + base64Encode(options.agent_command);
  return line;
}

namespace {

// With PFC, the switch's gate holds frames of up to 1536 bytes and sends them back after the
// pause. A guest whose data NIC offers TSO hands its tap segments of up to 64 KB, which the gate
// would have to drop: without host_tso*/host_ufo/gso the guest segments to its MTU itself.
std::string dataNicOffloads(const VmLabOptions& options) {
  if (!options.egress || !options.egress->pfc) return "";
  return ",gso=off,host_tso4=off,host_tso6=off,host_ufo=off";
}

}  // namespace

std::vector<std::string> qemuArgv(const VmLabOptions& options, int index) {
  const std::string i = std::to_string(index);
  const std::string name = options.prefix + "-vm" + i;
  std::vector<std::string> argv = {
      options.qemu,
      "-name",
      name,
      // TCG only: with KVM this guest hangs on the machines we run on.
      "-accel",
      "tcg",
      // Without 5-level paging: under qemu 7.2's TCG a guest with LA57 paging died of kernel
      // double faults and NULL dereferences in rxe's and TCP's send paths under load (3 of 9
      // roce-incast runs), and of none in 9 runs without it.
      "-cpu",
      "max,la57=off",
      "-m",
      std::to_string(options.mem_mb),
      "-smp",
      "1",
      "-nodefaults",
      "-no-reboot",
      // -nographic cannot be combined with -daemonize: no display, the serial port to a file.
      "-display",
      "none",
      "-monitor",
      "none",
      "-serial",
      "file:" + vmConsoleLog(options, index),
      "-daemonize",
      "-pidfile",
      vmPidFile(options, index),
      "-kernel",
      options.cache_dir + "/vmlinuz",
      "-initrd",
      options.cache_dir + "/initramfs.cpio.gz",
      "-append",
      kernelCommandLine(options, index),
      // NICs first with fixed slots: the guest names them eth0 (data) and eth1 (management).
      "-netdev",
      "tap,id=data,ifname=" + vmTapName(options, index) + ",script=no,downscript=no",
      "-device",
      "virtio-net-pci,netdev=data,mac=" + macAddress("52:54:00:fc:00", index) + ",addr=0x3" +
          dataNicOffloads(options),
      "-netdev",
      "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:" +
          std::to_string(options.base_agent_port + index) +
          "-:" + std::to_string(options.guest_agent_port),
      "-device",
      "virtio-net-pci,netdev=mgmt,mac=" + macAddress("52:54:00:fd:00", index) + ",addr=0x4",
      "-virtfs",
      "local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap,readonly=on",
      "-virtfs",
      "local,path=" + options.cache_dir +
          "/kernel/lib,mount_tag=fckernel,security_model=passthrough,readonly=on",
      "-virtfs",
      "local,path=" + vmDir(options) + ",mount_tag=fcstate,security_model=passthrough,readonly=on",
  };
  for (size_t i = 0; i < options.shares.size(); ++i) {
    argv.push_back("-virtfs");
    argv.push_back("local,path=" + options.shares[i] + ",mount_tag=fcshare" + std::to_string(i) +
                   ",security_model=passthrough,readonly=on");
  }
  return argv;
}

}  // namespace fabric_chaos::lab
