#include "scenarios/model.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios {
namespace {

using core::StatusCode;

json validDoc() {
  return json::parse(R"({
    "version": 1,
    "name": "link-flap",
    "description": "flaps h1",
    "workload": {"transport": "tcp", "hosts": ["h0", "h1", "h2"], "message_bytes": 262144,
                 "compute_ms": 5, "peer_timeout_ms": 2000, "reconnect_budget_ms": 20000},
    "baseline_ms": 3000,
    "steps": [
      {"kind": "link_flap", "target": {"host": "h1"}, "at_ms": 0,
       "params": {"down_ms": 1000, "up_ms": 1000, "count": 2}},
      {"kind": "packet_loss", "target": {"labels": {"rack": "r1"}, "side": "host"}, "at_ms": 500,
       "duration_ms": 4000, "params": {"percent": 5}}
    ],
    "recovery_ms": 5000,
    "tolerance": 0.2,
    "recovered_after": 3,
    "max_duration_ms": 120000,
    "gates": {"min_score": 20, "max_recovery_ms": 4000, "min_retained": 0.5,
              "max_p99_slowdown": 3, "require_survival": false},
    "stop_conditions": {"min_busbw_fraction": 0.05, "for_ms": 2000, "on_rank_death": false}
  })");
}

TEST(ParseScenarioTest, AProcessKindsTargetNamesARankOrAHostsProcesses) {
  json doc = validDoc();
  doc["steps"][0]["target"] = {{"rank", 2}};
  doc["steps"][1]["target"] = {{"host", "h1"}, {"process", "ib_write_bw"}};
  auto parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->steps[0].target.rank, std::optional<int>(2));
  EXPECT_EQ(parsed->steps[0].target.describe(), "rank 2");
  EXPECT_EQ(parsed->steps[1].target.process, "ib_write_bw");
  EXPECT_EQ(parsed->steps[1].target.describe(), "host h1 process ib_write_bw");
  const json back = toJson(*parsed);
  EXPECT_EQ(back["steps"][0]["target"]["rank"], 2);
  EXPECT_EQ(back["steps"][1]["target"]["process"], "ib_write_bw");
  auto again = parseScenario(back);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(toJson(*again), back);
}

TEST(ParseScenarioTest, AnRdmaKindsTargetNamesADeviceOnARankOrHost) {
  json doc = validDoc();
  doc["steps"][0]["target"] = {{"rank", 1}, {"rdma_device", "rxe0"}, {"gid_index", 1}};
  doc["steps"][1]["target"] = {{"host", "h1"}, {"rdma_device", "mlx5_0"}, {"rdma_port", 2}};
  auto parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->steps[0].target.rdma_device, "rxe0");
  EXPECT_EQ(parsed->steps[0].target.rdma_port, std::nullopt);
  EXPECT_EQ(parsed->steps[0].target.gid_index, std::optional<int>(1));
  EXPECT_EQ(parsed->steps[0].target.describe(), "rank 1 rdma rxe0/1 gid 1");
  EXPECT_EQ(parsed->steps[1].target.rdma_port, std::optional<int>(2));
  EXPECT_EQ(parsed->steps[1].target.describe(), "host h1 rdma mlx5_0/2");
  const json back = toJson(*parsed);
  EXPECT_EQ(back["steps"][0]["target"]["rdma_device"], "rxe0");
  EXPECT_FALSE(back["steps"][0]["target"].contains("rdma_port"));
  EXPECT_EQ(back["steps"][1]["target"]["rdma_port"], 2);
  auto again = parseScenario(back);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(toJson(*again), back);
}

TEST(ParseScenarioTest, ATrafficTargetNamesItsSources) {
  json doc = validDoc();
  doc["steps"][0]["target"]["sources"] = {"h0", "h2"};
  auto parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->steps[0].target.sources, (std::vector<std::string>{"h0", "h2"}));
  EXPECT_EQ(parsed->steps[0].target.describe(), "host h1 from h0, h2");
  EXPECT_EQ(toJson(*parsed)["steps"][0]["target"]["sources"], (json{"h0", "h2"}));
}

