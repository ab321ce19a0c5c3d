// The VM lab's pure parts: the fabric it describes, the qemu command line of each VM, the kernel
// command line guest-init.sh reads, and the base64 that carries the agent command.

#include <gtest/gtest.h>

#include <algorithm>

#include "lab/vm_lab.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {
namespace {

VmLabOptions labOptions(int hosts) {
  VmLabOptions options;
  options.hosts = hosts;
  options.cache_dir = "/var/cache/fabric-chaos/vm";
  options.state_dir = "/run/fabric-chaos";
  options.binary = "/opt/fc/fabric-chaos";
  options.guest_init = "/src/deploy/vm/guest-init.sh";
  return options;
}

// The value following `flag`, or "" (each flag may appear more than once: the n-th one).
std::string argAfter(const std::vector<std::string>& argv, const std::string& flag, int n = 0) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag && n-- == 0) return argv[i + 1];
  }
  return "";
}

TEST(DescribeVmLab, HostsAreVmsWithRemoteAgentsOnOneSwitch) {
  auto fabric = describeVmLab(labOptions(3));
  EXPECT_EQ(fabric.name, "vm-lab");
  EXPECT_EQ(fabric.kind, "vm");
  ASSERT_EQ(fabric.hosts.size(), 3u);
  ASSERT_EQ(fabric.links.size(), 3u);
  ASSERT_EQ(fabric.switches.size(), 1u);
  const auto& h1 = fabric.hosts[1];
  EXPECT_EQ(h1.name, "vm1");
  EXPECT_EQ(h1.netns, "");  // the guest's initial namespace
  EXPECT_EQ(h1.agent, "http://127.0.0.1:7101");
  EXPECT_EQ(h1.agent_token_file, "/run/fabric-chaos/vm/agent.token");
  ASSERT_EQ(h1.nics.size(), 1u);
  EXPECT_EQ(h1.nics[0].name, "eth0");
  EXPECT_EQ(h1.nics[0].address, "10.201.0.2");
  EXPECT_EQ(h1.labels.at("rack"), "r0");
  EXPECT_EQ(fabric.hosts[2].labels.at("rack"), "r1");
  const auto& sw = fabric.switches[0];
  EXPECT_EQ(sw.name, "sw0");
  EXPECT_EQ(sw.netns, "fcv-sw0");
  EXPECT_EQ(sw.bridge, "br0");
  EXPECT_EQ(sw.ports, (std::vector<std::string>{"fcv-tap0", "fcv-tap1", "fcv-tap2"}));
  EXPECT_EQ(fabric.links[2].id, "vm2-sw0");
  EXPECT_EQ(fabric.links[2].host, "vm2");
  EXPECT_EQ(fabric.links[2].nic, "eth0");
  EXPECT_EQ(fabric.links[2].port, "fcv-tap2");
}

TEST(DescribeVmLab, RoundTripsAndResolvesTheSwitchSideToATap) {
  auto fabric = describeVmLab(labOptions(2));
  auto parsed = scenarios::fabricFromJson(scenarios::toJson(fabric));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->hosts[0].agent_token_file, "/run/fabric-chaos/vm/agent.token");
  auto sw_side = scenarios::resolveTargets(
      scenarios::TargetSelector{"vm1", "", {}, scenarios::LinkSide::kSwitch}, parsed.value());
  ASSERT_TRUE(sw_side.isOk()) << sw_side.status().toString();
  EXPECT_EQ(sw_side->at(0).target,
            injectors::Target(injectors::InterfaceTarget{"fcv-sw0", "fcv-tap1"}));
  auto host_side = scenarios::resolveTargets(
      scenarios::TargetSelector{"vm0", "", {}, scenarios::LinkSide::kHost}, parsed.value());
  ASSERT_TRUE(host_side.isOk()) << host_side.status().toString();
  EXPECT_EQ(host_side->at(0).target, injectors::Target(injectors::InterfaceTarget{"", "eth0"}));
}

TEST(DescribeVmLab, PrefixSubnetAndPortsAreOptions) {
  auto options = labOptions(2);
  options.name = "vm-b";
  options.prefix = "fcw";
  options.subnet = "10.202.0";
  options.base_agent_port = 7200;
  auto fabric = describeVmLab(options);
  EXPECT_EQ(fabric.name, "vm-b");
  EXPECT_EQ(fabric.switches[0].netns, "fcw-sw0");
  EXPECT_EQ(fabric.switches[0].ports[1], "fcw-tap1");
  EXPECT_EQ(fabric.hosts[1].agent, "http://127.0.0.1:7201");
  EXPECT_EQ(fabric.hosts[1].nics[0].address, "10.202.0.2");
}

