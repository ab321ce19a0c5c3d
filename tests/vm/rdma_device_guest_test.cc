// rdma_port_down, rdma_gid_change, rdma_mtu_change and rdma_device_remove through the real
// injector and adapters (RDMA netlink, rtnetlink, sysfs), run INSIDE one VM as root
// (tests/vm/CMakeLists.txt boots it with deploy/vm/run-in-vm.sh): Soft-RoCE rxe0 on the guest's
// eth0, Debian's 6.12 kernel. Observed from outside the injector: `rdma link show`, ibv_devinfo
// and ibv_devices, `ip`, sysfs, and rdma_async_listener, a verbs program with rxe0 open that
// prints each async event the kernel sends it. Each fault is applied twice and reverted twice,
// and the tools must then show exactly the state from before, including what the kernel dropped
// along with the fault (routes, a secondary address, static IPv6 addresses).

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "injectors/rdma/rdma_device_fault.h"
#include "injectors/sys/ip_config.h"
#include "injectors/sys/links.h"
#include "injectors/sys/rdma_device_control.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using injectors::Fault;
using injectors::RdmaDeviceFault;
using injectors::RdmaDeviceFaultKind;
using injectors::RdmaPortTarget;
using nlohmann::json;

// The status itself on failure, not just "false".
#define ASSERT_OK(expr)                                                       \
  do {                                                                        \
    const ::fabric_chaos::core::Status fc_status_ = (expr);                   \
    ASSERT_TRUE(fc_status_.isOk()) << #expr << ": " << fc_status_.toString(); \
  } while (0)

const std::string kListener = FC_LISTENER_PATH;
constexpr int kWaitMs = 60000;  // a TCG guest runs 10-20x slower than the host

std::string sh(const std::string& command) { return runShell(command + " 2>&1").out; }

// Prints what a tool showed, for the log.
std::string shown(const std::string& label, const std::string& command) {
  const std::string out = sh(command);
  std::cout << "[" << label << "] $ " << command << "\n" << out << std::flush;
  return out;
}

// "PORT_ACTIVE", "PORT_DOWN", ...: rxe0 port 1's state as ibv_devinfo reports it.
std::string portState() {
  std::smatch match;
  const std::string out = sh("ibv_devinfo -d rxe0");
  static const std::regex state(R"(state:\s+(\w+))");
  return std::regex_search(out, match, state) ? match[1].str() : "";
}

// The GIDs of rxe0 port 1 as ibv_devinfo lists them, sorted, without their indexes: a re-created
// device lists the addresses of its netdev in its own order.
std::vector<std::string> gids() {
  std::vector<std::string> out;
  std::istringstream in(sh("ibv_devinfo -v -d rxe0"));
  std::string line;
  static const std::regex gid(R"(GID\[\s*\d+\]:\s+(\S+, .*))");
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, gid)) out.push_back(match[1].str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string activeMtu() {
  std::smatch match;
  const std::string out = sh("ibv_devinfo -d rxe0");
  static const std::regex mtu(R"(active_mtu:\s+(\d+))");
  return std::regex_search(out, match, mtu) ? match[1].str() : "";
}

// The IP configuration the faults must restore, as ip prints it. IPv6 addresses under DAD are
// "tentative" for a while after they come back; that word is left out.
std::string ipv4Addresses() { return sh("ip -4 -o addr show dev eth0"); }
std::string staticIpv6Addresses() {
  return std::regex_replace(sh("ip -6 -o addr show dev eth0 permanent"), std::regex(" tentative"),
                            "");
}
std::string ipv4Routes() { return sh("ip -4 route show table all dev eth0"); }
std::string staticIpv6Routes() { return sh("ip -6 route show table all dev eth0 proto static"); }

// rdma_async_listener with rxe0 open: its event lines.
class Listener {
 public:
  Listener() : child_({kListener, "rxe0", "300"}) {}
  bool ready() {
    return waitFor([&] { return child_.output().find("READY rxe0") != std::string::npos; },
                   kWaitMs);
  }
  std::vector<std::string> events() {
    std::vector<std::string> out;
    std::istringstream in(child_.output());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("EVENT ", 0) == 0) out.push_back(line.substr(6));
    }
    return out;
  }
  // Waits until `event` has been seen more than `seen_before` times.
  bool sees(const std::string& event, size_t seen_before = 0) {
    return waitFor([&] { return count(event) > seen_before; }, kWaitMs);
  }
  size_t count(const std::string& event) {
    const auto all = events();
    return static_cast<size_t>(std::count(all.begin(), all.end(), event));
  }
  std::string output() { return child_.output(); }
  int stop() { return child_.signalAndWait(SIGTERM, 10000, true); }

 private:
  ChildProcess child_;
};

