#include <gtest/gtest.h>

#include "lab/netns_lab.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {
namespace {

TEST(DescribeLab, FourHostsOnOneSwitchWithRackLabels) {
  LabOptions options;
  options.hosts = 4;
  auto fabric = describeLab(options);
  EXPECT_EQ(fabric.name, "netns-lab");
  ASSERT_EQ(fabric.hosts.size(), 4u);
  ASSERT_EQ(fabric.links.size(), 4u);
  ASSERT_EQ(fabric.switches.size(), 1u);
  EXPECT_EQ(fabric.hosts[1].netns, "fcl-h1");
  EXPECT_EQ(fabric.hosts[1].nics[0].address, "10.200.0.2");
  EXPECT_EQ(fabric.hosts[3].labels.at("rack"), "r1");
  EXPECT_EQ(fabric.links[2].id, "h2-sw0");
  EXPECT_EQ(fabric.links[2].port, "p2");
  EXPECT_EQ(fabric.switches[0].netns, "fcl-sw0");
  EXPECT_EQ(labNamespaces(options),
            (std::vector<std::string>{"fcl-sw0", "fcl-h0", "fcl-h1", "fcl-h2", "fcl-h3"}));
}

TEST(DescribeLab, RoundTripsThroughTheFabricCodec) {
  LabOptions options;
  options.hosts = 3;
  auto fabric = describeLab(options);
  auto parsed = scenarios::fabricFromJson(scenarios::toJson(fabric));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->hosts.size(), 3u);
  auto targets = scenarios::resolveTargets(
      scenarios::TargetSelector{"h2", "", {}, scenarios::LinkSide::kSwitch}, parsed.value());
  ASSERT_TRUE(targets.isOk()) << targets.status().toString();
  EXPECT_EQ(targets->at(0).target, injectors::Target(injectors::InterfaceTarget{"fcl-sw0", "p2"}));
}

// `lab up --offloads on` is said in the fabric description, and survives its codec; a lab with
// offloads off (the default) writes nothing new.
TEST(DescribeLab, KeptOffloadsAreSaidInTheFabric) {
  LabOptions options;
  EXPECT_FALSE(scenarios::toJson(describeLab(options)).contains("segmentation_offloads"));
  options.segmentation_offloads = true;
  const nlohmann::json doc = scenarios::toJson(describeLab(options));
  EXPECT_EQ(doc["segmentation_offloads"], true);
  auto parsed = scenarios::fabricFromJson(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_TRUE(parsed->segmentation_offloads);
}

}  // namespace
}  // namespace fabric_chaos::lab
