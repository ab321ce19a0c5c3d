// ibnetdiscover's output read into the subnet model: the fixture is the tool's real output on a
// simulated fat tree (2 leaves, 1 spine, 2 HCAs per leaf: ibsim 0.10, OpenSM 3.3.23,
// infiniband-diags 44), with the GUIDs and LIDs OpenSM gave it.

#include "ib/ibnetdiscover.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace fabric_chaos::ib {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(FC_IB_FIXTURES) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Ibnetdiscover, ReadsEveryNodeWithItsGuidLidAndRole) {
  auto subnet = parseIbnetdiscover(fixture("ibnetdiscover-fat-tree-2x1x2.txt"));
  ASSERT_TRUE(subnet.isOk()) << subnet.status().toString();
  ASSERT_EQ(subnet->nodes.size(), 7u);
  // Switches first, by GUID: s0 (0x200000), l0, l1; then the HCAs.
  EXPECT_EQ(subnet->nodes[0].description, "s0");
  EXPECT_EQ(subnet->nodes[0].guid, 0x200000u);
  EXPECT_EQ(subnet->nodes[0].type, IbNodeType::kSwitch);
  EXPECT_EQ(subnet->nodes[0].role, IbRole::kSpine);
  EXPECT_EQ(subnet->nodes[0].ports, 8);
  EXPECT_EQ(subnet->nodes[0].lid, 2);
  EXPECT_EQ(subnet->nodes[1].description, "l0");
  EXPECT_EQ(subnet->nodes[1].role, IbRole::kLeaf);
  EXPECT_EQ(subnet->nodes[1].lid, 3);
  EXPECT_EQ(subnet->nodes[2].description, "l1");
  const IbNode* h3 = findNodeByDescription(*subnet, "h3");
  ASSERT_NE(h3, nullptr);
  EXPECT_EQ(h3->type, IbNodeType::kChannelAdapter);
  EXPECT_EQ(h3->role, IbRole::kHca);
  EXPECT_EQ(h3->guid, 0x100006u);
  EXPECT_EQ(h3->id, "H-0000000000100006");
  EXPECT_EQ(h3->lid, std::nullopt) << "a channel adapter's LIDs are its ports'";
}

TEST(Ibnetdiscover, EachCableOnceWithWhatBothEndsSaid) {
  auto subnet = parseIbnetdiscover(fixture("ibnetdiscover-fat-tree-2x1x2.txt"));
  ASSERT_TRUE(subnet.isOk()) << subnet.status().toString();
  // 4 HCA cables and 2 uplinks, though ibnetdiscover lists each from both ends.
  ASSERT_EQ(subnet->links.size(), 6u);
  // h3's cable: the lower end is h3 (0x100006) port 1, its port GUID and LID from h3's own line.
  const IbLink* h3_link = nullptr;
  for (const IbLink& link : subnet->links) {
    if (link.a.node_guid == 0x100006u) h3_link = &link;
  }
  ASSERT_NE(h3_link, nullptr);
  EXPECT_EQ(h3_link->a.port, 1);
  EXPECT_EQ(h3_link->a.port_guid, 0x100007u);
  EXPECT_EQ(h3_link->a.lid, 7);
  EXPECT_EQ(h3_link->b.node_guid, 0x200002u);  // l1
  EXPECT_EQ(h3_link->b.port, 2);
  EXPECT_EQ(h3_link->b.lid, 4) << "the switch's base LID, as h3's line gives it";
  EXPECT_EQ(h3_link->rate, "4xSDR");
  // l1's uplink: l1 port 3 to s0 port 2.
  const IbLink& uplink = subnet->links.back();
  EXPECT_EQ(uplink.a.node_guid, 0x200000u);
  EXPECT_EQ(uplink.a.port, 2);
  EXPECT_EQ(uplink.b.node_guid, 0x200002u);
  EXPECT_EQ(uplink.b.port, 3);
}

TEST(Ibnetdiscover, TheJsonNamesEndsByGuidAndDescription) {
  auto subnet = parseIbnetdiscover(fixture("ibnetdiscover-fat-tree-2x1x2.txt"));
  ASSERT_TRUE(subnet.isOk()) << subnet.status().toString();
  const nlohmann::json j = toJson(*subnet);
  EXPECT_EQ(j["nodes"][0], (nlohmann::json{{"type", "switch"},
                                           {"guid", "0x0000000000200000"},
                                           {"description", "s0"},
                                           {"ports", 8},
                                           {"lid", 2},
                                           {"role", "spine"}}));
  const nlohmann::json& last = j["links"].back();
  EXPECT_EQ(last["a"]["description"], "s0");
  EXPECT_EQ(last["b"]["description"], "l1");
  EXPECT_TRUE(last["a"]["port_guid"].is_null());
}