class RdmaDeviceGuest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/sys/class/infiniband/rxe0")) {
      FAIL() << "no rxe0 in this guest: run it with deploy/vm/run-in-vm.sh (which adds rxe0)";
    }
    ASSERT_TRUE(waitFor([] { return portState() == "PORT_ACTIVE"; }, kWaitMs))
        << sh("ibv_devinfo -d rxe0");
  }
  void TearDown() override {
    for (const std::string& command : cleanup_) sh(command);
  }

  RdmaDeviceFault make(RdmaDeviceFaultKind kind) {
    return RdmaDeviceFault(kind, devices_.get(), links_.get(), ip_.get());
  }
  // Runs a setup command and remembers how to undo it.
  void setUp(const std::string& command, const std::string& undo) {
    ASSERT_EQ(runShell(command + " 2>&1").exit_code, 0) << command << ": " << sh(command);
    cleanup_.insert(cleanup_.begin(), undo);
  }

  std::unique_ptr<sys::RdmaDeviceControl> devices_ = sys::makeNetlinkRdmaDeviceControl();
  std::unique_ptr<sys::LinkControl> links_ = sys::makeNetlinkLinkControl();
  std::unique_ptr<sys::IpConfig> ip_ = sys::makeNetlinkIpConfig();
  std::vector<std::string> cleanup_;
};

TEST_F(RdmaDeviceGuest, PortDownSendsPortErrAndRevertBringsBackThePortAndWhatTheKernelDropped) {
  setUp("ip addr add fd00::15/64 nodad dev eth0", "ip addr del fd00::15/64 dev eth0");
  setUp("ip route add 10.9.0.0/16 via 10.0.2.2 dev eth0 proto static", "ip route del 10.9.0.0/16");
  setUp("ip route add default via 10.0.2.2 dev eth0 table 100", "ip route del default table 100");
  setUp("ip -6 route add fd01::/64 via fd00::1 dev eth0 proto static", "ip -6 route del fd01::/64");
  const std::string link_before = shown("before", "rdma link show rxe0/1");
  const std::string v4_before = ipv4Addresses();
  const std::string v6_before = staticIpv6Addresses();
  const std::string routes_before = ipv4Routes();
  const std::string v6_routes_before = staticIpv6Routes();
  EXPECT_NE(link_before.find("state ACTIVE physical_state LINK_UP netdev eth0"), std::string::npos);
  Listener listener;
  ASSERT_TRUE(listener.ready()) << listener.output();

  cleanup_.insert(cleanup_.begin(), "ip link set eth0 up");
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  const Fault f{"rdma_port_down", RdmaPortTarget{"rxe0", 1, 0}, json::object()};
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["netdev"], "eth0");
  EXPECT_EQ((*prior)["was_up"], true);
  ASSERT_OK(fault.apply(f));
  ASSERT_OK(fault.apply(f));
  EXPECT_TRUE(listener.sees("IBV_EVENT_PORT_ERR port=1")) << listener.output();
  EXPECT_TRUE(waitFor([] { return portState() == "PORT_DOWN"; }, kWaitMs));
  EXPECT_NE(shown("applied", "rdma link show rxe0/1").find("state DOWN"), std::string::npos);
  EXPECT_EQ(shown("applied", "ip -o link show dev eth0").find(",UP"), std::string::npos);
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  std::cout << "[observe] " << observed->dump() << "\n";
  EXPECT_EQ((*observed)["admin_up"], false);
  EXPECT_EQ((*observed)["port_state"], "DOWN");
  // What the kernel took along: the routes through eth0 and its static IPv6 address.
  EXPECT_EQ(shown("applied", "ip route show 10.9.0.0/16"), "");
  EXPECT_EQ(staticIpv6Addresses().find("fd00::15"), std::string::npos);

  ASSERT_OK(fault.revert(f, *prior));
  EXPECT_TRUE(listener.sees("IBV_EVENT_PORT_ACTIVE port=1")) << listener.output();
  EXPECT_TRUE(waitFor([] { return portState() == "PORT_ACTIVE"; }, kWaitMs));
  ASSERT_OK(fault.revert(f, *prior));
  EXPECT_EQ(shown("reverted", "rdma link show rxe0/1"), link_before);
  EXPECT_EQ(ipv4Addresses(), v4_before);
  EXPECT_TRUE(waitFor([&] { return staticIpv6Addresses() == v6_before; }, kWaitMs))
      << staticIpv6Addresses() << "\nbefore:\n"
      << v6_before;
  EXPECT_EQ(shown("reverted", "ip -4 route show table all dev eth0"), routes_before);
  EXPECT_EQ(staticIpv6Routes(), v6_routes_before);
  std::cout << "[events] " << listener.output();
  EXPECT_EQ(listener.count("IBV_EVENT_PORT_ERR port=1"), 1u);
}

