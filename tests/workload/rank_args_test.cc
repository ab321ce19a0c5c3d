#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload/rank.h"

namespace fabric_chaos::workload {
namespace {

using core::StatusCode;

// argv[0] is the subcommand name, as the app passes it.
core::Result<RankOptions> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "workload");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parseRankArgs(static_cast<int>(argv.size()), argv.data());
}

std::vector<std::string> base() {
  return {"--rank", "1", "--world", "3", "--listen", "10.0.0.2:7001", "--next", "10.0.0.3:7002"};
}

std::vector<std::string> with(std::vector<std::string> extra) {
  auto args = base();
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(RankArgsTest, MinimalRingUsesDefaults) {
  auto parsed = parse(base());
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const RankOptions defaults;
  EXPECT_EQ(parsed->rank, 1);
  EXPECT_EQ(parsed->world, 3);
  EXPECT_EQ(parsed->listen_addr, "10.0.0.2");
  EXPECT_EQ(parsed->listen_port, 7001);
  EXPECT_EQ(parsed->next_addr, "10.0.0.3");
  EXPECT_EQ(parsed->next_port, 7002);
  EXPECT_EQ(parsed->message_bytes, defaults.message_bytes);
  EXPECT_EQ(parsed->compute_ms, defaults.compute_ms);
  EXPECT_EQ(parsed->peer_timeout_ms, defaults.peer_timeout_ms);
  EXPECT_EQ(parsed->reconnect_budget_ms, defaults.reconnect_budget_ms);
  EXPECT_EQ(parsed->max_duration_ms, defaults.max_duration_ms);
  EXPECT_EQ(parsed->flush_interval_ms, defaults.flush_interval_ms);
  EXPECT_EQ(parsed->transport, "tcp");
}

TEST(RankArgsTest, EveryFlag) {
  auto parsed = parse(with({"--bytes", "256K", "--compute-ms", "0", "--peer-timeout-ms", "1500",
                            "--reconnect-budget-ms", "9000", "--duration-s", "30", "--flush-ms",
                            "250", "--transport", "tcp"}));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->message_bytes, 256 * 1024);
  EXPECT_EQ(parsed->compute_ms, 0);
  EXPECT_EQ(parsed->peer_timeout_ms, 1500);
  EXPECT_EQ(parsed->reconnect_budget_ms, 9000);
  EXPECT_EQ(parsed->max_duration_ms, 30000);
  EXPECT_EQ(parsed->flush_interval_ms, 250);
}

TEST(RankArgsTest, ArgvOfTheAgent) {
  // What agent/local_agent.cc passes after "fabric-chaos workload".
  auto parsed =
      parse({"--rank", "0", "--world", "2", "--listen", "10.1.0.1:29500", "--next",
             "10.1.0.2:29500", "--bytes", "1048576", "--compute-ms", "5", "--peer-timeout-ms",
             "10000", "--reconnect-budget-ms", "30000", "--duration-s", "600"});
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->message_bytes, 1 << 20);
}

struct Good {
  std::vector<std::string> args;
  int64_t bytes;
  std::string listen_addr;
  int listen_port;
};

class GoodArgsTest : public ::testing::TestWithParam<Good> {};

TEST_P(GoodArgsTest, Parses) {
  auto parsed = parse(GetParam().args);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->message_bytes, GetParam().bytes);
  EXPECT_EQ(parsed->listen_addr, GetParam().listen_addr);
  EXPECT_EQ(parsed->listen_port, GetParam().listen_port);
}

INSTANTIATE_TEST_SUITE_P(
    Table, GoodArgsTest,
    ::testing::Values(
        Good{with({"--bytes", "1M"}), 1 << 20, "10.0.0.2", 7001},
        Good{with({"--bytes", "4k"}), 4096, "10.0.0.2", 7001},
        Good{with({"--bytes", "1G"}), int64_t{1} << 30, "10.0.0.2", 7001},
        Good{with({"--bytes", "12"}), 12, "10.0.0.2", 7001},
        Good{with({"--bytes=64K"}), 65536, "10.0.0.2", 7001},
        Good{{"--rank=0", "--world=2", "--listen=[fd00::1]:5000", "--next=[fd00::2]:5000"},
             1 << 20,
             "fd00::1",
             5000},
        Good{{"--rank", "0", "--world", "2", "--listen", "::1:5000", "--next", "::1:5001"},
             1 << 20,
             "::1",
             5000},
        // World 1 needs no addresses: a smoke test of the reporting path.
        Good{{"--world", "1", "--rank", "0", "--bytes", "4"}, 4, "127.0.0.1", 0}));