TEST(ParseScenarioTest, ParsesEveryField) {
  auto parsed = parseScenario(validDoc());
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const Scenario& s = parsed.value();
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(s.name, "link-flap");
  EXPECT_EQ(s.description, "flaps h1");
  EXPECT_EQ(s.workload.transport, "tcp");
  EXPECT_EQ(s.workload.hosts, (std::vector<std::string>{"h0", "h1", "h2"}));
  EXPECT_EQ(s.workload.message_bytes, 262144);
  EXPECT_EQ(s.workload.compute_ms, 5);
  EXPECT_EQ(s.workload.peer_timeout_ms, 2000);
  EXPECT_EQ(s.workload.reconnect_budget_ms, 20000);
  EXPECT_EQ(s.baseline_ms, 3000);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].kind, "link_flap");
  EXPECT_EQ(s.steps[0].target.host, "h1");
  EXPECT_EQ(s.steps[0].target.side, LinkSide::kSwitch);
  EXPECT_EQ(s.steps[0].at_ms, 0);
  EXPECT_EQ(s.steps[0].duration_ms, 0);
  EXPECT_EQ(s.steps[0].params["count"], 2);
  EXPECT_EQ(s.steps[1].target.labels, (std::map<std::string, std::string>{{"rack", "r1"}}));
  EXPECT_EQ(s.steps[1].target.side, LinkSide::kHost);
  EXPECT_EQ(s.steps[1].at_ms, 500);
  EXPECT_EQ(s.steps[1].duration_ms, 4000);
  EXPECT_EQ(s.recovery_ms, 5000);
  EXPECT_DOUBLE_EQ(s.tolerance, 0.2);
  EXPECT_EQ(s.recovered_after, 3);
  EXPECT_EQ(s.max_duration_ms, 120000);
  EXPECT_EQ(s.gates.min_score, 20.0);
  EXPECT_EQ(s.gates.max_recovery_ms, 4000.0);
  EXPECT_EQ(s.gates.min_retained, 0.5);
  EXPECT_EQ(s.gates.max_p99_slowdown, 3.0);
  EXPECT_FALSE(s.gates.require_survival);
  EXPECT_EQ(s.stop_conditions.min_busbw_fraction, 0.05);
  EXPECT_EQ(s.stop_conditions.for_ms, 2000);
  EXPECT_FALSE(s.stop_conditions.on_rank_death);
}

TEST(ParseScenarioTest, MinimalDocumentGetsDefaults) {
  auto parsed = parseScenario(json{{"version", 1}, {"name", "quiet"}});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const Scenario& s = parsed.value();
  const WorkloadSpec defaults;
  EXPECT_EQ(s.workload.transport, defaults.transport);
  EXPECT_TRUE(s.workload.hosts.empty());
  EXPECT_EQ(s.workload.message_bytes, defaults.message_bytes);
  EXPECT_EQ(s.workload.compute_ms, defaults.compute_ms);
  EXPECT_EQ(s.workload.peer_timeout_ms, defaults.peer_timeout_ms);
  EXPECT_EQ(s.workload.reconnect_budget_ms, defaults.reconnect_budget_ms);
  EXPECT_EQ(s.baseline_ms, 3000);
  EXPECT_TRUE(s.steps.empty());
  EXPECT_EQ(s.recovery_ms, 5000);
  EXPECT_DOUBLE_EQ(s.tolerance, 0.1);
  EXPECT_EQ(s.recovered_after, 5);
  EXPECT_EQ(s.max_duration_ms, 600000);
  EXPECT_FALSE(s.gates.min_score.has_value());
  EXPECT_FALSE(s.gates.max_recovery_ms.has_value());
  EXPECT_FALSE(s.gates.min_retained.has_value());
  EXPECT_TRUE(s.gates.require_survival);
  // Only rank death stops a run unless the scenario asks for more.
  EXPECT_FALSE(s.stop_conditions.min_busbw_fraction.has_value());
  EXPECT_EQ(s.stop_conditions.for_ms, 0);
  EXPECT_TRUE(s.stop_conditions.on_rank_death);
}

TEST(ParseScenarioTest, StopConditionsAreAllOptional) {
  struct Case {
    json stop;
    std::optional<double> fraction;
    int64_t for_ms;
    bool on_rank_death;
  };
  const std::vector<Case> cases = {
      {json::object(), std::nullopt, 0, true},
      {{{"on_rank_death", false}}, std::nullopt, 0, false},
      {{{"min_busbw_fraction", 0.5}, {"for_ms", 1}}, 0.5, 1, true},
      {{{"min_busbw_fraction", 0.999}, {"for_ms", kMaxTimeMs}}, 0.999, kMaxTimeMs, true},
  };
  for (const auto& c : cases) {
    auto parsed = parseScenario(json{{"version", 1}, {"name", "s"}, {"stop_conditions", c.stop}});
    ASSERT_TRUE(parsed.isOk()) << c.stop.dump() << ": " << parsed.status().toString();
    EXPECT_EQ(parsed->stop_conditions.min_busbw_fraction, c.fraction) << c.stop.dump();
    EXPECT_EQ(parsed->stop_conditions.for_ms, c.for_ms) << c.stop.dump();
    EXPECT_EQ(parsed->stop_conditions.on_rank_death, c.on_rank_death) << c.stop.dump();
  }
}

