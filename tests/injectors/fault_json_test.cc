#include <gtest/gtest.h>

#include "injectors/injector.h"

namespace fabric_chaos::injectors {
namespace {

TEST(FaultJson, RoundTrips) {
  Fault fault{"packet_loss", {"h1", "eth0"}, json{{"percent", 12.5}, {"direction", "egress"}}};
  json doc = toJson(fault);
  EXPECT_EQ(doc, (json{{"kind", "packet_loss"},
                       {"target", {{"netns", "h1"}, {"ifname", "eth0"}}},
                       {"params", {{"percent", 12.5}, {"direction", "egress"}}}}));
  auto back = faultFromJson(doc);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->kind, "packet_loss");
  EXPECT_EQ(back->target.netns, "h1");
  EXPECT_EQ(back->target.ifname, "eth0");
  EXPECT_EQ(back->params, fault.params);
}

TEST(FaultJson, DefaultsForOptionalFields) {
  auto fault = faultFromJson(json{{"kind", "link_flap"}, {"target", {{"ifname", "veth1"}}}});
  ASSERT_TRUE(fault.isOk()) << fault.status().toString();
  EXPECT_EQ(fault->target.netns, "");
  EXPECT_TRUE(fault->params.is_object());
  EXPECT_TRUE(fault->params.empty());
  // A null params is the same as none.
  auto nulled = faultFromJson(
      json{{"kind", "link_flap"}, {"target", {{"ifname", "veth1"}}}, {"params", nullptr}});
  ASSERT_TRUE(nulled.isOk());
  EXPECT_TRUE(nulled->params.is_object());
  // toJson never writes a null params.
  Fault empty{"link_flap", {"", "x"}, json()};
  EXPECT_TRUE(toJson(empty)["params"].is_object());
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