TEST_F(RdmaDeviceGuest, GidChangeSendsGidChangeAndRevertRestoresTheAddressExactly) {
  // qemu's user network advertises fec0::/64, and the guest's SLAAC address for it comes back
  // some seconds after every link-up (the port-down case before this one): one CI run saw it
  // arrive mid-test and take the emptied GID entry. Router advertisements are ignored for this
  // case, and it starts once no address is still in duplicate address detection, so that only
  // the test puts an address into the emptied entry, below, where it means to.
  const std::string accept_ra = "/proc/sys/net/ipv6/conf/eth0/accept_ra";
  const std::string accept_ra_before = sh("cat " + accept_ra);
  ASSERT_FALSE(accept_ra_before.empty());
  setUp("echo 0 > " + accept_ra, "echo " + accept_ra_before.substr(0, 1) + " > " + accept_ra);
  ASSERT_TRUE(waitFor([] { return sh("ip -6 -o addr show dev eth0 tentative").empty(); }, kWaitMs))
      << sh("ip -6 addr show dev eth0");
  setUp("ip addr add 10.0.2.16/24 brd 10.0.2.255 dev eth0", "ip addr del 10.0.2.16/24 dev eth0");
  setUp("ip route add 10.9.0.0/16 via 10.0.2.2 dev eth0 proto static", "ip route del 10.9.0.0/16");
  setUp("ip route add default via 10.0.2.2 dev eth0 table 100", "ip route del default table 100");
  // The GID that is 10.0.2.15 (index 1 on rxe: 0 is the default GID made from the MAC).
  int gid_index = -1;
  for (int i = 0; i < 8 && gid_index < 0; ++i) {
    auto gid = devices_->gidAddress("rxe0", 1, i);
    if (gid && gid->address == "10.0.2.15") gid_index = i;
  }
  ASSERT_GE(gid_index, 0) << sh("cat /sys/class/infiniband/rxe0/ports/1/gids/*");
  const std::string gid_file =
      "/sys/class/infiniband/rxe0/ports/1/gids/" + std::to_string(gid_index);
  shown("before", "ibv_devinfo -v -d rxe0 | grep GID");
  const std::vector<std::string> gids_before = gids();
  const std::string v4_before = shown("before", "ip -4 -o addr show dev eth0");
  const std::string routes_before = ipv4Routes();
  Listener listener;
  ASSERT_TRUE(listener.ready()) << listener.output();

  cleanup_.insert(cleanup_.begin(), "ip addr add 10.0.2.15/24 dev eth0");
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  const Fault f{"rdma_gid_change", RdmaPortTarget{"rxe0", 1, gid_index}, json::object()};
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  std::cout << "[capture] " << (*prior)["address"].dump() << "\n";
  EXPECT_EQ((*prior)["address"]["local"], "10.0.2.15");
  ASSERT_OK(fault.apply(f));
  EXPECT_TRUE(listener.sees("IBV_EVENT_GID_CHANGE port=1")) << listener.output();
  EXPECT_EQ(shown("applied", "ip -4 -o addr show dev eth0"), "");  // its secondary went too
  EXPECT_EQ(shown("applied", "cat " + gid_file), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  EXPECT_EQ(shown("applied", "ibv_devinfo -v -d rxe0 | grep GID").find("10.0.2.15"),
            std::string::npos);
  EXPECT_EQ(ipv4Routes(), "");
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  std::cout << "[observe] " << observed->dump() << "\n";
  EXPECT_EQ((*observed)["gid_address"], "");

  // What SLAAC did in that CI run, on purpose: an address that takes an emptied entry. Applied
  // again, the fault leaves it alone: its address, 10.0.2.15, is already gone.
  setUp("ip addr add fd02::15/64 nodad dev eth0", "ip addr del fd02::15/64 dev eth0");
  EXPECT_TRUE(waitFor(
      [] { return sh("ibv_devinfo -v -d rxe0 | grep GID").find("fd02::15") != std::string::npos; },
      kWaitMs))
      << sh("ibv_devinfo -v -d rxe0 | grep GID");
  shown("refilled", "cat " + gid_file);
  ASSERT_OK(fault.apply(f));
  EXPECT_NE(shown("applied again", "ip -6 -o addr show dev eth0").find("fd02::15/64"),
            std::string::npos);
  EXPECT_NE(sh("ibv_devinfo -v -d rxe0 | grep GID").find("fd02::15"), std::string::npos);
  EXPECT_EQ(sh("ip -4 -o addr show dev eth0"), "");
  ASSERT_EQ(runShell("ip addr del fd02::15/64 dev eth0").exit_code, 0);

  const size_t changes = listener.count("IBV_EVENT_GID_CHANGE port=1");
  ASSERT_OK(fault.revert(f, *prior));
  EXPECT_TRUE(listener.sees("IBV_EVENT_GID_CHANGE port=1", changes)) << listener.output();
  ASSERT_OK(fault.revert(f, *prior));
  EXPECT_EQ(shown("reverted", "ip -4 -o addr show dev eth0"), v4_before);
  EXPECT_EQ(shown("reverted", "ip -4 route show table all dev eth0"), routes_before);
  // The GIDs from before, no more and no fewer (their indexes may differ).
  EXPECT_TRUE(waitFor([&] { return gids() == gids_before; }, kWaitMs))
      << shown("reverted", "ibv_devinfo -v -d rxe0 | grep GID");
  std::cout << "[events] " << listener.output();

  // The default GID has no address behind it: refused, nothing touched.
  const Fault on_default{"rdma_gid_change", RdmaPortTarget{"rxe0", 1, 0}, json::object()};
  auto refused = fault.capture(on_default);
  EXPECT_EQ(refused.status().code(), core::StatusCode::kFailedPrecondition);
  std::cout << "[refused] " << refused.status().toString() << "\n";
}

TEST_F(RdmaDeviceGuest, MtuChangeChangesTheActiveMtuOfNewQpsAndRevertRestoresIt) {
  const std::string mtu_before = activeMtu();
  const std::string link_before = sh("ip -o link show dev eth0");
  EXPECT_EQ(mtu_before, "1024") << sh("ibv_devinfo -d rxe0");
  cleanup_.insert(cleanup_.begin(), "ip link set eth0 mtu 1500");
  auto fault = make(RdmaDeviceFaultKind::kMtuChange);
  const Fault f{"rdma_mtu_change", RdmaPortTarget{"rxe0", 1, 0}, json{{"mtu", 9000}}};
  ASSERT_TRUE(fault.validate(f.params).isOk());
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"netdev", "eth0"}, {"mtu", 1500}}));
  ASSERT_OK(fault.apply(f));
  ASSERT_OK(fault.apply(f));
  EXPECT_NE(shown("applied", "ip -o link show dev eth0").find("mtu 9000"), std::string::npos);
  EXPECT_EQ(activeMtu(), "4096") << shown("applied", "ibv_devinfo -d rxe0");
  ASSERT_OK(fault.revert(f, *prior));
  ASSERT_OK(fault.revert(f, *prior));
  EXPECT_EQ(sh("ip -o link show dev eth0"), link_before);
  EXPECT_EQ(activeMtu(), mtu_before) << shown("reverted", "ibv_devinfo -d rxe0");
}

