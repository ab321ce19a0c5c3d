// IbLab's orchestration against fakes: a scripted iproute2 and infiniband-diags (the recorded
// ibnetdiscover fixture, sminfo replies per LID) and a fake process table whose ibsim "writes"
// its prompt. The master starts first and the standbys only once it rules; a subnet that does not
// come up gets its SMs started once more; one that never does fails saying what was last seen
// and leaves nothing behind. The fixture's subnet: sm0 on h0 (LID 1), sm1 on h2 (LID 6), h3
// watching.

#include "lab/ib_lab.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>

#include "tests/fakes/fake_daemon_control.h"

namespace fabric_chaos::lab {
namespace {

namespace fs = std::filesystem;
using core::StatusCode;

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Answers the commands IbLab runs; records them in order.
class ScriptedTools : public sys::CommandRunner {
 public:
  std::function<bool(int call)> master_answers = [](int) { return true; };

  core::Result<sys::CommandResult> run(const std::vector<std::string>& argv, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string joined;
    for (const auto& a : argv) joined += (joined.empty() ? "" : " ") + a;
    log_.push_back(joined);
    sys::CommandResult r;
    if (joined == "ip netns list") {
      r.out = netns_ ? "fcib-subnet\n" : "";
    } else if (joined == "ip netns add fcib-subnet") {
      netns_ = true;
    } else if (joined == "ip netns del fcib-subnet") {
      netns_ = false;
    } else if (joined.rfind("ip netns pids", 0) == 0) {
      r.out = pids_;
    } else if (argv.back() == "ibnetdiscover") {
      r.out = readAll(std::string(FC_IB_FIXTURES) + "/ibnetdiscover-fat-tree-2x1x2.txt");
    } else if (argv.size() >= 2 && argv[argv.size() - 2] == "sminfo") {
      const std::string lid = argv.back();
      if (lid == "1" && master_answers(++master_calls_)) {
        r.out =
            "sminfo: sm lid 1 sm guid 0x100001, activity count 9 priority 14 state 3 "
            "SMINFO_MASTER\n";
      } else if (lid == "6") {
        r.out =
            "sminfo: sm lid 6 sm guid 0x100005, activity count 3 priority 13 state 2 "
            "SMINFO_STANDBY\n";
      } else {
        r.exit_code = 1;
        r.err = "sminfo: iberror: failed: query\n";
      }
    }
    return r;
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  void setPids(const std::string& pids) {
    std::lock_guard<std::mutex> lock(mu_);
    pids_ = pids;
  }
  bool netns() {
    std::lock_guard<std::mutex> lock(mu_);
    return netns_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> log_;
  bool netns_ = false;
  std::string pids_;
  int master_calls_ = 0;
};

class IbLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "IbLab::up checks for root before anything";
    dir_ = fs::temp_directory_path() / ("fc-iblab-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "bin");
    // The tools it checks for, as empty executables on a PATH of their own.
    for (const char* tool : {"ibsim", "opensm", "sminfo", "ibnetdiscover"}) {
      std::ofstream(dir_ / "bin" / tool) << "#!/bin/sh\n";
      fs::permissions(dir_ / "bin" / tool, fs::perms::owner_all);
    }
    std::ofstream(dir_ / "umad2sim.so") << "";
    old_path_ = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir_ / "bin").c_str(), 1);
    options_.shape = {2, 1, 2, 8};
    options_.state_dir = (dir_ / "state").string();
    options_.preload = (dir_ / "umad2sim.so").string();
    options_.ready_timeout_ms = 2000;
    // The fake ibsim prints its prompt; every start is recorded with when it happened.
    daemons_.onStart([this](const sys::DaemonSpec& spec, pid_t pid) {
      if (spec.argv[0] == "ibsim") std::ofstream(spec.log_path) << "sim> ";
      started_.push_back({spec, tools_.log().size()});
      pids_ += std::to_string(pid) + "\n";
      tools_.setPids(pids_);
    });
  }
  void TearDown() override {
    if (!old_path_.empty()) ::setenv("PATH", old_path_.c_str(), 1);
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string simHostOf(const sys::DaemonSpec& spec) {
    for (const auto& e : spec.env) {
      if (e.rfind("SIM_HOST=", 0) == 0) return e.substr(9);
    }
    return "";
  }
  // How many `sminfo 1` (the master's LID) had been run before the n-th start.
  int masterQueriesBefore(size_t n) {
    int count = 0;
    const auto log = tools_.log();
    for (size_t i = 0; i < started_[n].second && i < log.size(); ++i) {
      count += log[i].size() > 9 && log[i].substr(log[i].size() - 9) == " sminfo 1";
    }
    return count;
  }

  fs::path dir_;
  std::string old_path_;
  IbLabOptions options_;
  ScriptedTools tools_;
  fakes::FakeDaemonControl daemons_;
  std::vector<std::pair<sys::DaemonSpec, size_t>> started_;
  std::string pids_;
  std::vector<std::string> progress_;
  IbLab::Progress progress() {
    return [this](const std::string& line) { progress_.push_back(line); };
  }
};

TEST_F(IbLabTest, TheMasterStartsFirstAndTheStandbysOnceItRules) {
  IbLab lab(tools_, daemons_, options_);
  auto fabric = lab.up(progress());
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  ASSERT_EQ(started_.size(), 3u);
  EXPECT_EQ(started_[0].first.argv[0], "ibsim");
  EXPECT_EQ(started_[0].first.netns, "fcib-subnet");
  EXPECT_EQ(started_[0].first.stdin_path, options_.state_dir + "/ib/ib-lab/console");
  EXPECT_TRUE(fs::is_fifo(options_.state_dir + "/ib/ib-lab/console"));
  EXPECT_EQ(simHostOf(started_[1].first), "h0");
  EXPECT_EQ(simHostOf(started_[2].first), "h2");
  EXPECT_EQ(masterQueriesBefore(1), 0);
  EXPECT_GE(masterQueriesBefore(2), 1) << "sm1 started before sm0 was seen master";
  EXPECT_EQ(started_[1].first.argv,
            (std::vector<std::string>{"opensm", "-F",
                                      options_.state_dir + "/ib/ib-lab/sm0/opensm.conf"}));
  EXPECT_NE(readAll(options_.state_dir + "/ib/ib-lab/sm1/opensm.conf").find("sm_priority 13"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(options_.state_dir + "/fabrics/ib-lab.json"));
  EXPECT_EQ(fabric->ib->subnet_managers.size(), 2u);
}

TEST_F(IbLabTest, ASubnetThatDoesNotComeUpGetsItsSmsStartedOnceMore) {
  // sm0 does not answer during the first attempt, then does: it answers once it has been started
  // a second time (ibsim, sm0, sm0). Counted, not timed, so that a loaded machine cannot make
  // the first attempt's polls outlast a deadline.
  tools_.master_answers = [&](int) { return started_.size() >= 3; };
  IbLab lab(tools_, daemons_, options_);
  auto fabric = lab.up(progress());
  ASSERT_TRUE(fabric.isOk()) << fabric.status().toString();
  // ibsim, sm0 (ended), then sm0 and sm1.
  ASSERT_EQ(started_.size(), 4u);
  EXPECT_EQ(simHostOf(started_[1].first), "h0");
  EXPECT_EQ(simHostOf(started_[2].first), "h0");
  EXPECT_EQ(simHostOf(started_[3].first), "h2");
  bool said = false;
  for (const auto& line : progress_) {
    said = said || line.find("starting the subnet managers again") != std::string::npos;
  }
  EXPECT_TRUE(said);
  const auto signals = daemons_.signalsSent();
  ASSERT_FALSE(signals.empty());
  EXPECT_EQ(signals[0].second, SIGTERM);  // the first sm0
}

TEST_F(IbLabTest, ASubnetThatNeverComesUpFailsSayingWhatItSawAndLeavesNothing) {
  tools_.master_answers = [](int) { return false; };
  IbLab lab(tools_, daemons_, options_);
  auto fabric = lab.up(progress());
  ASSERT_FALSE(fabric.isOk());
  EXPECT_EQ(fabric.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(fabric.status().message().find(
                "did not come up within 1.0 s; last seen: sm0 on h0 (priority 14) no SMInfo "
                "answer from LID 1"),
            std::string::npos)
      << fabric.status().message();
  EXPECT_FALSE(tools_.netns());
  EXPECT_FALSE(fs::exists(options_.state_dir + "/ib/ib-lab"));
  EXPECT_FALSE(fs::exists(options_.state_dir + "/fabrics/ib-lab.json"));
  for (const auto& [spec, at] : started_) {
    (void)at;
    EXPECT_TRUE(daemons_.find(spec.argv[0]).empty()) << spec.argv[0] << " still runs";
  }
}

TEST_F(IbLabTest, MissingToolsAreNamedBeforeAnythingStarts) {
  fs::remove(dir_ / "bin" / "opensm");
  IbLab lab(tools_, daemons_, options_);
  auto fabric = lab.up(progress());
  ASSERT_FALSE(fabric.isOk());
  EXPECT_EQ(fabric.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(fabric.status().message(),
            "the IB lab needs opensm (opensm); deploy/install-deps.sh installs them");
  EXPECT_TRUE(started_.empty());
  EXPECT_TRUE(tools_.log().empty());
}

}  // namespace
}  // namespace fabric_chaos::lab
