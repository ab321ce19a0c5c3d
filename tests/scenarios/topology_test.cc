#include "scenarios/topology.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;
using nlohmann::json;

// Four hosts h0..h3 in racks r0 (h0, h1) and r1 (h2, h3), each cabled eth0 -> sw0 port pN.
Fabric testFabric() {
  Fabric fabric;
  fabric.name = "test-lab";
  fabric.kind = "netns";
  Switch sw{"sw0", "t-sw0", "br0", {}, {{"role", "leaf"}}};
  for (int i = 0; i < 4; ++i) {
    const std::string name = "h" + std::to_string(i);
    Host host;
    host.name = name;
    host.netns = "t-" + name;
    host.nics = {{"eth0", "10.200.0." + std::to_string(i + 1)}};
    host.labels = {{"rack", i < 2 ? "r0" : "r1"}, {"leaf", "sw0"}};
    fabric.hosts.push_back(host);
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i)});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

TEST(FabricJsonTest, RoundTrips) {
  const Fabric fabric = testFabric();
  const json encoded = toJson(fabric);
  auto parsed = fabricFromJson(json::parse(encoded.dump()));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(toJson(parsed.value()), encoded);
  EXPECT_EQ(parsed->name, "test-lab");
  EXPECT_EQ(parsed->kind, "netns");
  ASSERT_EQ(parsed->hosts.size(), 4u);
  EXPECT_EQ(parsed->hosts[2].nics[0].address, "10.200.0.3");
  EXPECT_EQ(parsed->hosts[2].labels.at("rack"), "r1");
  EXPECT_EQ(parsed->links[3].switch_name, "sw0");
  EXPECT_EQ(encoded["links"][3]["switch"], "sw0");
}

TEST(FabricJsonTest, OptionalFieldsDefault) {
  auto parsed = fabricFromJson(json::parse(R"({
    "name": "tiny",
    "hosts": [{"name": "a"}, {"name": "b", "nics": [{"name": "eth0"}]}]
  })"));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->kind, "");
  EXPECT_EQ(parsed->hosts[0].agent, "local");
  EXPECT_EQ(parsed->hosts[0].netns, "");
  EXPECT_TRUE(parsed->hosts[0].nics.empty());
  EXPECT_TRUE(parsed->switches.empty());
  EXPECT_TRUE(parsed->links.empty());
}

struct FabricErrorCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string expected;  // the message must start with this
};

std::vector<FabricErrorCase> fabricErrorCases() {
  return {
      {"NotAnObject", [](json& d) { d = 3; }, "fabric: must be a JSON object"},
      {"Unknown", [](json& d) { d["racks"] = 2; }, "racks: unknown field"},
      {"NameMissing", [](json& d) { d.erase("name"); }, "name: required"},
      {"NameEmpty", [](json& d) { d["name"] = ""; }, "name: must be a non-empty string"},
      {"HostsMissing", [](json& d) { d.erase("hosts"); }, "hosts: required"},
      {"HostsNotArray", [](json& d) { d["hosts"] = json::object(); }, "hosts: must be an array"},
      {"HostUnknownField", [](json& d) { d["hosts"][1]["rack"] = "r0"; },
       "hosts[1].rack: unknown field"},
      {"HostNameMissing", [](json& d) { d["hosts"][2].erase("name"); }, "hosts[2].name: required"},
      {"HostDuplicate", [](json& d) { d["hosts"][1]["name"] = "h0"; },
       "hosts[1].name: duplicate host h0"},
      {"NicDuplicate",
       [](json& d) {
         d["hosts"][0]["nics"].push_back({{"name", "eth0"}});
       },
       "hosts[0].nics[1].name: duplicate nic eth0 on host h0"},
      {"LabelNotString", [](json& d) { d["hosts"][0]["labels"]["rack"] = 0; },
       "hosts[0].labels.rack: must be a string"},
      {"SwitchDuplicate", [](json& d) { d["switches"].push_back(d["switches"][0]); },
       "switches[1].name: duplicate switch sw0"},
      {"PortDuplicate", [](json& d) { d["switches"][0]["ports"][2] = "p0"; },
       "switches[0].ports[2]: duplicate port p0 on switch sw0"},
      {"LinkFieldMissing", [](json& d) { d["links"][0].erase("port"); }, "links[0].port: required"},
      {"LinkUnknownHost", [](json& d) { d["links"][0]["host"] = "h9"; },
       "links[0].host: unknown host h9"},
      {"LinkUnknownNic", [](json& d) { d["links"][1]["nic"] = "eth1"; },
       "links[1].nic: host h1 has no nic eth1"},
      {"LinkUnknownSwitch", [](json& d) { d["links"][2]["switch"] = "sw9"; },
       "links[2].switch: unknown switch sw9"},
      {"LinkUnknownPort", [](json& d) { d["links"][3]["port"] = "p9"; },
       "links[3].port: switch sw0 has no port p9"},
      {"LinkDuplicateId", [](json& d) { d["links"][1]["id"] = "h0-sw0"; },
       "links[1].id: duplicate link h0-sw0"},
      {"PortCabledTwice", [](json& d) { d["links"][1]["port"] = "p0"; },
       "links[1].port: port p0 of switch sw0 is already cabled by link h0-sw0"},
      {"NicCabledTwice",
       [](json& d) {
         d["links"].push_back(
             {{"id", "h0-b"}, {"host", "h0"}, {"nic", "eth0"}, {"switch", "sw0"}, {"port", "p3"}});
       },
       "links[4].nic: nic eth0 of host h0 is already cabled by link h0-sw0"},
  };
}