TEST(Ibnetdiscover, ExtendedPortNumbersAndCarriageReturnsAreRead) {
  const std::string text =
      "switchguid=0x10(10)\r\n"
      "Switch\t36 \"S-0000000000000010\"\t\t# \"leaf one\" enhanced port 0 lid 9 lmc 0\r\n"
      "[3][ext 3]\t\"H-0000000000000020\"[1](21) \t\t# \"node a mlx5_0\" lid 12 4xHDR\r\n"
      "\r\n"
      "caguid=0x20\r\n"
      "Ca\t1 \"H-0000000000000020\"\t\t# \"node a mlx5_0\"\r\n"
      "[1](21) \t\"S-0000000000000010\"[3][ext 3]\t\t# lid 12 lmc 0 \"leaf one\" lid 9 4xHDR\r\n";
  auto subnet = parseIbnetdiscover(text);
  ASSERT_TRUE(subnet.isOk()) << subnet.status().toString();
  ASSERT_EQ(subnet->links.size(), 1u);
  EXPECT_EQ(subnet->links[0].a.node_guid, 0x10u);
  EXPECT_EQ(subnet->links[0].a.port, 3);
  EXPECT_EQ(subnet->links[0].b.lid, 12);
  EXPECT_EQ(subnet->links[0].rate, "4xHDR");
  EXPECT_EQ(subnet->nodes[0].description, "leaf one");
  EXPECT_EQ(subnet->nodes[0].role, IbRole::kLeaf);
  EXPECT_EQ(subnet->nodes[1].description, "node a mlx5_0");
}

// A node description is 64 bytes of whatever the node says; the JSON must still be UTF-8. (Found
// by fuzz_ibnetdiscover: the import crashed serialising one.)
TEST(Ibnetdiscover, ADescriptionThatIsNotUtf8KeepsItsAsciiAndSerialises) {
  const std::string text =
      "switchguid=0x10(10)\nSwitch\t8 \"S-0000000000000010\"\t\t# \"leaf \xf8\xf8 "
      "caf\xc3\xa9\" base port 0 lid 9 lmc 0\n";
  auto subnet = parseIbnetdiscover(text);
  ASSERT_TRUE(subnet.isOk()) << subnet.status().toString();
  ASSERT_EQ(subnet->nodes.size(), 1u);
  EXPECT_EQ(subnet->nodes[0].description, "leaf ?? caf??");
  EXPECT_NO_THROW((void)toJson(*subnet).dump());
  // Valid UTF-8 stays as it is.
  subnet = parseIbnetdiscover("Switch\t8 \"S-0000000000000010\"\t\t# \"caf\xc3\xa9\"\n");
  ASSERT_TRUE(subnet.isOk());
  EXPECT_EQ(subnet->nodes[0].description, "caf\xc3\xa9");
}

TEST(Ibnetdiscover, BrokenInputNamesItsLine) {
  auto bad = parseIbnetdiscover("Switch 8 S-no-quotes\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("line 1: ", 0), 0u) << bad.status().message();
  bad = parseIbnetdiscover("# header\n[1]\t\"S-0000000000000001\"[2]\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2: a port line before any node line"),
            std::string::npos)
      << bad.status().message();
  bad = parseIbnetdiscover(
      "Switch\t8 \"S-0000000000000001\"\n[1]\t\"S-0000000000000099\"[1]\t\t# \"x\" lid 1 4xSDR\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("\"S-0000000000000099\", which is not listed"),
            std::string::npos)
      << bad.status().message();
  bad = parseIbnetdiscover("Switch\t8 \"S-1\"\nSwitch\t8 \"S-1\"\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("defined twice"), std::string::npos);
  bad = parseIbnetdiscover("Switch\t300 \"S-1\"\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 1: a port count above 255"), std::string::npos);
  bad = parseIbnetdiscover("Switch\t8 \"S-1\"\n[99999999999999999999]\t\"S-1\"[1]\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2: a port number above 255"), std::string::npos);
  bad = parseIbnetdiscover("# ok\n" + std::string(5000, 'x') + "\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2: longer than 4096 characters"), std::string::npos);
  // Nothing at all is an empty subnet, not an error.
  auto empty = parseIbnetdiscover("");
  ASSERT_TRUE(empty.isOk());
  EXPECT_TRUE(empty->nodes.empty());
}

}  // namespace
}  // namespace fabric_chaos::ib
