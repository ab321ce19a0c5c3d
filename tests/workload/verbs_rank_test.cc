// `fabric-chaos workload --transport verbs` on a host without RDMA devices: the flag parses, and
// the rank reports a rank_error naming the missing device at once instead of hanging. The verbs
// ring proper runs in the VM tier (tests/vm/verbs_guest_test.cc).

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/clock.h"
#include "tests/workload/test_support.h"
#include "workload/rank.h"
#include "workload/report.h"

namespace fabric_chaos::workload {
namespace {

using testing::decodeAll;
using testing::LineSink;
using Type = ReportLine::Type;

std::vector<char*> argvOf(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args) out.push_back(a.data());
  return out;
}

TEST(VerbsRankTest, TransportVerbsIsAccepted) {
  std::vector<std::string> args = {"workload",          "--rank",  "1",
                                   "--world",           "3",       "--listen",
                                   "10.0.0.2:18515",    "--next",  "10.0.0.3:18515",
                                   "--transport=verbs", "--bytes", "256K"};
  auto argv = argvOf(args);
  auto parsed = parseRankArgs(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->transport, "verbs");
  EXPECT_EQ(parsed->message_bytes, 256 * 1024);

  RankOptions options = *parsed;
  EXPECT_TRUE(validateRankOptions(options).isOk());
  options.transport = "ib";
  auto bad = validateRankOptions(options);
  EXPECT_EQ(bad.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("--transport must be tcp or verbs"), std::string::npos);
  EXPECT_NE(rankUsage().find("verbs"), std::string::npos);
}

TEST(VerbsRankTest, NoRdmaDeviceIsARankErrorNotAHang) {
  std::error_code ec;
  if (std::filesystem::exists("/sys/class/infiniband", ec) &&
      !std::filesystem::is_empty("/sys/class/infiniband", ec)) {
    GTEST_SKIP() << "this host has RDMA devices (/sys/class/infiniband is not empty)";
  }
  RankOptions options;
  options.rank = 0;
  options.world = 2;
  options.listen_port = 18515;
  options.next_port = 18516;
  options.transport = "verbs";
  options.message_bytes = 4096;
  options.reconnect_budget_ms = 60000;  // must not be waited out
  LineSink sink;
  std::ostream out(&sink);
  std::atomic<bool> stop{false};
  const int64_t t0 = core::steadyNowNs();
  const int code = runRank(options, out, stop);
  const int64_t elapsed_ms = (core::steadyNowNs() - t0) / 1'000'000;
  EXPECT_EQ(code, 1);
  EXPECT_LT(elapsed_ms, 2000);
  auto lines = decodeAll(sink.lines());
  ASSERT_EQ(lines.size(), 2u) << sink.text();
  EXPECT_EQ(lines[0].type, Type::kEvent);
  EXPECT_EQ(lines[0].kind, kEventRankError);
  EXPECT_EQ(lines[0].detail["reason"], "listen_failed");
  const std::string message = lines[0].detail["message"];
  EXPECT_NE(message.find("no RDMA device: "), std::string::npos) << message;
  EXPECT_EQ(lines[1].type, Type::kDone);
  EXPECT_EQ(lines[1].iterations, 0);
}

TEST(VerbsRankTest, WorldOfOneNeedsNoDevice) {
  // Like TCP, a ring of one never touches the transport: it is a timed copy.
  RankOptions options;
  options.world = 1;
  options.transport = "verbs";
  options.message_bytes = 4096;
  options.compute_ms = 1;
  options.max_duration_ms = 100;
  LineSink sink;
  std::ostream out(&sink);
  std::atomic<bool> stop{false};
  EXPECT_EQ(runRank(options, out, stop), 0);
  auto lines = decodeAll(sink.lines());
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.front().type, Type::kReady);
  EXPECT_EQ(lines.back().type, Type::kDone);
  EXPECT_GT(lines.back().iterations, 0);
}

}  // namespace
}  // namespace fabric_chaos::workload
