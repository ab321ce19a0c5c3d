// LocalAgent: report lines become run-relative samples and events, ranks are started with the
// right arguments, and a real child's stdout is read to the end (a shell script stands in for
// the workload binary, so no root or namespace is needed).

#include "agent/local_agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "core/clock.h"
#include "injectors/registry.h"
#include "injectors/sys/process.h"
#include "workload/report.h"

namespace fabric_chaos::agent {
namespace {

class RecordingListener : public WorkloadListener {
 public:
  void onSamples(const std::vector<core::Sample>& samples) override {
    std::lock_guard lock(mu);
    this->samples.insert(this->samples.end(), samples.begin(), samples.end());
  }
  void onEvent(int rank, double t_ms, const std::string& kind, const nlohmann::json&) override {
    std::lock_guard lock(mu);
    events.push_back({rank, t_ms, kind});
  }
  void onRankExit(int rank, int exit_code) override {
    std::lock_guard lock(mu);
    exits.push_back({rank, exit_code});
  }
  struct Event {
    int rank;
    double t_ms;
    std::string kind;
  };
  std::mutex mu;
  std::vector<core::Sample> samples;
  std::vector<Event> events;
  std::vector<std::pair<int, int>> exits;
};

TEST(DeliverReportLine, ConvertsSteadyNanosecondsToRunMilliseconds) {
  RecordingListener listener;
  const int64_t origin = 1'000'000'000;
  ASSERT_TRUE(deliverReportLine(
      workload::encodeSamples(2, {{7, origin + 2'500'000, 1'250'000, 4096}}), 2, origin, listener));
  ASSERT_EQ(listener.samples.size(), 1u);
  EXPECT_EQ(listener.samples[0].rank, 2);
  EXPECT_EQ(listener.samples[0].iteration, 7);
  EXPECT_DOUBLE_EQ(listener.samples[0].start_ms, 2.5);
  EXPECT_DOUBLE_EQ(listener.samples[0].duration_ms, 1.25);
  EXPECT_EQ(listener.samples[0].bytes, 4096);

  ASSERT_TRUE(deliverReportLine(workload::encodeReady(2, origin + 3'000'000), 2, origin, listener));
  ASSERT_TRUE(
      deliverReportLine(workload::encodeEvent(2, origin + 4'000'000, "reconnected", {{"epoch", 1}}),
                        2, origin, listener));
  ASSERT_EQ(listener.events.size(), 2u);
  EXPECT_EQ(listener.events[0].kind, "rank_ready");
  EXPECT_DOUBLE_EQ(listener.events[0].t_ms, 3.0);
  EXPECT_EQ(listener.events[1].kind, "reconnected");
}

TEST(DeliverReportLine, AMalformedLineBecomesABadReportEvent) {
  RecordingListener listener;
  EXPECT_FALSE(deliverReportLine("{not json", 0, 0, listener));
  ASSERT_EQ(listener.events.size(), 1u);
  EXPECT_EQ(listener.events[0].kind, "bad_report");
  EXPECT_TRUE(deliverReportLine("", 0, 0, listener));  // blank lines are ignored
}

TEST(LocalAgent, RankArgvCarriesTheWholeSpec) {
  RankSpec spec;
  spec.rank = 1;
  spec.world = 4;
  spec.listen_addr = "10.200.0.2";
  spec.port = 17001;
  spec.next_addr = "10.200.0.3";
  spec.next_port = 17001;
  spec.message_bytes = 262144;
  spec.compute_ms = 5;
  spec.max_duration_ms = 61500;
  auto argv = LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec);
  const std::string joined = [&] {
    std::string s;
    for (const auto& a : argv) s += a + " ";
    return s;
  }();
  EXPECT_EQ(argv[0], "/usr/bin/fabric-chaos");
  EXPECT_EQ(argv[1], "workload");
  EXPECT_NE(joined.find("--rank 1 --world 4 "), std::string::npos) << joined;
  EXPECT_NE(joined.find("--listen 10.200.0.2:17001 --next 10.200.0.3:17001 "), std::string::npos);
  EXPECT_NE(joined.find("--bytes 262144 "), std::string::npos);
  EXPECT_NE(joined.find("--duration-s 62 "), std::string::npos);  // rounded up
}

TEST(LocalAgent, ReadsEveryLineOfARealChildAndReportsItsExit) {
  char dir_template[] = "/tmp/fc-agent-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string script = dir + "/fake-workload";
  {
    std::ofstream out(script);
    // Ignores its arguments, reports like a rank, exits 3.
    out << "#!/bin/sh\n"
        << "echo '" << workload::encodeReady(0, core::steadyNowNs()) << "'\n"
        << "i=0; while [ $i -lt 50 ]; do\n"
        << "  echo '{\"type\":\"samples\",\"rank\":0,\"samples\":[['$i',1,1000000,64]]}'\n"
        << "  i=$((i+1)); done\n"
        << "exit 3\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto registry = injectors::Registry();
  auto launcher = sys::makeForkExecLauncher();
  LocalAgent agent(registry, *launcher, {script, ""});
  RecordingListener listener;
  RankSpec spec;
  auto handle = agent.startWorkload({spec}, core::steadyNowNs(), &listener);
  ASSERT_TRUE(handle.isOk()) << handle.status().toString();
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lock(listener.mu);
      if (!listener.exits.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*handle)->stop(1000);
  std::lock_guard lock(listener.mu);
  EXPECT_EQ(listener.samples.size(), 50u);
  EXPECT_EQ(listener.samples.back().iteration, 49);
  ASSERT_EQ(listener.exits.size(), 1u);
  EXPECT_EQ(listener.exits[0], (std::pair<int, int>{0, 3}));
  std::filesystem::remove_all(dir);
}

TEST(LocalAgent, AMissingBinaryIsAClearError) {
  auto registry = injectors::Registry();
  auto launcher = sys::makeForkExecLauncher();
  LocalAgent agent(registry, *launcher, {"/nonexistent/fabric-chaos", ""});
  RecordingListener listener;
  auto handle = agent.startWorkload({RankSpec{}}, core::steadyNowNs(), &listener);
  ASSERT_FALSE(handle.isOk());
  EXPECT_NE(handle.status().message().find("starting workload rank 0"), std::string::npos)
      << handle.status().message();
}

TEST(LocalAgent, UnknownKindsListTheValidOnes) {
  injectors::Registry registry;
  auto launcher = sys::makeForkExecLauncher();
  LocalAgent agent(registry, *launcher, {"/bin/true", ""});
  auto status = agent.validateFault("smoke", {});
  EXPECT_EQ(status.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("unknown fault kind \"smoke\""), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::agent
