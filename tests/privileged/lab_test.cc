// `fabric-chaos lab up|status|down` on the real kernel: hosts reach each other through the
// switch namespace, up is idempotent, down leaves nothing, and non-root gets one clear sentence.

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

class LabCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    dir_ = makeTempDir();
    binary_ = std::getenv("FC_BINARY");
  }
  void TearDown() override {
    if (!binary_.empty()) lab("down");
    EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  CommandOutput lab(const std::string& args) {
    return runShell(binary_ + " lab " + args + " --state-dir " + dir_ + " 2>&1");
  }
  std::string dir_;
  std::string binary_;
};

TEST_F(LabCommand, UpBuildsAReachableFabricAndDownRemovesEverything) {
  auto up = lab("up --hosts 3");
  ASSERT_EQ(up.exit_code, 0) << up.out;
  auto names = namespacesWithPrefix("fcl-");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"fcl-h0", "fcl-h1", "fcl-h2", "fcl-sw0"}));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/fabrics/netns-lab.json"));

  // h0 reaches h2 through the bridge: addresses exist only inside the lab's namespaces.
  auto ping = runShell("ip netns exec fcl-h0 ping -c 2 -W 2 -i 0.2 -q 10.200.0.3");
  EXPECT_EQ(ping.exit_code, 0) << ping.out;
  auto ports = runShell("ip -n fcl-sw0 -o link show master br0");
  EXPECT_NE(ports.out.find("p0"), std::string::npos);
  EXPECT_NE(ports.out.find("p2"), std::string::npos);

  auto again = lab("up --hosts 3");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("already up"), std::string::npos) << again.out;

  auto status = lab("status");
  EXPECT_EQ(status.exit_code, 0) << status.out;

  auto down = lab("down");
  EXPECT_EQ(down.exit_code, 0) << down.out;
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/fabrics/netns-lab.json"));
  // No veth end was ever created in the initial namespace.
  EXPECT_EQ(runShell("ip -o link show | grep -c -E ' (p[0-9]+|eth0)@'").out, "0\n");

  auto down_again = lab("down");
  EXPECT_EQ(down_again.exit_code, 0) << down_again.out;
}

TEST_F(LabCommand, APartialLabIsRebuilt) {
  ASSERT_EQ(lab("up --hosts 2").exit_code, 0);
  runShell("ip netns del fcl-h1");
  auto status = lab("status");
  EXPECT_NE(status.exit_code, 0);
  auto up = lab("up --hosts 2");
  ASSERT_EQ(up.exit_code, 0) << up.out;
  EXPECT_EQ(namespacesWithPrefix("fcl-").size(), 3u);
}

TEST_F(LabCommand, WithoutRootUpFailsWithOneClearSentence) {
  if (runShell("command -v setpriv").exit_code != 0) GTEST_SKIP() << "setpriv not installed";
  auto out = runShell("setpriv --reuid=65534 --regid=65534 --clear-groups " + binary_ +
                      " lab up --state-dir " + dir_ + " 2>&1");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.out.find("lab up needs root"), std::string::npos) << out.out;
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
}

}  // namespace
}  // namespace fabric_chaos::testing
