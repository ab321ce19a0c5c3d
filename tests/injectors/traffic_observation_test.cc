// Traffic observations (injectors/model/traffic_observation.h): Jain's index, and the parts of a
// set cut across agents folded into the observation the whole set would have given.

#include "injectors/model/traffic_observation.h"

#include <gtest/gtest.h>

namespace fabric_chaos::injectors {
namespace {

using nlohmann::json;

TEST(JainFairnessTest, OneWhenEqualOneOverNWhenOneTakesAll) {
  EXPECT_DOUBLE_EQ(jainFairnessIndex({5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(jainFairnessIndex({8, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jainFairnessIndex({}), 1.0);
  EXPECT_DOUBLE_EQ(jainFairnessIndex({0, 0}), 1.0);
}

TEST(MergeTrafficObservations, PartsBecomeTheWholeSetsObservation) {
  const json sink_part = {{"running", true},
                          {"sink", {{"endpoint", "eth0"}, {"running", true}}},
                          {"sources", json::array()},
                          {"source_bytes", json::array()},
                          {"source_goodput_mbps", json::array()},
                          {"jain_fairness", 1.0}};
  const json vm0 = {{"running", true},
                    {"sources", {{{"endpoint", "eth0"}}}},
                    {"source_bytes", {300.0}},
                    {"source_goodput_mbps", {24.0}},
                    {"jain_fairness", 1.0}};
  const json vm2 = {{"running", false},        {"exit_code", 1},
                    {"log", "no RDMA device"}, {"sources", {{{"endpoint", "eth0"}}}},
                    {"source_bytes", {100.0}}, {"source_goodput_mbps", {8.0}},
                    {"jain_fairness", 1.0}};
  json whole = mergeTrafficObservations(json::object(), sink_part);
  whole = mergeTrafficObservations(whole, vm0);
  whole = mergeTrafficObservations(whole, vm2);
  EXPECT_EQ(whole["sink"]["endpoint"], "eth0");
  EXPECT_EQ(whole["sources"].size(), 2u);
  EXPECT_EQ(whole["source_bytes"], (json{300.0, 100.0}));
  EXPECT_EQ(whole["source_goodput_mbps"], (json{24.0, 8.0}));
  EXPECT_DOUBLE_EQ(whole["jain_fairness"].get<double>(), 0.8);  // 400^2 / (2 * 1e5)
  EXPECT_EQ(whole["running"], false) << "one part's generator died";
  EXPECT_EQ(whole["exit_code"], 1);
  EXPECT_EQ(whole["log"], "no RDMA device");

  // Order does not matter for the totals; a part that is not an object changes nothing.
  json other = mergeTrafficObservations(mergeTrafficObservations(vm2, vm0), sink_part);
  EXPECT_DOUBLE_EQ(other["jain_fairness"].get<double>(), 0.8);
  EXPECT_EQ(mergeTrafficObservations(vm0, json()), vm0);
  EXPECT_EQ(mergeTrafficObservations(json::object(), vm0), vm0) << "one part: itself";
}

}  // namespace
}  // namespace fabric_chaos::injectors
