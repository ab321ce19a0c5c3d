// A netdev's IP configuration as the RDMA device faults journal and restore it
// (injectors/rdma/ip_snapshot.h): the JSON form round trip and its errors, and what restoring
// re-adds, in which order, and what it leaves to the kernel and to address owners, against a
// fake sys::IpConfig that can fail on the Nth call.
#include "injectors/rdma/ip_snapshot.h"

#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "tests/fakes/fake_ip_config.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using nlohmann::json;
using sys::IpAddress;
using sys::IpRoute;

IpAddress address(std::string local, uint32_t flags = IFA_F_PERMANENT, int family = AF_INET) {
  IpAddress a;
  a.family = family;
  a.local = std::move(local);
  a.prefix_len = family == AF_INET ? 24 : 64;
  a.flags = flags;
  return a;
}

IpRoute route(std::string destination, std::string gateway, int protocol = RTPROT_STATIC) {
  IpRoute r;
  r.family = AF_INET;
  r.destination = std::move(destination);
  r.destination_len = r.destination.empty() ? 0 : 16;
  r.gateway = std::move(gateway);
  r.protocol = protocol;
  return r;
}

TEST(IpSnapshotJson, EveryFieldSurvivesTheJournal) {
  IpSnapshot snapshot;
  IpAddress full = address("10.0.2.15", IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE);
  full.peer = "10.0.2.1";
  full.broadcast = "10.0.2.255";
  full.scope = RT_SCOPE_LINK;
  full.label = "eth0:rdma";
  full.valid_lifetime = 3600;
  full.preferred_lifetime = 1800;
  snapshot.addresses = {full, address("fd00::15", IFA_F_PERMANENT | IFA_F_NODAD, AF_INET6)};
  IpRoute metric = route("10.9.0.0", "10.0.2.2");
  metric.table = 100;
  metric.preferred_source = "10.0.2.15";
  metric.priority = 1024;
  metric.scope = RT_SCOPE_UNIVERSE;
  metric.tos = 4;
  metric.metrics = {{RTAX_MTU, 1400}, {RTAX_ADVMSS, 1360}};
  snapshot.routes = {metric, route("", "10.0.2.2", RTPROT_DHCP)};
  const json doc = toJson(snapshot);
  EXPECT_EQ(doc["addresses"][1]["family"], "inet6");
  EXPECT_EQ(doc["routes"][0]["metrics"], json::parse("[[2, 1400], [8, 1360]]"));
  // As captured (integers built signed) and as read back from the journal (parsed unsigned).
  for (const json& form : {doc, json::parse(doc.dump())}) {
    auto back = ipSnapshotFromJson(form, "prior.ip");
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    EXPECT_EQ(*back, snapshot);
  }
}

TEST(IpSnapshotJson, ABadRecordNamesTheField) {
  const json good = toJson(IpSnapshot{{address("10.0.2.15")}, {route("10.9.0.0", "10.0.2.2")}});
  auto broken = [&](const std::string& pointer, const json& value) {
    json doc = good;
    doc[json::json_pointer(pointer)] = value;
    return ipSnapshotFromJson(doc, "prior.ip").status().message();
  };
  EXPECT_EQ(broken("/addresses/0/family", "ipx"),
            "prior.ip.addresses[0].family: must be inet or inet6");
  EXPECT_EQ(broken("/addresses/0/local", ""), "prior.ip.addresses[0].local: required");
  EXPECT_EQ(broken("/addresses/0/prefix_len", 33),
            "prior.ip.addresses[0].prefix_len: longer than the address");
  EXPECT_EQ(broken("/addresses/0/flags", -1),
            "prior.ip.addresses[0].flags: must be an integer in 0..4294967295");
  EXPECT_EQ(broken("/routes/0/gateway", 7), "prior.ip.routes[0].gateway: must be a string");
  EXPECT_EQ(broken("/routes/0/metrics", json::parse("[[1]]")),
            "prior.ip.routes[0].metrics: must be a list of [id, value]");
  EXPECT_EQ(broken("/routes", json::object()), "prior.ip.routes: must be a list");
  EXPECT_EQ(ipSnapshotFromJson(json::array(), "prior.ip").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ipAddressFromJson(json(), "prior.address").status().message(),
            "prior.address: must be an object");
}

class IpSnapshotRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ip_.setAddresses("", "eth0", {});
    ip_.setRoutes("", "eth0", {});
  }
  std::vector<std::string> changes() const {
    std::vector<std::string> out;
    for (const std::string& call : ip_.calls()) {
      if (call.rfind("addAddress", 0) == 0 || call.rfind("removeAddress", 0) == 0 ||
          call.rfind("addRoute", 0) == 0) {
        out.push_back(call);
      }
    }
    return out;
  }
  fakes::FakeIpConfig ip_;
};

