#include "workload/report.h"

#include <gtest/gtest.h>

namespace fabric_chaos::workload {
namespace {

using core::StatusCode;
using nlohmann::json;

TEST(ReportTest, ReadyRoundTrip) {
  const std::string line = encodeReady(3, 123456789);
  EXPECT_EQ(line, R"({"type":"ready","rank":3,"t_ns":123456789})");
  auto decoded = decodeReportLine(line);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->type, ReportLine::Type::kReady);
  EXPECT_EQ(decoded->rank, 3);
  EXPECT_EQ(decoded->t_ns, 123456789);
}

TEST(ReportTest, SamplesRoundTrip) {
  std::vector<RawSample> samples = {{0, 1000, 250, 262144},
                                    {1, 2000, 300, 262144},
                                    {2, INT64_C(9000000000000), INT64_C(7000000000), 4}};
  const std::string line = encodeSamples(1, samples);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind(R"({"type":"samples","rank":1,"samples":[[0,1000,250,262144],)", 0), 0u)
      << line;
  auto decoded = decodeReportLine(line);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->type, ReportLine::Type::kSamples);
  EXPECT_EQ(decoded->rank, 1);
  ASSERT_EQ(decoded->samples.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(decoded->samples[i].iteration, samples[i].iteration);
    EXPECT_EQ(decoded->samples[i].start_ns, samples[i].start_ns);
    EXPECT_EQ(decoded->samples[i].duration_ns, samples[i].duration_ns);
    EXPECT_EQ(decoded->samples[i].bytes, samples[i].bytes);
  }
}

TEST(ReportTest, EmptySamplesRoundTrip) {
  auto decoded = decodeReportLine(encodeSamples(0, {}));
  ASSERT_TRUE(decoded.isOk());
  EXPECT_TRUE(decoded->samples.empty());
}

TEST(ReportTest, EventRoundTrip) {
  json detail = {{"reason", "connection_reset"}, {"iteration", 17}, {"epoch", 2}};
  const std::string line = encodeEvent(2, 555, kEventPeerLost, detail);
  auto decoded = decodeReportLine(line);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->type, ReportLine::Type::kEvent);
  EXPECT_EQ(decoded->rank, 2);
  EXPECT_EQ(decoded->t_ns, 555);
  EXPECT_EQ(decoded->kind, "peer_lost");
  EXPECT_EQ(decoded->detail, detail);
}

TEST(ReportTest, EventWithNullDetailEncodesAnEmptyObject) {
  auto decoded = decodeReportLine(encodeEvent(0, 1, kEventStall, json()));
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->detail, json::object());
}

TEST(ReportTest, EventWithInvalidUtf8StaysValid) {
  const std::string line = encodeEvent(0, 1, kEventRankError, {{"message", std::string("a\xff")}});
  EXPECT_TRUE(decodeReportLine(line).isOk()) << line;
}

TEST(ReportTest, DoneRoundTrip) {
  const std::string line = encodeDone(4, 99, 42);
  EXPECT_EQ(line, R"({"type":"done","rank":4,"t_ns":99,"iterations":42})");
  auto decoded = decodeReportLine(line);
  ASSERT_TRUE(decoded.isOk());
  EXPECT_EQ(decoded->type, ReportLine::Type::kDone);
  EXPECT_EQ(decoded->rank, 4);
  EXPECT_EQ(decoded->t_ns, 99);
  EXPECT_EQ(decoded->iterations, 42);
}

TEST(ReportTest, KeyOrderDoesNotMatter) {
  auto decoded = decodeReportLine(R"({"t_ns":5,"rank":0,"type":"ready"})");
  ASSERT_TRUE(decoded.isOk());
  EXPECT_EQ(decoded->t_ns, 5);
}

struct Malformed {
  const char* line;
  const char* expect_in_message;
};

class MalformedLineTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedLineTest, IsRejectedNamingTheProblem) {
  auto decoded = decodeReportLine(GetParam().line);
  ASSERT_FALSE(decoded.isOk()) << GetParam().line;
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find(GetParam().expect_in_message), std::string::npos)
      << decoded.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedLineTest,
    ::testing::Values(
        Malformed{"", "not valid JSON"}, Malformed{"hello", "not valid JSON"},
        Malformed{R"({"type":"ready","rank":0,"t_ns":1)", "not valid JSON"},
        Malformed{R"({"type":"ready","rank":0,"t_ns":1} trailing)", "not valid JSON"},
        Malformed{"[1,2,3]", "not a JSON object"}, Malformed{R"("ready")", "not a JSON object"},
        Malformed{R"({"rank":0,"t_ns":1})", "\"type\""},
        Malformed{R"({"type":7,"rank":0,"t_ns":1})", "\"type\""},
        Malformed{R"({"type":"hello","rank":0,"t_ns":1})", "unknown \"type\""},
        Malformed{R"({"type":"ready","t_ns":1})", "\"rank\""},
        Malformed{R"({"type":"ready","rank":"0","t_ns":1})", "\"rank\""},
        Malformed{R"({"type":"ready","rank":-1,"t_ns":1})", "\"rank\""},
        Malformed{R"({"type":"ready","rank":1.5,"t_ns":1})", "\"rank\""},
        Malformed{R"({"type":"ready","rank":0})", "\"t_ns\""},
        Malformed{R"({"type":"ready","rank":0,"t_ns":1.5})", "\"t_ns\""},
        Malformed{R"({"type":"ready","rank":0,"t_ns":18446744073709551615})", "\"t_ns\""},
        Malformed{R"({"type":"samples","rank":0})", "\"samples\""},
        Malformed{R"({"type":"samples","rank":0,"samples":{}})", "\"samples\""},
        Malformed{R"({"type":"samples","rank":0,"samples":[[1,2,3]]})", "samples[0]"},
        Malformed{R"({"type":"samples","rank":0,"samples":[[1,2,3,4],5]})", "samples[1]"},
        Malformed{R"({"type":"samples","rank":0,"samples":[[1,2,"3",4]]})", "samples[0][2]"},
        Malformed{R"({"type":"samples","rank":0,"samples":[[1,2,-3,4]]})", "negative"},
        Malformed{R"({"type":"event","rank":0,"t_ns":1,"detail":{}})", "\"kind\""},
        Malformed{R"({"type":"event","rank":0,"t_ns":1,"kind":""})", "\"kind\""},
        Malformed{R"({"type":"event","rank":0,"t_ns":1,"kind":"stall","detail":[]})", "\"detail\""},
        Malformed{R"({"type":"event","rank":0,"kind":"stall"})", "\"t_ns\""},
        Malformed{R"({"type":"done","rank":0,"t_ns":1})", "\"iterations\""},
        Malformed{R"({"type":"done","rank":0,"t_ns":1,"iterations":-2})", "\"iterations\""}));

}  // namespace
}  // namespace fabric_chaos::workload
