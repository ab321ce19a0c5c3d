// params JSON -> sys::NetemSpec (validation naming the parameter), the observe() vocabulary of a
// dumped netem, and the journalled prior qdisc. Pure functions, table-driven.
#include "injectors/netem/netem_spec.h"

#include <gtest/gtest.h>

#include <functional>

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

// A wrong shape is a 400; a well-typed value out of range, or one that needs another, a 422
// (docs/faults.md, "Bad parameters").
constexpr StatusCode kShape = StatusCode::kInvalidArgument;
constexpr StatusCode kValue = StatusCode::kUnprocessable;

struct SpecCase {
  const char* name;
  json params;
  std::string error;  // prefix of the message; "" = valid
  std::function<void(const sys::NetemSpec&)> check = nullptr;
  StatusCode code = kShape;
};

void runCases(const std::vector<SpecCase>& cases) {
  for (const SpecCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ": " + c.params.dump());
    auto spec = netemSpecFromParams(c.params);
    if (c.error.empty()) {
      ASSERT_TRUE(spec.isOk()) << spec.status().toString();
      if (c.check) c.check(*spec);
      EXPECT_TRUE(sys::validateNetemSpec(*spec).isOk());
    } else {
      ASSERT_FALSE(spec.isOk());
      EXPECT_EQ(spec.status().code(), c.code) << spec.status().message();
      EXPECT_EQ(spec.status().message().rfind(c.error, 0), 0u) << spec.status().message();
    }
  }
}

TEST(NetemSpecFromParams, Valid) {
  runCases({
      {"delay only",
       {{"delay_ms", 50}},
       "",
       [](const sys::NetemSpec& s) {
         EXPECT_EQ(s.delay_us, 50000);
         EXPECT_EQ(s.jitter_us, 0);
         EXPECT_EQ(s.limit_packets, 0u);
       }},
      {"fractional delay",
       {{"delay_ms", 0.25}},
       "",
       [](const sys::NetemSpec& s) { EXPECT_EQ(s.delay_us, 250); }},
      {"delay jitter correlation distribution",
       {{"delay_ms", 100},
        {"jitter_ms", 20},
        {"delay_correlation", 25},
        {"distribution", "normal"}},
       "",
       [](const sys::NetemSpec& s) {
         EXPECT_EQ(s.delay_us, 100000);
         EXPECT_EQ(s.jitter_us, 20000);
         EXPECT_DOUBLE_EQ(s.delay_correlation, 25);
         EXPECT_EQ(s.distribution, "normal");
       }},
      {"uniform needs no table",
       {{"delay_ms", 10}, {"distribution", "uniform"}},
       "",
       [](const sys::NetemSpec& s) { EXPECT_EQ(s.distribution, "uniform"); }},
      {"random loss with correlation",
       {{"loss_percent", 10}, {"loss_correlation", 30}},
       "",
       [](const sys::NetemSpec& s) {
         EXPECT_DOUBLE_EQ(s.loss_percent, 10);
         EXPECT_DOUBLE_EQ(s.loss_correlation, 30);
         EXPECT_FALSE(s.gilbert_elliott.has_value());
       }},
      {"Gilbert-Elliott defaults",
       {{"loss_model", {{"gilbert_elliott", {{"p", 5}, {"r", 50}}}}}},
       "",
       [](const sys::NetemSpec& s) {
         ASSERT_TRUE(s.gilbert_elliott.has_value());
         EXPECT_DOUBLE_EQ(s.gilbert_elliott->p, 5);
         EXPECT_DOUBLE_EQ(s.gilbert_elliott->r, 50);
         EXPECT_DOUBLE_EQ(s.gilbert_elliott->h, 0);
         EXPECT_DOUBLE_EQ(s.gilbert_elliott->k, 100);
       }},
      {"Gilbert-Elliott all four",
       {{"loss_model", {{"gilbert_elliott", {{"p", 1}, {"r", 20}, {"h", 10}, {"k", 99}}}}}},
       "",
       [](const sys::NetemSpec& s) {
         EXPECT_DOUBLE_EQ(s.gilbert_elliott->h, 10);
         EXPECT_DOUBLE_EQ(s.gilbert_elliott->k, 99);
       }},
      {"duplicate corrupt",
       {{"duplicate_percent", 1}, {"corrupt_percent", 0.1}, {"corrupt_correlation", 5}},
       "",
       [](const sys::NetemSpec& s) {
         EXPECT_DOUBLE_EQ(s.duplicate_percent, 1);
         EXPECT_DOUBLE_EQ(s.corrupt_percent, 0.1);
         EXPECT_DOUBLE_EQ(s.corrupt_correlation, 5);
       }},
      {"reorder with gap",
       {{"delay_ms", 10}, {"reorder_percent", 25}, {"reorder_correlation", 50}, {"reorder_gap", 5}},
       "",
       [](const sys::NetemSpec& s) {
         EXPECT_DOUBLE_EQ(s.reorder_percent, 25);
         EXPECT_EQ(s.reorder_gap, 5u);
       }},
      {"rate in kbit",
       {{"rate_kbit", 8000}},
       "",
       [](const sys::NetemSpec& s) { EXPECT_EQ(s.rate_bytes_per_sec, 1000000u); }},
      {"tiny rate rounds to a byte",
       {{"rate_kbit", 0.001}},
       "",
       [](const sys::NetemSpec& s) { EXPECT_EQ(s.rate_bytes_per_sec, 1u); }},
      {"limit",
       {{"delay_ms", 1}, {"limit_packets", 5000}},
       "",
       [](const sys::NetemSpec& s) { EXPECT_EQ(s.limit_packets, 5000u); }},
      {"everything combined",
       {{"delay_ms", 50},
        {"jitter_ms", 5},
        {"loss_percent", 1},
        {"duplicate_percent", 1},
        {"corrupt_percent", 1},
        {"reorder_percent", 1},
        {"rate_kbit", 100000}},
       ""},
      {"maximum delay", {{"delay_ms", 60000}}, ""},
  });
}

