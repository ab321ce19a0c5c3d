// The verbs shim kinds' declarations (injectors/model/verbs_fault_specs.h): what each declares,
// every kind's parameters translated to the shim's fault, and the refusals, each naming the
// parameter. Pure.

#include "injectors/model/verbs_fault_specs.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using nlohmann::json;
using verbs_shim::ShimFault;
using verbs_shim::ShimFaultKind;
using verbs_shim::ShimOpcode;
using verbs_shim::ShimQpType;

std::vector<std::string> paramNames(const KindSpec& spec) {
  std::vector<std::string> names;
  for (const ParamSpec& p : spec.params) names.push_back(p.name);
  return names;
}

TEST(VerbsFaultSpecs, EachKindActsOnAProcessAndHoldsItsShimExclusively) {
  const std::vector<std::string> filters_and_trigger = {
      "qp_num", "qp_type", "opcode", "probability", "every_nth", "after_ms", "count"};
  const std::vector<std::pair<VerbsFaultKind, std::vector<std::string>>> own = {
      {VerbsFaultKind::kCqeError, {"status"}},
      {VerbsFaultKind::kQpError, {}},
      {VerbsFaultKind::kPostFail, {"op", "errno"}},
      {VerbsFaultKind::kCompletionDelay, {"delay_ms"}},
  };
  for (const auto& [kind, knobs] : own) {
    const KindSpec& spec = verbsFaultSpec(kind);
    SCOPED_TRACE(spec.kind);
    std::vector<std::string> expected = knobs;
    expected.insert(expected.end(), filters_and_trigger.begin(), filters_and_trigger.end());
    EXPECT_EQ(paramNames(spec), expected);
  }
  // Registrations belong to no QP: no QP filters.
  EXPECT_EQ(paramNames(verbsFaultSpec(VerbsFaultKind::kRegMrFail)),
            (std::vector<std::string>{"errno", "probability", "every_nth", "after_ms", "count"}));

  for (VerbsFaultKind kind : kVerbsFaultKinds) {
    const KindSpec& spec = verbsFaultSpec(kind);
    SCOPED_TRACE(spec.kind);
    EXPECT_EQ(spec.kind.rfind("verbs_", 0), 0u);
    EXPECT_EQ(spec.target, TargetType::kProcess);
    EXPECT_EQ(spec.resource, "verbs_shim");
    EXPECT_EQ(spec.composition, Composition::kExclusive);
    EXPECT_EQ(spec.lifecycle, Lifecycle::kInstant);
    EXPECT_EQ(spec.phases.shape, PhaseShape::kOneWindow);
    EXPECT_EQ(verbsFaultKindOf(spec.kind), kind);
    // Listed with every other kind: capabilities and the docs tables see it.
    EXPECT_EQ(findKindSpec(spec.kind), &spec);
    for (const ParamSpec& p : spec.params) {
      EXPECT_FALSE(p.required) << p.name << ": every knob has a default or means 'any'";
    }
  }
  EXPECT_EQ(verbsFaultKindOf("link_flap"), std::nullopt);
}

TEST(VerbsFaultSpecs, StatusOffersEveryErrorStatusOfTheVerbsApi) {
  const ParamSpec* status = verbsFaultSpec(VerbsFaultKind::kCqeError).param("status");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->default_value, "retry_exc_err");
  // enum ibv_wc_status has 24 values; success is no fault.
  ASSERT_EQ(status->choices.size(), 23u);
  EXPECT_EQ(status->choices.front(), "loc_len_err");
  EXPECT_EQ(status->choices.back(), "tm_rndv_incomplete");
  for (const std::string& name : status->choices) {
    ASSERT_TRUE(verbs_shim::wcStatusOf(name).has_value()) << name;
    EXPECT_NE(*verbs_shim::wcStatusOf(name), 0) << name;
  }
  const ParamSpec* trigger_count = verbsFaultSpec(VerbsFaultKind::kCqeError).param("count");
  ASSERT_NE(trigger_count, nullptr);
  EXPECT_TRUE(trigger_count->default_value.is_null()) << "absent: no limit";
}

