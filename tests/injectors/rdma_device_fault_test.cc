// The RDMA device kinds (injectors/rdma/rdma_device_fault.h): their declarations, and the injector
// against fake RDMA devices, links and IP configuration for each kind: what capture() records,
// what apply() changes, that revert() puts back exactly that (with what the kernel dropped along)
// and is idempotent, and the refusals (no netdev, the default GID, hardware, open programs).
// The kernel's side effects are played by the test on the fakes, where the kernel would act.
#include "injectors/rdma/rdma_device_fault.h"

#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <vector>

#include "injectors/registry.h"
#include "tests/fakes/fake_ip_config.h"
#include "tests/fakes/fake_links.h"
#include "tests/fakes/fake_rdma_device_control.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using sys::IpAddress;
using sys::IpRoute;

const IpAddress kPrimary{AF_INET,           "10.0.2.15",     24,    "", "10.0.2.255",
                         RT_SCOPE_UNIVERSE, IFA_F_PERMANENT, "eth0"};
const IpAddress kSecondary{AF_INET,
                           "10.0.2.16",
                           24,
                           "",
                           "10.0.2.255",
                           RT_SCOPE_UNIVERSE,
                           IFA_F_PERMANENT | IFA_F_SECONDARY,
                           "eth0:1"};
const IpAddress kStaticV6{
    AF_INET6, "fd00::15", 64, "", "", RT_SCOPE_UNIVERSE, IFA_F_PERMANENT | IFA_F_NODAD};
const IpAddress kLinkLocal{AF_INET6,       "fe80::5054:ff:fefc:ff01", 64, "", "", RT_SCOPE_LINK,
                           IFA_F_PERMANENT};
// SLAAC: a lifetime, no IFA_F_PERMANENT.
const IpAddress kSlaac{AF_INET6,      "fec0::5054:ff:fefc:ff01", 64, "",    "",
                       RT_SCOPE_SITE, IFA_F_MANAGETEMPADDR,      "", 86400, 14400};

IpRoute route(std::string destination, int length, std::string gateway, int protocol,
              uint32_t table = RT_TABLE_MAIN, int family = AF_INET) {
  IpRoute r;
  r.family = family;
  r.table = table;
  r.destination = std::move(destination);
  r.destination_len = length;
  r.gateway = std::move(gateway);
  r.protocol = protocol;
  r.scope = r.gateway.empty() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  return r;
}

const IpRoute kConnected = route("10.0.2.0", 24, "", RTPROT_KERNEL);
// With a metric: the prior is read back as captured, integers built signed.
const IpRoute kStaticRoute = [] {
  IpRoute r = route("10.9.0.0", 16, "10.0.2.2", RTPROT_STATIC);
  r.metrics = {{RTAX_MTU, 1400}};
  return r;
}();
const IpRoute kRailDefault = route("", 0, "10.0.2.2", RTPROT_DHCP, 100);
const IpRoute kV6Prefix = route("fe80::", 64, "", RTPROT_KERNEL, RT_TABLE_MAIN, AF_INET6);
const IpRoute kRaDefault = route("", 0, "fe80::2", RTPROT_RA, RT_TABLE_MAIN, AF_INET6);

Fault faultOn(const std::string& kind, int gid_index = 1, json params = json::object()) {
  return Fault{kind, RdmaPortTarget{"rxe0", 1, gid_index}, std::move(params)};
}

std::vector<std::string> locals(const std::vector<IpAddress>& addresses) {
  std::vector<std::string> out;
  for (const IpAddress& a : addresses) out.push_back(a.local);
  return out;
}

class RdmaDeviceFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fakes::FakeRdmaDevice rxe;
    rxe.name = "rxe0";
    rxe.gids = {{0, {AF_INET6, "fe80::5054:ff:fefc:ff01"}},
                {1, {AF_INET, "10.0.2.15"}},
                {2, {AF_INET6, "fd00::15"}},
                {3, {AF_INET, "10.0.9.9"}}};
    devices_.addDevice(rxe);
    sys::LinkInfo eth0;
    eth0.ifname = "eth0";
    eth0.admin_up = true;
    eth0.carrier = true;
    eth0.mac = "52:54:00:fc:ff:01";
    eth0.mtu = 1500;
    links_.addLink("", eth0);
    ip_.setAddresses("", "eth0", original_addresses_);
    ip_.setRoutes("", "eth0", original_routes_);
  }

  RdmaDeviceFault make(RdmaDeviceFaultKind kind) {
    return RdmaDeviceFault(kind, &devices_, &links_, &ip_);
  }

  // The mutating calls of the IP fake, in order.
  std::vector<std::string> ipChanges() const {
    std::vector<std::string> out;
    for (const std::string& call : ip_.calls()) {
      if (call.rfind("addAddress", 0) == 0 || call.rfind("removeAddress", 0) == 0 ||
          call.rfind("addRoute", 0) == 0) {
        out.push_back(call);
      }
    }
    return out;
  }

  const std::vector<IpAddress> original_addresses_{kPrimary, kSecondary, kStaticV6, kLinkLocal,
                                                   kSlaac};
  const std::vector<IpRoute> original_routes_{kConnected, kStaticRoute, kRailDefault, kV6Prefix,
                                              kRaDefault};
  fakes::FakeRdmaDeviceControl devices_;
  fakes::FakeLinks links_;
  fakes::FakeIpConfig ip_;
};

// --- declarations ---

TEST(RdmaDeviceSpecs, FourExclusiveInstantKindsOnAnRdmaPortEachHoldingItsOwnResource) {
  const std::vector<std::pair<std::string, std::string>> expected{
      {"rdma_port_down", "rdma_port_state"},
      {"rdma_gid_change", "rdma_gid"},
      {"rdma_device_remove", "rdma_device"},
      {"rdma_mtu_change", "rdma_mtu"}};
  ASSERT_EQ(kRdmaDeviceFaultKinds.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const KindSpec& spec = rdmaDeviceFaultSpec(kRdmaDeviceFaultKinds[i]);
    EXPECT_EQ(spec.kind, expected[i].first);
    EXPECT_EQ(spec.resource, expected[i].second);
    EXPECT_EQ(spec.target, TargetType::kRdmaPort);
    EXPECT_EQ(spec.composition, Composition::kExclusive);
    EXPECT_EQ(spec.lifecycle, Lifecycle::kInstant);
    EXPECT_EQ(spec.phases.shape, PhaseShape::kOneWindow);
    EXPECT_EQ(findKindSpec(spec.kind), &spec) << "not in kindSpecs()";
    EXPECT_EQ(rdmaDeviceFaultKindOf(spec.kind), kRdmaDeviceFaultKinds[i]);
  }
  EXPECT_EQ(rdmaDeviceFaultKindOf("link_flap"), std::nullopt);
  // What a verbs program sees is said in each summary.
  EXPECT_NE(rdmaDeviceFaultSpec(RdmaDeviceFaultKind::kPortDown).summary.find("IBV_EVENT_PORT_ERR"),
            std::string::npos);
  EXPECT_NE(
      rdmaDeviceFaultSpec(RdmaDeviceFaultKind::kGidChange).summary.find("IBV_EVENT_GID_CHANGE"),
      std::string::npos);
  EXPECT_NE(rdmaDeviceFaultSpec(RdmaDeviceFaultKind::kDeviceRemove)
                .summary.find("IBV_EVENT_DEVICE_FATAL"),
            std::string::npos);
}