TEST(NetemSpecFromParams, ErrorsNameTheParameter) {
  runCases({
      {"not an object", json::array(), "params: must be an object"},
      {"empty", json::object(), "params: at least one impairment is required", nullptr, kValue},
      {"only zeros",
       {{"loss_percent", 0}, {"delay_ms", 0}},
       "params: at least one impairment is required",
       nullptr,
       kValue},
      {"limit alone", {{"limit_packets", 10}}, "params: at least one impairment", nullptr, kValue},
      {"unknown key", {{"delay", 50}}, "delay: unknown parameter"},
      {"delay too large",
       {{"delay_ms", 60001}},
       "delay_ms: must be a number in 0..60000",
       nullptr,
       kValue},
      {"negative delay",
       {{"delay_ms", -1}},
       "delay_ms: must be a number in 0..60000",
       nullptr,
       kValue},
      {"delay as string", {{"delay_ms", "50ms"}}, "delay_ms: must be a number"},
      {"jitter without delay",
       {{"jitter_ms", 5}},
       "jitter_ms: needs delay_ms > 0",
       nullptr,
       kValue},
      {"jitter beyond netem's s32 ns",
       {{"delay_ms", 5000}, {"jitter_ms", 3000}},
       "jitter_ms: must be a number in 0..2147",
       nullptr,
       kValue},
      {"delay correlation without jitter",
       {{"delay_ms", 10}, {"delay_correlation", 10}},
       "delay_correlation: needs jitter_ms > 0",
       nullptr,
       kValue},
      {"unknown distribution",
       {{"delay_ms", 10}, {"jitter_ms", 1}, {"distribution", "gauss"}},
       "distribution: must be one of uniform, normal, pareto, paretonormal",
       nullptr,
       kValue},
      {"distribution without jitter",
       {{"delay_ms", 10}, {"distribution", "pareto"}},
       "distribution: needs jitter_ms > 0",
       nullptr,
       kValue},
      {"loss above 100",
       {{"loss_percent", 100.5}},
       "loss_percent: must be a number in 0..100",
       nullptr,
       kValue},
      {"loss as bool", {{"loss_percent", true}}, "loss_percent: must be a number in 0..100"},
      {"loss correlation alone",
       {{"delay_ms", 1}, {"loss_correlation", 5}},
       "loss_correlation: needs loss_percent > 0",
       nullptr,
       kValue},
      {"two loss models",
       {{"loss_percent", 1}, {"loss_model", {{"gilbert_elliott", {{"p", 1}, {"r", 1}}}}}},
       "loss_model: cannot be combined with loss_percent",
       nullptr,
       kValue},
      {"loss model not GE",
       {{"loss_model", {{"gi", {{"p13", 1}}}}}},
       "loss_model: must be {\"gilbert_elliott\""},
      {"GE without r",
       {{"loss_model", {{"gilbert_elliott", {{"p", 1}}}}}},
       "loss_model.gilbert_elliott.r: required"},
      {"GE p zero",
       {{"loss_model", {{"gilbert_elliott", {{"p", 0}, {"r", 10}}}}}},
       "loss_model.gilbert_elliott.p: must be a number in (0, 100]",
       nullptr,
       kValue},
      {"GE h above 100",
       {{"loss_model", {{"gilbert_elliott", {{"p", 1}, {"r", 10}, {"h", 101}}}}}},
       "loss_model.gilbert_elliott.h: must be a number in 0..100",
       nullptr,
       kValue},
      {"GE unknown key",
       {{"loss_model", {{"gilbert_elliott", {{"p", 1}, {"r", 10}, {"1-h", 1}}}}}},
       "loss_model.gilbert_elliott.1-h: unknown parameter"},
      {"duplicate correlation alone",
       {{"delay_ms", 1}, {"duplicate_correlation", 5}},
       "duplicate_correlation: needs duplicate_percent > 0",
       nullptr,
       kValue},
      {"corrupt negative",
       {{"corrupt_percent", -0.1}},
       "corrupt_percent: must be a number",
       nullptr,
       kValue},
      {"reorder without delay",
       {{"reorder_percent", 25}},
       "reorder_percent: needs delay_ms > 0",
       nullptr,
       kValue},
      {"reorder gap without reorder",
       {{"delay_ms", 10}, {"reorder_gap", 3}},
       "reorder_gap: needs reorder_percent > 0",
       nullptr,
       kValue},
      {"reorder gap fractional",
       {{"delay_ms", 10}, {"reorder_percent", 5}, {"reorder_gap", 1.5}},
       "reorder_gap: must be an integer in 1..2147483647"},
      {"reorder gap zero",
       {{"delay_ms", 10}, {"reorder_percent", 5}, {"reorder_gap", 0}},
       "reorder_gap: must be an integer",
       nullptr,
       kValue},
      {"rate zero",
       {{"rate_kbit", 0}},
       "rate_kbit: must be a number in (0, 1e10]",
       nullptr,
       kValue},
      {"rate huge",
       {{"rate_kbit", 2e10}},
       "rate_kbit: must be a number in (0, 1e10]",
       nullptr,
       kValue},
      {"limit zero",
       {{"delay_ms", 1}, {"limit_packets", 0}},
       "limit_packets: must be an integer in 1..2147483647",
       nullptr,
       kValue},
  });
}

