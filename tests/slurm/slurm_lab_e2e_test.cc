// `fabric-chaos lab up --with-slurm` and `lab down`, the real binary against Debian's Slurm 22.05
// and munge. What the lab says is checked by independent observers: Slurm's own clients (sinfo,
// scontrol, srun, its job completion log) run from the controller namespace, what a task sees of
// its own network namespace, iproute2, pgrep and /proc, and the fabric file as a file. A second
// `up` changes nothing; `down` leaves no daemon of the cluster, no controller namespace and no
// directory. Its own prefix, name and subnet (fcs, slurm-lab, 10.203.0) keep it apart from the
// other tiers' labs.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr char kPrefix[] = "fcs";
constexpr char kName[] = "slurm-lab";
constexpr char kSubnet[] = "10.203.0";
constexpr char kController[] = "fcs-slurmctl";

// "" when the machine has what the tier needs; else what is missing and the package that has it.
std::string missingSlurmTools() {
  const char* tools[][2] = {{"slurmctld", "slurmctld"}, {"slurmd", "slurmd"},
                            {"munged", "munge"},        {"sinfo", "slurm-client"},
                            {"srun", "slurm-client"},   {"scontrol", "slurm-client"},
                            {"nsenter", "util-linux"},  {"pgrep", "procps"}};
  for (const auto& [tool, package] : tools) {
    if (runShell(std::string("command -v ") + tool + " >/dev/null 2>&1").exit_code != 0) {
      return std::string(tool) + " is not installed (Debian package " + package +
             "; deploy/install-deps.sh installs it)";
    }
  }
  return "";
}

std::string firstLineWith(const std::string& text, const std::string& needle) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

class SlurmLabCli : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    if (const std::string missing = missingSlurmTools(); !missing.empty()) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << missing;
      GTEST_SKIP() << missing;
    }
    const char* binary = std::getenv("FC_BINARY");
    ASSERT_NE(binary, nullptr) << "FC_BINARY is not set (ctest sets it)";
    binary_ = binary;
    dir_ = makeTempDir();
    ASSERT_FALSE(dir_.empty());
    state_dir_ = dir_ + "/state";
    cluster_dir_ = state_dir_ + "/slurm/" + kName;
    conf_ = cluster_dir_ + "/slurm.conf";
    up_ = lab("up --with-slurm --hosts 2");
  }

  // Always, whatever a test asserted: nothing of the lab may outlive it.
  void TearDown() override {
    if (!binary_.empty()) lab("down");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `fabric-chaos lab ACTION ...` for this test's lab; stdout and stderr.
  CommandOutput lab(const std::string& action_and_flags) {
    return runShell(binary_ + " lab " + action_and_flags + " --prefix " + kPrefix + " --name " +
                    kName + " --subnet " + kSubnet + " --state-dir " + state_dir_ + " 2>&1");
  }

  // A Slurm client where it reaches slurmctld, with the cluster's configuration.
  CommandOutput slurmClient(const std::string& command, const std::string& env = "") {
    return runShell("SLURM_CONF=" + conf_ + " " + env + " timeout 60 nsenter --net=/run/netns/" +
                    kController + " " + command + " 2>&1");
  }

  // Live (not zombie) Slurm and munge daemons whose environment names this cluster's conf or
  // whose command line names its directory.
  std::string clusterDaemons() {
    return runShell(
               "for p in $(pgrep -x 'slurmctld|slurmd|slurmstepd|slurmscriptd|munged'); do "
               "[ \"$(awk '{print $3}' /proc/$p/stat 2>/dev/null)\" = Z ] && continue; "
               "{ tr '\\0' '\\n' </proc/$p/environ | grep -qxF 'SLURM_CONF=" +
               conf_ + "' || tr '\\0' ' ' </proc/$p/cmdline | grep -qF '" + cluster_dir_ +
               "'; } 2>/dev/null && echo \"$p $(cat /proc/$p/comm)\"; done")
        .out;
  }

  std::string binary_;
  std::string dir_;
  std::string state_dir_;
  std::string cluster_dir_;
  std::string conf_;
  CommandOutput up_;
};