TEST(RdmaDeviceSpecs, MtuChangeRequiresAnMtuInBytesAndGidChangeChoosesItsGid) {
  for (RdmaDeviceFaultKind kind :
       {RdmaDeviceFaultKind::kPortDown, RdmaDeviceFaultKind::kDeviceRemove}) {
    const KindSpec& spec = rdmaDeviceFaultSpec(kind);
    EXPECT_TRUE(spec.params.empty()) << spec.kind;
    EXPECT_EQ(checkParams(spec, {{"mtu", 1500}}).message(), "mtu: unknown parameter (expected )");
  }
  const KindSpec& gid = rdmaDeviceFaultSpec(RdmaDeviceFaultKind::kGidChange);
  ASSERT_EQ(gid.params.size(), 1u);
  EXPECT_EQ(gid.params[0].default_value, "index");
  EXPECT_TRUE(checkParams(gid, json::object()).isOk());
  EXPECT_TRUE(checkParams(gid, {{"gid", "ipv4"}}).isOk());
  EXPECT_EQ(checkParams(gid, {{"gid", "ipv6"}}).code(), StatusCode::kUnprocessable);
  const KindSpec& mtu = rdmaDeviceFaultSpec(RdmaDeviceFaultKind::kMtuChange);
  ASSERT_EQ(mtu.params.size(), 1u);
  EXPECT_EQ(mtu.params[0].unit, "bytes");
  EXPECT_TRUE(checkParams(mtu, {{"mtu", 576}}).isOk());
  EXPECT_TRUE(checkParams(mtu, {{"mtu", 9000}}).isOk());
  EXPECT_EQ(checkParams(mtu, json::object()).message(), "mtu: required");
  EXPECT_EQ(checkParams(mtu, {{"mtu", 575}}).message(), "mtu: must be an integer in 576..9000");
  EXPECT_EQ(checkParams(mtu, {{"mtu", 9001}}).message(), "mtu: must be an integer in 576..9000");
  EXPECT_EQ(checkParams(mtu, {{"mtu", 1500.5}}).message(), "mtu: must be an integer in 576..9000");
}

TEST_F(RdmaDeviceFaultTest, InfoNamesTheBackendAndMissingAdaptersMakeTheKindUnavailable) {
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  EXPECT_TRUE(fault.info().available);
  EXPECT_EQ(fault.info().kind, "rdma_device_remove");
  EXPECT_EQ(fault.info().backend, "RDMA netlink (DELLINK, NEWLINK)");
  EXPECT_EQ(fault.info().description, fault.spec().summary);
  RdmaDeviceFault without(RdmaDeviceFaultKind::kPortDown, nullptr, &links_, &ip_);
  EXPECT_FALSE(without.info().available);
  EXPECT_EQ(without.info().reason, "no RDMA device, link or address adapter");
  EXPECT_EQ(without.capture(faultOn("rdma_port_down")).status().code(), StatusCode::kNotSupported);
}

TEST_F(RdmaDeviceFaultTest, OnlyAnRdmaPortTargetWithADeviceIsAccepted) {
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  Fault on_interface{"rdma_port_down", InterfaceTarget{"", "eth0"}, json::object()};
  EXPECT_EQ(fault.capture(on_interface).status().message(),
            "rdma_port_down acts on an rdma_port, not on target type interface");
  Fault no_device{"rdma_port_down", RdmaPortTarget{"", 1, 0}, json::object()};
  EXPECT_EQ(fault.apply(no_device).message(), "target.device: required");
  EXPECT_EQ(
      fault.capture(Fault{"rdma_port_down", RdmaPortTarget{"rxe9", 1, 0}, {}}).status().code(),
      StatusCode::kNotFound);
  EXPECT_TRUE(links_.link("", "eth0")->admin_up);
}

// --- rdma_port_down ---

TEST_F(RdmaDeviceFaultTest, PortDownRecordsTheNetdevItsStateAndItsIpConfiguration) {
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  auto prior = fault.capture(faultOn("rdma_port_down"));
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["netdev"], "eth0");
  EXPECT_EQ((*prior)["was_up"], true);
  EXPECT_EQ((*prior)["ip"]["addresses"].size(), 5u);
  EXPECT_EQ((*prior)["ip"]["routes"].size(), 5u);
  EXPECT_EQ((*prior)["ip"]["addresses"][0]["local"], "10.0.2.15");
  EXPECT_EQ((*prior)["ip"]["addresses"][0]["broadcast"], "10.0.2.255");
  EXPECT_EQ((*prior)["ip"]["addresses"][0]["label"], "eth0");
  EXPECT_TRUE(links_.calls().back().rfind("getLink", 0) == 0);
  EXPECT_EQ(links_.mutatingCalls(), 0);  // capture changes nothing
}