class FabricErrorTest : public testing::TestWithParam<FabricErrorCase> {};

TEST_P(FabricErrorTest, NamesTheField) {
  json doc = toJson(testFabric());
  ASSERT_TRUE(fabricFromJson(doc).isOk());
  GetParam().mutate(doc);
  auto parsed = fabricFromJson(doc);
  ASSERT_FALSE(parsed.isOk()) << doc.dump();
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message().rfind(GetParam().expected, 0), 0u)
      << "got: " << parsed.status().message() << "\nwant prefix: " << GetParam().expected;
}

INSTANTIATE_TEST_SUITE_P(Table, FabricErrorTest, testing::ValuesIn(fabricErrorCases()),
                         [](const testing::TestParamInfo<FabricErrorCase>& info) {
                           return info.param.name;
                         });

TEST(FabricTest, Find) {
  const Fabric fabric = testFabric();
  ASSERT_NE(fabric.findHost("h2"), nullptr);
  EXPECT_EQ(fabric.findHost("h2")->netns, "t-h2");
  EXPECT_EQ(fabric.findHost("h9"), nullptr);
  ASSERT_NE(fabric.findSwitch("sw0"), nullptr);
  EXPECT_EQ(fabric.findSwitch("sw1"), nullptr);
  ASSERT_NE(fabric.findLink("h3-sw0"), nullptr);
  EXPECT_EQ(fabric.findLink("h3-sw0")->port, "p3");
  EXPECT_EQ(fabric.findLink("h3-sw1"), nullptr);
}

TargetSelector hostSel(const std::string& host, const std::string& side = "switch") {
  TargetSelector s;
  s.host = host;
  s.side = side;
  return s;
}

void expectTarget(const ResolvedTarget& t, const std::string& host, const std::string& link,
                  const std::string& netns, const std::string& ifname, const std::string& side) {
  EXPECT_EQ(t.host, host);
  EXPECT_EQ(t.link_id, link);
  EXPECT_EQ(t.target, injectors::Target(injectors::InterfaceTarget{netns, ifname}));
  EXPECT_EQ(t.side, side);
}

TEST(ResolveTargetsTest, HostSwitchSideIsTheSwitchPort) {
  auto targets = resolveTargets(hostSel("h1"), testFabric());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h1", "h1-sw0", "t-sw0", "p1", "switch");
}

TEST(ResolveTargetsTest, HostHostSideIsTheNic) {
  auto targets = resolveTargets(hostSel("h1", "host"), testFabric());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h1", "h1-sw0", "t-h1", "eth0", "host");
}

