// `fabric-chaos lab up|status|down` on the real kernel: hosts reach each other through the
// switch namespace, up is idempotent, down leaves nothing, and non-root gets one clear sentence.

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

// Runs `binary args...` as nobody (uid and gid 65534, no supplementary groups), stdout and stderr
// captured. No setpriv or su: the test drops root itself, so nothing can be missing. The binary is
// opened while still root and started with fexecve, so a build tree that nobody may not traverse
// (a clone in a 0700 directory) still works. exit_code 126 means the drop itself failed.
CommandOutput runAsNobody(const std::string& binary, const std::vector<std::string>& args) {
  CommandOutput result;
  const int exe = ::open(binary.c_str(), O_RDONLY | O_CLOEXEC);
  if (exe < 0) {
    result.out = "cannot open " + binary + ": " + std::strerror(errno);
    return result;
  }
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(exe);
    return result;
  }
  std::vector<std::string> argv_strings{binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    auto die = [](const char* what) {
      const std::string line = std::string("runAsNobody: ") + what + ": " + std::strerror(errno);
      [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
      ::_exit(126);
    };
    if (::setgroups(0, nullptr) != 0) die("setgroups");
    if (::setresgid(65534, 65534, 65534) != 0) die("setresgid");
    if (::setresuid(65534, 65534, 65534) != 0) die("setresuid");
    if (::geteuid() == 0 || ::setuid(0) == 0) die("root could be regained");
    ::fexecve(exe, argv.data(), ::environ);
    die("fexecve");
  }
  ::close(out[1]);
  ::close(exe);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) result.out.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return result;
}

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

// `--offloads on` keeps the kernel's segmentation offloads (seen with `ethtool -k`, not through
// the adapter), says so, and is written in the fabric; it refuses the per-frame ECN marker; and
// a plain `lab up` afterwards is another lab, rebuilt with them off.
TEST_F(LabCommand, OffloadsOnKeepsTheKernelsSegmentationOffloadsAndSaysSo) {
  if (runShell("command -v ethtool >/dev/null").exit_code != 0) {
    FAIL() << "ethtool is needed to observe offloads (deploy/install-deps.sh installs it)";
  }
  auto tso = [](const std::string& netns, const std::string& ifname) {
    const auto out = runShell("ip netns exec " + netns + " ethtool -k " + ifname +
                              " | sed -n 's/^tcp-segmentation-offload: //p'");
    return out.out;
  };
  auto bad = lab("up --hosts 2 --offloads maybe");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--offloads must be on or off"), std::string::npos) << bad.out;
  auto with_ecn = lab("up --hosts 2 --link-rate 1gbit --ecn 20k,80k,0.2 --offloads on");
  EXPECT_NE(with_ecn.exit_code, 0) << with_ecn.out;
  EXPECT_NE(with_ecn.out.find("--offloads on cannot go with --ecn"), std::string::npos)
      << with_ecn.out;
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());

  auto up = lab("up --hosts 2 --link-rate 1gbit --offloads on");
  ASSERT_EQ(up.exit_code, 0) << up.out;
  EXPECT_NE(up.out.find("segmentation offloads stay on"), std::string::npos) << up.out;
  EXPECT_EQ(tso("fcl-h0", "eth0"), "on\n");
  EXPECT_EQ(tso("fcl-sw0", "p1"), "on\n");
  const auto doc = nlohmann::json::parse(readFile(dir_ + "/fabrics/netns-lab.json"));
  EXPECT_EQ(doc.value("segmentation_offloads", false), true) << doc.dump();

  auto plain = lab("up --hosts 2 --link-rate 1gbit");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("already up"), std::string::npos) << plain.out;
  EXPECT_EQ(tso("fcl-h0", "eth0"), "off\n");
  EXPECT_EQ(tso("fcl-sw0", "p1"), "off\n");
  EXPECT_FALSE(nlohmann::json::parse(readFile(dir_ + "/fabrics/netns-lab.json"))
                   .contains("segmentation_offloads"));
}

TEST_F(LabCommand, WithoutRootUpFailsWithOneClearSentence) {
  auto out = runAsNobody(binary_, {"lab", "up", "--state-dir", dir_});
  EXPECT_EQ(out.exit_code, 1) << out.out;
  EXPECT_NE(out.out.find("lab up needs root"), std::string::npos) << out.out;
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
}

}  // namespace
}  // namespace fabric_chaos::testing