TEST_F(RdmaDeviceFaultTest, PortDownTakesTheNetdevDownAndRevertRestoresWhatTheKernelDropped) {
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  const Fault f = faultOn("rdma_port_down");
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_FALSE(links_.link("", "eth0")->admin_up);
  ASSERT_TRUE(fault.apply(f).isOk());  // twice: still one fault
  EXPECT_FALSE(links_.link("", "eth0")->admin_up);
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["admin_up"], false);
  EXPECT_EQ((*observed)["netdev"], "eth0");

  // What the kernel does on an administrative down: IPv6 addresses go (keep_addr_on_down = 0),
  // and the routes through the netdev with them; IPv4 addresses stay.
  ip_.setAddresses("", "eth0", {kPrimary, kSecondary});
  ip_.setRoutes("", "eth0", {});

  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_TRUE(links_.link("", "eth0")->admin_up);
  // The static IPv6 address comes back; link-local and SLAAC addresses are the kernel's to make.
  EXPECT_EQ(locals(ip_.addressesOf("", "eth0")),
            (std::vector<std::string>{"10.0.2.15", "10.0.2.16", "fd00::15"}));
  EXPECT_EQ(ip_.addressesOf("", "eth0")[2], kStaticV6);
  // The static and DHCP routes come back; the kernel's and the router's do not (not ours).
  EXPECT_EQ(ip_.routesOf("", "eth0"), (std::vector<IpRoute>{kStaticRoute, kRailDefault}));

  // Reverting again changes nothing.
  const auto addresses = ip_.addressesOf("", "eth0");
  const auto routes = ip_.routesOf("", "eth0");
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_EQ(ip_.addressesOf("", "eth0"), addresses);
  EXPECT_EQ(ip_.routesOf("", "eth0"), routes);
  EXPECT_TRUE(links_.link("", "eth0")->admin_up);
}

TEST_F(RdmaDeviceFaultTest, PortDownOnANetdevThatWasDownLeavesItDown) {
  links_.setAdminUp("", "eth0", false);
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  const Fault f = faultOn("rdma_port_down");
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ((*prior)["was_up"], false);
  ASSERT_TRUE(fault.apply(f).isOk());
  const int calls = links_.mutatingCalls();
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_EQ(links_.mutatingCalls(), calls);
  EXPECT_FALSE(links_.link("", "eth0")->admin_up);
  EXPECT_TRUE(ipChanges().empty());
}

TEST_F(RdmaDeviceFaultTest, PortDownOnANativeInfinibandPortPointsAtIbLinkDown) {
  fakes::FakeRdmaDevice mlx;
  mlx.name = "mlx5_0";
  mlx.link_type = "";
  mlx.netdev = "";
  devices_.addDevice(mlx);
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  const Fault f{"rdma_port_down", RdmaPortTarget{"mlx5_0", 1, 0}, json::object()};
  auto prior = fault.capture(f);
  EXPECT_EQ(prior.status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(prior.status().message(),
            "rdma_port_down capture: rdma_port_down: mlx5_0 port 1 has no netdev (native "
            "InfiniBand, not RoCE); take an InfiniBand port down with ib_link_down, which "
            "disables its switch end");
  EXPECT_EQ(fault.apply(f).code(), StatusCode::kNotSupported);
  EXPECT_EQ(links_.mutatingCalls(), 0);
}

TEST_F(RdmaDeviceFaultTest, PortDownRevertFailsWhenTheLinkCannotComeUpAndSucceedsWhenItIsGone) {
  auto fault = make(RdmaDeviceFaultKind::kPortDown);
  const Fault f = faultOn("rdma_port_down");
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(fault.apply(f).isOk());
  links_.failOnCall(2, core::Status(StatusCode::kPermissionDenied, "Operation not permitted"));
  const core::Status refused = fault.revert(f, *prior);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.message(),
            "rdma_port_down revert on rxe0 port 1: set eth0 up: Operation not permitted");
  EXPECT_TRUE(ipChanges().empty());  // nothing re-added on a netdev still down
  links_.removeLink("", "eth0");
  EXPECT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_EQ(fault.revert(f, json::object()).message(),
            "rdma_port_down revert on rxe0 port 1: prior.netdev: required");
}