TEST(ParseScenarioTest, AcceptsRangeBoundaries) {
  json doc = validDoc();
  doc["workload"]["message_bytes"] = 4096;
  doc["workload"]["compute_ms"] = 60000;
  doc["workload"]["peer_timeout_ms"] = 100;
  doc["workload"]["reconnect_budget_ms"] = 0;
  doc["baseline_ms"] = 500;
  doc["recovery_ms"] = 3600000;
  doc["recovered_after"] = 1000;
  doc["gates"]["min_score"] = 0;
  doc["gates"]["min_retained"] = 1;
  doc["steps"][0]["at_ms"] = kMaxTimeMs;
  doc["workload"]["hosts"] = json::array();
  doc["workload"]["transport"] = "verbs";
  auto parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_TRUE(parsed->workload.hosts.empty());
  EXPECT_EQ(parsed->workload.transport, "verbs");
}

// A wrong shape is a 400; a well-typed value out of its range, or one that conflicts with
// another field, is a 422 (docs/faults.md, "Bad parameters").
constexpr StatusCode kShape = StatusCode::kInvalidArgument;
constexpr StatusCode kValue = StatusCode::kUnprocessable;

struct ParseErrorCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string expected;  // the message must start with this
  StatusCode code = kShape;
};

std::vector<ParseErrorCase> parseErrorCases() {
  return {
      {"NotAnObject", [](json& d) { d = json::array(); }, "scenario: must be a JSON object"},
      {"UnknownTopLevel", [](json& d) { d["colour"] = "red"; }, "colour: unknown field"},
      {"VersionMissing", [](json& d) { d.erase("version"); }, "version: required"},
      {"VersionTwo", [](json& d) { d["version"] = 2; }, "version: must be 1"},
      {"VersionString", [](json& d) { d["version"] = "1"; }, "version: must be 1"},
      {"NameMissing", [](json& d) { d.erase("name"); }, "name: required"},
      {"NameNotString", [](json& d) { d["name"] = 7; }, "name: must be a string"},
      {"NameUpperCase", [](json& d) { d["name"] = "Link Flap"; }, "name: \"Link Flap\" is not"},
      {"DescriptionNotString", [](json& d) { d["description"] = 5; },
       "description: must be a string"},
      {"WorkloadNotObject", [](json& d) { d["workload"] = "tcp"; },
       "workload: must be a JSON object"},
      {"WorkloadUnknown", [](json& d) { d["workload"]["ranks"] = 4; },
       "workload.ranks: unknown field"},
      {"Transport", [](json& d) { d["workload"]["transport"] = "udp"; },
       "workload.transport: must be \"tcp\", \"verbs\" or \"ib_probe\"", kValue},
      {"HostsNotArray", [](json& d) { d["workload"]["hosts"] = "h0"; },
       "workload.hosts: must be an array"},
      {"HostNotString", [](json& d) { d["workload"]["hosts"][1] = 1; },
       "workload.hosts[1]: must be a non-empty string"},
      {"HostDuplicate", [](json& d) { d["workload"]["hosts"][2] = "h0"; },
       "workload.hosts[2]: duplicate host h0", kValue},
      {"MessageBytesSmall", [](json& d) { d["workload"]["message_bytes"] = 4095; },
       "workload.message_bytes: must be an integer in [4096, 1073741824]", kValue},
      {"MessageBytesLarge", [](json& d) { d["workload"]["message_bytes"] = (1 << 30) + 1; },
       "workload.message_bytes: must be an integer in [4096, 1073741824]", kValue},
      {"ComputeMs", [](json& d) { d["workload"]["compute_ms"] = 60001; },
       "workload.compute_ms: must be an integer in [0, 60000]", kValue},
      {"PeerTimeout", [](json& d) { d["workload"]["peer_timeout_ms"] = 99; },
       "workload.peer_timeout_ms: must be an integer in [100, 600000]", kValue},
      {"ReconnectBudget", [](json& d) { d["workload"]["reconnect_budget_ms"] = -1; },
       "workload.reconnect_budget_ms: must be an integer in [0, 3600000]", kValue},
      {"BaselineSmall", [](json& d) { d["baseline_ms"] = 499; },
       "baseline_ms: must be an integer in [500, 3600000]", kValue},
      {"BaselineFraction", [](json& d) { d["baseline_ms"] = 3000.5; },
       "baseline_ms: must be an integer in [500, 3600000]"},
      {"BaselineString", [](json& d) { d["baseline_ms"] = "3000"; },
       "baseline_ms: must be an integer in [500, 3600000]"},
      {"StepsNotArray", [](json& d) { d["steps"] = json::object(); }, "steps: must be an array"},
      {"TooManySteps",
       [](json& d) {
         json step = d["steps"][1];
         d["steps"] = json::array();
         for (int i = 0; i < 65; ++i) d["steps"].push_back(step);
       },
       "steps: at most 64 steps are allowed, got 65", kValue},
      {"StepNotObject", [](json& d) { d["steps"][1] = 3; }, "steps[1]: must be a JSON object"},
      {"StepUnknown", [](json& d) { d["steps"][1]["delay_ms"] = 3; },
       "steps[1].delay_ms: unknown field"},
      {"StepLevelSide", [](json& d) { d["steps"][0]["side"] = "host"; },
       "steps[0].side: unknown field"},
      {"KindMissing", [](json& d) { d["steps"][1].erase("kind"); }, "steps[1].kind: required"},
      {"KindEmpty", [](json& d) { d["steps"][1]["kind"] = ""; },
       "steps[1].kind: must be a non-empty string"},
      {"TargetMissing", [](json& d) { d["steps"][0].erase("target"); },
       "steps[0].target: required"},
      {"TargetEmpty", [](json& d) { d["steps"][0]["target"] = json::object(); },
       "steps[0].target: exactly one of host, link, labels, sm, rank"},
      {"TargetTwo", [](json& d) { d["steps"][0]["target"]["link"] = "h1-sw0"; },
       "steps[0].target: exactly one of host, link, labels, sm, rank"},
      {"TargetRankAndHost", [](json& d) { d["steps"][0]["target"]["rank"] = 1; },
       "steps[0].target: exactly one of host, link, labels, sm, rank"},
      {"TargetRankNegative",
       [](json& d) {
         d["steps"][0]["target"] = {{"rank", -1}};
       },
       "steps[0].target.rank: must be a workload rank (an integer from 0)"},
      {"TargetProcessWithoutHost",
       [](json& d) {
         d["steps"][0]["target"] = {{"rank", 1}, {"process", "ib_write_bw"}};
       },
       "steps[0].target.process: names processes on a host"},
      {"TargetProcessTooLong",
       [](json& d) { d["steps"][0]["target"]["process"] = "a_very_long_program_name"; },
       "steps[0].target.process: a process name is at most 15 characters (/proc/PID/comm)"},
      {"TargetRdmaOnALink",
       [](json& d) {
         d["steps"][0]["target"] = {{"link", "h1-sw0"}, {"rdma_device", "rxe0"}};
       },
       "steps[0].target.rdma_device: names a device on the selected host or rank"},
      {"TargetRdmaPortWithoutDevice",
       [](json& d) {
         d["steps"][0]["target"] = {{"rank", 1}, {"rdma_port", 1}};
       },
       "steps[0].target.rdma_port: goes with rdma_device"},
      {"TargetRdmaPortZero",
       [](json& d) {
         d["steps"][0]["target"] = {{"rank", 1}, {"rdma_device", "rxe0"}, {"rdma_port", 0}};
       },
       "steps[0].target.rdma_port: must be an integer in [1, 255]", kValue},
      {"TargetGidIndexNegative",
       [](json& d) {
         d["steps"][0]["target"] = {{"rank", 1}, {"rdma_device", "rxe0"}, {"gid_index", -1}};
       },
       "steps[0].target.gid_index: must be an integer in [0, 65535]", kValue},
      {"TargetUnknown", [](json& d) { d["steps"][0]["target"]["nic"] = "eth0"; },
       "steps[0].target.nic: unknown field"},
      {"TargetHostNumber", [](json& d) { d["steps"][0]["target"]["host"] = 1; },
       "steps[0].target.host: must be a non-empty string"},
      {"TargetLabelsEmpty", [](json& d) { d["steps"][1]["target"]["labels"] = json::object(); },
       "steps[1].target.labels: must be a non-empty object"},
      {"TargetLabelValue", [](json& d) { d["steps"][1]["target"]["labels"]["rack"] = 1; },
       "steps[1].target.labels.rack: must be a string"},
      {"TargetSide", [](json& d) { d["steps"][1]["target"]["side"] = "nic"; },
       "steps[1].target.side: must be \"switch\", \"host\" or \"peer\"", kValue},
      {"AtMsNegative", [](json& d) { d["steps"][1]["at_ms"] = -5; },
       "steps[1].at_ms: must be a non-negative integer", kValue},
      {"AtMsFraction", [](json& d) { d["steps"][1]["at_ms"] = 1.5; },
       "steps[1].at_ms: must be a non-negative integer"},
      {"AtMsHuge", [](json& d) { d["steps"][1]["at_ms"] = kMaxTimeMs + 1; },
       "steps[1].at_ms: must be at most 86400000", kValue},
      {"AtMsBeyondInt64", [](json& d) { d["steps"][1]["at_ms"] = UINT64_MAX; },
       "steps[1].at_ms: must be at most 86400000", kValue},
      {"DurationNegative", [](json& d) { d["steps"][0]["duration_ms"] = -1; },
       "steps[0].duration_ms: must be a non-negative integer", kValue},
      {"ParamsArray", [](json& d) { d["steps"][0]["params"] = json::array(); },
       "steps[0].params: must be an object"},
      {"RecoverySmall", [](json& d) { d["recovery_ms"] = 400; },
       "recovery_ms: must be an integer in [500, 3600000]", kValue},
      {"ToleranceZero", [](json& d) { d["tolerance"] = 0; },
       "tolerance: must be a number in (0, 1)", kValue},
      {"ToleranceOne", [](json& d) { d["tolerance"] = 1.0; },
       "tolerance: must be a number in (0, 1)", kValue},
      {"ToleranceString", [](json& d) { d["tolerance"] = "0.1"; },
       "tolerance: must be a number in (0, 1)"},
      {"RecoveredAfterZero", [](json& d) { d["recovered_after"] = 0; },
       "recovered_after: must be an integer in [1, 1000]", kValue},
      {"RecoveredAfterLarge", [](json& d) { d["recovered_after"] = 1001; },
       "recovered_after: must be an integer in [1, 1000]", kValue},
      {"MaxDurationSmall", [](json& d) { d["max_duration_ms"] = 999; },
       "max_duration_ms: must be an integer in [1000, 86400000]", kValue},
      {"GatesNotObject", [](json& d) { d["gates"] = true; }, "gates: must be a JSON object"},
      {"GatesUnknown", [](json& d) { d["gates"]["min_busbw"] = 1; },
       "gates.min_busbw: unknown field"},
      {"MinScore", [](json& d) { d["gates"]["min_score"] = 101; },
       "gates.min_score: must be a number in [0, 100]", kValue},
      {"MaxRecovery", [](json& d) { d["gates"]["max_recovery_ms"] = -1; },
       "gates.max_recovery_ms: must be a non-negative number", kValue},
      {"MinRetained", [](json& d) { d["gates"]["min_retained"] = 1.5; },
       "gates.min_retained: must be a number in [0, 1]", kValue},
      {"MaxP99Slowdown", [](json& d) { d["gates"]["max_p99_slowdown"] = 0.5; },
       "gates.max_p99_slowdown: must be a number of at least 1", kValue},
      {"SourcesEmpty", [](json& d) { d["steps"][0]["target"]["sources"] = json::array(); },
       "steps[0].target.sources: must be a non-empty array of host names"},
      {"SourcesTwice",
       [](json& d) {
         d["steps"][0]["target"]["sources"] = {"h0", "h0"};
       },
       "steps[0].target.sources[1]: host h0 is listed twice"},
      {"SourcesNotString", [](json& d) { d["steps"][0]["target"]["sources"] = {1}; },
       "steps[0].target.sources[0]: must be a non-empty string"},
      {"RequireSurvival", [](json& d) { d["gates"]["require_survival"] = "yes"; },
       "gates.require_survival: must be true or false"},
      {"StopNotObject", [](json& d) { d["stop_conditions"] = 1; },
       "stop_conditions: must be a JSON object"},
      {"StopUnknown", [](json& d) { d["stop_conditions"]["min_busbw"] = 0.5; },
       "stop_conditions.min_busbw: unknown field"},
      {"StopFractionZero", [](json& d) { d["stop_conditions"]["min_busbw_fraction"] = 0; },
       "stop_conditions.min_busbw_fraction: must be a number in (0, 1)", kValue},
      {"StopFractionOne", [](json& d) { d["stop_conditions"]["min_busbw_fraction"] = 1; },
       "stop_conditions.min_busbw_fraction: must be a number in (0, 1)", kValue},
      {"StopFractionString", [](json& d) { d["stop_conditions"]["min_busbw_fraction"] = "5%"; },
       "stop_conditions.min_busbw_fraction: must be a number in (0, 1)"},
      {"StopForMsMissing", [](json& d) { d["stop_conditions"].erase("for_ms"); },
       "stop_conditions.for_ms: must be > 0 when min_busbw_fraction is set", kValue},
      {"StopForMsZero", [](json& d) { d["stop_conditions"]["for_ms"] = 0; },
       "stop_conditions.for_ms: must be > 0 when min_busbw_fraction is set", kValue},
      {"StopForMsNegative", [](json& d) { d["stop_conditions"]["for_ms"] = -1; },
       "stop_conditions.for_ms: must be a non-negative integer", kValue},
      {"StopForMsAlone", [](json& d) { d["stop_conditions"].erase("min_busbw_fraction"); },
       "stop_conditions.for_ms: needs min_busbw_fraction", kValue},
      {"StopOnRankDeath", [](json& d) { d["stop_conditions"]["on_rank_death"] = 1; },
       "stop_conditions.on_rank_death: must be true or false"},
  };
}