struct Translation {
  std::string kind;
  json params;
  ShimFault expected;
};

ShimFault fault(ShimFaultKind kind) {
  ShimFault f;
  f.kind = kind;
  return f;
}

TEST(ShimFaultOf, EveryKindTranslates) {
  std::vector<Translation> cases;
  cases.push_back({"verbs_cqe_error", json::object(), fault(ShimFaultKind::kCqeError)});
  {
    ShimFault f = fault(ShimFaultKind::kCqeError);
    f.status = 10;  // rem_access_err
    f.filter.qp_num = 77;
    f.filter.qp_type = ShimQpType::kRc;
    f.filter.opcode = ShimOpcode::kRdmaWrite;
    f.trigger = {0.5, 3, 2000, 4};
    cases.push_back({"verbs_cqe_error",
                     {{"status", "rem_access_err"},
                      {"qp_num", 77},
                      {"qp_type", "rc"},
                      {"opcode", "rdma_write"},
                      {"probability", 0.5},
                      {"every_nth", 3},
                      {"after_ms", 2000},
                      {"count", 4}},
                     f});
  }
  {
    ShimFault f = fault(ShimFaultKind::kQpError);
    f.filter.opcode = ShimOpcode::kRecv;
    f.trigger.count = 1;
    cases.push_back({"verbs_qp_error", {{"opcode", "recv"}, {"count", 1}}, f});
  }
  {
    ShimFault f = fault(ShimFaultKind::kPostSendFail);
    f.error = ENOMEM;
    cases.push_back({"verbs_post_fail", json::object(), f});
  }
  {
    ShimFault f = fault(ShimFaultKind::kPostRecvFail);
    f.error = EAGAIN;
    f.filter.opcode = ShimOpcode::kRecv;
    cases.push_back(
        {"verbs_post_fail", {{"op", "recv"}, {"errno", "EAGAIN"}, {"opcode", "recv"}}, f});
  }
  {
    ShimFault f = fault(ShimFaultKind::kCompletionDelay);
    f.delay_ms = 1000;
    cases.push_back({"verbs_completion_delay", json::object(), f});
    f.delay_ms = 250;
    f.filter.qp_type = ShimQpType::kUd;
    cases.push_back({"verbs_completion_delay", {{"delay_ms", 250}, {"qp_type", "ud"}}, f});
  }
  {
    ShimFault f = fault(ShimFaultKind::kRegMrFail);
    f.error = EFAULT;
    f.trigger.after_ms = 60000;
    cases.push_back({"verbs_reg_mr_fail", {{"errno", "EFAULT"}, {"after_ms", 60000}}, f});
  }
  for (const Translation& c : cases) {
    SCOPED_TRACE(c.kind + " " + c.params.dump());
    auto translated = shimFaultOf(c.kind, c.params);
    ASSERT_TRUE(translated.isOk()) << translated.status().toString();
    // The wire form says it all, and the shim reads it back as it is.
    EXPECT_EQ(verbs_shim::toJson(*translated), verbs_shim::toJson(c.expected));
    auto read_back = verbs_shim::shimFaultFromJson(verbs_shim::toJson(*translated));
    ASSERT_TRUE(read_back.isOk()) << read_back.status().toString();
    EXPECT_EQ(verbs_shim::toJson(*read_back), verbs_shim::toJson(c.expected));
  }
}