// --- rdma_gid_change ---

TEST_F(RdmaDeviceFaultTest, GidChangeRemovesTheAddressBehindTheGidAndRevertPutsItAllBack) {
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  const Fault f = faultOn("rdma_gid_change", 1);
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["netdev"], "eth0");
  EXPECT_EQ((*prior)["address"]["local"], "10.0.2.15");
  EXPECT_EQ((*prior)["address"]["prefix_len"], 24);
  EXPECT_EQ((*prior)["address"]["broadcast"], "10.0.2.255");
  EXPECT_EQ((*prior)["address"]["label"], "eth0");
  EXPECT_EQ((*prior)["ip"]["routes"].size(), 5u);

  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(ipChanges(), (std::vector<std::string>{"removeAddress /eth0 10.0.2.15/24"}));
  // The kernel: the primary's secondary goes with it, the last IPv4 address takes the IPv4
  // routes through the netdev along, and the GID entry empties.
  ip_.setAddresses("", "eth0", {kStaticV6, kLinkLocal, kSlaac});
  ip_.setRoutes("", "eth0", {kV6Prefix, kRaDefault});
  devices_.setGid("rxe0", 1, std::nullopt);
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["gid_address"], "");
  EXPECT_EQ((*observed)["gid_index"], 1);

  // Twice: the recorded address again, which the kernel no longer has; that is success.
  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(ipChanges(), (std::vector<std::string>{"removeAddress /eth0 10.0.2.15/24",
                                                   "removeAddress /eth0 10.0.2.15/24"}));
  EXPECT_EQ(ip_.addressesOf("", "eth0").size(), 3u);

  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  // The address first (the routes need it), as it was, then its secondary, then the routes.
  const std::vector<std::string> changes = ipChanges();
  ASSERT_GE(changes.size(), 4u);
  EXPECT_EQ(changes[2], "addAddress /eth0 10.0.2.15/24");
  EXPECT_EQ(changes[3], "addAddress /eth0 10.0.2.16/24");
  const auto addresses = ip_.addressesOf("", "eth0");
  ASSERT_EQ(addresses.size(), 5u);
  EXPECT_EQ(addresses[3], kPrimary);
  EXPECT_EQ(addresses[4], kSecondary);
  auto routes = ip_.routesOf("", "eth0");
  EXPECT_NE(std::find(routes.begin(), routes.end(), kStaticRoute), routes.end());
  EXPECT_NE(std::find(routes.begin(), routes.end(), kRailDefault), routes.end());
  EXPECT_EQ(std::find(routes.begin(), routes.end(), kConnected), routes.end());  // the kernel's

  // Again: nothing changes.
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_EQ(ip_.addressesOf("", "eth0"), addresses);
  EXPECT_EQ(ip_.routesOf("", "eth0"), routes);
}

// The kernel may put another address into the emptied entry (qemu's user network advertises
// fec0::/64; the guest's SLAAC address arrived there in one CI run). A second apply removes the
// address the capture found, which is already gone, not the newcomer.
TEST_F(RdmaDeviceFaultTest, GidChangeAppliedAgainLeavesAnAddressTheKernelPutIntoTheEmptiedGid) {
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  const Fault f = faultOn("rdma_gid_change", 1);
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(fault.apply(f).isOk());
  ip_.setAddresses("", "eth0", {kStaticV6, kLinkLocal, kSlaac});
  devices_.setGid("rxe0", 1, sys::RdmaGidAddress{AF_INET6, kSlaac.local});
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["gid_address"], kSlaac.local);  // what the entry holds now

  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(ipChanges(), (std::vector<std::string>{"removeAddress /eth0 10.0.2.15/24",
                                                   "removeAddress /eth0 10.0.2.15/24"}));
  EXPECT_EQ(locals(ip_.addressesOf("", "eth0")),
            (std::vector<std::string>{"fd00::15", kLinkLocal.local, kSlaac.local}));

  // After the revert, an injector without that capture (a restarted agent) goes by the index.
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(ipChanges().back(), "removeAddress /eth0 " + kSlaac.local + "/64");
}