class ParseErrorTest : public testing::TestWithParam<ParseErrorCase> {};

TEST_P(ParseErrorTest, NamesTheField) {
  json doc = validDoc();
  ASSERT_TRUE(parseScenario(doc).isOk());
  GetParam().mutate(doc);
  auto parsed = parseScenario(doc);
  ASSERT_FALSE(parsed.isOk()) << doc.dump();
  EXPECT_EQ(parsed.status().code(), GetParam().code) << parsed.status().message();
  EXPECT_EQ(parsed.status().message().rfind(GetParam().expected, 0), 0u)
      << "got: " << parsed.status().message() << "\nwant prefix: " << GetParam().expected;
}

INSTANTIATE_TEST_SUITE_P(Table, ParseErrorTest, testing::ValuesIn(parseErrorCases()),
                         [](const testing::TestParamInfo<ParseErrorCase>& info) {
                           return info.param.name;
                         });

TEST(RoundTripTest, ParsedDocumentSurvivesToJsonAndBack) {
  auto first = parseScenario(validDoc());
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  const json encoded = toJson(first.value());
  // Through text too, as the store and the API would carry it.
  auto second = parseScenario(json::parse(encoded.dump()));
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ(toJson(second.value()), encoded);

  const Scenario& a = first.value();
  const Scenario& b = second.value();
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.workload.hosts, b.workload.hosts);
  EXPECT_EQ(a.workload.message_bytes, b.workload.message_bytes);
  EXPECT_EQ(a.workload.peer_timeout_ms, b.workload.peer_timeout_ms);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].kind, b.steps[i].kind);
    EXPECT_EQ(a.steps[i].target.host, b.steps[i].target.host);
    EXPECT_EQ(a.steps[i].target.labels, b.steps[i].target.labels);
    EXPECT_EQ(a.steps[i].target.side, b.steps[i].target.side);
    EXPECT_EQ(a.steps[i].at_ms, b.steps[i].at_ms);
    EXPECT_EQ(a.steps[i].duration_ms, b.steps[i].duration_ms);
    EXPECT_EQ(a.steps[i].params, b.steps[i].params);
  }
  EXPECT_DOUBLE_EQ(a.tolerance, b.tolerance);
  EXPECT_EQ(a.recovered_after, b.recovered_after);
  EXPECT_EQ(a.max_duration_ms, b.max_duration_ms);
  EXPECT_EQ(a.gates.min_score, b.gates.min_score);
  EXPECT_EQ(a.gates.max_recovery_ms, b.gates.max_recovery_ms);
  EXPECT_EQ(a.gates.min_retained, b.gates.min_retained);
  EXPECT_EQ(a.gates.require_survival, b.gates.require_survival);
  EXPECT_EQ(a.stop_conditions.min_busbw_fraction, b.stop_conditions.min_busbw_fraction);
  EXPECT_EQ(a.stop_conditions.for_ms, b.stop_conditions.for_ms);
  EXPECT_EQ(a.stop_conditions.on_rank_death, b.stop_conditions.on_rank_death);
}

