// pfc_storm, the first long-running fault kind, end to end on a namespace lab through serve's
// REST API. The observer is tshark on the switch port facing the storming NIC (the bridge drops
// PFC frames, the port's capture sees them): it counts the 802.1Qbb frames, their times against
// the run's fault window, and the pause time of the last one (0: the XON sent on revert). After
// the run, and after kill -9 of serve in the middle of a storm, no pfc-emit process is left and
// no emitter record either.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

struct PfcFrameSeen {
  double epoch_s = 0;
  int class_enable = 0;
  int pause_c3 = -1;
};

// tshark in the switch namespace, writing one line per PFC frame seen on a port.
class PfcCapture {
 public:
  PfcCapture(const std::string& dir, const std::string& port) : file_(dir + "/pfc-" + port) {
    const std::string command =
        "timeout 120 ip netns exec fcl-sw0 tshark -l -n -i " + port +
        " -f 'ether proto 0x8808' -T fields -E separator=, -e frame.time_epoch"
        " -e macc.cbfc.enbv -e macc.cbfc.pause_time.c3 > " +
        file_ + " 2>" + file_ + ".err & echo $!";
    pid_ = std::atoi(runShell(command).out.c_str());
    // tshark needs a moment before it captures; it says so on stderr.
    waitFor([&] { return readFile(file_ + ".err").find("Capturing on") != std::string::npos; },
            20000);
  }
  ~PfcCapture() { stop(); }
  void stop() {
    if (pid_ > 0) {
      runShell("kill -INT " + std::to_string(pid_) +
               "; sleep 0.5; pkill -INT -f 'tshark -l -n -i'");
      pid_ = 0;
    }
  }
  bool started() const {
    return readFile(file_ + ".err").find("Capturing on") != std::string::npos;
  }
  std::vector<PfcFrameSeen> frames() const {
    std::vector<PfcFrameSeen> out;
    std::istringstream lines(readFile(file_));
    std::string line;
    while (std::getline(lines, line)) {
      PfcFrameSeen f;
      char enbv[32] = {0};
      if (std::sscanf(line.c_str(), "%lf,%31[^,],%d", &f.epoch_s, enbv, &f.pause_c3) < 2) continue;
      f.class_enable = static_cast<int>(std::strtol(enbv, nullptr, 0));
      out.push_back(f);
    }
    return out;
  }

 private:
  std::string file_;
  int pid_ = 0;
};

json stormScenario(const std::string& name, int64_t duration_ms, int64_t recovery_ms = 2000) {
  return {{"version", 1},
          {"name", name},
          {"workload", {{"message_bytes", 65536}, {"compute_ms", 5}, {"peer_timeout_ms", 30000}}},
          {"baseline_ms", 1000},
          {"steps",
           {{{"kind", "pfc_storm"},
             {"target", {{"host", "h1"}, {"side", "host"}}},
             {"at_ms", 0},
             {"duration_ms", duration_ms},
             {"params", {{"priorities", {3}}, {"mode", "rate"}, {"rate_fps", 500}}}}}},
          {"recovery_ms", recovery_ms},
          {"max_duration_ms", 120000}};
}

int pfcEmitProcesses() {
  return std::atoi(runShell("pgrep -c -f '[p]fc-emit --ifname' || true").out.c_str());
}

size_t emitterRecords(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/state/logs/emitters", ec)) {
    n += e.path().extension() == ".json";
  }
  return n;
}

class PfcStormOnALab : public ServeWithLabTest {
 protected:
  PfcStormOnALab() : ServeWithLabTest(2) {}
  void SetUp() override {
    ServeWithLabTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(runShell("command -v tshark").exit_code, 0)
        << "tshark is missing (deploy/install-deps.sh installs it)";
  }
};

