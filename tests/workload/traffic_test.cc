// The traffic generator's pure half (workload/traffic.h): its command line and errors, the token
// bucket's arithmetic on a hand-driven clock, and the shape of its report lines.

#include "workload/traffic.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabric_chaos::workload {
namespace {

using core::StatusCode;
using nlohmann::json;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

TEST(TrafficArgsTest, SinkDefaults) {
  auto parsed = parseTrafficArgs({"sink", "--listen", "10.0.0.1:5000"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->role, TrafficRole::kSink);
  EXPECT_EQ(parsed->addr, "10.0.0.1");
  EXPECT_EQ(parsed->port, 5000);
  EXPECT_EQ(parsed->report_ms, 100);
  EXPECT_FALSE(parsed->duration_s.has_value());
}

TEST(TrafficArgsTest, SourceDefaults) {
  auto parsed = parseTrafficArgs({"source", "--connect=[fd00::2]:6000"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->role, TrafficRole::kSource);
  EXPECT_EQ(parsed->addr, "fd00::2");
  EXPECT_EQ(parsed->port, 6000);
  EXPECT_EQ(parsed->flows, 1);
  EXPECT_EQ(parsed->message_bytes, 128 * 1024);
  EXPECT_FALSE(parsed->rate_mbps.has_value());
  EXPECT_EQ(parsed->dscp, 0);
  EXPECT_EQ(parsed->congestion_control, "") << "the host's default";
  EXPECT_EQ(parsed->report_ms, 100);
}

TEST(TrafficArgsTest, SourceEveryFlag) {
  auto parsed =
      parseTrafficArgs({"source", "--connect", "10.200.0.2:7000", "--flows", "64",
                        "--message-bytes", "1024", "--rate-mbps", "400000", "--dscp", "63",
                        "--report-ms", "10", "--duration-s", "5", "--congestion-control", "cubic"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->flows, 64);
  EXPECT_EQ(parsed->message_bytes, 1024);
  EXPECT_EQ(parsed->rate_mbps, 400000);
  EXPECT_EQ(parsed->dscp, 63);
  EXPECT_EQ(parsed->report_ms, 10);
  EXPECT_EQ(parsed->duration_s, 5);
  EXPECT_EQ(parsed->congestion_control, "cubic");
}

TEST(TrafficArgsTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;  // a part of the message
  };
  const std::vector<Case> cases = {
      {{}, "give a role"},
      {{"drain", "--listen", "10.0.0.1:1"}, "unknown role \"drain\""},
      {{"sink"}, "--listen ADDR:PORT is required"},
      {{"source"}, "--connect ADDR:PORT is required"},
      {{"sink", "--listen", "localhost:5000"}, "--listen expects a numeric"},
      {{"sink", "--listen", "10.0.0.1"}, "--listen expects ADDR:PORT"},
      {{"sink", "--listen", "10.0.0.1:0"}, "--listen port must be between 1 and 65535"},
      {{"sink", "--listen", "[fd00::1"}, "--listen expects [ADDR]:PORT"},
      {{"source", "--connect", "h1:5000"}, "--connect expects a numeric"},
      {{"sink", "--listen", "10.0.0.1:5", "--flows", "2"}, "unknown option --flows"},
      {{"source", "--connect", "10.0.0.1:5", "--listen", "10.0.0.1:5"}, "unknown option --listen"},
      {{"source", "--connect", "10.0.0.1:5", "--flows", "0"}, "--flows must be between 1 and 64"},
      {{"source", "--connect", "10.0.0.1:5", "--flows", "65"}, "--flows must be between 1 and 64"},
      {{"source", "--connect", "10.0.0.1:5", "--flows", "x"}, "--flows expects an integer"},
      {{"source", "--connect", "10.0.0.1:5", "--message-bytes", "1023"},
       "--message-bytes must be between 1024 and 16777216"},
      {{"source", "--connect", "10.0.0.1:5", "--message-bytes", "16777217"},
       "--message-bytes must be between"},
      {{"source", "--connect", "10.0.0.1:5", "--rate-mbps", "0"},
       "--rate-mbps must be between 1 and 400000"},
      {{"source", "--connect", "10.0.0.1:5", "--dscp", "64"}, "--dscp must be between 0 and 63"},
      {{"source", "--connect", "10.0.0.1:5", "--report-ms", "9"},
       "--report-ms must be between 10 and 10000"},
      {{"sink", "--listen", "10.0.0.1:5", "--duration-s", "0"}, "--duration-s must be between"},
      {{"source", "--connect", "10.0.0.1:5", "--verbs"}, "unknown option --verbs"},
      {{"source", "--connect", "10.0.0.1:5", "--congestion-control", "Cubic"},
       "--congestion-control \"Cubic\": a congestion control name"},
      {{"source", "--connect", "10.0.0.1:5", "--congestion-control", "a_name_far_too_long"},
       "--congestion-control \"a_name_far_too_long\""},
      {{"sink", "--listen", "10.0.0.1:5", "--congestion-control", "cubic"},
       "unknown option --congestion-control"},
      {{"source", "--connect"}, "--connect needs a value"},
      {{"sink", "--listen", "10.0.0.1:5", "extra"}, "unexpected argument"},
  };
  for (const Case& c : cases) {
    auto parsed = parseTrafficArgs(c.args);
    ASSERT_FALSE(parsed.isOk()) << ::testing::PrintToString(c.args);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos)
        << ::testing::PrintToString(c.args) << " gave: " << parsed.status().message();
  }
}

TEST(TrafficArgsTest, TransportVerbsTakesADepthAndRefusesTcpOnlyFlags) {
  auto parsed = parseTrafficArgs({"source", "--connect", "10.201.0.2:7720", "--transport", "verbs",
                                  "--depth", "32", "--flows", "4", "--dscp", "26"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->transport, TrafficTransport::kVerbs);
  EXPECT_EQ(parsed->depth, 32);
  EXPECT_EQ(parsed->flows, 4);
  EXPECT_EQ(parsed->dscp, 26);

  parsed = parseTrafficArgs({"sink", "--listen", "10.201.0.2:7720", "--transport", "verbs"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->transport, TrafficTransport::kVerbs);

  parsed = parseTrafficArgs({"source", "--connect", "10.0.0.1:5"});
  ASSERT_TRUE(parsed.isOk());
  EXPECT_EQ(parsed->transport, TrafficTransport::kTcp) << "the default";
  EXPECT_EQ(parsed->depth, kDefaultVerbsDepth);

  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--transport", "udp"}, "--transport \"udp\": give tcp or verbs"},
      {{"--transport", "verbs", "--congestion-control", "cubic"},
       "--congestion-control is for TCP flows"},
      {{"--transport", "verbs", "--source-ports", "20001"}, "--source-ports is for TCP flows"},
      {{"--depth", "8"}, "--depth is for --transport verbs"},
      {{"--transport", "verbs", "--depth", "0"}, "--depth"},
      {{"--transport", "verbs", "--depth", "129"}, "--depth"},
  };
  for (const auto& [flags, expected] : bad) {
    std::vector<std::string> args{"source", "--connect", "10.0.0.1:7710"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto refused = parseTrafficArgs(args);
    ASSERT_FALSE(refused.isOk()) << ::testing::PrintToString(flags);
    EXPECT_NE(refused.status().message().find(expected), std::string::npos)
        << ::testing::PrintToString(flags) << " gave: " << refused.status().message();
  }
  EXPECT_EQ(transportName(TrafficTransport::kVerbs), "verbs");
  EXPECT_EQ(parseTransport("tcp"), TrafficTransport::kTcp);
  EXPECT_FALSE(parseTransport("TCP").has_value());
}

TEST(TrafficArgsTest, SourcePortsFixEachFlowsPortAndItsCount) {
  auto parsed = parseTrafficArgs(
      {"source", "--connect", "10.0.0.1:7710", "--source-ports", "20001,20007,20012"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->source_ports, (std::vector<int>{20001, 20007, 20012}));
  EXPECT_EQ(parsed->flows, 3);  // one flow per port when --flows is not given

  parsed = parseTrafficArgs(
      {"source", "--connect", "10.0.0.1:7710", "--flows", "2", "--source-ports", "20001,20007"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->flows, 2);

  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--flows", "3", "--source-ports", "20001,20007"}, "2 ports for --flows 3"},
      {{"--source-ports", "20001,20001"}, "listed twice"},
      {{"--source-ports", "20001,"}, "--source-ports port"},
      {{"--source-ports", "0"}, "--source-ports port"},
      {{"--source-ports", "70000"}, "--source-ports port"},
  };
  for (const auto& [flags, expected] : bad) {
    std::vector<std::string> args{"source", "--connect", "10.0.0.1:7710"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto result = parseTrafficArgs(args);
    ASSERT_FALSE(result.isOk()) << flags.back();
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(expected), std::string::npos)
        << result.status().message();
  }
  std::string many;
  for (int i = 0; i < kMaxTrafficFlows + 1; ++i) many += (i ? "," : "") + std::to_string(20000 + i);
  auto too_many =
      parseTrafficArgs({"source", "--connect", "10.0.0.1:7710", "--source-ports", many});
  ASSERT_FALSE(too_many.isOk());
  EXPECT_NE(too_many.status().message().find("at most 64 flows"), std::string::npos);
}

TEST(TrafficArgsTest, HelpAndUsage) {
  EXPECT_TRUE(trafficWantsHelp({"source", "--help"}));
  EXPECT_TRUE(trafficWantsHelp({"-h"}));
  EXPECT_FALSE(trafficWantsHelp({"sink", "--listen", "10.0.0.1:5"}));
  const std::string usage = trafficUsage();
  for (const char* flag :
       {"--listen", "--connect", "--flows", "--message-bytes", "--rate-mbps", "--dscp",
        "--congestion-control", "--report-ms", "--duration-s", "\"final\":true"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

TEST(TokenBucketTest, StartsFullAndRefillsAtTheRate) {
  // 1,000,000 bytes/s = 1 byte per microsecond.
  TokenBucket bucket(1'000'000, 10'000, 0);
  EXPECT_EQ(bucket.available(0), 10'000);
  bucket.consume(10'000);
  EXPECT_EQ(bucket.available(0), 0);
  EXPECT_EQ(bucket.available(1 * kMs), 1'000);
  EXPECT_EQ(bucket.available(5 * kMs), 5'000);
  // Never above the burst, however long it stays idle.
  EXPECT_EQ(bucket.available(10 * kS), 10'000);
  // Time going backwards (a caller's stale now) adds nothing.
  bucket.consume(10'000);
  EXPECT_EQ(bucket.available(9 * kS), 0);
}

TEST(TokenBucketTest, CarriesFractionsSoSmallRatesDoNotRoundAway) {
  // 3 bytes per second, asked every 100 ms: 0.3 bytes per call, 3 per second in total.
  TokenBucket bucket(3, 100, 0);
  bucket.consume(100);
  int64_t got = 0;
  for (int64_t t = 1; t <= 100; ++t) {
    const int64_t tokens = bucket.available(t * 100 * kMs);
    got += tokens;
    bucket.consume(tokens);
  }
  EXPECT_EQ(got, 30);  // 10 s at 3 bytes/s
}

TEST(TokenBucketTest, ReadyAtIsWhenTheBytesAreThere) {
  TokenBucket bucket(1'000'000, 10'000, 0);
  bucket.consume(10'000);
  EXPECT_EQ(bucket.available(0), 0);
  EXPECT_EQ(bucket.readyAt(1'000), 1 * kMs);
  EXPECT_EQ(bucket.available(bucket.readyAt(1'000)), 1'000);
  EXPECT_EQ(bucket.readyAt(1'000), 1 * kMs);  // already there: the last refill time
  // More than the burst can never be there: the wait is for a full bucket.
  bucket.consume(1'000);
  EXPECT_EQ(bucket.readyAt(50'000), 1 * kMs + 10 * kMs);
  // A rate that does not divide a second: 3 bytes/s, 1 byte after 333.33.. ms, rounded up.
  TokenBucket slow(3, 10, 0);
  slow.consume(10);
  EXPECT_EQ(slow.readyAt(1), 333'333'334);
  EXPECT_EQ(slow.available(333'333'334), 1);
}

TEST(TokenBucketTest, PacesAFakeSenderToTheRateOverManyIntervals) {
  // 30 Mbit/s with the source's bucket, a sender that wakes at readyAt(min write) and takes
  // everything there, as app/traffic_cmd.cc does, for 10 s of fake time.
  const int64_t rate_mbps = 30;
  TokenBucket bucket = sourceBucket(rate_mbps, 0);
  const int64_t min_write = minPacedWrite(rate_mbps, 128 * 1024);
  EXPECT_EQ(min_write, 3750);         // 1 ms at 30 Mbit/s
  EXPECT_EQ(bucket.burst(), 37'500);  // 10 ms
  int64_t now = 0;
  int64_t sent = 0;
  std::vector<int64_t> per_100ms(100, 0);
  while (now < 10 * kS) {
    const int64_t tokens = bucket.available(now);
    if (tokens >= min_write) {
      bucket.consume(tokens);
      sent += tokens;
      per_100ms[static_cast<size_t>(now / (100 * kMs))] += tokens;
    }
    now = std::max(now + 1, bucket.readyAt(min_write));
  }
  // The whole run: the rate plus the initial burst, to the byte.
  EXPECT_NEAR(static_cast<double>(sent), 30e6 / 8 * 10 + 37'500, 2 * 3750);
  // Every 100 ms report after the first sees the rate within one write.
  for (size_t i = 1; i < per_100ms.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(per_100ms[i]), 375'000, 3750) << "interval " << i;
  }
}

TEST(TokenBucketTest, SourceBucketAndMinimumWriteBounds) {
  EXPECT_EQ(sourceBucket(1, 0).burst(), 32 * 1024);  // 10 ms of 1 Mbit/s is only 1250 bytes
  EXPECT_EQ(sourceBucket(400'000, 0).burst(), 500'000'000);
  EXPECT_EQ(minPacedWrite(1, 128 * 1024), 1024);
  EXPECT_EQ(minPacedWrite(400'000, 128 * 1024), 128 * 1024);
  // The highest rate for a full run: no overflow in the refill.
  TokenBucket bucket = sourceBucket(400'000, 0);
  bucket.consume(bucket.available(0));
  EXPECT_EQ(bucket.available(kMs), 50'000'000);
  EXPECT_EQ(bucket.available(7 * 86'400 * kS), 500'000'000);
}

TEST(TrafficReportTest, MbpsArithmetic) {
  EXPECT_DOUBLE_EQ(mbps(12'500'000, kS), 100.0);
  EXPECT_DOUBLE_EQ(mbps(1'250'000, 100 * kMs), 100.0);
  EXPECT_DOUBLE_EQ(mbps(5, 0), 0.0);
}

TEST(TrafficReportTest, SinkReportsFlowsAndForgetsClosedOnesAfterOneReport) {
  SinkLedger ledger(1000 * kMs);
  const json first = json::parse(ledger.report(1000 * kMs, false));
  EXPECT_EQ(first, json::parse(R"({"role":"sink","t_ms":0,"bytes":0,"mbps":0.0,"flows":[]})"));

  const int a = ledger.opened("10.0.0.2:41234");
  const int b = ledger.opened("[fd00::3]:5555");
  ledger.received(a, 1'250'000);
  ledger.received(b, 625'000);
  ledger.closed(b);
  const std::string line = ledger.report(1100 * kMs, false);
  // Keys in the documented order.
  EXPECT_EQ(line.rfind(R"({"role":"sink","t_ms":100,"bytes":1875000,"mbps":150.0,"flows":[)", 0),
            0u)
      << line;
  const json second = json::parse(line);
  ASSERT_EQ(second["flows"].size(), 2u);
  EXPECT_EQ(second["flows"][0],
            json::parse(R"({"peer":"10.0.0.2:41234","bytes":1250000,"mbps":100.0,"open":true})"));
  EXPECT_EQ(second["flows"][1],
            json::parse(R"({"peer":"[fd00::3]:5555","bytes":625000,"mbps":50.0,"open":false})"));
  EXPECT_FALSE(second.contains("final"));

  ledger.received(a, 250'000);
  const json last = json::parse(ledger.report(1300 * kMs, true));
  EXPECT_EQ(last["t_ms"], 300);
  EXPECT_EQ(last["bytes"], 2'125'000);
  EXPECT_DOUBLE_EQ(last["mbps"].get<double>(), 10.0);  // 250 kB in 200 ms
  ASSERT_EQ(last["flows"].size(), 1u) << "the closed flow was reported once";
  EXPECT_EQ(last["flows"][0]["bytes"], 1'500'000);
  EXPECT_EQ(last["final"], true);
}

TEST(TrafficReportTest, SourceReportsConnectionsErrorsAndReconnects) {
  SourceLedger ledger(2, 0);
  const std::string first = ledger.report(0, false);
  EXPECT_EQ(first, R"({"role":"source","t_ms":0,"bytes":0,"mbps":0.0,"connected":0,"reconnects":0,)"
                   R"("flows":[{"flow":0,"bytes":0,"mbps":0.0,"connected":false},)"
                   R"({"flow":1,"bytes":0,"mbps":0.0,"connected":false}]})");

  ledger.connected(0);
  ledger.disconnected(1, "connect: Connection refused");
  ledger.retried();
  ledger.retried();
  ledger.sent(0, 3'750'000);
  EXPECT_EQ(ledger.connectedFlows(), 1);
  const json second = json::parse(ledger.report(1000 * kMs, false));
  EXPECT_EQ(second["bytes"], 3'750'000);
  EXPECT_DOUBLE_EQ(second["mbps"].get<double>(), 30.0);
  EXPECT_EQ(second["connected"], 1);
  EXPECT_EQ(second["reconnects"], 2);
  EXPECT_EQ(second["flows"][0],
            json::parse(R"({"flow":0,"bytes":3750000,"mbps":30.0,"connected":true})"));
  EXPECT_EQ(second["flows"][1], json::parse(R"({"flow":1,"bytes":0,"mbps":0.0,"connected":false,
                                                "error":"connect: Connection refused"})"));

  // Connected again: the error goes; the totals keep what the lost connection sent.
  ledger.connected(1);
  ledger.sent(1, 1000);
  const json last = json::parse(ledger.report(1100 * kMs, true));
  EXPECT_EQ(last["connected"], 2);
  EXPECT_EQ(last["bytes"], 3'751'000);
  EXPECT_DOUBLE_EQ(last["flows"][1]["mbps"].get<double>(), 0.08);
  EXPECT_FALSE(last["flows"][1].contains("error"));
  EXPECT_EQ(last["final"], true);
}

}  // namespace
}  // namespace fabric_chaos::workload