TEST(RoundTripTest, ScenarioBuiltInCodeRoundTrips) {
  Scenario s;
  s.name = "built.in_code-1";
  FaultStep step;
  step.kind = "link_flap";
  step.target.link = "h2-sw0";
  step.target.side = LinkSide::kHost;
  step.params = {{"down_ms", 250}};
  step.at_ms = 1200;
  s.steps.push_back(step);
  s.gates.require_survival = false;
  auto parsed = parseScenario(toJson(s));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(toJson(parsed.value()), toJson(s));
  EXPECT_EQ(parsed->steps[0].target.link, "h2-sw0");
  EXPECT_EQ(parsed->steps[0].target.side, LinkSide::kHost);
  EXPECT_FALSE(parsed->gates.require_survival);
  EXPECT_FALSE(parsed->gates.min_score.has_value());
}

TEST(ScenarioNameTest, Table) {
  struct Case {
    std::string name;
    bool valid;
  };
  const std::vector<Case> cases = {
      {"link-flap", true},
      {"a", true},
      {"0", true},
      {"v1.2_beta-x", true},
      {std::string(64, 'a'), true},
      {"", false},
      {std::string(65, 'a'), false},
      {"-flap", false},
      {".hidden", false},
      {"_x", false},
      {"Link", false},
      {"link flap", false},
      {"a/b", false},
      {"ünï", false},
  };
  for (const Case& c : cases) EXPECT_EQ(isValidScenarioName(c.name), c.valid) << c.name;
}