// The VM lab on the namespace lab's leaf-spine: the same switches, links and labels, its hosts
// h<k> as the guests vm<k>, each guest's tap the port p<n> of its leaf and its eth0 the leaf-spine
// address.
TEST(DescribeVmLab, LeafSpineIsTheNamespaceLabsWithVmsAsItsHosts) {
  VmLabOptions options = labOptions(2);
  options.leaf_spine = LeafSpineShape{2, 2, 2, 1};
  EXPECT_EQ(vmCount(options), 4);
  const scenarios::Fabric fabric = describeVmLab(options);
  const scenarios::Fabric namespaces = describeLeafSpine("vm-lab", "fcv", *options.leaf_spine);
  EXPECT_EQ(fabric.kind, "vm");
  ASSERT_EQ(fabric.hosts.size(), 4u);
  ASSERT_EQ(fabric.switches.size(), namespaces.switches.size());
  for (size_t i = 0; i < fabric.switches.size(); ++i) {
    EXPECT_EQ(fabric.switches[i].name, namespaces.switches[i].name);
    EXPECT_EQ(fabric.switches[i].netns, namespaces.switches[i].netns);
    EXPECT_EQ(fabric.switches[i].ports, namespaces.switches[i].ports);
    EXPECT_EQ(fabric.switches[i].labels, namespaces.switches[i].labels);
  }
  EXPECT_EQ(fabric.switch_links.size(), 4u);
  const scenarios::Host& vm2 = fabric.hosts[2];
  EXPECT_EQ(vm2.name, "vm2");
  EXPECT_EQ(vm2.netns, "");
  EXPECT_EQ(vm2.agent, "http://127.0.0.1:7102");
  EXPECT_EQ(vm2.agent_token_file, "/run/fabric-chaos/vm/agent.token");
  EXPECT_EQ(vm2.nics.at(0).address, "10.210.1.1");
  EXPECT_EQ(vm2.labels.at("leaf"), "l1");
  ASSERT_EQ(fabric.links.size(), 4u);
  EXPECT_EQ(fabric.links[2].id, "vm2-l1");
  EXPECT_EQ(fabric.links[2].host, "vm2");
  EXPECT_EQ(fabric.links[2].switch_name, "l1");
  EXPECT_EQ(fabric.links[2].port, "p0");
  EXPECT_EQ(vmSwitchPort(options, 2), (NetnsPort{"fcv-l1", "p0"}));
  EXPECT_EQ(vmSwitchPort(options, 3), (NetnsPort{"fcv-l1", "p1"}));
  EXPECT_EQ(vmDataAddress(options, 3), "10.210.1.2/16");
  EXPECT_NE(kernelCommandLine(options, 3).find(" fc.ip=10.210.1.2/16 "), std::string::npos);
  // The tap qemu creates keeps the lab's name until the lab moves it into its leaf.
  EXPECT_EQ(argAfter(qemuArgv(options, 3), "-netdev").find("ifname=fcv-tap3,"),
            std::string("tap,id=data,").size());
  // A valid fabric: the codec and the selectors take it.
  auto parsed = scenarios::fabricFromJson(scenarios::toJson(fabric));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().message();
}

TEST(DescribeVmLab, StarPortsAndAddressesAreTheTaps) {
  const VmLabOptions options = labOptions(3);
  EXPECT_EQ(vmCount(options), 3);
  EXPECT_EQ(vmSwitchPort(options, 1), (NetnsPort{"fcv-sw0", "fcv-tap1"}));
  EXPECT_EQ(vmDataAddress(options, 1), "10.201.0.2/24");
}

