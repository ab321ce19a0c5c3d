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

#include "tests/privileged/pfc_capture.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

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
  PfcCapture capture(dir_, "fcl-sw0", "p1");
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
  PfcCapture capture(dir_, "fcl-sw0", "p1");
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