TEST(TargetSelectorTest, Describe) {
  TargetSelector host;
  host.host = "h1";
  EXPECT_EQ(host.describe(), "host h1");
  TargetSelector link;
  link.link = "h1-sw0";
  EXPECT_EQ(link.describe(), "link h1-sw0");
  TargetSelector labels;
  labels.labels = {{"rack", "r1"}};
  EXPECT_EQ(labels.describe(), "labels {rack=r1}");
  labels.labels["leaf"] = "sw0";
  EXPECT_EQ(labels.describe(), "labels {leaf=sw0, rack=r1}");
}

FaultStep flap(int64_t at_ms, json params, int64_t duration_ms = 0) {
  FaultStep step;
  step.kind = "link_flap";
  step.target.host = "h1";
  step.at_ms = at_ms;
  step.duration_ms = duration_ms;
  step.params = std::move(params);
  return step;
}

FaultStep loss(int64_t at_ms, int64_t duration_ms) {
  FaultStep step;
  step.kind = "packet_loss";
  step.target.host = "h1";
  step.at_ms = at_ms;
  step.duration_ms = duration_ms;
  step.params = {{"percent", 5}};
  return step;
}

TEST(PlannedDurationTest, Table) {
  struct Case {
    std::string name;
    std::vector<FaultStep> steps;
    int64_t expected;
  };
  const std::vector<Case> cases = {
      {"NoSteps", {}, 3000 + 5000},
      // 1000 down, 1000 up, 1000 down.
      {"FlapPattern",
       {flap(0, {{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}})},
       3000 + 3000 + 5000},
      {"FlapDefaultsUpAndCount", {flap(200, {{"down_ms", 700}})}, 3000 + 900 + 5000},
      {"FlapUpDefaultsToDown", {flap(0, {{"down_ms", 400}, {"count", 3}})}, 3000 + 2000 + 5000},
      {"Loss", {loss(1000, 4000)}, 3000 + 5000 + 5000},
      {"LatestEndNotLastStep", {loss(0, 9000), loss(1000, 1000)}, 3000 + 9000 + 5000},
      // Malformed flap params fall back to at_ms + duration_ms.
      {"FlapWithoutDownMs", {flap(100, json::object(), 2500)}, 3000 + 2600 + 5000},
  };
  for (const Case& c : cases) {
    Scenario s;
    s.steps = c.steps;
    EXPECT_EQ(s.plannedDurationMs(), c.expected) << c.name;
  }
}

}  // namespace
}  // namespace fabric_chaos::scenarios

