#include "scenarios/validate.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Fabric testFabric(int hosts = 4) {
  Fabric fabric;
  fabric.name = "test-lab";
  fabric.kind = "netns";
  Switch sw{"sw0", "t-sw0", "br0", {}, {}, std::nullopt};
  for (int i = 0; i < hosts; ++i) {
    const std::string name = "h" + std::to_string(i);
    fabric.hosts.push_back(Host{name,
                                "t-" + name,
                                "local",
                                {{"eth0", "10.200.0." + std::to_string(i + 1)}},
                                {{"rack", i < 2 ? "r0" : "r1"}},
                                ""});
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

KindCatalog catalog() { return KindCatalog{{"link_flap", "packet_loss"}, nullptr}; }

// baseline 3000 + flap 0..3000 + loss 1000..5000 + recovery 5000 = 13000 ms.
Scenario validScenario() {
  Scenario s;
  s.name = "mixed";
  FaultStep flap;
  flap.kind = "link_flap";
  flap.target.host = "h1";
  flap.params = {{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}};
  s.steps.push_back(flap);
  FaultStep loss;
  loss.kind = "packet_loss";
  loss.target.labels = {{"rack", "r1"}};
  loss.at_ms = 1000;
  loss.duration_ms = 4000;
  loss.params = {{"percent", 5}};
  s.steps.push_back(loss);
  return s;
}

void expectError(const Status& status, StatusCode code, const std::string& message) {
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), code) << status.toString();
  EXPECT_EQ(status.message(), message);
}

TEST(ValidateTest, AcceptsAValidScenario) {
  Status st = validateForFabric(validScenario(), testFabric(), catalog());
  EXPECT_TRUE(st.isOk()) << st.toString();
}

TEST(ValidateTest, UnknownKindListsValidKinds) {
  Scenario s = validScenario();
  s.steps[1].kind = "foo";
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kInvalidArgument,
              "steps[1].kind: unknown fault kind \"foo\"; valid kinds: link_flap, packet_loss");
}

TEST(ValidateTest, ParamErrorsArePrefixedAndKeepTheirCode) {
  std::vector<std::pair<std::string, json>> seen;
  KindCatalog kinds = catalog();
  kinds.validate_params = [&](const std::string& kind, const json& params) -> Status {
    seen.emplace_back(kind, params);
    if (kind == "packet_loss") {
      return Status(StatusCode::kInvalidArgument, "percent: must be in (0, 100]", 7);
    }
    return Status::ok();
  };
  Status st = validateForFabric(validScenario(), testFabric(), kinds);
  expectError(st, StatusCode::kInvalidArgument, "steps[1].params: percent: must be in (0, 100]");
  EXPECT_EQ(st.origin(), 7);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, "link_flap");
  EXPECT_EQ(seen[0].second["down_ms"], 1000);
  EXPECT_EQ(seen[1].first, "packet_loss");
  EXPECT_EQ(seen[1].second["percent"], 5);

  kinds.validate_params = [](const std::string&, const json&) {
    return Status(StatusCode::kNotSupported, "sch_netem is not in this kernel");
  };
  expectError(validateForFabric(validScenario(), testFabric(), kinds), StatusCode::kNotSupported,
              "steps[0].params: sch_netem is not in this kernel");
}

// The acting agent is asked once per (kind, target), however many phases a pattern plans there,
// and its refusal names the step.
TEST(ValidateTest, TheActingAgentIsAskedOncePerKindAndTarget) {
  Scenario s = validScenario();
  s.steps[0].params = {{"down_ms", 100}, {"up_ms", 100}, {"count", 50}};  // 100 actions, h1
  std::vector<std::string> asked;
  KindCatalog kinds = catalog();
  kinds.check_action = [&](const PlannedAction& action) -> Status {
    asked.push_back(action.kind + " " + action.target.host);
    if (action.kind == "packet_loss" && action.target.host == "h3") {
      return Status(StatusCode::kUnprocessable, "sch_netem is not in this kernel");
    }
    return Status::ok();
  };
  Status st = validateForFabric(s, testFabric(), kinds);
  EXPECT_EQ(asked, (std::vector<std::string>{"link_flap h1", "packet_loss h2", "packet_loss h3"}));
  expectError(st, StatusCode::kUnprocessable, "steps[1].target: sch_netem is not in this kernel");
}

TEST(ValidateTest, UnknownTargetIsUnprocessable) {
  Scenario s = validScenario();
  s.steps[0].target.host = "h9";
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kUnprocessable,
              "steps[0].target: target host h9 is not in fabric test-lab");
  s = validScenario();
  s.steps[1].target.labels = {{"rack", "r7"}};
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kUnprocessable,
              "steps[1].target: target labels {rack=r7} matches no link in fabric test-lab");
}

TEST(ValidateTest, WorkloadHostsMustExist) {
  Scenario s = validScenario();
  s.workload.hosts = {"h0", "h9"};
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kUnprocessable,
              "workload.hosts[1]: host h9 is not in fabric test-lab");
}

TEST(ValidateTest, WorkloadNeedsTwoHosts) {
  Scenario s = validScenario();
  s.steps.clear();
  expectError(validateForFabric(s, testFabric(1), catalog()), StatusCode::kUnprocessable,
              "workload.hosts: the workload needs at least 2 hosts; fabric test-lab has 1");
  s.workload.hosts = {"h2"};
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kUnprocessable,
              "workload.hosts: the workload needs at least 2 hosts; 1 listed");
  s.workload.hosts = {"h2", "h3"};
  EXPECT_TRUE(validateForFabric(s, testFabric(), catalog()).isOk());
}

TEST(ValidateTest, NonFlapStepsNeedADuration) {
  Scenario s = validScenario();
  s.steps[1].duration_ms = 0;
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kUnprocessable,
              "steps[1].duration_ms: must be > 0 for packet_loss");
}

TEST(ValidateTest, FlapTimingIsChecked) {
  Scenario s = validScenario();
  s.steps[0].params.erase("down_ms");
  expectError(validateForFabric(s, testFabric(), catalog()), StatusCode::kInvalidArgument,
              "steps[0].params.down_ms: required for link_flap");
  s = validScenario();
  s.steps[0].duration_ms = 2000;
  Status st = validateForFabric(s, testFabric(), catalog());
  EXPECT_EQ(st.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(st.message().rfind("steps[0].duration_ms: 2000 does not match", 0), 0u) << st.message();
}

TEST(ValidateTest, TooLongNamesBothNumbers) {
  Scenario s = validScenario();
  ASSERT_EQ(s.plannedDurationMs(), 13000);
  s.max_duration_ms = 13000;
  EXPECT_TRUE(validateForFabric(s, testFabric(), catalog()).isOk());
  s.max_duration_ms = 12999;
  Status st = validateForFabric(s, testFabric(), catalog());
  EXPECT_EQ(st.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(st.message().rfind("max_duration_ms: ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("13000"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("12999"), std::string::npos) << st.message();
}

TEST(ValidateTest, ReportsTheFirstBadStep) {
  Scenario s = validScenario();
  s.steps[0].target.host = "h9";
  s.steps[1].kind = "foo";
  Status st = validateForFabric(s, testFabric(), catalog());
  EXPECT_EQ(st.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(st.message().rfind("steps[0].target: ", 0), 0u) << st.message();
}

}  // namespace
}  // namespace fabric_chaos::scenarios
