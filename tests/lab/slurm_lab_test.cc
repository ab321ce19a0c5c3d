// SlurmLab's orchestration against fakes: a scripted iproute2 and sinfo, and a fake process table
// whose munged "makes" its socket. munged starts first, then the controller namespace and
// slurmctld, then one slurmd per host; up waits for sinfo to show every node idle. Nodes that
// never turn idle, or a daemon that exits, fail up saying what was seen, and everything started
// is stopped and removed. down ends only this cluster's daemons, and is idempotent.

#include "lab/slurm_lab.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>

#include "lab/netns_lab.h"
#include "tests/fakes/fake_daemon_control.h"

namespace fabric_chaos::lab {
namespace {

namespace fs = std::filesystem;
using core::StatusCode;

// Answers the commands SlurmLab runs: `ip netns add|del|list|pids`, other `ip` commands, and
// sinfo through nsenter (what `sinfo_answer` says for the n-th call). Records them in order.
class ScriptedTools : public sys::CommandRunner {
 public:
  std::function<std::string(int call)> sinfo_answer = [](int) {
    return std::string("h0 idle\nh1 idle\n");
  };

  core::Result<sys::CommandResult> run(const std::vector<std::string>& argv, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(sys::joinArgv(argv));
    sys::CommandResult r;
    if (argv.size() >= 3 && argv[0] == "ip" && argv[1] == "netns") {
      if (argv[2] == "list") {
        for (const auto& ns : namespaces_) r.out += ns + "\n";
      } else if (argv[2] == "add") {
        namespaces_.insert(argv[3]);
      } else if (argv[2] == "del") {
        namespaces_.erase(argv[3]);
      }
    } else if (argv[0] == "nsenter" && std::find(argv.begin(), argv.end(), "sinfo") != argv.end()) {
      r.out = sinfo_answer(++sinfo_calls_);
    }
    return r;
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  std::set<std::string> namespaces() {
    std::lock_guard<std::mutex> lock(mu_);
    return namespaces_;
  }
  int sinfoCalls() {
    std::lock_guard<std::mutex> lock(mu_);
    return sinfo_calls_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> log_;
  std::set<std::string> namespaces_ = {"fcl-sw0", "fcl-h0", "fcl-h1"};
  int sinfo_calls_ = 0;
};

class SlurmLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "SlurmLab::up checks for root before anything";
    dir_ = fs::temp_directory_path() / ("fc-slurmlab-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "bin");
    // The tools it checks for, as empty executables on a PATH of their own.
    for (const char* tool : {"munged", "slurmctld", "slurmd", "sinfo", "nsenter"}) {
      std::ofstream(dir_ / "bin" / tool) << "#!/bin/sh\n";
      fs::permissions(dir_ / "bin" / tool, fs::perms::owner_all);
    }
    old_path_ = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir_ / "bin").c_str(), 1);
    options_.state_dir = (dir_ / "state").string();
    options_.hostname = "vm";
    options_.ready_timeout_ms = 600;
    layout_ = slurmLabLayout(options_);
    // The fake munged makes its socket file; every start is recorded with the commands run
    // before it.
    daemons_.onStart([this](const sys::DaemonSpec& spec, pid_t pid) {
      if (spec.argv[0] == "munged") std::ofstream(layout_.munge_socket) << "";
      std::lock_guard<std::mutex> lock(mu_);
      started_.push_back({spec, tools_.log().size()});
      names_[pid] = spec.argv[0] == "slurmd" ? "slurmd " + spec.argv.back() : spec.argv[0];
      if (on_start_) on_start_(spec, pid);
    });
  }
  void TearDown() override {
    if (!old_path_.empty()) ::setenv("PATH", old_path_.c_str(), 1);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string name(size_t i) {
    const sys::DaemonSpec& spec = started_[i].first;
    return spec.argv[0] == "slurmd" ? "slurmd " + spec.argv.back() : spec.argv[0];
  }
  // What was signalled, in order: "SIGTERM slurmd h0".
  std::vector<std::string> signalled() {
    std::vector<std::string> out;
    for (const auto& [pid, signo] : daemons_.signalsSent()) {
      out.push_back(std::string(signo == SIGTERM ? "SIGTERM " : "signal ") + names_[pid]);
    }
    return out;
  }
  // The index in tools_.log() of the first command equal to `command`; -1 when never run.
  int ranAt(const std::string& command) {
    const auto log = tools_.log();
    auto it = std::find(log.begin(), log.end(), command);
    return it == log.end() ? -1 : static_cast<int>(it - log.begin());
  }
  // Every daemon this cluster runs, by command name, as the fake process table has them.
  size_t running() {
    size_t n = 0;
    for (const char* comm : {"munged", "slurmctld", "slurmd"}) n += daemons_.find(comm).size();
    return n;
  }
  SlurmLab::Progress progress() {
    return [this](const std::string& line) { progress_.push_back(line); };
  }

  fs::path dir_;
  std::string old_path_;
  SlurmLabOptions options_;
  SlurmLabLayout layout_;
  ScriptedTools tools_;
  fakes::FakeDaemonControl daemons_;
  std::mutex mu_;
  std::vector<std::pair<sys::DaemonSpec, size_t>> started_;
  std::map<pid_t, std::string> names_;
  std::function<void(const sys::DaemonSpec&, pid_t)> on_start_;
  std::vector<std::string> progress_;
  const scenarios::Fabric fabric_ = [] {
    LabOptions lab;
    lab.hosts = 2;
    return describeLab(lab);
  }();
};

TEST_F(SlurmLabTest, MungeThenTheControllerThenOneSlurmdPerHostAndUpWaitsForIdleNodes) {
  // Two looks before the nodes have registered.
  tools_.sinfo_answer = [](int call) {
    return std::string(call <= 2 ? "h0 unknown*\nh1 idle\n" : "h0 idle\nh1 idle\n");
  };
  SlurmLab slurm(tools_, daemons_, options_);
  auto cluster = slurm.up(fabric_, progress());
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  ASSERT_EQ(started_.size(), 4u);
  EXPECT_EQ(name(0), "munged");
  EXPECT_EQ(name(1), "slurmctld");
  EXPECT_EQ(name(2), "slurmd h0");
  EXPECT_EQ(name(3), "slurmd h1");
  EXPECT_EQ(started_[1].first.netns, "fcl-slurmctl");
  EXPECT_EQ(started_[2].first.netns, "fcl-h0");
  EXPECT_EQ(started_[3].first.netns, "fcl-h1");
  // The controller namespace is cabled and addressed before slurmctld starts in it.
  const int addressed = ranAt("ip -n fcl-slurmctl addr add 10.200.0.250/24 dev eth0");
  ASSERT_GE(addressed, 0);
  EXPECT_LT(static_cast<size_t>(addressed), started_[1].second);
  EXPECT_GE(ranAt("ip -n fcl-sw0 link set pctl master br0"), 0);
  EXPECT_EQ(tools_.sinfoCalls(), 3);

  // The files the daemons need, as they need them.
  EXPECT_EQ(fs::file_size(layout_.munge_key), 1024u);
  EXPECT_EQ(fs::status(layout_.munge_key).permissions(), fs::perms::owner_read);
  EXPECT_EQ(fs::status(layout_.munge_dir).permissions() & fs::perms::all,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                fs::perms::others_read | fs::perms::others_exec);
  EXPECT_TRUE(fs::is_directory(layout_.nodeSpool("h0")));
  EXPECT_TRUE(fs::is_directory(layout_.nodeSpool("h1")));
  EXPECT_TRUE(fs::is_directory(layout_.state_save_dir));
  std::ifstream conf(layout_.conf);
  const std::string conf_text((std::istreambuf_iterator<char>(conf)),
                              std::istreambuf_iterator<char>());
  EXPECT_EQ(nodesInSlurmConf(conf_text), (std::vector<std::string>{"h0", "h1"}));

  EXPECT_EQ(cluster->conf, layout_.conf);
  EXPECT_EQ(cluster->submit_netns, "fcl-slurmctl");
  EXPECT_EQ(cluster->partition, "lab");
  auto status = slurm.status();
  ASSERT_TRUE(status.isOk());
  EXPECT_TRUE(status->up);
  EXPECT_EQ(status->running_nodes, (std::vector<std::string>{"h0", "h1"}));
}

TEST_F(SlurmLabTest, NodesThatNeverTurnIdleFailUpSayingWhatSinfoShowedAndNothingStays) {
  tools_.sinfo_answer = [](int) { return std::string("h0 idle\nh1 down*\n"); };
  on_start_ = [this](const sys::DaemonSpec& spec, pid_t) {
    if (spec.argv[0] == "slurmctld") {
      std::ofstream(layout_.slurmctld_log) << "[t] slurmctld version 22.05.8 started\n"
                                           << "[t] error: Node h1 has low real_memory\n";
    }
    if (spec.argv[0] == "slurmd" && spec.argv.back() == "h1") {
      std::ofstream(layout_.slurmdLog("h1")) << "[t] error: Unable to register: Timeout\n";
    }
  };
  SlurmLab slurm(tools_, daemons_, options_);
  auto cluster = slurm.up(fabric_, progress());
  ASSERT_FALSE(cluster.isOk());
  EXPECT_EQ(cluster.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cluster.status().message(),
            "the Slurm cluster did not come up within 0.6 s: sinfo showed \"h1 down*\"; "
            "slurmctld.log ends: [t] slurmctld version 22.05.8 started | [t] error: Node h1 has "
            "low real_memory; slurmd-h1.log ends: [t] error: Unable to register: Timeout");
  // Everything it started was stopped, slurmd before slurmctld before munged.
  EXPECT_EQ(running(), 0u);
  EXPECT_EQ(signalled(), (std::vector<std::string>{"SIGTERM slurmd h0", "SIGTERM slurmd h1",
                                                   "SIGTERM slurmctld", "SIGTERM munged"}));
  EXPECT_EQ(tools_.namespaces().count("fcl-slurmctl"), 0u);
  EXPECT_FALSE(fs::exists(layout_.dir));
}

TEST_F(SlurmLabTest, ADaemonThatExitsFailsUpAtOnceWithItsLog) {
  on_start_ = [this](const sys::DaemonSpec& spec, pid_t pid) {
    if (spec.argv[0] != "slurmctld") return;
    std::ofstream(layout_.slurmctld_log) << "[t] fatal: This host (vm) not a valid controller\n";
    (void)daemons_.signal(pid, SIGKILL);
  };
  options_.ready_timeout_ms = 30000;
  SlurmLab slurm(tools_, daemons_, options_);
  const auto begin = std::chrono::steady_clock::now();
  auto cluster = slurm.up(fabric_, progress());
  ASSERT_FALSE(cluster.isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  EXPECT_EQ(cluster.status().message(),
            "the Slurm cluster did not come up: slurmctld exited: [t] fatal: This host (vm) not "
            "a valid controller");
  EXPECT_EQ(running(), 0u);
  EXPECT_FALSE(fs::exists(layout_.dir));
}

TEST_F(SlurmLabTest, DownEndsOnlyThisClustersDaemonsAndIsIdempotent) {
  // Another cluster's slurmd and munged on the same machine.
  sys::ProcessInfo other_slurmd;
  other_slurmd.comm = "slurmd";
  other_slurmd.argv = {"slurmd", "-D", "-N", "h0"};
  other_slurmd.env = {"SLURM_CONF=/etc/slurm/slurm.conf"};
  const pid_t other_slurmd_pid = daemons_.addProcess(other_slurmd);
  sys::ProcessInfo other_munged;
  other_munged.comm = "munged";
  other_munged.argv = {"munged"};
  const pid_t other_munged_pid = daemons_.addProcess(other_munged);

  SlurmLab slurm(tools_, daemons_, options_);
  ASSERT_TRUE(slurm.up(fabric_, progress()).isOk());
  ASSERT_EQ(running(), 6u);
  progress_.clear();
  ASSERT_TRUE(slurm.down(progress()).isOk());
  EXPECT_EQ(running(), 2u);
  EXPECT_TRUE(daemons_.alive(other_slurmd_pid));
  EXPECT_TRUE(daemons_.alive(other_munged_pid));
  EXPECT_EQ(tools_.namespaces().count("fcl-slurmctl"), 0u);
  EXPECT_FALSE(fs::exists(layout_.dir));
  ASSERT_FALSE(progress_.empty());
  EXPECT_EQ(progress_.front(), "ended slurmd h0, slurmd h1, slurmctld, munged");

  // Again, and with nothing there at all: OK, and nothing to say.
  progress_.clear();
  const size_t signals = daemons_.signalsSent().size();
  EXPECT_TRUE(slurm.down(progress()).isOk());
  SlurmLab fresh(tools_, daemons_, options_);
  EXPECT_TRUE(fresh.down(progress()).isOk());
  EXPECT_TRUE(progress_.empty());
  EXPECT_EQ(daemons_.signalsSent().size(), signals);
  auto status = fresh.status();
  ASSERT_TRUE(status.isOk());
  EXPECT_FALSE(status->up);
  EXPECT_FALSE(status->controller_netns);
}

TEST_F(SlurmLabTest, AClusterAlreadyUpIsLeftAsItIsAndAPartialOneIsRebuilt) {
  SlurmLab slurm(tools_, daemons_, options_);
  ASSERT_TRUE(slurm.up(fabric_, progress()).isOk());
  ASSERT_EQ(started_.size(), 4u);
  auto again = SlurmLab(tools_, daemons_, options_).up(fabric_, progress());
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(started_.size(), 4u);
  EXPECT_TRUE(daemons_.signalsSent().empty());
  EXPECT_EQ(progress_.back(), "Slurm is already up on lab netns-lab (" + layout_.conf + ")");

  // One slurmd gone: the cluster is removed and started again.
  const auto slurmds = daemons_.find("slurmd");
  ASSERT_EQ(slurmds.size(), 2u);
  ASSERT_TRUE(daemons_.signal(slurmds[1].pid, SIGKILL).isOk());
  auto rebuilt = SlurmLab(tools_, daemons_, options_).up(fabric_, progress());
  ASSERT_TRUE(rebuilt.isOk()) << rebuilt.status().toString();
  EXPECT_EQ(started_.size(), 8u);
  EXPECT_EQ(running(), 4u);
}

TEST_F(SlurmLabTest, MissingToolsAreNamedWithTheirPackagesBeforeAnythingStarts) {
  fs::remove(dir_ / "bin" / "sinfo");
  fs::remove(dir_ / "bin" / "munged");
  SlurmLab slurm(tools_, daemons_, options_);
  auto cluster = slurm.up(fabric_, progress());
  ASSERT_FALSE(cluster.isOk());
  EXPECT_EQ(cluster.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cluster.status().message(),
            "--with-slurm needs munged (Debian package munge), sinfo (Debian package "
            "slurm-client); deploy/install-deps.sh installs them");
  EXPECT_TRUE(started_.empty());
  EXPECT_TRUE(tools_.log().empty());
}

TEST_F(SlurmLabTest, AStartThatFailsStopsWhatStartedBefore) {
  daemons_.failOn(3, core::Status(StatusCode::kNotFound, "slurmd: execvp slurmd: No such file"));
  SlurmLab slurm(tools_, daemons_, options_);
  auto cluster = slurm.up(fabric_, progress());
  ASSERT_FALSE(cluster.isOk());
  EXPECT_EQ(cluster.status().message(), "starting slurmd h0: slurmd: execvp slurmd: No such file");
  EXPECT_EQ(running(), 0u);
  EXPECT_EQ(tools_.namespaces().count("fcl-slurmctl"), 0u);
  EXPECT_FALSE(fs::exists(layout_.dir));
}

}  // namespace
}  // namespace fabric_chaos::lab
