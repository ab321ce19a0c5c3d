#include <gtest/gtest.h>

#include "injectors/injector.h"

namespace fabric_chaos::injectors {
namespace {

TEST(FaultJson, RoundTrips) {
  Fault fault{"packet_loss", InterfaceTarget{"h1", "eth0"},
              json{{"percent", 12.5}, {"direction", "egress"}}};
  json doc = toJson(fault);
  EXPECT_EQ(doc, (json{{"kind", "packet_loss"},
                       {"target", {{"type", "interface"}, {"netns", "h1"}, {"ifname", "eth0"}}},
                       {"params", {{"percent", 12.5}, {"direction", "egress"}}}}));
  auto back = faultFromJson(doc);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->kind, "packet_loss");
  EXPECT_EQ(back->target, Target(InterfaceTarget{"h1", "eth0"}));
  EXPECT_EQ(back->params, fault.params);
}

TEST(FaultJson, DefaultsForOptionalFields) {
  auto fault = faultFromJson(json{{"kind", "link_flap"}, {"target", {{"ifname", "veth1"}}}});
  ASSERT_TRUE(fault.isOk()) << fault.status().toString();
  EXPECT_EQ(fault->target, Target(InterfaceTarget{"", "veth1"}));
  EXPECT_TRUE(fault->params.is_object());
  EXPECT_TRUE(fault->params.empty());
  // A null params is the same as none.
  auto nulled = faultFromJson(
      json{{"kind", "link_flap"}, {"target", {{"ifname", "veth1"}}}, {"params", nullptr}});
  ASSERT_TRUE(nulled.isOk());
  EXPECT_TRUE(nulled->params.is_object());
  // toJson never writes a null params.
  Fault empty{"link_flap", InterfaceTarget{"", "x"}, json()};
  EXPECT_TRUE(toJson(empty)["params"].is_object());
}

// What the previous version journaled (an untagged interface target) must still decode, so that
// faults it left behind are reverted after an upgrade; it re-encodes in the tagged form.
TEST(FaultJson, DecodesAJournalEntryOfThePreviousVersion) {
  const json old = json::parse(R"({"kind": "link_flap",
                                   "target": {"netns": "fcl-sw0", "ifname": "p1"},
                                   "params": {"down_ms": 2000}})");
  auto fault = faultFromJson(old);
  ASSERT_TRUE(fault.isOk()) << fault.status().toString();
  EXPECT_EQ(fault->kind, "link_flap");
  EXPECT_EQ(fault->target, Target(InterfaceTarget{"fcl-sw0", "p1"}));
  EXPECT_EQ(fault->params, (json{{"down_ms", 2000}}));
  EXPECT_EQ(toJson(*fault)["target"]["type"], "interface");
  EXPECT_EQ(describe(*fault), "link_flap on fcl-sw0/p1");
}

TEST(FaultJson, CarriesEveryTargetType) {
  Fault fault{"pfc_storm", RdmaPortTarget{"rxe0", 2, 3}, json{{"rate", 1}}};
  auto back = faultFromJson(toJson(fault));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->target, fault.target);
  EXPECT_EQ(faultKey(*back), faultKey(fault));
  EXPECT_NE(faultKey(fault), faultKey(Fault{"pfc_storm", RdmaPortTarget{"rxe0", 1, 3}, {}}));
  // A target of the wrong shape names the field under "target".
  auto bad = faultFromJson(
      json{{"kind", "x"}, {"target", {{"type", "rdma_port"}, {"device", "rxe0"}, {"port", 0}}}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(), "target.port: must be an integer in 1..255");
}

TEST(FaultJson, RejectsMalformedNamingTheField) {
  const json target = {{"ifname", "eth0"}};
  struct Case {
    json doc;
    std::string field;
  };
  const std::vector<Case> cases = {
      {json::array(), "fault: must be an object"},
      {json("link_flap"), "fault: must be an object"},
      {json{{"target", target}}, "kind: required"},
      {json{{"kind", 3}, {"target", target}}, "kind: must be a non-empty string"},
      {json{{"kind", ""}, {"target", target}}, "kind: must be a non-empty string"},
      {json{{"kind", "x"}}, "target: required"},
      {json{{"kind", "x"}, {"target", "eth0"}}, "target: must be an object"},
      {json{{"kind", "x"}, {"target", json::object()}}, "target.ifname: required"},
      {json{{"kind", "x"}, {"target", {{"ifname", 1}}}}, "target.ifname: must be a non-empty"},
      {json{{"kind", "x"}, {"target", {{"ifname", "e"}, {"netns", 1}}}},
       "target.netns: must be a string"},
      {json{{"kind", "x"}, {"target", {{"ifname", "e"}, {"host", "h1"}}}},
       "target.host: unknown field"},
      {json{{"kind", "x"}, {"target", target}, {"params", json::array()}},
       "params: must be an object"},
      {json{{"kind", "x"}, {"target", target}, {"parms", json::object()}}, "parms: unknown field"},
  };
  for (const Case& c : cases) {
    auto fault = faultFromJson(c.doc);
    ASSERT_FALSE(fault.isOk()) << c.doc.dump();
    EXPECT_EQ(fault.status().code(), core::StatusCode::kInvalidArgument) << c.doc.dump();
    EXPECT_NE(fault.status().message().find(c.field), std::string::npos)
        << c.doc.dump() << " -> " << fault.status().message();
  }
}

}  // namespace
}  // namespace fabric_chaos::injectors