namespace fabric_chaos::scenarios {
namespace {

TEST(ParseScenarioTest, FabricNamesTheLabAScenarioIsWrittenFor) {
  json doc = {{"version", 1}, {"name", "on-vms"}, {"fabric", "vm-lab"}};
  auto parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->fabric, "vm-lab");
  EXPECT_EQ(toJson(parsed.value())["fabric"], "vm-lab");
  // Absent: the server's default, and nothing is written back.
  auto plain = parseScenario(json{{"version", 1}, {"name", "plain"}});
  ASSERT_TRUE(plain.isOk());
  EXPECT_TRUE(plain->fabric.empty());
  EXPECT_FALSE(toJson(plain.value()).contains("fabric"));
  auto bad = parseScenario(json{{"version", 1}, {"name", "x"}, {"fabric", 3}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message().rfind("fabric:", 0), 0u) << bad.status().message();
}

}  // namespace
}  // namespace fabric_chaos::scenarios

namespace fabric_chaos::scenarios {
namespace {

// External workloads (docs/workloads.md): their fields, the ring's refused beside them, and a
// round trip through toJson.
TEST(ExecWorkloadTest, ParsesRefusesAndRoundTrips) {
  json doc = validDoc();
  doc["workload"] = json::parse(R"js({
    "kind": "exec", "hosts": ["h0", "h1"],
    "command": ["all_reduce_perf", "-b", "64M", "-e", "64M", "-N", "0"],
    "env": {"NCCL_DEBUG": "WARN"},
    "parser": {"format": "nccl-tests", "placement": "in-place"},
    "master_port": 29600, "silence_ms": 0, "start_timeout_ms": 5000, "samples_from": "rank0"})js");
  auto parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const WorkloadSpec& w = parsed->workload;
  EXPECT_EQ(w.kind, WorkloadKind::kExec);
  EXPECT_EQ(w.exec.command.front(), "all_reduce_perf");
  EXPECT_EQ(w.exec.env.at("NCCL_DEBUG"), "WARN");
  EXPECT_EQ(w.exec.parser.format, workload::StepFormat::kNcclTests);
  EXPECT_EQ(w.exec.parser.placement, workload::NcclPlacement::kInPlace);
  EXPECT_EQ(w.exec.master_port, 29600);
  EXPECT_EQ(w.exec.silence_ms, 0);
  EXPECT_EQ(w.exec.start_timeout_ms, 5000);
  EXPECT_FALSE(w.exec.every_rank_reports);
  auto again = parseScenario(toJson(*parsed));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(toJson(*again), toJson(*parsed));

