// The kind declarations (injectors/model/kind_spec.h): the generic parameter check, the JSON that
// GET /v1/capabilities serves, each kind's declaration against its injector, and docs/faults.md's
// generated parameter tables against the declarations.

#include "injectors/model/kind_spec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "injectors/link/link_flap.h"
#include "injectors/loss/packet_loss.h"
#include "injectors/netem/netem.h"
#include "injectors/pfc/pfc_config.h"
#include "injectors/pfc/pfc_watchdog.h"
#include "injectors/traffic/hot_spot.h"
#include "injectors/traffic/incast.h"
#include "injectors/verbs/verbs_shim_fault.h"

namespace fabric_chaos::injectors {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

KindSpec exampleSpec() {
  KindSpec s;
  s.kind = "example";
  s.resource = "example";
  s.params = {
      {"n", ParamType::kInteger, "ms", 1, false, 600000, {}, true, nullptr, "required integer"},
      {"share", ParamType::kNumber, "%", 0, true, 100, {}, false, nullptr, "open below"},
      {"mode",
       ParamType::kChoice,
       "",
       std::nullopt,
       false,
       std::nullopt,
       {"a", "b"},
       false,
       "a",
       "a choice"},
      {"on", ParamType::kBoolean, "", std::nullopt, false, std::nullopt, {}, false, false, "flag"},
      {"model",
       ParamType::kObject,
       "",
       std::nullopt,
       false,
       std::nullopt,
       {},
       false,
       nullptr,
       "nested"},
      {"big", ParamType::kNumber, "kbit/s", 0, true, 1e10, {}, false, nullptr, "large bound"},
  };
  return s;
}

TEST(CheckParamsTest, AcceptsValidParams) {
  const KindSpec spec = exampleSpec();
  for (const json& params :
       {json{{"n", 1}}, json{{"n", 600000}, {"share", 100}, {"mode", "b"}, {"on", true}},
        json{{"n", 5}, {"share", 0.001}, {"model", json::object()}, {"big", 1e10}}}) {
    EXPECT_TRUE(checkParams(spec, params).isOk()) << params.dump();
  }
}

// A wrong shape is a 400 (kInvalidArgument); a well-typed value the kind cannot take is a 422
// (kUnprocessable), as docs/faults.md ("Bad parameters") says.
TEST(CheckParamsTest, EveryRuleNamesTheParameter) {
  const KindSpec spec = exampleSpec();
  constexpr auto kShape = core::StatusCode::kInvalidArgument;
  constexpr auto kValue = core::StatusCode::kUnprocessable;
  const std::vector<std::tuple<json, core::StatusCode, std::string>> cases = {
      {json::array(), kShape, "params: must be an object"},
      {json::object(), kShape, "n: required"},
      {{{"n", 1}, {"x", 1}},
       kShape,
       "x: unknown parameter (expected n, share, mode, on, model, big)"},
      {{{"n", 0}}, kValue, "n: must be an integer in 1..600000"},
      {{{"n", 600001}}, kValue, "n: must be an integer in 1..600000"},
      {{{"n", -5}}, kValue, "n: must be an integer in 1..600000"},
      {{{"n", 1.5}}, kShape, "n: must be an integer in 1..600000"},
      {{{"n", 2.0}}, kShape, "n: must be an integer in 1..600000"},
      {{{"n", "10"}}, kShape, "n: must be an integer in 1..600000"},
      {{{"n", true}}, kShape, "n: must be an integer in 1..600000"},
      {{{"n", 18446744073709551615ULL}}, kValue, "n: must be an integer in 1..600000"},
      {{{"n", 1}, {"share", 0}}, kValue, "share: must be a number in (0, 100]"},
      {{{"n", 1}, {"share", 100.5}}, kValue, "share: must be a number in (0, 100]"},
      {{{"n", 1}, {"share", "5"}}, kShape, "share: must be a number in (0, 100]"},
      {{{"n", 1}, {"mode", "c"}}, kValue, "mode: must be one of a, b"},
      {{{"n", 1}, {"mode", 1}}, kShape, "mode: must be one of a, b"},
      {{{"n", 1}, {"on", 1}}, kShape, "on: must be true or false"},
      {{{"n", 1}, {"model", 1}}, kShape, "model: must be an object"},
      {{{"n", 1}, {"big", 2e10}}, kValue, "big: must be a number in (0, 1e10]"},
  };
  for (const auto& [params, code, message] : cases) {
    core::Status status = checkParams(spec, params);
    EXPECT_EQ(status.code(), code) << params.dump();
    EXPECT_EQ(status.message(), message) << params.dump();
  }
}

TEST(CheckParamsTest, DefaultsFillOnlyAbsentParameters) {
  const KindSpec spec = exampleSpec();
  EXPECT_EQ(withDefaults(spec, {{"n", 3}, {"mode", "b"}}),
            (json{{"n", 3}, {"mode", "b"}, {"on", false}}));
}

TEST(KindSpecTest, CapabilitiesJsonCarriesTheWholeDeclaration) {
  const KindSpec* flap = findKindSpec("link_flap");
  ASSERT_NE(flap, nullptr);
  const json doc = toJson(*flap);
  EXPECT_EQ(doc["kind"], "link_flap");
  EXPECT_EQ(doc["target"], "interface");
  EXPECT_EQ(doc["resource"], "link_state");
  EXPECT_EQ(doc["composition"], "stacks");
  EXPECT_EQ(doc["lifecycle"], "instant");
  EXPECT_EQ(doc["phases"],
            (json{{"shape", "repeated"}, {"on", "down_ms"}, {"off", "up_ms"}, {"count", "count"}}));
  ASSERT_EQ(doc["params"].size(), 3u);
  EXPECT_EQ(doc["params"][0], (json{{"name", "down_ms"},
                                    {"type", "integer"},
                                    {"unit", "ms"},
                                    {"min", 1.0},
                                    {"max", 600000.0},
                                    {"required", true},
                                    {"doc", "how long each flap holds the link down"}}));
  EXPECT_EQ(doc["params"][2]["default"], 1);

  const json loss = toJson(*findKindSpec("packet_loss"));
  EXPECT_EQ(loss["phases"], (json{{"shape", "one_window"}}));
  EXPECT_EQ(loss["params"][0]["min_exclusive"], true);
  EXPECT_EQ(loss["params"][1]["choices"], (json{"both", "ingress", "egress"}));
  EXPECT_EQ(findKindSpec("no_such_kind"), nullptr);
}

// Each declaration is usable as declared: phase parameters exist and are integers, every default
// passes its own check, and the kinds are sorted and unique.
TEST(KindSpecTest, EveryDeclarationIsConsistent) {
  const auto& specs = kindSpecs();
  ASSERT_EQ(specs.size(), 21u);
  for (size_t i = 1; i < specs.size(); ++i) EXPECT_LT(specs[i - 1]->kind, specs[i]->kind);
  for (const KindSpec* declared : specs) {
    const KindSpec& spec = *declared;
    SCOPED_TRACE(spec.kind);
    EXPECT_FALSE(spec.summary.empty());
    EXPECT_FALSE(spec.resource.empty());
    if (spec.phases.shape == PhaseShape::kRepeated) {
      for (const std::string& name :
           {spec.phases.on_param, spec.phases.off_param, spec.phases.count_param}) {
        const ParamSpec* param = spec.param(name);
        ASSERT_NE(param, nullptr) << name;
        EXPECT_EQ(param->type, ParamType::kInteger) << name;
      }
    }
    for (const ParamSpec& param : spec.params) {
      EXPECT_FALSE(param.doc.empty()) << param.name;
      if (!param.default_value.is_null()) {
        EXPECT_TRUE(checkParamValue(param, param.default_value).isOk()) << param.name;
        EXPECT_FALSE(param.required) << param.name << ": required with a default";
      }
    }
  }
}

// The injectors serve the same declarations the planner and the API read.
TEST(KindSpecTest, InjectorsServeTheirDeclaration) {
  LinkFlap flap(nullptr);
  Netem netem(nullptr, false, "no qdisc adapter");
  PacketLoss loss(LossBackend::kNftables, nullptr, nullptr, "test");
  Incast incast(nullptr, nullptr, "");
  HotSpot hot_spot(nullptr, nullptr, nullptr, "");
  PfcConfig pfc_config(nullptr, nullptr);
  PfcWatchdog pfc_watchdog(nullptr);
  VerbsShimFault cqe_error(VerbsFaultKind::kCqeError, nullptr, nullptr);
  VerbsShimFault post_fail(VerbsFaultKind::kPostFail, nullptr, nullptr);
  VerbsShimFault reg_mr_fail(VerbsFaultKind::kRegMrFail, nullptr, nullptr);
  for (const Injector* injector :
       std::vector<const Injector*>{&flap, &netem, &loss, &incast, &hot_spot, &pfc_config,
                                    &pfc_watchdog, &cqe_error, &post_fail, &reg_mr_fail}) {
    const KindSpec* declared = findKindSpec(injector->info().kind);
    ASSERT_NE(declared, nullptr) << injector->info().kind;
    EXPECT_EQ(&injector->spec(), declared);
    EXPECT_EQ(injector->info().description, declared->summary);
  }
  // The schema runs first in every validate().
  EXPECT_EQ(flap.validate({{"down_ms", 5}, {"x", 1}}).message(),
            "x: unknown parameter (expected down_ms, up_ms, count)");
  EXPECT_EQ(loss.validate({{"percent", 0}}).message(), "percent: must be a number in (0, 100]");
  EXPECT_EQ(netem.validate({{"limit_packets", 0}}).message(),
            "limit_packets: must be an integer in 1..2147483647");
  EXPECT_EQ(reg_mr_fail.validate({{"errno", "EPERM"}}).message(),
            "errno: must be one of ENOMEM, EAGAIN, EINVAL, EFAULT");
}

fs::path docsPath() {
  const char* source = std::getenv("FC_SOURCE_DIR");
  return fs::path(source != nullptr && *source != '\0' ? source : ".") / "docs" / "faults.md";
}

// docs/faults.md holds, for each kind, its parameter table between
// <!-- params:KIND (generated from the kind's declaration) --> and <!-- /params:KIND -->.
// FC_UPDATE_DOCS=1 rewrites them from the declarations.
TEST(KindSpecDocsTest, FaultsMdTablesMatchTheDeclarations) {
  std::ifstream in(docsPath());
  ASSERT_TRUE(in.good()) << docsPath() << " not found; set FC_SOURCE_DIR";
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string doc = buffer.str();
  const bool update = std::getenv("FC_UPDATE_DOCS") != nullptr;
  for (const KindSpec* declared : kindSpecs()) {
    const KindSpec& spec = *declared;
    const std::string open =
        "<!-- params:" + spec.kind + " (generated from the kind's declaration) -->\n";
    const std::string close = "<!-- /params:" + spec.kind + " -->";
    const size_t begin = doc.find(open);
    ASSERT_NE(begin, std::string::npos) << "docs/faults.md has no " << open;
    const size_t body = begin + open.size();
    const size_t end = doc.find(close, body);
    ASSERT_NE(end, std::string::npos) << "docs/faults.md has no " << close;
    const std::string expected = markdownParamTable(spec);
    if (update) {
      doc.replace(body, end - body, expected);
    } else {
      EXPECT_EQ(doc.substr(body, end - body), expected)
          << spec.kind << "'s table in docs/faults.md is out of date; regenerate it with "
          << "FC_UPDATE_DOCS=1 build/tests/injectors/kind_spec_test";
    }
  }
  if (update) std::ofstream(docsPath()) << doc;
}

}  // namespace
}  // namespace fabric_chaos::injectors