// A wrong shape is a 400; a well-typed value the kind cannot take (out of range, not a choice, a
// filter no event could match) a 422 (docs/faults.md, "Bad parameters").
TEST(ShimFaultOf, RefusalsNameTheParameter) {
  constexpr StatusCode kShape = StatusCode::kInvalidArgument;
  struct Refusal {
    std::string kind;
    json params;
    std::string message;
    StatusCode code = StatusCode::kUnprocessable;
  };
  const std::vector<Refusal> cases = {
      {"verbs_post_fail",
       {{"op", "send"}, {"opcode", "recv"}},
       "opcode: ibv_post_send never posts receives: with op send, use send, rdma_write, "
       "rdma_read or atomic (or op recv)"},
      {"verbs_post_fail",
       {{"opcode", "recv"}},
       "opcode: ibv_post_send never posts receives: with op send, use send, rdma_write, "
       "rdma_read or atomic (or op recv)"},
      {"verbs_post_fail",
       {{"op", "recv"}, {"opcode", "rdma_read"}},
       "opcode: ibv_post_recv posts receives only: with op recv, use recv"},
      {"verbs_cqe_error",
       {{"qp_type", "ud"}, {"opcode", "rdma_write"}},
       "opcode: ud QPs carry sends and receives only, never rdma_write"},
      {"verbs_qp_error",
       {{"qp_type", "uc"}, {"opcode", "atomic"}},
       "opcode: uc QPs have no atomic (RC only)"},
      {"verbs_reg_mr_fail",
       {{"qp_num", 3}},
       "qp_num: unknown parameter (expected errno, probability, every_nth, after_ms, count)",
       kShape},
      {"verbs_cqe_error", {{"status", "success"}}, "status: must be one of loc_len_err"},
      {"verbs_cqe_error", {{"errno", "ENOMEM"}}, "errno: unknown parameter", kShape},
      {"verbs_post_fail",
       {{"errno", "EPERM"}},
       "errno: must be one of ENOMEM, EAGAIN, EINVAL, EFAULT"},
      {"verbs_completion_delay", {{"delay_ms", 0}}, "delay_ms: must be an integer in 1..600000"},
      {"verbs_completion_delay",
       {{"delay_ms", 600001}},
       "delay_ms: must be an integer in 1..600000"},
      {"verbs_qp_error", {{"probability", 1.5}}, "probability: must be a number in 0..1"},
      {"verbs_qp_error", {{"every_nth", 0}}, "every_nth: must be an integer in >= 1"},
      {"verbs_qp_error", {{"count", 0}}, "count: must be an integer in >= 1"},
      {"verbs_qp_error", {{"after_ms", -1}}, "after_ms: must be an integer in 0..86400000"},
      {"verbs_qp_error", {{"qp_num", 16777216}}, "qp_num: must be an integer in 0..16777215"},
      {"verbs_qp_error", {{"qp_type", "xrc"}}, "qp_type: must be one of rc, uc, ud"},
      {"verbs_qp_error", json::array(), "params: must be an object", kShape},
      {"verbs_melt", json::object(), "kind: verbs_melt is not a verbs shim kind", kShape},
      {"link_flap", {{"down_ms", 5}}, "kind: link_flap is not a verbs shim kind", kShape},
  };
  for (const auto& [kind, params, message, code] : cases) {
    SCOPED_TRACE(kind + " " + params.dump());
    auto translated = shimFaultOf(kind, params);
    ASSERT_FALSE(translated.isOk());
    EXPECT_EQ(translated.status().code(), code) << translated.status().message();
    EXPECT_EQ(translated.status().message().substr(0, message.size()), message)
        << translated.status().message();
  }
}

// What checkParams alone allows is not always armable: the cross-parameter rules live in
// shimFaultOf, which validation runs too (injectors/verbs/verbs_shim_fault.h).
TEST(ShimFaultOf, CrossParameterRulesAreBeyondTheSchema) {
  const json params = {{"op", "send"}, {"opcode", "recv"}};
  EXPECT_TRUE(checkParams(verbsFaultSpec(VerbsFaultKind::kPostFail), params).isOk());
  EXPECT_FALSE(shimFaultOf("verbs_post_fail", params).isOk());
}

}  // namespace
}  // namespace fabric_chaos::injectors
