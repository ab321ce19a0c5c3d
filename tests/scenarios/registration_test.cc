// Agent registration into a real fabric (scenarios/registration.h): decoding and refusals, a new
// fabric, an inventory's fabric updated without losing its cabling, labs left alone.

#include "scenarios/registration.h"

#include <gtest/gtest.h>

#include "scenarios/inventory.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

json gpu(const std::string& host, const std::string& url) {
  return {{"fabric", "pod1"},
          {"host", host},
          {"agent", url},
          {"labels", {{"rail", "3"}, {"rack", "r12"}}},
          {"nics", {{{"name", "ens1f0"}, {"address", "192.168.3.17"}}}}};
}

TEST(Registration, DecodesAndRefusesWhatCouldEscapeOrMislead) {
  auto ok = registrationFromJson(gpu("gpu017", "https://10.0.17.5:7100"));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->labels.at("rail"), "3");
  EXPECT_EQ(toJson(*ok), gpu("gpu017", "https://10.0.17.5:7100"));
  EXPECT_EQ(registrationFromJson({{"host", "h"}, {"agent", "http://a:1"}})->fabric, "registered");

  const std::vector<std::pair<json, std::string>> bad = {
      {{{"host", "h"}, {"agent", "http://a:1"}, {"fabric", "../../etc/passwd"}},
       "fabric: \"../../etc/passwd\" is not a name"},
      {{{"host", "a/b"}, {"agent", "http://a:1"}}, "host: \"a/b\" is not a name"},
      {{{"host", "h"}, {"agent", "file:///etc/shadow"}},
       "agent: \"file:///etc/shadow\" is not an http:// or https:// URL"},
      {{{"agent", "http://a:1"}}, "host: required string"},
      {{{"host", "h"}, {"agent", "http://a:1"}, {"token", "x"}}, "token: unknown field"},
      {{{"host", "h"}, {"agent", "http://a:1"}, {"nics", {{{"name", "eth0; rm"}}}}},
       "nics[0].name: not an interface name"},
      // Once a JSON type error, answered 500.
      {{{"host", "h"}, {"agent", "http://a:1"}, {"nics", {{{"name", "eth0"}, {"address", 7}}}}},
       "nics[0].address: must be a string"},
  };
  for (const auto& [doc, message] : bad) {
    auto refused = registrationFromJson(doc);
    ASSERT_FALSE(refused.isOk()) << doc.dump();
    EXPECT_EQ(refused.status().message(), message);
  }
}

TEST(Registration, ANewFabricGetsTheHostWithItsNicsOnTheUnmappedSwitch) {
  auto r = registrationFromJson(gpu("gpu017", "https://10.0.17.5:7100"));
  ASSERT_TRUE(r.isOk());
  auto fabric = applyRegistration(std::nullopt, *r, "/etc/fabric-chaos/agent.token");
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  EXPECT_EQ(fabric->name, "pod1");
  EXPECT_EQ(fabric->kind, "real");
  ASSERT_EQ(fabric->hosts.size(), 1u);
  EXPECT_EQ(fabric->hosts[0].agent, "https://10.0.17.5:7100");
  EXPECT_EQ(fabric->hosts[0].agent_token_file, "/etc/fabric-chaos/agent.token");
  ASSERT_EQ(fabric->links.size(), 1u);
  EXPECT_EQ(fabric->links[0].switch_name, kUnmappedSwitch);

  // Its labels drive selectors; the host side is where faults go.
  TargetSelector rail;
  rail.labels = {{"rail", "3"}};
  rail.side = LinkSide::kHost;
  auto targets = resolveTargets(rail, *fabric);
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  ASSERT_EQ(targets->size(), 1u);
  EXPECT_EQ(std::get<injectors::InterfaceTarget>(targets->at(0).target).ifname, "ens1f0");

  // Registering again (the heartbeat) changes nothing but what the agent says.
  auto again = applyRegistration(*fabric, *r, "/other/token");
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(toJson(*again), toJson(*fabric));
  auto second = registrationFromJson(gpu("gpu018", "https://10.0.17.6:7100"));
  auto two = applyRegistration(*again, *second, "/etc/fabric-chaos/agent.token");
  ASSERT_TRUE(two.isOk());
  EXPECT_EQ(two->hosts.size(), 2u);
  EXPECT_EQ(two->findSwitch(kUnmappedSwitch)->ports.size(), 2u);
  EXPECT_TRUE(fabricFromJson(toJson(*two)).isOk());
}

TEST(Registration, AnInventorysHostKeepsItsCablingAndTakesTheAgentsUrlAndLabels) {
  json inventory = {
      {"name", "pod1"},
      {"leaves", {{{"name", "leaf07"}}}},
      {"hosts",
       {{{"name", "gpu017"},
         {"address", "10.0.17.5"},
         {"nics", {{{"name", "ens1f0"}, {"rail", 3}, {"leaf", "leaf07"}, {"port", "Eth17"}}}}}}}};
  auto fabric = fabricFromInventory(inventory);
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  auto r = registrationFromJson(gpu("gpu017", "https://gpu017.mgmt:7443"));
  auto updated = applyRegistration(*fabric, *r, "/x");
  ASSERT_TRUE(updated.isOk()) << updated.status().toString();
  EXPECT_EQ(updated->hosts[0].agent, "https://gpu017.mgmt:7443");
  EXPECT_EQ(updated->hosts[0].agent_token_file, "/etc/fabric-chaos/agent.token")
      << "the inventory's token file stays";
  EXPECT_EQ(updated->hosts[0].labels.at("rack"), "r12");
  ASSERT_EQ(updated->links.size(), 1u);
  EXPECT_EQ(updated->links[0].switch_name, "leaf07");
  EXPECT_EQ(updated->findSwitch(kUnmappedSwitch), nullptr);
}

TEST(Registration, LabFabricsAreNeverChanged) {
  Fabric lab;
  lab.name = "netns-lab";
  lab.kind = "netns";
  auto r = registrationFromJson(gpu("h0", "http://127.0.0.1:1"));
  auto refused = applyRegistration(lab, *r, "/x");
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("register only into real fabrics"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