TEST_F(RdmaDeviceGuest, DeviceRemoveIsRefusedWhileAProgramHoldsTheDeviceOpen) {
  Listener listener;
  ASSERT_TRUE(listener.ready()) << listener.output();
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  const Fault f{"rdma_device_remove", RdmaPortTarget{"rxe0", 1, 0}, json::object()};
  auto refused = fault.capture(f);
  std::cout << "[refused] " << refused.status().toString() << "\n";
  EXPECT_EQ(refused.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("rxe0 has 1 open verbs context(s)"), std::string::npos);
  EXPECT_EQ(fault.apply(f).code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(shown("refused", "rdma link show").find("link rxe0/1"), std::string::npos);
  EXPECT_TRUE(listener.events().empty()) << listener.output();
  EXPECT_EQ(listener.stop(), 128 + SIGTERM);
}

TEST_F(RdmaDeviceGuest, DeviceRemoveTakesTheDeviceAwayAndRevertRecreatesItOnItsNetdev) {
  const std::string link_before = shown("before", "rdma link show");
  shown("before", "ibv_devinfo -v -d rxe0 | grep GID");
  const std::vector<std::string> gids_before = gids();
  cleanup_.insert(cleanup_.begin(),
                  "rdma link show rxe0/1 || rdma link add rxe0 type rxe netdev eth0");
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  const Fault f{"rdma_device_remove", RdmaPortTarget{"rxe0", 1, 0}, json::object()};
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  std::cout << "[capture] " << prior->dump() << "\n";
  EXPECT_EQ(*prior, (json{{"device", "rxe0"}, {"link_type", "rxe"}, {"netdev", "eth0"}}));
  ASSERT_OK(fault.apply(f));
  ASSERT_OK(fault.apply(f));
  EXPECT_EQ(shown("applied", "rdma link show"), "");
  EXPECT_EQ(shown("applied", "ibv_devices").find("rxe0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("/sys/class/infiniband/rxe0"));
  const CommandOutput opened = runShell(kListener + " rxe0 5 2>&1");
  std::cout << "[applied] listener exit " << opened.exit_code << ": " << opened.out;
  EXPECT_EQ(opened.exit_code, 1) << opened.out;
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ(*observed, (json{{"device", "rxe0"}, {"present", false}}));

  ASSERT_OK(fault.revert(f, *prior));
  ASSERT_OK(fault.revert(f, *prior));
  EXPECT_TRUE(waitFor([] { return portState() == "PORT_ACTIVE"; }, kWaitMs));
  EXPECT_EQ(shown("reverted", "rdma link show"), link_before);
  // Every GID from before is back (an IPv6 address from qemu's user-net prefix may join them).
  EXPECT_TRUE(waitFor(
      [&] {
        const std::vector<std::string> now = gids();
        return std::all_of(gids_before.begin(), gids_before.end(), [&](const std::string& gid) {
          return std::find(now.begin(), now.end(), gid) != now.end();
        });
      },
      kWaitMs))
      << shown("reverted", "ibv_devinfo -v -d rxe0 | grep GID");
  Listener listener;
  EXPECT_TRUE(listener.ready()) << listener.output();
  observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  std::cout << "[observe] " << observed->dump() << "\n";
  EXPECT_EQ((*observed)["present"], true);
}

}  // namespace
}  // namespace fabric_chaos::testing
