// A real fabric from an inventory (scenarios/inventory.h), on deploy/inventory/example.json: the
// hosts' agents and token, rails and leaves as link labels that selectors match, the uplinks, a
// real fabric's switch side refused, and inventory mistakes named by field.

#include "scenarios/inventory.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

json example() {
  std::ifstream in(std::string(FC_SOURCE_DIR) + "/deploy/inventory/example.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::vector<std::string> interfaces(const std::vector<ResolvedTarget>& targets) {
  std::vector<std::string> out;
  for (const auto& t : targets) {
    const auto& iface = std::get<injectors::InterfaceTarget>(t.target);
    out.push_back(t.host + "/" + iface.ifname);
  }
  return out;
}

TEST(Inventory, TheExampleBecomesARealFabricWithAgentsLabelsAndLinks) {
  auto fabric = fabricFromInventory(example());
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  EXPECT_EQ(fabric->name, "pod1");
  EXPECT_EQ(fabric->kind, "real");
  ASSERT_EQ(fabric->hosts.size(), 2u);
  const Host& h = fabric->hosts[0];
  EXPECT_EQ(h.agent, "https://10.0.0.11:7100");
  EXPECT_EQ(h.agent_token_file, "/etc/fabric-chaos/agent.token");
  EXPECT_EQ(h.netns, "");
  EXPECT_EQ(h.labels.at("rack"), "r1");
  EXPECT_EQ(h.labels.at("pod"), "p1") << "the inventory's labels reach every host";
  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.nics[1].address, "192.168.1.11");
  EXPECT_EQ(fabric->links.size(), 4u);
  EXPECT_EQ(fabric->switch_links.size(), 4u);
  EXPECT_EQ(fabric->switches.size(), 4u);
  const Switch* leaf = fabric->findSwitch("leaf00");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->labels.at("role"), "leaf");
  EXPECT_EQ(leaf->ports,
            (std::vector<std::string>{"Ethernet48", "Ethernet52", "Ethernet0", "Ethernet1"}));

  // It survives the JSON serve reads it from.
  auto reread = fabricFromJson(toJson(*fabric));
  ASSERT_TRUE(reread.isOk()) << reread.status().toString();
  EXPECT_EQ(toJson(*reread), toJson(*fabric));
}

TEST(Inventory, RailAndLeafSelectorsPickTheHostEndsOfTheirLinks) {
  auto fabric = fabricFromInventory(example());
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  TargetSelector rail;
  rail.labels = {{"rail", "1"}};
  rail.side = LinkSide::kHost;
  auto on_rail = resolveTargets(rail, *fabric);
  ASSERT_TRUE(on_rail.isOk()) << on_rail.status().toString();
  EXPECT_EQ(interfaces(*on_rail), (std::vector<std::string>{"gpu001/ens2f0", "gpu002/ens2f0"}));

  TargetSelector leaf;
  leaf.labels = {{"leaf", "leaf00"}, {"tier", "access"}};
  leaf.side = LinkSide::kHost;
  auto on_leaf = resolveTargets(leaf, *fabric);
  ASSERT_TRUE(on_leaf.isOk()) << on_leaf.status().toString();
  EXPECT_EQ(interfaces(*on_leaf), (std::vector<std::string>{"gpu001/ens1f0", "gpu002/ens1f0"}));
  for (const auto& target : *on_leaf) {
    EXPECT_EQ(std::get<injectors::InterfaceTarget>(target.target).netns, "");
  }
}

TEST(Inventory, ARealFabricsSwitchPortsAreNeverTargets) {
  auto fabric = fabricFromInventory(example());
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  TargetSelector port;
  port.link = "gpu001:ens1f0";  // side: the default, the switch's
  auto refused = resolveTargets(port, *fabric);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("is a real fabric"), std::string::npos)
      << refused.status().toString();
  TargetSelector uplink;
  uplink.labels = {{"tier", "uplink"}, {"leaf", "leaf01"}};
  EXPECT_FALSE(resolveTargets(uplink, *fabric).isOk());
}

TEST(Inventory, MistakesAreNamedByField) {
  struct Case {
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["hosts"][1]["nics"][0]["leaf"] = "leaf09"; },
       "hosts[1].nics[0].leaf: no leaf \"leaf09\""},
      {[](json& j) { j["hosts"][1]["nics"][0]["port"] = "Ethernet0"; },
       "hosts[1].nics[0].port: port Ethernet0 of leaf leaf00 is cabled twice"},
      {[](json& j) { j["hosts"][1]["name"] = "gpu001"; },
       "hosts[1].name: \"gpu001\" is named twice"},
      {[](json& j) { j["leaves"][0]["uplinks"][0]["spine"] = "spine09"; },
       "leaves[0].uplinks[0].spine: no spine \"spine09\""},
      {[](json& j) { j["hosts"][0]["nics"][0]["rail"] = "zero"; },
       "hosts[0].nics[0].rail: must be a rail number >= 0"},
      {[](json& j) { j["hosts"][0]["nic"] = json::array(); }, "hosts[0].nic: unknown field"},
      {[](json& j) { j["agent"]["scheme"] = "ftp"; },
       "agent.scheme: must be \"https\" or \"http\""},
      {[](json& j) { j.erase("hosts"); }, "hosts: must be a non-empty array"},
      {[](json& j) { j["hosts"][0].erase("address"); }, "hosts[0].address: required"},
  };
  for (const auto& c : cases) {
    json doc = example();
    c.edit(doc);
    auto fabric = fabricFromInventory(doc);
    ASSERT_FALSE(fabric.isOk()) << c.message;
    EXPECT_EQ(fabric.status().message(), c.message);
  }
}

TEST(Inventory, AHostMayNameItsOwnAgentUrlAndIpv6AddressesAreBracketed) {
  json doc = example();
  doc["hosts"][0]["agent"] = "https://gpu001.mgmt:7443";
  doc["hosts"][1]["address"] = "fd00::12";
  auto fabric = fabricFromInventory(doc);
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  EXPECT_EQ(fabric->hosts[0].agent, "https://gpu001.mgmt:7443");
  EXPECT_EQ(fabric->hosts[1].agent, "https://[fd00::12]:7100");
}

}  // namespace
}  // namespace fabric_chaos::scenarios