TEST_F(SlurmLabCli, UpMakesAClusterWhoseTasksRunInTheHostNamespaces) {
  ASSERT_EQ(up_.exit_code, 0) << up_.out;
  std::cout << up_.out;

  // Slurm's own view: both nodes idle in partition lab, each at its host's lab address.
  const CommandOutput sinfo = slurmClient("sinfo -h -N -o '%N %P %T'");
  EXPECT_EQ(sinfo.out, "h0 lab* idle\nh1 lab* idle\n") << sinfo.out;
  for (int i = 0; i < 2; ++i) {
    const CommandOutput node = slurmClient("scontrol show node h" + std::to_string(i));
    EXPECT_NE(node.out.find("NodeAddr=" + std::string(kSubnet) + "." + std::to_string(i + 1) + " "),
              std::string::npos)
        << node.out;
  }

  // One task per node, each in its host's namespace: the eth0 it sees has that host's address,
  // and its network namespace is the one iproute2 named fcs-h<i>.
  const std::string hostfile = dir_ + "/hosts";
  std::ofstream(hostfile) << "h0\nh1\n";
  const CommandOutput tasks = slurmClient(
      "srun --label --distribution=arbitrary -n2 sh -c "
      "'ip -br -4 addr show eth0; echo ns $(stat -L -c %i /proc/self/ns/net)'",
      "SLURM_HOSTFILE=" + hostfile);
  ASSERT_EQ(tasks.exit_code, 0) << tasks.out;
  for (int i = 0; i < 2; ++i) {
    const std::string label = std::to_string(i) + ": ";
    const std::string address = std::string(kSubnet) + "." + std::to_string(i + 1) + "/24";
    EXPECT_NE(firstLineWith(tasks.out, label + "eth0").find(address), std::string::npos)
        << tasks.out;
    const std::string inode =
        runShell("stat -L -c %i /run/netns/" + std::string(kPrefix) + "-h" + std::to_string(i)).out;
    EXPECT_EQ(firstLineWith(tasks.out, label + "ns "),
              label + "ns " + inode.substr(0, inode.find('\n')))
        << tasks.out;
  }
  // Slurm recorded the job as completed on both nodes (its completion log is written as the job
  // ends, a moment after srun returns).
  std::string record;
  for (int i = 0; i < 50 && record.find("JobState=COMPLETED") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    record = readFile(cluster_dir_ + "/log/jobcomp.txt");
  }
  EXPECT_NE(record.find("JobState=COMPLETED"), std::string::npos) << record;
  EXPECT_NE(record.find("NodeList=h[0-1]"), std::string::npos) << record;

  // The fabric file names the cluster.
  const json fabric = json::parse(readFile(state_dir_ + "/fabrics/" + kName + ".json"), nullptr,
                                  /*allow_exceptions=*/false);
  ASSERT_TRUE(fabric.is_object()) << "no fabric file";
  EXPECT_EQ(fabric["slurm"], json({{"conf", conf_},
                                   {"submit_netns", kController},
                                   {"partition", "lab"},
                                   {"nodes", {{"h0", "h0"}, {"h1", "h1"}}}}))
      << fabric.dump(2);
  std::cout << "fabric.slurm: " << fabric["slurm"].dump() << "\n";

  // A second up changes nothing: the same daemons still run.
  const std::string daemons = clusterDaemons();
  EXPECT_NE(daemons.find(" slurmctld"), std::string::npos) << daemons;
  const CommandOutput again = lab("up --with-slurm --hosts 2");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("already up"), std::string::npos) << again.out;
  EXPECT_EQ(clusterDaemons(), daemons);
  const CommandOutput status = lab("status");
  EXPECT_EQ(status.exit_code, 0) << status.out;
  EXPECT_NE(status.out.find("slurm: up"), std::string::npos) << status.out;
}

TEST_F(SlurmLabCli, DownLeavesNoDaemonNamespaceOrFileOfTheCluster) {
  ASSERT_EQ(up_.exit_code, 0) << up_.out;
  const std::string before = clusterDaemons();
  for (const char* daemon : {" munged", " slurmctld", " slurmd"}) {
    EXPECT_NE(before.find(daemon), std::string::npos) << daemon << " not running:\n" << before;
  }
  const CommandOutput down = lab("down");
  EXPECT_EQ(down.exit_code, 0) << down.out;
  std::cout << down.out;
  EXPECT_EQ(clusterDaemons(), "");
  const std::string namespaces = runShell("ip netns list").out;
  EXPECT_EQ(namespaces.find(std::string(kPrefix) + "-"), std::string::npos) << namespaces;
  EXPECT_FALSE(std::filesystem::exists(cluster_dir_));
  EXPECT_FALSE(std::filesystem::exists(state_dir_ + "/fabrics/" + kName + ".json"));
  const CommandOutput status = lab("status");
  EXPECT_NE(status.out.find("slurm: not running"), std::string::npos) << status.out;
  // Down again: nothing to do, and fine.
  EXPECT_EQ(lab("down").exit_code, 0);
}

TEST(SlurmLabCliRefusals, WithSlurmOnALeafSpineIsOneSentence) {
  const char* binary = std::getenv("FC_BINARY");
  ASSERT_NE(binary, nullptr) << "FC_BINARY is not set (ctest sets it)";
  const CommandOutput out = runShell(std::string(binary) +
                                     " lab up --with-slurm --topology leaf-spine --prefix fcs "
                                     "--state-dir /nonexistent 2>&1");
  EXPECT_EQ(out.exit_code, 2) << out.out;
  EXPECT_EQ(out.out,
            "fabric-chaos lab: --with-slurm needs the star topology, where the Slurm controller "
            "joins the hosts' bridge\n");
}

}  // namespace
}  // namespace fabric_chaos::testing