TEST(QemuArgv, TcgDaemonWithTapDataNicUserNetManagementAndNinePRoots) {
  auto options = labOptions(2);
  auto argv = qemuArgv(options, 1);
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], "qemu-system-x86_64");
  EXPECT_EQ(argAfter(argv, "-accel"), "tcg");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "kvm"), 0);
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "-enable-kvm"), argv.end());
  EXPECT_EQ(argAfter(argv, "-cpu"), "max,la57=off") << "5-level paging kills guests under TCG";
  EXPECT_EQ(argAfter(argv, "-m"), "768");
  EXPECT_EQ(argAfter(argv, "-smp"), "1");
  EXPECT_EQ(argAfter(argv, "-name"), "fcv-vm1");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-daemonize"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-no-reboot"), argv.end());
  EXPECT_EQ(argAfter(argv, "-pidfile"), "/run/fabric-chaos/vm/vm1.pid");
  EXPECT_EQ(argAfter(argv, "-serial"), "file:/run/fabric-chaos/vm/vm1.console.log");
  EXPECT_EQ(argAfter(argv, "-kernel"), "/var/cache/fabric-chaos/vm/vmlinuz");
  EXPECT_EQ(argAfter(argv, "-initrd"), "/var/cache/fabric-chaos/vm/initramfs.cpio.gz");
  EXPECT_EQ(argAfter(argv, "-netdev", 0), "tap,id=data,ifname=fcv-tap1,script=no,downscript=no");
  EXPECT_EQ(argAfter(argv, "-device", 0),
            "virtio-net-pci,netdev=data,mac=52:54:00:fc:00:01,addr=0x3");
  EXPECT_EQ(argAfter(argv, "-netdev", 1),
            "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:7101-:7070");
  EXPECT_EQ(argAfter(argv, "-device", 1),
            "virtio-net-pci,netdev=mgmt,mac=52:54:00:fd:00:01,addr=0x4");
  EXPECT_EQ(argAfter(argv, "-virtfs", 0),
            "local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap,"
            "readonly=on");
  EXPECT_EQ(argAfter(argv, "-virtfs", 1),
            "local,path=/var/cache/fabric-chaos/vm/kernel/lib,mount_tag=fckernel,"
            "security_model=passthrough,readonly=on");
  EXPECT_EQ(argAfter(argv, "-virtfs", 2),
            "local,path=/run/fabric-chaos/vm,mount_tag=fcstate,security_model=passthrough,"
            "readonly=on");
  EXPECT_EQ(argAfter(argv, "-append"), kernelCommandLine(options, 1));
}

TEST(QemuArgv, MemoryAndQemuBinaryAreOptions) {
  auto options = labOptions(2);
  options.mem_mb = 1024;
  options.qemu = "/usr/local/bin/qemu-system-x86_64";
  auto argv = qemuArgv(options, 0);
  EXPECT_EQ(argv[0], "/usr/local/bin/qemu-system-x86_64");
  EXPECT_EQ(argAfter(argv, "-m"), "1024");
  EXPECT_EQ(argAfter(argv, "-device", 0),
            "virtio-net-pci,netdev=data,mac=52:54:00:fc:00:00,addr=0x3");
}

TEST(KernelCommandLine, CarriesWhatGuestInitReads) {
  auto options = labOptions(2);
  std::string line = kernelCommandLine(options, 0);
  for (const char* part :
       {"console=ttyS0", "panic=-1", "fc.init=/src/deploy/vm/guest-init.sh", "fc.name=vm0",
        "fc.ip=10.201.0.1/24", "fc.rxe=1", "fc.shares=fcstate:/run/fabric-chaos/vm"}) {
    EXPECT_NE((" " + line + " ").find(std::string(" ") + part + " "), std::string::npos)
        << part << " in " << line;
  }
  EXPECT_EQ(line.find("fc.agent="), std::string::npos) << "no agent command, no fc.agent";

  options.agent_command = defaultAgentCommand(options);
  line = kernelCommandLine(options, 1);
  EXPECT_NE(line.find(" fc.ip=10.201.0.2/24"), std::string::npos);
  EXPECT_NE(line.find(" fc.agent=" + base64Encode(options.agent_command)), std::string::npos);
  // One word each: the guest splits the command line on spaces.
  EXPECT_EQ(base64Encode(options.agent_command).find(' '), std::string::npos);
}

TEST(DefaultAgentCommand, ListensOnTheForwardedPortWithTheSharedToken) {
  EXPECT_EQ(defaultAgentCommand(labOptions(2)),
            "/opt/fc/fabric-chaos agent --listen 0.0.0.0:7070 --token-file "
            "/run/fabric-chaos/vm/agent.token --allow eth0 --mgmt-if eth1");
}

TEST(VmFiles, LiveUnderTheStateDirectory) {
  auto options = labOptions(2);
  options.state_dir = "/tmp/x";
  EXPECT_EQ(vmName(3), "vm3");
  EXPECT_EQ(vmDir(options), "/tmp/x/vm");
  EXPECT_EQ(vmPidFile(options, 3), "/tmp/x/vm/vm3.pid");
  EXPECT_EQ(vmConsoleLog(options, 3), "/tmp/x/vm/vm3.console.log");
  EXPECT_EQ(vmTokenFile(options), "/tmp/x/vm/agent.token");
}

TEST(Base64, MatchesRfc4648TestVectors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\xff\xfe\x00", 3), "//4A"},
      {"echo $(hostname) && exit 3", "ZWNobyAkKGhvc3RuYW1lKSAmJiBleGl0IDM="},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(base64Encode(in), want) << in;
}

}  // namespace
}  // namespace fabric_chaos::lab