// --- observe() vocabulary ---

TEST(NetemOptionsJson, UsesTheParamsNamesAndUnits) {
  sys::NetemSpec spec;
  spec.delay_us = 50000;
  spec.jitter_us = 5000;
  spec.delay_correlation = 25;
  spec.distribution = "normal";  // never dumped by the kernel
  spec.loss_percent = 12.5;
  spec.loss_correlation = 30;
  spec.duplicate_percent = 1;
  spec.corrupt_percent = 0.5;
  spec.reorder_percent = 25;
  spec.reorder_gap = 5;
  spec.rate_bytes_per_sec = 1000000;
  spec.limit_packets = 2000;
  auto decoded = sys::decodeNetemOptions(sys::encodeNetemOptions(sys::netemAttributes(spec)));
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(netemOptionsJson(*decoded), (json{{"delay_ms", 50.0},
                                              {"jitter_ms", 5.0},
                                              {"delay_correlation", 25.0},
                                              {"loss_percent", 12.5},
                                              {"loss_correlation", 30.0},
                                              {"duplicate_percent", 1.0},
                                              {"corrupt_percent", 0.5},
                                              {"reorder_percent", 25.0},
                                              {"reorder_gap", 5},
                                              {"rate_kbit", 8000.0},
                                              {"limit_packets", 2000}}));
}

