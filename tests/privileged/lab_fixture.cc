#include "tests/privileged/lab_fixture.h"

#include <filesystem>

namespace fabric_chaos::testing {

std::string missingIperf3() {
  if (runShell("command -v iperf3").exit_code == 0) return "";
  return "iperf3 is missing: apt-get install iperf3 (deploy/install-deps.sh)";
}

void LabFixture::SetUp() {
  FC_REQUIRE_ROOT();
  if (needs_iperf3_) FC_REQUIRE_IPERF3();
  ASSERT_TRUE(namespacesWithPrefix("fcl-").empty()) << "a lab is already up (fcl-*)";
  const char* binary = std::getenv("FC_BINARY");
  ASSERT_NE(binary, nullptr) << "FC_BINARY is not set";
  binary_ = binary;
  dir_ = makeTempDir();
  ASSERT_FALSE(dir_.empty());
}

void LabFixture::TearDown() {
  if (serve_) {
    EXPECT_EQ(serve_->stop(30000), 0) << serve_->output();
    serve_.reset();
  }
  if (!dir_.empty()) runShell("pkill -f '[i]perf3 .*--logfile " + dir_ + "'");
  if (lab_up_) {
    const CommandOutput down = lab("down");
    EXPECT_EQ(down.exit_code, 0) << down.out;
  }
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty()) << "lab down left namespaces";
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

CommandOutput LabFixture::lab(const std::string& args) {
  return runShell(binary_ + " lab " + args + " --state-dir " + dir_ + "/state 2>&1");
}

void LabFixture::labUp(const std::string& args) {
  if (lab_up_) {
    const CommandOutput down = lab("down");
    ASSERT_EQ(down.exit_code, 0) << down.out;
    lab_up_ = false;
  }
  const CommandOutput up = lab("up " + args);
  ASSERT_EQ(up.exit_code, 0) << up.out;
  lab_up_ = true;
}

void LabFixture::startServe() {
  serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{}, dir_);
  port_ = serve_->waitForPort(60000);
  ASSERT_GT(port_, 0) << "serve did not start:\n" << serve_->output();
}

void LabFixture::startIperf3Server(const std::string& netns, int port) {
  const std::string p = std::to_string(port);
  const CommandOutput started = runShell("ip netns exec " + netns + " iperf3 -s -D -1 -p " + p +
                                         " --logfile " + dir_ + "/iperf3-server-" + p + ".log");
  ASSERT_EQ(started.exit_code, 0) << started.out;
  ASSERT_TRUE(waitFor(
      [&] {
        return runShell("ip netns exec " + netns + " ss -ltn 'sport = :" + p + "'")
                   .out.find("LISTEN") != std::string::npos;
      },
      5000))
      << "iperf3 never listened on " << netns << ":" << p;
}

}  // namespace fabric_chaos::testing