TEST_F(PfcStormOnALab, FramesFlowOnlyInsideTheWindowEndWithAnXonAndLeaveNothingRunning) {
  PfcCapture capture(dir_, "p1");
  ASSERT_TRUE(capture.started()) << readFile(dir_ + "/pfc-p1.err");
  const int64_t id = startRun(stormScenario("pfc-storm-window", 2000));
  ASSERT_GT(id, 0);
  json run = waitForFinalRun(port_, id, 90);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  capture.stop();
  ASSERT_EQ(run.value("state", ""), "passed") << run.dump(2);

  json events =
      httpRequest(port_, "GET", "/v1/runs/" + std::to_string(id) + "/events").json()["events"];
  auto applied = eventsOfKind(events, "fault_applied");
  auto reverted = eventsOfKind(events, "fault_reverted");
  ASSERT_EQ(applied.size(), 1u) << events.dump(2);
  ASSERT_EQ(reverted.size(), 1u) << events.dump(2);
  const double applied_s = applied[0]["wall_ms"].get<double>() / 1e3;
  const double reverted_s = reverted[0]["wall_ms"].get<double>() / 1e3;

  const auto frames = capture.frames();
  ASSERT_FALSE(frames.empty()) << "tshark saw no PFC frame on p1";
  std::cout << "tshark on p1: " << frames.size() << " PFC frames from "
            << (frames.front().epoch_s - applied_s) * 1e3 << " ms to "
            << (frames.back().epoch_s - reverted_s) * 1e3
            << " ms around the fault's apply and revert; the emitter reported "
            << reverted[0]["detail"]["observed"].dump() << "\n";
  // 500 frames/s for 2 s; the emitter starts a little before the apply returns.
  EXPECT_GE(frames.size(), 700u);
  EXPECT_LE(frames.size(), 1100u);
  for (const auto& f : frames) {
    EXPECT_EQ(f.class_enable, 1 << 3);
    ASSERT_GE(f.epoch_s, applied_s - 1.0) << "a frame long before the fault was applied";
    ASSERT_LE(f.epoch_s, reverted_s + 0.2) << "a frame after the revert returned";
  }
  for (size_t i = 0; i + 1 < frames.size(); ++i) EXPECT_EQ(frames[i].pause_c3, 65535);
  EXPECT_EQ(frames.back().pause_c3, 0) << "the last frame is the XON sent on revert";

  // The run stored the emitter's own account, taken just before the revert.
  const json& observed = reverted[0]["detail"]["observed"];
  EXPECT_EQ(observed.value("running", false), true) << observed.dump();
  const int64_t reported = observed["report"].value("frames", int64_t{0});
  EXPECT_GT(reported, 0) << observed.dump();
  EXPECT_LE(reported, static_cast<int64_t>(frames.size()));

  EXPECT_EQ(pfcEmitProcesses(), 0);
  EXPECT_EQ(emitterRecords(dir_), 0u);
}

TEST_F(PfcStormOnALab, KillingServeMidStormStopsTheStormAndItsGuardianClearsTheRecord) {
  PfcCapture capture(dir_, "p1");
  ASSERT_TRUE(capture.started()) << readFile(dir_ + "/pfc-p1.err");
  const int64_t id = startRun(stormScenario("pfc-storm-crash", 60000));
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor([&] { return capture.frames().size() >= 100; }, 30000))
      << "the storm never started";
  ASSERT_EQ(pfcEmitProcesses(), 1);
  ASSERT_EQ(emitterRecords(dir_), 1u);

  serve_->kill(SIGKILL);
  const int64_t killed_ns = steadyNowNs();
  const double killed_s =
      static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count()) /
      1e6;
  EXPECT_TRUE(waitFor([] { return pfcEmitProcesses() == 0; }, 5000))
      << "pfc-emit outlived serve by " << (steadyNowNs() - killed_ns) / 1000000 << " ms";
  // The guardian reverts the journal, which stops the emitter by its record and removes it.
  EXPECT_TRUE(waitFor([&] { return emitterRecords(dir_) == 0; }, 20000))
      << "the emitter record is still in " << dir_ << "/state/logs/emitters";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  capture.stop();
  const auto frames = capture.frames();
  ASSERT_FALSE(frames.empty());
  EXPECT_LE(frames.back().epoch_s, killed_s + 1.0) << "frames kept coming after serve died";

  // serve is gone: its guardian exits after the recovery, and the lab comes down by hand.
  EXPECT_TRUE(waitFor([&] { return guardiansOf(dir_).empty(); }, 20000));
  runShell(std::string(std::getenv("FC_BINARY")) + " lab down --state-dir " + dir_ +
           "/state >/dev/null 2>&1");
  serve_.reset();
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty()) << runShell("ip netns list").out;
}

}  // namespace
}  // namespace fabric_chaos::testing