// "gid": "ipv4" finds the GID by address, not by index: after an earlier change the kernel may
// have put the IPv4-mapped GID under another index (here 3 holds a stale one, 1 is ignored).
TEST_F(RdmaDeviceFaultTest, GidChangeByIpv4TakesThePrimaryIpv4AddressWhateverItsIndex) {
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  const Fault f = faultOn("rdma_gid_change", 0, json{{"gid", "ipv4"}});
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["address"]["local"], "10.0.2.15");  // the primary, not its secondary

  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(ipChanges(), (std::vector<std::string>{"removeAddress /eth0 10.0.2.15/24"}));
  ip_.setAddresses("", "eth0", {kStaticV6, kLinkLocal, kSlaac});
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk()) << observed.status().toString();
  EXPECT_EQ((*observed)["gid"], "ipv4");
  EXPECT_EQ((*observed)["gid_address"], "");
  ASSERT_TRUE(fault.apply(f).isOk());  // twice: the same address, already gone
  EXPECT_EQ(ip_.addressesOf("", "eth0").size(), 3u);

  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  const std::vector<std::string> changes = ipChanges();
  ASSERT_GE(changes.size(), 3u);
  EXPECT_EQ(changes[2], "addAddress /eth0 10.0.2.15/24");
  observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["gid_address"], "10.0.2.15");

  // Without an IPv4 address there is nothing to take away.
  ip_.setAddresses("", "eth0", {kStaticV6});
  auto none = fault.capture(f);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(),
            "rdma_gid_change capture: eth0 has no IPv4 address, so rxe0 port 1 has no "
            "IPv4-mapped GID to take away");
  EXPECT_EQ(fault.validate(json{{"gid", "ipv6"}}).code(), StatusCode::kUnprocessable);
}

TEST_F(RdmaDeviceFaultTest, GidChangeOnAnIpv6GidRemovesThatAddressWithItsFlags) {
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  const Fault f = faultOn("rdma_gid_change", 2);
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["address"]["family"], "inet6");
  EXPECT_EQ((*prior)["address"]["flags"], IFA_F_PERMANENT | IFA_F_NODAD);
  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(ipChanges(), (std::vector<std::string>{"removeAddress /eth0 fd00::15/64"}));
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  const auto addresses = ip_.addressesOf("", "eth0");
  ASSERT_EQ(addresses.size(), 5u);
  EXPECT_EQ(addresses.back(), kStaticV6);
}