struct Bad {
  std::vector<std::string> args;
  StatusCode code;
  std::string expect_in_message;
};

class BadArgsTest : public ::testing::TestWithParam<Bad> {};

TEST_P(BadArgsTest, IsRejectedNamingTheFlag) {
  auto parsed = parse(GetParam().args);
  ASSERT_FALSE(parsed.isOk());
  EXPECT_EQ(parsed.status().code(), GetParam().code) << parsed.status().toString();
  EXPECT_NE(parsed.status().message().find(GetParam().expect_in_message), std::string::npos)
      << parsed.status().message();
}

const auto kInvalid = StatusCode::kInvalidArgument;

INSTANTIATE_TEST_SUITE_P(
    Table, BadArgsTest,
    ::testing::Values(
        Bad{{}, kInvalid, "--rank is required"},
        Bad{{"--rank", "0"}, kInvalid, "--world is required"},
        Bad{{"--rank", "0", "--world", "2", "--next", "127.0.0.1:1"}, kInvalid, "--listen"},
        Bad{{"--rank", "0", "--world", "2", "--listen", "127.0.0.1:1"}, kInvalid, "--next"},
        Bad{with({"--frobnicate", "1"}), kInvalid, "unknown option --frobnicate"},
        Bad{with({"stray"}), kInvalid, "unexpected argument \"stray\""},
        Bad{with({"--bytes"}), kInvalid, "--bytes needs a value"},
        Bad{with({"--bytes", "lots"}), kInvalid, "--bytes"},
        Bad{with({"--bytes", "1T"}), kInvalid, "--bytes"},
        Bad{with({"--bytes", "2G"}), kInvalid, "--bytes"},
        Bad{with({"--bytes", "-4"}), kInvalid, "--bytes"},
        Bad{with({"--bytes", "8"}), kInvalid, "--bytes must be at least 4 * world = 12"},
        Bad{with({"--bytes", "1001"}), kInvalid, "--bytes must be a multiple of 4"},
        Bad{with({"--rank", "3"}), kInvalid, "--rank must be at least 0 and less than --world"},
        Bad{with({"--rank", "-1"}), kInvalid, "--rank"},
        Bad{with({"--rank", "1x"}), kInvalid, "--rank expects an integer"},
        Bad{with({"--world", "0"}), kInvalid, "--world"},
        Bad{with({"--listen", "10.0.0.2"}), kInvalid, "--listen expects ADDR:PORT"},
        Bad{with({"--listen", "10.0.0.2:0"}), kInvalid, "--listen port"},
        Bad{with({"--listen", "10.0.0.2:70000"}), kInvalid, "--listen port"},
        Bad{with({"--listen", "host.example:7000"}), kInvalid, "--listen expects a numeric"},
        Bad{with({"--next", "[fd00::1:7000"}), kInvalid, "--next expects [ADDR]:PORT"},
        Bad{with({"--next", "999.1.1.1:7000"}), kInvalid, "--next expects a numeric"},
        Bad{with({"--compute-ms", "-1"}), kInvalid, "--compute-ms"},
        Bad{with({"--peer-timeout-ms", "0"}), kInvalid, "--peer-timeout-ms"},
        Bad{with({"--reconnect-budget-ms", "0"}), kInvalid, "--reconnect-budget-ms"},
        Bad{with({"--duration-s", "0"}), kInvalid, "--duration-s"},
        Bad{with({"--flush-ms", "abc"}), kInvalid, "--flush-ms"},
        Bad{with({"--transport", "udp"}), kInvalid, "--transport must be tcp or verbs"}));

TEST(RankArgsTest, ValidateRankOptionsChecksOptionsBuiltInCode) {
  RankOptions o;
  EXPECT_TRUE(validateRankOptions(o).isOk());
  o.world = 2;
  o.next_port = 0;
  EXPECT_EQ(validateRankOptions(o).code(), kInvalid);
  o.next_port = 7000;
  EXPECT_TRUE(validateRankOptions(o).isOk());
  o.rank = 2;
  EXPECT_EQ(validateRankOptions(o).code(), kInvalid);
}

TEST(RankArgsTest, UsageNamesEveryFlag) {
  const std::string usage = rankUsage();
  for (const char* flag :
       {"--rank", "--world", "--listen", "--next", "--bytes", "--compute-ms", "--peer-timeout-ms",
        "--reconnect-budget-ms", "--duration-s", "--flush-ms", "--transport"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace fabric_chaos::workload