TEST_F(IpSnapshotRestoreTest, TakingASnapshotReadsBothAddressesAndRoutes) {
  ip_.setAddresses("", "eth0", {address("10.0.2.15")});
  ip_.setRoutes("", "eth0", {route("10.9.0.0", "10.0.2.2")});
  auto snapshot = takeIpSnapshot(ip_, "eth0");
  ASSERT_TRUE(snapshot.isOk());
  EXPECT_EQ(snapshot->addresses.size(), 1u);
  EXPECT_EQ(snapshot->routes.size(), 1u);
  EXPECT_EQ(takeIpSnapshot(ip_, "eth9").status().code(), StatusCode::kNotFound);
}

TEST_F(IpSnapshotRestoreTest, TheRequiredAddressComesFirstThenStaticAddressesThenOurRoutes) {
  const IpAddress required = address("10.0.2.15", 0);  // a DHCP address: no IFA_F_PERMANENT
  IpSnapshot snapshot;
  snapshot.addresses = {required, address("10.0.2.16", IFA_F_PERMANENT | IFA_F_SECONDARY),
                        address("10.0.2.17", 0),  // another DHCP lease: its client's to renew
                        address("fe80::1", IFA_F_PERMANENT, AF_INET6),  // the kernel makes it
                        address("fd00::1", IFA_F_PERMANENT, AF_INET6)};
  snapshot.routes = {route("10.0.2.0", "", RTPROT_KERNEL), route("10.9.0.0", "10.0.2.2"),
                     route("", "fe80::2", RTPROT_RA), route("", "10.0.2.2", RTPROT_DHCP)};
  IpRoute local = route("10.0.2.15", "", RTPROT_STATIC);
  local.table = RT_TABLE_LOCAL;
  snapshot.routes.push_back(local);
  ASSERT_TRUE(restoreIpSnapshot(ip_, "eth0", snapshot, &required).isOk());
  EXPECT_EQ(changes(), (std::vector<std::string>{
                           "addAddress /eth0 10.0.2.15/24", "addAddress /eth0 10.0.2.16/24",
                           "addAddress /eth0 fd00::1/64", "addRoute /eth0 10.9.0.0/16 table 254",
                           "addRoute /eth0 default table 254"}));
  // Again: everything is there, nothing changes.
  const auto addresses = ip_.addressesOf("", "eth0");
  ASSERT_TRUE(restoreIpSnapshot(ip_, "eth0", snapshot, &required).isOk());
  EXPECT_EQ(ip_.addressesOf("", "eth0"), addresses);
  EXPECT_EQ(ip_.routesOf("", "eth0").size(), 2u);
}

TEST_F(IpSnapshotRestoreTest, WithoutItsRequiredAddressNothingElseIsTried) {
  ip_.failOnCall(1, core::Status(StatusCode::kPermissionDenied, "Operation not permitted"));
  IpSnapshot snapshot{{address("10.0.2.16")}, {route("10.9.0.0", "10.0.2.2")}};
  const IpAddress required = address("10.0.2.15");
  EXPECT_EQ(restoreIpSnapshot(ip_, "eth0", snapshot, &required).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(changes(), (std::vector<std::string>{"addAddress /eth0 10.0.2.15/24"}));
}

TEST_F(IpSnapshotRestoreTest, ARouteThatFailsIsTriedAgainAfterTheOthersAndALastingFailureReported) {
  IpSnapshot snapshot{{}, {route("10.9.0.0", "10.0.3.1"), route("10.0.3.0", "")}};
  // The first route's gateway is reachable only through the second one.
  ip_.failOnCall(1, core::Status(StatusCode::kInternal, "Network is unreachable"));
  ASSERT_TRUE(restoreIpSnapshot(ip_, "eth0", snapshot, nullptr).isOk());
  EXPECT_EQ(ip_.routesOf("", "eth0").size(), 2u);
  EXPECT_EQ(changes().size(), 3u);

  fakes::FakeIpConfig stuck;
  stuck.setAddresses("", "eth0", {});
  stuck.setRoutes("", "eth0", {});
  stuck.failOnCall(1, core::Status(StatusCode::kInternal, "Network is unreachable"));
  stuck.failOnCall(3, core::Status(StatusCode::kInternal, "Network is unreachable"));
  const core::Status status = restoreIpSnapshot(stuck, "eth0", snapshot, nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(), "Network is unreachable");
  EXPECT_EQ(stuck.routesOf("", "eth0").size(), 1u);  // the other one is back regardless
}

}  // namespace
}  // namespace fabric_chaos::injectors