TEST_F(RdmaDeviceFaultTest, GidChangeRefusesTheDefaultGidAndGidsNoAddressIsBehind) {
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  auto default_gid = fault.capture(faultOn("rdma_gid_change", 0));
  EXPECT_EQ(default_gid.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(default_gid.status().message(),
            "rdma_gid_change capture: GID 0 of rxe0 port 1 (fe80::5054:ff:fefc:ff01) is the "
            "port's default GID, made from eth0's MAC address: removing an address does not "
            "change it. Choose the index of an address-based GID (`ibv_devinfo -v -d rxe0` "
            "lists them)");
  EXPECT_EQ(fault.apply(faultOn("rdma_gid_change", 0)).code(), StatusCode::kFailedPrecondition);
  auto stray = fault.capture(faultOn("rdma_gid_change", 3));
  EXPECT_EQ(stray.status().message(),
            "rdma_gid_change capture: GID 3 of rxe0 port 1 (10.0.9.9) is not an address of eth0");
  auto empty = fault.capture(faultOn("rdma_gid_change", 7));
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(ipChanges().empty());
}

TEST_F(RdmaDeviceFaultTest, GidChangeRevertNeedsItsRecordedAddress) {
  auto fault = make(RdmaDeviceFaultKind::kGidChange);
  const Fault f = faultOn("rdma_gid_change", 1);
  EXPECT_EQ(fault.revert(f, {{"netdev", "eth0"}}).message(),
            "rdma_gid_change revert on rxe0 port 1: prior.address: must be an object");
  EXPECT_EQ(fault
                .revert(f, {{"netdev", "eth0"},
                            {"address", {{"family", "inet"}, {"local", "10.0.2.15"}}},
                            {"ip", {{"addresses", json::array()}}}})
                .message(),
            "rdma_gid_change revert on rxe0 port 1: prior.ip.routes: must be a list");
  EXPECT_TRUE(ipChanges().empty());
}

// --- rdma_device_remove ---

TEST_F(RdmaDeviceFaultTest, DeviceRemoveRecordsHowToRecreateTheDeviceAndRevertRecreatesIt) {
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  const Fault f = faultOn("rdma_device_remove");
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"device", "rxe0"}, {"link_type", "rxe"}, {"netdev", "eth0"}}));

  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_FALSE(devices_.device("rxe0").has_value());
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ(*observed, (json{{"device", "rxe0"}, {"present", false}}));
  ASSERT_TRUE(fault.apply(f).isOk());  // already gone: nothing more to do

  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  auto back = devices_.device("rxe0");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->link_type, "rxe");
  EXPECT_EQ(back->netdev, "eth0");
  ASSERT_TRUE(fault.revert(f, *prior).isOk());  // already back: nothing more to do
  std::vector<std::string> changes;
  for (const std::string& call : devices_.calls()) {
    if (call.rfind("removeLink", 0) == 0 || call.rfind("addLink", 0) == 0) changes.push_back(call);
  }
  EXPECT_EQ(changes, (std::vector<std::string>{"removeLink rxe0", "addLink rxe0 rxe eth0"}));
  observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["present"], true);
  EXPECT_EQ((*observed)["port_state"], "ACTIVE");
  EXPECT_EQ((*observed)["netdev"], "eth0");
}

