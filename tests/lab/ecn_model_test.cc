// ECN marking on the lab switch's ports (lab/ecn_model.h): --ecn read and checked with the flag
// named, the marking probability at each backlog (the BPF marker's own fixed-point formula), the
// marker's per-port configuration, the fabric description that records it, and the progress text.

#include "lab/ecn_model.h"

#include <gtest/gtest.h>

#include "lab/netns_lab.h"

namespace fabric_chaos::lab {
namespace {

using core::StatusCode;

scenarios::EgressModel egress(int64_t buffer, std::optional<scenarios::EcnMarking> ecn) {
  return scenarios::EgressModel{100'000'000, buffer, {26}, ecn};
}

TEST(EcnModelTest, ParsesKminKmaxPmaxWithTcSizes) {
  struct Case {
    const char* text;
    int64_t kmin, kmax;
    double pmax;
  };
  for (const Case& c :
       {Case{"20k,80k,0.2", 20480, 81920, 0.2}, Case{"30k,120k,1", 30720, 122880, 1.0},
        Case{"3000,1m,0.05", 3000, 1 << 20, 0.05}, Case{"64KB,128kb,1e-2", 65536, 131072, 0.01}}) {
    auto marking = parseEcnMarking(c.text);
    ASSERT_TRUE(marking.isOk()) << c.text << ": " << marking.status().message();
    EXPECT_EQ(marking->kmin_bytes, c.kmin) << c.text;
    EXPECT_EQ(marking->kmax_bytes, c.kmax) << c.text;
    EXPECT_DOUBLE_EQ(marking->pmax, c.pmax) << c.text;
  }
  for (const char* bad : {"", "20k", "20k,80k", "20k,80k,0.2,1", "20k,,0.2", "big,80k,0.2",
                          "20k,80k,", "20k,80k,high", "20k,80k,0.2x", "20k,80k, 0.2", "20k,80k,nan",
                          "20k,80k,inf", "-1,80k,0.2"}) {
    auto marking = parseEcnMarking(bad);
    EXPECT_EQ(marking.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(marking.status().message().rfind("--ecn \"", 0), 0u) << bad;
  }
}

TEST(EcnModelTest, RangesNameTheFlag) {
  const int64_t buffer = 256 * 1024;
  EXPECT_TRUE(checkEcnMarking(egress(buffer, std::nullopt)).isOk());
  EXPECT_TRUE(checkEcnMarking(egress(buffer, scenarios::EcnMarking{20480, 81920, 0.2})).isOk());
  EXPECT_TRUE(checkEcnMarking(egress(buffer, scenarios::EcnMarking{1, buffer, 1.0})).isOk());
  struct Case {
    scenarios::EcnMarking marking;
    const char* message_start;
  };
  for (const Case& c : {
           Case{{0, 81920, 0.2}, "--ecn needs 0 < KMIN < KMAX"},
           Case{{81920, 81920, 0.2}, "--ecn needs 0 < KMIN < KMAX"},
           Case{{90000, 81920, 0.2}, "--ecn needs 0 < KMIN < KMAX"},
           Case{{20480, buffer + 1, 0.2}, "--ecn KMAX (262145 bytes) must not exceed the buffer"},
           Case{{20480, 81920, 0}, "--ecn PMAX must be a probability in (0, 1]"},
           Case{{20480, 81920, 1.01}, "--ecn PMAX must be a probability in (0, 1]"},
           Case{{20480, 81920, -0.5}, "--ecn PMAX must be a probability in (0, 1]"},
       }) {
    const core::Status status = checkEcnMarking(egress(buffer, c.marking));
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.message_start;
    EXPECT_EQ(status.message().rfind(c.message_start, 0), 0u) << status.message();
  }
}

TEST(EcnModelTest, ProbabilityIsZeroThenLinearToPmaxThenOne) {
  const scenarios::EcnMarking marking{10000, 20000, 0.2};
  struct Case {
    int64_t backlog;
    double probability;
  };
  for (const Case& c :
       {Case{-5, 0}, Case{0, 0}, Case{9999, 0}, Case{10000, 0}, Case{12500, 0.05}, Case{15000, 0.1},
        Case{17500, 0.15}, Case{20000, 0.2}, Case{20001, 1}, Case{1 << 26, 1}}) {
    EXPECT_NEAR(markProbability(marking, c.backlog), c.probability, 1e-6) << c.backlog;
  }
  // Pmax 1: the line reaches 1 at Kmax and stays there.
  const scenarios::EcnMarking steep{30 * 1024, 120 * 1024, 1.0};
  EXPECT_DOUBLE_EQ(markProbability(steep, 30 * 1024), 0);
  EXPECT_NEAR(markProbability(steep, 75 * 1024), 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(markProbability(steep, 120 * 1024), 1);
  EXPECT_DOUBLE_EQ(markProbability(steep, 256 * 1024), 1);
  // Monotone over the whole range, never above 1.
  double last = 0;
  for (int64_t backlog = 0; backlog <= 200 * 1024; backlog += 97) {
    const double p = markProbability(steep, backlog);
    EXPECT_GE(p, last) << backlog;
    EXPECT_LE(p, 1.0) << backlog;
    last = p;
  }
}

TEST(EcnModelTest, FixedPointProbabilities) {
  EXPECT_EQ(fixedProbability(0), 0u);
  EXPECT_EQ(fixedProbability(-1), 0u);
  EXPECT_EQ(fixedProbability(1), sys::kEcnProbabilityOne);
  EXPECT_EQ(fixedProbability(2), sys::kEcnProbabilityOne);
  EXPECT_EQ(fixedProbability(0.5), sys::kEcnProbabilityOne / 2);
  EXPECT_EQ(fixedProbability(0.2), 3355443u);  // 0.2 * 2^24 = 3355443.2, rounded
  EXPECT_GT(fixedProbability(1e-7), 0u) << "a tiny Pmax still marks sometimes";
}

TEST(EcnModelTest, MarkerConfigOfAPort) {
  scenarios::EgressModel model{25'000'000'000, 512 * 1024, {26, 0, 63}, {}};
  model.ecn = scenarios::EcnMarking{64 * 1024, 256 * 1024, 0.25};
  const sys::EcnMarkerConfig config = ecnMarkerConfig(model);
  EXPECT_EQ(config.rate_bps, 25'000'000'000);
  EXPECT_EQ(config.buffer_bytes, 512 * 1024);
  EXPECT_EQ(config.kmin_bytes, 64 * 1024);
  EXPECT_EQ(config.kmax_bytes, 256 * 1024);
  EXPECT_EQ(config.pmax, sys::kEcnProbabilityOne / 4);
  EXPECT_EQ(config.lossless_dscp_mask, (uint64_t{1} << 26) | 1u | (uint64_t{1} << 63));
  model.lossless_dscp.clear();
  EXPECT_EQ(ecnMarkerConfig(model).lossless_dscp_mask, 0u) << "no lossless class: all best effort";
}

TEST(EcnModelTest, TheFabricRecordsTheMarking) {
  LabOptions options;
  options.egress = egress(256 * 1024, scenarios::EcnMarking{30 * 1024, 120 * 1024, 0.5});
  const scenarios::Fabric fabric = describeLab(options);
  const nlohmann::json ecn = scenarios::toJson(fabric)["switches"][0]["egress"]["ecn"];
  EXPECT_EQ(ecn, (nlohmann::json{{"kmin_bytes", 30720}, {"kmax_bytes", 122880}, {"pmax", 0.5}}))
      << ecn.dump();
  auto back = scenarios::fabricFromJson(scenarios::toJson(fabric));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->switches[0].egress, options.egress) << "the description reads back";

  options.egress->ecn.reset();
  EXPECT_FALSE(scenarios::toJson(describeLab(options))["switches"][0]["egress"].contains("ecn"))
      << "no marking: no ecn key, so older descriptions stay the same";
}

TEST(EcnModelTest, FabricJsonRejectsABadMarking) {
  LabOptions options;
  options.egress = egress(256 * 1024, scenarios::EcnMarking{30 * 1024, 120 * 1024, 0.5});
  nlohmann::json doc = scenarios::toJson(describeLab(options));
  for (const auto& [key, value, field] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"pmax", 0, "pmax"},
           {"pmax", 1.5, "pmax"},
           {"pmax", "0.5", "pmax"},
           {"kmin_bytes", -1, "kmin_bytes"},
           {"kmax_bytes", 1.5, "kmax_bytes"},
           {"bogus", 1, "bogus"}}) {
    nlohmann::json bad = doc;
    bad["switches"][0]["egress"]["ecn"][key] = value;
    auto parsed = scenarios::fabricFromJson(bad);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(parsed.status().message().find(field), std::string::npos)
        << parsed.status().message();
  }
}

TEST(EcnModelTest, DescribesTheMarking) {
  EXPECT_EQ(describeEcn({20 * 1024, 80 * 1024, 0.2}),
            "CE on ECT packets from 20 KiB to 80 KiB of class backlog, up to 20 %, all "
            "above");
  EXPECT_EQ(describeEcn({3000, 1 << 20, 1}),
            "CE on ECT packets from 3000 bytes to 1 MiB of class backlog, up to 100 %, all "
            "above");
}

}  // namespace
}  // namespace fabric_chaos::lab