TEST(ResolveTargetsTest, HostMeansItsFirstLink) {
  Fabric fabric = testFabric();
  fabric.hosts[2].nics.push_back({"eth1", "10.201.0.3"});
  fabric.switches[0].ports.push_back("p9");
  // Listed before h2's eth0 link: "first" is the fabric's link order.
  fabric.links.insert(fabric.links.begin(), {"h2-b", "h2", "eth1", "sw0", "p9"});
  auto targets = resolveTargets(hostSel("h2", "host"), fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h2", "h2-b", "t-h2", "eth1", "host");
}

TEST(ResolveTargetsTest, Link) {
  TargetSelector s;
  s.link = "h3-sw0";
  auto targets = resolveTargets(s, testFabric());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h3", "h3-sw0", "t-sw0", "p3", "switch");
  s.side = "host";
  targets = resolveTargets(s, testFabric());
  ASSERT_TRUE(targets.isOk());
  expectTarget((*targets)[0], "h3", "h3-sw0", "t-h3", "eth0", "host");
}

TEST(ResolveTargetsTest, LabelsMatchEveryHostWithAllPairs) {
  Fabric fabric = testFabric();
  fabric.hosts[3].labels["rail"] = "1";
  TargetSelector s;
  s.labels = {{"rack", "r1"}};
  auto targets = resolveTargets(s, fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 2u);
  expectTarget((*targets)[0], "h2", "h2-sw0", "t-sw0", "p2", "switch");
  expectTarget((*targets)[1], "h3", "h3-sw0", "t-sw0", "p3", "switch");

  s.labels["rail"] = "1";
  s.side = "host";
  targets = resolveTargets(s, fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  expectTarget((*targets)[0], "h3", "h3-sw0", "t-h3", "eth0", "host");
}

struct MissingCase {
  std::string name;
  TargetSelector selector;
  std::string message;
};

TEST(ResolveTargetsTest, NothingMatchedIsUnprocessableAndNamesTheSelector) {
  Fabric fabric = testFabric();
  fabric.hosts.push_back(Host{"h4", "t-h4", "local", {}, {{"rack", "r2"}}, ""});
  TargetSelector link;
  link.link = "h9-sw0";
  TargetSelector labels;
  labels.labels = {{"rack", "r9"}};
  TargetSelector unlinked;
  unlinked.labels = {{"rack", "r2"}};
  const std::vector<MissingCase> cases = {
      {"UnknownHost", hostSel("h9"), "target host h9 is not in fabric test-lab"},
      {"HostWithoutLink", hostSel("h4"), "target host h4 has no link in fabric test-lab"},
      {"UnknownLink", link, "target link h9-sw0 is not in fabric test-lab"},
      {"NoLabelMatch", labels, "target labels {rack=r9} matches no host in fabric test-lab"},
      {"LabelMatchWithoutLink", unlinked,
       "target labels {rack=r2} matches host h4, which has no link in fabric test-lab"},
  };
  for (const MissingCase& c : cases) {
    auto targets = resolveTargets(c.selector, fabric);
    ASSERT_FALSE(targets.isOk()) << c.name;
    EXPECT_EQ(targets.status().code(), StatusCode::kUnprocessable) << c.name;
    EXPECT_EQ(targets.status().message(), c.message) << c.name;
  }
}

TEST(ResolveTargetsTest, MalformedSelectorIsInvalidArgument) {
  TargetSelector none;
  EXPECT_EQ(resolveTargets(none, testFabric()).status().code(), StatusCode::kInvalidArgument);
  TargetSelector two = hostSel("h1");
  two.link = "h1-sw0";
  EXPECT_EQ(resolveTargets(two, testFabric()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolveTargets(hostSel("h1", "nic"), testFabric()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ResolveTargetsTest, DanglingSwitchInCodeBuiltFabricIsUnprocessable) {
  Fabric fabric = testFabric();
  fabric.switches.clear();
  auto targets = resolveTargets(hostSel("h0"), fabric);
  ASSERT_FALSE(targets.isOk());
  EXPECT_EQ(targets.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(targets.status().message().find("sw0"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