TEST_F(RdmaDeviceFaultTest, DeviceRemoveRefusesHardwareItCouldNotRecreate) {
  fakes::FakeRdmaDevice mlx;
  mlx.name = "mlx5_0";
  mlx.link_type = "";
  mlx.netdev = "ens1f0";
  devices_.addDevice(mlx);
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  const Fault f{"rdma_device_remove", RdmaPortTarget{"mlx5_0", 1, 0}, json::object()};
  auto prior = fault.capture(f);
  EXPECT_EQ(prior.status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(prior.status().message(),
            "rdma_device_remove capture: rdma_device_remove re-creates the device with "
            "RDMA_NLDEV_CMD_NEWLINK (`rdma link add`), which only software devices (rxe, siw) "
            "have; mlx5_0 belongs to hardware, whose re-adding needs a PCI rescan or a driver "
            "rebind, which this kind does not do");
  EXPECT_EQ(fault.apply(f).code(), StatusCode::kNotSupported);
  EXPECT_TRUE(devices_.device("mlx5_0").has_value());
}

TEST_F(RdmaDeviceFaultTest, DeviceRemoveRefusesWhileProgramsHoldTheDeviceOpen) {
  devices_.setOpenContexts("rxe0", 2);
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  const Fault f = faultOn("rdma_device_remove");
  auto prior = fault.capture(f);
  EXPECT_EQ(prior.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(prior.status().message(),
            "rdma_device_remove capture: rxe0 has 2 open verbs context(s): rxe cannot detach "
            "programs from a device, so the kernel would hold the removal until each of them "
            "closed it, and none would get IBV_EVENT_DEVICE_FATAL; stop them, or fault them "
            "with rdma_port_down");
  // A program that opens it between capture and apply is caught too.
  devices_.setOpenContexts("rxe0", 0);
  prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk());
  devices_.setOpenContexts("rxe0", 1);
  EXPECT_EQ(fault.apply(f).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(devices_.device("rxe0").has_value());
}

TEST_F(RdmaDeviceFaultTest, DeviceRemoveReportsTheKernelsRefusalsAndNeedsItsRecord) {
  auto fault = make(RdmaDeviceFaultKind::kDeviceRemove);
  const Fault f = faultOn("rdma_device_remove");
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk());
  devices_.failOnCall(1, core::Status(StatusCode::kPermissionDenied, "Operation not permitted"));
  EXPECT_EQ(fault.apply(f).message(), "rdma_device_remove on rxe0 port 1: Operation not permitted");
  ASSERT_TRUE(fault.apply(f).isOk());
  devices_.failOnCall(3, core::Status(StatusCode::kNotSupported, "no RDMA link type rxe"));
  EXPECT_EQ(fault.revert(f, *prior).code(), StatusCode::kNotSupported);
  EXPECT_FALSE(devices_.device("rxe0").has_value());
  EXPECT_EQ(fault.revert(f, {{"device", "rxe0"}, {"netdev", "eth0"}}).message(),
            "rdma_device_remove revert on rxe0 port 1: prior.link_type: required");
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_TRUE(devices_.device("rxe0").has_value());
}

// --- rdma_mtu_change ---

TEST_F(RdmaDeviceFaultTest, MtuChangeSetsTheNetdevMtuAndRevertRestoresTheOldOne) {
  auto fault = make(RdmaDeviceFaultKind::kMtuChange);
  EXPECT_EQ(fault.validate({{"mtu", 100}}).message(), "mtu: must be an integer in 576..9000");
  EXPECT_EQ(fault.validate(json::object()).message(), "mtu: required");
  const Fault f = faultOn("rdma_mtu_change", 1, {{"mtu", 9000}});
  ASSERT_TRUE(fault.validate(f.params).isOk());
  auto prior = fault.capture(f);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"netdev", "eth0"}, {"mtu", 1500}}));
  ASSERT_TRUE(fault.apply(f).isOk());
  EXPECT_EQ(links_.link("", "eth0")->mtu, 9000u);
  auto observed = fault.observe(f);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["mtu"], 9000);
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_EQ(links_.link("", "eth0")->mtu, 1500u);
  ASSERT_TRUE(fault.revert(f, *prior).isOk());
  EXPECT_EQ(links_.link("", "eth0")->mtu, 1500u);
  EXPECT_EQ(links_.calls().back(), "setMtu /eth0 1500");
  EXPECT_EQ(fault.revert(f, {{"netdev", "eth0"}}).message(),
            "rdma_mtu_change revert on rxe0 port 1: prior.mtu: must be a positive integer");
  links_.removeLink("", "eth0");
  EXPECT_TRUE(fault.revert(f, *prior).isOk());  // the netdev is gone, and its MTU with it
}

// --- the registry ---

TEST(RdmaDeviceRegistry, TheFourKindsAreRegisteredWhenTheAdaptersAreGiven) {
  fakes::FakeRdmaDeviceControl devices;
  fakes::FakeLinks links;
  fakes::FakeIpConfig ip;
  SysAdapters adapters;
  adapters.links = &links;
  auto without = makeRegistry(adapters);
  EXPECT_EQ(without->find("rdma_port_down"), nullptr);
  adapters.rdma_devices = &devices;
  adapters.ip_config = &ip;
  auto with = makeRegistry(adapters);
  for (const char* kind :
       {"rdma_port_down", "rdma_gid_change", "rdma_device_remove", "rdma_mtu_change"}) {
    Injector* injector = with->find(kind);
    ASSERT_NE(injector, nullptr) << kind;
    EXPECT_EQ(&injector->spec(), findKindSpec(kind));
    EXPECT_TRUE(injector->info().available) << kind;
  }
}

}  // namespace
}  // namespace fabric_chaos::injectors