TEST(NetemOptionsJson, GilbertElliottInTextbookTerms) {
  sys::NetemSpec spec;
  spec.gilbert_elliott = sys::GilbertElliott{5, 50, 10, 99};
  json options = netemOptionsJson(sys::netemAttributes(spec));
  EXPECT_EQ(options["loss_model"],
            (json{{"gilbert_elliott", {{"p", 5.0}, {"r", 50.0}, {"h", 10.0}, {"k", 99.0}}}}));
  EXPECT_FALSE(options.contains("loss_percent"));
  EXPECT_EQ(options["limit_packets"], 1000);
}

// --- the journalled prior ---

TEST(NetemPrior, DefaultAndAbsent) {
  EXPECT_EQ(priorJson(std::nullopt), (json{{"default", true}, {"kind", ""}}));
  EXPECT_EQ(priorJson(sys::SavedQdisc{"noqueue", 0, {}, ""}),
            (json{{"default", true}, {"kind", "noqueue"}}));
  auto parsed = priorFromJson(json{{"default", true}, {"kind", "fq_codel"}});
  ASSERT_TRUE(parsed.isOk());
  EXPECT_FALSE(parsed->has_value());
}

TEST(NetemPrior, RoundTripsRawAttributes) {
  sys::SavedQdisc tbf{"tbf", 0x80010000U, {{2, {0x01, 0xab, 0x00, 0xff}}, {13, {}}}, ""};
  json prior = priorJson(tbf);
  EXPECT_EQ(
      prior,
      (json{{"default", false},
            {"kind", "tbf"},
            {"handle", "8001:0"},
            {"attributes", {{{"type", 2}, {"hex", "01ab00ff"}}, {{"type", 13}, {"hex", ""}}}}}));
  auto back = priorFromJson(prior);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, tbf);
}

TEST(NetemPrior, MalformedNamesTheField) {
  struct Case {
    json prior;
    std::string error;
  };
  const json good_attr = {{"type", 2}, {"hex", "00"}};
  for (const Case& c : std::vector<Case>{
           {json::array(), "prior: must be an object"},
           {{{"kind", "tbf"}}, "prior.default: must be true or false"},
           {{{"default", false}, {"handle", "1:0"}, {"attributes", json::array()}},
            "prior.kind: must be a qdisc kind"},
           {{{"default", false}, {"kind", "tbf"}, {"handle", "zz"}, {"attributes", json::array()}},
            "prior.handle: must be a handle"},
           {{{"default", false}, {"kind", "tbf"}, {"handle", "0:0"}, {"attributes", json::array()}},
            "prior.handle: must be a handle"},
           {{{"default", false}, {"kind", "tbf"}, {"handle", "1:"}}, "prior.attributes: must be"},
           {{{"default", false},
             {"kind", "tbf"},
             {"handle", "1:"},
             {"attributes", {{{"type", 2}, {"hex", "abc"}}}}},
            "prior.attributes: 'hex' must be"},
           {{{"default", false},
             {"kind", "tbf"},
             {"handle", "1:"},
             {"attributes", {{{"type", -1}, {"hex", "00"}}}}},
            "prior.attributes: each must be"},
       }) {
    auto parsed = priorFromJson(c.prior);
    ASSERT_FALSE(parsed.isOk()) << c.prior.dump();
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message().rfind(c.error, 0), 0u) << parsed.status().message();
  }
  auto ok = priorFromJson({{"default", false},
                           {"kind", "tbf"},
                           {"handle", "1:"},
                           {"attributes", json::array({good_attr})}});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ((*ok)->handle, 0x10000u);
}

}  // namespace
}  // namespace fabric_chaos::injectors
