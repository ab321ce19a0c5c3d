// The fabric's "ib" section: its codec, and what a fabric file may not say about its SMs. Pure.

#include "scenarios/ib_fabric.h"

#include <gtest/gtest.h>

#include "scenarios/topology.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

json ibFabric(json ib) {
  return {{"name", "ib-lab"},
          {"kind", "ib"},
          {"hosts",
           {{{"name", "h0"}, {"netns", "fcib-subnet"}, {"nics", {{{"name", "port1"}}}}},
            {{"name", "h1"}, {"netns", "fcib-subnet"}, {"nics", {{{"name", "port1"}}}}}}},
          {"ib", std::move(ib)}};
}

TEST(IbFabric, RoundTripsThroughJson) {
  const json ib = {{"subnet_managers",
                    {{{"name", "sm0"},
                      {"host", "h0"},
                      {"priority", 14},
                      {"port_guid", "0x0000000000100001"},
                      {"config", "/run/fc/ib/ib-lab/sm0/opensm.conf"}},
                     {{"name", "sm1"}, {"host", "h1"}, {"priority", 13}}}},
                   {"simulator",
                    {{"netns", "fcib-subnet"},
                     {"console", "/run/fc/ib/ib-lab/console"},
                     {"preload", "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"},
                     {"dir", "/run/fc/ib/ib-lab"}}}};
  auto fabric = fabricFromJson(ibFabric(ib));
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  ASSERT_TRUE(fabric->ib.has_value());
  ASSERT_EQ(fabric->ib->subnet_managers.size(), 2u);
  EXPECT_EQ(fabric->ib->subnet_managers[0].port_guid, "0x0000000000100001");
  EXPECT_EQ(fabric->ib->findSubnetManager("sm1")->priority, 13);
  EXPECT_EQ(fabric->ib->findSubnetManager("sm9"), nullptr);
  EXPECT_EQ(toJson(*fabric)["ib"], ib);
  // A fabric without the section has none, and writes none.
  json plain = ibFabric(ib);
  plain.erase("ib");
  auto without = fabricFromJson(plain);
  ASSERT_TRUE(without.isOk());
  EXPECT_FALSE(without->ib.has_value());
  EXPECT_FALSE(toJson(*without).contains("ib"));
}

TEST(IbFabric, RefusesWhatCannotBeTrueNamingTheField) {
  struct Case {
    json ib;
    const char* says;
  };
  const Case cases[] = {
      {json::object(), "ib.subnet_managers: must be an array"},
      {{{"subnet_managers", {{{"name", "sm0"}, {"host", "h0"}, {"priority", 16}}}}},
       "ib.subnet_managers[0].priority: must be an SM priority, 0 to 15"},
      {{{"subnet_managers", {{{"name", "sm0"}, {"host", "h0"}}}}},
       "ib.subnet_managers[0].priority"},
      {{{"subnet_managers",
         {{{"name", "sm0"}, {"host", "h0"}, {"priority", 1}},
          {{"name", "sm0"}, {"host", "h1"}, {"priority", 2}}}}},
       "ib.subnet_managers[1].name: duplicate SM sm0"},
      {{{"subnet_managers",
         {{{"name", "sm0"}, {"host", "h0"}, {"priority", 1}},
          {{"name", "sm1"}, {"host", "h0"}, {"priority", 2}}}}},
       "ib.subnet_managers[1].host: a second SM on host h0"},
      {{{"subnet_managers", {{{"name", "sm0"}, {"host", "h7"}, {"priority", 1}}}}},
       "ib.subnet_managers[0].host: no host h7 in the fabric"},
      {{{"subnet_managers", json::array()}, {"sm", 1}}, "sm"},
      {{{"subnet_managers", json::array()}, {"simulator", {{"netns", "x"}}}},
       "ib.simulator.console: required"},
  };
  for (const Case& c : cases) {
    auto fabric = fabricFromJson(ibFabric(c.ib));
    ASSERT_FALSE(fabric.isOk()) << c.ib.dump();
    EXPECT_EQ(fabric.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(fabric.status().message().find(c.says), std::string::npos)
        << fabric.status().message();
  }
}

}  // namespace
}  // namespace fabric_chaos::scenarios