  doc["workload"] = json::parse(R"js({"kind": "pytorch-ddp", "args": ["--timeout-s", "20"]})js");
  parsed = parseScenario(doc);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->workload.kind, WorkloadKind::kPytorchDdp);
  EXPECT_EQ(parsed->workload.exec.command, (std::vector<std::string>{"--timeout-s", "20"}));
  EXPECT_EQ(parsed->workload.exec.python, "/usr/bin/python3");
  EXPECT_EQ(toJson(*parseScenario(toJson(*parsed))), toJson(*parsed));

  struct Refused {
    std::string workload;
    std::string field;
    StatusCode code = kShape;
  };
  const std::vector<Refused> refused = {
      {R"js({"kind": "exec"})js", "workload.command"},
      {R"js({"kind": "exec", "command": []})js", "workload.command"},
      {R"js({"kind": "exec", "command": ["A=b"]})js", "workload.command[0]"},
      {R"js({"kind": "exec", "command": ["x"], "message_bytes": 4096})js",
       "workload.message_bytes"},
      {R"js({"kind": "exec", "command": ["x"], "args": ["y"]})js", "workload.args"},
      {R"js({"kind": "exec", "command": ["x"], "env": {"RANK": "3"}})js", "workload.env.RANK"},
      {R"js({"kind": "exec", "command": ["x"], "env": {"1X": "3"}})js", "workload.env.1X"},
      {R"js({"kind": "exec", "command": ["x"], "env": {"X": 3}})js", "workload.env.X"},
      {R"js({"kind": "exec", "command": ["x"], "parser": {"format": "regex",
          "pattern": "(?<step>\\d+)"}})js",
       "workload.parser"},
      {R"js({"kind": "exec", "command": ["x"], "parser": {"format": "jsonl",
          "placement": "in-place"}})js",
       "workload.parser.placement"},
      {R"js({"kind": "exec", "command": ["x"], "samples_from": "all"})js", "workload.samples_from"},
      {R"js({"kind": "exec", "command": ["x"], "master_port": 80})js", "workload.master_port",
       kValue},
      {R"js({"kind": "pytorch-ddp", "command": ["x"]})js", "workload.command"},
      {R"js({"kind": "pytorch-ddp", "python": "python3"})js", "workload.python"},
      {R"js({"kind": "ring", "command": ["x"]})js", "workload.command"},
      {R"js({"kind": "mpi"})js", "workload.kind", kValue},
  };
  for (const auto& [workload, field, code] : refused) {
    doc["workload"] = json::parse(workload);
    auto result = parseScenario(doc);
    ASSERT_FALSE(result.isOk()) << workload;
    EXPECT_EQ(result.status().code(), code) << result.status().message();
    EXPECT_EQ(result.status().message().rfind(field + ":", 0), 0u)
        << workload << " -> " << result.status().message();
  }
}

}  // namespace
}  // namespace fabric_chaos::scenarios
